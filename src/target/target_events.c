/*
 * The traced process's threads and what happens to them: the thread table
 * (a tid hash index over an array), wallspy's own signals, and every
 * waitpid status: signal-delivery stops passed on, clones adopted, exec and
 * exits noted, stops kept or answered. The tick (target_tick.c) and the
 * process's lifecycle (target.c) act on threads through these.
 *
 * Events are consumed with waitpid(WNOHANG) and, when nothing is pending,
 * sigtimedwait on SIGCHLD, so a thread that never stops (uninterruptible
 * sleep) costs a bounded wait instead of hanging wallspy.
 */
#include "target_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include "ws_grow.h"
#include "ws_hash.h"

/* --- the thread table --- */

static size_t tid_slot(const struct ws_target *t, pid_t tid)
{
	return ws_hash_u64((uint32_t)tid) & (t->tid_index_size - 1);
}

struct ws_thread *target_thread_find(struct ws_target *t, pid_t tid)
{
	for (size_t i = tid_slot(t, tid);; i = (i + 1) & (t->tid_index_size - 1)) {
		uint32_t v = t->tid_index[i];
		if (v == 0)
			return NULL;
		if (t->threads[v - 1].tid == tid)
			return &t->threads[v - 1];
	}
}

static void index_insert(struct ws_target *t, size_t idx)
{
	pid_t tid = t->threads[idx].tid;
	size_t i = tid_slot(t, tid);
	while (t->tid_index[i] != 0)
		i = (i + 1) & (t->tid_index_size - 1);
	t->tid_index[i] = (uint32_t)idx + 1;
}

static struct ws_error *rebuild_index(struct ws_target *t, size_t size)
{
	uint32_t *index = calloc(size, sizeof(*index));
	if (!index)
		return &ws_error_nomem;
	free(t->tid_index);
	t->tid_index = index;
	t->tid_index_size = size;
	for (size_t i = 0; i < t->nthreads; i++)
		index_insert(t, i);
	return NULL;
}

struct ws_error *target_threads_compact(struct ws_target *t)
{
	size_t out = 0;
	for (size_t i = 0; i < t->nthreads; i++) {
		if (t->threads[i].run != WS_THREAD_GONE)
			t->threads[out++] = t->threads[i];
		else
			free(t->threads[i].stack_copy);
	}
	if (out == t->nthreads)
		return NULL;
	t->nthreads = out;
	return rebuild_index(t, t->tid_index_size);
}

struct ws_thread *target_thread_add(struct ws_target *t, pid_t tid,
				     enum ws_thread_run run)
{
	struct ws_thread *existing = target_thread_find(t, tid);
	if (existing) {
		existing->run = run;
		return existing;
	}
	if (!ws_grow((void **)&t->threads, &t->capacity, t->nthreads + 1,
		     sizeof(*t->threads)))
		return NULL;
	/* Keep the index at most half full. */
	if ((t->nthreads + 1) * 2 > t->tid_index_size &&
	    rebuild_index(t, t->tid_index_size * 2))
		return NULL;
	struct ws_thread *th = &t->threads[t->nthreads];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->run = run;
	index_insert(t, t->nthreads);
	t->nthreads++;
	return th;
}

struct ws_error *target_new(pid_t pid, struct ws_target **ret)
{
	struct ws_target *t = calloc(1, sizeof(*t));
	if (!t)
		return &ws_error_nomem;
	t->pid = pid;
	t->tid_index_size = 64;
	t->tid_index = calloc(t->tid_index_size, sizeof(*t->tid_index));
	if (!t->tid_index) {
		free(t);
		return &ws_error_nomem;
	}
	*ret = t;
	return NULL;
}

void target_free(struct ws_target *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nthreads; i++)
		free(t->threads[i].stack_copy);
	free(t->threads);
	free(t->tid_index);
	free(t);
}

/* --- signals --- */

static sigset_t wallspy_signals(bool with_chld)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	if (with_chld)
		sigaddset(&set, SIGCHLD);
	return set;
}

void ws_target_block_signals(void)
{
	sigset_t set = wallspy_signals(true);
	sigprocmask(SIG_BLOCK, &set, NULL);
}

/* A terminating signal for wallspy taken off the queue while waiting for
 * SIGCHLD (inside a tick, or while detaching): kept until
 * ws_target_wait_events hands it out, so Ctrl-C is never lost. */
static int deferred_signal;
/* Whether it came from the kernel (a terminal's Ctrl-C or hangup, which
 * reach the whole foreground process group), not from kill(2); and the
 * same for the last signal ws_target_wait_events handed out. */
static bool deferred_from_kernel, returned_from_kernel;

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
	       sig == SIGTTOU;
}

/* --- event handling --- */

void target_thread_gone(struct ws_target *t, struct ws_thread *th,
			int status)
{
	th->run = WS_THREAD_GONE;
	th->interrupt_sent = false;
	th->regs_valid = false;
	if (th->tid == t->pid) {
		/* The leader's exit is reported once the whole group is gone. */
		t->exited = true;
		t->exit_status = status;
	}
}

void target_thread_detach(struct ws_thread *th, int sig)
{
	ptrace(PTRACE_DETACH, th->tid, 0, (void *)(long)sig);
	th->pending_signal = 0;
	th->regs_valid = false;
	th->interrupt_sent = false;
	th->run = WS_THREAD_GONE;
}

void target_thread_resume(struct ws_target *t, struct ws_thread *th)
{
	long rc;
	if (t->detach_on_resume) {
		target_thread_detach(th, th->pending_signal);
		return;
	}
	if (th->group_stop)
		rc = ptrace(PTRACE_LISTEN, th->tid, 0, 0);
	else
		rc = ptrace(PTRACE_CONT, th->tid, 0,
			    (void *)(long)th->pending_signal);
	th->pending_signal = 0;
	th->regs_valid = false;
	th->run = rc == 0 || errno != ESRCH ? WS_THREAD_RUNNING : WS_THREAD_GONE;
}

static void handle_exec(struct ws_target *t, pid_t tid)
{
	/* After exec only the leader remains (the execing thread took its
	 * tid); the other threads are gone without further reports. */
	(void)tid;
	for (size_t i = 0; i < t->nthreads; i++) {
		if (t->threads[i].tid != t->pid)
			t->threads[i].run = WS_THREAD_GONE;
	}
	t->exec_seen = true;
}

/* Handles one waitpid status. `stopping`: a tick is collecting stops, so an
 * interrupt stop keeps the thread stopped. */
static void handle_status(struct ws_target *t, pid_t tid, int status,
			  bool stopping)
{
	struct ws_thread *th = target_thread_find(t, tid);

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		if (th)
			target_thread_gone(t, th, status);
		else if (tid == t->pid) {
			t->exited = true;
			t->exit_status = status;
		}
		return;
	}
	if (!WIFSTOPPED(status))
		return;

	if (!th) {
		/* A new thread's first stop can arrive before its parent's
		 * clone event. */
		th = target_thread_add(t, tid, WS_THREAD_STOPPED);
		if (!th) {
			ptrace(PTRACE_CONT, tid, 0, 0);
			return;
		}
	}
	th->run = WS_THREAD_STOPPED;
	int sig = WSTOPSIG(status);
	int event = status >> 16;

	switch (event) {
	case 0:
		/* Signal-delivery stop. During a tick, a thread we are
		 * stopping is sampled right here, before its handler runs
		 * (a Go thread interrupted inside a SIGURG handler would be on
		 * its signal stack, away from its goroutine), and the signal
		 * goes with the resume at the end of the tick. Otherwise it is
		 * handed on at once. Either way our pending interrupt is not
		 * lost: it traps after the signal is handled, and that stop is
		 * answered like any other. */
		th->pending_signal = sig;
		th->group_stop = false;
		if (stopping && th->interrupt_sent) {
			th->interrupt_sent = false;
			return;
		}
		target_thread_resume(t, th);
		return;
	case PTRACE_EVENT_CLONE: {
		unsigned long child = 0;
		if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) == 0 &&
		    !target_thread_find(t, (pid_t)child)) {
			/* Its own first stop is reported separately. */
			struct ws_thread *c = target_thread_add(t, (pid_t)child,
							 WS_THREAD_RUNNING);
			th = target_thread_find(t, tid); /* table may have moved */
			if (c)
				c->interrupt_sent = false;
		}
		break;
	}
	case PTRACE_EVENT_EXEC:
		handle_exec(t, tid);
		th = target_thread_find(t, t->pid);
		if (!th)
			return;
		th->run = WS_THREAD_STOPPED;
		break;
	case PTRACE_EVENT_STOP:
		/* An interrupt stop, a new thread's first stop, or a group
		 * stop (SIGSTOP and friends) when sig is a stop signal. */
		th->group_stop = is_stop_signal(sig);
		break;
	default:
		break;
	}

	/* During a tick every ptrace stop but signal delivery is as good as our
	 * interrupt: keep the thread stopped and sample it (a new thread's first
	 * stop included). If our interrupt is still pending in the kernel it
	 * traps again after the resume and is answered then. Outside a tick
	 * every stop is answered at once. */
	th->interrupt_sent = false;
	if (!stopping)
		target_thread_resume(t, th);
}

void target_drain_events(struct ws_target *t, bool stopping)
{
	for (;;) {
		int status;
		pid_t tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid <= 0)
			return;
		handle_status(t, tid, status, stopping);
	}
}

/* Takes a terminating signal for wallspy already pending, without
 * waiting, into deferred_signal. */
static void take_pending_signal(void)
{
	sigset_t set = wallspy_signals(false);
	struct timespec now = { 0, 0 };
	siginfo_t info;
	int sig = deferred_signal ? 0 : sigtimedwait(&set, &info, &now);
	if (sig > 0) {
		deferred_signal = sig;
		deferred_from_kernel = info.si_code == SI_KERNEL;
	}
}

bool target_wait_sigchld(uint64_t deadline_ns)
{
	uint64_t now = ws_now_ns();
	if (now >= deadline_ns)
		return false;
	uint64_t left = deadline_ns - now;
	struct timespec ts = {
		.tv_sec = (time_t)(left / 1000000000u),
		.tv_nsec = (long)(left % 1000000000u),
	};
	sigset_t set = wallspy_signals(true);
	siginfo_t info;
	int sig = sigtimedwait(&set, &info, &ts);
	if (sig > 0 && sig != SIGCHLD && !deferred_signal) {
		deferred_signal = sig;
		deferred_from_kernel = info.si_code == SI_KERNEL;
	}
	return true;
}

void ws_target_poll_events(struct ws_target *t)
{
	target_drain_events(t, false);
}

bool ws_target_signal_from_kernel(void)
{
	return returned_from_kernel;
}

bool ws_target_serve(void *target)
{
	ws_target_poll_events(target);
	return ws_target_stop_requested();
}

bool ws_target_stop_requested(void)
{
	if (deferred_signal)
		return true;
	sigset_t pending, mine = wallspy_signals(false);
	if (sigpending(&pending) != 0)
		return false;
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&mine, sig) && sigismember(&pending, sig))
			return true;
	return false;
}

int ws_target_wait_events(struct ws_target *t, uint64_t deadline_ns)
{
	for (;;) {
		target_drain_events(t, false);
		/* A Ctrl-C that ended the target too is wallspy's as well. */
		if (t->exited)
			take_pending_signal();
		if (deferred_signal) {
			int sig = deferred_signal;
			returned_from_kernel = deferred_from_kernel;
			deferred_signal = 0;
			return sig;
		}
		if (t->exited)
			return 0;
		if (!target_wait_sigchld(deadline_ns))
			return 0;
	}
}

