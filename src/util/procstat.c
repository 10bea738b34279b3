/*
 * /proc/PID/stat fields (see ws_procstat.h): the one place that knows how
 * such a line is split, for the target's thread count and the descriptor
 * adapter's main-thread stack alike.
 */
#include "ws_procstat.h"

#include <string.h>

const char *ws_procstat_field(const char *line, int field)
{
	if (field < 3)
		return NULL;
	/* ") " ends field 2; each later field is preceded by one space. */
	const char *p = strrchr(line, ')');
	for (int at = 2; p && at < field; at++)
		p = strchr(p + 1, ' ');
	if (!p || p[1] == '\0' || p[1] == '\n')
		return NULL;
	return p + 1;
}
