/*
 * fixture_truth: the fixtures' truth tables (see fixture_truth.h).
 */
#include "fixture_truth.h"

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "e2e_util.h"

const struct tb_thread tb_threads[TB_THREADS] = {
	{ "t_mutex", "mutex_waiter_outer", "mutex_waiter_block", "futex", NULL },
	{ "t_cond", "cond_waiter_outer", "cond_waiter_block", "futex", NULL },
	{ "t_pipe", "pipe_reader_outer", "pipe_reader_block", "read", NULL },
	{ "t_sleep", "sleeper_outer", "sleeper_block", "clock_nanosleep",
	  "nanosleep" },
	{ "t_poll", "poller_outer", "poller_block", "poll", "ppoll" },
	{ "t_spin", "spinner_outer", "spinner_block", NULL, NULL },
};

void tb_wait_sampled(pid_t pid)
{
	pid_t sleeper = e2e_thread_named(pid, "t_sleep");

	cr_assert_neq(sleeper, 0, "threads_blocked %d has no t_sleep", pid);
	cr_assert(e2e_wait_woken(pid, sleeper, 6, 10000),
		  "threads_blocked %d is not sampled (t_sleep never woken)", pid);
}

uint64_t churn_sum(uint64_t count)
{
	uint64_t sum = 0;

	for (uint64_t i = 0; i < count; i++) {
		uint64_t x = i * UINT64_C(0x9E3779B97F4A7C15) + 1;

		for (int round = 0; round < 1000; round++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		sum += x;
	}
	return sum;
}

int truth_load(const char *path, struct truth_task *out)
{
	char *argv[] = { (char *)path, "--expected", NULL };
	struct e2e_result res;
	int n = 0;

	e2e_run(argv, NULL, 10000, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "%s --expected: %s", path, res.err);
	for (char *line = strtok(res.out, "\n"); line; line = strtok(NULL, "\n")) {
		struct truth_task *t = &out[n];
		char *fields[3 + TRUTH_MAX_CHAIN];
		int nf = 0;

		cr_assert_lt(n, TRUTH_MAX_TASKS);
		memset(t, 0, sizeof(*t));
		for (char *f = line; f && nf < 3 + TRUTH_MAX_CHAIN; nf++) {
			fields[nf] = f;
			f = strchr(f, '\t');
			if (f)
				*f++ = '\0';
		}
		cr_assert_geq(nf, 4, "bad --expected line: %s", line);
		snprintf(t->name, sizeof(t->name), "%s", fields[0]);
		if (strcmp(fields[1], "WAITING") == 0)
			snprintf(t->state, sizeof(t->state), "waiting");
		else if (strcmp(fields[1], "RUNNING") == 0)
			snprintf(t->state, sizeof(t->state), "running");
		else
			cr_assert_fail("unexpected state %s in --expected", fields[1]);
		if (strcmp(fields[2], "-") != 0)
			snprintf(t->reason, sizeof(t->reason), "%s", fields[2]);
		for (int i = 3; i < nf; i++)
			snprintf(t->chain[t->nchain++], sizeof(t->chain[0]), "%s",
				 fields[i]);
		n++;
	}
	cr_assert_gt(n, 0, "%s --expected printed nothing", path);
	return n;
}
