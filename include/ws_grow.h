/*
 * ws_grow: the one growable-array helper (capacity doubles, at least 16).
 */
#ifndef WS_GROW_H
#define WS_GROW_H

#include <stdbool.h>
#include <stddef.h>

/* Makes *array (elements of `size` bytes, *capacity of them) hold at
 * least `needed`; false when out of memory or the size overflows, the
 * array then left as it was. */
bool ws_grow(void **array, size_t *capacity, size_t needed, size_t size);

#endif
