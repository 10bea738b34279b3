/*
 * Why a thread could not be seized (see target_seize_refused in
 * target_internal.h). PTRACE_SEIZE answers EPERM for many causes besides
 * permission: a kernel thread, a zombie, an exiting thread, a thread that
 * another tracer holds. /proc tells them apart, so each gets its own
 * message and exit code, and the permission advice (wallspy's top level)
 * is left for the one case it fits.
 */
#include "target_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PF_KTHREAD_FLAG = 0x00200000 };

/* Reads a /proc file into buf (NUL-terminated); false when it cannot. */
static bool read_proc(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* The value of "KEY:\t" in a /proc status text, or -1. */
static long status_field(const char *status, const char *key)
{
	char pattern[32];
	snprintf(pattern, sizeof(pattern), "\n%s:", key);
	const char *p = strstr(status, pattern);
	return p ? strtol(p + strlen(pattern), NULL, 10) : -1;
}

struct task_facts {
	char state;            /* R, S, D, Z, X, t, ... */
	char comm[64];
	pid_t ppid;
	unsigned long flags;   /* PF_* */
	long tracer;           /* TracerPid */
	long threads;          /* of the process */
};

/* The facts of thread `tid` of `pid`; false when it is gone. */
static bool task_facts(pid_t pid, pid_t tid, struct task_facts *f)
{
	char path[96], buf[4096];
	memset(f, 0, sizeof(*f));
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	if (!read_proc(path, buf, sizeof(buf)))
		return false;
	/* "tid (comm) state ppid pgrp session tty tpgid flags ..." */
	char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return false;
	size_t len = (size_t)(close_paren - open_paren - 1);
	if (len >= sizeof(f->comm))
		len = sizeof(f->comm) - 1;
	memcpy(f->comm, open_paren + 1, len);
	int ppid, pgrp, session, tty, tpgid;
	if (sscanf(close_paren + 2, "%c %d %d %d %d %d %lu", &f->state, &ppid,
		   &pgrp, &session, &tty, &tpgid, &f->flags) != 7)
		return false;
	f->ppid = ppid;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	if (read_proc(path, buf, sizeof(buf))) {
		f->tracer = status_field(buf, "TracerPid");
		f->threads = status_field(buf, "Threads");
	}
	return true;
}

/* The command name of process pid, or "?". */
static void comm_of(pid_t pid, char *out, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (!read_proc(path, out, size))
		snprintf(out, size, "?");
	out[strcspn(out, "\n")] = '\0';
}

struct ws_error *target_seize_refused(const char *verb, pid_t pid, pid_t tid,
				      int errnum)
{
	bool leader = tid == pid;
	struct task_facts f;
	if (errnum == ESRCH || !task_facts(pid, tid, &f)) {
		/* Gone meanwhile: a thread is simply not there to sample. */
		return leader ? ws_error_create(WS_ERR_NO_PROCESS,
						"%s %d: no such process", verb,
						pid)
			      : NULL;
	}
	if (f.tracer == getpid())
		return NULL; /* ours already: its clone event is on its way */
	if (errnum != EPERM)
		return ws_error_from_errno(errnum, WS_ERR_OTHER,
					   "%s %d: seize thread %d", verb, pid,
					   tid);
	if (f.flags & PF_KTHREAD_FLAG)
		return ws_error_create(WS_ERR_UNTRACEABLE,
				       "%s %d: a kernel thread (%s): it runs no user code to sample",
				       verb, pid, f.comm);
	if (f.state == 'Z' || f.state == 'X') {
		if (!leader)
			return NULL; /* exiting while we seized it: skip */
		if (f.threads > 1)
			return ws_error_create(WS_ERR_UNTRACEABLE,
					       "%s %d: its main thread has exited (%ld threads still run); wallspy traces a process through its main thread",
					       verb, pid, f.threads - 1);
		return ws_error_create(WS_ERR_NO_PROCESS,
				       "%s %d: a zombie (%s): it has exited and waits for its parent (pid %d) to reap it",
				       verb, pid, f.comm, f.ppid);
	}
	if (f.tracer > 0 && f.tracer != getpid()) {
		char tracer[64];
		comm_of((pid_t)f.tracer, tracer, sizeof(tracer));
		return ws_error_create(WS_ERR_UNTRACEABLE,
				       "%s %d: already traced by %s (pid %ld); a process has one tracer at a time: end or detach that one first",
				       verb, pid, tracer, f.tracer);
	}
	return ws_error_from_errno(errnum, WS_ERR_OTHER, "%s %d", verb, pid);
}
