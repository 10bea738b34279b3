/*
 * ws_hash: the hash functions behind every wallspy hash table: a mixer for
 * keys that are numbers (pcs, tids, group keys) and a hash of byte strings
 * (names, paths, arrays of frame indices). Both spread every input bit over
 * every output bit, so a table may take its slot from the low bits (or the
 * high ones). Fast, not keyed: a crafted collision costs probes, never a
 * wrong answer, since every table compares whole keys.
 */
#ifndef WS_HASH_H
#define WS_HASH_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64's finalizer: a bijection on 64-bit integers, so distinct keys
 * never collide before the table masks them (~1 ns; inline because it is
 * all of a lookup's hashing). */
static inline uint64_t ws_hash_u64(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

/* A hash of data[0..len) under `seed` (tables with composite keys put the
 * rest of the key there). 16 bytes per multiply, the tail read with
 * overlapping loads: ~3 ns for a 20-byte name, ~0.3 ns per byte beyond.
 * data need not be aligned. */
uint64_t ws_hash_bytes(const void *data, size_t len, uint64_t seed);

#endif
