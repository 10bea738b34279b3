/*
 * End-to-end tests of `wallspy dump`: snapshots of fixtures whose stacks,
 * thread names, states and wait reasons are known by construction
 * (fixtures/threads_blocked.c's table, in tests/lib/fixture_truth;
 * fixtures/spin_inline.c's inlined step), checked in both the JSON and the text format, plus the target's
 * health after the dump (still running, not stopped, exits normally). The
 * header against /proc (executable, command line, thread count), the order
 * (main thread first, then ids) and --group against
 * fixtures/threads_same.c (N threads, one stack by construction).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "e2e_util.h"
#include "fixture_truth.h"
#include "wallspy_run.h"

/* `wallspy dump [--json] PID`, exit 0. */
static struct e2e_result run_dump(pid_t pid, bool json)
{
	const char *opts[] = { "--json", NULL };

	return e2e_run_dump(pid, json ? opts : NULL, NULL, 0, 30000);
}

/* --- JSON shape --- */

static const char *str_or_null(const cJSON *obj, const char *key);

static bool is_null_or(const cJSON *item, cJSON_bool (*is)(const cJSON *))
{
	return cJSON_IsNull(item) || is(item);
}

static cJSON_bool is_integer_cb(const cJSON *item)
{
	return e2e_json_is_integer(item);
}

/* Asserts that obj has exactly the keys in `keys` (NULL-terminated). */
static void check_exact_keys(const cJSON *obj, const char *const keys[],
			     const char *what)
{
	int expected = 0;

	cr_assert(cJSON_IsObject(obj), "%s is not an object", what);
	for (; keys[expected]; expected++)
		cr_assert(cJSON_HasObjectItem(obj, keys[expected]),
			  "%s lacks key \"%s\"", what, keys[expected]);
	cr_assert_eq(cJSON_GetArraySize(obj), expected,
		     "%s has %d keys, the contract has %d", what,
		     cJSON_GetArraySize(obj), expected);
}

static void check_frame_shape(const cJSON *frame)
{
	static const char *const keys[] = { "function", "file", "line", "inlined",
					    "address", NULL };
	const cJSON *address = cJSON_GetObjectItem(frame, "address");

	check_exact_keys(frame, keys, "frame");
	cr_assert(is_null_or(cJSON_GetObjectItem(frame, "function"), cJSON_IsString));
	cr_assert(is_null_or(cJSON_GetObjectItem(frame, "file"), cJSON_IsString));
	cr_assert(is_null_or(cJSON_GetObjectItem(frame, "line"), is_integer_cb));
	cr_assert(cJSON_IsBool(cJSON_GetObjectItem(frame, "inlined")));
	cr_assert(cJSON_IsString(address), "address is not a string");
	cr_assert(e2e_match(address->valuestring, "^0x[0-9a-fA-F]+$"),
		  "address \"%s\" is not 0x-hex", address->valuestring);
}

static void check_task_shape(const cJSON *task)
{
	static const char *const keys[] = { "id", "name", "thread", "state",
					    "wait_reason", "error", "not_started",
					    "locked_to_thread", "bubble",
					    "labels", "frames", "created_by",
					    NULL };
	const cJSON *frames = cJSON_GetObjectItem(task, "frames");
	const cJSON *frame;
	const cJSON *labels = cJSON_GetObjectItem(task, "labels");
	const cJSON *label;
	const cJSON *created = cJSON_GetObjectItem(task, "created_by");

	check_exact_keys(task, keys, "task");
	cr_assert(e2e_json_is_integer(cJSON_GetObjectItem(task, "id")));
	cr_assert(is_null_or(cJSON_GetObjectItem(task, "name"), cJSON_IsString));
	cr_assert(is_null_or(cJSON_GetObjectItem(task, "thread"), is_integer_cb));
	cr_assert(cJSON_IsString(cJSON_GetObjectItem(task, "state")));
	cr_assert(is_null_or(cJSON_GetObjectItem(task, "wait_reason"), cJSON_IsString));
	cr_assert(is_null_or(cJSON_GetObjectItem(task, "error"), cJSON_IsString));
	cr_assert(cJSON_IsBool(cJSON_GetObjectItem(task, "not_started")));
	cr_assert(cJSON_IsBool(cJSON_GetObjectItem(task, "locked_to_thread")));
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(task, "bubble")) ||
		  cJSON_IsObject(cJSON_GetObjectItem(task, "bubble")));
	cr_assert(cJSON_IsNull(labels) || cJSON_IsObject(labels));
	if (cJSON_IsObject(labels))
		cJSON_ArrayForEach(label, labels)
			cr_assert(cJSON_IsString(label), "label %s is not a string",
				  label->string);
	if (!cJSON_IsNull(created)) {
		static const char *const created_keys[] = { "function", "file",
							    "line", "parent", NULL };
		check_exact_keys(created, created_keys, "created_by");
		cr_assert(is_null_or(cJSON_GetObjectItem(created, "parent"),
				     is_integer_cb));
	}
	cr_assert(cJSON_IsArray(frames));
	cJSON_ArrayForEach(frame, frames)
		check_frame_shape(frame);
}

/* The process's executable (/proc/PID/exe) and command line
 * (/proc/PID/cmdline, arguments joined by spaces): what the dump's header
 * must say. Strings freed by e2e_cleanup. */
static const char *proc_exe(pid_t pid)
{
	char link[64], buf[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	return e2e_strndup(buf, (size_t)n);
}

static const char *proc_cmdline(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	FILE *f = fopen(path, "r");
	char buf[4096];
	cr_assert_not_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	return e2e_strndup(buf, n);
}

static void check_dump_shape(const cJSON *root, pid_t pid)
{
	static const char *const keys[] = { "pid", "runtime", "executable",
					    "command", "task_count", "held_ms",
					    "took_ms", "tasks", NULL };
	const cJSON *task;

	check_exact_keys(root, keys, "dump");
	cr_assert(e2e_json_is_integer(cJSON_GetObjectItem(root, "pid")));
	cr_assert_eq((pid_t)cJSON_GetObjectItem(root, "pid")->valuedouble, pid);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(root, "runtime")),
			 "threads");
	cr_assert_str_eq(str_or_null(root, "executable"), proc_exe(pid));
	cr_assert_str_eq(str_or_null(root, "command"), proc_cmdline(pid));
	cr_assert(e2e_json_is_integer(cJSON_GetObjectItem(root, "task_count")));
	cr_assert_eq(cJSON_GetObjectItem(root, "task_count")->valuedouble,
		     cJSON_GetArraySize(cJSON_GetObjectItem(root, "tasks")));
	double held = cJSON_GetObjectItem(root, "held_ms")->valuedouble;
	double took = cJSON_GetObjectItem(root, "took_ms")->valuedouble;
	cr_assert(held > 0 && held <= took, "held %g ms, took %g ms", held, took);
	cr_assert(cJSON_IsArray(cJSON_GetObjectItem(root, "tasks")));
	cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks"))
		check_task_shape(task);
}

static const char *str_or_null(const cJSON *obj, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(obj, key));
}

static const cJSON *find_task_by_name(const cJSON *root, const char *name)
{
	const cJSON *task, *found = NULL;

	cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks")) {
		const char *task_name = str_or_null(task, "name");

		if (task_name && strcmp(task_name, name) == 0) {
			cr_assert_null(found, "two tasks named %s", name);
			found = task;
		}
	}
	return found;
}

/* Index of the first frame whose function is fn, or -1. */
static int find_frame(const cJSON *frames, const char *fn)
{
	for (int i = 0; i < cJSON_GetArraySize(frames); i++) {
		const char *f = str_or_null(cJSON_GetArrayItem(frames, i), "function");

		if (f && strcmp(f, fn) == 0)
			return i;
	}
	return -1;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The frame is fn, not inlined, in fixture source `file` with a line. */
static void check_fixture_frame(const cJSON *frame, const char *fn,
				const char *file)
{
	const char *frame_file = str_or_null(frame, "file");
	const cJSON *line = cJSON_GetObjectItem(frame, "line");

	cr_assert(frame_file && ends_with(frame_file, file),
		  "%s: file \"%s\", expected ...%s", fn,
		  frame_file ? frame_file : "(null)", file);
	cr_assert(e2e_json_is_integer(line) && line->valuedouble > 0,
		  "%s: no line number", fn);
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(frame, "inlined")),
		  "%s marked inlined", fn);
}

static void check_blocked_thread(const cJSON *root, pid_t pid,
				 const struct tb_thread *want)
{
	const cJSON *task = find_task_by_name(root, want->name);
	const cJSON *frames;
	const char *state, *reason;
	char comm[64];

	cr_assert_not_null(task, "no task named %s in the dump", want->name);
	frames = cJSON_GetObjectItem(task, "frames");

	/* OS threads: id = tid = thread, name = comm of that tid. */
	pid_t tid = (pid_t)cJSON_GetObjectItem(task, "id")->valuedouble;
	cr_assert(e2e_json_is_integer(cJSON_GetObjectItem(task, "thread")),
		  "%s: thread is null", want->name);
	cr_assert_eq((pid_t)cJSON_GetObjectItem(task, "thread")->valuedouble, tid);
	cr_assert(e2e_thread_comm(pid, tid, comm, sizeof(comm)),
		  "%s: tid %d is not a thread of %d", want->name, tid, pid);
	cr_assert_str_eq(comm, want->name);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(task, "error")),
		  "%s: error \"%s\"", want->name, str_or_null(task, "error"));

	/* Innermost first: inner, then its caller outer right after it. */
	int inner = find_frame(frames, want->inner);
	cr_assert_geq(inner, 0, "%s: no frame %s", want->name, want->inner);
	cr_assert_lt(inner + 1, cJSON_GetArraySize(frames),
		     "%s: nothing after %s", want->name, want->inner);
	const cJSON *caller = cJSON_GetArrayItem(frames, inner + 1);
	cr_assert(str_or_null(caller, "function") &&
		  strcmp(str_or_null(caller, "function"), want->outer) == 0,
		  "%s: %s is followed by %s, expected %s", want->name, want->inner,
		  str_or_null(caller, "function") ? str_or_null(caller, "function")
						  : "(null)",
		  want->outer);
	check_fixture_frame(cJSON_GetArrayItem(frames, inner), want->inner,
			    "threads_blocked.c");
	check_fixture_frame(caller, want->outer, "threads_blocked.c");

	state = str_or_null(task, "state");
	reason = str_or_null(task, "wait_reason");
	if (!want->wait_reason) {
		cr_assert_str_eq(state, "running", "%s: state", want->name);
		cr_assert_null(reason, "%s: running with wait_reason %s",
			       want->name, reason);
		return;
	}
	cr_assert_str_eq(state, "waiting", "%s: state", want->name);
	cr_assert_not_null(reason, "%s: waiting without wait_reason", want->name);
	cr_assert(strcmp(reason, want->wait_reason) == 0 ||
		  (want->wait_reason_alt && strcmp(reason, want->wait_reason_alt) == 0),
		  "%s: wait_reason \"%s\", expected \"%s\"", want->name, reason,
		  want->wait_reason);
}

Test(e2e_dump, json_threads_blocked, .timeout = 60, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_blocked", "50", "ready", 10000);
	struct e2e_result res = run_dump(pid, true);
	cJSON *root = e2e_parse_json(res.out);
	const cJSON *task;
	pid_t tids[64];

	cr_assert_not_null(root, "dump --json output is not JSON:\n%s", res.out);
	check_dump_shape(root, pid);

	for (int i = 0; i < TB_THREADS; i++)
		check_blocked_thread(root, pid, &tb_threads[i]);

	/* Every thread of the target, each once; states are the two OS
	 * thread states, a reason exactly when waiting. */
	int ntids = e2e_tids(pid, tids, 64);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "tasks")), ntids,
		     "%d tasks for %d threads",
		     cJSON_GetArraySize(cJSON_GetObjectItem(root, "tasks")), ntids);
	cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks")) {
		pid_t tid = (pid_t)cJSON_GetObjectItem(task, "id")->valuedouble;
		const char *state = str_or_null(task, "state");
		bool known = false;

		for (int i = 0; i < ntids; i++)
			known |= tids[i] == tid;
		cr_assert(known, "task %d is not a thread of %d", tid, pid);
		cr_assert(strcmp(state, "running") == 0 || strcmp(state, "waiting") == 0,
			  "task %d: state \"%s\"", tid, state);
		cr_assert_eq(strcmp(state, "waiting") == 0,
			     str_or_null(task, "wait_reason") != NULL,
			     "task %d: wait_reason does not match state", tid);
		cr_assert_gt(cJSON_GetArraySize(cJSON_GetObjectItem(task, "frames")), 0,
			     "task %d has no frames", tid);
	}
	/* The main thread is there under its comm. */
	cr_assert_not_null(find_task_by_name(root, "threads_blocked"));

	e2e_check_healthy_then_stop(pid);
}

/* --- text format --- */

/* The lines of the block of the task named name: header first. */
static char **text_block(char *text, const char *name, int *count)
{
	char **lines = calloc(256, sizeof(*lines));
	char quoted[64];
	bool inside = false;
	int n = 0;

	cr_assert_not_null(lines);
	snprintf(quoted, sizeof(quoted), " \"%s\" ", name);
	for (char *line = strtok(text, "\n"); line && n < 256;
	     line = strtok(NULL, "\n")) {
		if (strncmp(line, "task ", 5) == 0)
			inside = strstr(line, quoted) != NULL;
		if (inside)
			lines[n++] = line;
	}
	*count = n;
	return lines;
}

Test(e2e_dump, text_threads_blocked, .timeout = 60, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_blocked", "50", "ready", 10000);
	struct e2e_result res = run_dump(pid, false);
	const char *header_re =
		"^task [0-9]+ \"[^\"]*\" \\[(running|waiting: [a-z0-9_]+)\\] "
		"thread [0-9]+$";
	int headers = 0;

	/* Every line starting with "task " is a well-formed header; one per
	 * thread. */
	char *copy = strdup(res.out);
	for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "task ", 5) != 0)
			continue;
		cr_assert(e2e_match(line, header_re), "bad header: %s", line);
		headers++;
	}
	free(copy);
	pid_t tids[64];
	cr_assert_eq(headers, e2e_tids(pid, tids, 64), "%d headers:\n%s", headers,
		     res.out);

	/* t_pipe: header with the wait reason, then pipe_reader_block
	 * directly followed by pipe_reader_outer, both with file:line. */
	int n;
	char *text = strdup(res.out);
	char **block = text_block(text, "t_pipe", &n);
	cr_assert_geq(n, 3, "no t_pipe block in:\n%s", res.out);
	cr_assert(e2e_match(block[0], "^task ([0-9]+) \"t_pipe\" \\[waiting: read\\] "
			    "thread [0-9]+$"), "t_pipe header: %s", block[0]);
	int id, tid;
	cr_assert_eq(sscanf(block[0], "task %d \"t_pipe\" [waiting: read] thread %d",
			    &id, &tid), 2);
	cr_assert_eq(id, tid, "OS thread: id %d != thread %d", id, tid);
	int inner = -1;
	for (int i = 1; i < n; i++) {
		if (e2e_match(block[i], "^[ \t]*pipe_reader_block "
			      "\\(.*threads_blocked\\.c:[0-9]+\\)$")) {
			inner = i;
			break;
		}
	}
	cr_assert_gt(inner, 0, "no pipe_reader_block line in:\n%s", res.out);
	cr_assert_lt(inner + 1, n);
	cr_assert(e2e_match(block[inner + 1],
			    "^[ \t]*pipe_reader_outer \\(.*threads_blocked\\.c:[0-9]+\\)$"),
		  "after pipe_reader_block: %s", block[inner + 1]);
	free(block);
	free(text);

	/* t_spin: running, no reason. */
	text = strdup(res.out);
	block = text_block(text, "t_spin", &n);
	cr_assert_geq(n, 3, "no t_spin block in:\n%s", res.out);
	cr_assert(e2e_match(block[0], "^task [0-9]+ \"t_spin\" \\[running\\] "
			    "thread [0-9]+$"), "t_spin header: %s", block[0]);
	free(block);
	free(text);

	e2e_check_healthy_then_stop(pid);
}

/* --- inline frames --- */

/* True when frames hold spin_inlined_step [inlined] directly followed by
 * spin_outer (not inlined), with spin_inline.c file/line on both. */
static bool has_inlined_step(const cJSON *frames)
{
	for (int i = 0; i + 1 < cJSON_GetArraySize(frames); i++) {
		const cJSON *step = cJSON_GetArrayItem(frames, i);
		const cJSON *outer = cJSON_GetArrayItem(frames, i + 1);
		const char *step_fn = str_or_null(step, "function");
		const char *outer_fn = str_or_null(outer, "function");

		if (!step_fn || strcmp(step_fn, "spin_inlined_step") != 0)
			continue;
		cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(step, "inlined")),
			  "spin_inlined_step not marked inlined");
		cr_assert(outer_fn && strcmp(outer_fn, "spin_outer") == 0,
			  "spin_inlined_step followed by %s",
			  outer_fn ? outer_fn : "(null)");
		cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(outer, "inlined")),
			  "spin_outer marked inlined");
		const char *file = str_or_null(step, "file");
		cr_assert(file && ends_with(file, "spin_inline.c"),
			  "inlined frame file %s", file ? file : "(null)");
		check_fixture_frame(outer, "spin_outer", "spin_inline.c");
		return true;
	}
	return false;
}

#define STEP_RE "spin_inlined_step \\([^)]*spin_inline\\.c:[0-9]+\\)"

Test(e2e_dump, inline_frames, .timeout = 60, .fini = e2e_cleanup)
{
	char *argv[] = { (char *)e2e_fixture("spin_inline"), "50", NULL };
	struct e2e_proc proc = e2e_spawn(argv, NULL);
	bool json_found = false, text_found = false;

	/* In its loop once it has spun for a while (start-up takes ~1 ms of
	 * CPU). The pc is inside the inlined step nearly always, but not at
	 * every instant: retry. */
	cr_assert(e2e_wait_cpu(proc.pid, 0, 0.05, 10000),
		  "spin_inline does not spin");
	for (int attempt = 0; attempt < 20 && !json_found; attempt++) {
		struct e2e_result res = run_dump(proc.pid, true);
		cJSON *root = e2e_parse_json(res.out);

		cr_assert_not_null(root, "not JSON:\n%s", res.out);
		check_dump_shape(root, proc.pid);
		const cJSON *task = find_task_by_name(root, "spin_inline");
		cr_assert_not_null(task, "no task spin_inline");
		cr_assert_str_eq(str_or_null(task, "state"), "running");
		json_found = has_inlined_step(cJSON_GetObjectItem(task, "frames"));
	}
	cr_assert(json_found, "no spin_inlined_step [inlined] frame in 20 dumps");

	for (int attempt = 0; attempt < 20 && !text_found; attempt++) {
		struct e2e_result res = run_dump(proc.pid, false);

		/* "[inlined]" may come before or after the frame text. */
		text_found = e2e_match(res.out,
			"^[ \t]*(\\[inlined\\] " STEP_RE "|" STEP_RE " \\[inlined\\])\n"
			"[ \t]*spin_outer \\(.*spin_inline\\.c:[0-9]+\\)$");
	}
	cr_assert(text_found, "no \"spin_inlined_step (...) [inlined]\" line "
		  "followed by spin_outer in 20 text dumps");

	cr_assert(e2e_running_not_stopped(proc.pid, 3, 50));
}

/* --- header, order, groups --- */

/* The header: "process PID: COMMAND", then "executable EXE, runtime R, N
 * tasks, held X ms, took Y ms" with the truth from /proc; the main thread's
 * block first, then ascending ids; the same order in JSON. */
Test(e2e_dump, header_and_order, .timeout = 60, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_blocked", "50", "ready", 10000);
	struct e2e_result res = run_dump(pid, false);
	pid_t tids[64];
	int ntids = e2e_tids(pid, tids, 64);
	char *text = strdup(res.out);
	char *line2, want[4300];
	double held, took;

	cr_assert_not_null(text);
	line2 = strchr(text, '\n');
	cr_assert_not_null(line2);
	*line2++ = '\0';
	*strchr(line2, '\n') = '\0';
	snprintf(want, sizeof(want), "process %d: %s", pid, proc_cmdline(pid));
	cr_assert_str_eq(text, want);
	snprintf(want, sizeof(want), "executable %s, runtime threads, %d tasks, ",
		 proc_exe(pid), ntids);
	cr_assert(strncmp(line2, want, strlen(want)) == 0, "header \"%s\", expected \"%s...\"",
		  line2, want);
	cr_assert_eq(sscanf(line2 + strlen(want), "held %lf ms, took %lf ms", &held, &took), 2,
		     "header \"%s\"", line2);
	cr_assert(held > 0 && held <= took && took <= res.seconds * 1000,
		  "held %g ms, took %g ms, wallspy ran %g s", held, took, res.seconds);
	free(text);

	/* Text blocks: the main thread, then ids ascending. */
	long prev = -1;
	int blocks = 0;
	text = strdup(res.out);
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		long id;
		if (sscanf(l, "task %ld ", &id) != 1)
			continue;
		if (blocks++ == 0)
			cr_assert_eq(id, pid, "first block is task %ld, not the main thread", id);
		else
			cr_assert_gt(id, prev, "task %ld after %ld", id, prev);
		prev = blocks == 1 ? 0 : id;
	}
	free(text);
	cr_assert_eq(blocks, ntids);

	/* JSON: the same order. */
	cJSON *root = e2e_dump_json(pid, NULL);
	const cJSON *task;
	prev = -1;
	blocks = 0;
	cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks")) {
		long id = (long)cJSON_GetObjectItem(task, "id")->valuedouble;
		if (blocks++ == 0)
			cr_assert_eq(id, pid);
		else
			cr_assert_gt(id, prev);
		prev = blocks == 1 ? 0 : id;
	}
	cr_assert_null(cJSON_GetObjectItem(root, "groups"), "groups without --group");
	e2e_check_healthy_then_stop(pid);
}

/* Ascending tids of pid's threads named comm; returns their count. */
static int tids_named(pid_t pid, const char *comm, long *out, int max)
{
	pid_t tids[256];
	int n = e2e_tids(pid, tids, 256), k = 0;
	char name[64];

	for (int i = 0; i < n; i++)
		if (e2e_thread_comm(pid, tids[i], name, sizeof(name)) &&
		    strcmp(name, comm) == 0 && k < max)
			out[k++] = tids[i];
	for (int i = 1; i < k; i++)
		for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
			long t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return k;
}

static bool same_frames(const cJSON *a, const cJSON *b)
{
	char *x = cJSON_PrintUnformatted(a), *y = cJSON_PrintUnformatted(b);
	bool same = strcmp(x, y) == 0;

	free(x);
	free(y);
	return same;
}

/* --group: threads_same's 12 workers share one stack by construction: one
 * block "12 tasks "same_worker" [waiting: read]: ID, ..." listing the 10
 * lowest tids and "and 2 more", after the main thread's; in JSON, groups
 * of counts 1 (the main thread) and 12 (exactly the workers' tids), each
 * with the frames of every member's own entry in "tasks". */
Test(e2e_dump, group_identical_stacks, .timeout = 60, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_same", "12", "ready", 10000);
	long workers[64];
	int nworkers = tids_named(pid, "same_worker", workers, 64);
	const char *group[] = { "--group", NULL };
	struct e2e_result res = e2e_run_dump(pid, group, NULL, 0, 30000);
	char want[1024];
	int len;

	cr_assert_eq(nworkers, 12);
	len = snprintf(want, sizeof(want), "\n12 tasks \"same_worker\" [waiting: read]:");
	for (int i = 0; i < 10; i++)
		len += snprintf(want + len, sizeof(want) - len, "%s %ld", i ? "," : "",
				workers[i]);
	snprintf(want + len, sizeof(want) - len, " and 2 more\n");
	cr_assert_not_null(strstr(res.out, want), "no \"%s\" in:\n%s", want + 1, res.out);
	snprintf(want, sizeof(want), "\n\ntask %d \"threads_same\" ", pid);
	cr_assert_lt(strstr(res.out, want) - res.out,
		     strstr(res.out, "\n12 tasks ") - res.out, "main thread not first");
	cr_assert(e2e_match(res.out, ", 13 tasks in 2 stacks, "), "%s", res.out);
	cr_assert(e2e_match(res.out, "^    same_worker_block \\(.*threads_same\\.c:[0-9]+\\)$"));

	cJSON *root = e2e_dump_json(pid, group);
	const cJSON *groups = cJSON_GetObjectItem(root, "groups");
	cr_assert_eq(cJSON_GetArraySize(groups), 2);
	const cJSON *main_group = cJSON_GetArrayItem(groups, 0);
	const cJSON *workers_group = cJSON_GetArrayItem(groups, 1);
	cr_assert_eq(cJSON_GetObjectItem(main_group, "count")->valuedouble, 1);
	cr_assert_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(main_group, "ids"), 0)->valuedouble,
		     pid);
	cr_assert_eq(cJSON_GetObjectItem(workers_group, "count")->valuedouble, 12);
	const cJSON *ids = cJSON_GetObjectItem(workers_group, "ids");
	cr_assert_eq(cJSON_GetArraySize(ids), 12);
	for (int i = 0; i < 12; i++)
		cr_assert_eq((long)cJSON_GetArrayItem(ids, i)->valuedouble, workers[i]);
	cr_assert_str_eq(str_or_null(workers_group, "wait_reason"), "read");
	const cJSON *g;
	cJSON_ArrayForEach(g, groups) {
		const cJSON *id;
		cJSON_ArrayForEach(id, cJSON_GetObjectItem(g, "ids")) {
			const cJSON *task;
			bool found = false;
			cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks"))
				if (cJSON_GetObjectItem(task, "id")->valuedouble == id->valuedouble) {
					found = true;
					cr_assert(same_frames(cJSON_GetObjectItem(task, "frames"),
							      cJSON_GetObjectItem(g, "frames")),
						  "task %g's frames are not its group's", id->valuedouble);
				}
			cr_assert(found, "group member %g is no task", id->valuedouble);
		}
	}
	e2e_check_healthy_then_stop(pid);
}

/* dump of a process that does not exist: exit 3, one "wallspy: " line. */
Test(e2e_dump, no_such_process, .timeout = 60, .fini = e2e_cleanup)
{
	char *child_argv[] = { (char *)e2e_fixture("exit_now"), NULL };
	struct e2e_proc child = e2e_spawn(child_argv, NULL);
	int status;
	const char *opts[] = { "--json", NULL };

	cr_assert(e2e_wait_timeout(child.pid, 5000, &status));
	struct e2e_result res = e2e_run_dump(child.pid, opts, NULL, 3, 30000);
	cr_assert(e2e_is_one_error_line(res.err),
		  "stderr is not one \"wallspy: \" line: %s", res.err);
	char want[64];
	snprintf(want, sizeof(want), "wallspy: dump %d: ", child.pid);
	cr_assert(strncmp(res.err, want, strlen(want)) == 0,
		  "the error does not name dump: %s", res.err);
}
