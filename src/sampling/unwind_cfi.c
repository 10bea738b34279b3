/*
 * Steps from CFI (see ws_unwind_cfi.h). libdw hands a frame's rules as
 * DWARF operations: the CFA as DW_OP_bregx REG OFFSET, a register saved
 * at CFA + N as DW_OP_call_frame_cfa, DW_OP_plus_uconst N, the caller's sp
 * as DW_OP_call_frame_cfa, DW_OP_stack_value, "same value" as no
 * operations and a null pointer, "undefined" as no operations and the
 * caller's array. A table keyed by pc (and whether it is looked up
 * exactly or as a return address, which reads the CFI at pc - 1) keeps
 * each pc's step, or that it has none to keep.
 */
#include "ws_unwind_cfi.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "ws_hash.h"
#include "ws_task.h"

enum cfi_kind {
	CFI_NONE,   /* no rule kept: the stack is unwound whole elsewhere */
	CFI_SP,     /* CFA = sp + cfa_offset */
	CFI_RBP,    /* CFA = rbp + cfa_offset */
	CFI_LAST,   /* the return address is undefined: the stack ends */
};

/* The most steps kept (24 bytes each, the table at most half full). */
enum { MAX_STEPS = 1 << 18 };

/* DWARF's number of x86-64's return address column, rbp and rsp. */
enum { DW_RA = 16, DW_RBP = 6, DW_RSP = 7 };

/* A key's bit for a pc looked up exactly (not as a return address):
 * user-space pcs never have it. */
#define EXACT (UINT64_C(1) << 63)

struct cfi_step {
	uint64_t key;        /* pc | EXACT when exact; 0: empty slot */
	int32_t cfa_offset;
	int32_t ra_at;       /* the return address is at CFA + ra_at */
	int32_t rbp_at;      /* rbp_saved: the caller's rbp at CFA + rbp_at */
	uint8_t kind;        /* enum cfi_kind */
	bool rbp_saved;      /* else the caller's rbp is this frame's */
};

struct ws_cfi_steps {
	struct cfi_step *slots;
	size_t n, size;      /* size: a power of two, at most half full */
};

struct ws_cfi_steps *ws_cfi_steps_create(void)
{
	struct ws_cfi_steps *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->size = 1024;
	c->slots = calloc(c->size, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return NULL;
	}
	return c;
}

void ws_cfi_steps_destroy(struct ws_cfi_steps *c)
{
	if (!c)
		return;
	free(c->slots);
	free(c);
}

void ws_cfi_steps_clear(struct ws_cfi_steps *c)
{
	memset(c->slots, 0, c->size * sizeof(*c->slots));
	c->n = 0;
}

static struct cfi_step *slot_of(struct cfi_step *slots, size_t size,
				uint64_t key)
{
	for (size_t i = (size_t)ws_hash_u64(key) & (size - 1);;
	     i = (i + 1) & (size - 1))
		if (slots[i].key == key || slots[i].key == 0)
			return &slots[i];
}

static bool grow(struct ws_cfi_steps *c)
{
	size_t size = c->size * 2;
	struct cfi_step *slots = calloc(size, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t i = 0; i < c->size; i++)
		if (c->slots[i].key)
			*slot_of(slots, size, c->slots[i].key) = c->slots[i];
	free(c->slots);
	c->slots = slots;
	c->size = size;
	return true;
}

/* An offset that fits the step's fields, from CFI the target supplied. */
static bool small(int64_t v)
{
	return v > -(1 << 24) && v < (1 << 24);
}

/* Whether ops say "saved at CFA + N": *at = N. */
static bool saved_at(const Dwarf_Op *ops, size_t nops, int32_t *at)
{
	if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		*at = 0;
		return true;
	}
	if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
	    ops[1].atom == DW_OP_plus_uconst &&
	    small((int64_t)ops[1].number)) {
		*at = (int32_t)(int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* Fills st (kind CFI_NONE unless a rule it keeps) from the frame. */
static void describe_frame(Dwarf_Frame *frame, struct cfi_step *st)
{
	Dwarf_Addr start, end;
	bool signal;
	if (dwarf_frame_info(frame, &start, &end, &signal) != DW_RA || signal)
		return;
	Dwarf_Op *ops, mem[3];
	size_t nops;
	if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops != 1 ||
	    ops[0].atom != DW_OP_bregx ||
	    (ops[0].number != DW_RSP && ops[0].number != DW_RBP) ||
	    !small((int64_t)ops[0].number2))
		return;
	enum cfi_kind kind = ops[0].number == DW_RSP ? CFI_SP : CFI_RBP;
	int32_t cfa_offset = (int32_t)(int64_t)ops[0].number2;
	if (dwarf_frame_register(frame, DW_RA, mem, &ops, &nops) != 0)
		return;
	if (nops == 0 && ops == mem) {
		st->kind = CFI_LAST;
		return;
	}
	int32_t ra_at;
	if (!saved_at(ops, nops, &ra_at))
		return;
	/* The caller's sp is the CFA, as the x86-64 ABI has it. */
	if (dwarf_frame_register(frame, DW_RSP, mem, &ops, &nops) != 0 ||
	    nops != 2 || ops[0].atom != DW_OP_call_frame_cfa ||
	    ops[1].atom != DW_OP_stack_value)
		return;
	if (dwarf_frame_register(frame, DW_RBP, mem, &ops, &nops) != 0)
		return;
	bool rbp_saved = !(nops == 0 && ops == NULL);
	int32_t rbp_at = 0;
	if (rbp_saved && !saved_at(ops, nops, &rbp_at))
		return; /* undefined, or computed: not tracked */
	*st = (struct cfi_step){ .key = st->key, .cfa_offset = cfa_offset,
				 .ra_at = ra_at, .rbp_at = rbp_at,
				 .kind = (uint8_t)kind, .rbp_saved = rbp_saved };
}

/* The CFI frame of `address` in the module holding it: .eh_frame (what
 * the loaded code carries), else .debug_frame. */
static void describe(Dwfl *dwfl, uint64_t address, struct cfi_step *st)
{
	Dwfl_Module *mod = dwfl ? dwfl_addrmodule(dwfl, address) : NULL;
	if (!mod)
		return;
	for (int which = 0; which < 2; which++) {
		Dwarf_Addr bias;
		Dwarf_CFI *cfi = which == 0 ? dwfl_module_eh_cfi(mod, &bias)
					    : dwfl_module_dwarf_cfi(mod, &bias);
		Dwarf_Frame *frame = NULL;
		if (!cfi || dwarf_cfi_addrframe(cfi, address - bias, &frame) != 0)
			continue;
		describe_frame(frame, st);
		free(frame);
		return;
	}
}

/* The step of pc (exact: frame 0 of a live thread), read from the CFI
 * the first time; NULL when the table cannot grow. */
static const struct cfi_step *lookup(struct ws_cfi_steps *c, Dwfl *dwfl,
				     uint64_t pc, bool exact)
{
	uint64_t key = exact ? pc | EXACT : pc;
	if (key == 0)
		return NULL;
	/* Bounded whatever pcs the stacks hold (JIT code, garbage): a
	 * table of 12 MB at most, then started afresh. */
	if (c->n >= MAX_STEPS)
		ws_cfi_steps_clear(c);
	if ((c->n + 1) * 2 > c->size && !grow(c))
		return NULL;
	struct cfi_step *st = slot_of(c->slots, c->size, key);
	if (st->key != key) {
		*st = (struct cfi_step){ .key = key, .kind = CFI_NONE };
		c->n++;
		describe(dwfl, exact ? pc : pc - 1, st);
	}
	return st;
}

size_t ws_cfi_unwind(struct ws_cfi_steps *c, Dwfl *dwfl,
		     const struct ws_snapshot *snap, ws_cfi_read_fn read,
		     void *arg, struct ws_pc *pcs, size_t max,
		     const char **stop_reason)
{
	const struct ws_regs *r = &snap->regs;
	if (!c || max == 0 || !(r->valid & (1u << WS_REG_RIP)) ||
	    !(r->valid & (1u << WS_REG_RSP)))
		return 0;
	uint64_t pc = r->value[WS_REG_RIP], sp = r->value[WS_REG_RSP];
	bool rbp_known = r->valid & (1u << WS_REG_RBP);
	uint64_t rbp = rbp_known ? r->value[WS_REG_RBP] : 0;
	bool exact = snap->pc_exact;
	size_t n = 0;
	for (;;) {
		const struct cfi_step *st = lookup(c, dwfl, pc, exact);
		if (!st || st->kind == CFI_NONE ||
		    (st->kind == CFI_RBP && !rbp_known))
			return 0;
		pcs[n].pc = pc;
		pcs[n].is_return_address = !exact;
		n++;
		if (n == max) {
			*stop_reason = "stack deeper than the frame limit";
			return n;
		}
		if (st->kind == CFI_LAST)
			return n;
		/* Wrapping sums are harmless: every read is bounds-checked. */
		uint64_t cfa = (st->kind == CFI_RBP ? rbp : sp) +
			       (uint64_t)(int64_t)st->cfa_offset;
		uint64_t ra;
		if (read(arg, cfa + (uint64_t)(int64_t)st->ra_at, &ra) != 0)
			return 0;
		if (st->rbp_saved) {
			if (read(arg, cfa + (uint64_t)(int64_t)st->rbp_at,
				 &rbp) != 0)
				return 0;
			rbp_known = true;
		}
		if (ra == 0)
			return n;
		/* A caller outside the task's stack: the stack ends, as the
		 * full unwinders end it. */
		if (snap->stack_hi &&
		    (cfa < snap->stack_lo || cfa >= snap->stack_hi))
			return n;
		pc = ra;
		sp = cfa;
		exact = false;
	}
}
