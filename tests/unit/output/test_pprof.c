/*
 * Unit tests of the pprof writer (src/output/pprof.c): a small recording
 * written to a file and read back by Go's own `go tool pprof` (the judge):
 * a gzip stream it accepts without a warning, totals in task-seconds
 * (subsampled samples weighed by their scale), labels for states, reasons,
 * ids and names, failures kept as frames, inlined calls in one location;
 * write errors.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e_util.h"
#include "pprof_tool.h"
#include "profile_fixture.h"
#include "ws_pprof.h"

static const char *write_file(const struct ws_profile *profile)
{
	const char *path = e2e_path(e2e_tmpdir(), "out.pb.gz");
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_null(ws_write_pprof(profile, f));
	cr_assert_eq(fclose(f), 0);
	return path;
}

Test(pprof, read_back_by_go_tool_pprof, .timeout = 300, .fini = e2e_cleanup)
{
	struct ws_profile *profile = pf_create(WS_GROUP_TASK);
	double total = pf_fill(profile);
	/* One sample standing for 4 tasks (a subset was sampled): 0.04
	 * task-seconds, in a call inlined into its caller. */
	const struct ws_frame inlined[] = {
		{.address = 0x4010, .function = "inner", .file = "i.c", .line = 3,
		 .module = "app", .inlined = true},
		{.address = 0x4010, .function = "outer", .file = "i.c", .line = 9,
		 .module = "app"},
	};
	struct ws_sample s = {.task_id = 42, .thread = 7, .state = WS_STATE_RUNNING,
			      .frames = inlined, .nframes = 2, .weight = 0.01,
			      .scale = 4, .time = 0.5};
	pf_add(profile, &s);
	total += 0.04;
	struct ws_profile_module app = {.name = "app", .path = "/opt/app",
					.build_id = "abcd", .start = 0x4000,
					.limit = 0x5000};
	cr_assert_null(ws_profile_add_module(profile, &app));
	const char *path = write_file(profile);

	char *bytes = e2e_read_file(path);
	cr_assert(bytes && (unsigned char)bytes[0] == 0x1f &&
		  (unsigned char)bytes[1] == 0x8b, "not a gzip file");

	double got = pt_total(path, NULL);
	cr_expect(fabs(got - total) < 1e-3, "pprof total %.3f s, added %.3f s",
		  got, total);
	cr_expect(fabs(pt_total(path, (const char *[]){
			   "-tagfocus=wait_reason=futex", NULL }) - 0.6) < 1e-3,
		  "futex samples: 60 of 0.01 s");

	const char *tags = pt_run(path, (const char *[]){ "-tags", NULL });
	cr_expect(strstr(tags, ": futex\n") && strstr(tags, ": semi;colon\n"),
		  "-tags: %s", tags);
	cr_expect(strstr(tags, ": worker \"1\"\n"), "task name: %s", tags);
	cr_expect(strstr(tags, " task_id: ") && strstr(tags, ": 42\n"),
		  "task ids: %s", tags);
	cr_expect(strstr(tags, " state: ") && strstr(tags, ": syscall\n"),
		  "states: %s", tags);

	/* Failures are frames; inner and outer share one location (inlined:
	 * -traces prints it as one address with two lines, -addresses keeps
	 * locations apart). */
	const char *traces = pt_run(path, (const char *[]){ "-traces", NULL });
	cr_expect(strstr(traces, "[failed to sample: task exited]"),
		  "-traces: %s", traces);
	const char *in = strstr(traces, "inner (inline)\n");
	cr_expect(in && strncmp(strchr(in, '\n') + 1, "             outer\n", 19) == 0,
		  "-traces: %s", traces);
	const char *raw = pt_run(path, (const char *[]){ "-raw", NULL });
	cr_expect(pt_line_with(raw, (const char *[]){ "0x4010", "inner", "i.c:3",
						       NULL }) &&
		  pt_line_with(raw, (const char *[]){ "outer", "i.c:9", NULL }),
		  "-raw: %s", raw);
	cr_expect(strstr(raw, "/opt/app") && strstr(raw, "abcd"),
		  "mapping: %s", raw);
	ws_profile_destroy(profile);
}

Test(pprof, write_error)
{
	FILE *full = fopen("/dev/full", "w");
	cr_assert_not_null(full);
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	pf_fill(profile);
	struct ws_error *err = ws_write_pprof(profile, full);
	cr_assert_not_null(err);
	cr_assert_eq(err->kind, WS_ERR_OUTPUT);
	ws_error_destroy(err);
	fclose(full);
	ws_profile_destroy(profile);
}
