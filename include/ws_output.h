/*
 * Output files and writers. A file is written to a temporary beside its path
 * and renamed on commit, so a failed or interrupted run never leaves a
 * half-written profile. The speedscope and folded writers stream: memory does
 * not grow with the number of samples.
 */
#ifndef WS_OUTPUT_H
#define WS_OUTPUT_H

#include <stdio.h>

#include "ws_error.h"
#include "ws_profile.h"

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

/* speedscope JSON (https://www.speedscope.app/file-format-schema.json): one
 * "sampled" profile per group, unit seconds, samples root first, exporter
 * "wallspy@VERSION", startValue/endValue = the group's start/end. Streams
 * with constant memory. Fails with WS_ERR_OUTPUT when file has an error. */
struct ws_error *ws_write_speedscope(const struct ws_profile *profile,
				     FILE *file);

/* Folded stacks (flamegraph.pl), "root;...;leaf COUNT" per line, one line
 * per distinct stack of a group, COUNT = round(weight / interval), at least
 * 1. Frames are names only; ';' in a name becomes ':' and line breaks become
 * spaces. With grouping other than "all", the group name is the root frame.
 * Memory: a table of one group's distinct stacks at a time. Fails with
 * WS_ERR_OUTPUT when file has an error. */
struct ws_error *ws_write_folded(const struct ws_profile *profile, FILE *file);

/* JSON string literal for s with quotes and escapes (control characters,
 * '"', '\\'); UTF-8 passes through and each ill-formed byte sequence
 * becomes U+FFFD, so the output is valid JSON for any input. NULL writes
 * null. */
void ws_json_write_string(FILE *file, const char *s);
/* JSON number with 9 significant digits ("%.9g"), '.' as the radix whatever
 * the locale; NaN and infinities, which JSON lacks, are written as 0. */
void ws_json_write_number(FILE *file, double value);

#endif
