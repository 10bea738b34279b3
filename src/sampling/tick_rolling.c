/*
 * The rolling tick, for runtimes whose every task is one OS thread
 * (WS_TICK_ROLLING): each thread is described by the runtime
 * (ops->thread_task), copied and resumed as soon as its own stop arrives,
 * instead of waiting for the slowest one (on a busy machine a runnable
 * thread may take a millisecond to reach its stop). Within the budgets
 * (ws_budget.h): beyond what --max-cpu affords, a uniform random subset of
 * the threads is sampled, each sample standing for (threads / sampled); and
 * at most as many threads are interrupted at once as can be copied within
 * --max-pause, so none waits in its stop for a long queue before it. The
 * pause reported is the longest any one thread was held.
 */
#include "sampler_internal.h"

#include <stdlib.h>

#include "ws_clock.h"
#include "ws_grow.h"
#include "ws_target.h"

struct rolling {
	struct ws_sampler *sampler;
	struct ws_error *err;
	double scale;            /* threads each sample stands for */
	uint64_t visit_ns;       /* spent describing and copying threads */
};

/* Lists and copies one thread's task. */
static struct ws_error *take_thread(struct ws_sampler *s,
				    struct ws_thread *th, double scale)
{
	struct ws_task *task = ws_task_list_add(&s->tasks);
	if (!task)
		return &ws_error_nomem;
	s->runtime->ops->thread_task(s->runtime, th, task);
	task->scale = scale;
	return ws_snapshot_take_thread(&s->snapshots, s->tasks.n - 1, th, task,
				       s->options.max_stack);
}

static void visit_thread(struct ws_thread *th, void *arg)
{
	struct rolling *r = arg;
	uint64_t t0 = ws_now_ns();
	if (!r->err)
		r->err = take_thread(r->sampler, th, r->scale);
	r->visit_ns += ws_now_ns() - t0;
}

/* The threads of this tick: every live one, or a uniform random k of them
 * when the CPU budget affords only k. */
static struct ws_error *choose(struct ws_sampler *s, size_t *n_live,
			       size_t *k)
{
	struct ws_target *t = s->target;
	if (!ws_grow((void **)&s->rolling_tids, &s->rolling_tids_cap,
		     t->nthreads ? t->nthreads : 1, sizeof(*s->rolling_tids)))
		return &ws_error_nomem;
	size_t n = 0;
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].run != WS_THREAD_GONE)
			s->rolling_tids[n++] = t->threads[i].tid;
	/* Reading a thread (stop, registers, copy, resume) is wallspy's CPU
	 * as much as unwinding it. */
	size_t limit = ws_budget_task_limit(&s->budget, 0, true);
	*n_live = n;
	*k = limit && limit < n ? limit : n;
	if (*k < n)
		ws_random_sample_front(&s->budget.random, s->rolling_tids, n,
				       *k, sizeof(*s->rolling_tids));
	return NULL;
}

struct ws_error *ws_tick_rolling(struct ws_sampler *s)
{
	struct ws_tick *tick = &s->tick;
	struct ws_target *t = s->target;
	ws_task_list_clear(&s->tasks);
	ws_snapshot_set_clear(&s->snapshots);
	size_t n, k;
	struct ws_error *err = choose(s, &n, &k);
	if (err)
		return err;
	struct rolling r = {.sampler = s, .scale = k ? (double)n / (double)k : 1};
	/* The pause budget bounds the queue of stopped threads: a thread
	 * waits for at most `window` others (their registers read, their
	 * stacks copied, resumed) before its own turn. */
	double per = s->visit_ns_per_thread + 2000; /* + GETREGS, CONT */
	double window = s->options.max_pause_ns
				? (double)s->options.max_pause_ns / per
				: 0;
	t->interrupt_window = window <= 0 ? 0 : window < 1 ? 1 : (size_t)window;

	uint64_t t0 = ws_now_ns();
	size_t stopped;
	uint64_t longest;
	err = ws_target_stop_threads(t, s->rolling_tids, k,
				     s->options.stop_timeout_ns, visit_thread,
				     &r, &stopped, &longest);
	if (!err)
		err = r.err;
	/* Chosen threads that did not stop in time are listed as such (not
	 * when wallspy's own SIGINT/SIGTERM cut the tick short). */
	for (size_t i = 0; !err && i < t->nthreads && !ws_target_stop_requested();
	     i++) {
		struct ws_thread *th = &t->threads[i];
		if (th->run == WS_THREAD_GONE || !th->wanted ||
		    (th->visited && th->regs_valid))
			continue;
		err = take_thread(s, th, r.scale);
	}
	/* Threads born since the last scan are counted, not hidden. */
	if (!err && s->untraced) {
		struct ws_task *task = ws_task_list_add(&s->tasks);
		if (!task)
			return &ws_error_nomem;
		task->state = WS_STATE_UNKNOWN;
		task->start = WS_START_NONE;
		task->error = "new thread, not traced yet";
		task->scale = (double)s->untraced;
		err = ws_snapshot_take_thread(&s->snapshots, s->tasks.n - 1,
					      NULL, task, s->options.max_stack);
	}
	uint64_t end = ws_now_ns();
	/* Group-stopped threads were put back into their stop already. */
	s->phase_ns[WS_PHASE_STOP] += end - tick->start_ns;
	if (stopped) {
		ws_budget_note_read(&s->budget, end - t0, stopped);
		ws_budget_average(&s->visit_ns_per_thread,
				  (double)r.visit_ns / (double)stopped);
	}
	tick->pause_ns = longest;
	return err;
}
