/*
 * The profile: keeps per group either a time-ordered run-length list of
 * (stack, context) entries with gaps where the task was not observed
 * (thread, task) or a (stack, context) -> weight aggregate (all, state, and
 * the "no thread" group). Answering the writers (by display frame with the
 * state as leaf, or by line with the context) is profile_visit.c's. Lines,
 * frames, contexts and stacks arrive as indices from profile_intern.c,
 * which also names the leaf frames ("[running]", "[failed to sample:
 * ...]"). Formats are the writers'.
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

static void group_entries_free(struct group *group)
{
	free(group->stacks);
	free(group->contexts);
	free(group->counts);
	free(group->observed);
	free(group->merged);
	ws_index_set_deinit(&group->by_stack);
}

void ws_profile_destroy(struct ws_profile *profile)
{
	if (!profile)
		return;
	for (size_t i = 0; i < profile->group_count; i++) {
		struct group *group = &profile->groups[i];
		free(group->name);
		group_entries_free(group);
	}
	free(profile->groups);
	free(profile->order);
	ws_index_set_deinit(&profile->group_set);
	free(profile->stacks);
	free(profile->stack_pool);
	ws_index_set_deinit(&profile->stack_set);
	free(profile->lines);
	ws_index_set_deinit(&profile->line_set);
	free(profile->frames);
	ws_index_set_deinit(&profile->frame_set);
	ws_index_set_deinit(&profile->name_set);
	free(profile->contexts);
	ws_index_set_deinit(&profile->context_set);
	free(profile->modules);
	profile_strings_free(profile->strings);
	free(profile->scratch_stack);
	free(profile->scratch_name);
	free(profile->title);
	free(profile->runtime);
	free(profile->pprof_hidden_root);
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
	       group_by == WS_GROUP_LABEL || group_by == WS_GROUP_PROCESS ||
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
	case WS_GROUP_LABEL: {
		/* Keyed by the name's 64-bit hash. */
		const char *label = sample->group_label ? sample->group_label : "";
		return ws_hash_bytes(label, strlen(label), 0);
	}
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
		return strdup("all tasks \u2014 task-seconds");
	case WS_GROUP_STATE:
		n = asprintf(&name, "%s \u2014 task-seconds",
			     ws_state_name(sample->state));
		break;
	case WS_GROUP_LABEL:
		n = asprintf(&name, "%s \u2014 task-seconds",
			     sample->group_label ? sample->group_label : "");
		break;
	case WS_GROUP_THREAD:
		if (sample->thread == 0)
			return strdup("no thread \u2014 task-seconds");
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
	if (!ws_index_set_reserve(&profile->group_set))
		return &ws_error_nomem;
	uint64_t *slot = ws_index_set_find(&profile->group_set, hash, group_eq,
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
		/* The process's own main thread: its thread's group, or the
		 * task that is that thread (not a goroutine whose id happens
		 * to equal the pid). */
		.main_thread = profile->pid > 0 && sample->thread == profile->pid &&
			       (profile->group_by == WS_GROUP_THREAD ||
				sample->task_id == (uint64_t)profile->pid),
		.start = sample->time,
		.end = sample->time,
		.cursor = sample->time,
	};
	ws_index_set_insert(&profile->group_set, slot, hash,
			    (uint32_t)profile->group_count++);
	profile->order_count = 0; /* the order is built again on read */
	*ret = group;
	return NULL;
}

/* Appends an entry (stack, context) with its first count and weights. */
static struct ws_error *append_entry(struct group *group, uint32_t stack,
				     uint32_t context, uint32_t count,
				     double observed, double merged,
				     size_t *ret)
{
	size_t n = group->count + 1;
	size_t capacity = group->capacity;
	if (n > capacity) {
		capacity = capacity ? capacity * 2 : 16;
		void *p;
#define GROW(field)                                                        \
		p = realloc(group->field, capacity * sizeof(*group->field)); \
		if (!p)                                                      \
			return &ws_error_nomem;                              \
		group->field = p;
		GROW(stacks) GROW(contexts) GROW(counts) GROW(observed)
		GROW(merged)
#undef GROW
		group->capacity = capacity;
	}
	size_t i = group->count++;
	group->stacks[i] = stack;
	group->contexts[i] = context;
	group->counts[i] = count;
	group->observed[i] = observed;
	group->merged[i] = merged;
	*ret = i;
	return NULL;
}

struct entry_key {
	const struct group *group;
	uint32_t stack, context;
};

static bool entry_eq(const void *key_arg, uint32_t index)
{
	const struct entry_key *key = key_arg;
	return key->group->stacks[index] == key->stack &&
	       key->group->contexts[index] == key->context;
}

static uint32_t entry_hash(const struct ws_profile *profile, uint32_t stack,
			   uint32_t context)
{
	return profile->stacks[stack].hash ^
	       (profile->contexts[context].hash * 0x9e3779b1u);
}

static void add_weights(struct group *group, size_t i, double observed,
			double merged)
{
	if (group->counts[i] < UINT32_MAX)
		group->counts[i]++;
	group->observed[i] += observed;
	group->merged[i] += merged;
}

/* Adds a sample of `observed` seconds at `time` (merged: observed times
 * its scale). A time-ordered group first marks the time since its last
 * sample that no sample covered, in whole ticks, as a gap: a task sampled
 * once in 30 ticks shows 30 ticks apart, not stretched over them. */
static struct ws_error *group_add(struct ws_profile *profile,
				  struct group *group, uint32_t stack,
				  uint32_t context, double time,
				  double observed, double merged)
{
	size_t index;
	if (!group->aggregated) {
		/* Jitter moves a tick by up to a tenth of an interval: half
		 * an interval unaccounted for is a tick not observed. */
		double gap = time - group->cursor;
		if (group->count && gap >= 0.5 * profile->interval) {
			double ticks = floor(gap / profile->interval + 0.5);
			double length = ticks * profile->interval;
			if (group->stacks[group->count - 1] == GAP_STACK) {
				group->observed[group->count - 1] += length;
			} else {
				struct ws_error *err = append_entry(
					group, GAP_STACK, 0, 0, length, 0,
					&index);
				if (err)
					return err;
			}
			group->cursor += length;
		}
		group->cursor += observed;
		/* Time order: extend the previous entry when nothing
		 * changed, which is what a parked task does all day. */
		if (group->count &&
		    group->stacks[group->count - 1] == stack &&
		    group->contexts[group->count - 1] == context) {
			add_weights(group, group->count - 1, observed, merged);
			return NULL;
		}
		return append_entry(group, stack, context, 1, observed, merged,
				    &index);
	}

	uint32_t hash = entry_hash(profile, stack, context);
	struct entry_key key = {group, stack, context};
	if (!ws_index_set_reserve(&group->by_stack))
		return &ws_error_nomem;
	uint64_t *slot = ws_index_set_find(&group->by_stack, hash, entry_eq,
					   &key);
	if (*slot) {
		add_weights(group, (uint32_t)*slot - 1, observed, merged);
		return NULL;
	}
	struct ws_error *err = append_entry(group, stack, context, 1, observed,
					    merged, &index);
	if (err)
		return err;
	ws_index_set_insert(&group->by_stack, slot, hash, (uint32_t)index);
	return NULL;
}

struct ws_error *ws_profile_add(struct ws_profile *profile,
				const struct ws_sample *sample)
{
	double scale = sample->scale > 0 ? sample->scale : 1;
	if (!isfinite(sample->weight) || sample->weight < 0 ||
	    !isfinite(sample->time) || !isfinite(scale))
		return ws_error_create(WS_ERR_OTHER,
				       "profile: sample of task %" PRIu64
				       " has weight %g (scale %g) at time %g",
				       sample->task_id, sample->weight,
				       sample->scale, sample->time);
	size_t depth = sample->nframes;
	if (!ws_grow((void **)&profile->scratch_stack,
		  &profile->scratch_stack_capacity, depth + 1,
		  sizeof(*profile->scratch_stack)))
		return &ws_error_nomem;

	/* Unwound innermost first; stored root first. */
	struct ws_error *err;
	for (size_t i = 0; i < sample->nframes; i++) {
		err = profile_intern_frame(profile,
					   &sample->frames[sample->nframes - 1 - i],
					   &profile->scratch_stack[i]);
		if (err)
			return err;
	}
	uint32_t context = 0;
	err = profile_intern_context(profile, sample, &context);
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
	double merged = sample->weight * scale;
	err = group_add(profile, group, stack, context, sample->time,
			sample->weight, merged);
	if (err)
		return err;

	double weight = group->aggregated ? merged : sample->weight;
	if (sample->time < group->start)
		group->start = sample->time;
	double end = group->aggregated ? sample->time + sample->weight
				       : group->cursor;
	if (end > group->end)
		group->end = end;
	group->weight += weight;
	profile->sample_count++;
	return NULL;
}

void ws_profile_set_frame_key(struct ws_profile *profile, enum ws_frame_key key)
{
	if (profile->line_count == 0)
		profile->frame_key = key;
}

void ws_profile_set_start_time(struct ws_profile *profile, uint64_t unix_ns)
{
	profile->start_unix_ns = unix_ns;
}

uint64_t ws_profile_start_time(const struct ws_profile *profile)
{
	return profile->start_unix_ns;
}

void ws_profile_set_process(struct ws_profile *profile, int pid)
{
	profile->pid = pid;
	profile->order_count = 0;
}

void ws_profile_set_runtime(struct ws_profile *profile, const char *runtime)
{
	free(profile->runtime);
	profile->runtime = runtime ? strdup(runtime) : NULL;
}

const char *ws_profile_runtime(const struct ws_profile *profile)
{
	return profile->runtime;
}

void ws_profile_set_pprof_hidden_root(struct ws_profile *profile,
				      const char *function)
{
	free(profile->pprof_hidden_root);
	profile->pprof_hidden_root = function ? strdup(function) : NULL;
}

const char *ws_profile_pprof_hidden_root(const struct ws_profile *profile)
{
	return profile->pprof_hidden_root;
}

struct ws_error *ws_profile_add_module(struct ws_profile *profile,
				       const struct ws_profile_module *module)
{
	if (!ws_grow((void **)&profile->modules, &profile->module_capacity,
		     profile->module_count + 1, sizeof(*profile->modules)))
		return &ws_error_nomem;
	bool nomem = false;
	struct ws_profile_module copy = *module;
#define COPY(s)                                                             \
	if (s && !(s = profile_strings_copy(profile, s, strlen(s))))        \
		nomem = true;
	COPY(copy.name) COPY(copy.path) COPY(copy.build_id)
#undef COPY
	if (nomem)
		return &ws_error_nomem;
	profile->modules[profile->module_count++].module = copy;
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
