/*
 * Block cache over a memory reader (see ws_read_cache.h). Direct-mapped:
 * a block's slot is its hashed block number, so the walk of a list whose
 * nodes sit 64 KiB apart (one per stack mapping) does not keep evicting
 * one slot, and a lookup is one probe.
 */
#include "ws_read_cache.h"

#include <stdlib.h>
#include <string.h>

#include "ws_hash.h"

enum slot_state { SLOT_EMPTY, SLOT_READ, SLOT_REFUSED };

struct slot {
	uint64_t base;             /* the block's address */
	uint32_t epoch;            /* valid only when equal to the cache's */
	uint8_t state;             /* enum slot_state */
};

struct ws_read_cache {
	struct ws_memory_reader inner;
	size_t block, nblocks;
	uint8_t *data;             /* nblocks * block */
	struct slot *slots;
	uint32_t epoch;            /* 0: off */
	uint32_t last_epoch;
	struct ws_read_cache_stats stats;
};

static struct ws_error *read_through(struct ws_read_cache *c, uint64_t address,
				     void *buf, size_t size)
{
	c->stats.through++;
	return ws_memory_read(&c->inner, address, buf, size);
}

/* The slot holding the block at `base`, read now if it is not; NULL when
 * the inner reader refuses the whole block. */
static const uint8_t *block_at(struct ws_read_cache *c, uint64_t base)
{
	size_t i = (size_t)(ws_hash_u64(base / c->block) & (c->nblocks - 1));
	struct slot *slot = &c->slots[i];
	uint8_t *data = c->data + i * c->block;
	if (slot->epoch == c->epoch && slot->base == base) {
		if (slot->state == SLOT_READ)
			c->stats.hits++;
		return slot->state == SLOT_READ ? data : NULL;
	}
	c->stats.blocks++;
	struct ws_error *err = ws_memory_read(&c->inner, base, data, c->block);
	ws_error_destroy(err);
	*slot = (struct slot){ .base = base, .epoch = c->epoch,
			       .state = err ? SLOT_REFUSED : SLOT_READ };
	return err ? NULL : data;
}

static struct ws_error *cached_read(void *arg, uint64_t address, void *buf,
				    size_t size)
{
	struct ws_read_cache *c = arg;
	uint64_t mask = (uint64_t)c->block - 1;
	uint64_t base = address & ~mask;
	size_t offset = (size_t)(address - base);
	if (!c->epoch || size > c->block || address > UINT64_MAX - size ||
	    base > UINT64_MAX - 2 * c->block)
		return read_through(c, address, buf, size);
	/* At most two blocks: this one and, when the read crosses its end,
	 * the next, which may take the same slot: copy from each in turn. */
	size_t first = size < c->block - offset ? size : c->block - offset;
	const uint8_t *a = block_at(c, base);
	if (!a)
		return read_through(c, address, buf, size);
	memcpy(buf, a + offset, first);
	if (first < size) {
		const uint8_t *b = block_at(c, base + c->block);
		if (!b)
			return read_through(c, address, buf, size);
		memcpy((uint8_t *)buf + first, b, size - first);
	}
	return NULL;
}

struct ws_read_cache *ws_read_cache_create(const struct ws_memory_reader *inner,
					   size_t block, size_t nblocks)
{
	if (!block || (block & (block - 1)) || !nblocks ||
	    (nblocks & (nblocks - 1)) || nblocks > SIZE_MAX / block)
		return NULL;
	struct ws_read_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->inner = *inner;
	c->block = block;
	c->nblocks = nblocks;
	c->data = malloc(block * nblocks);
	c->slots = calloc(nblocks, sizeof(*c->slots));
	if (!c->data || !c->slots) {
		ws_read_cache_destroy(c);
		return NULL;
	}
	return c;
}

void ws_read_cache_destroy(struct ws_read_cache *c)
{
	if (!c)
		return;
	free(c->data);
	free(c->slots);
	free(c);
}

struct ws_memory_reader ws_read_cache_reader(struct ws_read_cache *c)
{
	return (struct ws_memory_reader){ .read = cached_read, .arg = c };
}

void ws_read_cache_begin(struct ws_read_cache *c)
{
	/* A new epoch forgets every block without touching the slots; on
	 * the rare wrap, clear them so no slot of an old epoch matches. */
	if (++c->last_epoch == 0) {
		memset(c->slots, 0, c->nblocks * sizeof(*c->slots));
		c->last_epoch = 1;
	}
	c->epoch = c->last_epoch;
}

void ws_read_cache_end(struct ws_read_cache *c)
{
	c->epoch = 0;
}

struct ws_read_cache_stats ws_read_cache_stats(const struct ws_read_cache *c)
{
	return c->stats;
}
