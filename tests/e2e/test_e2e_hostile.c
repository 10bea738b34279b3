/*
 * End-to-end tests of hostile registries (issue #14.2) on a live process:
 * greenrt_parked with its registries corrupted once every task is parked
 * (fixtures/greenrt/parked.c: cycle, wild, table-huge, table-neg). Before,
 * a cycle behind a count of 2^31 held the target stopped for ~2 minutes
 * while wallspy grew to 5.7 GB, a small cycle listed every task again and
 * again, array counts of 2^31 or -1 ended a recording after 100 failed
 * ticks, and a wild next pointer cut the list short without a word.
 *
 * The truth is the fixture's construction: its table (`greenrt_parked
 * --expected`) names every task; the corruption says where the walk must
 * stop and why. Each case: wallspy finishes well within its timeout, every
 * task reachable is listed exactly once, the failure is visible (a failed
 * sample saying why, and one warning), and the target is left running.
 * The same shapes on an in-memory image, with exact counts, are in
 * tests/unit/runtimes/test_runtime_descriptor.c; fuzz/fuzz_walk.c fuzzes
 * them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "descriptor_edit.h"
#include "e2e_util.h"
#include "fixture_truth.h"
#include "summary.h"
#include "wallspy_run.h"

E2E_SERIAL_TESTS()

#define FIXTURE "greenrt/greenrt_parked"

static const char *str_of(const cJSON *obj, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(obj, key));
}

/* The number of times `needle` occurs in `text`. */
static int occurrences(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* `dump --json` of a corrupted greenrt_parked through DESCRIPTOR: within
 * 30 s, exit 0; the dump parsed into *dump and its stderr returned. */
static const char *dump_corrupted(pid_t pid, const char *descriptor, cJSON **dump)
{
	const char *opts[] = { "--json", "--runtime", descriptor, NULL };
	struct e2e_result res = e2e_run_dump(pid, opts, NULL, 0, 30000);
	*dump = e2e_parse_json(res.out);
	cr_assert_not_null(*dump, "dump --json output is not JSON:\n%s", res.out);
	return res.err;
}

/* Entries of the dump that are not idle workers (listed besides the
 * tasks, one per idle worker). */
static int non_idle(const cJSON *dump)
{
	const cJSON *task;
	int n = 0;
	cJSON_ArrayForEach(task, cJSON_GetObjectItem(dump, "tasks")) {
		const char *state = str_of(task, "state");
		n += !state || strcmp(state, "idle") != 0;
	}
	return n;
}

/* Every task of the fixture's table listed once, without an error. */
static void check_table_listed(const cJSON *dump)
{
	struct truth_task table[TRUTH_MAX_TASKS];
	int ntable = truth_load(e2e_fixture(FIXTURE), table);

	for (int e = 0; e < ntable; e++) {
		const cJSON *task = e2e_dump_task(dump, table[e].name);
		cr_assert_not_null(task, "%s not listed", table[e].name);
		cr_assert(cJSON_IsNull(cJSON_GetObjectItem(task, "error")),
			  "%s: %s", table[e].name, str_of(task, "error"));
	}
}

/* Tasks of the dump with error `error`. */
static int failed_samples(const cJSON *dump, const char *error)
{
	const cJSON *task;
	int n = 0;
	cJSON_ArrayForEach(task, cJSON_GetObjectItem(dump, "tasks")) {
		const char *e = str_of(task, "error");
		n += e && strcmp(e, error) == 0;
	}
	return n;
}

/* A cycle (the last task links back to the second) behind a count of
 * 2^31: every task once, one failed sample and one warning saying so. */
Test(e2e_hostile, list_cycle_behind_huge_count, .timeout = 90, .fini = e2e_cleanup)
{
	struct truth_task table[TRUTH_MAX_TASKS];
	int ntable = truth_load(e2e_fixture(FIXTURE), table);
	pid_t pid = e2e_start_fixture(FIXTURE, "cycle", "ready", 20000);
	cJSON *dump;
	const char *err = dump_corrupted(pid, GREENRT_LIST_DESCRIPTOR, &dump);

	check_table_listed(dump);
	cr_assert_eq(non_idle(dump), ntable + 1,
		     "%d entries, the table's %d tasks and one failed sample expected",
		     non_idle(dump), ntable);
	cr_assert_eq(failed_samples(dump, "registry list has a cycle"), 1);
	cr_assert_eq(occurrences(err, "registry list has a cycle"), 1, "stderr: %s", err);
	e2e_check_healthy_then_stop(pid);
}

/* The third task (the list is newest first) links to unmapped memory:
 * the three before the cut are listed, then a failed sample at the wild
 * pointer, and a warning naming it. */
Test(e2e_hostile, list_wild_next_pointer, .timeout = 90, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture(FIXTURE, "wild", "ready", 20000);
	cJSON *dump;
	const char *err = dump_corrupted(pid, GREENRT_LIST_DESCRIPTOR, &dump);

	cr_assert_eq(non_idle(dump), 4, "%d entries", non_idle(dump));
	cr_assert_eq(failed_samples(dump, "registry list cut short: next pointer unreadable"), 1);
	cr_assert(strstr(err, "cut short") && strstr(err, "0x7000dead0000"),
		  "no warning naming the wild pointer: %s", err);
	e2e_check_healthy_then_stop(pid);
}

/* Array counts of 2^31 and -1: clamped to registry.max and to the memory
 * readable behind the table (the heap goes on past greenrt's table: the
 * slots past its end hold whatever is there, each a failed sample), each
 * clamp said once. A dump lists every task of the table; a recording
 * keeps sampling (it ended after 100 failed ticks) and says each clamp
 * once, however many ticks. Under the budgets a recording samples a
 * random subset of the readable slots, weighted: a task is not in every
 * tick, so the recording is not held to the table. */
static void check_huge_table_count(const char *mode)
{
	pid_t pid = e2e_start_fixture(FIXTURE, mode, "ready", 20000);
	cJSON *dump;
	const char *err = dump_corrupted(pid, GREENRT_DESCRIPTOR, &dump);

	check_table_listed(dump);
	cr_assert_eq(occurrences(err, "over registry.max"), 1, "stderr: %s", err);
	cr_assert_eq(occurrences(err, "exceeds the memory readable"), 1, "stderr: %s", err);

	const char *opts[] = { "-d", "1", "-f", "folded", "--runtime",
			       GREENRT_DESCRIPTOR, NULL };
	const char *out;
	struct e2e_result res = e2e_attach(pid, opts, "out.folded", &out, 60000);
	struct e2e_summary s = e2e_parse_summary(res.err);

	cr_assert_not_null(e2e_read_file(out));
	cr_assert_gt(s.ticks, 10, "%ld ticks: %s", s.ticks, res.err);
	cr_assert_eq(occurrences(res.err, "over registry.max"), 1, "stderr: %s", res.err);
	cr_assert_eq(occurrences(res.err, "exceeds the memory readable"), 1,
		     "stderr: %s", res.err);
	e2e_check_healthy_then_stop(pid);
}

Test(e2e_hostile, array_count_2e31, .timeout = 90, .fini = e2e_cleanup)
{
	check_huge_table_count("table-huge");
}

Test(e2e_hostile, array_count_minus_1, .timeout = 90, .fini = e2e_cleanup)
{
	check_huge_table_count("table-neg");
}
