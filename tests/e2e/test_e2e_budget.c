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
	const char *dir = e2e_tmpdir();
	const char *file = e2e_path(dir, "out.json");
	char pid_text[32];
	snprintf(pid_text, sizeof(pid_text), "%d", pid);
	char *argv[] = { (char *)e2e_wallspy(), "attach", "-d", (char *)seconds,
			 "--max-pause", (char *)max_pause,
			 "--max-cpu", (char *)max_cpu, "-o", (char *)file,
			 stop_all ? "--stop-all" : pid_text,
			 stop_all ? pid_text : NULL, NULL };
	struct e2e_result res;
	e2e_run(argv, dir, 60000, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "stderr: %s", res.err);
	cr_log_info("--max-pause %s --max-cpu %s: %s", max_pause, max_cpu,
		    res.err);
	/* The summary is the line "wallspy: SECONDS s, ..." (a warning may
	 * come first). */
	bool found = false;
	for (const char *line = res.err; line && *line && !found;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		found = sscanf(line, "wallspy: %lf s,", &out->seconds) == 1;
	cr_assert(found, "no summary: %s", res.err);

	cJSON *root = e2e_load_json(file);
	cr_assert_not_null(root);
	const cJSON *frames = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "shared"), "frames");
	int leaf_index[4] = {-1, -1, -1, -1};
	for (int f = 0; f < cJSON_GetArraySize(frames); f++) {
		const char *name = cJSON_GetObjectItem(cJSON_GetArrayItem(frames, f), "name")->valuestring;
		for (int c = 0; c < 4; c++)
			if (strcmp(name, chain_leaf[c]) == 0)
				leaf_index[c] = f;
	}
	memset(out->chain, 0, sizeof(out->chain));
	out->total = 0;
	const cJSON *profile;
	cJSON_ArrayForEach(profile, cJSON_GetObjectItem(root, "profiles")) {
		const cJSON *samples = cJSON_GetObjectItem(profile, "samples");
		const cJSON *weights = cJSON_GetObjectItem(profile, "weights");
		for (int i = 0; i < cJSON_GetArraySize(samples); i++) {
			double w = cJSON_GetArrayItem(weights, i)->valuedouble;
			out->total += w;
			const cJSON *idx;
			cJSON_ArrayForEach(idx, cJSON_GetArrayItem(samples, i))
				for (int c = 0; c < 4; c++)
					if (idx->valueint == leaf_index[c])
						out->chain[c] += w;
		}
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
