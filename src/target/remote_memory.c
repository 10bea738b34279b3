/*
 * Reads of another process's memory with process_vm_readv (see ws_remote_memory.h):
 * single ranges, batches of up to IOV_MAX ranges per system call, and the
 * ws_memory_reader over a live process. The kernel may stop a transfer early
 * at any page boundary, so every count is checked and the rest retried.
 * No caching here: callers read what they need while the target is stopped.
 */
#include "ws_remote_memory.h"

#include <errno.h>
#include <inttypes.h>
#include <sys/uio.h>

/* The kernel rejects more iovecs than this per call (UIO_MAXIOV). */
enum { REMOTE_IOV_MAX = 1024 };

/* One range alone: loops over short transfers. Returns 0 when all bytes
 * arrived, else the errno of the failing call (EFAULT for a transfer that
 * made no progress); *done counts the bytes that did arrive. */
static int read_one(pid_t pid, uint64_t address, void *buf, size_t size,
		    size_t *done)
{
	*done = 0;
	while (*done < size) {
		struct iovec local = {
			.iov_base = (char *)buf + *done,
			.iov_len = size - *done,
		};
		struct iovec remote = {
			.iov_base = (void *)(uintptr_t)(address + *done),
			.iov_len = size - *done,
		};
		ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0)
			return EFAULT;
		*done += (size_t)n;
	}
	return 0;
}

struct ws_error *ws_remote_read(pid_t pid, uint64_t address, void *buf,
				size_t size)
{
	size_t done;
	int errnum = read_one(pid, address, buf, size, &done);
	if (errnum == 0)
		return NULL;
	return ws_error_from_errno(errnum, WS_ERR_OTHER,
				   "read 0x%" PRIx64 "+%zu", address, size);
}

size_t ws_remote_readv(pid_t pid, struct ws_remote_range *ranges, size_t n)
{
	struct iovec local[REMOTE_IOV_MAX];
	struct iovec remote[REMOTE_IOV_MAX];
	size_t complete = 0;

	for (size_t i = 0; i < n; i++)
		ranges[i].done = 0;

	size_t next = 0;
	while (next < n) {
		size_t count = n - next < REMOTE_IOV_MAX ? n - next
							 : REMOTE_IOV_MAX;
		for (size_t k = 0; k < count; k++) {
			struct ws_remote_range *r = &ranges[next + k];
			local[k].iov_base = r->buf;
			local[k].iov_len = r->size;
			remote[k].iov_base = (void *)(uintptr_t)r->address;
			remote[k].iov_len = r->size;
		}
		ssize_t got = process_vm_readv(pid, local, count, remote,
					       count, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			/* The process is gone or forbidden: every range
			 * would fail the same way, so stop here. */
			if (errno == ESRCH || errno == EPERM)
				return complete;
			got = 0; /* EFAULT on the first range: retry it alone */
		}

		/* Credit whole ranges; the transfer stops inside (or at the
		 * start of) the first range it could not finish. */
		size_t left = (size_t)got;
		size_t k = 0;
		for (; k < count; k++) {
			struct ws_remote_range *r = &ranges[next + k];
			if (left < r->size) {
				r->done = left;
				break;
			}
			r->done = r->size;
			left -= r->size;
			complete++;
		}
		next += k;
		if (k == count)
			continue;

		/* The range that stopped the batch: finish it alone (the stop
		 * may be a page split, not a fault), then go on after it so
		 * one bad range does not starve the rest. */
		struct ws_remote_range *r = &ranges[next];
		size_t more = 0;
		int errnum = read_one(pid, r->address + r->done,
				      (char *)r->buf + r->done,
				      r->size - r->done, &more);
		r->done += more;
		if (errnum == 0)
			complete++;
		else if (errnum == ESRCH || errnum == EPERM)
			return complete;
		next++;
	}
	return complete;
}

static struct ws_error *remote_reader_read(void *arg, uint64_t address,
					   void *buf, size_t size)
{
	return ws_remote_read(*(pid_t *)arg, address, buf, size);
}

struct ws_memory_reader ws_remote_reader(pid_t *pid)
{
	return (struct ws_memory_reader){
		.read = remote_reader_read,
		.arg = pid,
	};
}
