/*
 * Downloads of debug info by build-id (ws_debuginfod.h) through elfutils'
 * libdebuginfod: the client and its progress callback, which keeps the
 * target served while a query waits, ends it on Ctrl-C and draws the
 * progress line. The library is opened (dlopen) only when a client is
 * made, as libdw does: linked, it and libcurl's two dozen libraries cost
 * every run ~0.1 s of dynamic linking (`wallspy dump` of threads_blocked:
 * 0.30 s against 0.47 s, under load).
 * Where the downloaded file goes from here (checking it, the uncompressed
 * copy) is the finder's (finder.c).
 */
#include "ws_debuginfod.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ws_clock.h"
#include "ws_term.h"

/* A download slower than this shows a progress line. */
#define PROGRESS_AFTER_NS 500000000ull
/* The terminal's line is redrawn at most this often. */
#define REDRAW_NS 250000000ull

/* The library's functions, from dlopen. */
static struct {
	bool tried, ok;
	__typeof__(debuginfod_begin) *begin;
	__typeof__(debuginfod_end) *end;
	__typeof__(debuginfod_find_debuginfo) *find_debuginfo;
	__typeof__(debuginfod_set_progressfn) *set_progressfn;
	__typeof__(debuginfod_set_user_data) *set_user_data;
	__typeof__(debuginfod_get_user_data) *get_user_data;
	__typeof__(debuginfod_get_url) *get_url;
} lib;

/* Opens libdebuginfod once; false when it (or a function) is missing. */
static bool load_library(void)
{
	if (lib.tried)
		return lib.ok;
	lib.tried = true;
	void *so = dlopen(DEBUGINFOD_SONAME, RTLD_LAZY | RTLD_LOCAL);
	if (!so)
		return false;
	lib.begin = dlsym(so, "debuginfod_begin");
	lib.end = dlsym(so, "debuginfod_end");
	lib.find_debuginfo = dlsym(so, "debuginfod_find_debuginfo");
	lib.set_progressfn = dlsym(so, "debuginfod_set_progressfn");
	lib.set_user_data = dlsym(so, "debuginfod_set_user_data");
	lib.get_user_data = dlsym(so, "debuginfod_get_user_data");
	lib.get_url = dlsym(so, "debuginfod_get_url");
	lib.ok = lib.begin && lib.end && lib.find_debuginfo &&
		 lib.set_progressfn && lib.set_user_data && lib.get_user_data &&
		 lib.get_url;
	if (!lib.ok)
		dlclose(so);
	return lib.ok;
}

struct ws_debuginfod {
	bool progress, tty;
	bool (*service)(void *arg);
	void *service_arg;
	debuginfod_client *client;
	bool interrupted;	/* a terminating signal came: no more queries */
	/* The query under way. */
	const char *what;
	uint64_t start_ns, drawn_ns;
	bool shown;		/* a progress line is out */
	long done, total;	/* bytes, as the client counts them */
};

static void format_size(char *buf, size_t size, long done, long total)
{
	if (total > 0)
		snprintf(buf, size, "%.1f of %.1f MB", (double)done / 1e6,
			 (double)total / 1e6);
	else
		snprintf(buf, size, "%.1f MB", (double)done / 1e6);
}

/* The server part of the URL the client downloads from
 * ("http://host:port"; known once data comes), else the servers asked. */
static void server_name(debuginfod_client *c, char *buf, size_t size)
{
	const char *url = lib.get_url(c);
	const char *cut = url ? strstr(url, "/buildid/") : NULL;
	const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
	if (cut)
		snprintf(buf, size, "%.*s", (int)(cut - url), url);
	else
		snprintf(buf, size, "%s", urls ? urls : "debuginfod");
}

static void draw(struct ws_debuginfod *d, uint64_t now)
{
	char size[64], server[256];
	format_size(size, sizeof(size), d->done, d->total);
	server_name(d->client, server, sizeof(server));
	if (d->tty) {
		char line[512];
		snprintf(line, sizeof(line),
			 "wallspy: downloading debug info for %s from %s: %s (Ctrl-C to stop)",
			 d->what, server, size);
		ws_term_redraw(stderr, line);
	} else {
		fprintf(stderr, "wallspy: downloading debug info for %s from %s (slow; Ctrl-C to stop)\n",
			d->what, server);
		fflush(stderr);
	}
	d->shown = true;
	d->drawn_ns = now;
}

/* Called by the client while it works (at least once a second while it
 * waits on a server); returning non-zero ends the transfer. */
static int on_progress(debuginfod_client *c, long a, long b)
{
	struct ws_debuginfod *d = lib.get_user_data(c);
	if (d->service && d->service(d->service_arg)) {
		d->interrupted = true;
		return 1;
	}
	d->done = a;
	d->total = b;
	uint64_t now = ws_now_ns();
	if (d->progress && now - d->start_ns >= PROGRESS_AFTER_NS &&
	    (!d->shown || (d->tty && now - d->drawn_ns >= REDRAW_NS)))
		draw(d, now);
	return 0;
}

struct ws_error *ws_debuginfod_create(const struct ws_debuginfod_options *o,
				      struct ws_debuginfod **ret)
{
	*ret = NULL;
	if (!load_library())
		return NULL;
	struct ws_debuginfod *d = calloc(1, sizeof(*d));
	if (!d)
		return &ws_error_nomem;
	d->client = lib.begin();
	if (!d->client) {
		free(d);
		return NULL;
	}
	d->progress = o->progress;
	d->tty = isatty(STDERR_FILENO);
	d->service = o->service;
	d->service_arg = o->service_arg;
	lib.set_user_data(d->client, d);
	lib.set_progressfn(d->client, on_progress);
	*ret = d;
	return NULL;
}

void ws_debuginfod_destroy(struct ws_debuginfod *d)
{
	if (!d)
		return;
	lib.end(d->client);
	free(d);
}

int ws_debuginfod_find_debuginfo(struct ws_debuginfod *d,
				 const unsigned char *id, size_t len,
				 const char *what, char **path)
{
	*path = NULL;
	if (!d || d->interrupted || len == 0)
		return -1;
	d->what = what;
	d->start_ns = ws_now_ns();
	d->shown = false;
	d->done = d->total = 0;
	int fd = lib.find_debuginfo(d->client, id, (int)len, path);
	if (fd < 0)
		*path = NULL;	/* the client leaves it alone on failure */
	if (d->shown) {
		double s = (double)(ws_now_ns() - d->start_ns) / 1e9;
		if (d->tty)
			fputs("\r\033[K", stderr);
		if (fd >= 0)
			fprintf(stderr, "wallspy: downloaded debug info for %s (%.1f MB, %.1f s)\n",
				what, (double)d->done / 1e6, s);
		else
			fprintf(stderr, "wallspy: no debug info for %s from debuginfod (%s after %.1f s)\n",
				what, d->interrupted ? "stopped" : strerror(-fd), s);
		fflush(stderr);
	}
	return fd < 0 ? -1 : fd;
}
