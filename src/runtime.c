/*
 * Task lists and choosing a runtime adapter by name.
 */
#include "ws_runtime.h"

#include <stdlib.h>
#include <string.h>

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

struct ws_error *ws_runtime_create(const char *name, struct ws_target *target,
				   struct ws_symbols *symbols,
				   struct ws_runtime **ret)
{
	(void)target;
	(void)symbols;
	/* Only OS threads so far: "auto" picks them. */
	if (strcmp(name, "auto") == 0 || strcmp(name, "threads") == 0)
		return ws_runtime_threads_create(ret);
	return ws_error_create(WS_ERR_USAGE,
			       "--runtime: unknown runtime '%s' (expected auto or threads)",
			       name);
}

void ws_runtime_destroy(struct ws_runtime *runtime)
{
	if (runtime)
		runtime->ops->destroy(runtime);
}
