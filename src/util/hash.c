/*
 * The byte-string hash (see ws_hash.h), after wyhash's design: each step
 * folds a 64x64 -> 128-bit product of 16 input bytes to 64 bits. The tables
 * that use it (interned frames and stacks, symbol names, DWARF names) hash
 * on every lookup, so it reads words, never single bytes (a byte-at-a-time
 * hash once took ~40 % of ws_profile_add).
 */
#include "ws_hash.h"

#include <string.h>

static uint64_t load64(const unsigned char *p)
{
	uint64_t w;
	memcpy(&w, p, sizeof(w));
	return w;
}

static uint64_t load32(const unsigned char *p)
{
	uint32_t w;
	memcpy(&w, p, sizeof(w));
	return w;
}

/* The product folded to 64 bits: every bit of either factor reaches the
 * middle bits of the product, and the fold brings them to both ends. */
static uint64_t fold_multiply(uint64_t a, uint64_t b)
{
	__uint128_t product = (__uint128_t)a * b;
	return (uint64_t)product ^ (uint64_t)(product >> 64);
}

uint64_t ws_hash_bytes(const void *data, size_t len, uint64_t seed)
{
	static const uint64_t k0 = 0x9e3779b97f4a7c15ULL;
	static const uint64_t k1 = 0xc2b2ae3d27d4eb4fULL;
	static const uint64_t k2 = 0x165667b19e3779f9ULL;
	const unsigned char *p = data;
	size_t n = len;
	uint64_t h = seed ^ (len * k0);
	while (n > 16) {
		h = fold_multiply(load64(p) ^ k1, load64(p + 8) ^ h);
		p += 16;
		n -= 16;
	}
	/* 0 to 16 bytes left: two loads cover them, overlapping if need be
	 * (the length is already in h, so overlaps cannot collide). */
	uint64_t a = 0, b = 0;
	if (n >= 8) {
		a = load64(p);
		b = load64(p + n - 8);
	} else if (n >= 4) {
		a = load32(p);
		b = load32(p + n - 4);
	} else if (n) {
		a = (uint64_t)p[0] | (uint64_t)p[n / 2] << 8 |
		    (uint64_t)p[n - 1] << 16;
	}
	h = fold_multiply(a ^ k1, b ^ h ^ k2);
	return fold_multiply(h ^ k0, (uint64_t)len ^ k2);
}
