/*
 * Unit tests of the dump writers (src/output/dump.c): a hand-made tick in
 * scrambled order, written into memory: the main thread first then ids,
 * identical stacks merged by --group (and only those: a different line, a
 * different wait reason, an unnamed frame at another offset are not), the
 * JSON parsing back with its header and groups.
 */
#include <criterion/criterion.h>
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ws_dump.h"

enum { PID = 100 };

/* Two frames per task: a leaf that varies, then "main". */
static struct ws_frame frames[2 * 6];
static struct ws_task tasks[6];
static struct ws_tick_task tick_tasks[6];
static struct ws_tick tick = { .tasks = tick_tasks, .ntasks = 6, .frames = frames,
				.task_noun = "task" };

static void set_task(size_t i, uint64_t id, const char *name, enum ws_state state,
		     const char *reason, const char *leaf, int line,
		     uint64_t offset)
{
	tasks[i] = (struct ws_task){ .id = id, .name = name, .thread = (pid_t)id,
				     .state = state, .wait_reason = reason };
	frames[2 * i] = (struct ws_frame){ .function = leaf, .file = leaf ? "a.c" : NULL,
					   .line = line, .module = "prog",
					   .module_offset = offset,
					   .address = 0x1000 + offset + 8 * i };
	frames[2 * i + 1] = (struct ws_frame){ .function = "main", .file = "a.c",
					       .line = 9, .module = "prog" };
	tick_tasks[i] = (struct ws_tick_task){ .task = &tasks[i], .first_frame = 2 * i,
					       .nframes = 2, .scale = 1 };
}

static void make_tick(void)
{
	/* Tasks 103, 105 and 107 print the same stack at different
	 * addresses; 104 differs by a line, 106 by its wait reason, the main
	 * thread (100) comes last in the tick. */
	set_task(0, 107, "w", WS_STATE_WAITING, "read", "block", 5, 0x10);
	set_task(1, 104, "w", WS_STATE_WAITING, "read", "block", 6, 0x10);
	set_task(2, 103, "w", WS_STATE_WAITING, "read", "block", 5, 0x10);
	set_task(3, 106, "w", WS_STATE_WAITING, "futex", "block", 5, 0x10);
	set_task(4, 105, "v", WS_STATE_WAITING, "read", "block", 5, 0x10);
	set_task(5, PID, "prog", WS_STATE_RUNNING, NULL, NULL, 0, 0x20);
}

static char *write_dump(bool json, bool group)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	struct ws_dump_info info = {
		.pid = PID, .executable = "/bin/prog", .command = "prog -x",
		.runtime = "threads", .held_ns = 250000, .took_ns = 4000000,
		.group = group,
	};
	make_tick();
	struct ws_error *err = json ? ws_dump_write_json(f, &info, &tick)
				    : ws_dump_write_text(f, &info, &tick);
	cr_assert_null(err);
	fclose(f);
	return buf;
}

Test(dump, text_order_and_header)
{
	char *out = write_dump(false, false);
	const char *want =
		"process 100: prog -x\n"
		"executable /bin/prog, runtime threads, 6 tasks, held 0.25 ms, took 4.0 ms\n"
		"\ntask 100 \"prog\" [running] thread 100\n";
	cr_assert(strncmp(out, want, strlen(want)) == 0, "%s", out);
	const char *p = out;
	uint64_t prev = 0;
	int blocks = 0;
	while ((p = strstr(p, "\ntask "))) {
		uint64_t id = strtoull(p + 6, NULL, 10);
		if (blocks++)
			cr_assert_gt(id, prev, "%s", out);
		prev = blocks == 1 ? 0 : id;
		p++;
	}
	cr_assert_eq(blocks, 6);
	free(out);
}

Test(dump, text_groups)
{
	char *out = write_dump(false, true);
	cr_assert_not_null(strstr(out, ", 6 tasks in 4 stacks, "), "%s", out);
	/* Members in id order; names differ, so each is named. */
	cr_assert_not_null(strstr(out,
		"\n3 tasks [waiting: read]: 103 \"w\", 105 \"v\", 107 \"w\"\n"
		"    block (a.c:5)\n    main (a.c:9)\n"), "%s", out);
	cr_assert_not_null(strstr(out, "\ntask 104 \"w\" [waiting: read]"), "%s", out);
	cr_assert_not_null(strstr(out, "\ntask 106 \"w\" [waiting: futex]"), "%s", out);
	/* Groups in the order of their first task: 100, 103.., 104, 106. */
	char *a = strstr(out, "\ntask 100 "), *b = strstr(out, "\n3 tasks "),
	     *c = strstr(out, "\ntask 104 "), *d = strstr(out, "\ntask 106 ");
	cr_assert(a && b && c && d && a < b && b < c && c < d, "%s", out);
	free(out);
}

Test(dump, json_header_and_groups)
{
	char *out = write_dump(true, true);
	cJSON *root = cJSON_Parse(out);
	cr_assert_not_null(root, "%s", out);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(root, "executable")),
			 "/bin/prog");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(root, "command")),
			 "prog -x");
	cr_assert_eq(cJSON_GetObjectItem(root, "task_count")->valuedouble, 6);
	cr_assert_float_eq(cJSON_GetObjectItem(root, "held_ms")->valuedouble, 0.25, 1e-9);
	cr_assert_float_eq(cJSON_GetObjectItem(root, "took_ms")->valuedouble, 4.0, 1e-9);
	const cJSON *t = cJSON_GetObjectItem(root, "tasks");
	static const int order[] = { 100, 103, 104, 105, 106, 107 };
	for (int i = 0; i < 6; i++)
		cr_assert_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(t, i), "id")->valuedouble,
			     order[i]);
	const cJSON *g = cJSON_GetObjectItem(root, "groups");
	cr_assert_eq(cJSON_GetArraySize(g), 4);
	const cJSON *three = cJSON_GetArrayItem(g, 1);
	cr_assert_eq(cJSON_GetObjectItem(three, "count")->valuedouble, 3);
	const cJSON *ids = cJSON_GetObjectItem(three, "ids");
	cr_assert_eq(cJSON_GetArrayItem(ids, 0)->valuedouble, 103);
	cr_assert_eq(cJSON_GetArrayItem(ids, 1)->valuedouble, 105);
	cr_assert_eq(cJSON_GetArrayItem(ids, 2)->valuedouble, 107);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(three, "frames")), 2);
	cJSON_Delete(root);
	free(out);

	/* Without --group there is no "groups". */
	out = write_dump(true, false);
	root = cJSON_Parse(out);
	cr_assert_not_null(root);
	cr_assert_null(cJSON_GetObjectItem(root, "groups"));
	cJSON_Delete(root);
	free(out);
}

/* Unnamed frames group by module offset, not by address. */
Test(dump, unnamed_frames_by_offset)
{
	set_task(0, 201, NULL, WS_STATE_WAITING, "read", NULL, 0, 0x30);
	set_task(1, 202, NULL, WS_STATE_WAITING, "read", NULL, 0, 0x30);
	set_task(2, 203, NULL, WS_STATE_WAITING, "read", NULL, 0, 0x38);
	tick.ntasks = 3;
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	struct ws_dump_info info = { .pid = PID, .runtime = "threads", .group = true };
	cr_assert_null(ws_dump_write_text(f, &info, &tick));
	fclose(f);
	tick.ntasks = 6;
	cr_assert_not_null(strstr(buf, "\n2 tasks [waiting: read]: 201, 202\n"), "%s", buf);
	cr_assert_not_null(strstr(buf, "\ntask 203 [waiting: read]"), "%s", buf);
	cr_assert_not_null(strstr(buf, "process 100: ?\nexecutable ?, "), "%s", buf);
	free(buf);
}
