/*
 * End-to-end test of the budgets (--max-pause, --max-cpu): when a tick
 * samples a random subset of the tasks, weighted by (tasks / sampled), the
 * profile must match the unsampled one. go_parked_n parks goroutine i in chain
 * i % 4 (fixtures/go/go_parked_n.go), so each chain holds a quarter of the
 * goroutines by construction.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
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
	/* 2 % of a core at 100 Hz (200 us a tick) affords about 100 with
	 * live ticks: ~7500 samples per chain in 3 s. */
	record(proc.pid, "3", "0", "2", false, &cpu_sampled);

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
			  "--max-cpu 2: chain %s: %.0f goroutines per second vs %.0f unsampled",
			  chain_leaf[c], cc, ac);
	}
}
