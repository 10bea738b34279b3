/*
 * ws_output_file: where a profile goes. A regular file is written to a
 * temporary beside it and renamed on commit, so a failed or interrupted run
 * never leaves a half-written profile; a symlink is followed (the temporary
 * goes beside the file it names); character devices and FIFOs are written
 * in place, never replaced; directories, block devices, sockets and the
 * kernel's files (/proc, /sys, ...) are refused. The writers
 * (ws_speedscope.h, ws_folded.h, ws_dump.h) write into the FILE it hands
 * out.
 */
#ifndef WS_OUTPUT_FILE_H
#define WS_OUTPUT_FILE_H

#include <stdio.h>

#include "ws_error.h"

struct ws_output;

/* Checks, without writing anything, that PATH can take a profile (before
 * sampling, so a bad -o costs nothing): refuses what ws_output_open would,
 * and for a regular file creates and removes its temporary; a device or a
 * FIFO is only checked for write access (opening one may have effects).
 * "-" is always fine. Errors are WS_ERR_OUTPUT, "write PATH: REASON". */
struct ws_error *ws_output_check(const char *path);

/* Opens PATH for a profile: a regular file (or a new one) as
 * PATH.XXXXXX (random suffix, O_EXCL, mode 0666 less the umask or the
 * directory's default ACL, as for any new file) beside it, or beside the
 * file a symlink names, so the final rename is atomic; a character device
 * or FIFO in place (a FIFO without a reader is waited for, saying so on
 * standard error, with SIGINT, SIGTERM and SIGHUP unblocked meanwhile); a
 * regular file reached through /proc/PID/fd (/dev/stdout) appended to in
 * place; "-" means standard output. Errors are WS_ERR_OUTPUT, "write PATH:
 * REASON" (EISDIR for a directory, the file system for /proc and /sys). */
struct ws_error *ws_output_open(const char *path, struct ws_output **ret);
FILE *ws_output_file(struct ws_output *out);
/* Flushes, closes, checks for write errors and, for a temporary, renames
 * it onto the final path (replacing a file there); frees out (always). On
 * failure the temporary is removed and the error is WS_ERR_OUTPUT. No
 * fsync: a crash right after may lose the profile, never leave a torn one
 * under PATH. For "-" it flushes standard output and reports errors, but
 * leaves it open. Written in place, a device's or FIFO's error (ENOSPC from
 * /dev/full, EPIPE) is reported the same way. */
struct ws_error *ws_output_commit(struct ws_output *out);
/* Closes and removes the temporary; frees out. NULL is fine. For "-" it
 * only flushes. */
void ws_output_abort(struct ws_output *out);

#endif
