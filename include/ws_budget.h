/*
 * ws_budget: how many tasks a tick may sample. Two budgets bound a tick:
 * the pause (--max-pause: time the target is held, spent listing and
 * copying tasks) and wallspy's CPU (--max-cpu: a share of one core for
 * reading, unwinding and naming stacks). Each is turned into a task count
 * from moving averages of the measured cost per task. Beyond it a uniform
 * random subset is sampled, each sample standing for (tasks / sampled), so
 * totals stay unbiased. Pure arithmetic: no system calls.
 */
#ifndef WS_BUDGET_H
#define WS_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ws_random.h"
#include "ws_task.h"

struct ws_budget_options {
	uint64_t max_pause_ns;     /* per tick; 0: no pause budget */
	double max_cpu;            /* share of one core; 0: no CPU budget */
	uint64_t interval_ns;      /* between ticks (the CPU budget's unit) */
};

/* Below this many tasks a tick samples them all: the saving would be
 * small and the sampling noise large. */
enum { WS_BUDGET_MIN_TASKS = 32 };

/* The first ticks of a recording, whose whole cost is start-up's (cold
 * caches, first reads of the target): not noted (ws_budget_note_tick). */
enum { WS_BUDGET_SETTLING_TICKS = 10 };

struct ws_budget {
	struct ws_budget_options options;
	/* Moving averages (ws_budget_average) of the cost of one task, in
	 * ns: listing and copying it (part of the pause, or of wallspy's CPU
	 * in a live tick), and unwinding and naming it. */
	double read_ns_per_task;
	double unwind_ns_per_task;
	/* OS threads (rolling ticks): wallspy's CPU for one thread's ptrace
	 * cycle (seize, interrupt, wait for its stop, registers, stack copy,
	 * resume; the kernel's time included), and the wall time from its
	 * stop being collected to its resume (its hold, alone). */
	double thread_cpu_ns;
	double thread_hold_ns;
	/* wallspy's whole CPU per tick (ws_budget_note_tick), smoothed, and
	 * the part of it that no per-sample estimate accounts for: listing a
	 * registry, stopping and waking threads, adding to the profile,
	 * waiting for the next tick. 0 until a tick is noted. */
	double tick_cpu_ns;
	double overhead_ns;
	bool tick_noted;
	/* What the last limit costed one sample at (ns of --max-cpu), and
	 * whether the last task limit was the floor (WS_BUDGET_MIN_TASKS)
	 * because the CPU budget afforded fewer. */
	double sample_ns;
	bool at_floor;
	/* The one generator behind every random subset of a recording. */
	struct ws_random random;
};

/* First guesses until ticks measure: 2 us to read a task, 10 us to unwind
 * it; 10 us of CPU for an OS thread's cycle, 5 us to hold it. */
void ws_budget_init(struct ws_budget *budget,
		    const struct ws_budget_options *options, uint64_t seed);

/* The moving average every estimate uses: 0.8 of the old, 0.2 of the new
 * (a tick's weight halves in about three ticks). */
static inline void ws_budget_average(double *average, double sample)
{
	*average = 0.8 * *average + 0.2 * sample;
}

/* Records that reading (listing and copying) `tasks` took `ns`, or that
 * unwinding and naming them did. No-ops for 0 tasks. */
void ws_budget_note_read(struct ws_budget *budget, uint64_t ns, size_t tasks);
void ws_budget_note_unwind(struct ws_budget *budget, uint64_t ns, size_t tasks);

/* How many tasks the budgets afford this tick (0: no limit); `spent_ns`
 * of the pause is gone already. `live`: tasks are read while the target
 * runs, so there is no pause to budget, but reading them is wallspy's CPU
 * too. The CPU budget is what is left of max_cpu * interval after a
 * tick's overhead (overhead_ns). Never below WS_BUDGET_MIN_TASKS. */
size_t ws_budget_task_limit(struct ws_budget *budget, uint64_t spent_ns,
			    bool live);

/* Records one tick's whole CPU: wallspy's, from the end of the tick
 * before to the end of this one (start-up work, such as loading debug
 * info, left out), which sampled `samples` tasks or threads at the cost
 * the last limit put on one (sample_ns); the rest is the tick's
 * overhead. The first tick noted sets both averages. */
void ws_budget_note_tick(struct ws_budget *budget, uint64_t cpu_ns,
			 size_t samples);

/* How much longer than an interval the next tick should wait for
 * wallspy's CPU to stay within --max-cpu, when a tick at the floor of
 * WS_BUDGET_MIN_TASKS costs more than max_cpu * interval: tick_cpu_ns /
 * max_cpu - interval, else 0. Not for OS threads, whose limit has no
 * floor and whose rate is kept (ws_budget_thread_limit). */
uint64_t ws_budget_rest_ns(const struct ws_budget *budget);

/* Records that a rolling tick took `threads` OS threads for `cpu_ns` of
 * wallspy's CPU, holding them `hold_ns` in all (each from its stop
 * collected to its resume, waits behind others left out). No-op for 0. */
void ws_budget_note_threads(struct ws_budget *budget, uint64_t cpu_ns,
			    uint64_t hold_ns, size_t threads);

/* How many of a process's n OS threads this tick samples. With --max-cpu
 * (0: every thread), a tick affords A = (max_cpu * interval - overhead_ns)
 * / c threads,
 * c = thread_cpu_ns + unwind_ns_per_task. A process whose every thread
 * fits (n <= A) is sampled whole, every tick; a bigger one gets
 * floor(A), plus one with probability A - floor(A), so that wallspy's CPU
 * over many ticks is the budget even when it affords 2.4 threads a tick;
 * never fewer than one. No floor of WS_BUDGET_MIN_TASKS: a thread costs
 * its stop and resume, several times a goroutine. Draws from the
 * budget's generator. Whatever k, sampling k of n uniformly at random
 * and weighting each by n/k keeps every total unbiased. */
size_t ws_budget_thread_limit(struct ws_budget *budget, size_t n);

/* How many OS threads a rolling tick holds at once (interrupted and not
 * yet resumed): the last of a batch waits for the others to be taken
 * before its own turn, so a batch is --max-pause over the hold of one
 * thread (thread_hold_ns), at least 1. 0: no pause budget, no bound. */
size_t ws_budget_thread_window(const struct ws_budget *budget);

/* Keeps a uniform random subset of k of the list's tasks (k <= n), each
 * standing for n/k times what it stood for. */
void ws_budget_subsample(struct ws_budget *budget, struct ws_task_list *list,
			 size_t k);

#endif
