/*
 * End-to-end tests of wallspy on live Go programs (fixtures/go), judged
 * against the one truth nobody here wrote: the Go runtime's own traceback
 * (runtime.Stack(buf, true), which go_fidelity writes on SIGUSR1, parsed by
 * go_traceback.c and compared by go_fidelity.c) and the target's ELF
 * symbol table. Every release of the matrix (go_releases.h): `dump`
 * fidelity for every goroutine (goids, frames, lines, return addresses,
 * wait reasons, "locked to thread", "created by"; the runtime's own
 * goroutines hidden unless asked for), goroutine labels, runtime
 * selection, every frame named, the running goroutine's stack; from 1.24
 * (its GOEXPERIMENT=synctest), the wait reasons and bubbles of goroutines
 * in a testing/synctest bubble; on 1.26, the goroutines of cgo callbacks
 * from C threads (dead extra ones left out). The oldest
 * and newest release: the text dump's "created by", dump at 100k
 * goroutines. The no-DWARF error.
 * Recording (the seed's workloads, the pause at 10k goroutines) is in
 * test_e2e_go_record.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "e2e_util.h"
#include "elf_util.h"
#include "go_fidelity.h"
#include "go_releases.h"
#include "go_traceback.h"
#include "speedscope_view.h"
#include "wallspy_run.h"

/* Timing-sensitive (the 100k dump is timed) and CPU-heavy: one at a time. */
E2E_SERIAL_TESTS()

enum {
	/* go_fidelity.go: recurseTruncated/recurseElided depth. */
	ELIDED_DEPTH = 150,
	/* go_fidelity.go's table: goroutines parked by construction. */
	FIDELITY_PARKED = 106,
};

/* ---- fixtures ---- */

/* A running fixture: stdout piped (for "ready"/"dumped"), registered with
 * e2e_util so .fini kills it on any failure. */
struct go_target {
	struct e2e_proc proc;
	const char *path;
	const char *dump_path;   /* go_fidelity's DUMPFILE, or NULL */
};

/* Starts fixture `name` with args and waits for its "ready pid=PID". */
static struct go_target start_go(const char *release, const char *name,
				 const char *const args[], int ready_timeout_ms)
{
	char path[64];

	e2e_need_go_fixture(release, name);
	if (release)
		snprintf(path, sizeof(path), "go/go%s/%s", release, name);
	else
		snprintf(path, sizeof(path), "go/%s", name);
	return (struct go_target){ e2e_start_go(path, args, ready_timeout_ms),
				   e2e_need_go_fixture(release, name), NULL };
}

/* A fixture that writes its own runtime.Stack(all) on SIGUSR1 to the
 * file its first argument names (go_fidelity, go_synctest*, go_cgo_extra),
 * that file in a fresh temporary directory. */
static struct go_target start_dumping(const char *release, const char *name)
{
	const char *dump = e2e_path(e2e_tmpdir(), "go-stacks.txt");
	const char *args[] = { dump, NULL };
	struct go_target t = start_go(release, name, args, 30000);

	t.dump_path = dump;
	return t;
}

static struct go_target start_fidelity(const char *release)
{
	return start_dumping(release, "go_fidelity");
}

/* Asks go_fidelity for runtime.Stack(buf, true) and parses it. */
static struct ws_go_traceback *go_own_traceback(struct go_target *t)
{
	struct ws_go_traceback *tb = NULL;

	cr_assert_eq(kill(t->proc.pid, SIGUSR1), 0);
	cr_assert(e2e_wait_line(t->proc.out_fd, "dumped", 30000),
		  "go_fidelity never printed \"dumped\"");
	struct ws_error *err = ws_go_traceback_parse_file(t->dump_path, &tb);
	cr_assert_null(err, "Go's traceback: %s", err ? err->message : "");
	return tb;
}

/* After wallspy is done with it: the target runs, no thread is stopped,
 * and it exits 0 on SIGTERM (every Go fixture does). */
static void stop_go_healthy(struct go_target *t)
{
	int status;

	cr_assert(e2e_running_not_stopped(t->proc.pid, 5, 20),
		  "target %d (or a thread) stopped after wallspy", t->proc.pid);
	cr_assert_eq(kill(t->proc.pid, SIGTERM), 0);
	cr_assert(e2e_wait_timeout(t->proc.pid, 10000, &status),
		  "target did not exit on SIGTERM");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "target ended with status %#x, expected exit 0", status);
	close(t->proc.out_fd);
}

/* ---- running wallspy ---- */

/* `wallspy dump --json [OPTION [VALUE]] PID`, parsed. */
static cJSON *dump_json(pid_t pid, const char *option, const char *value)
{
	const char *opts[] = { option, value, NULL };

	return e2e_dump_json(pid, option ? opts : NULL);
}

/* A fixture started by start_dumping, wallspy's `dump --json` of it, then
 * its own runtime.Stack(all), compared with no allowance
 * (go_fidelity_compare) and logged. */
struct go_compared {
	struct go_target t;
	cJSON *root;               /* wallspy's dump as parsed; dump points in */
	struct go_dump dump;
	struct ws_go_traceback *tb;
	struct e2e_symtab st;
	struct go_fidelity r;
};

static void compare_with_go(const char *release, const char *fixture,
			    struct go_compared *c)
{
	const struct go_fidelity_options plain = { 0 };

	c->t = start_dumping(release, fixture);
	c->root = dump_json(c->t.proc.pid, NULL, NULL);
	c->tb = go_own_traceback(&c->t);
	c->st = e2e_symtab_load_loaded(c->t.proc.pid, c->t.path);
	c->dump = go_dump_load(c->root);
	go_fidelity_compare(c->tb, &c->dump, &c->st, &plain, &c->r);
	go_fidelity_log(&c->r, release);
}

/* Frees what compare_with_go made and ends the fixture, healthy. */
static void compared_end(struct go_compared *c)
{
	go_dump_free(&c->dump);
	e2e_symtab_free(&c->st);
	ws_go_traceback_destroy(c->tb);
	stop_go_healthy(&c->t);
}

static const char *str_of(const cJSON *obj, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(obj, key));
}

static long long_of(const cJSON *obj, const char *key)
{
	const cJSON *item = cJSON_GetObjectItem(obj, key);

	return cJSON_IsNumber(item) ? (long)item->valuedouble : -1;
}

/* Whether a dump task has a frame named fn. */
static bool task_has_frame(const cJSON *task, const char *fn)
{
	const cJSON *frame;

	cJSON_ArrayForEach(frame, cJSON_GetObjectItem(task, "frames")) {
		const char *f = str_of(frame, "function");

		if (f && strcmp(f, fn) == 0)
			return true;
	}
	return false;
}

/* ---- fidelity ---- */

/* The deep fixtures: wallspy must have all 150 recursive frames where Go
 * cut or elided some. Returns how many deep goroutines were checked. */
static size_t check_deep_stacks(const struct ws_go_traceback *tb,
				const struct go_dump *dump)
{
	size_t checked = 0;

	for (size_t i = 0; i < tb->ngoroutines; i++) {
		const struct ws_go_goroutine *go = &tb->goroutines[i];
		const char *fn = ws_go_goroutine_find_frame(go, "main.recurseTruncated") >= 0
					 ? "main.recurseTruncated"
				 : ws_go_goroutine_find_frame(go, "main.recurseElided") >= 0
					 ? "main.recurseElided" : NULL;
		const struct go_dump_goroutine *w = go_dump_find(dump, go->goid);
		size_t go_count = 0, ws_count = 0;

		if (!fn || !w)
			continue;
		for (size_t k = 0; k < go->nframes; k++)
			go_count += strcmp(go->frames[k].function, fn) == 0;
		for (size_t k = 0; k < w->nframes; k++)
			ws_count += w->frames[k].name && strcmp(w->frames[k].name, fn) == 0;
		cr_log_info("goroutine %ld: Go printed %zu %s%s, wallspy %zu",
			    go->goid, go_count, fn,
			    go->frames_elided ? " and an elision line" : " (cut silently)",
			    ws_count);
		cr_expect_eq(ws_count, ELIDED_DEPTH,
			     "goroutine %ld: wallspy has %zu %s frames, the stack has %d",
			     go->goid, ws_count, fn, ELIDED_DEPTH);
		cr_expect_lt(go_count, ws_count);
		checked++;
	}
	return checked;
}

/* The goroutines go_fidelity blocks in read(2) on a pipe (pipesyscall,
 * deepelided: 6 by construction) show the call and their thread, as
 * wallspy shows an OS thread's: "[syscall: read] thread TID". Returns how
 * many were checked. */
static size_t check_syscall_goroutines(const cJSON *root)
{
	const cJSON *task;
	size_t n = 0;

	cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks")) {
		if (!task_has_frame(task, "main.parkPipeRead") &&
		    !task_has_frame(task, "main.parkDeepElided"))
			continue;
		n++;
		cr_expect_str_eq(str_of(task, "state"), "syscall", "goroutine %ld",
				 long_of(task, "id"));
		const char *reason = str_of(task, "wait_reason");
		cr_expect(reason && strcmp(reason, "read") == 0,
			  "goroutine %ld: system call %s, not read",
			  long_of(task, "id"), reason ? reason : "(none)");
		cr_expect_gt(long_of(task, "thread"), 0, "goroutine %ld: no thread",
			     long_of(task, "id"));
	}
	return n;
}

/*
 * 1. Fidelity against the Go runtime, on every release. wallspy's `dump
 * --json` of go_fidelity, then Go's own runtime.Stack(all) of the same
 * process (SIGUSR1), compared by go_fidelity_compare (tests/lib: same
 * goroutines; per goroutine the same "created by"; per parked goroutine
 * the same state, "locked to thread", and Go's frames in wallspy's with
 * the same functions, lines, inlined markers and return addresses, nothing
 * Go would print left out, and where Go elided frames exactly as many).
 * runtime.Stack leaves out the runtime's own goroutines (Go's
 * isSystemGoroutine), and so does wallspy by default: the two sets must be
 * equal. With --system-tasks wallspy lists them too: then the extra
 * ones must all start in package runtime. The deep fixtures must have all
 * 150 frames; the goroutines blocked in read(2) must say "read". At least 99 % of parked goroutines must match exactly.
 */
static void check_fidelity(const char *release)
{
	struct go_compared c;

	compare_with_go(release, "go_fidelity", &c);
	cr_assert_str_eq(str_of(c.root, "runtime"), "go");
	size_t deep = check_deep_stacks(c.tb, &c.dump);

	cr_expect_eq(c.r.kinds[GO_MM_MISSING], 0, "%zu goroutines of Go's dump "
		     "missing in wallspy's", c.r.kinds[GO_MM_MISSING]);
	cr_expect_eq(c.r.kinds[GO_MM_EXTRA], 0, "%zu goroutines only in "
		     "wallspy's (system goroutines must be hidden by default)",
		     c.r.kinds[GO_MM_EXTRA]);
	cr_expect_eq(c.r.kinds[GO_MM_CREATED_BY], 0, "%zu \"created by\" differ",
		     c.r.kinds[GO_MM_CREATED_BY]);
	cr_expect_eq(deep, 4, "expected 4 deep goroutines, found %zu", deep);
	size_t in_read = check_syscall_goroutines(c.root);
	cr_expect_eq(in_read, 6, "expected 6 goroutines in read(2), found %zu",
		     in_read);
	cr_assert_geq(c.r.parked, FIDELITY_PARKED, "only %zu parked goroutines "
		      "in Go's dump (the fixture parks %d)", c.r.parked,
		      FIDELITY_PARKED);
	cr_assert_geq((double)c.r.exact, 0.99 * (double)c.r.parked,
		      "only %zu of %zu parked goroutines match", c.r.exact,
		      c.r.parked);

	/* The runtime's own goroutines, on request. */
	cJSON *all = dump_json(c.t.proc.pid, "--system-tasks", NULL);
	struct go_dump all_dump = go_dump_load(all);
	const struct go_fidelity_options system = { .allow_system_extra = true };
	struct go_fidelity ra;

	go_fidelity_compare(c.tb, &all_dump, &c.st, &system, &ra);
	cr_log_info("%s --system-tasks: %zu goroutines, %zu of them the "
		    "runtime's", release, ra.ws_goroutines,
		    ra.ws_goroutines - ra.go_goroutines);
	cr_expect_eq(ra.kinds[GO_MM_MISSING] + ra.kinds[GO_MM_EXTRA], 0,
		     "--system-tasks: %zu missing, %zu extra not in package "
		     "runtime", ra.kinds[GO_MM_MISSING], ra.kinds[GO_MM_EXTRA]);
	cr_expect_gt(ra.ws_goroutines, ra.go_goroutines,
		     "--system-tasks shows no goroutine of the runtime");

	go_dump_free(&all_dump);
	compared_end(&c);
}

#define FIDELITY_TEST(id, release)                                          \
	Test(e2e_go, fidelity_go##id, .timeout = 120, .fini = e2e_cleanup)  \
	{                                                                   \
		check_fidelity(release);                                    \
	}
WS_GO_RELEASES(FIDELITY_TEST)

/* ---- testing/synctest bubbles ---- */

/* A synctest fixture's table: the states Go prints for its goroutines and
 * how many park in each by construction. */
struct synctest_state {
	const char *state;
	size_t copies;
};

/* go_synctest.go's (Go's waitReasonStrings of runtime/runtime2.go, 1.25
 * and 1.26, and the " (durable)" runtime/traceback.go adds). */
static const struct synctest_state synctest_states[] = {
	/* Two main.parkDurableRecv and testing/synctest's own goroutine
	 * (testingSynctestTest, started by synctest.Test), which starts the
	 * one running the bubble's function and waits for it. */
	{ "chan receive (durable)", 3 },
	{ "chan send (durable)", 2 },
	{ "select (durable)", 2 },
	{ "sync.WaitGroup.Wait (durable)", 2 },
	{ "synctest.Wait (durable)", 1 },
	{ "synctest.Run (durable)", 1 },
	{ NULL, 0 },
};

/* go_synctest_run.go's, for Go 1.24 (GOEXPERIMENT=synctest): its own
 * names, no " (durable)", and a WaitGroup that knows no bubbles. */
static const struct synctest_state synctest_run_states[] = {
	{ "chan receive (synctest)", 2 },
	{ "chan send (synctest)", 2 },
	{ "select (synctest)", 2 },
	{ "sync.WaitGroup.Wait", 2 },
	{ "synctest.Wait", 1 },
	{ "synctest.Run", 1 },
	{ NULL, 0 },
};

/*
 * 1b. Goroutines in a testing/synctest bubble, on the releases that have
 * it (1.25 on: go_synctest; 1.24 with GOEXPERIMENT=synctest:
 * go_synctest_run): wallspy's `dump --json` against the fixture's own
 * runtime.Stack(all), compared as in 1. (every goroutine, every parked one
 * exactly, its bubble's ", synctest bubble N" or ", synctest group N"
 * too), and the bubble's wait reasons spelled as Go prints them: each of
 * the table's brackets on as many goroutines in Go's traceback and in
 * wallspy's dump; and every goroutine the fixture starts in its bubble is
 * in one, in Go's traceback as in wallspy's.
 */
static void check_synctest(const char *release)
{
	/* Only 1.24 has the experiment's API (synctest.Run) and not 1.25's. */
	bool run_api = strcmp(release, "1.24") == 0;
	const struct synctest_state *states = run_api ? synctest_run_states
						      : synctest_states;
	struct go_compared c;
	size_t in_bubble = 0, ws_in_bubble = 0, table = 0;

	compare_with_go(release, run_api ? "go_synctest_run" : "go_synctest",
			&c);
	const struct ws_go_traceback *tb = c.tb;
	const struct go_dump *dump = &c.dump;
	for (size_t k = 0; states[k].state; k++) {
		size_t in_go = 0, in_ws = 0;

		table += states[k].copies;
		for (size_t i = 0; i < tb->ngoroutines; i++)
			in_go += strcmp(tb->goroutines[i].state, states[k].state) == 0;
		for (size_t i = 0; i < dump->n; i++)
			in_ws += dump->goroutines[i].wait_reason &&
				 strcmp(dump->goroutines[i].wait_reason,
					states[k].state) == 0;
		cr_expect_eq(in_go, states[k].copies, "go %s: Go prints "
			     "[%s] on %zu goroutines, the fixture parks %zu", release,
			     states[k].state, in_go, states[k].copies);
		cr_expect_eq(in_ws, states[k].copies, "go %s: wallspy says "
			     "\"%s\" of %zu goroutines, the fixture parks %zu", release,
			     states[k].state, in_ws, states[k].copies);
	}
	/* The table's goroutines, the outside receiver and (1.25 on)
	 * testing's own are in the bubble: one bubble, so one kind and
	 * number. */
	for (size_t i = 0; i < tb->ngoroutines; i++)
		in_bubble += tb->goroutines[i].bubble_kind != NULL;
	for (size_t i = 0; i < dump->n; i++)
		ws_in_bubble += dump->goroutines[i].bubble_kind &&
				strcmp(dump->goroutines[i].bubble_kind,
				       run_api ? "synctest group"
					       : "synctest bubble") == 0;
	cr_expect_eq(in_bubble, table + 1, "go %s: Go prints %zu goroutines "
		     "in a bubble, the fixture starts %zu", release, in_bubble,
		     table + 1);
	cr_expect_eq(ws_in_bubble, table + 1, "go %s: wallspy shows %zu "
		     "goroutines in a bubble, the fixture starts %zu", release,
		     ws_in_bubble, table + 1);
	go_fidelity_expect_exact(&c.r, release);
	compared_end(&c);
}

#define SYNCTEST_TEST(id, release)                                          \
	Test(e2e_go, synctest_wait_reasons_go##id, .timeout = 120,          \
	     .fini = e2e_cleanup)                                           \
	{                                                                   \
		check_synctest(release);                                    \
	}
WS_GO_SYNCTEST(SYNCTEST_TEST)

/* ---- cgo callbacks: the runtime's extra Ms ---- */

/*
 * 1c. Goroutines of C threads' calls into Go (go_cgo_extra, cgo; 1.26,
 * whose extra Ms' goroutines are _Gdeadextra between callbacks): wallspy's `dump --json` lists exactly the goroutines of Go's
 * own runtime.Stack(all): the dead extra ones (the spare extra M's, and
 * the one whose C thread returned and exited) in neither, the callback
 * parked in Go (main.parkInCallback, [chan receive]) in both, with Go's
 * frames.
 */
static void check_cgo_extra(const char *release)
{
	struct go_compared c;
	long callback = 0;

	compare_with_go(release, "go_cgo_extra", &c);
	for (size_t i = 0; i < c.tb->ngoroutines; i++)
		if (c.tb->goroutines[i].nframes &&
		    strcmp(c.tb->goroutines[i].frames[0].function,
			   "main.parkInCallback") == 0)
			callback = c.tb->goroutines[i].goid;
	cr_expect_neq(callback, 0, "go %s: no main.parkInCallback in Go's traceback",
		      release);
	cr_expect_not_null(go_dump_find(&c.dump, callback),
			   "go %s: the callback's goroutine %ld is not in wallspy's dump",
			   release, callback);
	go_fidelity_expect_exact(&c.r, release);
	compared_end(&c);
}

#define CGO_TEST(id, release)                                               \
	Test(e2e_go, cgo_extra_goroutines_go##id, .timeout = 120,           \
	     .fini = e2e_cleanup)                                           \
	{                                                                   \
		check_cgo_extra(release);                                   \
	}
WS_GO_CGO(CGO_TEST)

/* ---- "created by" in the text dump ---- */

struct created_by {
	long id;
	char *function;       /* NULL: no "created by" line */
	char *file;
	long line;
	long goid;            /* "in goroutine N"; -1 when not printed */
};

/* Parses `wallspy dump` text: per "goroutine ID ..." block, its "    created
 * by F[ in goroutine N] (FILE:LINE)" line. */
static struct created_by *parse_created_by(const char *text, size_t *count)
{
	size_t n = 0, cap = 256;
	struct created_by *out = calloc(cap, sizeof(*out));
	const char *line = text;

	cr_assert_not_null(out);
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (strncmp(line, "goroutine ", 10) == 0) {
			if (n == cap) {
				cap *= 2;
				out = realloc(out, cap * sizeof(*out));
				cr_assert_not_null(out);
			}
			out[n++] = (struct created_by){ .id = strtol(line + 10, NULL, 10),
							.goid = -1 };
		} else if (n && len > 15 && strncmp(line, "    created by ", 15) == 0) {
			char *copy = strndup(line + 15, len - 15);
			char *paren = strstr(copy, " (");
			struct created_by *c = &out[n - 1];

			cr_assert_null(c->function, "task %ld: two \"created by\" lines",
				       c->id);
			cr_assert_not_null(paren, "\"created by\" without a location: %s",
					   copy);
			*paren = '\0';
			char *in = strstr(copy, " in goroutine ");
			if (in) {
				c->goid = strtol(in + 14, NULL, 10);
				*in = '\0';
			}
			c->function = go_normalize_generics(copy);
			char *loc = paren + 2;
			char *colon = strrchr(loc, ':');
			if (colon) {
				*colon = '\0';
				c->file = strdup(loc);
				c->line = strtol(colon + 1, NULL, 10);
			}
			free(copy);
		}
		line = end ? end + 1 : NULL;
	}
	*count = n;
	return out;
}

/*
 * 2. "created by" in the text dump, oldest and newest release: "    created
 * by F[ in goroutine N] (FILE:LINE)" against Go's "created by F[ in
 * goroutine N] / FILE:LINE", for every goroutine Go printed (the creator
 * never changes, so running ones count too): same function, same file and
 * line (Go prints the go statement's line: gopc symbolized one byte back,
 * as wallspy does), the same creating goroutine where Go names it (Go >=
 * 1.21 keeps g.parentGoid); no line where Go prints none (goroutine 1).
 */
static void check_created_by_text(const char *release)
{
	struct go_target t = start_fidelity(release);
	struct e2e_result res = e2e_run_dump(t.proc.pid, NULL, NULL, 0, 60000);
	struct ws_go_traceback *tb = go_own_traceback(&t);
	size_t n, compared = 0, name_bad = 0, loc_bad = 0;
	struct created_by *cb = parse_created_by(res.out, &n);

	cr_assert_gt(n, 0, "no task in the text dump:\n%.2000s", res.out);
	for (size_t i = 0; i < tb->ngoroutines; i++) {
		const struct ws_go_goroutine *go = &tb->goroutines[i];
		const struct created_by *c = NULL;

		for (size_t k = 0; k < n && !c; k++)
			if (cb[k].id == go->goid)
				c = &cb[k];
		cr_assert_not_null(c, "goroutine %ld missing from the text dump",
				   go->goid);
		compared++;
		if (!go->has_created_by) {
			if (c->function) {
				name_bad++;
				cr_log_error("goroutine %ld: Go prints no creator, wallspy "
					     "\"created by %s\"", go->goid, c->function);
			}
			continue;
		}
		char *want = go_normalize_generics(go->created_by);
		if (!c->function || strcmp(c->function, want) != 0) {
			name_bad++;
			cr_log_error("goroutine %ld [%s]: Go \"created by %s\", wallspy %s%s",
				     go->goid, go->raw_state, want,
				     c->function ? "\"created by " : "(none)",
				     c->function ? c->function : "");
		} else if (!c->file || strcmp(c->file, go->created_by_file) != 0 ||
			   c->line != go->created_by_line ||
			   c->goid != go->created_by_goid) {
			loc_bad++;
			cr_log_error("goroutine %ld: created by %s in goroutine %ld at Go "
				     "%s:%d, wallspy in goroutine %ld at %s:%ld",
				     go->goid, want, go->created_by_goid,
				     go->created_by_file, go->created_by_line, c->goid,
				     c->file ? c->file : "?", c->line);
		}
		free(want);
	}
	cr_log_info("created by: %zu goroutines compared, %zu function and %zu "
		    "location mismatches", compared, name_bad, loc_bad);
	cr_assert_geq(compared, FIDELITY_PARKED);
	cr_expect_eq(name_bad, 0, "%zu \"created by\" functions differ from Go's",
		     name_bad);
	cr_expect_eq(loc_bad, 0, "%zu \"created by\" locations differ from Go's",
		     loc_bad);

	for (size_t k = 0; k < n; k++) {
		free(cb[k].function);
		free(cb[k].file);
	}
	free(cb);
	ws_go_traceback_destroy(tb);
	stop_go_healthy(&t);
}

#define CREATED_BY_TEST(id, release)                                        \
	Test(e2e_go, created_by_text_go##id, .timeout = 120,                \
	     .fini = e2e_cleanup)                                           \
	{                                                                   \
		check_created_by_text(release);                             \
	}
WS_GO_ENDS(CREATED_BY_TEST)

/* ---- goroutine labels ---- */

/* go_labels.go's table: the goroutines' functions and their labels by
 * construction ("k=v k=v", sorted by key; "" for none). */
static const struct {
	const char *function;
	int copies;
	const char *labels;
} label_kinds[] = {
	{ "main.parkUsers", 4, "handler=/api/users tenant=t1" },
	{ "main.parkOrders", 3, "handler=/api/orders" },
	{ "main.parkMany", 2, "k00=v00 k01=v01 k02=v02 k03=v03 k04=v04 k05=v05 "
			      "k06=v06 k07=v07 k08=v08 k09=v09 k10=v10 k11=v11" },
	{ "main.parkChild", 2, "handler=/api/users tenant=t1" },
	{ "main.parkSet", 1, "handler=/set" },
	{ "main.parkPlain", 2, "" },
};

/* A dump task's "labels" as "k=v k=v" in the JSON's order. */
static void labels_text(const cJSON *task, char *buf, size_t size)
{
	const cJSON *labels = cJSON_GetObjectItem(task, "labels");
	const cJSON *label;
	size_t used = 0;

	buf[0] = '\0';
	if (!cJSON_IsObject(labels))
		return;
	cJSON_ArrayForEach(label, labels) {
		int n = snprintf(buf + used, size - used, "%s%s=%s", used ? " " : "",
				 label->string, cJSON_GetStringValue(label));
		cr_assert(n >= 0 && (size_t)n < size - used);
		used += (size_t)n;
	}
}

/*
 * 3. Goroutine labels, on every release: `dump --json` of go_labels shows
 * every goroutine's runtime/pprof labels as the fixture set them (Go <=
 * 1.23 keeps them in a map, 12 labels spill over one bucket; later in a
 * sorted slice), sorted by key, inherited by a goroutine started inside
 * pprof.Do, none where none were set; the text dump says "labels:". Then
 * `attach --group-by label:handler` makes one profile per handler value,
 * each holding exactly the goroutines with that label, and "no handler
 * label" for the rest.
 */
static void check_labels(const char *release)
{
	struct go_target t = start_go(release, "go_labels", NULL, 30000);
	cJSON *root = dump_json(t.proc.pid, NULL, NULL);
	const cJSON *task;
	int found[sizeof(label_kinds) / sizeof(label_kinds[0])] = { 0 };

	cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks")) {
		char got[1024];

		labels_text(task, got, sizeof(got));
		for (size_t k = 0; k < sizeof(label_kinds) / sizeof(label_kinds[0]); k++) {
			if (!task_has_frame(task, label_kinds[k].function))
				continue;
			found[k]++;
			cr_expect_str_eq(got, label_kinds[k].labels,
					 "go %s: goroutine %ld in %s: labels {%s}, set {%s}",
					 release, long_of(task, "id"),
					 label_kinds[k].function, got,
					 label_kinds[k].labels);
		}
	}
	for (size_t k = 0; k < sizeof(label_kinds) / sizeof(label_kinds[0]); k++)
		cr_expect_eq(found[k], label_kinds[k].copies, "%d goroutines in %s",
			     found[k], label_kinds[k].function);

	struct e2e_result text = e2e_run_dump(t.proc.pid, NULL, NULL, 0, 30000);
	cr_expect(strstr(text.out, "    labels: {\"handler\":\"/api/orders\"}\n"),
		  "no labels line in the text dump:\n%.2000s", text.out);

	const char *opts[] = { "-d", "1", "--group-by", "label:handler", NULL };
	const char *out;
	e2e_attach(t.proc.pid, opts, "out.json", &out, 60000);
	struct ss_view v = ss_load(out);
	static const struct { const char *group, *function; } groups[] = {
		{ "handler=/api/users", "main.parkUsers" },
		{ "handler=/api/users", "main.parkChild" },
		{ "handler=/api/orders", "main.parkOrders" },
		{ "handler=/set", "main.parkSet" },
		{ "no handler label", "main.parkPlain" },
		{ "no handler label", "main.parkMany" },
	};
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		bool in_group = false, elsewhere = false;

		SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {
			(void)w;
			if (!ss_has(&v, sample, groups[g].function))
				continue;
			/* A label's group merges tasks: in task-seconds. */
			char want[128];
			snprintf(want, sizeof(want), "%s \u2014 task-seconds",
				 groups[g].group);
			if (strcmp(ss_profile_name(profile), want) == 0)
				in_group = true;
			else
				elsewhere = true;
		}
		cr_expect(in_group && !elsewhere, "go %s: %s: in profile \"%s\" %d, "
			  "in others %d", release, groups[g].function, groups[g].group,
			  in_group, elsewhere);
	}
	stop_go_healthy(&t);
}

#define LABELS_TEST(id, release)                                            \
	Test(e2e_go, labels_go##id, .timeout = 120, .fini = e2e_cleanup)    \
	{                                                                   \
		check_labels(release);                                      \
	}
WS_GO_RELEASES(LABELS_TEST)

/* ---- runtime selection ---- */

static bool is_tid_of(pid_t tid, const pid_t *tids, int ntids)
{
	for (int i = 0; i < ntids; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/* How many tasks of a dump have a frame named fn. */
static int tasks_with_frame(const cJSON *root, const char *fn)
{
	const cJSON *task;
	int count = 0;

	cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks"))
		count += task_has_frame(task, fn);
	return count;
}

/*
 * 4. --runtime, on every release: auto (and the default, and "go") picks
 * the Go adapter for a Go binary ("runtime": "go", the goroutines);
 * "threads" still shows OS threads ("runtime": "threads", one task per
 * /proc/PID/task entry).
 */
static void check_runtime_selection(const char *release)
{
	const char *args[] = { "1000", NULL };
	struct go_target t = start_go(release, "go_parked_n", args, 60000);
	const char *modes[] = { NULL, "auto", "go" };

	for (size_t m = 0; m < sizeof(modes) / sizeof(*modes); m++) {
		cJSON *root = dump_json(t.proc.pid, modes[m] ? "--runtime" : NULL,
					modes[m]);
		int tasks = cJSON_GetArraySize(cJSON_GetObjectItem(root, "tasks"));

		cr_assert_str_eq(str_of(root, "runtime"), "go", "--runtime %s",
				 modes[m] ? modes[m] : "(default)");
		cr_assert_geq(tasks, 1000, "--runtime %s: %d tasks",
			      modes[m] ? modes[m] : "(default)", tasks);
		cr_assert_eq(tasks_with_frame(root, "main.recvInner"), 250);
		cr_assert_eq(tasks_with_frame(root, "main.selectInner"), 250);
		cr_assert_eq(tasks_with_frame(root, "main.lockOuter"), 250);
		cr_assert_eq(tasks_with_frame(root, "main.condOuter"), 250);
	}

	pid_t tids[512];
	int ntids = e2e_tids(t.proc.pid, tids, 512);
	cJSON *root = dump_json(t.proc.pid, "--runtime", "threads");
	const cJSON *task;
	int tasks = 0;

	cr_assert_str_eq(str_of(root, "runtime"), "threads");
	cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks")) {
		long id = long_of(task, "id");

		tasks++;
		cr_assert(is_tid_of((pid_t)id, tids, ntids),
			  "--runtime threads: task %ld is not a thread of %d", id,
			  t.proc.pid);
		cr_assert_eq(long_of(task, "thread"), id);
	}
	cr_assert_eq(tasks, ntids, "--runtime threads: %d tasks, %d threads",
		     tasks, ntids);
	cr_assert_eq(tasks_with_frame(root, "main.recvInner"), 0,
		     "--runtime threads shows parked goroutines");
	stop_go_healthy(&t);
}

#define RUNTIME_TEST(id, release)                                           \
	Test(e2e_go, runtime_auto_picks_go_threads_still_threads_go##id,    \
	     .timeout = 120, .fini = e2e_cleanup)                           \
	{                                                                   \
		check_runtime_selection(release);                           \
	}
WS_GO_RELEASES(RUNTIME_TEST)

/* ---- no DWARF ---- */

static void check_no_dwarf_error(const struct e2e_result *res, const char *what)
{
	cr_assert_eq(e2e_exit_code(res), 7, "%s: status %#x, stderr: %s", what,
		     res->status, res->err);
	cr_assert(e2e_is_one_error_line(res->err),
		  "%s: not one \"wallspy: ...\" line: %s", what, res->err);
	cr_assert(strstr(res->err, "DWARF"), "%s: no mention of DWARF: %s", what,
		  res->err);
	cr_assert(e2e_match(res->err, "(^|[^A-Za-z])-w([^A-Za-z]|$)"),
		  "%s: does not say how to rebuild (-w): %s", what, res->err);
	cr_assert_str_empty(res->out, "%s wrote to stdout: %s", what, res->out);
}

/*
 * 5. A Go binary built with -ldflags=-w (go_nodwarf): `dump` and `record`
 * fail with exit 7 and one line saying DWARF is missing and how to rebuild;
 * record leaves no output file and no live target behind; the target dump
 * attached to is left running, not stopped; --runtime threads still works.
 */
Test(e2e_go, no_dwarf_exit_7, .timeout = 120, .fini = e2e_cleanup_adopting)
{
	const char *args[] = { "100", NULL };
	struct go_target t = start_go(NULL, "go_nodwarf", args, 30000);
	const char *json[] = { "--json", NULL };
	struct e2e_result res;

	res = e2e_run_dump(t.proc.pid, NULL, NULL, 7, 30000);
	check_no_dwarf_error(&res, "dump");
	cr_log_info("dump of go_nodwarf: %s", res.err);
	res = e2e_run_dump(t.proc.pid, json, NULL, 7, 30000);
	check_no_dwarf_error(&res, "dump --json");
	cr_assert(e2e_running_not_stopped(t.proc.pid, 5, 20),
		  "go_nodwarf stopped after the failed dump");

	const char *threads[] = { "--json", "--runtime", "threads", NULL };
	res = e2e_run_dump(t.proc.pid, threads, NULL, 0, 30000);
	cJSON *root = e2e_parse_json(res.out);
	cr_assert_not_null(root);
	cr_assert_str_eq(str_of(root, "runtime"), "threads");
	cr_assert_gt(cJSON_GetArraySize(cJSON_GetObjectItem(root, "tasks")), 0);
	stop_go_healthy(&t);

	/* record: the launched target must not outlive the failure. */
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	char *argv[] = { (char *)e2e_wallspy(), "record", "-o", (char *)out,
			 "--", (char *)e2e_need_go_fixture(NULL, "go_nodwarf"), "100", NULL };
	pid_t orphans[8];

	e2e_become_subreaper();
	e2e_run(argv, dir, 30000, &res);
	cr_assert(!res.timed_out, "wallspy record timed out");
	check_no_dwarf_error(&res, "record");
	cr_assert_eq(e2e_dir_entries(dir), 0, "record left files behind: %s",
		     e2e_dir_list(dir));
	int norphans = e2e_adopt_orphans(orphans, 8);
	for (int i = 0; i < norphans; i++) {
		char state = e2e_proc_state(orphans[i], 0);

		cr_expect(state == 'Z' || state == 0,
			  "record's target %d outlived the failure (state %c)",
			  orphans[i], state);
	}
}

/* ---- scale ---- */

static size_t count_lines_starting(const char *text, const char *prefix)
{
	size_t n = 0, len = strlen(prefix);
	const char *line = text;

	while (line && *line) {
		if (strncmp(line, prefix, len) == 0)
			n++;
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return n;
}

/* Checks the root-frame contract on `dump` text: in every "goroutine" block the
 * outermost frame (the last line before "created by") is runtime.goexit.
 * Returns the number of blocks; logs the first few offenders. */
static size_t check_text_roots(const char *text, size_t *bad)
{
	size_t blocks = 0;
	const char *line = text, *last_frame = NULL;
	long id = -1;

	*bad = 0;
	for (;;) {
		const char *end = line ? strchr(line, '\n') : NULL;
		bool block_end = !line || !*line || *line == '\n' ||
				 strncmp(line, "goroutine ", 10) == 0;

		if (block_end && id >= 0) {
			blocks++;
			if (!last_frame || strncmp(last_frame, "    runtime.goexit (", 20) != 0) {
				if (++*bad <= 5) {
					const char *e = last_frame ? strchr(last_frame, '\n') : NULL;
					cr_log_error("goroutine %ld: outermost frame is not "
						     "runtime.goexit: %.*s", id,
						     last_frame ? (int)(e ? e - last_frame
									  : (long)strlen(last_frame))
								: 6,
						     last_frame ? last_frame : "(none)");
				}
			}
			id = -1;
		}
		if (!line || !*line)
			break;
		if (strncmp(line, "goroutine ", 10) == 0) {
			id = strtol(line + 10, NULL, 10);
			last_frame = NULL;
		} else if (id >= 0 && strncmp(line, "    ", 4) == 0 &&
			   strncmp(line, "    created by ", 15) != 0) {
			last_frame = line;
		}
		line = end ? end + 1 : NULL;
	}
	return blocks;
}

/*
 * 6a. `wallspy dump` of 100000 parked goroutines (go_parked_n 100000;
 * oldest and newest release) completes, exit 0, and lists every one of
 * them with its chain (25000 per chain of go_parked_n's table); the time is
 * printed (not asserted: this is a shared 2-CPU machine; the timeout is
 * generous).
 */
static void check_dump_100k(const char *release)
{
	const char *args[] = { "100000", NULL };
	double t0 = e2e_now();
	struct go_target t = start_go(release, "go_parked_n", args, 180000);
	double started = e2e_now() - t0;
	struct e2e_result res = e2e_run_dump(t.proc.pid, NULL, NULL, 0, 300000);
	size_t tasks = count_lines_starting(res.out, "goroutine ");
	size_t recv = count_lines_starting(res.out, "    main.recvInner ");
	size_t sel = count_lines_starting(res.out, "    main.selectInner ");
	size_t lock = count_lines_starting(res.out, "    main.lockOuter ");
	size_t cond = count_lines_starting(res.out, "    main.condOuter ");

	cr_log_info("go %s: dump of go_parked_n 100000: %.2f s, %zu goroutines, "
		    "%.1f MB of text (fixture ready after %.2f s)", release,
		    res.seconds, tasks,
		    (double)strlen(res.out) / 1e6, started);
	cr_assert_geq(tasks, 100000, "only %zu goroutines listed", tasks);
	cr_assert_eq(recv, 25000, "%zu goroutines in main.recvInner", recv);
	cr_assert_eq(sel, 25000, "%zu goroutines in main.selectInner", sel);
	cr_assert_eq(lock, 25000, "%zu goroutines in main.lockOuter", lock);
	cr_assert_eq(cond, 25000, "%zu goroutines in main.condOuter", cond);
	cr_assert_geq(count_lines_starting(res.out, "    created by main.main "),
		      100000);
	size_t bad_roots;
	check_text_roots(res.out, &bad_roots);
	cr_expect_eq(bad_roots, 0, "%zu of %zu goroutines do not end in "
		     "runtime.goexit", bad_roots, tasks);
	stop_go_healthy(&t);
}

#define DUMP_100K_TEST(id, release)                                         \
	Test(e2e_go, dump_100k_goroutines_go##id, .timeout = 400,           \
	     .fini = e2e_cleanup)                                           \
	{                                                                   \
		check_dump_100k(release);                                   \
	}
WS_GO_ENDS(DUMP_100K_TEST)

/* ---- findings beyond the table: frames every goroutine must have ---- */

/*
 * A running goroutine is sampled from its thread's live registers: the dump
 * of go_fidelity must show the spinner (main.spin, never parked) with a
 * stack, not "[failed to sample: ...]" — its thread stops like any other.
 * Three dumps, each must succeed. Oldest and newest release.
 */
static void check_running_has_stack(const char *release)
{
	struct go_target t = start_fidelity(release);
	int failed = 0;

	for (int attempt = 0; attempt < 3; attempt++) {
		cJSON *root = dump_json(t.proc.pid, NULL, NULL);
		struct go_dump dump = go_dump_load(root);
		const struct go_dump_goroutine *spinner = NULL;

		for (size_t i = 0; i < dump.n && !spinner; i++)
			for (size_t k = 0; k < dump.goroutines[i].nframes; k++)
				if (dump.goroutines[i].frames[k].name &&
				    strcmp(dump.goroutines[i].frames[k].name, "main.spin") == 0)
					spinner = &dump.goroutines[i];
		cr_assert_not_null(spinner, "no goroutine in main.spin");
		char *chain = go_dump_chain_text(spinner);
		if (spinner->error) {
			failed++;
			cr_log_error("dump %d: spinner goroutine %ld [%s]: %s", attempt,
				     spinner->id, spinner->state, chain);
		} else {
			cr_log_info("dump %d: spinner goroutine %ld [%s]: %s", attempt,
				    spinner->id, spinner->state, chain);
		}
		free(chain);
		go_dump_free(&dump);
	}
	cr_expect_eq(failed, 0, "%d of 3 dumps failed to sample the running "
		     "spinner goroutine", failed);
	stop_go_healthy(&t);
}

#define RUNNING_TEST(id, release)                                           \
	Test(e2e_go, dump_running_goroutine_has_stack_go##id, .timeout = 120, \
	     .fini = e2e_cleanup)                                           \
	{                                                                   \
		check_running_has_stack(release);                           \
	}
WS_GO_ENDS(RUNNING_TEST)

/*
 * Every frame of every goroutine names a function, on every release: the
 * Go fixtures are statically linked with full symbols, so an unnamed frame
 * is a pc wallspy got wrong. go_workload3 dumped right after "ready" (with
 * the runtime's own goroutines) has goroutines that have not started
 * (g.sched.pc = the entry of their go statement's function: the man page
 * promises "shown as its entry function") and a main goroutine in runtime
 * code, some of it assembly without DWARF. Unnamed frames are explained
 * from the ELF symbol table.
 */
static void check_every_frame_symbolized(const char *release)
{
	const char *args[] = { "256", "4194304", NULL };
	struct go_target t = start_go(release, "go_workload3", args, 30000);
	cJSON *root = dump_json(t.proc.pid, "--system-tasks", NULL);
	struct e2e_symtab st = e2e_symtab_load_loaded(t.proc.pid, t.path);
	size_t frames = 0, unnamed = 0, unstarted = 0;
	struct go_dump dump = go_dump_load(root);
	unsigned long reported[16];
	size_t nreported = 0;

	e2e_kill(t.proc.pid);
	for (size_t i = 0; i < dump.n; i++) {
		const struct go_dump_goroutine *g = &dump.goroutines[i];

		if (g->state && strcmp(g->state, "runnable") == 0 && g->nframes == 2)
			unstarted++;
		for (size_t k = 0; k < g->nframes; k++) {
			const struct go_dump_frame *f = &g->frames[k];
			bool seen = false;

			frames++;
			if (f->name)
				continue;
			unnamed++;
			for (size_t r = 0; r < nreported; r++)
				seen |= reported[r] == f->address;
			if (seen || nreported == 16)
				continue;
			reported[nreported++] = f->address;
			uint64_t file_address = f->address - st.bias;
			const struct e2e_sym *fn = e2e_symtab_function_at(&st, file_address);
			cr_log_error("goroutine %ld [%s] frame #%zu at %#lx has no "
				     "function; .symtab: %s%s%s", g->id,
				     g->state ? g->state : "?", k, f->address,
				     fn ? (fn->value == file_address ? "the entry of "
								     : "inside ")
					: "no symbol",
				     fn ? fn->name : "",
				     fn && fn->value == file_address && k == 0
					     ? " (frame 0 of a saved context at a "
					       "function entry, symbolized at pc-1?)"
					     : "");
		}
	}
	cr_log_info("go %s: %zu goroutines (%zu runnable with 2 frames), %zu "
		    "frames, %zu without a function", release, dump.n, unstarted,
		    frames, unnamed);
	cr_expect_eq(unnamed, 0, "%zu of %zu frames name no function", unnamed,
		     frames);
	go_dump_free(&dump);
	e2e_symtab_free(&st);
}

#define SYMBOLIZED_TEST(id, release)                                        \
	Test(e2e_go, dump_every_frame_symbolized_go##id, .timeout = 120,    \
	     .fini = e2e_cleanup)                                           \
	{                                                                   \
		check_every_frame_symbolized(release);                      \
	}
WS_GO_RELEASES(SYMBOLIZED_TEST)

/*
 * A running goroutine whose M is in a vDSO call on g0: the runtime's own
 * code calls nanotime there while m.curg is still (or already) the
 * goroutine, _Grunning (newproc -> systemstack -> wakep -> pidleget, or
 * execute -> casgstatus), and nanotime1 records its caller's pc and sp in
 * m.vdsoPC/vdsoSP as it does for any caller. Those are g0's, not the
 * goroutine's: unwound from there, the stack ends in the scheduler, never
 * at runtime.goexit (CI once saw "runtime.casgstatus;runtime.nanotime;
 * [running]"). gdb stops go_workload2's thread right there
 * (go_stop_in_g0_vdso.py: a breakpoint on runtime.nanotime1 taken on g0,
 * stepped until m.vdsoSP is set, that thread resumed with SIGSTOP, which
 * it takes before any instruction, and gdb detached from the group stop), and wallspy dumps the stopped process: that goroutine is
 * running and its stack ends at runtime.goexit, as everyone's does.
 */
static void check_running_in_g0_vdso(const char *release)
{
	if (access("/usr/bin/gdb", X_OK) != 0)
		cr_skip_test("no gdb (tools/setup-deps installs it)");
	const char *prog = e2e_need_go_fixture(release, "go_workload2");
	const char *done = e2e_path(e2e_tmpdir(), "done");
	char script[512], line[256];
	snprintf(script, sizeof(script), "%s/tests/e2e/go_stop_in_g0_vdso.py",
		 WS_SOURCE_DIR);
	e2e_become_subreaper();
	cr_assert_eq(setenv("WALLSPY_TEST_DONE", done, 1), 0);
	char *argv[] = { "/usr/bin/gdb", "-q", "-batch", "-nx",
			 "-ex", "set pagination off", "-ex", "set confirm off",
			 "-ex", "set scheduler-locking step",
			 "-ex", "handle SIGURG nostop noprint pass",
			 "-x", script, "--args", (char *)prog, "16384", NULL };
	struct e2e_proc gdb = e2e_spawn(argv, &(struct e2e_spawn_opts){
		.pipe_stdout = true });
	cr_assert(e2e_wait_line_prefix(gdb.out_fd, "WALLSPY-TEST ", line,
				       sizeof(line), 60000),
		  "gdb never stopped the program in runtime.nanotime1 on g0");
	int pid = 0;
	long goid = -1;
	unsigned long long vdso_sp = 0, lo = 0, hi = 0;
	cr_assert_eq(sscanf(line, "WALLSPY-TEST pid=%d goid=%ld vdsosp=%llx "
			    "lo=%llx hi=%llx", &pid, &goid, &vdso_sp, &lo, &hi),
		     5, "gdb said: %s", line);
	cr_log_info("%s", line);
	cr_assert(vdso_sp && (vdso_sp < lo || vdso_sp >= hi),
		  "m.vdsoSP %#llx is on goroutine %ld's stack [%#llx, %#llx): "
		  "not the case under test", vdso_sp, goid, lo, hi);
	cr_assert(e2e_wait_proc_state(pid, 'T', 5000),
		  "program %d not stopped after gdb detached (state %c)", pid,
		  e2e_proc_state(pid, pid));

	cJSON *root = dump_json(pid, "--system-tasks", NULL);
	struct go_dump dump = go_dump_load(root);
	const struct go_dump_goroutine *g = NULL;
	for (size_t i = 0; i < dump.n && !g; i++)
		if (dump.goroutines[i].id == goid)
			g = &dump.goroutines[i];
	cr_assert_not_null(g, "goroutine %ld not in the dump", goid);
	char *chain = go_dump_chain_text(g);
	cr_log_info("goroutine %ld [%s]: %s", goid, g->state, chain);
	cr_expect_str_eq(g->state, "running");
	cr_expect_null(g->error, "goroutine %ld failed: %s", goid, g->error);
	cr_expect(g->nframes > 1 && g->frames[g->nframes - 1].name &&
		  strcmp(g->frames[g->nframes - 1].name, "runtime.goexit") == 0,
		  "goroutine %ld's stack does not end at runtime.goexit: %s", goid,
		  chain);
	free(chain);
	go_dump_free(&dump);
	kill(pid, SIGKILL);
	close(open(done, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	int status;
	e2e_wait_timeout(gdb.pid, 10000, &status);
}

Test(e2e_go, running_goroutine_in_g0_vdso_call_reaches_goexit, .timeout = 120,
     .fini = e2e_cleanup_adopting)
{
	check_running_in_g0_vdso("1.25");
}
