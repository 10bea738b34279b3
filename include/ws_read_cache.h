/*
 * ws_read_cache: a small block cache in front of a ws_memory_reader, for
 * readers of many small pieces of nearby memory one after another that
 * cannot batch them (a linked registry's walk: each task leads to the
 * next; the unwinder's words beyond a stack copy, one tick's worth).
 * Each miss reads a whole aligned block with one call of
 * the inner reader, and the reads after it that fall in the same block
 * cost a memcpy instead of a system call.
 *
 * A cached block is a copy taken at one moment: the cache is only right
 * while the memory does not change, or while reads of one walk may be
 * taken at any moment of it. So it is off unless its owner turns it on
 * for a walk (ws_read_cache_begin, which forgets every block) and off
 * again after (ws_read_cache_end); off, reads go straight through.
 *
 * Reads the cache cannot serve whole from blocks (larger than a block,
 * or in a block the inner reader refused: the end of a mapping) go
 * straight through too, so a read fails exactly when the inner reader
 * would fail it. Not thread-safe.
 */
#ifndef WS_READ_CACHE_H
#define WS_READ_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ws_remote_memory.h"

struct ws_read_cache;

/* A cache of `nblocks` blocks of `block` bytes (a power of two) over
 * `inner` (copied), off. NULL when out of memory or on bad sizes. */
struct ws_read_cache *ws_read_cache_create(const struct ws_memory_reader *inner,
					   size_t block, size_t nblocks);
void ws_read_cache_destroy(struct ws_read_cache *c);

/* The reader to read through (its arg is the cache). */
struct ws_memory_reader ws_read_cache_reader(struct ws_read_cache *c);

/* Forgets every block and turns the cache on / turns it off. */
void ws_read_cache_begin(struct ws_read_cache *c);
void ws_read_cache_end(struct ws_read_cache *c);

/* Inner reads made since creation: blocks read, and reads passed
 * through (for tests and debugging). */
struct ws_read_cache_stats {
	uint64_t blocks;
	uint64_t through;
	uint64_t hits;
};
struct ws_read_cache_stats ws_read_cache_stats(const struct ws_read_cache *c);

#endif
