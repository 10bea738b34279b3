/*
 * pprof_tool: Go's own `go tool pprof` as the judge of wallspy's pprof
 * files (/usr/local/go's, which tools/setup-deps builds into Go's cache,
 * else the go the Go fixtures are built with); skips the test without one.
 */
#ifndef PPROF_TOOL_H
#define PPROF_TOOL_H

/* `go tool pprof ARGS... FILE` (args NULL-terminated): its standard output
 * (freed by e2e_cleanup); asserts exit 0 and no warning or error on
 * stderr. */
const char *pt_run(const char *file, const char *const args[]);

/* The weight of the samples `pprof -top` shows with every node kept
 * ("Showing nodes accounting for 810ms"): the total, or the focused part
 * with a -focus or -tagfocus among `extra` (NULL-terminated, or NULL).
 * In seconds. */
double pt_total(const char *file, const char *const extra[]);

/* `go tool objdump BINARY`: every instruction of a Go binary, as Go's own
 * disassembler lists them (freed by e2e_cleanup). */
const char *pt_objdump(const char *binary);

/* A line of `text` holding every one of `words` (NULL-terminated), or
 * NULL. */
const char *pt_line_with(const char *text, const char *const words[]);

#endif
