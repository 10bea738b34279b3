/*
 * ws_dump: writes one tick as text (for people) or JSON (for tools; the
 * shape is a contract, see wallspy(1)), with a header saying what was
 * dumped and how long it took. Tasks come in a stable order: the process's
 * main thread first, then by task id. With `group`, tasks whose stacks
 * print the same (state, wait reason, error, frames) are written once with
 * their count and ids, like Delve's `goroutines -group` and Go's debug=1
 * goroutine profile.
 */
#ifndef WS_DUMP_H
#define WS_DUMP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ws_error.h"
#include "ws_sampler.h"

/* What the header says besides the tasks. */
struct ws_dump_info {
	pid_t pid;
	const char *executable;	/* /proc/PID/exe; NULL: unknown */
	const char *command;	/* /proc/PID/cmdline, spaces between the
				 * arguments; NULL: unknown */
	const char *runtime;	/* "threads", "go", a descriptor's name */
	uint64_t held_ns;	/* how long the target was stopped */
	uint64_t took_ns;	/* the whole dump: attach to the last name */
	bool group;		/* merge tasks with identical stacks */
};

/* Cost: O(n log n) in the tasks (sorting, and grouping by comparing
 * stacks); memory: two indexes of n entries. Errors: WS_ERR_OUTPUT when
 * writing fails, out of memory. */
struct ws_error *ws_dump_write_text(FILE *file, const struct ws_dump_info *info,
				    const struct ws_tick *tick);
struct ws_error *ws_dump_write_json(FILE *file, const struct ws_dump_info *info,
				    const struct ws_tick *tick);

#endif
