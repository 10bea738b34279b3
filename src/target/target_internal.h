/*
 * Private to target*.c: the tree of traced processes (the tracer), the
 * thread table of each, and the event handling of target_events.c, which
 * the tick (target_tick.c) and the lifecycle (target.c) share. Nothing
 * outside src/target/target*.c includes this.
 */
#ifndef WS_TARGET_INTERNAL_H
#define WS_TARGET_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ws_target.h"

/* Everything one wallspy traces: the root process and, with
 * WS_TARGET_CHILDREN, every process forked from a traced one. waitpid(-1)
 * answers for all of them, so events are handled here, for whichever
 * process a thread belongs to. */
struct ws_tracer {
	struct ws_target **procs;    /* root first, then in order of birth */
	size_t nprocs, capacity;
	long options;                /* PTRACE_SEIZE options of every thread */
	/* Detaching the whole tree: a process born meanwhile is detached at
	 * its first stop. */
	bool detaching;
	/* Whether wallspy may run real-time while it stops, holds and
	 * resumes threads (rt_enter, target_tick.c): 0 not tried yet, 1 yes,
	 * -1 refused. */
	int realtime_allowed;
	/* Stops run real-time until then (CLOCK_MONOTONIC ns): set when a
	 * stop came later than the polling (stop_wanted). */
	uint64_t contended_until_ns;
};

/* --- the thread table --- */

/* A new process `pid` of tracer `tr` (NULL: a new tracer with
 * `options`, `pid` its root) with an empty table; nothing traced yet. */
struct ws_error *target_new(struct ws_tracer *tr, pid_t pid, long options,
			    struct ws_target **ret);

/* Frees the process and its table; traces nothing, detaches nothing. The
 * root frees the tracer and every other process too. NULL is fine. */
void target_free(struct ws_target *t);

/* The thread `tid` in the table, gone ones included, or NULL (a hash
 * lookup). */
struct ws_thread *target_thread_find(struct ws_target *t, pid_t tid);

/* The thread `tid` of any process of the tree, and its process in *owner;
 * NULL when no process has it. */
struct ws_thread *target_owner(struct ws_tracer *tr, pid_t tid,
			       struct ws_target **owner);

/* The thread `tid`, added in state `run` if new (its state set to `run`
 * otherwise); NULL on out of memory. May move the table: pointers to
 * other threads do not survive it. */
struct ws_thread *target_thread_add(struct ws_target *t, pid_t tid,
				    enum ws_thread_run run);

/* Drops exited threads from the table (between ticks only: pointers into
 * the table do not survive this). */
struct ws_error *target_threads_compact(struct ws_target *t);

/* Seizes thread `tid` of t (PTRACE_SEIZE with the tracer's options) and
 * adds it running. A thread that exits meanwhile is skipped (*added
 * false, no error); a refusal is explained (target_seize_refused). */
struct ws_error *target_seize(struct ws_target *t, pid_t tid, bool *added);

/* Why PTRACE_SEIZE of thread `tid` of process `pid` failed with `errnum`
 * (target_access.c): NULL when the thread is exiting or gone (skip it);
 * otherwise the cause as an error — a kernel thread, a zombie, a main
 * thread that exited, another tracer (named), or permission. `verb` starts
 * the message ("attach"). */
struct ws_error *target_seize_refused(const char *verb, pid_t pid, pid_t tid,
				      int errnum);

/* Reads /proc/PID/task/TID/comm into comm[16]; left as it was when it
 * cannot be read. */
void target_read_comm(pid_t pid, pid_t tid, char comm[16]);

/* --- a thread's stop --- */

/* Marks a thread exited with wait status `status`; the leader's exit is
 * the whole process's. */
void target_thread_gone(struct ws_target *t, struct ws_thread *th,
			int status);

/* Detaches a thread in a ptrace stop, handing it `sig` (0: none); a
 * group-stopped thread stays stopped, as PTRACE_LISTEN would leave it. */
void target_thread_detach(struct ws_thread *th, int sig);

/* Ends a thread's ptrace stop: back to running with its pending signal
 * (or PTRACE_LISTEN into its group stop); or, once the caller wants no
 * more ticks (detach_on_resume), detached from that stop, which saves
 * stopping it again to detach it. */
void target_thread_resume(struct ws_target *t, struct ws_thread *th);

/* --- events --- */

/* Handles every pending waitpid status of the tree without blocking.
 * `ticking`: the process a tick is collecting stops of (NULL: none), whose
 * stops it can sample are kept; every other stop is answered at once. */
void target_drain_events(struct ws_tracer *tr, struct ws_target *ticking);

/* Handles one waitpid status of thread `tid` (`ticking` as above). */
void target_handle_status(struct ws_tracer *tr, struct ws_target *ticking,
			  pid_t tid, int status);

/* Waits for SIGCHLD until `deadline_ns` (ws_now_ns); false when the
 * deadline had passed. wallspy's terminating signals taken meanwhile are
 * kept for ws_target_wait_events. */
bool target_wait_sigchld(uint64_t deadline_ns);

#endif
