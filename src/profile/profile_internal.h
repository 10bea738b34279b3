/*
 * Private to profile*.c: the profile's layout (its tables are indexed
 * through ws_index_set.h). profile_intern.c turns frames and stacks into
 * indices, profile.c keeps groups and their entries and answers the
 * writers.
 * Nothing outside src/profile/profile*.c includes this.
 */
#ifndef WS_PROFILE_INTERNAL_H
#define WS_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ws_index_set.h"
#include "ws_profile.h"

struct string_chunk;

/* A line: one function at one line, as unwound (ws_profile_line), plus what
 * makes comparing cheap and the display frame it shows as. */
struct line_record {
	struct ws_profile_line line;
	uint32_t name_len;
	uint32_t display;   /* index into frames */
};

/* A display frame (ws_profile_frame): a line's function, or with --lines
 * the line itself. `name_id`: the first display frame with the same name
 * (the folded writer merges by names). */
struct frame_record {
	struct ws_profile_frame frame;
	uint32_t name_len;
	uint32_t name_id;
};

struct stack_record {
	size_t offset;  /* into stack_pool */
	uint32_t depth;
	uint32_t hash;
};

/* What a sample says beside its stack: the task and its state, interned
 * (a parked task costs one however long it waits). `leaf` is the line the
 * state or failure shows as; `leaf_is_state` says it names a state only
 * (pprof gives that as labels), not "[not started]" or a failure. */
struct context_record {
	struct ws_profile_context context;
	uint32_t leaf;
	bool leaf_is_state;
	uint32_t hash;
};

/* An entry's stack when it is a gap in a time order: time in which the
 * group's task was not observed (subsampled). */
#define GAP_STACK UINT32_MAX

/* One profile group. Entries are parallel arrays: the stack (line indices,
 * no leaf), the context, how many samples were merged into it, and their
 * weights as observed and as merged (task-seconds). */
struct group {
	char *name;
	uint64_t key;
	bool has_task_name;  /* thread groups: name already carries one */
	bool aggregated;     /* entries unique by (stack, context), merged
			      * weights: see group_aggregates */
	bool main_thread;    /* the target's main thread: ordered first */
	double start, end, weight;
	double cursor;       /* time-ordered: end of what the entries cover */
	uint32_t *stacks;
	uint32_t *contexts;
	uint32_t *counts;
	double *observed;
	double *merged;
	size_t count, capacity;
	struct ws_index_set by_stack;  /* aggregated groups: entries by stack */
};

struct module_record {
	struct ws_profile_module module;
};

struct ws_profile {
	enum ws_group_by group_by;
	enum ws_frame_key frame_key;
	double interval;
	double duration;
	char *title;
	char *runtime;
	char *pprof_hidden_root;   /* see ws_profile_set_pprof_hidden_root */
	int pid;
	uint64_t start_unix_ns;
	size_t sample_count;

	struct string_chunk *strings;

	struct line_record *lines;
	size_t line_count, line_capacity;
	struct ws_index_set line_set;

	struct frame_record *frames;
	size_t frame_count, frame_capacity;
	struct ws_index_set frame_set;
	struct ws_index_set name_set;

	struct context_record *contexts;
	size_t context_count, context_capacity;
	struct ws_index_set context_set;

	uint32_t *stack_pool;
	size_t pool_used, pool_capacity;
	struct stack_record *stacks;
	size_t stack_count, stack_capacity;
	struct ws_index_set stack_set;

	struct group *groups;
	size_t group_count, group_capacity;
	struct ws_index_set group_set;
	/* Groups in the order writers see them (ws_profile_group_*): built
	 * on first read after a group was added. */
	uint32_t *order;
	size_t order_count;

	struct module_record *modules;
	size_t module_count, module_capacity;

	/* Scratch for ws_profile_add: the sample's line indices and the text
	 * of generated frame names; reused so adding allocates nothing once
	 * the profile has seen its stacks. */
	uint32_t *scratch_stack;
	size_t scratch_stack_capacity;
	char *scratch_name;
	size_t scratch_name_capacity;
};

/* --- profile_intern.c --- */

/* Copies s[0..len) into the profile's string chunks; NULL when out of
 * memory. */
char *profile_strings_copy(struct ws_profile *profile, const char *s,
			   size_t len);

/* Interns one unwound frame as a line: its function, else
 * "module+0xOFFSET", else "0xADDRESS" (ws_frame_display_name), with its
 * file, line, module and whether it is inlined, and its display frame. One
 * hash lookup; allocates only for a new line. */
struct ws_error *profile_intern_frame(struct ws_profile *profile,
				      const struct ws_frame *frame,
				      uint32_t *ret);

/* Interns the sample's context (task, thread, state, reason, failure) and
 * its leaf: "[failed to sample: ERROR]" when it failed, "[not started]" for
 * a task that has not run, else its state ("[waiting: futex]", "[idle
 * worker]", ...); the wait reason is shown for waiting and syscall states
 * only. */
struct ws_error *profile_intern_context(struct ws_profile *profile,
					const struct ws_sample *sample,
					uint32_t *ret);

/* Interns a stack of line indices, root first. */
struct ws_error *profile_intern_stack(struct ws_profile *profile,
				      const uint32_t *lines, size_t depth,
				      uint32_t *ret);

/* Frees the profile's string storage. */
void profile_strings_free(struct string_chunk *chunks);

#endif
