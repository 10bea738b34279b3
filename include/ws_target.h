/*
 * ws_target: traced processes and their threads, through ptrace.
 * Seizes every thread of a process (PTRACE_SEIZE), stops them for a tick
 * (PTRACE_INTERRUPT), reads their registers, resumes them, passes every
 * signal through at once, and detaches leaving each process as it was.
 * Threads created later are not followed through clone events (each would
 * stop its creator twice): ws_target_untraced counts them from the
 * process's thread count and ws_target_scan finds them, per tick. Only the
 * leader stays traced; other threads are seized when a tick samples them
 * and detached when it resumes them (ws_thread.traced). With
 * WS_TARGET_CHILDREN, fork, vfork and exec are followed in every
 * descendant: each process is a ws_target of the root's tree. Every path
 * that stops a thread resumes or detaches it; a group-stopped process
 * (SIGSTOP) is put back into its group stop, never resumed by mistake.
 *
 * Signal-safety: nothing here is async-signal-safe; wallspy blocks SIGCHLD
 * and its terminating signals and receives them synchronously
 * (ws_target_wait_events), so no handler ever runs in the middle of a tick.
 */
#ifndef WS_TARGET_H
#define WS_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "ws_clock.h"	/* ws_now_ns, which callers of ws_target use too */
#include "ws_error.h"
#include "ws_syscalls.h"

enum ws_thread_run {
	WS_THREAD_RUNNING,       /* resumed; may run */
	WS_THREAD_STOPPED,       /* in a ptrace stop we caused or saw */
	WS_THREAD_GONE,          /* exited */
};

struct ws_thread {
	pid_t tid;
	enum ws_thread_run run;
	/* Seized now. Without WS_TARGET_CHILDREN, a thread other than the
	 * leader is traced only while a tick samples it (seized, stopped,
	 * detached): waitpid(-1) costs the kernel a pass over every tracee
	 * (540 us at 4,000, 1.8 us for one tid), and a thread not traced
	 * gets its signals and exits without wallspy in the way. */
	bool traced;
	bool refused;            /* a tick could not seize it (another
				  * tracer took it, a security policy) */
	bool listed;             /* seen by the running scan */
	bool interrupt_sent;     /* PTRACE_INTERRUPT pending a stop report */
	bool group_stop;         /* last stop was a group stop: resume with LISTEN */
	int pending_signal;      /* signal-delivery stop to re-inject on resume */
	bool regs_valid;         /* regs hold this tick's registers */
	struct user_regs_struct regs;
	/* With regs: the system call it is blocked in (-1: none), the real
	 * one even when the kernel restarted it as restart_syscall after an
	 * earlier stop (ws_syscall_current, with this thread's memory). */
	long syscall;
	struct ws_syscall_memory syscall_memory;
	char comm[16];           /* /proc/PID/task/TID/comm, "" until read */
	uint64_t comm_read_ns;   /* when comm was read (the sampler's) */
	uint64_t stack_lo, stack_hi; /* cached stack mapping, 0 if unknown */
	bool visited;            /* handed to the per-thread callback this tick */
	bool wanted;             /* to be stopped this tick */
	uint64_t stop_seen_ns;   /* when its stop was collected (rolling) */
};

struct ws_tracer;

/* How processes are traced (ws_target_launch, ws_target_attach). */
enum ws_target_flags {
	/* Follow fork, vfork, clone without CLONE_THREAD and exec in every
	 * descendant (clone events included, so new threads are adopted
	 * through them too): each new process joins the root's tree
	 * (ws_target_tree_at). Attaching, the descendants living then are
	 * seized as well (/proc/PID/task/TID/children). */
	WS_TARGET_CHILDREN = 1 << 0,
	/* Adopt new threads through their clone events
	 * (PTRACE_O_TRACECLONE) as well as per tick: for comparing the two
	 * (WALLSPY_TRACE_CLONES). */
	WS_TARGET_TRACE_CLONES = 1 << 1,
};

/* One traced process. */
struct ws_target {
	pid_t pid;
	struct ws_tracer *tracer;  /* of the whole tree */
	pid_t parent;            /* the traced process it came from; 0: root */
	char comm[16];           /* the process's name (/proc/PID/comm),
				  * read again after exec */
	bool launched;           /* we forked it (record) */
	bool exited;             /* the whole process is gone */
	int exit_status;         /* wait status of the leader, when exited */
	bool exec_seen;          /* the process called exec since last check */
	/* The next tick is the last (dump): each thread is detached where it
	 * would be resumed, instead of being stopped again to detach. */
	bool detach_on_resume;
	/* Threads other than the leader are traced only while sampled
	 * (ws_thread.traced); false with WS_TARGET_CHILDREN or
	 * WS_TARGET_TRACE_CLONES, which need every thread's events. */
	bool transient;
	/* Rolling ticks: at most this many threads interrupted and not yet
	 * visited, so no stopped thread waits long for its turn (0: all at
	 * once). Set by the sampler from its pause budget. */
	size_t interrupt_window;
	/* Rolling ticks: the sum over the tick's threads of each one's own
	 * hold (from its registers read to its resume), waits behind others
	 * left out: what one more thread in a batch adds to the last one's. */
	uint64_t held_alone_ns;
	/* The last tick's wanted threads (tids; its storage reused), and
	 * whether it wanted every thread: the next tick clears the marks of
	 * just those, not of every thread of a process of thousands. */
	pid_t *tick_tids;
	size_t ntick_tids, tick_tids_cap;
	bool tick_all;
	/* Live threads in the table, as ws_target_untraced counted them. */
	size_t nlive;
	struct ws_thread *threads;
	size_t nthreads, capacity;
	/* tid -> index+1 in threads (open addressing; 0 = empty). */
	uint32_t *tid_index;
	size_t tid_index_size;
	int task_dir_fd;         /* /proc/PID/task, or -1 */
	int count_fd;            /* /proc/PID/task/PID/stat, or -1 */
};

/* Launches argv[0] (PATH searched) already seized, and leaves it stopped
 * at its exec, before the new program's first instruction: the caller
 * prepares sampling, then starts it with ws_target_resume_all. Its stdio is
 * wallspy's. `flags`: ws_target_flags. Errors: WS_ERR_NO_PROCESS when the
 * command cannot be executed ("record: cannot execute 'x': No such file or
 * directory"). */
struct ws_error *ws_target_launch(char *const argv[], unsigned flags,
				  struct ws_target **ret);

/* Seizes every thread of a running process, in one pass over
 * /proc/PID/task (threads born meanwhile are found by ws_target_scan), so
 * attaching takes a bounded time however fast threads come. A thread that
 * exits while it is seized is skipped. `flags`: ws_target_flags. Errors,
 * each with its cause: WS_ERR_NO_PROCESS (none, or a zombie),
 * WS_ERR_UNTRACEABLE (a kernel thread, its main thread exited, already
 * traced: the tracer is named), WS_ERR_PERMISSION (only when permission is
 * the cause). */
struct ws_error *ws_target_attach(pid_t pid, unsigned flags,
				  struct ws_target **ret);

/* How many live threads of the process the table does not know (created
 * since the last scan): its thread count (one read of the leader's /proc
 * stat, about 3 us) less the known ones, after handling pending events;
 * *stale (may be NULL): true when the table knows more threads than the
 * process has (some exited untraced), so a scan would prune it. Between
 * ticks only: in the same pass over the table, exited threads are dropped
 * from it (target->nlive is the count left). */
size_t ws_target_untraced(struct ws_target *target, bool *stale);

/* Brings the table up to /proc/PID/task: threads not known yet are added
 * (seized, when every thread stays traced), known ones gone from it are
 * dropped. Costs about 1.2 us per thread of the process (the kernel builds
 * a dentry per entry): 5 ms at 4,000 threads, so callers scan only when
 * ws_target_untraced says so, within their CPU budget. */
struct ws_error *ws_target_scan(struct ws_target *target);

/* The processes of root's tree (WS_TARGET_CHILDREN): index 0 is the root,
 * then every process born since, in order, exited ones included until
 * released. Without WS_TARGET_CHILDREN the root is the only one. */
size_t ws_target_tree_size(const struct ws_target *root);
struct ws_target *ws_target_tree_at(const struct ws_target *root, size_t i);

/* Drops an exited process (not the root) from its tree and frees it. */
void ws_target_release(struct ws_target *proc);

/* ws_target_attach for the command `verb` ("dump"), whose name begins its
 * error messages ("dump 42: no such process"). */
struct ws_error *ws_target_attach_as(const char *verb, pid_t pid,
				     unsigned flags, struct ws_target **ret);

/* Called for each thread as soon as its stop is collected and its
 * registers are read; the thread is resumed right after it returns. */
typedef void (*ws_thread_visit_fn)(struct ws_thread *thread, void *arg);

/* Stops every live thread and waits (at most `timeout_ns`) for each to
 * report; reads the registers of each stopped thread. Threads that did not
 * stop in time stay marked (their stop is handled when it comes) and have
 * regs_valid == false. Returns the number of stopped threads in *stopped.
 * Signals and new threads seen meanwhile are handled.
 *
 * With `visit`, threads are not held until all have stopped: each one is
 * visited and resumed as soon as its own stop arrives (a rolling tick, for
 * when threads are sampled independently), and *longest_ns gets the longest
 * time any one thread was held. Without it every thread stays stopped until
 * ws_target_resume_all. */
struct ws_error *ws_target_stop_all(struct ws_target *target, long timeout_ns,
				    ws_thread_visit_fn visit, void *arg,
				    size_t *stopped, uint64_t *longest_ns);

/* Whether every thread the last stop wanted is stopped, or gone (none
 * was late for its timeout). */
bool ws_target_all_stopped(const struct ws_target *target);

/* A rolling tick (as ws_target_stop_all with `visit`) of the listed
 * threads only: for ticks that read tasks while the target runs and stop
 * just the threads running one. Tids not traced are ignored; other threads
 * keep running and have regs_valid == false. */
struct ws_error *ws_target_stop_threads(struct ws_target *target,
					const pid_t *tids, size_t ntids,
					long timeout_ns,
					ws_thread_visit_fn visit, void *arg,
					size_t *stopped, uint64_t *longest_ns);

/* Marks every thread's registers as not this tick's (before a tick that
 * reads the target while it runs). */
void ws_target_forget_regs(struct ws_target *target);

/* Resumes every thread stopped by ws_target_stop_all (group-stopped threads
 * go back to their group stop via PTRACE_LISTEN). Returns when the last
 * held thread was let go (CLOCK_MONOTONIC, ns; now if none was held): the
 * end of the pause. Not the return: the woken threads may run in
 * wallspy's place first, for milliseconds on a busy machine, and that
 * holds no thread of the target. */
uint64_t ws_target_resume_all(struct ws_target *target);

/* Handles whatever ptrace events are pending without blocking: re-injects
 * signals, adopts new threads, notes exits. Call between ticks. */
void ws_target_poll_events(struct ws_target *target);

/* Waits until `deadline_ns` (CLOCK_MONOTONIC) handling target events as they
 * arrive; returns early with the signal number when one of wallspy's own
 * terminating signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) arrives, or when
 * the target exits (returns 0 then, check target->exited; or the signal
 * when one is pending too, as after a Ctrl-C that reached both). Returns 0
 * at the deadline. Requires ws_target_block_signals() first. */
int ws_target_wait_events(struct ws_target *target, uint64_t deadline_ns);

/* Whether the last signal ws_target_wait_events returned came from the
 * kernel (a terminal's Ctrl-C or hangup: the whole foreground process
 * group got it), not from kill(2). */
bool ws_target_signal_from_kernel(void);

/* True once one of wallspy's terminating signals has arrived (kept for
 * ws_target_wait_events, which hands it out, without taking it). Work
 * that can last (seizing thousands of threads, a tick, naming stacks, a
 * download) checks it and cuts itself short, so a signal is honoured
 * within 100 ms in every phase. Costs a system call at most once a
 * millisecond. */
bool ws_target_stop_requested(void);

/* ws_target_poll_events(target), then ws_target_stop_requested(): what
 * a long wait outside the loop calls now and then (a debuginfod download:
 * ws_debuginfod_options.service), so the target's signals are passed on
 * and Ctrl-C ends the wait. */
bool ws_target_serve(void *target);

/* Blocks SIGCHLD and the terminating signals in the calling thread so they
 * are received synchronously by ws_target_wait_events. Idempotent. */
void ws_target_block_signals(void);

/* Detaches from every thread: each is stopped, detached with any pending
 * signal, and left running (or in its group stop). Safe after exit. For
 * the root, every process of its tree, also those born while detaching. */
void ws_target_detach(struct ws_target *target);

/* Kills a launched target (SIGKILL) and reaps it, so nothing of it
 * outlives wallspy's failure. */
void ws_target_kill(struct ws_target *target);

/* How ws_target_end ended a launched target. */
struct ws_target_end {
	int signal;              /* sent first; 0: none (it had its own) */
	bool killed;             /* still alive after the grace: SIGKILL */
	double grace;            /* seconds it was given */
};

/* Ends a launched target the way timeout(1) does: detaches (passing on
 * the signals it was about to get), sends `signal` (0: none, it already
 * has one coming) and SIGCONT (a stopped target would not act on it),
 * waits up to `grace_ns` for it to exit, then kills it
 * (SIGKILL), at once when another of wallspy's terminating signals comes
 * meanwhile (a second Ctrl-C). Reaps it: target->exited and exit_status
 * say how it ended. Not for a target wallspy did not launch. */
void ws_target_end(struct ws_target *target, int signal, uint64_t grace_ns,
		   struct ws_target_end *ret);

/* Detaches from a target still alive and frees it; for the root, its
 * whole tree. */
void ws_target_destroy(struct ws_target *target);

/* The live thread `tid`, or NULL (a hash lookup). */
struct ws_thread *ws_target_find_thread(struct ws_target *target, pid_t tid);

/* /proc/PID/exe's link into buf (" (deleted)" and all, as the kernel
 * writes it); false when unreadable. Truncated to size - 1 bytes. */
bool ws_target_executable(pid_t pid, char *buf, size_t size);

/* The thread `tid` in any state: exited or detached ones stay in the table
 * until the next tick begins. NULL if unknown. */
struct ws_thread *ws_target_thread(struct ws_target *target, pid_t tid);

/* Re-reads /proc/PID/task/TID/comm of one thread (not during a pause:
 * three system calls). */
void ws_target_read_name(struct ws_target *target, struct ws_thread *thread);

/* ws_target_read_name of every live thread. */
void ws_target_read_names(struct ws_target *target);

#endif
