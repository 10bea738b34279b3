/*
 * Unit tests of output files (src/output/output_file.c): a commit
 * replaces the old file at once (readers see old or new, never half), an
 * abort or a failed commit leaves nothing behind, "-" is stdout; devices
 * and FIFOs are written in place, symlinks followed, directories, sockets,
 * block devices and kernel files refused with the reason.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
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
	/* A non-empty directory appears at the final path after the open:
	 * everything succeeds but the rename. */
	const char *dir = e2e_tmpdir();
	char path[512], inner[600];
	snprintf(path, sizeof(path), "%s/out.json", dir);
	struct ws_output *out = NULL;
	cr_assert_null(ws_output_open(path, &out));
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(inner, sizeof(inner), "%s/keep", path);
	fclose(fopen(inner, "w"));
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

/* Opens path, writes text and commits; the commit's error or NULL. */
static struct ws_error *write_all(const char *path, const char *text)
{
	struct ws_output *out = NULL;
	struct ws_error *err = ws_output_open(path, &out);
	if (err)
		return err;
	fputs(text, ws_output_file(out));
	return ws_output_commit(out);
}

/* Both the check and the open refuse path with WS_ERR_OUTPUT and a
 * message "write PATH: ..." containing `reason`; nothing is created. */
static void check_refused(const char *path, const char *reason)
{
	struct ws_error *errs[2] = {ws_output_check(path), NULL};
	struct ws_output *out = NULL;
	errs[1] = ws_output_open(path, &out);
	for (int i = 0; i < 2; i++) {
		cr_assert_not_null(errs[i], "%s accepted", path);
		cr_assert_eq(errs[i]->kind, WS_ERR_OUTPUT);
		char prefix[600];
		snprintf(prefix, sizeof(prefix), "write %s: ", path);
		cr_assert(strncmp(errs[i]->message, prefix, strlen(prefix)) == 0 &&
			  strstr(errs[i]->message, reason),
			  "%s: \"%s\" does not say \"%s\"", path,
			  errs[i]->message, reason);
		ws_error_destroy(errs[i]);
	}
}

/* A character device is written in place, never replaced: a private node
 * with /dev/null's numbers swallows the profile and stays a device; one
 * with /dev/full's fails the commit with ENOSPC and stays a device too. */
Test(output_file, character_device_in_place, .fini = e2e_cleanup)
{
	if (getuid() != 0)
		cr_skip_test("mknod needs root");
	const char *dir = e2e_tmpdir();
	const char *null_node = e2e_path(dir, "null");
	const char *full_node = e2e_path(dir, "full");
	cr_assert_eq(mknod(null_node, S_IFCHR | 0666, makedev(1, 3)), 0);
	cr_assert_eq(mknod(full_node, S_IFCHR | 0666, makedev(1, 7)), 0);

	cr_assert_null(ws_output_check(null_node));
	struct ws_error *err = write_all(null_node, "profile");
	cr_assert_null(err, "%s", err ? err->message : "");
	cr_assert_null(ws_output_check(full_node));
	err = write_all(full_node, "profile");
	cr_assert_not_null(err, "writing to a full device succeeded");
	cr_assert_eq(err->kind, WS_ERR_OUTPUT);
	cr_assert(strstr(err->message, "No space left on device"), "%s",
		  err->message);
	ws_error_destroy(err);

	struct stat st;
	cr_assert_eq(lstat(null_node, &st), 0);
	cr_assert(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3));
	cr_assert_eq(lstat(full_node, &st), 0);
	cr_assert(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 7));
	cr_assert_eq(e2e_dir_entries(dir), 2, "temporary left behind");
}

/* A reader of the FIFO, forked: reads to the end of file after delay_ms
 * and reports what it read through `report`. */
static pid_t fifo_reader(const char *fifo, int delay_ms, int report)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		usleep((useconds_t)delay_ms * 1000);
		int fd = open(fifo, O_RDONLY);
		char buf[256];
		ssize_t n, total = 0;
		while (fd >= 0 && (n = read(fd, buf + total,
					  sizeof(buf) - 1 - (size_t)total)) > 0)
			total += n;
		ssize_t w = write(report, buf, (size_t)total);
		_exit(w == total ? 0 : 1);
	}
	e2e_track(pid);
	return pid;
}

/* A FIFO is written in place: its reader gets every byte (it got none
 * when the FIFO was renamed over), also a reader that comes late (the
 * writer waits for it). */
Test(output_file, fifo_in_place, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	const char *fifo = e2e_path(dir, "fifo");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_null(ws_output_check(fifo), "a FIFO without reader refused");
	for (int delay_ms = 0; delay_ms <= 200; delay_ms += 200) {
		int report[2];
		cr_assert_eq(pipe(report), 0);
		pid_t reader = fifo_reader(fifo, delay_ms, report[1]);
		close(report[1]);
		struct ws_error *err = write_all(fifo, "the whole profile\n");
		cr_assert_null(err, "%s", err ? err->message : "");
		char got[256] = {0};
		ssize_t n = read(report[0], got, sizeof(got) - 1);
		close(report[0]);
		int status;
		cr_assert(e2e_wait_timeout(reader, 5000, &status));
		cr_assert_gt(n, 0);
		cr_assert_str_eq(got, "the whole profile\n", "reader after %d ms",
				 delay_ms);
	}
	struct stat st;
	cr_assert_eq(lstat(fifo, &st), 0);
	cr_assert(S_ISFIFO(st.st_mode), "the FIFO was replaced");
	cr_assert_eq(e2e_dir_entries(dir), 1, "temporary left behind");
}

/* A symlink is followed: the file it names (relative to the link's
 * directory) gets the profile, its temporary lies beside it, the link
 * stays a link. A dangling link creates the file it names. */
Test(output_file, symlink_followed, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	const char *links = e2e_path(dir, "links");
	const char *files = e2e_path(dir, "files");
	cr_assert_eq(mkdir(links, 0755), 0);
	cr_assert_eq(mkdir(files, 0755), 0);
	const char *link = e2e_path(links, "out.json");
	const char *dangling = e2e_path(links, "new.json");
	const char *target = e2e_path(files, "out.json");
	FILE *f = fopen(target, "w");
	fputs("old", f);
	fclose(f);
	cr_assert_eq(symlink("../files/out.json", link), 0);
	cr_assert_eq(symlink("../files/new.json", dangling), 0);

	cr_assert_null(ws_output_check(link));
	struct ws_output *out = NULL;
	cr_assert_null(ws_output_open(link, &out));
	fputs("new", ws_output_file(out));
	fflush(ws_output_file(out));
	cr_assert_eq(e2e_dir_entries(files), 2, "the temporary is not beside the target");
	cr_assert_null(ws_output_commit(out));
	cr_assert_str_eq(e2e_read_file(target), "new");

	struct ws_error *err = write_all(dangling, "created");
	cr_assert_null(err, "%s", err ? err->message : "");
	cr_assert_str_eq(e2e_read_file(e2e_path(files, "new.json")), "created");

	struct stat st;
	cr_assert_eq(lstat(link, &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "the link was replaced");
	cr_assert_eq(lstat(dangling, &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "the dangling link was replaced");
	cr_assert_eq(e2e_dir_entries(links), 2);
	cr_assert_eq(e2e_dir_entries(files), 2, "temporary left behind");
}

/* /dev/stdout when standard output is a regular file (wallspy -o
 * /dev/stdout >> log): written through the /proc link, after what the file
 * holds, into the same file (not a new one renamed over it). */
Test(output_file, through_proc_fd_appends, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	const char *file = e2e_path(dir, "log");
	int fd = open(file, O_WRONLY | O_CREAT | O_APPEND, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "log\n", 4), 4);
	struct stat before, after;
	cr_assert_eq(fstat(fd, &before), 0);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct ws_error *err = write_all(path, "profile\n");
	cr_assert_null(err, "%s", err ? err->message : "");
	cr_assert_str_eq(e2e_read_file(file), "log\nprofile\n");
	cr_assert_eq(stat(file, &after), 0);
	cr_assert_eq(before.st_ino, after.st_ino, "the file was replaced");
	close(fd);
	cr_assert_eq(e2e_dir_entries(dir), 1);
}

/* What cannot hold a profile is refused by the check (before sampling)
 * and by the open, with the reason. */
Test(output_file, refused_kinds, .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	check_refused(dir, "Is a directory");
	check_refused("/proc/version", "procfs");
	check_refused("/proc/wallspy-test.json", "procfs");
	check_refused("/sys/kernel/wallspy-test.json", "sysfs");
	check_refused(e2e_path(dir, "missing/out.json"),
		      "No such file or directory");

	/* A socket. */
	const char *sock_path = e2e_path(dir, "sock");
	int sock = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock_path);
	cr_assert_eq(bind(sock, (struct sockaddr *)&addr, sizeof(addr)), 0);
	check_refused(sock_path, "socket");
	close(sock);

	if (getuid() == 0) {
		/* A private block device node (never opened). */
		const char *blk = e2e_path(dir, "blk");
		cr_assert_eq(mknod(blk, S_IFBLK | 0600, makedev(7, 200)), 0);
		check_refused(blk, "block device");
	}
	struct stat st;
	cr_assert_eq(stat(dir, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
}

Test(output_file, stdout)
{
	struct ws_output *out = NULL;
	cr_assert_null(ws_output_open("-", &out));
	cr_assert_eq(ws_output_file(out), stdout);
	cr_assert_null(ws_output_commit(out));
}

