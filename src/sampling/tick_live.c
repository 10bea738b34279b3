/*
 * The live tick (WS_TICK_LIVE, see ws_runtime.h): the registry and the
 * parked tasks' stacks are read while the target runs, and each task is
 * read again after its copy; only the threads that run a task are stopped,
 * one at a time. Tasks that will not hold still, and a registry that cannot
 * be read live, are taken with every thread stopped (tick_stopped.c). Used
 * by record and attach when the runtime supports it.
 */
#include "sampler_internal.h"

#include <stdlib.h>
#include <string.h>

#include "ws_clock.h"
#include "ws_grow.h"
#include "ws_snapshot.h"
#include "ws_target.h"

void ws_live_init(struct ws_live *live, pid_t pid)
{
	memset(live, 0, sizeof(*live));
	ws_snapshot_set_init(&live->retry_snaps, pid);
	ws_snapshot_set_init(&live->held_snaps, pid);
	ws_snapshot_set_init(&live->running_snaps, pid);
}

void ws_live_deinit(struct ws_live *live)
{
	ws_snapshot_set_deinit(&live->retry_snaps);
	ws_snapshot_set_deinit(&live->held_snaps);
	ws_snapshot_set_deinit(&live->running_snaps);
	ws_task_list_deinit(&live->retry);
	ws_task_list_deinit(&live->stand_ins);
	free(live->stand_in_index);
	free(live->verdicts);
	free(live->drop);
	free(live->taken);
	free(live->retry_index);
	free(live->pending);
	free(live->pending_tids);
	free(live->ran_tids);
	free(live->listed);
	free(live->rest);
}

/* Per-tick scratch sized for n tasks. */
static bool live_reserve(struct ws_sampler *s, size_t n)
{
	struct { void **p; size_t *cap; size_t size; } arrays[] = {
		{(void **)&s->live.verdicts, &s->live.verdicts_cap, sizeof(*s->live.verdicts)},
		{(void **)&s->live.drop, &s->live.drop_cap, sizeof(*s->live.drop)},
		{(void **)&s->live.taken, &s->live.taken_cap, sizeof(*s->live.taken)},
		{(void **)&s->live.pending, &s->live.pending_cap, sizeof(*s->live.pending)},
		{(void **)&s->live.pending_tids, &s->live.pending_tids_cap, sizeof(*s->live.pending_tids)},
		{(void **)&s->live.retry_index, &s->live.retry_index_cap, sizeof(*s->live.retry_index)},
		{(void **)&s->live.rest, &s->live.rest_cap, sizeof(*s->live.rest)},
		{(void **)&s->live.stand_in_index, &s->live.stand_in_index_cap, sizeof(*s->live.stand_in_index)},
		{(void **)&s->live.listed, &s->live.listed_cap, sizeof(*s->live.listed)},
	};
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
		if (!ws_grow(arrays[i].p, arrays[i].cap, n, arrays[i].size))
			return false;
	return true;
}

/* Copies tasks[index[0..n)] into s->retry. */
static struct ws_error *gather(struct ws_sampler *s, const size_t *index,
			       size_t n)
{
	ws_task_list_clear(&s->live.retry);
	for (size_t j = 0; j < n; j++) {
		struct ws_task *t = ws_task_list_add(&s->live.retry);
		if (!t)
			return &ws_error_nomem;
		*t = s->tasks.tasks[index[j]];
	}
	return NULL;
}

/* Task i ended while the tick read it: kept as ws_sampler_keep_ended
 * says, as on its thread if it was listed on one (a rereading since may
 * have found it switching there, without it) whose time has no sample
 * yet. Once the tick's copies are taken (copied: true), its copy (of a
 * stack in motion, or of another task's) is discarded. */
static void keep_ended(struct ws_sampler *s, size_t i, bool copied)
{
	struct ws_task *t = &s->tasks.tasks[i];
	ws_sampler_keep_ended(t, ws_sampler_claim_thread(s, s->live.listed[i].thread));
	if (copied) {
		struct ws_snapshot *snap = &s->snapshots.snaps[i];
		memset(snap, 0, sizeof(*snap));
		snap->error = t->error;
	}
	s->live.tasks_gone++;
}

/* Tasks that changed while their stacks were copied get one more try
 * (read, copy, read again) on their own, a window of microseconds. One
 * that ended is kept (keep_ended); one that changed again joins
 * s->live.rest. */
static struct ws_error *retry_changed(struct ws_sampler *s, size_t nretry)
{
	struct ws_error *err = gather(s, s->live.retry_index, nretry);
	if (!err)
		err = ws_snapshot_take(&s->live.retry_snaps, s->target, &s->live.retry,
				       s->options.max_stack);
	enum ws_reread *verdicts = s->live.verdicts + s->tasks.n;
	struct ws_read_context context = ws_sampler_context(s, true, 0);
	if (!err)
		err = s->runtime->ops->reread(s->runtime, s->target, &context,
					      s->live.retry.tasks, nretry,
					      verdicts);
	if (err)
		return err;
	for (size_t j = 0; j < nretry; j++) {
		size_t i = s->live.retry_index[j];
		if (verdicts[j] == WS_REREAD_GONE)
			keep_ended(s, i, true);
		else if (verdicts[j] == WS_REREAD_CHANGED ||
			 s->live.retry_snaps.snaps[j].guard_failed)
			s->live.rest[s->live.nrest++] = i;
		else
			s->snapshots.snaps[i] = s->live.retry_snaps.snaps[j];
	}
	return NULL;
}

struct live_visit {
	struct ws_sampler *sampler;
	struct ws_error *err;
};

/* Thread th, held, no longer runs the task listed on it (that one ended
 * or switched out since the list): the task it runs now stands in, read
 * again and copied, if the list has it (a task listed before it started,
 * as one not started, or parked). Without it the thread's time would go
 * missing whenever tasks are shorter than the list takes to read, as
 * compute tasks of a few milliseconds behind a list of thousands are.
 * Its record as read now is kept aside (s->live.stand_ins) until the
 * parked tasks' bulk reread is done: by then it may have switched out
 * again, and that read would pair a parked record with this running
 * copy. */
static bool take_successor(struct live_visit *v, struct ws_thread *th)
{
	struct ws_sampler *s = v->sampler;
	struct ws_runtime *rt = s->runtime;
	uint64_t address = rt->ops->thread_current
		? rt->ops->thread_current(rt, th->tid) : 0;
	if (!address)
		return false;
	for (size_t j = 0; j < s->tasks.n; j++) {
		const struct ws_task *listed = &s->tasks.tasks[j];
		if (listed->address != address || s->live.taken[j] ||
		    s->live.drop[j] || listed->start == WS_START_THREAD)
			continue;
		struct ws_task *t = ws_task_list_add(&s->live.stand_ins);
		if (!t) {
			v->err = &ws_error_nomem;
			return false;
		}
		*t = *listed;
		/* Whatever task the record holds now, even one the record
		 * was reused for since the list: it runs on th, and carries
		 * th's time. */
		t->id = 0;
		enum ws_reread verdict;
		struct ws_read_context context = ws_sampler_context(s, true, 0);
		v->err = rt->ops->reread(rt, s->target, &context, t, 1,
					 &verdict);
		if (v->err || verdict == WS_REREAD_GONE ||
		    t->start != WS_START_THREAD || t->thread != th->tid) {
			s->live.stand_ins.n--;
			return false;
		}
		ws_sampler_set_pc_exact(s, t);
		v->err = ws_snapshot_take_thread(&s->live.running_snaps, j, th,
						 t, s->options.max_stack);
		if (v->err) {
			s->live.stand_ins.n--;
			return false;
		}
		s->live.taken[j] = true;
		ws_sampler_claim_thread(s, th->tid);
		s->live.stand_in_index[s->live.stand_ins.n - 1] = j;
		s->live.stood_in++;
		return true;
	}
	return false;
}

/* A thread that runs a task, stopped: read the tasks listed on it again
 * now that it is held, and copy the one it still runs. The list took time
 * to read, so more than one may be listed there; the thread's time is
 * given once (ws_sampler_claim_thread): to the task it runs now, else to
 * one that stands in, else to one listed there that ended. */
static void visit_running(struct ws_thread *th, void *arg)
{
	struct live_visit *v = arg;
	struct ws_sampler *s = v->sampler;
	size_t ended = 0;
	for (size_t k = 0; k < s->live.npending && !v->err; k++) {
		size_t i = s->live.pending[k];
		if (i == SIZE_MAX)
			continue; /* handled */
		struct ws_task *t = &s->tasks.tasks[i];
		if (t->thread != th->tid)
			continue;
		struct ws_read_context context = ws_sampler_context(s, true, 0);
		v->err = s->runtime->ops->reread(s->runtime, s->target,
						 &context, t, 1,
						 &s->live.verdicts[i]);
		if (v->err)
			return;
		if (s->live.verdicts[i] == WS_REREAD_GONE) {
			ended++; /* after the one it runs now, if any */
			continue;
		}
		s->live.pending[k] = SIZE_MAX;
		if (t->thread != th->tid ||
		    ws_sampler_thread_sampled(s, th->tid)) {
			s->live.rest[s->live.nrest++] = i; /* switched out meanwhile */
			continue;
		}
		ws_sampler_set_pc_exact(s, t);
		v->err = ws_snapshot_take_thread(&s->live.running_snaps, i, th,
						 t, s->options.max_stack);
		s->live.taken[i] = !v->err;
		if (!v->err)
			ws_sampler_claim_thread(s, th->tid);
	}
	for (size_t k = 0; ended && k < s->live.npending && !v->err; k++) {
		size_t i = s->live.pending[k];
		if (i == SIZE_MAX || s->tasks.tasks[i].thread != th->tid)
			continue;
		s->live.pending[k] = SIZE_MAX;
		ended--;
		/* The task that stands in carries the thread's time; without
		 * one, the ended task keeps it. */
		if (!ws_sampler_thread_sampled(s, th->tid) &&
		    take_successor(v, th))
			s->live.drop[i] = true;
		else if (!v->err)
			keep_ended(s, i, false); /* copied later */
	}
	if (!v->err && !ws_sampler_thread_sampled(s, th->tid))
		take_successor(v, th);
}

/* Stops the threads that run a task, one at a time (a rolling tick over
 * those threads), into s->live.running_snaps; returns the longest hold. */
static struct ws_error *take_running(struct ws_sampler *s, uint64_t *longest)
{
	struct live_visit v = {.sampler = s};
	size_t stopped;
	ws_snapshot_set_clear(&s->live.running_snaps);
	struct ws_error *err = ws_target_stop_threads(s->target,
						      s->live.pending_tids,
						      s->live.npending,
						      s->options.stop_timeout_ns,
						      visit_running, &v,
						      &stopped, longest);
	return err ? err : v.err;
}

/* The running tasks' copies into the tick's snapshots, and the stand-ins'
 * records into its list, once the parked tasks are copied and read
 * again; a thread that did not stop in time says so. */
static void place_running(struct ws_sampler *s)
{
	for (size_t k = 0; k < s->live.stand_ins.n; k++)
		s->tasks.tasks[s->live.stand_in_index[k]] =
			s->live.stand_ins.tasks[k];
	for (size_t k = 0; k < s->live.npending; k++) {
		size_t i = s->live.pending[k];
		if (i == SIZE_MAX)
			continue;
		struct ws_snapshot *snap = &s->snapshots.snaps[i];
		memset(snap, 0, sizeof(*snap));
		snap->error = "thread did not stop in time";
	}
	for (size_t i = 0; i < s->tasks.n; i++)
		if (s->live.taken[i])
			s->snapshots.snaps[i] = s->live.running_snaps.snaps[i];
}

static const char torn[] = "changed while being read";
static const char started[] = "started running while being read";
static const char late[] = "threads did not stop within --max-pause";

/* The rest from the first one on fail with `why`, unread. */
static void fail_rest(struct ws_sampler *s, size_t first, const char *why)
{
	for (size_t j = first; j < s->live.nrest; j++) {
		struct ws_snapshot *snap = &s->snapshots.snaps[s->live.rest[j]];
		memset(snap, 0, sizeof(*snap));
		snap->error = why;
	}
	s->live.nrest = first;
}

/* The tasks that would not hold still (s->live.rest), read and copied with
 * every thread stopped, as a stopped tick does; returns the pause. As many
 * as the pause budget affords: the others are failed samples, never torn
 * ones. */
static struct ws_error *take_rest_stopped(struct ws_sampler *s,
					  uint64_t *pause_ns)
{
	size_t limit = ws_budget_task_limit(&s->budget, 0, false);
	if (limit && s->live.nrest > limit)
		fail_rest(s, limit, torn);
	/* A few tasks are not worth holding the target past the pause
	 * budget: the threads that stopped wait for the late ones, so when
	 * one is late the rest fail. Three quarters of the budget to stop,
	 * the rest to read, copy and resume (50-95 us for 1-4 tasks). Under
	 * record of go_parked_n 10000, of 39 such stops of 6-7 threads 31
	 * took 80-350 us, 8 took 0.5-4.9 ms. */
	long timeout = s->options.stop_timeout_ns;
	uint64_t stop_budget = s->options.max_pause_ns / 4 * 3;
	if (stop_budget && stop_budget < (uint64_t)timeout)
		timeout = (long)stop_budget;
	uint64_t t0 = ws_now_ns();
	size_t stopped;
	struct ws_error *err = ws_target_stop_all(s->target, timeout,
						  NULL, NULL, &stopped, NULL);
	if (!err && !ws_target_all_stopped(s->target))
		fail_rest(s, 0, late);
	enum ws_reread *verdicts = s->live.verdicts + s->tasks.n;
	struct ws_read_context context = ws_sampler_context(s, false, 0);
	if (!err)
		err = gather(s, s->live.rest, s->live.nrest);
	if (!err)
		err = s->runtime->ops->reread(s->runtime, s->target, &context,
					      s->live.retry.tasks, s->live.nrest,
					      verdicts);
	if (!err) {
		for (size_t j = 0; j < s->live.nrest; j++)
			ws_sampler_set_pc_exact(s, &s->live.retry.tasks[j]);
		err = ws_snapshot_take(&s->live.held_snaps, s->target, &s->live.retry,
				       s->options.max_stack);
	}
	*pause_ns = ws_target_resume_all(s->target) - t0;
	if (err)
		return err;
	/* A task that runs now on a thread without a sample has its time;
	 * then the ones that ended may (keep_ended). */
	for (size_t j = 0; j < s->live.nrest; j++) {
		const struct ws_task *now = &s->live.retry.tasks[j];
		s->live.taken[s->live.rest[j]] = verdicts[j] != WS_REREAD_GONE &&
			now->start == WS_START_THREAD &&
			ws_sampler_claim_thread(s, now->thread);
	}
	for (size_t j = 0; j < s->live.nrest; j++) {
		size_t i = s->live.rest[j];
		if (verdicts[j] == WS_REREAD_GONE) {
			keep_ended(s, i, true);
			continue;
		}
		const struct ws_task *now = &s->live.retry.tasks[j];
		if (s->live.taken[i]) {
			s->tasks.tasks[i] = *now;
			s->snapshots.snaps[i] = s->live.held_snaps.snaps[j];
			continue;
		}
		if (now->start == WS_START_THREAD && ws_sampler_thread_sampled(s, now->thread) &&
		    s->live.listed[i].not_started) {
			/* It started since the list on a thread whose time
			 * this tick has sampled already: its sample is the
			 * list's, where it had not started (entry and "[not
			 * started]"), which is all there was to it then. */
			struct ws_task *t = &s->tasks.tasks[i];
			t->state = s->live.listed[i].state;
			t->start = WS_START_NONE;
			t->thread = 0;
			t->error = NULL;
			memset(&s->snapshots.snaps[i], 0, sizeof(s->snapshots.snaps[i]));
			s->live.ran_twice++;
			continue;
		}
		if (now->start == WS_START_THREAD && ws_sampler_thread_sampled(s, now->thread)) {
			/* It runs now on a thread whose running sample this
			 * tick has (another task's, earlier): taken as it runs
			 * now, that thread would count twice, and a task that
			 * started since the list would weigh as running for
			 * being picked late (the bias: tasks are taken here
			 * because they changed). Its stack as listed is lost:
			 * a failed sample, which keeps its weight. */
			struct ws_snapshot *snap = &s->snapshots.snaps[i];
			memset(snap, 0, sizeof(*snap));
			snap->error = started;
			s->live.ran_twice++;
			continue;
		}
		s->tasks.tasks[i] = *now;
		s->snapshots.snaps[i] = s->live.held_snaps.snaps[j];
	}
	s->live.tasks_held += s->live.nrest;
	return NULL;
}

/* Removes the tasks that ended while the tick read them and whose thread's
 * time another task, standing in, carries. */
static void drop_gone(struct ws_sampler *s)
{
	size_t n = s->tasks.n, kept = 0;
	for (size_t i = 0; i < n; i++) {
		if (s->live.drop[i])
			continue;
		s->tasks.tasks[kept] = s->tasks.tasks[i];
		s->snapshots.snaps[kept] = s->snapshots.snaps[i];
		kept++;
	}
	s->live.tasks_gone += n - kept;
	s->tasks.n = kept;
	s->snapshots.n = kept;
}

static bool starts_so(const struct ws_task *t, void *start)
{
	return t->start == *(const enum ws_task_start *)start;
}

/* Moves the tasks of [0, n) that start so (without a stack to copy; on a
 * thread) to the end of that range; returns how many come before them. */
static size_t put_last(struct ws_task_list *l, size_t n,
		       enum ws_task_start start)
{
	return ws_task_list_put_last(l, n, starts_so, &start);
}

bool ws_tick_list_running(struct ws_sampler *s, bool live,
			  struct ws_read_context *context)
{
	struct ws_runtime *rt = s->runtime;
	ws_target_forget_regs(s->target);
	size_t limit = ws_budget_task_limit(&s->budget, 0, live);
	*context = ws_sampler_context(s, true, limit);
	ws_task_list_clear(&s->tasks);
	struct ws_error *err = rt->ops->list_tasks(rt, s->target, context,
						   &s->tasks);
	if (err) {
		ws_error_destroy(err);
		return false;
	}
	if (limit && s->tasks.n > limit)
		ws_budget_subsample(&s->budget, &s->tasks, limit);
	return true;
}

/* A tick that reads the registry, stops the threads that run a task (one
 * at a time, each just long enough to read the task again, its registers
 * and its stack: right after the list, so that a short task running then
 * is rarely gone by its stop, which would leave it out), and copies the
 * parked tasks while the target runs, then reads every task again: a task
 * whose version, state or
 * saved context changed meanwhile, or whose guard (ws_task.guard_*) moved
 * around its own copy, ran while its stack was copied, and the copy may be
 * torn; it is never recorded. Such a task is tried once more
 * on its own; if it changed again, it is taken with every thread stopped
 * (a short stopped tick for the few that will not hold still). A task that
 * ended meanwhile keeps its sample (keep_ended). The threads that run a
 * task are stopped one at a time, each just long enough to read its
 * registers and copy its stack. The pause reported is the longest any
 * thread was held. */
struct ws_error *ws_tick_live(struct ws_sampler *s)
{
	struct ws_tick *tick = &s->tick;
	struct ws_runtime *rt = s->runtime;
	uint64_t t0 = ws_now_ns();
	struct ws_read_context context;
	/* Read while it changed (a registry array freed as it grew): this
	 * tick holds every thread instead. */
	if (!ws_tick_list_running(s, true, &context))
		return ws_tick_stopped(s);
	size_t all = s->tasks.n;
	size_t n = put_last(&s->tasks, all, WS_START_NONE);
	/* Parked tasks in [0, parked), running ones in [parked, n). */
	size_t parked = put_last(&s->tasks, n, WS_START_THREAD);
	for (size_t i = 0; i < n; i++)
		ws_sampler_set_pc_exact(s, &s->tasks.tasks[i]);
	/* Of the parked ones, those to copy in [0, fresh); the others have
	 * not run since an earlier tick's unwind of them. */
	size_t fresh = ws_sampler_put_reusable_last(s, parked);
	uint64_t t1 = ws_now_ns();
	s->phase_ns[WS_PHASE_LIST] += t1 - t0;
	if (!live_reserve(s, 2 * all))
		return &ws_error_nomem;
	for (size_t i = 0; i < all; i++) {
		const struct ws_task *t = &s->tasks.tasks[i];
		s->live.listed[i] = (struct ws_listed){
			.not_started = ws_sampler_not_started(t),
			.state = t->state,
			.thread = t->start == WS_START_THREAD ? t->thread : 0,
		};
	}
	s->live.npending = 0;
	s->live.nrest = 0;
	s->live.nran = 0;
	memset(s->live.drop, 0, all * sizeof(*s->live.drop));
	memset(s->live.taken, 0, all * sizeof(*s->live.taken));
	ws_task_list_clear(&s->live.stand_ins);
	for (size_t i = parked; i < n; i++) {
		pid_t tid = s->tasks.tasks[i].thread;
		if (!ws_target_find_thread(s->target, tid)) {
			/* Between threads: take it stopped. */
			s->live.rest[s->live.nrest++] = i;
			continue;
		}
		s->live.pending_tids[s->live.npending] = tid;
		s->live.pending[s->live.npending++] = i;
	}
	uint64_t longest = 0, held = 0;
	struct ws_error *err = NULL;
	if (s->live.npending && (err = take_running(s, &longest)))
		return err;
	/* The threads run again: the registers their stops gave are stale
	 * for the reads to come, which would otherwise take a task running
	 * now for one that does not (its thread "stopped" on another stack)
	 * and accept its saved context, and a copy of a stack in motion. */
	ws_target_forget_regs(s->target);
	uint64_t t2 = ws_now_ns();
	s->phase_ns[WS_PHASE_STOP] += t2 - t1;

	context.limit = 0;
	/* The running tasks are copied already (or taken stopped later). */
	err = ws_snapshot_take_first(&s->snapshots, s->target, &s->tasks,
				     fresh, s->options.max_stack);
	if (!err)
		err = rt->ops->reread(rt, s->target, &context, s->tasks.tasks,
				      fresh, s->live.verdicts);
	if (err)
		return err;
	size_t nretry = 0;
	for (size_t i = fresh; i < parked; i++)
		if (!s->live.taken[i] &&   /* stood in: copied already */
		    !ws_sampler_reuse(s, &s->tasks.tasks[i],
				      &s->snapshots.snaps[i]))
			s->live.retry_index[nretry++] = i; /* copy it after all */
	place_running(s);

	for (size_t i = 0; i < fresh; i++) {
		struct ws_task *t = &s->tasks.tasks[i];
		if (s->live.taken[i])
			continue; /* stood in for a task that ended */
		if (s->live.verdicts[i] == WS_REREAD_GONE) {
			keep_ended(s, i, true);
		} else if (s->live.verdicts[i] == WS_REREAD_CHANGED &&
			   t->start == WS_START_THREAD) {
			/* Runs now: a live copy would need its thread's
			 * registers, which only a stop gives. */
			s->live.rest[s->live.nrest++] = i;
		} else if (s->live.verdicts[i] == WS_REREAD_CHANGED ||
			   s->snapshots.snaps[i].guard_failed) {
			ws_sampler_set_pc_exact(s, t);
			s->live.retry_index[nretry++] = i;
		}
	}
	if (nretry && (err = retry_changed(s, nretry)))
		return err;
	uint64_t t3 = ws_now_ns();
	s->phase_ns[WS_PHASE_COPY] += t3 - t2;

	if (s->live.nrest && (err = take_rest_stopped(s, &held)))
		return err;
	s->phase_ns[WS_PHASE_STOP] += ws_now_ns() - t3;
	drop_gone(s);
	ws_budget_note_read(&s->budget, (t1 - t0) + (t3 - t2), all);
	s->live.ticks++;
	s->live.tasks_listed += all;
	tick->pause_ns = held > longest ? held : longest;
	return NULL;
}
