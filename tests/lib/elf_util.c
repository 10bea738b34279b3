/*
 * elf_util: symbol tables and load addresses straight from the files and
 * /proc (see elf_util.h).
 */
#include "elf_util.h"

#include "e2e_util.h"

#include <criterion/criterion.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static Elf *open_elf(const char *path, int *fd)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(*fd, 0, "%s: %s", path, strerror(errno));
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(*fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf, "%s: %s", path, elf_errmsg(-1));
	return elf;
}

struct e2e_symtab e2e_symtab_load(const char *path)
{
	struct e2e_symtab st = { NULL, 0, 0 };
	size_t cap = 0;
	int fd;
	Elf *elf = open_elf(path, &fd);
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB ||
		    !shdr.sh_entsize)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t count = shdr.sh_size / shdr.sh_entsize;
		for (size_t i = 0; data && i < count; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym))
				continue;
			int type = GELF_ST_TYPE(sym.st_info);
			if ((type != STT_FUNC && type != STT_OBJECT) ||
			    !(name = elf_strptr(elf, shdr.sh_link, sym.st_name)) ||
			    !name[0])
				continue;
			if (st.n == cap) {
				cap = cap ? 2 * cap : 4096;
				st.syms = realloc(st.syms, cap * sizeof(*st.syms));
				cr_assert_not_null(st.syms);
			}
			st.syms[st.n++] = (struct e2e_sym){
				strdup(name), sym.st_value, sym.st_size,
				type == STT_FUNC };
		}
	}
	elf_end(elf);
	close(fd);
	cr_assert_gt(st.n, 0, "%s has no symbol table", path);
	return st;
}

struct e2e_symtab e2e_symtab_load_loaded(pid_t pid, const char *path)
{
	struct e2e_symtab st = e2e_symtab_load(path);
	st.bias = e2e_load_bias(pid, path);
	return st;
}

void e2e_symtab_free(struct e2e_symtab *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->syms[i].name);
	free(st->syms);
	st->syms = NULL;
	st->n = 0;
}

const struct e2e_sym *e2e_symtab_find(const struct e2e_symtab *st,
				      const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < st->n; i++) {
		const char *s = st->syms[i].name;

		if (strcmp(s, name) == 0 ||
		    (st->syms[i].is_function && strncmp(s, name, len) == 0 &&
		     strcmp(s + len, ".abi0") == 0))
			return &st->syms[i];
	}
	return NULL;
}

const struct e2e_sym *e2e_symtab_function_at(const struct e2e_symtab *st,
					     uint64_t address)
{
	for (size_t i = 0; i < st->n; i++) {
		const struct e2e_sym *f = &st->syms[i];

		if (f->is_function &&
		    (address == f->value ||
		     (address > f->value && address < f->value + f->size)))
			return f;
	}
	return NULL;
}

/* The mappings of pid, one line at a time: start, end, permissions, file
 * offset and path ("" when anonymous). Returns false at the end. */
struct map_line {
	uint64_t start, end, offset;
	char perms[8];
	char path[4096];
};

static bool next_map(FILE *maps, struct map_line *m)
{
	char line[4608];

	if (!fgets(line, sizeof(line), maps))
		return false;
	m->path[0] = '\0';
	int pos = 0;
	cr_assert_geq(sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
			     &m->start, &m->end, m->perms, &m->offset, &pos), 4,
		      "bad maps line: %s", line);
	if (pos > 0)
		snprintf(m->path, sizeof(m->path), "%s", line + pos);
	m->path[strcspn(m->path, "\n")] = '\0';
	return true;
}

static FILE *open_maps(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	FILE *maps = fopen(path, "r");
	cr_assert_not_null(maps, "%s: %s", path, strerror(errno));
	return maps;
}

uint64_t e2e_load_bias(pid_t pid, const char *path)
{
	int fd;
	Elf *elf = open_elf(path, &fd);
	GElf_Ehdr ehdr;
	cr_assert_not_null(gelf_getehdr(elf, &ehdr), "%s: no ELF header", path);
	uint64_t first_load = UINT64_MAX;
	size_t nphdr = 0;
	cr_assert_eq(elf_getphdrnum(elf, &nphdr), 0);
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr phdr;

		if (gelf_getphdr(elf, (int)i, &phdr) && phdr.p_type == PT_LOAD &&
		    phdr.p_vaddr < first_load)
			first_load = phdr.p_vaddr & ~(uint64_t)0xfff;
	}
	elf_end(elf);
	close(fd);
	if (ehdr.e_type == ET_EXEC)
		return 0;

	char real[4096];
	cr_assert_not_null(realpath(path, real), "%s: %s", path, strerror(errno));
	FILE *maps = open_maps(pid);
	struct map_line m;
	uint64_t start = 0;
	bool found = false;
	while (!found && next_map(maps, &m)) {
		if (strcmp(m.path, real) == 0 && m.offset == 0) {
			start = m.start;
			found = true;
		}
	}
	fclose(maps);
	cr_assert(found, "%s is not mapped in process %d", real, pid);
	return start - first_load;
}

bool e2e_in_code_of(pid_t pid, uint64_t address, const char *path)
{
	char real[4096] = "";

	if (path)
		cr_assert_not_null(realpath(path, real), "%s: %s", path,
				   strerror(errno));
	FILE *maps = open_maps(pid);
	struct map_line m;
	bool in = false;
	while (!in && next_map(maps, &m))
		in = address >= m.start && address < m.end && m.perms[2] == 'x' &&
		     (!path || strcmp(m.path, real) == 0);
	fclose(maps);
	return in;
}

bool e2e_elf_build_id(const char *path, char *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const unsigned char *id;
	ssize_t len = elf ? dwelf_elf_gnu_build_id(elf, (const void **)&id) : -1;
	bool ok = len > 0 && len <= 64;
	for (ssize_t i = 0; ok && i < len; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	elf_end(elf);
	close(fd);
	return ok;
}

int e2e_elf_compressed_sections(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	int n = elf && elf_kind(elf) == ELF_K_ELF ? 0 : -1;
	Elf_Scn *scn = NULL;
	while (n >= 0 && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr))
			n = -1;
		else if (shdr.sh_flags & SHF_COMPRESSED)
			n++;
	}
	elf_end(elf);
	close(fd);
	return n;
}

void e2e_require_compressed_libc_debug(char *id, char *debug)
{
	FILE *maps = open_maps(getpid());
	struct map_line m;
	char libc[4096] = "";
	while (!libc[0] && next_map(maps, &m))
		if (strstr(m.path, "/libc.so.6"))
			snprintf(libc, sizeof(libc), "%s", m.path);
	fclose(maps);
	if (!libc[0] || !e2e_elf_build_id(libc, id))
		cr_skip_test("libc.so.6 or its build-id not found");
	snprintf(debug, 512, "/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2);
	if (e2e_elf_compressed_sections(debug) <= 0)
		cr_skip_test("%s missing or not compressed (libc6-dbg)", debug);
}

/* Runs objcopy with args (NULL-terminated, after "objcopy"). */
static void objcopy(const char *const args[])
{
	char *argv[16];
	int n = 0;

	argv[n++] = (char *)"/usr/bin/objcopy";
	for (; *args && n < 15; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	struct e2e_result res;
	e2e_run(argv, NULL, 30000, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "objcopy failed: %s", res.err);
}

const char *e2e_elf_split_debug(const char *src, const char *dir,
				const char *name, const char *debug_name,
				int how)
{
	const char *debug = e2e_path(dir, debug_name);
	const char *out = e2e_path(dir, name);
	const char *keep[] = { "--only-keep-debug", src, debug, NULL };
	const char *compress[] = { "--compress-debug-sections=zlib", debug, NULL };

	objcopy(keep);
	if (how & E2E_SPLIT_COMPRESS)
		objcopy(compress);
	if (how & E2E_SPLIT_DEBUGLINK) {
		/* objcopy computes the link's CRC from the file it names. */
		char *link;
		cr_assert(asprintf(&link, "--add-gnu-debuglink=%s", debug) > 0);
		const char *strip[] = { "--strip-all", link, src, out, NULL };
		objcopy(strip);
		free(link);
	} else {
		const char *strip[] = { "--strip-all", src, out, NULL };
		objcopy(strip);
	}
	return debug;
}
