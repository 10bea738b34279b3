/*
 * Unit tests of the syscall table, the blocked-in-a-syscall test and its
 * /proc form (src/target/syscalls.c). Numbers come from <sys/syscall.h>, an
 * independent source from the generated table; the blocked call from a
 * child that blocks in read(2) by construction.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* A child blocked in read(2) on an empty pipe names read; one spinning in
 * user space names none. Polled: the child needs a moment to get there. */
static pid_t start_child(bool spin, int *write_end)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[1]);
		char c;
		if (spin)
			for (volatile unsigned long i = 0;; i++)
				;
		_exit(read(fds[0], &c, 1) == 0 ? 0 : 1);
	}
	close(fds[0]);
	*write_end = fds[1];
	return pid;
}

static bool poll_syscall(pid_t pid, long *nr)
{
	for (int i = 0; i < 200; i++) {
		if (ws_syscall_of_thread(pid, pid, nr))
			return true;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	return false;
}

Test(syscalls, of_thread_names_a_blocked_call)
{
	int w;
	pid_t pid = start_child(false, &w);
	long nr = -1;
	bool found = poll_syscall(pid, &nr);
	close(w); /* EOF: the child exits */
	int status;
	waitpid(pid, &status, 0);
	cr_assert(found, "no system call seen in /proc/%d/syscall", (int)pid);
	cr_expect_eq(nr, SYS_read);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

Test(syscalls, of_thread_none_when_running)
{
	int w;
	pid_t pid = start_child(true, &w);
	long nr = -1;
	/* Never in a call after its start: sample it a while. */
	nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
	bool seen = false;
	for (int i = 0; i < 20 && !seen; i++)
		seen = ws_syscall_of_thread(pid, pid, &nr);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(w);
	cr_expect_not(seen, "a spinning child named system call %ld", nr);
	/* And a thread that does not exist names none. */
	cr_expect_not(ws_syscall_of_thread(pid, pid, &nr));
}
