/*
 * ws_folded: the folded-stacks writer (flamegraph.pl's input).
 */
#ifndef WS_FOLDED_H
#define WS_FOLDED_H

#include <stdio.h>

#include "ws_error.h"
#include "ws_profile.h"

/* "root;...;leaf COUNT" per line, one line per distinct stack of a group,
 * COUNT = round(weight / interval), at least 1. Frames are names only; ';'
 * in a name becomes ':' and line breaks become spaces. With grouping other
 * than "all", the group name is the root frame. Memory: a table of one
 * group's distinct stacks at a time. Fails with WS_ERR_OUTPUT when file has
 * an error. */
struct ws_error *ws_write_folded(const struct ws_profile *profile, FILE *file);

#endif
