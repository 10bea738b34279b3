/*
 * Per-task memo of unwinds (see ws_stack_cache.h).
 */
#include "ws_stack_cache.h"

#include <stdlib.h>
#include <string.h>

struct slot {
	uint64_t task_id;
	uint64_t key;              /* 0: empty */
	const char *stop_reason;
	uint32_t n;
	struct ws_pc pcs[WS_STACK_CACHE_FRAMES];
};

struct ws_stack_cache {
	struct slot *slots;        /* calloc'd: untouched slots cost no RSS */
	size_t nslots;             /* a power of two */
};

struct ws_stack_cache *ws_stack_cache_create(size_t slots)
{
	struct ws_stack_cache *c = calloc(1, sizeof(*c));
	size_t n = 1;
	while (n < slots)
		n *= 2;
	if (c)
		c->slots = calloc(n, sizeof(*c->slots));
	if (!c || !c->slots) {
		free(c);
		return NULL;
	}
	c->nslots = n;
	return c;
}

void ws_stack_cache_destroy(struct ws_stack_cache *c)
{
	if (c)
		free(c->slots);
	free(c);
}

void ws_stack_cache_clear(struct ws_stack_cache *c)
{
	for (size_t i = 0; i < c->nslots; i++)
		c->slots[i].key = 0;
}

/* 64-bit multiply-xorshift mixing, eight bytes a step: hashing a few KB of
 * stack costs a fraction of unwinding it. */
static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

uint64_t ws_stack_cache_key(const struct ws_snapshot *snap)
{
	uint64_t h = 0x243f6a8885a308d3ULL;
	h = mix(h, snap->regs.valid);
	for (int r = 0; r < WS_NREGS; r++)
		if (snap->regs.valid & (1u << r))
			h = mix(h, snap->regs.value[r]);
	h = mix(h, ((uint64_t)snap->pc_exact << 1) | snap->truncated);
	h = mix(h, snap->stack_start);
	h = mix(h, snap->stack_size);
	h = mix(h, snap->stack_lo);
	h = mix(h, snap->stack_hi);
	size_t i = 0;
	for (; i + 8 <= snap->stack_size; i += 8) {
		uint64_t w;
		memcpy(&w, snap->stack + i, 8);
		h = mix(h, w);
	}
	if (i < snap->stack_size) {
		uint64_t tail = 0;
		memcpy(&tail, snap->stack + i, snap->stack_size - i);
		h = mix(h, tail);
	}
	return h ? h : 1;
}

static struct slot *slot_of(struct ws_stack_cache *c, uint64_t task_id)
{
	uint64_t x = task_id * 0xbf58476d1ce4e5b9ULL;
	return &c->slots[(x ^ (x >> 31)) & (c->nslots - 1)];
}

size_t ws_stack_cache_get(struct ws_stack_cache *c, uint64_t task_id,
			  uint64_t key, struct ws_pc *pcs, size_t max,
			  const char **stop_reason)
{
	const struct slot *s = slot_of(c, task_id);
	if (s->key != key || s->task_id != task_id || s->n > max)
		return 0;
	memcpy(pcs, s->pcs, s->n * sizeof(*pcs));
	*stop_reason = s->stop_reason;
	return s->n;
}

void ws_stack_cache_put(struct ws_stack_cache *c, uint64_t task_id,
			uint64_t key, const struct ws_pc *pcs, size_t n,
			const char *stop_reason)
{
	if (n == 0 || n > WS_STACK_CACHE_FRAMES)
		return;
	struct slot *s = slot_of(c, task_id);
	s->task_id = task_id;
	s->key = key;
	s->stop_reason = stop_reason;
	s->n = (uint32_t)n;
	memcpy(s->pcs, pcs, n * sizeof(*pcs));
}
