/*
 * fixture_truth: the fixtures' truth tables (see fixture_truth.h).
 */
#include "fixture_truth.h"

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

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

static const char *json_str(const cJSON *obj, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(obj, key));
}

static const cJSON *task_named(const cJSON *dump, const char *name)
{
	const cJSON *task;

	cJSON_ArrayForEach(task, cJSON_GetObjectItem(dump, "tasks")) {
		const char *n = json_str(task, "name");

		if (n && strcmp(n, name) == 0)
			return task;
	}
	return NULL;
}

/* Index of the first frame named fn at or after `from`, or -1. */
static int frame_index(const cJSON *frames, const char *fn, int from)
{
	for (int i = from; i < cJSON_GetArraySize(frames); i++) {
		const char *f = json_str(cJSON_GetArrayItem(frames, i), "function");

		if (f && strcmp(f, fn) == 0)
			return i;
	}
	return -1;
}

/* Asserts frames[i] is fn, with a line in threads_blocked.c. */
static void check_source_frame(const cJSON *frames, int i, const char *fn,
			       const char *who)
{
	const cJSON *frame = cJSON_GetArrayItem(frames, i);
	const char *f = json_str(frame, "function");
	const char *file = json_str(frame, "file");
	const cJSON *line = cJSON_GetObjectItem(frame, "line");

	cr_assert(f && strcmp(f, fn) == 0, "%s: frame %d is %s, expected %s",
		  who, i, f ? f : "(unnamed)", fn);
	cr_assert(file && strstr(file, "threads_blocked.c"),
		  "%s: %s in file %s, expected threads_blocked.c", who, fn,
		  file ? file : "(none)");
	cr_assert(cJSON_IsNumber(line) && line->valuedouble > 0,
		  "%s: %s has no line", who, fn);
}

void tb_check_dump_stacks(const cJSON *dump, const char *main_comm)
{
	for (int t = 0; t < TB_THREADS; t++) {
		const struct tb_thread *want = &tb_threads[t];
		const cJSON *task = task_named(dump, want->name);

		cr_assert_not_null(task, "no task named %s", want->name);
		const cJSON *frames = cJSON_GetObjectItem(task, "frames");
		int inner = frame_index(frames, want->inner, 0);

		cr_assert_geq(inner, 0, "%s: no frame %s", want->name, want->inner);
		check_source_frame(frames, inner, want->inner, want->name);
		check_source_frame(frames, inner + 1, want->outer, want->name);
		check_source_frame(frames, inner + 2, TB_THREAD_MAIN, want->name);
		cr_assert_geq(frame_index(frames, "start_thread", inner + 3), 0,
			      "%s: no start_thread below %s", want->name,
			      TB_THREAD_MAIN);
	}
	const cJSON *main_task = task_named(dump, main_comm);

	cr_assert_not_null(main_task, "no task named %s", main_comm);
	const cJSON *frames = cJSON_GetObjectItem(main_task, "frames");
	int main_frame = frame_index(frames, "main", 0);

	cr_assert_geq(main_frame, 0, "%s: no frame main", main_comm);
	check_source_frame(frames, main_frame, "main", main_comm);
	cr_assert_geq(frame_index(frames, "_start", main_frame + 1), 0,
		      "%s: no _start below main", main_comm);
}
const struct tw_thread tw_threads[TW_THREADS] = {
	{ "nanosleep", SYS_nanosleep, true },
	{ "clock_nanosleep", SYS_clock_nanosleep, false },
	{ "poll", SYS_poll, false },
	{ "ppoll", SYS_ppoll, false },
	{ "epoll_wait", SYS_epoll_wait, false },
	{ "select", SYS_select, true },
	{ "futex", SYS_futex, true },
	{ "read", SYS_read, false },
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
