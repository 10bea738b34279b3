/*
 * ws_runtime: the interface between the sampler and a runtime's idea of
 * "task" (ws_task.h), and the table of runtimes `--runtime` chooses from.
 * An adapter declares what it can do once (ws_runtime_caps), lists the
 * tasks of a target in the read context the sampler gives it, and may read
 * tasks again (live ticks) or describe a single stopped thread (rolling
 * ticks). Adapters: threads (every OS thread is a task, runtime_threads.c),
 * go (goroutines, runtime_go.c) and descriptor (a runtime described in JSON,
 * runtime_descriptor.c). Adding one is a file and a row in runtime.c.
 */
#ifndef WS_RUNTIME_H
#define WS_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#include "ws_error.h"
#include "ws_random.h"
#include "ws_task.h"

struct ws_target;
struct ws_thread;
struct ws_symbols;
struct ws_runtime;

/* How a tick takes a runtime's tasks. */
enum ws_tick_kind {
	/* Every thread is held while the registry is read and the tasks'
	 * stacks copied (a registry that cannot be read while it changes). */
	WS_TICK_STOPPED,
	/* Every task is one OS thread, taken alone: each thread is stopped,
	 * described (ops->thread_task), copied and resumed on its own. */
	WS_TICK_ROLLING,
	/* The registry and parked tasks are read while the target runs, then
	 * read again (ops->reread); only threads that run a task are stopped.
	 * The sampler falls back to a stopped tick when asked to (dump,
	 * --stop-all) or when a live read fails. */
	WS_TICK_LIVE,
};

/* What a runtime is and can do, fixed when it is created. */
struct ws_runtime_caps {
	const char *name;          /* shown to users: "threads", "go", ... */
	/* What a task is called in dumps ("goroutine"); NULL: "task". */
	const char *task_noun;
	/* The function every task's stack starts in (a trampoline, Go's
	 * runtime.goexit): frames outside it belong to the scheduler and are
	 * cut, so running and parked tasks share their root. NULL: none. */
	const char *root_function;
	/* With a name as common as Crystal's `run`: the root is the frame of
	 * that name whose source file ends with this ("/fiber.cr"). NULL:
	 * any file. */
	const char *root_file;
	/* The runtime's own profiles leave root_function out of every stack
	 * (Go's runtime/pprof drops runtime.goexit): so does -f pprof. */
	bool pprof_hides_root;
	/* Unwind with libdw (reads .debug_frame; Go has no .eh_frame) rather
	 * than libunwind. */
	bool prefer_libdw;
	/* Frame sizes are fixed per pc (Go): unwinds may use the step cache
	 * (ws_unwinder_use_step_cache). */
	bool fixed_frames;
	/* Compiler-made wrappers (ws_frame.wrapper: Go's go-statement and
	 * method wrappers) are left out of stacks, as the runtime's own
	 * tracebacks do, except directly above a function named in
	 * wrapper_shown_above (NULL-terminated; NULL: none). */
	bool hide_wrappers;
	const char *const *wrapper_shown_above;
	enum ws_tick_kind tick;
	/* WS_TICK_STOPPED whose registry is walked whole (a list: each task
	 * leads to the next) by a walk that holds up when read while the
	 * target runs (visits a task once, bounded, an error where it
	 * breaks off): record and attach walk it while the target runs,
	 * keeping the budget's sample, and hold every thread only while
	 * ops->reread reads the kept tasks again and their stacks are
	 * copied, so the pause is the sample's, not the walk's. */
	bool walk_live;
};

/* How one call of list_tasks or reread reads the target. */
struct ws_read_context {
	/* The target runs, except the threads the sampler has stopped (those
	 * with regs_valid). A task on a CPU whose thread is not stopped is
	 * then listed with start WS_START_THREAD and its `thread`
	 * (ws_task_start_on_cpu), for the sampler to stop that thread and
	 * read the task again. false: every thread is stopped and its
	 * registers are read. */
	bool live;
	/* How many tasks the budgets afford (0: no limit). An adapter that
	 * can pick tasks at random without reading them all (an array
	 * registry) lists about that many, a uniform sample drawn with
	 * `random`, and sets each one's `scale` to (candidates / picked) so
	 * weights stay unbiased. Others list everything; the sampler
	 * subsamples. */
	size_t limit;
	struct ws_random *random;
	/* List the tasks the runtime runs for itself (Go's GC workers,
	 * finalizer, scavenger, ...), which are left out by default. */
	bool system_tasks;
	/* Read each task's labels (ws_task.labels). */
	bool labels;
};

struct ws_runtime_ops {
	/* Lists the tasks into `out` (cleared by the caller). Must not
	 * resume or stop anything and should read memory in bulk: with
	 * every thread stopped this is part of the target's pause. */
	struct ws_error *(*list_tasks)(struct ws_runtime *runtime,
				       struct ws_target *target,
				       const struct ws_read_context *context,
				       struct ws_task_list *out);
	/* WS_TICK_LIVE: reads tasks[0..n) again by their `address`, after
	 * their stacks were copied, and says per task whether anything the
	 * unwind uses (state, saved registers, stack bounds, thread, version)
	 * changed meanwhile (ws_task_reread): then the copy may be torn, and
	 * tasks[i] is decoded anew from the second read. Reads in bulk. */
	struct ws_error *(*reread)(struct ws_runtime *runtime,
				   struct ws_target *target,
				   const struct ws_read_context *context,
				   struct ws_task *tasks, size_t n,
				   enum ws_reread *result);
	/* WS_TICK_LIVE, optional: the address of the task thread `tid` runs
	 * (called while it is held), as the last read (list or reread) saw
	 * it or as read now; 0 for none or unknown. */
	uint64_t (*thread_current)(struct ws_runtime *runtime, pid_t tid);
	/* WS_TICK_ROLLING: fills `task` (zeroed) for one thread, stopped
	 * (regs_valid) or not stopped in time. */
	void (*thread_task)(struct ws_runtime *runtime,
			    const struct ws_thread *thread,
			    struct ws_task *task);
	void (*destroy)(struct ws_runtime *runtime);
};

struct ws_runtime {
	const struct ws_runtime_ops *ops;
	const struct ws_runtime_caps *caps;  /* owned by the adapter */
	void *state;
};

/* Chooses and creates the runtime for a target. `name`: a row of the table
 * in runtime.c ("threads", "go"); a descriptor file (a name containing '/'
 * or ending in ".json"); or "auto", which asks each row in order whether
 * the target is its runtime (a descriptor the target carries, then Go,
 * then threads). Errors: WS_ERR_USAGE for an unknown name, the adapter's
 * errors. */
struct ws_error *ws_runtime_create(const char *name, struct ws_target *target,
				   struct ws_symbols *symbols,
				   struct ws_runtime **ret);
void ws_runtime_destroy(struct ws_runtime *runtime);

/* The runtime's name as users see it. */
const char *ws_runtime_name(const struct ws_runtime *runtime);

/* The i-th name --runtime accepts besides "auto" and a descriptor file, in
 * the table's order ("go", "threads"); NULL past the last. */
const char *ws_runtime_table_name(size_t i);

/* "auto, go, threads or a descriptor FILE.json": every value --runtime
 * accepts, from the table (static storage). */
const char *ws_runtime_choices(void);

#endif
