/*
 * End-to-end tests of signals around a traced target: a SIGSTOPped target is
 * sampled as stopped and stays stopped after wallspy detaches (it is never
 * resumed by mistake); signals sent to the target while it is traced reach
 * its handlers at once, as the target itself shows (threads_blocked, run
 * without a lifetime, exits 0 only on SIGTERM or SIGINT; go_parked_n prints
 * a report on SIGUSR2). Readiness is read from /proc, never waited for: a
 * thread's TracerPid says wallspy holds it, and threads_blocked's t_sleep,
 * asleep for an hour, is woken only by wallspy's ticks.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_util.h"
#include "fixture_truth.h"
#include "speedscope_view.h"
#include "summary.h"
#include "wallspy_run.h"

/* Every thread of pid is in one of the states in `want`. */
static bool all_threads_in(pid_t pid, const char *want)
{
	pid_t tids[64];
	int n = e2e_tids(pid, tids, 64);

	if (n <= 0)
		return false;
	for (int i = 0; i < n; i++) {
		char state = e2e_proc_state(pid, tids[i]);

		if (!state || !strchr(want, state))
			return false;
	}
	return true;
}

/* Waits up to timeout_ms until all_threads_in(pid, want). */
static bool wait_all_threads_in(pid_t pid, const char *want, int timeout_ms)
{
	double deadline = e2e_now() + timeout_ms / 1000.0;

	while (!all_threads_in(pid, want)) {
		if (e2e_now() >= deadline)
			return false;
		e2e_sleep_ms(2);
	}
	return true;
}

/* threads_blocked (lifetime: NULL for none) attached by a spawned wallspy
 * with opts, once wallspy samples it (t_sleep woken by a few ticks). */
static struct e2e_proc attach_sampling(pid_t *pid, const char *lifetime,
				       const char *const opts[], const char **out)
{
	*pid = e2e_start_fixture("threads_blocked", lifetime, "ready", 10000);
	struct e2e_proc wallspy = e2e_spawn_attach(*pid, opts, "out.json", out);
	tb_wait_sampled(*pid);
	return wallspy;
}

Test(e2e_signals, sigstopped_target_stays_stopped, .timeout = 60,
     .fini = e2e_cleanup)
{
	const char *opts[] = { "--group-by", "state", NULL };
	const char *out;
	pid_t pid;
	struct e2e_proc wallspy = attach_sampling(&pid, "60", opts, &out);

	cr_assert_eq(kill(pid, SIGSTOP), 0);
	/* Stopped: every thread in its group stop (shown as 't' while
	 * traced). */
	cr_assert(wait_all_threads_in(pid, "tT", 5000),
		  "the target did not stop on SIGSTOP");
	/* Let wallspy sample the stopped process for half a second, then
	 * stop wallspy. */
	struct e2e_result res;
	e2e_collect(&wallspy, 30000, SIGINT, 500, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "stderr: %s", res.err);
	cr_assert_str_eq(e2e_parse_summary(res.err).target, "target still running");

	/* Detached (no thread traced any more), and still in its group stop:
	 * nobody sent SIGCONT. */
	double deadline = e2e_now() + 5;
	while (!e2e_traced_by(pid, 0) && e2e_now() < deadline)
		e2e_sleep_ms(2);
	cr_assert(e2e_traced_by(pid, 0), "still traced after wallspy exited");
	cr_assert(all_threads_in(pid, "T"),
		  "a thread of the SIGSTOPped target is not stopped after detach");

	/* Every thread was sampled as stopped at every tick of the stop: at
	 * 100 Hz, half a second is 50 ticks of 7 threads, 3.5 thread-seconds;
	 * at least half of it, whatever the scheduling. */
	struct ss_view v = ss_load(out);
	double stopped = 0;
	SS_FOR_EACH_SAMPLE(&v, profile, sample, w)
		if (strcmp(ss_frame_at(&v, sample, -1), "[waiting: stopped]") == 0)
			stopped += w;
	cr_assert_geq(stopped, 0.5 * (TB_THREADS + 1) * 0.5,
		      "%.3f thread-seconds of [waiting: stopped] in half a "
		      "second of stop of %d threads", stopped, TB_THREADS + 1);

	/* SIGCONT resumes it; it still works and exits 0 on SIGTERM. */
	cr_assert_eq(kill(pid, SIGCONT), 0);
	cr_assert(e2e_running_not_stopped(pid, 5, 50), "not running after SIGCONT");
	int status;
	cr_assert_eq(kill(pid, SIGTERM), 0);
	cr_assert(e2e_wait_timeout(pid, 5000, &status));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "status 0x%x", status);
}

/* SIGTERM sent to the traced target reaches its handler at once:
 * threads_blocked without a lifetime exits 0 only when SIGTERM or SIGINT
 * arrives (fixtures/threads_blocked.c), and does within a second. The
 * recording ends with the target, says it exited 0, and holds its
 * threads' stacks. */
Test(e2e_signals, signal_reaches_traced_target, .timeout = 60,
     .fini = e2e_cleanup)
{
	const char *out;
	pid_t pid;
	struct e2e_proc wallspy = attach_sampling(&pid, NULL, NULL, &out);
	int status;

	cr_assert_eq(e2e_tracer(pid, pid), wallspy.pid);
	double sent = e2e_now();
	cr_assert_eq(kill(pid, SIGTERM), 0);
	cr_assert(e2e_wait_timeout(pid, 5000, &status),
		  "target did not handle SIGTERM while traced");
	double handled = e2e_now() - sent;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "status 0x%x: not the exit of its SIGTERM handling", status);
	cr_assert_lt(handled, 1.0, "SIGTERM took %.3f s to end the target", handled);

	struct e2e_result res;
	e2e_collect(&wallspy, 30000, 0, 0, &res);
	double ended = e2e_now() - sent;
	cr_assert_eq(e2e_exit_code(&res), 0, "stderr: %s", res.err);
	cr_assert_str_eq(e2e_parse_summary(res.err).target,
			 "target exited with status 0");
	cr_assert_lt(ended, 3.0, "wallspy ended %.3f s after the target's SIGTERM",
		     ended);
	struct ss_view v = ss_load(out);
	for (int t = 0; t < TB_THREADS; t++)
		cr_assert(ss_any_has(&v, tb_threads[t].inner), "no sample in %s",
			  tb_threads[t].inner);
}

/* A signal with a handler that reports: go_parked_n answers SIGUSR2 by
 * timing runtime.GoroutineProfile and printing the count of goroutines it
 * saw. Sent while wallspy samples it, the report must come, count every
 * goroutine, and the target must still be traced by wallspy after (its
 * leader; the other threads are traced while a tick samples them); when
 * the recording ends, the target runs on, untraced, and exits 0
 * on SIGTERM. */
Test(e2e_signals, handler_runs_and_reports_while_traced, .timeout = 90,
     .fini = e2e_cleanup)
{
	const char *args[] = { "1000", "5", NULL };
	struct e2e_proc target = e2e_start_go("go/go_parked_n", args, 30000);
	const char *opts[] = { "-d", "1.5", NULL };
	const char *out;
	struct e2e_proc wallspy = e2e_spawn_attach(target.pid, opts, "out.json",
						   &out);
	char line[256];
	int goroutines = 0, calls = 0;

	cr_assert_eq(kill(target.pid, SIGUSR2), 0);
	cr_assert(e2e_wait_line_prefix(target.out_fd, "goroutineprofile ", line,
				       sizeof(line), 30000),
		  "no report of SIGUSR2's handler while traced");
	cr_assert_eq(e2e_tracer(target.pid, target.pid), wallspy.pid,
		     "wallspy let go of the target while its handler ran");
	cr_assert_eq(sscanf(line, "goroutineprofile goroutines=%d calls=%d",
			    &goroutines, &calls), 2, "report: %s", line);
	cr_assert_geq(goroutines, 1000, "report: %s", line);
	cr_assert_eq(calls, 5, "report: %s", line);

	struct e2e_result res;
	e2e_collect(&wallspy, 30000, 0, 0, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "stderr: %s", res.err);
	cr_assert_str_eq(e2e_parse_summary(res.err).target, "target still running");
	ss_load(out);
	e2e_check_healthy_then_stop(target.pid);
}

/* wallspy's own SIGINT or SIGTERM is honoured within 100 ms in every
 * phase: sent `delay_ms` after wallspy seized the leader of idle_threads
 * 1000 (seizing and stopping a thousand threads, loading debug info, a
 * tick, by the delay), it lets go of the target (the leader's TracerPid is
 * 0 again, polled every 0.5 ms) within 100 ms and ends; then no thread is
 * left traced or stopped and the target still answers SIGTERM. Returns the
 * milliseconds until the target was let go. */
static double let_go_after(pid_t pid, const char *const argv_head[], int sig,
			   int delay_ms)
{
	char pid_arg[16];
	snprintf(pid_arg, sizeof(pid_arg), "%d", pid);
	const char *argv[8];
	int n = 0;
	argv[n++] = e2e_wallspy();
	for (int i = 0; argv_head[i]; i++)
		argv[n++] = argv_head[i];
	argv[n++] = pid_arg;
	argv[n] = NULL;
	struct e2e_proc wallspy = e2e_spawn((char *const *)argv,
		&(struct e2e_spawn_opts){ .pipe_stdout = true, .pipe_stderr = true,
					  .cwd = e2e_tmpdir() });
	cr_assert(e2e_wait_traced(pid, wallspy.pid, 10000), "never seized");
	e2e_sleep_ms(delay_ms);
	double sent = e2e_now();
	cr_assert_eq(kill(wallspy.pid, sig), 0);
	while (e2e_tracer(pid, pid) != 0 && e2e_now() - sent < 10)
		usleep(500);
	double let_go = (e2e_now() - sent) * 1e3;
	struct e2e_result res;
	e2e_collect(&wallspy, 10000, 0, 0, &res);
	pid_t tids[1100];
	int nt = e2e_tids(pid, tids, 1100);
	cr_assert_gt(nt, 1000, "idle_threads lost threads");
	for (int i = 0; i < nt; i++) {
		cr_assert_eq(e2e_tracer(pid, tids[i]), 0, "thread %d left traced", tids[i]);
		char state = e2e_proc_state(pid, tids[i]);
		cr_assert(state != 't' && state != 'T', "thread %d left stopped (%c)",
			  tids[i], state);
	}
	cr_log_info("%s %s after %d ms: let go after %.1f ms", argv_head[0],
		    strsignal(sig), delay_ms, let_go);
	return let_go;
}

Test(e2e_signals, stop_signal_honoured_within_100ms_in_every_phase,
     .timeout = 120, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("idle_threads", "1000", "ready", 30000);
	const char *attach[] = { "attach", "-o", "out.json", NULL };
	const char *dump[] = { "dump", NULL };
	/* 0: while seizing and loading; 30: the first ticks; 300: sampling. */
	const int delays[] = { 0, 30, 300 };
	double worst = 0;
	for (size_t d = 0; d < sizeof(delays) / sizeof(*delays); d++) {
		const int sig = d % 2 ? SIGTERM : SIGINT;
		double a = let_go_after(pid, attach, sig, delays[d]);
		double b = let_go_after(pid, dump, sig, delays[d] / 10);
		worst = a > worst ? a : worst;
		worst = b > worst ? b : worst;
	}
	cr_assert_leq(worst, 100.0, "a stop signal took %.1f ms to let the target go",
		      worst);
	e2e_check_healthy_then_stop(pid);
}
