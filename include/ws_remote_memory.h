/*
 * ws_remote_memory: reading the target's memory from outside.
 * process_vm_readv-based reads (single, and batched: up to 1024 ranges per
 * system call), with their errors mapped to ws_error, and a tiny reader
 * interface so layers above (DWARF-typed reads, unwinding) can also run
 * against an in-memory image in tests.
 */
#ifndef WS_REMOTE_MEMORY_H
#define WS_REMOTE_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ws_error.h"

/* A source of target memory: `read` fills buf with exactly `size` bytes at
 * `address` or returns an error (nothing partial). */
struct ws_memory_reader {
	struct ws_error *(*read)(void *arg, uint64_t address, void *buf,
				 size_t size);
	void *arg;
};

static inline struct ws_error *ws_memory_read(const struct ws_memory_reader *r,
					      uint64_t address, void *buf,
					      size_t size)
{
	return r->read(r->arg, address, buf, size);
}

/* Reads `size` bytes of process `pid` at `address` (one or more
 * process_vm_readv calls). Errors: ESRCH -> WS_ERR_NO_PROCESS, EPERM ->
 * WS_ERR_PERMISSION, unmapped -> WS_ERR_OTHER "read 0xADDR+SIZE: Bad address". */
struct ws_error *ws_remote_read(pid_t pid, uint64_t address, void *buf,
				size_t size);

/* One range of a batched read. `done` receives how many bytes arrived
 * (a range may stop early at an unmapped page). */
struct ws_remote_range {
	uint64_t address;
	void *buf;
	size_t size;
	size_t done;
};

/* Reads many ranges with as few system calls as possible (IOV_MAX per call;
 * a range that fails is retried alone so one bad range does not starve the
 * rest). Returns the number of ranges read completely. Never fails as a
 * whole; check each range's `done`. */
size_t ws_remote_readv(pid_t pid, struct ws_remote_range *ranges, size_t n);

/* A reader over process `*pid` (arg points at a pid_t the caller keeps). */
struct ws_memory_reader ws_remote_reader(pid_t *pid);

#endif
