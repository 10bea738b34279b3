/*
 * ws_debugcache: a persistent cache of uncompressed copies of ELF files
 * whose DWARF is compressed (SHF_COMPRESSED .debug_* sections), keyed by
 * build-id (a Go program's Go build ID note when it has no GNU build-id),
 * so libdw maps the DWARF instead of inflating it on every run
 * (Debian 12's libc6-dbg: ~35 ms of zlib per run; perf's ~/.debug and
 * debuginfod's client cache work the same way).
 *
 * Where it is and whether it says why it does what it does are the
 * command's to decide, once (ws_cli_debug_cache: $WALLSPY_DEBUG_CACHE,
 * else $XDG_CACHE_HOME/wallspy/debuginfo, else
 * $HOME/.cache/wallspy/debuginfo; $WALLSPY_DEBUG_CACHE_LOG); nothing here
 * reads the environment. Files: BUILDID.debug (a separate debug file),
 * BUILDID.elf (a module's own file with compressed DWARF), each the size of
 * the uncompressed original (~10 MB for libc6-dbg); nothing evicts them:
 * `rm -r` the directory. Everything here fails soft: the caller then uses
 * the original file.
 */
#ifndef WS_DEBUGCACHE_H
#define WS_DEBUGCACHE_H

#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>

#include "ws_error.h"

struct ws_debugcache;

/* What a cached copy stands for: the two kinds live side by side under one
 * build-id (a module and its separate debug file share it) and must not be
 * mistaken for each other (a debug file's code sections are NOBITS). */
enum ws_debugcache_kind {
	WS_DEBUGCACHE_DEBUG,	/* separate debug file: BUILDID.debug */
	WS_DEBUGCACHE_MAIN,	/* a module's own file: BUILDID.elf */
};

/* A cache's settings, decided by the command (ws_cli_debug_cache). */
struct ws_debugcache_options {
	const char *dir;	/* the directory; NULL: none (the cache is off) */
	bool log;		/* one stderr line per decision of the cache */
};

/* Opens the cache in `dir`, creating missing directories with mode 0700.
 * Refuses (WS_ERR_OTHER, nothing created inside) a directory not owned by
 * the effective uid or writable by group or others: wallspy runs as root
 * and must not hand libdw files another user planted. The directory is
 * held open, so renaming its path afterwards does not redirect the cache. */
struct ws_error *ws_debugcache_open(const char *dir, struct ws_debugcache **ret);

/* A cache that opens options->dir (copied) as ws_debugcache_open does, on
 * first use: when libdwfl first finds a file, so a command that never gets
 * that far creates no directory. No directory, or one refused, makes it
 * unusable from then on (said once when logging: "off", or why). Errors:
 * out of memory only. */
struct ws_error *ws_debugcache_create(const struct ws_debugcache_options *options,
				      struct ws_debugcache **ret);

/* NULL is fine. */
void ws_debugcache_close(struct ws_debugcache *cache);

/* For the ELF file open on `fd` (not consumed, its offset untouched): when
 * it has compressed non-allocated sections, *ret_fd is a read-only fd of its
 * uncompressed copy in the cache (written on first use: ~50 ms and the
 * uncompressed size on disk for libc6-dbg) and *ret_path that copy's path
 * (heap; the caller owns both). A copy found in the cache is used only
 * after checking it against the original: an ELF with the same build-id,
 * section for section the same types and uncompressed sizes, all within
 * the file, none compressed, owned by us and not group/world-writable
 * (~0.1 ms). A bad one is rewritten. When the file has nothing compressed,
 * *ret_fd = -1 and NULL is returned. `build_id` (may be NULL): the build-id
 * the file must carry. Errors (no build-id, no space, ...) leave
 * *ret_fd = -1 (also when a cache of ws_debugcache_create cannot be
 * used). Writes are atomic (a temporary file renamed into place), so
 * concurrent wallspy processes are fine. */
struct ws_error *ws_debugcache_get(struct ws_debugcache *cache, int fd,
				   enum ws_debugcache_kind kind,
				   const unsigned char *build_id,
				   size_t build_id_len, int *ret_fd,
				   char **ret_path);

/* One stderr line "wallspy: debug cache: ..." when the cache logs its
 * decisions (ws_debugcache_options.log), else nothing. */
__attribute__((format(printf, 2, 3)))
void ws_debugcache_log(const struct ws_debugcache *cache, const char *fmt, ...);

/* bytes[0..len) as lowercase hex into out (2 * len + 1 bytes): how cache
 * entries and .build-id paths spell a build-id. */
void ws_debugcache_hex(const unsigned char *bytes, size_t len, char *out);

#endif
