/*
 * ws_snapshot: what one task's unwind needs, copied while the target is
 * stopped: its starting registers and the top of its stack. Copies of all
 * tasks of a tick are read with batched process_vm_readv into one arena, so
 * the target can be resumed before any unwinding starts.
 */
#ifndef WS_SNAPSHOT_H
#define WS_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ws_maps.h"
#include "ws_runtime.h"

struct ws_target;

struct ws_snapshot {
	struct ws_regs regs;      /* starting registers */
	/* Frame 0's pc is where execution stands (live thread registers, or a
	 * saved context that has never run), not a return address. */
	bool pc_exact;
	uint64_t stack_start;     /* address of the first copied byte (= sp) */
	size_t stack_size;        /* bytes copied */
	bool truncated;           /* copy stopped at --max-stack, not at the
				   * stack's end */
	const uint8_t *stack;     /* the copy (in the set's arena) */
	uint64_t stack_lo, stack_hi; /* the task's stack, 0, 0 if unknown */
	const char *error;        /* NULL, or why there is no snapshot */
	/* The task's guard (ws_task.guard_*) was read and did not hash as
	 * listed, before or after the copy: the copy may be torn. */
	bool guard_failed;
	/* Not copied (reused > 0): the task has not run since an earlier
	 * tick unwound it (same wide version and saved context,
	 * ws_stack_cache_context_key); that unwind's `reused` return
	 * addresses, from the sampler's reused_pcs at reused_first, and its
	 * stop reason. */
	uint32_t reused;
	size_t reused_first;
	const char *reused_stop;
};

/* Snapshots of one tick, parallel to a task list. Reused across ticks. */
struct ws_snapshot_set {
	struct ws_snapshot *snaps;
	size_t n, capacity;
	uint8_t *arena;
	size_t arena_size;
	/* ws_snapshot_take_thread's copies: chunks kept from tick to tick
	 * (their pages stay mapped) and filled in order, so a copy never
	 * moves while later ones are taken. */
	struct ws_snapshot_chunk *chunks;
	size_t nchunks, chunks_cap, chunk;
	struct ws_maps maps;      /* the target's map, reloaded when a stack
				   * pointer falls outside every mapping */
};

struct ws_snapshot_chunk {
	uint8_t *bytes;
	size_t size, used;
};

void ws_snapshot_set_init(struct ws_snapshot_set *set, pid_t pid);

/* Empties the set for a new tick (keeps its memory). */
void ws_snapshot_set_clear(struct ws_snapshot_set *set);
void ws_snapshot_set_deinit(struct ws_snapshot_set *set);

/* Takes a snapshot of every task (call while the target is stopped, or,
 * for tasks a live tick may copy, running). Copies at most max_stack bytes
 * of stack per task, from sp up to the end of its stack (the task's
 * stack_hi, else the end of the mapping holding sp), between two reads of
 * its guard when it has one (guard_failed). Per-task failures land in
 * snaps[i].error; only out of memory fails. */
struct ws_error *ws_snapshot_take(struct ws_snapshot_set *set,
				  struct ws_target *target,
				  const struct ws_task_list *tasks,
				  size_t max_stack);

/* The same, but copies tasks[0, ncopy) only: the others' snapshots are
 * empty, with the task's error or "not copied" (for a caller that copies
 * them otherwise: a live tick's running tasks). */
struct ws_error *ws_snapshot_take_first(struct ws_snapshot_set *set,
					struct ws_target *target,
					const struct ws_task_list *tasks,
					size_t ncopy, size_t max_stack);

/* Snapshot of the task at index `index` of the set (growing it) while
 * `thread` is stopped: the task runs on it (live registers) or was saved
 * and is held by it (a saved context). Copied at once into the set's
 * chunks (valid until ws_snapshot_set_clear): for rolling ticks, where
 * each thread is resumed right after its copy. Failures land in the snapshot's error; only out of memory
 * fails. */
struct ws_error *ws_snapshot_take_thread(struct ws_snapshot_set *set,
					 size_t index, struct ws_thread *thread,
					 const struct ws_task *task,
					 size_t max_stack);

#endif
