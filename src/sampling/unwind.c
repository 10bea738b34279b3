/*
 * Unwinding snapshots with libunwind (see ws_unwind.h).
 *
 * libunwind calls our accessors both from the cursor (with our argument)
 * and from inside _UPT_find_proc_info (with its own UPT argument), so the
 * snapshot being unwound is kept in the unwinder, never taken from `arg`.
 * Stack reads past a copy cut short by --max-stack fail on purpose: the
 * live stack has moved on since the target was resumed, and a torn frame
 * is worse than a truncated stack.
 */
#include "ws_unwind.h"

#include <libunwind-ptrace.h>
#include <stdlib.h>
#include <string.h>

#include "ws_grow.h"
#include "ws_hash.h"
#include "ws_read_cache.h"
#include "ws_remote_memory.h"
#include "ws_unwind_cfi.h"

enum {
	PAGE_SIZE_ = 4096,
	CACHE_PAGES = 256,          /* 1 MiB of remote pages per tick */
	TRUNCATION_GUARD = 1 << 20, /* stack reads refused past a cut copy */
};

struct ws_unwinder {
	pid_t pid;
	enum ws_unwind_backend backend;
	Dwfl *dwfl;
	bool dwfl_attached;
	unw_addr_space_t as;
	void *upt;                 /* _UPT_create handle, for table lookups */
	/* One more handle per module (see upt_for). */
	struct module_upt *module_upts;
	size_t nmodule_upts, module_upts_cap;
	const struct ws_snapshot *snap; /* being unwound */
	bool hit_truncation;
	bool guessed;              /* see ws_unwinder_guessed */
	/* The target's memory beyond the copy, through a cache of remote
	 * pages valid for one tick (ws_read_cache). */
	struct ws_read_cache *pages;
	struct ws_memory_reader memory;
	/* Frame steps learnt from libdw's unwinds, when frame sizes are
	 * fixed per pc (Go): pc -> how far the caller's sp lies above this
	 * frame's. Open addressing; key 0 = empty. */
	bool step_cache;
	struct step *steps;
	size_t nsteps, steps_size;
	/* Steps read from CFI (ws_unwind_cfi.h), tried first when on. */
	struct ws_cfi_steps *cfi;
	bool cfi_steps;
	size_t cfi_stacks;         /* stacks unwound by them alone */
};

/* A _UPT_create handle that serves one module's table lookups. */
struct module_upt {
	uint64_t start, end;       /* the module's address range */
	void *upt;
};

enum step_kind { STEP_DELTA, STEP_LAST, STEP_VARIES };

struct step {
	uint64_t pc;
	int64_t delta;             /* STEP_DELTA: caller's sp - this sp */
	enum step_kind kind;       /* STEP_LAST: the unwind ends here */
};

/* Whether [addr, addr + n) lies inside [start, start + size). Addresses
 * come from the target's stack, so a hostile one may be anywhere: no sum
 * is formed that could wrap around. */
static bool inside(uint64_t addr, size_t n, uint64_t start, size_t size)
{
	return addr >= start && addr - start <= size &&
	       size - (addr - start) >= n;
}

static int read_word(struct ws_unwinder *u, uint64_t addr, unw_word_t *out)
{
	const struct ws_snapshot *s = u->snap;
	if (s && inside(addr, sizeof(*out), s->stack_start, s->stack_size)) {
		memcpy(out, s->stack + (addr - s->stack_start), sizeof(*out));
		return 0;
	}
	if (s && s->truncated && addr >= s->stack_start &&
	    addr - s->stack_start < s->stack_size + TRUNCATION_GUARD) {
		u->hit_truncation = true;
		return -UNW_EINVAL;
	}
	if (s && s->stack_hi && addr >= s->stack_start && addr < s->stack_hi)
		return -UNW_EINVAL; /* stack beyond a short copy */
	struct ws_error *err = ws_memory_read(&u->memory, addr, out,
					      sizeof(*out));
	if (err) {
		ws_error_destroy(err);
		return -UNW_EINVAL;
	}
	return 0;
}

/* The unwinder of the current call: libunwind gives no reliable way back
 * to it from inside _UPT_* (see the file comment). */
static struct ws_unwinder *current;

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val,
		      int write, void *arg)
{
	(void)as;
	(void)arg;
	if (write || !current)
		return -UNW_EINVAL;
	return read_word(current, addr, val);
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val,
		      int write, void *arg)
{
	(void)as;
	(void)arg;
	if (write || !current || !current->snap || reg < 0 ||
	    reg >= WS_NREGS ||
	    !(current->snap->regs.valid & (1u << reg)))
		return -UNW_EBADREG;
	*val = current->snap->regs.value[reg];
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg,
			unw_fpreg_t *val, int write, void *arg)
{
	(void)as, (void)reg, (void)val, (void)write, (void)arg;
	return -UNW_EBADREG;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as, (void)c, (void)arg;
	return -UNW_EINVAL;
}

/* The handle for lookups of `ip`, or NULL when no module holds it. A UPT
 * handle keeps the image of one module mapped, and a lookup anywhere else
 * maps that one anew: re-reading /proc/PID/maps into a page it mmaps and
 * munmaps, whose TLB shootdown reaches every CPU. A lookup that finds
 * nothing is not cached and costs that every time. On thread_churn, stacks
 * where libunwind took heap pointers for return addresses made 26k such
 * lookups in a 3 s recording, and munmap was 45 % of wallspy's time
 * (perf). So an address outside every module (as libdw knows them; the
 * list is refreshed when naming meets an unknown pc) has no unwind info
 * without asking, and each module gets a handle of its own that keeps
 * its image. */
static void *upt_for(struct ws_unwinder *u, uint64_t ip)
{
	Dwfl_Module *mod = u->dwfl ? dwfl_addrmodule(u->dwfl, ip) : NULL;
	Dwarf_Addr start, end;
	if (!u->dwfl)
		return u->upt;
	if (!mod || !dwfl_module_info(mod, NULL, &start, &end, NULL, NULL,
				      NULL, NULL))
		return NULL;
	for (size_t i = 0; i < u->nmodule_upts; i++) {
		struct module_upt *m = &u->module_upts[i];
		if (m->start == start && m->end == end)
			return m->upt;
	}
	if (!ws_grow((void **)&u->module_upts, &u->module_upts_cap,
		     u->nmodule_upts + 1, sizeof(*u->module_upts)))
		return u->upt;
	void *upt = _UPT_create(u->pid);
	if (!upt)
		return u->upt;
	u->module_upts[u->nmodule_upts++] = (struct module_upt){
		.start = start, .end = end, .upt = upt};
	return upt;
}

static int find_proc_info(unw_addr_space_t as, unw_word_t ip,
			  unw_proc_info_t *pi, int need_unwind_info, void *arg)
{
	(void)arg;
	void *upt = upt_for(current, ip);
	if (!upt)
		return -UNW_ENOINFO;
	int rc = _UPT_find_proc_info(as, ip, pi, need_unwind_info, upt);
	/* libunwind-ptrace opens the file by its /proc/PID/maps path: a
	 * module libdwfl knows but that path does not reach (deleted, the
	 * vDSO) leaves libunwind to guess from frame pointers. */
	if (rc == -UNW_ENOINFO && current->dwfl &&
	    dwfl_addrmodule(current->dwfl, ip))
		current->guessed = true;
	return rc;
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi,
			    void *arg)
{
	(void)arg;
	_UPT_put_unwind_info(as, pi, current->upt);
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap,
				  void *arg)
{
	(void)arg;
	return _UPT_get_dyn_info_list_addr(as, dilap, current->upt);
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf,
			 size_t len, unw_word_t *offp, void *arg)
{
	(void)arg;
	return _UPT_get_proc_name(as, addr, buf, len, offp, current->upt);
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

struct ws_error *ws_unwinder_create(pid_t pid, Dwfl *dwfl,
				    struct ws_unwinder **ret)
{
	struct ws_unwinder *u = calloc(1, sizeof(*u));
	if (!u)
		return &ws_error_nomem;
	u->pid = pid;
	u->dwfl = dwfl;
	struct ws_memory_reader remote = ws_remote_reader(&u->pid);
	u->pages = ws_read_cache_create(&remote, PAGE_SIZE_, CACHE_PAGES);
	if (u->pages) {
		u->memory = ws_read_cache_reader(u->pages);
		ws_read_cache_begin(u->pages);
	}
	u->upt = _UPT_create(pid);
	u->as = unw_create_addr_space(&accessors, 0);
	if (!u->pages || !u->upt || !u->as) {
		ws_unwinder_destroy(u);
		return ws_error_create(WS_ERR_OTHER,
				       "libunwind: cannot create an address space for %d",
				       pid);
	}
	/* Caching is off by default; a global cache turns repeated unwinds
	 * through the same code from ~80 us into ~8 us. */
	unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
	unw_set_cache_size(u->as, 4096, 0);
	*ret = u;
	return NULL;
}

void ws_unwinder_destroy(struct ws_unwinder *u)
{
	if (!u)
		return;
	ws_cfi_steps_destroy(u->cfi);
	if (u->as)
		unw_destroy_addr_space(u->as);
	if (u->upt)
		_UPT_destroy(u->upt);
	for (size_t i = 0; i < u->nmodule_upts; i++)
		_UPT_destroy(u->module_upts[i].upt);
	free(u->module_upts);
	ws_read_cache_destroy(u->pages);
	free(u->steps);
	free(u);
}

void ws_unwinder_new_tick(struct ws_unwinder *u)
{
	/* Pages of earlier ticks are stale (a new epoch: nothing touched). */
	ws_read_cache_begin(u->pages);
}

/* --- libdwfl backend --- */

/* The pseudo thread id the libdw backend unwinds: one "thread" whose
 * registers are the current snapshot's. */
enum { DW_TID = 1 };

static pid_t dw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl, (void)arg, (void)thread_argp;
	return 0; /* never enumerated: wallspy asks for DW_TID directly */
}

static bool dw_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl, (void)arg;
	*thread_argp = NULL;
	return tid == DW_TID;
}

static bool dw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			   void *arg)
{
	(void)dwfl, (void)arg;
	unw_word_t w;
	if (!current || read_word(current, addr, &w) != 0)
		return false;
	*result = w;
	return true;
}

static bool dw_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	(void)arg;
	const struct ws_regs *r = &current->snap->regs;
	for (int i = 0; i < WS_NREGS; i++) {
		if (!(r->valid & (1u << i)))
			continue;
		Dwarf_Word v = r->value[i];
		if (!dwfl_thread_state_registers(thread, i, 1, &v))
			return false;
	}
	return true;
}

static const Dwfl_Thread_Callbacks dw_callbacks = {
	.next_thread = dw_next_thread,
	.get_thread = dw_get_thread,
	.memory_read = dw_memory_read,
	.set_initial_registers = dw_set_initial_registers,
};

struct ws_error *ws_unwinder_set_backend(struct ws_unwinder *u,
					 enum ws_unwind_backend backend)
{
	if (backend == WS_UNWIND_LIBDW && !u->dwfl_attached) {
		if (!u->dwfl)
			return ws_error_create(WS_ERR_OTHER,
					       "unwind: no debug info session for libdw");
		if (!dwfl_attach_state(u->dwfl, NULL, u->pid, &dw_callbacks,
				       NULL))
			return ws_error_create(WS_ERR_OTHER,
					       "unwind: dwfl_attach_state: %s",
					       dwfl_errmsg(-1));
		u->dwfl_attached = true;
	}
	u->backend = backend;
	return NULL;
}

enum ws_unwind_backend ws_unwinder_backend(const struct ws_unwinder *u)
{
	return u->backend;
}

struct dw_walk {
	struct ws_pc *pcs;
	uint64_t *sps;      /* each frame's sp, for learning steps; or NULL */
	size_t n, max;
	bool saved;         /* frame 0 is a return address (saved context) */
	bool left_stack;
	bool signal_frame;  /* some frame after the first was an activation */
};

static int dw_frame(Dwfl_Frame *state, void *arg)
{
	struct dw_walk *w = arg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0)
		return DWARF_CB_ABORT;
	const struct ws_snapshot *snap = current->snap;
	if (w->n > 0 && snap->stack_hi) {
		Dwarf_Word sp;
		if (dwfl_frame_reg(state, WS_REG_RSP, &sp) == 0 &&
		    (sp < snap->stack_lo || sp >= snap->stack_hi)) {
			w->left_stack = true;
			return DWARF_CB_ABORT;
		}
	}
	if (w->sps) {
		Dwarf_Word sp = 0;
		dwfl_frame_reg(state, WS_REG_RSP, &sp);
		w->sps[w->n] = sp;
	}
	if (w->n > 0 && activation)
		w->signal_frame = true;
	w->pcs[w->n].pc = pc;
	w->pcs[w->n].is_return_address =
		w->n == 0 ? w->saved : !activation;
	w->n++;
	return w->n == w->max ? DWARF_CB_ABORT : DWARF_CB_OK;
}

/* --- the step cache (fixed frame sizes) --- */

static struct step *step_slot(struct ws_unwinder *u, uint64_t pc)
{
	size_t mask = u->steps_size - 1;
	for (size_t i = (size_t)ws_hash_u64(pc) & mask;;
	     i = (i + 1) & mask)
		if (u->steps[i].pc == pc || u->steps[i].pc == 0)
			return &u->steps[i];
}

static void learn_step(struct ws_unwinder *u, uint64_t pc,
		       enum step_kind kind, int64_t delta)
{
	if ((u->nsteps + 1) * 2 > u->steps_size) {
		size_t size = u->steps_size ? u->steps_size * 2 : 4096;
		struct step *old = u->steps;
		size_t old_size = u->steps_size;
		struct step *steps = calloc(size, sizeof(*steps));
		if (!steps)
			return;
		u->steps = steps;
		u->steps_size = size;
		for (size_t i = 0; i < old_size; i++)
			if (old[i].pc)
				*step_slot(u, old[i].pc) = old[i];
		free(old);
	}
	struct step *st = step_slot(u, pc);
	if (st->pc == 0) {
		*st = (struct step){.pc = pc, .delta = delta, .kind = kind};
		u->nsteps++;
	} else if (st->kind != kind || st->delta != delta) {
		st->kind = STEP_VARIES; /* not fixed after all: never guess */
	}
}

/* Walks a stack with learnt steps only: each frame's caller sp is this
 * sp + delta[pc], its return address the word just below. Returns 0 when
 * a pc has not been learnt (the caller then unwinds with libdw). */
static size_t unwind_steps(struct ws_unwinder *u,
			   const struct ws_snapshot *snap, struct ws_pc *pcs,
			   size_t max)
{
	uint64_t pc = snap->regs.value[WS_REG_RIP];
	uint64_t sp = snap->regs.value[WS_REG_RSP];
	size_t n = 0;
	for (;;) {
		const struct step *st = step_slot(u, pc);
		if (st->pc != pc || st->kind == STEP_VARIES)
			return 0;
		pcs[n].pc = pc;
		pcs[n].is_return_address = n > 0 || !snap->pc_exact;
		n++;
		if (st->kind == STEP_LAST || n == max)
			return n;
		uint64_t caller_sp = sp + (uint64_t)st->delta;
		if (snap->stack_hi &&
		    (caller_sp < snap->stack_lo || caller_sp >= snap->stack_hi))
			return n; /* left the task's stack, as libdw would */
		unw_word_t ra;
		if (read_word(u, caller_sp - 8, &ra) != 0 || ra == 0)
			return 0;
		pc = ra;
		sp = caller_sp;
	}
}

void ws_unwinder_use_step_cache(struct ws_unwinder *u, bool on)
{
	u->step_cache = on;
}

void ws_unwinder_use_cfi_steps(struct ws_unwinder *u, bool on)
{
	if (on && !u->cfi)
		u->cfi = ws_cfi_steps_create(); /* NULL: full unwinds only */
	u->cfi_steps = on;
}

size_t ws_unwinder_cfi_stacks(const struct ws_unwinder *u)
{
	return u->cfi_stacks;
}

void ws_unwinder_forget_steps(struct ws_unwinder *u)
{
	if (u->cfi)
		ws_cfi_steps_clear(u->cfi);
}

static int cfi_read(void *arg, uint64_t addr, uint64_t *out)
{
	unw_word_t w;
	int rc = read_word(arg, addr, &w);
	*out = w;
	return rc;
}

static size_t unwind_libdw(struct ws_unwinder *u,
			   const struct ws_snapshot *snap, struct ws_pc *pcs,
			   size_t max, const char **stop_reason)
{
	if (u->step_cache && u->nsteps) {
		size_t n = unwind_steps(u, snap, pcs, max);
		if (n)
			return n;
		u->hit_truncation = false;
	}
	uint64_t sps[WS_STEP_LEARN_FRAMES];
	bool learn = u->step_cache && max <= WS_STEP_LEARN_FRAMES;
	struct dw_walk w = {.pcs = pcs, .sps = learn ? sps : NULL, .max = max,
			    .saved = !snap->pc_exact};
	int rc = dwfl_getthread_frames(u->dwfl, DW_TID, dw_frame, &w);
	if (w.n == max)
		*stop_reason = "stack deeper than the frame limit";
	else if (rc != 0 && !w.left_stack && u->hit_truncation)
		*stop_reason = "stack deeper than --max-stack";
	else if (rc != 0 && w.n == 0)
		*stop_reason = "unwind failed at the first frame";
	/* Learn from a clean walk: every step between frames, and where it
	 * ended when libdw found no caller (not cut by a limit or a bound). */
	if (learn && w.n && !w.signal_frame && !u->hit_truncation) {
		for (size_t i = 0; i + 1 < w.n; i++)
			learn_step(u, pcs[i].pc, STEP_DELTA,
				   (int64_t)(sps[i + 1] - sps[i]));
		if (rc == 0 && !w.left_stack && w.n < max)
			learn_step(u, pcs[w.n - 1].pc, STEP_LAST, 0);
	}
	return w.n;
}

/* --- libunwind backend --- */

static size_t unwind_libunwind(struct ws_unwinder *u,
			       const struct ws_snapshot *snap,
			       struct ws_pc *pcs, size_t max,
			       const char **stop_reason)
{
	unw_cursor_t cursor;
	size_t n = 0;
	int rc = unw_init_remote(&cursor, u->as, NULL);
	if (rc < 0) {
		*stop_reason = "unwind failed: cannot start";
		return 0;
	}
	bool exact = snap->pc_exact; /* frame 0 of a live thread is not a call */
	for (;;) {
		unw_word_t ip = 0, sp = 0;
		unw_get_reg(&cursor, UNW_REG_IP, &ip);
		if (ip == 0)
			break;
		if (n > 0 && snap->stack_hi) {
			unw_get_reg(&cursor, UNW_REG_SP, &sp);
			if (sp < snap->stack_lo || sp >= snap->stack_hi)
				break; /* left the task's stack */
		}
		pcs[n].pc = ip;
		pcs[n].is_return_address = !exact;
		n++;
		if (n == max) {
			*stop_reason = "stack deeper than the frame limit";
			break;
		}
		/* The frame interrupted by a signal resumes at an exact pc. */
		exact = unw_is_signal_frame(&cursor) > 0;
		rc = unw_step(&cursor);
		if (rc == 0)
			break;
		if (rc < 0) {
			if (u->hit_truncation)
				*stop_reason = "stack deeper than --max-stack";
			else if (n == 1 && !snap->pc_exact)
				*stop_reason = "unwind failed at the saved pc";
			/* else: ran out of unwind info: the stack ends */
			break;
		}
	}
	return n;
}

size_t ws_unwind(struct ws_unwinder *u, const struct ws_snapshot *snap,
		 struct ws_pc *pcs, size_t max, const char **stop_reason)
{
	*stop_reason = NULL;
	if (max == 0)
		return 0;
	current = u;
	u->snap = snap;
	u->hit_truncation = false;
	u->guessed = false;
	size_t n = u->cfi_steps ? ws_cfi_unwind(u->cfi, u->dwfl, snap, cfi_read,
						u, pcs, max, stop_reason)
				: 0;
	if (n) {
		u->cfi_stacks++;
	} else {
		*stop_reason = NULL;
		u->hit_truncation = false;
		n = u->backend == WS_UNWIND_LIBDW
			    ? unwind_libdw(u, snap, pcs, max, stop_reason)
			    : unwind_libunwind(u, snap, pcs, max, stop_reason);
	}
	u->snap = NULL;
	current = NULL;
	return n;
}

bool ws_unwinder_guessed(const struct ws_unwinder *u)
{
	return u->guessed;
}
