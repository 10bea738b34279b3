/*
 * End-to-end tests of `wallspy record` and `wallspy attach`: profiles of
 * fixtures with known stacks (fixtures/threads_blocked.c's table,
 * fixtures/thread_churn.c's result, both in tests/lib/fixture_truth),
 * checked for the speedscope and folded formats, per-thread wall-time
 * weights, SIGINT/SIGTERM handling (detach,
 * write, exit 0, target unharmed), the end of a command record launched
 * when the recording ends first (SIGTERM or the signal wallspy got, SIGKILL
 * after 5 s, --keep-running; Ctrl-C and the status line in a pty), and
 * record -p. Tests here measure
 * wall time and CPU shares, so they run one at a time.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "e2e_util.h"
#include "fixture_truth.h"
#include "speedscope_view.h"
#include "summary.h"
#include "wallspy_run.h"

E2E_SERIAL_TESTS()

/* Every OS thread every tick: no CPU budget. */
#define THREADS_EVERY_TICK "--max-cpu", "0"

/* An OS thread's leaf: [running] or [waiting: SYSCALL]. */
static bool is_thread_state_leaf(const char *name)
{
	return strcmp(name, "[running]") == 0 ||
	       e2e_match(name, "^\\[waiting: [a-z0-9_]+\\]$");
}

/* The profile named `thread TID "NAME"`, or NULL. */
static const cJSON *thread_profile(const struct ss_view *v, const char *thread)
{
	char pattern[128];

	snprintf(pattern, sizeof(pattern), "^thread [0-9]+ \"%s\"$", thread);
	return ss_profile_matching(v, pattern);
}

/* The checks a --group-by thread profile of threads_blocked must pass,
 * `wall` being the wall time measured around the wallspy command. Its
 * runs pass --max-cpu 0 (THREADS_EVERY_TICK): within the default budget a
 * tick samples a couple of the 7 threads, and a thread's profile holds the
 * ticks it was observed in, with gaps between (wallspy(1), --group-by). */
static void check_threads_blocked_profile(const struct ss_view *v, double wall)
{
	/* Every thread lived the whole run: its weights add up to it. */
	for (int t = 0; t <= TB_THREADS; t++) {
		const char *name = t < TB_THREADS ? tb_threads[t].name : TB_MAIN_NAME;
		const cJSON *profile = thread_profile(v, name);
		const cJSON *sample;

		cr_assert_not_null(profile, "no profile for thread \"%s\"", name);
		double total = ss_profile_weight(profile);
		cr_assert(fabs(total - wall) <= 0.10 * wall,
			  "thread %s: total weight %.3f s, wall time %.3f s",
			  name, total, wall);
		/* Leaves are states. */
		cJSON_ArrayForEach(sample, cJSON_GetObjectItem(profile, "samples")) {
			const char *leaf = ss_frame_at(v, sample, -1);

			cr_assert(is_thread_state_leaf(leaf),
				  "thread %s: leaf frame \"%s\"", name, leaf);
		}
	}

	/* t_spin: spinner_block just above [running] for >= 80 % of the
	 * weight (the thread never leaves that loop once started). */
	double spin_total = 0, spin_in_block = 0;
	/* t_mutex: [waiting: futex] with mutex_waiter_outer above (root
	 * first: before) mutex_waiter_block, for nearly all the weight (the
	 * first ticks may come before the thread blocked). */
	double mutex_total = 0, mutex_blocked = 0;
	const cJSON *spin = thread_profile(v, "t_spin");
	const cJSON *mutex = thread_profile(v, "t_mutex");

	SS_FOR_EACH_SAMPLE(v, profile, sample, w) {
		if (profile == spin) {
			spin_total += w;
			if (strcmp(ss_frame_at(v, sample, -1), "[running]") == 0 &&
			    strcmp(ss_frame_at(v, sample, -2), "spinner_block") == 0)
				spin_in_block += w;
		} else if (profile == mutex) {
			int outer = ss_find(v, sample, "mutex_waiter_outer");
			int inner = ss_find(v, sample, "mutex_waiter_block");

			mutex_total += w;
			if (strcmp(ss_frame_at(v, sample, -1),
				   "[waiting: futex]") == 0 &&
			    outer >= 0 && inner == outer + 1)
				mutex_blocked += w;
		}
	}
	cr_assert_geq(spin_in_block, 0.80 * spin_total,
		      "t_spin: %.3f of %.3f s in spinner_block [running]",
		      spin_in_block, spin_total);
	cr_assert_geq(mutex_blocked, 0.90 * mutex_total,
		      "t_mutex: %.3f of %.3f s in [waiting: futex] under "
		      "mutex_waiter_outer;mutex_waiter_block",
		      mutex_blocked, mutex_total);
}

/* wallspy exited 0 and its summary gives the target's fate as `fate`
 * ("target killed by signal 9" also matches "... (Killed)"). */
static void check_success(const struct e2e_result *res, const char *fate)
{
	cr_assert(!res->timed_out, "wallspy timed out; stderr: %s", res->err);
	cr_assert_eq(e2e_exit_code(res), 0, "wallspy: status 0x%x, stderr: %s",
		     res->status, res->err);
	const char *target = e2e_parse_summary(res->err).target;
	cr_assert(strncmp(target, fate, strlen(fate)) == 0,
		  "the summary says \"%s\", expected \"%s\"", target, fate);
}

Test(e2e_record, record_group_by_thread, .timeout = 60, .fini = e2e_cleanup)
{
	const char *opts[] = { "--group-by", "thread", THREADS_EVERY_TICK,
			       NULL };
	const char *target[] = { e2e_fixture("threads_blocked"), "2", NULL };
	const char *out;
	struct e2e_result res = e2e_record(opts, target, &out, 30000);

	check_success(&res, "target exited with status 0");
	cr_assert(strstr(res.out, "ready\n"), "the target's stdout did not come "
		  "through: %s", res.out);
	struct ss_view v = ss_load(out);
	check_threads_blocked_profile(&v, res.seconds);
	/* Only the output file: no temporary left behind. */
	cr_assert_eq(e2e_dir_entries(e2e_dirname(out)), 1, "files: %s",
		     e2e_dir_list(e2e_dirname(out)));
}

/* Default group (all): one merged profile holding every thread's stacks. */
Test(e2e_record, record_group_all, .timeout = 60, .fini = e2e_cleanup)
{
	const char *opts[] = { "-q", NULL };
	const char *target[] = { e2e_fixture("threads_blocked"), "1", NULL };
	const char *out;
	struct e2e_result res = e2e_record(opts, target, &out, 30000);

	/* -q drops the summary (warnings may remain). */
	cr_assert(!strstr(res.err, "target exited"), "-q yet a summary: %s", res.err);
	struct ss_view v = ss_load(out);
	cr_assert_eq(cJSON_GetArraySize(v.profiles), 1);

	const cJSON *profile = cJSON_GetArrayItem(v.profiles, 0);
	for (int f = 0; f < TB_THREADS; f++) {
		const cJSON *sample;
		bool seen = false;

		cJSON_ArrayForEach(sample, cJSON_GetObjectItem(profile, "samples"))
			seen |= ss_has(&v, sample, tb_threads[f].inner);
		cr_assert(seen, "no sample in %s", tb_threads[f].inner);
	}
	/* Seven threads for about the whole run. */
	double total = ss_profile_weight(profile);
	cr_assert(fabs(total - 7 * res.seconds) <= 0.15 * 7 * res.seconds,
		  "total weight %.3f s for 7 threads over %.3f s", total, res.seconds);
}

/* Without -o: wallspy-<pid>.speedscope.json, or .folded, in the cwd. */
Test(e2e_record, default_output_names, .timeout = 60, .fini = e2e_cleanup)
{
	static const char *const formats[] = { "speedscope", "folded" };
	static const char *const names[] = {
		"^wallspy-[0-9]+\\.speedscope\\.json$", "^wallspy-[0-9]+\\.folded$",
	};

	for (int f = 0; f < 2; f++) {
		const char *dir = e2e_tmpdir();
		char *argv[] = { (char *)e2e_wallspy(), "record", "-q", "-f",
				 (char *)formats[f], "--",
				 (char *)e2e_fixture("threads_blocked"), "0.5", NULL };
		struct e2e_result res;

		e2e_run(argv, dir, 30000, &res);
		cr_assert_eq(e2e_exit_code(&res), 0, "stderr: %s", res.err);
		const char *listing = e2e_dir_list(dir);
		cr_assert_eq(e2e_dir_entries(dir), 1, "files: %s", listing);
		cr_assert(e2e_match(listing, names[f]), "-f %s wrote %s", formats[f],
			  listing);
	}
}

/* Folded output, by default and with --lines (frames of one name then
 * differ by line): lines "root;...;leaf COUNT", root first, and one line
 * per distinct stack, as flamegraph.pl and speedscope read it. */
static void check_folded(const char *mode)
{
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.folded");
	char *argv[11] = { (char *)e2e_wallspy(), "record", "-f", "folded", "-o",
			   (char *)out };
	int n = 6;
	struct e2e_result res;
	bool spinner = false, mutex_chain = false;
	int lines = 0;

	if (mode)
		argv[n++] = (char *)mode;
	argv[n++] = "--";
	argv[n++] = (char *)e2e_fixture("threads_blocked");
	argv[n++] = "1";
	e2e_run(argv, dir, 30000, &res);
	check_success(&res, "target exited with status 0");
	char *text = e2e_read_file(out);
	cr_assert_not_null(text, "no %s", out);
	char *stacks[4096];
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		cr_assert(e2e_match(line, "^[^ ].* [0-9]+$"), "bad folded line: %s",
			  line);
		spinner |= strstr(line, ";spinner_block;") != NULL;
		/* Root first: the caller precedes the callee. */
		mutex_chain |= strstr(line, ";mutex_waiter_outer;mutex_waiter_block;") != NULL;
		*strrchr(line, ' ') = '\0';
		for (int i = 0; i < lines; i++)
			cr_expect_str_neq(stacks[i], line, "%s: stack on two "
					  "lines: %s", mode ? mode : "default", line);
		cr_assert_lt(lines, 4096);
		stacks[lines++] = line;
	}
	cr_assert_gt(lines, 0, "empty folded output");
	cr_assert(spinner, "no ;spinner_block; in the folded output");
	cr_assert(mutex_chain, "no ;mutex_waiter_outer;mutex_waiter_block; in "
		  "the folded output");
}

Test(e2e_record, folded, .timeout = 60, .fini = e2e_cleanup)
{
	check_folded(NULL);
	check_folded("--lines");
}

Test(e2e_record, attach_duration, .timeout = 60, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_blocked", "60", "ready", 10000);
	const char *opts[] = { "-d", "1.5", "--group-by", "thread",
			       THREADS_EVERY_TICK, NULL };
	const char *out;
	struct e2e_result res = e2e_attach(pid, opts, "out.json", &out, 30000);

	check_success(&res, "target still running");
	cr_assert_geq(res.seconds, 1.5, "returned after %.3f s", res.seconds);
	struct ss_view v = ss_load(out);
	check_threads_blocked_profile(&v, res.seconds);
	e2e_check_healthy_then_stop(pid);
}

/* attach without -d, stopped by `sig` once it samples. */
static void check_stop_signal(int sig)
{
	pid_t pid = e2e_start_fixture("threads_blocked", "60", "ready", 10000);
	const char *out;
	struct e2e_proc wallspy = e2e_spawn_attach(pid, NULL, "out.json", &out);
	struct e2e_result res;

	tb_wait_sampled(pid);
	e2e_collect(&wallspy, 30000, sig, 0, &res);
	check_success(&res, "target still running");
	ss_load(out);
	cr_assert_eq(e2e_dir_entries(e2e_dirname(out)), 1,
		     "temporary files left behind");
	e2e_check_healthy_then_stop(pid);
}

Test(e2e_record, sigint_detaches, .timeout = 60, .fini = e2e_cleanup)
{
	check_stop_signal(SIGINT);
}

Test(e2e_record, sigterm_detaches, .timeout = 60, .fini = e2e_cleanup)
{
	check_stop_signal(SIGTERM);
}

/* The target dies of SIGKILL while wallspy samples it. Its own wait
 * status (this test is its parent) says SIGKILL; wallspy notices at once,
 * writes the profile and says how the target ended; the recording covers
 * the time sampled up to the death and no more, every thread of it for
 * all that time, with their chains. */
Test(e2e_record, target_killed, .timeout = 60, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_blocked", "60", "ready", 10000);
	const char *out;
	double spawned = e2e_now();
	struct e2e_proc wallspy = e2e_spawn_attach(pid, NULL, "out.json", &out);
	struct e2e_result res;
	int status;

	tb_wait_sampled(pid);
	double sampling = e2e_now();
	/* Half a second of recording (a length, not a readiness wait). */
	e2e_sleep_ms(500);
	double killed = e2e_now();
	cr_assert_eq(kill(pid, SIGKILL), 0);
	e2e_collect(&wallspy, 30000, 0, 0, &res);
	double ended = e2e_now();
	check_success(&res, "target killed by signal 9");
	cr_assert(e2e_wait_timeout(pid, 5000, &status));
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "the target's status %#x is not death by SIGKILL", status);
	cr_assert_lt(ended - killed, 2.0, "wallspy ended %.3f s after the kill",
		     ended - killed);

	/* The recording: at least from the first tick seen to the kill,
	 * at most wallspy's life; 7 threads for all of it. */
	struct e2e_summary s = e2e_parse_summary(res.err);
	cr_assert(s.seconds >= killed - sampling - 0.02 &&
		  s.seconds <= ended - spawned,
		  "recorded %.3f s; sampled from %.3f s before the kill, wallspy "
		  "ran %.3f s", s.seconds, killed - sampling, ended - spawned);
	struct ss_view v = ss_load(out);
	double total = 0;
	SS_FOR_EACH_SAMPLE(&v, profile, sample, w)
		total += w;
	double threads = total / s.seconds;
	cr_assert(threads > 0.85 * (TB_THREADS + 1) && threads < 1.15 * (TB_THREADS + 1),
		  "%.3f s of samples in %.3f s: %.2f threads, the target has %d",
		  total, s.seconds, threads, TB_THREADS + 1);
	for (int t = 0; t < TB_THREADS; t++)
		cr_assert(ss_any_has(&v, tb_threads[t].inner), "no sample in %s",
			  tb_threads[t].inner);
}

/* Thousands of short-lived threads under a fast sampler: the target's
 * work and output are unchanged, and it exits normally. */
Test(e2e_record, thread_churn, .timeout = 60, .fini = e2e_cleanup)
{
	const char *opts[] = { "-r", "500", NULL };
	const char *target[] = { e2e_fixture("thread_churn"), "3000", NULL };
	const char *out;
	char expected[128];

	snprintf(expected, sizeof(expected), "churn done 3000 sum=%" PRIu64 "\n",
		 churn_sum(3000));
	struct e2e_result res = e2e_record(opts, target, &out, 50000);
	check_success(&res, "target exited with status 0");
	cr_assert_str_eq(res.out, expected, "the target printed \"%s\"", res.out);
	ss_load(out);
}

/* --- the end of a command record launched (timeout(1)'s way) --- */

/* The one child of `parent` (scanning /proc), 0 when there is none. */
static pid_t child_of(pid_t parent)
{
	char path[64];

	/* The launched command is the only child wallspy forks. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", parent, parent);
	for (int attempt = 0; attempt < 1000; attempt++) {
		char *kids = e2e_read_file(path);
		if (kids && atoi(kids) > 0)
			return (pid_t)atoi(kids);
		e2e_sleep_ms(10);
	}
	return 0;
}

/* -d ran out: the command, still running, gets SIGTERM and ends (it
 * exits 0 on SIGTERM by construction); nothing of it outlives wallspy. */
Test(e2e_record, duration_ends_the_command, .timeout = 60,
     .fini = e2e_cleanup_adopting)
{
	const char *opts[] = { "-d", "1", NULL };
	const char *target[] = { e2e_fixture("threads_blocked"), "60", NULL };
	const char *out;

	e2e_become_subreaper();
	struct e2e_result res = e2e_record(opts, target, &out, 30000);
	check_success(&res, "target sent SIGTERM by wallspy, then exited with status 0");
	cr_assert_lt(res.seconds, 5, "wallspy took %.1f s", res.seconds);
	cr_assert_eq(e2e_adopt_orphans(NULL, 0), 0, "the command outlived wallspy");
	ss_load(out);
}

/* --keep-running: the command goes on, detached and healthy. */
Test(e2e_record, keep_running, .timeout = 60, .fini = e2e_cleanup_adopting)
{
	const char *opts[] = { "-d", "1", "--keep-running", NULL };
	const char *target[] = { e2e_fixture("threads_blocked"), "60", NULL };
	const char *out;
	pid_t orphans[4];

	e2e_become_subreaper();
	struct e2e_result res = e2e_record(opts, target, &out, 30000);
	check_success(&res, "target still running (--keep-running)");
	cr_assert_eq(e2e_adopt_orphans(orphans, 4), 1);
	e2e_check_healthy_then_stop(orphans[0]);
}

/* SIGINT or SIGTERM sent to wallspy (kill(2), not a terminal): passed on
 * to the command, which ends of it. */
static void check_signal_passed_on(int sig)
{
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	char *argv[] = { (char *)e2e_wallspy(), "record", "-o", (char *)out, "--",
			 (char *)e2e_fixture("threads_blocked"), "60", NULL };
	struct e2e_spawn_opts spawn = { .pipe_stdout = true, .pipe_stderr = true };
	struct e2e_result res;
	char fate[128];

	e2e_become_subreaper();
	struct e2e_proc ws = e2e_spawn(argv, &spawn);
	pid_t target = child_of(ws.pid);
	cr_assert_neq(target, 0, "no command under wallspy");
	/* The command prints on wallspy's stdout. */
	cr_assert(e2e_wait_line(ws.out_fd, "ready", 10000), "threads_blocked not ready");
	tb_wait_sampled(target);
	e2e_collect(&ws, 30000, sig, 0, &res);
	snprintf(fate, sizeof(fate), "target sent SIG%s by wallspy, then exited with status 0",
		 sigabbrev_np(sig));
	check_success(&res, fate);
	cr_assert_eq(e2e_adopt_orphans(NULL, 0), 0, "the command outlived wallspy");
}

Test(e2e_record, sigint_passed_on, .timeout = 60, .fini = e2e_cleanup_adopting)
{
	check_signal_passed_on(SIGINT);
}

Test(e2e_record, sigterm_passed_on, .timeout = 60, .fini = e2e_cleanup_adopting)
{
	check_signal_passed_on(SIGTERM);
}

/* A command that ignores SIGTERM (sh's trap '' survives its exec) is
 * killed 5 s after it, and the summary says so. */
Test(e2e_record, sigkill_after_grace, .timeout = 60, .fini = e2e_cleanup_adopting)
{
	const char *opts[] = { "-d", "0.5", NULL };
	const char *target[] = { "/bin/sh", "-c", "trap '' TERM; exec sleep 60", NULL };
	const char *out;

	e2e_become_subreaper();
	struct e2e_result res = e2e_record(opts, target, &out, 30000);
	check_success(&res, "target still running 5 s after wallspy sent SIGTERM: "
		      "killed by wallspy with SIGKILL");
	cr_assert(res.seconds >= 5.5 && res.seconds < 9, "wallspy took %.1f s",
		  res.seconds);
	cr_assert_eq(e2e_adopt_orphans(NULL, 0), 0, "the command outlived wallspy");
}

/* A command in a group stop (SIGSTOP while recorded) when -d runs out
 * gets SIGCONT after the SIGTERM, as timeout(1) sends it: it ends of the
 * SIGTERM at once, not of a SIGKILL 5 s later. */
Test(e2e_record, stopped_command_continued, .timeout = 60,
     .fini = e2e_cleanup_adopting)
{
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	char *argv[] = { (char *)e2e_wallspy(), "record", "-d", "2", "-o", (char *)out,
			 "--", (char *)e2e_fixture("threads_blocked"), "60", NULL };
	struct e2e_spawn_opts spawn = { .pipe_stdout = true, .pipe_stderr = true };
	struct e2e_result res;

	e2e_become_subreaper();
	double t0 = e2e_now();
	struct e2e_proc ws = e2e_spawn(argv, &spawn);
	pid_t target = child_of(ws.pid);
	cr_assert_neq(target, 0, "no command under wallspy");
	cr_assert(e2e_wait_line(ws.out_fd, "ready", 10000), "threads_blocked not ready");
	cr_assert_eq(kill(target, SIGSTOP), 0);
	double deadline = e2e_now() + 5;
	for (char st; (st = e2e_proc_state(target, target)) != 't' && st != 'T';
	     e2e_sleep_ms(5))
		cr_assert_lt(e2e_now(), deadline, "the command did not stop");
	e2e_collect(&ws, 30000, 0, 0, &res);
	check_success(&res, "target sent SIGTERM by wallspy, then exited with status 0");
	cr_assert_lt(e2e_now() - t0, 5, "wallspy took %.1f s", e2e_now() - t0);
	cr_assert_eq(e2e_adopt_orphans(NULL, 0), 0, "the command outlived wallspy");
}

/* wallspy and its command in a terminal (a pty): the status line says how
 * to stop; Ctrl-C reaches both (the kernel signals the foreground process
 * group), so wallspy sends nothing more and reports the command's own end. */
Test(e2e_record, ctrl_c_in_a_terminal, .timeout = 60, .fini = e2e_cleanup_adopting)
{
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	char want[512], buf[8192];
	size_t got = 0;
	int status;

	cr_assert_geq(master, 0);
	cr_assert_eq(grantpt(master), 0);
	cr_assert_eq(unlockpt(master), 0);
	const char *slave = ptsname(master);
	cr_assert_not_null(slave);
	e2e_become_subreaper();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setsid();
		int fd = open(slave, O_RDWR);
		if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) != 0)
			_exit(126);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(e2e_wallspy(), "wallspy", "record", "-o", out, "--",
		      e2e_fixture("threads_blocked"), "60", (char *)NULL);
		_exit(127);
	}
	e2e_track(pid);
	snprintf(want, sizeof(want), "wallspy (Ctrl-C to stop and write %s): ", out);
	double deadline = e2e_now() + 20;
	while (!memmem(buf, got, want, strlen(want))) {
		cr_assert_lt(e2e_now(), deadline, "no status line \"%s\" in:\n%.*s",
			     want, (int)got, buf);
		struct pollfd p = { .fd = master, .events = POLLIN };
		if (poll(&p, 1, 100) > 0 && got < sizeof(buf)) {
			ssize_t n = read(master, buf + got, sizeof(buf) - got);
			if (n > 0)
				got += (size_t)n;
		}
	}
	cr_assert_eq(write(master, "\003", 1), 1);	/* Ctrl-C */
	got = 0;
	for (;;) {
		struct pollfd p = { .fd = master, .events = POLLIN };
		cr_assert_lt(e2e_now(), deadline + 20, "wallspy did not end");
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t n = read(master, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;	/* EIO: the session's last writer is gone */
		got += (size_t)n;
	}
	buf[got] = '\0';
	cr_assert(e2e_wait_timeout(pid, 10000, &status));
	e2e_forget(pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x:\n%s",
		  status, buf);
	cr_assert_not_null(strstr(buf, "; target got the terminal's SIGINT, then exited "
				  "with status 0; wrote "), "%s", buf);
	cr_assert_eq(e2e_adopt_orphans(NULL, 0), 0, "the command outlived wallspy");
	ss_load(out);
}

/* py-spy's `record --pid`: record -p PID samples a running process, as
 * attach does, and leaves it running. */
Test(e2e_record, record_dash_p_attaches, .timeout = 60, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_blocked", "60", "ready", 10000);
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	char pid_text[32];

	snprintf(pid_text, sizeof(pid_text), "%d", pid);
	const char *args[] = { "record", "-p", pid_text, "-d", "2", "--group-by",
			       "thread", THREADS_EVERY_TICK, "-o", out, NULL };
	struct e2e_result res = e2e_wallspy_run(args, dir, 30000);
	check_success(&res, "target still running");
	struct ss_view v = ss_load(out);
	check_threads_blocked_profile(&v, res.seconds);
	e2e_check_healthy_then_stop(pid);
}

/*
 * Wait reasons survive wallspy's own stops. threads_waiting parks one
 * thread in each waiting system call, named after it; /proc confirms each
 * thread is in its call before anything traces it. After the first
 * PTRACE_INTERRUPT the kernel resumes sleeps and timed waits through
 * restart_syscall, so from the second stop on the registers say 219: yet
 * every sample of each thread over a 2 s attach (the ticks that sampled it:
 * the default budget takes a few threads a tick) must carry its real call.
 * A second attach then meets every sleep already restarted: the calls made
 * through a wrapper that loads its number (glibc's clock_nanosleep, poll,
 * ...) are still named; those made through the generic syscall() may only
 * say restart_syscall (nothing in the thread tells them apart), which is
 * what the kernel says of them.
 */
static void check_wait_reasons(pid_t pid, bool first)
{
	const char *opts[] = { "-d", "2", "--group-by", "thread", NULL };
	const char *out;
	struct e2e_result res = e2e_attach(pid, opts, "out.json", &out, 30000);

	check_success(&res, "target still running");
	struct ss_view v = ss_load(out);
	for (int t = 0; t < TW_THREADS; t++) {
		const struct tw_thread *tw = &tw_threads[t];
		const cJSON *profile = thread_profile(&v, tw->name);
		const cJSON *sample;
		char expected[64];
		int samples = 0, right = 0;
		const char *wrong = NULL;

		cr_assert_not_null(profile, "no profile for thread \"%s\"", tw->name);
		snprintf(expected, sizeof(expected), "[waiting: %s]", tw->name);
		cJSON_ArrayForEach(sample, cJSON_GetObjectItem(profile, "samples")) {
			const char *leaf = ss_frame_at(&v, sample, -1);

			/* A gap: ticks that sampled other threads (the
			 * default CPU budget affords a few a tick). */
			if (!sample->child)
				continue;
			samples++;
			if (strcmp(leaf, expected) == 0)
				right++;
			else if (first || !tw->generic ||
				 strcmp(leaf, "[waiting: restart_syscall]") != 0)
				wrong = leaf;
		}
		cr_assert_gt(samples, 0, "thread %s: no sample", tw->name);
		cr_expect_null(wrong, "%s attach, thread %s: a sample says \"%s\"",
			       first ? "first" : "second", tw->name, wrong);
		if (first || !tw->generic)
			cr_expect_eq(right, samples, "thread %s: %d of %d samples "
				     "say %s", tw->name, right, samples, expected);
	}
}

Test(e2e_record, wait_reasons_survive_stops, .timeout = 60, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_waiting", NULL, "ready", 10000);

	for (int t = 0; t < TW_THREADS; t++) {
		pid_t tid = e2e_thread_named(pid, tw_threads[t].name);
		long nr = -1;
		uint64_t sp, pc;

		cr_assert_neq(tid, 0, "no thread %s", tw_threads[t].name);
		cr_assert(e2e_thread_syscall(pid, tid, &nr, &sp, &pc) &&
			  nr == tw_threads[t].nr,
			  "thread %s: /proc says system call %ld, the fixture "
			  "means %ld", tw_threads[t].name, nr, tw_threads[t].nr);
	}
	check_wait_reasons(pid, true);
	check_wait_reasons(pid, false);
	e2e_check_healthy_then_stop(pid);
}

/* The target behaves as if no one were watching (fixtures/eintr_probe.c
 * counts, from inside, what stops do to each blocking call): under 200
 * samples a second, the calls the kernel restarts and those wallspy has
 * it restart never return EINTR; no timed wait returns early or is
 * lengthened. The timed epoll_wait, sigtimedwait and recv with
 * SO_RCVTIMEO still may see EINTR (wallspy(1), NOTES). */
Test(e2e_record, blocking_calls_do_not_see_the_stops, .timeout = 60,
     .fini = e2e_cleanup)
{
	const char *opts[] = { "-r", "200", NULL };
	const char *target[] = { e2e_fixture("eintr_probe"), "2", NULL };
	const char *out;
	struct e2e_result res = e2e_record(opts, target, &out, 30000);
	check_success(&res, "target exited with status 0");
	static const char *const transparent[] = {
		"epoll_wait", "accept", "read", "recv", "nanosleep",
		"pthread_cond_timedwait", "sigwaitinfo", "futex", "poll",
		"select",
	};
	static const char *const timed[] = {
		"epoll_wait_timeout", "recv_timeout", "sigtimedwait",
	};
	for (size_t i = 0; i < sizeof(transparent) / sizeof(*transparent); i++) {
		char re[128];
		snprintf(re, sizeof(re), "^%s eintr=0 early=0 late=0 ",
			 transparent[i]);
		cr_assert(e2e_match(res.out, re), "%s saw the stops:\n%s",
			  transparent[i], res.out);
	}
	for (size_t i = 0; i < sizeof(timed) / sizeof(*timed); i++) {
		char re[128];
		snprintf(re, sizeof(re), "^%s eintr=[0-9]+ early=0 late=0 ",
			 timed[i]);
		cr_assert(e2e_match(res.out, re), "%s returned early or late:\n%s",
			  timed[i], res.out);
	}
	/* The stops did happen: wallspy sampled the waits. */
	struct ss_view v = ss_load(out);
	cr_assert(ss_any_has(&v, "[waiting: epoll_wait]"), "no epoll_wait sample");
}
