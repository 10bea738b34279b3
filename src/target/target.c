/*
 * The traced process's lifecycle (see ws_target.h): launching a command
 * seized from its first instruction, attaching to every thread of a running
 * process, detaching leaving it as it was, killing what wallspy launched,
 * and the threads' names. All ptrace and waitpid calls of wallspy are in
 * target*.c: the tick's in target_tick.c, the events' in target_events.c.
 */
#include "target_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ws_procstat.h"

/* The PTRACE_SEIZE options for `flags` (ws_target_flags). New threads are
 * not followed through clone events unless asked: each would stop its
 * creator and itself once more (thread_churn 2000: 0.55 s alone, 1.0-1.6 s
 * under a tracer doing nothing else), so ws_target_scan finds them.
 * Following children needs them: a clone without CLONE_THREAD whose exit
 * signal is not SIGCHLD is reported only as a clone event. */
static long seize_options(unsigned flags)
{
	long options = PTRACE_O_TRACEEXEC;
	if (flags & WS_TARGET_CHILDREN)
		options |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
			   PTRACE_O_TRACECLONE;
	if (flags & WS_TARGET_TRACE_CLONES)
		options |= PTRACE_O_TRACECLONE;
	return options;
}

void target_read_comm(pid_t pid, pid_t tid, char comm[16])
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[16];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	if (buf[n - 1] == '\n')
		n--;
	memcpy(comm, buf, (size_t)n);
	comm[n] = '\0';
}

/* --- attach, launch, detach --- */

/* Every thread stays traced unless only the leader needs to (see
 * ws_thread.traced): following children needs every thread's fork
 * events, and clone events need the threads that clone. */
static bool transient_threads(unsigned flags)
{
	return !(flags & (WS_TARGET_CHILDREN | WS_TARGET_TRACE_CLONES));
}

struct ws_error *target_seize(struct ws_target *t, pid_t tid, bool *added)
{
	*added = false;
	struct ws_thread *known = target_thread_find(t, tid);
	if (known && known->run != WS_THREAD_GONE && known->traced)
		return NULL;
	if (!known && t->transient && tid != t->pid) {
		/* Known now, seized when a tick samples it. */
		if (!target_thread_add(t, tid, WS_THREAD_RUNNING))
			return &ws_error_nomem;
		*added = true;
		return NULL;
	}
	if (ptrace(PTRACE_SEIZE, tid, 0, (void *)t->tracer->options) != 0)
		return target_seize_refused("attach", t->pid, tid, errno);
	struct ws_thread *th = target_thread_add(t, tid, WS_THREAD_RUNNING);
	if (!th)
		return &ws_error_nomem;
	th->traced = true;
	*added = true;
	return NULL;
}

/* The thread count of the process: the link count of its /proc/PID/task
 * less 2, which the kernel sets to the thread count (proc_task_getattr):
 * an fstat, 1.3 us here at 1,000 threads, against 10 us to read the same
 * count from the leader's stat line; that line when the link count says
 * nothing (2 or less: the process is gone or a kernel counts otherwise).
 * -1 when neither can be read. */
static long thread_count(struct ws_target *t)
{
	char path[64];
	if (t->task_dir_fd < 0) {
		snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
		t->task_dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	struct stat st;
	if (t->task_dir_fd >= 0 && fstat(t->task_dir_fd, &st) == 0 &&
	    st.st_nlink > 2)
		return (long)st.st_nlink - 2;
	/* The leader's own stat line (the process's /proc/PID/stat sums
	 * every thread's times: 1 ms at 4,000 threads, against 3 us). */
	if (t->count_fd < 0) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", t->pid,
			 t->pid);
		t->count_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (t->count_fd < 0)
			return -1;
	}
	char buf[1024];
	ssize_t n = pread(t->count_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	const char *threads = ws_procstat_field(buf, 20);
	return threads ? strtol(threads, NULL, 10) : -1;
}

size_t ws_target_untraced(struct ws_target *t, bool *stale)
{
	target_drain_events(t->tracer, NULL);
	if (stale)
		*stale = false;
	if (t->exited)
		return 0;
	long count = thread_count(t);
	/* The one pass over the table a tick makes (each thread's entry is
	 * a cache line or more: 4,000 of them cost tens of microseconds). */
	size_t live = t->nthreads;
	struct ws_error *err = target_threads_compact(t);
	if (err) {
		/* Out of memory for the index: compacted next time. */
		ws_error_destroy(err);
		live = 0;
		for (size_t i = 0; i < t->nthreads; i++)
			live += t->threads[i].run != WS_THREAD_GONE;
	}
	t->nlive = live;
	if (stale)
		*stale = count >= 0 && (size_t)count < live;
	return count > (long)live ? (size_t)count - live : 0;
}

struct ws_error *ws_target_scan(struct ws_target *t)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	DIR *dir = opendir(path);
	if (!dir)
		return NULL; /* exiting: its exit will tell */
	/* Threads not traced exit without a word: those the listing lacks
	 * are gone. A traced one reports its own exit. */
	for (size_t i = 0; i < t->nthreads; i++)
		t->threads[i].listed = false;
	struct ws_error *err = NULL;
	struct dirent *de;
	bool cut = false;
	/* Seizing thousands of threads takes a while: wallspy's own
	 * SIGINT/SIGTERM cuts the pass short (the next scan would finish it). */
	while (!err && !(cut = ws_target_stop_requested()) &&
	       (de = readdir(dir))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		bool added;
		if (tid <= 0)
			continue;
		err = target_seize(t, tid, &added);
		struct ws_thread *th = target_thread_find(t, tid);
		if (th)
			th->listed = true;
	}
	closedir(dir);
	for (size_t i = 0; !err && !cut && i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		if (!th->listed && !th->traced && th->run != WS_THREAD_GONE)
			th->run = WS_THREAD_GONE;
	}
	return err;
}

/* The children of every thread of process t (/proc/PID/task/TID/children),
 * each seized with its threads as a process of t's tree, and theirs in
 * turn. One that cannot be traced is left alone. */
static void attach_descendants(struct ws_target *t)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	DIR *dir = opendir(path);
	if (!dir)
		return;
	struct dirent *de;
	while ((de = readdir(dir))) {
		int tid = atoi(de->d_name);
		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", t->pid,
			 tid);
		FILE *f = fopen(path, "re");
		int child;
		while (f && fscanf(f, "%d", &child) == 1) {
			struct ws_target *c;
			if (ptrace(PTRACE_SEIZE, child, 0,
				   (void *)t->tracer->options) != 0)
				continue; /* exited (a zombie), or refused */
			if (target_new(t->tracer, child, t->tracer->options, &c)) {
				ptrace(PTRACE_DETACH, child, 0, 0);
				continue;
			}
			struct ws_thread *leader =
				target_thread_add(c, child, WS_THREAD_RUNNING);
			if (leader)
				leader->traced = true;
			c->parent = t->pid;
			target_read_comm(child, child, c->comm);
			struct ws_error *err = ws_target_scan(c);
			ws_error_destroy(err);
			attach_descendants(c);
		}
		if (f)
			fclose(f);
	}
	closedir(dir);
}

struct ws_error *ws_target_attach(pid_t pid, unsigned flags,
				  struct ws_target **ret)
{
	return ws_target_attach_as("attach", pid, flags, ret);
}

struct ws_error *ws_target_attach_as(const char *verb, pid_t pid,
				     unsigned flags, struct ws_target **ret)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (pid <= 0 || access(path, F_OK) != 0)
		return ws_error_create(WS_ERR_NO_PROCESS,
				       "%s %d: no such process", verb, pid);
	if (pid == getpid())
		return ws_error_create(WS_ERR_USAGE,
				       "%s %d: that is wallspy itself", verb, pid);

	struct ws_target *t;
	struct ws_error *err = target_new(NULL, pid, seize_options(flags), &t);
	if (err)
		return err;
	t->transient = transient_threads(flags);
	ws_target_block_signals();

	/* Seize the leader first: its failure decides the error message. */
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)t->tracer->options) != 0) {
		err = target_seize_refused(verb, pid, pid, errno);
		if (!err)
			err = ws_error_create(WS_ERR_NO_PROCESS,
					      "%s %d: the process exited", verb,
					      pid);
		target_free(t);
		return err;
	}
	struct ws_thread *leader = target_thread_add(t, pid, WS_THREAD_RUNNING);
	if (!leader) {
		ptrace(PTRACE_DETACH, pid, 0, 0); /* not stopped: fails, and
						    * wallspy's exit detaches */
		target_free(t);
		return &ws_error_nomem;
	}
	leader->traced = true;
	/* One pass: threads born meanwhile are the next scan's. */
	err = ws_target_scan(t);
	if (err) {
		ws_target_detach(t);
		target_free(t);
		return err;
	}
	target_read_comm(pid, pid, t->comm);
	if (flags & WS_TARGET_CHILDREN)
		attach_descendants(t);
	*ret = t;
	return NULL;
}

struct ws_error *ws_target_launch(char *const argv[], unsigned flags,
				  struct ws_target **ret)
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
	struct ws_error *err = target_new(NULL, pid, seize_options(flags), &t);
	if (!err)
		t->transient = transient_threads(flags);
	if (!err && ptrace(PTRACE_SEIZE, pid, 0, (void *)t->tracer->options) != 0)
		err = ws_error_from_errno(errno, WS_ERR_OTHER,
					  "record: seize %d", pid);
	struct ws_thread *leader = err ? NULL
				       : target_thread_add(t, pid, WS_THREAD_RUNNING);
	if (!err && !leader)
		err = &ws_error_nomem;
	if (leader)
		leader->traced = true;
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
	struct ws_thread *th = target_thread_find(t, pid);
	th->run = WS_THREAD_STOPPED;
	th->group_stop = false;
	target_read_comm(pid, pid, t->comm);
	*ret = t;
	return NULL;
}

/* True while a thread of the processes being detached has an interrupt
 * pending (it must stop before it can be detached). */
static bool detach_pending(struct ws_tracer *tr, struct ws_target *only)
{
	for (size_t p = 0; p < tr->nprocs; p++) {
		struct ws_target *t = tr->procs[p];
		if (only && t != only)
			continue;
		for (size_t i = 0; i < t->nthreads; i++)
			if (t->threads[i].run == WS_THREAD_RUNNING &&
			    t->threads[i].interrupt_sent)
				return true;
	}
	return false;
}

void ws_target_detach(struct ws_target *t)
{
	if (!t)
		return;
	struct ws_tracer *tr = t->tracer;
	bool tree = tr->procs[0] == t;
	/* A thread must be in a ptrace stop to be detached: interrupt the
	 * running ones, then detach each as its stop arrives, passing on any
	 * signal it was about to receive. Detaching the tree, every process
	 * born meanwhile is detached at its first stop. */
	tr->detaching = tree;
	for (size_t p = 0; p < tr->nprocs; p++) {
		struct ws_target *proc = tr->procs[p];
		if (!tree && proc != t)
			continue;
		for (size_t i = 0; i < proc->nthreads; i++) {
			struct ws_thread *th = &proc->threads[i];
			if (!th->traced)
				continue;
			if (th->run == WS_THREAD_STOPPED)
				target_thread_detach(th, th->pending_signal);
			else if (th->run == WS_THREAD_RUNNING &&
				 !th->interrupt_sent &&
				 ptrace(PTRACE_INTERRUPT, th->tid, 0, 0) == 0)
				th->interrupt_sent = true;
		}
	}
	/* Threads that do not stop at once (uninterruptible sleep): detach
	 * them when they report, for a while. A status of a process not being
	 * detached is handled as usual. */
	uint64_t deadline = ws_now_ns() + 2000 * 1000000ull;
	while (detach_pending(tr, tree ? NULL : t)) {
		int status;
		pid_t tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid > 0) {
			struct ws_target *owner;
			struct ws_thread *th = target_owner(tr, tid, &owner);
			if (!th || (!tree && owner != t) || !WIFSTOPPED(status)) {
				/* handled by the event code, as any other */
				target_handle_status(tr, NULL, tid, status);
				continue;
			}
			int sig = (status >> 16) == 0 ? WSTOPSIG(status) : 0;
			target_thread_detach(th, sig);
			continue;
		}
		if (!target_wait_sigchld(deadline))
			break;
	}
	/* Processes born since the last status: detached at their first
	 * stop, which may still come. */
	if (tree)
		target_drain_events(tr, NULL);
	tr->detaching = false;
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
		target_handle_status(t->tracer, NULL, got, status);
		if (t->exited)
			break;
	}
}

void ws_target_destroy(struct ws_target *t)
{
	if (!t)
		return;
	/* Whatever is still alive here keeps running, detached: record
	 * ends a command it launched itself (ws_target_end) unless told to
	 * keep it, and ws_target_kill is for failures before it ever ran.
	 * For the root, its whole tree. */
	bool alive = false;
	struct ws_tracer *tr = t->tracer;
	for (size_t p = 0; p < tr->nprocs; p++)
		alive |= (tr->procs[p] == t || tr->procs[0] == t) &&
			 !tr->procs[p]->exited;
	if (alive)
		ws_target_detach(t);
	target_free(t);
}

struct ws_thread *ws_target_find_thread(struct ws_target *t, pid_t tid)
{
	struct ws_thread *th = target_thread_find(t, tid);
	return th && th->run != WS_THREAD_GONE ? th : NULL;
}

bool ws_target_executable(pid_t pid, char *buf, size_t size)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(link, buf, size - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

struct ws_thread *ws_target_thread(struct ws_target *t, pid_t tid)
{
	return target_thread_find(t, tid);
}

void ws_target_read_name(struct ws_target *t, struct ws_thread *th)
{
	target_read_comm(t->pid, th->tid, th->comm);
}

void ws_target_read_names(struct ws_target *t)
{
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		if (th->run != WS_THREAD_GONE)
			ws_target_read_name(t, th);
	}
}
