/*
 * ws_index_set: a set of indices into an item array the caller keeps,
 * found by hash and an equality callback (the profile's interners, a
 * tick's distinct stacks).
 */
#ifndef WS_INDEX_SET_H
#define WS_INDEX_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * A set of indices into some item array, open addressing with linear probing.
 * A slot holds the item's 32-bit hash in its upper half and index + 1 in its
 * lower half (0 = empty). The stored hash both rejects most mismatches
 * without touching the item and places the slot again on growth, so growing
 * never needs the items. Capacity is a power of two, load at most 1/2.
 * Inline: the profile looks frames, stacks, groups and entries up through
 * it for every sample, a tick its distinct stacks for every task.
 */
struct ws_index_set {
	uint64_t *slots;
	size_t capacity;
	size_t count;
};

typedef bool (*ws_index_eq_fn)(const void *key, uint32_t index);

static inline void ws_index_set_deinit(struct ws_index_set *set)
{
	free(set->slots);
}

/* Returns the slot holding a matching index, or the empty slot where it
 * belongs. The set must have a free slot (ws_index_set_reserve). */
static inline uint64_t *ws_index_set_find(const struct ws_index_set *set,
					  uint32_t hash, ws_index_eq_fn eq,
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
static inline bool ws_index_set_reserve(struct ws_index_set *set)
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

/* Empties the set, keeping its slots for the next use. */
static inline void ws_index_set_clear(struct ws_index_set *set)
{
	if (set->count)
		memset(set->slots, 0, set->capacity * sizeof(*set->slots));
	set->count = 0;
}

static inline void ws_index_set_insert(struct ws_index_set *set,
				       uint64_t *slot, uint32_t hash,
				       uint32_t index)
{
	*slot = ((uint64_t)hash << 32) | ((uint64_t)index + 1);
	set->count++;
}

#endif
