/*
 * ws_profile: the samples of one recording, interned for output.
 * Each unwound frame is interned as a line (function, file, line, module,
 * inlined), shown as a display frame: its function (name, file) by
 * default, the line itself with WS_FRAMES_BY_LINE (--lines). Stacks are
 * interned by their lines and each sample's task, thread and state as a
 * context, so a parked task sampled 6,000 times costs one stack and one
 * context. The sampler adds (task, state, stack, weight) samples; writers
 * read the result through the accessors below: speedscope and folded see
 * display frames with the state as leaf frame, pprof sees lines and the
 * state as labels. Not thread-safe.
 */
#ifndef WS_PROFILE_H
#define WS_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ws_error.h"
#include "ws_frame.h"

/* How samples are split into speedscope profiles. */
enum ws_group_by {
	WS_GROUP_ALL,     /* one merged profile */
	WS_GROUP_THREAD,  /* one profile per OS thread ("thread TID \"NAME\"",
			   * NAME = first task name seen on it), and
			   * "no thread" for tasks not on one */
	WS_GROUP_STATE,   /* one per state ("running", "waiting", ...) */
	WS_GROUP_TASK,    /* one per task ("task ID \"NAME\""; with processes,
			   * per process: ids repeat across them) */
	WS_GROUP_LABEL,   /* one per value of a task label: the sample's
			   * group_label ("handler=/api", "no handler
			   * label"), aggregated by stack */
	WS_GROUP_PROCESS, /* one per process ("process PID \"COMMAND\""),
			   * samples summed by stack */
};

/* One sample as the sampler hands it over. Nothing is retained by pointer:
 * the profile copies what it keeps. */
struct ws_sample {
	uint64_t task_id;
	const char *task_name;          /* NULL if the task has none */
	int thread;                     /* OS tid running the task, 0 if none */
	int process;                    /* its process (--subprocesses), 0 if
					 * only one is followed */
	const char *process_name;       /* that process's command, or NULL */
	enum ws_state state;
	const char *wait_reason;        /* NULL if none */
	/* Non-NULL when the task is listed but could not be sampled: the leaf
	 * becomes "[failed to sample: ERROR]" (under whatever root frames are
	 * in `frames`, possibly none) instead of the state frame. */
	const char *error;
	/* The task has not run yet: the leaf is "[not started]" (under its
	 * entry function, in `frames`) instead of the state frame. */
	bool not_started;
	const struct ws_frame *frames;  /* innermost first, as unwound */
	size_t nframes;
	/* Seconds of wall time observed: the time since the previous tick. */
	double weight;
	/* How many tasks this sample stands for (>= 1; 0 means 1) when only a
	 * random subset was sampled: merged groups weigh it weight * scale
	 * (unbiased task-seconds), a task's or thread's own group weight
	 * (what was observed). */
	double scale;
	double time;                    /* seconds since the recording began */
	/* WS_GROUP_LABEL: the group's name (copied), which is its key. */
	const char *group_label;
};

/* What a display frame is made of (see the file's comment). */
enum ws_frame_key {
	WS_FRAMES_BY_FUNCTION,  /* (name, file): one frame per function */
	WS_FRAMES_BY_LINE,      /* (name, file, line) */
};

struct ws_profile;

/* Creates an empty profile. `interval` is the nominal tick in seconds (used
 * by the folded writer to turn weights back into counts); it must be > 0. */
struct ws_error *ws_profile_create(enum ws_group_by group_by, double interval,
				   struct ws_profile **ret);
void ws_profile_destroy(struct ws_profile *profile);

/* Adds one sample: the stack root first, then a leaf frame naming the state
 * ("[running]", "[runnable]", "[waiting]", "[waiting: futex]", "[syscall]",
 * "[syscall: REASON]", "[idle worker]", "[unknown]") or the failure
 * ("[failed to sample: ERROR]", replacing the state). wait_reason is shown
 * for waiting and syscall states only. Frames without a function name are
 * named module+0xOFFSET, else 0xADDRESS (ws_frame_display_name's contract).
 * Within per-thread and per-task groups, samples keep time order and a sample
 * whose stack equals the previous one of its group is merged into it (its
 * weight added); in "all" and "state" groups, and in the "no thread" group
 * (tasks without a thread, many per tick), samples are aggregated by stack.
 * Memory is bounded by distinct frames + distinct stacks + distinct stacks
 * per aggregated group, plus 12 bytes per change of stack in a time-ordered
 * group: a parked task costs one entry however long it waits, but a thread
 * whose stack changes every tick costs an entry per tick (as its time-order
 * view needs). Measured: 6M samples of 1000 parked tasks (20-frame stacks)
 * take < 2 MB of heap in every grouping, ~0.6 us of CPU per sample.
 * Cost: one hash lookup per frame and per stack; allocates only for new
 * frames, stacks, groups or entries. Errors: weight not finite or negative
 * (WS_ERR_OTHER), out of memory; the profile stays usable either way. */
struct ws_error *ws_profile_add(struct ws_profile *profile,
				const struct ws_sample *sample);

/* How display frames are keyed (default WS_FRAMES_BY_FUNCTION). Only
 * before the first ws_profile_add. */
void ws_profile_set_frame_key(struct ws_profile *profile, enum ws_frame_key key);

/* Recording facts for the writers: a human title (speedscope's "name"; the
 * string is copied), the recording's wall time in seconds, the process id
 * (its main thread's group comes first), the runtime's name ("threads",
 * "go", a descriptor's; pprof names task ids "goroutine" for "go"). All
 * optional. */
void ws_profile_set_title(struct ws_profile *profile, const char *title);
void ws_profile_set_duration(struct ws_profile *profile, double seconds);
void ws_profile_set_process(struct ws_profile *profile, int pid);
/* When the recording began, in nanoseconds since the Unix epoch (pprof's
 * time_nanos; 0: unknown). */
void ws_profile_set_start_time(struct ws_profile *profile, uint64_t unix_ns);
uint64_t ws_profile_start_time(const struct ws_profile *profile);
void ws_profile_set_runtime(struct ws_profile *profile, const char *runtime);
/* A root function the runtime's own profile format leaves out of stacks
 * (Go: runtime.goexit), for the pprof writer; NULL: none. Copied. */
void ws_profile_set_pprof_hidden_root(struct ws_profile *profile,
				      const char *function);
const char *ws_profile_pprof_hidden_root(const struct ws_profile *profile);

/* One module (an ELF file mapped in the target), for pprof's mappings.
 * Strings are copied; build_id is hex, NULL if unknown. */
struct ws_profile_module {
	const char *name;      /* basename, as in ws_frame.module */
	const char *path;      /* the file, NULL if unknown */
	const char *build_id;
	uint64_t start, limit, offset;
};
struct ws_error *ws_profile_add_module(struct ws_profile *profile,
				       const struct ws_profile_module *module);

/* --- read access, for writers --- */

/* A display frame: name and file, with the line of the first line seen
 * (by function) or its own (by line). */
struct ws_profile_frame {
	const char *name;  /* never NULL */
	const char *file;  /* NULL if unknown */
	int line;          /* 0 if unknown */
};

/* A line as unwound: one function at one line, for pprof. */
struct ws_profile_line {
	const char *name;         /* never NULL; as the display frame's */
	const char *system_name;  /* the linkage (mangled) name, or NULL */
	const char *file;         /* NULL if unknown */
	int line;                 /* 0 if unknown */
	const char *module;       /* basename, NULL if none */
	/* The first pc seen here (0: none), less one where it is a return
	 * address: inside the call instruction, where Go's runtime/pprof and
	 * perf put a caller's location (the return address may already be
	 * the next line's, or the next function's after a call that never
	 * returns). */
	uint64_t address;
	bool inlined;             /* inlined into the next line outwards */
	uint32_t frame;           /* its display frame */
};

/* A sample's task and state, shared by every sample that says the same. */
struct ws_profile_context {
	uint64_t task_id;
	const char *task_name;    /* NULL if none */
	int thread;               /* 0 if none */
	enum ws_state state;
	const char *wait_reason;  /* NULL unless waiting or in a syscall */
	const char *error;        /* failed to sample: why; else NULL */
	bool not_started;
};

enum ws_group_by ws_profile_group_by(const struct ws_profile *profile);
const char *ws_profile_runtime(const struct ws_profile *profile); /* may be NULL */
const char *ws_profile_title(const struct ws_profile *profile); /* may be NULL */
double ws_profile_duration(const struct ws_profile *profile);
double ws_profile_interval(const struct ws_profile *profile);
size_t ws_profile_sample_count(const struct ws_profile *profile); /* as added */

size_t ws_profile_frame_count(const struct ws_profile *profile);
/* NULL when index >= ws_profile_frame_count. */
const struct ws_profile_frame *ws_profile_frame(const struct ws_profile *profile,
						size_t index);
/* Distinct stacks interned so far (for statistics and tests). */
size_t ws_profile_stack_count(const struct ws_profile *profile);

size_t ws_profile_group_count(const struct ws_profile *profile);
/* The group's display name, e.g. "all tasks — task-seconds",
 * "thread 1234 \"worker\"", "waiting — task-seconds", "task 7 \"main\"".
 * Groups that merge many tasks say their axis is task-seconds. Order: the
 * main thread (the process id) or the first task first, then threads and
 * tasks by id, then idle workers, then "no thread"; merged groups in order
 * of first appearance. */
const char *ws_profile_group_name(const struct ws_profile *profile, size_t group);
/* Time of the group's first sample, and the latest time + weight of its
 * samples (seconds). */
double ws_profile_group_start(const struct ws_profile *profile, size_t group);
double ws_profile_group_end(const struct ws_profile *profile, size_t group);
/* Sum of the group's weights (seconds): task-seconds for a merged group,
 * observed seconds for a thread's or task's. */
double ws_profile_group_weight(const struct ws_profile *profile, size_t group);
/* Whether the group merges tasks (all, state, "no thread"): weights are
 * task-seconds, and there is no time order. */
bool ws_profile_group_merged(const struct ws_profile *profile, size_t group);
/* Stored samples of the group (what ws_profile_visit calls fn for). */
size_t ws_profile_group_entry_count(const struct ws_profile *profile,
				    size_t group);

/* Calls fn once per stored sample of the group, in order, with the stack's
 * display frame indices root first (the leaf frame last) and its weight;
 * consecutive samples showing the same display stack come as one. In a
 * thread's or task's group, time the task was not observed (subsampled,
 * ticks between its samples) comes as a gap: depth 0, its length as
 * weight. Stops early and returns fn's error if fn returns one. */
typedef struct ws_error *(*ws_profile_visit_fn)(const uint32_t *stack,
						size_t depth, double weight,
						void *arg);
struct ws_error *ws_profile_visit(const struct ws_profile *profile,
				  size_t group, ws_profile_visit_fn fn,
				  void *arg);

/* Like ws_profile_visit, but once per distinct display stack of the group
 * with its summed weight, in order of first appearance (time order and gaps
 * are dropped); `by_name`: stacks are the same when their frames' names
 * are (the folded format has no files or lines), and each frame index is
 * the first frame with that name. Allocates a table of the group's
 * distinct stacks while it runs. Fails only when fn does or memory runs
 * out. */
struct ws_error *ws_profile_visit_aggregated(const struct ws_profile *profile,
					     size_t group, bool by_name,
					     ws_profile_visit_fn fn, void *arg);

/* --- read access by line, for pprof --- */

size_t ws_profile_line_count(const struct ws_profile *profile);
const struct ws_profile_line *ws_profile_line(const struct ws_profile *profile,
					      size_t index);
size_t ws_profile_module_count(const struct ws_profile *profile);
const struct ws_profile_module *ws_profile_module(const struct ws_profile *profile,
						  size_t index);

/* One stored sample by line: its lines root first — the leaf only when it
 * is "[not started]" or a failure, not a state (that is in the context) —
 * how many samples it merges, and their weight in task-seconds. */
struct ws_profile_sample {
	const uint32_t *lines;
	size_t depth;
	const struct ws_profile_context *context;
	uint64_t count;
	double weight;
};
typedef struct ws_error *(*ws_profile_sample_fn)(
	const struct ws_profile_sample *sample, void *arg);
/* Calls fn for every stored sample of every group (no gaps). */
struct ws_error *ws_profile_visit_samples(const struct ws_profile *profile,
					  ws_profile_sample_fn fn, void *arg);

#endif
