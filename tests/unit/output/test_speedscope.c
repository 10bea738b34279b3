/*
 * Unit tests of the speedscope writer (src/output/speedscope.c): a small
 * recording written into memory and parsed back with cJSON, checked against
 * the profile it came from (frames, groups, weights, root-first samples),
 * write errors, and speedscope's own schema through tools/validate-speedscope.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_util.h"
#include "profile_fixture.h"
#include "ws_output_file.h"
#include "ws_speedscope.h"

static cJSON *parse_speedscope(const struct ws_profile *profile)
{
	char *text = pf_write_to_memory(profile, ws_write_speedscope);
	cJSON *doc = cJSON_Parse(text);
	cr_assert_not_null(doc, "not JSON near: %.80s",
			   cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "");
	free(text);
	return doc;
}

static cJSON *member(const cJSON *object, const char *name)
{
	cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
	cr_assert_not_null(item, "missing \"%s\"", name);
	return item;
}

static void check_speedscope(const struct ws_profile *profile, double total)
{
	cJSON *doc = parse_speedscope(profile);
	cr_assert_str_eq(cJSON_GetStringValue(member(doc, "$schema")),
			 "https://www.speedscope.app/file-format-schema.json");
	const char *exporter = cJSON_GetStringValue(member(doc, "exporter"));
	cr_assert_not_null(exporter);
	cr_assert_eq(strncmp(exporter, "wallspy@", 8), 0, "%s", exporter);
	cr_assert_str_eq(exporter + 8, WS_VERSION);
	cr_assert_str_eq(cJSON_GetStringValue(member(doc, "name")),
			 "wallspy record ./app \"x\"");
	cr_assert_eq(member(doc, "activeProfileIndex")->valuedouble, 0);

	cJSON *frames = member(member(doc, "shared"), "frames");
	cr_assert(cJSON_IsArray(frames));
	int nframes = cJSON_GetArraySize(frames);
	cr_assert_eq((size_t)nframes, ws_profile_frame_count(profile));
	for (int i = 0; i < nframes; i++) {
		cJSON *frame = cJSON_GetArrayItem(frames, i);
		const struct ws_profile_frame *expected =
			ws_profile_frame(profile, (size_t)i);
		cr_assert_str_eq(cJSON_GetStringValue(member(frame, "name")),
				 expected->name);
		cJSON *file = cJSON_GetObjectItemCaseSensitive(frame, "file");
		cJSON *line = cJSON_GetObjectItemCaseSensitive(frame, "line");
		if (expected->file)
			cr_assert_str_eq(cJSON_GetStringValue(file),
					 expected->file);
		else
			cr_assert_null(file, "frame %d has a file", i);
		if (expected->line)
			cr_assert_eq(line->valueint, expected->line);
		else
			cr_assert_null(line, "frame %d has a line", i);
	}

	cJSON *profiles = member(doc, "profiles");
	int nprofiles = cJSON_GetArraySize(profiles);
	cr_assert_eq((size_t)nprofiles, ws_profile_group_count(profile));
	double sum = 0;
	for (int p = 0; p < nprofiles; p++) {
		cJSON *prof = cJSON_GetArrayItem(profiles, p);
		cr_assert_str_eq(cJSON_GetStringValue(member(prof, "type")),
				 "sampled");
		cr_assert_str_eq(cJSON_GetStringValue(member(prof, "unit")),
				 "seconds");
		cr_assert_str_eq(cJSON_GetStringValue(member(prof, "name")),
				 ws_profile_group_name(profile, (size_t)p));
		double start = member(prof, "startValue")->valuedouble;
		double end = member(prof, "endValue")->valuedouble;
		cr_assert_leq(start, end);
		cr_assert_float_eq(end, ws_profile_group_end(profile, (size_t)p),
				   1e-9);
		cJSON *samples = member(prof, "samples");
		cJSON *weights = member(prof, "weights");
		cr_assert_eq(cJSON_GetArraySize(samples),
			     cJSON_GetArraySize(weights));
		cr_assert_gt(cJSON_GetArraySize(samples), 0);
		double group_sum = 0;
		for (int s = 0; s < cJSON_GetArraySize(samples); s++) {
			cJSON *stack = cJSON_GetArrayItem(samples, s);
			int depth = cJSON_GetArraySize(stack);
			cr_assert_gt(depth, 0);
			for (int d = 0; d < depth; d++) {
				double index =
					cJSON_GetArrayItem(stack, d)->valuedouble;
				cr_assert(index >= 0 && index < nframes &&
					  index == floor(index),
					  "bad frame index %g", index);
			}
			/* Root first: "main" (or nothing above a failure),
			 * the state or failure frame last. */
			const char *root = cJSON_GetStringValue(member(
				cJSON_GetArrayItem(frames,
					cJSON_GetArrayItem(stack, 0)->valueint),
				"name"));
			const char *leaf = cJSON_GetStringValue(member(
				cJSON_GetArrayItem(frames,
					cJSON_GetArrayItem(stack, depth - 1)
						->valueint),
				"name"));
			cr_assert_eq(leaf[0], '[', "leaf %s", leaf);
			if (depth > 1)
				cr_assert_str_eq(root, "main");
			else
				cr_assert_str_eq(leaf,
						 "[failed to sample: task exited]");
			group_sum += cJSON_GetArrayItem(weights, s)->valuedouble;
		}
		cr_assert_float_eq(group_sum,
				   ws_profile_group_weight(profile, (size_t)p),
				   1e-6);
		sum += group_sum;
	}
	cr_assert_float_eq(sum, total, 1e-6);
	cJSON_Delete(doc);
}

Test(speedscope, structure)
{
	static const enum ws_group_by modes[] = {
		WS_GROUP_ALL, WS_GROUP_THREAD, WS_GROUP_STATE, WS_GROUP_TASK,
	};
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct ws_profile *profile = pf_create(modes[m]);
		double total = pf_fill(profile);
		check_speedscope(profile, total);
		ws_profile_destroy(profile);
	}
}

Test(speedscope, group_profiles)
{
	struct ws_profile *profile = pf_create(WS_GROUP_THREAD);
	pf_fill(profile);
	cJSON *doc = parse_speedscope(profile);
	cJSON *profiles = member(doc, "profiles");
	cr_assert_eq(cJSON_GetArraySize(profiles), 3);
	cr_assert_str_eq(cJSON_GetStringValue(member(
				 cJSON_GetArrayItem(profiles, 1), "name")),
			 "thread 101 \"worker \"1\"\"");
	/* Per-thread profiles keep time order: thread 100 alternates between
	 * two stacks, so consecutive samples differ. */
	cJSON *samples = member(cJSON_GetArrayItem(profiles, 0), "samples");
	cr_assert_gt(cJSON_GetArraySize(samples), 2);
	cJSON_Delete(doc);
	ws_profile_destroy(profile);
}

Test(speedscope, empty_profile)
{
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	cJSON *doc = parse_speedscope(profile);
	cr_assert_str_eq(cJSON_GetStringValue(member(doc, "name")), "wallspy");
	cJSON *profiles = member(doc, "profiles");
	cr_assert_eq(cJSON_GetArraySize(profiles), 1);
	cJSON *only = cJSON_GetArrayItem(profiles, 0);
	cr_assert_eq(cJSON_GetArraySize(member(only, "samples")), 0);
	cr_assert_eq(cJSON_GetArraySize(member(only, "weights")), 0);
	cJSON_Delete(doc);
	ws_profile_destroy(profile);
}

Test(speedscope, write_error)
{
	FILE *full = fopen("/dev/full", "w");
	cr_assert_not_null(full);
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	pf_fill(profile);
	struct ws_error *err = ws_write_speedscope(profile, full);
	cr_assert_not_null(err);
	cr_assert_eq(err->kind, WS_ERR_OUTPUT);
	cr_assert(strstr(err->message, "No space left on device"), "%s",
		  err->message);
	ws_error_destroy(err);
	fclose(full);
	ws_profile_destroy(profile);
}

/* --- speedscope's own schema --- */

static int run_validator(const char *file)
{
	char command[1024];
	snprintf(command, sizeof(command),
		 "node '%s/tools/validate-speedscope' '%s' >&2", WS_SOURCE_DIR,
		 file);
	int status = system(command);
	cr_assert(status != -1 && WIFEXITED(status), "cannot run: %s",
		  command);
	return WEXITSTATUS(status);
}

Test(speedscope, passes_speedscope_schema, .timeout = 60,
     .fini = e2e_cleanup)
{
	struct stat st;
	if (stat(WS_SOURCE_DIR "/node_modules/speedscope", &st) != 0)
		cr_assert_fail("speedscope's schema is missing: run `npm "
			       "install` in %s (needs node and npm; CI "
			       "installs it)", WS_SOURCE_DIR);
	cr_assert_eq(system("node --version >/dev/null 2>&1"), 0,
		     "node is not installed (apt-get install nodejs npm)");

	const char *dir = e2e_tmpdir();
	static const enum ws_group_by modes[] = {
		WS_GROUP_ALL, WS_GROUP_THREAD, WS_GROUP_STATE, WS_GROUP_TASK,
	};
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/p%zu.speedscope.json", dir, m);
		struct ws_profile *profile = pf_create(modes[m]);
		pf_fill(profile);
		/* Invalid UTF-8 must still give a valid file. */
		struct ws_frame bad = {.function = "bad \xff\xfe utf8"};
		struct ws_sample s = {.frames = &bad, .nframes = 1,
				      .weight = 0.01, .time = 3};
		pf_add(profile, &s);
		struct ws_output *out = NULL;
		cr_assert_null(ws_output_open(path, &out));
		cr_assert_null(ws_write_speedscope(profile,
						   ws_output_file(out)));
		cr_assert_null(ws_output_commit(out));
		ws_profile_destroy(profile);
		cr_assert_eq(run_validator(path), 0, "%s is invalid", path);
	}

	/* The validator is not a rubber stamp. */
	char broken[512];
	snprintf(broken, sizeof(broken), "%s/broken.json", dir);
	FILE *f = fopen(broken, "w");
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	      "\"shared\":{\"frames\":[{\"name\":\"a\"}]},\"profiles\":[{"
	      "\"type\":\"sampled\",\"name\":\"x\",\"unit\":\"seconds\","
	      "\"startValue\":0,\"endValue\":1,\"samples\":[[0,1]],"
	      "\"weights\":[1]}]}", f);
	fclose(f);
	cr_assert_neq(run_validator(broken), 0);
}
