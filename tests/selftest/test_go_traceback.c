/*
 * Tests of go_traceback, the parser of Go's goroutine traceback text: exact
 * parses of hand-written snippets (every line kind Go 1.19 prints, plus the
 * Go >= 1.21 variants), and a parse of the real runtime.Stack(buf, true)
 * dump of fixtures/go/go_fidelity, built with every release of the matrix
 * (go_releases.h), checked against that fixture's park-kind table
 * (go_fidelity.go's header comment; the kinds below mirror it, with the
 * states and chains each release prints).
 */
#include "go_traceback.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_util.h"
#include "go_releases.h"

#define FIDELITY_SRC WS_SOURCE_DIR "/fixtures/go/go_fidelity.go"

/* ---- helpers ---- */

static struct ws_go_traceback *parse_ok(const char *text)
{
	struct ws_go_traceback *tb = NULL;
	struct ws_error *err = ws_go_traceback_parse(text, strlen(text), &tb);
	cr_assert_null(err, "parse: %s", err ? err->message : "");
	return tb;
}

static void assert_frame(const struct ws_go_frame *f, const char *function,
			 const char *args, const char *file, int line,
			 bool inlined, long pc_offset)
{
	cr_assert_str_eq(f->function, function);
	cr_assert_str_eq(f->args, args, "%s args", function);
	cr_assert_str_eq(f->file, file, "%s file", function);
	cr_assert_eq(f->line, line, "%s line %d", function, f->line);
	cr_assert_eq(f->inlined, inlined, "%s inlined", function);
	cr_assert_eq(f->has_pc_offset, pc_offset >= 0, "%s offset", function);
	if (pc_offset >= 0)
		cr_assert_eq(f->pc_offset, (unsigned long)pc_offset,
			     "%s offset %#lx", function, f->pc_offset);
}

/* ---- hand-written snippets ---- */

/* Shaped like runtime.Stack(buf, true) of Go 1.19, trimmed. */
static const char stack_snippet[] =
	"goroutine 1 [running]:\n"
	"main.dumpStacks({0x7ffca0825a25, 0x13})\n"
	"\t/src/fix.go:427 +0x4a\n"
	"main.main()\n"
	"\t/src/fix.go:454 +0x2cf\n"
	"\n"
	"goroutine 50 [semacquire, 10 minutes]:\n"
	"sync.runtime_SemacquireMutex(0x0?, 0x0?, 0x0?)\n"
	"\t/usr/lib/go-1.19/src/runtime/sema.go:77 +0x25\n"
	"sync.(*Mutex).lockSlow(0x5f25f0)\n"
	"\t/usr/lib/go-1.19/src/sync/mutex.go:171 +0x165\n"
	"sync.(*Mutex).Lock(...)\n"
	"\t/usr/lib/go-1.19/src/sync/mutex.go:90\n"
	"main.parkMutexLock()\n"
	"\t/src/fix.go:146 +0x39\n"
	"created by main.startAll\n"
	"\t/src/fix.go:334 +0x25f\n"
	"\n"
	"goroutine 116 [chan receive, 1 minutes, locked to thread]:\n"
	"main.recvInlined(...)\n"
	"\t/src/fix.go:246\n"
	"main.parkInlined(0x0?)\n"
	"\t/src/fix.go:251 +0x27\n"
	"created by main.startAll\n"
	"\t/src/fix.go:370 +0x5ce\n"
	"\n"
	"goroutine 120 [chan receive (nil chan)]:\n"
	"main.parkGeneric[...](0x0?)\n"
	"\t/src/fix.go:256 +0x2a\n"
	"main.(*parker).ParkPointer(0xc0000282d0)\n"
	"\t/src/fix.go:226 +0x33\n"
	"main.parker.ParkValue({0x0?, 0xc0000800c0?})\n"
	"\t/src/fix.go:221 +0x34\n"
	"main.startClosures.func1()\n"
	"\t/src/fix.go:237 +0x34\n"
	"created by main.startClosures\n"
	"\t/src/fix.go:236 +0x34\n"
	"\n"
	"goroutine 102 [select (scan)]:\n"
	"main.recurseElided(0x0?, 0x0?)\n"
	"\t/src/fix.go:204 +0x30\n"
	"main.recurseElided(0x0?, 0x0?)\n"
	"\t/src/fix.go:206 +0x47\n"
	"...additional frames elided...\n"
	"created by main.startAll\n"
	"\t/src/fix.go:358 +0x430\n"
	"\n"
	"goroutine 126 [runnable]:\n"
	"main.spin()\n"
	"\t/src/fix.go:268\n"
	"created by main.startAll\n"
	"\t/src/fix.go:384 +0x729\n";

Test(go_traceback, snippet_runtime_stack)
{
	struct ws_go_traceback *tb = parse_ok(stack_snippet);
	cr_assert_eq(tb->ngoroutines, 6);

	const struct ws_go_goroutine *g = &tb->goroutines[0];
	cr_assert_eq(g->goid, 1);
	cr_assert_str_eq(g->state, "running");
	cr_assert_str_eq(g->raw_state, "running");
	cr_assert_eq(g->nframes, 2);
	assert_frame(&g->frames[0], "main.dumpStacks", "{0x7ffca0825a25, 0x13}",
		     "/src/fix.go", 427, false, 0x4a);
	assert_frame(&g->frames[1], "main.main", "", "/src/fix.go", 454,
		     false, 0x2cf);
	cr_assert_not(g->has_created_by);
	cr_assert_null(g->created_by);

	g = &tb->goroutines[1];
	cr_assert_eq(g->goid, 50);
	cr_assert_str_eq(g->raw_state, "semacquire, 10 minutes");
	cr_assert_str_eq(g->state, "semacquire");
	cr_assert_eq(g->wait_minutes, 10);
	cr_assert_not(g->locked_to_thread);
	cr_assert_eq(g->nframes, 4);
	assert_frame(&g->frames[0], "sync.runtime_SemacquireMutex",
		     "0x0?, 0x0?, 0x0?",
		     "/usr/lib/go-1.19/src/runtime/sema.go", 77, false, 0x25);
	assert_frame(&g->frames[1], "sync.(*Mutex).lockSlow", "0x5f25f0",
		     "/usr/lib/go-1.19/src/sync/mutex.go", 171, false, 0x165);
	assert_frame(&g->frames[2], "sync.(*Mutex).Lock", "...",
		     "/usr/lib/go-1.19/src/sync/mutex.go", 90, true, -1);
	assert_frame(&g->frames[3], "main.parkMutexLock", "", "/src/fix.go",
		     146, false, 0x39);
	cr_assert(g->has_created_by);
	cr_assert_str_eq(g->created_by, "main.startAll");
	cr_assert_eq(g->created_by_goid, -1);
	cr_assert_str_eq(g->created_by_file, "/src/fix.go");
	cr_assert_eq(g->created_by_line, 334);
	cr_assert_not(g->frames_elided);

	g = &tb->goroutines[2];
	cr_assert_str_eq(g->raw_state, "chan receive, 1 minutes, locked to thread");
	cr_assert_str_eq(g->state, "chan receive");
	cr_assert_eq(g->wait_minutes, 1);
	cr_assert(g->locked_to_thread);
	cr_assert_eq(g->nframes, 2);
	assert_frame(&g->frames[0], "main.recvInlined", "...", "/src/fix.go",
		     246, true, -1);
	assert_frame(&g->frames[1], "main.parkInlined", "0x0?", "/src/fix.go",
		     251, false, 0x27);

	g = &tb->goroutines[3];
	cr_assert_str_eq(g->state, "chan receive (nil chan)");
	cr_assert_eq(g->wait_minutes, 0);
	cr_assert_eq(g->nframes, 4);
	assert_frame(&g->frames[0], "main.parkGeneric[...]", "0x0?",
		     "/src/fix.go", 256, false, 0x2a);
	assert_frame(&g->frames[1], "main.(*parker).ParkPointer",
		     "0xc0000282d0", "/src/fix.go", 226, false, 0x33);
	assert_frame(&g->frames[2], "main.parker.ParkValue",
		     "{0x0?, 0xc0000800c0?}", "/src/fix.go", 221, false, 0x34);
	assert_frame(&g->frames[3], "main.startClosures.func1", "",
		     "/src/fix.go", 237, false, 0x34);
	cr_assert_str_eq(g->created_by, "main.startClosures");
	cr_assert_eq(ws_go_goroutine_find_frame(g, "main.parker.ParkValue"), 2);
	cr_assert_eq(ws_go_goroutine_find_frame(g, "main.parker"), -1);

	g = &tb->goroutines[4];
	cr_assert_eq(g->goid, 102);
	cr_assert_str_eq(g->state, "select");
	cr_assert(g->scan);
	cr_assert_eq(g->nframes, 2);
	cr_assert(g->frames_elided);
	cr_assert_eq(g->elided_at, 2);      /* after the last frame */
	cr_assert_eq(g->elided_count, -1);  /* "additional": no count */
	cr_assert_str_eq(g->created_by, "main.startAll");
	cr_assert_eq(g->created_by_line, 358);

	g = &tb->goroutines[5];
	cr_assert_str_eq(g->state, "runnable");
	cr_assert_eq(g->nframes, 1);
	assert_frame(&g->frames[0], "main.spin", "", "/src/fix.go", 268,
		     false, -1);

	cr_assert_eq(ws_go_traceback_find(tb, 116), &tb->goroutines[2]);
	cr_assert_null(ws_go_traceback_find(tb, 7));
	ws_go_traceback_destroy(tb);
}

/* A SIGQUIT crash dump with GOTRACEBACK=system: noise around the sections,
 * fp/sp/pc after offsets, a goroutine whose stack is unavailable. */
static const char crash_snippet[] =
	"SIGQUIT: quit\n"
	"PC=0x466821 m=0 sigcode=0\n"
	"\n"
	"goroutine 0 [idle]:\n"
	"runtime.futex()\n"
	"\t/usr/lib/go-1.19/src/runtime/sys_linux_amd64.s:553 +0x21 fp=0x7ffd4d0 sp=0x7ffd4c8 pc=0x466821\n"
	"runtime.mPark(...)\n"
	"\t/usr/lib/go-1.19/src/runtime/proc.go:1457\n"
	"\n"
	"goroutine 7 [running]:\n"
	"\tgoroutine running on other thread; stack unavailable\n"
	"created by main.main\n"
	"\t/src/a b/x:y.go:12 +0x2c\n"
	"\n"
	"goroutine 8 [GC worker (idle), 3 minutes]:\n"
	"runtime.gopark(0x0?, 0x0?, 0x0?, 0x0?, 0x0?)\n"
	"\t/usr/lib/go-1.19/src/runtime/proc.go:363 +0xd6 fp=0xc0000 sp=0xc0001 pc=0x4\n"
	"runtime.goexit()\n"
	"\t/usr/lib/go-1.19/src/runtime/asm_amd64.s:1594 +0x1\n"
	"created by runtime.gcBgMarkStartWorkers\n"
	"\t/usr/lib/go-1.19/src/runtime/mgc.go:1159 +0x25\n"
	"\n"
	"rax    0xca\n"
	"rbx    0x0\n"
	"rip    0x466821\n"
	"exit status 2\n";

Test(go_traceback, snippet_crash_dump)
{
	struct ws_go_traceback *tb = parse_ok(crash_snippet);
	cr_assert_eq(tb->ngoroutines, 3);

	const struct ws_go_goroutine *g = &tb->goroutines[0];
	cr_assert_eq(g->goid, 0);
	cr_assert_str_eq(g->state, "idle");
	cr_assert_eq(g->nframes, 2);
	assert_frame(&g->frames[0], "runtime.futex", "",
		     "/usr/lib/go-1.19/src/runtime/sys_linux_amd64.s", 553,
		     false, 0x21);
	assert_frame(&g->frames[1], "runtime.mPark", "...",
		     "/usr/lib/go-1.19/src/runtime/proc.go", 1457, true, -1);
	cr_assert_not(g->has_created_by);

	g = &tb->goroutines[1];
	cr_assert_eq(g->goid, 7);
	cr_assert(g->stack_unavailable);
	cr_assert_eq(g->nframes, 0);
	cr_assert_str_eq(g->created_by, "main.main");
	cr_assert_str_eq(g->created_by_file, "/src/a b/x:y.go");
	cr_assert_eq(g->created_by_line, 12);

	g = &tb->goroutines[2];
	cr_assert_str_eq(g->state, "GC worker (idle)");
	cr_assert_eq(g->wait_minutes, 3);
	cr_assert_eq(g->nframes, 2);
	assert_frame(&g->frames[0], "runtime.gopark",
		     "0x0?, 0x0?, 0x0?, 0x0?, 0x0?",
		     "/usr/lib/go-1.19/src/runtime/proc.go", 363, false, 0xd6);
	assert_frame(&g->frames[1], "runtime.goexit", "",
		     "/usr/lib/go-1.19/src/runtime/asm_amd64.s", 1594, false, 1);
	cr_assert_str_eq(g->created_by, "runtime.gcBgMarkStartWorkers");
	ws_go_traceback_destroy(tb);
}

/* Go >= 1.21: "created by F in goroutine N", "...N frames elided...",
 * "gp=... m=..." in the header; GODEBUG=tracebackancestors sections. */
static const char newer_snippet[] =
	"goroutine 18 gp=0xc000102380 m=nil [sync.Mutex.Lock, 2 minutes]:\n"
	"main.a()\n"
	"\t/src/m.go:5 +0x1\n"
	"...5 frames elided...\n"
	"main.b(...)\n"
	"\t/src/m.go:9\n"
	"created by main.main.func1 in goroutine 1\n"
	"\t/src/m.go:20 +0x1d\n"
	"[originating from goroutine 1]:\n"
	"main.main(...)\n"
	"\t/src/m.go:19 +0x1d\n"
	"\n"
	"goroutine 19 [sleep]:\n"
	"time.Sleep(0x3b9aca00)\n"
	"\t/go/src/runtime/time.go:195 +0x135\n"
	"created by main.main in goroutine 1\n"
	"\t/src/m.go:21 +0x2d";  /* no final newline */

Test(go_traceback, snippet_newer_go)
{
	struct ws_go_traceback *tb = parse_ok(newer_snippet);
	cr_assert_eq(tb->ngoroutines, 2);
	const struct ws_go_goroutine *g = &tb->goroutines[0];
	cr_assert_eq(g->goid, 18);
	cr_assert_str_eq(g->state, "sync.Mutex.Lock");
	cr_assert_eq(g->wait_minutes, 2);
	cr_assert_eq(g->nframes, 2);
	cr_assert(g->frames_elided);
	cr_assert_eq(g->elided_at, 1);      /* between main.a and main.b */
	cr_assert_eq(g->elided_count, 5);
	assert_frame(&g->frames[1], "main.b", "...", "/src/m.go", 9, true, -1);
	cr_assert_str_eq(g->created_by, "main.main.func1");
	cr_assert_eq(g->created_by_goid, 1);
	cr_assert_eq(g->created_by_line, 20);
	cr_assert_eq(g->nancestors, 1);

	g = &tb->goroutines[1];
	cr_assert_str_eq(g->state, "sleep");
	cr_assert_eq(g->nframes, 1);
	cr_assert_str_eq(g->created_by, "main.main");
	cr_assert_eq(g->created_by_goid, 1);
	cr_assert_eq(g->created_by_line, 21);
	ws_go_traceback_destroy(tb);
}

Test(go_traceback, snippet_empty_and_noise)
{
	struct ws_go_traceback *tb = parse_ok("");
	cr_assert_eq(tb->ngoroutines, 0);
	ws_go_traceback_destroy(tb);
	tb = parse_ok("panic: boom\n\ngoroutine x [running]:\nexit status 2\n");
	cr_assert_eq(tb->ngoroutines, 0);
	ws_go_traceback_destroy(tb);
	ws_go_traceback_destroy(NULL);
}

static void assert_parse_fails(const char *text, const char *needle)
{
	struct ws_go_traceback *tb = NULL;
	struct ws_error *err = ws_go_traceback_parse(text, strlen(text), &tb);
	cr_assert_not_null(err, "parsed: %s", text);
	cr_assert_null(tb);
	cr_assert(strstr(err->message, needle), "message: %s", err->message);
	ws_error_destroy(err);
}

Test(go_traceback, snippet_malformed)
{
	assert_parse_fails("goroutine 1 [running]:\nmain.main()\n\n",
			   "line 3: section ends before FILE:LINE");
	assert_parse_fails("goroutine 1 [running]:\nmain.main()\n",
			   "text ends before FILE:LINE");
	assert_parse_fails("goroutine 1 [running]:\n\t/x.go:1 +0x1\n",
			   "line 2: location without a frame");
	assert_parse_fails("goroutine 1 [running]:\nmain.main()\n\t/x.go\n",
			   "line 3: expected FILE:LINE");
	assert_parse_fails("goroutine 1 [running]:\nmain.main()\n\t/x.go:1x\n",
			   "bad line number");
	assert_parse_fails("goroutine 1 [running]:\nmain.main\n",
			   "line 2: expected a frame");
	assert_parse_fails("goroutine 1 [running]:\ncreated by main.f in goroutine x\n",
			   "bad \"created by\" goroutine");
}

/* ---- the real thing: go_fidelity's runtime.Stack dump ---- */

/* "1.26" -> 26. */
static int minor_of(const char *release)
{
	return atoi(strchr(release, '.') + 1);
}

/* Runs go_fidelity of `release` (tests/lib/e2e_util: it dies with the
 * test, and e2e_cleanup, the .fini, kills it by PID and removes its
 * directory on any failure), has it dump runtime.Stack(buf, true) on
 * SIGUSR1, stops it (checking it exits 0 on SIGTERM) and parses the dump. */
static struct ws_go_traceback *fidelity_traceback(const char *release)
{
	char fixture[64];
	const char *dump = e2e_path(e2e_tmpdir(), "dump.txt");
	const char *args[] = { dump, NULL };

	snprintf(fixture, sizeof(fixture), "go/go%s/go_fidelity", release);
	struct e2e_proc fx = e2e_start_go(fixture, args, 30000);
	int status;

	cr_assert_eq(kill(fx.pid, SIGUSR1), 0);
	cr_assert(e2e_wait_line(fx.out_fd, "dumped", 30000),
		  "go_fidelity never printed \"dumped\"");
	cr_assert_eq(kill(fx.pid, SIGTERM), 0);
	cr_assert(e2e_wait_timeout(fx.pid, 5000, &status),
		  "go_fidelity did not exit on SIGTERM");
	close(fx.out_fd);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "go_fidelity did not exit 0 on SIGTERM (status %#x)", status);

	struct ws_go_traceback *tb = NULL;
	struct ws_error *err = ws_go_traceback_parse_file(dump, &tb);
	cr_assert_null(err, "%s", err ? err->message : "");
	return tb;
}

/* The park kinds of go_fidelity.go's table: the function each goroutine of
 * the kind has (a frame Go prints), its state, how many, and the chain of
 * frames Go prints, innermost first ("recurse" frames counted apart), from
 * release 1.`since` on (a later row of the same function replaces it). */
struct park_kind {
	const char *function;
	int since;
	const char *state;
	size_t copies;
	bool locked;
	const char *created_by;
	const char *chain[8];
};

static const struct park_kind park_kinds[] = {
	{ "main.parkChanRecv", 19, "chan receive", 8, false, "main.startAll",
	  { "main.parkChanRecv" } },
	{ "main.parkChanSend", 19, "chan send", 8, false, "main.startAll",
	  { "main.parkChanSend" } },
	{ "main.parkSelect", 19, "select", 8, false, "main.startAll",
	  { "main.parkSelect" } },
	{ "main.parkSelectNoCases", 19, "select (no cases)", 2, false,
	  "main.startAll", { "main.parkSelectNoCases" } },
	{ "main.parkNilChanRecv", 19, "chan receive (nil chan)", 2, false,
	  "main.startAll", { "main.parkNilChanRecv" } },
	{ "main.parkMutexLock", 19, "semacquire", 8, false, "main.startAll",
	  { "sync.runtime_SemacquireMutex", "sync.(*Mutex).lockSlow",
	    "sync.(*Mutex).Lock", "main.parkMutexLock" } },
	/* Go 1.20 names the wait; 1.24 moved the mutex to internal/sync. */
	{ "main.parkMutexLock", 20, "sync.Mutex.Lock", 8, false, "main.startAll",
	  { "sync.runtime_SemacquireMutex", "sync.(*Mutex).lockSlow",
	    "sync.(*Mutex).Lock", "main.parkMutexLock" } },
	{ "main.parkMutexLock", 24, "sync.Mutex.Lock", 8, false, "main.startAll",
	  { "internal/sync.runtime_SemacquireMutex",
	    "internal/sync.(*Mutex).lockSlow", "internal/sync.(*Mutex).Lock",
	    "sync.(*Mutex).Lock", "main.parkMutexLock" } },
	{ "main.parkRWMutexRLock", 19, "semacquire", 4, false, "main.startAll",
	  { "sync.runtime_SemacquireMutex", "sync.(*RWMutex).RLock",
	    "main.parkRWMutexRLock" } },
	{ "main.parkRWMutexRLock", 20, "sync.RWMutex.RLock", 4, false,
	  "main.startAll", { "sync.runtime_SemacquireRWMutexR",
			     "sync.(*RWMutex).RLock", "main.parkRWMutexRLock" } },
	{ "main.parkCondWait", 19, "sync.Cond.Wait", 8, false, "main.startAll",
	  { "sync.runtime_notifyListWait", "sync.(*Cond).Wait",
	    "main.parkCondWait" } },
	{ "main.parkWaitGroup", 19, "semacquire", 8, false, "main.startAll",
	  { "sync.runtime_Semacquire", "sync.(*WaitGroup).Wait",
	    "main.parkWaitGroup" } },
	{ "main.parkWaitGroup", 24, "sync.WaitGroup.Wait", 8, false,
	  "main.startAll", { "sync.runtime_SemacquireWaitGroup",
			     "sync.(*WaitGroup).Wait", "main.parkWaitGroup" } },
	{ "main.parkSleep", 19, "sleep", 8, false, "main.startAll",
	  { "time.Sleep", "main.parkSleep" } },
	{ "main.parkNetRead", 19, "IO wait", 8, false, "main.startNetReaders",
	  { "internal/poll.runtime_pollWait", "internal/poll.(*pollDesc).wait",
	    "internal/poll.(*pollDesc).waitRead", "internal/poll.(*FD).Read",
	    "net.(*netFD).Read", "net.(*conn).Read", "main.parkNetRead" } },
	{ "main.parkPipeRead", 19, "syscall", 4, false, "main.startPipeReaders",
	  { "syscall.Syscall", "syscall.read", "syscall.Read",
	    "main.parkPipeRead" } },
	{ "main.parkDeep", 19, "chan receive", 4, false, "main.startAll",
	  { "main.parkDeep" } },
	{ "main.recurseTruncated", 19, "chan receive", 2, false, "main.startAll",
	  { NULL } },
	{ "main.recurseElided", 19, "syscall", 2, false, "main.startAll",
	  { NULL } },
	{ "main.parker.ParkValue", 19, "chan receive", 4, false, "main.startAll",
	  { "main.parker.ParkValue" } },
	{ "main.(*parker).ParkPointer", 19, "chan receive", 4, false,
	  "main.startAll", { "main.(*parker).ParkPointer" } },
	{ "main.startClosures.func1", 19, "chan receive", 4, false,
	  "main.startClosures", { "main.startClosures.func1" } },
	{ "main.parkInlined", 19, "chan receive", 4, false, "main.startAll",
	  { "main.recvInlined", "main.parkInlined" } },
	{ "main.parkGeneric[...]", 19, "chan receive", 4, false, "main.startAll",
	  { "main.parkGeneric[...]" } },
	{ "main.parkLocked", 19, "chan receive", 2, true, "main.startAll",
	  { "main.parkLocked" } },
};

/* The row of park_kinds[k]'s function that holds for release `minor`, or
 * NULL when row k is not that row. */
static const struct park_kind *kind_for(size_t k, int minor)
{
	const struct park_kind *kind = &park_kinds[k];
	if (kind->since > minor)
		return NULL;
	for (size_t j = k + 1; j < sizeof(park_kinds) / sizeof(*park_kinds); j++)
		if (strcmp(park_kinds[j].function, kind->function) == 0 &&
		    park_kinds[j].since <= minor)
			return NULL;
	return kind;
}

enum {
	PARKED_TOTAL = 106,      /* sum of copies above */
	GOROUTINES_TOTAL = 109,  /* + main, spinner, os/signal's loop */
	DEEP_FRAMES = 50,        /* main.recurseDeep frames of parkDeep */
	/* Go 1.19 and 1.20 walk at most 100 physical frames
	 * (_TracebackMaxFrames) and print the elision line only if they
	 * printed 100 (see the table in go_fidelity.go): */
	TRUNCATED_FRAMES = 97,   /* 100 - gopark, chanrecv, chanrecv1 */
	ELIDED_FRAMES = 99,      /* 100 - syscall.Syscall */
	/* Go >= 1.21 prints the innermost 50 frames, "...N frames
	 * elided...", and the outermost 50 (tracebackInnerFrames,
	 * tracebackOuterFrames) of the 150 + 1 (+ syscall.Syscall): */
	INNER_FRAMES = 50,
	TRUNCATED_ELIDED = 151 - 100,
	ELIDED_ELIDED = 152 - 100,
};

/* Frames of g after skipping `skip` innermost "recurse" frames, compared
 * with a NULL-terminated chain. */
static void assert_chain(const struct ws_go_goroutine *g, size_t skip,
			 const char *const *chain, size_t max)
{
	size_t n = 0;
	while (n < max && chain[n])
		n++;
	cr_assert_eq(g->nframes, skip + n, "goroutine %ld: %zu frames",
		     g->goid, g->nframes);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(g->frames[skip + i].function, chain[i],
				 "goroutine %ld frame %zu", g->goid, skip + i);
}

static void check_park_kinds(const char *release)
{
	int minor = minor_of(release);
	struct ws_go_traceback *tb = fidelity_traceback(release);
	size_t parked = 0;
	for (size_t k = 0; k < sizeof(park_kinds) / sizeof(*park_kinds); k++) {
		const struct park_kind *kind = kind_for(k, minor);
		size_t found = 0;
		if (!kind)
			continue;
		for (size_t i = 0; i < tb->ngoroutines; i++) {
			const struct ws_go_goroutine *g = &tb->goroutines[i];
			if (ws_go_goroutine_find_frame(g, kind->function) < 0)
				continue;
			found++;
			cr_assert_str_eq(g->state, kind->state,
					 "goroutine %ld (%s)", g->goid,
					 kind->function);
			cr_assert_eq(g->locked_to_thread, kind->locked,
				     "goroutine %ld locked", g->goid);
			cr_assert(g->has_created_by);
			cr_assert_str_eq(g->created_by, kind->created_by);
			cr_assert_str_eq(g->created_by_file, FIDELITY_SRC);
			/* "in goroutine 1" from Go 1.21 (g.parentGoid). */
			cr_assert_eq(g->created_by_goid, minor >= 21 ? 1 : -1);
			if (kind->chain[0])
				assert_chain(g, strcmp(kind->function,
						       "main.parkDeep") == 0
							? DEEP_FRAMES : 0,
					     kind->chain, 8);
		}
		cr_assert_eq(found, kind->copies, "%s: %zu goroutines",
			     kind->function, found);
		parked += found;
	}
	cr_assert_eq(parked, PARKED_TOTAL);
	ws_go_traceback_destroy(tb);
}

static void check_all_goroutines(const char *release)
{
	struct ws_go_traceback *tb = fidelity_traceback(release);
	cr_assert_eq(tb->ngoroutines, GOROUTINES_TOTAL);
	for (size_t i = 0; i < tb->ngoroutines; i++)
		for (size_t j = i + 1; j < tb->ngoroutines; j++)
			cr_assert_neq(tb->goroutines[i].goid,
				      tb->goroutines[j].goid);

	/* runtime.Stack prints the caller first: main, dumping. */
	const struct ws_go_goroutine *g = &tb->goroutines[0];
	cr_assert_eq(g->goid, 1);
	cr_assert_str_eq(g->state, "running");
	cr_assert_geq(ws_go_goroutine_find_frame(g, "main.dumpStacks"), 0);
	cr_assert_eq(ws_go_goroutine_find_frame(g, "main.main"),
		     (long)g->nframes - 1);
	cr_assert_not(g->has_created_by);

	size_t spinners = 0, signal_loops = 0;
	for (size_t i = 0; i < tb->ngoroutines; i++) {
		g = &tb->goroutines[i];
		if (ws_go_goroutine_find_frame(g, "main.spin") >= 0) {
			spinners++;
			cr_assert(strcmp(g->state, "running") == 0 ||
				  strcmp(g->state, "runnable") == 0,
				  "spinner state %s", g->state);
		}
		if (ws_go_goroutine_find_frame(g, "os/signal.signal_recv") >= 0) {
			signal_loops++;
			cr_assert_str_eq(g->state, "syscall");
		}
		/* Every frame of the fixture's own code points into its
		 * source; only inlined frames lack a pc offset (or a frame
		 * caught at its entry, as the spinner can be). */
		for (size_t j = 0; j < g->nframes; j++) {
			const struct ws_go_frame *f = &g->frames[j];
			cr_assert_gt(f->line, 0);
			if (strncmp(f->function, "main.", 5) == 0)
				cr_assert_str_eq(f->file, FIDELITY_SRC,
						 "%s", f->function);
			if (f->inlined)
				cr_assert_not(f->has_pc_offset);
		}
	}
	cr_assert_eq(spinners, 1);
	cr_assert_eq(signal_loops, 1);
	ws_go_traceback_destroy(tb);
}

/* The cut of a deep stack: `fn` frames innermost, then (Go >= 1.21) the
 * elision line after INNER_FRAMES frames saying `elided`, then `fn` frames
 * again and the outermost `root`. first: frames before the recursion. */
static void check_cut(const struct ws_go_goroutine *g, int minor,
		      const char *first, const char *fn, const char *root,
		      long elided, size_t old_frames, bool old_line)
{
	size_t skip = first ? 1 : 0;
	if (first)
		cr_assert_str_eq(g->frames[0].function, first);
	if (minor < 21) {
		/* Cut after 100 physical frames, outermost ones lost. */
		cr_assert_eq(g->frames_elided, old_line, "goroutine %ld", g->goid);
		cr_assert_eq(g->nframes, skip + old_frames);
		for (size_t j = skip; j < g->nframes; j++)
			cr_assert_str_eq(g->frames[j].function, fn);
		return;
	}
	cr_assert(g->frames_elided, "goroutine %ld", g->goid);
	cr_assert_eq(g->elided_at, INNER_FRAMES);
	cr_assert_eq(g->elided_count, elided);
	cr_assert_eq(g->nframes, 2 * INNER_FRAMES);
	for (size_t j = skip; j + 1 < g->nframes; j++)
		cr_assert_str_eq(g->frames[j].function, fn, "frame %zu", j);
	cr_assert_str_eq(g->frames[g->nframes - 1].function, root);
}

static void check_frame_details(const char *release)
{
	int minor = minor_of(release);
	struct ws_go_traceback *tb = fidelity_traceback(release);
	size_t deep = 0, truncated = 0, elided = 0, inlined = 0;
	for (size_t i = 0; i < tb->ngoroutines; i++) {
		const struct ws_go_goroutine *g = &tb->goroutines[i];
		if (ws_go_goroutine_find_frame(g, "main.parkDeep") >= 0) {
			deep++;
			cr_assert_not(g->frames_elided);
			for (size_t j = 0; j < DEEP_FRAMES; j++)
				cr_assert_str_eq(g->frames[j].function,
						 "main.recurseDeep");
		}
		if (ws_go_goroutine_find_frame(g, "main.recurseTruncated") >= 0) {
			/* 150 calls deep, under three hidden runtime frames:
			 * Go 1.19 and 1.20 cut without a word. */
			truncated++;
			check_cut(g, minor, NULL, "main.recurseTruncated",
				  "main.parkDeepTruncated", TRUNCATED_ELIDED,
				  TRUNCATED_FRAMES, false);
		} else if (ws_go_goroutine_find_frame(g, "main.recurseElided") >= 0) {
			/* 150 calls deep under syscall.Syscall: with the
			 * elision line. */
			elided++;
			check_cut(g, minor, "syscall.Syscall", "main.recurseElided",
				  "main.parkDeepElided", ELIDED_ELIDED,
				  ELIDED_FRAMES, true);
		} else {
			cr_assert_not(g->frames_elided, "goroutine %ld",
				      g->goid);
		}
		long k = ws_go_goroutine_find_frame(g, "main.recvInlined");
		if (k >= 0) {
			inlined++;
			cr_assert_eq(k, 0);
			cr_assert(g->frames[0].inlined);
			cr_assert_str_eq(g->frames[0].args, "...");
			cr_assert_not(g->frames[0].has_pc_offset);
			cr_assert_not(g->frames[1].inlined);
			cr_assert(g->frames[1].has_pc_offset);
		}
		/* The standard library's inlined frames are marked too. */
		k = ws_go_goroutine_find_frame(g, "sync.(*Mutex).Lock");
		if (k >= 0)
			cr_assert(g->frames[k].inlined);
	}
	cr_assert_eq(deep, 4);
	cr_assert_eq(truncated, 2);
	cr_assert_eq(elided, 2);
	cr_assert_eq(inlined, 4);
	ws_go_traceback_destroy(tb);
}

/* One test per release and check: fidelity_park_kinds_go1_26, ... */
#define FIDELITY_TESTS(id, release)                                         \
	Test(go_traceback, fidelity_park_kinds_go##id, .fini = e2e_cleanup, \
	     .timeout = 60)                                                 \
	{                                                                   \
		check_park_kinds(release);                                  \
	}                                                                   \
	Test(go_traceback, fidelity_all_goroutines_go##id,                  \
	     .fini = e2e_cleanup, .timeout = 60)                            \
	{                                                                   \
		check_all_goroutines(release);                              \
	}                                                                   \
	Test(go_traceback, fidelity_frame_details_go##id,                   \
	     .fini = e2e_cleanup, .timeout = 60)                            \
	{                                                                   \
		check_frame_details(release);                               \
	}
WS_GO_RELEASES(FIDELITY_TESTS)

/* Go >= 1.25: a goroutine in a testing/synctest bubble (as go_synctest's
 * SIGQUIT traceback printed it with Go 1.25.14). */
static const char bubble_snippet[] =
	"goroutine 10 gp=0xc0000a0700 m=nil [synctest.Wait (durable), 22 minutes, synctest bubble 1]:\n"
	"main.parkBubbleWait()\n"
	"\t/src/go_synctest.go:102 +0x13\n"
	"created by internal/synctest.Run in goroutine 8\n"
	"\t/go/src/runtime/synctest.go:191 +0x118\n"
	"\n"
	"goroutine 11 [chan receive (durable), locked to thread, synctest bubble 12]:\n"
	"main.parkDurableRecv(0x0?)\n"
	"\t/src/go_synctest.go:62 +0x1a\n";

Test(go_traceback, snippet_synctest_bubble)
{
	struct ws_go_traceback *tb = parse_ok(bubble_snippet);
	cr_assert_eq(tb->ngoroutines, 2);

	const struct ws_go_goroutine *g = &tb->goroutines[0];
	cr_assert_str_eq(g->state, "synctest.Wait (durable)");
	cr_assert_eq(g->wait_minutes, 22);
	cr_assert_eq(g->synctest_bubble, 1);
	g = &tb->goroutines[1];
	cr_assert_str_eq(g->state, "chan receive (durable)");
	cr_assert(g->locked_to_thread);
	cr_assert_eq(g->synctest_bubble, 12);
	cr_assert_eq(g->nframes, 1);
	ws_go_traceback_destroy(tb);
}
