/*
 * The table of runtimes and choosing one by name (see ws_runtime.h). Each
 * row is one adapter: the name `--runtime` knows it by, how `auto` tells
 * whether a target is its runtime, and how to create it by name.
 */
#include "ws_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ws_runtime_descriptor.h"
#include "ws_runtime_go.h"
#include "ws_runtime_threads.h"

typedef struct ws_error *(*runtime_fn)(struct ws_target *target,
				       struct ws_symbols *symbols,
				       struct ws_runtime **ret);

struct runtime_row {
	const char *name;    /* --runtime NAME; NULL: found by auto only */
	/* For auto: creates the runtime when the target is one, else leaves
	 * *ret NULL. An error means it is one but cannot be read. */
	runtime_fn detect;
	runtime_fn create;   /* by name */
};

/* In the order auto asks: a runtime the target describes itself wins over
 * Go (a Go program may carry a descriptor of its own), threads last. */
static const struct runtime_row runtimes[] = {
	{NULL, ws_runtime_descriptor_detect, NULL},
	{"go", ws_runtime_go_detect, ws_runtime_go_create},
	{"threads", ws_runtime_threads_detect, ws_runtime_threads_create},
};

enum { NRUNTIMES = sizeof(runtimes) / sizeof(runtimes[0]) };

static bool is_path(const char *name)
{
	size_t n = strlen(name);
	return strchr(name, '/') || (n > 5 && strcmp(name + n - 5, ".json") == 0);
}

static struct ws_error *create_auto(struct ws_target *target,
				    struct ws_symbols *symbols,
				    struct ws_runtime **ret)
{
	*ret = NULL;
	for (size_t i = 0; i < NRUNTIMES; i++) {
		struct ws_error *err = runtimes[i].detect(target, symbols, ret);
		if (err || *ret)
			return err;
	}
	return ws_error_create(WS_ERR_OTHER, "--runtime auto: no runtime applies");
}

struct ws_error *ws_runtime_create(const char *name, struct ws_target *target,
				   struct ws_symbols *symbols,
				   struct ws_runtime **ret)
{
	if (strcmp(name, "auto") == 0)
		return create_auto(target, symbols, ret);
	if (is_path(name))
		return ws_runtime_descriptor_create_from_file(name, target,
							      symbols, ret);
	for (size_t i = 0; i < NRUNTIMES; i++)
		if (runtimes[i].name && strcmp(runtimes[i].name, name) == 0)
			return runtimes[i].create(target, symbols, ret);
	return ws_error_create(WS_ERR_USAGE,
			       "--runtime: unknown runtime '%s' (expected %s)",
			       name, ws_runtime_choices());
}

const char *ws_runtime_table_name(size_t i)
{
	for (size_t k = 0; k < NRUNTIMES; k++)
		if (runtimes[k].name && i-- == 0)
			return runtimes[k].name;
	return NULL;
}

const char *ws_runtime_choices(void)
{
	static char choices[256];
	if (!choices[0]) {
		size_t len = (size_t)snprintf(choices, sizeof(choices), "auto");
		for (size_t i = 0; ws_runtime_table_name(i) && len < sizeof(choices); i++)
			len += (size_t)snprintf(choices + len, sizeof(choices) - len,
						", %s", ws_runtime_table_name(i));
		if (len < sizeof(choices))
			snprintf(choices + len, sizeof(choices) - len,
				 " or a descriptor FILE.json");
	}
	return choices;
}

void ws_runtime_destroy(struct ws_runtime *runtime)
{
	if (runtime)
		runtime->ops->destroy(runtime);
}

const char *ws_runtime_name(const struct ws_runtime *runtime)
{
	return runtime->caps->name;
}
