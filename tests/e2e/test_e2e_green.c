/*
 * End-to-end tests of wallspy on a green-thread runtime: greenrt
 * (fixtures/greenrt), found through the descriptor its programs embed.
 * `dump` of greenrt_parked is compared with the fixture's own truth table
 * (`greenrt_parked --expected`: every task's state, wait reason and exact
 * chain); recorded profiles are checked for the contract of green tasks
 * (every task's stack starts at greenrt_task_main, running and parked alike;
 * state and wait reason as the leaf; every task accounted at every tick)
 * and for the results the seed predicts on its three workloads, scaled down
 * (w1 channel, w2 short-lived tasks, w3 compute). Shares and weights are
 * measured, so the tests of this binary run one at a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "e2e_util.h"
#include "fixture_truth.h"
#include "speedscope_view.h"
#include "summary.h"
#include "wallspy_run.h"

E2E_SERIAL_TESTS()

#define ROOT_FUNCTION "greenrt_task_main"
#define IDLE_LEAF "[idle worker]"

/* The rate every recording here uses (wallspy's default). */
enum { RATE_HZ = 100 };

/* --- the truth table of greenrt_parked --- */

/* greenrt_parked's table (tests/lib/fixture_truth.h), every chain from
 * the root. */
static int load_expected(struct truth_task *out)
{
	int n = truth_load(e2e_fixture("greenrt/greenrt_parked"), out);

	for (int i = 0; i < n; i++)
		cr_assert_str_eq(out[i].chain[0], ROOT_FUNCTION,
				 "%s: the table's chain does not start at the root",
				 out[i].name);
	return n;
}

static bool is_tid_of(pid_t pid, pid_t tid)
{
	pid_t tids[256];
	int n = e2e_tids(pid, tids, 256);

	for (int i = 0; i < n; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/* --- dump --- */

/* `wallspy dump [--json] [--runtime R] PID` in cwd (NULL: inherit), exit
 * 0. */
static struct e2e_result run_dump(pid_t pid, bool json, const char *runtime,
				  const char *cwd)
{
	const char *opts[4] = { NULL };
	int n = 0;

	if (json)
		opts[n++] = "--json";
	if (runtime) {
		opts[n++] = "--runtime";
		opts[n++] = runtime;
	}
	return e2e_run_dump(pid, opts, cwd, 0, 30000);
}

static const char *str_of(const cJSON *obj, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(obj, key));
}

/* The frames as "f0 < f1 < ..." (innermost first), for messages. */
static const char *dump_frames_text(const cJSON *frames)
{
	static char text[2048];
	const cJSON *frame;
	size_t len = 0;

	text[0] = '\0';
	cJSON_ArrayForEach(frame, frames) {
		const char *fn = str_of(frame, "function");

		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s",
					len ? " < " : "",
					fn ? fn : str_of(frame, "address"));
		if (len >= sizeof(text))
			break;
	}
	return text;
}

/* Checks a `dump --json` of greenrt_parked against the table: each task by
 * name with its exact chain (innermost first, greenrt_task_main last),
 * state, wait reason and thread; besides them only idle workers. */
static void check_parked_dump_json(const cJSON *root, pid_t pid,
				   const struct truth_task *table, int ntable)
{
	const cJSON *tasks = cJSON_GetObjectItem(root, "tasks");
	const cJSON *task;
	pid_t spinner_thread = 0;
	int idle = 0;

	cr_assert_str_eq(str_of(root, "runtime"), "greenrt");
	cr_assert(e2e_json_is_integer(cJSON_GetObjectItem(root, "pid")));
	cr_assert_eq((pid_t)cJSON_GetObjectItem(root, "pid")->valuedouble, pid);
	cr_assert(cJSON_IsArray(tasks));

	for (int e = 0; e < ntable; e++) {
		const struct truth_task *want = &table[e];
		const cJSON *found = e2e_dump_task(root, want->name);

		cr_assert_not_null(found, "no task named %s in the dump", want->name);

		const cJSON *frames = cJSON_GetObjectItem(found, "frames");
		const char *reason = str_of(found, "wait_reason");
		const cJSON *thread = cJSON_GetObjectItem(found, "thread");

		cr_assert(e2e_json_is_integer(cJSON_GetObjectItem(found, "id")),
			  "%s: id is not an integer", want->name);
		cr_assert_str_eq(str_of(found, "state"), want->state,
				 "%s: state", want->name);
		if (want->reason[0])
			cr_assert(reason && strcmp(reason, want->reason) == 0,
				  "%s: wait_reason \"%s\", expected \"%s\"",
				  want->name, reason ? reason : "(null)",
				  want->reason);
		else
			cr_assert_null(reason, "%s: wait_reason \"%s\", expected none",
				       want->name, reason);
		cr_assert(cJSON_IsNull(cJSON_GetObjectItem(found, "error")),
			  "%s: error \"%s\"", want->name, str_of(found, "error"));

		/* Exact chain, innermost first: nothing above greenrt_task_main
		 * (the scheduler's frames are cut) and nothing missing. */
		cr_assert_eq(cJSON_GetArraySize(frames), want->nchain,
			     "%s: %d frames, expected %d: %s", want->name,
			     cJSON_GetArraySize(frames), want->nchain,
			     dump_frames_text(frames));
		for (int i = 0; i < want->nchain; i++) {
			const cJSON *frame = cJSON_GetArrayItem(frames, i);
			const char *fn = str_of(frame, "function");
			const cJSON *line = cJSON_GetObjectItem(frame, "line");

			cr_assert(fn && strcmp(fn, want->chain[want->nchain - 1 - i]) == 0,
				  "%s: frame %d is %s, expected %s; frames: %s",
				  want->name, i, fn ? fn : "(null)",
				  want->chain[want->nchain - 1 - i],
				  dump_frames_text(frames));
			cr_assert(str_of(frame, "file") && e2e_json_is_integer(line) &&
				  line->valuedouble > 0,
				  "%s: frame %s has no file:line", want->name, fn);
		}

		if (strcmp(want->state, "running") == 0) {
			cr_assert(e2e_json_is_integer(thread), "%s: running without a thread",
				  want->name);
			spinner_thread = (pid_t)thread->valuedouble;
			cr_assert(is_tid_of(pid, spinner_thread),
				  "%s: thread %d is not a thread of %d", want->name,
				  spinner_thread, pid);
		} else {
			cr_assert(cJSON_IsNull(thread), "%s: parked but on thread %g",
				  want->name, thread ? thread->valuedouble : 0);
		}
	}

	/* Every other entry is an idle worker (the parked tasks' worker has
	 * nothing to run), on a thread of the target; ids are unique. */
	cJSON_ArrayForEach(task, tasks) {
		const char *name = str_of(task, "name");
		const cJSON *other;
		bool in_table = false;

		for (int e = 0; e < ntable && name; e++)
			in_table |= strcmp(name, table[e].name) == 0;
		cJSON_ArrayForEach(other, tasks)
			cr_assert(other == task ||
				  cJSON_GetObjectItem(other, "id")->valuedouble !=
					  cJSON_GetObjectItem(task, "id")->valuedouble,
				  "two tasks with id %g",
				  cJSON_GetObjectItem(task, "id")->valuedouble);
		if (in_table)
			continue;
		cr_assert_str_eq(str_of(task, "state"), "idle",
				 "task %s (state %s) is not in the table and not an idle worker",
				 name ? name : "(null)", str_of(task, "state"));
		const cJSON *thread = cJSON_GetObjectItem(task, "thread");
		cr_assert(e2e_json_is_integer(thread), "idle worker without a thread");
		cr_assert(is_tid_of(pid, (pid_t)thread->valuedouble),
			  "idle worker on %g, not a thread of %d",
			  thread->valuedouble, pid);
		cr_assert_neq((pid_t)thread->valuedouble, spinner_thread,
			      "the spinner's worker is also listed as idle");
		idle++;
	}
	/* Two workers: one runs the spinner, the other is idle. */
	cr_assert_eq(idle, 1, "%d idle workers, expected 1", idle);
}

/* dump --json of greenrt_parked matches the truth table. `runtime`: NULL
 * for --runtime auto (the descriptor embedded in the program), or a
 * descriptor file given as a relative path, as a user would type it in the
 * source tree. */
static void check_parked_dump(const char *runtime)
{
	struct truth_task table[TRUTH_MAX_TASKS];
	int ntable = load_expected(table);
	pid_t pid = e2e_start_fixture("greenrt/greenrt_parked", NULL, "ready", 20000);
	struct e2e_result res = run_dump(pid, true, runtime,
					 runtime ? WS_SOURCE_DIR : NULL);
	cJSON *root = e2e_parse_json(res.out);

	cr_assert_not_null(root, "dump --json output is not JSON:\n%s", res.out);
	check_parked_dump_json(root, pid, table, ntable);
	e2e_check_healthy_then_stop(pid);
}

Test(e2e_green, dump_json_parked, .timeout = 60, .fini = e2e_cleanup)
{
	check_parked_dump(NULL);
}

/* The embedded descriptor's file: the array of task pointers. */
Test(e2e_green, dump_json_parked_descriptor_file, .timeout = 60,
     .fini = e2e_cleanup)
{
	check_parked_dump("fixtures/greenrt/greenrt.wallspy.json");
}

/* The same runtime read through its linked list of tasks (layout "list"). */
Test(e2e_green, dump_json_parked_list_descriptor, .timeout = 60,
     .fini = e2e_cleanup)
{
	check_parked_dump("fixtures/greenrt/greenrt-list.wallspy.json");
}

/* --runtime threads: OS threads instead of green tasks. */
Test(e2e_green, dump_json_parked_threads_runtime, .timeout = 60,
     .fini = e2e_cleanup)
{
	struct truth_task table[TRUTH_MAX_TASKS];
	int ntable = load_expected(table);
	pid_t pid = e2e_start_fixture("greenrt/greenrt_parked", NULL, "ready", 20000);
	struct e2e_result res = run_dump(pid, true, "threads", NULL);
	cJSON *root = e2e_parse_json(res.out);
	const cJSON *task;
	pid_t tids[256];
	int spinning_threads = 0;

	cr_assert_not_null(root, "dump --json output is not JSON:\n%s", res.out);
	cr_assert_str_eq(str_of(root, "runtime"), "threads");
	int ntids = e2e_tids(pid, tids, 256);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "tasks")), ntids,
		     "%d tasks for %d threads",
		     cJSON_GetArraySize(cJSON_GetObjectItem(root, "tasks")), ntids);
	cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks")) {
		const cJSON *id = cJSON_GetObjectItem(task, "id");
		const cJSON *thread = cJSON_GetObjectItem(task, "thread");
		const char *name = str_of(task, "name");
		const cJSON *frames = cJSON_GetObjectItem(task, "frames");

		cr_assert(e2e_json_is_integer(id) && e2e_json_is_integer(thread) &&
			  id->valuedouble == thread->valuedouble,
			  "an OS-thread task's id is its thread");
		cr_assert(is_tid_of(pid, (pid_t)id->valuedouble),
			  "task %g is not a thread of %d", id->valuedouble, pid);
		for (int e = 0; e < ntable; e++)
			cr_assert(!name || strcmp(name, table[e].name) != 0,
				  "green task %s listed under --runtime threads", name);
		cr_assert(strcmp(str_of(task, "state"), "running") == 0 ||
			  strcmp(str_of(task, "state"), "waiting") == 0,
			  "thread state %s", str_of(task, "state"));
		/* The spinner's worker thread runs its chain. */
		for (int i = 0; i < cJSON_GetArraySize(frames); i++) {
			const char *fn = str_of(cJSON_GetArrayItem(frames, i), "function");

			if (!fn || strcmp(fn, "spin_forever") != 0)
				continue;
			spinning_threads++;
			cr_assert_str_eq(str_of(task, "state"), "running");
			cr_assert_geq(cJSON_GetArraySize(frames), i + 3);
			cr_assert_str_eq(str_of(cJSON_GetArrayItem(frames, i + 1),
						"function"), "spin_chain_s1",
					 "frames: %s", dump_frames_text(frames));
			cr_assert_str_eq(str_of(cJSON_GetArrayItem(frames, i + 2),
						"function"), "spinner_task",
					 "frames: %s", dump_frames_text(frames));
		}
	}
	cr_assert_eq(spinning_threads, 1, "%d threads in spin_forever",
		     spinning_threads);
	e2e_check_healthy_then_stop(pid);
}

/* The text dump: header `task ID "NAME" [STATE: REASON] thread TID` (thread
 * only when on one), then the chain innermost first, one frame a line. */
Test(e2e_green, dump_text_parked, .timeout = 60, .fini = e2e_cleanup)
{
	struct truth_task table[TRUTH_MAX_TASKS];
	int ntable = load_expected(table);
	pid_t pid = e2e_start_fixture("greenrt/greenrt_parked", NULL, "ready", 20000);
	struct e2e_result res = run_dump(pid, false, NULL, NULL);

	for (int e = 0; e < ntable; e++) {
		const struct truth_task *want = &table[e];
		char header_re[256], quoted[64];
		char *text = strdup(res.out);
		char *lines[64];
		int n = 0;
		bool inside = false;

		cr_assert_not_null(text);
		snprintf(quoted, sizeof(quoted), " \"%s\" ", want->name);
		for (char *line = strtok(text, "\n"); line && n < 64;
		     line = strtok(NULL, "\n")) {
			if (strncmp(line, "task ", 5) == 0)
				inside = strstr(line, quoted) != NULL;
			if (inside)
				lines[n++] = line;
		}
		cr_assert_gt(n, 0, "no block for %s in:\n%s", want->name, res.out);
		if (want->reason[0])
			snprintf(header_re, sizeof(header_re),
				 "^task [0-9]+ \"%s\" \\[%s: %s\\]$", want->name,
				 want->state, want->reason);
		else
			snprintf(header_re, sizeof(header_re),
				 "^task [0-9]+ \"%s\" \\[%s\\] thread [0-9]+$",
				 want->name, want->state);
		cr_assert(e2e_match(lines[0], header_re), "%s: header \"%s\"",
			  want->name, lines[0]);
		cr_assert_eq(n - 1, want->nchain, "%s: %d frame lines, expected %d:\n%s",
			     want->name, n - 1, want->nchain, res.out);
		for (int i = 0; i < want->nchain; i++) {
			char frame_re[128];

			snprintf(frame_re, sizeof(frame_re),
				 "^[ \t]+%s \\([^)]+\\.c:[0-9]+\\)$",
				 want->chain[want->nchain - 1 - i]);
			cr_assert(e2e_match(lines[1 + i], frame_re),
				  "%s: line %d \"%s\", expected frame %s", want->name,
				  i + 1, lines[1 + i], want->chain[want->nchain - 1 - i]);
		}
		free(text);
	}
	e2e_check_healthy_then_stop(pid);
}

/* --- recorded profiles --- */

static bool is_idle_sample(const struct ss_view *v, const cJSON *sample)
{
	return strcmp(ss_frame_at(v, sample, -1), IDLE_LEAF) == 0;
}

/* The contract the flame graph's merge rests on: every task sample, running,
 * parked, not started or failed, starts at greenrt_task_main; only idle
 * workers' samples (no task) do not. Reported (not fatal, so the test's
 * other checks still run) with the count, the weight and the heaviest
 * offending stack. */
static void check_roots(const struct ss_view *v)
{
	double bad_weight = 0, total = 0, worst = 0;
	char worst_text[1024] = "";
	int bad = 0;

	SS_FOR_EACH_SAMPLE(v, profile, sample, w) {

		if (is_idle_sample(v, sample))
			continue;
		total += w;
		if (strcmp(ss_frame_at(v, sample, 0), ROOT_FUNCTION) == 0)
			continue;
		bad++;
		bad_weight += w;
		if (w > worst) {
			worst = w;
			snprintf(worst_text, sizeof(worst_text), "profile %s: %s",
				 ss_profile_name(profile), ss_stack_text(v, sample));
		}
	}
	cr_expect_eq(bad, 0, "%d task samples (%.3f of %.3f s) do not start at "
		     ROOT_FUNCTION "; heaviest (%.3f s): %s", bad, bad_weight, total,
		     worst, worst_text);
}

/* In a --group-by task recording, a profile is one task's or one idle
 * worker's, never both: an idle worker (no task; keyed by its thread id)
 * must not land in the profile of a task whose id happens to equal that
 * thread id. */
static void check_task_profiles_pure(const struct ss_view *v)
{
	const cJSON *profile;
	int mixed = 0;
	char first[1024] = "";

	cJSON_ArrayForEach(profile, v->profiles) {
		const cJSON *sample;
		int idle = 0, task = 0;

		/* Gaps (empty samples: a worker busy, not idle) are
		 * neither. */
		cJSON_ArrayForEach(sample, cJSON_GetObjectItem(profile, "samples"))
			if (sample->child)
				is_idle_sample(v, sample) ? idle++ : task++;
		if (!idle || !task)
			continue;
		if (!mixed++)
			snprintf(first, sizeof(first),
				 "profile %s: %d task samples and %d idle-worker samples",
				 ss_profile_name(profile), task, idle);
	}
	cr_expect_eq(mixed, 0, "%d profiles mix a task and an idle worker; first: %s",
		     mixed, first);
}

/* `wallspy record [opts] -- target...` (exit 0), out.json in a fresh
 * directory; a target the recording detached from is adopted (the tests
 * that record are subreapers) so that e2e_cleanup kills it. */
static struct e2e_result record(const char *const opts[],
				const char *const target[], const char **out)
{
	struct e2e_result res = e2e_record(opts, target, out, 60000);

	e2e_adopt_orphans(NULL, 0);
	return res;
}

/* `task ID "NAME"` profile of the table task `name`, or NULL. */
static const cJSON *task_profile(const struct ss_view *v, const char *name)
{
	char re[96];

	snprintf(re, sizeof(re), "^task [0-9]+ \"%s\"$", name);
	return ss_profile_matching(v, re);
}

/* Checks a --group-by task recording of greenrt_parked: roots, a profile per
 * table task, each parked task's samples under its chain and wait leaf, the
 * spinner's under spin_forever. `settled`: recorded after "ready", so no
 * sample may predate the table's states. */
static void check_parked_by_task(const struct ss_view *v,
				 const struct truth_task *table, int ntable,
				 bool settled)
{
	const cJSON *profile;
	double floor_share = settled ? 1.0 : 0.9;

	check_roots(v);
	check_task_profiles_pure(v);
	/* Tasks are `task ID "NAME"`; a worker thread without a task is a
	 * group of its own, `idle worker "NAME" thread TID`, so its thread id
	 * never merges it into a task with the same number. */
	cJSON_ArrayForEach(profile, v->profiles)
		cr_assert(e2e_match(ss_profile_name(profile),
				    "^task [0-9]+ \"[^\"]*\"$") ||
			  e2e_match(ss_profile_name(profile),
				    "^idle worker \"[^\"]*\" thread [0-9]+$"),
			  "profile name \"%s\" is neither `task ID \"NAME\"` "
			  "nor `idle worker \"NAME\" thread TID`",
			  ss_profile_name(profile));

	for (int e = 0; e < ntable; e++) {
		const struct truth_task *want = &table[e];
		const cJSON *p = task_profile(v, want->name);
		double total, good = 0;
		char leaf[64];
		int i = 0;

		cr_assert_not_null(p, "no profile for task %s", want->name);
		total = ss_profile_weight(p);
		if (want->reason[0])
			snprintf(leaf, sizeof(leaf), "[%s: %s]", want->state, want->reason);
		else
			snprintf(leaf, sizeof(leaf), "[%s]", want->state);
		const cJSON *sample;
		cJSON_ArrayForEach(sample, cJSON_GetObjectItem(p, "samples")) {
			bool chain_ok = ss_depth(sample) == want->nchain + 1;

			for (int f = 0; chain_ok && f < want->nchain; f++)
				chain_ok = strcmp(ss_frame_at(v, sample, f), want->chain[f]) == 0;
			if (chain_ok && strcmp(ss_frame_at(v, sample, -1), leaf) == 0)
				good += ss_weight(p, i);
			else if (settled)
				cr_assert_fail("task %s: sample %s, expected its chain and %s",
					       want->name, ss_stack_text(v, sample), leaf);
			i++;
		}
		cr_assert_geq(good, floor_share * total - 1e-9,
			      "task %s: %.3f of %.3f s under its chain with leaf %s",
			      want->name, good, total, leaf);
	}
}

/* The root-frame contract on a recording from launch (record -d 1.5,
 * --group-by task): running and parked tasks start at greenrt_task_main;
 * the spinner is under spin_forever, parked tasks end in their wait. */
Test(e2e_green, record_parked_roots, .timeout = 90, .fini = e2e_cleanup_adopting)
{
	struct truth_task table[TRUTH_MAX_TASKS];
	int ntable = load_expected(table);
	const char *opts[] = { "-d", "1.5", "--group-by", "task", NULL };
	const char *target[] = { e2e_fixture("greenrt/greenrt_parked"), NULL };
	const char *out;

	e2e_become_subreaper();
	struct e2e_result res = record(opts, target, &out);
	/* -d ran out: the launched fixture got SIGTERM (it exits 0 on it). */
	cr_assert(strstr(res.err, "target sent SIGTERM by wallspy, then exited with status 0"),
		  "stderr: %s", res.err);
	struct ss_view v = ss_load(out);
	/* From launch: the first ticks may see the table half built. */
	check_parked_by_task(&v, table, ntable, false);
}

/* Per-tick accounting on a population known by construction: attached
 * after "ready", greenrt_parked has exactly the table's tasks and one idle
 * worker at every tick, so every profile was sampled at every tick (equal
 * total weights, (ticks + missed) / rate each) and samples = 9 x ticks.
 * `runtime`: NULL for the embedded descriptor (an array: live ticks), or a
 * descriptor file. */
static void check_every_task_every_tick(const char *runtime)
{
	struct truth_task table[TRUTH_MAX_TASKS];
	int ntable = load_expected(table);
	pid_t pid = e2e_start_fixture("greenrt/greenrt_parked", NULL, "ready", 20000);
	const char *opts[] = { "-d", "1.5", "--group-by", "task",
			       runtime ? "--runtime" : NULL, runtime, NULL };
	const char *out;
	const cJSON *profile;

	struct e2e_result res = e2e_attach(pid, opts, "out.json", &out, 30000);
	struct e2e_summary s = e2e_parse_summary(res.err);
	struct ss_view v = ss_load(out);

	check_parked_by_task(&v, table, ntable, true);
	int nprofiles = cJSON_GetArraySize(v.profiles);
	cr_assert_eq(nprofiles, ntable + 1, "%d profiles, expected %d tasks + 1 idle worker",
		     nprofiles, ntable);
	cr_assert_eq(s.samples, (long)nprofiles * s.ticks,
		     "%ld samples in %ld ticks: not %d per tick (a task was dropped)",
		     s.samples, s.ticks, nprofiles);
	double expected = (double)(s.ticks + s.missed) / RATE_HZ;
	cJSON_ArrayForEach(profile, v.profiles) {
		double total = ss_profile_weight(profile);

		cr_assert(fabs(total - expected) < 1e-6,
			  "profile %s: %.4f s, expected (%ld ticks + %ld missed) / %d Hz = %.4f s",
			  ss_profile_name(profile), total, s.ticks, s.missed, RATE_HZ,
			  expected);
	}
	e2e_check_healthy_then_stop(pid);
}

Test(e2e_green, attach_parked_every_task_every_tick, .timeout = 60,
     .fini = e2e_cleanup)
{
	check_every_task_every_tick(NULL);
}

/* The list walked while the target runs (ws_runtime_caps.walk_live), the
 * kept tasks read again stopped: the same tasks, chains and weights. */
Test(e2e_green, attach_parked_list_walked_live, .timeout = 60,
     .fini = e2e_cleanup)
{
	check_every_task_every_tick(WS_SOURCE_DIR
				    "/fixtures/greenrt/greenrt-list.wallspy.json");
}

/* A list walk that costs more than --max-cpu allows an interval spaces
 * the ticks, says so once, and keeps the time: each tick's samples stand
 * for the intervals since the one before, so every task's profile still
 * covers the recording (a tiny budget makes the 9-task list "long").
 * `stop_all`: the walk inside the pause (--stop-all), spaced the same. */
static void check_list_walk_spaced(bool stop_all)
{
	struct truth_task table[TRUTH_MAX_TASKS];
	int ntable = load_expected(table);
	pid_t pid = e2e_start_fixture("greenrt/greenrt_parked", NULL, "ready", 20000);
	const char *opts[] = { "-d", "2", "--group-by", "task", "--max-cpu",
			       "0.0005", "--runtime",
			       WS_SOURCE_DIR "/fixtures/greenrt/greenrt-list.wallspy.json",
			       stop_all ? "--stop-all" : NULL, NULL };
	const char *out;
	const cJSON *profile;

	struct e2e_result res = e2e_attach(pid, opts, "out.json", &out, 30000);
	struct e2e_summary s = e2e_parse_summary(res.err);
	struct ss_view v = ss_load(out);

	const char *note = strstr(res.err, "ticks spaced to");
	cr_assert(note, "no word of the spacing:\n%s", res.err);
	cr_assert_null(strstr(note + 1, "ticks spaced to"), "said twice:\n%s",
		       res.err);
	cr_assert_null(strstr(res.err, "falling behind"),
		       "spacing taken for lateness:\n%s", res.err);
	/* 5 us or more a walk at 0.0005 % is 1 s or more between ticks: far
	 * fewer than the 200 of 2 s at 100 Hz. */
	cr_assert(s.ticks >= 1 && s.ticks <= 20, "%ld ticks in 2 s", s.ticks);
	check_parked_by_task(&v, table, ntable, true);
	cr_assert_eq(cJSON_GetArraySize(v.profiles), ntable + 1);
	/* The first tick stands for its interval; each later one for the
	 * intervals since the one before, and a last one at the end for the
	 * rest that ran past it: together the whole 2 s, the same for every
	 * task. */
	double first = -1;
	cJSON_ArrayForEach(profile, v.profiles) {
		double total = ss_profile_weight(profile);

		if (first < 0)
			first = total;
		cr_assert(fabs(total - first) < 1e-6, "profile %s: %.4f s, another %.4f s",
			  ss_profile_name(profile), total, first);
	}
	cr_assert(first > 1.9 && first <= 2.0 + 1e-6,
		  "%ld ticks stand for %.3f s of 2 s", s.ticks, first);
	e2e_check_healthy_then_stop(pid);
}

Test(e2e_green, attach_list_walk_spaced_by_cpu_budget, .timeout = 60,
     .fini = e2e_cleanup)
{
	check_list_walk_spaced(false);
}

Test(e2e_green, attach_stop_all_list_walk_spaced_by_cpu_budget, .timeout = 60,
     .fini = e2e_cleanup)
{
	check_list_walk_spaced(true);
}

/* --group-by state: one profile per state, each holding only its state's
 * leaves; 7 parked tasks, 1 running, 1 idle worker at every tick. */
Test(e2e_green, attach_parked_group_by_state, .timeout = 60, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("greenrt/greenrt_parked", NULL, "ready", 20000);
	const char *opts[] = { "-d", "1", "--group-by", "state", NULL };
	const char *out;
	const cJSON *waiting = NULL, *running = NULL, *idle = NULL;

	e2e_attach(pid, opts, "out.json", &out, 30000);
	struct ss_view v = ss_load(out);

	check_roots(&v);
	SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {
		const char *name = ss_profile_name(profile);
		const char *leaf = ss_frame_at(&v, sample, -1);

		(void)w;
		if (strcmp(name, "waiting \u2014 task-seconds") == 0) {
			waiting = profile;
			cr_assert(strncmp(leaf, "[waiting: ", 10) == 0,
				  "leaf %s in profile waiting", leaf);
		} else if (strcmp(name, "running \u2014 task-seconds") == 0) {
			running = profile;
			cr_assert_str_eq(leaf, "[running]");
		} else if (strcmp(name, "idle \u2014 task-seconds") == 0) {
			idle = profile;
			cr_assert_str_eq(leaf, IDLE_LEAF);
		} else {
			cr_assert_fail("unexpected profile \"%s\" (leaf %s)", name, leaf);
		}
	}
	cr_assert(waiting && running && idle, "missing a state profile");
	double unit = ss_profile_weight(running);
	cr_assert(fabs(ss_profile_weight(idle) - unit) < 1e-6,
		  "idle %.3f s, running %.3f s", ss_profile_weight(idle), unit);
	cr_assert(fabs(ss_profile_weight(waiting) - 7 * unit) < 1e-6,
		  "waiting %.3f s, expected 7 x running (%.3f s)",
		  ss_profile_weight(waiting), unit);
	e2e_check_healthy_then_stop(pid);
}

/* The CPU the test runs last in its affinity set, or -1 with only one. */
static int spare_cpu(void)
{
	cpu_set_t set;
	int last = -1, count = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &set)) {
			last = c;
			count++;
		}
	}
	return count > 1 ? last : -1;
}

/* A starved target (SCHED_IDLE, sharing one CPU with a busy loop): its
 * threads take longer than the stop timeout to stop, so some ticks cannot
 * read a worker's registers. The contract still holds: a task that cannot
 * be sampled is a [failed to sample: ...] leaf under its root, never a
 * stack from elsewhere, and nothing is dropped (every profile keeps every
 * tick's weight). */
Test(e2e_green, starved_target_keeps_roots_and_ticks, .timeout = 90,
     .fini = e2e_cleanup)
{
	struct truth_task table[TRUTH_MAX_TASKS];
	int ntable = load_expected(table);
	int cpu = spare_cpu();
	char cpu_text[16];

	if (cpu < 0)
		cr_skip_test("needs two CPUs");
	snprintf(cpu_text, sizeof(cpu_text), "%d", cpu);
	char *target_argv[] = { "/usr/bin/taskset", "-c", cpu_text, "/usr/bin/chrt",
				"--idle", "0",
				(char *)e2e_fixture("greenrt/greenrt_parked"), NULL };
	struct e2e_spawn_opts opts = { .pipe_stdout = true };
	struct e2e_proc target = e2e_spawn(target_argv, &opts);
	cr_assert(e2e_wait_line(target.out_fd, "ready", 20000),
		  "greenrt_parked did not print ready");
	close(target.out_fd);
	char *hog_argv[] = { "/usr/bin/taskset", "-c", cpu_text, "/bin/sh", "-c",
			     "while :; do :; done", NULL };
	struct e2e_proc hog = e2e_spawn(hog_argv, NULL);
	/* The hog holds the CPU once it has used some of it. */
	cr_assert(e2e_wait_cpu(hog.pid, 0, 0.05, 10000), "the hog does not spin");

	const char *attach_opts[] = { "-d", "1.5", "--group-by", "task", NULL };
	const char *out;
	struct e2e_result res = e2e_attach(target.pid, attach_opts, "out.json",
					   &out, 60000);
	e2e_kill(hog.pid);
	cr_log_info("starved target: %s", res.err);
	struct e2e_summary s = e2e_parse_summary(res.err);
	struct ss_view v = ss_load(out);

	check_roots(&v);
	check_task_profiles_pure(&v);

	/* The spinner never parked: a sample of it is its chain (its worker
	 * stopped in time) or a failure under the root, nothing else (no
	 * stale saved context). */
	const struct truth_task *spin = NULL;
	for (int e = 0; e < ntable; e++)
		if (strcmp(table[e].state, "running") == 0)
			spin = &table[e];
	cr_assert_not_null(spin, "no running task in the table");
	const cJSON *spinner = task_profile(&v, spin->name);
	const cJSON *sample;
	double ran = 0, failed = 0, other = 0;
	char other_text[1024] = "";
	int i = 0;
	cr_assert_not_null(spinner, "no profile for %s", spin->name);
	cJSON_ArrayForEach(sample, cJSON_GetObjectItem(spinner, "samples")) {
		const char *leaf = ss_frame_at(&v, sample, -1);
		bool chain = ss_depth(sample) == spin->nchain + 1;
		double w = ss_weight(spinner, i++);

		for (int f = 0; chain && f < spin->nchain; f++)
			chain = strcmp(ss_frame_at(&v, sample, f), spin->chain[f]) == 0;
		if (chain && strcmp(leaf, "[running]") == 0) {
			ran += w;
		} else if (strncmp(leaf, "[failed to sample: ", 19) == 0 &&
			   strcmp(ss_frame_at(&v, sample, 0), ROOT_FUNCTION) == 0) {
			failed += w;
		} else {
			if (other == 0)
				snprintf(other_text, sizeof(other_text), "%s",
					 ss_stack_text(&v, sample));
			other += w;
		}
	}
	cr_log_info("starved spinner: %.2f s sampled, %.2f s failed to sample, "
		    "%.2f s other", ran, failed, other);
	cr_expect(other == 0, "%s: %.3f s of samples neither its chain nor a "
		  "failure under " ROOT_FUNCTION ", e.g. %s", spin->name, other,
		  other_text);

	/* Nothing dropped: every task (and the idle worker) at every tick. */
	const cJSON *profile;
	double expected = (double)(s.ticks + s.missed) / RATE_HZ;
	cr_expect_eq(cJSON_GetArraySize(v.profiles), ntable + 1,
		     "%d profiles, expected %d tasks + 1 idle worker",
		     cJSON_GetArraySize(v.profiles), ntable);
	cJSON_ArrayForEach(profile, v.profiles)
		cr_expect(fabs(ss_profile_weight(profile) - expected) < 1e-6,
			  "profile %s: %.3f s, expected every tick's weight, %.3f s",
			  ss_profile_name(profile), ss_profile_weight(profile), expected);
	cr_expect_eq(s.samples, (long)(ntable + 1) * s.ticks,
		     "%ld samples in %ld ticks: not %d per tick (a task was dropped)",
		     s.samples, s.ticks, ntable + 1);
	cr_assert(e2e_running_not_stopped(target.pid, 5, 50),
		  "target stopped or gone after wallspy finished");
}

/* --- the seed's workloads --- */

/* greenrt's worker count (default: max(2, CPUs)), fixed for the
 * arithmetic below. */
static void two_workers(void)
{
	setenv("GREENRT_WORKERS", "2", 1);
}

/* Records a workload (on two workers) to its end: the target exits 0, and
 * the profile keeps the root-frame contract (check_roots). The summary in
 * *summary when not NULL. */
static struct ss_view record_workload(const char *const opts[],
				      const char *const target[],
				      struct e2e_summary *summary)
{
	const char *out;

	two_workers();
	e2e_become_subreaper();
	struct e2e_result res = record(opts, target, &out);
	struct e2e_summary s = e2e_parse_summary(res.err);
	cr_assert_str_eq(s.target, "target exited with status 0", "stderr: %s",
			 res.err);
	if (summary)
		*summary = s;
	struct ss_view v = ss_load(out);
	check_roots(&v);
	return v;
}

/* Workload 1 (a_bunch_of_tasks_waiting_on_channel, 1024 tasks and 10 ms
 * per put in the seed; 150 tasks here, same timings, ~1.5 s): most task
 * time is parked receiving, under greenrt_chan_recv. */
Test(e2e_green, w1_channel_share, .timeout = 90, .fini = e2e_cleanup_adopting)
{
	const char *opts[] = { NULL };
	const char *target[] = { e2e_fixture("greenrt/greenrt_w1_channel"), "150",
				 NULL };
	double tasks = 0, in_recv = 0, waiting_recv = 0;

	struct ss_view v = record_workload(opts, target, NULL);
	SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {

		if (is_idle_sample(&v, sample))
			continue;
		tasks += w;
		if (ss_has(&v, sample, "greenrt_chan_recv"))
			in_recv += w;
		if (strcmp(ss_frame_at(&v, sample, -1), "[waiting: chan receive]") == 0)
			waiting_recv += w;
	}
	cr_log_info("w1: %.1f %% of %.2f s of task samples under greenrt_chan_recv, "
		    "%.1f %% [waiting: chan receive]", 100 * in_recv / tasks, tasks,
		    100 * waiting_recv / tasks);
	cr_assert_gt(tasks, 0);
	cr_assert_geq(in_recv, 0.80 * tasks,
		      "only %.1f %% of task weight under greenrt_chan_recv",
		      100 * in_recv / tasks);
	cr_assert_geq(waiting_recv, 0.75 * tasks,
		      "only %.1f %% of task weight in [waiting: chan receive]",
		      100 * waiting_recv / tasks);
}

/*
 * Workload 2 (a_lot_of_short_lived_tasks: 65536 tasks spawned at once, then
 * 100 us of busy-wait per task; 16384 here, ~2 s, enough that thousands
 * are still alive at the first tick, 10 ms in). The seed's point: tasks
 * that are gone or not yet running must show as such, not vanish.
 *
 * wallspy reads greenrt's registry with the whole target stopped, so a
 * listed task cannot vanish before its sample (Julia's "failed to sample"
 * mostly becomes "not started yet" here): the short-lived tasks' samples
 * must be mostly [not started] or [failed to sample: ...], under
 * greenrt_task_main;do_nothing like any other sample of them.
 *
 * "Every live task at every tick is accounted" cannot be seen tick by tick
 * in a profile, so it is checked through what is known at every tick:
 *  - --max-pause 0: no pause budget, so every listed task is sampled (not
 *    a weighted random subset) and every weight is a whole number of ticks
 *    (a sample weighs 1/rate, (1 + missed)/rate after missed ticks);
 *  - the root task "main" is alive during the whole run, so its weight is
 *    (ticks + missed) / rate (within the ticks before it started or after
 *    it ended) — the recording's sampled time, which the summary's seconds
 *    must match;
 *  - each of the two workers is at every tick either running a task
 *    ([running] or [syscall: ...] leaf, or [failed to sample: ended while
 *    running] for a task on it at the list that ended before its thread
 *    was held) or an [idle worker]: those leaves add up to 2 x main's
 *    weight;
 *  - the summed weight is at least samples / rate (no sample weighs less
 *    than a tick) and exactly that when no tick was missed.
 */
Test(e2e_green, w2_short_lived_accounting, .timeout = 90,
     .fini = e2e_cleanup_adopting)
{
	const char *opts[] = { "--group-by", "task", "--max-pause", "0",
			       "--max-cpu", "0", NULL };
	const char *target[] = { e2e_fixture("greenrt/greenrt_w2_short_lived"),
				 "16384", NULL };
	double total = 0, main_weight = 0, on_worker = 0;
	double short_total = 0, short_unsampled = 0, short_not_started = 0;
	double first_tick = 1e9;
	int short_tasks = 0, foreign = 0;
	char foreign_text[1024] = "";

	struct e2e_summary s;
	struct ss_view v = record_workload(opts, target, &s);
	SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {
		const char *name = ss_profile_name(profile);
		const char *leaf = ss_frame_at(&v, sample, -1);

		cr_assert(ss_whole_ticks(w, RATE_HZ), "profile %s: weight %.6f s is not a whole "
			  "number of %d Hz ticks", name, w, RATE_HZ);
		total += w;
		if (e2e_match(name, "^task 1 \"main\"$"))
			main_weight += w;
		if (strcmp(leaf, "[running]") == 0 || strcmp(leaf, IDLE_LEAF) == 0 ||
		    strncmp(leaf, "[syscall: ", 10) == 0 ||
		    strcmp(leaf, "[failed to sample: ended while running]") == 0)
			on_worker += w;
		if (!e2e_match(name, "\"short_lived\"$"))
			continue;
		if (sample == cJSON_GetObjectItem(profile, "samples")->child) {
			short_tasks++;
			first_tick = fmin(first_tick,
					  cJSON_GetObjectItem(profile, "startValue")->valuedouble);
		}
		short_total += w;
		if (strcmp(leaf, "[not started]") == 0 ||
		    strncmp(leaf, "[failed to sample: ", 19) == 0)
			short_unsampled += w;
		/* Not started: its entry under the root, nothing else. */
		if (ss_depth(sample) == 3 && strcmp(leaf, "[not started]") == 0 &&
		    strcmp(ss_frame_at(&v, sample, 0), ROOT_FUNCTION) == 0 &&
		    strcmp(ss_frame_at(&v, sample, 1), "do_nothing") == 0)
			short_not_started += w;
		/* A short-lived task's sample is in do_nothing, a failure, or
		 * the instant its worker switches in (on its stack, in the
		 * runtime's switch code, before the entry is called). */
		bool switching_in = strcmp(leaf, "[running]") == 0 &&
				    ss_depth(sample) <= 4 &&
				    strcmp(ss_frame_at(&v, sample, 0), ROOT_FUNCTION) == 0;
		if (!ss_has(&v, sample, "do_nothing") && !switching_in &&
		    strncmp(leaf, "[failed to sample: ", 19) != 0 &&
		    !foreign++)
			snprintf(foreign_text, sizeof(foreign_text), "%s: %s", name,
				 ss_stack_text(&v, sample));
	}
	cr_expect_eq(foreign, 0, "%d samples in short-lived tasks' profiles are "
		     "not theirs (no do_nothing frame); first: %s", foreign,
		     foreign_text);
	check_task_profiles_pure(&v);
	double sampled_time = (double)(s.ticks + s.missed) / RATE_HZ;

	cr_log_info("w2: %d short-lived tasks seen, %.2f s; %.1f %% not started "
		    "or failed (%.1f %% as root;do_nothing;[not started]); main %.2f s "
		    "of %.2f s sampled; workers %.2f s; total %.2f s for %ld samples, "
		    "%ld missed ticks", short_tasks, short_total,
		    100 * short_unsampled / short_total,
		    100 * short_not_started / short_total, main_weight, sampled_time,
		    on_worker, total, s.samples, s.missed);

	/* Seen, explicitly, and mostly before they ran. */
	cr_assert_gt(short_tasks, 0, "no short-lived task in the profile (all "
		     "done before the first tick?)");
	cr_log_info("w2: first short-lived sample at %.3f s", first_tick);
	cr_expect_leq(short_tasks, 16384);
	cr_expect_geq(short_unsampled, 0.80 * short_total,
		      "%.1f %% of the short-lived tasks' weight is not-started or "
		      "failed", 100 * short_unsampled / short_total);
	cr_expect_geq(short_not_started, 0.80 * short_total,
		      "%.1f %% of the short-lived tasks' weight is "
		      ROOT_FUNCTION ";do_nothing;[not started]",
		      100 * short_not_started / short_total);

	/* Tick accounting. */
	cr_expect(fabs(sampled_time - s.seconds) <= 0.1 * s.seconds + 0.05,
		  "(%ld ticks + %ld missed) / %d Hz = %.2f s, but the run took %.2f s",
		  s.ticks, s.missed, RATE_HZ, sampled_time, s.seconds);
	cr_expect_leq(main_weight, sampled_time + 1e-6);
	cr_expect_geq(main_weight, 0.95 * sampled_time - 3.0 / RATE_HZ,
		      "main: %.3f s of %.3f s sampled", main_weight, sampled_time);
	cr_expect(fabs(on_worker - 2 * main_weight) <= 0.03 * 2 * main_weight +
							  4.0 / RATE_HZ,
		  "running + idle workers %.3f s, expected 2 x %.3f s", on_worker,
		  main_weight);
	cr_expect_geq(total * RATE_HZ, (double)s.samples - 1e-6,
		      "%.3f s for %ld samples: some sample weighs less than a tick",
		      total, s.samples);
	if (s.missed == 0)
		cr_expect(fabs(total * RATE_HZ - (double)s.samples) < 1e-3,
			  "no missed tick, yet %.3f s for %ld samples", total,
			  s.samples);
}

/* Workload 3 (compute_heavy: 4096 tasks x 2^22 square roots and one task
 * on a channel in the seed; 256 x 2^19 here, ~1 s on two workers): most
 * task time is in sum_of_sqrt, running or yielded between slices. */
Test(e2e_green, w3_compute_share, .timeout = 90, .fini = e2e_cleanup_adopting)
{
	const char *opts[] = { NULL };
	/* ~2 s: with the default CPU budget a tick samples 32 of the 258
	 * tasks, at 35 to 55 Hz (a tick of them costs more than 2 % of a
	 * core allows at 100 Hz: the ticks are spaced), so the one channel
	 * waiter needs ~80 ticks to show up for sure: in 25 it goes
	 * unsampled with probability (1 - 32/258)^25, about 4 %, in 70 about
	 * 0.01 % (at ~1 s and 40 of 257 a tick, a full run of the suite once
	 * missed it). */
	const char *target[] = { e2e_fixture("greenrt/greenrt_w3_compute"), "256",
				 "4194304", NULL };
	double tasks = 0, in_sqrt = 0, channel_waiter = 0;

	struct ss_view v = record_workload(opts, target, NULL);
	SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {

		if (is_idle_sample(&v, sample))
			continue;
		tasks += w;
		if (ss_has(&v, sample, "sum_of_sqrt"))
			in_sqrt += w;
		if (ss_has(&v, sample, "take_from_channel") &&
		    strcmp(ss_frame_at(&v, sample, -1), "[waiting: chan receive]") == 0)
			channel_waiter += w;
	}
	cr_log_info("w3: %.1f %% of %.2f s of task samples under sum_of_sqrt; "
		    "channel waiter %.2f s", 100 * in_sqrt / tasks, tasks,
		    channel_waiter);
	cr_assert_gt(tasks, 0);
	cr_assert_geq(in_sqrt, 0.80 * tasks,
		      "only %.1f %% of task weight under sum_of_sqrt",
		      100 * in_sqrt / tasks);
	cr_assert_gt(channel_waiter, 0, "the task parked on the channel is missing");
}

/*
 * A tick of the fewest tasks (32 of 258) costs more than --max-cpu 0.5 %
 * allows at 100 Hz (50 us a tick; it costs a few hundred): the ticks are
 * spaced, the rate they came to is said once at the end, and each tick's
 * samples stand for the intervals since the one before, so the profile
 * still holds 258 tasks for the whole recording (256 compute tasks, the
 * channel waiter and the root, by the fixture's construction; none ends
 * within the 3 s).
 */
Test(e2e_green, ticks_spaced_by_their_cost, .timeout = 90,
     .fini = e2e_cleanup_adopting)
{
	const char *opts[] = { "-d", "3", "--max-cpu", "0.5", NULL };
	const char *target[] = { e2e_fixture("greenrt/greenrt_w3_compute"), "256",
				 "100000000000", NULL };
	const char *out;
	double tasks = 0;

	two_workers();
	e2e_become_subreaper();
	struct e2e_result res = record(opts, target, &out);
	struct e2e_summary s = e2e_parse_summary(res.err);
	const char *note = strstr(res.err, "a tick cost more than --max-cpu 0.5 % allows at 100 Hz");
	cr_assert(note, "no word of the spacing:\n%s", res.err);
	cr_assert_not_null(strstr(note, "ticks spaced to"), "%s", res.err);
	cr_assert_null(strstr(strstr(note, "ticks spaced to") + 1, "ticks spaced to"),
		       "said twice:\n%s", res.err);
	cr_assert_null(strstr(res.err, "falling behind"),
		       "spacing taken for lateness:\n%s", res.err);
	cr_assert_eq(s.tasks, 258, "%s", s.line);
	/* 100 Hz would be 300 ticks. */
	cr_assert(s.ticks >= 5 && s.ticks <= 150, "%s", s.line);
	struct ss_view v = ss_load(out);
	SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {
		if (!is_idle_sample(&v, sample))
			tasks += w;
	}
	/* The ticks cover the recording but its last partial interval. */
	double expected = 258 * s.seconds;
	cr_assert(tasks > 0.9 * expected && tasks < 1.02 * expected,
		  "%.1f task-seconds, %.1f expected: %s", tasks, expected, s.line);
}

/* --- frames of running tasks --- */

struct code_range {
	unsigned long lo, hi;
};

/* Executable mappings of pid (r-xp), vdso included. */
static int code_ranges(pid_t pid, struct code_range *out, int max)
{
	char path[64], line[512];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	while (n < max && fgets(line, sizeof(line), f)) {
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &out[n].lo, &out[n].hi, perms) == 3 &&
		    perms[2] == 'x')
			n++;
	}
	fclose(f);
	return n;
}

/* Every frame of every task, the running ones included (unwound from live
 * registers through libc and the vDSO), is a code address of the target:
 * an unwinder that reads a wrong stack slot shows a heap or stack address
 * instead of the caller (seen: greenrt_now_ns replaced by a [heap]
 * address under __clock_gettime). w1's root task busy-waits on
 * clock_gettime, so several dumps catch it there. */
Test(e2e_green, running_task_frames_are_code, .timeout = 60, .fini = e2e_cleanup)
{
	char *argv[] = { (char *)e2e_fixture("greenrt/greenrt_w1_channel"), "3000",
			 NULL };
	struct code_range ranges[256];
	int in_clock_gettime = 0;

	two_workers();
	struct e2e_proc proc = e2e_spawn(argv, NULL);
	/* Running: its threads are up (main, the second worker, the IO
	 * poller) and the root task has spawned the receivers and
	 * busy-waits, burning CPU (the spawning takes a few ms of it). */
	double deadline = e2e_now() + 10;
	while (e2e_tids(proc.pid, (pid_t[8]){0}, 8) < 3 && e2e_now() < deadline)
		e2e_sleep_ms(2);
	cr_assert_geq(e2e_tids(proc.pid, (pid_t[8]){0}, 8), 3,
		      "greenrt_w1_channel did not start its threads");
	cr_assert(e2e_wait_cpu(proc.pid, 0, 0.1, 10000),
		  "greenrt_w1_channel does not run");
	int nranges = code_ranges(proc.pid, ranges, 256);
	for (int attempt = 0; attempt < 8; attempt++) {
		struct e2e_result res = run_dump(proc.pid, true, NULL, NULL);
		cJSON *root = e2e_parse_json(res.out);
		const cJSON *task;

		cr_assert_not_null(root, "not JSON:\n%s", res.out);
		cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks")) {
			const cJSON *frames = cJSON_GetObjectItem(task, "frames");
			const cJSON *frame;

			cJSON_ArrayForEach(frame, frames) {
				unsigned long address = strtoul(str_of(frame, "address"),
								NULL, 16);
				const char *fn = str_of(frame, "function");
				bool code = false;

				for (int r = 0; r < nranges && !code; r++)
					code = address >= ranges[r].lo &&
					       address < ranges[r].hi;
				cr_assert(code, "task %s (%s): frame %s at %#lx is not in "
					  "any executable mapping; frames: %s",
					  str_of(task, "name"), str_of(task, "state"),
					  fn ? fn : "(no symbol)", address,
					  dump_frames_text(frames));
				in_clock_gettime += fn && strstr(fn, "clock_gettime");
			}
		}
	}
	cr_log_info("frames in clock_gettime seen: %d", in_clock_gettime);
	cr_expect_gt(in_clock_gettime, 0, "no dump caught the root task in "
		     "clock_gettime: the vDSO path was not exercised");
	cr_assert(e2e_running_not_stopped(proc.pid, 3, 50));
}

/*
 * A running task whose worker is caught switching into it: swapcontext has
 * loaded the task's saved stack pointer but not yet jumped to its saved pc,
 * so the word at the stack pointer is no return address, and the live
 * registers do not unwind (CI once saw "unwind failed: a return address
 * outside code;__swapcontext;[running]" in w3_compute_share). gdb stops
 * greenrt_w3_compute's worker right there (greenrt_stop_switching_in.py:
 * a breakpoint on swapcontext taken when it switches into a task that ran
 * before, stepped until the stack pointer is the task's saved one, that
 * thread resumed with SIGSTOP, gdb detached from the group stop), and
 * wallspy dumps the stopped process: the task is running on that thread,
 * and its stack, from its saved context, is whole: sum_of_sqrt under
 * greenrt_task_main, as the fixture builds every compute task.
 */
Test(e2e_green, running_task_caught_switching_in, .timeout = 120,
     .fini = e2e_cleanup_adopting)
{
	if (access("/usr/bin/gdb", X_OK) != 0)
		cr_skip_test("no gdb (tools/setup-deps installs it)");
	const char *done = e2e_path(e2e_tmpdir(), "done");
	char script[512], line[256], in[64] = "";
	snprintf(script, sizeof(script),
		 "%s/tests/e2e/greenrt_stop_switching_in.py", WS_SOURCE_DIR);
	e2e_become_subreaper();
	cr_assert_eq(setenv("WALLSPY_TEST_DONE", done, 1), 0);
	char *argv[] = { "/usr/bin/gdb", "-q", "-batch", "-nx",
			 "-ex", "set pagination off", "-ex", "set confirm off",
			 "-ex", "set scheduler-locking step",
			 "-x", script, "--args",
			 (char *)e2e_fixture("greenrt/greenrt_w3_compute"), "16",
			 "100000000000", NULL };
	struct e2e_proc gdb = e2e_spawn(argv, &(struct e2e_spawn_opts){
		.pipe_stdout = true });
	cr_assert(e2e_wait_line_prefix(gdb.out_fd, "WALLSPY-TEST ", line,
				       sizeof(line), 60000),
		  "gdb never stopped a worker switching into a task");
	int pid = 0, tid = 0;
	long id = -1;
	unsigned long long word = 0;
	cr_assert_eq(sscanf(line, "WALLSPY-TEST pid=%d tid=%d id=%ld word=%llx "
			    "in=%63s", &pid, &tid, &id, &word, in),
		     5, "gdb said: %s", line);
	cr_log_info("%s", line);
	cr_assert(strstr(in, "swapcontext"),
		  "the worker is not in swapcontext with the task's stack "
		  "pointer: %s", line);
	cr_assert(e2e_wait_proc_state(pid, 'T', 5000),
		  "program %d not stopped after gdb detached (state %c)", pid,
		  e2e_proc_state(pid, pid));

	const char *opts[] = { "--runtime", WS_SOURCE_DIR
			       "/fixtures/greenrt/greenrt.wallspy.json", NULL };
	cJSON *root = e2e_dump_json(pid, opts);
	const cJSON *task = NULL, *t;
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(root, "tasks"))
		if ((long)cJSON_GetObjectItem(t, "id")->valuedouble == id)
			task = t;
	cr_assert_not_null(task, "task %ld not in the dump", id);
	const cJSON *frames = cJSON_GetObjectItem(task, "frames");
	const char *text = dump_frames_text(frames);
	cr_log_info("task %ld [%s]: %s", id, str_of(task, "state"), text);
	cr_expect_str_eq(str_of(task, "state"), "running");
	const cJSON *thread = cJSON_GetObjectItem(task, "thread");
	cr_expect(e2e_json_is_integer(thread) && (int)thread->valuedouble == tid,
		  "task %ld not on thread %d", id, tid);
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(task, "error")),
		  "task %ld failed: %s", id, str_of(task, "error"));
	int n = cJSON_GetArraySize(frames);
	const char *outermost = n ? str_of(cJSON_GetArrayItem(frames, n - 1),
					   "function") : NULL;
	cr_expect(outermost && strcmp(outermost, ROOT_FUNCTION) == 0,
		  "task %ld's stack does not end at " ROOT_FUNCTION ": %s", id,
		  text);
	bool in_sqrt = false;
	for (int i = 0; i < n; i++) {
		const char *fn = str_of(cJSON_GetArrayItem(frames, i), "function");
		in_sqrt |= fn && strcmp(fn, "sum_of_sqrt") == 0;
	}
	cr_expect(in_sqrt, "task %ld is not in sum_of_sqrt: %s", id, text);
	kill(pid, SIGKILL);
	close(open(done, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	int status;
	e2e_wait_timeout(gdb.pid, 10000, &status);
}
