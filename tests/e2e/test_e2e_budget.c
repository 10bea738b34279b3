/*
 * End-to-end test of the budgets (--max-pause, --max-cpu): when a tick
 * samples a random subset of the tasks, weighted by (tasks / sampled), the
 * profile must match the unsampled one, for goroutines and for OS threads.
 * go_parked_n parks goroutine i in chain i % 4 (fixtures/go/go_parked_n.go),
 * so each chain holds a quarter of the goroutines by construction;
 * idle_threads A B parks A threads under idle_thread and B under
 * idle_thread_b (fixtures/idle_threads.c).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e_util.h"
#include "speedscope_view.h"
#include "summary.h"
#include "wallspy_run.h"

enum { GOROUTINES = 4000 };

static const char *const chain_leaf[4] = {
	"main.recvInner", "main.selectInner", "main.lockOuter", "main.condOuter",
};

struct shares {
	double chain[4];   /* weight under each chain's function */
	double total;      /* all weight */
	double seconds;    /* the recording's duration, from the summary */
};

static void record(pid_t pid, const char *seconds, const char *max_pause,
		   const char *max_cpu, bool stop_all, struct shares *out)
{
	const char *opts[] = { "-d", seconds, "--max-pause", max_pause,
			       "--max-cpu", max_cpu,
			       stop_all ? "--stop-all" : NULL, NULL };
	const char *file;
	struct e2e_result res = e2e_attach(pid, opts, "out.json", &file, 60000);

	cr_log_info("--max-pause %s --max-cpu %s: %s", max_pause, max_cpu,
		    res.err);
	struct e2e_summary s = e2e_parse_summary(res.err);
	out->seconds = s.seconds;
	/* The summary counts the live goroutines (the fixture's and the
	 * runtime's few), however few a tick sampled, and says how many.
	 * Over budget that count is the last tick's estimate: it read a
	 * uniform sample of the goroutine slots (allgs), and each slot that
	 * held a goroutine stands for slots/sampled of them, so every slot
	 * of the sample that held none (a dead goroutine, a system one)
	 * makes it one such share short (3924 for 4000 goroutines, seen).
	 * With a few such slots in ~4000 and at most ~100 sampled, four or
	 * more in one sample are rare (Poisson, mean ~0.1 to 0.3: odds
	 * below 1e-3). */
	long short_by = 0;
	if (s.sampled_per_tick > 0 && s.sampled_per_tick < s.tasks)
		short_by = 3 * (s.tasks + s.sampled_per_tick - 1) / s.sampled_per_tick;
	cr_expect(s.tasks >= GOROUTINES - short_by && s.tasks <= GOROUTINES + 50,
		  "summary: %ld tasks for %d goroutines and the runtime's "
		  "(a sampled count may be %ld short): %s",
		  s.tasks, GOROUTINES, short_by, s.line);
	cr_expect_leq(s.sampled_per_tick, s.tasks, "%s", s.line);
	if (strcmp(max_pause, "0") != 0)
		cr_expect_lt(s.sampled_per_tick, s.tasks / 2,
			     "a subset, yet the summary says: %s", s.line);

	struct ss_view v = ss_load(file);
	memset(out->chain, 0, sizeof(out->chain));
	out->total = 0;
	SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {
		out->total += w;
		for (int c = 0; c < 4; c++)
			if (ss_has(&v, sample, chain_leaf[c]))
				out->chain[c] += w;
	}
}

Test(e2e_budget, sampled_profile_matches_unsampled, .timeout = 120,
     .fini = e2e_cleanup)
{
	char count[16];
	snprintf(count, sizeof(count), "%d", GOROUTINES);
	const char *args[] = { count, NULL };
	struct e2e_proc proc = e2e_start_go("go/go_parked_n", args, 30000);

	struct shares all, sampled, cpu_sampled;
	record(proc.pid, "3", "0", "0", false, &all);
	/* A tenth of a millisecond affords 32 of the 4000 (the pause budget
	 * applies to ticks that stop the target): ~4800 samples per chain
	 * in 6 s, so 5 % is 4 standard errors of the binomial share. */
	record(proc.pid, "6", "0.1", "0", true, &sampled);
	/* 5 % of a core at 100 Hz (500 us a tick) affords about 80 with
	 * live ticks after a tick's own cost: ~6000 samples per chain in
	 * 3 s, where 5 % is 4 standard errors. (At the default 2 % a tick of the fewest, 32, costs more than
	 * the budget and the ticks are spaced, to about 50 Hz here: some
	 * 1,200 samples per chain, where 5 % is 2 standard errors; a CI run
	 * failed at 5.8 %. Spaced ticks keep the time: e2e_green's
	 * ticks_spaced_by_their_cost.) */
	record(proc.pid, "3", "0", "5", false, &cpu_sampled);

	/* Unsampled: every goroutine every tick, a quarter per chain. */
	for (int c = 0; c < 4; c++) {
		double per_second = all.chain[c] / all.seconds;
		cr_expect(fabs(per_second - GOROUTINES / 4.0) <= 0.05 * GOROUTINES / 4.0,
			  "unsampled: chain %s holds %.0f goroutine-seconds per second, expected %d",
			  chain_leaf[c], per_second, GOROUTINES / 4);
	}
	/* Sampled: the same within 5 %, chain by chain and in total. */
	for (int c = 0; c < 4; c++) {
		double a = all.chain[c] / all.seconds;
		double s = sampled.chain[c] / sampled.seconds;
		cr_expect(fabs(s - a) <= 0.05 * a,
			  "chain %s: %.0f goroutines per second sampled vs %.0f unsampled",
			  chain_leaf[c], s, a);
	}
	double a = all.total / all.seconds, s = sampled.total / sampled.seconds;
	cr_expect(fabs(s - a) <= 0.05 * a,
		  "total: %.0f goroutines sampled vs %.0f unsampled", s, a);
	for (int c = 0; c < 4; c++) {
		double ac = all.chain[c] / all.seconds;
		double cc = cpu_sampled.chain[c] / cpu_sampled.seconds;
		cr_expect(fabs(cc - ac) <= 0.05 * ac,
			  "--max-cpu 5: chain %s: %.0f goroutines per second vs %.0f unsampled",
			  chain_leaf[c], cc, ac);
	}
}

/* What a recording of idle_threads said: its summary, and the weight
 * (thread-seconds) under each group and in all. */
struct thread_shares {
	struct e2e_summary s;
	double a, b, total;
};

static struct thread_shares record_threads(pid_t pid, const char *seconds,
					   const char *max_cpu)
{
	const char *opts[] = { "-d", seconds, "--runtime", "threads",
			       "--max-cpu", max_cpu, NULL };
	const char *file;
	struct e2e_result res = e2e_attach(pid, opts, "threads.json", &file,
					   60000);
	cr_log_info("--max-cpu %s: %s", max_cpu, res.err);
	struct thread_shares out = {.s = e2e_parse_summary(res.err)};
	/* -d is kept whatever the thread count: wallspy's whole run (attach,
	 * ticks, detach, write) within 3 s of it. */
	cr_expect_lt(res.seconds, atof(seconds) + 3, "%.2f s for -d %s",
		     res.seconds, seconds);
	struct ss_view v = ss_load(file);
	SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {
		out.total += w;
		if (ss_has(&v, sample, "idle_thread_b"))
			out.b += w;
		else if (ss_has(&v, sample, "idle_thread"))
			out.a += w;
	}
	return out;
}

/*
 * Hundreds of OS threads beyond what --max-cpu affords: each tick samples a
 * uniform random few at the asked rate, each standing for (threads /
 * sampled), so every group's thread-seconds per second stay its size. 10 %
 * of a core is 1 ms a 10 ms tick, a few to a hundred threads of the 301
 * on any machine (tens of microseconds each here).
 */
enum { GROUP_A = 200, GROUP_B = 100 };

Test(e2e_budget, os_threads_subsampled_at_the_rate, .timeout = 120,
     .fini = e2e_cleanup)
{
	char *argv[] = { (char *)e2e_fixture("idle_threads"), "200", "100",
			 NULL };
	pid_t pid = e2e_start_ready(argv, "ready", 30000);
	struct thread_shares r = record_threads(pid, "3", "10");
	long threads = GROUP_A + GROUP_B + 1;
	cr_expect_eq(r.s.tasks, threads, "%s", r.s.line);
	double per_tick = (double)r.s.samples / (double)r.s.ticks;
	cr_expect_lt(per_tick, threads / 2, "not a subset: %s", r.s.line);
	/* The asked rate, 100 Hz, not the few ticks a second of sampling
	 * every thread on a loaded machine (missed ticks are counted). */
	cr_expect_geq(r.s.ticks + r.s.missed, 0.9 * 100 * r.s.seconds, "%s",
		      r.s.line);
	cr_expect_geq(r.s.ticks, 0.7 * 100 * r.s.seconds, "%s", r.s.line);
	/* The total is exact (ticks x threads); the groups are estimates:
	 * with k sampled a tick, group B's share per tick has a standard
	 * deviation of at most 30 % at k = 5, 3 % over 100 ticks. */
	double total = r.total / r.s.seconds, a = r.a / r.s.seconds,
	       b = r.b / r.s.seconds;
	cr_expect(fabs(total - threads) <= 0.05 * threads,
		  "%.1f thread-seconds per second for %ld threads", total,
		  threads);
	cr_expect(fabs(a - GROUP_A) <= 0.15 * GROUP_A,
		  "idle_thread: %.1f threads, %d by construction", a, GROUP_A);
	cr_expect(fabs(b - GROUP_B) <= 0.15 * GROUP_B,
		  "idle_thread_b: %.1f threads, %d by construction", b, GROUP_B);
}
