/*
 * ws_grow: the one growable-array helper (capacity doubles, at least 16),
 * and ws_prefault for buffers about to be filled whole.
 */
#ifndef WS_GROW_H
#define WS_GROW_H

#include <stdbool.h>
#include <stddef.h>

/* Makes *array (elements of `size` bytes, *capacity of them) hold at
 * least `needed`; false when out of memory or the size overflows, the
 * array then left as it was. */
bool ws_grow(void **array, size_t *capacity, size_t needed, size_t size);

/* Maps the pages of buf[0..size) in one call (MADV_POPULATE_WRITE, Linux
 * 5.14+; a no-op where the kernel lacks it), before a large buffer fresh
 * from malloc is filled: one fault per page costs ~1-5 us on these VMs
 * (10k goroutines' stacks and g structs: ~2,500 faults, a third of a
 * dump's time), taken inside process_vm_readv's copy. Contents are kept.
 * Only for buffers that will be written soon and whole. */
void ws_prefault(void *buf, size_t size);

#endif
