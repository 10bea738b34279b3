/*
 * wallspy_run: the built wallspy, run the ways the tests need (see
 * wallspy_run.h).
 */
#include "wallspy_run.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

enum { MAX_ARGS = 64 };

/* Appends the NULL-terminated list to argv at *n. */
static void append(const char **argv, int *n, const char *const list[])
{
	for (int i = 0; list && list[i]; i++) {
		cr_assert_lt(*n, MAX_ARGS - 1, "too many arguments");
		argv[(*n)++] = list[i];
	}
}

static struct e2e_result run(const char **argv, int n, const char *cwd,
			     int timeout_ms)
{
	struct e2e_result res;

	argv[n] = NULL;
	e2e_run((char *const *)argv, cwd, timeout_ms, &res);
	cr_assert(!res.timed_out, "wallspy %s timed out after %d ms; stderr: %s",
		  argv[1] ? argv[1] : "", timeout_ms, res.err);
	return res;
}

static void expect_code(const struct e2e_result *res, const char *what,
			int code)
{
	cr_assert_eq(e2e_exit_code(res), code,
		     "wallspy %s: status %#x, expected exit %d; stderr: %s", what,
		     res->status, code, res->err);
}

struct e2e_result e2e_wallspy_run(const char *const args[], const char *cwd,
				  int timeout_ms)
{
	const char *argv[MAX_ARGS];
	int n = 0;

	argv[n++] = e2e_wallspy();
	append(argv, &n, args);
	return run(argv, n, cwd, timeout_ms);
}

struct e2e_result e2e_run_dump(pid_t pid, const char *const opts[],
			       const char *cwd, int want_code, int timeout_ms)
{
	const char *argv[MAX_ARGS];
	char pid_text[32];
	int n = 0;

	snprintf(pid_text, sizeof(pid_text), "%d", pid);
	argv[n++] = e2e_wallspy();
	argv[n++] = "dump";
	append(argv, &n, opts);
	argv[n++] = pid_text;
	struct e2e_result res = run(argv, n, cwd, timeout_ms);
	expect_code(&res, "dump", want_code);
	return res;
}

cJSON *e2e_dump_json(pid_t pid, const char *const opts[])
{
	const char *all[MAX_ARGS];
	int n = 0;

	all[n++] = "--json";
	append(all, &n, opts);
	all[n] = NULL;
	struct e2e_result res = e2e_run_dump(pid, all, NULL, 0, 60000);
	cJSON *root = e2e_parse_json(res.out);
	cr_assert_not_null(root, "dump --json is not JSON:\n%.2000s", res.out);
	cr_assert(cJSON_IsArray(cJSON_GetObjectItem(root, "tasks")),
		  "dump --json has no tasks array");
	return root;
}

const cJSON *e2e_dump_task(const cJSON *dump, const char *name)
{
	const cJSON *task, *found = NULL;

	cJSON_ArrayForEach(task, cJSON_GetObjectItem(dump, "tasks")) {
		const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(task, "name"));
		if (n && strcmp(n, name) == 0) {
			cr_assert_null(found, "two tasks named %s", name);
			found = task;
		}
	}
	return found;
}

struct e2e_result e2e_record(const char *const opts[],
			     const char *const target[], const char **out,
			     int timeout_ms)
{
	const char *dir = e2e_tmpdir();
	const char *argv[MAX_ARGS];
	int n = 0;

	*out = e2e_path(dir, "out.json");
	argv[n++] = e2e_wallspy();
	argv[n++] = "record";
	argv[n++] = "-o";
	argv[n++] = *out;
	append(argv, &n, opts);
	argv[n++] = "--";
	append(argv, &n, target);
	struct e2e_result res = run(argv, n, dir, timeout_ms);
	expect_code(&res, "record", 0);
	return res;
}

/* `wallspy attach -o DIR/NAME OPTS... PID` into argv (NULL-terminated) for
 * a fresh directory, returned; the output's path in *out. */
static const char *attach_argv(const char **argv, pid_t pid,
			       const char *const opts[], const char *name,
			       const char **out)
{
	const char *dir = e2e_tmpdir();
	char pid_text[32];
	int n = 0;

	snprintf(pid_text, sizeof(pid_text), "%d", pid);
	*out = e2e_path(dir, name);
	argv[n++] = e2e_wallspy();
	argv[n++] = "attach";
	argv[n++] = "-o";
	argv[n++] = *out;
	append(argv, &n, opts);
	argv[n++] = e2e_strndup(pid_text, strlen(pid_text));
	argv[n] = NULL;
	return dir;
}

struct e2e_result e2e_attach(pid_t pid, const char *const opts[],
			     const char *name, const char **out,
			     int timeout_ms)
{
	const char *argv[MAX_ARGS];
	const char *dir = attach_argv(argv, pid, opts, name, out);
	int n = 0;

	while (argv[n])
		n++;
	struct e2e_result res = run(argv, n, dir, timeout_ms);
	expect_code(&res, "attach", 0);
	return res;
}

struct e2e_proc e2e_spawn_attach(pid_t pid, const char *const opts[],
				 const char *name, const char **out)
{
	const char *argv[MAX_ARGS];
	const char *dir = attach_argv(argv, pid, opts, name, out);
	struct e2e_spawn_opts spawn = { .pipe_stdout = true, .pipe_stderr = true,
					.cwd = dir };
	struct e2e_proc wallspy = e2e_spawn((char *const *)argv, &spawn);

	cr_assert(e2e_wait_traced(pid, wallspy.pid, 10000),
		  "wallspy attach did not seize %d in 10 s", pid);
	return wallspy;
}
