/*
 * Unit tests of ws_budget (src/sampling/budget.c): task counts from the
 * pause and CPU budgets and measured costs, the moving average, and the
 * subsample that keeps weights unbiased; and ws_random_sample_front, which
 * every random subset uses. Expected numbers are worked out by hand from
 * the formulas in ws_budget.h.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ws_budget.h"

static struct ws_budget budget(uint64_t pause_ns, double cpu,
			       uint64_t interval_ns)
{
	struct ws_budget b;
	struct ws_budget_options o = {
		.max_pause_ns = pause_ns, .max_cpu = cpu,
		.interval_ns = interval_ns,
	};
	ws_budget_init(&b, &o, 12345);
	return b;
}

Test(budget, no_budget_no_limit)
{
	struct ws_budget b = budget(0, 0, 10000000);
	cr_assert_eq(ws_budget_task_limit(&b, 0, false), 0);
	cr_assert_eq(ws_budget_task_limit(&b, 0, true), 0);
}

Test(budget, pause_budget_from_read_cost)
{
	/* 1 ms at the first guess of 2 us per task: 500 tasks; half the
	 * pause spent leaves 250; all of it, the floor. */
	struct ws_budget b = budget(1000000, 0, 10000000);
	cr_assert_eq(ws_budget_task_limit(&b, 0, false), 500);
	cr_assert_eq(ws_budget_task_limit(&b, 500000, false), 250);
	cr_assert_eq(ws_budget_task_limit(&b, 2000000, false),
		     WS_BUDGET_MIN_TASKS);
	/* A live tick has no pause to budget. */
	cr_assert_eq(ws_budget_task_limit(&b, 0, true), 0);
}

Test(budget, cpu_budget_stopped_and_live)
{
	/* 50 % of a core at 10 ms ticks: 5 ms a tick. Stopped, only the
	 * unwind (10 us) is wallspy's CPU after the resume: 500 tasks;
	 * live, reading (2 us) is too: 5 ms / 12 us = 416. */
	struct ws_budget b = budget(0, 0.5, 10000000);
	cr_assert_eq(ws_budget_task_limit(&b, 0, false), 500);
	cr_assert_eq(ws_budget_task_limit(&b, 0, true), 416);
	/* 2 % of a core is 200 us a tick: 20 tasks, below the floor. */
	b = budget(0, 0.02, 10000000);
	cr_assert_eq(ws_budget_task_limit(&b, 0, false), WS_BUDGET_MIN_TASKS);
}

Test(budget, tighter_budget_wins)
{
	/* Pause: 1 ms / 2 us = 500; CPU: 2 ms / 10 us = 200. */
	struct ws_budget b = budget(1000000, 0.2, 10000000);
	cr_assert_eq(ws_budget_task_limit(&b, 0, false), 200);
	b = budget(200000, 0.2, 10000000); /* pause: 100 */
	cr_assert_eq(ws_budget_task_limit(&b, 0, false), 100);
}

Test(budget, moving_average_of_measured_costs)
{
	struct ws_budget b = budget(1000000, 0, 10000000);
	/* 10 tasks in 100 us: 10 us each; 0.8 * 2 us + 0.2 * 10 us. */
	ws_budget_note_read(&b, 100000, 10);
	cr_assert_float_eq(b.read_ns_per_task, 3600, 1e-9);
	ws_budget_note_read(&b, 12345, 0); /* nothing listed: no change */
	cr_assert_float_eq(b.read_ns_per_task, 3600, 1e-9);
	ws_budget_note_unwind(&b, 50000, 1);
	cr_assert_float_eq(b.unwind_ns_per_task, 0.8 * 10000 + 0.2 * 50000,
			   1e-9);
	/* The limit follows: 1 ms / 3.6 us = 277. */
	cr_assert_eq(ws_budget_task_limit(&b, 0, false), 277);
	/* Repeated, the average converges on the new cost. */
	for (int i = 0; i < 100; i++)
		ws_budget_note_read(&b, 1000, 1);
	cr_assert_float_eq(b.read_ns_per_task, 1000, 1e-3);
}

Test(budget, subsample_is_uniform_and_unbiased)
{
	enum { N = 1000, K = 100, ROUNDS = 20000 };
	static struct ws_task tasks[N];
	static unsigned picked[N];
	struct ws_budget b = budget(0, 0, 0);
	struct ws_task_list list = {.tasks = tasks, .capacity = N};
	for (int r = 0; r < ROUNDS; r++) {
		for (size_t i = 0; i < N; i++)
			tasks[i] = (struct ws_task){.id = i,
						    .scale = i % 2 ? 2 : 0};
		list.n = N;
		ws_budget_subsample(&b, &list, K);
		cr_assert_eq(list.n, K);
		bool seen[N] = {false};
		double weight = 0;
		for (size_t i = 0; i < K; i++) {
			uint64_t id = tasks[i].id;
			cr_assert(!seen[id], "task %lu picked twice", id);
			seen[id] = true;
			picked[id]++;
			/* Scale 0 means 1: every kept task stands for N/K
			 * times what it stood for. */
			double was = id % 2 ? 2 : 1;
			cr_assert_float_eq(tasks[i].scale, was * N / K, 1e-9);
			weight += tasks[i].scale / was;
		}
		cr_assert_float_eq(weight, N, 1e-6);
	}
	/* Each task is kept with probability K/N: 2000 times expected, a
	 * standard deviation of sqrt(20000 * 0.1 * 0.9) = 42.4; allow 6. */
	for (size_t i = 0; i < N; i++)
		cr_assert(fabs((double)picked[i] - ROUNDS * (double)K / N) <
				  6 * 42.4,
			  "task %zu kept %u times of %d", i, picked[i], ROUNDS);
}

Test(budget, subsample_keeps_all_when_k_covers_them)
{
	struct ws_task tasks[5];
	for (size_t i = 0; i < 5; i++)
		tasks[i] = (struct ws_task){.id = i, .scale = 1};
	struct ws_task_list list = {.tasks = tasks, .n = 5, .capacity = 5};
	struct ws_budget b = budget(0, 0, 0);
	ws_budget_subsample(&b, &list, 5);
	cr_assert_eq(list.n, 5);
	for (size_t i = 0; i < 5; i++) {
		cr_assert_eq(tasks[i].id, i, "order changed");
		cr_assert_float_eq(tasks[i].scale, 1, 1e-12);
	}
}

/* Elements larger than the swap's bounce buffer stay whole. */
Test(random, sample_front_moves_whole_elements)
{
	enum { N = 40, K = 13, SIZE = 600 };
	static unsigned char items[N][SIZE];
	for (int i = 0; i < N; i++)
		memset(items[i], i + 1, SIZE);
	struct ws_random r;
	ws_random_seed(&r, 99);
	ws_random_sample_front(&r, items, N, K, SIZE);
	bool seen[N + 1] = {false};
	for (int i = 0; i < N; i++) {
		unsigned char v = items[i][0];
		cr_assert(v >= 1 && v <= N);
		for (int j = 1; j < SIZE; j++)
			cr_assert_eq(items[i][j], v, "element %d torn at byte %d",
				     i, j);
		cr_assert(!seen[v], "element %u duplicated", v);
		seen[v] = true;
	}
}
