/*
 * The stopped tick: every thread of the target is held while the runtime
 * lists its tasks and their stacks are copied, so a registry that cannot be
 * read while it changes is read whole. The pause covers stop, listing,
 * copying and resume, within the pause budget (ws_budget.h).
 */
#include "sampler_internal.h"

#include "ws_clock.h"
#include "ws_target.h"

/* The part of a tick that runs while the target is stopped. */
static struct ws_error *stopped_phase(struct ws_sampler *s)
{
	struct ws_tick *tick = &s->tick;
	uint64_t t0 = ws_now_ns();
	size_t limit = ws_budget_task_limit(&s->budget, t0 - tick->start_ns,
					    false);
	struct ws_read_context context = ws_sampler_context(s, false, limit);
	ws_task_list_clear(&s->tasks);
	struct ws_error *err = s->runtime->ops->list_tasks(s->runtime,
							   s->target, &context,
							   &s->tasks);
	if (err)
		return err;
	size_t listed = s->tasks.n;
	for (size_t i = 0; i < s->tasks.n; i++)
		ws_sampler_set_pc_exact(s, &s->tasks.tasks[i]);
	uint64_t t1 = ws_now_ns();
	s->phase_ns[WS_PHASE_LIST] += t1 - t0;
	if (limit && s->tasks.n > limit)
		ws_budget_subsample(&s->budget, &s->tasks, limit);
	err = ws_snapshot_take(&s->snapshots, s->target, &s->tasks,
			       s->options.max_stack);
	if (err)
		return err;
	uint64_t t2 = ws_now_ns();
	s->phase_ns[WS_PHASE_COPY] += t2 - t1;
	/* Listing and copying dominate a large tick's pause. */
	ws_budget_note_read(&s->budget, t2 - t0, listed);
	return NULL;
}

struct ws_error *ws_tick_stopped(struct ws_sampler *s)
{
	struct ws_tick *tick = &s->tick;
	size_t stopped;
	struct ws_error *err = ws_target_stop_all(s->target,
						  s->options.stop_timeout_ns,
						  NULL, NULL, &stopped, NULL);
	s->phase_ns[WS_PHASE_STOP] += ws_now_ns() - tick->start_ns;
	if (!err)
		err = stopped_phase(s);
	uint64_t resume_start = ws_now_ns();
	ws_target_resume_all(s->target);
	uint64_t end = ws_now_ns();
	s->phase_ns[WS_PHASE_RESUME] += end - resume_start;
	tick->pause_ns = end - tick->start_ns;
	return err;
}
