/*
 * Error objects (see ws_error.h). The advice shown with a permission error
 * is the command line's (ws_cli_permission_advice).
 */
#include "ws_error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ws_error ws_error_nomem = {
	.kind = WS_ERR_OTHER,
	.message = "out of memory",
};

struct ws_error *ws_error_createv(enum ws_error_kind kind, const char *fmt,
				  va_list ap)
{
	struct ws_error *err = malloc(sizeof(*err));
	if (!err)
		return &ws_error_nomem;
	err->kind = kind;
	if (vasprintf(&err->message, fmt, ap) < 0) {
		free(err);
		return &ws_error_nomem;
	}
	return err;
}

struct ws_error *ws_error_create(enum ws_error_kind kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct ws_error *err = ws_error_createv(kind, fmt, ap);
	va_end(ap);
	return err;
}

struct ws_error *ws_error_from_errno(int errnum, enum ws_error_kind fallback,
				     const char *fmt, ...)
{
	enum ws_error_kind kind = fallback;
	if (errnum == ESRCH)
		kind = WS_ERR_NO_PROCESS;
	else if (errnum == EPERM || errnum == EACCES)
		kind = WS_ERR_PERMISSION;

	char *subject;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&subject, fmt, ap);
	va_end(ap);
	if (n < 0)
		return &ws_error_nomem;
	struct ws_error *err = ws_error_create(kind, "%s: %s", subject,
					       strerror(errnum));
	free(subject);
	return err;
}

struct ws_error *ws_error_wrap(struct ws_error *err, const char *fmt, ...)
{
	if (!err || err == &ws_error_nomem)
		return err;
	char *prefix;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&prefix, fmt, ap);
	va_end(ap);
	if (n < 0)
		return err;
	char *joined;
	if (asprintf(&joined, "%s: %s", prefix, err->message) >= 0) {
		free(err->message);
		err->message = joined;
	}
	free(prefix);
	return err;
}

void ws_error_destroy(struct ws_error *err)
{
	if (!err || err == &ws_error_nomem)
		return;
	free(err->message);
	free(err);
}
