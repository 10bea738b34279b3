/*
 * Unit tests of ws_budget (src/sampling/budget.c): task counts from the
 * pause and CPU budgets and measured costs, OS threads' counts and batches,
 * the moving average, and the subsample that keeps weights unbiased; and
 * ws_random_sample_front and ws_random_subset, which random subsets use. Expected numbers are worked out by hand from
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

Test(budget, threads_whole_when_every_one_fits)
{
	/* 2 % of 10 ms is 200 us; at the first guesses (10 us of CPU a
	 * thread + 10 us to unwind it) that affords 10 threads: a process of
	 * 1 to 10 is sampled whole every tick. No CPU budget: any number. */
	struct ws_budget b = budget(1000000, 0.02, 10000000);
	for (size_t n = 1; n <= 10; n++)
		for (int r = 0; r < 100; r++)
			cr_assert_eq(ws_budget_thread_limit(&b, n), n);
	cr_assert_eq(ws_budget_thread_limit(&b, 0), 0);
	b = budget(1000000, 0, 10000000);
	cr_assert_eq(ws_budget_thread_limit(&b, 100000), 100000);
	/* 200 Hz halves the tick's budget: 5 threads whole, 6 not. */
	b = budget(1000000, 0.02, 5000000);
	cr_assert_eq(ws_budget_thread_limit(&b, 5), 5);
	cr_assert_eq(ws_budget_thread_limit(&b, 6), 5);
}

Test(budget, threads_beyond_the_budget_average_to_it)
{
	/* 1,000 threads at 100 Hz, 2 %: at 80 us of CPU a thread and 5 us
	 * to unwind it, 200 / 85 = 2.353 threads a tick, not the 32 tasks
	 * get: k is 2 or 3, 3 with probability 0.353, so its mean is the
	 * budget. */
	struct ws_budget b = budget(1000000, 0.02, 10000000);
	for (int i = 0; i < 200; i++) {
		ws_budget_note_threads(&b, 80000 * 10, 4000 * 10, 10);
		ws_budget_note_unwind(&b, 5000, 1);
	}
	cr_assert_float_eq(b.thread_cpu_ns, 80000, 1e-3);
	cr_assert_float_eq(b.thread_hold_ns, 4000, 1e-3);
	enum { ROUNDS = 20000 };
	double afford = 200000.0 / 85000.0, sum = 0;
	for (int r = 0; r < ROUNDS; r++) {
		size_t k = ws_budget_thread_limit(&b, 1000);
		cr_assert(k == 2 || k == 3, "k = %zu", k);
		sum += (double)k;
	}
	/* sd of the mean: sqrt(0.353 * 0.647 / 20000) = 0.0034; allow 6. */
	cr_assert(fabs(sum / ROUNDS - afford) < 6 * 0.0034, "mean k %f",
		  sum / ROUNDS);
	/* A budget below one thread still samples one a tick. */
	b = budget(0, 0.0001, 10000000); /* 1 us a tick */
	cr_assert_eq(ws_budget_thread_limit(&b, 1000), 1);
	/* Nothing stopped: the averages stay. */
	ws_budget_note_threads(&b, 123, 456, 0);
	cr_assert_float_eq(b.thread_cpu_ns, 10000, 1e-9);
	cr_assert_float_eq(b.thread_hold_ns, 5000, 1e-9);
}

Test(budget, tick_overhead_leaves_less_for_samples)
{
	/* 50 % of 10 ms is 5 ms a tick; live, a sample costs 12 us at the
	 * first guesses: 416 tasks. A tick of 100 samples that took 3.2 ms of
	 * CPU in all spent 3.2 - 1.2 = 2 ms beyond them: the first noted tick
	 * sets the overhead, and the next limit is (5 - 2) ms / 12 us. */
	struct ws_budget b = budget(0, 0.5, 10000000);
	cr_assert_eq(ws_budget_task_limit(&b, 0, true), 416);
	ws_budget_note_tick(&b, 3200000, 100);
	cr_assert_float_eq(b.overhead_ns, 2000000, 1e-6);
	cr_assert_float_eq(b.tick_cpu_ns, 3200000, 1e-6);
	cr_assert_eq(ws_budget_task_limit(&b, 0, true), 250);
	/* Within the budget, off the floor: no rest. */
	cr_assert_eq(ws_budget_rest_ns(&b), 0);
	/* Later ticks move both averages by a fifth: a tick of 250 samples
	 * (3 ms) in 4 ms adds 1 ms of overhead. */
	ws_budget_note_tick(&b, 4000000, 250);
	cr_assert_float_eq(b.overhead_ns, 0.8 * 2000000 + 0.2 * 1000000, 1e-6);
	cr_assert_float_eq(b.tick_cpu_ns, 0.8 * 3200000 + 0.2 * 4000000, 1e-6);
	/* Samples cheaper than their estimate are no negative overhead. */
	struct ws_budget c = budget(0, 0.5, 10000000);
	cr_assert_eq(ws_budget_task_limit(&c, 0, false), 500);
	ws_budget_note_tick(&c, 1000, 100);
	cr_assert_float_eq(c.overhead_ns, 0, 1e-9);
}

Test(budget, tick_over_the_budget_at_the_floor_rests)
{
	/* 2 % of 10 ms is 200 us. An overhead of 300 us leaves nothing: the
	 * floor of 32 tasks, and a tick of 32 at 10 us plus 300 us, 620 us,
	 * asks for 620 / 0.02 = 31 ms between ticks: 21 ms of rest. */
	struct ws_budget b = budget(0, 0.02, 10000000);
	cr_assert_eq(ws_budget_task_limit(&b, 0, false), WS_BUDGET_MIN_TASKS);
	ws_budget_note_tick(&b, 300000 + 32 * 10000, 32);
	cr_assert_float_eq(b.overhead_ns, 300000, 1e-6);
	cr_assert_eq(ws_budget_task_limit(&b, 0, false), WS_BUDGET_MIN_TASKS);
	cr_assert(b.at_floor);
	cr_assert_eq(ws_budget_rest_ns(&b), 21000000);
	/* The same tick within a budget of 10 %: 1 ms affords 70 tasks
	 * after the overhead, off the floor, no rest. */
	b = budget(0, 0.1, 10000000);
	cr_assert_eq(ws_budget_task_limit(&b, 0, false), 100);
	ws_budget_note_tick(&b, 300000 + 32 * 10000, 32);
	cr_assert_eq(ws_budget_task_limit(&b, 0, false), 70);
	cr_assert_eq(ws_budget_rest_ns(&b), 0);
	/* No CPU budget, or no tick noted yet: no rest. */
	b = budget(1000000, 0, 10000000);
	ws_budget_note_tick(&b, 50000000, 32);
	cr_assert_eq(ws_budget_rest_ns(&b), 0);
	b = budget(0, 0.02, 10000000);
	cr_assert_eq(ws_budget_task_limit(&b, 0, false), WS_BUDGET_MIN_TASKS);
	cr_assert_eq(ws_budget_rest_ns(&b), 0);
}

Test(budget, threads_afford_what_the_overhead_leaves)
{
	/* 2 % of 10 ms, 20 us a thread (first guesses): 10 threads; after
	 * 100 us of a tick's overhead, 5; after more than the budget, one. */
	struct ws_budget b = budget(1000000, 0.02, 10000000);
	cr_assert_eq(ws_budget_thread_limit(&b, 1000), 10);
	ws_budget_note_tick(&b, 100000 + 10 * 20000, 10);
	cr_assert_float_eq(b.overhead_ns, 100000, 1e-6);
	cr_assert_eq(ws_budget_thread_limit(&b, 1000), 5);
	ws_budget_note_tick(&b, 10000000, 5);
	for (int r = 0; r < 100; r++)
		cr_assert_eq(ws_budget_thread_limit(&b, 1000), 1);
}

Test(budget, thread_batches_from_the_hold_of_one)
{
	/* 1 ms at the first guess of 5 us a hold: batches of 200; at 90 us,
	 * 11; at 2 ms, still 1; no pause budget, no bound. */
	struct ws_budget b = budget(1000000, 0.02, 10000000);
	cr_assert_eq(ws_budget_thread_window(&b), 200);
	/* 0.8 * 5 + 0.2 * 90 = 22 us: 45. */
	ws_budget_note_threads(&b, 10000, 90000, 1);
	cr_assert_eq(ws_budget_thread_window(&b), 45);
	b.thread_hold_ns = 90000;
	cr_assert_eq(ws_budget_thread_window(&b), 11);
	b.thread_hold_ns = 2000000;
	cr_assert_eq(ws_budget_thread_window(&b), 1);
	b = budget(0, 0.02, 10000000);
	cr_assert_eq(ws_budget_thread_window(&b), 0);
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

/* ws_random_subset: k distinct indices, each index in as many subsets as
 * any other (k/n of them), and k = n gives every index. */
Test(random, subset_is_distinct_and_uniform)
{
	enum { N = 300, K = 7, ROUNDS = 30000 };
	static unsigned picked[N];
	uint64_t bits[(N + 63) / 64];
	size_t out[N];
	struct ws_random r;
	ws_random_seed(&r, 7);
	/* Scratch left dirty by the caller is fine. */
	memset(bits, 0xff, sizeof(bits));
	for (int round = 0; round < ROUNDS; round++) {
		ws_random_subset(&r, N, K, out, bits);
		bool seen[N] = {false};
		for (size_t i = 0; i < K; i++) {
			cr_assert_lt(out[i], N);
			cr_assert(!seen[out[i]], "index %zu twice", out[i]);
			seen[out[i]] = true;
			picked[out[i]]++;
		}
	}
	/* Expected 30000 * 7 / 300 = 700, sd sqrt(700 * (1 - 7/300)) = 26.1;
	 * allow 6. */
	for (size_t i = 0; i < N; i++)
		cr_assert(fabs((double)picked[i] - 700) < 6 * 26.1,
			  "index %zu picked %u times", i, picked[i]);
	ws_random_subset(&r, N, N, out, bits);
	bool seen[N] = {false};
	for (size_t i = 0; i < N; i++)
		seen[out[i]] = true;
	for (size_t i = 0; i < N; i++)
		cr_assert(seen[i], "k = n left out %zu", i);
}
