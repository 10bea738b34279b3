/*
 * ws_output_file: output files written to a temporary beside their path and
 * renamed on commit, so a failed or interrupted run never leaves a
 * half-written profile. The writers (ws_speedscope.h, ws_folded.h, ws_dump.h)
 * write into the FILE it hands out.
 */
#ifndef WS_OUTPUT_FILE_H
#define WS_OUTPUT_FILE_H

#include <stdio.h>

#include "ws_error.h"

struct ws_output;

/* Creates PATH.XXXXXX (random suffix, O_EXCL, mode 0666 less the umask or
 * the directory's default ACL, as for any new file) in PATH's directory, so
 * the final rename is atomic; "-" means standard output (no rename). Errors
 * are WS_ERR_OUTPUT, "write PATH: REASON". */
struct ws_error *ws_output_open(const char *path, struct ws_output **ret);
FILE *ws_output_file(struct ws_output *out);
/* Flushes, closes, checks for write errors and renames onto the final path
 * (replacing a file there); frees out (always). On failure the temporary is
 * removed and the error is WS_ERR_OUTPUT. No fsync: a crash right after may
 * lose the profile, never leave a torn one under PATH. For "-" it flushes
 * standard output and reports errors, but leaves it open. */
struct ws_error *ws_output_commit(struct ws_output *out);
/* Closes and removes the temporary; frees out. NULL is fine. For "-" it
 * only flushes. */
void ws_output_abort(struct ws_output *out);

#endif
