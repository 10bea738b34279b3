/*
 * End-to-end tests of `wallspy record` on Go programs: the seed's three
 * workloads (background/julia-walltime-profiler-discussion.txt) as Go
 * fixtures (fixtures/go/go_workload1-3, scaled down through their
 * arguments), each speedscope profile parsed with cJSON and checked for the
 * seed's shape and for the root-frame contract (every goroutine sample,
 * running or parked, starts at runtime.goexit); and a short recording of
 * 10k parked goroutines whose pause is printed. Dump fidelity against Go's
 * own traceback is in test_e2e_go.c.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "e2e_util.h"
#include "speedscope_view.h"
#include "summary.h"
#include "wallspy_run.h"

/* CPU shares and timings: one test at a time. */
E2E_SERIAL_TESTS()

#define ROOT_FUNCTION "runtime.goexit"

enum { RATE_HZ = 100 };         /* wallspy's default --rate */

/* Path of Go fixture NAME; skips the test when it was not built. */
static const char *go_fixture(const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "go/%s", name);
	return e2e_need_fixture(path);
}

/*
 * The contract every Go profile must keep: each goroutine sample starts at
 * runtime.goexit (running and parked merge in the flame graph), ends in a
 * state leaf, and has a stack — at least one function between root and
 * leaf — unless its leaf says "[failed to sample: ...]". Violations are
 * counted and the heaviest printed; returns the total weight.
 */
static double check_go_samples(const struct ss_view *v)
{
	double total = 0, bad_weight = 0, worst = 0;
	int bad_root = 0, bad_leaf = 0, no_stack = 0;
	char worst_text[2048] = "";

	SS_FOR_EACH_SAMPLE(v, profile, sample, w) {
		const char *leaf = ss_frame_at(v, sample, -1);
		bool bad = false;

		total += w;
		if (strcmp(ss_frame_at(v, sample, 0), ROOT_FUNCTION) != 0) {
			bad_root++;
			bad = true;
		}
		if (!ss_is_state_leaf(leaf)) {
			bad_leaf++;
			bad = true;
		} else if (!ss_is_failed_leaf(leaf) && cJSON_GetArraySize(sample) < 3) {
			no_stack++;
			bad = true;
		}
		if (bad) {
			bad_weight += w;
			if (w > worst) {
				worst = w;
				snprintf(worst_text, sizeof(worst_text), "%s",
					 ss_stack_text(v, sample));
			}
		}
	}
	cr_expect(bad_root == 0 && bad_leaf == 0 && no_stack == 0,
		  "%d samples not rooted at " ROOT_FUNCTION ", %d without a state "
		  "leaf, %d without a stack (%.3f of %.3f s); heaviest (%.3f s): %s",
		  bad_root, bad_leaf, no_stack, bad_weight, total, worst, worst_text);
	return total;
}

/* Weight of samples by leaf class, for the logs. */
static void log_leaves(const struct ss_view *v, const char *what, double total)
{
	double running = 0, runnable = 0, waiting = 0, syscall = 0, failed = 0;

	SS_FOR_EACH_SAMPLE(v, profile, sample, w) {
		const char *leaf = ss_frame_at(v, sample, -1);

		if (strcmp(leaf, "[running]") == 0)
			running += w;
		else if (strcmp(leaf, "[runnable]") == 0)
			runnable += w;
		else if (strncmp(leaf, "[waiting", 8) == 0)
			waiting += w;
		else if (strncmp(leaf, "[syscall", 8) == 0)
			syscall += w;
		else if (ss_is_failed_leaf(leaf))
			failed += w;
	}
	cr_log_info("%s: %.2f s of goroutine samples: running %.1f %%, runnable "
		    "%.1f %%, waiting %.1f %%, syscall %.1f %%, failed to sample "
		    "%.1f %%", what, total, 100 * running / total,
		    100 * runnable / total, 100 * waiting / total,
		    100 * syscall / total, 100 * failed / total);
}

/* `wallspy record -o DIR/out.json [opts] -- fixture args` to the end
 * (exit 0). A target the recording detaches from becomes ours (this test
 * process is made a subreaper): the caller adopts it, and
 * e2e_cleanup_adopting kills it at the latest. */
static struct e2e_result record(const char *const opts[], const char *fixture,
				const char *const args[], const char **out,
				int timeout_ms)
{
	const char *target[16];
	int n = 0;

	target[n++] = go_fixture(fixture);
	for (int i = 0; args && args[i]; i++)
		target[n++] = args[i];
	target[n] = NULL;
	e2e_become_subreaper();
	return e2e_record(opts, target, out, timeout_ms);
}

/*
 * Workload 1 (a_bunch_of_tasks_waiting_on_channel: 1024 tasks, one put
 * every 10 ms in the seed; 256 goroutines here, same timing, ~2.6 s): the
 * goroutines spend their lives parked receiving, so channel-receive frames
 * (runtime.chanrecv or the fixture's receiver main.takeFromChannel) carry
 * at least 80 % of the goroutine weight.
 */
Test(e2e_go_record, w1_channel_receive_share, .timeout = 120,
     .fini = e2e_cleanup_adopting)
{
	const char *args[] = { "256", NULL };
	const char *out;
	struct e2e_result res = record(NULL, "go_workload1", args, &out, 90000);
	double in_recv = 0, waiting_recv = 0;

	cr_assert(strstr(res.err, "target exited with status 0"), "stderr: %s",
		  res.err);
	struct ss_view v = ss_load(out);
	double total = check_go_samples(&v);

	SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {

		if (ss_has(&v, sample, "runtime.chanrecv") ||
		    ss_has(&v, sample, "main.takeFromChannel"))
			in_recv += w;
		if (ss_has(&v, sample, "main.takeFromChannel") &&
		    strcmp(ss_frame_at(&v, sample, -1), "[waiting: chan receive]") == 0)
			waiting_recv += w;
	}
	log_leaves(&v, "w1", total);
	cr_log_info("w1: %.1f %% of %.2f s under channel receive frames, %.1f %% "
		    "main.takeFromChannel in [waiting: chan receive]; %s",
		    100 * in_recv / total, total, 100 * waiting_recv / total,
		    e2e_parse_summary(res.err).line);
	cr_assert_gt(total, 0);
	cr_assert_geq(in_recv, 0.80 * total,
		      "only %.1f %% of goroutine weight under channel receive",
		      100 * in_recv / total);
}

/*
 * Workload 2 (a_lot_of_short_lived_tasks: 65536 tasks with 100 us of
 * busy-wait after each spawn in the seed; 16384 here, same timing, ~2 s).
 * The seed's point: tasks that are gone must not silently vanish from the
 * profile. wallspy lists goroutines from runtime.allgs with every thread
 * stopped, so a listed goroutine cannot exit before its stack is copied
 * (Julia's "failed to sample" has no cause here; a dead g is simply not
 * listed). What must hold is that every goroutine alive at a tick is
 * sampled and weighed at that tick. A profile does not show ticks, so this
 * is checked through quantities known at every tick:
 *  - --max-pause 0: no pause budget, so every listed goroutine is sampled
 *    (no weighted random subset) and every weight is a whole number of
 *    ticks (1/rate, or (1 + missed)/rate after missed ticks);
 *  - goroutine 1 (main) lives through the whole run, so its weight is
 *    exactly (ticks + missed)/rate — minus missed ticks counted at a tick
 *    that found no goroutine at all (the target already gone), so
 *    ticks/rate <= weight <= (ticks + missed)/rate, in whole ticks;
 *  - runtime.forcegchelper's goroutine, started by the runtime before
 *    main.main, has main's weight (within the first tick);
 *  - summed over everything, weight x rate = samples + the missed ticks
 *    each sample carried: exactly the summary's sample count when no tick
 *    was missed, never less;
 *  - (ticks + missed)/rate is the summary's elapsed time (within jitter);
 *  - every sample has root runtime.goexit, a state leaf and a stack or a
 *    "[failed to sample: ...]" leaf (check_go_samples), and each
 *    short-lived goroutine is [runnable] (not started), [running] or
 *    failed: it never waits on anything.
 */
Test(e2e_go_record, w2_short_lived_accounting, .timeout = 120,
     .fini = e2e_cleanup_adopting)
{
	const char *opts[] = { "--group-by", "task", "--max-pause", "0",
			       "--max-cpu", "0", NULL };
	const char *args[] = { "16384", NULL };
	const char *out;
	struct e2e_result res = record(opts, "go_workload2", args, &out, 90000);
	double main_w = 0, forcegc_w = -1, short_w = 0;
	int short_goroutines = 0, nprofiles = 0, not_whole = 0, bad_short = 0;
	char bad_short_text[2048] = "";

	cr_assert(strstr(res.err, "target exited with status 0"), "stderr: %s",
		  res.err);
	struct e2e_summary s = e2e_parse_summary(res.err);
	struct ss_view v = ss_load(out);
	double total = check_go_samples(&v);
	const cJSON *profile;

	cJSON_ArrayForEach(profile, v.profiles) {
		const cJSON *samples = cJSON_GetObjectItem(profile, "samples");
		long id = ss_task_id(profile);
		double w_profile = 0;
		bool system = false, forcegc = false;

		nprofiles++;
		cr_assert_geq(id, 0, "profile name \"%s\" is not \"task ID\"",
			      ss_profile_name(profile));
		for (int i = 0; i < cJSON_GetArraySize(samples); i++) {
			const cJSON *sample = cJSON_GetArrayItem(samples, i);
			double w = ss_weight(profile, i);

			w_profile += w;
			if (!ss_whole_ticks(w, RATE_HZ))
				not_whole++;
			/* The entry, just inside the root, tells the
			 * runtime's goroutines apart. */
			if (strncmp(ss_frame_at(&v, sample, 1), "runtime.", 8) == 0)
				system = true;
			forcegc |= ss_has(&v, sample, "runtime.forcegchelper");
		}
		if (id == 1)
			main_w = w_profile;
		if (forcegc)
			forcegc_w = w_profile;
		if (id == 1 || system)
			continue;
		short_goroutines++;
		short_w += w_profile;
		for (int i = 0; i < cJSON_GetArraySize(samples); i++) {
			const cJSON *sample = cJSON_GetArrayItem(samples, i);
			const char *leaf = ss_frame_at(&v, sample, -1);

			if (strcmp(leaf, "[runnable]") == 0 ||
			    strcmp(leaf, "[running]") == 0 || ss_is_failed_leaf(leaf))
				continue;
			bad_short++;
			snprintf(bad_short_text, sizeof(bad_short_text), "task %ld: %s",
				 id, ss_stack_text(&v, sample));
		}
	}
	double sampled_time = (double)(s.ticks + s.missed) / RATE_HZ;

	log_leaves(&v, "w2", total);
	cr_log_info("w2: %s", s.line);
	cr_log_info("w2: %d goroutine profiles, %d short-lived goroutines seen "
		    "(%.2f s); main %.2f s, forcegc %.2f s, (%ld ticks + %ld missed) "
		    "/ %d Hz = %.2f s; total %.2f s = %.0f ticks for %ld samples",
		    nprofiles, short_goroutines, short_w, main_w, forcegc_w, s.ticks,
		    s.missed, RATE_HZ, sampled_time, total, total * RATE_HZ, s.samples);

	cr_expect_eq(not_whole, 0, "%d weights are not whole ticks", not_whole);
	cr_expect(ss_whole_ticks(main_w, RATE_HZ) && main_w * RATE_HZ >= s.ticks - 1e-6 &&
		  main_w <= sampled_time + 1e-6,
		  "main goroutine: %.3f s, expected between %ld ticks and (%ld + %ld "
		  "missed) ticks at %d Hz: some tick did not sample it",
		  main_w, s.ticks, s.ticks, s.missed, RATE_HZ);
	cr_expect(forcegc_w >= 0 && fabs(forcegc_w - main_w) <= 1.0 / RATE_HZ + 1e-6,
		  "forcegc goroutine %.3f s, main %.3f s: not sampled at every tick",
		  forcegc_w, main_w);
	cr_expect_geq(total * RATE_HZ, (double)s.samples - 1e-3,
		      "%.3f s for %ld samples: a sample weighs less than a tick or "
		      "was dropped", total, s.samples);
	if (s.missed == 0)
		cr_expect(fabs(total * RATE_HZ - (double)s.samples) < 1e-3,
			  "no missed tick, yet %.3f s for %ld samples", total,
			  s.samples);
	else
		cr_expect_leq(total * RATE_HZ, (double)(s.samples + s.missed * nprofiles) + 1e-3,
			      "%.3f s: more than %ld samples + %ld missed ticks can carry",
			      total, s.samples, s.missed);
	cr_expect(fabs(sampled_time - s.seconds) <= 0.1 * s.seconds + 0.05,
		  "(%ld ticks + %ld missed) / %d Hz = %.2f s, but the run took %.2f s",
		  s.ticks, s.missed, RATE_HZ, sampled_time, s.seconds);
	cr_expect_gt(short_goroutines, 0, "no short-lived goroutine in the profile");
	cr_expect_leq(short_goroutines, 16384);
	cr_expect_eq(bad_short, 0, "%d short-lived goroutine samples neither "
		     "runnable, running nor failed, e.g. %s", bad_short,
		     bad_short_text);
}

/*
 * Workload 3 (compute_heavy: 4096 tasks x 2^22 square roots plus one task
 * blocked on a channel in the seed). Go runs its default GOMAXPROCS (2
 * here) and starts a waiting goroutine about once per 10-20 ms time slice,
 * showing goroutines not yet started as their entry + [runnable], outside
 * sum_of_sqrt; the runtime's own ~6 parked goroutines count too. So the
 * not-started share is about slice / (2 x work per goroutine) and the
 * parked share 7 / (N + 7). Measured: 112 x 2^25 gave 74-89 % and
 * 96 x 2^26 gave 78-91 % (too close to the bar); 96 x 2^27 (~0.5 s of work
 * each) halves the not-started share; asserted >= 80 % (the seed's
 * shape); ~25-35 s.
 */
Test(e2e_go_record, w3_compute_share, .timeout = 180,
     .fini = e2e_cleanup_adopting)
{
	const char *args[] = { "96", "134217728", NULL };
	const char *out;
	struct e2e_result res = record(NULL, "go_workload3", args, &out, 170000);
	double in_sqrt = 0, waiter = 0, not_started = 0;

	cr_assert(strstr(res.err, "target exited with status 0"), "stderr: %s",
		  res.err);
	struct ss_view v = ss_load(out);
	double total = check_go_samples(&v);

	SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {

		if (ss_has(&v, sample, "main.sum_of_sqrt"))
			in_sqrt += w;
		if (cJSON_GetArraySize(sample) == 3 &&
		    strcmp(ss_frame_at(&v, sample, -1), "[runnable]") == 0)
			not_started += w;
		if (ss_has(&v, sample, "main.waitOnChannel") &&
		    strcmp(ss_frame_at(&v, sample, -1), "[waiting: chan receive]") == 0)
			waiter += w;
	}
	log_leaves(&v, "w3", total);
	cr_log_info("w3: %.1f %% of %.2f s under main.sum_of_sqrt, %.1f %% not "
		    "started (entry;[runnable]); channel waiter %.2f s; %s",
		    100 * in_sqrt / total, total, 100 * not_started / total, waiter,
		    e2e_parse_summary(res.err).line);
	cr_assert_gt(total, 0);
	cr_assert_geq(in_sqrt, 0.80 * total,
		      "only %.1f %% of goroutine weight under main.sum_of_sqrt",
		      100 * in_sqrt / total);
	cr_assert_gt(waiter, 0, "the goroutine parked on the channel is missing");
}

/*
 * 6b. `wallspy record -d 1` of go_parked_n 10000 (launched, so the first
 * ticks see the goroutines being made): completes, writes a valid profile
 * with the parked chains under runtime.goexit, leaves the target running
 * and not stopped. The summary's pause (median, p99, max) is printed for
 * the benchmark, not asserted on this shared machine.
 */
Test(e2e_go_record, record_10k_goroutines_pause, .timeout = 180,
     .fini = e2e_cleanup_adopting)
{
	const char *opts[] = { "-d", "1", NULL };
	const char *args[] = { "10000", NULL };
	const char *out;
	pid_t orphans[4];
	int status;

	struct e2e_result res = record(opts, "go_parked_n", args, &out, 120000);
	int norphans = e2e_adopt_orphans(orphans, 4);
	struct e2e_summary s = e2e_parse_summary(res.err);

	cr_log_info("record -d 1, go_parked_n 10000: pause median %.2f ms p99 %.2f "
		    "ms max %.2f ms (%ld ticks, %ld samples, %ld missed ticks; "
		    "wallspy ran %.2f s)", s.pause_median_ms, s.pause_p99_ms, s.pause_max_ms,
		    s.ticks, s.samples, s.missed, res.seconds);
	cr_assert(strstr(res.err, "target still running"), "stderr: %s", res.err);
	cr_assert_gt(s.ticks, 0);

	struct ss_view v = ss_load(out);
	double total = check_go_samples(&v);
	double recv = 0;
	SS_FOR_EACH_SAMPLE(&v, profile, sample, w)
		if (ss_has(&v, sample, "main.recvInner"))
			recv += w;
	log_leaves(&v, "10k", total);
	cr_assert_gt(recv, 0, "no main.recvInner sample");

	/* The target, detached from, is ours now: running, then exit 0. */
	cr_assert_eq(norphans, 1, "expected the detached target as our only "
		     "orphan, found %d", norphans);
	cr_assert(e2e_running_not_stopped(orphans[0], 5, 20),
		  "target stopped after wallspy detached");
	cr_assert_eq(kill(orphans[0], SIGTERM), 0);
	cr_assert(e2e_wait_timeout(orphans[0], 10000, &status),
		  "target did not exit on SIGTERM");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "target ended with status %#x", status);
}

/*
 * "If the target exits, the recording ends and the profile is written"
 * (wallspy(1)), whenever in a tick it exits. A short Go program exits
 * while a tick reads its goroutine registry in ~2-5 % of recordings, so 60
 * recordings of go_workload1 4 (~0.1 s each) usually hit that window: each
 * must exit 0 with a valid profile. Failures are listed with stderr.
 */
Test(e2e_go_record, target_exit_mid_tick_still_writes, .timeout = 180,
     .fini = e2e_cleanup_adopting)
{
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	char *argv[] = { (char *)e2e_wallspy(), "record", "-q", "-o", (char *)out,
			 "--", (char *)go_fixture("go_workload1"), "4", NULL };
	int failed = 0, runs = 60;

	for (int run = 0; run < runs; run++) {
		struct e2e_result res;

		unlink(out);
		e2e_run(argv, dir, 30000, &res);
		if (e2e_exit_code(&res) == 0 && e2e_exists(out))
			continue;
		failed++;
		cr_log_error("run %d: status %#x%s, %s; stderr: %s", run, res.status,
			     res.timed_out ? " (timed out)" : "",
			     e2e_exists(out) ? "profile written" : "no profile",
			     res.err);
	}
	cr_log_info("%d of %d short recordings failed", failed, runs);
	cr_expect_eq(failed, 0, "%d of %d recordings of a Go program that exits "
		     "failed or wrote no profile", failed, runs);
	struct ss_view v = ss_load(out);
	check_go_samples(&v);
}
