/*
 * The rolling tick, for runtimes whose every task is one OS thread
 * (WS_TICK_ROLLING): each thread is described by the runtime
 * (ops->thread_task), copied and resumed as soon as its own stop arrives,
 * instead of waiting for the slowest one (on a busy machine a runnable
 * thread may take a millisecond to reach its stop). The pause reported is
 * the longest any one thread was held.
 */
#include "sampler_internal.h"

#include "ws_clock.h"
#include "ws_target.h"

struct rolling {
	struct ws_sampler *sampler;
	struct ws_error *err;
};

/* Lists and copies one thread's task. */
static struct ws_error *take_thread(struct ws_sampler *s,
				    struct ws_thread *th)
{
	struct ws_task *task = ws_task_list_add(&s->tasks);
	if (!task)
		return &ws_error_nomem;
	s->runtime->ops->thread_task(s->runtime, th, task);
	return ws_snapshot_take_thread(&s->snapshots, s->tasks.n - 1, th, task,
				       s->options.max_stack);
}

static void visit_thread(struct ws_thread *th, void *arg)
{
	struct rolling *r = arg;
	if (!r->err)
		r->err = take_thread(r->sampler, th);
}

struct ws_error *ws_tick_rolling(struct ws_sampler *s)
{
	struct ws_tick *tick = &s->tick;
	ws_task_list_clear(&s->tasks);
	s->snapshots.n = 0;
	struct rolling r = {.sampler = s};
	size_t stopped;
	uint64_t longest;
	struct ws_error *err = ws_target_stop_all(s->target,
						  s->options.stop_timeout_ns,
						  visit_thread, &r, &stopped,
						  &longest);
	if (!err)
		err = r.err;
	/* Threads that did not stop in time are listed as such. */
	for (size_t i = 0; !err && i < s->target->nthreads; i++) {
		struct ws_thread *th = &s->target->threads[i];
		if (th->run == WS_THREAD_GONE || (th->visited && th->regs_valid))
			continue;
		err = take_thread(s, th);
	}
	/* Group-stopped threads were put back into their stop already. */
	s->phase_ns[WS_PHASE_STOP] += ws_now_ns() - tick->start_ns;
	tick->pause_ns = longest;
	return err;
}
