/*
 * Unit tests of util/procstat.c: fields of /proc/PID/stat lines counted
 * after the command's last ')', on lines built here (a command with
 * spaces and parentheses, a truncated line) and on this process's own
 * stat line, against what /proc/self/status says (Threads).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "ws_procstat.h"

/* A stat line whose field N (3..52) reads "fN", after `comm`. */
static char *make_line(const char *comm, int last)
{
	static char line[2048];
	int n = snprintf(line, sizeof(line), "4242 (%s)", comm);
	for (int f = 3; f <= last; f++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " f%d", f);
	snprintf(line + n, sizeof(line) - (size_t)n, "\n");
	return line;
}

static void expect_field(const char *line, int field)
{
	char want[16];
	snprintf(want, sizeof(want), "f%d", field);
	const char *got = ws_procstat_field(line, field);
	cr_assert_not_null(got, "field %d missing", field);
	cr_expect_eq(strncmp(got, want, strlen(want)), 0, "field %d: %.8s",
		     field, got);
	cr_expect(got[strlen(want)] == ' ' || got[strlen(want)] == '\n');
}

Test(procstat, counts_after_the_last_parenthesis)
{
	const char *comms[] = { "plain", "two words", "a) b (c", ") ) )", "" };
	for (size_t i = 0; i < sizeof(comms) / sizeof(comms[0]); i++) {
		const char *line = make_line(comms[i], 52);
		for (int field = 3; field <= 52; field++)
			expect_field(line, field);
	}
}

Test(procstat, short_or_broken_lines)
{
	const char *line = make_line("x", 19);
	expect_field(line, 19);
	cr_expect_null(ws_procstat_field(line, 20));
	cr_expect_null(ws_procstat_field(line, 28));
	cr_expect_null(ws_procstat_field("4242 (no end", 3));
	cr_expect_null(ws_procstat_field(make_line("x", 40), 2));
	cr_expect_null(ws_procstat_field("", 3));
}

/* The text of a small /proc file, NUL-terminated, into buf. */
static void read_text(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	size_t n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
}

static void *park(void *arg)
{
	pause();
	return arg;
}

/* Field 20 of this process's own line is the kernel's thread count, the
 * "Threads:" of /proc/self/status. */
Test(procstat, own_thread_count)
{
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, park, NULL), 0);
	char stat[1024], status[4096];
	read_text("/proc/self/stat", stat, sizeof(stat));
	read_text("/proc/self/status", status, sizeof(status));
	const char *threads = strstr(status, "\nThreads:");
	cr_assert_not_null(threads);
	const char *field = ws_procstat_field(stat, 20);
	cr_assert_not_null(field);
	cr_expect_eq(strtol(field, NULL, 10), strtol(threads + 9, NULL, 10));
	cr_expect_geq(strtol(field, NULL, 10), 4);
}

/* Field 28 (startstack) lies in the mapping /proc/self/maps calls
 * [stack]. */
Test(procstat, own_start_stack)
{
	char stat[1024], line[512];
	read_text("/proc/self/stat", stat, sizeof(stat));
	const char *field = ws_procstat_field(stat, 28);
	cr_assert_not_null(field);
	unsigned long long start = strtoull(field, NULL, 10), lo = 0, hi = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]"))
			sscanf(line, "%llx-%llx", &lo, &hi);
	fclose(f);
	cr_assert_lt(lo, hi, "no [stack] mapping");
	cr_expect(start >= lo && start < hi, "startstack %llx outside %llx-%llx",
		  start, lo, hi);
}
