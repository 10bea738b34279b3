/*
 * The rolling tick, for runtimes whose every task is one OS thread
 * (WS_TICK_ROLLING): each thread is described by the runtime
 * (ops->thread_task), copied and resumed as soon as its own stop arrives,
 * instead of waiting for the slowest one (on a busy machine a runnable
 * thread may take a millisecond to reach its stop). Within the budgets
 * (ws_budget.h): beyond what --max-cpu affords at the measured CPU of one
 * thread's cycle (seize, stop, registers, copy, resume) and unwind, a
 * uniform random subset of the threads is sampled, each sample standing
 * for (threads / sampled), and a process whose every thread fits is
 * sampled whole; and threads are held in batches no bigger than
 * --max-pause over the hold of one, so none waits in its stop behind a
 * long queue. The pause reported is the longest any one thread was held.
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
	if (!r->err)
		r->err = take_thread(r->sampler, th, r->scale);
}

/* The threads of this tick: every live one, or a uniform random k of them
 * when the CPU budget affords only k (ws_budget_thread_limit); *n_live
 * and *k are what the weights are made of. The table holds only live
 * threads (ws_target_untraced compacted it before the tick), so a subset
 * is drawn as k indices into it, without a pass over every thread. */
static struct ws_error *choose(struct ws_sampler *s, size_t *n_live,
			       size_t *k)
{
	struct ws_target *t = s->target;
	size_t n = t->nthreads;
	size_t want = ws_budget_thread_limit(&s->budget, t->nlive);
	if (want > n)
		want = n;
	if (!ws_grow((void **)&s->rolling_tids, &s->rolling_tids_cap,
		     want ? want : 1, sizeof(*s->rolling_tids)))
		return &ws_error_nomem;
	size_t m = 0;
	if (want == n) {
		for (size_t i = 0; i < n; i++)
			if (t->threads[i].run != WS_THREAD_GONE)
				s->rolling_tids[m++] = t->threads[i].tid;
		*n_live = *k = m;
		return NULL;
	}
	if (!ws_grow((void **)&s->rolling_picks, &s->rolling_picks_cap, want,
		     sizeof(*s->rolling_picks)) ||
	    !ws_grow((void **)&s->rolling_bits, &s->rolling_bits_cap,
		     (n + 63) / 64, sizeof(*s->rolling_bits)))
		return &ws_error_nomem;
	ws_random_subset(&s->budget.random, n, want, s->rolling_picks,
			 s->rolling_bits);
	/* A thread that exited since is left out: the rest are still a
	 * uniform subset of the live ones. */
	for (size_t i = 0; i < want; i++) {
		const struct ws_thread *th = &t->threads[s->rolling_picks[i]];
		if (th->run != WS_THREAD_GONE)
			s->rolling_tids[m++] = th->tid;
	}
	*n_live = t->nlive;
	*k = m;
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
	 * waits for at most `window` - 1 others (their registers read, their
	 * stacks copied, resumed) before its own turn. */
	t->interrupt_window = ws_budget_thread_window(&s->budget);

	uint64_t cpu0 = ws_cpu_ns();
	size_t stopped;
	uint64_t longest;
	err = ws_target_stop_threads(t, s->rolling_tids, k,
				     s->options.stop_timeout_ns, visit_thread,
				     &r, &stopped, &longest);
	if (!err)
		err = r.err;
	/* Chosen threads that did not stop in time are listed as such (not
	 * when wallspy's own SIGINT/SIGTERM cut the tick short). */
	for (size_t i = 0; !err && i < k && !ws_target_stop_requested(); i++) {
		struct ws_thread *th = ws_target_thread(t, s->rolling_tids[i]);
		if (!th || th->run == WS_THREAD_GONE || !th->wanted ||
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
	/* The whole cycle of a thread, the kernel's part included, is what
	 * --max-cpu is spent on; its own hold is what a batch adds up. */
	ws_budget_note_threads(&s->budget, ws_cpu_ns() - cpu0,
			       t->held_alone_ns, stopped);
	tick->pause_ns = longest;
	return err;
}
