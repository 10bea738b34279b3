/*
 * End-to-end tests of the debug-info cache (src/debuginfo/debugcache.c as
 * `wallspy dump` uses it): a dump of fixtures/threads_blocked with
 * WALLSPY_DEBUG_CACHE set to a fresh directory writes BUILDID.debug (a valid
 * uncompressed ELF with libc's debug build-id), reuses it, replaces a
 * truncated or garbage one, never uses an unsafe directory, and prints the
 * same stacks as with the cache off. Plus a program whose own DWARF is
 * compressed (BUILDID.elf) and a Go program (keyed by Go's build ID). Tests
 * skip when libc's debug file is missing or not compressed.
 *
 * Dumps are compared as sets of task blocks without t_spin's: the order of
 * tasks varies and the spinning thread moves. A warm-up dump first settles
 * the blocked threads: a sleep or poll interrupted by the first dump shows
 * as restart_syscall from then on.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e_util.h"
#include "elf_util.h"
#include "wallspy_run.h"

/* This process's libc (the fixtures' too) and its separate debug file. */
static char libc_id[160];
static char libc_debug[512];

/* ---- end to end ---- */

/* Output of `wallspy dump [--no-debug-cache] PID` with WALLSPY_DEBUG_CACHE
 * = cache_dir ("off" for none); fails the test unless it exits 0. */
static char *dump(pid_t pid, const char *cache_dir, bool no_cache_option)
{
	const char *option[] = { "--no-debug-cache", NULL };

	setenv("WALLSPY_DEBUG_CACHE", cache_dir, 1);
	struct e2e_result res = e2e_run_dump(pid, no_cache_option ? option : NULL,
					     NULL, 0, 30000);
	cr_assert_str_empty(res.err, "wallspy dump wrote to stderr: %s",
			    res.err);
	return res.out;
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The dump's task blocks (separated by blank lines) but t_spin's, sorted and
 * joined: what two dumps of the same threads_blocked share. Heap string. */
static char *normalize(const char *text)
{
	char *copy = strdup(text);
	char *blocks[64];
	size_t n = 0, total = 0;
	for (char *save, *b = strtok_r(copy, "\n", &save); b;
	     b = strtok_r(NULL, "\n", &save)) {
		/* strtok_r ate the newlines: rebuild blocks line by line. */
		if (strncmp(b, "task ", 5) == 0) {
			cr_assert_lt(n, 64);
			blocks[n++] = NULL;
		}
		if (n == 0)
			continue;
		char *joined;
		cr_assert_geq(asprintf(&joined, "%s%s\n",
				       blocks[n - 1] ? blocks[n - 1] : "", b), 0);
		free(blocks[n - 1]);
		blocks[n - 1] = joined;
	}
	free(copy);
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		if (strstr(blocks[i], "\"t_spin\"")) {
			free(blocks[i]);
			continue;
		}
		blocks[kept++] = blocks[i];
		total += strlen(blocks[i]) + 1;
	}
	qsort(blocks, kept, sizeof(blocks[0]), compare_strings);
	char *out = calloc(1, total + 1);
	for (size_t i = 0; i < kept; i++) {
		strcat(out, blocks[i]);
		strcat(out, "\n");
		free(blocks[i]);
	}
	return out;
}

static void assert_same_stacks(const char *a, const char *b, const char *what)
{
	char *na = normalize(a), *nb = normalize(b);
	cr_assert_str_eq(na, nb, "%s: the dumps differ:\n%s\n---\n%s", what,
			 na, nb);
	free(na);
	free(nb);
}

/* Starts threads_blocked, settles it with a dump without cache and returns
 * its pid; *reference is a dump with the cache off. */
static pid_t start_target(char **reference)
{
	pid_t pid = e2e_start_fixture("threads_blocked", "50", "ready", 10000);
	dump(pid, "off", false);
	*reference = dump(pid, "off", false);
	/* libc frames named from DWARF (file:line), not just symbols. */
	cr_assert(strstr(*reference, "pthread_mutex_lock.c"),
		  "no libc DWARF in the reference dump:\n%s", *reference);
	return pid;
}

static const char *cache_file(const char *dir)
{
	char name[200];
	snprintf(name, sizeof(name), "%s.debug", libc_id);
	return e2e_path(dir, name);
}

Test(e2e_debugcache, dump_fills_then_uses_the_cache, .timeout = 120,
     .fini = e2e_cleanup)
{
	e2e_require_compressed_libc_debug(libc_id, libc_debug);
	char *reference;
	pid_t pid = start_target(&reference);
	const char *dir = e2e_path(e2e_tmpdir(), "cache");

	char *cold = dump(pid, dir, false);
	const char *file = cache_file(dir);
	cr_assert(e2e_exists(file), "no %s; the cache holds: %s", file,
		  e2e_dir_list(dir));
	cr_assert_eq(e2e_dir_entries(dir), 1, "%s", e2e_dir_list(dir));
	cr_assert_eq(e2e_elf_compressed_sections(file), 0);
	char id[160];
	cr_assert(e2e_elf_build_id(file, id));
	cr_assert_str_eq(id, libc_id);
	struct stat before, after, dir_st;
	cr_assert_eq(stat(file, &before), 0);
	cr_assert_eq(stat(dir, &dir_st), 0);
	cr_assert_eq(dir_st.st_mode & 0777, 0700);

	char *warm = dump(pid, dir, false);
	cr_assert_eq(stat(file, &after), 0);
	cr_assert_eq(before.st_ino, after.st_ino, "a good copy was rewritten");
	char *option_off = dump(pid, dir, true);

	assert_same_stacks(reference, cold, "cache off vs cold");
	assert_same_stacks(cold, warm, "cold vs warm");
	assert_same_stacks(reference, option_off, "cache off vs --no-debug-cache");
	e2e_check_healthy_then_stop(pid);
}

/* Damages the cached copy with `damage`, dumps, and checks the copy was
 * replaced by a good one and the stacks are right. */
static void check_replaced(void (*damage)(const char *file))
{
	e2e_require_compressed_libc_debug(libc_id, libc_debug);
	char *reference;
	pid_t pid = start_target(&reference);
	const char *dir = e2e_path(e2e_tmpdir(), "cache");
	dump(pid, dir, false);
	const char *file = cache_file(dir);
	struct stat good, st;
	cr_assert_eq(stat(file, &good), 0);

	damage(file);
	char *out = dump(pid, dir, false);
	assert_same_stacks(reference, out, "after damage");
	cr_assert_eq(stat(file, &st), 0);
	cr_assert_eq(st.st_size, good.st_size, "the copy was not replaced");
	cr_assert_eq(e2e_elf_compressed_sections(file), 0);
	cr_assert_eq(e2e_dir_entries(dir), 1, "%s", e2e_dir_list(dir));
	e2e_check_healthy_then_stop(pid);
}

static void truncate_half(const char *file)
{
	struct stat st;
	cr_assert_eq(stat(file, &st), 0);
	cr_assert_eq(truncate(file, st.st_size / 2), 0);
}

static void overwrite_garbage(const char *file)
{
	FILE *f = fopen(file, "w");
	cr_assert_not_null(f);
	fputs("not an ELF file\n", f);
	fclose(f);
}

/* A file that passes for an ELF with the right build-id but is compressed:
 * the original copied in. */
static void copy_original(const char *file)
{
	char *argv[] = { "/bin/cp", libc_debug, (char *)file, NULL };
	struct e2e_result res;
	e2e_run(argv, NULL, 30000, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "cp: %s", res.err);
	cr_assert_gt(e2e_elf_compressed_sections(file), 0);
}

Test(e2e_debugcache, truncated_copy_is_replaced, .timeout = 120,
     .fini = e2e_cleanup)
{
	check_replaced(truncate_half);
}

Test(e2e_debugcache, garbage_copy_is_replaced, .timeout = 120,
     .fini = e2e_cleanup)
{
	check_replaced(overwrite_garbage);
}

Test(e2e_debugcache, compressed_copy_is_replaced, .timeout = 120,
     .fini = e2e_cleanup)
{
	check_replaced(copy_original);
}

Test(e2e_debugcache, unsafe_directory_is_not_used, .timeout = 120,
     .fini = e2e_cleanup)
{
	e2e_require_compressed_libc_debug(libc_id, libc_debug);
	char *reference;
	pid_t pid = start_target(&reference);
	const char *dir = e2e_tmpdir();
	cr_assert_eq(chmod(dir, 0777), 0);
	char *out = dump(pid, dir, false);
	assert_same_stacks(reference, out, "unsafe directory");
	cr_assert_eq(e2e_dir_entries(dir), 0, "%s", e2e_dir_list(dir));
	e2e_check_healthy_then_stop(pid);
}

/* A program whose own DWARF is compressed (as with gcc -gz): a copy of
 * threads_blocked compressed by eu-elfcompress. Its frames keep their
 * file:line, from BUILDID.elf. */
/* Dumps pid twice with the cache in `dir` (cold, then warm): the first must
 * write `name` there, uncompressed, and both must match `reference`. */
static void check_cold_warm(pid_t pid, const char *dir, const char *name,
			    const char *reference)
{
	char *cold = dump(pid, dir, false);
	const char *file = e2e_path(dir, name);
	cr_assert(e2e_exists(file), "no %s; the cache holds: %s", file,
		  e2e_dir_list(dir));
	cr_assert_eq(e2e_elf_compressed_sections(file), 0);
	char *warm = dump(pid, dir, false);
	assert_same_stacks(reference, cold, "cache off vs cold");
	assert_same_stacks(cold, warm, "cold vs warm");
}

Test(e2e_debugcache, main_file_with_compressed_dwarf, .timeout = 120,
     .fini = e2e_cleanup)
{
	const char *elfcompress = "/usr/bin/eu-elfcompress";
	if (access(elfcompress, X_OK) != 0)
		cr_skip_test("no %s (elfutils)", elfcompress);
	const char *tmp = e2e_tmpdir();
	const char *program = e2e_path(tmp, "threads_blocked_gz");
	char *compress[] = { (char *)elfcompress, "-q", "-t", "zlib", "-o",
			     (char *)program, (char *)e2e_fixture("threads_blocked"),
			     NULL };
	struct e2e_result res;
	e2e_run(compress, NULL, 30000, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "eu-elfcompress: %s", res.err);
	cr_assert_gt(e2e_elf_compressed_sections(program), 0);
	cr_assert_eq(chmod(program, 0755), 0);
	char id[160];
	cr_assert(e2e_elf_build_id(program, id), "the fixture has no build-id");

	char *argv[] = { (char *)program, "50", NULL };
	pid_t pid = e2e_start_ready(argv, "ready", 10000);
	dump(pid, "off", false);
	char *reference = dump(pid, "off", false);
	cr_assert(strstr(reference, "threads_blocked.c:"),
		  "no file:line from the fixture's DWARF:\n%s", reference);

	char name[200];
	snprintf(name, sizeof(name), "%s.elf", id);
	check_cold_warm(pid, e2e_path(tmp, "cache"), name, reference);
	e2e_check_healthy_then_stop(pid);
}

/* Go programs have no GNU build-id; their DWARF is compressed by default.
 * The cache keys them by Go's build ID note (what `go tool buildid`
 * prints, hex-encoded in the file name). */
Test(e2e_debugcache, go_program_keyed_by_go_build_id, .timeout = 120,
     .fini = e2e_cleanup)
{
	const char *program = e2e_need_fixture("go/go_parked_n");
	if (e2e_elf_compressed_sections(program) == 0)
		cr_skip_test("%s has no compressed DWARF", program);
	char *buildid[] = { WS_GO, "tool", "buildid", (char *)program, NULL };
	struct e2e_result res;
	if (access(buildid[0], X_OK) != 0)
		cr_skip_test("no %s", buildid[0]);
	e2e_run(buildid, NULL, 30000, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "go tool buildid: %s", res.err);
	char name[400] = "";
	size_t len = strcspn(res.out, "\n");
	cr_assert(len > 0 && 2 * len + 5 < sizeof(name), "build ID '%s'", res.out);
	for (size_t i = 0; i < len; i++)
		snprintf(name + 2 * i, 3, "%02x", (unsigned char)res.out[i]);
	strcat(name, ".elf");

	const char *args[] = { "16", NULL };
	struct e2e_proc proc = e2e_start_go("go/go_parked_n", args, 30000);
	dump(proc.pid, "off", false);
	char *reference = dump(proc.pid, "off", false);
	cr_assert(strstr(reference, ".go:"), "no file:line from Go's DWARF:\n%s",
		  reference);

	check_cold_warm(proc.pid, e2e_path(e2e_tmpdir(), "cache"), name,
			reference);
	cr_assert_eq(kill(proc.pid, SIGTERM), 0);
	int status;
	cr_assert(e2e_wait_timeout(proc.pid, 5000, &status));
}
