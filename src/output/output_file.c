/*
 * Output files (see ws_output_file.h). What the path names decides how it
 * is written: a regular file (or nothing yet) gets a temporary beside it,
 * renamed over it once every byte reached the file system, so an
 * interrupted or failed run leaves the previous file (or nothing), never a
 * truncated profile; a symlink is followed, its temporary beside the file
 * it names; a character device or a FIFO is written in place (renaming
 * over /dev/null would replace the machine's /dev/null); what cannot hold
 * a profile (a directory, a block device, a socket, a file of /proc or
 * /sys) is refused with the reason, before anything is sampled. "-" is
 * standard output. What goes into the file is the writers' business.
 */
#include "ws_output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

/* How a path is written. */
enum output_kind {
	OUTPUT_STDOUT,
	OUTPUT_REPLACE,        /* temporary beside `path`, renamed over it */
	OUTPUT_IN_PLACE,       /* opened and written (device, FIFO) */
	OUTPUT_APPEND,         /* a file reached through /proc/PID/fd: the
				* descriptor's file, appended to */
};

struct ws_output {
	FILE *file;
	enum output_kind kind;
	char *path;       /* where the bytes go (a symlink's target); NULL for
			   * standard output */
	char *temp_path;  /* OUTPUT_REPLACE only */
};

static struct ws_error *output_error(const char *path, int errnum)
{
	/* Not ws_error_from_errno: EACCES on an output file is an output
	 * problem (exit code 6), not a ptrace permission problem. */
	return ws_error_create(WS_ERR_OUTPUT, "write %s: %s",
			       path ? path : "standard output",
			       strerror(errnum));
}

/* Overwrites the trailing "XXXXXX" of temp with random letters and digits. */
static void randomize_suffix(char *temp)
{
	static const char chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char bytes[6];
	if (getrandom(bytes, sizeof(bytes), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(bytes)) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		uint64_t x = (uint64_t)now.tv_nsec ^
			     ((uint64_t)getpid() << 32) ^ (uintptr_t)temp;
		for (size_t i = 0; i < sizeof(bytes); i++, x >>= 8)
			bytes[i] = (unsigned char)(x * 31 + i);
	}
	char *suffix = temp + strlen(temp) - 6;
	for (size_t i = 0; i < sizeof(bytes); i++)
		suffix[i] = chars[bytes[i] % (sizeof(chars) - 1)];
}

/* The kernel's own file systems: their files are interfaces, not storage
 * (writing a profile to /proc/sys/... would set a kernel parameter). */
static const char *kernel_fs_name(const char *path)
{
	static const struct {
		long magic;
		const char *name;
	} kinds[] = {
		{0x9fa0, "procfs"},           {0x62656572, "sysfs"},
		{0x27e0eb, "cgroup"},         {0x63677270, "cgroup2"},
		{0x64626720, "debugfs"},      {0x74726163, "tracefs"},
		{0x73636673, "securityfs"},   {0xcafe4a11, "bpf"},
		{0x62656570, "configfs"},     {(long)0xde5e81e4, "efivarfs"},
		{0x6165676c, "pstore"},
	};
	struct statfs fs;
	if (statfs(path, &fs) != 0)
		return NULL;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if ((long)fs.f_type == kinds[i].magic)
			return kinds[i].name;
	return NULL;
}

/* The directory part of path ("." for a bare name), malloc'd. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* Follows the symlinks of path's last component (a dangling one included:
 * its target is where the file will be created). *through_proc: one of the
 * links lives in /proc (/dev/stdout -> /proc/self/fd/1 -> ...), a "magic"
 * link to an open file, whose text is a description, not a usable path. */
static struct ws_error *follow_links(const char *path, char **ret,
				     bool *through_proc)
{
	char *cur = strdup(path);
	*through_proc = false;
	for (int hops = 0; cur; hops++) {
		struct stat st;
		if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) {
			*ret = cur;
			return NULL;
		}
		if (hops == 40) {
			free(cur);
			return output_error(path, ELOOP);
		}
		char *dir = dir_of(cur);
		if (!dir)
			break;
		const char *fs = kernel_fs_name(dir);
		if (fs && strcmp(fs, "procfs") == 0)
			*through_proc = true;
		char link[PATH_MAX];
		ssize_t n = readlink(cur, link, sizeof(link) - 1);
		if (n < 0) {
			int e = errno;
			free(dir);
			free(cur);
			return output_error(path, e);
		}
		link[n] = '\0';
		char *next = NULL;
		if (link[0] == '/')
			next = strdup(link);
		else if (asprintf(&next, "%s/%s", dir, link) < 0)
			next = NULL;
		free(dir);
		free(cur);
		cur = next;
	}
	free(cur);
	return &ws_error_nomem;
}

/* Decides how `path` is written, refusing what cannot hold a profile.
 * *target: where the bytes go (malloc'd). */
static struct ws_error *classify(const char *path, enum output_kind *kind,
				 char **target)
{
	struct stat st;
	*target = NULL;
	bool exists = stat(path, &st) == 0;
	if (!exists && errno != ENOENT)
		return output_error(path, errno);
	if (exists) {
		const char *what = NULL;
		if (S_ISDIR(st.st_mode))
			return output_error(path, EISDIR);
		if (S_ISBLK(st.st_mode))
			what = "a block device; refusing to write a profile over it";
		else if (S_ISSOCK(st.st_mode))
			what = "a socket; wallspy writes files, devices and FIFOs";
		if (what)
			return ws_error_create(WS_ERR_OUTPUT, "write %s: %s",
					       path, what);
		if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
			*kind = OUTPUT_IN_PLACE;
			*target = strdup(path);
			return *target ? NULL : &ws_error_nomem;
		}
		const char *fs = kernel_fs_name(path);
		if (fs)
			return ws_error_create(WS_ERR_OUTPUT,
					       "write %s: a kernel interface (%s), not a file that can hold a profile",
					       path, fs);
	}
	bool through_proc;
	struct ws_error *err = follow_links(path, target, &through_proc);
	if (err)
		return err;
	if (exists && through_proc) {
		/* The link's text ("/tmp/x (deleted)", "pipe:[4]") may name no
		 * path: write through the link, after what the file holds
		 * (the shell truncated it for '>' and keeps it for '>>'). */
		free(*target);
		*target = strdup(path);
		*kind = OUTPUT_APPEND;
		return *target ? NULL : &ws_error_nomem;
	}
	*kind = OUTPUT_REPLACE;
	char *dir = dir_of(*target);
	const char *fs = dir ? kernel_fs_name(dir) : NULL;
	free(dir);
	if (fs) {
		err = ws_error_create(WS_ERR_OUTPUT,
				      "write %s: a directory of the kernel's (%s) cannot hold files",
				      path, fs);
		free(*target);
		*target = NULL;
	}
	return err;
}

/* Creates the temporary beside out->path, like mkstemp but with mode
 * 0666: the kernel then applies the umask or the directory's default ACL
 * exactly as for any file the user creates, which an fchmod of mkstemp's
 * 0600 at commit could only imitate. O_EXCL with a random name: never
 * someone else's file. Returns the descriptor or -1 (errno set). */
static int create_temp(struct ws_output *out)
{
	if (asprintf(&out->temp_path, "%s.XXXXXX", out->path) < 0) {
		out->temp_path = NULL;
		errno = ENOMEM;
		return -1;
	}
	int fd = -1;
	for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
		randomize_suffix(out->temp_path);
		fd = open(out->temp_path,
			  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	return fd;
}

/* Opens a FIFO for writing. With no reader yet, says so and waits for one
 * with wallspy's terminating signals unblocked (the target is no longer
 * traced when a profile is written), so Ctrl-C ends the wait. */
static int open_fifo(const char *path, int flags)
{
	int fd = open(path, flags | O_NONBLOCK);
	if (fd >= 0 || errno != ENXIO) {
		if (fd >= 0)
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		return fd;
	}
	fprintf(stderr, "wallspy: waiting for a reader of %s (Ctrl-C to give up)\n",
		path);
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_UNBLOCK, &set, &old);
	fd = open(path, flags);
	int e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return fd;
}

static void output_free(struct ws_output *out)
{
	free(out->temp_path);
	free(out->path);
	free(out);
}

struct ws_error *ws_output_check(const char *path)
{
	if (strcmp(path, "-") == 0)
		return NULL;
	enum output_kind kind;
	char *target;
	struct ws_error *err = classify(path, &kind, &target);
	if (err)
		return err;
	if (kind == OUTPUT_REPLACE) {
		/* Creating the temporary is the one sure test. */
		struct ws_output probe = {.path = target};
		int fd = create_temp(&probe);
		if (fd < 0)
			err = output_error(path, errno);
		else {
			close(fd);
			unlink(probe.temp_path);
		}
		free(probe.temp_path);
	} else if (access(target, W_OK) != 0) {
		/* Opening a device or a FIFO now could have effects of its
		 * own (a FIFO's reader would see an end of file). */
		err = output_error(path, errno);
	}
	free(target);
	return err;
}

struct ws_error *ws_output_open(const char *path, struct ws_output **ret)
{
	struct ws_output *out = calloc(1, sizeof(*out));
	if (!out)
		return &ws_error_nomem;
	if (strcmp(path, "-") == 0) {
		out->kind = OUTPUT_STDOUT;
		out->file = stdout;
		*ret = out;
		return NULL;
	}
	struct ws_error *err = classify(path, &out->kind, &out->path);
	if (err) {
		free(out);
		return err;
	}
	int fd;
	struct stat st;
	switch (out->kind) {
	case OUTPUT_REPLACE:
		fd = create_temp(out);
		break;
	case OUTPUT_APPEND:
		fd = open(out->path, O_WRONLY | O_APPEND | O_CLOEXEC);
		break;
	default:
		if (stat(out->path, &st) == 0 && S_ISFIFO(st.st_mode))
			fd = open_fifo(out->path, O_WRONLY | O_CLOEXEC);
		else
			fd = open(out->path, O_WRONLY | O_CLOEXEC);
		break;
	}
	if (fd < 0 || !(out->file = fdopen(fd, "w"))) {
		err = output_error(path, errno);
		if (fd >= 0)
			close(fd);
		if (fd >= 0 && out->temp_path)
			unlink(out->temp_path);
		output_free(out);
		return err;
	}
	*ret = out;
	return NULL;
}

FILE *ws_output_file(struct ws_output *out)
{
	return out->file;
}

struct ws_error *ws_output_commit(struct ws_output *out)
{
	int errnum = 0;
	/* A failed write leaves only the error flag, not its errno: report
	 * fflush's errno when it fails, else a generic I/O error. */
	if (fflush(out->file) != 0)
		errnum = errno;
	else if (ferror(out->file))
		errnum = EIO;

	if (out->kind == OUTPUT_STDOUT) {
		output_free(out);
		return errnum ? output_error(NULL, errnum) : NULL;
	}

	if (fclose(out->file) != 0 && !errnum)
		errnum = errno;
	if (!errnum && out->kind == OUTPUT_REPLACE &&
	    rename(out->temp_path, out->path) != 0)
		errnum = errno;
	struct ws_error *err = NULL;
	if (errnum) {
		err = output_error(out->path, errnum);
		if (out->temp_path)
			unlink(out->temp_path);
	}
	output_free(out);
	return err;
}

void ws_output_abort(struct ws_output *out)
{
	if (!out)
		return;
	if (out->kind == OUTPUT_STDOUT) {
		fflush(out->file);
		output_free(out);
		return;
	}
	fclose(out->file);
	if (out->temp_path)
		unlink(out->temp_path);
	output_free(out);
}
