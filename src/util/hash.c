/*
 * The hash functions (see ws_hash.h) are inline, for the tables that hash
 * on every lookup; this file holds the one external definition of each
 * (C99 inline), which callers that do not inline them call.
 */
#include "ws_hash.h"

extern inline uint64_t ws_hash_u64(uint64_t x);
extern inline uint64_t ws_hash_fold(uint64_t a, uint64_t b);
extern inline uint64_t ws_hash_bytes(const void *data, size_t len,
				     uint64_t seed);
