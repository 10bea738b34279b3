/*
 * Unit tests of ws_unwind (src/sampling/unwind.c), both backends, on the
 * snapshots of fixtures/threads_blocked: every thread blocks in a noinline
 * `inner` function called straight from a noinline `outer` one, itself
 * called from thread_main (tests/lib/fixture_truth). The unwound pcs are
 * named here from the fixture's own symbol table and load address
 * (tests/lib/elf_util), not by wallspy's symbolizer, so the chain is judged
 * against the fixture's construction alone: the fixture's frames, innermost
 * first, are exactly inner, outer, thread_main (main, _start for the main
 * thread); every other frame is code of libc, the only library it uses.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "e2e_util.h"
#include "elf_util.h"
#include "fixture_truth.h"
#include "ws_runtime.h"
#include "ws_snapshot.h"
#include "ws_symbols.h"
#include "ws_target.h"
#include "ws_unwind.h"

enum { STOP_TIMEOUT_NS = 2000 * 1000 * 1000L, MAX_FRAMES = 64 };

static void expect_ok(struct ws_error *err, const char *what)
{
	cr_assert_null(err, "%s: %s", what, err ? err->message : "");
}

/* A thread's unwind, named by the fixture's symbol table: the fixture's
 * functions in order (innermost first), and the frames elsewhere. */
struct chain {
	const char *fixture_frames[MAX_FRAMES];
	int nfixture;
	int before_first;        /* frames before the fixture's first */
	int after_last;          /* frames after the fixture's last */
	int outside_code;        /* frames in no executable mapping of the
				    fixture or libc */
	char text[2048];         /* the whole chain, for messages */
};

static void name_pcs(const char *name_of_fixture, pid_t pid,
		     const struct ws_pc *pcs, size_t n, struct chain *c)
{
	const char *fixture = e2e_fixture(name_of_fixture);
	struct e2e_symtab st = e2e_symtab_load(fixture);
	uint64_t bias = e2e_load_bias(pid, fixture);
	char libc[4096] = "";
	size_t len = 0;

	/* libc as this process maps it (the fixture's is the same file). */
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[4608];
	while (!libc[0] && fgets(line, sizeof(line), maps)) {
		char *path = strchr(line, '/');
		if (path && strstr(path, "/libc.so.6")) {
			path[strcspn(path, "\n")] = '\0';
			snprintf(libc, sizeof(libc), "%s", path);
		}
	}
	fclose(maps);
	cr_assert(libc[0], "no libc.so.6 mapped");

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		/* A return address belongs to the call before it. */
		uint64_t at = pcs[i].pc - (pcs[i].is_return_address ? 1 : 0);
		const char *name = "?";

		if (e2e_in_code_of(pid, at, fixture)) {
			const struct e2e_sym *fn = e2e_symtab_function_at(&st, at - bias);

			cr_assert_not_null(fn, "%#" PRIx64 " is in no function of the "
					   "fixture", pcs[i].pc);
			c->fixture_frames[c->nfixture++] = fn->name;
			name = fn->name;
			c->after_last = 0;
		} else if (e2e_in_code_of(pid, at, libc)) {
			if (c->nfixture == 0)
				c->before_first++;
			name = "(libc)";
			c->after_last++;
		} else {
			c->outside_code++;
			name = "(not code)";
		}
		len += (size_t)snprintf(c->text + len, sizeof(c->text) - len,
					"%s%s", i ? " < " : "", name);
		if (len >= sizeof(c->text))
			len = sizeof(c->text) - 1;
	}
	/* The names live in st: keep them for the caller. */
	for (int i = 0; i < c->nfixture; i++)
		c->fixture_frames[i] = e2e_strndup(c->fixture_frames[i],
						   strlen(c->fixture_frames[i]));
	e2e_symtab_free(&st);
}

/* Holds `fixture` (threads_blocked, or its build without frame pointers),
 * copies every thread's stack, resumes it (the unwind works on the copies,
 * as a tick does) and checks each thread's chain against the table with
 * the given backend. `cfi`: with the CFI steps on, which must unwind every
 * stack alone, to exactly the pcs libunwind finds. */
static void check_chains(const char *fixture, enum ws_unwind_backend backend,
			 bool cfi)
{
	pid_t pid = e2e_start_fixture(fixture, NULL, "ready", 10000);
	struct ws_target *t = NULL;
	struct ws_symbols *symbols = NULL;
	struct ws_unwinder *unwinder = NULL, *reference = NULL;
	struct ws_task_list tasks = { 0 };
	struct ws_snapshot_set set;
	size_t stopped = 0;

	expect_ok(ws_target_attach(pid, 0, &t), "attach");
	ws_target_read_names(t);
	expect_ok(ws_symbols_create(pid, &symbols), "symbols");
	expect_ok(ws_unwinder_create(pid, ws_symbols_dwfl(symbols), &unwinder),
		  "unwinder");
	expect_ok(ws_unwinder_set_backend(unwinder, backend), "backend");
	ws_unwinder_use_cfi_steps(unwinder, cfi);
	if (cfi)
		expect_ok(ws_unwinder_create(pid, ws_symbols_dwfl(symbols),
					     &reference), "reference unwinder");
	expect_ok(ws_target_stop_all(t, STOP_TIMEOUT_NS, NULL, NULL, &stopped,
				     NULL), "stop_all");
	cr_assert_eq(stopped, TB_THREADS + 1);
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_task *task = ws_task_list_add(&tasks);

		task->thread = t->threads[i].tid;
		task->start = WS_START_THREAD;
	}
	ws_snapshot_set_init(&set, pid);
	expect_ok(ws_snapshot_take(&set, t, &tasks, 128 * 1024), "snapshot");
	ws_target_resume_all(t);
	ws_unwinder_new_tick(unwinder);

	int checked = 0;
	for (size_t i = 0; i < tasks.n; i++) {
		const struct ws_thread *th = ws_target_find_thread(t, tasks.tasks[i].thread);
		struct ws_pc pcs[MAX_FRAMES];
		const char *stop_reason = NULL;
		struct chain c;

		cr_assert_null(set.snaps[i].error, "%s", set.snaps[i].error);
		size_t cfi_before = ws_unwinder_cfi_stacks(unwinder);
		size_t n = ws_unwind(unwinder, &set.snaps[i], pcs, MAX_FRAMES,
				     &stop_reason);
		name_pcs(fixture, pid, pcs, n, &c);
		if (cfi) {
			struct ws_pc ref[MAX_FRAMES];
			const char *ref_reason = NULL;
			size_t nref = ws_unwind(reference, &set.snaps[i], ref,
						MAX_FRAMES, &ref_reason);
			cr_assert_eq(ws_unwinder_cfi_stacks(unwinder), cfi_before + 1,
				     "%s: not unwound from CFI steps alone: %s",
				     th->comm, c.text);
			cr_assert_eq(n, nref, "%s: %zu frames from CFI steps, %zu "
				     "from libunwind: %s", th->comm, n, nref, c.text);
			for (size_t k = 0; k < n; k++)
				cr_assert(pcs[k].pc == ref[k].pc &&
					  pcs[k].is_return_address ==
						  ref[k].is_return_address,
					  "%s: frame %zu %#" PRIx64 ", libunwind's %#"
					  PRIx64 ": %s", th->comm, k, pcs[k].pc,
					  ref[k].pc, c.text);
		}
		cr_log_info("%s: %s", th->comm, c.text);
		cr_assert_null(stop_reason, "%s: the unwind stopped early (%s): %s",
			       th->comm, stop_reason, c.text);
		cr_assert(n > 0 && !pcs[0].is_return_address,
			  "%s: frame 0 is not the live pc", th->comm);
		cr_assert_eq(c.outside_code, 0, "%s: %d frames are not code: %s",
			     th->comm, c.outside_code, c.text);

		const char *want[3];
		int nwant = 0;
		bool running = false;
		if (strcmp(th->comm, TB_MAIN_NAME) == 0) {
			want[nwant++] = "main";
			want[nwant++] = "_start";
		} else {
			const struct tb_thread *row = NULL;
			for (int k = 0; k < TB_THREADS; k++)
				if (strcmp(tb_threads[k].name, th->comm) == 0)
					row = &tb_threads[k];
			cr_assert_not_null(row, "thread %s is not in the table", th->comm);
			want[nwant++] = row->inner;
			want[nwant++] = row->outer;
			want[nwant++] = TB_THREAD_MAIN;
			running = !row->wait_reason;
		}
		cr_assert_eq(c.nfixture, nwant, "%s: %d frames of the fixture, "
			     "expected %d: %s", th->comm, c.nfixture, nwant, c.text);
		for (int k = 0; k < nwant; k++)
			cr_assert_str_eq(c.fixture_frames[k], want[k],
					 "%s: fixture frame %d: %s", th->comm, k,
					 c.text);
		/* A blocked thread is inside libc's system call wrapper; the
		 * spinner's own loop is frame 0. A thread's stack ends in libc
		 * (start_thread, clone3), main's at the fixture's _start. */
		if (running)
			cr_assert_eq(c.before_first, 0, "%s: %s", th->comm, c.text);
		else
			cr_assert_gt(c.before_first, 0, "%s: no libc frame above "
				     "%s: %s", th->comm, want[0], c.text);
		if (strcmp(th->comm, TB_MAIN_NAME) == 0)
			cr_assert_eq(c.after_last, 0, "%s: frames past _start: %s",
				     th->comm, c.text);
		else
			cr_assert_gt(c.after_last, 0, "%s: nothing past %s: %s",
				     th->comm, TB_THREAD_MAIN, c.text);
		checked++;
	}
	cr_assert_eq(checked, TB_THREADS + 1);
	ws_snapshot_set_deinit(&set);
	ws_task_list_deinit(&tasks);
	ws_unwinder_destroy(unwinder);
	ws_unwinder_destroy(reference);
	ws_target_destroy(t);
	ws_symbols_destroy(symbols);
	e2e_check_healthy_then_stop(pid);
}

Test(unwind, libunwind_chains_match_the_fixture, .timeout = 60,
     .fini = e2e_cleanup)
{
	check_chains("threads_blocked", WS_UNWIND_LIBUNWIND, false);
}

Test(unwind, libdw_chains_match_the_fixture, .timeout = 60,
     .fini = e2e_cleanup)
{
	check_chains("threads_blocked", WS_UNWIND_LIBDW, false);
}

/* Frame pointers (the fixture's rbp-based frames, libc's sp-based ones). */
Test(unwind, cfi_step_chains_match_the_fixture_and_libunwind, .timeout = 60,
     .fini = e2e_cleanup)
{
	check_chains("threads_blocked", WS_UNWIND_LIBUNWIND, true);
}

/* -O2 -fomit-frame-pointer: every frame sp-based. */
Test(unwind, cfi_step_chains_without_frame_pointers, .timeout = 60,
     .fini = e2e_cleanup)
{
	check_chains("threads_blocked_nofp", WS_UNWIND_LIBUNWIND, true);
}

/* A copy cut by --max-stack: the unwind stops there and says why, never
 * presenting the part it read as a whole stack. */
Test(unwind, a_cut_copy_ends_the_unwind_with_a_reason, .timeout = 60,
     .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_blocked", NULL, "ready", 10000);
	struct ws_target *t = NULL;
	struct ws_unwinder *unwinder = NULL;
	struct ws_task_list tasks = { 0 };
	struct ws_snapshot_set set;
	size_t stopped = 0;

	expect_ok(ws_target_attach(pid, 0, &t), "attach");
	expect_ok(ws_unwinder_create(pid, NULL, &unwinder), "unwinder");
	expect_ok(ws_target_stop_all(t, STOP_TIMEOUT_NS, NULL, NULL, &stopped,
				     NULL), "stop_all");
	struct ws_task *task = ws_task_list_add(&tasks);
	task->thread = pid;         /* main: its chain passes through libc */
	task->start = WS_START_THREAD;
	ws_snapshot_set_init(&set, pid);
	expect_ok(ws_snapshot_take(&set, t, &tasks, 16), "snapshot");
	ws_target_resume_all(t);
	cr_assert(set.snaps[0].truncated);

	struct ws_pc pcs[MAX_FRAMES];
	const char *stop_reason = NULL;
	struct chain c;
	size_t n = ws_unwind(unwinder, &set.snaps[0], pcs, MAX_FRAMES, &stop_reason);
	name_pcs("threads_blocked", pid, pcs, n, &c);
	cr_assert_not_null(stop_reason, "a 16-byte copy unwound completely: %s",
			   c.text);
	cr_assert_lt(c.nfixture, 2, "main and _start unwound from 16 bytes: %s",
		     c.text);
	ws_snapshot_set_deinit(&set);
	ws_task_list_deinit(&tasks);
	ws_unwinder_destroy(unwinder);
	ws_target_destroy(t);
	e2e_check_healthy_then_stop(pid);
}

/* A frame pointer from a hostile stack near the top of the address space.
 * Found by fuzz/fuzz_unwind: a bounds check summed an address and the
 * word's size, wrapped around, and read past the copy. Here the copy
 * claims to stand at the last 71 bytes below 2^64 and the frame pointer
 * points at its last word, so the return address beside it is the wrapped
 * one; the copy's buffer ends at a page nothing may read, so reading past
 * it would crash this test. This process is the "target". */
static void hostile_frame_pointer(enum ws_unwind_backend backend)
{
	struct ws_symbols *symbols = NULL;
	struct ws_unwinder *unwinder = NULL;
	expect_ok(ws_symbols_create(getpid(), &symbols), "symbols");
	expect_ok(ws_unwinder_create(getpid(), ws_symbols_dwfl(symbols),
				     &unwinder), "unwinder");
	expect_ok(ws_unwinder_set_backend(unwinder, backend), "backend");
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *pages = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(pages, MAP_FAILED);
	cr_assert_eq(mprotect(pages + page, (size_t)page, PROT_NONE), 0);
	uint8_t *stack = pages + page - 64;
	memset(stack, 0x11, 64);
	struct ws_snapshot snap;
	memset(&snap, 0, sizeof(snap));
	snap.stack = stack;
	snap.stack_size = 64;
	snap.stack_start = UINT64_MAX - 70;
	snap.regs.value[WS_REG_RIP] = 0x1234; /* no unwind info: frame pointers */
	snap.regs.value[WS_REG_RSP] = snap.stack_start;
	snap.regs.value[WS_REG_RBP] = snap.stack_start + 56;
	snap.regs.valid = (1u << WS_REG_RIP) | (1u << WS_REG_RSP) |
			  (1u << WS_REG_RBP);
	struct ws_pc pcs[MAX_FRAMES];
	const char *stop_reason = NULL;
	size_t n = ws_unwind(unwinder, &snap, pcs, MAX_FRAMES, &stop_reason);
	cr_assert_leq(n, 2, "%zu frames from a stack of nothing", n);
	munmap(pages, 2 * (size_t)page);
	ws_unwinder_destroy(unwinder);
	ws_symbols_destroy(symbols);
}

Test(unwind, libunwind_survives_a_frame_pointer_at_the_top, .timeout = 30)
{
	hostile_frame_pointer(WS_UNWIND_LIBUNWIND);
}

Test(unwind, libdw_survives_a_frame_pointer_at_the_top, .timeout = 30)
{
	hostile_frame_pointer(WS_UNWIND_LIBDW);
}
