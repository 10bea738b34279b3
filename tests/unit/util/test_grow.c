/*
 * Unit tests of util/grow.c's large arrays: growing from small (malloc'ed)
 * to mapped keeps every element, a mapping starts at a 2 MiB boundary (a
 * huge page can back it), capacity never falls short of what was asked,
 * and what the kernel says of the mapping (/proc/self/smaps) is what was
 * asked for: huge pages allowed ("hg" in VmFlags) and resident.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "ws_grow.h"

/* The smaps block of the mapping holding `address`: its VmFlags line and
 * its Rss in kB. False if no mapping holds it. */
static bool mapping_of(const void *address, char flags[256], long *rss_kb)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	cr_assert_not_null(f);
	char line[512];
	bool inside = false, found = false;
	uintptr_t a = (uintptr_t)address;
	flags[0] = '\0';
	*rss_kb = -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			inside = a >= lo && a < hi;
			found |= inside;
			continue;
		}
		if (!inside)
			continue;
		if (strncmp(line, "VmFlags:", 8) == 0)
			snprintf(flags, 256, "%.200s", line + 8);
		else
			sscanf(line, "Rss: %ld kB", rss_kb);
	}
	fclose(f);
	return found;
}

Test(grow_large, keeps_elements_from_small_to_mapped)
{
	uint64_t *a = NULL;
	size_t cap = 0;
	size_t sizes[] = {1, 100, 1000, 200000, 300000, 1000000};
	size_t filled = 0;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		cr_assert(ws_grow_large((void **)&a, &cap, sizes[i], sizeof(*a)));
		cr_assert_geq(cap, sizes[i]);
		for (size_t k = 0; k < filled; k++)
			cr_assert_eq(a[k], k * 2654435761u,
				     "element %zu lost growing to %zu", k,
				     sizes[i]);
		for (; filled < sizes[i]; filled++)
			a[filled] = filled * 2654435761u;
	}
	ws_free_large(a);
}

Test(grow_large, small_arrays_stay_small)
{
	char *a = NULL;
	size_t cap = 0;
	cr_assert(ws_grow_large((void **)&a, &cap, 1000, 1));
	cr_assert_lt(cap, 1 << 20, "a 1000-byte array got %zu bytes", cap);
	memset(a, 1, cap);
	ws_free_large(a);
}

Test(grow_large, large_arrays_are_huge_page_aligned_resident_mappings)
{
	char *a = NULL;
	size_t cap = 0;
	size_t want = 5u << 20;
	cr_assert(ws_grow_large((void **)&a, &cap, want, 1));
	cr_assert_geq(cap, want);
	/* The array starts just past its header, in the first huge page. */
	uintptr_t base = (uintptr_t)a & ~(uintptr_t)((2u << 20) - 1);
	cr_assert_lt((uintptr_t)a - base, 4096u);
	/* Whole huge pages: what rounding left over is capacity too. */
	cr_assert_eq(((uintptr_t)a + cap) % (2u << 20), 0);
	char flags[256];
	long rss;
	cr_assert(mapping_of(a, flags, &rss));
	cr_assert(strstr(flags, " hg"), "no MADV_HUGEPAGE: VmFlags%s", flags);
	/* Populated before first use: resident already. */
	cr_assert_geq(rss, (long)(want >> 10), "Rss %ld kB of %zu", rss, want);
	memset(a, 2, cap);
	ws_free_large(a);
	cr_assert_not(mapping_of(a, flags, &rss), "not unmapped");
}

Test(grow_large, refuses_sizes_that_overflow)
{
	uint64_t *a = NULL;
	size_t cap = 0;
	cr_assert_not(ws_grow_large((void **)&a, &cap, SIZE_MAX / 4, 8));
	cr_assert_null(a);
	cr_assert_eq(cap, 0);
}

/* Without room for a mapping of its own (an address-space limit below
 * what a huge-page mapping needs), a large array still grows, on the
 * heap, and keeps its elements. Run in a child: the limit is for good. */
Test(grow_large, grows_on_the_heap_when_no_mapping_fits)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* Room for the heap array, not for a second copy mapped. */
		uint64_t *a = NULL;
		size_t cap = 0;
		if (!ws_grow_large((void **)&a, &cap, 1000, sizeof(*a)))
			_exit(10);
		for (size_t k = 0; k < 1000; k++)
			a[k] = k;
		struct rlimit rl;
		getrlimit(RLIMIT_AS, &rl);
		/* What the process maps now, and 3 MiB more: under a 2 MiB
		 * mapping plus its alignment slack, over a 1 MiB malloc. */
		FILE *f = fopen("/proc/self/statm", "r");
		unsigned long pages = 0;
		if (!f || fscanf(f, "%lu", &pages) != 1)
			_exit(11);
		fclose(f);
		rl.rlim_cur = pages * 4096 + (3u << 20);
		if (setrlimit(RLIMIT_AS, &rl) != 0)
			_exit(12);
		if (!ws_grow_large((void **)&a, &cap, 131072, sizeof(*a)))
			_exit(13);
		for (size_t k = 0; k < 1000; k++)
			if (a[k] != k)
				_exit(14);
		a[131071] = 1;
		_exit(0);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child status %#x", status);
}
