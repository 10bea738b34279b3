/*
 * ws_random: a small, fast, non-cryptographic generator (xorshift64) for
 * tick jitter and for picking random subsets of tasks, and the one routine
 * that picks such a subset. Not thread-safe; each user keeps its own state.
 */
#ifndef WS_RANDOM_H
#define WS_RANDOM_H

#include <stddef.h>
#include <stdint.h>

struct ws_random {
	uint64_t state;   /* never 0 */
};

static inline void ws_random_seed(struct ws_random *r, uint64_t seed)
{
	r->state = seed | 1;
}

static inline uint64_t ws_random_next(struct ws_random *r)
{
	r->state ^= r->state << 13;
	r->state ^= r->state >> 7;
	r->state ^= r->state << 17;
	return r->state;
}

/* Uniform in [0, 1). */
static inline double ws_random_unit(struct ws_random *r)
{
	return (double)(ws_random_next(r) >> 11) / (double)(UINT64_C(1) << 53);
}

/* Uniform in [0, n), n > 0 (the modulo bias is below 2^-40 for the task
 * counts used here). */
static inline uint64_t ws_random_below(struct ws_random *r, uint64_t n)
{
	return ws_random_next(r) % n;
}

/* Moves a uniform random sample of k of the n elements of `base` (each
 * `size` bytes) to its front, in random order (a partial Fisher-Yates
 * shuffle: k draws and swaps); the rest keep the others. k <= n. */
void ws_random_sample_front(struct ws_random *r, void *base, size_t n,
			    size_t k, size_t size);

/* Writes k distinct indices of [0, n) to out, every k-subset equally
 * likely (Floyd's algorithm: k draws, whatever n, so picking 20 of 4,000
 * threads costs 20 draws and no list of the 4,000). `bits`: the caller's
 * scratch of (n + 63) / 64 words, any contents. k <= n. */
void ws_random_subset(struct ws_random *r, size_t n, size_t k, size_t *out,
		      uint64_t *bits);

#endif
