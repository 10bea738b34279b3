/*
 * ws_term: one line redrawn in place on a terminal (the status line, a
 * download's progress): carriage return, erase, the text cut to the
 * terminal's width. A line that wrapped would make every later redraw
 * land a row lower for good.
 */
#ifndef WS_TERM_H
#define WS_TERM_H

#include <stdio.h>

/* Writes "\r\033[K" and `line` (cut to the width of the terminal f is,
 * when it is one) to f and flushes it. */
void ws_term_redraw(FILE *f, const char *line);

#endif
