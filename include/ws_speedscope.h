/*
 * ws_speedscope: the speedscope JSON writer
 * (https://www.speedscope.app/file-format-schema.json). Streams with
 * constant memory.
 */
#ifndef WS_SPEEDSCOPE_H
#define WS_SPEEDSCOPE_H

#include <stdio.h>

#include "ws_error.h"
#include "ws_profile.h"

/* One "sampled" profile per group, unit seconds, samples root first,
 * exporter "wallspy@VERSION", startValue/endValue = the group's start/end.
 * Fails with WS_ERR_OUTPUT when file has an error. */
struct ws_error *ws_write_speedscope(const struct ws_profile *profile,
				     FILE *file);

#endif
