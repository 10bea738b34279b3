/*
 * End-to-end test of wallspy on a real Go server nobody here wrote:
 * go-httpbin (fixtures/goserver: pinned by go.mod/go.sum, built with Go
 * 1.26 and DWARF), loaded on loopback by wrk (Debian's), judged against the
 * server's own full traceback (GOTRACEBACK=all, then SIGQUIT: Go prints
 * every goroutine to stderr and exits 2) with the Go fidelity test's
 * comparison (tests/lib/go_fidelity.c): the same goroutines, and for each
 * parked one the same frames in order, wait reason and "created by".
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "e2e_util.h"
#include "elf_util.h"
#include "go_fidelity.h"
#include "go_traceback.h"
#include "wallspy_run.h"

/* Wall time and CPU: one at a time. */
E2E_SERIAL_TESTS()

enum {
	/* wrk's connections to /delay/DELAY_S: that many requests parked in
	 * the Delay handler, each for DELAY_S seconds, far longer than the
	 * test holds them. */
	DELAY_CONNS = 32,
	DELAY_S = 60,
	/* wrk's connections to /get: fast requests, then idle keep-alive
	 * connections once wrk is stopped. */
	GET_CONNS = 16,
	LOAD_MS = 2000,
};

static const char *const wrk_path = "/usr/bin/wrk";
static const char *const delay_handler =
	"github.com/mccutchen/go-httpbin/v2/httpbin.(*HTTPBin).Delay";

/* A loopback TCP port nothing listens on right now. */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(addr);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
	close(fd);
	return ntohs(addr.sin_port);
}

/* Waits up to timeout_ms until 127.0.0.1:port accepts a connection. */
static bool wait_listening(int port, int timeout_ms)
{
	double deadline = e2e_now() + timeout_ms / 1000.0;

	while (e2e_now() < deadline) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in addr = { .sin_family = AF_INET,
					    .sin_port = htons((uint16_t)port),
					    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		bool ok = fd >= 0 &&
			  connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;

		if (fd >= 0)
			close(fd);
		if (ok)
			return true;
		e2e_sleep_ms(20);
	}
	return false;
}

/* Waits up to timeout_ms until pid uses less than 5 ms of CPU in 200 ms:
 * every goroutine that the stopped load left is parked. */
static bool wait_quiet(pid_t pid, int timeout_ms)
{
	double deadline = e2e_now() + timeout_ms / 1000.0;
	double before = e2e_cpu_seconds(pid, 0);

	while (e2e_now() < deadline) {
		e2e_sleep_ms(200);
		double now = e2e_cpu_seconds(pid, 0);

		if (now - before < 0.005)
			return true;
		before = now;
	}
	return false;
}

/* `wrk -t1 -cCONNS -d2m --timeout 2m http://127.0.0.1:PORT/PATH`: bounded
 * in time by itself, killed by e2e_cleanup long before. */
static pid_t start_wrk(int port, int conns, const char *path)
{
	char c[16], url[96];
	struct e2e_spawn_opts opts = { .pipe_stdout = true, .pipe_stderr = true };

	snprintf(c, sizeof(c), "-c%d", conns);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	char *argv[] = { (char *)wrk_path, "-t1", c, "-d2m", "--timeout", "2m",
			 url, NULL };
	return e2e_spawn(argv, &opts).pid;
}

/* How many of Go's goroutines are in `state` with a frame `function`. */
static size_t go_count(const struct ws_go_traceback *tb, const char *state,
		       const char *function)
{
	size_t n = 0;

	for (size_t i = 0; i < tb->ngoroutines; i++)
		n += strcmp(tb->goroutines[i].state, state) == 0 &&
		     ws_go_goroutine_find_frame(&tb->goroutines[i], function) >= 0;
	return n;
}

/*
 * go-httpbin under wrk: DELAY_CONNS connections each with a request to
 * /delay/60 (its handler parks in a select on a 60-second timer) and
 * GET_CONNS connections hammering /get for LOAD_MS. Then the comparison,
 * made honest although Go's traceback and wallspy's dump are two instants:
 *   1. the /get load is stopped (SIGSTOP to wrk: its connections stay open
 *      and idle, their goroutines park reading the next request) and the
 *      server is let go quiet (wait_quiet): every goroutine left is parked
 *      on something only the stopped clients, a 60 s timer or a new
 *      connection can end: none comes while the test looks;
 *   2. `wallspy dump --json --runtime auto --system-tasks` (the SIGQUIT
 *      traceback prints the runtime's own goroutines and frames too: a
 *      signal's traceback is at GOTRACEBACK level 2);
 *   3. SIGQUIT right after wallspy detached; Go's traceback from stderr.
 * Then: the same goroutines in both (goroutine 0, the signalled thread's
 * scheduler stack, is no goroutine), every parked one identical (frames in
 * order with lines and return addresses, wait reason, created by), the
 * load's shape in Go's own words (DELAY_CONNS handlers in Delay's select,
 * at least GET_CONNS connections waiting for a request), and the server
 * left running, untraced, until the SIGQUIT ended it with Go's exit 2.
 */
Test(e2e_goserver, httpbin_under_wrk_dump_matches_sigquit_traceback,
     .timeout = 180, .fini = e2e_cleanup)
{
	const char *server = e2e_need_fixture("goserver/go-httpbin");
	int port = free_port();
	char port_text[16], delay_path[32];
	struct e2e_spawn_opts opts = { .pipe_stdout = true, .pipe_stderr = true };

	if (access(wrk_path, X_OK) != 0)
		cr_skip_test("%s not installed (tools/setup-deps installs wrk)", wrk_path);
	snprintf(port_text, sizeof(port_text), "%d", port);
	snprintf(delay_path, sizeof(delay_path), "/delay/%d", DELAY_S);
	/* The test worker's environment is its own (Criterion forks it). */
	setenv("GOTRACEBACK", "all", 1);
	char *argv[] = { (char *)server, "-host", "127.0.0.1", "-port", port_text,
			 "-log-level", "OFF", "-max-duration", "120s", NULL };
	struct e2e_proc srv = e2e_spawn(argv, &opts);
	cr_assert(wait_listening(port, 30000), "go-httpbin not listening on "
		  "127.0.0.1:%d after 30 s", port);

	pid_t get_load = start_wrk(port, GET_CONNS, "/get");
	start_wrk(port, DELAY_CONNS, delay_path);
	e2e_sleep_ms(LOAD_MS);
	double cpu = e2e_cpu_seconds(srv.pid, 0);
	cr_assert_eq(kill(get_load, SIGSTOP), 0);
	cr_assert(wait_quiet(srv.pid, 20000), "go-httpbin still busy 20 s after "
		  "the load stopped");
	cr_log_info("go-httpbin used %.2f s of CPU under %d ms of load", cpu, LOAD_MS);

	const char *dump_opts[] = { "--runtime", "auto", "--system-tasks", NULL };
	cJSON *root = e2e_dump_json(srv.pid, dump_opts);
	cr_assert(e2e_running_not_stopped(srv.pid, 1, 0), "go-httpbin stopped "
		  "after wallspy");
	cr_assert_eq(e2e_tracer(srv.pid, 0), 0, "go-httpbin still traced");
	cr_assert_eq(kill(srv.pid, SIGQUIT), 0);
	struct e2e_result res;
	e2e_collect(&srv, 30000, 0, 0, &res);
	cr_assert(!res.timed_out, "go-httpbin did not exit on SIGQUIT");
	cr_assert(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 2,
		  "go-httpbin ended with status %#x, Go exits 2 after its "
		  "SIGQUIT traceback", res.status);

	struct ws_go_traceback *tb = NULL;
	struct ws_error *err = ws_go_traceback_parse(res.err, strlen(res.err), &tb);
	cr_assert_null(err, "Go's traceback: %s", err ? err->message : "");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(root, "runtime")),
			 "go");
	struct e2e_symtab st = e2e_symtab_load(server);
	struct go_dump dump = go_dump_load(root);
	const struct go_fidelity_options sigquit = { .go_shows_runtime = true };
	struct go_fidelity r;

	go_fidelity_compare(tb, &dump, &st, &sigquit, &r);
	go_fidelity_log(&r, "go-httpbin");
	size_t delayed = go_count(tb, "select", delay_handler);
	size_t reading = go_count(tb, "IO wait", "net/http.(*conn).serve");
	cr_log_info("Go's traceback: %zu goroutines in Delay's select, %zu "
		    "connections waiting for a request", delayed, reading);
	cr_expect_eq(delayed, DELAY_CONNS, "%zu requests parked in %s, wrk "
		     "keeps %d open", delayed, delay_handler, DELAY_CONNS);
	cr_expect_geq(reading, GET_CONNS, "%zu connections in IO wait, wrk "
		      "opened %d to /get", reading, GET_CONNS);
	cr_expect_eq(r.kinds[GO_MM_CREATED_BY], 0, "%zu \"created by\" differ",
		     r.kinds[GO_MM_CREATED_BY]);
	cr_expect_geq(r.parked, DELAY_CONNS + GET_CONNS, "only %zu parked "
		      "goroutines", r.parked);
	go_fidelity_expect_exact(&r, "go-httpbin");

	go_dump_free(&dump);
	e2e_symtab_free(&st);
	ws_go_traceback_destroy(tb);
}
