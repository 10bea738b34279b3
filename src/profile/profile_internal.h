/*
 * Private to profile*.c: the profile's layout and the index set its tables
 * share. profile_intern.c turns frames and stacks into indices,
 * profile.c keeps groups and their entries and answers the writers.
 * Nothing outside src/profile/profile*.c includes this.
 */
#ifndef WS_PROFILE_INTERNAL_H
#define WS_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ws_profile.h"

/*
 * A set of indices into some item array, open addressing with linear probing.
 * A slot holds the item's 32-bit hash in its upper half and index + 1 in its
 * lower half (0 = empty). The stored hash both rejects most mismatches
 * without touching the item and places the slot again on growth, so growing
 * never needs the items. Capacity is a power of two, load at most 1/2.
 * Inline: both files look frames, stacks, groups or entries up through it
 * for every sample.
 */
struct index_set {
	uint64_t *slots;
	size_t capacity;
	size_t count;
};

typedef bool (*index_eq_fn)(const void *key, uint32_t index);

static inline void index_set_deinit(struct index_set *set)
{
	free(set->slots);
}

/* Returns the slot holding a matching index, or the empty slot where it
 * belongs. The set must have a free slot (index_set_reserve). */
static inline uint64_t *index_set_find(const struct index_set *set,
				       uint32_t hash, index_eq_fn eq,
				       const void *key)
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
static inline bool index_set_reserve(struct index_set *set)
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

static inline void index_set_insert(struct index_set *set, uint64_t *slot,
				    uint32_t hash, uint32_t index)
{
	*slot = ((uint64_t)hash << 32) | ((uint64_t)index + 1);
	set->count++;
}

struct string_chunk;

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

/* --- profile_intern.c --- */

/* Interns one unwound frame: its function, else "module+0xOFFSET", else
 * "0xADDRESS" (ws_frame_display_name), with its file and line. One hash
 * lookup; allocates only for a new frame. */
struct ws_error *profile_intern_frame(struct ws_profile *profile,
				      const struct ws_frame *frame,
				      uint32_t *ret);

/* Interns the sample's leaf frame: "[failed to sample: ERROR]" when it
 * failed, else its state ("[waiting: futex]", "[idle worker]", ...); the
 * wait reason is shown for waiting and syscall states only. */
struct ws_error *profile_intern_leaf(struct ws_profile *profile,
				     const struct ws_sample *sample,
				     uint32_t *ret);

/* Interns a stack of frame indices, root first. */
struct ws_error *profile_intern_stack(struct ws_profile *profile,
				      const uint32_t *frames, size_t depth,
				      uint32_t *ret);

/* Frees the profile's string storage. */
void profile_strings_free(struct string_chunk *chunks);

#endif
