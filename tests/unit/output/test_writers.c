/*
 * Unit tests of the output side: the speedscope and folded writers (written
 * into memory, parsed back with cJSON or by hand), JSON string escaping,
 * atomic output files, and speedscope's own schema through
 * tools/validate-speedscope.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ws_folded.h"
#include "ws_json_out.h"
#include "ws_output_file.h"
#include "ws_speedscope.h"
#include "ws_profile.h"

static const struct ws_frame leaf_to_main[] = {
	{.address = 0x401030, .function = "leaf", .file = "a.c", .line = 30},
	{.address = 0x401020, .function = "middle", .file = "a.c", .line = 20},
	{.address = 0x401010, .function = "main", .file = "a.c", .line = 10},
};

static const struct ws_frame other_to_main[] = {
	{.address = 0x7f0000000010, .module = "libc.so.6",
	 .module_offset = 0x10},
	{.address = 0x401050, .function = "other", .file = "b.c", .line = 5},
	{.address = 0x401010, .function = "main", .file = "a.c", .line = 10},
};

/* Names that need every kind of escaping, and folded's separators. */
static const char *const nasty_names[] = {
	"quote\"backslash\\slash/",
	"ctl\x01\x1f\x7f tab\t nl\n cr\r bs\b ff\f",
	"semi;colon;and\nnewline",
	"utf8 h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80",
	"operator<<(std::ostream&, T const&) [with T = int]",
};

static struct ws_profile *create(enum ws_group_by group_by)
{
	struct ws_profile *profile = NULL;
	struct ws_error *err = ws_profile_create(group_by, 0.01, &profile);
	cr_assert_null(err, "create: %s", err ? err->message : "");
	return profile;
}

static void add(struct ws_profile *profile, const struct ws_sample *sample)
{
	struct ws_error *err = ws_profile_add(profile, sample);
	cr_assert_null(err, "add: %s", err ? err->message : "");
}

/* A small recording: 3 threads, mixed states, a failure, nasty names.
 * Returns the total weight added. */
static double fill(struct ws_profile *profile)
{
	double total = 0;
	struct ws_frame nasty[sizeof(nasty_names) / sizeof(nasty_names[0]) + 1];
	size_t nnasty = sizeof(nasty_names) / sizeof(nasty_names[0]);
	for (size_t i = 0; i < nnasty; i++)
		nasty[i] = (struct ws_frame){.function = nasty_names[i],
					     .file = "weird \"file\".c",
					     .line = (int)i + 1};
	nasty[nnasty] = leaf_to_main[2];
	for (int i = 0; i < 300; i++) {
		struct ws_sample s = {
			.task_id = (uint64_t)(i % 3),
			.task_name = i % 3 == 1 ? "worker \"1\"" : NULL,
			.thread = 100 + i % 3,
			.weight = 0.01,
			.time = (i / 3) * 0.01,
		};
		switch (i % 5) {
		case 0:
			s.frames = leaf_to_main;
			s.nframes = 3;
			s.state = WS_STATE_RUNNING;
			break;
		case 1:
			s.frames = other_to_main;
			s.nframes = 3;
			s.state = WS_STATE_WAITING;
			s.wait_reason = "futex";
			break;
		case 2:
			s.frames = nasty;
			s.nframes = nnasty + 1;
			s.state = WS_STATE_SYSCALL;
			s.weight = 0.02;
			break;
		case 3:
			s.state = WS_STATE_RUNNABLE;
			s.error = "task exited";
			break;
		default:
			s.frames = leaf_to_main + 1;
			s.nframes = 2;
			s.state = WS_STATE_WAITING;
			s.wait_reason = "semi;colon";
		}
		add(profile, &s);
		total += s.weight;
	}
	ws_profile_set_title(profile, "wallspy record ./app \"x\"");
	ws_profile_set_duration(profile, 1.0);
	return total;
}

/* Runs a writer into memory; returns the text (free it). */
static char *write_to_memory(const struct ws_profile *profile,
			     struct ws_error *(*writer)(const struct ws_profile *,
							FILE *))
{
	char *text = NULL;
	size_t size = 0;
	FILE *file = open_memstream(&text, &size);
	cr_assert_not_null(file);
	struct ws_error *err = writer(profile, file);
	cr_assert_null(err, "writer: %s", err ? err->message : "");
	cr_assert_eq(fclose(file), 0);
	return text;
}

static cJSON *parse_speedscope(const struct ws_profile *profile)
{
	char *text = write_to_memory(profile, ws_write_speedscope);
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

Test(writers, speedscope_structure)
{
	static const enum ws_group_by modes[] = {
		WS_GROUP_ALL, WS_GROUP_THREAD, WS_GROUP_STATE, WS_GROUP_TASK,
	};
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct ws_profile *profile = create(modes[m]);
		double total = fill(profile);
		check_speedscope(profile, total);
		ws_profile_destroy(profile);
	}
}

Test(writers, speedscope_group_profiles)
{
	struct ws_profile *profile = create(WS_GROUP_THREAD);
	fill(profile);
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

Test(writers, speedscope_empty_profile)
{
	struct ws_profile *profile = create(WS_GROUP_ALL);
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

Test(writers, speedscope_write_error)
{
	FILE *full = fopen("/dev/full", "w");
	cr_assert_not_null(full);
	struct ws_profile *profile = create(WS_GROUP_ALL);
	fill(profile);
	struct ws_error *err = ws_write_speedscope(profile, full);
	cr_assert_not_null(err);
	cr_assert_eq(err->kind, WS_ERR_OUTPUT);
	cr_assert(strstr(err->message, "No space left on device"), "%s",
		  err->message);
	ws_error_destroy(err);
	err = ws_write_folded(profile, full);
	cr_assert_not_null(err);
	cr_assert_eq(err->kind, WS_ERR_OUTPUT);
	ws_error_destroy(err);
	fclose(full);
	ws_profile_destroy(profile);
}

/* --- JSON strings --- */

static char *json_string(const char *s)
{
	char *text = NULL;
	size_t size = 0;
	FILE *file = open_memstream(&text, &size);
	ws_json_write_string(file, s);
	fclose(file);
	return text;
}

/* Writes s as JSON, parses it back; returns the decoded string (free). */
static char *round_trip(const char *s)
{
	char *text = json_string(s);
	cJSON *item = cJSON_Parse(text);
	cr_assert_not_null(item, "not JSON: %s", text);
	cr_assert(cJSON_IsString(item), "%s", text);
	/* Only printable ASCII and UTF-8 may appear unescaped. */
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		cr_assert_geq(*p, 0x20, "raw control byte in %s", text);
	char *decoded = strdup(item->valuestring);
	cJSON_Delete(item);
	free(text);
	return decoded;
}

Test(writers, json_escaping_round_trips)
{
	for (size_t i = 0; i < sizeof(nasty_names) / sizeof(nasty_names[0]);
	     i++) {
		char *back = round_trip(nasty_names[i]);
		cr_assert_str_eq(back, nasty_names[i]);
		free(back);
	}
	char all_controls[32];
	for (int c = 1; c < 32; c++)
		all_controls[c - 1] = (char)c;
	all_controls[31] = '\0';
	char *back = round_trip(all_controls);
	cr_assert_str_eq(back, all_controls);
	free(back);

	char *text = json_string("a\x01\"\\\n");
	cr_assert_str_eq(text, "\"a\\u0001\\\"\\\\\\n\"");
	free(text);
	text = json_string(NULL);
	cr_assert_str_eq(text, "null");
	free(text);
	text = json_string("");
	cr_assert_str_eq(text, "\"\"");
	free(text);
}

Test(writers, json_invalid_utf8_becomes_replacement)
{
#define FFFD "\xef\xbf\xbd"
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"a\xff" "b", "a" FFFD "b"},
		{"\xfe\xff", FFFD FFFD},
		{"cut \xe2\x82", "cut " FFFD},            /* truncated at end */
		{"cut \xe2\x82x", "cut " FFFD "x"},       /* one maximal subpart */
		{"\xc0\xaf", FFFD FFFD},                  /* overlong '/' */
		{"\xe0\x80\xaf", FFFD FFFD FFFD},         /* overlong */
		{"\xed\xa0\x80", FFFD FFFD FFFD},         /* surrogate */
		{"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD},/* above U+10FFFF */
		{"\x80lone", FFFD "lone"},
		{"\xf0\x9f\x98", FFFD},
		{"ok \xed\x9f\xbf \xf4\x8f\xbf\xbf", "ok \xed\x9f\xbf \xf4\x8f\xbf\xbf"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *back = round_trip(cases[i].in);
		cr_assert_str_eq(back, cases[i].out, "case %zu", i);
		free(back);
	}
#undef FFFD
}

Test(writers, json_numbers)
{
	static const struct {
		double value;
		const char *text;
	} cases[] = {
		{0, "0"}, {0.01, "0.01"}, {1.5, "1.5"}, {-2, "-2"},
		{123456.789012, "123456.789"}, {1e-12, "1e-12"},
		{NAN, "0"}, {INFINITY, "0"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = NULL;
		size_t size = 0;
		FILE *file = open_memstream(&text, &size);
		ws_json_write_number(file, cases[i].value);
		fclose(file);
		cr_assert_str_eq(text, cases[i].text);
		free(text);
	}
}

/* --- folded --- */

struct folded_line {
	char stack[1024];
	long long count;
};

/* Splits folded text into lines; checks each is "STACK COUNT". */
static size_t parse_folded(char *text, struct folded_line *lines, size_t max)
{
	size_t n = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		cr_assert_lt(n, max);
		char *space = strrchr(line, ' ');
		cr_assert_not_null(space, "no count: %s", line);
		char *end;
		lines[n].count = strtoll(space + 1, &end, 10);
		cr_assert_eq(*end, '\0', "bad count: %s", line);
		cr_assert_geq(lines[n].count, 1);
		*space = '\0';
		cr_assert_lt(strlen(line), sizeof(lines[n].stack));
		strcpy(lines[n].stack, line);
		n++;
	}
	return n;
}

static const struct folded_line *find_line(const struct folded_line *lines,
					   size_t n, const char *stack)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(lines[i].stack, stack) == 0)
			return &lines[i];
	return NULL;
}

Test(writers, folded_all)
{
	struct ws_profile *profile = create(WS_GROUP_ALL);
	double total = fill(profile);
	char *text = write_to_memory(profile, ws_write_folded);
	struct folded_line lines[64];
	size_t n = parse_folded(text, lines, 64);
	long long sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += lines[i].count;
		cr_assert_null(find_line(lines, i, lines[i].stack),
			       "duplicate line %s", lines[i].stack);
		/* Names only, and no frame may contain a line break. */
		cr_assert_null(strstr(lines[i].stack, "a.c"));
	}
	cr_assert_eq(sum, llround(total / 0.01));
	const struct folded_line *running =
		find_line(lines, n, "main;middle;leaf;[running]");
	cr_assert_not_null(running);
	cr_assert_eq(running->count, 60);
	const struct folded_line *failed =
		find_line(lines, n, "[failed to sample: task exited]");
	cr_assert_not_null(failed);
	cr_assert_eq(failed->count, 60);
	/* ';' inside a name is not a frame boundary. */
	const struct folded_line *semi =
		find_line(lines, n, "main;middle;[waiting: semi:colon]");
	cr_assert_not_null(semi);
	const struct folded_line *unnamed =
		find_line(lines, n, "main;other;libc.so.6+0x10;[waiting: futex]");
	cr_assert_not_null(unnamed);
	bool saw_nasty = false;
	for (size_t i = 0; i < n; i++)
		if (strstr(lines[i].stack, "semi:colon:and newline")) {
			saw_nasty = true;
			cr_assert_eq(lines[i].count, 120);
		}
	cr_assert(saw_nasty);
	free(text);
	ws_profile_destroy(profile);
}

Test(writers, folded_groups_are_roots)
{
	struct ws_profile *profile = create(WS_GROUP_TASK);
	fill(profile);
	char *text = write_to_memory(profile, ws_write_folded);
	struct folded_line lines[64];
	size_t n = parse_folded(text, lines, 64);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(strncmp(lines[i].stack, "task ", 5), 0, "%s",
			     lines[i].stack);
		cr_assert_null(find_line(lines, i, lines[i].stack),
			       "duplicate line %s", lines[i].stack);
	}
	/* Task 0 gets samples i = 0, 3, 6, ...: i % 5 cycles through every
	 * kind, 20 samples each; time-ordered entries are summed per stack. */
	const struct folded_line *line =
		find_line(lines, n, "task 0;main;middle;leaf;[running]");
	cr_assert_not_null(line);
	cr_assert_eq(line->count, 20);
	line = find_line(lines, n,
			 "task 1 \"worker \"1\"\";[failed to sample: task exited]");
	cr_assert_not_null(line);
	cr_assert_eq(line->count, 20);
	free(text);
	ws_profile_destroy(profile);
}

Test(writers, folded_counts_round)
{
	struct ws_profile *profile = create(WS_GROUP_ALL);
	struct ws_sample s = {
		.frames = leaf_to_main, .nframes = 3, .state = WS_STATE_RUNNING,
		.weight = 0.0149,
	};
	add(profile, &s);  /* 1.49 ticks -> 1 */
	s.state = WS_STATE_RUNNABLE;
	s.weight = 0.0151;
	add(profile, &s);  /* 1.51 ticks -> 2 */
	s.state = WS_STATE_IDLE;
	s.weight = 0.0001;
	add(profile, &s);  /* at least 1 */
	s.state = WS_STATE_SYSCALL;
	s.weight = 2.5;    /* a subsampled task: 250 ticks */
	add(profile, &s);
	char *text = write_to_memory(profile, ws_write_folded);
	cr_assert_str_eq(text,
			 "main;middle;leaf;[running] 1\n"
			 "main;middle;leaf;[runnable] 2\n"
			 "main;middle;leaf;[idle worker] 1\n"
			 "main;middle;leaf;[syscall] 250\n");
	free(text);
	ws_profile_destroy(profile);
}

/* --- output files --- */

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static char *make_temp_dir(void)
{
	char *dir = strdup("/tmp/wallspy-test-writers-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	return dir;
}

static void remove_temp_dir(char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/* Number of entries in dir other than . and .. */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *text = calloc(1, 4096);
	size_t n = fread(text, 1, 4095, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

Test(writers, output_commit_is_atomic)
{
	char *dir = make_temp_dir();
	char path[512];
	snprintf(path, sizeof(path), "%s/out.json", dir);
	FILE *old = fopen(path, "w");
	fputs("old", old);
	fclose(old);

	mode_t saved = umask(022);
	struct ws_output *out = NULL;
	struct ws_error *err = ws_output_open(path, &out);
	cr_assert_null(err, "%s", err ? err->message : "");
	fputs("new contents", ws_output_file(out));
	fflush(ws_output_file(out));
	/* Until the commit, readers see the old file; the temporary lies
	 * beside it. */
	char *text = read_file(path);
	cr_assert_str_eq(text, "old");
	free(text);
	cr_assert_eq(count_entries(dir), 2);
	err = ws_output_commit(out);
	umask(saved);
	cr_assert_null(err, "%s", err ? err->message : "");

	text = read_file(path);
	cr_assert_str_eq(text, "new contents");
	free(text);
	cr_assert_eq(count_entries(dir), 1, "temporary left behind");
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0644, "mode %o", st.st_mode & 0777);
	remove_temp_dir(dir);
}

Test(writers, output_abort_leaves_nothing)
{
	char *dir = make_temp_dir();
	char path[512];
	snprintf(path, sizeof(path), "%s/out.json", dir);
	struct ws_output *out = NULL;
	cr_assert_null(ws_output_open(path, &out));
	fputs("partial", ws_output_file(out));
	ws_output_abort(out);
	cr_assert_eq(count_entries(dir), 0);
	cr_assert_neq(access(path, F_OK), 0);
	ws_output_abort(NULL);
	remove_temp_dir(dir);
}

Test(writers, output_into_missing_directory_fails)
{
	char *dir = make_temp_dir();
	char path[512];
	snprintf(path, sizeof(path), "%s/missing/out.json", dir);
	struct ws_output *out = NULL;
	struct ws_error *err = ws_output_open(path, &out);
	cr_assert_not_null(err);
	cr_assert_eq(err->kind, WS_ERR_OUTPUT);
	char expected[600];
	snprintf(expected, sizeof(expected),
		 "write %s: No such file or directory", path);
	cr_assert_str_eq(err->message, expected);
	ws_error_destroy(err);
	cr_assert_eq(count_entries(dir), 0);
	remove_temp_dir(dir);
}

Test(writers, output_commit_failure_leaves_nothing)
{
	/* The final path is a non-empty directory: everything succeeds but
	 * the rename. */
	char *dir = make_temp_dir();
	char path[512], inner[600];
	snprintf(path, sizeof(path), "%s/out.json", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(inner, sizeof(inner), "%s/keep", path);
	fclose(fopen(inner, "w"));
	struct ws_output *out = NULL;
	cr_assert_null(ws_output_open(path, &out));
	fputs("data", ws_output_file(out));
	struct ws_error *err = ws_output_commit(out);
	cr_assert_not_null(err);
	cr_assert_eq(err->kind, WS_ERR_OUTPUT);
	cr_assert_eq(strncmp(err->message, "write ", 6), 0, "%s",
		     err->message);
	ws_error_destroy(err);
	cr_assert_eq(count_entries(dir), 1, "temporary left behind");
	cr_assert_eq(access(inner, F_OK), 0);
	remove_temp_dir(dir);
}

Test(writers, output_stdout)
{
	struct ws_output *out = NULL;
	cr_assert_null(ws_output_open("-", &out));
	cr_assert_eq(ws_output_file(out), stdout);
	cr_assert_null(ws_output_commit(out));
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

Test(writers, speedscope_passes_speedscope_schema, .timeout = 60)
{
	struct stat st;
	if (stat(WS_SOURCE_DIR "/node_modules/speedscope", &st) != 0)
		cr_assert_fail("speedscope's schema is missing: run `npm "
			       "install` in %s (needs node and npm; CI "
			       "installs it)", WS_SOURCE_DIR);
	cr_assert_eq(system("node --version >/dev/null 2>&1"), 0,
		     "node is not installed (apt-get install nodejs npm)");

	char *dir = make_temp_dir();
	static const enum ws_group_by modes[] = {
		WS_GROUP_ALL, WS_GROUP_THREAD, WS_GROUP_STATE, WS_GROUP_TASK,
	};
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/p%zu.speedscope.json", dir, m);
		struct ws_profile *profile = create(modes[m]);
		fill(profile);
		/* Invalid UTF-8 must still give a valid file. */
		struct ws_frame bad = {.function = "bad \xff\xfe utf8"};
		struct ws_sample s = {.frames = &bad, .nframes = 1,
				      .weight = 0.01, .time = 3};
		add(profile, &s);
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
	remove_temp_dir(dir);
}
