/*
 * System call names (table generated from asm/unistd_64.h at build time),
 * the blocked-in-a-syscall test on stopped registers, and the same question
 * asked of /proc for a thread that runs.
 */
#include "ws_syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "syscall_names.h"

/* Kernel-internal restart codes (include/linux/errno.h); a thread stopped
 * while blocked in an interruptible system call shows one of these (or
 * -EINTR for calls that are never restarted, like epoll_wait) in rax. */
enum {
	WS_ERESTARTSYS = 512,
	WS_ERESTARTNOINTR = 513,
	WS_ERESTARTNOHAND = 514,
	WS_ERESTART_RESTARTBLOCK = 516,
};

const char *ws_syscall_name(long nr)
{
	size_t n = sizeof(ws_syscall_names) / sizeof(ws_syscall_names[0]);
	if (nr < 0 || (size_t)nr >= n)
		return NULL;
	return ws_syscall_names[nr];
}

bool ws_syscall_blocked(const struct user_regs_struct *regs, long *nr)
{
	long orig = (long)regs->orig_rax;
	long ret = (long)regs->rax;
	if (orig < 0)
		return false;
	switch (-ret) {
	case EINTR:
	case WS_ERESTARTSYS:
	case WS_ERESTARTNOINTR:
	case WS_ERESTARTNOHAND:
	case WS_ERESTART_RESTARTBLOCK:
		*nr = orig;
		return true;
	default:
		return false;
	}
}

bool ws_syscall_of_thread(pid_t pid, pid_t tid, long *nr)
{
	char path[64], text[32];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid,
		 (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	/* "NR arg1 ... sp pc", "running", or "-1 sp pc" (not in a call). */
	char *end;
	long value = strtol(text, &end, 10);
	if (end == text || value < 0)
		return false;
	*nr = value;
	return true;
}
