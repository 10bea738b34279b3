/*
 * End-to-end tests of wallspy's failure paths: the documented exit codes
 * (2 usage, 3 no such process / command not found, 5 target exited before
 * a sample, 6 cannot write output), the one-line "wallspy: " error message,
 * no output or temporary file left behind, and --help / --version.
 * Every wallspy here runs in a fresh temporary directory as its cwd, so
 * stray files are seen.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "e2e_util.h"
#include "wallspy_run.h"

/* Runs wallspy with args (NULL-terminated, without argv[0]) in dir. */
static struct e2e_result run_wallspy(const char *dir, const char *const args[])
{
	return e2e_wallspy_run(args, dir, 30000);
}

/* Exit code `code` and the error as one "wallspy: " line on stderr. */
static void check_error(const struct e2e_result *res, int code, const char *what)
{
	cr_assert_eq(e2e_exit_code(res), code,
		     "%s: exit %d (status 0x%x), expected %d; stderr: %s", what,
		     e2e_exit_code(res), res->status, code, res->err);
	cr_assert(e2e_is_one_error_line(res->err),
		  "%s: stderr is not one \"wallspy: \" line: \"%s\"", what, res->err);
}

/* For errors after sampling ran: warnings may precede the error, so only
 * require that every stderr line is a "wallspy: " line (the status line
 * is cleared, not left behind) and the last one names the output. */
static void check_error_after_sampling(const struct e2e_result *res, int code,
				       const char *what, const char *output)
{
	cr_assert_eq(e2e_exit_code(res), code,
		     "%s: exit %d (status 0x%x), expected %d; stderr: %s", what,
		     e2e_exit_code(res), res->status, code, res->err);
	const char *last = NULL;
	for (const char *line = res->err; *line; line = strchr(line, '\n') + 1) {
		cr_assert(strncmp(line, "wallspy: ", 9) == 0 && strchr(line, '\n'),
			  "%s: stderr has a line that is not a \"wallspy: \" line: "
			  "\"%s\"", what, res->err);
		last = line;
	}
	cr_assert_not_null(last, "%s: nothing on stderr", what);
	cr_assert(strstr(last, output), "%s: the last line does not name %s: %s",
		  what, output, last);
}

/* A PID that no process has: a child of ours, exited and reaped. */
static pid_t dead_pid(void)
{
	char *argv[] = { (char *)e2e_fixture("exit_now"), NULL };
	struct e2e_proc child = e2e_spawn(argv, NULL);
	int status;

	cr_assert(e2e_wait_timeout(child.pid, 5000, &status));
	return child.pid;
}

Test(e2e_errors, attach_no_such_process, .timeout = 60, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	char pid_text[32];

	snprintf(pid_text, sizeof(pid_text), "%d", dead_pid());
	const char *args[] = { "attach", "-d", "1", pid_text, NULL };
	struct e2e_result res = run_wallspy(dir, args);
	check_error(&res, 3, "attach to a dead pid");
	cr_assert_eq(e2e_dir_entries(dir), 0, "files left: %s", e2e_dir_list(dir));
}

Test(e2e_errors, record_command_not_found, .timeout = 60, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	const char *args[] = { "record", "--", "/nonexistent/cmd", NULL };
	struct e2e_result res = run_wallspy(dir, args);

	check_error(&res, 3, "record of /nonexistent/cmd");
	cr_assert_eq(e2e_dir_entries(dir), 0, "files left: %s", e2e_dir_list(dir));
}

Test(e2e_errors, record_target_exits_at_once, .timeout = 60, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	/* At 1 Hz the first tick is 0.9 s or more after exec: exit_now is
	 * gone by then however loaded the machine (at the default 100 Hz, a
	 * CI run at load 9 once caught it in its first 10 ms: 1 sample). */
	const char *args[] = { "record", "-r", "1", "-o", out, "--",
			       e2e_fixture("exit_now"), NULL };
	struct e2e_result res = run_wallspy(dir, args);

	check_error(&res, 5, "record of exit_now");
	cr_assert(!e2e_exists(out), "%s was created", out);
	cr_assert_eq(e2e_dir_entries(dir), 0, "files left: %s", e2e_dir_list(dir));

	/* Same without -o: no default-named file either. */
	const char *args_default[] = { "record", "-r", "1", "--",
				       e2e_fixture("exit_now"), NULL };
	res = run_wallspy(dir, args_default);
	check_error(&res, 5, "record of exit_now (default output)");
	cr_assert_eq(e2e_dir_entries(dir), 0, "files left: %s", e2e_dir_list(dir));
}

/* Each of these is a usage error: exit 2, one line, nothing started. */
Test(e2e_errors, usage_errors, .timeout = 60, .fini = e2e_cleanup)
{
	const char *tb = e2e_fixture("threads_blocked");
	const char *const cases[][10] = {
		{ NULL },                                   /* no command */
		{ "frobnicate", NULL },                     /* unknown command */
		{ "record", NULL },                         /* no CMD */
		{ "record", "--", NULL },                   /* empty CMD */
		{ "attach", NULL },                         /* no PID */
		{ "attach", "notanumber", NULL },
		{ "attach", "123abc", NULL },
		{ "dump", NULL },
		{ "dump", "notanumber", NULL },
		{ "record", "--rate", "0", "--", tb, "1", NULL },
		{ "record", "-r", "-5", "--", tb, "1", NULL },
		{ "record", "--format", "nope", "--", tb, "1", NULL },
		{ "record", "--group-by", "nope", "--", tb, "1", NULL },
		{ "record", "--runtime", "nope", "--", tb, "1", NULL },
		{ "record", "--duration", "soon", "--", tb, "1", NULL },
		{ "record", "--no-such-option", "--", tb, "1", NULL },
		{ "record", "-o", NULL },                   /* missing value */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *dir = e2e_tmpdir();
		char what[256] = "wallspy";
		struct e2e_result res = run_wallspy(dir, cases[i]);

		for (int j = 0; cases[i][j]; j++) {
			strncat(what, " ", sizeof(what) - strlen(what) - 1);
			strncat(what, cases[i][j], sizeof(what) - strlen(what) - 1);
		}
		check_error(&res, 2, what);
		cr_assert_eq(e2e_dir_entries(dir), 0, "%s: files left: %s", what,
			     e2e_dir_list(dir));
	}
}

/* An output that cannot be written is refused before the command runs:
 * one error line, exit 6, and the command (touch MARKER) never ran. */
static void check_output_refused(const char *output, const char *reason)
{
	const char *dir = e2e_tmpdir();
	const char *marker = e2e_path(dir, "marker");
	const char *args[] = { "record", "-o", output, "--", "/usr/bin/touch",
			       marker, NULL };
	struct e2e_result res = run_wallspy(dir, args);

	check_error(&res, 6, output);
	cr_assert(strstr(res.err, output) && strstr(res.err, reason),
		  "-o %s: the error does not say \"%s\": %s", output, reason,
		  res.err);
	cr_assert(!e2e_exists(marker), "-o %s: the command ran", output);
	cr_assert_eq(e2e_dir_entries(dir), 0, "files left in the cwd: %s",
		     e2e_dir_list(dir));
}

Test(e2e_errors, output_not_writable, .timeout = 60, .fini = e2e_cleanup)
{
	check_output_refused("/nonexistent-dir/x.json",
			     "No such file or directory");
	cr_assert(!e2e_exists("/nonexistent-dir"), "/nonexistent-dir was created");
}

/* An existing directory where the output should go: refused at once,
 * nothing written into it. */
Test(e2e_errors, output_is_a_directory, .timeout = 60, .fini = e2e_cleanup)
{
	const char *out = e2e_tmpdir();
	check_output_refused(out, "Is a directory");
	cr_assert_eq(e2e_dir_entries(out), 0, "files written into %s", out);
}

/* A file of /proc: named as such (it used to say "No such file or
 * directory" after sampling, from the temporary file /proc refused). */
Test(e2e_errors, output_in_proc, .timeout = 60, .fini = e2e_cleanup)
{
	check_output_refused("/proc/version", "procfs");
	check_output_refused("/proc/wallspy.json", "procfs");
}

/* A full device (a private node with /dev/full's numbers, never /dev/full
 * itself) is written in place: the write error comes after sampling, exit
 * 6, and the node is still the device. */
Test(e2e_errors, output_device_full, .timeout = 60, .fini = e2e_cleanup)
{
	if (getuid() != 0)
		cr_skip_test("mknod needs root");
	const char *dir = e2e_tmpdir();
	const char *node = e2e_path(dir, "full");
	cr_assert_eq(mknod(node, S_IFCHR | 0666, makedev(1, 7)), 0);
	const char *args[] = { "record", "-o", node, "--",
			       e2e_fixture("threads_blocked"), "1", NULL };
	struct e2e_result res = run_wallspy(dir, args);

	check_error_after_sampling(&res, 6, "record -o FULL-DEVICE", node);
	cr_assert(strstr(res.err, "No space left on device"), "%s", res.err);
	struct stat st;
	cr_assert_eq(lstat(node, &st), 0);
	cr_assert(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 7),
		  "the device node was replaced");
	cr_assert_eq(e2e_dir_entries(dir), 1, "files left: %s", e2e_dir_list(dir));
}

Test(e2e_errors, help, .timeout = 60, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	const char *args[] = { "--help", NULL };
	struct e2e_result res = run_wallspy(dir, args);

	cr_assert_eq(e2e_exit_code(&res), 0, "stderr: %s", res.err);
	cr_assert_gt(strlen(res.out), 0, "--help printed nothing on stdout");
	for (int code = 0; code <= 8; code++) {
		char re[64];

		/* The code as a number of its own (not part of "0.1.0"). */
		snprintf(re, sizeof(re), "(^|[^0-9.])%d([^0-9.]|$)", code);
		cr_assert(e2e_match(res.out, re), "--help does not mention exit "
			  "code %d:\n%s", code, res.out);
	}
	for (const char *const *word = (const char *const[]){ "record", "attach",
			"dump", "--output", "--format", "--rate", "--duration",
			"--group-by", NULL }; *word; word++)
		cr_assert(strstr(res.out, *word), "--help does not mention %s", *word);
}

Test(e2e_errors, version, .timeout = 60, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	const char *args[] = { "--version", NULL };
	struct e2e_result res = run_wallspy(dir, args);

	cr_assert_eq(e2e_exit_code(&res), 0, "stderr: %s", res.err);
	cr_assert(e2e_match(res.out, "^wallspy " WS_VERSION "([^0-9]|$)"),
		  "--version printed \"%s\"", res.out);

	/* Built from a git checkout: `git describe` of it, as git says. */
	if (!e2e_exists(WS_SOURCE_DIR "/.git") || access("/usr/bin/git", X_OK) != 0)
		return;
	char *git[] = { "/usr/bin/git", "-C", WS_SOURCE_DIR, "describe", "--always",
			"--dirty", "--tags", NULL };
	struct e2e_result described;
	e2e_run(git, NULL, 10000, &described);
	cr_assert_eq(e2e_exit_code(&described), 0, "git describe: %s", described.err);
	char want[256];
	snprintf(want, sizeof(want), "wallspy %s (git %.*s)\n", WS_VERSION,
		 (int)strcspn(described.out, "\n"), described.out);
	cr_assert_str_eq(res.out, want);
}

/* Permission denied: wallspy run as nobody (setpriv) may not trace a
 * process of root's; exit 4 with one line that says what to change, and
 * only what applies: the ptrace_scope advice exactly when the kernel has
 * Yama (/proc/sys/kernel/yama). */
Test(e2e_errors, attach_permission_denied, .timeout = 60, .fini = e2e_cleanup)
{
	if (getuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0)
		cr_skip_test("needs root and setpriv to run wallspy unprivileged");
	pid_t pid = e2e_start_fixture("threads_blocked", "30", "ready", 10000);
	char pid_text[32];
	snprintf(pid_text, sizeof(pid_text), "%d", pid);
	char *argv[] = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
			 "--clear-groups", "--", (char *)e2e_wallspy(), "dump",
			 pid_text, NULL };
	struct e2e_result res;
	e2e_run(argv, e2e_tmpdir(), 30000, &res);
	cr_assert_eq(e2e_exit_code(&res), 4, "exit %d, stderr: %s",
		     e2e_exit_code(&res), res.err);
	cr_assert(e2e_is_one_error_line(res.err), "not one line: %s", res.err);
	cr_assert(strstr(res.err, "CAP_SYS_PTRACE"), "no advice in: %s", res.err);
	bool yama = e2e_exists("/proc/sys/kernel/yama/ptrace_scope");
	cr_assert_eq(strstr(res.err, "ptrace_scope") != NULL, yama,
		     "ptrace_scope advice %s Yama: %s",
		     yama ? "missing with" : "given without", res.err);
	cr_assert(strncmp(res.err, "wallspy: dump ", 14) == 0,
		  "the error does not name dump: %s", res.err);
	e2e_check_healthy_then_stop(pid);
}

/* attach PID: its exit code and one line naming `cause`, without the
 * permission advice (that is not the cause). */
static void check_attach_refused(pid_t pid, int code, const char *cause)
{
	char pid_text[32];
	snprintf(pid_text, sizeof(pid_text), "%d", pid);
	const char *args[] = { "attach", "-d", "1", pid_text, NULL };
	struct e2e_result res = run_wallspy(e2e_tmpdir(), args);
	check_error(&res, code, cause);
	cr_assert(strstr(res.err, cause), "the error does not say \"%s\": %s",
		  cause, res.err);
	cr_assert(!strstr(res.err, "CAP_SYS_PTRACE"),
		  "permission advice for %s: %s", cause, res.err);
}

/* Waits until /proc shows pid's leader in state `state`. */
static void wait_state(pid_t pid, char state)
{
	cr_assert(e2e_wait_proc_state(pid, state, 5000), "state %c, not %c",
		  e2e_proc_state(pid, 0), state);
}

/* A zombie (a child of ours that exited, not reaped yet) has no process
 * left to trace: exit 3, "a zombie", its parent named. */
Test(e2e_errors, attach_zombie, .timeout = 60, .fini = e2e_cleanup)
{
	char *argv[] = { (char *)e2e_fixture("exit_now"), NULL };
	struct e2e_proc child = e2e_spawn(argv, NULL);
	wait_state(child.pid, 'Z');
	check_attach_refused(child.pid, 3, "zombie");
	char parent[64];
	snprintf(parent, sizeof(parent), "parent (pid %d)", getpid());
	check_attach_refused(child.pid, 3, parent);
}

/* A process whose main thread has exited while another runs on: exit 8,
 * the main thread named as the cause. */
Test(e2e_errors, attach_main_thread_exited, .timeout = 60,
     .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("leader_exits", "30", "ready", 10000);
	wait_state(pid, 'Z');
	cr_assert_eq(e2e_tids(pid, (pid_t[8]){0}, 8), 2);
	check_attach_refused(pid, 8, "main thread has exited");
}

/* A process another tracer holds (this test, through PTRACE_SEIZE): exit 8
 * and the tracer named by its command and pid (TracerPid). */
Test(e2e_errors, attach_already_traced, .timeout = 60, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_blocked", "30", "ready", 10000);
	cr_assert_eq(ptrace(PTRACE_SEIZE, pid, 0, 0), 0, "seize: %m");
	char comm[32], tracer[96];
	cr_assert(e2e_thread_comm(getpid(), getpid(), comm, sizeof(comm)));
	snprintf(tracer, sizeof(tracer), "already traced by %s (pid %d)", comm,
		 getpid());
	check_attach_refused(pid, 8, tracer);
	/* Let it go: stop it (it must be in a stop to be detached). */
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, pid, 0, 0), 0);
	int status;
	cr_assert_eq(waitpid(pid, &status, __WALL), pid);
	cr_assert_eq(ptrace(PTRACE_DETACH, pid, 0, 0), 0);
	e2e_check_healthy_then_stop(pid);
}

/* kthreadd runs no user code: exit 8, "a kernel thread". */
Test(e2e_errors, attach_kernel_thread, .timeout = 60, .fini = e2e_cleanup)
{
	char comm[32];
	if (!e2e_thread_comm(2, 2, comm, sizeof(comm)) ||
	    strcmp(comm, "kthreadd") != 0)
		cr_skip_test("pid 2 is not kthreadd here (a PID namespace)");
	check_attach_refused(2, 8, "kernel thread (kthreadd)");
}

/* Threads that exit while wallspy seizes them are skipped, not errors:
 * 20 dumps of a process churning threads all succeed (1 in 20 used to fail
 * with the permission advice). */
Test(e2e_errors, attach_while_threads_exit, .timeout = 90,
     .fini = e2e_cleanup)
{
	char *argv[] = { (char *)e2e_fixture("thread_churn"), "100000000", NULL };
	struct e2e_proc churn = e2e_spawn(argv, &(struct e2e_spawn_opts){
		.pipe_stdout = true });
	e2e_sleep_ms(100);
	char pid_text[32];
	snprintf(pid_text, sizeof(pid_text), "%d", churn.pid);
	for (int i = 0; i < 20; i++) {
		const char *args[] = { "dump", pid_text, NULL };
		struct e2e_result res = run_wallspy(e2e_tmpdir(), args);
		cr_assert_eq(e2e_exit_code(&res), 0, "dump %d: exit %d: %s", i,
			     e2e_exit_code(&res), res.err);
	}
	cr_assert(e2e_running_not_stopped(churn.pid, 3, 20));
	cr_assert(e2e_traced_by(churn.pid, 0));
}
