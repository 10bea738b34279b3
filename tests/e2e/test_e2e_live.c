/*
 * End-to-end tests of live ticks: record and attach read a green-thread
 * registry and the parked tasks' stacks while the target runs, and read
 * each task again after its copy (tick_live.c). A task that ran in
 * between may have been copied half before and half after: such a copy
 * must never reach the profile.
 *
 * greenrt_flip and go_flip make that race as likely as it gets: hundreds of
 * tasks yield every ~2 us, alternately at the bottom of a 6-frame and of a
 * 12-frame chain, and often come back to the very same saved context while
 * their stack is being copied. Without the version check (greenrt's
 * `switches`, Go's g.trackingSeq) a 2 s recording of either shows
 * thousands of impossible stacks (flip_b frames under flip_a_leaf, failed
 * unwinds; measured when this test was written by zeroing the version).
 * With it, every parked sample must be one whole chain, and in a
 * cooperative runtime one that ends where the task yields.
 *
 * A recording of go_fidelity's parked goroutines and of greenrt_parked's
 * parked tasks, live and with --stop-all, must show each task at exactly
 * the stack `dump` prints for it (itself checked against Go's own
 * traceback in test_e2e_go.c and against greenrt_parked's truth table in
 * test_e2e_green.c), at every tick, also when a tick reuses the last
 * tick's unwind of an unchanged stack (greenrt: most ticks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "e2e_util.h"
#include "go_releases.h"
#include "summary.h"
#include "wallspy_run.h"

/* Parked tasks of two runtimes racing the sampler: one test at a time. */
E2E_SERIAL_TESTS()

/* attach PID for `seconds` with extra options, folded output; returns the
 * folded text and wallspy's stderr. */
static char *attach_folded(pid_t pid, const char *seconds,
			   const char *const *opts, const char **err)
{
	const char *all[32] = { "-d", seconds, "-f", "folded" };
	const char *out;
	int n = 4;

	for (int i = 0; opts && opts[i]; i++)
		all[n++] = opts[i];
	all[n] = NULL;
	struct e2e_result res = e2e_attach(pid, all, "out.folded", &out, 60000);
	*err = res.err;
	char *text = e2e_read_file(out);
	cr_assert_not_null(text, "no output file");
	return text;
}

/* "a;b;c 12" -> stack "a;b;c", count 12; false for a malformed line. */
static bool split_folded(char *line, char **stack, long *count)
{
	char *space = strrchr(line, ' ');

	if (!space)
		return false;
	*space = '\0';
	*stack = line;
	*count = atol(space + 1);
	return *count > 0;
}

/* The i-th ';'-separated frame of a folded stack (i from 0), into buf;
 * false past the end. */
static bool nth_frame(const char *stack, int i, char *buf, size_t size)
{
	const char *p = stack;

	for (int k = 0; k < i; k++) {
		p = strchr(p, ';');
		if (!p)
			return false;
		p++;
	}
	size_t len = strcspn(p, ";");
	if (len >= size)
		len = size - 1;
	memcpy(buf, p, len);
	buf[len] = '\0';
	return true;
}

static int count_frames(const char *stack)
{
	int n = 1;

	for (const char *p = stack; *p; p++)
		n += *p == ';';
	return n;
}

struct flip_chains {
	const char *root;        /* the runtime's root frame */
	const char *after_root;  /* a frame between it and loop, or NULL */
	const char *loop;        /* the task's function */
	const char *a, *a_leaf;  /* FLIP_A_DEPTH of a, then a_leaf */
	const char *b, *b_leaf;
	const char *yield;       /* what the leaf calls to yield */
	int a_depth, b_depth;
	/* A cooperative runtime's task parks only where it yields: its
	 * parked samples are whole chains down to the yield. (Go preempts a
	 * goroutine anywhere.) */
	bool parks_at_yield;
};

/* Whether a parked sample's `stack` (root first) ends where a flip task
 * of a cooperative runtime parks: a whole chain, its leaf, then the yield
 * (a frame naming c->yield). A running task's copy paired with a parked
 * record (read again after it switched out) shows anywhere in the chain. */
static bool at_yield(const struct flip_chains *c, const char *stack)
{
	char frame[256];
	int k = c->after_root ? 3 : 2;

	if (!nth_frame(stack, k, frame, sizeof(frame)))
		return false;
	bool is_a = strcmp(frame, c->a) == 0;
	k += is_a ? c->a_depth : c->b_depth;
	if (!nth_frame(stack, k, frame, sizeof(frame)) ||
	    strcmp(frame, is_a ? c->a_leaf : c->b_leaf))
		return false;
	return nth_frame(stack, k + 1, frame, sizeof(frame)) &&
	       strstr(frame, c->yield) != NULL;
}

/* Whether `stack` (root first) is a state a flip task can be in: ROOT;
 * LOOP; then k <= a_depth frames of A and nothing else of either chain,
 * A_LEAF (and anything below it) only after exactly a_depth frames of A;
 * or the same with B. Below a shorter run only the runtime's own frames
 * may follow (Go preempts a goroutine anywhere: runtime.asyncPreempt).
 * A copy torn between two parks breaks one of these: flip_b under
 * flip_a, a leaf at the wrong depth, a chain not rooted at ROOT. */
static bool whole_chain(const struct flip_chains *c, const char *stack)
{
	char frame[256];
	int k = 0;

	if (!nth_frame(stack, k++, frame, sizeof(frame)) || strcmp(frame, c->root))
		return false;
	if (c->after_root && (!nth_frame(stack, k++, frame, sizeof(frame)) ||
			      strcmp(frame, c->after_root)))
		return false;
	if (!nth_frame(stack, k++, frame, sizeof(frame)) || strcmp(frame, c->loop))
		return false;
	if (!nth_frame(stack, k, frame, sizeof(frame)))
		return true;
	bool is_a = strcmp(frame, c->a) == 0;
	const char *link = is_a ? c->a : c->b;
	const char *leaf = is_a ? c->a_leaf : c->b_leaf;
	int depth = is_a ? c->a_depth : c->b_depth;
	int run = 0;

	while (nth_frame(stack, k, frame, sizeof(frame)) && !strcmp(frame, link)) {
		run++;
		k++;
	}
	if (run > depth)
		return false;
	if (!nth_frame(stack, k, frame, sizeof(frame)))
		return true;
	if (!strcmp(frame, leaf))
		return run == depth;
	return strncmp(frame, "runtime.", 8) == 0;
}

/* Records `fixture` (given `arg`, or none) for 2 s and checks every
 * parked sample of a flip task (leaf "[runnable]" or "[waiting...]") is
 * one whole chain; returns wallspy's stderr. */
static const char *check_flip_arg(const char *fixture, const char *arg,
				  const struct flip_chains *c)
{
	pid_t pid = e2e_start_fixture(fixture, arg, "ready", 60000);
	const char *const opts[] = { "--max-cpu", "0", NULL };
	const char *err;
	setenv("WALLSPY_DEBUG_PAUSE", "1", 1); /* the live-tick counts */
	char *text = attach_folded(pid, "2", opts, &err);
	unsetenv("WALLSPY_DEBUG_PAUSE");
	long parked = 0, torn = 0, lines = 0;
	char first_torn[1024] = "";
	char *save = NULL;

	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *stack;
		long count;
		char loop[256], leaf[256];

		lines++;
		cr_assert(split_folded(line, &stack, &count), "bad line: %s", line);
		int n = count_frames(stack);
		nth_frame(stack, n - 1, leaf, sizeof(leaf));
		/* A sample the unwinder could not finish says so in its
		 * first frame; a flip task's is otherwise its loop. */
		bool flip = nth_frame(stack, c->after_root ? 2 : 1, loop, sizeof(loop)) &&
			    strcmp(loop, c->loop) == 0;
		bool is_parked = strcmp(leaf, "[runnable]") == 0 ||
				 strcmp(leaf, "[not started]") == 0 ||
				 strncmp(leaf, "[waiting", 8) == 0;
		if (!is_parked || (!flip && strstr(stack, c->loop) == NULL &&
				   strstr(stack, c->a) == NULL &&
				   strstr(stack, c->b) == NULL))
			continue;
		parked += count;
		/* Without the state leaf. */
		*strrchr(stack, ';') = '\0';
		if (whole_chain(c, stack) &&
		    (!c->parks_at_yield || at_yield(c, stack)))
			continue;
		torn += count;
		if (!first_torn[0])
			snprintf(first_torn, sizeof(first_torn), "%s (%ld)", stack, count);
	}
	cr_log_info("%s: %ld parked samples in %ld distinct stacks; %s", fixture,
		    parked, lines, strstr(err, "wallspy: ") ? strstr(err, "wallspy: ") : err);
	cr_assert_gt(parked, 10000, "too few parked samples to tell: %ld", parked);
	cr_assert_eq(torn, 0, "%ld of %ld parked samples are no whole chain, e.g. %s",
		     torn, parked, first_torn);
	e2e_check_healthy_then_stop(pid);
	return err;
}

static void check_flip(const char *fixture, const struct flip_chains *c)
{
	e2e_need_fixture(fixture);
	check_flip_arg(fixture, NULL, c);
}

Test(e2e_live, greenrt_flip_parked_samples_are_whole, .timeout = 120,
     .fini = e2e_cleanup)
{
	const struct flip_chains c = {
		.root = "greenrt_task_main", .loop = "flip_task",
		.a = "flip_a", .a_leaf = "flip_a_leaf",
		.b = "flip_b", .b_leaf = "flip_b_leaf",
		.yield = "greenrt_yield", .a_depth = 6, .b_depth = 12,
		.parks_at_yield = true,
	};
	check_flip("greenrt/greenrt_flip", &c);
}

/* On every Go release of the matrix (go_releases.h): each must still bump
 * g.trackingSeq on every switch out of running, or its torn copies show
 * here. */
static void check_go_flip(const char *release)
{
	const struct flip_chains c = {
		.root = "runtime.goexit", .loop = "main.flipLoop",
		.a = "main.flipA", .a_leaf = "main.flipALeaf",
		.b = "main.flipB", .b_leaf = "main.flipBLeaf",
		.yield = "runtime.Gosched", .a_depth = 6, .b_depth = 12,
	};
	char fixture[64];

	snprintf(fixture, sizeof(fixture), "go/go%s/go_flip", release);
	check_flip(fixture, &c);
}

#define GO_FLIP_TEST(id, release)                                           \
	Test(e2e_live, go_flip_parked_samples_are_whole_go##id, .timeout = 120, \
	     .fini = e2e_cleanup)                                           \
	{                                                                   \
		check_go_flip(release);                                     \
	}
WS_GO_RELEASES(GO_FLIP_TEST)
/* ---- real runtimes (test_e2e_runtimes.c has their truth tables) ---- */

/* GNU Pth, both machine contexts: 64 threads yielding at the bottom of
 * the two chains, ~100k switches a second on one OS thread. Pth bumps
 * `dispatches` before each switch-in, so ticks read it live, and the
 * samples must still be whole. */
static void check_pth_flip(const char *fixture)
{
	const struct flip_chains c = {
		.root = "pth_spawn_trampoline", .loop = "flip_task",
		.a = "flip_a", .a_leaf = "flip_a_leaf",
		.b = "flip_b", .b_leaf = "flip_b_leaf",
		.yield = "pth_yield", .a_depth = 6, .b_depth = 12,
		.parks_at_yield = true,
	};
	e2e_need_fixture(fixture);
	const char *err = check_flip_arg(fixture, "flip", &c);
	const char *live = strstr(err, "wallspy: live ticks ");
	cr_assert(live && atol(live + strlen("wallspy: live ticks ")) > 0,
		  "no live ticks: %s", err);
}

Test(e2e_live, pth_ucontext_flip_parked_samples_are_whole, .timeout = 120,
     .fini = e2e_cleanup)
{
	check_pth_flip("pth/pth_fixture_uctx");
}

Test(e2e_live, pth_setjmp_flip_parked_samples_are_whole, .timeout = 120,
     .fini = e2e_cleanup)
{
	check_pth_flip("pth/pth_fixture_sjlj");
}

/* Crystal fibers: no switch count, so every tick holds the target; the
 * samples are whole because nothing moves while they are read. */
Test(e2e_live, crystal_flip_parked_samples_are_whole, .timeout = 120,
     .fini = e2e_cleanup)
{
	const struct flip_chains c = {
		.root = "run", .after_root = "->", .loop = "flip_task",
		.a = "flip_a", .a_leaf = "flip_a_leaf",
		.b = "flip_b", .b_leaf = "flip_b_leaf",
		.yield = "yield", .a_depth = 6, .b_depth = 12,
		.parks_at_yield = true,
	};
	e2e_need_fixture("crystal/crystal_fibers");
	check_flip_arg("crystal/crystal_fibers", "flip", &c);
}

/* ---- go_fidelity: recorded stacks against dump's ---- */

/* The dump's frames of a task, root first, joined with ';'. */
static void dump_chain(const cJSON *task, char *buf, size_t size)
{
	const cJSON *frames = cJSON_GetObjectItem(task, "frames");
	int n = cJSON_GetArraySize(frames);
	size_t used = 0;

	buf[0] = '\0';
	for (int i = n - 1; i >= 0; i--) {
		const char *name = cJSON_GetStringValue(
			cJSON_GetObjectItem(cJSON_GetArrayItem(frames, i), "function"));
		int w = snprintf(buf + used, size - used, "%s%s",
				 i == n - 1 ? "" : ";", name ? name : "??");
		if (w < 0 || (size_t)w >= size - used)
			cr_assert_fail("chain longer than %zu bytes", size);
		used += (size_t)w;
	}
}

/* A target under test: its pid, and what to expect of its recording. */
struct parked_target {
	pid_t pid;
	int min_parked;          /* parked tasks the dump must list */
	bool expect_reuse;       /* unwinds of unchanged stacks reused */
};

static struct parked_target start_go_fidelity(void)
{
	const char *args[] = { e2e_path(e2e_tmpdir(), "go.txt"), NULL };
	struct e2e_proc proc = e2e_start_go("go/go_fidelity", args, 30000);

	/* Go stacks unwind faster than they hash: no reuse for Go. */
	return (struct parked_target){ proc.pid, 100, false };
}

static struct parked_target start_greenrt_parked(void)
{
	e2e_need_fixture("greenrt/greenrt_parked");
	pid_t pid = e2e_start_fixture("greenrt/greenrt_parked", NULL, "ready", 20000);
	return (struct parked_target){ pid, 7, true };
}

/* Every parked task of the dump is, in a --group-by task recording,
 * sampled at (nearly) every tick and always at the dump's own stack. */
static void check_recording_matches_dump(struct parked_target t,
					 const char *const *extra)
{
	pid_t pid = t.pid;
	cJSON *dump = e2e_dump_json(pid, NULL);
	/* No budget: every task every tick (with --stop-all, copying 101
	 * goroutines' stacks took over --max-pause's 1 ms on a loaded
	 * machine, and the pause budget sampled ~70 % of them a tick). */
	const char *opts[10] = { "--group-by", "task", "--max-cpu", "0",
				 "--max-pause", "0" };
	int nopts = 6;

	for (int i = 0; extra && extra[i]; i++)
		opts[nopts++] = extra[i];
	opts[nopts] = NULL;
	const char *err;
	/* The parked tasks' stacks never change: after the first tick a C
	 * runtime's unwinds are reused (ws_stack_cache), and must still
	 * match the dump. */
	setenv("WALLSPY_DEBUG_PAUSE", "1", 1);
	char *text = attach_folded(pid, "1", opts, &err);
	unsetenv("WALLSPY_DEBUG_PAUSE");
	struct e2e_summary summary = e2e_parse_summary(err);
	long ticks = summary.ticks;
	cr_assert_geq(summary.unwinds_reused, 0, "no reuse count in: %s", err);
	if (t.expect_reuse)
		cr_assert_gt(summary.unwinds_reused, (long)t.min_parked * ticks / 2,
			     "few unwinds reused (%ld) in %ld ticks",
			     summary.unwinds_reused, ticks);
	const cJSON *task;
	int checked = 0, bad = 0;

	cJSON_ArrayForEach(task, cJSON_GetObjectItem(dump, "tasks")) {
		const char *state = cJSON_GetStringValue(cJSON_GetObjectItem(task, "state"));
		long id = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(task, "id"));
		char want[8192], prefix[64];
		long total = 0, other = 0;
		char other_text[1024] = "";

		if (!state || strcmp(state, "waiting") != 0 ||
		    !cJSON_IsNull(cJSON_GetObjectItem(task, "error")))
			continue;
		dump_chain(task, want, sizeof(want));
		/* The group's name: "task ID" or "task ID \"NAME\"". */
		snprintf(prefix, sizeof(prefix), "task %ld", id);
		for (const char *line = text; line && *line;
		     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
			size_t len = strcspn(line, "\n");
			size_t plen = strlen(prefix);
			if (strncmp(line, prefix, plen) != 0 ||
			    (line[plen] != ';' && line[plen] != ' '))
				continue;
			const char *first = memchr(line, ';', len);
			if (!first)
				continue;
			size_t skip = (size_t)(first + 1 - line);
			char copy[9000];
			if (len >= sizeof(copy))
				len = sizeof(copy) - 1;
			memcpy(copy, line + skip, len - skip);
			copy[len - skip] = '\0';
			char *stack;
			long count;
			cr_assert(split_folded(copy, &stack, &count), "bad line");
			total += count;
			/* Drop the state leaf ("[waiting: ...]"). */
			char *leaf = strrchr(stack, ';');
			if (leaf && leaf[1] == '[')
				*leaf = '\0';
			if (strcmp(stack, want) != 0) {
				other += count;
				snprintf(other_text, sizeof(other_text), "%.1000s", stack);
			}
		}
		checked++;
		if (other || total < ticks * 9 / 10) {
			bad++;
			cr_log_error("task %ld: %ld samples in %ld ticks, %ld not at the dump's stack\n"
				     "    dump:     %s\n    recorded: %s",
				     id, total, ticks, other, want, other_text);
		}
	}
	cr_log_info("%d parked tasks checked over %ld ticks", checked, ticks);
	cr_assert_geq(checked, t.min_parked, "only %d parked tasks in the dump", checked);
	cr_assert_eq(bad, 0, "%d of %d tasks recorded unlike the dump", bad, checked);
	e2e_check_healthy_then_stop(pid);
}

Test(e2e_live, go_fidelity_live_recording_matches_dump, .timeout = 120,
     .fini = e2e_cleanup)
{
	check_recording_matches_dump(start_go_fidelity(), NULL);
}

Test(e2e_live, go_fidelity_stop_all_recording_matches_dump, .timeout = 120,
     .fini = e2e_cleanup)
{
	const char *const extra[] = { "--stop-all", NULL };
	check_recording_matches_dump(start_go_fidelity(), extra);
}

Test(e2e_live, greenrt_parked_live_recording_matches_dump, .timeout = 120,
     .fini = e2e_cleanup)
{
	check_recording_matches_dump(start_greenrt_parked(), NULL);
}

Test(e2e_live, greenrt_parked_stop_all_recording_matches_dump, .timeout = 120,
     .fini = e2e_cleanup)
{
	const char *const extra[] = { "--stop-all", NULL };
	check_recording_matches_dump(start_greenrt_parked(), extra);
}

/* ---- greenrt_twin: same saved context, different stacks ---- */

/* greenrt_twin's tasks park alternately under twin_a and twin_b at
 * byte-identical saved registers (the fixture checks that before it says
 * "ready"), for equal times. A tick may skip copying a task whose switch
 * count and context are those of an earlier sample, and reuse that
 * sample's unwind: keyed on the context alone, every sample showed the
 * twin first seen (1592 to 0, measured when this test was written). Each
 * twin must get about half of the samples, and some must have been taken
 * without a copy. */
static void check_twins(const char *const *extra)
{
	e2e_need_fixture("greenrt/greenrt_twin");
	pid_t pid = e2e_start_fixture("greenrt/greenrt_twin", NULL, "ready",
				      30000);
	const char *err;
	setenv("WALLSPY_DEBUG_PAUSE", "1", 1); /* the reuse counts */
	char *text = attach_folded(pid, "2", extra, &err);
	unsetenv("WALLSPY_DEBUG_PAUSE");
	long a = 0, b = 0;
	char *save = NULL;

	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *stack;
		long count;

		cr_assert(split_folded(line, &stack, &count), "bad line: %s", line);
		a += strstr(stack, ";twin_a;") ? count : 0;
		b += strstr(stack, ";twin_b;") ? count : 0;
	}
	const char *reused = strstr(err, " without a copy)");
	while (reused && reused > err && reused[-1] != '(')
		reused--;
	long skipped = reused ? atol(reused) : 0;
	cr_log_info("twin_a %ld, twin_b %ld samples; %ld taken without a copy",
		    a, b, skipped);
	/* 8 tasks, 100 Hz, 2 s. */
	cr_assert_gt(a + b, 1000, "too few twin samples: %ld", a + b);
	cr_assert(a * 10 >= (a + b) * 3 && b * 10 >= (a + b) * 3,
		  "twin_a %ld and twin_b %ld samples, of equal times", a, b);
	cr_assert_gt(skipped, 0, "no sample taken without a copy: %s", err);
	e2e_check_healthy_then_stop(pid);
}

Test(e2e_live, greenrt_twin_live_parks_apart, .timeout = 120,
     .fini = e2e_cleanup)
{
	check_twins(NULL);
}

Test(e2e_live, greenrt_twin_stop_all_parks_apart, .timeout = 120,
     .fini = e2e_cleanup)
{
	const char *const extra[] = { "--stop-all", NULL };
	check_twins(extra);
}

/* ---- a thread's sample when its listed goroutine switched out ---- */

/* go_workload3 with short compute goroutines (262,144 iterations of
 * sum_of_sqrt: well under a millisecond each, 4,096 of them on
 * GOMAXPROCS 2), recorded whole: a goroutine listed as running has often
 * finished by the time its thread stops. That thread's sample then goes to
 * the goroutine its M runs by then (m.curg, read while the thread is
 * held), read again and copied there: a live tick without it counts no
 * stand-in. Every running compute sample must still be a whole stack of
 * its own: under the goroutine's closure, nothing of another goroutine.
 * And no goroutine that runs may be read as parked: the registers of its
 * thread's stop are stale once the thread runs again (before that was
 * known, 183-223 samples of each such recording here said "no saved
 * context", against 307-339 running; 0 after, and 6 and 17 in an attach
 * beside two busy loops, not explained yet: hence a bound of a tenth of
 * the running samples). And a thread gives each tick one running sample at
 * most: Go runs goroutines on no more Ps at once than GOMAXPROCS (2, set
 * here), so the running samples stay near 2 a tick; a goroutine taken
 * late in the tick because it changed (it started running) on a thread
 * sampled already is a failed sample (before that, this recording counted
 * 2.9-3.1 running goroutines a tick here). The bound is 2.5 a tick, not 2:
 * with the fix, recordings counted 2.000 to 2.006 a tick (474 in 237, 491
 * in 245, 315 in 157, 329 in 164), over 2 in three of the four (perhaps
 * a thread without a P holding a running goroutine for a moment, as in
 * exitsyscall; not traced to the samples). */
Test(e2e_live, go_thread_sample_goes_to_its_current_goroutine, .timeout = 120,
     .fini = e2e_cleanup_adopting)
{
	const char *target[] = { e2e_need_go_fixture(NULL, "go_workload3"),
				 "4096", "262144", NULL };
	const char *const opts[] = { "--max-cpu", "0", "-f", "folded", NULL };
	const char *out;
	e2e_become_subreaper();
	setenv("WALLSPY_DEBUG_PAUSE", "1", 1); /* the stand-in count */
	setenv("GOMAXPROCS", "2", 1);
	struct e2e_result res = e2e_record(opts, target, &out, 90000);
	unsetenv("GOMAXPROCS");
	unsetenv("WALLSPY_DEBUG_PAUSE");
	const char *err = res.err;
	cr_assert(strstr(err, "target exited with status 0"), "stderr: %s", err);
	char *text = e2e_read_file(out);
	cr_assert_not_null(text, "no output file");
	long running = 0, torn = 0, no_context = 0, all_running = 0;
	char first_torn[1024] = "";
	char *save = NULL;

	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *stack, frame[256];
		long count;

		cr_assert(split_folded(line, &stack, &count), "bad line: %s", line);
		int n = count_frames(stack);
		nth_frame(stack, n - 1, frame, sizeof(frame));
		if (strstr(frame, "no saved context"))
			no_context += count;
		if (!strcmp(frame, "[running]"))
			all_running += count;
		if (strcmp(frame, "[running]") || !strstr(stack, "main.spawnComputeTasks."))
			continue;
		running += count;
		/* runtime.goexit; the closure (func1, or gowrap1 from Go
		 * 1.22), in itself or in what it calls: main.sum_of_sqrt,
		 * its deferred call's wrapper (func1.1 before Go 1.22) or the
		 * WaitGroup's Done, the runtime; the leaf. */
		bool whole = nth_frame(stack, 0, frame, sizeof(frame)) &&
			     !strcmp(frame, "runtime.goexit") &&
			     nth_frame(stack, 1, frame, sizeof(frame)) &&
			     !strncmp(frame, "main.spawnComputeTasks.", 23);
		if (whole && n > 3) {
			nth_frame(stack, 2, frame, sizeof(frame));
			whole = !strcmp(frame, "main.sum_of_sqrt") ||
				!strncmp(frame, "main.spawnComputeTasks.", 23) ||
				!strncmp(frame, "sync.", 5) ||
				!strncmp(frame, "runtime.", 8);
		}
		if (!whole) {
			torn += count;
			if (!first_torn[0])
				snprintf(first_torn, sizeof(first_torn), "%s (%ld)", stack, count);
		}
	}
	const char *stood = strstr(err, "stood in for a task switched out ");
	long stand_ins = stood ? atol(stood + strlen("stood in for a task switched out ")) : -1;
	cr_log_info("%ld running compute samples, %ld stand-ins; %s", running,
		    stand_ins, err);
	cr_assert_gt(running, 100, "too few running compute samples: %ld", running);
	cr_assert_eq(torn, 0, "%ld of %ld running compute samples not whole, e.g. %s",
		     torn, running, first_torn);
	cr_assert_gt(stand_ins, 0, "no thread's sample went to its current goroutine");
	/* A tick late by missed ones carries their weight too. */
	struct e2e_summary summary = e2e_parse_summary(err);
	long ticks = summary.ticks + summary.missed;
	cr_assert_gt(ticks, 0, "no tick count: %s", summary.line);
	cr_assert_leq(2 * all_running, 5 * ticks, "%ld running samples in %ld ticks "
		      "(missed ones included) on GOMAXPROCS 2", all_running,
		      ticks);
	/* A goroutine that runs has no saved context (gogo clears g.sched.sp):
	 * a read that says so took it for parked, from registers its thread's
	 * stop gave earlier in the tick. */
	cr_assert_leq(no_context * 10, running, "%ld samples of running goroutines "
		      "read as parked (no saved context), %ld running", no_context,
		      running);
}
