/*
 * ws_error: the one error convention of wallspy.
 *
 * A fallible function returns `struct ws_error *`: NULL on success, otherwise an
 * error the caller owns (free with ws_error_destroy) and passes up. Results go
 * through a last `ret` parameter. The error kind doubles as the process exit
 * code, so the top level maps an error to its exit status in one place.
 * Messages read "subject: reason" and are one line.
 */
#ifndef WS_ERROR_H
#define WS_ERROR_H

#include <stdarg.h>
#include <stdbool.h>

/* Kinds; each value is also wallspy's exit code for it (documented in --help
 * and wallspy(1)). */
enum ws_error_kind {
	WS_ERR_OTHER = 1,          /* internal or unexpected failure */
	WS_ERR_USAGE = 2,          /* bad command line */
	WS_ERR_NO_PROCESS = 3,     /* no such process / command not found */
	WS_ERR_PERMISSION = 4,     /* ptrace or /proc access denied */
	WS_ERR_TARGET_EXITED = 5,  /* target exited before anything was sampled */
	WS_ERR_OUTPUT = 6,         /* cannot write the output file */
	WS_ERR_NO_DEBUGINFO = 7,   /* target lacks the debug info a runtime needs */
	WS_ERR_UNTRACEABLE = 8,    /* a kernel thread, already traced, or its
				    * main thread has exited */
};

struct ws_error {
	enum ws_error_kind kind;
	char *message;             /* one line, no trailing newline */
};

/* Creates an error with a printf-style message. Never returns NULL: when memory
 * runs out it returns a static "out of memory" error (destroy ignores it). */
struct ws_error *ws_error_create(enum ws_error_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
struct ws_error *ws_error_createv(enum ws_error_kind kind, const char *fmt,
				  va_list ap);

/* Creates an error "MESSAGE: strerror(errnum)" whose kind follows errnum:
 * ESRCH -> WS_ERR_NO_PROCESS, EPERM/EACCES -> WS_ERR_PERMISSION, else
 * `fallback`. */
struct ws_error *ws_error_from_errno(int errnum, enum ws_error_kind fallback,
				     const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes the message with "PREFIX: " in place and returns err (for
 * `return ws_error_wrap(err, "attach %d", pid);`). NULL passes through. */
struct ws_error *ws_error_wrap(struct ws_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Frees err; accepts NULL and the static out-of-memory error. */
void ws_error_destroy(struct ws_error *err);

/* The static out-of-memory error. */
extern struct ws_error ws_error_nomem;

#endif
