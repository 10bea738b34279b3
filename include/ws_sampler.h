/*
 * ws_sampler: one tick of sampling, the pipeline's middle. Takes the tasks
 * the runtime lists (ws_runtime.h) in the tick kind the runtime declares
 * (stopped, rolling or live: tick_*.c), within the budgets (ws_budget.h),
 * copies their stacks, resumes the target, then unwinds and names each
 * task. Timing (when to tick) is the caller's: record's loop, or dump's
 * single tick.
 */
#ifndef WS_SAMPLER_H
#define WS_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "ws_error.h"
#include "ws_frame.h"
#include "ws_runtime.h"
#include "ws_symbols.h"

struct ws_debugcache;
struct ws_debuginfod;
struct ws_target;

/* Switches for comparing and diagnosing, from environment variables that
 * the command reads once (wallspy(1), ENVIRONMENT). */
enum ws_unwinder_choice {
	WS_UNWINDER_RUNTIME,     /* the runtime's choice (caps.prefer_libdw) */
	WS_UNWINDER_LIBDW,       /* WALLSPY_UNWINDER=libdw */
	WS_UNWINDER_LIBUNWIND,   /* WALLSPY_UNWINDER=libunwind */
};

struct ws_sampler_switches {
	enum ws_unwinder_choice unwinder;
	bool no_step_cache;      /* WALLSPY_NO_STEP_CACHE */
	bool no_stack_cache;     /* WALLSPY_NO_STACK_CACHE */
	bool report_pause;       /* WALLSPY_DEBUG_PAUSE: phase times at the end */
	/* WALLSPY_TRACE_CLONES: new threads adopted through clone events as
	 * well (WS_TARGET_TRACE_CLONES), for comparing with per-tick scans. */
	bool trace_clones;
};

struct ws_sampler_options {
	const char *runtime;     /* "auto", "threads" */
	size_t max_stack;        /* bytes of stack copied per task */
	size_t max_frames;       /* frames per stack before giving up */
	long stop_timeout_ns;    /* how long to wait for a thread to stop */
	/* Pause budget per tick (0: none). When sampling every task would
	 * take longer, a uniform random subset is sampled and each sample's
	 * scale says how many tasks it stands for (--max-pause). */
	uint64_t max_pause_ns;
	/* CPU budget: the share of one core wallspy may spend unwinding and
	 * naming stacks, with ticks every interval_ns (0: none). Beyond it
	 * tasks are subsampled like the pause budget does (--max-cpu). */
	double max_cpu;
	uint64_t interval_ns;
	/* Read tasks while the target runs when the runtime allows it
	 * (WS_TICK_LIVE), stopping only threads that run a task; false:
	 * every tick holds every thread (dump, --stop-all). */
	bool live;
	/* Also the tasks a runtime runs for itself (--system-tasks). */
	bool system_tasks;
	/* Read tasks' labels (dump; record when grouping by a label). */
	bool labels;
	/* One tick only (dump): no memo of unwinds, which only a later
	 * tick could reuse. */
	bool one_tick;
	struct ws_sampler_switches switches;
	/* Where uncompressed copies of compressed debug info come from
	 * (borrowed, must outlive the sampler; NULL: as installed). */
	struct ws_debugcache *debug_cache;
	/* Where missing debug info is downloaded from (borrowed, must
	 * outlive the sampler; NULL: nowhere). */
	struct ws_debuginfod *debuginfod;
};

/* Defaults: --max-stack 128 KiB, 1024 frames, 100 ms stop timeout. */
enum {
	WS_DEFAULT_MAX_STACK = 128 * 1024,
	WS_DEFAULT_MAX_FRAMES = 1024,
};
#define WS_DEFAULT_STOP_TIMEOUT_NS (100 * 1000 * 1000L)

/* One task of a tick. */
struct ws_tick_task {
	const struct ws_task *task;  /* valid until the next tick */
	const char *error;           /* could not be sampled: why */
	/* Into ws_tick.frames, innermost first. Tasks with equal stacks
	 * share one range (the same first_frame): read-only. */
	size_t first_frame;
	size_t nframes;
	double scale;                /* tasks this sample stands for (>= 1) */
	/* The task has not run yet (a saved context at its entry or the
	 * runtime's root, or none at all): its stack is its entry under the
	 * root, nothing unwound. */
	bool not_started;
	/* The task's creation site (creator_pc), or NULL. */
	const struct ws_location *creator;
};

struct ws_tick {
	struct ws_tick_task *tasks;
	size_t ntasks;
	struct ws_frame *frames;
	const char *task_noun;       /* "task", "goroutine" (the runtime's) */
	uint64_t start_ns;           /* CLOCK_MONOTONIC when the stop began */
	uint64_t pause_ns;           /* how long the target was stopped */
	/* Of the tick's time, how much went into naming addresses seen for
	 * the first time (loading debug info): start-up work, not load. */
	uint64_t cold_naming_ns;
	/* How much longer than an interval the next tick should wait for
	 * this one's work to fit --max-cpu: a registry walked whole
	 * (ws_runtime_caps.walk_live) costs what its length does, which the
	 * task limit cannot bound; spacing the ticks does; so does a tick
	 * whose every cost, at the floor of sampled tasks, is over the
	 * budget. 0: none. */
	uint64_t rest_ns;
	/* Why: false, a registry's walk; true, a tick's whole cost at the
	 * floor of sampled tasks (ws_budget_rest_ns). */
	bool rest_for_cost;
};

struct ws_sampler;

/* Prepares sampling of a traced target: debug info, runtime adapter,
 * unwinder. The sampler does not own the target. */
struct ws_error *ws_sampler_create(struct ws_target *target,
				   const struct ws_sampler_options *options,
				   struct ws_sampler **ret);
void ws_sampler_destroy(struct ws_sampler *sampler);

/* Takes one sample of every task. The result lives until the next call.
 * Per-task failures are data (tick task error); only failures that make
 * sampling impossible return an error. The target is resumed on every
 * path. */
struct ws_error *ws_sampler_tick(struct ws_sampler *sampler,
				 const struct ws_tick **ret);

/* The target's symbols (valid until the next tick: an exec replaces
 * them). */
struct ws_symbols *ws_sampler_symbols(const struct ws_sampler *sampler);

/* Name of the runtime in use ("threads"). */
const char *ws_sampler_runtime_name(const struct ws_sampler *sampler);

/* The root function the runtime's own profiles leave out (Go's
 * runtime.goexit), or NULL. */
const char *ws_sampler_pprof_hidden_root(const struct ws_sampler *sampler);

#endif
