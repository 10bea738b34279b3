/*
 * Tasks and task lists (see ws_task.h): the growable list every adapter
 * fills, the comparison of two reads of one task, and the rule for where a
 * task on a CPU starts, shared by every runtime whose tasks run on threads.
 */
#include "ws_task.h"

#include <stdlib.h>
#include <string.h>

#include "ws_grow.h"
#include "ws_syscalls.h"
#include "ws_target.h"

bool ws_task_list_reserve(struct ws_task_list *list, size_t more)
{
	/* A registry of 10k tasks fills the whole list at once. */
	return list->n + more >= list->n &&
	       ws_grow_large((void **)&list->tasks, &list->capacity,
			     list->n + more, sizeof(*list->tasks));
}

struct ws_task *ws_task_list_add(struct ws_task_list *list)
{
	if (!ws_task_list_reserve(list, 1))
		return NULL;
	struct ws_task *task = &list->tasks[list->n++];
	memset(task, 0, sizeof(*task));
	return task;
}

void ws_task_list_clear(struct ws_task_list *list)
{
	list->n = 0;
}

void ws_task_list_deinit(struct ws_task_list *list)
{
	ws_free_large(list->tasks);
	list->tasks = NULL;
	list->n = list->capacity = 0;
}

size_t ws_task_list_put_last(struct ws_task_list *list, size_t n,
			     bool (*last)(const struct ws_task *task, void *arg),
			     void *arg)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (last(&list->tasks[i], arg))
			continue;
		struct ws_task t = list->tasks[k];
		list->tasks[k] = list->tasks[i];
		list->tasks[i] = t;
		k++;
	}
	return k;
}

bool ws_task_same_context(const struct ws_task *a, const struct ws_task *b)
{
	return a->id == b->id && a->version == b->version &&
	       a->state == b->state &&
	       a->start == b->start && a->thread == b->thread &&
	       a->stack_lo == b->stack_lo && a->stack_hi == b->stack_hi &&
	       a->regs.valid == b->regs.valid &&
	       memcmp(a->regs.value, b->regs.value, sizeof(a->regs.value)) == 0;
}

enum ws_reread ws_task_reread(struct ws_task *task, const struct ws_task *fresh)
{
	if (ws_task_same_context(task, fresh))
		return WS_REREAD_SAME;
	/* Its record holds another task now (a freed one, reused): the
	 * task listed is gone, and the new one was not there at the list. */
	if (task->id && fresh->id != task->id)
		return WS_REREAD_GONE;
	double scale = task->scale;
	uint64_t slot = task->slot;
	*task = *fresh;
	task->scale = scale;
	task->slot = slot;
	return WS_REREAD_CHANGED;
}

enum ws_on_cpu ws_task_start_on_cpu(struct ws_task *task,
				    struct ws_target *target, pid_t tid,
				    bool runs_it, bool live)
{
	struct ws_thread *th = tid ? ws_target_find_thread(target, tid) : NULL;
	bool stopped = th && th->regs_valid;
	if (live && !stopped) {
		task->thread = th ? tid : 0;
		task->start = WS_START_THREAD;
		return WS_ON_CPU_PENDING;
	}
	if (!th || !runs_it)
		return WS_ON_CPU_SAVED;
	task->thread = tid;
	if (!stopped) {
		task->start = WS_START_NONE;
		task->error = "thread did not stop in time";
		return WS_ON_CPU_LOST;
	}
	uint64_t sp = th->regs.rsp;
	if (task->stack_hi && (sp < task->stack_lo || sp >= task->stack_hi))
		return WS_ON_CPU_SAVED;
	task->start = WS_START_THREAD;
	if (th->syscall >= 0) {
		task->state = WS_STATE_SYSCALL;
		task->wait_reason = ws_syscall_name(th->syscall);
	}
	return WS_ON_CPU_LIVE;
}
