/*
 * Questions about the target's modules, answered from the Dwfl that
 * symbols.c owns: a module's ELF section by name, a function's address by
 * its symbol name, and the module list (name, path, build id, range) in
 * address order. Naming pcs is symbols.c's.
 */
#include "ws_symbols.h"

#include "symbols_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Elf_Scn *ws_module_find_section(Dwfl_Module *mod, const char *name)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *sname;
		if (gelf_getshdr(scn, &shdr) &&
		    (sname = elf_strptr(elf, shstrndx, shdr.sh_name)) &&
		    strcmp(sname, name) == 0)
			return scn;
	}
	return NULL;
}

Elf_Scn *ws_module_go_pclntab(Dwfl_Module *mod)
{
	Elf_Scn *scn = ws_module_find_section(mod, ".gopclntab");
	return scn ? scn : ws_module_find_section(mod, ".data.rel.ro.gopclntab");
}

struct find_function {
	const char *name;
	size_t len;
	uint64_t address;
};

bool ws_module_each_symbol(Dwfl_Module *module, ws_module_symbol_fn fn,
			   void *arg)
{
	int n = dwfl_module_getsymtab(module);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(module, i, &sym, &addr,
							   NULL, NULL, NULL);
		if (name && fn(name, &sym, addr, arg))
			return true;
	}
	return false;
}

static bool is_function_named(const char *name, const GElf_Sym *sym,
			      GElf_Addr addr, void *arg)
{
	struct find_function *ff = arg;
	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC ||
	    strncmp(name, ff->name, ff->len) != 0)
		return false;
	if (name[ff->len] == '\0' || strcmp(name + ff->len, ".abi0") == 0) {
		ff->address = addr;
		return true;
	}
	return false;
}

static int find_function_in(Dwfl_Module *mod, void **userdata,
			    const char *modname, Dwarf_Addr start, void *arg)
{
	(void)userdata, (void)modname, (void)start;
	return ws_module_each_symbol(mod, is_function_named, arg)
		? DWARF_CB_ABORT : DWARF_CB_OK;
}

bool ws_symbols_find_function(struct ws_symbols *symbols, const char *name,
			      uint64_t *address)
{
	struct find_function ff = {.name = name, .len = strlen(name)};
	dwfl_getmodules(symbols->dwfl, find_function_in, &ff, 0);
	*address = ff.address;
	return ff.address != 0;
}

struct module_list {
	Dwfl_Module **modules;
	size_t count, capacity;
};

static int collect_module(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr start, void *arg)
{
	(void)userdata, (void)modname, (void)start;
	struct module_list *list = arg;
	if (list->count == list->capacity) {
		size_t capacity = list->capacity ? list->capacity * 2 : 32;
		Dwfl_Module **grown = realloc(list->modules,
					      capacity * sizeof(*grown));
		if (!grown)
			return DWARF_CB_ABORT;
		list->modules = grown;
		list->capacity = capacity;
	}
	list->modules[list->count++] = mod;
	return DWARF_CB_OK;
}

static int compare_modules(const void *a, const void *b)
{
	Dwarf_Addr x, y;
	dwfl_module_info(*(Dwfl_Module *const *)a, NULL, &x, NULL, NULL, NULL,
			 NULL, NULL);
	dwfl_module_info(*(Dwfl_Module *const *)b, NULL, &y, NULL, NULL, NULL,
			 NULL, NULL);
	return (x > y) - (x < y);
}

struct ws_error *ws_symbols_modules(struct ws_symbols *symbols,
				    ws_symbols_module_fn fn, void *arg)
{
	struct module_list list = {0};
	dwfl_getmodules(symbols->dwfl, collect_module, &list, 0);
	qsort(list.modules, list.count, sizeof(*list.modules), compare_modules);
	struct ws_error *err = NULL;
	bool out_of_memory = false;
	for (size_t i = 0; i < list.count && !err; i++) {
		Dwarf_Addr start, end;
		const char *path = dwfl_module_info(list.modules[i], NULL,
						    &start, &end, NULL, NULL,
						    NULL, NULL);
		const unsigned char *id;
		GElf_Addr id_vaddr;
		int id_len = dwfl_module_build_id(list.modules[i], &id,
						  &id_vaddr);
		char hex[2 * 64 + 1] = "";
		for (int k = 0; k < id_len && k < 64; k++)
			snprintf(hex + 2 * k, 3, "%02x", id[k]);
		struct ws_symbols_module m = {
			.name = path ? symbols_intern(symbols, symbols_module_basename(path),
					      &out_of_memory)
				     : NULL,
			/* "[vdso]", as the header says: no PID in a
			 * mapping's name either. */
			.path = symbols_intern(symbols,
				       path && strncmp(path, "[vdso", 5) == 0
					       ? "[vdso]"
					       : path,
				       &out_of_memory),
			.build_id = id_len > 0 ? hex : NULL,
			.start = start,
			.end = end,
		};
		if (out_of_memory)
			err = &ws_error_nomem;
		else if (m.name)
			err = fn(&m, arg);
	}
	free(list.modules);
	return err;
}
