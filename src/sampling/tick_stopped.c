/*
 * The stopped tick: every thread of the target is held while the runtime
 * lists its tasks and their stacks are copied, so a registry that cannot be
 * read while it changes is read whole. The pause covers stop, listing,
 * copying and resume, within the pause budget (ws_budget.h). A registry
 * walked whole (ws_runtime_caps.walk_live) is walked before the stop.
 */
#include "sampler_internal.h"

#include "ws_clock.h"
#include "ws_grow.h"
#include "ws_target.h"

/* A registry walked whole (ws_runtime_caps.walk_live) costs what its
 * length does, which no task limit bounds: over --max-cpu's share of an
 * interval, the next tick waits until the walk fits (tick->rest_ns; the
 * timer carries the time between as weight). The first walk is cold
 * (fresh buffers, the list's pages): it counts only when it alone
 * outlasted an interval, too high an estimate that spaces the second tick
 * as well (left unspaced, a 10 s attach of a 100k list missed 8-9 ticks
 * behind the first walk and took 0.42 s of CPU; spaced, none and
 * 0.35-0.37 s). The cost is wallspy's CPU for the walk (walk_ns), not
 * its length: a walk preempted by the target's own threads costs
 * nothing, yet one 9-task walk of greenrt_parked held 0.8 ms beside a
 * spinning task (70 us typical, 0.2 ms the budget) spaced away 9 ticks
 * through the smoothing. The cost is smoothed over walks. */
static void space_after_walk(struct ws_sampler *s, uint64_t walk_ns)
{
	const struct ws_budget_options *o = &s->budget.options;
	double ns = (double)walk_ns;
	if (s->ticks > 0 || ns >= (double)o->interval_ns)
		s->walk_ns = s->walk_ns > 0 ? 0.75 * s->walk_ns + 0.25 * ns : ns;
	if (s->walk_ns > 0 && o->max_cpu > 0 && o->interval_ns &&
	    s->walk_ns > o->max_cpu * (double)o->interval_ns)
		s->tick.rest_ns = (uint64_t)(s->walk_ns / o->max_cpu) -
				  o->interval_ns;
}

/* The part of a tick that runs while the target is stopped. */
static struct ws_error *stopped_phase(struct ws_sampler *s)
{
	struct ws_tick *tick = &s->tick;
	uint64_t t0 = ws_now_ns();
	size_t limit = ws_budget_task_limit(&s->budget, t0 - tick->start_ns,
					    false);
	struct ws_read_context context = ws_sampler_context(s, false, limit);
	ws_task_list_clear(&s->tasks);
	uint64_t cpu0 = s->runtime->caps->walk_live ? ws_cpu_ns() : 0;
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
	/* --stop-all over a list: the walk inside the pause, spaced alike. */
	if (s->runtime->caps->walk_live)
		space_after_walk(s, ws_cpu_ns() - cpu0);
	if (limit && s->tasks.n > limit)
		ws_budget_subsample(&s->budget, &s->tasks, limit);
	err = ws_sampler_take_snapshots(s);
	if (err)
		return err;
	uint64_t t2 = ws_now_ns();
	s->phase_ns[WS_PHASE_COPY] += t2 - t1;
	/* Listing and copying dominate a large tick's pause. */
	ws_budget_note_read(&s->budget, t2 - t0, listed);
	return NULL;
}

/* Resumes every thread held since the tick's stop, counting the resume
 * phase from `start`; returns when the last one was let go (the pause's
 * end, ws_target_resume_all). */
static uint64_t resume_phase(struct ws_sampler *s, uint64_t start)
{
	uint64_t let_go = ws_target_resume_all(s->target);
	s->phase_ns[WS_PHASE_RESUME] += ws_now_ns() - start;
	return let_go;
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
	tick->pause_ns = resume_phase(s, ws_now_ns()) - tick->start_ns;
	return err;
}

/* With every thread stopped: reads the tasks a live walk kept again,
 * each decoded anew where it changed and kept as ws_sampler_keep_ended
 * says where it is no longer a task, and copies their stacks. */
static struct ws_error *reread_stopped(struct ws_sampler *s)
{
	struct ws_runtime *rt = s->runtime;
	size_t n = s->tasks.n;
	if (!ws_grow((void **)&s->live.verdicts, &s->live.verdicts_cap, n,
		     sizeof(*s->live.verdicts)))
		return &ws_error_nomem;
	struct ws_read_context context = ws_sampler_context(s, false, 0);
	struct ws_error *err = rt->ops->reread(rt, s->target, &context,
					       s->tasks.tasks, n,
					       s->live.verdicts);
	if (err)
		return err;
	/* A thread's time once (ws_sampler_claim_thread): a task on it now
	 * first, then one listed on it that ended. */
	s->live.nran = 0;
	for (size_t i = 0; i < n; i++) {
		struct ws_task *t = &s->tasks.tasks[i];
		ws_sampler_set_pc_exact(s, t);
		if (s->live.verdicts[i] != WS_REREAD_GONE &&
		    t->start == WS_START_THREAD)
			ws_sampler_claim_thread(s, t->thread);
	}
	for (size_t i = 0; i < n; i++) {
		struct ws_task *t = &s->tasks.tasks[i];
		if (s->live.verdicts[i] == WS_REREAD_GONE) {
			ws_sampler_keep_ended(t, t->start == WS_START_THREAD &&
						 ws_sampler_claim_thread(s, t->thread));
			s->live.tasks_gone++;
		}
	}
	return ws_sampler_take_snapshots(s);
}

/* The tick of a registry walked whole (ws_runtime_caps.walk_live): the
 * walk runs while the target does, keeping a uniform sample of what the
 * pause budget affords (a list too long for the budget would otherwise be
 * walked inside the pause: about 60 ms for 100,000 tasks); then every
 * thread is held while only the kept tasks are read again and copied. A
 * walk the running program broke (a task freed under it) is an error, and
 * this tick is taken stopped whole. */
struct ws_error *ws_tick_walked_live(struct ws_sampler *s)
{
	struct ws_tick *tick = &s->tick;
	uint64_t t0 = ws_now_ns(), cpu0 = ws_cpu_ns();
	struct ws_read_context context;
	if (!ws_tick_list_running(s, false, &context))
		return ws_tick_stopped(s);
	uint64_t t1 = ws_now_ns();
	s->phase_ns[WS_PHASE_LIST] += t1 - t0;
	space_after_walk(s, ws_cpu_ns() - cpu0);
	size_t stopped;
	struct ws_error *err = ws_target_stop_all(s->target, s->options.stop_timeout_ns, NULL,
				 NULL, &stopped, NULL);
	uint64_t t2 = ws_now_ns();
	s->phase_ns[WS_PHASE_STOP] += t2 - t1;
	size_t sampled = s->tasks.n;
	if (!err)
		err = reread_stopped(s);
	uint64_t resume_start = ws_now_ns();
	s->phase_ns[WS_PHASE_COPY] += resume_start - t2;
	ws_budget_note_read(&s->budget, resume_start - t2, sampled);
	tick->pause_ns = resume_phase(s, resume_start) - t1;
	return err;
}
