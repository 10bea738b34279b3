/*
 * Where a module's files come from (ws_finder.h): libdwfl's find_elf and
 * find_debuginfo callbacks, which open files through the target's view of
 * the filesystem, check every separate debug file against the module, and
 * hand compressed DWARF to the debug-info cache (debugcache.c) and missing
 * debug info to debuginfod (debuginfod.c). libdwfl owns the fds and names
 * returned to it. libdwfl's own finder is used only for what is not a file
 * (the vDSO, read from memory) and for modules no finder was attached to;
 * its debuginfo finder never (it would query debuginfod by itself).
 */
#include "ws_finder.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include "ws_debugcache.h"
#include "ws_debuginfod.h"
#include "ws_grow.h"
#include "ws_target.h"

struct ws_finder {
	pid_t pid;
	bool foreign;
	char root[40];		/* "/proc/PID/root" */
	int root_fd;		/* it, O_PATH; -1 when it cannot be opened */
	struct ws_debugcache *cache;
	struct ws_debuginfod *debuginfod;
	/* The target's mappings, [lo, hi) in address order, as /proc/PID/maps
	 * listed them when last read (see open_mapped). */
	struct vma {
		uint64_t lo, hi;
	} *vmas;
	size_t nvmas, vmas_cap;
	bool vmas_read;
};

/* What the kernel appends in /proc/PID/maps to a file unlinked since it
 * was mapped. */
static const char deleted_suffix[] = " (deleted)";

/* GNU build-ids are at most 64 bytes in practice; a longer one (Go's build
 * ID note is not one: it never names a debug file) makes no path. */
enum { MAX_BUILD_ID = 64 };

/* Whether two paths name one file (both stat-able). */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

struct ws_error *ws_finder_create(pid_t pid,
				  const struct ws_finder_options *options,
				  struct ws_finder **ret)
{
	struct ws_finder *f = calloc(1, sizeof(*f));
	if (!f)
		return &ws_error_nomem;
	f->pid = pid;
	if (options) {
		f->cache = options->debug_cache;
		f->debuginfod = options->debuginfod;
	}
	snprintf(f->root, sizeof(f->root), "/proc/%d/root", (int)pid);
	f->root_fd = open(f->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	char ns[40];
	snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", (int)pid);
	/* Unknown counts as foreign: looking in the target's root first
	 * costs a few failed opens when it is ours after all. */
	f->foreign = !same_file(ns, "/proc/self/ns/mnt") ||
		     !same_file(f->root, "/");
	*ret = f;
	return NULL;
}

void ws_finder_destroy(struct ws_finder *finder)
{
	if (finder && finder->root_fd >= 0)
		close(finder->root_fd);
	if (finder)
		free(finder->vmas);
	free(finder);
}

static int attach_module(Dwfl_Module *mod, void **userdata, const char *name,
			 Dwarf_Addr start, void *arg)
{
	(void)mod, (void)name, (void)start;
	if (!*userdata)
		*userdata = arg;
	return DWARF_CB_OK;
}

void ws_finder_attach(struct ws_finder *finder, Dwfl *dwfl)
{
	if (finder)
		dwfl_getmodules(dwfl, attach_module, finder, 0);
}

/* ---- opening files ---- */

/* A read-only fd of the regular file at `path`, -1 for anything else. A
 * path a process mapped can name a device (a GPU's, /dev/zero): it is
 * stat'ed before it is opened, since opening a device can block or act. */
static int open_regular(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return -1;
	/* O_NONBLOCK: should the path become a FIFO meanwhile, open must
	 * not wait for a writer. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* open_regular of `path` resolved inside the directory root_fd, as the
 * target would resolve it: its symlinks, absolute ones too, stay inside
 * (openat2 RESOLVE_IN_ROOT). Through /proc/PID/root alone an absolute
 * symlink a container planted would lead into the host's files, which
 * wallspy, as root, may open. -1 when the kernel has no openat2 (< 5.6):
 * then only the plain path is tried. */
static int open_in_root(int root_fd, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int pfd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	if (pfd < 0)
		return errno == ENOSYS ? -2 : -1;
	/* The O_PATH fd names the very file found: reopen it to read. */
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	int fd = open_regular(self);
	close(pfd);
	return fd;
}

/* open_regular of ROOT/PATH, ROOT being f->root (inside it, see
 * open_in_root) or "" (the host's root); *ret_path (may be NULL) gets the
 * name on success (heap). */
static int open_under(const struct ws_finder *f, const char *root,
		      const char *path, char **ret_path)
{
	char *full;
	if (asprintf(&full, "%s%s", root, path) < 0)
		return -1;
	int fd = root[0] && f->root_fd >= 0 ? open_in_root(f->root_fd, path) : -2;
	if (fd == -2)
		fd = open_regular(full);
	if (fd < 0 || !ret_path)
		free(full);
	else
		*ret_path = full;
	return fd;
}

/* Reads the target's mapping ranges from /proc/PID/maps; false when it
 * cannot be read. */
static bool read_vmas(struct ws_finder *f)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)f->pid);
	FILE *maps = fopen(path, "re");
	if (!maps)
		return false;
	f->nvmas = 0;
	f->vmas_read = true;
	char *line = NULL;
	size_t size = 0;
	bool ok = true;
	while (ok && getline(&line, &size, maps) > 0) {
		char *end;
		uint64_t lo = strtoull(line, &end, 16);
		if (*end != '-')
			continue;
		uint64_t hi = strtoull(end + 1, &end, 16);
		ok = ws_grow((void **)&f->vmas, &f->vmas_cap, f->nvmas + 1,
			     sizeof(*f->vmas));
		if (ok)
			f->vmas[f->nvmas++] = (struct vma){ lo, hi };
	}
	free(line);
	fclose(maps);
	return ok;
}

/* The end of the mapping that starts at `start`, 0 if none does. */
static uint64_t vma_end(const struct ws_finder *f, uint64_t start)
{
	size_t lo = 0, hi = f->nvmas;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->vmas[mid].lo < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->nvmas && f->vmas[lo].lo == start ? f->vmas[lo].hi : 0;
}

/* The file the kernel mapped at `start` in the target, through
 * /proc/PID/map_files/START-END (the end read from /proc/PID/maps): right
 * even when the path is another namespace's or the file was deleted. Needs
 * CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE) to open: -1 without. The maps
 * are read once for all modules (a process of 512 threads lists 1,000
 * mappings: reading them for each module was 2 ms of a dump) and again
 * when `start` is not among them or its entry is gone (the target mapped
 * anew since). */
static int open_mapped(struct ws_finder *f, uint64_t start)
{
	bool fresh = false;
	if (!f->vmas_read) {
		if (!read_vmas(f))
			return -1;
		fresh = true;
	}
	for (;;) {
		uint64_t end = vma_end(f, start);
		int fd = -1;
		errno = ENOENT;
		if (end) {
			char path[64];
			snprintf(path, sizeof(path),
				 "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
				 (int)f->pid, start, end);
			fd = open_regular(path);
		}
		if (fd >= 0 || fresh || errno != ENOENT)
			return fd;
		if (!read_vmas(f))
			return -1;
		fresh = true;
	}
}

/* Whether `module_name` (a path from /proc/PID/maps) is the target's
 * executable: /proc/PID/exe names it the same way, " (deleted)" and all. */
static bool is_executable(const struct ws_finder *f, const char *module_name)
{
	char exe[4096];
	return ws_target_executable(f->pid, exe, sizeof(exe)) &&
	       strcmp(exe, module_name) == 0;
}

/* ---- checking a debug file ---- */

/* Whether the ELF on fd carries build-id id[0..len). */
static bool has_build_id(int fd, const unsigned char *id, size_t len)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *file_id;
	ssize_t file_len = elf ? dwelf_elf_gnu_build_id(elf, &file_id) : -1;
	bool same = file_len > 0 && (size_t)file_len == len &&
		    memcmp(file_id, id, len) == 0;
	elf_end(elf);
	return same;
}

/* Whether the whole file on fd has the CRC-32 a .gnu_debuglink names
 * (zlib's polynomial, as GNU's). */
static bool has_crc(int fd, GElf_Word crc)
{
	unsigned char buf[65536];
	uLong sum = crc32(0, Z_NULL, 0);
	off_t off = 0;
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		if (n == 0)
			break;
		sum = crc32(sum, buf, (uInt)n);
		off += n;
	}
	return (GElf_Word)sum == crc;
}

/* What a separate file must match: the module's (or the dwz file's)
 * build-id, else the debuglink's CRC (0: nothing to check). */
struct expect {
	const unsigned char *id;
	size_t id_len;
	GElf_Word crc;
};

/* Opens ROOT/PATH when it is a regular file that matches `e`. */
static int open_checked(const struct ws_finder *f, const char *root,
			const char *path, const struct expect *e,
			char **ret_path)
{
	char *name = NULL;
	int fd = open_under(f, root, path, &name);
	if (fd < 0)
		return -1;
	bool ok = e->id_len ? has_build_id(fd, e->id, e->id_len)
			    : !e->crc || has_crc(fd, e->crc);
	if (!ok) {
		close(fd);
		free(name);
		return -1;
	}
	*ret_path = name;
	return fd;
}

/* ---- the search ---- */

/* The roots to look in, the target's first: one when it is wallspy's. */
static size_t search_roots(const struct ws_finder *f, const char *roots[2])
{
	size_t n = 0;
	if (f->foreign)
		roots[n++] = f->root;
	roots[n++] = "";
	return n;
}

/* ROOT/usr/lib/debug/.build-id/xx/rest.debug, in each root. */
static int find_by_build_id(const struct ws_finder *f, const struct expect *e,
			    char **ret_path)
{
	if (e->id_len < 2 || e->id_len > MAX_BUILD_ID)
		return -1;
	char hex[2 * MAX_BUILD_ID + 1], path[2 * MAX_BUILD_ID + 64];
	ws_debugcache_hex(e->id, e->id_len, hex);
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug",
		 hex, hex + 2);
	const char *roots[2];
	size_t n = search_roots(f, roots);
	for (size_t i = 0; i < n; i++) {
		int fd = open_checked(f, roots[i], path, e, ret_path);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

/* The places GDB and libdwfl look for a .gnu_debuglink name beside a
 * module at `file` (a path in the target's filesystem): its directory,
 * that directory's .debug/, and the same directory under /usr/lib/debug;
 * in each root. */
static int find_by_debuglink(const struct ws_finder *f, const char *file,
			     const char *link, const struct expect *e,
			     char **ret_path)
{
	const char *slash = file ? strrchr(file, '/') : NULL;
	if (!slash || !link || strchr(link, '/'))
		return -1;
	int dirlen = (int)(slash - file);
	static const char *const formats[] = {
		"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s",
	};
	const char *roots[2];
	size_t n = search_roots(f, roots);
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < sizeof(formats) / sizeof(formats[0]); k++) {
			char *path;
			if (asprintf(&path, formats[k], dirlen, file, link) < 0)
				return -1;
			int fd = open_checked(f, roots[i], path, e, ret_path);
			free(path);
			if (fd >= 0)
				return fd;
		}
	}
	return -1;
}

/* The debuginfod download of the file with e's build-id, checked. */
static int find_by_debuginfod(const struct ws_finder *f, const char *what,
			      const struct expect *e, char **ret_path)
{
	if (!f->debuginfod || e->id_len == 0)
		return -1;
	char *path = NULL;
	int fd = ws_debuginfod_find_debuginfo(f->debuginfod, e->id, e->id_len,
					      what, &path);
	if (fd >= 0 && !has_build_id(fd, e->id, e->id_len)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		free(path);
	else
		*ret_path = path;
	return fd;
}

/* Swaps fd for the cache's uncompressed copy when it has compressed DWARF
 * (and the cache works); *path follows. */
static int through_cache(const struct ws_finder *f, int fd, char **path,
			 enum ws_debugcache_kind kind,
			 const unsigned char *id, size_t id_len)
{
	if (!f->cache)
		return fd;
	int cfd;
	char *cpath;
	struct ws_error *err = ws_debugcache_get(f->cache, fd, kind, id, id_len,
						 &cfd, &cpath);
	if (err) {
		ws_debugcache_log(f->cache, "%s: %s", *path ? *path : "?",
				  err->message);
		ws_error_destroy(err);
	}
	if (cfd < 0)
		return fd;
	close(fd);
	free(*path);
	*path = cpath;
	return cfd;
}

/* The module's name for people: its file's base name. */
static const char *short_name(const char *name)
{
	const char *slash = name ? strrchr(name, '/') : NULL;
	return slash ? slash + 1 : name ? name : "?";
}

/* ---- the callbacks ---- */

static struct ws_finder *module_finder(void **userdata)
{
	return userdata ? *userdata : NULL;
}

static int find_elf(Dwfl_Module *mod, void **userdata, const char *module_name,
		    Dwarf_Addr base, char **file_name, Elf **elfp)
{
	struct ws_finder *f = module_finder(userdata);
	if (!f || module_name[0] != '/')
		/* The vDSO ("[vdso: PID]") is read from memory. */
		return dwfl_linux_proc_find_elf(mod, userdata, module_name,
						base, file_name, elfp);
	size_t len = strlen(module_name);
	size_t suffix = sizeof(deleted_suffix) - 1;
	bool deleted = len > suffix &&
		       strcmp(module_name + len - suffix, deleted_suffix) == 0;
	char *path = strndup(module_name, deleted ? len - suffix : len);
	if (!path)
		return -1;
	int fd = open_mapped(f, base);
	if (fd < 0 && !deleted)
		fd = open_under(f, f->root, path, NULL);
	if (fd < 0 && deleted && is_executable(f, module_name)) {
		char exe[64];
		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)f->pid);
		fd = open_regular(exe);
	}
	if (fd < 0) {
		free(path);
		return -1;
	}
	char *cpath = NULL;
	fd = through_cache(f, fd, &cpath, WS_DEBUGCACHE_MAIN, NULL, 0);
	free(cpath);
	/* The name is the path in the target's filesystem, whatever was
	 * opened: the debuglink search starts from its directory. */
	*file_name = path;
	return fd;
}

/* libdwfl asks find_debuginfo for two things: a module's separate debug
 * file, and later the dwz file its DWARF names in .gnu_debugaltlink. The
 * second comes once the debug file is named, or (DWARF in the main file)
 * with the alt file's name as debuglink_file and crc 0, where a real
 * .gnu_debuglink always carries its CRC. */
static bool is_debug_file_request(Dwfl_Module *mod, const char *debuglink_file,
				  GElf_Word debuglink_crc,
				  char *const *debuginfo_file_name)
{
	const char *debugfile = NULL;
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
	return !debugfile && !*debuginfo_file_name &&
	       !(debuglink_file && debuglink_crc == 0);
}

/* The end of a search for a separate file matching e: debuginfod when
 * nothing local was found (fd < 0), then the cache's uncompressed copy;
 * the fd for libdwfl (-1: none) and the file's name in
 * *debuginfo_file_name (libdwfl frees it). */
static int found(struct ws_finder *f, int fd, char *path, const char *modname,
		 const struct expect *e, char **debuginfo_file_name)
{
	if (fd < 0)
		fd = find_by_debuginfod(f, short_name(modname), e, &path);
	if (fd < 0)
		return -1;
	fd = through_cache(f, fd, &path, WS_DEBUGCACHE_DEBUG, e->id, e->id_len);
	*debuginfo_file_name = path;
	return fd;
}

/* The module's separate debug file. */
static int find_debug_file(struct ws_finder *f, Dwfl_Module *mod,
			   const char *modname, const char *file_name,
			   const char *debuglink_file, GElf_Word debuglink_crc,
			   char **debuginfo_file_name)
{
	const unsigned char *bits = NULL;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &bits, &vaddr);
	struct expect e = {
		.id = bits,
		.id_len = len > 0 && len <= MAX_BUILD_ID ? (size_t)len : 0,
		.crc = debuglink_crc,
	};
	char *path = NULL;
	int fd = find_by_build_id(f, &e, &path);
	if (fd < 0)
		fd = find_by_debuglink(f, file_name, debuglink_file, &e, &path);
	return found(f, fd, path, modname, &e, debuginfo_file_name);
}

/* The dwz file the module's DWARF refers to: by its build-id, by its
 * (absolute) name, in each root, then from debuginfod. */
static int find_alt_file(struct ws_finder *f, Dwfl_Module *mod,
			 const char *modname, char **debuginfo_file_name)
{
	Dwarf_Addr bias;
	Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
	const char *altname = NULL;
	const void *id = NULL;
	ssize_t len = dw ? dwelf_dwarf_gnu_debugaltlink(dw, &altname, &id) : -1;
	if (len <= 0 || len > MAX_BUILD_ID)
		return -1;
	struct expect e = { .id = id, .id_len = (size_t)len };
	char *path = NULL;
	int fd = find_by_build_id(f, &e, &path);
	if (fd < 0 && altname && altname[0] == '/') {
		const char *roots[2];
		size_t n = search_roots(f, roots);
		for (size_t i = 0; i < n && fd < 0; i++)
			fd = open_checked(f, roots[i], altname, &e, &path);
	}
	return found(f, fd, path, modname, &e, debuginfo_file_name);
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)base;
	struct ws_finder *f = module_finder(userdata);
	/* Never libdwfl's standard finder: it would query debuginfod on
	 * its own whenever DEBUGINFOD_URLS is set. */
	if (!f || !mod)
		return -1;
	if (is_debug_file_request(mod, debuglink_file, debuglink_crc,
				  debuginfo_file_name))
		return find_debug_file(f, mod, modname, file_name,
				       debuglink_file, debuglink_crc,
				       debuginfo_file_name);
	return find_alt_file(f, mod, modname, debuginfo_file_name);
}

/* Callbacks must outlive every Dwfl, hence static. libdwfl's debuginfo
 * path is not used: the search above is the whole search. */
static const Dwfl_Callbacks callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = find_debuginfo,
};

const Dwfl_Callbacks *ws_finder_callbacks(void)
{
	return &callbacks;
}
