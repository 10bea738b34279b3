/*
 * Private to debugcache*.c: what the cache (debugcache.c) asks of the ELF
 * side (debugcache_elf.c). Nothing outside src/debuginfo/debugcache*.c
 * includes this.
 */
#ifndef WS_DEBUGCACHE_INTERNAL_H
#define WS_DEBUGCACHE_INTERNAL_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ws_error.h"

/* Whether elf has a section worth caching a copy for (SHF_COMPRESSED,
 * neither allocated nor NOBITS: what elf_compress can inflate); *error on
 * a broken section table. */
bool debugcache_has_compressed(Elf *elf, bool *error);

/* What tells this file's version apart: its GNU build-id, or for a Go
 * program (which has none) the Go build ID note, a hash of its inputs and
 * contents. Its length, *id pointing into elf's data; -1 when none. */
ssize_t debugcache_file_id(Elf *elf, const void **id);

/* Whether the ELF on `fd` (the cached copy) may stand for `orig`: see
 * ws_debugcache_get. Reads headers only (~0.1 ms). NULL when it may, else
 * why not. */
struct ws_error *debugcache_check_copy(int fd, Elf *orig,
				       const void *build_id,
				       size_t build_id_len);

/* Writes orig, its compressed sections decompressed, into the new ELF on
 * fd. Decompresses orig's sections in memory (orig's own Elf only). */
struct ws_error *debugcache_write_copy(Elf *orig, int fd);

/* "WHAT: libelf's last error". */
struct ws_error *debugcache_elf_fail(const char *what);

#endif
