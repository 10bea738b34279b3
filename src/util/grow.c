/*
 * Growable arrays (see ws_grow.h).
 */
#include "ws_grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

bool ws_grow(void **array, size_t *capacity, size_t needed, size_t size)
{
	if (needed <= *capacity)
		return true;
	size_t n = *capacity ? *capacity : 16;
	while (n < needed) {
		if (n > SIZE_MAX / 2)
			return false;
		n *= 2;
	}
	if (n > SIZE_MAX / size)
		return false;
	void *p = realloc(*array, n * size);
	if (!p)
		return false;
	*array = p;
	*capacity = n;
	return true;
}

void ws_prefault(void *buf, size_t size)
{
	/* Below a few pages the faults cost less than the call. */
	if (!buf || size < 16 * 4096)
		return;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)buf & ~(page - 1);
	uintptr_t end = ((uintptr_t)buf + size + page - 1) & ~(page - 1);
	/* EINVAL on an old kernel: the pages fault in as they are written. */
	(void)madvise((void *)start, end - start, MADV_POPULATE_WRITE);
}
