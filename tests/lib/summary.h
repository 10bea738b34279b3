/*
 * summary: the one parser of the line wallspy record/attach closes with,
 *   wallspy: S s, T ticks, K tasks[ (P sampled per tick)], N samples,
 *   pause median A ms p99 B ms
 *   max C ms[, M missed ticks]; wallspy cpu X s (...), max rss R MB;
 *   TARGET; wrote FILE
 * (warnings may come before it), and of the "unwinds reused N" line that
 * WALLSPY_DEBUG_PAUSE=1 adds. For the tests that check tick accounting and
 * the pause against what they know of the target.
 */
#ifndef SUMMARY_H
#define SUMMARY_H

struct e2e_summary {
	const char *line;         /* the whole line (freed by e2e_cleanup) */
	double seconds;           /* the recording's length */
	long ticks;               /* ticks that sampled something */
	long tasks;               /* tasks alive at the last tick */
	long sampled_per_tick;    /* of them sampled (= tasks without a
				   * budget's subset) */
	long samples;
	long missed;              /* missed ticks (0 when not printed) */
	double pause_median_ms, pause_p99_ms, pause_max_ms;
	double cpu_seconds;       /* "wallspy cpu X s": wallspy's own CPU */
	const char *target;       /* "target exited with status 0", "target
				   * still running", "target killed by
				   * signal 9 (Killed)", "target sent
				   * SIGTERM by wallspy, then exited with
				   * status 0" (e2e_cleanup frees) */
	long unwinds_reused;      /* -1 without WALLSPY_DEBUG_PAUSE */
};

/* Finds and parses the summary line in wallspy's stderr; fails the test
 * when there is none. */
struct e2e_summary e2e_parse_summary(const char *err);

#endif
