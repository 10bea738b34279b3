/*
 * ws_status: recording statistics (ticks, samples, pause per tick) and their
 * two renderings: the live one-line status on a terminal (at most four
 * updates a second) and the closing summary.
 */
#ifndef WS_STATUS_H
#define WS_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ws_status {
	bool live;                /* draw the status line (stderr is a tty) */
	uint64_t start_ns;
	uint64_t last_draw_ns;
	uint64_t ticks;
	uint64_t missed_ticks;
	uint64_t samples;
	size_t last_tasks;        /* tasks sampled at the last tick */
	size_t last_live;         /* tasks alive then (>= last_tasks) */
	uint32_t *pauses_us;      /* one per tick */
	size_t npauses, capacity;
	uint64_t max_pause_ns;
	/* How to stop, before the figures ("Ctrl-C to stop and write F");
	 * NULL: none. Borrowed. */
	const char *hint;
};

void ws_status_init(struct ws_status *status, bool live, uint64_t start_ns);
void ws_status_deinit(struct ws_status *status);

/* Records one tick: `tasks` sampled, of `live` alive (the sum of the
 * samples' scales: more than sampled under a budget). */
void ws_status_tick(struct ws_status *status, uint64_t pause_ns, size_t tasks,
		    size_t live);

/* Pause percentile in milliseconds (q in [0, 1]); 0 without ticks. */
double ws_status_pause_ms(const struct ws_status *status, double q);

/* Redraws the status line if live and due. */
void ws_status_draw(struct ws_status *status, uint64_t now_ns);

/* Erases the status line (before other output). */
void ws_status_clear(struct ws_status *status);

/* "2.01 s, 201 ticks, 7 tasks, 1407 samples, pause median 0.10 ms p99 0.3
 * ms max 0.45 ms" into buf; "1000 tasks (32 sampled per tick)" when the
 * last tick sampled a subset. */
void ws_status_format(const struct ws_status *status, uint64_t now_ns,
		      char *buf, size_t size);

#endif
