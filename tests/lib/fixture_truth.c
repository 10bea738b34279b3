/*
 * fixture_truth: the fixtures' truth tables (see fixture_truth.h).
 */
#include "fixture_truth.h"

#include <criterion/criterion.h>
#include <stddef.h>
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
