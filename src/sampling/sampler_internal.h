/*
 * The sampler's state, shared by its parts: sampler.c (creating, choosing
 * the tick kind, unwinding and naming) and the tick kinds, tick_stopped.c,
 * tick_rolling.c and tick_live.c (which falls back to the stopped tick).
 * Private to those files.
 */
#ifndef WS_SAMPLER_INTERNAL_H
#define WS_SAMPLER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ws_budget.h"
#include "ws_runtime.h"
#include "ws_sampler.h"
#include "ws_snapshot.h"
#include "ws_stack_cache.h"
#include "ws_tick_stacks.h"
#include "ws_unwind.h"

/* A live tick's scratch, reused across ticks, and its counts: each task's
 * reread verdict and drop mark (it ended), the tasks to try again
 * (retry_index, into `retry` and retry_snaps), those waiting for their
 * thread to stop (pending), and those taken with every thread stopped
 * (rest, held_snaps). */
struct ws_live {
	enum ws_reread *verdicts;
	bool *drop, *taken;
	size_t *retry_index, *pending, *rest, *stand_in_index;
	pid_t *pending_tids;
	/* The threads whose time this tick has sampled already
	 * (ws_sampler_claim_thread: a task running on it, one standing in,
	 * or one that ended while running on it): a thread runs one task at
	 * an instant, so a task found running on one of them later in the
	 * tick is not sampled twice on it. Live and walked-live ticks. */
	pid_t *ran_tids;
	/* Each task as listed, where a rereading replaces its record: one
	 * not started then and found running on a thread that gave its
	 * sample already is taken as listed, and one on a thread then that
	 * ended may have that thread's time (keep_ended). */
	struct ws_listed {
		bool not_started;
		enum ws_state state;
		pid_t thread;      /* on a thread (start WS_START_THREAD), else 0 */
	} *listed;
	size_t verdicts_cap, drop_cap, taken_cap, retry_index_cap, pending_cap,
		pending_tids_cap, rest_cap, stand_in_index_cap, ran_tids_cap,
		listed_cap;
	size_t npending, nrest, nran;
	struct ws_task_list retry;
	/* The tasks that stood in for a running one (take_successor), as
	 * read while their thread was held, and their indices: the bulk
	 * reread of parked tasks must not replace these records. */
	struct ws_task_list stand_ins;
	/* running_snaps: the copies of the tasks that run, by task index,
	 * where taken[index] (take_running; take_rest_stopped marks so the
	 * tasks it takes running, in held_snaps). */
	struct ws_snapshot_set retry_snaps, held_snaps, running_snaps;
	uint64_t ticks, tasks_listed, tasks_gone, tasks_held, stood_in,
		ran_twice;
};

/* Where the pause goes, summed over ticks (reported with
 * switches.report_pause). */
enum ws_phase { WS_PHASE_STOP, WS_PHASE_LIST, WS_PHASE_COPY, WS_PHASE_RESUME,
		WS_NPHASES };

struct ws_sampler {
	struct ws_target *target;
	struct ws_sampler_options options;
	struct ws_symbols *symbols;
	struct ws_runtime *runtime;
	struct ws_unwinder *unwinder;
	struct ws_budget budget;
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
	uint64_t last_refresh_ns;  /* of the module list (dlopen) */
	uint64_t phase_ns[WS_NPHASES];
	struct ws_live live;
	/* A whole list's walk (space_after_walk, tick_stopped.c): its CPU
	 * cost smoothed; 0 before the first walk that counts. */
	double walk_ns;
	/* wallspy's CPU clock at the end of the last tick (ws_cpu_ns), 0
	 * before the first: a tick's whole cost runs from there. */
	uint64_t cpu_mark;
	/* Threads of the target not traced yet (born since the last scan of
	 * /proc/PID/task), the last scan and its cost per thread. */
	size_t untraced;
	uint64_t last_scan_ns;
	double scan_ns_per_thread;
	/* A rolling tick's threads (tids), the chosen ones first. */
	pid_t *rolling_tids;
	size_t rolling_tids_cap;
	/* Scratch of the subset drawn (indices, and a bit per thread). */
	size_t *rolling_picks;
	uint64_t *rolling_bits;
	size_t rolling_picks_cap, rolling_bits_cap;
	/* Unwinds of unchanged stacks, reused (NULL: off). */
	struct ws_stack_cache *stack_cache;
	uint64_t unwinds_reused;
	/* This tick's unwinds taken from the cache instead of a copy
	 * (ws_snapshot.reused), and how many tasks were not copied so. */
	struct ws_pc *reused_pcs;
	size_t nreused_pcs, reused_pcs_cap;
	uint64_t copies_skipped;
	/* This tick's distinct stacks and their frames (shared by tasks). */
	struct ws_tick_stacks tick_stacks;
};

/* The read context of a tick: the budgets' task limit and the random
 * generator behind subsets. */
static inline struct ws_read_context ws_sampler_context(struct ws_sampler *s,
							bool live,
							size_t limit)
{
	return (struct ws_read_context){
		.live = live, .limit = limit, .random = &s->budget.random,
		.system_tasks = s->options.system_tasks,
		.labels = s->options.labels,
	};
}

/* Marks a saved context that has never run (see ws_task.pc_exact): its
 * pc, at the root's or the entry's first instruction, is where it will
 * start, not a return address. */
static inline void ws_sampler_set_pc_exact(const struct ws_sampler *s,
					   struct ws_task *t)
{
	uint64_t pc = t->regs.value[WS_REG_RIP];
	t->pc_exact = t->start == WS_START_SAVED &&
		      ((s->root_pc && pc == s->root_pc) ||
		       (t->entry_pc && pc == t->entry_pc));
}

/* Whether task t has never run (nothing to unwind: its sample is its entry
 * and "[not started]"). An idle worker is no task. One on a thread has
 * started: its thread is switching to it, the first time (a saved context
 * that has never run, on the CPU all the same), and that thread's time is
 * the task's. */
static inline bool ws_sampler_not_started(const struct ws_task *t)
{
	return t->state != WS_STATE_IDLE && !t->thread &&
	       (t->pc_exact || (t->start == WS_START_NONE && !t->error));
}

/* Task t, listed this tick, ended (or its record was reused by another
 * task) before it could be read again. It was a task at the instant of
 * the list, which is what the tick samples, so it keeps its sample and
 * weight: as listed when it had not started (that is its whole sample),
 * else a failed one, which says whether it was on a thread then
 * (on_thread, see ws_sampler_claim_thread): that thread's time at the list
 * was the task's, and the profile must show it as spent running one (its
 * state stays as listed). Dropping it instead would leave out every task
 * that lives less than a tick takes to read, whatever share of the time
 * such tasks fill. */
static inline void ws_sampler_keep_ended(struct ws_task *t, bool on_thread)
{
	if (ws_sampler_not_started(t))
		return;
	t->error = on_thread ? "ended while running" : "ended while being read";
	t->start = WS_START_NONE;
	t->thread = 0;
}

/* Whether thread tid's time has a sample this tick (s->live.ran_tids). */
bool ws_sampler_thread_sampled(const struct ws_sampler *s, pid_t tid);

/* Gives thread tid's time this tick to one task: false when it has a
 * sample already, is unknown (0), or memory ran out. A list is read over
 * a span of time, so several tasks can be listed on one thread (each ran
 * there while its record was read); only one of them may carry the
 * thread's time, and one that runs there when the thread is held comes
 * first. */
bool ws_sampler_claim_thread(struct ws_sampler *s, pid_t tid);

/* Whether task t (listed, parked) need not be copied this tick: the cache
 * holds the unwind of a sample with its wide version and saved context. */
bool ws_sampler_can_reuse(struct ws_sampler *s, const struct ws_task *t);

/* Makes *snap task t's reused unwind (no copy); false when there is none
 * (then *snap is untouched) or out of memory. */
bool ws_sampler_reuse(struct ws_sampler *s, const struct ws_task *t,
		      struct ws_snapshot *snap);

/* Moves the tasks of s->tasks[0, n) that ws_sampler_can_reuse to the end
 * of that range; returns how many come before them: the ones to copy. */
size_t ws_sampler_put_reusable_last(struct ws_sampler *s, size_t n);

/* s->snapshots for every task of s->tasks (the target stopped): a copy,
 * or the unwind the cache holds for its version and context (the task
 * order changes). */
struct ws_error *ws_sampler_take_snapshots(struct ws_sampler *s);

/* The tick kinds. Each fills s->tasks and s->snapshots (one per task)
 * and the tick's pause, and leaves every thread it stopped resumed. */
struct ws_error *ws_tick_stopped(struct ws_sampler *s);
struct ws_error *ws_tick_walked_live(struct ws_sampler *s);
/* The first step of a tick that reads the registry while the target runs
 * (ws_tick_live, ws_tick_walked_live): lists the tasks in s->tasks, keeping
 * the budget's uniform sample (`live`: as ws_budget_task_limit's), with
 * *context the read's. False when the registry broke off under the read:
 * the caller takes the tick stopped instead. */
bool ws_tick_list_running(struct ws_sampler *s, bool live,
			  struct ws_read_context *context);
struct ws_error *ws_tick_rolling(struct ws_sampler *s);
struct ws_error *ws_tick_live(struct ws_sampler *s);

void ws_live_init(struct ws_live *live, pid_t pid);
void ws_live_deinit(struct ws_live *live);

#endif
