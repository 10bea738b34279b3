/*
 * Growable arrays (see ws_grow.h).
 */
#include "ws_grow.h"

#include <stdint.h>
#include <stdlib.h>

bool ws_grow(void **array, size_t *capacity, size_t needed, size_t size)
{
	if (needed <= *capacity)
		return true;
	size_t n = *capacity ? *capacity : 16;
	while (n < needed) {
		if (n > SIZE_MAX / 2)
			return false;
		n *= 2;
	}
	if (n > SIZE_MAX / size)
		return false;
	void *p = realloc(*array, n * size);
	if (!p)
		return false;
	*array = p;
	*capacity = n;
	return true;
}
