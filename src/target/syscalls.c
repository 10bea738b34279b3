/*
 * System call names (table generated from asm/unistd_64.h at build time),
 * the blocked-in-a-syscall test on stopped registers, a thread's real
 * call behind restart_syscall (remembered, else read from the code), and
 * the same question asked of /proc for a thread that runs.
 */
#include "ws_syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ws_remote_memory.h"

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

/* Thread tid's call from /proc/PID/task/TID/syscall: 1 with its number
 * and pc (the address after its syscall instruction), 0 when it runs or
 * is in no call, -1 on any error. */
static int proc_syscall(pid_t pid, pid_t tid, long *nr, uint64_t *pc)
{
	char path[64], text[256];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid,
		 (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	/* "NR ARG1 ... ARG6 SP PC", "running", or "-1 SP PC" (in no call). */
	char *end;
	long value = strtol(text, &end, 10);
	if (end == text || value < 0)
		return 0;
	*nr = value;
	*pc = 0;
	/* The last field is the pc. */
	char *last = strrchr(text, ' ');
	if (last)
		*pc = strtoull(last + 1, NULL, 16);
	return 1;
}

long ws_syscall_decode_number(const uint8_t *code, size_t n)
{
	if (n < 2 || code[n - 2] != 0x0f || code[n - 1] != 0x05)
		return -1;
	const uint8_t *end = code + n - 2;
	uint32_t imm;
	/* b8 imm32: mov $imm32, %eax (glibc's wrappers, Go's assembly). */
	if (end - code >= 5 && end[-5] == 0xb8) {
		memcpy(&imm, end - 4, 4);
		return (long)imm;
	}
	/* 48 c7 c0 imm32: mov $imm32, %rax. */
	if (end - code >= 7 && end[-7] == 0x48 && end[-6] == 0xc7 &&
	    end[-5] == 0xc0) {
		memcpy(&imm, end - 4, 4);
		return (long)(int32_t)imm;
	}
	return -1;
}

/* The call the code before the syscall instruction ending at pc loads, or
 * -1 (unreadable, or not loaded by an immediate). */
static long read_number(pid_t tid, uint64_t pc)
{
	uint8_t code[16];
	if (pc < sizeof(code))
		return -1;
	struct ws_error *err = ws_remote_read(tid, pc - sizeof(code), code,
					      sizeof(code));
	if (err) {
		ws_error_destroy(err);
		return -1;
	}
	return ws_syscall_decode_number(code, sizeof(code));
}

/* Call nr, blocked at pc: restart_syscall resolved to the call thread
 * tid's memory saw at that pc, else to the one its code loads. Updates the
 * memory. */
static long resolve(pid_t tid, long nr, uint64_t pc,
		    struct ws_syscall_memory *memory)
{
	if (nr == WS_SYSCALL_RESTART) {
		if (pc && memory->pc == pc)
			return memory->nr;
		long loaded = read_number(tid, pc);
		/* A load of restart_syscall itself would say nothing new. */
		if (loaded >= 0 && loaded != WS_SYSCALL_RESTART)
			nr = loaded;
	}
	memory->pc = pc;
	memory->nr = nr;
	return nr;
}

long ws_syscall_current(pid_t tid, const struct user_regs_struct *regs,
			struct ws_syscall_memory *memory)
{
	long nr;
	if (!ws_syscall_blocked(regs, &nr)) {
		/* Whatever it waited in is over. */
		memory->pc = 0;
		return -1;
	}
	return resolve(tid, nr, regs->rip, memory);
}

long ws_syscall_current_of_thread(pid_t pid, pid_t tid,
				  struct ws_syscall_memory *memory)
{
	long nr;
	uint64_t pc;
	switch (proc_syscall(pid, tid, &nr, &pc)) {
	case 1:
		return resolve(tid, nr, pc, memory);
	case 0:
		memory->pc = 0;
		return -1;
	default:
		return -1;
	}
}
