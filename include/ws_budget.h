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

struct ws_budget {
	struct ws_budget_options options;
	/* Moving averages (ws_budget_average) of the cost of one task, in
	 * ns: listing and copying it (part of the pause, or of wallspy's CPU
	 * in a live tick), and unwinding and naming it. */
	double read_ns_per_task;
	double unwind_ns_per_task;
	/* The one generator behind every random subset of a recording. */
	struct ws_random random;
};

/* First guesses until ticks measure: 2 us to read a task, 10 us to unwind
 * it. */
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
 * too. Never below WS_BUDGET_MIN_TASKS. */
size_t ws_budget_task_limit(const struct ws_budget *budget, uint64_t spent_ns,
			    bool live);

/* Keeps a uniform random subset of k of the list's tasks (k <= n), each
 * standing for n/k times what it stood for. */
void ws_budget_subsample(struct ws_budget *budget, struct ws_task_list *list,
			 size_t k);

#endif
