/*
 * elf_util: an ELF file's own word on addresses, read with libelf alone
 * (never through wallspy): its symbol table, and where a process loaded it
 * (/proc/PID/maps). For tests that check wallspy's return addresses,
 * unwinds and remote reads against the binary itself. Fails the test on
 * any error.
 */
#ifndef ELF_UTIL_H
#define ELF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One STT_FUNC or STT_OBJECT symbol of .symtab. */
struct e2e_sym {
	char *name;
	uint64_t value, size;    /* link-time address and size */
	bool is_function;
};

struct e2e_symtab {
	struct e2e_sym *syms;
	size_t n;
	/* What to add to a link-time address for a run-time one (0 after
	 * e2e_symtab_load; e2e_load_bias for a running PIE): used by the
	 * lookups below that take or give run-time addresses. */
	uint64_t bias;
};

/* Every function and object symbol of the ELF file at path (which must
 * have some). */
struct e2e_symtab e2e_symtab_load(const char *path);
/* The same, for the copy of path that pid runs (its bias set). */
struct e2e_symtab e2e_symtab_load_loaded(pid_t pid, const char *path);
void e2e_symtab_free(struct e2e_symtab *st);

/* Symbol `name` (functions also as NAME.abi0, as Go's assembly carries it
 * in .symtab), or NULL. */
const struct e2e_sym *e2e_symtab_find(const struct e2e_symtab *st,
				      const char *name);

/* The function containing link-time address `address` (or starting
 * exactly there), or NULL. */
const struct e2e_sym *e2e_symtab_function_at(const struct e2e_symtab *st,
					     uint64_t address);

/* What to add to the file's link-time addresses to get pid's run-time
 * ones: 0 for a fixed-address executable; for a PIE or a library, the
 * start of its first mapping in /proc/PID/maps minus its first PT_LOAD's
 * page-aligned address. Fails the test when path is not mapped. */
uint64_t e2e_load_bias(pid_t pid, const char *path);

/* Whether `address` lies in an executable mapping of pid whose file is
 * `path` (NULL: any file, or none, [vdso] included). */
bool e2e_in_code_of(pid_t pid, uint64_t address, const char *path);

/* Hex build-id (NT_GNU_BUILD_ID) of the ELF file at path into out (at
 * least 129 bytes); false when it has none or is no ELF file. */
bool e2e_elf_build_id(const char *path, char *out);

/* How e2e_elf_split_debug splits. */
enum e2e_split {
	E2E_SPLIT_PLAIN = 0,
	E2E_SPLIT_DEBUGLINK = 1,	/* the stripped file names its debug file */
	E2E_SPLIT_COMPRESS = 2,		/* the debug file's DWARF zlib-compressed */
};

/* Splits the ELF file `src` the way distributions ship it, with binutils'
 * objcopy: DIR/NAME gets the code without any symbol table or DWARF
 * (--strip-all) and, with E2E_SPLIT_DEBUGLINK, a .gnu_debuglink naming
 * DEBUG_NAME; the returned path (DIR/DEBUG_NAME, freed by e2e_cleanup)
 * gets the symbols and DWARF alone (--only-keep-debug), compressed with
 * E2E_SPLIT_COMPRESS (--compress-debug-sections=zlib, as Debian's dbgsym
 * packages). Both keep the build-id. `how`: E2E_SPLIT_* or'ed. Fails the
 * test when objcopy does. */
const char *e2e_elf_split_debug(const char *src, const char *dir,
				const char *name, const char *debug_name,
				int how);

/* Number of SHF_COMPRESSED sections of the ELF file at path; -1 when it is
 * not a readable ELF file. */
int e2e_elf_compressed_sections(const char *path);

/* This process's libc (the fixtures' too): its build-id into id (>= 129
 * bytes) and the path of its separate debug file
 * (/usr/lib/debug/.build-id/..., libc6-dbg) into debug (>= 512 bytes).
 * Skips the test when libc or its build-id is not found or the debug file
 * is missing or not compressed. */
void e2e_require_compressed_libc_debug(char *id, char *debug);

#endif
