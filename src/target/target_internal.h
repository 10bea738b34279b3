/*
 * Private to target*.c: the thread table and the event handling of
 * target_events.c, which the tick (target_tick.c) and the lifecycle
 * (target.c) share. Nothing outside src/target/target*.c includes this.
 */
#ifndef WS_TARGET_INTERNAL_H
#define WS_TARGET_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ws_target.h"

/* --- the thread table --- */

/* A new target with an empty table (nothing traced yet); NULL on no memory. */
struct ws_error *target_new(pid_t pid, struct ws_target **ret);

/* Frees the target and its table; traces nothing, detaches nothing. NULL
 * is fine. */
void target_free(struct ws_target *t);

/* The thread `tid` in the table, gone ones included, or NULL (a hash
 * lookup). */
struct ws_thread *target_thread_find(struct ws_target *t, pid_t tid);

/* The thread `tid`, added in state `run` if new (its state set to `run`
 * otherwise); NULL on out of memory. May move the table: pointers to
 * other threads do not survive it. */
struct ws_thread *target_thread_add(struct ws_target *t, pid_t tid,
				    enum ws_thread_run run);

/* Drops exited threads from the table (between ticks only: pointers into
 * the table do not survive this). */
struct ws_error *target_threads_compact(struct ws_target *t);

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

/* Handles every pending waitpid status without blocking. `stopping`: a
 * tick is collecting stops, so a stop it can sample keeps the thread
 * stopped (otherwise every stop is answered at once). */
void target_drain_events(struct ws_target *t, bool stopping);

/* Waits for SIGCHLD until `deadline_ns` (ws_now_ns); false when the
 * deadline had passed. wallspy's terminating signals taken meanwhile are
 * kept for ws_target_wait_events. */
bool target_wait_sigchld(uint64_t deadline_ns);

#endif
