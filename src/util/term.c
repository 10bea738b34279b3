/*
 * A line redrawn in place (see ws_term.h).
 */
#include "ws_term.h"

#include <string.h>
#include <sys/ioctl.h>

void ws_term_redraw(FILE *f, const char *line)
{
	struct winsize ws;
	int width = ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
	int len = (int)strlen(line);
	if (width > 1 && len >= width)
		len = width - 1;
	fprintf(f, "\r\033[K%.*s", len, line);
	fflush(f);
}
