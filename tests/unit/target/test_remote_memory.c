/*
 * Unit tests of ws_remote_* (src/target/remote_memory.c: process_vm_readv):
 * reads of fixtures/dwtype_structs, whose globals hold values known by
 * construction at addresses its own symbol table gives (tests/lib/elf_util,
 * not wallspy's DWARF layer); batches larger than one system call takes,
 * with bad ranges among them; the errors of an unmapped address and of a
 * process that is gone; a range cut at a page boundary.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "e2e_util.h"
#include "elf_util.h"
#include "ws_remote_memory.h"

#define FIXTURE "dwtype_structs"

/* The error's message, checked for kind; the error is freed. */
static const char *message(struct ws_error *err, enum ws_error_kind kind)
{
	static char buf[1024];

	cr_assert_not_null(err, "expected an error");
	cr_assert_eq(err->kind, kind, "kind %d for: %s", err->kind, err->message);
	snprintf(buf, sizeof(buf), "%s", err->message);
	ws_error_destroy(err);
	return buf;
}

/* Run-time address of fixture `pid`'s tasks[i] (task_t tasks[3], ids 100,
 * 101, 102 in their first member: fixtures/dwtype_structs.c). */
static uint64_t task_address(pid_t pid, int i)
{
	static uint64_t base, stride;

	if (!base) {
		const char *path = e2e_fixture(FIXTURE);
		struct e2e_symtab st = e2e_symtab_load(path);
		const struct e2e_sym *tasks = e2e_symtab_find(&st, "tasks");

		cr_assert_not_null(tasks, "no symbol tasks in %s", path);
		cr_assert_eq(tasks->size % 3, 0);
		base = e2e_load_bias(pid, path) + tasks->value;
		stride = tasks->size / 3;
		e2e_symtab_free(&st);
	}
	return base + stride * (uint64_t)i;
}

Test(remote_memory, reads_batches_and_errors, .timeout = 20,
     .fini = e2e_cleanup)
{
	pid_t child = e2e_start_fixture(FIXTURE, NULL, "ready", 10000);
	int id = 0;

	cr_assert_null(ws_remote_read(child, task_address(child, 0), &id,
				      sizeof(id)));
	cr_assert_eq(id, 100);
	cr_assert_str_eq(message(ws_remote_read(child, 0x10, &id, 4),
				 WS_ERR_OTHER),
			 "read 0x10+4: Bad address");
	/* The same through the reader interface the layers above take. */
	struct ws_memory_reader reader = ws_remote_reader(&child);
	cr_assert_null(ws_memory_read(&reader, task_address(child, 2), &id,
				      sizeof(id)));
	cr_assert_eq(id, 102);

	/* Batches: more ranges than one system call takes (IOV_MAX), with
	 * bad ranges in the middle (each retried alone, the rest go on). */
	enum { N = 2500 };
	static struct ws_remote_range r[N];
	static int values[N];
	for (int i = 0; i < N; i++)
		r[i] = (struct ws_remote_range){ task_address(child, i % 3),
						 &values[i], 4, 99 };
	r[1].address = 0x10;
	r[1500].address = 0x20;
	r[N - 1].address = 0x30;
	size_t complete = ws_remote_readv(child, r, N);
	cr_assert_eq(complete, N - 3);
	cr_assert_eq(r[1].done, 0);
	cr_assert_eq(r[1500].done, 0);
	cr_assert_eq(r[N - 1].done, 0);
	for (int i = 0; i < N; i++) {
		if (i == 1 || i == 1500 || i == N - 1)
			continue;
		cr_assert_eq(r[i].done, 4, "range %d", i);
		cr_assert_eq(values[i], 100 + i % 3, "range %d", i);
	}

	/* A process that is gone: WS_ERR_NO_PROCESS, and readv gives up. */
	uint64_t address = task_address(child, 0);
	e2e_kill(child);
	cr_assert_not_null(strstr(message(ws_remote_read(child, address, &id, 4),
					  WS_ERR_NO_PROCESS),
				  "No such process"));
	cr_assert_eq(ws_remote_readv(child, r, 10), 0);
}

/* A range that stops at a page boundary: the first page readable, the next
 * one not (mprotect in this process; process_vm_readv on ourselves). */
Test(remote_memory, partial_page)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(p, MAP_FAILED);
	memset(p, 'x', (size_t)page);
	cr_assert_eq(mprotect(p + page, (size_t)page, PROT_NONE), 0);
	char buf[64];
	struct ws_remote_range r[2] = {
		{ (uint64_t)(uintptr_t)(p + page - 16), buf, 32, 0 },
		{ (uint64_t)(uintptr_t)p, buf + 32, 16, 0 },
	};
	cr_assert_eq(ws_remote_readv(getpid(), r, 2), 1);
	cr_assert_eq(r[0].done, 16);
	cr_assert_eq(r[1].done, 16);
	cr_assert_not_null(strstr(message(ws_remote_read(getpid(),
			(uint64_t)(uintptr_t)p + (uint64_t)page - 16, buf, 32),
			WS_ERR_OTHER), ": Bad address"));
	munmap(p, (size_t)page * 2);
}
