/*
 * One tick of sampling (see ws_sampler.h): the tick kind the runtime
 * declares takes the tasks and their stack copies (tick_*.c; the target's
 * pause covers only stopping, listing and copying), then, with the target
 * running again, each copy is unwound and its frames named here.
 */
#include "ws_sampler.h"

#include "sampler_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ws_clock.h"
#include "ws_finder.h"
#include "ws_grow.h"
#include "ws_snapshot.h"
#include "ws_symbols.h"
#include "ws_target.h"
#include "ws_unwind.h"

static const char *const phase_names[WS_NPHASES] = {"stop", "list", "copy",
						     "resume"};

/* The runtime's unwinder, unless a switch overrides it (for comparing the
 * two; see wallspy(1)). libunwind-ptrace 1.6 opens a module by its
 * /proc/PID/maps path under /proc/PID/root, so it reads a container's
 * files as the target sees them; a deleted file is the sampler's to
 * unwind again with libdw (unwind_checked). */
static struct ws_error *choose_backend(struct ws_sampler *s)
{
	const struct ws_runtime_caps *caps = s->runtime ? s->runtime->caps : NULL;
	bool libdw = caps && caps->prefer_libdw;
	if (s->options.switches.unwinder == WS_UNWINDER_LIBDW)
		libdw = true;
	else if (s->options.switches.unwinder == WS_UNWINDER_LIBUNWIND)
		libdw = false;
	bool fixed = caps && caps->fixed_frames;
	ws_unwinder_use_step_cache(s->unwinder,
				   libdw && fixed &&
				   !s->options.switches.no_step_cache);
	ws_unwinder_use_cfi_steps(s->unwinder,
				  !fixed && !s->options.switches.no_step_cache);
	return ws_unwinder_set_backend(s->unwinder, libdw ? WS_UNWIND_LIBDW
							  : WS_UNWIND_LIBUNWIND);
}

/* Resolves the runtime's root function (again after an exec). */
static void find_root(struct ws_sampler *s)
{
	memset(&s->root_frame, 0, sizeof(s->root_frame));
	s->root_pc = 0;
	const char *root = s->runtime ? s->runtime->caps->root_function : NULL;
	if (!root)
		return;
	s->root_frame.function = root;
	if (ws_symbols_find_function(s->symbols, root,
				     &s->root_pc)) {
		/* Named at its first line, the same for every task. */
		const struct ws_location *loc =
			ws_symbols_lookup(s->symbols, s->root_pc, false);
		if (loc->frames[loc->nframes - 1].function)
			s->root_frame = loc->frames[loc->nframes - 1];
	}
}

static struct ws_error *open_debuginfo(struct ws_sampler *s)
{
	struct ws_finder_options files = {
		.debug_cache = s->options.debug_cache,
		.debuginfod = s->options.debuginfod,
	};
	struct ws_error *err = ws_symbols_create_with(s->target->pid, &files,
						       &s->symbols);
	if (err)
		return err;
	find_root(s);
	err = ws_unwinder_create(s->target->pid, ws_symbols_dwfl(s->symbols),
				 &s->unwinder);
	if (!err && s->runtime)
		err = choose_backend(s);
	return err;
}

/* The runtime (--runtime, or the one found) of the image open now, and
 * the unwinder's backend for it. */
static struct ws_error *create_runtime(struct ws_sampler *s)
{
	const char *name = s->options.runtime ? s->options.runtime : "auto";
	struct ws_error *err = ws_runtime_create(name, s->target, s->symbols,
						 &s->runtime);
	if (err)
		return err;
	find_root(s);
	return choose_backend(s);
}

struct ws_error *ws_sampler_create(struct ws_target *target,
				   const struct ws_sampler_options *options,
				   struct ws_sampler **ret)
{
	struct ws_sampler *s = calloc(1, sizeof(*s));
	if (!s)
		return &ws_error_nomem;
	s->target = target;
	/* It opens the image the target runs now: an exec seen before (a
	 * child found by --subprocesses after its exec) is no news. */
	target->exec_seen = false;
	s->options = *options;
	if (!s->options.max_frames)
		s->options.max_frames = WS_DEFAULT_MAX_FRAMES;
	if (!s->options.max_stack)
		s->options.max_stack = WS_DEFAULT_MAX_STACK;
	if (!s->options.stop_timeout_ns)
		s->options.stop_timeout_ns = WS_DEFAULT_STOP_TIMEOUT_NS;
	ws_snapshot_set_init(&s->snapshots, target->pid);
	ws_live_init(&s->live, target->pid);
	ws_tick_stacks_init(&s->tick_stacks);
	struct ws_budget_options budget = {
		.max_pause_ns = options->max_pause_ns,
		.max_cpu = options->max_cpu,
		.interval_ns = options->interval_ns,
	};
	ws_budget_init(&s->budget, &budget, ws_now_ns());
	s->scan_ns_per_thread = 1500;
	s->pcs = calloc(s->options.max_frames, sizeof(*s->pcs));
	s->alt_pcs = calloc(s->options.max_frames, sizeof(*s->alt_pcs));
	struct ws_error *err = s->pcs && s->alt_pcs ? NULL : &ws_error_nomem;
	if (!err)
		err = open_debuginfo(s);
	if (!err)
		err = create_runtime(s);
	/* One slot per task up to 4096 tasks. Not for fixed-frame runtimes
	 * (Go): their learnt steps unwind a stack faster than it hashes
	 * (go_parked_n 1000: 1.35 us per sample without, 1.5 with). Not
	 * for a single tick: hashing every stack and filling slots no tick
	 * reads was 14 % of a dump of 512 threads (perf). A switch turns it
	 * off (to compare). */
	if (!err && !s->runtime->caps->fixed_frames && !options->one_tick &&
	    !s->options.switches.no_stack_cache)
		s->stack_cache = ws_stack_cache_create(4096);
	if (!err)
		err = ws_maps_reload(&s->snapshots.maps);
	if (err) {
		ws_sampler_destroy(s);
		return err;
	}
	*ret = s;
	return NULL;
}

void ws_sampler_destroy(struct ws_sampler *s)
{
	if (!s)
		return;
	if (s->options.switches.report_pause && s->ticks) {
		fprintf(stderr, "wallspy: mean %s per tick:",
			s->live.ticks ? "time (target running)" : "pause");
		for (int i = 0; i < WS_NPHASES; i++)
			fprintf(stderr, " %s %.3f ms", phase_names[i],
				(double)s->phase_ns[i] / (double)s->ticks / 1e6);
		fputc('\n', stderr);
		fprintf(stderr, "wallspy: unwinds reused %" PRIu64
			" (%" PRIu64 " without a copy), stacks unwound from CFI steps alone %zu\n",
			s->unwinds_reused, s->copies_skipped,
			ws_unwinder_cfi_stacks(s->unwinder));
		if (s->live.ticks)
			fprintf(stderr, "wallspy: live ticks %" PRIu64 ", tasks read %" PRIu64 ", ended while read %" PRIu64 ", read again stopped %" PRIu64 ", stood in for a task switched out %" PRIu64 ", started on a thread sampled already %" PRIu64 "\n",
				s->live.ticks, s->live.tasks_listed,
				s->live.tasks_gone, s->live.tasks_held,
				s->live.stood_in, s->live.ran_twice);
	}
	ws_runtime_destroy(s->runtime);
	ws_unwinder_destroy(s->unwinder);
	ws_symbols_destroy(s->symbols);
	ws_task_list_deinit(&s->tasks);
	ws_snapshot_set_deinit(&s->snapshots);
	ws_live_deinit(&s->live);
	ws_stack_cache_destroy(s->stack_cache);
	free(s->reused_pcs);
	ws_tick_stacks_deinit(&s->tick_stacks);
	free(s->pcs);
	free(s->alt_pcs);
	free(s->rolling_tids);
	free(s->rolling_picks);
	free(s->rolling_bits);
	ws_free_large(s->tick.tasks);
	free(s->tick.frames);
	free(s);
}

struct ws_symbols *ws_sampler_symbols(const struct ws_sampler *s)
{
	return s->symbols;
}

const char *ws_sampler_runtime_name(const struct ws_sampler *s)
{
	return ws_runtime_name(s->runtime);
}

const char *ws_sampler_pprof_hidden_root(const struct ws_sampler *s)
{
	const struct ws_runtime_caps *caps = s->runtime->caps;
	return caps->pprof_hides_root ? caps->root_function : NULL;
}

static struct ws_frame *reserve_frames(struct ws_sampler *s, size_t used,
				       size_t more)
{
	if (!ws_grow((void **)&s->tick.frames, &s->frames_capacity,
		     used + more, sizeof(*s->tick.frames)))
		return NULL;
	return s->tick.frames + used;
}

/* The target's code or unwind tables may have changed: no unwind of an
 * earlier tick may be reused. */
static void forget_unwinds(struct ws_sampler *s)
{
	if (s->stack_cache)
		ws_stack_cache_clear(s->stack_cache);
	if (s->unwinder)
		ws_unwinder_forget_steps(s->unwinder);
}

/* After exec the old program's debug info and unwind caches are wrong. */
static struct ws_error *reopen_after_exec(struct ws_sampler *s)
{
	s->target->exec_seen = false;
	forget_unwinds(s);
	/* The runtime's state points into the old image's debug info (a
	 * Go runtime's DIEs): it goes first, and the new image may run
	 * another runtime (a shell that execs a Go program). */
	ws_runtime_destroy(s->runtime);
	s->runtime = NULL;
	ws_symbols_destroy(s->symbols);
	s->symbols = NULL;
	ws_unwinder_destroy(s->unwinder);
	s->unwinder = NULL;
	struct ws_error *err = ws_maps_reload(&s->snapshots.maps);
	if (!err)
		err = open_debuginfo(s);
	if (!err)
		err = create_runtime(s);
	/* Half reopened (no runtime, or no debug info): the next tick tries
	 * again before anything uses them. */
	if (err)
		s->target->exec_seen = true;
	return err;
}

/* True when pc lies in executable memory of the target. An unwinder that
 * went astray (a frame without unwind info, guessed from a frame pointer
 * that is not one) yields pcs in data; the stack is cut there rather than
 * shown with made-up frames. The map is re-read at most once a tick. */
static bool pc_in_code(struct ws_sampler *s, uint64_t pc, bool *reloaded)
{
	const struct ws_mapping *m = ws_maps_find(&s->snapshots.maps, pc);
	if (!m && !*reloaded) {
		*reloaded = true;
		struct ws_error *err = ws_maps_reload(&s->snapshots.maps);
		ws_error_destroy(err);
		m = ws_maps_find(&s->snapshots.maps, pc);
	}
	return m && (m->prot & PROT_EXEC);
}

/* Unwinds with the runtime's backend and cuts the stack at the first pc
 * outside code. When libunwind went astray that way (it has no unwind info
 * for the vDSO and guesses from frame pointers), or guessed at all (no
 * unwind info for a module it cannot open by its /proc/PID/maps path: a
 * deleted binary), the stack is unwound again with libdw, which reads the
 * vDSO's CFI from memory and every file through the finder, and the
 * better result is kept. */
static bool refresh_modules(struct ws_sampler *s);

/* Whether the module list knows the module of `pc`. */
static bool in_known_module(const struct ws_sampler *s, uint64_t pc)
{
	Dwfl *dwfl = ws_symbols_dwfl(s->symbols);
	return !dwfl || dwfl_addrmodule(dwfl, pc) != NULL;
}

static size_t unwind_checked(struct ws_sampler *s,
			     const struct ws_snapshot *snap,
			     const char **stop_reason, bool *maps_reloaded)
{
	static const char astray[] = "unwind failed: a return address outside code";
	size_t n = ws_unwind(s->unwinder, snap, s->pcs, s->options.max_frames,
			     stop_reason);
	/* A stack that ends in a module the list does not know yet (libc
	 * at the first ticks of a launched command, read at its exec: the
	 * list only learns of it when naming meets its pcs) ended for want
	 * of that module's CFI, not where it really ends: libunwind, with
	 * no unwind info, follows a frame-pointer chain that libc's rbp
	 * (a plain register there) ends at once, and a running greenrt
	 * task inside malloc came out as `_int_malloc` alone. Read the
	 * modules again and unwind once more. */
	if (n && !in_known_module(s, s->pcs[n - 1].pc) && refresh_modules(s))
		n = ws_unwind(s->unwinder, snap, s->pcs, s->options.max_frames,
			      stop_reason);
	bool guessed = ws_unwinder_guessed(s->unwinder);
	size_t k = 0;
	while (k < n && pc_in_code(s, s->pcs[k].pc, maps_reloaded))
		k++;
	if (k == n && !guessed)
		return n;
	if (k < n)
		*stop_reason = astray;
	if (ws_unwinder_backend(s->unwinder) != WS_UNWIND_LIBUNWIND)
		return k;
	struct ws_error *err = ws_unwinder_set_backend(s->unwinder,
						       WS_UNWIND_LIBDW);
	if (err) {
		ws_error_destroy(err);
		return k;
	}
	const char *reason2;
	size_t n2 = ws_unwind(s->unwinder, snap, s->alt_pcs,
			      s->options.max_frames, &reason2);
	ws_error_destroy(ws_unwinder_set_backend(s->unwinder,
						 WS_UNWIND_LIBUNWIND));
	size_t k2 = 0;
	while (k2 < n2 && pc_in_code(s, s->alt_pcs[k2].pc, maps_reloaded))
		k2++;
	/* A guess is worth no more than CFI of the same depth. */
	if (k2 == n2 && (n2 > k || (guessed && n2 == k))) {
		memcpy(s->pcs, s->alt_pcs, n2 * sizeof(*s->pcs));
		*stop_reason = reason2;
		return n2;
	}
	return k;
}

/* A pc in no known module: a library loaded since the modules were read
 * (a launched command starts with only its executable and ld.so mapped, or
 * dlopen). Re-reads the module list at most once a second. */
static bool refresh_modules(struct ws_sampler *s)
{
	uint64_t now = ws_now_ns();
	if (s->last_refresh_ns && now - s->last_refresh_ns < 1000000000ull)
		return false;
	s->last_refresh_ns = now;
	struct ws_error *err = ws_symbols_refresh(s->symbols);
	if (err) {
		ws_error_destroy(err);
		return false;
	}
	forget_unwinds(s);
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Cuts the frames outside the runtime's root function (the scheduler's);
 * returns the number kept. The root keeps its own address (the return
 * address the runtime planted: Go's goexit + 1, as its traceback prints
 * it), named as the root frame is for every task. */
static size_t cut_at_root(struct ws_sampler *s, struct ws_frame *frames,
			  size_t n, bool *found)
{
	const char *root = s->runtime->caps->root_function;
	const char *file = s->runtime->caps->root_file;
	*found = false;
	if (!root)
		return n;
	for (size_t k = 0; k < n; k++) {
		if (frames[k].function && strcmp(frames[k].function, root) == 0 &&
		    (!file || (frames[k].file && ends_with(frames[k].file, file)))) {
			uint64_t address = frames[k].address;
			uint64_t module_offset = frames[k].module_offset;
			bool return_address = frames[k].return_address;
			frames[k] = s->root_frame;
			frames[k].address = address;
			frames[k].module_offset = module_offset;
			frames[k].return_address = return_address;
			*found = true;
			return k + 1;
		}
	}
	return n;
}

/* Whether the runtime shows a wrapper directly above (called by it)
 * `callee`. */
static bool wrapper_shown(const struct ws_runtime_caps *caps,
			  const struct ws_frame *callee)
{
	for (const char *const *f = caps->wrapper_shown_above;
	     f && *f && callee && callee->function; f++)
		if (strcmp(*f, callee->function) == 0)
			return true;
	return false;
}

/* Leaves out the compiler's wrappers where the runtime hides them (Go's
 * tracebacks and profiles do) — but the innermost frame, which is the task
 * itself (a goroutine that has not started is its go statement's
 * wrapper); returns the number kept. */
static size_t hide_wrappers(struct ws_sampler *s, struct ws_frame *frames,
			    size_t n)
{
	const struct ws_runtime_caps *caps = s->runtime->caps;
	if (!caps->hide_wrappers)
		return n;
	size_t kept = 0;
	for (size_t k = 0; k < n; k++) {
		/* frames[k - 1] is the callee (innermost first). */
		if (frames[k].wrapper && k > 0 &&
		    !wrapper_shown(caps, &frames[k - 1]))
			continue;
		frames[kept++] = frames[k];
	}
	return kept;
}

/* The stack of a task that cannot be unwound: its entry function (when
 * known) under the runtime's root, so it lands in the same subtree as the
 * task's real samples. */
static struct ws_error *synthetic_stack(struct ws_sampler *s,
					const struct ws_task *task,
					size_t *nframes)
{
	if (task->entry_pc) {
		const struct ws_location *loc =
			ws_symbols_lookup(s->symbols, task->entry_pc, false);
		struct ws_frame *out = reserve_frames(s, *nframes, 1);
		if (!out)
			return &ws_error_nomem;
		/* The outermost frame of the entry's location is the
		 * function itself. */
		*out = loc->frames[loc->nframes - 1];
		(*nframes)++;
	}
	/* An idle worker runs no task: no task root either. */
	if (s->root_frame.function && task->state != WS_STATE_IDLE) {
		struct ws_frame *out = reserve_frames(s, *nframes, 1);
		if (!out)
			return &ws_error_nomem;
		*out = s->root_frame;
		(*nframes)++;
	}
	return NULL;
}

bool ws_sampler_thread_sampled(const struct ws_sampler *s, pid_t tid)
{
	for (size_t k = 0; k < s->live.nran; k++)
		if (s->live.ran_tids[k] == tid)
			return true;
	return false;
}

bool ws_sampler_claim_thread(struct ws_sampler *s, pid_t tid)
{
	if (!tid || ws_sampler_thread_sampled(s, tid) ||
	    !ws_grow((void **)&s->live.ran_tids, &s->live.ran_tids_cap,
		     s->live.nran + 1, sizeof(*s->live.ran_tids)))
		return false;
	s->live.ran_tids[s->live.nran++] = tid;
	return true;
}

bool ws_sampler_can_reuse(struct ws_sampler *s, const struct ws_task *t)
{
	return s->stack_cache &&
	       ws_stack_cache_has_context(s->stack_cache, t->id,
					  ws_stack_cache_context_key(t));
}

bool ws_sampler_reuse(struct ws_sampler *s, const struct ws_task *t,
		      struct ws_snapshot *snap)
{
	if (!s->stack_cache ||
	    !ws_grow((void **)&s->reused_pcs, &s->reused_pcs_cap,
		     s->nreused_pcs + WS_STACK_CACHE_FRAMES,
		     sizeof(*s->reused_pcs)))
		return false;
	const char *stop = NULL;
	size_t n = ws_stack_cache_get_context(s->stack_cache, t->id,
					      ws_stack_cache_context_key(t),
					      s->reused_pcs + s->nreused_pcs,
					      WS_STACK_CACHE_FRAMES, &stop);
	if (n == 0 || n > s->options.max_frames)
		return false;
	memset(snap, 0, sizeof(*snap));
	snap->stack_lo = t->stack_lo;
	snap->stack_hi = t->stack_hi;
	snap->reused = (uint32_t)n;
	snap->reused_first = s->nreused_pcs;
	snap->reused_stop = stop;
	s->nreused_pcs += n;
	s->copies_skipped++;
	return true;
}

static bool reusable(const struct ws_task *t, void *s)
{
	return ws_sampler_can_reuse(s, t);
}

size_t ws_sampler_put_reusable_last(struct ws_sampler *s, size_t n)
{
	return ws_task_list_put_last(&s->tasks, n, reusable, s);
}

struct ws_error *ws_sampler_take_snapshots(struct ws_sampler *s)
{
	size_t n = s->tasks.n;
	size_t fresh = ws_sampler_put_reusable_last(s, n);
	struct ws_error *err = ws_snapshot_take_first(&s->snapshots, s->target,
						      &s->tasks, fresh,
						      s->options.max_stack);
	for (size_t i = fresh; i < n && !err; i++)
		if (!ws_sampler_reuse(s, &s->tasks.tasks[i],
				      &s->snapshots.snaps[i]))
			/* Out of memory: copy them all after all. */
			return ws_snapshot_take(&s->snapshots, s->target,
						&s->tasks, s->options.max_stack);
	return err;
}

/* unwind_checked, or the same task's last unwind when its snapshot is
 * identical (a parked task: same registers, same stack bytes), or when it
 * was not copied (ws_snapshot.reused). */
static size_t unwind_cached(struct ws_sampler *s, const struct ws_task *task,
			    const struct ws_snapshot *snap,
			    const char **stop_reason, bool *maps_reloaded)
{
	if (snap->reused) {
		memcpy(s->pcs, s->reused_pcs + snap->reused_first,
		       snap->reused * sizeof(*s->pcs));
		*stop_reason = snap->reused_stop;
		s->unwinds_reused++;
		return snap->reused;
	}
	uint64_t task_id = task->id;
	uint64_t key = s->stack_cache ? ws_stack_cache_key(snap) : 0;
	size_t n = key ? ws_stack_cache_get(s->stack_cache, task_id, key,
					    s->pcs, s->options.max_frames,
					    stop_reason)
		       : 0;
	if (n) {
		s->unwinds_reused++;
		return n;
	}
	bool reloaded_before = *maps_reloaded;
	n = unwind_checked(s, snap, stop_reason, maps_reloaded);
	/* An unwind that reloaded the map may have seen a module change:
	 * everything cached before it goes, this one stays. */
	if (*maps_reloaded && !reloaded_before)
		forget_unwinds(s);
	if (key)
		ws_stack_cache_put(s->stack_cache, task_id, key,
				   ws_stack_cache_context_key(task), s->pcs, n,
				   *stop_reason);
	return n;
}

static struct ws_error *unwind_all(struct ws_sampler *s)
{
	struct ws_tick *tick = &s->tick;
	size_t nframes = 0;
	struct ws_error *err;
	bool maps_reloaded = false;
	ws_unwinder_new_tick(s->unwinder);
	ws_tick_stacks_clear(&s->tick_stacks);
	for (size_t i = 0; i < s->tasks.n; i++) {
		/* Unwinding and naming (a module's debug info loaded the first
		 * time) can take long: wallspy's own SIGINT/SIGTERM ends the
		 * tick with the tasks done so far (the target runs already). */
		if (ws_target_stop_requested()) {
			tick->ntasks = i;
			return NULL;
		}
		struct ws_tick_task *tt = &tick->tasks[i];
		const struct ws_snapshot *snap = &s->snapshots.snaps[i];
		memset(tt, 0, sizeof(*tt));
		tt->task = &s->tasks.tasks[i];
		tt->scale = tt->task->scale > 0 ? tt->task->scale : 1;
		tt->first_frame = nframes;
		if (tt->task->creator_pc)
			tt->creator = ws_symbols_lookup(s->symbols,
							tt->task->creator_pc,
							true);
		const char *stop_reason = NULL;
		size_t npcs = 0;
		/* Never ran: nothing to unwind, and no failure either. */
		tt->not_started = ws_sampler_not_started(tt->task);
		if (tt->not_started) {
			if ((err = synthetic_stack(s, tt->task, &nframes)))
				return err;
			tt->nframes = nframes - tt->first_frame;
			continue;
		}
		if (snap->error) {
			/* A task that never ran is not a failure. */
			if (!(tt->task->start == WS_START_NONE &&
			      !tt->task->error))
				tt->error = snap->error;
		} else {
			npcs = unwind_cached(s, tt->task, snap,
					     &stop_reason, &maps_reloaded);
			if (npcs == 0)
				tt->error = stop_reason ? stop_reason
							: "empty stack";
		}
		if (npcs == 0) {
			if ((err = synthetic_stack(s, tt->task, &nframes)))
				return err;
			tt->nframes = nframes - tt->first_frame;
			continue;
		}
		/* A stack seen before in this tick: its frames again. */
		uint64_t stack_hash;
		const char *unwind_stop = stop_reason;
		if (ws_tick_stacks_find(&s->tick_stacks, s->pcs, npcs,
					unwind_stop, &stack_hash,
					&tt->first_frame, &tt->nframes))
			continue;
		for (size_t k = 0; k < npcs; k++) {
			const struct ws_location *loc = ws_symbols_lookup(
				s->symbols, s->pcs[k].pc,
				s->pcs[k].is_return_address);
			if (!loc->frames[0].module && refresh_modules(s)) {
				/* Names of earlier stacks may have changed. */
				ws_tick_stacks_clear(&s->tick_stacks);
				loc = ws_symbols_lookup(s->symbols,
							s->pcs[k].pc,
							s->pcs[k].is_return_address);
			}
			struct ws_frame *out = reserve_frames(s, nframes,
							      loc->nframes + 1);
			if (!out)
				return &ws_error_nomem;
			memcpy(out, loc->frames,
			       loc->nframes * sizeof(*out));
			nframes += loc->nframes;
		}
		bool reached_root;
		size_t kept = cut_at_root(s, tick->frames + tt->first_frame,
					  nframes - tt->first_frame,
					  &reached_root);
		kept = hide_wrappers(s, tick->frames + tt->first_frame, kept);
		nframes = tt->first_frame + kept;
		if (reached_root)
			stop_reason = NULL; /* complete, whatever lay beyond */
		if (stop_reason) {
			/* Say where the stack was cut instead of presenting
			 * a partial stack as a whole one. */
			struct ws_frame *out = reserve_frames(s, nframes, 1);
			if (!out)
				return &ws_error_nomem;
			memset(out, 0, sizeof(*out));
			out->function = stop_reason;
			nframes++;
		}
		tt->nframes = nframes - tt->first_frame;
		ws_tick_stacks_add(&s->tick_stacks, stack_hash, s->pcs, npcs,
				   unwind_stop, tt->first_frame, tt->nframes);
	}
	tick->ntasks = s->tasks.n;
	return NULL;
}

/* The tick kind the runtime declares; live ticks only where allowed
 * (record, attach). */
static struct ws_error *take_tasks(struct ws_sampler *s)
{
	switch (s->runtime->caps->tick) {
	case WS_TICK_ROLLING:
		return ws_tick_rolling(s);
	case WS_TICK_LIVE:
		if (s->options.live)
			return ws_tick_live(s);
		break;
	case WS_TICK_STOPPED:
		if (s->options.live && s->runtime->caps->walk_live &&
		    s->runtime->ops->reread)
			return ws_tick_walked_live(s);
		break;
	}
	return ws_tick_stopped(s);
}

/* Threads are not followed through clone events: those born since the
 * last tick are counted from the process's thread count and seized by a
 * scan of /proc/PID/task, which costs about a microsecond per thread of
 * the process. With a CPU budget, scans come at most as often as it
 * affords them; the threads not traced meanwhile are in the tick as
 * such. */
static struct ws_error *find_threads(struct ws_sampler *s)
{
	bool stale;
	s->untraced = ws_target_untraced(s->target, &stale);
	if (!s->untraced && !stale)
		return NULL;
	uint64_t now = ws_now_ns();
	size_t threads = s->target->nthreads + s->untraced;
	double cost = s->scan_ns_per_thread * (double)threads;
	if (s->options.max_cpu > 0 && s->last_scan_ns &&
	    (double)(now - s->last_scan_ns) * s->options.max_cpu < cost)
		return NULL;
	struct ws_error *err = ws_target_scan(s->target);
	uint64_t end = ws_now_ns();
	s->last_scan_ns = end;
	ws_budget_average(&s->scan_ns_per_thread,
			  (double)(end - now) / (double)threads);
	if (!err)
		s->untraced = ws_target_untraced(s->target, NULL);
	return err;
}

/* Thread names change (pthread_setname_np after start): the sampled
 * threads' are read when new and once a second, outside the pause (three
 * system calls each), and a task named after its thread takes the name
 * it lacked. */
static void name_threads(struct ws_sampler *s)
{
	uint64_t now = ws_now_ns();
	for (size_t i = 0; i < s->tasks.n; i++) {
		struct ws_task *task = &s->tasks.tasks[i];
		struct ws_thread *th = task->thread
			? ws_target_thread(s->target, task->thread) : NULL;
		if (!th || (th->comm[0] && now - th->comm_read_ns < 1000000000u))
			continue;
		ws_target_read_name(s->target, th);
		th->comm_read_ns = now;
		if (!task->name && s->runtime->caps->tick == WS_TICK_ROLLING &&
		    th->comm[0])
			task->name = th->comm;
	}
}

/* Whether the tick sampled a subset of the tasks (some sample stands for
 * more than one). */
static bool subsampled(const struct ws_sampler *s)
{
	for (size_t i = 0; i < s->tasks.n; i++)
		if (s->tasks.tasks[i].scale > 1)
			return true;
	return false;
}

/* --max-cpu is a share of one core for all of wallspy's work, not only
 * the per-sample part the limits cost: a tick's whole CPU, from the end
 * of the one before (its profile, the wait, this tick's listing, stops
 * and unwinds) is noted, so the next limit leaves room for the overhead;
 * when even the floor of sampled tasks costs more than the budget, the
 * next tick waits (measured on greenrt_w3_compute, 4,096 tasks: 0.54 ms
 * of CPU a tick at the floor of 32, 5.4 % of a core at 100 Hz, where
 * the per-sample estimates saw 2 %). The first ticks (start-up: cold
 * caches, first reads; counted, the second tick's 2 ms spaced a 0.5 %
 * budget's ticks 0.4 s apart for seconds) and the time spent loading
 * debug info are left out. OS threads are not spaced: their rate is kept
 * (ws_budget_rest_ns); nor is a process of no more tasks than the floor,
 * which every tick samples whole (the floor's promise; greenrt_parked, 9
 * tasks and two threads stopped a tick, costs about 0.35 ms a tick:
 * spaced, it came to 50 Hz). */
static void note_tick_cpu(struct ws_sampler *s)
{
	struct ws_tick *tick = &s->tick;
	uint64_t now = ws_cpu_ns(), mark = s->cpu_mark;
	s->cpu_mark = now;
	if (!mark || s->ticks <= WS_BUDGET_SETTLING_TICKS)
		return;
	uint64_t cpu = now - mark;
	cpu = cpu > tick->cold_naming_ns ? cpu - tick->cold_naming_ns : 0;
	ws_budget_note_tick(&s->budget, cpu, s->tasks.n);
	if (s->runtime->caps->tick == WS_TICK_ROLLING || !subsampled(s))
		return;
	uint64_t rest = ws_budget_rest_ns(&s->budget);
	if (rest > tick->rest_ns) {
		tick->rest_ns = rest;
		tick->rest_for_cost = true;
	}
}

struct ws_error *ws_sampler_tick(struct ws_sampler *s,
				 const struct ws_tick **ret)
{
	struct ws_error *err;
	if (s->target->exec_seen) {
		err = reopen_after_exec(s);
		if (err)
			return err;
	}

	err = find_threads(s);
	if (err)
		return err;
	struct ws_tick *tick = &s->tick;
	tick->ntasks = 0;
	tick->rest_ns = 0;
	tick->rest_for_cost = false;
	tick->task_noun = s->runtime->caps->task_noun ? s->runtime->caps->task_noun
						       : "task";
	tick->start_ns = ws_now_ns();
	s->nreused_pcs = 0;
	err = take_tasks(s);
	if (err)
		return err;
	s->ticks++;
	/* Naming threads (three system calls for one not named within a
	 * second: most threads of a subsampled process of thousands) is
	 * part of a sample's cost after the resume, as unwinding it is. */
	uint64_t unwind_start = ws_now_ns();
	name_threads(s);

	if (!ws_grow_large((void **)&tick->tasks, &s->tick_capacity,
			   s->tasks.n, sizeof(*tick->tasks)))
		return &ws_error_nomem;
	uint64_t cold_before = ws_symbols_cold_ns(s->symbols);
	err = unwind_all(s);
	tick->cold_naming_ns = ws_symbols_cold_ns(s->symbols) - cold_before;
	if (err)
		return err;
	ws_budget_note_unwind(&s->budget, ws_now_ns() - unwind_start,
			      s->tasks.n);
	note_tick_cpu(s);
	*ret = tick;
	return NULL;
}
