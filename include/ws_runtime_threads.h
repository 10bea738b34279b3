/*
 * ws_runtime_threads: the OS-thread runtime: every thread of the target is
 * a task whose stack starts at its live registers, taken in rolling ticks.
 */
#ifndef WS_RUNTIME_THREADS_H
#define WS_RUNTIME_THREADS_H

#include "ws_error.h"
#include "ws_runtime.h"

struct ws_error *ws_runtime_threads_create(struct ws_target *target,
					   struct ws_symbols *symbols,
					   struct ws_runtime **ret);

/* For `auto`: every process has threads, so this always creates it. */
struct ws_error *ws_runtime_threads_detect(struct ws_target *target,
					   struct ws_symbols *symbols,
					   struct ws_runtime **ret);

#endif
