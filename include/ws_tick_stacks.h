/*
 * ws_tick_stacks: within one tick, the frames of each distinct unwound
 * stack, built once. Tasks of a large registry park in a few places (10k
 * goroutines of a server in a few dozen stacks; a pool of 512 threads in
 * one): a task whose return addresses (and where its unwind stopped) equal
 * an earlier task's of the same tick shares that task's range of
 * ws_tick.frames instead of naming its pcs and copying their frames again,
 * so a tick's cost per task does not grow with its stack's depth once the
 * stack was seen. Cleared at every tick, and when the target's modules
 * change within one (names may change).
 */
#ifndef WS_TICK_STACKS_H
#define WS_TICK_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ws_index_set.h"
#include "ws_unwind.h"

struct ws_tick_stacks {
	struct tick_stack *stacks;  /* in order of addition */
	size_t nstacks, stacks_cap;
	struct ws_pc *pcs;          /* every stack's pcs, back to back */
	size_t npcs, pcs_cap;
	struct ws_index_set index;  /* of stacks, by hash */
};

void ws_tick_stacks_init(struct ws_tick_stacks *t);
void ws_tick_stacks_deinit(struct ws_tick_stacks *t);
void ws_tick_stacks_clear(struct ws_tick_stacks *t);

/* The frame range of the stack (pcs[0..npcs), stop_reason compared by
 * pointer: the unwinder's static strings) added this tick: true with
 * *first_frame and *nframes set. Either way *hash is the stack's hash, for
 * ws_tick_stacks_add. O(npcs). */
bool ws_tick_stacks_find(const struct ws_tick_stacks *t,
			 const struct ws_pc *pcs, size_t npcs,
			 const char *stop_reason, uint64_t *hash,
			 size_t *first_frame, size_t *nframes);

/* Remembers the frame range built for a stack ws_tick_stacks_find did not
 * find. Out of memory it remembers nothing (the next equal stack is built
 * again). */
void ws_tick_stacks_add(struct ws_tick_stacks *t, uint64_t hash,
			const struct ws_pc *pcs, size_t npcs,
			const char *stop_reason, size_t first_frame,
			size_t nframes);

#endif
