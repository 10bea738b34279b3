/*
 * Unit tests of util/read_cache.c: a block cache over an in-memory image
 * whose reader refuses anything outside [lo, hi) (the end of a mapping)
 * and counts its calls. The truth is the image itself: every read through
 * the cache must return the image's bytes, or fail exactly when a read of
 * the image would.
 */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ws_read_cache.h"

#define BASE  UINT64_C(0x10000)
#define SIZE  (16 * 4096)

struct image {
	uint8_t bytes[SIZE];
	uint64_t lo, hi;           /* readable addresses */
	unsigned calls;
};

static struct ws_error *image_read(void *arg, uint64_t address, void *buf,
				   size_t size)
{
	struct image *m = arg;
	m->calls++;
	if (address < m->lo || address > m->hi || size > m->hi - address)
		return ws_error_create(WS_ERR_OTHER, "unreadable");
	memcpy(buf, m->bytes + (address - BASE), size);
	return NULL;
}

static struct image img;

static struct ws_read_cache *cache_over(size_t block, size_t nblocks)
{
	for (size_t i = 0; i < SIZE; i++)
		img.bytes[i] = (uint8_t)(i * 7 + i / 251);
	img.lo = BASE;
	img.hi = BASE + SIZE;
	img.calls = 0;
	struct ws_memory_reader inner = { .read = image_read, .arg = &img };
	struct ws_read_cache *c = ws_read_cache_create(&inner, block, nblocks);
	cr_assert_not_null(c);
	return c;
}

/* Reads `size` bytes at `address` through the cache and checks them
 * against the image. */
static void expect_read(struct ws_read_cache *c, uint64_t address, size_t size)
{
	struct ws_memory_reader r = ws_read_cache_reader(c);
	uint8_t buf[8192];
	cr_assert_leq(size, sizeof(buf));
	struct ws_error *err = ws_memory_read(&r, address, buf, size);
	cr_assert_null(err, "read 0x%lx+%zu: %s", (unsigned long)address, size,
		       err ? err->message : "");
	cr_assert_arr_eq(buf, img.bytes + (address - BASE), size,
			 "read 0x%lx+%zu: bytes differ from the image",
			 (unsigned long)address, size);
}

Test(read_cache, off_reads_go_straight_through)
{
	struct ws_read_cache *c = cache_over(4096, 4);
	expect_read(c, BASE + 100, 8);
	expect_read(c, BASE + 108, 8);
	cr_expect_eq(img.calls, 2);
	ws_read_cache_destroy(c);
}

Test(read_cache, reads_in_one_block_cost_one_inner_read)
{
	struct ws_read_cache *c = cache_over(4096, 4);
	ws_read_cache_begin(c);
	for (unsigned i = 0; i < 64; i++)
		expect_read(c, BASE + 4096 + i * 60, 40);
	cr_expect_eq(img.calls, 1);
	cr_expect_eq(ws_read_cache_stats(c).blocks, 1);
	ws_read_cache_destroy(c);
}

/* With one slot, a read across a block's end finds both blocks in the
 * same slot: the first block's part must be copied before the second
 * block replaces it. */
Test(read_cache, read_across_blocks_sharing_a_slot)
{
	struct ws_read_cache *c = cache_over(4096, 1);
	ws_read_cache_begin(c);
	expect_read(c, BASE + 4096 - 24, 64);
	expect_read(c, BASE + 3 * 4096 - 1, 2);
	expect_read(c, BASE + 5 * 4096 - 4000, 4096);
	ws_read_cache_destroy(c);
}

/* The readable memory ends inside a block: the block is refused, but a
 * read of readable bytes in it still succeeds, and one past the end
 * still fails. */
Test(read_cache, block_past_the_end_of_a_mapping)
{
	struct ws_read_cache *c = cache_over(4096, 4);
	img.hi = BASE + 2 * 4096 + 1000;
	ws_read_cache_begin(c);
	expect_read(c, BASE + 2 * 4096 + 900, 100);
	expect_read(c, BASE + 4096 + 4000, 200);
	struct ws_memory_reader r = ws_read_cache_reader(c);
	uint8_t buf[16];
	struct ws_error *err = ws_memory_read(&r, BASE + 2 * 4096 + 996, buf, 8);
	cr_expect_not_null(err, "a read past the readable end succeeded");
	ws_error_destroy(err);
	cr_expect(ws_read_cache_stats(c).through >= 2);
	ws_read_cache_destroy(c);
}

Test(read_cache, reads_larger_than_a_block_go_through)
{
	struct ws_read_cache *c = cache_over(1024, 4);
	ws_read_cache_begin(c);
	expect_read(c, BASE + 10, 3000);
	cr_expect_eq(ws_read_cache_stats(c).blocks, 0);
	cr_expect_eq(ws_read_cache_stats(c).through, 1);
	ws_read_cache_destroy(c);
}

/* A new walk sees the memory as it is now, not as the last one did. */
Test(read_cache, begin_forgets_what_was_read)
{
	struct ws_read_cache *c = cache_over(4096, 4);
	ws_read_cache_begin(c);
	expect_read(c, BASE + 200, 16);
	ws_read_cache_end(c);
	memset(img.bytes + 200, 0xab, 16);
	expect_read(c, BASE + 200, 16);
	ws_read_cache_begin(c);
	expect_read(c, BASE + 200, 16);
	ws_read_cache_destroy(c);
}

Test(read_cache, sizes_that_are_not_powers_of_two_are_refused)
{
	struct ws_memory_reader inner = { .read = image_read, .arg = &img };
	cr_expect_null(ws_read_cache_create(&inner, 3000, 4));
	cr_expect_null(ws_read_cache_create(&inner, 4096, 3));
	cr_expect_null(ws_read_cache_create(&inner, 0, 4));
}
