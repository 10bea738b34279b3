/*
 * End-to-end tests of the shipped descriptors on real green-thread
 * runtimes nobody here wrote (descriptors/, wallspy-descriptor(5)): GNU Pth
 * 2.0.7 from Debian's source package, built with its ucontext machine
 * context and with its setjmp one (fixtures/pth/), and Crystal 1.6 fibers
 * (fixtures/crystal/). The truth is each fixture's construction, the table
 * `FIXTURE --expected` prints (tests/lib/fixture_truth.h): every task in
 * its uniquely named chain, with its state and wait reason.
 *
 * - dump, with --runtime auto finding the shipped descriptor by its
 *   detection symbol, equals the table: each task by name, its exact
 *   chain, state, wait reason, and the running one on the main thread;
 * - attach samples the running task from its thread's live registers: its
 *   stack ends in spin_forever, which no saved context holds (the spinner
 *   saved its context last in spinner_1's yield, and never again); every
 *   task's stack starts at the runtime's root, running or parked;
 * - Pth has a switch count (`dispatches`): its ticks are live.
 * The torn-read tests of both are in test_e2e_live.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "e2e_util.h"
#include "fixture_truth.h"
#include "summary.h"
#include "wallspy_run.h"

E2E_SERIAL_TESTS()

/* A real runtime's fixture and what the tests expect of it. */
struct real_runtime {
	const char *fixture;     /* under BUILD/fixtures */
	const char *runtime;     /* the descriptor's name */
	const char *root;        /* every spawned task's outermost frame */
	/* Frames inside a parked task's chain that are the runtime's own
	 * (Crystal's scheduler) come from files starting with this; NULL:
	 * the table's chain goes down to the innermost frame (Pth's table
	 * holds Pth's frames). */
	const char *inner_files;
	/* The runtime's own tasks, listed besides the table's. */
	const char *own[4];
};

static const struct real_runtime pth_uctx = {
	"pth/pth_fixture_uctx", "pth", "pth_spawn_trampoline", NULL, { NULL },
};
static const struct real_runtime pth_sjlj = {
	"pth/pth_fixture_sjlj", "pth", "pth_spawn_trampoline", NULL, { NULL },
};
static const struct real_runtime crystal = {
	"crystal/crystal_fibers", "crystal", "run", "/usr/lib/crystal/",
	{ "main", "Signal Loop", "Fiber Clean Loop", NULL },
};

/* The fixture's path; skips the test, saying why, when it was not built
 * (no crystal compiler, no Pth source package). */
static const char *need(const struct real_runtime *rt)
{
	return e2e_need_fixture(rt->fixture);
}

static pid_t start(const struct real_runtime *rt, const char *mode)
{
	need(rt);
	return e2e_start_fixture(rt->fixture, mode, "ready", 60000);
}

static const char *str_of(const cJSON *obj, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(obj, key));
}

static const char *frame_fn(const cJSON *frames, int i)
{
	const char *fn = str_of(cJSON_GetArrayItem(frames, i), "function");
	return fn ? fn : "??";
}

static const char *frame_file(const cJSON *frames, int i)
{
	return str_of(cJSON_GetArrayItem(frames, i), "file");
}

static const char *frames_text(const cJSON *frames)
{
	static char text[4096];
	size_t len = 0;

	text[0] = '\0';
	for (int i = 0; i < cJSON_GetArraySize(frames) && len < sizeof(text); i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s",
					i ? " < " : "", frame_fn(frames, i));
	return text;
}

/* Whether frame i is libc's program start (below main). */
static bool program_start(const cJSON *frames, int i)
{
	const char *fn = frame_fn(frames, i);
	return strncmp(fn, "__libc_start", 12) == 0 || strcmp(fn, "_start") == 0;
}

/* One task of the dump against its table row: the chain, root first, is
 * the outermost frames (a chain from main: main, then only the program's
 * start beyond it); inside the chain, nothing (Pth) or only the runtime's
 * own frames (Crystal). */
static void check_chain(const struct real_runtime *rt, const struct truth_task *want,
			const cJSON *frames)
{
	int n = cJSON_GetArraySize(frames), outer = n - 1;

	if (strcmp(want->chain[0], rt->root) != 0)
		while (outer >= 0 && program_start(frames, outer))
			outer--;
	cr_assert_geq(outer + 1, want->nchain, "%s: %d frames for a chain of %d: %s",
		      want->name, n, want->nchain, frames_text(frames));
	for (int i = 0; i < want->nchain; i++)
		cr_assert_str_eq(frame_fn(frames, outer - i), want->chain[i],
				 "%s: frame %d; frames: %s", want->name, outer - i,
				 frames_text(frames));
	int inner = outer - want->nchain + 1;
	if (!rt->inner_files || strcmp(want->state, "running") == 0) {
		cr_assert_eq(inner, 0, "%s: frames inside its chain: %s", want->name,
			     frames_text(frames));
		return;
	}
	cr_assert_gt(inner, 0, "%s: parked without the runtime's frames: %s",
		     want->name, frames_text(frames));
	for (int i = 0; i < inner; i++) {
		const char *file = frame_file(frames, i);
		cr_assert(file && strncmp(file, rt->inner_files, strlen(rt->inner_files)) == 0,
			  "%s: frame %d (%s in %s) is not the runtime's: %s", want->name,
			  i, frame_fn(frames, i), file ? file : "?", frames_text(frames));
	}
}

/* `dump --json` (--runtime auto) equals the table; besides it only the
 * runtime's own tasks, parked. */
static void check_dump(const struct real_runtime *rt, pid_t pid)
{
	struct truth_task table[TRUTH_MAX_TASKS];
	int ntable = truth_load(need(rt), table);
	cJSON *dump = e2e_dump_json(pid, NULL);
	const cJSON *tasks = cJSON_GetObjectItem(dump, "tasks"), *task;

	cr_assert_str_eq(str_of(dump, "runtime"), rt->runtime,
			 "--runtime auto did not find the %s descriptor", rt->runtime);
	for (int e = 0; e < ntable; e++) {
		const struct truth_task *want = &table[e];
		const cJSON *found = e2e_dump_task(dump, want->name);

		cr_assert_not_null(found, "no task named %s in the dump", want->name);
		const char *reason = str_of(found, "wait_reason");
		const cJSON *thread = cJSON_GetObjectItem(found, "thread");
		cr_assert(cJSON_IsNull(cJSON_GetObjectItem(found, "error")),
			  "%s: error \"%s\"", want->name, str_of(found, "error"));
		cr_assert_str_eq(str_of(found, "state"), want->state, "%s: state", want->name);
		if (want->reason[0])
			cr_assert(reason && strcmp(reason, want->reason) == 0,
				  "%s: wait reason %s, expected %s", want->name,
				  reason ? reason : "(none)", want->reason);
		else
			cr_assert_null(reason, "%s: wait reason %s, expected none",
				       want->name, reason);
		check_chain(rt, want, cJSON_GetObjectItem(found, "frames"));
		/* A single-OS-thread runtime: the running task is on the
		 * main thread, the parked ones on none. */
		if (strcmp(want->state, "running") == 0)
			cr_assert(e2e_json_is_integer(thread) &&
				  (pid_t)thread->valuedouble == pid,
				  "%s: running, but not on the main thread", want->name);
		else
			cr_assert(cJSON_IsNull(thread), "%s: parked but on a thread",
				  want->name);
	}
	int others = 0;
	cJSON_ArrayForEach(task, tasks) {
		const char *name = str_of(task, "name");
		bool known = false;

		for (int e = 0; e < ntable && name; e++)
			known |= strcmp(name, table[e].name) == 0;
		if (known)
			continue;
		for (int k = 0; rt->own[k] && name; k++)
			known |= strcmp(name, rt->own[k]) == 0;
		cr_assert(known, "task %s is neither in the table nor the runtime's own",
			  name ? name : "(unnamed)");
		cr_assert_str_eq(str_of(task, "state"), "waiting", "%s", name);
		others++;
	}
	int own = 0;
	while (rt->own[own])
		own++;
	cr_assert_eq(others, own, "%d of the runtime's own tasks, expected %d", others, own);
}

Test(e2e_runtimes, pth_ucontext_dump_matches_truth, .timeout = 120, .fini = e2e_cleanup)
{
	pid_t pid = start(&pth_uctx, "parked");
	check_dump(&pth_uctx, pid);
	e2e_check_healthy_then_stop(pid);
}

Test(e2e_runtimes, pth_setjmp_dump_matches_truth, .timeout = 120, .fini = e2e_cleanup)
{
	pid_t pid = start(&pth_sjlj, "parked");
	check_dump(&pth_sjlj, pid);
	e2e_check_healthy_then_stop(pid);
}

Test(e2e_runtimes, crystal_dump_matches_truth, .timeout = 120, .fini = e2e_cleanup)
{
	pid_t pid = start(&crystal, "parked");
	check_dump(&crystal, pid);
	e2e_check_healthy_then_stop(pid);
}

/* Pth's main thread has no stack bounds (it runs on the process stack):
 * running, it is bounded by the main thread's stack mapping, and sampled
 * from the live registers while the thread's sp lies in it. Its saved
 * context (main_spin_1's last yield) would end elsewhere. */
Test(e2e_runtimes, pth_main_task_running_without_bounds, .timeout = 120,
     .fini = e2e_cleanup)
{
	pid_t pid = start(&pth_uctx, "main-spins");
	cJSON *dump = e2e_dump_json(pid, NULL);
	const cJSON *main_task = e2e_dump_task(dump, "main");
	cr_assert_not_null(main_task, "no main task");
	const cJSON *frames = cJSON_GetObjectItem(main_task, "frames");
	const cJSON *thread = cJSON_GetObjectItem(main_task, "thread");
	cr_assert_str_eq(str_of(main_task, "state"), "running");
	cr_assert(e2e_json_is_integer(thread) && (pid_t)thread->valuedouble == pid,
		  "main is not on the main thread");
	cr_assert(cJSON_GetArraySize(frames) >= 4, "%s", frames_text(frames));
	cr_assert_str_eq(frame_fn(frames, 0), "spin_forever", "%s", frames_text(frames));
	cr_assert_str_eq(frame_fn(frames, 1), "main_spin_1", "%s", frames_text(frames));
	cr_assert_str_eq(frame_fn(frames, 2), "spin_mode", "%s", frames_text(frames));
	cr_assert_str_eq(frame_fn(frames, 3), "main", "%s", frames_text(frames));
	e2e_check_healthy_then_stop(pid);
}

/* Every thread waits, main napping: Pth's scheduler blocks in select()
 * on its own stack with __pth_current null (gdb: "Cannot access memory at
 * address 0x18" for its name). No task is on the CPU, so main, like every
 * other, is at its saved context, napping, not at the scheduler's
 * select. */
Test(e2e_runtimes, pth_all_waiting_while_scheduler_selects, .timeout = 120,
     .fini = e2e_cleanup)
{
	static const char *const chain[] = {
		"pth_yield", "pth_wait", "pth_nap", "main_nap_1", "nap_mode", "main",
	};
	pid_t pid = start(&pth_uctx, "main-naps");

	/* Let the scheduler settle into its select. */
	e2e_sleep_ms(200);
	cJSON *dump = e2e_dump_json(pid, NULL);
	const cJSON *main_task = e2e_dump_task(dump, "main");
	cr_assert_not_null(main_task, "no main task");
	const cJSON *frames = cJSON_GetObjectItem(main_task, "frames");
	cr_assert_str_eq(str_of(main_task, "state"), "waiting", "%s", frames_text(frames));
	cr_assert_str_eq(str_of(main_task, "wait_reason"), "time");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(main_task, "thread")));
	for (size_t i = 0; i < sizeof(chain) / sizeof(chain[0]); i++)
		cr_assert_str_eq(frame_fn(frames, (int)i), chain[i], "%s", frames_text(frames));
	e2e_check_healthy_then_stop(pid);
}

/* ---- recordings ---- */

/* The samples of the folded lines whose stack (without the count) is
 * `stack` (several lines when a frame was at different lines of one
 * function). */
static long folded_count(const char *text, const char *stack)
{
	size_t len = strlen(stack);
	long n = 0;
	for (const char *line = text; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, stack, len) == 0 && line[len] == ' ')
			n += atol(line + len + 1);
	return n;
}

/* The samples of the folded lines that start with `prefix`; each must
 * end in `leaf`. */
static long folded_prefix_count(const char *text, const char *prefix,
				const char *leaf)
{
	size_t plen = strlen(prefix), llen = strlen(leaf);
	long n = 0;
	for (const char *line = text; *line;) {
		size_t len = strcspn(line, "\n");
		const char *space = memrchr(line, ' ', len);
		if (strncmp(line, prefix, plen) == 0 && space) {
			cr_assert((size_t)(space - line) >= llen &&
				  strncmp(space - llen, leaf, llen) == 0,
				  "under %s but not %s: %.*s", prefix, leaf, (int)len, line);
			n += atol(space + 1);
		}
		line += len;
		if (*line)
			line++;
	}
	return n;
}

/* Attaches for 2 s (folded, every task every tick) and checks: the
 * running samples are the spinner's live stack, each parked task is at
 * its chain at (nearly) every tick, every spawned task's stack starts at
 * the root. Returns wallspy's stderr. */
static const char *check_recording(const struct real_runtime *rt, pid_t pid)
{
	struct truth_task table[TRUTH_MAX_TASKS];
	int ntable = truth_load(need(rt), table);
	const char *opts[] = { "-d", "2", "-f", "folded", "--max-cpu", "0", NULL };
	const char *out;

	setenv("WALLSPY_DEBUG_PAUSE", "1", 1);
	struct e2e_result res = e2e_attach(pid, opts, "out.folded", &out, 60000);
	unsetenv("WALLSPY_DEBUG_PAUSE");
	struct e2e_summary s = e2e_parse_summary(res.err);
	char *text = e2e_read_file(out);
	cr_assert_not_null(text);
	cr_assert_gt(s.ticks, 50, "%ld ticks", s.ticks);

	long running = 0;
	for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
		size_t len = strcspn(line, "\n");
		if (len > 10 && memmem(line, len, ";[running] ", 11))
			running += atol((const char *)memmem(line, len, ";[running] ", 11) + 11);
		if (!strchr(line, '\n'))
			break;
	}
	for (int e = 0; e < ntable; e++) {
		const struct truth_task *want = &table[e];
		char stack[1024];
		size_t used = 0;

		/* Only tasks from the root: main's stack goes on into libc
		 * (dump checks it). */
		if (strcmp(want->chain[0], rt->root) != 0)
			continue;
		for (int i = 0; i < want->nchain; i++)
			used += (size_t)snprintf(stack + used, sizeof(stack) - used, "%s;",
						 want->chain[i]);
		if (rt->inner_files && strcmp(want->state, "running") != 0) {
			/* Crystal's own frames follow: the chain's lines. */
			long n = folded_prefix_count(text, stack, "[waiting]");
			cr_assert_geq(n, s.ticks * 9 / 10, "%s: %ld samples under %s in %ld ticks",
				      want->name, n, stack, s.ticks);
			continue;
		}
		if (strcmp(want->state, "running") == 0)
			snprintf(stack + used, sizeof(stack) - used, "[running]");
		else
			snprintf(stack + used, sizeof(stack) - used, "[waiting: %s]",
				 want->reason);
		long n = folded_count(text, stack);
		cr_assert_geq(n, s.ticks * 9 / 10, "%s: %ld samples at %s in %ld ticks",
			      want->name, n, stack, s.ticks);
		/* The one running task's live stack is every running sample. */
		if (strcmp(want->state, "running") == 0)
			cr_assert_eq(n, running, "%ld running samples, %ld of them the spinner's",
				     running, n);
	}
	/* Every spawned task's stack starts at the root, running or parked:
	 * no line outside it but main's. */
	for (const char *line = text; *line;) {
		size_t len = strcspn(line, "\n");
		bool rooted = strncmp(line, rt->root, strlen(rt->root)) == 0 &&
			      line[strlen(rt->root)] == ';';
		bool from_main = memmem(line, len, "main;", 5) != NULL ||
				 memmem(line, len, "_start;", 7) != NULL;
		cr_assert(rooted || from_main, "a stack outside the root: %.*s", (int)len, line);
		line += len;
		if (*line)
			line++;
	}
	e2e_check_healthy_then_stop(pid);
	return res.err;
}

/* The number N of "wallspy: live ticks N" (WALLSPY_DEBUG_PAUSE), -1 if
 * not printed. */
static long live_ticks(const char *err)
{
	const char *p = strstr(err, "wallspy: live ticks ");
	return p ? atol(p + strlen("wallspy: live ticks ")) : -1;
}

Test(e2e_runtimes, pth_ucontext_attach_live, .timeout = 120, .fini = e2e_cleanup)
{
	const char *err = check_recording(&pth_uctx, start(&pth_uctx, "parked"));
	struct e2e_summary s = e2e_parse_summary(err);
	cr_assert_geq(live_ticks(err), s.ticks * 9 / 10, "live ticks: %s", err);
}

Test(e2e_runtimes, pth_setjmp_attach_live, .timeout = 120, .fini = e2e_cleanup)
{
	const char *err = check_recording(&pth_sjlj, start(&pth_sjlj, "parked"));
	struct e2e_summary s = e2e_parse_summary(err);
	cr_assert_geq(live_ticks(err), s.ticks * 9 / 10, "live ticks: %s", err);
}

Test(e2e_runtimes, crystal_attach, .timeout = 120, .fini = e2e_cleanup)
{
	/* No switch count in Crystal's Fiber: every tick holds the target. */
	const char *err = check_recording(&crystal, start(&crystal, "parked"));
	cr_assert_leq(live_ticks(err), 0, "live ticks without a switch count: %s", err);
}

/* A Crystal user runs `wallspy record -- ./app` and sees fibers. */
Test(e2e_runtimes, crystal_record_sees_fibers, .timeout = 120,
     .fini = e2e_cleanup_adopting)
{
	const char *opts[] = { "-d", "3", "-f", "folded", NULL };
	const char *target[] = { need(&crystal), "parked", NULL };
	const char *out;

	e2e_become_subreaper();
	struct e2e_result res = e2e_record(opts, target, &out, 90000);
	char *text = e2e_read_file(out);
	cr_assert_not_null(text);
	cr_assert(strstr(text, "run;->;spinner_task;spinner_1;spin_forever;[running] "),
		  "no running spinner fiber in:\n%s\n%s", text, res.err);
	cr_assert(strstr(text, "run;->;chan_rx_task;chan_rx_1;chan_rx_2;"),
		  "no parked chan_rx fiber in:\n%s", text);
}
