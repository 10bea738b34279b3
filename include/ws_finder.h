/*
 * ws_finder: where the files of a target's modules come from, as libdwfl
 * callbacks. A module is opened through the target's own view of the
 * filesystem, never by its path on the host: the file the kernel mapped
 * (/proc/PID/map_files/START-END), else the path under the target's root
 * (/proc/PID/root/PATH), else, for a deleted executable, /proc/PID/exe.
 * So a process in a container (another mount namespace, another root) and
 * a binary deleted or replaced since it started are named like any other.
 * Separate debug info is looked up by build-id (.build-id/xx/rest.debug)
 * and by .gnu_debuglink (beside the file, in its .debug/, under
 * /usr/lib/debug) inside the target's root first, then the host's, then,
 * when a client is given, from debuginfod (ws_debuginfod.h); every file
 * found is checked against the module's build-id (a debuglink without one:
 * its CRC). Compressed DWARF goes through the debug-info cache
 * (ws_debugcache.h). Nothing here reads the environment.
 */
#ifndef WS_FINDER_H
#define WS_FINDER_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <sys/types.h>

#include "ws_error.h"

struct ws_debugcache;
struct ws_debuginfod;

/* Where a finder may take files from besides the target's and the host's
 * filesystems. Both borrowed, both may be NULL, both must outlive the
 * finder. */
struct ws_finder_options {
	struct ws_debugcache *debug_cache;  /* uncompressed copies */
	struct ws_debuginfod *debuginfod;   /* downloads by build-id */
};

struct ws_finder;

/* A finder for process `pid` (options may be NULL: none). Reads whether
 * the target sees another filesystem than wallspy (its mount namespace or
 * its root differ). Errors: out of memory only. */
struct ws_error *ws_finder_create(pid_t pid,
				  const struct ws_finder_options *options,
				  struct ws_finder **ret);

/* NULL is fine. Only after the last Dwfl that uses it is gone. */
void ws_finder_destroy(struct ws_finder *finder);

/* The callbacks for dwfl_begin (static storage). Modules without a finder
 * (ws_finder_attach) are opened by libdwfl's /proc finder and get no
 * separate debug info. */
const Dwfl_Callbacks *ws_finder_callbacks(void);

/* Makes `finder` the finder of every module of `dwfl` that has none yet,
 * through the module's userdata: call it after each dwfl_report_end. */
void ws_finder_attach(struct ws_finder *finder, Dwfl *dwfl);

#endif
