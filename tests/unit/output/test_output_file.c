/*
 * Unit tests of atomic output files (src/output/output_file.c): a commit
 * replaces the old file at once (readers see old or new, never half), an
 * abort or a failed commit leaves nothing behind, "-" is stdout.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e_util.h"
#include "ws_output_file.h"

Test(output_file, commit_is_atomic, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	char path[512];
	snprintf(path, sizeof(path), "%s/out.json", dir);
	FILE *old = fopen(path, "w");
	fputs("old", old);
	fclose(old);

	mode_t saved = umask(022);
	struct ws_output *out = NULL;
	struct ws_error *err = ws_output_open(path, &out);
	cr_assert_null(err, "%s", err ? err->message : "");
	fputs("new contents", ws_output_file(out));
	fflush(ws_output_file(out));
	/* Until the commit, readers see the old file; the temporary lies
	 * beside it. */
	cr_assert_str_eq(e2e_read_file(path), "old");
	cr_assert_eq(e2e_dir_entries(dir), 2);
	err = ws_output_commit(out);
	umask(saved);
	cr_assert_null(err, "%s", err ? err->message : "");

	cr_assert_str_eq(e2e_read_file(path), "new contents");
	cr_assert_eq(e2e_dir_entries(dir), 1, "temporary left behind");
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0644, "mode %o", st.st_mode & 0777);
}

Test(output_file, abort_leaves_nothing, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	char path[512];
	snprintf(path, sizeof(path), "%s/out.json", dir);
	struct ws_output *out = NULL;
	cr_assert_null(ws_output_open(path, &out));
	fputs("partial", ws_output_file(out));
	ws_output_abort(out);
	cr_assert_eq(e2e_dir_entries(dir), 0);
	cr_assert_neq(access(path, F_OK), 0);
	ws_output_abort(NULL);
}

Test(output_file, into_missing_directory_fails, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	char path[512];
	snprintf(path, sizeof(path), "%s/missing/out.json", dir);
	struct ws_output *out = NULL;
	struct ws_error *err = ws_output_open(path, &out);
	cr_assert_not_null(err);
	cr_assert_eq(err->kind, WS_ERR_OUTPUT);
	char expected[600];
	snprintf(expected, sizeof(expected),
		 "write %s: No such file or directory", path);
	cr_assert_str_eq(err->message, expected);
	ws_error_destroy(err);
	cr_assert_eq(e2e_dir_entries(dir), 0);
}

Test(output_file, commit_failure_leaves_nothing, .fini = e2e_cleanup)
{
	/* The final path is a non-empty directory: everything succeeds but
	 * the rename. */
	const char *dir = e2e_tmpdir();
	char path[512], inner[600];
	snprintf(path, sizeof(path), "%s/out.json", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(inner, sizeof(inner), "%s/keep", path);
	fclose(fopen(inner, "w"));
	struct ws_output *out = NULL;
	cr_assert_null(ws_output_open(path, &out));
	fputs("data", ws_output_file(out));
	struct ws_error *err = ws_output_commit(out);
	cr_assert_not_null(err);
	cr_assert_eq(err->kind, WS_ERR_OUTPUT);
	cr_assert_eq(strncmp(err->message, "write ", 6), 0, "%s",
		     err->message);
	ws_error_destroy(err);
	cr_assert_eq(e2e_dir_entries(dir), 1, "temporary left behind");
	cr_assert_eq(access(inner, F_OK), 0);
}

Test(output_file, stdout)
{
	struct ws_output *out = NULL;
	cr_assert_null(ws_output_open("-", &out));
	cr_assert_eq(ws_output_file(out), stdout);
	cr_assert_null(ws_output_commit(out));
}

