/*
 * ws_stack_cache: the unwind of a stack that did not change since the last
 * tick, kept per task. A parked task's saved registers and stack bytes stay
 * the same tick after tick, and so does its unwind: the sampler hashes
 * what an unwind reads from the snapshot (registers, the copied stack, its
 * bounds) and, when a task's hash is the one of its last sample, reuses
 * that sample's return addresses instead of unwinding again. Unwind tables
 * and code are the rest of an unwind's input: clear the cache whenever the
 * target's modules change.
 *
 * A task whose runtime keeps a wide switch count (ws_task.version_wide)
 * need not even be copied: the same count and saved context as at the
 * sample an unwind was stored from mean it has not run since (its context
 * key, ws_stack_cache_context_key).
 *
 * Direct-mapped by task id: a task whose slot another task took is simply
 * unwound again. The frames are kept in a ring of 16 a slot, oldest
 * overwritten first: an unwind the ring has passed over is unwound again
 * too. Stacks deeper than WS_STACK_CACHE_FRAMES are not kept.
 */
#ifndef WS_STACK_CACHE_H
#define WS_STACK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ws_snapshot.h"
#include "ws_unwind.h"

enum { WS_STACK_CACHE_FRAMES = 64 };

struct ws_stack_cache;

/* NULL when out of memory (the sampler then unwinds everything). */
struct ws_stack_cache *ws_stack_cache_create(size_t slots);
void ws_stack_cache_destroy(struct ws_stack_cache *cache);
void ws_stack_cache_clear(struct ws_stack_cache *cache);

/* A 64-bit hash of everything in `snap` an unwind depends on. */
uint64_t ws_stack_cache_key(const struct ws_snapshot *snap);

/* The unwind stored for (task_id, key): copies its return addresses to
 * pcs[0..max) and returns their count, with *stop_reason as stored; 0 when
 * there is none (an empty unwind is never stored). */
size_t ws_stack_cache_get(struct ws_stack_cache *cache, uint64_t task_id,
			  uint64_t key, struct ws_pc *pcs, size_t max,
			  const char **stop_reason);

/* A 64-bit hash of a task's id, version and saved context (registers,
 * stack bounds): what its unwind depends on but the stack bytes. 0 (no
 * key) unless the version is wide and the task starts from a saved
 * context. */
uint64_t ws_stack_cache_context_key(const struct ws_task *task);

/* Whether an unwind is stored for (task_id, context), context not 0. */
bool ws_stack_cache_has_context(struct ws_stack_cache *cache,
				uint64_t task_id, uint64_t context);

/* ws_stack_cache_get by context key. */
size_t ws_stack_cache_get_context(struct ws_stack_cache *cache,
				  uint64_t task_id, uint64_t context,
				  struct ws_pc *pcs, size_t max,
				  const char **stop_reason);

/* Stores an unwind (n >= 1; deeper ones than WS_STACK_CACHE_FRAMES are
 * dropped) under its snapshot's key and its task's context key (0: none).
 * `stop_reason` must be a static string or NULL. */
void ws_stack_cache_put(struct ws_stack_cache *cache, uint64_t task_id,
			uint64_t key, uint64_t context,
			const struct ws_pc *pcs, size_t n,
			const char *stop_reason);

#endif
