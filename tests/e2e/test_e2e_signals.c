/*
 * End-to-end tests of signals around a traced target: a SIGSTOPped target is
 * sampled as stopped and stays stopped after wallspy detaches (it is never
 * resumed by mistake); signals sent to the target while it is traced reach
 * its handlers at once.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_util.h"
#include "speedscope_view.h"

/* Every thread of pid is in state `want` ('T' group stop). */
static bool all_threads_in(pid_t pid, char want)
{
	pid_t tids[64];
	int n = e2e_tids(pid, tids, 64);
	if (n <= 0)
		return false;
	for (int i = 0; i < n; i++)
		if (e2e_proc_state(pid, tids[i]) != want)
			return false;
	return true;
}

Test(e2e_signals, sigstopped_target_stays_stopped, .timeout = 60,
     .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_blocked", "60", "ready", 10000);
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	char pid_text[32];
	snprintf(pid_text, sizeof(pid_text), "%d", pid);
	char *argv[] = { (char *)e2e_wallspy(), "attach", "-o", (char *)out,
			 "--group-by", "state", pid_text, NULL };
	struct e2e_spawn_opts opts = { .pipe_stdout = true, .pipe_stderr = true,
				       .cwd = dir };
	struct e2e_proc wallspy = e2e_spawn(argv, &opts);
	e2e_sleep_ms(500);
	cr_assert_eq(kill(pid, SIGSTOP), 0);
	/* Let wallspy sample the stopped process, then stop wallspy. */
	struct e2e_result res;
	e2e_collect(&wallspy, 30000, SIGINT, 1000, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "stderr: %s", res.err);

	/* Detached, and still in its group stop: nobody sent SIGCONT. */
	e2e_sleep_ms(200);
	cr_assert(all_threads_in(pid, 'T'),
		  "a thread of the SIGSTOPped target is not stopped after detach");

	struct ss_view v = ss_load(out);
	bool stopped_leaf = false;
	SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {
		(void)w;
		stopped_leaf |= strcmp(ss_frame_at(&v, sample, -1),
				       "[waiting: stopped]") == 0;
	}
	cr_assert(stopped_leaf, "no [waiting: stopped] samples while the target was stopped");

	/* SIGCONT resumes it; it still works and exits 0 on SIGTERM. */
	cr_assert_eq(kill(pid, SIGCONT), 0);
	cr_assert(e2e_running_not_stopped(pid, 5, 50), "not running after SIGCONT");
	int status;
	cr_assert_eq(kill(pid, SIGTERM), 0);
	cr_assert(e2e_wait_timeout(pid, 5000, &status));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "status 0x%x", status);
}

/* SIGTERM sent to the traced target reaches its handler (threads_blocked
 * exits 0 on SIGTERM): wallspy passes signals on, and the recording ends
 * with the target. */
Test(e2e_signals, signal_reaches_traced_target, .timeout = 60,
     .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_blocked", "60", "ready", 10000);
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	char pid_text[32];
	snprintf(pid_text, sizeof(pid_text), "%d", pid);
	char *argv[] = { (char *)e2e_wallspy(), "attach", "-o", (char *)out,
			 pid_text, NULL };
	struct e2e_spawn_opts opts = { .pipe_stdout = true, .pipe_stderr = true,
				       .cwd = dir };
	struct e2e_proc wallspy = e2e_spawn(argv, &opts);
	e2e_sleep_ms(700);
	cr_assert_eq(kill(pid, SIGTERM), 0);
	int status;
	cr_assert(e2e_wait_timeout(pid, 5000, &status),
		  "target did not handle SIGTERM while traced");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "status 0x%x", status);

	struct e2e_result res;
	e2e_collect(&wallspy, 30000, 0, 0, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "stderr: %s", res.err);
	cr_assert(e2e_exists(out));
}
