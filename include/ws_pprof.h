/*
 * ws_pprof: the pprof writer — a gzipped profile.proto, as read by
 * `go tool pprof`, Pyroscope, Parca and Grafana. Locations are the
 * profile's lines grouped by inlining (leaf first, inlined calls as several
 * Line entries, innermost first), functions are (name, file), one mapping
 * per module; each sample's state, wait reason, task (goroutine for Go),
 * thread and task name are labels, not frames. Values are samples/count and
 * wall/nanoseconds (task-seconds: the merged, unbiased weights whatever the
 * grouping), so the profile's total is the recording's task-seconds.
 */
#ifndef WS_PPROF_H
#define WS_PPROF_H

#include <stdio.h>

#include "ws_error.h"
#include "ws_profile.h"

/* Writes the profile to `file`. Streams: memory is that of the tables of
 * strings, functions and locations, not of the samples. Errors:
 * WS_ERR_OUTPUT on a write or compression failure, out of memory. */
struct ws_error *ws_write_pprof(const struct ws_profile *profile, FILE *file);

#endif
