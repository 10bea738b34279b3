/*
 * Unit tests of the profile (src/profile/profile.c): interning of frames and stacks,
 * leaf frames, group names, merging and aggregation, and that the weights
 * put in come back out. Samples are built by hand; no process is traced.
 */
#include <ctype.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_fixture.h"
#include "ws_profile.h"

/* Innermost first, as an unwinder hands them over; pf_leaf_to_main is
 * profile_fixture's (leaf <- middle <- main). */
static const struct ws_frame other_to_main[] = {
	{.address = 0x401050, .function = "other", .file = "b.c", .line = 5},
	{.address = 0x401010, .function = "main", .file = "a.c", .line = 10},
};

static struct ws_sample sample_of(const struct ws_frame *frames, size_t n,
				  enum ws_state state, double time)
{
	return (struct ws_sample){
		.task_id = 1,
		.thread = 100,
		.state = state,
		.frames = frames,
		.nframes = n,
		.weight = 0.01,
		.time = time,
	};
}

/* What ws_profile_visit reported: each stack as "name;name;..." and its
 * weight. */
struct visited {
	char *stacks[64];
	double weights[64];
	size_t count;
	const struct ws_profile *profile;
};

static struct ws_error *collect(const uint32_t *stack, size_t depth,
				double weight, void *arg)
{
	struct visited *v = arg;
	cr_assert_lt(v->count, 64);
	char buf[1024] = "";
	for (size_t i = 0; i < depth; i++) {
		const struct ws_profile_frame *frame =
			ws_profile_frame(v->profile, stack[i]);
		cr_assert_not_null(frame);
		if (i)
			strcat(buf, ";");
		strcat(buf, frame->name);
	}
	v->stacks[v->count] = strdup(buf);
	v->weights[v->count] = weight;
	v->count++;
	return NULL;
}

static void visit(const struct ws_profile *profile, size_t group,
		  struct visited *v, bool aggregated)
{
	memset(v, 0, sizeof(*v));
	v->profile = profile;
	struct ws_error *err =
		aggregated ? ws_profile_visit_aggregated(profile, group, false,
							 collect, v)
			   : ws_profile_visit(profile, group, collect, v);
	cr_assert_null(err);
}

static void visited_free(struct visited *v)
{
	for (size_t i = 0; i < v->count; i++)
		free(v->stacks[i]);
}

static const char *leaf_of(struct ws_profile *profile, struct ws_sample s)
{
	pf_add(profile, &s);
	/* The leaf is the last frame interned for a new stack. */
	static char name[256];
	struct visited v;
	visit(profile, 0, &v, false);
	cr_assert_geq(v.count, 1);
	const char *last = strrchr(v.stacks[v.count - 1], ';');
	snprintf(name, sizeof(name), "%s",
		 last ? last + 1 : v.stacks[v.count - 1]);
	visited_free(&v);
	return name;
}

Test(profile, interns_frames_and_stacks)
{
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	struct ws_sample s = sample_of(pf_leaf_to_main, 3, WS_STATE_RUNNING, 0);
	for (int i = 0; i < 10; i++) {
		s.time = i * 0.01;
		pf_add(profile, &s);
	}
	s = sample_of(other_to_main, 2, WS_STATE_RUNNING, 0.1);
	pf_add(profile, &s);

	/* main, middle, leaf, [running], other */
	cr_assert_eq(ws_profile_frame_count(profile), 5);
	cr_assert_eq(ws_profile_stack_count(profile), 2);
	cr_assert_eq(ws_profile_sample_count(profile), 11);
	const struct ws_profile_frame *root = ws_profile_frame(profile, 0);
	cr_assert_str_eq(root->name, "main");
	cr_assert_str_eq(root->file, "a.c");
	cr_assert_eq(root->line, 10);
	cr_assert_null(ws_profile_frame(profile, 5));

	struct visited v;
	visit(profile, 0, &v, false);
	cr_assert_eq(v.count, 2);
	cr_assert_str_eq(v.stacks[0], "main;middle;leaf;[running]");
	cr_assert_str_eq(v.stacks[1], "main;other;[running]");
	visited_free(&v);
	ws_profile_destroy(profile);
}

Test(profile, frames_differ_by_file_and_line)
{
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	struct ws_frame frames[] = {
		{.function = "f", .file = "a.c", .line = 1},
		{.function = "f", .file = "a.c", .line = 2},
		{.function = "f", .file = "b.c", .line = 1},
		{.function = "f", .file = NULL, .line = 1},
		{.function = "f", .file = "", .line = 1},  /* same as NULL */
		{.function = "f", .file = "a.c", .line = 1},
	};
	struct ws_sample s = sample_of(frames, 6, WS_STATE_RUNNING, 0);
	pf_add(profile, &s);
	/* By function: f in a.c (shown at the first line seen, 1), in b.c,
	 * in no file, + [running]; all 5 lines stay lines. */
	cr_assert_eq(ws_profile_frame_count(profile), 4);
	cr_assert_eq(ws_profile_line_count(profile), 5);
	cr_assert_eq(ws_profile_frame(profile, 0)->line, 1);
	const struct ws_profile_frame *nofile = ws_profile_frame(profile, 1);
	cr_assert_str_eq(nofile->name, "f");
	cr_assert_null(nofile->file);
	ws_profile_destroy(profile);

	/* --lines: 4 distinct f + [running] */
	profile = pf_create(WS_GROUP_ALL);
	ws_profile_set_frame_key(profile, WS_FRAMES_BY_LINE);
	pf_add(profile, &s);
	cr_assert_eq(ws_profile_frame_count(profile), 5);
	nofile = ws_profile_frame(profile, 1);
	cr_assert_str_eq(nofile->name, "f");
	cr_assert_null(nofile->file);
	ws_profile_destroy(profile);
}

/* Inlined or not, at any line: one display frame per function, so a
 * Sandwich view (any aggregation by frame) lists each function once. */
Test(profile, one_frame_per_function)
{
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	struct ws_frame a[] = {
		{.address = 0x10, .function = "take", .file = "w.c", .line = 7,
		 .inlined = true},
		{.address = 0x10, .function = "main", .file = "w.c", .line = 20},
	};
	struct ws_frame b[] = {
		{.address = 0x20, .function = "take", .file = "w.c", .line = 9},
		{.address = 0x30, .function = "main", .file = "w.c", .line = 21},
	};
	struct ws_sample s = sample_of(a, 2, WS_STATE_RUNNING, 0);
	pf_add(profile, &s);
	s = sample_of(b, 2, WS_STATE_RUNNING, 0.01);
	pf_add(profile, &s);
	/* take, main, [running] */
	cr_assert_eq(ws_profile_frame_count(profile), 3);
	/* Lines keep what pprof needs (root first): main:20, take:7
	 * inlined, [running], main:21, take:9. */
	cr_assert_eq(ws_profile_line_count(profile), 5);
	cr_assert(ws_profile_line(profile, 1)->inlined);
	cr_assert_eq(ws_profile_line(profile, 1)->line, 7);
	cr_assert_eq(ws_profile_line(profile, 1)->address, 0x10);
	cr_assert_eq(ws_profile_line(profile, 1)->frame,
		     ws_profile_line(profile, 4)->frame);
	cr_assert_not(ws_profile_line(profile, 4)->inlined);
	struct visited v;
	visit(profile, 0, &v, false);
	cr_assert_eq(v.count, 1);
	cr_assert_str_eq(v.stacks[0], "main;take;[running]");
	cr_assert_float_eq(v.weights[0], 0.02, 1e-12);
	visited_free(&v);
	ws_profile_destroy(profile);
}

Test(profile, copies_strings)
{
	struct ws_profile *profile = pf_create(WS_GROUP_TASK);
	char function[] = "transient", file[] = "t.c", name[] = "worker";
	struct ws_frame frame = {.function = function, .file = file, .line = 3};
	struct ws_sample s = sample_of(&frame, 1, WS_STATE_WAITING, 0);
	s.task_name = name;
	pf_add(profile, &s);
	memset(function, 'x', sizeof(function) - 1);
	memset(file, 'x', sizeof(file) - 1);
	memset(name, 'x', sizeof(name) - 1);
	cr_assert_str_eq(ws_profile_frame(profile, 0)->name, "transient");
	cr_assert_str_eq(ws_profile_frame(profile, 0)->file, "t.c");
	cr_assert_str_eq(ws_profile_group_name(profile, 0), "task 1 \"worker\"");
	ws_profile_destroy(profile);
}

Test(profile, leaf_state_frames)
{
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	struct ws_sample s = sample_of(pf_leaf_to_main, 3, WS_STATE_RUNNING, 0);
	cr_assert_str_eq(leaf_of(profile, s), "[running]");
	s.state = WS_STATE_RUNNABLE;
	cr_assert_str_eq(leaf_of(profile, s), "[runnable]");
	s.state = WS_STATE_WAITING;
	cr_assert_str_eq(leaf_of(profile, s), "[waiting]");
	s.wait_reason = "chan receive";
	cr_assert_str_eq(leaf_of(profile, s), "[waiting: chan receive]");
	s.state = WS_STATE_SYSCALL;
	s.wait_reason = NULL;
	cr_assert_str_eq(leaf_of(profile, s), "[syscall]");
	s.wait_reason = "read";
	cr_assert_str_eq(leaf_of(profile, s), "[syscall: read]");
	/* A stale reason does not show under running code. */
	s.state = WS_STATE_RUNNING;
	s.wait_reason = "chan receive";
	s.frames = other_to_main;
	s.nframes = 2;
	cr_assert_str_eq(leaf_of(profile, s), "[running]");
	s.state = WS_STATE_IDLE;
	s.wait_reason = NULL;
	cr_assert_str_eq(leaf_of(profile, s), "[idle worker]");
	s.state = WS_STATE_UNKNOWN;
	cr_assert_str_eq(leaf_of(profile, s), "[unknown]");
	/* A state the runtime adapter does not know says which, as
	 * "[unknown state 12]" (Go 1.26's new states on an older wallspy). */
	s.wait_reason = "state 12";
	cr_assert_str_eq(leaf_of(profile, s), "[unknown state 12]");
	ws_profile_destroy(profile);
}

Test(profile, failed_to_sample_leaf)
{
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	/* No frames at all: the stack is the failure alone. */
	struct ws_sample s = sample_of(NULL, 0, WS_STATE_RUNNABLE, 0);
	s.error = "task exited";
	pf_add(profile, &s);
	/* Under known root frames, and the failure replaces the state. */
	s = sample_of(other_to_main + 1, 1, WS_STATE_WAITING, 0.01);
	s.wait_reason = "futex";
	s.error = "stack unreadable";
	pf_add(profile, &s);

	struct visited v;
	visit(profile, 0, &v, false);
	cr_assert_eq(v.count, 2);
	cr_assert_str_eq(v.stacks[0], "[failed to sample: task exited]");
	cr_assert_str_eq(v.stacks[1], "main;[failed to sample: stack unreadable]");
	visited_free(&v);
	ws_profile_destroy(profile);
}

Test(profile, unnamed_frames)
{
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	struct ws_frame frames[] = {
		{.address = 0x7f0000001234, .module = "libc.so.6",
		 .module_offset = 0x29d90},
		{.address = 0xdeadbeef},
		{.address = 0x1000, .function = "", .module = "a.out",
		 .module_offset = 0x10},
	};
	struct ws_sample s = sample_of(frames, 3, WS_STATE_RUNNING, 0);
	pf_add(profile, &s);
	struct visited v;
	visit(profile, 0, &v, false);
	cr_assert_eq(v.count, 1);
	cr_assert_str_eq(v.stacks[0],
			 "a.out+0x10;0xdeadbeef;libc.so.6+0x29d90;[running]");
	visited_free(&v);
	ws_profile_destroy(profile);
}

Test(profile, group_names)
{
	struct ws_profile *profile = pf_create(WS_GROUP_THREAD);
	struct ws_sample s = sample_of(pf_leaf_to_main, 3, WS_STATE_RUNNING, 0);
	s.thread = 1234;
	s.task_name = "worker";
	pf_add(profile, &s);
	s.thread = 1235;
	s.task_name = NULL;
	pf_add(profile, &s);
	s.thread = 0;
	pf_add(profile, &s);
	/* A thread first seen without a name takes the first one seen. */
	s.thread = 1235;
	s.task_name = "late";
	pf_add(profile, &s);
	cr_assert_eq(ws_profile_group_count(profile), 3);
	cr_assert_str_eq(ws_profile_group_name(profile, 0),
			 "thread 1234 \"worker\"");
	cr_assert_str_eq(ws_profile_group_name(profile, 1),
			 "thread 1235 \"late\"");
	cr_assert_str_eq(ws_profile_group_name(profile, 2),
			 "no thread \u2014 task-seconds");
	cr_assert_eq(ws_profile_group_by(profile), WS_GROUP_THREAD);
	ws_profile_destroy(profile);

	profile = pf_create(WS_GROUP_TASK);
	s.task_id = 7;
	s.task_name = "main";
	pf_add(profile, &s);
	s.task_id = 8;
	s.task_name = NULL;
	pf_add(profile, &s);
	s.task_id = 7; /* same task on another thread: same group */
	s.thread = 99;
	pf_add(profile, &s);
	cr_assert_eq(ws_profile_group_count(profile), 2);
	cr_assert_str_eq(ws_profile_group_name(profile, 0), "task 7 \"main\"");
	cr_assert_str_eq(ws_profile_group_name(profile, 1), "task 8");
	ws_profile_destroy(profile);

	profile = pf_create(WS_GROUP_STATE);
	s.state = WS_STATE_WAITING;
	s.wait_reason = "futex";
	pf_add(profile, &s);
	s.state = WS_STATE_RUNNING;
	pf_add(profile, &s);
	s.state = WS_STATE_WAITING;
	s.wait_reason = "select";  /* reasons share the state's group */
	pf_add(profile, &s);
	s.state = WS_STATE_IDLE;
	pf_add(profile, &s);
	cr_assert_eq(ws_profile_group_count(profile), 3);
	cr_assert_str_eq(ws_profile_group_name(profile, 0),
			 "waiting \u2014 task-seconds");
	cr_assert_str_eq(ws_profile_group_name(profile, 1),
			 "running \u2014 task-seconds");
	cr_assert_str_eq(ws_profile_group_name(profile, 2),
			 "idle \u2014 task-seconds");
	ws_profile_destroy(profile);

	/* Processes: one group each, named after the command it runs last;
	 * the same task id in two processes is two tasks. */
	profile = pf_create(WS_GROUP_PROCESS);
	s.task_id = 1;
	s.process = 100;
	s.process_name = "sh";
	pf_add(profile, &s);
	s.process = 101;
	pf_add(profile, &s);
	s.process_name = "make"; /* 101 called exec */
	pf_add(profile, &s);
	cr_assert_eq(ws_profile_group_count(profile), 2);
	cr_assert_str_eq(ws_profile_group_name(profile, 0), "process 100 \"sh\"");
	cr_assert_str_eq(ws_profile_group_name(profile, 1), "process 101 \"make\"");
	ws_profile_destroy(profile);
	profile = pf_create(WS_GROUP_TASK);
	s.process = 100;
	pf_add(profile, &s);
	s.process = 101;
	pf_add(profile, &s);
	cr_assert_eq(ws_profile_group_count(profile), 2);
	ws_profile_destroy(profile);
	s.process = 0;
	s.process_name = NULL;

	profile = pf_create(WS_GROUP_ALL);
	for (int tid = 1; tid < 5; tid++) {
		s.thread = tid;
		s.task_id = (uint64_t)tid;
		pf_add(profile, &s);
	}
	cr_assert_eq(ws_profile_group_count(profile), 1);
	cr_assert_str_eq(ws_profile_group_name(profile, 0),
			 "all tasks \u2014 task-seconds");
	ws_profile_destroy(profile);
}

Test(profile, time_ordered_groups_merge_consecutive)
{
	struct ws_profile *profile = pf_create(WS_GROUP_TASK);
	struct ws_sample a = sample_of(pf_leaf_to_main, 3, WS_STATE_RUNNING, 0);
	struct ws_sample b = sample_of(other_to_main, 2, WS_STATE_RUNNING, 0);
	/* A A A B A, weights 0.01 each, and another task in between. */
	double t = 0;
	for (int i = 0; i < 3; i++, t += 0.01) {
		a.time = t;
		pf_add(profile, &a);
	}
	struct ws_sample other_task = a;
	other_task.task_id = 2;
	pf_add(profile, &other_task);
	b.time = t;
	t += 0.01;
	pf_add(profile, &b);
	a.time = t;
	a.weight = 0.5;  /* a weighted (subsampled) sample */
	pf_add(profile, &a);

	cr_assert_eq(ws_profile_group_count(profile), 2);
	cr_assert_eq(ws_profile_group_entry_count(profile, 0), 3);
	struct visited v;
	visit(profile, 0, &v, false);
	cr_assert_eq(v.count, 3);
	cr_assert_str_eq(v.stacks[0], "main;middle;leaf;[running]");
	cr_assert_float_eq(v.weights[0], 0.03, 1e-12);
	cr_assert_str_eq(v.stacks[1], "main;other;[running]");
	cr_assert_float_eq(v.weights[1], 0.01, 1e-12);
	cr_assert_str_eq(v.stacks[2], "main;middle;leaf;[running]");
	cr_assert_float_eq(v.weights[2], 0.5, 1e-12);
	visited_free(&v);

	/* The aggregated view sums A across the interruption. */
	visit(profile, 0, &v, true);
	cr_assert_eq(v.count, 2);
	cr_assert_str_eq(v.stacks[0], "main;middle;leaf;[running]");
	cr_assert_float_eq(v.weights[0], 0.53, 1e-12);
	cr_assert_float_eq(v.weights[1], 0.01, 1e-12);
	visited_free(&v);

	cr_assert_float_eq(ws_profile_group_weight(profile, 0), 0.54, 1e-12);
	cr_assert_float_eq(ws_profile_group_start(profile, 0), 0, 1e-12);
	cr_assert_float_eq(ws_profile_group_end(profile, 0), 0.04 + 0.5, 1e-12);
	ws_profile_destroy(profile);
}

Test(profile, no_thread_group_aggregates)
{
	/* Parked tasks have no thread: their samples interleave in "no
	 * thread" every tick, which must not cost an entry per sample. */
	struct ws_profile *profile = pf_create(WS_GROUP_THREAD);
	struct ws_sample a = sample_of(pf_leaf_to_main, 3, WS_STATE_WAITING, 0);
	struct ws_sample b = sample_of(other_to_main, 2, WS_STATE_WAITING, 0);
	a.thread = b.thread = 0;
	struct ws_sample running = sample_of(pf_leaf_to_main, 3,
					     WS_STATE_RUNNING, 0);
	for (int tick = 0; tick < 100; tick++) {
		a.time = b.time = running.time = tick * 0.01;
		pf_add(profile, &a);
		pf_add(profile, &b);
		pf_add(profile, &running);  /* thread 100 */
	}
	cr_assert_eq(ws_profile_group_count(profile), 2);
	/* Threads first, then the merged group. */
	cr_assert_str_eq(ws_profile_group_name(profile, 1),
			 "no thread \u2014 task-seconds");
	cr_assert(ws_profile_group_merged(profile, 1));
	cr_assert_not(ws_profile_group_merged(profile, 0));
	cr_assert_eq(ws_profile_group_entry_count(profile, 1), 2);
	cr_assert_float_eq(ws_profile_group_weight(profile, 1), 2.0, 1e-9);
	cr_assert_eq(ws_profile_group_entry_count(profile, 0), 1);
	ws_profile_destroy(profile);
}

Test(profile, aggregated_groups_sum_by_stack)
{
	struct ws_profile *profile = pf_create(WS_GROUP_STATE);
	struct ws_sample a = sample_of(pf_leaf_to_main, 3, WS_STATE_RUNNING, 0);
	struct ws_sample b = sample_of(other_to_main, 2, WS_STATE_RUNNING, 0);
	struct ws_sample w = sample_of(other_to_main, 2, WS_STATE_WAITING, 0);
	for (int i = 0; i < 100; i++) {
		a.time = b.time = w.time = i * 0.01;
		pf_add(profile, &a);
		pf_add(profile, &b);
		pf_add(profile, i % 2 ? &a : &b);
		pf_add(profile, &w);
	}
	cr_assert_eq(ws_profile_group_count(profile), 2);
	cr_assert_eq(ws_profile_group_entry_count(profile, 0), 2);
	cr_assert_eq(ws_profile_group_entry_count(profile, 1), 1);
	struct visited v;
	visit(profile, 0, &v, false);
	cr_assert_eq(v.count, 2);
	cr_assert_str_eq(v.stacks[0], "main;middle;leaf;[running]");
	cr_assert_float_eq(v.weights[0], 1.5, 1e-9);
	cr_assert_str_eq(v.stacks[1], "main;other;[running]");
	cr_assert_float_eq(v.weights[1], 1.5, 1e-9);
	visited_free(&v);
	visit(profile, 1, &v, false);
	cr_assert_eq(v.count, 1);
	cr_assert_str_eq(v.stacks[0], "main;other;[waiting]");
	cr_assert_float_eq(v.weights[0], 1.0, 1e-9);
	visited_free(&v);
	cr_assert_eq(ws_profile_sample_count(profile), 400);
	ws_profile_destroy(profile);
}

static struct ws_error *sum_weights(const uint32_t *stack, size_t depth,
				    double weight, void *arg)
{
	(void)stack;
	if (depth) /* a gap is no sample */
		*(double *)arg += weight;
	return NULL;
}

Test(profile, group_totals_equal_weights_added)
{
	static const enum ws_group_by modes[] = {
		WS_GROUP_ALL, WS_GROUP_THREAD, WS_GROUP_STATE, WS_GROUP_TASK,
	};
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct ws_profile *profile = pf_create(modes[m]);
		double added = 0;
		unsigned seed = 1;
		for (int i = 0; i < 5000; i++) {
			seed = seed * 1103515245 + 12345;
			unsigned r = seed >> 16;
			struct ws_sample s = sample_of(
				r % 3 ? pf_leaf_to_main : other_to_main,
				r % 3 ? 3 : 2, (enum ws_state)(r % 5),
				i * 0.001);
			s.thread = (int)(r % 7);
			s.task_id = r % 11;
			s.weight = (r % 100) / 1000.0;
			if (r % 13 == 0)
				s.error = "gone";
			pf_add(profile, &s);
			added += s.weight;
		}
		double total = 0, visited_total = 0, aggregated_total = 0;
		for (size_t g = 0; g < ws_profile_group_count(profile); g++) {
			total += ws_profile_group_weight(profile, g);
			cr_assert_null(ws_profile_visit(profile, g, sum_weights,
							&visited_total));
			cr_assert_null(ws_profile_visit_aggregated(
				profile, g, false, sum_weights, &aggregated_total));
		}
		cr_assert_float_eq(total, added, 1e-9, "mode %zu", m);
		cr_assert_float_eq(visited_total, added, 1e-9, "mode %zu", m);
		cr_assert_float_eq(aggregated_total, added, 1e-9, "mode %zu", m);
		cr_assert_eq(ws_profile_sample_count(profile), 5000);
		ws_profile_destroy(profile);
	}
}

Test(profile, many_distinct_stacks)
{
	/* Enough frames, stacks and groups to grow every table many times. */
	struct ws_profile *profile = pf_create(WS_GROUP_TASK);
	char names[3][32];
	struct ws_frame frames[3] = {0};
	for (int i = 0; i < 3; i++)
		frames[i].function = names[i];
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 20000; i++) {
			snprintf(names[0], sizeof(names[0]), "f%d", i);
			snprintf(names[1], sizeof(names[1]), "g%d", i % 100);
			snprintf(names[2], sizeof(names[2]), "main");
			struct ws_sample s = sample_of(frames, 3,
						       WS_STATE_WAITING, round);
			s.task_id = (uint64_t)i;
			pf_add(profile, &s);
		}
	}
	/* f0..f19999, g0..g99, main, [waiting] */
	cr_assert_eq(ws_profile_frame_count(profile), 20000 + 100 + 2);
	cr_assert_eq(ws_profile_stack_count(profile), 20000);
	cr_assert_eq(ws_profile_group_count(profile), 20000);
	for (size_t g = 0; g < 20000; g += 997) {
		/* Seen at 0 s and at 1 s: the second second is a gap. */
		cr_assert_eq(ws_profile_group_entry_count(profile, g), 3);
		cr_assert_float_eq(ws_profile_group_weight(profile, g), 0.02,
				   1e-12);
		struct visited v;
		visit(profile, g, &v, false);
		char expected[64];
		snprintf(expected, sizeof(expected), "main;g%zu;f%zu;[waiting]",
			 g % 100, g);
		cr_assert_eq(v.count, 3);
		cr_assert_str_eq(v.stacks[0], expected);
		cr_assert_str_eq(v.stacks[1], "");
		cr_assert_float_eq(v.weights[1], 0.99, 1e-9);
		cr_assert_str_eq(v.stacks[2], expected);
		visited_free(&v);
	}
	ws_profile_destroy(profile);
}

static struct ws_error *stop_at_second(const uint32_t *stack, size_t depth,
				       double weight, void *arg)
{
	(void)stack;
	(void)depth;
	(void)weight;
	if (++*(int *)arg == 2)
		return ws_error_create(WS_ERR_OTHER, "stop");
	return NULL;
}

Test(profile, visit_stops_at_error)
{
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	struct ws_sample a = sample_of(pf_leaf_to_main, 3, WS_STATE_RUNNING, 0);
	struct ws_sample b = sample_of(other_to_main, 2, WS_STATE_RUNNING, 0);
	struct ws_sample c = sample_of(pf_leaf_to_main, 1, WS_STATE_RUNNING, 0);
	pf_add(profile, &a);
	pf_add(profile, &b);
	pf_add(profile, &c);
	int calls = 0;
	struct ws_error *err = ws_profile_visit(profile, 0, stop_at_second,
						&calls);
	cr_assert_not_null(err);
	cr_assert_str_eq(err->message, "stop");
	cr_assert_eq(calls, 2);
	ws_error_destroy(err);
	ws_profile_destroy(profile);
}

Test(profile, rejects_bad_numbers)
{
	struct ws_profile *profile = NULL;
	struct ws_error *err = ws_profile_create(WS_GROUP_ALL, 0, &profile);
	cr_assert_not_null(err);
	ws_error_destroy(err);
	err = ws_profile_create(WS_GROUP_ALL, NAN, &profile);
	cr_assert_not_null(err);
	ws_error_destroy(err);

	profile = pf_create(WS_GROUP_ALL);
	struct ws_sample s = sample_of(pf_leaf_to_main, 3, WS_STATE_RUNNING, 0);
	s.weight = NAN;
	err = ws_profile_add(profile, &s);
	cr_assert_not_null(err);
	ws_error_destroy(err);
	s.weight = -1;
	err = ws_profile_add(profile, &s);
	cr_assert_not_null(err);
	ws_error_destroy(err);
	s.weight = 0.01;
	s.time = INFINITY;
	err = ws_profile_add(profile, &s);
	cr_assert_not_null(err);
	ws_error_destroy(err);
	cr_assert_eq(ws_profile_sample_count(profile), 0);
	cr_assert_eq(ws_profile_group_count(profile), 0);
	/* Still usable. */
	s.time = 0;
	pf_add(profile, &s);
	cr_assert_eq(ws_profile_sample_count(profile), 1);
	ws_profile_destroy(profile);
}

Test(profile, title_and_duration)
{
	struct ws_profile *profile = pf_create(WS_GROUP_ALL);
	cr_assert_null(ws_profile_title(profile));
	char title[] = "wallspy record ./a.out";
	ws_profile_set_title(profile, title);
	title[0] = 'X';
	cr_assert_str_eq(ws_profile_title(profile), "wallspy record ./a.out");
	ws_profile_set_duration(profile, 12.5);
	cr_assert_float_eq(ws_profile_duration(profile), 12.5, 0);
	cr_assert_float_eq(ws_profile_interval(profile), 0.01, 0);
	ws_profile_destroy(profile);
	ws_profile_destroy(NULL);
}

/* Per-task profiles: the process's main thread (task = thread = pid)
 * first, then by id; a goroutine whose id happens to equal the pid (pids
 * wrap below a Go program's goroutine ids) is ordered by its id. */
Test(profile, main_thread_first_not_a_task_with_the_pid_as_id)
{
	for (int go = 0; go < 2; go++) {
		struct ws_profile *profile = pf_create(WS_GROUP_TASK);
		ws_profile_set_process(profile, 300);
		static const uint64_t ids[] = { 900, 300, 5 };
		for (size_t i = 0; i < 3; i++) {
			struct ws_sample s = sample_of(pf_leaf_to_main, 3,
						       WS_STATE_RUNNING, 0.01 * i);
			s.task_id = ids[i];
			/* Threads: each task is its thread; Go: task 300
			 * runs on thread 900. */
			s.thread = go && ids[i] == 300 ? 900 : (int)ids[i];
			pf_add(profile, &s);
		}
		cr_assert_eq(ws_profile_group_count(profile), 3);
		const char *first = ws_profile_group_name(profile, 0);
		const char *want = go ? "task 5" : "task 300";
		cr_expect(strncmp(first, want, strlen(want)) == 0 &&
			  !isdigit((unsigned char)first[strlen(want)]),
			  "%s: first group \"%s\"", go ? "go" : "threads", first);
		ws_profile_destroy(profile);
	}
}
