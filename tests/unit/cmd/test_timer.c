/*
 * Unit tests of the tick timer (src/cmd/timer.c), driven by a fake clock:
 * ticks on time keep the long-run rate exact, each deadline stays within
 * +-10 % of an interval of its grid point and the jitter really moves,
 * lateness beyond an interval is counted as missed ticks whose time the
 * late tick carries as weight, the settling ticks are late without a
 * warning, and the end of the recording ends the ticks.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>

#include "ws_timer.h"

enum { START = 1000000000 };	/* a clock that does not start at 0 */

Test(timer, long_run_rate_is_exact, .timeout = 10)
{
	struct ws_timer timer;
	ws_timer_init(&timer, START, 100, 0, 42);
	const uint64_t interval = 10000000; /* 10 ms */
	const int ticks = 100000;
	uint64_t deadline = 0;
	double weight = 0;
	for (int i = 1; i <= ticks; i++) {
		deadline = ws_timer_next(&timer);
		struct ws_timer_tick due;
		/* The fake clock: the wait ends right at the deadline. */
		cr_assert(ws_timer_fire(&timer, deadline, (uint64_t)i - 1, false, &due));
		cr_assert_eq(due.missed, 0, "tick %d on time missed %llu", i,
			     (unsigned long long)due.missed);
		cr_assert_not(due.warn_late);
		weight += due.weight;
	}
	/* The last tick is its grid point +-10 %: 1000 s of ticks are
	 * 100,000 ticks to within a tenth of one. */
	double elapsed = (double)(deadline - START);
	double expected = (double)ticks * (double)interval;
	cr_assert(fabs(elapsed - expected) <= 0.1 * (double)interval,
		  "100000 ticks took %.0f ns, expected %.0f", elapsed, expected);
	cr_assert(fabs(weight - 1000.0) < 1e-6, "weights sum to %.9f s", weight);
}

Test(timer, jitter_within_ten_percent, .timeout = 10)
{
	struct ws_timer timer;
	ws_timer_init(&timer, START, 1000, 0, 7);
	const double interval = 1e6;
	double lo = 1, hi = -1, sum = 0;
	uint64_t previous = START;
	const int ticks = 20000;
	for (int k = 1; k <= ticks; k++) {
		uint64_t deadline = ws_timer_next(&timer);
		double offset = ((double)deadline -
				 ((double)START + k * interval)) / interval;
		cr_assert(offset >= -0.1 && offset < 0.1,
			  "tick %d is %.4f intervals off its grid point", k,
			  offset);
		cr_assert_gt(deadline, previous, "deadlines go forward");
		previous = deadline;
		lo = fmin(lo, offset);
		hi = fmax(hi, offset);
		sum += offset;
		struct ws_timer_tick due;
		cr_assert(ws_timer_fire(&timer, deadline, 0, false, &due));
	}
	/* Uniform over [-0.1, 0.1): it spans the range, centred. */
	cr_assert(lo < -0.099 && hi > 0.099, "jitter spans [%.4f, %.4f]", lo,
		  hi);
	cr_assert(fabs(sum / ticks) < 0.005, "mean jitter %.4f", sum / ticks);
}

Test(timer, missed_ticks_are_counted_and_carried_as_weight, .timeout = 10)
{
	struct ws_timer timer;
	ws_timer_init(&timer, START, 100, 0, 1);
	const uint64_t interval = 10000000;
	struct ws_timer_tick due;

	/* Up to one interval late is not a missed tick. */
	uint64_t deadline = ws_timer_next(&timer);
	cr_assert(ws_timer_fire(&timer, deadline + interval, 20, false, &due));
	cr_assert_eq(due.missed, 0);
	cr_assert_float_eq(due.weight, 0.01, 1e-12);

	/* 3.5 intervals late: three grid points were skipped, and this tick
	 * stands for four intervals. */
	deadline = ws_timer_next(&timer);
	cr_assert(ws_timer_fire(&timer, deadline + 7 * interval / 2, 20, false, &due));
	cr_assert_eq(due.missed, 3);
	cr_assert_float_eq(due.weight, 0.04, 1e-12);

	/* The grid goes on after the skipped points: ticks 1, 2 (late),
	 * 3-5 missed, so the next is grid point 6. */
	deadline = ws_timer_next(&timer);
	double offset = ((double)deadline - (double)(START + 6 * interval)) /
			(double)interval;
	cr_assert(fabs(offset) <= 0.1, "next tick %.3f intervals off point 6",
		  offset);

	/* Whatever the lateness, the weights add up to the time covered. */
	ws_timer_init(&timer, START, 100, 0, 3);
	double weight = 0;
	uint64_t now = START, missed = 0;
	for (int i = 0; i < 10000; i++) {
		deadline = ws_timer_next(&timer);
		/* Late by 0 to 4.9 intervals, by a fixed pattern. */
		now = deadline + (uint64_t)(i * 7919 % 50) * interval / 10;
		cr_assert(ws_timer_fire(&timer, now, 100, false, &due));
		weight += due.weight;
		missed += due.missed;
	}
	cr_assert_gt(missed, 1000);
	double covered = (double)(now - START) / 1e9;
	cr_assert(fabs(weight - covered) <= 0.01 * 1.2,
		  "weights %.4f s for %.4f s of ticks", weight, covered);
}

Test(timer, settling_ticks_are_late_without_a_warning, .timeout = 10)
{
	struct ws_timer timer;
	ws_timer_init(&timer, START, 100, 0, 5);
	const uint64_t interval = 10000000;
	struct ws_timer_tick due;
	uint64_t recorded = 0;
	/* Loading debug info makes the first ticks late: counted, quiet. */
	for (; recorded < WS_TIMER_SETTLING_TICKS; recorded++) {
		uint64_t deadline = ws_timer_next(&timer);
		cr_assert(ws_timer_fire(&timer, deadline + 5 * interval,
					recorded, false, &due));
		cr_assert_eq(due.missed, 5);
		cr_assert_not(due.warn_late, "warned at tick %llu",
			      (unsigned long long)recorded);
	}
	/* On time: nothing to say. */
	uint64_t deadline = ws_timer_next(&timer);
	cr_assert(ws_timer_fire(&timer, deadline, recorded, false, &due));
	cr_assert_not(due.warn_late);
	/* Late because the last tick loaded debug info (the caller says
	 * so): counted, quiet, and the warning is still to come. */
	deadline = ws_timer_next(&timer);
	cr_assert(ws_timer_fire(&timer, deadline + 3 * interval, recorded,
				true, &due));
	cr_assert_not(due.warn_late);
	cr_assert_eq(due.missed, 3);
	/* Late otherwise: warned once, counted always. */
	deadline = ws_timer_next(&timer);
	cr_assert(ws_timer_fire(&timer, deadline + 2 * interval, recorded,
				false, &due));
	cr_assert(due.warn_late);
	cr_assert_eq(due.missed, 2);
	deadline = ws_timer_next(&timer);
	cr_assert(ws_timer_fire(&timer, deadline + 2 * interval, recorded,
				false, &due));
	cr_assert_not(due.warn_late);
	cr_assert_eq(due.missed, 2);
}

Test(timer, duration_ends_the_ticks, .timeout = 10)
{
	struct ws_timer timer;
	/* 10 Hz for 0.35 s: ticks near 0.1, 0.2, 0.3 s, then the end. */
	ws_timer_init(&timer, START, 10, 0.35, 9);
	const uint64_t end = START + 350000000;
	struct ws_timer_tick due;
	int ticks = 0;
	for (;;) {
		uint64_t deadline = ws_timer_next(&timer);
		cr_assert_leq(deadline, end, "a deadline past the end");
		if (!ws_timer_fire(&timer, deadline, (uint64_t)ticks, false, &due))
			break;
		ticks++;
		cr_assert_lt(ticks, 10, "the ticks do not end");
	}
	cr_assert_eq(ticks, 3);
}

Test(timer, rest_spaces_ticks_and_keeps_their_weight, .timeout = 10)
{
	struct ws_timer timer;
	ws_timer_init(&timer, START, 100, 0, 11);
	const uint64_t interval = 10000000;
	struct ws_timer_tick due;
	uint64_t deadline = ws_timer_next(&timer);
	cr_assert(ws_timer_fire(&timer, deadline, 20, false, &due));
	cr_assert_float_eq(due.weight, 0.01, 1e-12);
	/* The tick asks for 4 intervals more than one: the next comes 4
	 * intervals later, at grid point 6, on time (not missed), and stands
	 * for the five intervals since the first. */
	ws_timer_rest(&timer, 4 * interval);
	deadline = ws_timer_next(&timer);
	double offset = ((double)deadline - (double)(START + 6 * interval)) /
			(double)interval;
	cr_assert(fabs(offset) <= 0.1, "rested tick %.3f intervals off point 6",
		  offset);
	cr_assert(ws_timer_fire(&timer, deadline, 20, false, &due));
	cr_assert_eq(due.missed, 0);
	cr_assert_eq(due.rested, 4);
	cr_assert_not(due.warn_late);
	cr_assert_float_eq(due.weight, 0.05, 1e-12);
	cr_assert_float_eq(due.covers_from, 0.01, 1e-12);
	/* The rest is spent: the tick after is one interval on. */
	deadline = ws_timer_next(&timer);
	cr_assert(ws_timer_fire(&timer, deadline, 20, false, &due));
	cr_assert_eq(due.rested, 0);
	cr_assert_float_eq(due.weight, 0.01, 1e-12);
	cr_assert_float_eq(due.covers_from, 0.06, 1e-12);
}

/* A rest of a fraction of an interval skips one grid point that often:
 * 2.3 intervals are 2 or 3, 3 in 30 % of the ticks, so that ticks asking
 * for it are 3.3 intervals apart on average; each weighs what it skipped. */
Test(timer, fractional_rest_skips_a_point_that_often, .timeout = 10)
{
	struct ws_timer timer;
	ws_timer_init(&timer, START, 100, 0, 17);
	const uint64_t interval = 10000000;
	struct ws_timer_tick due;
	enum { TICKS = 2000 };
	long threes = 0;
	for (int i = 0; i < TICKS; i++) {
		uint64_t deadline = ws_timer_next(&timer);
		cr_assert(ws_timer_fire(&timer, deadline, 20, false, &due));
		if (i > 0) {
			cr_assert(due.rested == 2 || due.rested == 3,
				  "rested %" PRIu64, due.rested);
			cr_assert_eq(due.missed, 0);
			cr_assert_float_eq(due.weight,
					   (double)(1 + due.rested) / 100, 1e-12);
			threes += due.rested == 3;
		}
		ws_timer_rest(&timer, 23 * interval / 10);
	}
	/* Binomial, n = 1999, p = 0.3: a standard deviation of 1 %. */
	double share = (double)threes / (TICKS - 1);
	cr_assert(fabs(share - 0.3) < 0.04, "3 intervals in %.3f of ticks",
		  share);
}

Test(timer, rest_past_the_end_is_a_last_tick_up_to_it, .timeout = 10)
{
	struct ws_timer timer;
	/* 100 Hz for 1 s; the first tick asks for 3 s of rest. */
	ws_timer_init(&timer, START, 100, 1.0, 13);
	struct ws_timer_tick due;
	uint64_t deadline = ws_timer_next(&timer);
	cr_assert(ws_timer_fire(&timer, deadline, 20, false, &due));
	ws_timer_rest(&timer, 3000000000ull);
	deadline = ws_timer_next(&timer);
	cr_assert_eq(deadline, START + 1000000000ull, "the end is the deadline");
	/* One last tick, for 0.01 .. 1 s; then none. */
	cr_assert(ws_timer_fire(&timer, deadline, 20, false, &due));
	cr_assert_float_eq(due.covers_from, 0.01, 1e-12);
	cr_assert_float_eq(due.weight, 0.99, 1e-9);
	cr_assert_eq(due.missed, 0);
	deadline = ws_timer_next(&timer);
	cr_assert_not(ws_timer_fire(&timer, deadline, 21, false, &due));
}
