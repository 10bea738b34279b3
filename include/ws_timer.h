/*
 * ws_timer: when record's ticks fall. Ticks sit on a grid of 1/rate from
 * the start, each moved by a jitter uniform in +-10 % of an interval, so
 * samples never fall into step with a periodic target while the long-run
 * rate stays exact. A tick that comes more than an interval late counts
 * the grid points it skipped as missed (wallspy was late: it says so, it
 * does not stretch the grid) and its samples carry their time as weight,
 * so every task's total stays its wall time. Arithmetic on times the
 * caller reads (ws_now_ns, or a fake clock in tests): no clock, no I/O.
 */
#ifndef WS_TIMER_H
#define WS_TIMER_H

#include <stdbool.h>
#include <stdint.h>

#include "ws_random.h"

/* The first ticks load debug info (tens of ms for a libc with DWARF): late
 * by design, their missed ticks are counted but not worth a warning. */
enum { WS_TIMER_SETTLING_TICKS = 10 };

struct ws_timer {
	uint64_t start_ns;
	uint64_t interval_ns;   /* 1e9 / rate, truncated */
	uint64_t end_ns;        /* UINT64_MAX: no end */
	double rate;            /* Hz */
	uint64_t k;             /* grid point of the next tick (1 first) */
	uint64_t deadline_ns;   /* the last ws_timer_next */
	uint64_t rested;        /* grid points ws_timer_rest skipped */
	bool warned_late;
	struct ws_random rng;   /* the jitter */
};

/* What a tick that came due stands for. */
struct ws_timer_tick {
	uint64_t missed;        /* grid points skipped before it (0: on time) */
	uint64_t rested;        /* grid points ws_timer_rest skipped before it */
	/* seconds its samples stand for: (1 + rested + missed) / rate */
	double weight;
	/* Where that time begins, in seconds from the start: on the grid, so
	 * that a task sampled in some ticks only shows whole ticks between
	 * its samples. */
	double covers_from;
	/* Ticks were missed for the first time since the settling ticks:
	 * the caller tells the user, once. */
	bool warn_late;
};

/* A grid from `start_ns` at `rate` Hz (> 0) ending `duration` seconds
 * later (0: never); `seed` seeds the jitter. */
void ws_timer_init(struct ws_timer *timer, uint64_t start_ns, double rate,
		   double duration, uint64_t seed);

/* The deadline of the next tick: its grid point plus a fresh jitter, no
 * later than the end. Call once per tick, before waiting. */
uint64_t ws_timer_next(struct ws_timer *timer);

/* The wait for the deadline (ws_timer_next's) ended at `now_ns`. False when
 * the end has come: no tick, the recording is over (once ws_timer_rest ran
 * past the end, a last tick first, standing for the time up to the end).
 * Else fills *tick and
 * moves the grid past this tick and the ones it missed (more than one
 * interval late: (now - deadline) / interval of them). `recorded_ticks`:
 * ticks recorded so far, which decides whether lateness is still the
 * settling ticks' (WS_TIMER_SETTLING_TICKS). `excused`: the caller knows
 * why this tick is late and that a lower rate would not help (the last
 * tick spent the interval loading debug info for addresses seen for the
 * first time): the missed ticks are counted, not warned about. */
bool ws_timer_fire(struct ws_timer *timer, uint64_t now_ns,
		   uint64_t recorded_ticks, bool excused,
		   struct ws_timer_tick *tick);

/* After a tick whose work should be followed by `ns` more than an interval
 * (ws_tick.rest_ns: the CPU budget), the next tick comes that many
 * intervals later: the whole ones, and one more with a probability of the
 * fraction left, so that the ticks are spaced by the asked time on
 * average. The skipped grid points are not missed (wallspy chose them)
 * but their time is the next tick's weight all the same. */
void ws_timer_rest(struct ws_timer *timer, uint64_t ns);

#endif
