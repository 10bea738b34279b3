/*
 * ws_profile: the samples of one recording, interned for output.
 * Frames are interned by (name, file, line) and stacks by their frame
 * indices, so a parked task sampled 6,000 times costs one stack. The sampler
 * adds (task, state, stack, weight) samples; writers (speedscope, folded) read
 * the result through the accessors below. Not thread-safe.
 */
#ifndef WS_PROFILE_H
#define WS_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ws_error.h"
#include "ws_frame.h"

/* How samples are split into speedscope profiles. */
enum ws_group_by {
	WS_GROUP_ALL,     /* one merged profile */
	WS_GROUP_THREAD,  /* one profile per OS thread ("thread TID \"NAME\"",
			   * NAME = first task name seen on it), and
			   * "no thread" for tasks not on one */
	WS_GROUP_STATE,   /* one per state ("running", "waiting", ...) */
	WS_GROUP_TASK,    /* one per task ("task ID \"NAME\""; with processes,
			   * per process: ids repeat across them) */
	WS_GROUP_PROCESS, /* one per process ("process PID \"COMMAND\""),
			   * samples summed by stack */
};

/* One sample as the sampler hands it over. Nothing is retained by pointer:
 * the profile copies what it keeps. */
struct ws_sample {
	uint64_t task_id;
	const char *task_name;          /* NULL if the task has none */
	int thread;                     /* OS tid running the task, 0 if none */
	int process;                    /* its process (--subprocesses), 0 if
					 * only one is followed */
	const char *process_name;       /* that process's command, or NULL */
	enum ws_state state;
	const char *wait_reason;        /* NULL if none */
	/* Non-NULL when the task is listed but could not be sampled: the leaf
	 * becomes "[failed to sample: ERROR]" (under whatever root frames are
	 * in `frames`, possibly none) instead of the state frame. */
	const char *error;
	const struct ws_frame *frames;  /* innermost first, as unwound */
	size_t nframes;
	double weight;                  /* seconds of wall time this stands for */
	double time;                    /* seconds since the recording began */
};

struct ws_profile;

/* Creates an empty profile. `interval` is the nominal tick in seconds (used
 * by the folded writer to turn weights back into counts); it must be > 0. */
struct ws_error *ws_profile_create(enum ws_group_by group_by, double interval,
				   struct ws_profile **ret);
void ws_profile_destroy(struct ws_profile *profile);

/* Adds one sample: the stack root first, then a leaf frame naming the state
 * ("[running]", "[runnable]", "[waiting]", "[waiting: futex]", "[syscall]",
 * "[syscall: REASON]", "[idle worker]", "[unknown]") or the failure
 * ("[failed to sample: ERROR]", replacing the state). wait_reason is shown
 * for waiting and syscall states only. Frames without a function name are
 * named module+0xOFFSET, else 0xADDRESS (ws_frame_display_name's contract).
 * Within per-thread and per-task groups, samples keep time order and a sample
 * whose stack equals the previous one of its group is merged into it (its
 * weight added); in "all" and "state" groups, and in the "no thread" group
 * (tasks without a thread, many per tick), samples are aggregated by stack.
 * Memory is bounded by distinct frames + distinct stacks + distinct stacks
 * per aggregated group, plus 12 bytes per change of stack in a time-ordered
 * group: a parked task costs one entry however long it waits, but a thread
 * whose stack changes every tick costs an entry per tick (as its time-order
 * view needs). Measured: 6M samples of 1000 parked tasks (20-frame stacks)
 * take < 2 MB of heap in every grouping, ~0.6 us of CPU per sample.
 * Cost: one hash lookup per frame and per stack; allocates only for new
 * frames, stacks, groups or entries. Errors: weight not finite or negative
 * (WS_ERR_OTHER), out of memory; the profile stays usable either way. */
struct ws_error *ws_profile_add(struct ws_profile *profile,
				const struct ws_sample *sample);

/* Recording facts for the writers: a human title (speedscope's "name"; the
 * string is copied) and the recording's wall time in seconds. Optional. */
void ws_profile_set_title(struct ws_profile *profile, const char *title);
void ws_profile_set_duration(struct ws_profile *profile, double seconds);

/* --- read access, for writers --- */

struct ws_profile_frame {
	const char *name;  /* never NULL */
	const char *file;  /* NULL if unknown */
	int line;          /* 0 if unknown */
};

enum ws_group_by ws_profile_group_by(const struct ws_profile *profile);
const char *ws_profile_title(const struct ws_profile *profile); /* may be NULL */
double ws_profile_duration(const struct ws_profile *profile);
double ws_profile_interval(const struct ws_profile *profile);
size_t ws_profile_sample_count(const struct ws_profile *profile); /* as added */

size_t ws_profile_frame_count(const struct ws_profile *profile);
/* NULL when index >= ws_profile_frame_count. */
const struct ws_profile_frame *ws_profile_frame(const struct ws_profile *profile,
						size_t index);
/* Distinct stacks interned so far (for statistics and tests). */
size_t ws_profile_stack_count(const struct ws_profile *profile);

size_t ws_profile_group_count(const struct ws_profile *profile);
/* The group's display name, e.g. "all", "thread 1234 \"worker\"",
 * "waiting", "task 7 \"main\"". Groups are in order of first appearance. */
const char *ws_profile_group_name(const struct ws_profile *profile, size_t group);
/* Time of the group's first sample, and the latest time + weight of its
 * samples (seconds). */
double ws_profile_group_start(const struct ws_profile *profile, size_t group);
double ws_profile_group_end(const struct ws_profile *profile, size_t group);
/* Sum of the weights added to the group (seconds). */
double ws_profile_group_weight(const struct ws_profile *profile, size_t group);
/* Stored samples of the group (what ws_profile_visit calls fn for). */
size_t ws_profile_group_entry_count(const struct ws_profile *profile,
				    size_t group);

/* Calls fn once per stored sample of the group, in order, with the stack's
 * frame indices root first and the (merged) weight. Stops early and returns
 * fn's error if fn returns one. */
typedef struct ws_error *(*ws_profile_visit_fn)(const uint32_t *stack,
						size_t depth, double weight,
						void *arg);
struct ws_error *ws_profile_visit(const struct ws_profile *profile,
				  size_t group, ws_profile_visit_fn fn,
				  void *arg);

/* Like ws_profile_visit, but once per distinct stack of the group with its
 * summed weight, in order of first appearance (time order is dropped). For
 * "all" and "state" groups this is ws_profile_visit; for thread and task
 * groups it allocates a table of the group's distinct stacks while it runs.
 * Fails only when fn does or memory runs out. */
struct ws_error *ws_profile_visit_aggregated(const struct ws_profile *profile,
					     size_t group,
					     ws_profile_visit_fn fn, void *arg);

#endif
