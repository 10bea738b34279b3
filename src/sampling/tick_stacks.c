/*
 * The distinct stacks of one tick and their frame ranges (see
 * ws_tick_stacks.h): a table of stacks, their pcs copied into one array,
 * and an open-addressing index by hash, all kept across ticks and emptied
 * by ws_tick_stacks_clear (no allocation once a tick of the same shape has
 * been seen).
 */
#include "ws_tick_stacks.h"

#include <stdlib.h>
#include <string.h>

#include "ws_grow.h"
#include "ws_hash.h"

struct tick_stack {
	uint64_t hash;
	size_t pcs_start, npcs;
	const char *stop_reason;
	size_t first_frame, nframes;
};

void ws_tick_stacks_init(struct ws_tick_stacks *t)
{
	memset(t, 0, sizeof(*t));
}

void ws_tick_stacks_deinit(struct ws_tick_stacks *t)
{
	free(t->stacks);
	free(t->pcs);
	free(t->index);
	memset(t, 0, sizeof(*t));
}

void ws_tick_stacks_clear(struct ws_tick_stacks *t)
{
	if (t->nstacks && t->index)
		memset(t->index, 0, t->index_size * sizeof(*t->index));
	t->nstacks = 0;
	t->npcs = 0;
}

static uint64_t stack_hash(const struct ws_pc *pcs, size_t npcs,
			   const char *stop_reason)
{
	uint64_t h = ws_hash_u64((uint64_t)(uintptr_t)stop_reason ^ npcs);
	for (size_t k = 0; k < npcs; k++)
		h = ws_hash_fold(h ^ pcs[k].pc,
				 UINT64_C(0x9e3779b97f4a7c15) +
					 pcs[k].is_return_address);
	return h ? h : 1;
}

static bool same_stack(const struct ws_tick_stacks *t,
		       const struct tick_stack *st, uint64_t hash,
		       const struct ws_pc *pcs, size_t npcs,
		       const char *stop_reason)
{
	if (st->hash != hash || st->npcs != npcs ||
	    st->stop_reason != stop_reason)
		return false;
	const struct ws_pc *mine = t->pcs + st->pcs_start;
	for (size_t k = 0; k < npcs; k++)
		if (mine[k].pc != pcs[k].pc ||
		    mine[k].is_return_address != pcs[k].is_return_address)
			return false;
	return true;
}

bool ws_tick_stacks_find(const struct ws_tick_stacks *t,
			 const struct ws_pc *pcs, size_t npcs,
			 const char *stop_reason, uint64_t *hash,
			 size_t *first_frame, size_t *nframes)
{
	*hash = stack_hash(pcs, npcs, stop_reason);
	if (!t->index_size)
		return false;
	size_t mask = t->index_size - 1;
	for (size_t i = (size_t)*hash & mask; t->index[i]; i = (i + 1) & mask) {
		const struct tick_stack *st = &t->stacks[t->index[i] - 1];
		if (same_stack(t, st, *hash, pcs, npcs, stop_reason)) {
			*first_frame = st->first_frame;
			*nframes = st->nframes;
			return true;
		}
	}
	return false;
}

/* Keeps the index at most half full; false when out of memory. */
static bool reserve_index(struct ws_tick_stacks *t)
{
	if ((t->nstacks + 1) * 2 <= t->index_size)
		return true;
	size_t size = t->index_size ? t->index_size * 2 : 1024;
	uint32_t *index = calloc(size, sizeof(*index));
	if (!index)
		return false;
	for (size_t n = 0; n < t->nstacks; n++) {
		size_t i = (size_t)t->stacks[n].hash & (size - 1);
		while (index[i])
			i = (i + 1) & (size - 1);
		index[i] = (uint32_t)(n + 1);
	}
	free(t->index);
	t->index = index;
	t->index_size = size;
	return true;
}

void ws_tick_stacks_add(struct ws_tick_stacks *t, uint64_t hash,
			const struct ws_pc *pcs, size_t npcs,
			const char *stop_reason, size_t first_frame,
			size_t nframes)
{
	if (t->nstacks >= UINT32_MAX - 1 || !reserve_index(t) ||
	    !ws_grow((void **)&t->stacks, &t->stacks_cap, t->nstacks + 1,
		     sizeof(*t->stacks)) ||
	    !ws_grow((void **)&t->pcs, &t->pcs_cap, t->npcs + npcs,
		     sizeof(*t->pcs)))
		return;
	memcpy(t->pcs + t->npcs, pcs, npcs * sizeof(*pcs));
	t->stacks[t->nstacks] = (struct tick_stack){
		.hash = hash, .pcs_start = t->npcs, .npcs = npcs,
		.stop_reason = stop_reason, .first_frame = first_frame,
		.nframes = nframes};
	size_t mask = t->index_size - 1;
	size_t i = (size_t)hash & mask;
	while (t->index[i])
		i = (i + 1) & mask;
	t->index[i] = (uint32_t)(t->nstacks + 1);
	t->nstacks++;
	t->npcs += npcs;
}
