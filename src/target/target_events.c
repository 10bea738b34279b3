/*
 * The traced processes' threads and what happens to them: the thread
 * table of each process (a tid hash index over an array), the tree of
 * processes, wallspy's own signals, and every waitpid status: signal-
 * delivery stops passed on, new processes (fork, vfork) and, when asked,
 * clones adopted, exec and exits noted, stops kept or answered. The tick
 * (target_tick.c) and the lifecycle (target.c) act on threads through
 * these.
 *
 * Events are consumed with waitpid(WNOHANG) and, when nothing is pending,
 * sigtimedwait on SIGCHLD, so a thread that never stops (uninterruptible
 * sleep) costs a bounded wait instead of hanging wallspy.
 */
#include "target_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
	/* Entries move only from the first exited thread on: copying each
	 * onto itself (400 bytes, registers and all) was 10 % of wallspy's
	 * user time on wakers 1000 10, at a sample a tick. */
	size_t out = 0;
	while (out < t->nthreads && t->threads[out].run != WS_THREAD_GONE)
		out++;
	if (out == t->nthreads)
		return NULL;
	for (size_t i = out + 1; i < t->nthreads; i++) {
		if (t->threads[i].run != WS_THREAD_GONE)
			t->threads[out++] = t->threads[i];
	}
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

struct ws_thread *target_owner(struct ws_tracer *tr, pid_t tid,
			       struct ws_target **owner)
{
	for (size_t i = 0; i < tr->nprocs; i++) {
		struct ws_thread *th = target_thread_find(tr->procs[i], tid);
		if (th) {
			*owner = tr->procs[i];
			return th;
		}
	}
	*owner = NULL;
	return NULL;
}

struct ws_error *target_new(struct ws_tracer *tr, pid_t pid, long options,
			    struct ws_target **ret)
{
	struct ws_target *t = calloc(1, sizeof(*t));
	if (!t)
		return &ws_error_nomem;
	t->pid = pid;
	t->count_fd = -1;
	t->task_dir_fd = -1;
	t->tid_index_size = 64;
	t->tid_index = calloc(t->tid_index_size, sizeof(*t->tid_index));
	bool own = !tr;
	if (own) {
		tr = calloc(1, sizeof(*tr));
		if (tr)
			tr->options = options;
	}
	if (!t->tid_index || !tr ||
	    !ws_grow((void **)&tr->procs, &tr->capacity, tr->nprocs + 1,
		     sizeof(*tr->procs))) {
		free(t->tid_index);
		free(t);
		if (own)
			free(tr);
		return &ws_error_nomem;
	}
	tr->procs[tr->nprocs++] = t;
	t->tracer = tr;
	*ret = t;
	return NULL;
}

static void free_one(struct ws_target *t)
{
	if (t->count_fd >= 0)
		close(t->count_fd);
	if (t->task_dir_fd >= 0)
		close(t->task_dir_fd);
	free(t->tick_tids);
	free(t->threads);
	free(t->tid_index);
	free(t);
}

void target_free(struct ws_target *t)
{
	if (!t)
		return;
	struct ws_tracer *tr = t->tracer;
	if (tr->procs[0] != t) {
		ws_target_release(t);
		return;
	}
	for (size_t i = 0; i < tr->nprocs; i++)
		free_one(tr->procs[i]);
	free(tr->procs);
	free(tr);
}

void ws_target_release(struct ws_target *t)
{
	struct ws_tracer *tr = t->tracer;
	if (tr->procs[0] == t)
		return; /* the root goes with ws_target_destroy */
	for (size_t i = 1; i < tr->nprocs; i++) {
		if (tr->procs[i] == t) {
			memmove(&tr->procs[i], &tr->procs[i + 1],
				(tr->nprocs - i - 1) * sizeof(*tr->procs));
			tr->nprocs--;
			break;
		}
	}
	free_one(t);
}

size_t ws_target_tree_size(const struct ws_target *root)
{
	return root->tracer->nprocs;
}

struct ws_target *ws_target_tree_at(const struct ws_target *root, size_t i)
{
	return i < root->tracer->nprocs ? root->tracer->procs[i] : NULL;
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
	th->traced = false;
	th->run = WS_THREAD_GONE;
}

/* Ends a transient thread's stop by detaching it (with its pending
 * signal): it runs on untraced, known to the table. */
static void untrace(struct ws_thread *th)
{
	long rc = ptrace(PTRACE_DETACH, th->tid, 0,
			 (void *)(long)th->pending_signal);
	int e = errno;
	th->pending_signal = 0;
	th->regs_valid = false;
	th->interrupt_sent = false;
	th->traced = false;
	th->run = rc == 0 || e != ESRCH ? WS_THREAD_RUNNING : WS_THREAD_GONE;
}

/* Our stop interrupted a wait that the kernel does not restart by itself
 * (it returned EINTR, which a program treating EINTR as an error would
 * act on): epoll_wait and epoll_pwait without a timeout, epoll_pwait2
 * and rt_sigtimedwait (sigwaitinfo) with a NULL timeout, io_getevents
 * with a NULL timeout (eintr_probe: 599 EINTRs in 3 s at 200 Hz for
 * epoll_wait). Their result becomes ERESTARTNOHAND, the code the kernel
 * itself uses for a call to restart when no handler runs: resumed without
 * a signal the call is made again as if never interrupted; a real signal
 * with a handler, pending meanwhile, still makes it return EINTR, as it
 * would have without wallspy. Timed waits are left alone: made again,
 * they would wait their whole timeout anew. */
static void restart_interrupted_wait(struct ws_thread *th)
{
	enum { ERESTARTNOHAND_ = 514 };
	const struct user_regs_struct *r = &th->regs;
	if (!th->regs_valid || th->group_stop || th->pending_signal ||
	    (long long)r->rax != -EINTR)
		return;
	bool untimed;
	switch ((long)r->orig_rax) {
	case 232: /* epoll_wait(epfd, events, max, timeout) */
	case 281: /* epoll_pwait(..., timeout, sigmask, size) */
		untimed = (int)r->r10 < 0;
		break;
	case 441: /* epoll_pwait2(..., struct timespec *timeout, ...) */
		untimed = r->r10 == 0;
		break;
	case 128: /* rt_sigtimedwait(set, info, timeout, size) */
		untimed = r->rdx == 0;
		break;
	case 208: /* io_getevents(ctx, min, nr, events, timeout) */
		untimed = r->r8 == 0;
		break;
	default:
		return;
	}
	if (!untimed)
		return;
	struct user_regs_struct regs = *r;
	regs.rax = (unsigned long long)-ERESTARTNOHAND_;
	ptrace(PTRACE_SETREGS, th->tid, 0, &regs);
}

void target_thread_resume(struct ws_target *t, struct ws_thread *th)
{
	long rc;
	restart_interrupted_wait(th);
	/* Only a thread this tick sampled: a signal stop met on the way
	 * (before the tick's own stop) is answered as usual. */
	if (t->detach_on_resume && th->visited) {
		target_thread_detach(th, th->pending_signal);
		return;
	}
	if (t->transient && th->tid != t->pid) {
		untrace(th);
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

static void handle_exec(struct ws_target *t)
{
	/* After exec only the leader remains (the execing thread took its
	 * tid); the other threads report their exits, or are gone without a
	 * report (a leader replaced by the execing thread). */
	for (size_t i = 0; i < t->nthreads; i++) {
		if (t->threads[i].tid != t->pid)
			t->threads[i].run = WS_THREAD_GONE;
	}
	t->exec_seen = true;
	target_read_comm(t->pid, t->pid, t->comm);
}

/* The thread group of `tid` (/proc/TID/status, Tgid), or 0. */
static pid_t tgid_of(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *tg = strstr(buf, "\nTgid:");
	return tg ? (pid_t)atoi(tg + 6) : 0;
}

/* A traced task we did not know: a new process's leader (auto-attached
 * through its parent's fork event, whose own report may come after the
 * child's first stop) or, with clone events, a new thread of a known
 * process. NULL when it cannot be kept: then it is detached. */
static struct ws_thread *adopt(struct ws_tracer *tr, pid_t tid,
			       enum ws_thread_run run, struct ws_target **owner)
{
	pid_t tgid = tgid_of(tid);
	struct ws_target *t = NULL;
	if (tgid && tgid != tid) {
		for (size_t i = 0; i < tr->nprocs && !t; i++)
			if (tr->procs[i]->pid == tgid)
				t = tr->procs[i];
	}
	if (!t) {
		if (tgid && tgid != tid)
			return NULL; /* a thread of a process we do not trace */
		struct ws_error *err = target_new(tr, tid, tr->options, &t);
		if (err) {
			ws_error_destroy(err);
			return NULL;
		}
		target_read_comm(t->pid, t->pid, t->comm);
	}
	*owner = t;
	struct ws_thread *th = target_thread_add(t, tid, run);
	if (th)
		th->traced = true; /* the kernel attached it to us */
	return th;
}

/* A fork, vfork or clone event of a thread of t: the new task, traced
 * already, joins the tree (a thread of t, or a process of its own). */
static void handle_new_task(struct ws_target *t, pid_t tid)
{
	unsigned long msg = 0;
	if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) != 0)
		return;
	pid_t child = (pid_t)msg;
	struct ws_target *owner;
	struct ws_thread *c = target_owner(t->tracer, child, &owner);
	if (!c)
		c = adopt(t->tracer, child, WS_THREAD_RUNNING, &owner);
	if (c)
		c->interrupt_sent = false;
	if (owner && owner != t && owner->parent == 0 &&
	    owner != owner->tracer->procs[0])
		owner->parent = t->pid;
}

void target_handle_status(struct ws_tracer *tr, struct ws_target *ticking,
			  pid_t tid, int status)
{
	struct ws_target *t;
	struct ws_thread *th = target_owner(tr, tid, &t);

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		if (th)
			target_thread_gone(t, th, status);
		return;
	}
	if (!WIFSTOPPED(status))
		return;

	if (!th) {
		th = adopt(tr, tid, WS_THREAD_STOPPED, &t);
		if (!th) {
			ptrace(PTRACE_DETACH, tid, 0, 0);
			return;
		}
	}
	th->run = WS_THREAD_STOPPED;
	int sig = WSTOPSIG(status);
	int event = status >> 16;
	/* Only the threads the tick wants are kept in their stops. */
	bool stopping = t == ticking && th->wanted;

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
			th->stop_seen_ns = ws_now_ns();
			return;
		}
		if (tr->detaching) {
			target_thread_detach(th, sig);
			return;
		}
		target_thread_resume(t, th);
		return;
	case PTRACE_EVENT_CLONE:
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		handle_new_task(t, tid);
		th = target_owner(tr, tid, &t); /* the table may have moved */
		break;
	case PTRACE_EVENT_EXEC:
		handle_exec(t);
		th = target_thread_find(t, t->pid);
		if (!th)
			return;
		th->run = WS_THREAD_STOPPED;
		break;
	case PTRACE_EVENT_STOP:
		/* An interrupt stop, a new task's first stop, or a group
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
	 * every stop is answered at once; while the tree is detached, by
	 * detaching. */
	th->interrupt_sent = false;
	th->stop_seen_ns = ws_now_ns();
	if (tr->detaching)
		target_thread_detach(th, 0);
	else if (!stopping)
		target_thread_resume(t, th);
}

void target_drain_events(struct ws_tracer *tr, struct ws_target *ticking)
{
	for (;;) {
		int status;
		pid_t tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid <= 0)
			return;
		target_handle_status(tr, ticking, tid, status);
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
	target_drain_events(t->tracer, NULL);
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
	static uint64_t last_ns;
	if (deferred_signal)
		return true;
	uint64_t now = ws_now_ns();
	if (now - last_ns < 1000000)
		return false;
	last_ns = now;
	/* Taken now, kept for ws_target_wait_events to hand out. */
	take_pending_signal();
	return deferred_signal != 0;
}

int ws_target_wait_events(struct ws_target *t, uint64_t deadline_ns)
{
	for (;;) {
		target_drain_events(t->tracer, NULL);
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

