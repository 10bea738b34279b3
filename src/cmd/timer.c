/*
 * The tick timer of record and attach (see ws_timer.h): the jittered grid,
 * the missed-tick count and the weight a late tick carries. The loop that
 * waits for each deadline, and what a tick samples, are cmd_record.c's.
 */
#include "ws_timer.h"

void ws_timer_init(struct ws_timer *timer, uint64_t start_ns, double rate,
		   double duration, uint64_t seed)
{
	*timer = (struct ws_timer){
		.start_ns = start_ns,
		.interval_ns = (uint64_t)(1e9 / rate),
		.end_ns = duration > 0 ? start_ns + (uint64_t)(duration * 1e9)
				       : UINT64_MAX,
		.rate = rate,
		.k = 1,
	};
	ws_random_seed(&timer->rng, seed);
}

/* Jitter of a tick, uniform in [-0.1, 0.1) intervals: cheap and not
 * periodic is all it needs. */
static double jitter(struct ws_timer *timer)
{
	return ws_random_unit(&timer->rng) * 0.2 - 0.1;
}

uint64_t ws_timer_next(struct ws_timer *timer)
{
	uint64_t next = timer->start_ns + timer->k * timer->interval_ns +
			(int64_t)(jitter(timer) * (double)timer->interval_ns);
	timer->deadline_ns = next > timer->end_ns ? timer->end_ns : next;
	return timer->deadline_ns;
}

bool ws_timer_fire(struct ws_timer *timer, uint64_t now_ns,
		   uint64_t recorded_ticks, bool excused,
		   struct ws_timer_tick *tick)
{
	if (now_ns >= timer->end_ns) {
		if (!timer->rested || timer->end_ns == UINT64_MAX)
			return false;
		/* Resting ran past the end: one last tick stands for the
		 * time from the one before to the end, or the profile would
		 * lose up to a whole rest. */
		double from = (double)(timer->k - 1 - timer->rested) / timer->rate;
		*tick = (struct ws_timer_tick){
			.rested = timer->rested,
			.covers_from = from,
			.weight = (double)(timer->end_ns - timer->start_ns) / 1e9 - from,
		};
		timer->rested = 0;
		return tick->weight > 0;
	}
	*tick = (struct ws_timer_tick){
		.rested = timer->rested,
		.covers_from = (double)(timer->k - 1 - timer->rested) / timer->rate,
	};
	timer->rested = 0;
	/* Up to an interval late is the jitter's business; beyond, whole
	 * intervals were skipped. */
	uint64_t deadline = timer->deadline_ns;
	if (now_ns > deadline + timer->interval_ns) {
		tick->missed = (now_ns - deadline) / timer->interval_ns;
		timer->k += tick->missed;
		if (!timer->warned_late && !excused &&
		    recorded_ticks >= WS_TIMER_SETTLING_TICKS) {
			timer->warned_late = true;
			tick->warn_late = true;
		}
	}
	timer->k++;
	tick->weight = (double)(1 + tick->rested + tick->missed) / timer->rate;
	return true;
}

void ws_timer_rest(struct ws_timer *timer, uint64_t ns)
{
	uint64_t skip = ns / timer->interval_ns;
	double left = (double)(ns % timer->interval_ns) /
		      (double)timer->interval_ns;
	if (ws_random_unit(&timer->rng) < left)
		skip++;
	timer->k += skip;
	timer->rested += skip;
}
