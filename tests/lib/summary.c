/*
 * summary: parsing wallspy's closing summary line (see summary.h).
 */
#include "summary.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e_util.h"

struct e2e_summary e2e_parse_summary(const char *err)
{
	struct e2e_summary s = { .unwinds_reused = -1 };
	const char *line = NULL;

	for (const char *p = err; p && *p;
	     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		int n = 0;
		long sampled = -1;
		if (sscanf(p, "wallspy: %lf s, %ld ticks, %ld tasks%n", &s.seconds,
			   &s.ticks, &s.tasks, &n) == 3) {
			const char *q = p + n;
			int m = 0;
			if (sscanf(q, " (%ld sampled per tick)%n", &sampled, &m) == 1)
				q += m;
			if (sscanf(q, ", %ld samples, pause median %lf ms p99 %lf "
				      "ms max %lf ms", &s.samples,
				   &s.pause_median_ms, &s.pause_p99_ms,
				   &s.pause_max_ms) == 4) {
				line = p;
				s.sampled_per_tick = sampled >= 0 ? sampled : s.tasks;
			}
		}
		long reused;
		if (sscanf(p, "wallspy: unwinds reused %ld", &reused) == 1)
			s.unwinds_reused = reused;
	}
	cr_assert_not_null(line, "no summary line in: %s", err);
	s.line = e2e_strndup(line, strcspn(line, "\n"));

	/* The parts after the numbers, separated by "; " and ", ". */
	const char *missed = strstr(s.line, " missed ticks");
	if (missed) {
		const char *p = missed;

		while (p > s.line && p[-1] >= '0' && p[-1] <= '9')
			p--;
		s.missed = atol(p);
	}
	const char *cpu = strstr(s.line, "; wallspy cpu ");
	cr_assert_not_null(cpu, "no wallspy cpu in: %s", s.line);
	s.cpu_seconds = atof(cpu + strlen("; wallspy cpu "));
	const char *target = strstr(s.line, "; target ");
	cr_assert_not_null(target, "no target's fate in: %s", s.line);
	target += 2;
	const char *end = strstr(target, "; wrote ");
	s.target = e2e_strndup(target, end ? (size_t)(end - target)
					   : strlen(target));
	return s;
}
