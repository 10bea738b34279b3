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
	WS_GROUP_THREAD,  /* one profile per OS thread ("thread TID NAME") */
	WS_GROUP_STATE,   /* one per state ("running", "waiting", ...) */
	WS_GROUP_TASK,    /* one per task ("task ID NAME") */
};

/* One sample as the sampler hands it over. Nothing is retained by pointer:
 * the profile copies what it keeps. */
struct ws_sample {
	uint64_t task_id;
	const char *task_name;          /* NULL if the task has none */
	int thread;                     /* OS tid running the task, 0 if none */
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
 * by the folded writer to turn weights back into counts). */
struct ws_error *ws_profile_create(enum ws_group_by group_by, double interval,
				   struct ws_profile **ret);
void ws_profile_destroy(struct ws_profile *profile);

/* Adds one sample: the stack root first, then a leaf frame naming the state
 * ("[running]", "[waiting: futex]", "[runnable]") or the failure. Frames
 * without a function name are named module+0xOFFSET (ws_frame_display_name).
 * Within per-thread and per-task groups, samples keep time order and a sample
 * whose stack equals the previous one of its group is merged into it (its
 * weight added); in "all" and "state" groups samples are aggregated by stack.
 * Memory is therefore bounded by distinct stacks, not by duration. */
struct ws_error *ws_profile_add(struct ws_profile *profile,
				const struct ws_sample *sample);

/* Recording facts for the writers: a human title, the recording's wall time
 * in seconds, pause statistics. All optional. */
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
const struct ws_profile_frame *ws_profile_frame(const struct ws_profile *profile,
						size_t index);

size_t ws_profile_group_count(const struct ws_profile *profile);
/* The group's display name, e.g. "all", "thread 1234 \"worker\"",
 * "waiting", "task 7 \"main\"". Groups are in order of first appearance. */
const char *ws_profile_group_name(const struct ws_profile *profile, size_t group);
/* Time of the group's first and last sample + its weight (seconds). */
double ws_profile_group_start(const struct ws_profile *profile, size_t group);
double ws_profile_group_end(const struct ws_profile *profile, size_t group);

/* Calls fn once per stored sample of the group, in order, with the stack's
 * frame indices root first and the (merged) weight. Stops early and returns
 * fn's error if fn returns one. */
typedef struct ws_error *(*ws_profile_visit_fn)(const uint32_t *stack,
						size_t depth, double weight,
						void *arg);
struct ws_error *ws_profile_visit(const struct ws_profile *profile,
				  size_t group, ws_profile_visit_fn fn,
				  void *arg);

#endif
