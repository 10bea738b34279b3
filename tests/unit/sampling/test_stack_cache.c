/*
 * Unit tests of ws_stack_cache: an unwind is reused only for the same task
 * with a snapshot identical in everything an unwind reads (registers, the
 * copied stack bytes, their place and bounds), or, without a copy, with
 * the same wide version and saved context; one the ring of frames has
 * passed over is not reused, and the others come back whole.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "ws_stack_cache.h"

static uint8_t stack_bytes[4096 + 3];

static bool same_pcs(const struct ws_pc *a, const struct ws_pc *b, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (a[k].pc != b[k].pc ||
		    a[k].is_return_address != b[k].is_return_address)
			return false;
	return true;
}

static struct ws_snapshot snapshot(size_t size)
{
	struct ws_snapshot s;

	memset(&s, 0, sizeof(s));
	for (size_t i = 0; i < sizeof(stack_bytes); i++)
		stack_bytes[i] = (uint8_t)(i * 7 + 1);
	s.regs.valid = (1u << WS_REG_RIP) | (1u << WS_REG_RSP) | (1u << WS_REG_RBP);
	s.regs.value[WS_REG_RIP] = 0x401000;
	s.regs.value[WS_REG_RSP] = 0x7ffd0000;
	s.regs.value[WS_REG_RBP] = 0x7ffd0040;
	s.stack_start = 0x7ffd0000;
	s.stack_size = size;
	s.stack = stack_bytes;
	s.stack_lo = 0x7ff00000;
	s.stack_hi = 0x7ffd0000 + size;
	return s;
}

Test(stack_cache, key_covers_every_input)
{
	struct ws_snapshot a = snapshot(sizeof(stack_bytes));
	uint64_t k = ws_stack_cache_key(&a);

	cr_assert_neq(k, 0);
	cr_assert_eq(ws_stack_cache_key(&a), k, "not deterministic");

	/* Every byte counts, also in the tail that is not a whole word. */
	size_t positions[] = { 0, 8, 2047, 4095, 4096, 4098 };
	for (size_t i = 0; i < sizeof(positions) / sizeof(positions[0]); i++) {
		stack_bytes[positions[i]] ^= 1;
		cr_expect_neq(ws_stack_cache_key(&a), k, "byte %zu ignored", positions[i]);
		stack_bytes[positions[i]] ^= 1;
	}
	struct ws_snapshot b = a;
	b.regs.value[WS_REG_RBP]++;
	cr_expect_neq(ws_stack_cache_key(&b), k, "rbp ignored");
	b = a;
	b.regs.valid |= 1u << WS_REG_RBX;
	cr_expect_neq(ws_stack_cache_key(&b), k, "valid mask ignored");
	b = a;
	b.pc_exact = true;
	cr_expect_neq(ws_stack_cache_key(&b), k, "pc_exact ignored");
	b = a;
	b.truncated = true;
	cr_expect_neq(ws_stack_cache_key(&b), k, "truncation ignored");
	b = a;
	b.stack_size--;
	cr_expect_neq(ws_stack_cache_key(&b), k, "size ignored");
	b = a;
	b.stack_hi += 8;
	cr_expect_neq(ws_stack_cache_key(&b), k, "bounds ignored");
	/* An invalid register's stale value does not count. */
	b = a;
	b.regs.value[WS_REG_R12] = 1234;
	cr_expect_eq(ws_stack_cache_key(&b), k, "invalid register counted");
	/* An empty copy hashes without reading the stack. */
	b = a;
	b.stack_size = 0;
	b.stack = NULL;
	cr_expect_neq(ws_stack_cache_key(&b), 0);
}

Test(stack_cache, reuse_only_same_task_same_key)
{
	struct ws_stack_cache *c = ws_stack_cache_create(16);
	struct ws_pc pcs[4] = { { 0x401000, false }, { 0x402000, true },
				{ 0x403000, true }, { 0x404000, true } };
	struct ws_pc out[8];
	const char *reason = "x";

	cr_assert_not_null(c);
	cr_assert_eq(ws_stack_cache_get(c, 7, 99, out, 8, &reason), 0, "empty cache hit");
	ws_stack_cache_put(c, 7, 99, 0, pcs, 4, "stack deeper than --max-stack");
	cr_assert_eq(ws_stack_cache_get(c, 7, 99, out, 8, &reason), 4);
	cr_expect(same_pcs(out, pcs, 4));
	cr_expect_str_eq(reason, "stack deeper than --max-stack");
	cr_expect_eq(ws_stack_cache_get(c, 7, 98, out, 8, &reason), 0, "other key hit");
	cr_expect_eq(ws_stack_cache_get(c, 8, 99, out, 8, &reason), 0, "other task hit");
	cr_expect_eq(ws_stack_cache_get(c, 7, 99, out, 3, &reason), 0,
		     "an unwind longer than the caller's room");
	/* A new unwind of the task replaces the old one. */
	ws_stack_cache_put(c, 7, 100, 0, pcs, 2, NULL);
	cr_expect_eq(ws_stack_cache_get(c, 7, 99, out, 8, &reason), 0);
	cr_expect_eq(ws_stack_cache_get(c, 7, 100, out, 8, &reason), 2);
	cr_expect_null(reason);
	ws_stack_cache_clear(c);
	cr_expect_eq(ws_stack_cache_get(c, 7, 100, out, 8, &reason), 0, "clear kept it");
	ws_stack_cache_destroy(c);
}

Test(stack_cache, empty_and_deep_unwinds_are_not_kept)
{
	struct ws_stack_cache *c = ws_stack_cache_create(4);
	struct ws_pc deep[WS_STACK_CACHE_FRAMES + 1];
	struct ws_pc out[WS_STACK_CACHE_FRAMES + 1];
	const char *reason;

	memset(deep, 0, sizeof(deep));
	ws_stack_cache_put(c, 1, 5, 0, deep, 0, NULL);
	cr_expect_eq(ws_stack_cache_get(c, 1, 5, out, 8, &reason), 0);
	ws_stack_cache_put(c, 1, 6, 0, deep, WS_STACK_CACHE_FRAMES + 1, NULL);
	cr_expect_eq(ws_stack_cache_get(c, 1, 6, out, WS_STACK_CACHE_FRAMES + 1, &reason), 0);
	ws_stack_cache_put(c, 1, 7, 0, deep, WS_STACK_CACHE_FRAMES, NULL);
	cr_expect_eq(ws_stack_cache_get(c, 1, 7, out, WS_STACK_CACHE_FRAMES, &reason),
		     WS_STACK_CACHE_FRAMES);
	ws_stack_cache_destroy(c);
}

Test(stack_cache, tasks_sharing_a_slot_evict_each_other)
{
	struct ws_stack_cache *c = ws_stack_cache_create(1);
	struct ws_pc pc = { 0x401000, false }, out[1];
	const char *reason;

	ws_stack_cache_put(c, 1, 11, 0, &pc, 1, NULL);
	ws_stack_cache_put(c, 2, 22, 0, &pc, 1, NULL);
	cr_expect_eq(ws_stack_cache_get(c, 1, 11, out, 1, &reason), 0);
	cr_expect_eq(ws_stack_cache_get(c, 2, 22, out, 1, &reason), 1);
	ws_stack_cache_destroy(c);
}

static struct ws_task parked_task(void)
{
	struct ws_task t;

	memset(&t, 0, sizeof(t));
	t.id = 42;
	t.start = WS_START_SAVED;
	t.version = 1000;
	t.version_wide = true;
	t.regs.valid = (1u << WS_REG_RIP) | (1u << WS_REG_RSP) | (1u << WS_REG_RBP);
	t.regs.value[WS_REG_RIP] = 0x401000;
	t.regs.value[WS_REG_RSP] = 0x7ffd0000;
	t.regs.value[WS_REG_RBP] = 0x7ffd0040;
	t.stack_lo = 0x7ff00000;
	t.stack_hi = 0x7ffe0000;
	return t;
}

Test(stack_cache, context_key_covers_version_and_context)
{
	struct ws_task a = parked_task();
	uint64_t k = ws_stack_cache_context_key(&a);

	cr_assert_neq(k, 0);
	struct ws_task b = a;
	b.version++;
	cr_expect_neq(ws_stack_cache_context_key(&b), k, "version ignored");
	b = a;
	b.id++;
	cr_expect_neq(ws_stack_cache_context_key(&b), k, "id ignored");
	b = a;
	b.regs.value[WS_REG_RSP] -= 16;
	cr_expect_neq(ws_stack_cache_context_key(&b), k, "sp ignored");
	b = a;
	b.regs.valid |= 1u << WS_REG_RBX;
	cr_expect_neq(ws_stack_cache_context_key(&b), k, "valid mask ignored");
	b = a;
	b.stack_hi += 4096;
	cr_expect_neq(ws_stack_cache_context_key(&b), k, "bounds ignored");
	b = a;
	b.pc_exact = true;
	cr_expect_neq(ws_stack_cache_context_key(&b), k, "pc_exact ignored");
	/* The state and wait reason are the list's, not the unwind's. */
	b = a;
	b.state = WS_STATE_RUNNABLE;
	cr_expect_eq(ws_stack_cache_context_key(&b), k, "state counted");
	/* A version that may wrap proves nothing; nor does a thread's. */
	b = a;
	b.version_wide = false;
	cr_expect_eq(ws_stack_cache_context_key(&b), 0, "narrow version keyed");
	b = a;
	b.start = WS_START_THREAD;
	cr_expect_eq(ws_stack_cache_context_key(&b), 0, "running task keyed");
}

Test(stack_cache, reuse_by_context_only_as_stored)
{
	struct ws_stack_cache *c = ws_stack_cache_create(16);
	struct ws_pc pcs[2] = { { 0x401000, false }, { 0x402000, true } }, out[4];
	const char *reason = "x";
	struct ws_task t = parked_task();
	uint64_t ctx = ws_stack_cache_context_key(&t);

	cr_expect_not(ws_stack_cache_has_context(c, t.id, ctx), "empty cache hit");
	ws_stack_cache_put(c, t.id, 99, ctx, pcs, 2, NULL);
	cr_assert(ws_stack_cache_has_context(c, t.id, ctx));
	cr_expect_eq(ws_stack_cache_get_context(c, t.id, ctx, out, 4, &reason), 2);
	cr_expect(same_pcs(out, pcs, 2));
	cr_expect_null(reason);
	cr_expect_not(ws_stack_cache_has_context(c, t.id + 1, ctx), "other task hit");
	cr_expect_not(ws_stack_cache_has_context(c, t.id, ctx + 1), "other context hit");
	cr_expect_not(ws_stack_cache_has_context(c, t.id, 0), "no key hit");
	/* Stored without a context key (a copy unwound, version narrow). */
	ws_stack_cache_put(c, t.id, 99, 0, pcs, 2, NULL);
	cr_expect_not(ws_stack_cache_has_context(c, t.id, ctx), "replaced, still hit");
	cr_expect_eq(ws_stack_cache_get(c, t.id, 99, out, 4, &reason), 2);
	ws_stack_cache_put(c, t.id, 99, ctx, pcs, 2, NULL);
	ws_stack_cache_clear(c);
	cr_expect_not(ws_stack_cache_has_context(c, t.id, ctx), "clear kept it");
	ws_stack_cache_destroy(c);
}

static void fill16(struct ws_pc *pcs, uint64_t task)
{
	for (size_t k = 0; k < 16; k++)
		pcs[k] = (struct ws_pc){ 0x400000 + task * 0x1000 + k,
					 (k + task) % 3 == 0 };
}

/* 16 slots keep 256 frames. Task A's 16 frames stay while another task's
 * unwinds (in another slot) fill the rest of the ring, come back whole,
 * and miss once the ring has passed over them; a frame of no user
 * address (bit 63 set) is never kept. */
Test(stack_cache, ring_passed_over_unwinds_are_unwound_again)
{
	struct ws_stack_cache *c = ws_stack_cache_create(16);
	struct ws_pc pcs[16], out[16];
	const char *reason;
	const uint64_t a = 1000;

	cr_assert_not_null(c);
	fill16(pcs, a);
	ws_stack_cache_put(c, a, 1, 0, pcs, 16, "a");
	size_t written = 16;
	uint64_t b = 2000;
	for (;; b++) { /* a task whose slot is not A's */
		fill16(pcs, b);
		ws_stack_cache_put(c, b, 2, 0, pcs, 16, "b");
		written += 16;
		if (ws_stack_cache_get(c, a, 1, out, 16, &reason))
			break;
		cr_assert_lt(written, 256, "every task took A's slot");
		fill16(pcs, a);
		ws_stack_cache_put(c, a, 1, 0, pcs, 16, "a");
		written += 16;
	}
	size_t a_at = written - 32; /* A's frames, then B's */
	for (; written <= a_at + 256 + 16; written += 16) {
		size_t n = ws_stack_cache_get(c, a, 1, out, 16, &reason);
		if (written <= a_at + 256) {
			fill16(pcs, a);
			cr_assert_eq(n, 16, "A lost with %zu frames written", written);
			cr_expect(same_pcs(out, pcs, 16));
			cr_expect_str_eq(reason, "a");
		} else {
			cr_expect_eq(n, 0, "A kept after the ring passed over it");
		}
		cr_assert_eq(ws_stack_cache_get(c, b, 2, out, 16, &reason), 16);
		fill16(pcs, b);
		cr_expect(same_pcs(out, pcs, 16));
		ws_stack_cache_put(c, b, 2, 0, pcs, 16, "b");
	}

	struct ws_pc wild[2] = { { 0x401000, false }, { UINT64_C(1) << 63, true } };
	ws_stack_cache_put(c, 77, 7, 0, wild, 2, NULL);
	cr_expect_eq(ws_stack_cache_get(c, 77, 7, out, 16, &reason), 0);
	ws_stack_cache_destroy(c);
}
