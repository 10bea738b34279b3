/*
 * Unit tests of ws_tick_stacks: a stack is found again only when every
 * return address, every "is a return address" flag and the unwind's stop
 * reason are the same; clearing forgets every stack; thousands of
 * distinct stacks (the index grows) are each found with their own range.
 */
#include <criterion/criterion.h>

#include "ws_tick_stacks.h"

static const char stop_a[] = "stop a", stop_b[] = "stop b";

static void fill(struct ws_pc *pcs, size_t n, uint64_t base)
{
	for (size_t k = 0; k < n; k++)
		pcs[k] = (struct ws_pc){.pc = base + 16 * k,
					.is_return_address = k > 0};
}

Test(tick_stacks, found_only_when_equal)
{
	struct ws_tick_stacks t;
	ws_tick_stacks_init(&t);
	struct ws_pc pcs[6], other[6];
	fill(pcs, 6, 0x401000);
	uint64_t h;
	size_t first = 99, n = 99;
	cr_assert_not(ws_tick_stacks_find(&t, pcs, 6, NULL, &h, &first, &n));
	ws_tick_stacks_add(&t, h, pcs, 6, NULL, 40, 7);
	cr_assert(ws_tick_stacks_find(&t, pcs, 6, NULL, &h, &first, &n));
	cr_assert_eq(first, 40);
	cr_assert_eq(n, 7);

	/* A prefix, another pc, another flag, another stop reason: not it. */
	cr_assert_not(ws_tick_stacks_find(&t, pcs, 5, NULL, &h, &first, &n));
	fill(other, 6, 0x401000);
	other[3].pc++;
	cr_assert_not(ws_tick_stacks_find(&t, other, 6, NULL, &h, &first, &n));
	fill(other, 6, 0x401000);
	other[0].is_return_address = true;
	cr_assert_not(ws_tick_stacks_find(&t, other, 6, NULL, &h, &first, &n));
	cr_assert_not(ws_tick_stacks_find(&t, pcs, 6, stop_a, &h, &first, &n));
	ws_tick_stacks_add(&t, h, pcs, 6, stop_a, 50, 8);
	cr_assert(ws_tick_stacks_find(&t, pcs, 6, stop_a, &h, &first, &n));
	cr_assert_eq(first, 50);
	cr_assert_not(ws_tick_stacks_find(&t, pcs, 6, stop_b, &h, &first, &n));

	ws_tick_stacks_clear(&t);
	cr_assert_not(ws_tick_stacks_find(&t, pcs, 6, NULL, &h, &first, &n));
	cr_assert_not(ws_tick_stacks_find(&t, pcs, 6, stop_a, &h, &first, &n));
	ws_tick_stacks_deinit(&t);
}

Test(tick_stacks, many_stacks_each_with_its_range)
{
	struct ws_tick_stacks t;
	ws_tick_stacks_init(&t);
	enum { N = 5000 };
	struct ws_pc pcs[9];
	uint64_t h;
	size_t first, n;
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < N; i++) {
			fill(pcs, 1 + i % 9, 0x400000 + 0x1000 * i);
			cr_assert_not(ws_tick_stacks_find(&t, pcs, 1 + i % 9,
							  NULL, &h, &first, &n));
			ws_tick_stacks_add(&t, h, pcs, 1 + i % 9, NULL, 10 * i,
					   1 + i % 9);
		}
		for (size_t i = 0; i < N; i++) {
			fill(pcs, 1 + i % 9, 0x400000 + 0x1000 * i);
			cr_assert(ws_tick_stacks_find(&t, pcs, 1 + i % 9, NULL,
						      &h, &first, &n),
				  "round %d: stack %zu lost", round, i);
			cr_assert_eq(first, 10 * i);
			cr_assert_eq(n, 1 + i % 9);
		}
		ws_tick_stacks_clear(&t);
	}
	ws_tick_stacks_deinit(&t);
}
