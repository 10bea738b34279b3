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
#include <sys/wait.h>
#include <unistd.h>

static const long seize_options = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC;

/* --- attach, launch, detach --- */

static struct ws_error *seize_thread(struct ws_target *t, const char *verb,
				     pid_t tid, bool *added)
{
	*added = false;
	if (target_thread_find(t, tid))
		return NULL;
	if (ptrace(PTRACE_SEIZE, tid, 0, (void *)seize_options) != 0) {
		if (errno == ESRCH)
			return NULL; /* exited meanwhile */
		return ws_error_from_errno(errno, WS_ERR_OTHER,
					   "%s %d: seize thread %d", verb,
					   t->pid, tid);
	}
	if (!target_thread_add(t, tid, WS_THREAD_RUNNING))
		return &ws_error_nomem;
	*added = true;
	return NULL;
}

struct ws_error *ws_target_attach(pid_t pid, struct ws_target **ret)
{
	return ws_target_attach_as("attach", pid, ret);
}

struct ws_error *ws_target_attach_as(const char *verb, pid_t pid,
				     struct ws_target **ret)
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
	struct ws_error *err = target_new(pid, &t);
	if (err)
		return err;
	ws_target_block_signals();

	/* Seize the leader first: its failure decides the error message. */
	bool added;
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)seize_options) != 0) {
		int e = errno;
		target_free(t);
		return ws_error_from_errno(e, WS_ERR_OTHER, "%s %d", verb, pid);
	}
	if (!target_thread_add(t, pid, WS_THREAD_RUNNING)) {
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
			err = seize_thread(t, verb, tid, &added);
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
	if (!err && !target_thread_add(t, pid, WS_THREAD_RUNNING))
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
	struct ws_thread *th = target_thread_find(t, pid);
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
			target_thread_detach(th, th->pending_signal);
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
			struct ws_thread *th = target_thread_find(t, tid);
			if (th && WIFSTOPPED(status)) {
				int sig = (status >> 16) == 0 ? WSTOPSIG(status) : 0;
				target_thread_detach(th, sig);
			} else if (th) {
				target_thread_gone(t, th, status);
			}
			continue;
		}
		if (!target_wait_sigchld(deadline))
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
	/* Whatever is still alive here keeps running, detached: record
	 * ends a command it launched itself (ws_target_end) unless told to
	 * keep it, and ws_target_kill is for failures before it ever ran. */
	if (!t->exited)
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
