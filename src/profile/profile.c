/*
 * The profile: keeps per group either a time-ordered run-length list of
 * stacks (thread, task) or a stack -> weight aggregate (all, state, and the
 * "no thread" group), and answers the writers. Frames and stacks arrive as
 * indices from profile_intern.c, which also names the leaf frames
 * ("[running]", "[failed to sample: ...]"). Formats are the writers'.
 */
#include "ws_profile.h"

#include "profile_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ws_grow.h"
#include "ws_hash.h"

struct ws_error *ws_profile_create(enum ws_group_by group_by, double interval,
				   struct ws_profile **ret)
{
	if (!(interval > 0) || !isfinite(interval))
		return ws_error_create(WS_ERR_OTHER,
				       "profile: interval %g is not a positive number of seconds",
				       interval);
	struct ws_profile *profile = calloc(1, sizeof(*profile));
	if (!profile)
		return &ws_error_nomem;
	profile->group_by = group_by;
	profile->interval = interval;
	*ret = profile;
	return NULL;
}

void ws_profile_destroy(struct ws_profile *profile)
{
	if (!profile)
		return;
	for (size_t i = 0; i < profile->group_count; i++) {
		struct group *group = &profile->groups[i];
		free(group->name);
		free(group->stacks);
		free(group->weights);
		index_set_deinit(&group->by_stack);
	}
	free(profile->groups);
	index_set_deinit(&profile->group_set);
	free(profile->stacks);
	free(profile->stack_pool);
	index_set_deinit(&profile->stack_set);
	free(profile->frames);
	index_set_deinit(&profile->frame_set);
	profile_strings_free(profile->strings);
	free(profile->scratch_stack);
	free(profile->scratch_name);
	free(profile->title);
	free(profile);
}

/* --- groups --- */

/* Whether the group with this key sums samples by stack rather than keeping
 * time order. A time order means something only when the samples take
 * turns: one thread's, one task's. "no thread" collects the samples of every
 * task without a thread at once (1000 parked goroutines every tick), where a
 * time order would be noise and would cost an entry per sample. */
static bool group_aggregates(enum ws_group_by group_by, uint64_t key)
{
	return group_by == WS_GROUP_ALL || group_by == WS_GROUP_STATE ||
	       group_by == WS_GROUP_PROCESS ||
	       (group_by == WS_GROUP_THREAD && key == 0);
}

static uint64_t group_key(enum ws_group_by group_by,
			  const struct ws_sample *sample)
{
	switch (group_by) {
	case WS_GROUP_ALL:
		return 0;
	case WS_GROUP_THREAD:
		return (uint64_t)(unsigned)sample->thread;
	case WS_GROUP_STATE:
		/* Keyed by the name: states sharing a name share a group. */
		return (uint64_t)(uintptr_t)ws_state_name(sample->state);
	case WS_GROUP_TASK:
		/* An idle worker is not a task: its id (an OS thread id) must
		 * not fall into a task's group. */
		return (sample->state == WS_STATE_IDLE
				? sample->task_id | (UINT64_C(1) << 63)
				: sample->task_id) ^
		       ((uint64_t)(unsigned)sample->process << 40);
	case WS_GROUP_PROCESS:
		return (uint64_t)(unsigned)sample->process;
	}
	return 0;
}

static char *group_name(enum ws_group_by group_by,
			const struct ws_sample *sample)
{
	char *name = NULL;
	int n = 0;
	const char *task_name = sample->task_name;
	switch (group_by) {
	case WS_GROUP_ALL:
		return strdup("all");
	case WS_GROUP_STATE:
		return strdup(ws_state_name(sample->state));
	case WS_GROUP_THREAD:
		if (sample->thread == 0)
			return strdup("no thread");
		if (task_name)
			n = asprintf(&name, "thread %d \"%s\"", sample->thread,
				     task_name);
		else
			n = asprintf(&name, "thread %d", sample->thread);
		break;
	case WS_GROUP_TASK:
		if (sample->state == WS_STATE_IDLE)
			n = asprintf(&name, "idle worker \"%s\" thread %d",
				     task_name ? task_name : "", sample->thread);
		else if (task_name)
			n = asprintf(&name, "task %" PRIu64 " \"%s\"",
				     sample->task_id, task_name);
		else
			n = asprintf(&name, "task %" PRIu64, sample->task_id);
		break;
	case WS_GROUP_PROCESS:
		if (sample->process_name)
			n = asprintf(&name, "process %d \"%s\"", sample->process,
				     sample->process_name);
		else
			n = asprintf(&name, "process %d", sample->process);
		break;
	}
	return n < 0 ? NULL : name;
}

struct group_lookup {
	const struct ws_profile *profile;
	uint64_t key;
};

static bool group_eq(const void *key_arg, uint32_t index)
{
	const struct group_lookup *key = key_arg;
	return key->profile->groups[index].key == key->key;
}

static struct ws_error *find_group(struct ws_profile *profile,
				   const struct ws_sample *sample,
				   struct group **ret)
{
	uint64_t key = group_key(profile->group_by, sample);
	uint32_t hash = (uint32_t)(ws_hash_u64(key) >> 32);
	struct group_lookup lookup = {profile, key};
	if (!index_set_reserve(&profile->group_set))
		return &ws_error_nomem;
	uint64_t *slot = index_set_find(&profile->group_set, hash, group_eq,
					&lookup);
	struct group *group = NULL;
	if (*slot) {
		group = &profile->groups[(uint32_t)*slot - 1];
		/* A process is named after what it runs now: a child forked
		 * by a shell is "sh" until its exec. */
		if (profile->group_by == WS_GROUP_PROCESS &&
		    sample->process_name) {
			char *name = group_name(profile->group_by, sample);
			if (name && strcmp(name, group->name) != 0) {
				free(group->name);
				group->name = name;
			} else {
				free(name);
			}
		}
		/* A group first seen without a name takes the first name
		 * that shows up, then keeps it. */
		if (!group->has_task_name && sample->task_name &&
		    (profile->group_by == WS_GROUP_TASK ||
		     (profile->group_by == WS_GROUP_THREAD &&
		      sample->thread != 0))) {
			char *name = group_name(profile->group_by, sample);
			if (name) {
				free(group->name);
				group->name = name;
				group->has_task_name = true;
			}
		}
		*ret = group;
		return NULL;
	}

	if (profile->group_count >= UINT32_MAX)
		return ws_error_create(WS_ERR_OTHER, "profile: too many groups");
	if (!ws_grow((void **)&profile->groups, &profile->group_capacity,
		  profile->group_count + 1, sizeof(*profile->groups)))
		return &ws_error_nomem;
	char *name = group_name(profile->group_by, sample);
	if (!name)
		return &ws_error_nomem;
	group = &profile->groups[profile->group_count];
	*group = (struct group){
		.name = name,
		.key = key,
		.has_task_name = sample->task_name != NULL,
		.aggregated = group_aggregates(profile->group_by, key),
		.start = sample->time,
		.end = sample->time + sample->weight,
	};
	index_set_insert(&profile->group_set, slot, hash,
			 (uint32_t)profile->group_count++);
	*ret = group;
	return NULL;
}

static struct ws_error *append_entry(struct group *group, uint32_t stack,
				     double weight, size_t *ret)
{
	size_t capacity = group->capacity;
	if (!ws_grow((void **)&group->stacks, &capacity, group->count + 1,
		  sizeof(*group->stacks)))
		return &ws_error_nomem;
	capacity = group->capacity;
	if (!ws_grow((void **)&group->weights, &capacity, group->count + 1,
		  sizeof(*group->weights)))
		return &ws_error_nomem;
	group->capacity = capacity;
	group->stacks[group->count] = stack;
	group->weights[group->count] = weight;
	*ret = group->count++;
	return NULL;
}

struct entry_key {
	const struct group *group;
	uint32_t stack;
};

static bool entry_eq(const void *key_arg, uint32_t index)
{
	const struct entry_key *key = key_arg;
	return key->group->stacks[index] == key->stack;
}

static struct ws_error *group_add(struct ws_profile *profile,
				  struct group *group, uint32_t stack,
				  double weight)
{
	if (!group->aggregated) {
		/* Time order: extend the previous entry when the stack did
		 * not change, which is what a parked task does all day. */
		if (group->count && group->stacks[group->count - 1] == stack) {
			group->weights[group->count - 1] += weight;
			return NULL;
		}
		size_t index;
		return append_entry(group, stack, weight, &index);
	}

	uint32_t hash = profile->stacks[stack].hash;
	struct entry_key key = {group, stack};
	if (!index_set_reserve(&group->by_stack))
		return &ws_error_nomem;
	uint64_t *slot = index_set_find(&group->by_stack, hash, entry_eq, &key);
	if (*slot) {
		group->weights[(uint32_t)*slot - 1] += weight;
		return NULL;
	}
	size_t index;
	struct ws_error *err = append_entry(group, stack, weight, &index);
	if (err)
		return err;
	index_set_insert(&group->by_stack, slot, hash, (uint32_t)index);
	return NULL;
}

struct ws_error *ws_profile_add(struct ws_profile *profile,
				const struct ws_sample *sample)
{
	if (!isfinite(sample->weight) || sample->weight < 0 ||
	    !isfinite(sample->time))
		return ws_error_create(WS_ERR_OTHER,
				       "profile: sample of task %" PRIu64
				       " has weight %g at time %g",
				       sample->task_id, sample->weight,
				       sample->time);
	size_t depth = sample->nframes + 1;
	if (depth < sample->nframes ||
	    !ws_grow((void **)&profile->scratch_stack,
		  &profile->scratch_stack_capacity, depth,
		  sizeof(*profile->scratch_stack)))
		return &ws_error_nomem;

	/* Unwound innermost first; stored root first, leaf frame last. */
	struct ws_error *err;
	for (size_t i = 0; i < sample->nframes; i++) {
		err = profile_intern_frame(profile,
					   &sample->frames[sample->nframes - 1 - i],
					   &profile->scratch_stack[i]);
		if (err)
			return err;
	}
	err = profile_intern_leaf(profile, sample,
				  &profile->scratch_stack[depth - 1]);
	if (err)
		return err;

	uint32_t stack = 0;
	err = profile_intern_stack(profile, profile->scratch_stack, depth,
				   &stack);
	if (err)
		return err;
	struct group *group = NULL;
	err = find_group(profile, sample, &group);
	if (err)
		return err;
	err = group_add(profile, group, stack, sample->weight);
	if (err)
		return err;

	if (sample->time < group->start)
		group->start = sample->time;
	if (sample->time + sample->weight > group->end)
		group->end = sample->time + sample->weight;
	group->weight += sample->weight;
	profile->sample_count++;
	return NULL;
}

void ws_profile_set_title(struct ws_profile *profile, const char *title)
{
	free(profile->title);
	profile->title = title ? strdup(title) : NULL;
}

void ws_profile_set_duration(struct ws_profile *profile, double seconds)
{
	profile->duration = seconds;
}

/* --- read access --- */

enum ws_group_by ws_profile_group_by(const struct ws_profile *profile)
{
	return profile->group_by;
}

const char *ws_profile_title(const struct ws_profile *profile)
{
	return profile->title;
}

double ws_profile_duration(const struct ws_profile *profile)
{
	return profile->duration;
}

double ws_profile_interval(const struct ws_profile *profile)
{
	return profile->interval;
}

size_t ws_profile_sample_count(const struct ws_profile *profile)
{
	return profile->sample_count;
}

size_t ws_profile_frame_count(const struct ws_profile *profile)
{
	return profile->frame_count;
}

const struct ws_profile_frame *ws_profile_frame(const struct ws_profile *profile,
						size_t index)
{
	return index < profile->frame_count ? &profile->frames[index].frame
					    : NULL;
}

size_t ws_profile_stack_count(const struct ws_profile *profile)
{
	return profile->stack_count;
}

size_t ws_profile_group_count(const struct ws_profile *profile)
{
	return profile->group_count;
}

const char *ws_profile_group_name(const struct ws_profile *profile,
				  size_t group)
{
	return profile->groups[group].name;
}

double ws_profile_group_start(const struct ws_profile *profile, size_t group)
{
	return profile->groups[group].start;
}

double ws_profile_group_end(const struct ws_profile *profile, size_t group)
{
	return profile->groups[group].end;
}

double ws_profile_group_weight(const struct ws_profile *profile, size_t group)
{
	return profile->groups[group].weight;
}

size_t ws_profile_group_entry_count(const struct ws_profile *profile,
				    size_t group)
{
	return profile->groups[group].count;
}

struct ws_error *ws_profile_visit(const struct ws_profile *profile,
				  size_t group_index, ws_profile_visit_fn fn,
				  void *arg)
{
	const struct group *group = &profile->groups[group_index];
	for (size_t i = 0; i < group->count; i++) {
		const struct stack_record *stack =
			&profile->stacks[group->stacks[i]];
		struct ws_error *err = fn(profile->stack_pool + stack->offset,
					  stack->depth, group->weights[i], arg);
		if (err)
			return err;
	}
	return NULL;
}

struct ws_error *ws_profile_visit_aggregated(const struct ws_profile *profile,
					     size_t group_index,
					     ws_profile_visit_fn fn, void *arg)
{
	const struct group *group = &profile->groups[group_index];
	if (group->aggregated)
		return ws_profile_visit(profile, group_index, fn, arg);

	/* Sum per stack in a scratch group that aggregates, so the order of
	 * first appearance and the memory bound match the aggregated
	 * groups'. */
	struct group sums = {0};
	struct ws_error *err = NULL;
	for (size_t i = 0; i < group->count && !err; i++) {
		uint32_t stack = group->stacks[i];
		uint32_t hash = profile->stacks[stack].hash;
		struct entry_key key = {&sums, stack};
		if (!index_set_reserve(&sums.by_stack)) {
			err = &ws_error_nomem;
			break;
		}
		uint64_t *slot = index_set_find(&sums.by_stack, hash, entry_eq,
						&key);
		if (*slot) {
			sums.weights[(uint32_t)*slot - 1] += group->weights[i];
			continue;
		}
		size_t index;
		err = append_entry(&sums, stack, group->weights[i], &index);
		if (!err)
			index_set_insert(&sums.by_stack, slot, hash,
					 (uint32_t)index);
	}
	for (size_t i = 0; i < sums.count && !err; i++) {
		const struct stack_record *stack =
			&profile->stacks[sums.stacks[i]];
		err = fn(profile->stack_pool + stack->offset, stack->depth,
			 sums.weights[i], arg);
	}
	free(sums.stacks);
	free(sums.weights);
	index_set_deinit(&sums.by_stack);
	return err;
}
