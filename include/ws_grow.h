/*
 * ws_grow: the one growable-array helper (capacity doubles, at least 16),
 * and ws_grow_large for the few arrays that hold a whole tick.
 */
#ifndef WS_GROW_H
#define WS_GROW_H

#include <stdbool.h>
#include <stddef.h>

/* Makes *array (elements of `size` bytes, *capacity of them) hold at
 * least `needed`; false when out of memory or the size overflows, the
 * array then left as it was. */
bool ws_grow(void **array, size_t *capacity, size_t needed, size_t size);

/* ws_grow for the few arrays that hold a whole tick (tasks, snapshots,
 * stack copies: ~1.3 KB per goroutine of a 10k dump). From 256 KiB on they
 * live in mappings of their own aligned to 2 MiB, asked for transparent
 * huge pages and populated at once: a first touch of a fresh 4 KiB page
 * cost 7-14 us on these VMs even when populated (the hypervisor's shadow
 * page tables), 3,000 of them most of a 10k-goroutine dump; a huge page
 * is one. Where THP is off they are plain pages, populated. Capacity
 * grows by half again (everything mapped is resident); contents are kept.
 * Free with ws_free_large, never free(). */
bool ws_grow_large(void **array, size_t *capacity, size_t needed, size_t size);
/* A zero-filled large array of `size` bytes (hash tables, sort indexes),
 * allocated as ws_grow_large's; NULL when out of memory. */
void *ws_alloc_large(size_t size);
void ws_free_large(void *array);

#endif
