/*
 * Unit tests of ws_snapshot (src/sampling/snapshot.c): the copies of
 * registers and stack tops taken while fixtures/threads_blocked is held.
 * Truths from /proc and the tracer: the registers are those ws_target read,
 * a copy starts at the stack pointer and ends where the stack mapping ends
 * (/proc/PID/maps, parsed here) or at --max-stack, whichever comes first,
 * or at the task's own stack end when it has one, and its bytes are the
 * target's (read again through /proc/PID/mem, not process_vm_readv). Tasks
 * without a stack get an error and no copy. A guard read around a copy
 * fails only when its bytes no longer hash as listed.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e_util.h"
#include "fixture_truth.h"
#include "ws_hash.h"
#include "ws_runtime.h"
#include "ws_snapshot.h"
#include "ws_target.h"

enum { STOP_TIMEOUT_NS = 2000 * 1000 * 1000L };

static void expect_ok(struct ws_error *err, const char *what)
{
	cr_assert_null(err, "%s: %s", what, err ? err->message : "");
}

/* The end of pid's mapping that holds address, from /proc/PID/maps. */
static uint64_t mapping_end(pid_t pid, uint64_t address)
{
	char path[64], line[512];
	uint64_t lo, hi, end = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	FILE *maps = fopen(path, "r");
	cr_assert_not_null(maps);
	while (!end && fgets(line, sizeof(line), maps))
		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2 &&
		    address >= lo && address < hi)
			end = hi;
	fclose(maps);
	cr_assert_neq(end, 0, "%#" PRIx64 " is in no mapping of %d", address, pid);
	return end;
}

/* The copy is the target's memory at [stack_start, stack_start + size). */
static void check_bytes(pid_t pid, const struct ws_snapshot *snap)
{
	uint8_t *truth = malloc(snap->stack_size);

	cr_assert_not_null(truth);
	cr_assert(e2e_read_mem(pid, snap->stack_start, truth, snap->stack_size),
		  "/proc/%d/mem: cannot read %zu bytes at %#" PRIx64, pid,
		  snap->stack_size, snap->stack_start);
	cr_assert_eq(memcmp(truth, snap->stack, snap->stack_size), 0,
		     "the copy at %#" PRIx64 " differs from the target's memory",
		     snap->stack_start);
	free(truth);
}

/* threads_blocked (no lifetime: it waits for SIGTERM), attached and held,
 * with one task per thread starting at the thread's live registers. */
static struct ws_target *held_threads_blocked(struct ws_task_list *tasks)
{
	pid_t pid = e2e_start_fixture("threads_blocked", NULL, "ready", 10000);
	struct ws_target *t = NULL;
	size_t stopped = 0;

	expect_ok(ws_target_attach(pid, 0, &t), "attach");
	expect_ok(ws_target_stop_all(t, STOP_TIMEOUT_NS, NULL, NULL, &stopped,
				     NULL), "stop_all");
	cr_assert_eq(stopped, TB_THREADS + 1);
	memset(tasks, 0, sizeof(*tasks));
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_task *task = ws_task_list_add(tasks);

		cr_assert_not_null(task);
		task->id = (uint64_t)t->threads[i].tid;
		task->thread = t->threads[i].tid;
		task->start = WS_START_THREAD;
	}
	return t;
}

static void release(struct ws_target *t, struct ws_snapshot_set *set,
		    struct ws_task_list *tasks)
{
	pid_t pid = t->pid;

	ws_target_resume_all(t);
	ws_target_destroy(t);
	ws_snapshot_set_deinit(set);
	ws_task_list_deinit(tasks);
	e2e_check_healthy_then_stop(pid);
}

/* Each thread's copy: its registers, from its stack pointer to the end of
 * its stack mapping (all of a thread's stack top fits 128 KiB here), the
 * target's bytes; then the same with a 256-byte --max-stack, cut there. */
static void check_live_copies(size_t max_stack)
{
	struct ws_task_list tasks;
	struct ws_target *t = held_threads_blocked(&tasks);
	struct ws_snapshot_set set;
	int truncated = 0;

	ws_snapshot_set_init(&set, t->pid);
	expect_ok(ws_snapshot_take(&set, t, &tasks, max_stack), "take");
	cr_assert_eq(set.n, tasks.n);
	for (size_t i = 0; i < tasks.n; i++) {
		const struct ws_snapshot *snap = &set.snaps[i];
		const struct ws_thread *th = ws_target_find_thread(t, tasks.tasks[i].thread);
		uint64_t sp = th->regs.rsp;
		uint64_t room = mapping_end(t->pid, sp) - sp;

		cr_assert_null(snap->error, "thread %d: %s", th->tid, snap->error);
		cr_assert(snap->pc_exact, "a live thread's pc is exact");
		cr_assert_eq(snap->regs.value[WS_REG_RSP], sp);
		cr_assert_eq(snap->regs.value[WS_REG_RIP], th->regs.rip);
		cr_assert_eq(snap->regs.value[WS_REG_RBP], th->regs.rbp);
		cr_assert_eq(snap->stack_start, sp);
		cr_assert_eq(snap->stack_size, room < max_stack ? room : max_stack,
			     "thread %d: %zu bytes copied, %" PRIu64 " to the end of "
			     "its stack, max %zu", th->tid, snap->stack_size, room,
			     max_stack);
		cr_assert_eq(snap->truncated, room > max_stack, "thread %d", th->tid);
		truncated += snap->truncated;
		check_bytes(t->pid, snap);
	}
	if (max_stack < 1024)
		cr_assert_eq(truncated, (int)tasks.n, "a stack top under 1 KiB");
	release(t, &set, &tasks);
}

Test(snapshot, live_thread_copies_end_at_the_stack_mapping, .timeout = 30,
     .fini = e2e_cleanup)
{
	check_live_copies(128 * 1024);
}

Test(snapshot, live_thread_copies_end_at_max_stack, .timeout = 30,
     .fini = e2e_cleanup)
{
	check_live_copies(256);
}

/* A saved context with the task's own stack bounds: the copy ends at the
 * task's stack_hi, not at the mapping's end; one whose stack pointer lies
 * outside its stack, or that has no stack pointer or pc, gets no copy. */
Test(snapshot, saved_contexts_are_bounded_by_the_task_stack, .timeout = 30,
     .fini = e2e_cleanup)
{
	struct ws_task_list threads;
	struct ws_target *t = held_threads_blocked(&threads);
	const struct ws_thread *th = &t->threads[0];
	struct ws_task_list tasks = { 0 };
	struct ws_snapshot_set set;

	struct ws_regs regs = { .valid = (1u << WS_REG_RSP) | (1u << WS_REG_RIP) |
					 (1u << WS_REG_RBP) };
	regs.value[WS_REG_RSP] = th->regs.rsp;
	regs.value[WS_REG_RIP] = th->regs.rip;
	regs.value[WS_REG_RBP] = th->regs.rbp;
	/* 0: inside its stack, 100 bytes of it above sp. */
	struct ws_task *task = ws_task_list_add(&tasks);
	task->start = WS_START_SAVED;
	task->regs = regs;
	task->stack_lo = th->regs.rsp - 4096;
	task->stack_hi = th->regs.rsp + 100;
	/* 1: sp above its stack. */
	task = ws_task_list_add(&tasks);
	task->start = WS_START_SAVED;
	task->regs = regs;
	task->stack_lo = th->regs.rsp - 4096;
	task->stack_hi = th->regs.rsp;
	/* 2: no pc. */
	task = ws_task_list_add(&tasks);
	task->start = WS_START_SAVED;
	task->regs = regs;
	task->regs.valid &= ~(1u << WS_REG_RIP);

	ws_snapshot_set_init(&set, t->pid);
	expect_ok(ws_snapshot_take(&set, t, &tasks, 128 * 1024), "take");
	cr_assert_null(set.snaps[0].error, "%s", set.snaps[0].error);
	cr_assert_eq(set.snaps[0].stack_start, th->regs.rsp);
	cr_assert_eq(set.snaps[0].stack_size, 100);
	cr_assert_not(set.snaps[0].truncated);
	cr_assert_eq(set.snaps[0].stack_hi, th->regs.rsp + 100);
	check_bytes(t->pid, &set.snaps[0]);
	for (int i = 1; i < 3; i++) {
		cr_assert_not_null(set.snaps[i].error, "task %d got a copy", i);
		cr_assert_eq(set.snaps[i].stack_size, 0, "task %d", i);
	}
	ws_task_list_deinit(&tasks);
	release(t, &set, &threads);
}

/* Tasks without a stack: one not started (no context; its adapter's error
 * is kept as the reason), one with no reason given, one on a thread that is
 * not traced. None gets a copy; the others of the same tick still do. */
Test(snapshot, tasks_without_a_stack_get_an_error, .timeout = 30,
     .fini = e2e_cleanup)
{
	struct ws_task_list tasks;
	struct ws_target *t = held_threads_blocked(&tasks);
	struct ws_snapshot_set set;
	size_t live = tasks.n;

	struct ws_task *task = ws_task_list_add(&tasks);
	task->start = WS_START_NONE;
	task->error = "not started yet";
	task = ws_task_list_add(&tasks);
	task->start = WS_START_NONE;
	task = ws_task_list_add(&tasks);
	task->start = WS_START_THREAD;
	task->thread = 1;           /* init: never one of the target's */

	ws_snapshot_set_init(&set, t->pid);
	expect_ok(ws_snapshot_take(&set, t, &tasks, 128 * 1024), "take");
	cr_assert_str_eq(set.snaps[live].error, "not started yet");
	for (size_t i = live; i < tasks.n; i++) {
		cr_assert_not_null(set.snaps[i].error, "task %zu got a copy", i);
		cr_assert_eq(set.snaps[i].stack_size, 0, "task %zu", i);
	}
	for (size_t i = 0; i < live; i++) {
		cr_assert_null(set.snaps[i].error, "%s", set.snaps[i].error);
		cr_assert_gt(set.snaps[i].stack_size, 0);
		check_bytes(t->pid, &set.snaps[i]);
	}
	release(t, &set, &tasks);
}

/* A task's guard (ws_task.guard_*) is read around its stack copy: a guard
 * that still hashes as listed (the target's bytes, read through
 * /proc/PID/mem) leaves the copy standing; one whose hash differs, or that
 * cannot be read, fails it; and the stack copy is exact either way. */
Test(snapshot, guards_fail_only_when_changed, .timeout = 30,
     .fini = e2e_cleanup)
{
	struct ws_task_list tasks;
	struct ws_target *t = held_threads_blocked(&tasks);
	struct ws_snapshot_set set;
	uint8_t bytes[64];

	cr_assert_geq(tasks.n, 3);
	for (size_t i = 0; i < tasks.n; i++) {
		struct ws_task *task = &tasks.tasks[i];
		const struct ws_thread *th = ws_target_find_thread(t, task->thread);

		task->guard_address = th->regs.rsp;
		task->guard_size = sizeof(bytes);
		cr_assert(e2e_read_mem(t->pid, task->guard_address, bytes,
				       sizeof(bytes)));
		task->guard_hash = ws_hash_bytes(bytes, sizeof(bytes), 0);
	}
	tasks.tasks[1].guard_hash ^= 1;            /* changed meanwhile */
	tasks.tasks[2].guard_address = 0x1000;     /* unmapped */

	ws_snapshot_set_init(&set, t->pid);
	expect_ok(ws_snapshot_take(&set, t, &tasks, 128 * 1024), "take");
	for (size_t i = 0; i < tasks.n; i++) {
		cr_assert_null(set.snaps[i].error, "%s", set.snaps[i].error);
		cr_expect_eq(set.snaps[i].guard_failed, i == 1 || i == 2,
			     "task %zu: guard_failed %d", i,
			     set.snaps[i].guard_failed);
		check_bytes(t->pid, &set.snaps[i]);
	}
	release(t, &set, &tasks);
}

/* The rolling tick's copy of one thread at a time: bounded and exact like
 * the batched one, and never moved by the copies after it. */
Test(snapshot, one_thread_copy_is_bounded_and_exact, .timeout = 30,
     .fini = e2e_cleanup)
{
	struct ws_task_list tasks;
	struct ws_target *t = held_threads_blocked(&tasks);
	struct ws_snapshot_set set;

	ws_snapshot_set_init(&set, t->pid);
	for (size_t i = 0; i < tasks.n; i++) {
		struct ws_thread *th = ws_target_find_thread(t, tasks.tasks[i].thread);
		uint64_t room = mapping_end(t->pid, th->regs.rsp) - th->regs.rsp;
		size_t max = i % 2 ? 512 : 128 * 1024;

		expect_ok(ws_snapshot_take_thread(&set, i, th, &tasks.tasks[i], max),
			  "take_thread");
		const struct ws_snapshot *snap = &set.snaps[i];
		cr_assert_null(snap->error, "%s", snap->error);
		cr_assert_eq(snap->stack_start, th->regs.rsp);
		cr_assert_eq(snap->stack_size, room < max ? room : max);
		cr_assert_eq(snap->truncated, room > max);
		check_bytes(t->pid, snap);
	}
	cr_assert_eq(set.n, tasks.n);
	/* Every copy still holds its bytes: later ones never moved or
	 * overwrote it (the threads are held, their stacks unchanged). */
	for (size_t i = 0; i < set.n; i++)
		check_bytes(t->pid, &set.snaps[i]);
	release(t, &set, &tasks);
}
