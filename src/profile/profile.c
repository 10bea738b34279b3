/*
 * The profile: interns frames by (name, file, line) and stacks by their frame
 * indices, and keeps per group either a time-ordered run-length list of
 * stacks (thread, task) or a stack -> weight aggregate (all, state, and the
 * "no thread" group). Naming
 * of leaf frames ("[running]", "[failed to sample: ...]") lives here too, so
 * every writer shows the same frames. Formats are the writers' business.
 */
#include "ws_profile.h"
#include "ws_grow.h"
#include "ws_hash.h"
#include "ws_symbols.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * A set of indices into some item array, open addressing with linear probing.
 * A slot holds the item's 32-bit hash in its upper half and index + 1 in its
 * lower half (0 = empty). The stored hash both rejects most mismatches
 * without touching the item and places the slot again on growth, so growing
 * never needs the items. Capacity is a power of two, load at most 1/2.
 */
struct index_set {
	uint64_t *slots;
	size_t capacity;
	size_t count;
};

typedef bool (*index_eq_fn)(const void *key, uint32_t index);

static void index_set_deinit(struct index_set *set)
{
	free(set->slots);
}

/* Returns the slot holding a matching index, or the empty slot where it
 * belongs. The set must have a free slot (index_set_reserve). */
static uint64_t *index_set_find(const struct index_set *set, uint32_t hash,
				index_eq_fn eq, const void *key)
{
	size_t mask = set->capacity - 1;
	for (size_t pos = hash & mask;; pos = (pos + 1) & mask) {
		uint64_t slot = set->slots[pos];
		if (!slot)
			return &set->slots[pos];
		if ((uint32_t)(slot >> 32) == hash &&
		    eq(key, (uint32_t)slot - 1))
			return &set->slots[pos];
	}
}

/* Makes room for one more index; false when out of memory. */
static bool index_set_reserve(struct index_set *set)
{
	if ((set->count + 1) * 2 <= set->capacity)
		return true;
	size_t capacity = set->capacity ? set->capacity * 2 : 64;
	if (capacity > ((size_t)1 << 32))
		return false; /* the stored 32-bit hash could not place slots */
	uint64_t *slots = calloc(capacity, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t i = 0; i < set->capacity; i++) {
		uint64_t slot = set->slots[i];
		if (!slot)
			continue;
		size_t pos = (slot >> 32) & (capacity - 1);
		while (slots[pos])
			pos = (pos + 1) & (capacity - 1);
		slots[pos] = slot;
	}
	free(set->slots);
	set->slots = slots;
	set->capacity = capacity;
	return true;
}

static void index_set_insert(struct index_set *set, uint64_t *slot,
			     uint32_t hash, uint32_t index)
{
	*slot = ((uint64_t)hash << 32) | ((uint64_t)index + 1);
	set->count++;
}

/* Strings the profile keeps (frame names, files) live in large chunks: one
 * allocation per few thousand strings instead of one each, and one free. */
struct string_chunk {
	struct string_chunk *next;
	size_t used, size;
	char data[];
};

enum { STRING_CHUNK_SIZE = 64 * 1024 };

static char *strings_copy(struct string_chunk **chunks, const char *s,
			  size_t len)
{
	struct string_chunk *chunk = *chunks;
	if (!chunk || chunk->size - chunk->used < len + 1) {
		size_t size = len + 1 > STRING_CHUNK_SIZE ? len + 1
							  : STRING_CHUNK_SIZE;
		chunk = malloc(sizeof(*chunk) + size);
		if (!chunk)
			return NULL;
		chunk->used = 0;
		chunk->size = size;
		chunk->next = *chunks;
		*chunks = chunk;
	}
	char *copy = chunk->data + chunk->used;
	memcpy(copy, s, len);
	copy[len] = '\0';
	chunk->used += len + 1;
	return copy;
}

/* The public frame plus what makes comparing cheap. */
struct frame_record {
	struct ws_profile_frame frame;
	uint32_t name_len;
};

struct stack_record {
	size_t offset;  /* into stack_pool */
	uint32_t depth;
	uint32_t hash;
};

/* One profile group. Entries are parallel arrays (stack id, weight) so an
 * entry costs 12 bytes. */
struct group {
	char *name;
	uint64_t key;
	bool has_task_name;  /* thread groups: name already carries one */
	bool aggregated;     /* entries unique by stack, see group_aggregates */
	double start, end, weight;
	uint32_t *stacks;
	double *weights;
	size_t count, capacity;
	struct index_set by_stack;  /* aggregated groups: entries by stack */
};

struct ws_profile {
	enum ws_group_by group_by;
	double interval;
	double duration;
	char *title;
	size_t sample_count;

	struct string_chunk *strings;

	struct frame_record *frames;
	size_t frame_count, frame_capacity;
	struct index_set frame_set;

	uint32_t *stack_pool;
	size_t pool_used, pool_capacity;
	struct stack_record *stacks;
	size_t stack_count, stack_capacity;
	struct index_set stack_set;

	struct group *groups;
	size_t group_count, group_capacity;
	struct index_set group_set;

	/* Scratch for ws_profile_add: the sample's frame indices and the text
	 * of generated frame names; reused so adding allocates nothing once
	 * the profile has seen its stacks. */
	uint32_t *scratch_stack;
	size_t scratch_stack_capacity;
	char *scratch_name;
	size_t scratch_name_capacity;
};

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
	while (profile->strings) {
		struct string_chunk *next = profile->strings->next;
		free(profile->strings);
		profile->strings = next;
	}
	free(profile->scratch_stack);
	free(profile->scratch_name);
	free(profile->title);
	free(profile);
}

/* --- frames --- */

struct frame_key {
	const struct ws_profile *profile;
	const char *name;
	size_t name_len;
	const char *file;  /* NULL if unknown */
	int line;
};

static bool frame_eq(const void *key_arg, uint32_t index)
{
	const struct frame_key *key = key_arg;
	const struct frame_record *record = &key->profile->frames[index];
	if (record->name_len != key->name_len ||
	    record->frame.line != key->line ||
	    memcmp(record->frame.name, key->name, key->name_len) != 0)
		return false;
	if (!record->frame.file || !key->file)
		return record->frame.file == key->file;
	return strcmp(record->frame.file, key->file) == 0;
}

/* Interns (name[0..name_len), file, line); an empty file is unknown. The
 * hash leaves the file out: one name on one line in several files is rare,
 * and hashing the path too would add a second pass over bytes per frame. */
static struct ws_error *intern_frame(struct ws_profile *profile,
				     const char *name, size_t name_len,
				     const char *file, int line, uint32_t *ret)
{
	if (file && !*file)
		file = NULL;
	if (line < 0)
		line = 0;
	if (name_len > UINT32_MAX)
		name_len = UINT32_MAX; /* a 4 GiB name: keep a prefix */
	uint32_t hash = (uint32_t)(ws_hash_bytes(name, name_len,
						 (uint64_t)(unsigned)line) >> 32);

	struct frame_key key = {profile, name, name_len, file, line};
	if (!index_set_reserve(&profile->frame_set))
		return &ws_error_nomem;
	uint64_t *slot = index_set_find(&profile->frame_set, hash, frame_eq,
					&key);
	if (*slot) {
		*ret = (uint32_t)*slot - 1;
		return NULL;
	}

	if (profile->frame_count >= UINT32_MAX)
		return ws_error_create(WS_ERR_OTHER, "profile: too many frames");
	if (!ws_grow((void **)&profile->frames, &profile->frame_capacity,
		  profile->frame_count + 1, sizeof(*profile->frames)))
		return &ws_error_nomem;

	struct frame_record *record = &profile->frames[profile->frame_count];
	record->frame.name = strings_copy(&profile->strings, name, name_len);
	record->frame.file = file ? strings_copy(&profile->strings, file,
						 strlen(file))
				  : NULL;
	record->frame.line = line;
	record->name_len = (uint32_t)name_len;
	if (!record->frame.name || (file && !record->frame.file))
		return &ws_error_nomem;
	index_set_insert(&profile->frame_set, slot, hash,
			 (uint32_t)profile->frame_count);
	*ret = (uint32_t)profile->frame_count++;
	return NULL;
}

/* Makes the name scratch buffer hold at least `size` bytes. */
static bool reserve_name(struct ws_profile *profile, size_t size)
{
	return ws_grow((void **)&profile->scratch_name,
		    &profile->scratch_name_capacity, size, 1);
}

static struct ws_error *intern_unwound_frame(struct ws_profile *profile,
					     const struct ws_frame *frame,
					     uint32_t *ret)
{
	if (frame->function && *frame->function)
		return intern_frame(profile, frame->function,
				    strlen(frame->function), frame->file,
				    frame->line, ret);
	/* Unnamed (an empty name counts as none): "module+0xOFFSET" or
	 * "0xADDRESS", formatted by the one function that defines how
	 * frames are shown. */
	struct ws_frame unnamed = *frame;
	unnamed.function = NULL;
	size_t module_len = frame->module ? strlen(frame->module) : 0;
	if (!reserve_name(profile, module_len + 32))
		return &ws_error_nomem;
	ws_frame_display_name(&unnamed, profile->scratch_name,
			      profile->scratch_name_capacity);
	return intern_frame(profile, profile->scratch_name,
			    strlen(profile->scratch_name), frame->file,
			    frame->line, ret);
}

/* Writes "[PREFIX: DETAIL]" ("[PREFIX]" without detail) into the scratch
 * name; returns its length or 0 when out of memory. */
static size_t leaf_name(struct ws_profile *profile, const char *prefix,
			const char *detail)
{
	size_t prefix_len = strlen(prefix);
	size_t detail_len = detail ? strlen(detail) : 0;
	if (!reserve_name(profile, prefix_len + detail_len + 5))
		return 0;
	char *p = profile->scratch_name;
	*p++ = '[';
	memcpy(p, prefix, prefix_len);
	p += prefix_len;
	if (detail_len) {
		memcpy(p, ": ", 2);
		memcpy(p + 2, detail, detail_len);
		p += 2 + detail_len;
	}
	*p++ = ']';
	*p = '\0';
	return (size_t)(p - profile->scratch_name);
}

/* The leaf frame: the failure when the sample failed, else the state. A
 * wait reason is shown for waiting and syscall states only: adapters of
 * runtimes that keep a stale reason in other states should not have it
 * appear under running code. */
static struct ws_error *intern_leaf(struct ws_profile *profile,
				    const struct ws_sample *sample,
				    uint32_t *ret)
{
	size_t len;
	if (sample->error) {
		len = leaf_name(profile, "failed to sample", sample->error);
	} else if (sample->state == WS_STATE_IDLE) {
		len = leaf_name(profile, "idle worker", NULL);
	} else {
		const char *reason = NULL;
		if (sample->state == WS_STATE_WAITING ||
		    sample->state == WS_STATE_SYSCALL)
			reason = sample->wait_reason;
		len = leaf_name(profile, ws_state_name(sample->state), reason);
	}
	if (!len)
		return &ws_error_nomem;
	return intern_frame(profile, profile->scratch_name, len, NULL, 0, ret);
}

/* --- stacks --- */

struct stack_key {
	const struct ws_profile *profile;
	const uint32_t *frames;
	size_t depth;
};

static bool stack_eq(const void *key_arg, uint32_t index)
{
	const struct stack_key *key = key_arg;
	const struct stack_record *stack = &key->profile->stacks[index];
	return stack->depth == key->depth &&
	       memcmp(key->profile->stack_pool + stack->offset, key->frames,
		      key->depth * sizeof(*key->frames)) == 0;
}

static struct ws_error *intern_stack(struct ws_profile *profile,
				     const uint32_t *frames, size_t depth,
				     uint32_t *ret)
{
	if (depth > UINT32_MAX)
		return ws_error_create(WS_ERR_OTHER, "profile: stack too deep");
	uint32_t hash = (uint32_t)(ws_hash_bytes(frames,
						 depth * sizeof(*frames), 0) >> 32);
	struct stack_key key = {profile, frames, depth};
	if (!index_set_reserve(&profile->stack_set))
		return &ws_error_nomem;
	uint64_t *slot = index_set_find(&profile->stack_set, hash, stack_eq,
					&key);
	if (*slot) {
		*ret = (uint32_t)*slot - 1;
		return NULL;
	}

	if (profile->stack_count >= UINT32_MAX)
		return ws_error_create(WS_ERR_OTHER, "profile: too many stacks");
	if (!ws_grow((void **)&profile->stack_pool, &profile->pool_capacity,
		  profile->pool_used + depth, sizeof(*profile->stack_pool)) ||
	    !ws_grow((void **)&profile->stacks, &profile->stack_capacity,
		  profile->stack_count + 1, sizeof(*profile->stacks)))
		return &ws_error_nomem;
	memcpy(profile->stack_pool + profile->pool_used, frames,
	       depth * sizeof(*frames));
	profile->stacks[profile->stack_count] = (struct stack_record){
		.offset = profile->pool_used,
		.depth = (uint32_t)depth,
		.hash = hash,
	};
	profile->pool_used += depth;
	index_set_insert(&profile->stack_set, slot, hash,
			 (uint32_t)profile->stack_count);
	*ret = (uint32_t)profile->stack_count++;
	return NULL;
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
		return sample->state == WS_STATE_IDLE
			       ? sample->task_id | (UINT64_C(1) << 63)
			       : sample->task_id;
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
		err = intern_unwound_frame(profile,
					   &sample->frames[sample->nframes - 1 - i],
					   &profile->scratch_stack[i]);
		if (err)
			return err;
	}
	err = intern_leaf(profile, sample, &profile->scratch_stack[depth - 1]);
	if (err)
		return err;

	uint32_t stack = 0;
	err = intern_stack(profile, profile->scratch_stack, depth, &stack);
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
