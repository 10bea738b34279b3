/*
 * The Go runtime adapter: every goroutine of a live Go program, found
 * through runtime.allgs and the target's DWARF, read by names (fields of
 * runtime.g and runtime.m, the runtime's named constants for goroutine
 * states), never offsets, so every release from 1.19 on works without a
 * version switch (tested: 1.19 to 1.26).
 *
 * A tick reads allgs' pointer array in one read and a window of each
 * runtime.g (the span of the fields used) with batched process_vm_readv.
 * Wait reasons come from the target's own runtime.waitReasonStrings, with
 * " (durable)" where Go's traceback adds it (a goroutine of a
 * testing/synctest bubble blocked on its bubble alone, Go >= 1.25), and a
 * goroutine's bubble is named as the traceback names it. Where
 * a goroutine's stack starts: parked or runnable from g.sched; in a syscall
 * from g.syscallpc/syscallsp (and syscallbp, Go >= 1.23); running from the
 * live registers of the thread whose tid is g.m.procid, unless that thread
 * is on another stack (g0 or gsignal: systemstack, cgo) or in a VDSO call,
 * where the goroutine's saved state is used instead. The runtime's own
 * goroutines are left out unless asked for, by Go's rule (isSystemGoroutine).
 * Goroutine labels are runtime_go_labels.c's; finding the layout at attach
 * (fields, states, wait reasons) is runtime_go_layout.c's.
 */
#include "ws_runtime_go.h"

#include <elf.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_go_internal.h"
#include "ws_dwtype.h"
#include "ws_grow.h"
#include "ws_hash.h"
#include "ws_remote_memory.h"
#include "ws_symbols.h"
#include "ws_syscalls.h"
#include "ws_target.h"

/* A Go program has a .go.buildinfo or .gopclntab section. */
static int module_is_go(Dwfl_Module *mod, void **userdata, const char *name,
			Dwarf_Addr start, void *arg)
{
	(void)userdata, (void)name, (void)start;
	if (ws_module_find_section(mod, ".go.buildinfo") ||
	    ws_module_go_pclntab(mod)) {
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
 * without going back to DWARF: this runs ~15 times per goroutine per tick. */
static uint64_t get(const struct ws_dwfield *f, const uint8_t *window,
		    uint64_t lo, uint64_t hi)
{
	uint64_t v = 0;
	if (f->offset < lo || f->offset + f->size > hi)
		return 0;
	memcpy(&v, window + (f->offset - lo), (size_t)f->size);
	return v;
}

#define G(s, gw, name) get(&(s)->g.name, (gw), (s)->g_lo, (s)->g_hi)

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

static int compare_slots(const void *a, const void *b)
{
	const struct g_slot *x = a, *y = b;
	return x->address < y->address ? -1 : x->address > y->address;
}

/* What read_gs hands each goroutine to: the window of gptrs[index]. */
typedef void g_visit(struct go_state *s, size_t index, const uint8_t *window,
		     void *arg);

/* Calls visit for each of gptrs[0 .. n) whose window could be read, in
 * address order; a window is valid during its call only. Costs, measured
 * on a 10,000-goroutine dump (2-vCPU guest): a range of process_vm_readv
 * costs about a microsecond however short, and the first write to each
 * fresh page of wallspy's (by the kernel, then again by wallspy itself)
 * about 7 us, so reading every window into a buffer of its own (4 MB)
 * took 10.5 ms and decoding from it 14 ms. Instead neighbours (the runtime
 * allocates gs in runs, a span of one size class) whose gap is at most a
 * window are one range of up to G_RUN_MAX bytes (the gaps read too: at
 * most twice the bytes), and the ranges are read G_BATCH bytes at a time
 * into one buffer kept from tick to tick. A range cut short (a gap not
 * mapped) is read again window by window. */
static struct ws_error *read_gs(struct go_state *s, size_t n, g_visit *visit,
				void *arg)
{
	size_t w = (size_t)(s->g_hi - s->g_lo);
	if (w > G_RUN_MAX)
		return ws_error_create(WS_ERR_OTHER,
				       "go: runtime.g window of %zu bytes", w);
	if (!s->gbuf && !(s->gbuf = malloc(G_BATCH)))
		return &ws_error_nomem;
	if (!ws_grow((void **)&s->gsorted, &s->gsorted_capacity, n,
		     sizeof(*s->gsorted)))
		return &ws_error_nomem;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (s->gptrs[i])
			s->gsorted[m++] = (struct g_slot){
				s->gptrs[i] + s->g_lo, i};
	qsort(s->gsorted, m, sizeof(*s->gsorted), compare_slots);

	struct ws_remote_range runs[BATCH];
	size_t offset[BATCH];  /* of the batch's windows, in gbuf */
	size_t k = 0;
	while (k < m) {
		/* The batch: slots [k, end) in nruns ranges. */
		size_t nruns = 0, used = 0, end = k;
		uint64_t run_end = 0;
		for (; end < m && end - k < BATCH; end++) {
			uint64_t a = s->gsorted[end].address;
			struct ws_remote_range *run =
				nruns ? &runs[nruns - 1] : NULL;
			if (run && a >= run->address &&
			    a - run->address <= run_end - run->address + w &&
			    a + w > a && a + w - run->address <= G_RUN_MAX &&
			    used + (a + w > run_end ? a + w - run_end : 0) <=
				    G_BATCH) {
				if (a + w > run_end) {
					used += (size_t)(a + w - run_end);
					run->size += (size_t)(a + w - run_end);
					run_end = a + w;
				}
			} else {
				if (nruns == BATCH || used + w > G_BATCH)
					break;
				runs[nruns++] = (struct ws_remote_range){
					.address = a, .buf = s->gbuf + used,
					.size = w};
				used += w;
				run_end = a + w;
				run = &runs[nruns - 1];
			}
			offset[end - k] = (size_t)((uint8_t *)run->buf -
						   s->gbuf) +
					  (size_t)(a - run->address);
		}
		ws_remote_readv(s->pid, runs, nruns);
		size_t r = 0;
		for (size_t j = k; j < end; j++) {
			uint8_t *win = s->gbuf + offset[j - k];
			while ((uint8_t *)runs[r].buf + runs[r].size <= win)
				r++;
			if ((size_t)(win - (uint8_t *)runs[r].buf) + w >
			    runs[r].done) {
				/* Past where its range's read stopped. */
				struct ws_remote_range one = {
					.address = s->gsorted[j].address,
					.buf = win, .size = w};
				ws_remote_readv(s->pid, &one, 1);
				if (one.done != w)
					continue;
			}
			visit(s, s->gsorted[j].index, win, arg);
		}
		k = end;
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

static void forget_ms(struct go_state *s)
{
	for (size_t i = 0; i < s->nms; i++)
		free(s->ms[i].bytes);
	s->nms = 0;
}

/* Remembers that thread tid is M maddr's (until the next list). */
static void note_thread_m(struct go_state *s, pid_t tid, uint64_t maddr)
{
	if (!tid)
		return;
	for (size_t i = 0; i < s->nthread_ms; i++)
		if (s->thread_ms[i].tid == tid) {
			s->thread_ms[i].address = maddr;
			return;
		}
	if (!ws_grow((void **)&s->thread_ms, &s->thread_ms_capacity,
		     s->nthread_ms + 1, sizeof(*s->thread_ms)))
		return; /* only a stand-in lost */
	s->thread_ms[s->nthread_ms].tid = tid;
	s->thread_ms[s->nthread_ms].address = maddr;
	s->nthread_ms++;
}

/* The tid of the thread of M `maddr`, 0 when it cannot be read. */
static pid_t m_tid(struct go_state *s, uint64_t maddr)
{
	const uint8_t *mw = maddr ? m_window(s, maddr) : NULL;
	return mw ? (pid_t)get(&s->m.procid, mw, s->m_lo, s->m_hi) : 0;
}

/* Whose goroutine this is, by its start function: Go's
 * isSystemGoroutine, which runtime.Stack, the goroutine profile and the
 * SIGQUIT dump (below GOTRACEBACK=system) use to leave the runtime's own
 * goroutines out: a start function in package runtime makes it the
 * runtime's, except runtime.main (goroutine 1), corostart (iter.Pull's
 * coroutines) and handleAsyncEvent (wasm); the finalizer and cleanup
 * goroutines count as the user's while they run user code. A binary
 * search of the runtime's functions (it runs in the pause). */
static enum g_owner start_owner(const struct go_state *s, uint64_t startpc)
{
	size_t lo = 0, hi = s->nrfuncs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (startpc < s->rfuncs[mid].lo)
			hi = mid;
		else if (startpc >= s->rfuncs[mid].hi)
			lo = mid + 1;
		else
			return s->rfuncs[mid].owner;
	}
	return OWNER_USER;
}

/* Whose a goroutine starting in runtime function `name` is. */
static bool runtime_owner(const char *name, enum g_owner *ret)
{
	static const struct { const char *name; enum g_owner owner; } special[] = {
		{ "runtime.main", OWNER_USER },
		{ "runtime.corostart", OWNER_USER },
		{ "runtime.handleAsyncEvent", OWNER_USER },
		{ "runtime.runfinq", OWNER_FINALIZER },        /* to 1.25 */
		{ "runtime.runFinalizers", OWNER_FINALIZER },  /* 1.26 */
		{ "runtime.runCleanups", OWNER_CLEANUP },
	};
	if (strncmp(name, "runtime.", 8) != 0)
		return false;
	*ret = OWNER_SYSTEM;
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
		if (strcmp(name, special[i].name) == 0)
			*ret = special[i].owner;
	return *ret != OWNER_USER;
}

static int compare_rfuncs(const void *a, const void *b)
{
	const struct runtime_func *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Keeps a function of package runtime with its owner; true (stop) when
 * out of memory. */
static bool add_rfunc(const char *sname, const GElf_Sym *sym,
		      GElf_Addr addr, void *arg)
{
	struct go_state *s = arg;
	enum g_owner owner;
	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC ||
	    !sym->st_size || !runtime_owner(sname, &owner))
		return false;
	if (!ws_grow((void **)&s->rfuncs, &s->rfuncs_capacity,
		     s->nrfuncs + 1, sizeof(*s->rfuncs)))
		return true;
	s->rfuncs[s->nrfuncs++] = (struct runtime_func){
		addr, addr + sym->st_size, owner };
	return false;
}

/* The runtime's functions from every Go module's symbol table (where an
 * assembly function without DWARF is named too), once. */
static int collect_rfuncs(Dwfl_Module *mod, void **userdata, const char *name,
			  Dwarf_Addr start, void *arg)
{
	(void)userdata, (void)name, (void)start;
	if (!ws_module_go_pclntab(mod))
		return DWARF_CB_OK;
	return ws_module_each_symbol(mod, add_rfunc, arg)
		? DWARF_CB_ABORT : DWARF_CB_OK;
}

/* Read once per tick, when a finalizer goroutine is met. */
static bool finalizer_running(struct go_state *s)
{
	if (s->fing_running < 0) {
		uint64_t v = 0;
		struct ws_error *err = NULL;
		if (s->has_fing)
			err = ws_dwtype_read_uint(&s->fing, &v);
		ws_error_destroy(err);
		s->fing_running = !err && (s->fing_is_status
					   ? (v & s->fing_running_bit) != 0
					   : v != 0);
	}
	return s->fing_running == 1;
}

static bool is_system(struct go_state *s, const uint8_t *gw)
{
	switch (start_owner(s, G(s, gw, startpc))) {
	case OWNER_SYSTEM:
		return true;
	case OWNER_FINALIZER:
		return !finalizer_running(s);
	case OWNER_CLEANUP:
		return !(s->g.has_running_cleanups && G(s, gw, running_cleanups));
	default:
		return false;
	}
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
 * vDSO call's pc and sp while the goroutine is in one (nanotime1 and
 * walltime record the caller's pc and sp in m.vdsoPC/vdsoSP, then switch
 * to the g0 stack). m.vdsoSP is the goroutine's only when it lies on the
 * goroutine's stack: the M's own code on g0 calls nanotime too (execute's
 * casgstatus into _Grunning, with m.curg already this goroutine), and
 * there vdsoSP is on g0's stack, so unwinding from it ends in the
 * scheduler, never at runtime.goexit; the goroutine's context is then
 * g.sched, where it resumes (the rule Go's nanotime1 itself follows: it
 * switches stacks only when called on m.curg). Without a readable M the
 * goroutine is mid-switch. */
static void start_running(struct go_state *s, struct ws_target *target,
			  const struct ws_read_context *context,
			  struct ws_task *task, uint64_t gaddr, uint64_t maddr,
			  const uint8_t *gw)
{
	uint64_t pc = G(s, gw, sched_pc);
	uint64_t sp = G(s, gw, sched_sp);
	uint64_t bp = G(s, gw, sched_bp);
	const uint8_t *mw = maddr ? m_window(s, maddr) : NULL;
	pid_t tid = 0;
	bool runs_it = false;
	if (mw) {
		tid = (pid_t)get(&s->m.procid, mw, s->m_lo, s->m_hi);
		runs_it = get(&s->m.curg, mw, s->m_lo, s->m_hi) == gaddr;
		note_thread_m(s, tid, maddr);
		task->thread = tid;
		uint64_t vdso_sp = get(&s->m.vdso_sp, mw, s->m_lo, s->m_hi);
		if (vdso_sp && vdso_sp >= task->stack_lo &&
		    vdso_sp < task->stack_hi) {
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

/* A goroutine in a system call: unwound from where it entered the call
 * (syscallpc/sp/bp, saved by entersyscall and stable until it leaves),
 * never from its thread's live registers (no thread is stopped for it).
 * Its thread (g.m, kept during the call) names the call: from its
 * registers when it is stopped, else from /proc (a thread between
 * entersyscall and the kernel, or back from it, names none); either way
 * the call it was seen in before, not the restart_syscall the kernel
 * shows once a ptrace stop interrupted a sleep or timed wait. */
static void start_syscall(struct go_state *s, struct ws_target *target,
			  struct ws_task *task, const uint8_t *gw)
{
	task->state = WS_STATE_SYSCALL;
	/* syscallbp is kept from Go 1.23 on; before, CFI alone. */
	set_saved(task, G(s, gw, syscallpc), G(s, gw, syscallsp),
		  s->g.has_syscallbp ? G(s, gw, syscallbp) : 0);
	pid_t tid = m_tid(s, G(s, gw, m));
	struct ws_thread *th = tid ? ws_target_find_thread(target, tid) : NULL;
	if (!th)
		return;
	task->thread = tid;
	/* The real call even after a stop made the kernel restart it as
	 * restart_syscall: the thread's memory of it, kept by its stops
	 * (th->syscall) and by these /proc reads alike. */
	long nr = th->regs_valid ? th->syscall
				 : ws_syscall_current_of_thread(
					   s->pid, tid, &th->syscall_memory);
	if (nr >= 0)
		task->wait_reason = ws_syscall_name(nr);
}

/* The bubble's number as Go's traceback prints it (one read, two for
 * 1.24's root goroutine); unreadable: none shown. */
static void read_bubble(struct go_state *s, uint64_t bubble,
			struct ws_task *task)
{
	uint64_t id;
	if (!s->has_bubble_id)
		return;
	struct ws_error *err = ws_dwtype_path_uint(s->prog, &s->bubble_id,
						   bubble, NULL, 0, &id);
	if (!err) {
		task->bubble_kind = s->bubble_kind;
		task->bubble_id = id;
	}
	ws_error_destroy(err);
}

static const char *unknown_state(struct go_state *s, uint64_t status)
{
	if (status >= MAX_STATUS)
		return "state out of range";
	if (!s->unknown_states[status] &&
	    asprintf(&s->unknown_states[status], "state %u",
		     (unsigned)status) < 0)
		s->unknown_states[status] = NULL;
	return s->unknown_states[status];
}

/* Decodes one goroutine from its window; false when it is no task (free,
 * dead, or the runtime's own when those are not wanted). */
static bool decode_g(struct go_state *s, struct ws_target *target,
		     const struct ws_read_context *context, uint64_t gaddr,
		     const uint8_t *gw, struct ws_task *task)
{
	uint64_t status = G(s, gw, status) & ~s->scan_bit;
	enum g_kind kind = status < MAX_STATUS ? (enum g_kind)s->kind_of[status]
					       : GK_UNKNOWN;
	if (kind == GK_SKIP)
		return false;
	if (!context->system_tasks && is_system(s, gw))
		return false;
	task->address = gaddr;
	task->id = G(s, gw, goid);
	/* The version of a live read: casgstatus bumps trackingSeq when a
	 * goroutine leaves _Grunning, but only after its status CAS, and
	 * clears g.m (dropg) only after that; execute sets g.m before the CAS
	 * into _Grunning (every release 1.19 to 1.26). A goroutine that ran
	 * between two reads and parked again at the same context could be
	 * read again between the CAS and the bump; with g.m in the version it
	 * is seen to have changed. */
	task->version = G(s, gw, m) << 8;
	if (s->g.has_tracking_seq)
		task->version ^= G(s, gw, tracking_seq);
	/* And the version is 8 bits: a goroutine that parks at one context
	 * a multiple of 256 times between the two reads of a tick passes
	 * (go_flip: 1 in ~10^6 samples). The guard narrows the window to
	 * its own stack copy. */
	if (context->live && s->guard_hi) {
		task->guard_address = gaddr + s->guard_lo;
		task->guard_size = (uint32_t)(s->guard_hi - s->guard_lo);
		task->guard_hash = ws_hash_bytes(gw + (s->guard_lo - s->g_lo),
						 task->guard_size, 0);
	}
	task->stack_lo = G(s, gw, stack_lo);
	task->stack_hi = G(s, gw, stack_hi);
	task->entry_pc = G(s, gw, startpc);
	/* The main goroutine was made by the runtime itself; Go's traceback
	 * names no creator for it either. */
	if (task->id != 1) {
		task->creator_pc = G(s, gw, gopc);
		if (s->g.has_parent_goid)
			task->creator_id = G(s, gw, parent_goid);
	}
	task->locked_to_thread = s->g.has_lockedm && G(s, gw, lockedm) != 0;
	if (context->labels && s->labels && s->g.has_labels)
		task->labels = go_labels_read(s->labels, G(s, gw, labels),
					      &task->nlabels);
	uint64_t pc = G(s, gw, sched_pc);
	uint64_t sp = G(s, gw, sched_sp);
	uint64_t bp = G(s, gw, sched_bp);
	uint64_t reason = G(s, gw, waitreason);
	uint64_t bubble = s->g.has_bubble ? G(s, gw, bubble) : 0;
	if (bubble)
		read_bubble(s, bubble, task);
	switch (kind) {
	case GK_RUNNING:
		task->state = WS_STATE_RUNNING;
		start_running(s, target, context, task, gaddr, G(s, gw, m), gw);
		break;
	case GK_SYSCALL:
		start_syscall(s, target, task, gw);
		break;
	case GK_WAITING:
	case GK_LEAKED:
		task->state = WS_STATE_WAITING;
		if (reason < s->nreasons)
			task->wait_reason = kind == GK_LEAKED
				? s->leaked_reasons[reason] : s->reasons[reason];
		if (kind == GK_WAITING && reason < s->nreasons &&
		    s->durable_reasons[reason] && s->bubble_durable &&
		    bubble)
			task->wait_reason = s->durable_reasons[reason];
		set_saved(task, pc, sp, bp);
		break;
	case GK_COPYSTACK:
		task->state = WS_STATE_WAITING;
		task->wait_reason = "copystack";
		set_saved(task, pc, sp, bp);
		break;
	case GK_RUNNABLE:
	case GK_PREEMPTED:
		task->state = WS_STATE_RUNNABLE;
		set_saved(task, pc, sp, bp);
		break;
	default:
		/* A status of a newer Go: say so; its g.sched is the best
		 * guess of its stack. */
		task->state = WS_STATE_UNKNOWN;
		task->wait_reason = unknown_state(s, status);
		set_saved(task, pc, sp, bp);
		break;
	}
	return true;
}

static void new_tick(struct go_state *s, const struct ws_read_context *context)
{
	forget_ms(s);
	s->nthread_ms = 0;
	s->fing_running = -1;
	if (s->reasons_pending)
		go_read_wait_reasons(s);
	if (context->labels && s->labels)
		go_labels_new_tick(s->labels);
}

/* go_list's visit: goroutine i into slot i after the list's tasks
 * (address 0: no task). */
struct list_visit {
	struct ws_target *target;
	const struct ws_read_context *context;
	struct ws_task *slots;
	double scale;
};

static void list_one(struct go_state *s, size_t i, const uint8_t *window,
		     void *arg)
{
	struct list_visit *v = arg;
	struct ws_task *task = &v->slots[i];
	memset(task, 0, sizeof(*task));
	if (decode_g(s, v->target, v->context, s->gptrs[i], window, task))
		task->scale = v->scale;
	else
		task->address = 0;
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
	 * one found to be a task stands for n/limit slots (dead and system
	 * ones are dropped the same way in the sample as in the whole). */
	double scale = 1;
	size_t limit = context->limit;
	if (!err && limit && limit < n) {
		ws_random_sample_front(context->random, s->gptrs, n, limit,
				       sizeof(*s->gptrs));
		scale = (double)n / (double)limit;
		n = limit;
	}
	if (err)
		return err;
	if (!ws_task_list_reserve(out, n))
		return &ws_error_nomem;
	new_tick(s, context);
	/* Decoded in address order into their slots, then the tasks
	 * moved together in allgs' order. */
	struct list_visit v = {.target = target, .context = context,
			       .slots = out->tasks + out->n, .scale = scale};
	for (size_t i = 0; i < n; i++)
		v.slots[i].address = 0;
	err = read_gs(s, n, list_one, &v);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		if (v.slots[i].address)
			out->tasks[out->n++] = v.slots[i];
	return NULL;
}

/* go_reread's visit: goroutine i read again. */
struct reread_visit {
	struct ws_target *target;
	const struct ws_read_context *context;
	struct ws_task *tasks;
	enum ws_reread *result;
};

static void reread_one(struct go_state *s, size_t i, const uint8_t *window,
		       void *arg)
{
	struct reread_visit *v = arg;
	struct ws_task fresh = {0};
	if (decode_g(s, v->target, v->context, v->tasks[i].address, window,
		     &fresh))
		v->result[i] = ws_task_reread(&v->tasks[i], &fresh);
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
	for (size_t i = 0; i < n; i++) {
		s->gptrs[i] = tasks[i].address;
		result[i] = WS_REREAD_GONE;  /* unless read below */
	}
	forget_ms(s);
	struct reread_visit v = {.target = target, .context = context,
				 .tasks = tasks, .result = result};
	return read_gs(s, n, reread_one, &v);
}

/* The goroutine held thread tid runs now: its M's curg, read now (0: the
 * M runs its own g0, or tid's M is not known this tick). */
static uint64_t go_thread_current(struct ws_runtime *runtime, pid_t tid)
{
	struct go_state *s = runtime->state;
	for (size_t i = 0; i < s->nthread_ms; i++) {
		if (s->thread_ms[i].tid != tid)
			continue;
		const struct ws_dwfield *f = &s->m.curg;
		uint64_t curg = 0;
		struct ws_error *err = ws_remote_read(
			s->pid, s->thread_ms[i].address + f->offset, &curg,
			sizeof(curg));
		ws_error_destroy(err);
		return err ? 0 : curg;
	}
	return 0;
}

static void go_destroy(struct ws_runtime *runtime)
{
	struct go_state *s = runtime->state;
	if (s) {
		ws_dwtype_program_destroy(s->prog);
		go_forget_wait_reasons(s);
		for (size_t i = 0; i < MAX_STATUS; i++)
			free(s->unknown_states[i]);
		go_labels_destroy(s->labels);
		free(s->rfuncs);
		forget_ms(s);
		free(s->ms);
		free(s->thread_ms);
		free(s->gptrs);
		free(s->gbuf);
		free(s->gsorted);
		free(s);
	}
	free(runtime);
}

static const struct ws_runtime_ops go_ops = {
	.list_tasks = go_list,
	.reread = go_reread,
	.thread_current = go_thread_current,
	.destroy = go_destroy,
};

/* Go's traceback and profiles hide a wrapper unless it called a panic
 * (elideWrapperCalling in runtime/traceback.go). */
static const char *const wrapper_shown_above[] = {
	"runtime.gopanic", "runtime.sigpanic", "runtime.panicwrap", NULL,
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
		.task_noun = "goroutine",
		.root_function = "runtime.goexit",
		.pprof_hides_root = true,
		.prefer_libdw = true,
		.fixed_frames = true,
		.hide_wrappers = true,
		.wrapper_shown_above = wrapper_shown_above,
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
		err = go_resolve_g(s);
	if (err) {
		go_destroy(rt);
		return ws_error_wrap(err, "--runtime go");
	}
	go_resolve_states(s);
	go_resolve_finalizer(s);
	dwfl_getmodules(ws_symbols_dwfl(symbols), collect_rfuncs, s, 0);
	qsort(s->rfuncs, s->nrfuncs, sizeof(*s->rfuncs), compare_rfuncs);
	go_read_wait_reasons(s);
	/* Labels are a nicety: a layout not understood only costs them. */
	ws_error_destroy(go_labels_create(s->prog, &s->labels));
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
