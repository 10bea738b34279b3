/*
 * Unit tests of the syscall table and the blocked-in-a-syscall test
 * (src/target/syscalls.c). Numbers come from <sys/syscall.h>, an independent
 * source from the generated table.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <sys/syscall.h>

#include "ws_syscalls.h"

Test(syscalls, names_match_kernel_headers)
{
	cr_expect_str_eq(ws_syscall_name(SYS_read), "read");
	cr_expect_str_eq(ws_syscall_name(SYS_futex), "futex");
	cr_expect_str_eq(ws_syscall_name(SYS_epoll_wait), "epoll_wait");
	cr_expect_str_eq(ws_syscall_name(SYS_clock_nanosleep), "clock_nanosleep");
	cr_expect_str_eq(ws_syscall_name(SYS_poll), "poll");
	cr_expect_null(ws_syscall_name(-1));
	cr_expect_null(ws_syscall_name(100000));
}

Test(syscalls, blocked_only_with_restart_codes)
{
	struct user_regs_struct r = {0};
	long nr = -1;
	r.orig_rax = SYS_futex;
	r.rax = (unsigned long long)-512; /* -ERESTARTSYS */
	cr_expect(ws_syscall_blocked(&r, &nr));
	cr_expect_eq(nr, SYS_futex);
	r.orig_rax = SYS_clock_nanosleep;
	r.rax = (unsigned long long)-516; /* -ERESTART_RESTARTBLOCK */
	cr_expect(ws_syscall_blocked(&r, &nr));
	r.orig_rax = SYS_epoll_wait;
	r.rax = (unsigned long long)-EINTR;
	cr_expect(ws_syscall_blocked(&r, &nr));
	/* A finished call (real return value) is not a wait. */
	r.rax = 3;
	cr_expect_not(ws_syscall_blocked(&r, &nr));
	/* Interrupted in user space: no syscall number. */
	r.orig_rax = (unsigned long long)-1;
	r.rax = (unsigned long long)-512;
	cr_expect_not(ws_syscall_blocked(&r, &nr));
}
