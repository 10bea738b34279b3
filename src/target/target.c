/*
 * The traced process: seizing, the per-tick stop/resume cycle, signal
 * pass-through, thread churn, exec and exit, and detaching. All ptrace and
 * waitpid calls of wallspy live here; the rest of the program sees a set of
 * threads whose registers are valid while they are stopped.
 *
 * Events are consumed with waitpid(WNOHANG) and, when nothing is pending,
 * sigtimedwait on SIGCHLD, so a thread that never stops (uninterruptible
 * sleep) costs a bounded wait instead of hanging wallspy.
 */
#include "ws_target.h"

#include <dirent.h>
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

static const long seize_options = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC;

/* --- the thread table --- */

static size_t tid_slot(const struct ws_target *t, pid_t tid)
{
	return ws_hash_u64((uint32_t)tid) & (t->tid_index_size - 1);
}

static struct ws_thread *find_thread(struct ws_target *t, pid_t tid)
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

/* Drops exited threads from the table (between ticks only: pointers into the
 * table do not survive this). */
static struct ws_error *compact_threads(struct ws_target *t)
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

static struct ws_thread *add_thread(struct ws_target *t, pid_t tid,
				    enum ws_thread_run run)
{
	struct ws_thread *existing = find_thread(t, tid);
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

static struct ws_error *target_new(pid_t pid, struct ws_target **ret)
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

static void target_free(struct ws_target *t)
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

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
	       sig == SIGTTOU;
}

/* --- event handling --- */

static void mark_gone(struct ws_target *t, struct ws_thread *th, int status)
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

/* Detaches a thread in a ptrace stop, handing it `sig` (0: none); a
 * group-stopped thread stays stopped, as PTRACE_LISTEN would leave it. */
static void detach_thread(struct ws_thread *th, int sig)
{
	ptrace(PTRACE_DETACH, th->tid, 0, (void *)(long)sig);
	th->pending_signal = 0;
	th->regs_valid = false;
	th->interrupt_sent = false;
	th->run = WS_THREAD_GONE;
}

/* A thread whose stop we did not ask for goes straight back to running;
 * or, once the caller wants no more ticks (detach_on_resume), is detached
 * from that stop, which saves stopping it again to detach it. */
static void resume_thread(struct ws_target *t, struct ws_thread *th)
{
	long rc;
	if (t->detach_on_resume) {
		detach_thread(th, th->pending_signal);
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
	struct ws_thread *th = find_thread(t, tid);

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		if (th)
			mark_gone(t, th, status);
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
		th = add_thread(t, tid, WS_THREAD_STOPPED);
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
		resume_thread(t, th);
		return;
	case PTRACE_EVENT_CLONE: {
		unsigned long child = 0;
		if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) == 0 &&
		    !find_thread(t, (pid_t)child)) {
			/* Its own first stop is reported separately. */
			struct ws_thread *c = add_thread(t, (pid_t)child,
							 WS_THREAD_RUNNING);
			th = find_thread(t, tid); /* table may have moved */
			if (c)
				c->interrupt_sent = false;
		}
		break;
	}
	case PTRACE_EVENT_EXEC:
		handle_exec(t, tid);
		th = find_thread(t, t->pid);
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
		resume_thread(t, th);
}

static void drain_events(struct ws_target *t, bool stopping)
{
	for (;;) {
		int status;
		pid_t tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid <= 0)
			return;
		handle_status(t, tid, status, stopping);
	}
}

/* Waits for SIGCHLD until the deadline; false when the deadline passed.
 * Other signals of the set are deferred. */
static bool wait_sigchld_until(uint64_t deadline_ns)
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
	int sig = sigtimedwait(&set, NULL, &ts);
	if (sig > 0 && sig != SIGCHLD && !deferred_signal)
		deferred_signal = sig;
	return true;
}

void ws_target_poll_events(struct ws_target *t)
{
	drain_events(t, false);
}

int ws_target_wait_events(struct ws_target *t, uint64_t deadline_ns)
{
	for (;;) {
		drain_events(t, false);
		if (deferred_signal) {
			int sig = deferred_signal;
			deferred_signal = 0;
			return sig;
		}
		if (t->exited)
			return 0;
		if (!wait_sigchld_until(deadline_ns))
			return 0;
	}
}

/* --- the tick --- */

/* Reads the registers of every newly stopped thread; in a rolling tick,
 * visits and resumes it at once (a thread not asked for, stopped by an
 * event meanwhile, is resumed unvisited). */
static size_t collect_stopped(struct ws_target *t, ws_thread_visit_fn visit,
			      void *arg, uint64_t *longest_ns)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		if (th->run != WS_THREAD_STOPPED || th->visited)
			continue;
		th->visited = true;
		if (visit && !th->wanted) {
			resume_thread(t, th);
			continue;
		}
		if (ptrace(PTRACE_GETREGS, th->tid, 0, &th->regs) != 0) {
			/* A rolling tick has no resume_all to come: do not
			 * leave the thread in its stop. */
			if (visit)
				resume_thread(t, th);
			continue;
		}
		th->regs_valid = true;
		n++;
		if (!visit)
			continue;
		uint64_t held = ws_now_ns();
		visit(th, arg);
		resume_thread(t, th);
		/* Its registers stay this tick's for the adapter. */
		th->regs_valid = true;
		held = ws_now_ns() - held;
		if (held > *longest_ns)
			*longest_ns = held;
	}
	return n;
}

/* Stops the wanted threads (see ws_target_stop_all). */
static void stop_wanted(struct ws_target *t, long timeout_ns,
			ws_thread_visit_fn visit, void *arg, size_t *stopped,
			uint64_t *longest_ns)
{
	uint64_t longest = 0;
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		if (th->wanted && th->run == WS_THREAD_RUNNING &&
		    !th->interrupt_sent) {
			/* ESRCH: exiting; its exit status will tell. */
			if (ptrace(PTRACE_INTERRUPT, th->tid, 0, 0) == 0)
				th->interrupt_sent = true;
		}
	}

	size_t n = 0;
	uint64_t deadline = ws_now_ns() + (uint64_t)timeout_ns;
	for (;;) {
		drain_events(t, true);
		if (visit)
			n += collect_stopped(t, visit, arg, &longest);
		if (t->exited)
			break;
		bool waiting = false;
		for (size_t i = 0; i < t->nthreads; i++) {
			if (t->threads[i].interrupt_sent &&
			    t->threads[i].run == WS_THREAD_RUNNING) {
				waiting = true;
				break;
			}
		}
		if (!waiting)
			break;
		if (!wait_sigchld_until(deadline)) {
			break;
		}
	}
	if (!visit)
		n += collect_stopped(t, NULL, NULL, &longest);
	*stopped = n;
	if (longest_ns)
		*longest_ns = longest;
}

/* A new tick: no thread visited, no registers read, every one (`all`) or
 * none wanted yet. */
static struct ws_error *begin_tick(struct ws_target *t, bool all)
{
	struct ws_error *err = compact_threads(t);
	if (err)
		return err;
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		th->regs_valid = false;
		th->visited = false;
		th->wanted = all;
	}
	return NULL;
}

struct ws_error *ws_target_stop_all(struct ws_target *t, long timeout_ns,
				    ws_thread_visit_fn visit, void *arg,
				    size_t *stopped, uint64_t *longest_ns)
{
	struct ws_error *err = begin_tick(t, true);
	if (err)
		return err;
	stop_wanted(t, timeout_ns, visit, arg, stopped, longest_ns);
	return NULL;
}

void ws_target_forget_regs(struct ws_target *t)
{
	for (size_t i = 0; i < t->nthreads; i++)
		t->threads[i].regs_valid = false;
}

struct ws_error *ws_target_stop_threads(struct ws_target *t,
					const pid_t *tids, size_t ntids,
					long timeout_ns,
					ws_thread_visit_fn visit, void *arg,
					size_t *stopped, uint64_t *longest_ns)
{
	struct ws_error *err = begin_tick(t, false);
	if (err)
		return err;
	for (size_t i = 0; i < ntids; i++) {
		struct ws_thread *th = find_thread(t, tids[i]);
		if (th)
			th->wanted = true;
	}
	stop_wanted(t, timeout_ns, visit, arg, stopped, longest_ns);
	return NULL;
}

void ws_target_resume_all(struct ws_target *t)
{
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		if (th->run == WS_THREAD_STOPPED)
			resume_thread(t, th);
	}
}

/* --- attach, launch, detach --- */

static struct ws_error *seize_thread(struct ws_target *t, pid_t tid,
				     bool *added)
{
	*added = false;
	if (find_thread(t, tid))
		return NULL;
	if (ptrace(PTRACE_SEIZE, tid, 0, (void *)seize_options) != 0) {
		if (errno == ESRCH)
			return NULL; /* exited meanwhile */
		return ws_error_from_errno(errno, WS_ERR_OTHER,
					   "attach %d: seize thread %d",
					   t->pid, tid);
	}
	if (!add_thread(t, tid, WS_THREAD_RUNNING))
		return &ws_error_nomem;
	*added = true;
	return NULL;
}

struct ws_error *ws_target_attach(pid_t pid, struct ws_target **ret)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (pid <= 0 || access(path, F_OK) != 0)
		return ws_error_create(WS_ERR_NO_PROCESS,
				       "attach %d: no such process", pid);
	if (pid == getpid())
		return ws_error_create(WS_ERR_USAGE,
				       "attach %d: that is wallspy itself", pid);

	struct ws_target *t;
	struct ws_error *err = target_new(pid, &t);
	if (err)
		return err;
	ws_target_block_signals();

	/* Seize the leader first: its failure decides the error message. */
	bool added;
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)seize_options) != 0) {
		int e = errno;
		target_free(t);
		return ws_error_from_errno(e, WS_ERR_OTHER, "attach %d", pid);
	}
	if (!add_thread(t, pid, WS_THREAD_RUNNING)) {
		ws_target_detach(t);
		target_free(t);
		return &ws_error_nomem;
	}

	/* Threads may be created while we seize; clones of seized threads are
	 * followed automatically, so re-scan until a pass adds nothing. */
	for (bool grew = true; grew;) {
		grew = false;
		DIR *dir = opendir(path);
		if (!dir)
			break;
		struct dirent *de;
		while ((de = readdir(dir))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			if (tid <= 0)
				continue;
			err = seize_thread(t, tid, &added);
			if (err)
				break;
			grew |= added;
		}
		closedir(dir);
		if (err) {
			ws_target_detach(t);
			target_free(t);
			return err;
		}
	}
	ws_target_read_names(t);
	*ret = t;
	return NULL;
}

struct ws_error *ws_target_launch(char *const argv[], struct ws_target **ret)
{
	int go[2], fail[2];
	if (pipe2(go, O_CLOEXEC) != 0)
		return ws_error_from_errno(errno, WS_ERR_OTHER, "record: pipe");
	if (pipe2(fail, O_CLOEXEC) != 0) {
		close(go[0]);
		close(go[1]);
		return ws_error_from_errno(errno, WS_ERR_OTHER, "record: pipe");
	}
	ws_target_block_signals();
	sigset_t old;
	sigprocmask(SIG_SETMASK, NULL, &old);

	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(go[0]); close(go[1]); close(fail[0]); close(fail[1]);
		return ws_error_from_errno(e, WS_ERR_OTHER, "record: fork");
	}
	if (pid == 0) {
		/* The command gets wallspy's stdio and a clean signal mask. */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		close(go[1]);
		close(fail[0]);
		char c;
		/* Wait until the parent has seized us. */
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		execvp(argv[0], argv);
		int e = errno;
		ssize_t w = write(fail[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	close(go[0]);
	close(fail[1]);

	struct ws_target *t = NULL;
	struct ws_error *err = target_new(pid, &t);
	if (!err && ptrace(PTRACE_SEIZE, pid, 0, (void *)seize_options) != 0)
		err = ws_error_from_errno(errno, WS_ERR_OTHER,
					  "record: seize %d", pid);
	if (!err && !add_thread(t, pid, WS_THREAD_RUNNING))
		err = &ws_error_nomem;
	if (err) {
		kill(pid, SIGKILL);
		close(go[1]);
		close(fail[0]);
		waitpid(pid, NULL, __WALL);
		target_free(t);
		return err;
	}
	t->launched = true;
	ssize_t w = write(go[1], "x", 1);
	(void)w;
	close(go[1]);

	int child_errno = 0;
	ssize_t got;
	do {
		got = read(fail[0], &child_errno, sizeof(child_errno));
	} while (got < 0 && errno == EINTR);
	close(fail[0]);
	if (got == (ssize_t)sizeof(child_errno)) {
		/* exec failed; the child exits 127 */
		int status;
		while (waitpid(pid, &status, __WALL) == pid &&
		       !WIFEXITED(status) && !WIFSIGNALED(status))
			ptrace(PTRACE_CONT, pid, 0, 0);
		target_free(t);
		enum ws_error_kind kind = child_errno == ENOENT ||
						  child_errno == EACCES ||
						  child_errno == ENOEXEC
					  ? WS_ERR_NO_PROCESS
					  : WS_ERR_OTHER;
		return ws_error_create(kind, "record: cannot execute '%s': %s",
				       argv[0], strerror(child_errno));
	}
	/* Hold the new program at its exec stop, before its first
	 * instruction, until the caller is ready to sample
	 * (ws_target_resume_all). */
	for (;;) {
		int status;
		pid_t got = waitpid(pid, &status, __WALL);
		if (got < 0 && errno == EINTR)
			continue;
		if (got != pid || WIFEXITED(status) || WIFSIGNALED(status)) {
			target_free(t);
			return ws_error_create(WS_ERR_TARGET_EXITED,
					       "record: '%s' exited at exec",
					       argv[0]);
		}
		if ((status >> 16) == PTRACE_EVENT_EXEC)
			break;
		/* Anything else before the exec (a signal): pass it on. */
		int sig = (status >> 16) == 0 ? WSTOPSIG(status) : 0;
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig);
	}
	struct ws_thread *th = find_thread(t, pid);
	th->run = WS_THREAD_STOPPED;
	th->group_stop = false;
	*ret = t;
	return NULL;
}

void ws_target_detach(struct ws_target *t)
{
	if (!t)
		return;
	/* A thread must be in a ptrace stop to be detached: interrupt the
	 * running ones, then detach each as its stop arrives, passing on any
	 * signal it was about to receive. */
	size_t stopped;
	ws_target_stop_all(t, 200 * 1000000L, NULL, NULL, &stopped, NULL);
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		if (th->run == WS_THREAD_STOPPED)
			detach_thread(th, th->pending_signal);
	}
	/* Threads that did not stop in time (uninterruptible sleep): detach
	 * them when they report, for a little longer. */
	uint64_t deadline = ws_now_ns() + 2000 * 1000000ull;
	for (;;) {
		bool left = false;
		for (size_t i = 0; i < t->nthreads; i++)
			left |= t->threads[i].run == WS_THREAD_RUNNING &&
				t->threads[i].interrupt_sent;
		if (!left)
			break;
		int status;
		pid_t tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid > 0) {
			struct ws_thread *th = find_thread(t, tid);
			if (th && WIFSTOPPED(status)) {
				int sig = (status >> 16) == 0 ? WSTOPSIG(status) : 0;
				detach_thread(th, sig);
			} else if (th) {
				mark_gone(t, th, status);
			}
			continue;
		}
		if (!wait_sigchld_until(deadline))
			break;
	}
	/* If any thread never stopped, ptrace still holds it; the kernel
	 * detaches it when wallspy exits. */
}

void ws_target_kill(struct ws_target *t)
{
	if (!t || t->exited)
		return;
	kill(t->pid, SIGKILL);
	/* Reap every thread's report up to the leader's exit. */
	for (;;) {
		int status;
		pid_t got = waitpid(-1, &status, __WALL);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			break;
		if (got == t->pid && (WIFEXITED(status) || WIFSIGNALED(status))) {
			t->exited = true;
			t->exit_status = status;
			break;
		}
	}
}

void ws_target_destroy(struct ws_target *t)
{
	if (!t)
		return;
	/* A launched command that is still alive keeps running, detached:
	 * the user stopped wallspy, not the command (ws_target_kill is for
	 * failures before it ever ran). */
	if (!t->exited)
		ws_target_detach(t);
	target_free(t);
}

struct ws_thread *ws_target_find_thread(struct ws_target *t, pid_t tid)
{
	struct ws_thread *th = find_thread(t, tid);
	return th && th->run != WS_THREAD_GONE ? th : NULL;
}

void ws_target_read_names(struct ws_target *t)
{
	char path[64];
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		if (th->run == WS_THREAD_GONE)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", t->pid,
			 th->tid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, th->comm, sizeof(th->comm) - 1);
		close(fd);
		if (n > 0) {
			if (th->comm[n - 1] == '\n')
				n--;
			th->comm[n] = '\0';
		}
	}
}
