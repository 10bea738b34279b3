/*
 * ws_dwtype, part 4 of 4: member paths through pointers, resolved once
 * (ws_dwpath: "uc->uc_mcontext.gregs[16]", "events->ev_type"), and read
 * many times from a copy of the outer object plus one read per pointer
 * hop; and globals found by ELF symbol, typed from DWARF, for compilers
 * that emit types but no variable DIEs (Crystal).
 */
#include "dwtype_internal.h"

#include <gelf.h>
#include <inttypes.h>
#include <string.h>

#include "ws_symbols.h"

/* ------------------------------------------------------------------------ */
/* Resolving. */

static struct ws_error *not_a_pointer(const char *path, size_t at,
				      const struct ws_dwtype *type)
{
	char tname[256];
	return ws_error_create(WS_ERR_OTHER,
			       "member path '%s': '%.*s' (%s) is not a pointer",
			       path, (int)at, path, dwtype_type_str(type, tname));
}

struct ws_error *ws_dwtype_path(struct ws_dwtype_program *prog,
				const struct ws_dwtype *type, const char *path,
				struct ws_dwpath *ret)
{
	struct ws_dwtype cur = *type;
	size_t len = strlen(path), pos = 0;
	uint64_t extra = 0;
	ret->nhops = 0;
	for (;;) {
		if (ret->nhops == WS_DWPATH_MAX_HOPS)
			return ws_error_create(WS_ERR_OTHER,
					       "member path '%s': more than %d pointer hops",
					       path, WS_DWPATH_MAX_HOPS - 1);
		struct path_entry e;
		struct ws_error *err = dwtype_resolve_cached(prog, &cur, path,
							     pos, len, &e);
		if (err)
			return err;
		struct ws_dwfield f = e.field;
		if (__builtin_add_overflow(f.offset, extra, &f.offset))
			return dwtype_path_error(path, pos, "index too large");
		ret->hop[ret->nhops++] = f;
		pos += e.consumed;
		if (pos == len)
			return NULL;
		struct ws_dwtype target;
		if (f.kind != WS_DWTYPE_POINTER ||
		    !dwtype_target_type(prog, &f.type, &target))
			return not_a_pointer(path, pos, &f.type);
		extra = 0;
		if (dwtype_is_arrow(path, pos, len)) {
			pos += 2;
			if (pos == len || path[pos] == '.' || path[pos] == '[')
				return dwtype_path_error(path, pos,
							 "expected a member name");
		} else {
			uint64_t idx, size;
			size_t open = pos;
			if (!dwtype_parse_index(path, &pos, len, &idx))
				return dwtype_path_error(path, open,
							 "expected [NUMBER]");
			if (pos < len && path[pos] != '.' && path[pos] != '[' &&
			    !dwtype_is_arrow(path, pos, len))
				return dwtype_path_error(path, pos,
							 "expected '.', '[' or '->'");
			char tname[256];
			if (!dwtype_type_size(prog, &target, &size))
				return ws_error_create(WS_ERR_NO_DEBUGINFO,
						       "type '%s' has no known size to index by",
						       dwtype_type_str(&target, tname));
			if (__builtin_mul_overflow(idx, size, &extra))
				return dwtype_path_error(path, open, "index too large");
		}
		cur = target;
	}
}

/* ------------------------------------------------------------------------ */
/* Reading. */

/* Decodes field f (offset ignored) from `bytes`, f->size of them. */
static struct ws_error *decode_at(const struct ws_dwfield *f,
				  const unsigned char *bytes, uint64_t *ret)
{
	struct ws_dwfield at = *f;
	at.offset = 0;
	return ws_dwtype_field_uint(&at, bytes, (size_t)f->size, ret);
}

/* Reads field f (an integer or pointer, at most 9 bytes) at `address`,
 * from buf when it lies inside [base, base + size). */
static struct ws_error *read_field(struct ws_dwtype_program *prog,
				   const struct ws_dwfield *f, uint64_t address,
				   uint64_t base, const void *buf, size_t size,
				   uint64_t *ret)
{
	unsigned char bytes[16];
	char tname[256];
	if (f->size == WS_DWTYPE_SIZE_UNKNOWN || f->size > sizeof(bytes))
		return ws_error_create(WS_ERR_OTHER,
				       "type '%s' is not an integer or pointer",
				       dwtype_type_str(&f->type, tname));
	if (buf && address >= base && address - base <= size &&
	    f->size <= size - (address - base))
		return decode_at(f, (const unsigned char *)buf +
					    (address - base), ret);
	struct ws_error *err = ws_memory_read(&prog->reader, address, bytes,
					      (size_t)f->size);
	return err ? err : decode_at(f, bytes, ret);
}

struct ws_error *ws_dwtype_path_locate(struct ws_dwtype_program *prog,
				       const struct ws_dwpath *path,
				       uint64_t address, const void *buf,
				       size_t size, uint64_t *ret)
{
	if (path->nhops == 0)
		return ws_error_create(WS_ERR_OTHER, "empty member path");
	uint64_t at = address + path->hop[0].offset;
	for (unsigned k = 0; k + 1 < path->nhops; k++) {
		uint64_t value;
		struct ws_error *err = read_field(prog, &path->hop[k], at,
						  address, buf, size, &value);
		if (err)
			return err;
		if (value == 0)
			return ws_error_create(WS_ERR_OTHER,
					       "null pointer at hop %u of a member path",
					       k + 1);
		at = value + path->hop[k + 1].offset;
	}
	*ret = at;
	return NULL;
}

struct ws_error *ws_dwtype_path_uint(struct ws_dwtype_program *prog,
				     const struct ws_dwpath *path,
				     uint64_t address, const void *buf,
				     size_t size, uint64_t *ret)
{
	if (path->nhops == 1 && buf)
		return ws_dwtype_field_uint(&path->hop[0], buf, size, ret);
	uint64_t at;
	struct ws_error *err = ws_dwtype_path_locate(prog, path, address, buf,
						     size, &at);
	if (err)
		return err;
	return read_field(prog, ws_dwpath_last(path), at, address, buf, size,
			  ret);
}

/* ------------------------------------------------------------------------ */
/* Globals by ELF symbol. */

struct find_symbol {
	const char *name;
	const char *want;        /* module filter, NULL: any */
	uint64_t address, size;
	bool found;
	bool elf_only;           /* the module's own file, not its debug file */
};

static bool module_wanted(const char *modname, const char *want)
{
	if (!want)
		return true;
	const char *base = strrchr(modname, '/');
	return strcmp(modname, want) == 0 || (base && strcmp(base + 1, want) == 0);
}

/* The data symbol fs->name in the symbol tables of mod's own ELF file
 * (.symtab, .dynsym), without loading separate debug info: dwfl's symbol
 * table would read ld.so's and libc's debug files (and fill the debug
 * cache with them) just to learn a symbol is not there. */
static bool find_symbol_in_elf(Dwfl_Module *mod, struct find_symbol *fs)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	for (Elf_Scn *scn = NULL; elf && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr) ||
		    (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM) ||
		    !shdr.sh_entsize)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t n = data ? data->d_size / shdr.sh_entsize : 0;
		for (size_t i = 1; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(data, (int)i, &sym) ||
			    sym.st_shndx == SHN_UNDEF ||
			    GELF_ST_TYPE(sym.st_info) == STT_FUNC)
				continue;
			const char *name = elf_strptr(elf, shdr.sh_link, sym.st_name);
			if (!name || strcmp(name, fs->name) != 0)
				continue;
			fs->address = sym.st_value +
				      (sym.st_shndx == SHN_ABS ? 0 : bias);
			fs->size = sym.st_size;
			fs->found = true;
			return true;
		}
	}
	return false;
}

static bool is_data_symbol_named(const char *name, const GElf_Sym *sym,
				 GElf_Addr addr, void *arg)
{
	struct find_symbol *fs = arg;
	if (sym->st_shndx == SHN_UNDEF ||
	    GELF_ST_TYPE(sym->st_info) == STT_FUNC ||
	    strcmp(name, fs->name) != 0)
		return false;
	fs->address = addr;
	fs->size = sym->st_size;
	fs->found = true;
	return true;
}

static int find_symbol_in(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr start, void *arg)
{
	(void)userdata, (void)start;
	struct find_symbol *fs = arg;
	if (!module_wanted(modname ? modname : "", fs->want))
		return DWARF_CB_OK;
	if (fs->elf_only)
		return find_symbol_in_elf(mod, fs) ? DWARF_CB_ABORT : DWARF_CB_OK;
	return ws_module_each_symbol(mod, is_data_symbol_named, fs)
		? DWARF_CB_ABORT : DWARF_CB_OK;
}

bool ws_dwtype_find_symbol(Dwfl *dwfl, const char *module,
			   const char *symbol, uint64_t *address,
			   uint64_t *size)
{
	struct find_symbol fs = { .name = symbol, .want = module,
				  .elf_only = true };
	dwfl_getmodules(dwfl, find_symbol_in, &fs, 0);
	if (fs.found) {
		*address = fs.address;
		*size = fs.size;
	}
	return fs.found;
}

struct ws_error *ws_dwtype_symbol(struct ws_dwtype_program *prog,
				  const char *module, const char *symbol,
				  const char *type_name, struct ws_dwobj *ret)
{
	struct ws_dwtype type;
	struct ws_error *err = ws_dwtype_find_type(prog, module, type_name,
						   &type);
	if (err)
		return err;
	struct find_symbol fs = { .name = symbol, .want = module };
	/* The main executable first, as for DWARF variables. */
	if (prog->have_executable)
		find_symbol_in(prog->mods[0].mod, NULL, prog->mods[0].name, 0,
			       &fs);
	if (!fs.found)
		dwfl_getmodules(prog->dwfl, find_symbol_in, &fs, 0);
	if (!fs.found)
		return ws_error_create(WS_ERR_NO_DEBUGINFO,
				       "no ELF symbol '%s' in %s", symbol,
				       module ? module : "the target's modules");
	dwtype_make_object(prog, &type, fs.address, ret);
	char tname[256];
	if (fs.size && ret->size != WS_DWTYPE_SIZE_UNKNOWN &&
	    ret->size > fs.size)
		return ws_error_create(WS_ERR_OTHER,
				       "symbol '%s' is %" PRIu64 " bytes, smaller than its type '%s' (%" PRIu64 ")",
				       symbol, fs.size,
				       dwtype_type_str(&type, tname), ret->size);
	return NULL;
}
