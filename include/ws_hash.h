/*
 * ws_hash: the hash functions behind every wallspy hash table: a mixer for
 * keys that are numbers (pcs, tids, group keys) and a hash of byte strings
 * (names, paths, arrays of frame indices). Both spread every input bit over
 * every output bit, so a table may take its slot from the low bits (or the
 * high ones). Fast, not keyed: a crafted collision costs probes, never a
 * wrong answer, since every table compares whole keys.
 *
 * Inline (C99: hash.c holds the one external definition of each), because
 * the profile hashes every frame of every sample: called out of line,
 * ws_profile_add ran 1.4 % more instructions.
 */
#ifndef WS_HASH_H
#define WS_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* splitmix64's finalizer: a bijection on 64-bit integers, so distinct keys
 * never collide before the table masks them. Two multiplies (~3 ns). */
inline uint64_t ws_hash_u64(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

/* The mixing step of ws_hash_bytes: the 64x64 -> 128-bit product folded to
 * 64 bits. Every bit of either factor reaches the middle of the product,
 * and the fold brings those to both ends. */
inline uint64_t ws_hash_fold(uint64_t a, uint64_t b)
{
	__uint128_t product = (__uint128_t)a * b;
	return (uint64_t)product ^ (uint64_t)(product >> 64);
}

/* A hash of data[0..len) under `seed` (tables with composite keys put the
 * rest of the key there), after wyhash's design: one multiply per 16 bytes,
 * never a byte at a time (a byte-at-a-time hash once took ~40 % of
 * ws_profile_add). ~3.5 ns for an 18-byte name, ~15 ns for 80 bytes. data
 * need not be aligned. */
inline uint64_t ws_hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const uint64_t k0 = UINT64_C(0x9e3779b97f4a7c15);
	const uint64_t k1 = UINT64_C(0xc2b2ae3d27d4eb4f);
	const uint64_t k2 = UINT64_C(0x165667b19e3779f9);
	const unsigned char *p = data;
	size_t n = len;
	uint64_t h = seed ^ (len * k0), a = 0, b = 0;
	while (n > 16) {
		memcpy(&a, p, 8);
		memcpy(&b, p + 8, 8);
		h = ws_hash_fold(a ^ k1, b ^ h);
		p += 16;
		n -= 16;
	}
	/* 0 to 16 bytes left: two loads cover them, overlapping if need be;
	 * with the length in h, equal loads mean equal strings. */
	a = b = 0;
	if (n >= 8) {
		memcpy(&a, p, 8);
		memcpy(&b, p + n - 8, 8);
	} else if (n >= 4) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + n - 4, 4);
		a = lo;
		b = hi;
	} else if (n) {
		a = (uint64_t)p[0] | (uint64_t)p[n / 2] << 8 |
		    (uint64_t)p[n - 1] << 16;
	}
	h = ws_hash_fold(a ^ k1, b ^ h ^ k2);
	return ws_hash_fold(h ^ k0, (uint64_t)len ^ k2);
}

#endif
