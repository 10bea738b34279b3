/*
 * ws_dump: writes one tick as text (for people) or JSON (for tools; the
 * shape is a contract, see wallspy(1)).
 */
#ifndef WS_DUMP_H
#define WS_DUMP_H

#include <stdio.h>
#include <sys/types.h>

#include "ws_error.h"
#include "ws_sampler.h"

struct ws_error *ws_dump_write_text(FILE *file, const struct ws_tick *tick);
struct ws_error *ws_dump_write_json(FILE *file, pid_t pid, const char *runtime,
				    const struct ws_tick *tick);

#endif
