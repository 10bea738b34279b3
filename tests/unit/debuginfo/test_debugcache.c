/*
 * Unit tests of ws_debugcache (src/debuginfo/debugcache.c): where the cache
 * lives per the environment, the lookup on libc6-dbg's debug file
 * (compressed on Debian 12) and on a file with nothing compressed, and the
 * directories it refuses. Its use by `wallspy dump` is
 * tests/e2e/test_e2e_debugcache.c. Tests skip when libc's debug file is
 * missing or not compressed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e_util.h"
#include "elf_util.h"
#include "ws_debugcache.h"

/* This process's libc (the fixtures' too) and its separate debug file. */
static char libc_id[160];
static char libc_debug[512];

/* ---- unit tests ---- */

Test(debugcache, get_copies_a_compressed_file_once, .timeout = 60,
     .fini = e2e_cleanup)
{
	e2e_require_compressed_libc_debug(libc_id, libc_debug);
	const char *dir = e2e_path(e2e_tmpdir(), "a/b");
	struct ws_debugcache *cache;
	struct ws_error *err = ws_debugcache_open(dir, &cache);
	cr_assert_null(err, "open: %s", err ? err->message : "");
	struct stat st;
	cr_assert_eq(stat(dir, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700, "mode %o", st.st_mode & 0777);

	int fd = open(libc_debug, O_RDONLY), cfd;
	char *path;
	err = ws_debugcache_get(cache, fd, WS_DEBUGCACHE_DEBUG, NULL, 0, &cfd,
				&path);
	cr_assert_null(err, "get: %s", err ? err->message : "");
	cr_assert_geq(cfd, 0);
	char want[1024];
	snprintf(want, sizeof(want), "%s/%s.debug", dir, libc_id);
	cr_assert_str_eq(path, want);
	cr_assert_eq(e2e_elf_compressed_sections(path), 0);
	char id[160];
	cr_assert(e2e_elf_build_id(path, id));
	cr_assert_str_eq(id, libc_id);
	struct stat first;
	cr_assert_eq(fstat(cfd, &first), 0);
	close(cfd);
	free(path);

	/* Again: the same file, not rewritten. */
	err = ws_debugcache_get(cache, fd, WS_DEBUGCACHE_DEBUG, NULL, 0, &cfd,
				&path);
	cr_assert_null(err);
	struct stat second;
	cr_assert_eq(fstat(cfd, &second), 0);
	cr_assert_eq(first.st_ino, second.st_ino, "the copy was rewritten");
	close(cfd);
	free(path);

	/* The caller's expected build-id is enforced. */
	const unsigned char wrong[20] = { 1, 2, 3 };
	err = ws_debugcache_get(cache, fd, WS_DEBUGCACHE_DEBUG, wrong,
				sizeof(wrong), &cfd, &path);
	cr_assert_not_null(err);
	cr_assert_eq(cfd, -1);
	ws_error_destroy(err);
	close(fd);
	ws_debugcache_close(cache);
	/* Only the copy: no temporary file left behind. */
	cr_assert_eq(e2e_dir_entries(dir), 1, "%s", e2e_dir_list(dir));
}

Test(debugcache, get_leaves_an_uncompressed_file_alone, .timeout = 10,
     .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	struct ws_debugcache *cache;
	cr_assert_null(ws_debugcache_open(dir, &cache));
	int fd = open(e2e_wallspy(), O_RDONLY), cfd;
	cr_assert_geq(fd, 0);
	char *path;
	struct ws_error *err = ws_debugcache_get(cache, fd, WS_DEBUGCACHE_MAIN,
						 NULL, 0, &cfd, &path);
	cr_assert_null(err, "%s", err ? err->message : "");
	cr_assert_eq(cfd, -1);
	cr_assert_null(path);
	close(fd);
	ws_debugcache_close(cache);
	cr_assert_eq(e2e_dir_entries(dir), 0);
}

Test(debugcache, open_refuses_unsafe_directories, .timeout = 10,
     .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	struct ws_debugcache *cache = NULL;
	cr_assert_eq(chmod(dir, 0777), 0);
	struct ws_error *err = ws_debugcache_open(dir, &cache);
	cr_assert_not_null(err, "a mode 0777 directory was accepted");
	ws_error_destroy(err);
	cr_assert_eq(chmod(dir, 0700), 0);
	if (geteuid() == 0) {
		cr_assert_eq(chown(dir, 65534, 65534), 0);
		err = ws_debugcache_open(dir, &cache);
		cr_assert_not_null(err, "another user's directory was accepted");
		ws_error_destroy(err);
		cr_assert_eq(chown(dir, 0, 0), 0);
	}
	/* A symlink as the last component is not followed. */
	const char *link = e2e_path(e2e_tmpdir(), "link");
	cr_assert_eq(symlink(dir, link), 0);
	err = ws_debugcache_open(link, &cache);
	cr_assert_not_null(err, "a symlink was followed");
	ws_error_destroy(err);
}
