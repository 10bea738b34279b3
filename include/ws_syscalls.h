/*
 * x86-64 system call names, the "is this thread blocked in the kernel" test
 * that decides an OS thread's state from its stopped registers, and the
 * memory that keeps a thread's real call across restart_syscall.
 */
#ifndef WS_SYSCALLS_H
#define WS_SYSCALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/* Name of system call `nr` ("futex"), or NULL when unknown. */
const char *ws_syscall_name(long nr);

/* True when a thread stopped by PTRACE_INTERRUPT was blocked in a system
 * call: orig_rax holds a syscall number and rax the -ERESTART* / -EINTR the
 * kernel leaves while it interrupts a blocking call. *nr gets the number. */
bool ws_syscall_blocked(const struct user_regs_struct *regs, long *nr);

/* The number of restart_syscall, which the kernel puts in place of a sleep
 * (nanosleep, clock_nanosleep, poll, a timed futex) that a ptrace stop
 * interrupted: from the second stop on, orig_rax says 219, not the call. */
enum { WS_SYSCALL_RESTART = 219 };

/* What one thread's earlier stops saw: the call blocked at `pc` (the
 * address after its syscall instruction; 0: nothing remembered). */
struct ws_syscall_memory {
	uint64_t pc;
	long nr;
};

/* The system call a stopped thread is blocked in, or -1 when it is not in
 * one: the real call even when the kernel restarts it as restart_syscall
 * after an earlier stop. That call is the one this thread's memory saw
 * blocked at the same pc (a restart resumes at the same syscall
 * instruction), else the number the code before the instruction loads
 * (`mov $NR, %eax`, as glibc's and Go's wrappers do; one 16-byte
 * process_vm_readv of thread `tid`), else restart_syscall itself (a
 * generic syscall() wrapper). Updates the memory. Cost: none but that read,
 * which happens only when a thread is first seen in a restarted call. */
long ws_syscall_current(pid_t tid, const struct user_regs_struct *regs,
			struct ws_syscall_memory *memory);

/* ws_syscall_current for a thread that is not stopped, from
 * /proc/PID/task/TID/syscall (its pc too: the last field): the real call
 * behind restart_syscall the same way, with the same memory (a thread
 * sampled now stopped, now from /proc, keeps one). -1 when it runs or is
 * in no call (the memory forgets), or on any error (it stays). The caller
 * must be allowed to trace the thread; a fresh (zeroed) memory gives the
 * kernel's own word. One open and read (~5 us), plus ws_syscall_current's
 * code read for a restarted call not remembered. */
long ws_syscall_current_of_thread(pid_t pid, pid_t tid,
				  struct ws_syscall_memory *memory);

/* The number loaded into eax/rax by the instruction that ends right before
 * a syscall instruction, from the `n` bytes of code that end at that
 * syscall instruction's end (the last two bytes are 0f 05); -1 when there
 * is no such load. */
long ws_syscall_decode_number(const uint8_t *code, size_t n);

#endif
