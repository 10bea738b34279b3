/*
 * The Go runtime adapter: every goroutine of a live Go program, found
 * through runtime.allgs and the target's DWARF (field names, never offsets,
 * so Go versions whose structs moved still work; tested with Go 1.19).
 *
 * A tick reads allgs' pointer array in one read and a window of each
 * runtime.g (the span of the fields used) with batched process_vm_readv.
 * Wait reasons come from the target's own runtime.waitReasonStrings. Where
 * a goroutine's stack starts: parked or runnable from g.sched; in a syscall
 * from g.syscallpc/syscallsp; running from the live registers of the thread
 * whose tid is g.m.procid, unless that thread is on another stack (g0 or
 * gsignal: systemstack, cgo) or in a VDSO call, where the goroutine's saved
 * state is used instead.
 */
#include "ws_runtime_go.h"

#include <elf.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "ws_dwtype.h"
#include "ws_grow.h"
#include "ws_remote_memory.h"
#include "ws_symbols.h"
#include "ws_syscalls.h"
#include "ws_target.h"

/* runtime2.go's goroutine states; unchanged since Go 1.0 except the
 * additions at the end, and not described by DWARF. */
enum {
	G_IDLE = 0,
	G_RUNNABLE = 1,
	G_RUNNING = 2,
	G_SYSCALL = 3,
	G_WAITING = 4,
	G_MORIBUND_UNUSED = 5,
	G_DEAD = 6,
	G_ENQUEUE_UNUSED = 7,
	G_COPYSTACK = 8,
	G_PREEMPTED = 9,
	G_SCAN = 0x1000,
};

enum {
	MAX_REASONS = 64,
	BATCH = 1024,         /* IOV_MAX */
};

struct gfields {
	struct ws_dwfield goid, status, waitreason, m, stack_lo, stack_hi,
		sched_pc, sched_sp, sched_bp, syscallsp, syscallpc, gopc,
		startpc, tracking_seq;
	bool has_tracking_seq;
};

struct mfields {
	struct ws_dwfield procid, curg, vdso_sp, vdso_pc;
};

struct go_state {
	struct ws_runtime_caps caps;
	pid_t pid;
	struct ws_dwtype_program *prog;
	struct ws_dwobj allgs, allglen;
	struct gfields g;
	struct mfields m;
	uint64_t g_lo, g_hi;      /* window of runtime.g read per goroutine */
	uint64_t m_lo, m_hi;
	char *reasons[MAX_REASONS];
	size_t nreasons;
	/* per tick */
	uint64_t *gptrs;
	size_t gptrs_capacity;
	uint8_t *gbuf;
	size_t gbuf_capacity;
	struct { uint64_t address; uint8_t *bytes; } *ms;
	size_t nms, ms_capacity;
};


/* --- setup --- */

static struct ws_error *field(struct go_state *s, const struct ws_dwtype *t,
			      const char *const *paths, struct ws_dwfield *ret)
{
	/* Candidates in order: a newer layout first, then older ones. */
	struct ws_error *err = NULL;
	for (const char *const *p = paths; *p; p++) {
		ws_error_destroy(err);
		err = ws_dwtype_field(s->prog, t, *p, ret);
		if (!err)
			return NULL;
	}
	return err;
}

#define FIELD(s, t, out, ...) \
	field((s), (t), (const char *const[]){__VA_ARGS__, NULL}, (out))

static void widen(uint64_t *lo, uint64_t *hi, const struct ws_dwfield *f)
{
	if (f->offset < *lo)
		*lo = f->offset;
	if (f->offset + f->size > *hi)
		*hi = f->offset + f->size;
}

static struct ws_error *check_plain(const struct ws_dwfield *f,
				    const char *name);

static struct ws_error *resolve_g(struct go_state *s)
{
	struct ws_dwtype gt;
	struct ws_error *err = ws_dwtype_find_type(s->prog, NULL, "runtime.g",
						   &gt);
	if (err)
		return err;
	struct gfields *g = &s->g;
	if ((err = FIELD(s, &gt, &g->goid, "goid")) ||
	    /* Go 1.20 made atomicstatus an atomic.Uint32. */
	    (err = FIELD(s, &gt, &g->status, "atomicstatus.value", "atomicstatus")) ||
	    (err = FIELD(s, &gt, &g->waitreason, "waitreason")) ||
	    (err = FIELD(s, &gt, &g->m, "m")) ||
	    (err = FIELD(s, &gt, &g->stack_lo, "stack.lo")) ||
	    (err = FIELD(s, &gt, &g->stack_hi, "stack.hi")) ||
	    (err = FIELD(s, &gt, &g->sched_pc, "sched.pc")) ||
	    (err = FIELD(s, &gt, &g->sched_sp, "sched.sp")) ||
	    (err = FIELD(s, &gt, &g->sched_bp, "sched.bp")) ||
	    (err = FIELD(s, &gt, &g->syscallsp, "syscallsp")) ||
	    (err = FIELD(s, &gt, &g->syscallpc, "syscallpc")) ||
	    (err = FIELD(s, &gt, &g->gopc, "gopc")) ||
	    (err = FIELD(s, &gt, &g->startpc, "startpc")))
		return err;
	const struct ws_dwfield *all[] = {
		&g->goid, &g->status, &g->waitreason, &g->m, &g->stack_lo,
		&g->stack_hi, &g->sched_pc, &g->sched_sp, &g->sched_bp,
		&g->syscallsp, &g->syscallpc, &g->gopc, &g->startpc,
	};
	s->g_lo = UINT64_MAX;
	s->g_hi = 0;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if ((err = check_plain(all[i], "runtime.g")))
			return err;
		widen(&s->g_lo, &s->g_hi, all[i]);
	}
	/* casgstatus bumps trackingSeq (a uint8, Go 1.17 on) every time a
	 * goroutine leaves _Grunning: with it, reads of a goroutine taken
	 * while the program runs can be checked (live reads). */
	err = FIELD(s, &gt, &g->tracking_seq, "trackingSeq");
	if (!err)
		err = check_plain(&g->tracking_seq, "runtime.g.trackingSeq");
	g->has_tracking_seq = !err;
	ws_error_destroy(err);
	err = NULL;
	if (g->has_tracking_seq)
		widen(&s->g_lo, &s->g_hi, &g->tracking_seq);

	struct ws_dwtype mt;
	if ((err = ws_dwtype_find_type(s->prog, NULL, "runtime.m", &mt)))
		return err;
	struct mfields *m = &s->m;
	if ((err = FIELD(s, &mt, &m->procid, "procid")) ||
	    (err = FIELD(s, &mt, &m->curg, "curg")) ||
	    (err = FIELD(s, &mt, &m->vdso_sp, "vdsoSP")) ||
	    (err = FIELD(s, &mt, &m->vdso_pc, "vdsoPC")))
		return err;
	if ((err = check_plain(&m->procid, "runtime.m.procid")) ||
	    (err = check_plain(&m->curg, "runtime.m.curg")) ||
	    (err = check_plain(&m->vdso_sp, "runtime.m.vdsoSP")) ||
	    (err = check_plain(&m->vdso_pc, "runtime.m.vdsoPC")))
		return err;
	s->m_lo = UINT64_MAX;
	s->m_hi = 0;
	widen(&s->m_lo, &s->m_hi, &m->procid);
	widen(&s->m_lo, &s->m_hi, &m->curg);
	widen(&s->m_lo, &s->m_hi, &m->vdso_sp);
	widen(&s->m_lo, &s->m_hi, &m->vdso_pc);
	return NULL;
}

/* The target's own names of wait reasons (their order changes between Go
 * versions). Missing strings only cost the reason text. */
static void read_wait_reasons(struct go_state *s)
{
	struct ws_dwobj arr;
	struct ws_error *err = ws_dwtype_global(s->prog, NULL,
						"runtime.waitReasonStrings",
						&arr);
	if (err) {
		ws_error_destroy(err);
		return;
	}
	for (uint64_t i = 0; i < MAX_REASONS; i++) {
		struct ws_dwobj str;
		char buf[64];
		size_t len;
		err = ws_dwtype_index(&arr, i, &str);
		if (!err)
			err = ws_dwtype_read_gostring(&str, buf, sizeof(buf), &len);
		if (err) {
			ws_error_destroy(err);
			break;
		}
		s->reasons[i] = strdup(buf);
		s->nreasons = i + 1;
	}
}

/* A Go program has a .go.buildinfo or .gopclntab section. */
static int module_is_go(Dwfl_Module *mod, void **userdata, const char *name,
			Dwarf_Addr start, void *arg)
{
	(void)userdata, (void)name, (void)start;
	if (ws_module_find_section(mod, ".go.buildinfo") ||
	    ws_module_find_section(mod, ".gopclntab")) {
		*(bool *)arg = true;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

static bool is_go_program(struct ws_symbols *symbols)
{
	bool go = false;
	dwfl_getmodules(ws_symbols_dwfl(symbols), module_is_go, &go, 0);
	return go;
}

/* --- per tick --- */

/* Reads a field from a window that starts at offset lo of its struct.
 * The fields used here are unsigned integers and pointers of 1 to 8
 * bytes (checked in check_plain), so a little-endian copy decodes them
 * without going back to DWARF: this runs 13 times per goroutine per tick. */
static uint64_t get(const struct ws_dwfield *f, const uint8_t *window,
		    uint64_t lo, uint64_t hi)
{
	uint64_t v = 0;
	if (f->offset < lo || f->offset + f->size > hi)
		return 0;
	memcpy(&v, window + (f->offset - lo), (size_t)f->size);
	return v;
}

/* The fast decoding in get() holds for plain integers and pointers. */
static struct ws_error *check_plain(const struct ws_dwfield *f,
				    const char *name)
{
	bool integer = f->kind == WS_DWTYPE_UNSIGNED ||
		       f->kind == WS_DWTYPE_SIGNED ||
		       f->kind == WS_DWTYPE_POINTER;
	if (!integer || f->bit_size || f->size == 0 || f->size > 8)
		return ws_error_create(WS_ERR_NO_DEBUGINFO,
				       "go: field '%s' is not a plain integer or pointer in this Go version",
				       name);
	return NULL;
}

/* Room for n goroutine pointers. */
static bool reserve_gptrs(struct go_state *s, size_t n)
{
	return ws_grow((void **)&s->gptrs, &s->gptrs_capacity, n,
		       sizeof(*s->gptrs));
}

static struct ws_error *read_gptrs(struct go_state *s, size_t *n)
{
	uint64_t allglen;
	struct ws_dwslice slice;
	struct ws_error *err = ws_dwtype_read_uint(&s->allglen, &allglen);
	if (!err)
		err = ws_dwtype_slice(&s->allgs, &slice);
	if (err)
		return err;
	size_t count = (size_t)(allglen < slice.len ? allglen : slice.len);
	if (!reserve_gptrs(s, count))
		return &ws_error_nomem;
	if (count &&
	    (err = ws_remote_read(s->pid, slice.first.address, s->gptrs,
				  count * sizeof(uint64_t))))
		return err;
	*n = count;
	return NULL;
}

static struct ws_error *read_gs(struct go_state *s, size_t n)
{
	size_t w = (size_t)(s->g_hi - s->g_lo);
	if (!ws_grow((void **)&s->gbuf, &s->gbuf_capacity, n * w, 1))
		return &ws_error_nomem;
	struct ws_remote_range ranges[BATCH];
	for (size_t base = 0; base < n; base += BATCH) {
		size_t k = n - base < BATCH ? n - base : BATCH;
		for (size_t i = 0; i < k; i++) {
			ranges[i] = (struct ws_remote_range){
				.address = s->gptrs[base + i] + s->g_lo,
				.buf = s->gbuf + (base + i) * w,
				.size = w,
			};
		}
		ws_remote_readv(s->pid, ranges, k);
		/* A g that could not be read: mark it with a null pointer. */
		for (size_t i = 0; i < k; i++)
			if (ranges[i].done != w)
				s->gptrs[base + i] = 0;
	}
	return NULL;
}

/* The runtime.m window at `address`, read once per tick. */
static const uint8_t *m_window(struct go_state *s, uint64_t address)
{
	for (size_t i = 0; i < s->nms; i++)
		if (s->ms[i].address == address)
			return s->ms[i].bytes;
	if (!ws_grow((void **)&s->ms, &s->ms_capacity, s->nms + 1,
		     sizeof(*s->ms)))
		return NULL;
	size_t w = (size_t)(s->m_hi - s->m_lo);
	uint8_t *bytes = malloc(w);
	if (!bytes)
		return NULL;
	struct ws_error *err = ws_remote_read(s->pid, address + s->m_lo,
					      bytes, w);
	if (err) {
		ws_error_destroy(err);
		free(bytes);
		return NULL;
	}
	s->ms[s->nms].address = address;
	s->ms[s->nms].bytes = bytes;
	s->nms++;
	return bytes;
}

static void set_saved(struct ws_task *task, uint64_t pc, uint64_t sp,
		      uint64_t bp)
{
	task->start = WS_START_SAVED;
	task->regs.value[WS_REG_RIP] = pc;
	task->regs.value[WS_REG_RSP] = sp;
	task->regs.valid = (1u << WS_REG_RIP) | (1u << WS_REG_RSP);
	if (bp) {
		task->regs.value[WS_REG_RBP] = bp;
		task->regs.valid |= 1u << WS_REG_RBP;
	}
	if (!pc || !sp) {
		task->start = WS_START_NONE;
		task->error = "no saved context";
	}
}

/* A running goroutine: its M's thread (m.procid) runs it while m.curg is
 * the goroutine (ws_task_start_on_cpu decides between the thread's live
 * registers and a saved context). The saved context is g.sched, or the
 * vDSO call's pc and sp while the M is in one (Go switches to the g0 stack
 * for it). Without a readable M the goroutine is mid-switch. */
static void start_running(struct go_state *s, struct ws_target *target,
			  const struct ws_read_context *context,
			  struct ws_task *task, uint64_t gaddr, uint64_t maddr,
			  const uint8_t *gw)
{
	const struct gfields *g = &s->g;
	uint64_t pc = get(&g->sched_pc, gw, s->g_lo, s->g_hi);
	uint64_t sp = get(&g->sched_sp, gw, s->g_lo, s->g_hi);
	uint64_t bp = get(&g->sched_bp, gw, s->g_lo, s->g_hi);
	const uint8_t *mw = maddr ? m_window(s, maddr) : NULL;
	pid_t tid = 0;
	bool runs_it = false;
	if (mw) {
		tid = (pid_t)get(&s->m.procid, mw, s->m_lo, s->m_hi);
		runs_it = get(&s->m.curg, mw, s->m_lo, s->m_hi) == gaddr;
		task->thread = tid;
		uint64_t vdso_sp = get(&s->m.vdso_sp, mw, s->m_lo, s->m_hi);
		if (vdso_sp) {
			pc = get(&s->m.vdso_pc, mw, s->m_lo, s->m_hi);
			sp = vdso_sp;
			bp = 0;
		}
	}
	/* g.sched is stale while the goroutine runs: with the target
	 * running and no M, it waits for a stopped read. */
	if (ws_task_start_on_cpu(task, target, tid, runs_it, context->live) ==
	    WS_ON_CPU_SAVED)
		set_saved(task, pc, sp, bp);
}

/* Decodes one goroutine from its window; false when it is no task (free
 * or dead). */
static bool decode_g(struct go_state *s, struct ws_target *target,
		     const struct ws_read_context *context, uint64_t gaddr,
		     const uint8_t *gw, struct ws_task *task)
{
	const struct gfields *g = &s->g;
	uint64_t status = get(&g->status, gw, s->g_lo, s->g_hi) & ~(uint64_t)G_SCAN;
	if (status == G_IDLE || status == G_DEAD ||
	    status == G_MORIBUND_UNUSED || status == G_ENQUEUE_UNUSED)
		return false;
	task->address = gaddr;
	task->id = get(&g->goid, gw, s->g_lo, s->g_hi);
	if (g->has_tracking_seq)
		task->version = get(&g->tracking_seq, gw, s->g_lo, s->g_hi);
	task->stack_lo = get(&g->stack_lo, gw, s->g_lo, s->g_hi);
	task->stack_hi = get(&g->stack_hi, gw, s->g_lo, s->g_hi);
	task->entry_pc = get(&g->startpc, gw, s->g_lo, s->g_hi);
	/* The main goroutine was made by the runtime itself; Go's traceback
	 * names no creator for it either. */
	if (task->id != 1)
		task->creator_pc = get(&g->gopc, gw, s->g_lo, s->g_hi);
	uint64_t pc = get(&g->sched_pc, gw, s->g_lo, s->g_hi);
	uint64_t sp = get(&g->sched_sp, gw, s->g_lo, s->g_hi);
	uint64_t bp = get(&g->sched_bp, gw, s->g_lo, s->g_hi);
	switch (status) {
	case G_RUNNING:
		task->state = WS_STATE_RUNNING;
		start_running(s, target, context, task, gaddr,
			      get(&g->m, gw, s->g_lo, s->g_hi), gw);
		break;
	case G_SYSCALL:
		task->state = WS_STATE_SYSCALL;
		/* syscallbp is not kept before Go 1.23: CFI only. */
		set_saved(task, get(&g->syscallpc, gw, s->g_lo, s->g_hi),
			  get(&g->syscallsp, gw, s->g_lo, s->g_hi), 0);
		break;
	case G_WAITING: {
		task->state = WS_STATE_WAITING;
		uint64_t r = get(&g->waitreason, gw, s->g_lo, s->g_hi);
		task->wait_reason = r < s->nreasons ? s->reasons[r] : NULL;
		set_saved(task, pc, sp, bp);
		break;
	}
	case G_COPYSTACK:
		task->state = WS_STATE_WAITING;
		task->wait_reason = "copystack";
		set_saved(task, pc, sp, bp);
		break;
	case G_RUNNABLE:
	case G_PREEMPTED:
	default:
		task->state = WS_STATE_RUNNABLE;
		set_saved(task, pc, sp, bp);
		break;
	}
	return true;
}

static void forget_ms(struct go_state *s)
{
	for (size_t i = 0; i < s->nms; i++)
		free(s->ms[i].bytes);
	s->nms = 0;
}

static struct ws_error *go_list(struct ws_runtime *runtime,
				struct ws_target *target,
				const struct ws_read_context *context,
				struct ws_task_list *out)
{
	struct go_state *s = runtime->state;
	size_t n;
	struct ws_error *err = read_gptrs(s, &n);
	/* Over budget: read a uniform sample of the goroutine slots; each
	 * live one found stands for n/limit slots. */
	double scale = 1;
	size_t limit = context->limit;
	if (!err && limit && limit < n) {
		ws_random_sample_front(context->random, s->gptrs, n, limit,
				       sizeof(*s->gptrs));
		scale = (double)n / (double)limit;
		n = limit;
	}
	if (!err)
		err = read_gs(s, n);
	if (err)
		return err;
	forget_ms(s);

	size_t w = (size_t)(s->g_hi - s->g_lo);
	for (size_t i = 0; i < n; i++) {
		if (!s->gptrs[i])
			continue;
		struct ws_task *task = ws_task_list_add(out);
		if (!task)
			return &ws_error_nomem;
		if (!decode_g(s, target, context, s->gptrs[i], s->gbuf + i * w,
			      task)) {
			out->n--;
			continue;
		}
		task->scale = scale;
	}
	return NULL;
}

static struct ws_error *go_reread(struct ws_runtime *runtime,
				  struct ws_target *target,
				  const struct ws_read_context *context,
				  struct ws_task *tasks, size_t n,
				  enum ws_reread *result)
{
	struct go_state *s = runtime->state;
	if (!reserve_gptrs(s, n))
		return &ws_error_nomem;
	for (size_t i = 0; i < n; i++)
		s->gptrs[i] = tasks[i].address;
	struct ws_error *err = read_gs(s, n);
	if (err)
		return err;
	forget_ms(s);
	size_t w = (size_t)(s->g_hi - s->g_lo);
	for (size_t i = 0; i < n; i++) {
		struct ws_task fresh = {0};
		if (!s->gptrs[i] ||
		    !decode_g(s, target, context, tasks[i].address,
			      s->gbuf + i * w, &fresh)) {
			result[i] = WS_REREAD_GONE;
			continue;
		}
		result[i] = ws_task_reread(&tasks[i], &fresh);
	}
	return NULL;
}

static void go_destroy(struct ws_runtime *runtime)
{
	struct go_state *s = runtime->state;
	if (s) {
		ws_dwtype_program_destroy(s->prog);
		for (size_t i = 0; i < s->nreasons; i++)
			free(s->reasons[i]);
		forget_ms(s);
		free(s->ms);
		free(s->gptrs);
		free(s->gbuf);
		free(s);
	}
	free(runtime);
}

static const struct ws_runtime_ops go_ops = {
	.list_tasks = go_list,
	.reread = go_reread,
	.destroy = go_destroy,
};

struct ws_error *ws_runtime_go_create(struct ws_target *target,
				      struct ws_symbols *symbols,
				      struct ws_runtime **ret)
{
	struct ws_runtime *rt = calloc(1, sizeof(*rt));
	struct go_state *s = calloc(1, sizeof(*s));
	if (!rt || !s) {
		free(rt);
		free(s);
		return &ws_error_nomem;
	}
	rt->ops = &go_ops;
	rt->state = s;
	rt->caps = &s->caps;
	s->caps = (struct ws_runtime_caps){
		.name = "go",
		.root_function = "runtime.goexit",
		.prefer_libdw = true,
		.fixed_frames = true,
		.tick = WS_TICK_STOPPED,
	};
	s->pid = target->pid;
	struct ws_memory_reader reader = ws_remote_reader(&s->pid);
	struct ws_error *err = ws_dwtype_program_create(ws_symbols_dwfl(symbols),
							&reader, &s->prog);
	if (!err)
		err = ws_dwtype_global(s->prog, NULL, "runtime.allgs", &s->allgs);
	if (err && err->kind == WS_ERR_NO_DEBUGINFO && is_go_program(symbols)) {
		ws_error_destroy(err);
		err = ws_error_create(WS_ERR_NO_DEBUGINFO,
				      "go: the target is a Go program without DWARF debug info "
				      "(built with -ldflags=-w or stripped); rebuild it without -w/-s "
				      "to see goroutines, or use --runtime threads");
	}
	if (!err)
		err = ws_dwtype_global(s->prog, NULL, "runtime.allglen",
				       &s->allglen);
	if (!err)
		err = resolve_g(s);
	if (err) {
		go_destroy(rt);
		return ws_error_wrap(err, "--runtime go");
	}
	read_wait_reasons(s);
	/* A goroutine's g.sched (or syscallsp) is saved before its status
	 * leaves _Grunning, gs are never freed, and trackingSeq versions
	 * them: then they can be read while the program runs. */
	if (s->g.has_tracking_seq)
		s->caps.tick = WS_TICK_LIVE;
	*ret = rt;
	return NULL;
}

struct ws_error *ws_runtime_go_detect(struct ws_target *target,
				      struct ws_symbols *symbols,
				      struct ws_runtime **ret)
{
	*ret = NULL;
	/* A Go binary without DWARF is an error, not a profile of OS threads
	 * that hides every goroutine. */
	if (!is_go_program(symbols))
		return NULL;
	return ws_runtime_go_create(target, symbols, ret);
}
