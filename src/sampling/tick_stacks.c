/*
 * The distinct stacks of one tick and their frame ranges (see
 * ws_tick_stacks.h): a table of stacks, their pcs copied into one array,
 * and a ws_index_set of them by hash, all kept across ticks and emptied
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
	ws_index_set_deinit(&t->index);
	memset(t, 0, sizeof(*t));
}

void ws_tick_stacks_clear(struct ws_tick_stacks *t)
{
	ws_index_set_clear(&t->index);
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

/* What a lookup compares a stored stack with. */
struct stack_key {
	const struct ws_tick_stacks *t;
	uint64_t hash;
	const struct ws_pc *pcs;
	size_t npcs;
	const char *stop_reason;
};

static bool same_stack(const void *key_arg, uint32_t index)
{
	const struct stack_key *key = key_arg;
	const struct tick_stack *st = &key->t->stacks[index];
	if (st->hash != key->hash || st->npcs != key->npcs ||
	    st->stop_reason != key->stop_reason)
		return false;
	const struct ws_pc *mine = key->t->pcs + st->pcs_start;
	for (size_t k = 0; k < key->npcs; k++)
		if (mine[k].pc != key->pcs[k].pc ||
		    mine[k].is_return_address != key->pcs[k].is_return_address)
			return false;
	return true;
}

bool ws_tick_stacks_find(const struct ws_tick_stacks *t,
			 const struct ws_pc *pcs, size_t npcs,
			 const char *stop_reason, uint64_t *hash,
			 size_t *first_frame, size_t *nframes)
{
	*hash = stack_hash(pcs, npcs, stop_reason);
	if (!t->index.capacity)
		return false;
	const struct stack_key key = {t, *hash, pcs, npcs, stop_reason};
	uint64_t slot = *ws_index_set_find(&t->index, (uint32_t)*hash,
					   same_stack, &key);
	if (!slot)
		return false;
	const struct tick_stack *st = &t->stacks[(uint32_t)slot - 1];
	*first_frame = st->first_frame;
	*nframes = st->nframes;
	return true;
}

void ws_tick_stacks_add(struct ws_tick_stacks *t, uint64_t hash,
			const struct ws_pc *pcs, size_t npcs,
			const char *stop_reason, size_t first_frame,
			size_t nframes)
{
	if (t->nstacks >= UINT32_MAX - 1 || !ws_index_set_reserve(&t->index) ||
	    !ws_grow((void **)&t->stacks, &t->stacks_cap, t->nstacks + 1,
		     sizeof(*t->stacks)) ||
	    !ws_grow((void **)&t->pcs, &t->pcs_cap, t->npcs + npcs,
		     sizeof(*t->pcs)))
		return;
	/* The empty slot where the stack belongs (find did not find it). */
	const struct stack_key key = {t, hash, pcs, npcs, stop_reason};
	uint64_t *slot = ws_index_set_find(&t->index, (uint32_t)hash,
					   same_stack, &key);
	memcpy(t->pcs + t->npcs, pcs, npcs * sizeof(*pcs));
	t->stacks[t->nstacks] = (struct tick_stack){
		.hash = hash, .pcs_start = t->npcs, .npcs = npcs,
		.stop_reason = stop_reason, .first_frame = first_frame,
		.nframes = nframes};
	ws_index_set_insert(&t->index, slot, (uint32_t)hash,
			    (uint32_t)t->nstacks);
	t->nstacks++;
	t->npcs += npcs;
}
