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
#include <sys/ptrace.h>
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

/* The call of a thread that was never looked at before (no memory). */
static long syscall_now(pid_t pid)
{
	struct ws_syscall_memory none = { 0 };
	return ws_syscall_current_of_thread(pid, pid, &none);
}

static bool poll_syscall(pid_t pid, long *nr)
{
	for (int i = 0; i < 200; i++) {
		if ((*nr = syscall_now(pid)) >= 0)
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
		seen = (nr = syscall_now(pid)) >= 0;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(w);
	cr_expect_not(seen, "a spinning child named system call %ld", nr);
	/* And a thread that does not exist names none. */
	cr_expect_eq(syscall_now(pid), -1);
}

/* The number a wrapper loads right before its syscall instruction: the
 * encodings are the CPU's (Intel SDM: B8+rd id, REX.W C7 /0 id). */
Test(syscalls, decodes_the_number_a_wrapper_loads)
{
	/* glibc 2.36 clock_nanosleep: mov $0xe6,%eax; syscall */
	const uint8_t eax[] = { 0x90, 0xb8, 0xe6, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	/* mov $0xca,%rax; syscall */
	const uint8_t rax[] = { 0x48, 0xc7, 0xc0, 0xca, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	/* glibc's syscall(): mov %rdi,%rax; ... ; mov 0x8(%rsp),%r9; syscall */
	const uint8_t generic[] = { 0x48, 0x89, 0xf8, 0x4c, 0x8b, 0x4c, 0x24, 0x08,
				    0x0f, 0x05 };
	const uint8_t not_syscall[] = { 0xb8, 0xe6, 0x00, 0x00, 0x00, 0x90, 0x90 };

	cr_expect_eq(ws_syscall_decode_number(eax, sizeof(eax)), SYS_clock_nanosleep);
	cr_expect_eq(ws_syscall_decode_number(rax, sizeof(rax)), SYS_futex);
	cr_expect_eq(ws_syscall_decode_number(generic, sizeof(generic)), -1);
	cr_expect_eq(ws_syscall_decode_number(not_syscall, sizeof(not_syscall)), -1);
	cr_expect_eq(ws_syscall_decode_number(eax, 1), -1);
}

/* A thread seen blocked in a call keeps it when the kernel restarts it:
 * same pc, restart_syscall in orig_rax. Running in between forgets it. */
Test(syscalls, memory_keeps_the_call_across_restart)
{
	struct ws_syscall_memory memory = { 0 };
	struct user_regs_struct r = { 0 };

	r.orig_rax = SYS_nanosleep;
	r.rax = (unsigned long long)-516;
	r.rip = 0x1000;
	cr_expect_eq(ws_syscall_current(0, &r, &memory), SYS_nanosleep);
	r.orig_rax = WS_SYSCALL_RESTART;
	cr_expect_eq(ws_syscall_current(0, &r, &memory), SYS_nanosleep);
	cr_expect_eq(ws_syscall_current(0, &r, &memory), SYS_nanosleep);
	/* Elsewhere, with no code to read (tid 0 is no thread): the
	 * kernel's word for it. */
	r.rip = 0x2000;
	cr_expect_eq(ws_syscall_current(0, &r, &memory), WS_SYSCALL_RESTART);
	r.rip = 0x1000;
	r.rax = 0;
	r.orig_rax = (unsigned long long)-1;
	cr_expect_eq(ws_syscall_current(0, &r, &memory), -1);
	r.orig_rax = WS_SYSCALL_RESTART;
	r.rax = (unsigned long long)-516;
	cr_expect_eq(ws_syscall_current(0, &r, &memory), WS_SYSCALL_RESTART);
}

/* A running thread's call from /proc survives the kernel's restart as
 * restart_syscall through the memory, as a stopped thread's does. The
 * child sleeps an hour through the generic syscall(SYS_nanosleep) (no
 * number in its code to read); one PTRACE_INTERRUPT and PTRACE_CONT make
 * the kernel resume it as restart_syscall at the same pc (/proc shows
 * 219). Remembered from before the stop: nanosleep; without memory: what
 * the kernel says. */
Test(syscalls, of_thread_memory_keeps_the_call_across_restart)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		struct timespec hour = { 3600, 0 };
		syscall(SYS_nanosleep, &hour, NULL);
		_exit(1);
	}
	struct ws_syscall_memory memory = { 0 }, none = { 0 };
	long nr = -1;
	for (int i = 0; i < 200 && nr != SYS_nanosleep; i++) {
		nr = ws_syscall_current_of_thread(pid, pid, &memory);
		if (nr != SYS_nanosleep)
			nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	cr_expect_eq(nr, SYS_nanosleep);
	cr_expect_neq(memory.pc, 0);
	int status;
	bool traced = ptrace(PTRACE_SEIZE, pid, 0, 0) == 0 &&
		      ptrace(PTRACE_INTERRUPT, pid, 0, 0) == 0 &&
		      waitpid(pid, &status, 0) == pid &&
		      ptrace(PTRACE_CONT, pid, 0, 0) == 0;
	long kernel = -1;
	for (int i = 0; traced && i < 200 && kernel != WS_SYSCALL_RESTART; i++) {
		if ((kernel = syscall_now(pid)) != WS_SYSCALL_RESTART)
			nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
	}
	long remembered = ws_syscall_current_of_thread(pid, pid, &memory);
	long forgotten = ws_syscall_current_of_thread(pid, pid, &none);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_assert(traced, "could not PTRACE_SEIZE/INTERRUPT/CONT the child");
	cr_assert_eq(kernel, WS_SYSCALL_RESTART,
		     "/proc says %ld after the stop, not restart_syscall", kernel);
	cr_expect_eq(remembered, SYS_nanosleep);
	cr_expect_eq(forgotten, WS_SYSCALL_RESTART);
}
