/*
 * Unit tests of the folded writer (src/output/folded.c): a small recording
 * written into memory and split back into "STACK COUNT" lines: counts in
 * ticks, groups as roots, separators inside names, rounding, write errors.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_fixture.h"
#include "ws_folded.h"

struct folded_line {
	char stack[1024];
	long long count;
};

/* Splits folded text into lines; checks each is "STACK COUNT". */
static size_t parse_folded(char *text, struct folded_line *lines, size_t max)
{
	size_t n = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		cr_assert_lt(n, max);
		char *space = strrchr(line, ' ');
		cr_assert_not_null(space, "no count: %s", line);
		char *end;
		lines[n].count = strtoll(space + 1, &end, 10);
		cr_assert_eq(*end, '\0', "bad count: %s", line);
		cr_assert_geq(lines[n].count, 1);
		*space = '\0';
		cr_assert_lt(strlen(line), sizeof(lines[n].stack));
		strcpy(lines[n].stack, line);
		n++;
	}
	return n;
}

static const struct folded_line *find_line(const struct folded_line *lines,
					   size_t n, const char *stack)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(lines[i].stack, stack) == 0)
			return &lines[i];
	return NULL;
}

Test(folded, all)
{
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	double total = pf_fill(profile);
	char *text = pf_write_to_memory(profile, ws_write_folded);
	struct folded_line lines[64];
	size_t n = parse_folded(text, lines, 64);
	long long sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += lines[i].count;
		cr_assert_null(find_line(lines, i, lines[i].stack),
			       "duplicate line %s", lines[i].stack);
		/* Names only, and no frame may contain a line break. */
		cr_assert_null(strstr(lines[i].stack, "a.c"));
	}
	cr_assert_eq(sum, llround(total / 0.01));
	const struct folded_line *running =
		find_line(lines, n, "main;middle;leaf;[running]");
	cr_assert_not_null(running);
	cr_assert_eq(running->count, 60);
	const struct folded_line *failed =
		find_line(lines, n, "[failed to sample: task exited]");
	cr_assert_not_null(failed);
	cr_assert_eq(failed->count, 60);
	/* ';' inside a name is not a frame boundary. */
	const struct folded_line *semi =
		find_line(lines, n, "main;middle;[waiting: semi:colon]");
	cr_assert_not_null(semi);
	const struct folded_line *unnamed =
		find_line(lines, n, "main;other;libc.so.6+0x10;[waiting: futex]");
	cr_assert_not_null(unnamed);
	bool saw_nasty = false;
	for (size_t i = 0; i < n; i++)
		if (strstr(lines[i].stack, "semi:colon:and newline")) {
			saw_nasty = true;
			cr_assert_eq(lines[i].count, 120);
		}
	cr_assert(saw_nasty);
	free(text);
	ws_profile_destroy(profile);
}

Test(folded, groups_are_roots)
{
	struct ws_profile *profile = pf_create(WS_GROUP_TASK);
	pf_fill(profile);
	char *text = pf_write_to_memory(profile, ws_write_folded);
	struct folded_line lines[64];
	size_t n = parse_folded(text, lines, 64);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(strncmp(lines[i].stack, "task ", 5), 0, "%s",
			     lines[i].stack);
		cr_assert_null(find_line(lines, i, lines[i].stack),
			       "duplicate line %s", lines[i].stack);
	}
	/* Task 0 gets samples i = 0, 3, 6, ...: i % 5 cycles through every
	 * kind, 20 samples each; time-ordered entries are summed per stack. */
	const struct folded_line *line =
		find_line(lines, n, "task 0;main;middle;leaf;[running]");
	cr_assert_not_null(line);
	cr_assert_eq(line->count, 20);
	line = find_line(lines, n,
			 "task 1 \"worker \"1\"\";[failed to sample: task exited]");
	cr_assert_not_null(line);
	cr_assert_eq(line->count, 20);
	free(text);
	ws_profile_destroy(profile);
}

Test(folded, counts_round)
{
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	struct ws_sample s = {
		.frames = pf_leaf_to_main, .nframes = 3, .state = WS_STATE_RUNNING,
		.weight = 0.0149,
	};
	pf_add(profile, &s);  /* 1.49 ticks -> 1 */
	s.state = WS_STATE_RUNNABLE;
	s.weight = 0.0151;
	pf_add(profile, &s);  /* 1.51 ticks -> 2 */
	s.state = WS_STATE_IDLE;
	s.weight = 0.0001;
	pf_add(profile, &s);  /* at least 1 */
	s.state = WS_STATE_SYSCALL;
	s.weight = 2.5;    /* a subsampled task: 250 ticks */
	pf_add(profile, &s);
	char *text = pf_write_to_memory(profile, ws_write_folded);
	cr_assert_str_eq(text,
			 "main;middle;leaf;[running] 1\n"
			 "main;middle;leaf;[runnable] 2\n"
			 "main;middle;leaf;[idle worker] 1\n"
			 "main;middle;leaf;[syscall] 250\n");
	free(text);
	ws_profile_destroy(profile);
}


Test(folded, write_error)
{
	FILE *full = fopen("/dev/full", "w");
	cr_assert_not_null(full);
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	pf_fill(profile);
	struct ws_error *err = ws_write_folded(profile, full);
	cr_assert_not_null(err);
	cr_assert_eq(err->kind, WS_ERR_OUTPUT);
	ws_error_destroy(err);
	fclose(full);
	ws_profile_destroy(profile);
}
