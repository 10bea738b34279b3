/*
 * The sampler's state, shared by its tick kinds: sampler.c (stopped and
 * rolling ticks, unwinding, naming) and sampler_live.c (live ticks, which
 * read tasks while the target runs). Private to those files.
 */
#ifndef WS_SAMPLER_INTERNAL_H
#define WS_SAMPLER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ws_random.h"
#include "ws_runtime.h"
#include "ws_sampler.h"
#include "ws_snapshot.h"
#include "ws_stack_cache.h"
#include "ws_unwind.h"

/* A live tick's scratch, reused across ticks, and its counts: each task's
 * reread verdict and drop mark (it ended), the tasks to try again
 * (retry_index, into `retry` and retry_snaps), those waiting for their
 * thread to stop (pending), and those taken with every thread stopped
 * (rest, held_snaps). */
struct ws_live {
	enum ws_reread *verdicts;
	bool *drop;
	size_t *retry_index, *pending, *rest;
	pid_t *pending_tids;
	size_t verdicts_cap, drop_cap, retry_index_cap, pending_cap,
		pending_tids_cap, rest_cap;
	size_t npending, nrest;
	struct ws_task_list retry;
	struct ws_snapshot_set retry_snaps, held_snaps;
	uint64_t ticks, tasks_listed, tasks_gone, tasks_held;
};

struct ws_sampler {
	struct ws_target *target;
	struct ws_sampler_options options;
	struct ws_symbols *symbols;
	struct ws_runtime *runtime;
	struct ws_unwinder *unwinder;
	struct ws_task_list tasks;
	struct ws_snapshot_set snapshots;
	struct ws_pc *pcs;           /* options.max_frames */
	struct ws_pc *alt_pcs;       /* the same, for a second unwinder's try */
	struct ws_tick tick;
	size_t tick_capacity;
	size_t frames_capacity;
	uint64_t ticks;
	/* The runtime's root function as one frame (at its first line, so
	 * every task shares it whatever line its trampoline stands at) and its
	 * address:
	 * stacks that cannot be unwound (not started, failed) hang under the
	 * same root, and a saved context at the root's first instruction has
	 * never run. */
	struct ws_frame root_frame;
	uint64_t root_pc;
	/* Pause budget: estimated cost of listing + copying one task (ns,
	 * moving average) and the subsampling random state. */
	double ns_per_task;
	double unwind_ns_per_task; /* unwinding + naming, moving average */
	struct ws_random rng;
	uint64_t last_refresh_ns;  /* of the module list (dlopen) */
	/* Where the pause goes, summed over ticks: stop, list, copy, resume
	 * (printed at the end when WALLSPY_DEBUG_PAUSE is set). */
	uint64_t phase_ns[4];
	struct ws_live live;
	/* Unwinds of unchanged stacks, reused (NULL: off). */
	struct ws_stack_cache *stack_cache;
	uint64_t unwinds_reused;
};


/* How many tasks the budgets afford this tick (0: no limit); `spent_ns`
 * of the pause is gone already. Live: no pause to budget, but reading
 * tasks is wallspy's CPU too. */
size_t ws_sampler_task_limit(struct ws_sampler *s, uint64_t spent_ns,
			     bool live);
/* Keeps a uniform random subset of k of the listed tasks, each standing
 * for tasks/k. */
void ws_sampler_subsample(struct ws_sampler *s, size_t k);
/* Marks a saved context that has never run (see ws_task.pc_exact). */
void ws_sampler_set_pc_exact(struct ws_sampler *s, struct ws_task *t);

void ws_live_init(struct ws_live *live, pid_t pid);
void ws_live_deinit(struct ws_live *live);
/* A live tick (see sampler_live.c): fills s->tasks and s->snapshots and
 * the tick's pause. */
struct ws_error *ws_sampler_live_tick(struct ws_sampler *s);
/* The same holding every thread of the target (sampler.c). */
struct ws_error *ws_sampler_stopped_tick(struct ws_sampler *s);

#endif
