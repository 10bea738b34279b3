/*
 * The OS-thread runtime adapter: every thread of the target is a task whose
 * stack starts at its live registers. A thread stopped while blocked in a
 * system call is "waiting" with the call's name as wait reason; any other
 * thread was on a CPU or ready to run: "running". Threads are sampled
 * independently, so ticks take them one at a time (WS_TICK_ROLLING).
 */
#include "ws_runtime_threads.h"

#include <stdlib.h>

#include "ws_syscalls.h"
#include "ws_target.h"

static void threads_thread_task(struct ws_runtime *runtime,
				const struct ws_thread *th,
				struct ws_task *task)
{
	(void)runtime;
	task->id = (uint64_t)th->tid;
	task->thread = th->tid;
	task->name = th->comm[0] ? th->comm : NULL;
	if (!th->regs_valid) {
		task->state = WS_STATE_UNKNOWN;
		task->start = WS_START_NONE;
		task->error = th->refused ? "thread could not be traced"
					  : "thread did not stop in time";
		return;
	}
	task->start = WS_START_THREAD;
	if (th->group_stop) {
		task->state = WS_STATE_WAITING;
		task->wait_reason = "stopped";
	} else if (th->syscall >= 0) {
		task->state = WS_STATE_WAITING;
		task->wait_reason = ws_syscall_name(th->syscall);
	} else {
		task->state = WS_STATE_RUNNING;
	}
}

/* A stopped tick's view: every live thread, as rolling ticks see each. */
static struct ws_error *threads_list(struct ws_runtime *runtime,
				     struct ws_target *target,
				     const struct ws_read_context *context,
				     struct ws_task_list *out)
{
	(void)context;
	for (size_t i = 0; i < target->nthreads; i++) {
		struct ws_thread *th = &target->threads[i];
		if (th->run == WS_THREAD_GONE)
			continue;
		struct ws_task *task = ws_task_list_add(out);
		if (!task)
			return &ws_error_nomem;
		threads_thread_task(runtime, th, task);
	}
	return NULL;
}

static void threads_destroy(struct ws_runtime *runtime)
{
	free(runtime);
}

static const struct ws_runtime_ops threads_ops = {
	.list_tasks = threads_list,
	.thread_task = threads_thread_task,
	.destroy = threads_destroy,
};

static const struct ws_runtime_caps threads_caps = {
	.name = "threads",
	.tick = WS_TICK_ROLLING,
};

struct ws_error *ws_runtime_threads_create(struct ws_target *target,
					   struct ws_symbols *symbols,
					   struct ws_runtime **ret)
{
	(void)target, (void)symbols;
	struct ws_runtime *runtime = calloc(1, sizeof(*runtime));
	if (!runtime)
		return &ws_error_nomem;
	runtime->ops = &threads_ops;
	runtime->caps = &threads_caps;
	*ret = runtime;
	return NULL;
}

struct ws_error *ws_runtime_threads_detect(struct ws_target *target,
					   struct ws_symbols *symbols,
					   struct ws_runtime **ret)
{
	return ws_runtime_threads_create(target, symbols, ret);
}
