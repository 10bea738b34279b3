/*
 * x86-64 system call names and the "is this thread blocked in the kernel"
 * test that decides an OS thread's state from its stopped registers.
 */
#ifndef WS_SYSCALLS_H
#define WS_SYSCALLS_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/user.h>

/* Name of system call `nr` ("futex"), or NULL when unknown. */
const char *ws_syscall_name(long nr);

/* True when a thread stopped by PTRACE_INTERRUPT was blocked in a system
 * call: orig_rax holds a syscall number and rax the -ERESTART* / -EINTR the
 * kernel leaves while it interrupts a blocking call. *nr gets the number. */
bool ws_syscall_blocked(const struct user_regs_struct *regs, long *nr);

/* The system call thread `tid` of process `pid` is blocked in, from
 * /proc/PID/task/TID/syscall, without stopping it (the caller must be
 * allowed to trace it). False when it is running, or on any error. One
 * open and read (~5 us). */
bool ws_syscall_of_thread(pid_t pid, pid_t tid, long *nr);

#endif
