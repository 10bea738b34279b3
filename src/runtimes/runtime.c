/*
 * Task lists and choosing a runtime adapter by name.
 */
#include "ws_runtime.h"

#include <stdlib.h>
#include <string.h>

#include "ws_runtime_descriptor.h"
#include "ws_runtime_go.h"
#include "ws_target.h"

struct ws_task *ws_task_list_add(struct ws_task_list *list)
{
	if (list->n == list->capacity) {
		size_t cap = list->capacity ? list->capacity * 2 : 64;
		struct ws_task *tasks = realloc(list->tasks,
						cap * sizeof(*tasks));
		if (!tasks)
			return NULL;
		list->tasks = tasks;
		list->capacity = cap;
	}
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
	free(list->tasks);
	list->tasks = NULL;
	list->n = list->capacity = 0;
}

enum ws_reread ws_task_reread(struct ws_task *task, const struct ws_task *fresh)
{
	if (ws_task_same_context(task, fresh))
		return WS_REREAD_SAME;
	double scale = task->scale;
	uint64_t slot = task->slot;
	*task = *fresh;
	task->scale = scale;
	task->slot = slot;
	return WS_REREAD_CHANGED;
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

static bool is_path(const char *name)
{
	size_t n = strlen(name);
	return strchr(name, '/') || (n > 5 && strcmp(name + n - 5, ".json") == 0);
}

struct ws_error *ws_runtime_create(const char *name, struct ws_target *target,
				   struct ws_symbols *symbols,
				   struct ws_runtime **ret)
{
	if (strcmp(name, "threads") == 0)
		return ws_runtime_threads_create(ret);
	if (strcmp(name, "go") == 0)
		return ws_runtime_go_create(target, symbols, ret);
	char *text = NULL, *source = NULL;
	struct ws_error *err = NULL;
	if (is_path(name)) {
		err = ws_runtime_descriptor_read_file(name, &text);
		if (err)
			return err;
		source = strdup(name);
	} else if (strcmp(name, "auto") == 0) {
		if (ws_runtime_descriptor_find(target->pid, symbols, &text,
					       &source))
			goto descriptor;
		/* A Go binary without DWARF is an error, not a profile of
		 * OS threads that hides every goroutine. */
		if (ws_runtime_go_detect(symbols))
			return ws_runtime_go_create(target, symbols, ret);
		return ws_runtime_threads_create(ret);
	} else {
		return ws_error_create(WS_ERR_USAGE,
				       "--runtime: unknown runtime '%s' (expected auto, threads, go or a descriptor file)",
				       name);
	}
descriptor:
	if (!source)
		err = &ws_error_nomem;
	else
		err = ws_runtime_descriptor_create(text, source, target,
						   symbols, ret);
	free(text);
	free(source);
	return err;
}

void ws_runtime_destroy(struct ws_runtime *runtime)
{
	if (runtime)
		runtime->ops->destroy(runtime);
}
