/*
 * ws_task: what every runtime adapter hands the sampler — one task with its
 * id, name, state, wait reason and where its stack starts (an OS thread's
 * live registers, or a register set the runtime saved when it parked the
 * task) — the growable list of them, and the rules every adapter shares:
 * whether two reads of a task agree, and where a task on a CPU starts.
 */
#ifndef WS_TASK_H
#define WS_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ws_frame.h"

struct ws_target;

/* Registers by DWARF number (x86-64): RAX 0, RDX 1, RCX 2, RBX 3, RSI 4,
 * RDI 5, RBP 6, RSP 7, R8-R15 8-15, RIP 16. */
enum { WS_REG_RBX = 3, WS_REG_RBP = 6, WS_REG_RSP = 7, WS_REG_R12 = 12,
       WS_REG_R15 = 15, WS_REG_RIP = 16, WS_NREGS = 17 };

struct ws_regs {
	uint64_t value[WS_NREGS];
	uint32_t valid;            /* bit n set: value[n] is known */
};

enum ws_task_start {
	WS_START_NONE,             /* no stack: see error */
	WS_START_THREAD,           /* live registers of OS thread `thread` */
	WS_START_SAVED,            /* `regs`, saved by the runtime */
};

struct ws_task {
	uint64_t id;
	const char *name;          /* NULL if none; valid until the next list */
	pid_t thread;              /* OS thread running it, 0 if none */
	enum ws_state state;
	const char *wait_reason;   /* NULL if none; valid until the next list */
	const char *error;         /* why it cannot be sampled, or NULL */
	enum ws_task_start start;
	struct ws_regs regs;       /* WS_START_SAVED */
	/* The saved rip is where the task will start, not a return address
	 * (a context that has never run: it points at the entry or the
	 * runtime's trampoline). Set by the sampler. */
	bool pc_exact;
	/* The task's stack [lo, hi); 0, 0 when unknown. Bounds the snapshot
	 * and stops unwinds that run off the task's stack. */
	uint64_t stack_lo, stack_hi;
	/* The task's entry function, 0 if unknown: shown as the stack of a
	 * task that has not started yet. */
	uint64_t entry_pc;
	/* Where the task was created (Go's gopc: a return address), 0 if
	 * unknown; shown by dump as "created by", with the creating task's
	 * id when the runtime keeps it (creator_id, 0: unknown; Go >= 1.21's
	 * g.parentGoid). */
	uint64_t creator_pc;
	uint64_t creator_id;
	/* The task is bound to its OS thread (Go's runtime.LockOSThread). */
	bool locked_to_thread;
	/* The group of tasks the runtime runs it in, as the runtime names
	 * it (NULL: none): Go's testing/synctest bubble, "synctest bubble"
	 * and the bubble's id (Go >= 1.25), "synctest group" and its root
	 * goroutine's id (1.24's GOEXPERIMENT=synctest), as Go's traceback
	 * prints them. Static strings. */
	const char *bubble_kind;
	uint64_t bubble_id;
	/* The task's labels (Go's runtime/pprof labels): key, value, key,
	 * value, ... sorted by key, nlabels pairs; NULL if none, or not asked
	 * for (ws_read_context.labels). Valid until the next list. */
	const char *const *labels;
	size_t nlabels;
	/* How many tasks this sample stands for (>= 1; 0 means 1): set when
	 * only a random subset of the tasks is sampled in a tick. */
	double scale;
	/* Where the adapter read the task (its struct, Go's g), and the
	 * registry slot that points at it (0: none): for reading it again. */
	uint64_t address, slot;
	/* A count the runtime bumps whenever the task gets on or off a CPU
	 * (Go's g.trackingSeq, a descriptor's "switches"): the same in two
	 * reads, with the same state and context, means the task did not
	 * run in between, so a stack copied between the two is whole. */
	uint64_t version;
	/* The version is a count too wide to come back to a value within a
	 * recording (32 bits or more; Go's 8-bit trackingSeq is not): the
	 * same version and saved context as at an earlier read, whenever it
	 * was, mean the task has not run since, and its stack above the
	 * saved stack pointer is what that read's copy held. */
	bool version_wide;
	/* A guard for live reads (guard_size 0: none): the runtime's record
	 * of the task at [guard_address, + guard_size) hashed guard_hash
	 * (ws_hash_bytes, seed 0) when it was listed. The snapshot reads it
	 * right before and right after the task's stack, in the same system
	 * call: the copy stands only if both reads still hash so (the task
	 * did not run during the microseconds of its own copy, whatever a
	 * narrow version counter says after a whole tick). */
	uint64_t guard_address, guard_hash;
	uint32_t guard_size;
};

/* A growable list of tasks, reused across ticks. */
struct ws_task_list {
	struct ws_task *tasks;
	size_t n, capacity;
};

/* Appends a zeroed task; NULL when out of memory. */
struct ws_task *ws_task_list_add(struct ws_task_list *list);
/* Room for `more` tasks after the last (not added, not zeroed): false
 * when out of memory. */
bool ws_task_list_reserve(struct ws_task_list *list, size_t more);
void ws_task_list_clear(struct ws_task_list *list);
/* Moves the tasks of [0, n) for which last(task, arg) holds to the end of
 * that range (the others keep their order); returns how many come before
 * them. */
size_t ws_task_list_put_last(struct ws_task_list *list, size_t n,
			     bool (*last)(const struct ws_task *task, void *arg),
			     void *arg);
void ws_task_list_deinit(struct ws_task_list *list);

/* Whether two reads of a task agree on everything its unwind uses: id,
 * version, state, start, thread, stack bounds and saved registers. */
bool ws_task_same_context(const struct ws_task *a, const struct ws_task *b);

/* The verdict of reading a task again (ws_runtime_ops.reread). */
enum ws_reread {
	WS_REREAD_SAME,            /* unchanged: the copy stands */
	WS_REREAD_CHANGED,         /* changed: tasks[i] holds the new read */
	WS_REREAD_GONE,            /* no longer this task (finished, freed,
				    * reused); tasks[i] as listed */
};

/* For reread: compares `fresh`, the second read of *task, with it; when
 * they differ, *task becomes `fresh` (keeping its scale and slot), unless
 * fresh is another task (its id differs: the record was reused), which
 * is WS_REREAD_GONE with *task untouched. A task of id 0 takes whatever
 * task its record holds now. */
enum ws_reread ws_task_reread(struct ws_task *task, const struct ws_task *fresh);

/* Where a task that its runtime says is on a CPU starts. */
enum ws_on_cpu {
	/* A read while the target runs, and the thread is not stopped:
	 * start WS_START_THREAD, for the sampler to stop that thread and
	 * read the task again (`thread` 0: its thread is not known). */
	WS_ON_CPU_PENDING,
	/* The thread is stopped on the task's stack: its live registers
	 * (WS_START_THREAD); blocked in a system call, the task is
	 * WS_STATE_SYSCALL with the call as its wait reason. */
	WS_ON_CPU_LIVE,
	/* The thread did not stop in time: WS_START_NONE with an error,
	 * since the saved context is stale while the task runs. */
	WS_ON_CPU_LOST,
	/* No such thread, or it is on another stack (a scheduler's, a
	 * signal stack, mid-switch): the task's saved context is the truth,
	 * and the caller sets it. */
	WS_ON_CPU_SAVED,
};

/* The one rule for a task on a CPU, run by thread `tid` (0: unknown):
 * its thread's live registers when that thread is stopped on the task's
 * stack ([stack_lo, stack_hi), or anywhere when the bounds are unknown),
 * else its saved context. `runs_it`: the runtime's own record says the
 * thread still runs this task (false: the thread moved on, so the saved
 * context stands). `live`: the target runs, except threads the sampler
 * stopped (regs_valid). Sets task->start, task->thread (when the thread
 * is traced), and the error or system call it finds. A hash lookup. */
enum ws_on_cpu ws_task_start_on_cpu(struct ws_task *task,
				    struct ws_target *target, pid_t tid,
				    bool runs_it, bool live);

#endif
