/*
 * End-to-end tests of processes whose files the host cannot reach by the
 * paths in their /proc/PID/maps (src/debuginfo/finder.c, and the libdw
 * unwind the sampler falls back to): a binary deleted after it started, a
 * stripped one deleted whose debug file sits in .debug/ beside it
 * (.gnu_debuglink), and a stripped one that exists only in its own mount
 * namespace (unshare -m, a tmpfs over its directory) with its debug file
 * under that namespace's /usr/lib/debug/.build-id, itself a tmpfs that
 * hides the host's (libc's debug info then comes from the host's root);
 * that one and the deleted binary are dumped and also sampled (attach),
 * whose unwinder opens the files on its own.
 * The fixture is threads_blocked built without frame pointers, so only
 * unwind tables lead from a frame to its caller; its stacks are known by
 * construction (tests/lib/fixture_truth).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e_util.h"
#include "elf_util.h"
#include "fixture_truth.h"
#include "speedscope_view.h"
#include "wallspy_run.h"

static const char fixture[] = "threads_blocked_nofp";

/* Starts the threads_blocked program at path (60 s lifetime). */
static pid_t start(const char *path)
{
	char *argv[] = { (char *)path, (char *)"60", NULL };

	return e2e_start_ready(argv, "ready", 10000);
}

/* Sampled too, not only dumped (attach's unwinder opens the files on its
 * own): 0.5 s of attach has a stack of every table thread's inner, outer
 * and thread_main. */
static void check_sampled(pid_t pid)
{
	const char *out;

	e2e_attach(pid, (const char *const[]){ "-d", "0.5", NULL }, "out.json", &out,
		   30000);
	struct ss_view v = ss_load(out);
	for (int i = 0; i < TB_THREADS; i++) {
		bool found = false;
		SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {
			(void)w;
			found |= ss_has(&v, sample, tb_threads[i].inner) &&
				 ss_has(&v, sample, tb_threads[i].outer) &&
				 ss_has(&v, sample, TB_THREAD_MAIN);
		}
		cr_assert(found, "no sample of %s in %s/%s/" TB_THREAD_MAIN,
			  tb_threads[i].name, tb_threads[i].outer, tb_threads[i].inner);
	}
}

Test(e2e_containers, deleted_binary, .timeout = 60, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	const char *path = e2e_path(dir, "tb_deleted");
	char *cp[] = { (char *)"/bin/cp", (char *)e2e_fixture(fixture),
		       (char *)path, NULL };
	struct e2e_result res;

	e2e_run(cp, NULL, 10000, &res);
	cr_assert_eq(e2e_exit_code(&res), 0);
	pid_t pid = start(path);
	cr_assert_eq(unlink(path), 0);

	tb_check_dump_stacks(e2e_dump_json(pid, NULL), "tb_deleted");
	check_sampled(pid);
	e2e_check_healthy_then_stop(pid);
}

Test(e2e_containers, deleted_stripped_with_debuglink, .timeout = 60,
     .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	const char *debug = e2e_elf_split_debug(e2e_fixture(fixture), dir,
						"tb_deleted", "tb_deleted.debug",
						E2E_SPLIT_DEBUGLINK);
	const char *path = e2e_path(dir, "tb_deleted");
	const char *dot_debug = e2e_path(dir, ".debug");

	/* GDB's and libdwfl's second place for a debuglink: DIR/.debug/. */
	cr_assert_eq(mkdir(dot_debug, 0755), 0);
	cr_assert_eq(rename(debug, e2e_path(dot_debug, "tb_deleted.debug")), 0);
	pid_t pid = start(path);
	cr_assert_eq(unlink(path), 0);

	tb_check_dump_stacks(e2e_dump_json(pid, NULL), "tb_deleted");
	e2e_check_healthy_then_stop(pid);
}

/* threads_blocked_nofp's binary, stripped, in a mount namespace of its
 * own (unshare -m): on a tmpfs over DIR/ctr (the host sees ctr/ empty),
 * with a tmpfs over /usr/lib/debug (which hides the host's libc6-dbg
 * there) holding at .build-id/xx/yyy.debug its debug file, copied or, with
 * `link`, an absolute symlink to it in DIR/stage, which another tmpfs then
 * hides in the namespace. Returns its pid; *debug is the file on the host. */
static pid_t start_in_namespace(bool link, const char **debug)
{
	if (geteuid() != 0)
		cr_skip_test("unshare -m needs root");
	const char *dir = e2e_tmpdir();
	const char *stage = e2e_path(dir, "stage");
	const char *ctr = e2e_path(dir, "ctr");
	char id[160], hide[4200] = "";
	char *script;

	cr_assert_eq(mkdir(stage, 0755), 0);
	cr_assert_eq(mkdir(ctr, 0755), 0);
	*debug = e2e_elf_split_debug(e2e_fixture(fixture), stage, "tb", "tb.debug",
				     E2E_SPLIT_PLAIN);
	cr_assert(e2e_elf_build_id(*debug, id), "no build-id in %s", *debug);
	if (link)
		snprintf(hide, sizeof(hide), " mount -t tmpfs tmpfs '%s';", stage);
	cr_assert(asprintf(&script,
			   "set -e; mount -t tmpfs tmpfs '%s'; cp '%s/tb' '%s/tb';"
			   " mount -t tmpfs tmpfs /usr/lib/debug;"
			   " mkdir -p /usr/lib/debug/.build-id/%.2s;"
			   " %s '%s' /usr/lib/debug/.build-id/%.2s/%s.debug;%s"
			   " exec '%s/tb' 60",
			   ctr, stage, ctr, id, link ? "ln -s" : "cp", *debug, id,
			   id + 2, hide, ctr) > 0);
	char *argv[] = { (char *)"/usr/bin/unshare", (char *)"-m",
			 (char *)"--propagation", (char *)"private",
			 (char *)"/bin/sh", (char *)"-c", script, NULL };
	pid_t pid = e2e_start_ready(argv, "ready", 10000);
	free(script);
	cr_assert_not(e2e_exists(e2e_path(ctr, "tb")),
		      "the host sees the namespace's binary");
	return pid;
}

Test(e2e_containers, own_mount_namespace, .timeout = 60, .fini = e2e_cleanup)
{
	const char *debug;
	pid_t pid = start_in_namespace(false, &debug);

	tb_check_dump_stacks(e2e_dump_json(pid, NULL), "tb");
	check_sampled(pid);
	e2e_check_healthy_then_stop(pid);
}

/* A debug file the namespace names by an absolute symlink into a
 * directory it cannot see (a tmpfs hides it there) must not be read from
 * the host, where that path holds the right file: the target's symlinks
 * resolve inside its own root. The fixture's functions stay unnamed;
 * libc's are named (from the host's libc6-dbg, the namespace's
 * /usr/lib/debug being a tmpfs). */
Test(e2e_containers, symlink_stays_in_the_namespace, .timeout = 60,
     .fini = e2e_cleanup)
{
	const char *debug;
	pid_t pid = start_in_namespace(true, &debug);

	cr_assert(e2e_exists(debug), "the host lost %s", debug);

	cJSON *dump = e2e_dump_json(pid, NULL);
	const cJSON *task, *frame;
	bool libc_named = false;
	cJSON_ArrayForEach(task, cJSON_GetObjectItem(dump, "tasks"))
		cJSON_ArrayForEach(frame, cJSON_GetObjectItem(task, "frames")) {
			const char *fn = cJSON_GetStringValue(
				cJSON_GetObjectItem(frame, "function"));
			libc_named |= fn && strcmp(fn, "start_thread") == 0;
			cr_assert(!fn || strcmp(fn, TB_THREAD_MAIN) != 0,
				  "named through a symlink out of the namespace");
		}
	cr_assert(libc_named, "libc unnamed: the test proves nothing");
	e2e_check_healthy_then_stop(pid);
}
