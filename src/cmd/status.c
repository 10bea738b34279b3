/*
 * Recording statistics and the terminal status line (see ws_status.h).
 */
#include "ws_status.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ws_grow.h"
#include "ws_term.h"

void ws_status_init(struct ws_status *s, bool live, uint64_t start_ns)
{
	memset(s, 0, sizeof(*s));
	s->live = live;
	s->start_ns = start_ns;
}

void ws_status_deinit(struct ws_status *s)
{
	free(s->pauses_us);
	memset(s, 0, sizeof(*s));
}

void ws_status_tick(struct ws_status *s, uint64_t pause_ns, size_t tasks,
		    size_t live)
{
	s->ticks++;
	s->samples += tasks;
	s->last_tasks = tasks;
	s->last_live = live > tasks ? live : tasks;
	if (pause_ns > s->max_pause_ns)
		s->max_pause_ns = pause_ns;
	if (!ws_grow((void **)&s->pauses_us, &s->capacity, s->npauses + 1,
		     sizeof(*s->pauses_us)))
		return; /* statistics degrade, recording goes on */
	uint64_t us = pause_ns / 1000;
	s->pauses_us[s->npauses++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

double ws_status_pause_ms(const struct ws_status *s, double q)
{
	if (s->npauses == 0)
		return 0;
	if (q >= 1)
		return (double)s->max_pause_ns / 1e6;
	/* Sorting a copy each call is fine at <= 4 calls a second. */
	uint32_t *copy = malloc(s->npauses * sizeof(*copy));
	if (!copy)
		return 0;
	memcpy(copy, s->pauses_us, s->npauses * sizeof(*copy));
	qsort(copy, s->npauses, sizeof(*copy), cmp_u32);
	size_t i = (size_t)(q * (double)(s->npauses - 1) + 0.5);
	double ms = copy[i] / 1e3;
	free(copy);
	return ms;
}

void ws_status_format(const struct ws_status *s, uint64_t now_ns, char *buf,
		      size_t size)
{
	char tasks[96];
	if (s->last_live > s->last_tasks)
		snprintf(tasks, sizeof(tasks), "%zu tasks (%zu sampled per tick)",
			 s->last_live, s->last_tasks);
	else
		snprintf(tasks, sizeof(tasks), "%zu tasks", s->last_tasks);
	snprintf(buf, size,
		 "%.2f s, %" PRIu64 " ticks, %s, %" PRIu64
		 " samples, pause median %.2f ms p99 %.2f ms max %.2f ms",
		 (double)(now_ns - s->start_ns) / 1e9, s->ticks, tasks,
		 s->samples, ws_status_pause_ms(s, 0.5),
		 ws_status_pause_ms(s, 0.99), ws_status_pause_ms(s, 1));
	if (s->missed_ticks) {
		size_t len = strlen(buf);
		snprintf(buf + len, size - len, ", %" PRIu64 " missed ticks",
			 s->missed_ticks);
	}
}

void ws_status_draw(struct ws_status *s, uint64_t now_ns)
{
	if (!s->live || now_ns - s->last_draw_ns < 250 * 1000000ull)
		return;
	s->last_draw_ns = now_ns;
	char figures[256], line[512];
	ws_status_format(s, now_ns, figures, sizeof(figures));
	if (s->hint)
		snprintf(line, sizeof(line), "wallspy (%s): %s", s->hint, figures);
	else
		snprintf(line, sizeof(line), "wallspy: %s", figures);
	ws_term_redraw(stderr, line);
}

void ws_status_clear(struct ws_status *s)
{
	if (s->live && s->last_draw_ns) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
}
