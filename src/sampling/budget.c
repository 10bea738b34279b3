/*
 * The pause and CPU budgets of a tick (see ws_budget.h): task counts from
 * measured costs, and the unbiased subsample that keeps a tick within them.
 */
#include "ws_budget.h"

#include <string.h>

void ws_budget_init(struct ws_budget *b, const struct ws_budget_options *o,
		    uint64_t seed)
{
	memset(b, 0, sizeof(*b));
	b->options = *o;
	b->read_ns_per_task = 2000;
	b->unwind_ns_per_task = 10000;
	b->thread_cpu_ns = 10000;
	b->thread_hold_ns = 5000;
	ws_random_seed(&b->random, seed);
}

void ws_budget_note_read(struct ws_budget *b, uint64_t ns, size_t tasks)
{
	if (tasks)
		ws_budget_average(&b->read_ns_per_task,
				  (double)ns / (double)tasks);
}

void ws_budget_note_unwind(struct ws_budget *b, uint64_t ns, size_t tasks)
{
	if (tasks)
		ws_budget_average(&b->unwind_ns_per_task,
				  (double)ns / (double)tasks);
}

void ws_budget_note_threads(struct ws_budget *b, uint64_t cpu_ns,
			    uint64_t hold_ns, size_t threads)
{
	if (!threads)
		return;
	ws_budget_average(&b->thread_cpu_ns, (double)cpu_ns / (double)threads);
	ws_budget_average(&b->thread_hold_ns,
			  (double)hold_ns / (double)threads);
}

size_t ws_budget_thread_limit(struct ws_budget *b, size_t n)
{
	const struct ws_budget_options *o = &b->options;
	if (!(o->max_cpu > 0) || !o->interval_ns || n == 0)
		return n;
	b->sample_ns = b->thread_cpu_ns + b->unwind_ns_per_task;
	double left = o->max_cpu * (double)o->interval_ns - b->overhead_ns;
	double afford = left > 0 ? left / b->sample_ns : 0;
	if (afford >= (double)n)
		return n;
	size_t k = (size_t)afford;
	/* P(k + 1) = the fraction, so E[k] = afford. */
	if (ws_random_unit(&b->random) < afford - (double)k)
		k++;
	return k ? k : 1;
}

size_t ws_budget_thread_window(const struct ws_budget *b)
{
	if (!b->options.max_pause_ns)
		return 0;
	double w = (double)b->options.max_pause_ns / b->thread_hold_ns;
	return w < 1 ? 1 : (size_t)w;
}

size_t ws_budget_task_limit(struct ws_budget *b, uint64_t spent_ns,
			    bool live)
{
	const struct ws_budget_options *o = &b->options;
	double n = -1;
	if (o->max_pause_ns && !live) {
		double left = o->max_pause_ns > spent_ns
				      ? (double)(o->max_pause_ns - spent_ns)
				      : 0;
		n = left / b->read_ns_per_task;
	}
	if (o->max_cpu > 0 && o->interval_ns) {
		/* What one tick may spend after the resume (and, live,
		 * before). */
		double per = b->unwind_ns_per_task +
			     (live ? b->read_ns_per_task : 0);
		double left = o->max_cpu * (double)o->interval_ns -
			      b->overhead_ns;
		double cpu = left > 0 ? left / per : 0;
		b->sample_ns = per;
		b->at_floor = cpu < WS_BUDGET_MIN_TASKS;
		if (n < 0 || cpu < n)
			n = cpu;
	}
	if (n < 0)
		return 0;
	return n < WS_BUDGET_MIN_TASKS ? WS_BUDGET_MIN_TASKS : (size_t)n;
}

void ws_budget_note_tick(struct ws_budget *b, uint64_t cpu_ns, size_t samples)
{
	double cpu = (double)cpu_ns;
	double over = cpu - (double)samples * b->sample_ns;
	if (over < 0)
		over = 0;
	if (!b->tick_noted) {
		b->tick_noted = true;
		b->tick_cpu_ns = cpu;
		b->overhead_ns = over;
		return;
	}
	ws_budget_average(&b->tick_cpu_ns, cpu);
	ws_budget_average(&b->overhead_ns, over);
}

uint64_t ws_budget_rest_ns(const struct ws_budget *b)
{
	const struct ws_budget_options *o = &b->options;
	if (!(o->max_cpu > 0) || !o->interval_ns || !b->tick_noted ||
	    !b->at_floor)
		return 0;
	double spaced = b->tick_cpu_ns / o->max_cpu;
	return spaced > (double)o->interval_ns
		       ? (uint64_t)(spaced - (double)o->interval_ns)
		       : 0;
}

void ws_budget_subsample(struct ws_budget *b, struct ws_task_list *list,
			 size_t k)
{
	size_t n = list->n;
	if (k >= n)
		return;
	ws_random_sample_front(&b->random, list->tasks, n, k,
			       sizeof(*list->tasks));
	for (size_t i = 0; i < k; i++) {
		struct ws_task *t = &list->tasks[i];
		t->scale = (t->scale > 0 ? t->scale : 1) * (double)n / (double)k;
	}
	list->n = k;
}
