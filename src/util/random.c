/*
 * Random subsets (see ws_random.h); the generator itself is inline in the
 * header.
 */
#include "ws_random.h"

#include <string.h>

/* Swaps two elements a bounded chunk at a time, whatever their size. */
static void swap_bytes(unsigned char *a, unsigned char *b, size_t size)
{
	unsigned char chunk[256];
	while (size) {
		size_t n = size < sizeof(chunk) ? size : sizeof(chunk);
		memcpy(chunk, a, n);
		memcpy(a, b, n);
		memcpy(b, chunk, n);
		a += n;
		b += n;
		size -= n;
	}
}

void ws_random_sample_front(struct ws_random *r, void *base, size_t n,
			    size_t k, size_t size)
{
	unsigned char *bytes = base;
	for (size_t i = 0; i < k && i < n; i++) {
		size_t j = i + (size_t)ws_random_below(r, n - i);
		if (j != i)
			swap_bytes(bytes + i * size, bytes + j * size, size);
	}
}
