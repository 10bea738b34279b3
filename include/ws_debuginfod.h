/*
 * ws_debuginfod: downloads separate debug info by build-id from the
 * debuginfod servers the user named in DEBUGINFOD_URLS, with elfutils'
 * client library (libdebuginfod, which reads that and its other
 * DEBUGINFOD_* settings from the environment itself). Downloads land in
 * the library's own cache ($DEBUGINFOD_CACHE_PATH, else
 * ~/.cache/debuginfod_client, shared with gdb and eu-stack), so each file
 * crosses the network once; misses are remembered there too (10 minutes
 * by default). Queries come from the finder (ws_finder.h) only, when it
 * names addresses: after the target was resumed, never inside a tick's
 * pause; libdw's own debuginfod client is never reached (the finder does
 * not call libdwfl's standard debuginfo finder).
 *
 * While a query waits, `service` runs at least once a second, so the
 * target's signals and new threads are still passed on; when it says
 * wallspy is to end (Ctrl-C), the download stops and no later query
 * starts. A download that takes longer than half a second prints a progress
 * line on stderr (updated in place on a terminal) and a closing line.
 */
#ifndef WS_DEBUGINFOD_H
#define WS_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>

#include "ws_error.h"

struct ws_debuginfod_options {
	bool progress;			/* the progress lines on stderr */
	/* Called while a query waits; true: stop (may be NULL). */
	bool (*service)(void *arg);
	void *service_arg;
};

struct ws_debuginfod;

/* A client (the caller checked that DEBUGINFOD_URLS names servers); *ret
 * is NULL (nothing is ever fetched) when libdebuginfod.so.1 cannot be
 * loaded or cannot start. Errors: out of memory only. */
struct ws_error *ws_debuginfod_create(const struct ws_debuginfod_options *options,
				      struct ws_debuginfod **ret);

/* NULL is fine. */
void ws_debuginfod_destroy(struct ws_debuginfod *debuginfod);

/* A read-only fd of the debug file with build-id id[0..len), -1 when no
 * server has it (or the query failed, or was interrupted); *path is the
 * file's path in the client cache (heap, the caller frees it) when found.
 * `what` names the module in the progress lines. Cost: a cache hit is a
 * few file system calls; a miss or a download, network round trips (at
 * most $DEBUGINFOD_TIMEOUT, default 90 s, without progress). */
int ws_debuginfod_find_debuginfo(struct ws_debuginfod *debuginfod,
				 const unsigned char *id, size_t len,
				 const char *what, char **path);

#endif
