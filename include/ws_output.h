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

/* Opens PATH.XXXXXX for writing; "-" means standard output (no rename).
 * Errors are WS_ERR_OUTPUT. */
struct ws_error *ws_output_open(const char *path, struct ws_output **ret);
FILE *ws_output_file(struct ws_output *out);
/* Flushes, closes and renames onto the final path; frees out (always). */
struct ws_error *ws_output_commit(struct ws_output *out);
/* Closes and removes the temporary; frees out. NULL is fine. */
void ws_output_abort(struct ws_output *out);

/* speedscope JSON (https://www.speedscope.app/file-format-schema.json): one
 * "sampled" profile per group, unit seconds, samples root first, exporter
 * "wallspy@VERSION". */
struct ws_error *ws_write_speedscope(const struct ws_profile *profile,
				     FILE *file);

/* Folded stacks, "root;...;leaf COUNT" per line, COUNT = round(weight /
 * interval) (at least 1). With grouping other than "all", the group name is
 * the root frame. */
struct ws_error *ws_write_folded(const struct ws_profile *profile, FILE *file);

/* JSON string literal for s with quotes and escapes; NULL writes null. */
void ws_json_write_string(FILE *file, const char *s);

#endif
