/*
 * Growable arrays (see ws_grow.h).
 */
#include "ws_grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* The capacity doubled (from 16) until it holds `needed`; false when that
 * overflows. */
static bool doubled(size_t capacity, size_t needed, size_t *ret)
{
	size_t n = capacity ? capacity : 16;
	while (n < needed) {
		if (n > SIZE_MAX / 2)
			return false;
		n *= 2;
	}
	*ret = n;
	return true;
}

bool ws_grow(void **array, size_t *capacity, size_t needed, size_t size)
{
	if (needed <= *capacity)
		return true;
	size_t n;
	if (!doubled(*capacity, needed, &n) || n > SIZE_MAX / size)
		return false;
	void *p = realloc(*array, n * size);
	if (!p)
		return false;
	*array = p;
	*capacity = n;
	return true;
}

/* ---- large arrays ---- */

/* Before every large array: how it was allocated. 64 bytes keep the
 * array as aligned as malloc's and a cache line apart. */
struct large_header {
	size_t mapped;  /* bytes mapped from the header on; 0: malloc'ed */
	size_t bytes;   /* bytes of the array in use (its capacity) */
	char pad[48];
};

enum { LARGE_MIN = 256 << 10, HUGE_PAGE = 2 << 20 };

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif

static struct large_header *header_of(void *array)
{
	return array ? (struct large_header *)array - 1 : NULL;
}

/* A mapping of at least `bytes` (header included) at a 2 MiB boundary,
 * huge pages asked for and populated; NULL on failure. */
static struct large_header *map_large(size_t bytes, size_t *mapped)
{
	size_t len = (bytes + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
	if (len < bytes)
		return NULL;
	/* Over-map by one huge page and trim both ends to the boundary. */
	uint8_t *raw = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	uintptr_t start = ((uintptr_t)raw + HUGE_PAGE - 1) &
			  ~(uintptr_t)(HUGE_PAGE - 1);
	size_t head = start - (uintptr_t)raw;
	if (head)
		munmap(raw, head);
	munmap((uint8_t *)start + len, HUGE_PAGE - head);
	(void)madvise((void *)start, len, MADV_HUGEPAGE);
	/* EINVAL before Linux 5.14: the pages fault in as they are used. */
	(void)madvise((void *)start, len, MADV_POPULATE_WRITE);
	*mapped = len;
	return (struct large_header *)start;
}

bool ws_grow_large(void **array, size_t *capacity, size_t needed, size_t size)
{
	if (needed <= *capacity)
		return true;
	const size_t limit = SIZE_MAX - sizeof(struct large_header) - HUGE_PAGE;
	if (needed > limit / size)
		return false;
	struct large_header *old = header_of(*array), *h;
	size_t n;
	if (needed * size < LARGE_MIN) {
		/* Small: malloc'ed, doubling as ws_grow's. */
		if (!doubled(*capacity, needed, &n))
			return false;
		h = old && !old->mapped
			? realloc(old, sizeof(*h) + n * size)
			: malloc(sizeof(*h) + n * size);
		if (!h)
			return false;
		h->mapped = 0;
	} else {
		/* Large: by half again at least (every byte mapped is
		 * populated: doubling would keep up to twice what a tick
		 * needs resident), then the whole of the last huge page. */
		n = *capacity + *capacity / 2;
		if (n < needed || n > limit / size)
			n = needed;
		size_t mapped = 0;
		h = map_large(sizeof(*h) + n * size, &mapped);
		/* No mapping to be had (an address-space limit): malloc's. */
		if (!h && !(h = malloc(sizeof(*h) + n * size)))
			return false;
		if (mapped)
			n = (mapped - sizeof(*h)) / size;
		if (old)
			memcpy(h + 1, old + 1, old->bytes);
		ws_free_large(*array);
		h->mapped = mapped;
	}
	h->bytes = n * size;
	*array = h + 1;
	*capacity = n;
	return true;
}

void *ws_alloc_large(size_t size)
{
	if (size > SIZE_MAX - sizeof(struct large_header) - HUGE_PAGE)
		return NULL;
	struct large_header *h;
	if (size < LARGE_MIN) {
		h = calloc(1, sizeof(*h) + size);
		if (!h)
			return NULL;
		h->mapped = 0;
	} else {
		size_t mapped = 0;
		h = map_large(sizeof(*h) + size, &mapped);  /* zero-filled */
		if (!h && !(h = calloc(1, sizeof(*h) + size)))
			return NULL;
		h->mapped = mapped;
	}
	h->bytes = size;
	return h + 1;
}

void ws_free_large(void *array)
{
	struct large_header *h = header_of(array);
	if (!h)
		return;
	if (h->mapped)
		munmap(h, h->mapped);
	else
		free(h);
}
