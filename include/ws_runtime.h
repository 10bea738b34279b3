/*
 * ws_runtime: the adapter interface between the sampler and a runtime's idea
 * of "task". An adapter lists, for a stopped target, every task with its id,
 * name, state, wait reason and where its stack starts: the live registers of
 * an OS thread, or a register set the runtime saved when it parked the task.
 * Adapters: threads (every OS thread is a task); later a JSON-described C
 * runtime and Go.
 */
#ifndef WS_RUNTIME_H
#define WS_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ws_error.h"
#include "ws_frame.h"

struct ws_target;
struct ws_symbols;

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
	 * unknown; shown by dump as "created by". */
	uint64_t creator_pc;
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
};

/* A growable list of tasks, reused across ticks. */
struct ws_task_list {
	struct ws_task *tasks;
	size_t n, capacity;
};

/* Appends a zeroed task; NULL when out of memory. */
struct ws_task *ws_task_list_add(struct ws_task_list *list);
void ws_task_list_clear(struct ws_task_list *list);
void ws_task_list_deinit(struct ws_task_list *list);

/* Whether two reads of a task agree on everything its unwind uses: id,
 * version, state, start, thread, stack bounds and saved registers. */
bool ws_task_same_context(const struct ws_task *a, const struct ws_task *b);

/* For reread: compares `fresh`, the second read of *task, with it; when
 * they differ, *task becomes `fresh` (keeping its scale and slot). */
enum ws_reread ws_task_reread(struct ws_task *task, const struct ws_task *fresh);

struct ws_runtime;

enum ws_reread {
	WS_REREAD_SAME,            /* unchanged: the copy stands */
	WS_REREAD_CHANGED,         /* changed: tasks[i] holds the new read */
	WS_REREAD_GONE,            /* no longer a task (finished, freed) */
};

struct ws_runtime_ops {
	const char *name;          /* "threads", "go", or the descriptor's */
	/* Lists the tasks. Called while every thread of the target is
	 * stopped and its registers are read; must not resume anything and
	 * should read memory in bulk: this is part of the target's pause.
	 * `limit` (0: none) is how many tasks the pause budget affords: an
	 * adapter that can pick tasks at random without reading them all
	 * (an array registry) lists about that many, a uniform sample, and
	 * sets each one's `scale` to (candidates / picked) so weights stay
	 * unbiased. Others list everything; the sampler subsamples. */
	struct ws_error *(*list_tasks)(struct ws_runtime *runtime,
				       struct ws_target *target, size_t limit,
				       struct ws_task_list *out);
	/* Live reads (optional, with `live_reads`): reads tasks[0..n) again
	 * by their `address`, after their stacks were copied with the target
	 * running, and says per task whether anything the unwind uses (state,
	 * saved registers, stack bounds, thread) changed meanwhile: then the
	 * copy may be torn, and tasks[i] is decoded anew from the second
	 * read. A thread the sampler has stopped has regs_valid. Reads in
	 * bulk, like list_tasks. */
	struct ws_error *(*reread)(struct ws_runtime *runtime,
				   struct ws_target *target,
				   struct ws_task *tasks, size_t n,
				   enum ws_reread *result);
	void (*destroy)(struct ws_runtime *runtime);
};

struct ws_runtime {
	const struct ws_runtime_ops *ops;
	void *state;
	const char *name;          /* shown to users; NULL: ops->name */
	/* The function every task's stack starts in (a trampoline, Go's
	 * runtime.goexit): frames outside it belong to the scheduler and are
	 * cut, so running and parked tasks share their root. NULL: none. */
	const char *root_function;
	/* Unwind with libdw (reads .debug_frame; Go has no .eh_frame) rather
	 * than libunwind. */
	bool prefer_libdw;
	/* Frame sizes are fixed per pc (Go): unwinds may use the step cache
	 * (ws_unwinder_use_step_cache). */
	bool fixed_frames;
	/* Every task is an OS thread, stopped by every tick anyway: the pause
	 * budget would save only the stack copies and add sampling noise, so
	 * these tasks are always all sampled. */
	bool unbudgeted;
	/* The registry can be read while the target runs: ops->reread is
	 * set, a task's saved context is complete whenever the registry says
	 * it is off CPU, and tasks carry a version. Ticks then stop only the
	 * threads that run a task, one at a time. */
	bool live_reads;
	/* Set by the sampler before list_tasks and reread: the target's
	 * threads are running, except those with regs_valid. A task on a CPU
	 * whose thread is not stopped is then listed with start
	 * WS_START_THREAD and its `thread`, for the sampler to stop that
	 * thread and reread the task. */
	bool live;
};

/* Chooses and creates the adapter for a target: "threads"; a descriptor
 * file (a name containing '/' or ending in ".json"); or "auto": a
 * descriptor the target carries (ws_runtime_descriptor_find), else threads.
 * Errors: WS_ERR_USAGE for an unknown name, descriptor errors. */
struct ws_error *ws_runtime_create(const char *name, struct ws_target *target,
				   struct ws_symbols *symbols,
				   struct ws_runtime **ret);
void ws_runtime_destroy(struct ws_runtime *runtime);

/* The OS-thread adapter. */
struct ws_error *ws_runtime_threads_create(struct ws_runtime **ret);

struct ws_thread;
/* Fills `task` (zeroed) for one stopped thread, as the OS-thread adapter
 * lists it: for a rolling tick, where each thread is taken alone. */
void ws_runtime_threads_describe(const struct ws_thread *thread,
				 struct ws_task *task);

#endif
