/*
 * The monotonic clock (see ws_clock.h). Kept apart from the modules that
 * read it, so timing code (the tick timer, the sampler's budgets) needs no
 * part of ptrace to tell the time.
 */
#include "ws_clock.h"

#include <time.h>

uint64_t ws_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ws_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
