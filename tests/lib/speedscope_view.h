/*
 * speedscope_view: the one reader of wallspy's speedscope files in the
 * tests. ss_load checks what every consumer of the file relies on (the
 * format as wallspy promises it; speedscope's own schema is checked by
 * tools/validate-speedscope in test_speedscope) and returns a view whose
 * samples the rest walks root first. Trees are freed by e2e_cleanup.
 */
#ifndef SPEEDSCOPE_VIEW_H
#define SPEEDSCOPE_VIEW_H

#include <stdbool.h>

#include <cJSON.h>

struct ss_view {
	const cJSON *root;
	const cJSON *frames;     /* shared.frames */
	int nframes;
	const cJSON *profiles;   /* one per group */
};

/* Loads the speedscope file at path and asserts: the $schema URL, exporter
 * "wallspy@VERSION", frames with a string name (a string file and an
 * integer line when present), at least one profile, each "sampled" in
 * "seconds" with a name and startValue <= endValue, as many weights as
 * samples, every sample an array of integer frame indices in range —
 * non-empty, but for the gaps of a thread's or task's time order (time
 * it was not observed) — every weight a positive number. */
struct ss_view ss_load(const char *path);

/* Frame i of a sample, root first; negative i counts from the leaf (-1:
 * the leaf). "" past either end, so it compares with strcmp safely. */
const char *ss_frame_at(const struct ss_view *v, const cJSON *sample, int i);

/* Number of frames of a sample (the state leaf included). */
int ss_depth(const cJSON *sample);

/* Index (root first) of the first frame named exactly fn, or -1. */
int ss_find(const struct ss_view *v, const cJSON *sample, const char *fn);

/* Whether a frame of the sample is named exactly fn. */
bool ss_has(const struct ss_view *v, const cJSON *sample, const char *fn);

/* Whether any sample of any profile has a frame named exactly fn. */
bool ss_any_has(const struct ss_view *v, const char *fn);

/* "root;...;leaf" of a sample, for messages: a static buffer, valid until
 * the next call. */
const char *ss_stack_text(const struct ss_view *v, const cJSON *sample);

/* The name of a profile (a group: "thread TID \"NAME\"", "task ID ...",
 * a state, ...). */
const char *ss_profile_name(const cJSON *profile);

/* Weight of sample i of a profile, and the sum of them all but the gaps
 * (the time observed). */
double ss_weight(const cJSON *profile, int i);
double ss_profile_weight(const cJSON *profile);

/* The one profile whose name matches the POSIX extended regex, or NULL;
 * fails the test when two match. */
const cJSON *ss_profile_matching(const struct ss_view *v, const char *regex);

/* The task id of a --group-by task profile ("task ID ..."), or -1. */
long ss_task_id(const cJSON *profile);

/* Visits every sample of every profile of view v: `profile`, `sample` (its
 * frame indices, root first) and the sample's weight `w` (a double),
 * walking samples and weights in step; gaps (empty samples) are skipped.
 * `continue` moves to the next sample. */
#define SS_FOR_EACH_SAMPLE(v, profile, sample, w)                            \
	for (const cJSON *profile = (v)->profiles->child; profile;            \
	     profile = profile->next)                                         \
		for (const cJSON *sample = cJSON_GetObjectItem(profile,           \
							       "samples")->child, \
				 *w##_item = cJSON_GetObjectItem(profile,          \
							       "weights")->child; \
		     sample && w##_item;                                          \
		     sample = sample->next, w##_item = w##_item->next)            \
			for (double w = w##_item->valuedouble,                    \
				    w##_once = sample->child != NULL;             \
			     w##_once; w##_once = 0)

/* A leaf "[failed to sample: ...]". */
bool ss_is_failed_leaf(const char *leaf);

/* A leaf wallspy(1) lists as a state: [running], [runnable], [syscall],
 * [waiting: R], [syscall: R], [failed to sample: R], and [not started]. */
bool ss_is_state_leaf(const char *leaf);

/* Whether a weight is a whole number (>= 1) of ticks at rate_hz. */
bool ss_whole_ticks(double weight, double rate_hz);

#endif
