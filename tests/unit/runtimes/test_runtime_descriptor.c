/*
 * Unit tests of the descriptor adapter's walk (src/runtimes/
 * runtime_descriptor.c) over an in-memory image: a made-up runtime whose
 * registry is this test's own global `fr` (described by this binary's
 * DWARF), served by a reader that answers only inside `fr`, so anything
 * else is unmapped memory. No process, no threads: the walk's reads all go
 * through the reader. What is checked is known by construction: which
 * tasks each registry shape holds, that a task is listed once per tick
 * whatever `next` says, that cycles, wild pointers and absurd counts end
 * the walk with a failed sample and one warning (an error, read while the
 * target runs), and that format 2's decoding (registers on the stack,
 * length-prefixed names, wait-reason bits) reads what was put there.
 */
#include <criterion/criterion.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime_descriptor_internal.h"
#include "ws_random.h"
#include "ws_target.h"
#include "ws_task.h"

/* ---- the made-up runtime ---- */

struct fr_link {
	struct fr_link *next;
};

struct fr_string {           /* Crystal's String: type id, sizes, bytes */
	int32_t type_id;
	int32_t bytesize;
	int32_t length;
	uint8_t c;
};

struct fr_task {
	long id;
	int state;               /* 1 runnable, 2 waiting, 3 running, 9 done */
	unsigned events;         /* wait reasons, a bit each */
	struct fr_task *next;
	struct fr_string *label;
	char name[16];
	uint64_t sp;             /* registers saved on the task's stack */
	uint64_t stack_base;
	uint32_t stack_size;
	struct fr_link link;     /* intrusive lists point here */
	unsigned switches;
	uint8_t narrow_switches;
};

struct fr_queue {
	struct fr_task *head;
	long count;
};

enum { NTASKS = 16 };

struct fr_world {
	struct fr_task tasks[NTASKS];
	struct fr_queue ring, list;
	struct fr_link header;   /* a sentinel ring's header */
	struct fr_task *current;
	struct fr_task *table[8];
	long table_len;
	uint64_t stack[64];      /* the saved registers' stack */
	struct { struct fr_string s; char rest[24]; } label;
};

__attribute__((used)) struct fr_world fr;

static struct ws_error *image_read(void *arg, uint64_t address, void *buf,
				   size_t size)
{
	(void)arg;
	uint64_t base = (uint64_t)(uintptr_t)&fr;
	if (address < base || address - base > sizeof(fr) ||
	    size > sizeof(fr) - (address - base))
		return ws_error_create(WS_ERR_OTHER, "image: 0x%" PRIx64 "+%zu unmapped",
				       address, size);
	memcpy(buf, (const char *)&fr + (address - base), size);
	return NULL;
}

/* ---- the runtime under test ---- */

static Dwfl *dwfl;
static struct ws_target target;      /* no process, no threads */
static struct ws_task_list list;
static char warnings[4][512];
static int nwarnings;

static void on_warning(void *arg, const char *message)
{
	(void)arg;
	if (nwarnings < 4)
		snprintf(warnings[nwarnings], sizeof(warnings[0]), "%s", message);
	nwarnings++;
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

static void setup(void)
{
	memset(&fr, 0, sizeof(fr));
	fr.stack[9] = 0x401000; /* every task's saved rip */
	for (int i = 0; i < NTASKS; i++) {
		fr.tasks[i].id = 100 + i;
		fr.tasks[i].state = 1;
		snprintf(fr.tasks[i].name, sizeof(fr.tasks[i].name), "t%d", i);
		fr.tasks[i].sp = (uint64_t)(uintptr_t)&fr.stack[8];
	}
	nwarnings = 0;
	dwfl = dwfl_begin(&callbacks);
	cr_assert_not_null(dwfl);
	cr_assert_eq(dwfl_linux_proc_report(dwfl, getpid()), 0);
	cr_assert_eq(dwfl_report_end(dwfl, NULL, NULL), 0);
}

static void teardown(void)
{
	ws_task_list_deinit(&list);
	dwfl_end(dwfl);
}

#define OPTS .init = setup, .fini = teardown, .timeout = 30

/* A format 2 descriptor: REGISTRY and TASK_EXTRA spliced into a task
 * section every test shares; the task's name is NAME (NULL: "name"). */
static char *descriptor_named(const char *registry, const char *name,
			      const char *task_extra)
{
	static char text[8192];
	snprintf(text, sizeof(text),
		 "{\"wallspy\": \"runtime-descriptor/2\", \"name\": \"fr\",\n"
		 " \"registry\": %s,\n"
		 " \"task\": {\"id\": \"id\", \"name\": %s,\n"
		 "   \"state\": {\"member\": \"state\", \"values\": {\"1\": \"runnable\",\n"
		 "     \"2\": \"waiting\", \"3\": \"running\", \"9\": \"done\"}},\n"
		 "   \"registers\": {\"rip\": {\"member\": \"sp\", \"at\": 8},\n"
		 "     \"rsp\": {\"member\": \"sp\", \"add\": 16},\n"
		 "     \"rbp\": {\"member\": \"sp\", \"at\": 0}}%s%s}}",
		 registry, name ? name : "\"name\"", task_extra ? ",\n" : "",
		 task_extra ? task_extra : "");
	return text;
}

static char *descriptor(const char *registry, const char *task_extra)
{
	return descriptor_named(registry, NULL, task_extra);
}

static struct ws_runtime *create(const char *text)
{
	struct ws_memory_reader reader = { image_read, NULL };
	struct ws_runtime *rt;
	struct ws_error *err = ws_descriptor_runtime_create(text, "fr.json", &target,
							    dwfl, &reader,
							    on_warning, NULL, &rt);
	cr_assert_null(err, "%s", err ? err->message : "");
	return rt;
}

/* One tick: list the tasks, stopped (live: false) or live. */
static struct ws_error *tick(struct ws_runtime *rt, bool live)
{
	struct ws_read_context context = { .live = live };
	ws_task_list_clear(&list);
	return rt->ops->list_tasks(rt, &target, &context, &list);
}

static void tick_ok(struct ws_runtime *rt)
{
	struct ws_error *err = tick(rt, false);
	cr_assert_null(err, "%s", err ? err->message : "");
}

static size_t count_id(long id)
{
	size_t n = 0;
	for (size_t i = 0; i < list.n; i++)
		n += list.tasks[i].id == (uint64_t)id && !list.tasks[i].error;
	return n;
}

static size_t count_errors(const char *error)
{
	size_t n = 0;
	for (size_t i = 0; i < list.n; i++)
		n += list.tasks[i].error && strcmp(list.tasks[i].error, error) == 0;
	return n;
}

/* tasks[first..last] linked by next, the last pointing at `after`. */
static void chain(int first, int last, struct fr_task *after)
{
	for (int i = first; i < last; i++)
		fr.tasks[i].next = &fr.tasks[i + 1];
	fr.tasks[last].next = after;
}

/* ---- shapes ---- */

Test(runtime_descriptor, ring_lists_each_task_once, OPTS)
{
	/* A ring without a sentinel: 0 -> 1 -> 2 -> 3 -> 4 -> 0. */
	chain(0, 4, &fr.tasks[0]);
	fr.ring = (struct fr_queue){ &fr.tasks[0], 5 };
	fr.tasks[3].state = 9; /* done: not a task */
	struct ws_runtime *rt = create(descriptor(
		"{\"global\": \"fr.ring.head\", \"count\": \"fr.ring.count\","
		" \"layout\": \"ring\", \"next\": \"next\"}", NULL));

	tick_ok(rt);
	cr_assert_eq(list.n, 4, "%zu tasks", list.n);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(count_id(100 + i), i == 3 ? 0 : 1, "task %d", i);
	cr_assert_str_eq(list.tasks[0].name, "t0");
	cr_assert_eq(list.tasks[0].state, WS_STATE_RUNNABLE);
	cr_assert_eq(nwarnings, 0);
	ws_runtime_destroy(rt);
}

/* A switch count proves a task did not run since any earlier read only if
 * it cannot come back to a value meanwhile: 32 bits or more. */
Test(runtime_descriptor, switch_count_width_decides_version_wide, OPTS)
{
	chain(0, 1, &fr.tasks[0]);
	fr.ring = (struct fr_queue){ &fr.tasks[0], 2 };
	fr.tasks[0].switches = 70000;
	fr.tasks[0].narrow_switches = 7;
	const char *ring = "{\"global\": \"fr.ring.head\", \"count\": \"fr.ring.count\","
			   " \"layout\": \"ring\", \"next\": \"next\"}";
	struct ws_runtime *rt = create(descriptor(ring, "\"switches\": \"switches\""));

	tick_ok(rt);
	cr_assert_eq(list.n, 2);
	cr_expect_eq(list.tasks[0].version, 70000);
	cr_expect(list.tasks[0].version_wide, "32-bit count not wide");
	ws_runtime_destroy(rt);

	rt = create(descriptor(ring, "\"switches\": \"narrow_switches\""));
	tick_ok(rt);
	cr_assert_eq(list.n, 2);
	cr_expect_eq(list.tasks[0].version, 7);
	cr_expect_not(list.tasks[0].version_wide, "8-bit count taken as wide");
	ws_runtime_destroy(rt);

	rt = create(descriptor(ring, NULL));
	tick_ok(rt);
	cr_expect_not(list.tasks[0].version_wide, "no count, yet wide");
	ws_runtime_destroy(rt);
}

/* Several roots (Pth's queues) and the current task outside them: every
 * task once, by address, whichever root reaches it. */
Test(runtime_descriptor, roots_and_current_count_each_task_once, OPTS)
{
	chain(0, 2, &fr.tasks[0]);                 /* ring 0 1 2 */
	chain(2, 4, NULL);                         /* list 2 3 4: 2 in both */
	fr.tasks[2].next = &fr.tasks[0];           /* ...but 2 belongs to the ring */
	fr.list = (struct fr_queue){ &fr.tasks[3], 2 };
	fr.tasks[3].next = &fr.tasks[4];
	fr.tasks[4].next = &fr.tasks[2];           /* the list reaches 2, then the ring */
	fr.ring = (struct fr_queue){ &fr.tasks[0], 3 };
	fr.current = &fr.tasks[7];
	struct ws_runtime *rt = create(descriptor(
		"{\"next\": \"next\", \"roots\": ["
		" {\"global\": \"fr.ring.head\", \"layout\": \"ring\"},"
		" {\"global\": \"fr.list.head\", \"layout\": \"list\"}],"
		" \"current\": \"fr.current\"}", NULL));

	tick_ok(rt);
	/* The list's walk goes on through the ring's tasks without listing
	 * them again, and stops when it comes back to one it reached. */
	for (int i = 0; i < 8; i++)
		cr_assert_eq(count_id(100 + i), i <= 4 || i == 7 ? 1 : 0,
			     "task %d listed %zu times", i, count_id(100 + i));
	ws_runtime_destroy(rt);
}

/* An intrusive ring with a sentinel header (Linux's list_head): pointers
 * point at each task's link member, the walk ends back at the header. */
Test(runtime_descriptor, sentinel_ring_through_link_members, OPTS)
{
	fr.header.next = &fr.tasks[5].link;
	fr.tasks[5].link.next = &fr.tasks[6].link;
	fr.tasks[6].link.next = &fr.tasks[9].link;
	fr.tasks[9].link.next = &fr.header;
	struct ws_runtime *rt = create(descriptor(
		"{\"global\": \"fr.header\", \"layout\": \"sentinel-ring\","
		" \"task\": \"struct fr_task\", \"link\": \"link\", \"next\": \"next\"}",
		NULL));

	tick_ok(rt);
	cr_assert_eq(list.n, 3);
	cr_assert(count_id(105) == 1 && count_id(106) == 1 && count_id(109) == 1);
	cr_assert_eq(list.tasks[0].address, (uint64_t)(uintptr_t)&fr.tasks[5]);
	ws_runtime_destroy(rt);
}

/* ---- hostile registries (issue #14) ---- */

/* A small cycle behind a count of 8 (every task counted 9 times before),
 * and one behind a count of 2^31 (dump held the target ~2 minutes and grew
 * to 5.7 GB): each task once, then a failed sample saying why, and one
 * warning however many ticks. */
Test(runtime_descriptor, list_cycles_end_the_walk, OPTS)
{
	static const long counts[] = { 8, 1L << 31 };
	for (size_t c = 0; c < 2; c++) {
		chain(0, 2, &fr.tasks[1]);          /* 0 -> 1 -> 2 -> 1 -> ... */
		fr.list = (struct fr_queue){ &fr.tasks[0], counts[c] };
		nwarnings = 0;
		struct ws_runtime *rt = create(descriptor(
			"{\"global\": \"fr.list.head\", \"count\": \"fr.list.count\","
			" \"next\": \"next\"}", NULL));

		for (int t = 0; t < 3; t++) {
			tick_ok(rt);
			cr_assert_eq(list.n, 4, "count %ld: %zu entries", counts[c], list.n);
			cr_assert(count_id(100) == 1 && count_id(101) == 1 &&
				  count_id(102) == 1);
			cr_assert_eq(count_errors("registry list has a cycle"), 1);
		}
		cr_assert_eq(nwarnings, 1, "%d warnings", nwarnings);
		cr_assert(strstr(warnings[0], "$.registry: registry list has a cycle"),
			  "%s", warnings[0]);
		/* Read while the target runs, the same is an error: the
		 * tick reads the registry again with the target stopped. */
		struct ws_error *err = tick(rt, true);
		cr_assert_not_null(err);
		cr_assert_str_eq(err->message, "registry: registry list has a cycle");
		ws_error_destroy(err);
		ws_runtime_destroy(rt);
	}
}

/* A wild next pointer cuts the list short: said, not silent. */
Test(runtime_descriptor, wild_next_pointer_is_reported, OPTS)
{
	chain(0, 2, (struct fr_task *)(uintptr_t)0x7000dead0000);
	fr.list = (struct fr_queue){ &fr.tasks[0], 5 };
	struct ws_runtime *rt = create(descriptor(
		"{\"global\": \"fr.list.head\", \"count\": \"fr.list.count\","
		" \"next\": \"next\"}", NULL));

	tick_ok(rt);
	cr_assert_eq(list.n, 4);
	cr_assert_eq(count_errors("registry list cut short: next pointer unreadable"), 1);
	cr_assert_eq(list.tasks[3].id, 0x7000dead0000);
	cr_assert_eq(nwarnings, 1);
	cr_assert(strstr(warnings[0], "cut short") && strstr(warnings[0], "0x7000dead0000"),
		  "%s", warnings[0]);
	ws_runtime_destroy(rt);
}

/* A list longer than its count (+ 64) or than registry.max stops there. */
Test(runtime_descriptor, list_longer_than_max_stops, OPTS)
{
	chain(0, NTASKS - 1, NULL);
	fr.list = (struct fr_queue){ &fr.tasks[0], 1000 };
	struct ws_runtime *rt = create(descriptor(
		"{\"global\": \"fr.list.head\", \"count\": \"fr.list.count\","
		" \"next\": \"next\", \"max\": 10}", NULL));

	tick_ok(rt);
	cr_assert_eq(list.n, 11);
	cr_assert_eq(count_errors("registry list longer than its count"), 1);
	ws_runtime_destroy(rt);
}

/* Under a task limit k (the budgets), a list keeps a uniform random
 * sample of k of its tasks, each standing for n / k: a tick's memory is
 * k tasks whatever the list's length. Over 4000 ticks of a 16-task list
 * with k = 4, each task is kept in about a quarter of them (binomial: sd
 * 27; the bound is 6 sd). */
Test(runtime_descriptor, list_sampled_within_the_limit, OPTS)
{
	enum { TICKS = 4000, K = 4 };
	size_t kept[NTASKS] = { 0 };
	struct ws_random random;
	ws_random_seed(&random, 42);
	chain(0, NTASKS - 1, NULL);
	fr.list = (struct fr_queue){ &fr.tasks[0], NTASKS };
	struct ws_runtime *rt = create(descriptor(
		"{\"global\": \"fr.list.head\", \"count\": \"fr.list.count\","
		" \"next\": \"next\"}", NULL));

	for (int t = 0; t < TICKS; t++) {
		struct ws_read_context context = { .limit = K, .random = &random };
		ws_task_list_clear(&list);
		struct ws_error *err = rt->ops->list_tasks(rt, &target, &context, &list);
		cr_assert_null(err, "%s", err ? err->message : "");
		cr_assert_eq(list.n, K, "%zu tasks kept", list.n);
		for (size_t i = 0; i < list.n; i++) {
			long id = (long)list.tasks[i].id;
			cr_assert(id >= 100 && id < 100 + NTASKS, "id %ld", id);
			cr_assert_eq(count_id(id), 1, "task %ld kept twice", id);
			cr_assert_float_eq(list.tasks[i].scale, (double)NTASKS / K, 1e-9);
			cr_assert_str_eq(list.tasks[i].name, fr.tasks[id - 100].name);
			kept[id - 100]++;
		}
	}
	for (int i = 0; i < NTASKS; i++)
		cr_assert(kept[i] > TICKS / 4 - 165 && kept[i] < TICKS / 4 + 165,
			  "task %d kept in %zu of %d ticks", i, kept[i], TICKS);
	/* Without a limit (dump), every task. */
	tick_ok(rt);
	cr_assert_eq(list.n, NTASKS);
	ws_runtime_destroy(rt);
}

/* Array counts of 2^31 and -1 (a recording aborted after 100 failed ticks)
 * are clamped to registry.max and to the memory readable behind the
 * array (here: up to the end of `fr`, so the slots past the table hold
 * garbage, read as failed samples), each said once; what is there is
 * sampled. */
Test(runtime_descriptor, array_counts_clamped_to_readable_memory, OPTS)
{
	static const long counts[] = { 1L << 31, -1 };
	for (size_t c = 0; c < 2; c++) {
		for (int i = 0; i < 8; i++)
			fr.table[i] = i < 5 ? &fr.tasks[i] : NULL;
		fr.table_len = counts[c];
		nwarnings = 0;
		/* The table reached through a pointer to its first slot. */
		struct ws_runtime *rt = create(descriptor(
			"{\"global\": \"fr.table\", \"count\": \"fr.table_len\","
			" \"layout\": \"pointer-array\"}", NULL));

		tick_ok(rt);
		tick_ok(rt);
		for (int i = 0; i < 5; i++)
			cr_assert_eq(count_id(100 + i), 1, "task %d", i);
		/* Said once each, over two ticks: the count over max, over
		 * readable memory, and the slots read past the table. */
		cr_assert_eq(nwarnings, 3, "%d warnings: %s / %s", nwarnings,
			     warnings[0], warnings[1]);
		cr_assert(strstr(warnings[0], "over registry.max (1000000): reading 1000000"),
			  "%s", warnings[0]);
		cr_assert(strstr(warnings[1], "exceeds the memory readable"), "%s", warnings[1]);
		cr_assert(strstr(warnings[2], "task struct unreadable"), "%s", warnings[2]);
		ws_runtime_destroy(rt);
	}
}

/* A count behind a wild pointer: a list is walked all the same (bounded
 * by registry.max), saying so once; an array, which cannot be read without
 * its count, is a failed sample and a warning. Never silence. */
Test(runtime_descriptor, unreadable_counts_are_said, OPTS)
{
	chain(0, 2, NULL);
	fr.list = (struct fr_queue){ &fr.tasks[0], 3 };
	for (int i = 0; i < 8; i++)
		fr.table[i] = i < 3 ? &fr.tasks[i] : NULL;
	fr.current = (struct fr_task *)(uintptr_t)0x7000dead0000;
	struct ws_runtime *rt = create(descriptor(
		"{\"global\": \"fr.list.head\", \"count\": \"fr.current->id\","
		" \"next\": \"next\"}", NULL));

	tick_ok(rt);
	tick_ok(rt);
	cr_assert_eq(list.n, 3);
	cr_assert(count_id(100) == 1 && count_id(101) == 1 && count_id(102) == 1);
	cr_assert_eq(nwarnings, 1, "%d warnings", nwarnings);
	cr_assert(strstr(warnings[0], "$.registry: count unreadable"), "%s", warnings[0]);
	ws_runtime_destroy(rt);

	nwarnings = 0;
	rt = create(descriptor(
		"{\"global\": \"fr.table\", \"count\": \"fr.current->id\","
		" \"layout\": \"pointer-array\"}", NULL));
	tick_ok(rt);
	cr_assert_eq(list.n, 1);
	cr_assert_eq(count_errors("registry count unreadable"), 1);
	cr_assert_eq(nwarnings, 1, "%d warnings", nwarnings);
	cr_assert(strstr(warnings[0], "$.registry: unreadable"), "%s", warnings[0]);
	struct ws_error *err = tick(rt, true);
	cr_assert_not_null(err, "read live, an unreadable count is an error");
	ws_error_destroy(err);
	ws_runtime_destroy(rt);
}

/* ---- format 2 decoding ---- */

/* Registers saved on the task's own stack (Crystal, Boost fcontext): rbp
 * and rip at sp + 0 and sp + 8, rsp = sp + 16; a length-prefixed name
 * behind a pointer; wait reasons from bits; stack as base and size. */
Test(runtime_descriptor, registers_names_and_reasons, OPTS)
{
	fr.stack[8] = 0x1111;        /* rbp */
	fr.stack[9] = 0x401234;      /* rip */
	fr.label.s.bytesize = 7;
	memcpy(&fr.label.s.c, "labeled", 7);
	fr.tasks[0].label = &fr.label.s;
	fr.tasks[0].state = 2;
	fr.tasks[0].events = 0x10 | 0x20 | 0x1000;
	fr.tasks[0].stack_base = 0x10000;
	fr.tasks[0].stack_size = 0x4000;
	fr.tasks[0].next = NULL;
	fr.list = (struct fr_queue){ &fr.tasks[0], 1 };
	static const char extra[] =
		"\"wait_reason\": {\"member\": \"events\", \"bits\": {\"0x10\": \"time\", \"0x20\": \"msg\"}},"
		"\"stack\": {\"base\": \"stack_base\", \"size\": \"stack_size\"}";
	struct ws_runtime *rt = create(descriptor_named(
		"{\"global\": \"fr.list.head\", \"next\": \"next\"}",
		"{\"member\": \"label\", \"length\": \"bytesize\", \"bytes\": \"c\"}",
		extra));

	tick_ok(rt);
	cr_assert_eq(list.n, 1);
	const struct ws_task *t = &list.tasks[0];
	cr_assert_null(t->error, "%s", t->error);
	cr_assert_str_eq(t->name, "labeled");
	cr_assert_eq(t->state, WS_STATE_WAITING);
	cr_assert_str_eq(t->wait_reason, "time|msg|0x1000");
	cr_assert_eq(t->start, WS_START_SAVED);
	cr_assert_eq(t->regs.value[WS_REG_RBP], 0x1111);
	cr_assert_eq(t->regs.value[WS_REG_RIP], 0x401234);
	cr_assert_eq(t->regs.value[WS_REG_RSP], (uint64_t)(uintptr_t)&fr.stack[8] + 16);
	cr_assert_eq(t->stack_lo, 0x10000);
	cr_assert_eq(t->stack_hi, 0x14000);

	/* A saved stack pointer into unmapped memory: that task's sample
	 * fails, saying so. */
	fr.tasks[0].sp = 0x7000dead0000;
	tick_ok(rt);
	cr_assert_str_eq(list.tasks[0].error, "saved registers unreadable");
	cr_assert_eq(list.tasks[0].start, WS_START_NONE);
	ws_runtime_destroy(rt);
}

/* A root behind a null pointer is empty (a runtime not set up yet, as
 * Crystal's Fiber::fibers before its first fiber); behind a wild one, a
 * failed sample and a warning (an error, read live). */
Test(runtime_descriptor, root_behind_null_or_wild_pointer, OPTS)
{
	struct ws_runtime *rt = create(descriptor(
		"{\"global\": \"fr.current->next\", \"next\": \"next\"}", NULL));

	fr.current = NULL;
	tick_ok(rt);
	cr_assert_eq(list.n, 0);
	cr_assert_eq(nwarnings, 0);

	fr.current = (struct fr_task *)(uintptr_t)0x7000dead0000;
	tick_ok(rt);
	cr_assert_eq(list.n, 1);
	cr_assert_eq(count_errors("registry root unreadable"), 1);
	cr_assert_eq(nwarnings, 1);
	cr_assert(strstr(warnings[0], "$.registry: unreadable"), "%s", warnings[0]);
	struct ws_error *err = tick(rt, true);
	cr_assert_not_null(err, "read live, an unreadable root is an error");
	ws_error_destroy(err);

	/* And set up: fr.current->next is the list's head. */
	fr.current = &fr.tasks[0];
	chain(0, 3, NULL);
	tick_ok(rt);
	cr_assert_eq(list.n, 3, "tasks 1..3 (%zu)", list.n);
	cr_assert(count_id(101) == 1 && count_id(103) == 1);
	ws_runtime_destroy(rt);
}

/* The second read of an array's tasks (descriptor_reread): the slots are
 * read again, and a task whose slot points
 * elsewhere by then, or whose record holds another task (a new id), is
 * gone; one whose state moved is changed; the others are the same. */
Test(runtime_descriptor, reread_checks_slots_and_ids, OPTS)
{
	for (int i = 0; i < 8; i++)
		fr.table[i] = i < 6 ? &fr.tasks[i] : NULL;
	fr.table_len = 6;
	struct ws_runtime *rt = create(descriptor(
		"{\"global\": \"fr.table\", \"count\": \"fr.table_len\","
		" \"layout\": \"pointer-array\"}", NULL));
	struct ws_error *err = tick(rt, true);
	cr_assert_null(err, "%s", err ? err->message : "");
	cr_assert_eq(list.n, 6);
	enum ws_reread verdicts[6];
	struct ws_read_context context = { .live = true };
	for (size_t i = 0; i < list.n; i++)
		cr_assert_neq(list.tasks[i].slot, 0, "task %zu has no slot", i);

	err = rt->ops->reread(rt, &target, &context, list.tasks, list.n,
			      verdicts);
	cr_assert_null(err, "%s", err ? err->message : "");
	for (size_t i = 0; i < list.n; i++)
		cr_assert_eq(verdicts[i], WS_REREAD_SAME, "task %zu", i);

	fr.table[1] = &fr.tasks[7];   /* its slot moved on */
	fr.tasks[2].id = 900;         /* its record reused */
	fr.tasks[3].state = 2;        /* it waits now */
	err = rt->ops->reread(rt, &target, &context, list.tasks, list.n,
			      verdicts);
	cr_assert_null(err, "%s", err ? err->message : "");
	for (size_t i = 0; i < list.n; i++) {
		/* A gone task's record stays as listed: still its id. */
		uint64_t k = list.tasks[i].id - 100;
		cr_assert_lt(k, 6, "task %zu's record became another's", i);
		enum ws_reread want = k == 1 || k == 2 ? WS_REREAD_GONE
				    : k == 3 ? WS_REREAD_CHANGED
					     : WS_REREAD_SAME;
		cr_assert_eq(verdicts[i], want, "task %" PRIu64 ": %d", k,
			     verdicts[i]);
		if (k == 3)
			cr_assert_eq(list.tasks[i].state, WS_STATE_WAITING);
	}
	ws_runtime_destroy(rt);
}
