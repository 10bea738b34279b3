/*
 * System call names (table generated from asm/unistd_64.h at build time) and
 * the blocked-in-a-syscall test on stopped registers.
 */
#include "ws_syscalls.h"

#include <errno.h>
#include <stddef.h>

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
