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

void ws_random_subset(struct ws_random *r, size_t n, size_t k, size_t *out,
		      uint64_t *bits)
{
	memset(bits, 0, (n + 63) / 64 * sizeof(*bits));
	size_t m = 0;
	/* For j = n-k .. n-1: a random t of [0, j], or j itself when t is
	 * taken already (j has never been a candidate before, so it is
	 * free). */
	for (size_t j = n - k; j < n && m < k; j++) {
		size_t t = (size_t)ws_random_below(r, j + 1);
		if (bits[t / 64] & (UINT64_C(1) << (t % 64)))
			t = j;
		bits[t / 64] |= UINT64_C(1) << (t % 64);
		out[m++] = t;
	}
}
