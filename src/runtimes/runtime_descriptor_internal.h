/*
 * The runtime descriptor's resolved form, shared by its parser
 * (runtime_descriptor_parse.c: JSON to offsets, finding a target's
 * descriptor) and the adapter that walks the registry every tick
 * (runtime_descriptor.c). Private to those two files.
 */
#ifndef WS_RUNTIME_DESCRIPTOR_INTERNAL_H
#define WS_RUNTIME_DESCRIPTOR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ws_dwtype.h"
#include "ws_error.h"
#include "ws_runtime.h"

enum layout {
	LAYOUT_LIST,           /* global -> first task, next member */
	LAYOUT_ARRAY,          /* global is an array of task structs */
	LAYOUT_POINTER_ARRAY,  /* global is an array of (or pointer to) task pointers */
};

enum { MAX_STATE_VALUES = 32, MAX_REASON_VALUES = 64 };

struct value_map {
	size_t n;
	int64_t value[MAX_REASON_VALUES];
	const char *name[MAX_REASON_VALUES]; /* state or wait-reason name */
};

/* One register of a parked task: where it lives in the task struct. */
struct reg_field {
	int regno;
	struct ws_dwfield field;
};

struct descriptor {
	char *name;
	char *source;              /* where it came from, for messages */
	char *root_function;
	enum layout layout;
	struct ws_dwobj registry;  /* the global */
	bool has_count;
	struct ws_dwobj count;     /* global holding the number of tasks */
	uint64_t max_tasks;
	struct ws_dwtype task_type;
	uint64_t task_size;
	bool has_next;
	struct ws_dwfield next;
	bool has_id, has_name, has_entry, has_worker, has_stack, has_switches;
	struct ws_dwfield id, name_field, entry, worker, stack_lo, stack_hi;
	struct ws_dwfield switches;   /* bumped whenever the task is switched in */
	struct ws_dwfield state;
	struct value_map states;   /* value -> state name ("done" skips) */
	enum { REASON_NONE, REASON_STRING, REASON_VALUES } reason_kind;
	struct ws_dwfield reason;
	struct value_map reasons;
	struct reg_field regs[WS_NREGS];
	size_t nregs;
	/* Workers: which OS thread runs which task. */
	bool has_workers;
	struct ws_dwobj workers;   /* array global */
	bool has_worker_count;
	struct ws_dwobj worker_count;
	struct ws_dwtype worker_type;
	uint64_t worker_size;
	struct ws_dwfield worker_tid, worker_current;
};

/* Parses descriptor `text` into d (d->source set by the caller),
 * resolving every DWARF name through prog. Errors name the JSON path and
 * the DWARF name. */
struct ws_error *ws_descriptor_parse(struct descriptor *d,
				     struct ws_dwtype_program *prog,
				     const char *text);

/* Frees what ws_descriptor_parse allocated in d (not d itself). */
void ws_descriptor_deinit(struct descriptor *d);

/* The name a value maps to, or NULL. */
const char *ws_descriptor_map_lookup(const struct value_map *map,
				     int64_t value);

#endif
