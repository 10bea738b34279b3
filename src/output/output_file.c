/*
 * Output files written atomically: data goes to a temporary beside the
 * final path and is renamed over it only once every byte reached the file
 * system, so an interrupted or failed run leaves the previous file (or
 * nothing), never a truncated profile. "-" writes to standard output
 * directly. What goes into the file is the writers' business.
 */
#include "ws_output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

struct ws_output {
	FILE *file;
	char *path;       /* the final path; NULL for standard output */
	char *temp_path;
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

struct ws_error *ws_output_open(const char *path, struct ws_output **ret)
{
	struct ws_output *out = calloc(1, sizeof(*out));
	if (!out)
		return &ws_error_nomem;
	if (strcmp(path, "-") == 0) {
		out->file = stdout;
		*ret = out;
		return NULL;
	}

	out->path = strdup(path);
	if (!out->path || asprintf(&out->temp_path, "%s.XXXXXX", path) < 0) {
		free(out->path);
		free(out);
		return &ws_error_nomem;
	}
	/* Like mkstemp, but with mode 0666: the kernel then applies the umask
	 * or the directory's default ACL exactly as for any file the user
	 * creates, which an fchmod of mkstemp's 0600 at commit could only
	 * imitate. O_EXCL with a random name: never someone else's file. */
	int fd = -1;
	for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
		randomize_suffix(out->temp_path);
		fd = open(out->temp_path,
			  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		struct ws_error *err = output_error(path, errno);
		free(out->temp_path);
		free(out->path);
		free(out);
		return err;
	}
	out->file = fdopen(fd, "w");
	if (!out->file) {
		struct ws_error *err = output_error(path, errno);
		close(fd);
		unlink(out->temp_path);
		free(out->temp_path);
		free(out->path);
		free(out);
		return err;
	}
	*ret = out;
	return NULL;
}

FILE *ws_output_file(struct ws_output *out)
{
	return out->file;
}

static void output_free(struct ws_output *out)
{
	free(out->temp_path);
	free(out->path);
	free(out);
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

	if (!out->path) {
		output_free(out);
		return errnum ? output_error(NULL, errnum) : NULL;
	}

	if (fclose(out->file) != 0 && !errnum)
		errnum = errno;
	if (!errnum && rename(out->temp_path, out->path) != 0)
		errnum = errno;
	struct ws_error *err = NULL;
	if (errnum) {
		err = output_error(out->path, errnum);
		unlink(out->temp_path);
	}
	output_free(out);
	return err;
}

void ws_output_abort(struct ws_output *out)
{
	if (!out)
		return;
	if (!out->path) {
		fflush(out->file);
		output_free(out);
		return;
	}
	fclose(out->file);
	unlink(out->temp_path);
	output_free(out);
}
