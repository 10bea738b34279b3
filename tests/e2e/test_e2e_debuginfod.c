/*
 * End-to-end tests of debug info downloaded from debuginfod
 * (src/debuginfo/debuginfod.c, through the finder): threads_blocked
 * stripped of every symbol (objcopy --strip-all) while its separated debug
 * file (--only-keep-debug, DWARF compressed as Debian ships it) is served
 * by elfutils' own `debuginfod` over loopback. The server binds every
 * address (0.188 has no option to bind one), so those tests run in a
 * network namespace of their own where only lo exists (root). Names must
 * be the fixture's by construction (tests/lib/fixture_truth) with the
 * server, absent without it (--no-debuginfod, no DEBUGINFOD_URLS), and
 * still there from the client's cache once the server is gone; the
 * download goes through wallspy's debug-info cache. A second, slow server
 * written here (loopback, any user) trickles the file to see the progress
 * line, the target's signals passed on during a download, and Ctrl-C
 * ending one.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_util.h"
#include "elf_util.h"
#include "fixture_truth.h"
#include "wallspy_run.h"

static const char debuginfod_bin[] = "/usr/bin/debuginfod";

/* A stripped threads_blocked and its debug file, in a fresh directory. */
struct split {
	const char *dir;
	const char *binary;	/* DIR/tb, no symbols, no DWARF */
	const char *debug;	/* DIR/srv/tb.debug, compressed DWARF */
	char id[160];		/* their build-id */
};

static struct split make_split(void)
{
	struct split s = { .dir = e2e_tmpdir() };
	const char *srv = e2e_path(s.dir, "srv");

	cr_assert_eq(mkdir(srv, 0755), 0);
	s.debug = e2e_elf_split_debug(e2e_fixture("threads_blocked"), srv,
				      "tb", "tb.debug", E2E_SPLIT_COMPRESS);
	s.binary = e2e_path(s.dir, "tb");
	cr_assert_eq(rename(e2e_path(srv, "tb"), s.binary), 0);
	cr_assert(e2e_elf_build_id(s.binary, s.id), "no build-id");
	/* Downloads go to a client cache of the test's own. */
	setenv("DEBUGINFOD_CACHE_PATH", e2e_path(s.dir, "client-cache"), 1);
	setenv("WALLSPY_DEBUG_CACHE", e2e_path(s.dir, "wallspy-cache"), 1);
	return s;
}

static pid_t start_target(const struct split *s)
{
	char *argv[] = { (char *)s->binary, (char *)"60", NULL };

	return e2e_start_ready(argv, "ready", 10000);
}

/* "/buildid/ID/debuginfo", the path debuginfod serves a debug file at. */
static const char *buildid_path(const struct split *s)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "/buildid/%s/debuginfo", s->id);
	return e2e_strndup(buf, sizeof(buf));
}

/* The HTTP status of GET path on 127.0.0.1:port, 0 when it cannot be had. */
static int http_status(int port, const char *path)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	char buf[256];
	int status = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return 0;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
		int n = snprintf(buf, sizeof(buf), "GET %s HTTP/1.0\r\n\r\n", path);
		ssize_t got;

		if (write(fd, buf, n) == n && (got = read(fd, buf, sizeof(buf) - 1)) > 0) {
			buf[got] = '\0';
			sscanf(buf, "HTTP/%*s %d", &status);
		}
	}
	close(fd);
	return status;
}

/* The frame `fn` is somewhere in the dump. */
static bool dump_has_function(const cJSON *dump, const char *fn)
{
	const cJSON *task, *frame;

	cJSON_ArrayForEach(task, cJSON_GetObjectItem(dump, "tasks"))
		cJSON_ArrayForEach(frame, cJSON_GetObjectItem(task, "frames")) {
			const char *f = cJSON_GetStringValue(
				cJSON_GetObjectItem(frame, "function"));
			if (f && strcmp(f, fn) == 0)
				return true;
		}
	return false;
}

/* ---- the real server, in a network namespace of this test's own ---- */

enum { SERVER_PORT = 8002 };

/* Moves this test (a Criterion worker process of its own) and everything
 * it starts into a new network namespace, with lo up: nothing listening
 * in it can be reached from outside. */
static void private_network(void)
{
	if (geteuid() != 0)
		cr_skip_test("a network namespace needs root");
	cr_assert_eq(unshare(CLONE_NEWNET), 0, "unshare(CLONE_NEWNET): %m");
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { 0 };

	cr_assert_geq(fd, 0);
	strcpy(ifr.ifr_name, "lo");
	cr_assert_eq(ioctl(fd, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	cr_assert_eq(ioctl(fd, SIOCSIFFLAGS, &ifr), 0, "lo up: %m");
	close(fd);
}

/* Starts debuginfod over DIR/srv and waits until it serves the debug
 * file; DEBUGINFOD_URLS names it. */
static pid_t start_server(const struct split *s)
{
	char *cmd;

	cr_assert(e2e_exists(debuginfod_bin),
		  "%s missing (tools/setup-deps installs Debian's debuginfod)",
		  debuginfod_bin);
	cr_assert(asprintf(&cmd, "exec %s -p %d -F '%s/srv' -d '%s/db.sqlite' >'%s/server.log' 2>&1",
			   debuginfod_bin, SERVER_PORT, s->dir, s->dir, s->dir) > 0);
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", cmd, NULL };
	struct e2e_proc server = e2e_spawn(argv, NULL);
	free(cmd);
	/* It scans DIR/srv after it starts listening: ask until it has. */
	double deadline = e2e_now() + 30;
	while (http_status(SERVER_PORT, buildid_path(s)) != 200) {
		cr_assert_lt(e2e_now(), deadline, "debuginfod never served %s:\n%s",
			     buildid_path(s),
			     e2e_read_file(e2e_path(s->dir, "server.log")));
		e2e_sleep_ms(100);
	}
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", SERVER_PORT);
	setenv("DEBUGINFOD_URLS", url, 1);
	return server.pid;
}

Test(e2e_debuginfod, names_from_the_server, .timeout = 120, .fini = e2e_cleanup)
{
	private_network();
	struct split s = make_split();
	pid_t pid = start_target(&s);
	const char *no_debuginfod[] = { "--no-debuginfod", NULL };
	char cached[512];

	/* Nothing local names the stripped binary. */
	setenv("DEBUGINFOD_URLS", "", 1);
	cr_assert_not(dump_has_function(e2e_dump_json(pid, NULL), "thread_main"),
		      "named without any debug info");

	pid_t server = start_server(&s);
	cr_assert_not(dump_has_function(e2e_dump_json(pid, no_debuginfod),
					"thread_main"),
		      "named with --no-debuginfod");
	tb_check_dump_stacks(e2e_dump_json(pid, NULL), "tb");

	/* The file came through wallspy's cache: its DWARF was compressed. */
	snprintf(cached, sizeof(cached), "%s/wallspy-cache/%s.debug", s.dir, s.id);
	cr_assert(e2e_exists(cached), "no uncompressed copy %s", cached);
	cr_assert_eq(e2e_elf_compressed_sections(cached), 0);

	/* Without the server: from the client's cache. */
	e2e_kill(server);
	cr_assert_eq(http_status(SERVER_PORT, buildid_path(&s)), 0);
	tb_check_dump_stacks(e2e_dump_json(pid, NULL), "tb");
	e2e_check_healthy_then_stop(pid);
}

/* ---- a slow server of our own ---- */

/* Serves `file` at `path` on 127.0.0.1 (any free port, returned in
 * *port): the headers at once, then the body in 16 pieces, `piece_ms`
 * apart; with `stall`, only the first piece, then nothing. 404 for
 * anything else. A child process that dies with the test. */
static pid_t start_slow_server(const char *file, const char *path,
			       int piece_ms, bool stall, int *port)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	struct stat st;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_geq(lfd, 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(lfd, 8), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	*port = ntohs(a.sin_port);
	cr_assert_eq(stat(file, &st), 0);
	char *body = e2e_read_file(file);
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;) {
			int c = accept(lfd, NULL, NULL);
			char req[2048], head[256];
			ssize_t n = c < 0 ? -1 : read(c, req, sizeof(req) - 1);

			if (n <= 0) {
				if (c >= 0)
					close(c);
				continue;
			}
			req[n] = '\0';
			if (strncmp(req, "GET ", 4) != 0 ||
			    strncmp(req + 4, path, strlen(path)) != 0 ||
			    req[4 + strlen(path)] != ' ') {
				const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
				(void)!write(c, nf, sizeof(nf) - 1);
				close(c);
				continue;
			}
			int hn = snprintf(head, sizeof(head),
					  "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\n"
					  "Content-Type: application/octet-stream\r\n\r\n",
					  (long long)st.st_size);
			(void)!write(c, head, hn);
			off_t piece = st.st_size / 16 + 1;
			for (off_t off = 0; off < st.st_size; off += piece) {
				off_t len = st.st_size - off < piece ? st.st_size - off : piece;
				(void)!write(c, body + off, len);
				if (stall)
					pause();
				usleep(piece_ms * 1000);
			}
			close(c);
		}
	}
	close(lfd);
	e2e_track(pid);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", *port);
	setenv("DEBUGINFOD_URLS", url, 1);
	return pid;
}

Test(e2e_debuginfod, progress_line, .timeout = 60, .fini = e2e_cleanup)
{
	struct split s = make_split();
	int port;

	start_slow_server(s.debug, buildid_path(&s), 100, false, &port);
	pid_t pid = start_target(&s);
	struct e2e_result res = e2e_run_dump(pid, (const char *const[]){ "--json", NULL },
					     NULL, 0, 30000);
	char want[256];

	/* 16 pieces 100 ms apart: slower than the half second that earns a
	 * progress line, which names the module and the server. */
	snprintf(want, sizeof(want),
		 "^wallspy: downloading debug info for tb from http://127\\.0\\.0\\.1:%d", port);
	cr_assert(e2e_match(res.err, want), "no progress line:\n%s", res.err);
	cr_assert(e2e_match(res.err, "^wallspy: downloaded debug info for tb \\([0-9.]+ MB, [0-9.]+ s\\)$"),
		  "no closing line:\n%s", res.err);
	tb_check_dump_stacks(e2e_parse_json(res.out), "tb");

	/* --quiet: the same names, not a word. */
	setenv("DEBUGINFOD_CACHE_PATH", e2e_path(s.dir, "client-cache-2"), 1);
	res = e2e_run_dump(pid, (const char *const[]){ "--json", "-q", NULL },
			   NULL, 0, 30000);
	cr_assert_str_empty(res.err);
	tb_check_dump_stacks(e2e_parse_json(res.out), "tb");
	e2e_check_healthy_then_stop(pid);
}

Test(e2e_debuginfod, stalled_download, .timeout = 60, .fini = e2e_cleanup)
{
	struct split s = make_split();
	int port, status;
	char line[512];

	start_slow_server(s.debug, buildid_path(&s), 0, true, &port);
	pid_t pid = start_target(&s);
	const char *opts[] = { "-d", "60", NULL };
	const char *out;
	struct e2e_proc ws = e2e_spawn_attach(pid, opts, "out.json", &out);

	cr_assert(e2e_wait_line_prefix(ws.err_fd, "wallspy: downloading debug info for tb",
				       line, sizeof(line), 10000),
		  "no progress line");
	/* The target's own signals still reach it while wallspy waits. */
	kill(pid, SIGTERM);
	cr_assert(e2e_wait_timeout(pid, 3000, &status),
		  "threads_blocked did not get its SIGTERM during the download");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Ctrl-C ends the download, and wallspy, at once. */
	double t0 = e2e_now();
	struct e2e_result res;
	e2e_collect(&ws, 10000, SIGINT, 0, &res);
	cr_assert_lt(e2e_now() - t0, 3.0, "wallspy took %.1f s after SIGINT",
		     e2e_now() - t0);
	cr_assert_eq(e2e_exit_code(&res), 0, "%s", res.err);
	cr_assert(e2e_match(res.err, "^wallspy: no debug info for tb from debuginfod \\(stopped"),
		  "%s", res.err);
}

Test(e2e_debuginfod, recorded_command_keeps_the_variable, .timeout = 30,
     .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	const char *file = e2e_path(dir, "urls");
	char *script;

	setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
	cr_assert(asprintf(&script, "printf %%s \"$DEBUGINFOD_URLS\" > '%s'; sleep 0.3", file) > 0);
	const char *target[] = { "/bin/sh", "-c", script, NULL };
	const char *out;
	const char *opts[] = { "-q", NULL };

	e2e_record(opts, target, &out, 30000);
	free(script);
	cr_assert_str_eq(e2e_read_file(file), "http://127.0.0.1:1");
}
