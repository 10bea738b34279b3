/*
 * End-to-end tests of what a profile's frames and timelines mean:
 *  - one frame per function by default (what speedscope's Sandwich view
 *    and any aggregation by frame list), one per line with --lines;
 *  - a thread's profile is its timeline: thread_phases' three phases
 *    (fixtures/thread_phases.c: spin, sleep, spin, 0.5 s each) start where
 *    the fixture puts them;
 *  - under a budget, a task's profile shows what was observed, when: each
 *    sample weighs the ticks it covers, not the tasks it stands for, with
 *    gaps between, and no profile is longer than the recording; the main
 *    thread or first task comes first.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "e2e_util.h"
#include "speedscope_view.h"
#include "summary.h"
#include "wallspy_run.h"

E2E_SERIAL_TESTS()

enum { RATE_HZ = 100 };

/* How many functions (name, file) have more than one frame. */
static int repeated_functions(const struct ss_view *v, char *example,
			      size_t size)
{
	int repeated = 0;
	for (int i = 0; i < v->nframes; i++) {
		const cJSON *a = cJSON_GetArrayItem(v->frames, i);
		const char *name = cJSON_GetObjectItem(a, "name")->valuestring;
		const cJSON *file = cJSON_GetObjectItem(a, "file");
		for (int j = 0; j < i; j++) {
			const cJSON *b = cJSON_GetArrayItem(v->frames, j);
			const cJSON *bfile = cJSON_GetObjectItem(b, "file");
			if (strcmp(name, cJSON_GetObjectItem(b, "name")->valuestring) ||
			    (!file) != (!bfile) ||
			    (file && strcmp(file->valuestring, bfile->valuestring)))
				continue;
			if (!repeated++)
				snprintf(example, size, "%s", name);
			break;
		}
	}
	return repeated;
}

Test(e2e_timeline, one_frame_per_function, .timeout = 90,
     .fini = e2e_cleanup_adopting)
{
	const char *target[] = { e2e_fixture("greenrt/greenrt_w1_channel"), "100",
				 NULL };
	char example[256] = "";
	setenv("GREENRT_WORKERS", "2", 1);
	e2e_become_subreaper();

	const char *out;
	e2e_record(NULL, target, &out, 60000);
	struct ss_view v = ss_load(out);
	int by_function = repeated_functions(&v, example, sizeof(example));
	cr_expect_eq(by_function, 0, "%d functions have several frames, e.g. %s",
		     by_function, example);

	/* The same recording by line splits functions: what the default
	 * must not do, seen. A second of it catches only 1 to 3 functions
	 * at two of their lines (4 runs), sometimes none: up to 4 recordings
	 * until one does. */
	const char *opts[] = { "--lines", NULL };
	int by_line = 0;
	for (int attempt = 0; attempt < 4 && by_line == 0; attempt++) {
		e2e_record(opts, target, &out, 60000);
		v = ss_load(out);
		by_line = repeated_functions(&v, example, sizeof(example));
		cr_log_info("--lines, recording %d: %d functions in several "
			    "frames, e.g. %s", attempt + 1, by_line, example);
	}
	cr_expect_gt(by_line, 0, "--lines: no function at several lines in 4 "
		     "recordings");
}

Test(e2e_timeline, thread_phases, .timeout = 60, .fini = e2e_cleanup)
{
	const char *opts[] = { "--group-by", "thread", NULL };
	const char *target[] = { e2e_fixture("thread_phases"), "0.5", NULL };
	const char *out;
	e2e_record(opts, target, &out, 30000);
	struct ss_view v = ss_load(out);

	/* The phases thread's profile: the one with phase_spin_a. */
	const cJSON *profile, *phases = NULL;
	cJSON_ArrayForEach(profile, v.profiles) {
		const cJSON *sample;
		cJSON_ArrayForEach(sample, cJSON_GetObjectItem(profile, "samples"))
			if (ss_has(&v, sample, "phase_spin_a"))
				phases = profile;
	}
	cr_assert_not_null(phases, "no thread ran phase_spin_a");
	/* The main thread, which only joins, comes first. */
	cr_expect_neq(cJSON_GetArrayItem(v.profiles, 0), phases,
		      "the main thread is not the first profile");

	/* Walk the timeline: where each phase is first seen, from the
	 * profile's start. */
	double t = 0, sleep_at = -1, spin_b_at = -1, spin_a_end = 0;
	const cJSON *samples = cJSON_GetObjectItem(phases, "samples");
	for (int i = 0; i < cJSON_GetArraySize(samples); i++) {
		const cJSON *sample = cJSON_GetArrayItem(samples, i);
		if (ss_has(&v, sample, "phase_spin_a"))
			spin_a_end = t + ss_weight(phases, i);
		if (sleep_at < 0 && ss_has(&v, sample, "phase_sleep"))
			sleep_at = t;
		if (spin_b_at < 0 && ss_has(&v, sample, "phase_spin_b"))
			spin_b_at = t;
		t += ss_weight(phases, i);
	}
	double span = cJSON_GetObjectItem(phases, "endValue")->valuedouble -
		      cJSON_GetObjectItem(phases, "startValue")->valuedouble;
	cr_log_info("phases: spin_a until %.3f s, sleep from %.3f s, spin_b from "
		    "%.3f s, %.3f s in all (span %.3f s)", spin_a_end, sleep_at,
		    spin_b_at, t, span);
	cr_expect(fabs(sleep_at - 0.5) <= 0.1, "sleep begins at %.3f s", sleep_at);
	cr_expect(fabs(spin_b_at - 1.0) <= 0.1, "spin_b begins at %.3f s",
		  spin_b_at);
	cr_expect(fabs(t - 1.5) <= 0.15, "the thread's timeline is %.3f s", t);
	cr_expect(fabs(span - t) <= 0.011, "span %.3f s, samples %.3f s", span, t);
}

Test(e2e_timeline, subsampled_tasks_show_observed_time, .timeout = 120,
     .fini = e2e_cleanup)
{
	const char *args[] = { "4000", NULL };
	struct e2e_proc proc = e2e_start_go("go/go_parked_n", args, 30000);
	/* 10 % of a core: a subset of the 4000 every tick, at the asked
	 * rate. At the default 2 % a tick of the fewest goroutines may cost
	 * more than the budget, and the spaced ticks' samples then weigh the
	 * intervals skipped too (e2e_green's ticks_spaced_by_their_cost),
	 * which the bound below, from missed ticks alone, does not count. */
	const char *opts[] = { "-d", "1", "--group-by", "task", "--max-cpu", "10",
			       NULL };
	const char *out;
	struct e2e_result res = e2e_attach(proc.pid, opts, "out.json", &out, 60000);
	struct e2e_summary s = e2e_parse_summary(res.err);
	cr_assert_lt(s.sampled_per_tick, s.tasks, "not subsampled: %s", s.line);
	struct ss_view v = ss_load(out);

	int profiles = 0, with_gaps = 0, stretched = 0, too_long = 0;
	double observed = 0;
	const cJSON *profile;
	cJSON_ArrayForEach(profile, v.profiles) {
		const cJSON *samples = cJSON_GetObjectItem(profile, "samples");
		double span = cJSON_GetObjectItem(profile, "endValue")->valuedouble -
			      cJSON_GetObjectItem(profile, "startValue")->valuedouble;
		bool gap = false;
		profiles++;
		for (int i = 0; i < cJSON_GetArraySize(samples); i++) {
			const cJSON *sample = cJSON_GetArrayItem(samples, i);
			double w = ss_weight(profile, i);
			if (!sample->child) {
				gap = true;
				continue;
			}
			/* Observed: whole ticks (consecutive samples of one
			 * stack merge), never the tasks a sample stands for. */
			if (!ss_whole_ticks(w, RATE_HZ) || w > span + 1e-9)
				stretched++;
			observed += w;
		}
		with_gaps += gap;
		if (span > s.seconds + 2.0 / RATE_HZ)
			too_long++;
	}
	cr_log_info("%d task profiles, %d with gaps; %s", profiles, with_gaps,
		    s.line);
	cr_expect_eq(stretched, 0, "%d samples weigh more than the ticks they cover",
		     stretched);
	/* Each sample is one tick of one task (more after missed ticks), so
	 * the task profiles add up to samples / rate, not to the
	 * task-seconds of 4000 goroutines (~4000 s: what stretched weights
	 * would give). */
	cr_expect(observed >= (double)s.samples / RATE_HZ - 1e-6 &&
		  observed <= (double)s.samples * (1.0 + (double)s.missed) / RATE_HZ + 1e-6,
		  "task profiles hold %.2f s for %ld samples (%ld missed ticks)",
		  observed, s.samples, s.missed);
	cr_expect_eq(too_long, 0, "%d task timelines outlast the %.2f s recording",
		     too_long, s.seconds);
	cr_expect_gt(with_gaps, 0, "no task shows the ticks it was not sampled in");
	/* By id, so goroutine 1 (main) first when it was sampled at all (a
	 * subset of 4000 may miss any one goroutine for a second). */
	long last = -1;
	int disorder = 0;
	cJSON_ArrayForEach(profile, v.profiles) {
		long id = ss_task_id(profile);
		if (id >= 0 && id < last)
			disorder++;
		if (id >= 0)
			last = id;
	}
	cr_expect_eq(disorder, 0, "%d task profiles out of id order", disorder);
	e2e_kill(proc.pid);
}
