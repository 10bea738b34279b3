/*
 * The decompressed-debuginfo cache (ws_debugcache.h). libdw inflates every
 * SHF_COMPRESSED section it reads, on every run; here an uncompressed copy
 * is written once and handed to libdwfl by fd from then on. This file owns
 * the cache directory (whether it is safe, atomic writes into it) and the
 * lookup by build-id; reading, checking and writing the ELF files
 * themselves is debugcache_elf.c's, finding the files the finder's
 * (finder.c). Legacy GNU .zdebug_* sections are left to libdw
 * (renaming them would mean rewriting the section name table): a file with
 * only those is not cached.
 */
#include "ws_debugcache.h"

#include "debugcache_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct ws_debugcache {
	char *path;		/* NULL: no directory configured */
	int dirfd;		/* -1 until opened */
	enum {
		CACHE_UNOPENED,	/* ws_debugcache_create: opened on first use */
		CACHE_OPEN,
		CACHE_UNUSABLE,	/* off or refused, decided once */
	} state;
	bool log;
};

/* A GNU build-id is at most 64 bytes in practice (SHA-256 is 32); Go's
 * build ID note is 83 (its actionID/contentID string); anything longer is
 * not worth a file name. */
enum { MAX_BUILD_ID = 100 };

/* ---- logging: silent unless asked, one line per decision ---- */

void ws_debugcache_log(const struct ws_debugcache *cache, const char *fmt, ...)
{
	if (!cache->log)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("wallspy: debug cache: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- the directory ---- */

/* mkdir -p with mode 0700 for what is missing; errors show when the
 * directory is opened. */
static void make_dirs(const char *dir)
{
	char *copy = strdup(dir);
	if (!copy)
		return;
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(copy, 0700);
		*p = '/';
	}
	mkdir(copy, 0700);
	free(copy);
}

/* Creates (mode 0700) and opens the directory `dir`, refusing one that is
 * not safe (see ws_debugcache_open). */
static struct ws_error *open_dir(const char *dir, int *ret)
{
	elf_version(EV_CURRENT);
	make_dirs(dir);
	/* O_NOFOLLOW: a symlink in the last component could point anywhere;
	 * what is checked below is the directory actually held. */
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return ws_error_from_errno(errno, WS_ERR_OTHER, "%s", dir);
	struct stat st;
	if (fstat(dirfd, &st) != 0) {
		int e = errno;
		close(dirfd);
		return ws_error_from_errno(e, WS_ERR_OTHER, "%s", dir);
	}
	if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(dirfd);
		return ws_error_create(WS_ERR_OTHER,
				       "%s: not used (owner %u, mode %03o; it must be owned by uid %u and not writable by group or others)",
				       dir, (unsigned)st.st_uid,
				       (unsigned)(st.st_mode & 07777),
				       (unsigned)geteuid());
	}
	*ret = dirfd;
	return NULL;
}

/* A closed cache on `dir` (may be NULL); NULL when out of memory. */
static struct ws_debugcache *cache_new(const char *dir, bool log)
{
	struct ws_debugcache *cache = calloc(1, sizeof(*cache));
	if (!cache)
		return NULL;
	cache->dirfd = -1;
	cache->log = log;
	if (dir && !(cache->path = strdup(dir))) {
		free(cache);
		return NULL;
	}
	return cache;
}

struct ws_error *ws_debugcache_open(const char *dir, struct ws_debugcache **ret)
{
	int dirfd;
	struct ws_error *err = open_dir(dir, &dirfd);
	if (err)
		return err;
	struct ws_debugcache *cache = cache_new(dir, false);
	if (!cache) {
		close(dirfd);
		return &ws_error_nomem;
	}
	cache->dirfd = dirfd;
	cache->state = CACHE_OPEN;
	*ret = cache;
	return NULL;
}

struct ws_error *ws_debugcache_create(const struct ws_debugcache_options *options,
				      struct ws_debugcache **ret)
{
	struct ws_debugcache *cache = cache_new(options->dir, options->log);
	if (!cache)
		return &ws_error_nomem;
	cache->state = CACHE_UNOPENED;
	*ret = cache;
	return NULL;
}

void ws_debugcache_close(struct ws_debugcache *cache)
{
	if (!cache)
		return;
	if (cache->dirfd >= 0)
		close(cache->dirfd);
	free(cache->path);
	free(cache);
}

/* Whether the cache can be used, opening it on first use (decided once: a
 * refused directory stays refused). */
static bool cache_usable(struct ws_debugcache *cache)
{
	if (cache->state == CACHE_UNOPENED) {
		cache->state = CACHE_UNUSABLE;
		if (!cache->path) {
			ws_debugcache_log(cache, "off");
			return false;
		}
		struct ws_error *err = open_dir(cache->path, &cache->dirfd);
		if (err) {
			ws_debugcache_log(cache, "%s", err->message);
			ws_error_destroy(err);
			return false;
		}
		cache->state = CACHE_OPEN;
	}
	return cache->state == CACHE_OPEN;
}

/* Writes the copy under a temporary name in the cache directory and renames
 * it to `name`: readers see the old file or the whole new one, and two
 * writers racing each rename a complete copy. */
static struct ws_error *store_copy(struct ws_debugcache *cache, Elf *orig,
				   const char *name)
{
	char tmp[256];
	int fd = -1;
	for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(tmp, sizeof(tmp), ".%s.tmp.%d.%lx", name, (int)getpid(),
			 (unsigned long)(ts.tv_nsec ^ (attempt * 0x9e3779b9UL)));
		fd = openat(cache->dirfd, tmp,
			    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		return ws_error_from_errno(errno, WS_ERR_OTHER, "create %s/%s",
					   cache->path, tmp);
	struct ws_error *err = debugcache_write_copy(orig, fd);
	/* close reports the write errors some filesystems (NFS) defer. */
	if (close(fd) != 0 && !err)
		err = ws_error_from_errno(errno, WS_ERR_OTHER, "write %s/%s",
					  cache->path, tmp);
	if (!err && renameat(cache->dirfd, tmp, cache->dirfd, name) != 0)
		err = ws_error_from_errno(errno, WS_ERR_OTHER, "rename to %s/%s",
					  cache->path, name);
	if (err)
		unlinkat(cache->dirfd, tmp, 0);
	return err;
}

/* ---- the lookup ---- */

void ws_debugcache_hex(const unsigned char *bytes, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * len] = '\0';
}

/* Opens cache entry `name` and checks it against orig; -1 when absent or
 * bad (*why says which, NULL when absent). */
static int open_checked(struct ws_debugcache *cache, const char *name,
			Elf *orig, const void *id, size_t id_len,
			struct ws_error **why)
{
	*why = NULL;
	int fd = openat(cache->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			*why = ws_error_from_errno(errno, WS_ERR_OTHER, "open");
		return -1;
	}
	*why = debugcache_check_copy(fd, orig, id, id_len);
	if (*why) {
		close(fd);
		return -1;
	}
	return fd;
}

struct ws_error *ws_debugcache_get(struct ws_debugcache *cache, int fd,
				   enum ws_debugcache_kind kind,
				   const unsigned char *build_id,
				   size_t build_id_len, int *ret_fd,
				   char **ret_path)
{
	*ret_fd = -1;
	*ret_path = NULL;
	if (!cache_usable(cache))
		return ws_error_create(WS_ERR_OTHER, "no usable cache directory");
	/* Our own Elf on the caller's fd: mmap reads leave its offset alone,
	 * and decompressing changes only this Elf's memory. */
	Elf *orig = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!orig || elf_kind(orig) != ELF_K_ELF) {
		elf_end(orig);
		return ws_error_create(WS_ERR_OTHER, "not an ELF file");
	}
	struct ws_error *err = NULL;
	char name[2 * MAX_BUILD_ID + 16] = "";
	bool broken;
	const void *id;
	ssize_t id_len;
	if (!debugcache_has_compressed(orig, &broken)) {
		if (broken)
			err = debugcache_elf_fail("section headers");
		goto out;
	}
	id_len = debugcache_file_id(orig, &id);
	if (id_len <= 0 || id_len > MAX_BUILD_ID) {
		/* Without a build-id nothing tells two versions apart. */
		err = ws_error_create(WS_ERR_OTHER, "no build-id");
		goto out;
	}
	if (build_id && ((size_t)id_len != build_id_len ||
			 memcmp(id, build_id, build_id_len) != 0)) {
		err = ws_error_create(WS_ERR_OTHER, "build-id differs from the module's");
		goto out;
	}
	ws_debugcache_hex(id, (size_t)id_len, name);
	strcat(name, kind == WS_DEBUGCACHE_MAIN ? ".elf" : ".debug");

	struct ws_error *why;
	int cfd = open_checked(cache, name, orig, id, (size_t)id_len, &why);
	if (cfd < 0) {
		if (why)
			ws_debugcache_log(cache, "%s/%s: %s; writing it anew",
				  cache->path, name, why->message);
		ws_error_destroy(why);
		err = store_copy(cache, orig, name);
		if (err)
			goto out;
		/* orig's sections are decompressed in memory by now: the
		 * check compares with what was written, as it should. */
		cfd = open_checked(cache, name, orig, id, (size_t)id_len, &why);
		if (cfd < 0) {
			err = why ? why : ws_error_create(WS_ERR_OTHER,
							  "vanished after writing");
			goto out;
		}
		ws_debugcache_log(cache, "wrote %s/%s", cache->path, name);
	}
	if (asprintf(ret_path, "%s/%s", cache->path, name) < 0) {
		*ret_path = NULL;
		close(cfd);
		err = &ws_error_nomem;
		goto out;
	}
	*ret_fd = cfd;
out:
	elf_end(orig);
	return err;
}
