/*
 * The Go paths of symbolization: naming a pc from its module's .gopclntab
 * (whole frames with file, line, inlined calls and wrappers, as Go's own
 * traceback names them, Go 1.20 on; or the function's name alone where the
 * symbol table misses it). Decoding the table's bytes is
 * symbols_gopclntab.c's; the cache and the DWARF way are symbols.c's.
 */
#include "ws_symbols.h"

#include "symbols_internal.h"

#include <stdlib.h>
#include <string.h>

#include "ws_grow.h"

/* A Go function's name from its module's .gopclntab (see
 * symbols_gopclntab.c), for pcs the symbol table misses. A return address
 * (pc, looked up as lookup_pc = pc - 1) is backed up only when it is past
 * its function's entry, as Go's traceback does: Go 1.19 saves
 * runtime.systemstack_switch's entry as the pc of a goroutine on the
 * system stack, and the byte before is the padding after runtime.mcall.
 * NULL when the module has no table or it does not cover the pc. A scan
 * of the section headers and a binary search: cold lookups only. */
const char *symbols_go_function(struct ws_symbols *symbols,
				Dwfl_Module *module, Dwarf_Addr lookup_pc,
				Dwarf_Addr pc, bool *out_of_memory)
{
	Elf_Scn *scn = ws_module_go_pclntab(module);
	Elf_Scn *text = ws_module_find_section(module, ".text");
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	GElf_Shdr text_header;
	GElf_Addr bias;
	if (!data || !data->d_buf || !text ||
	    !gelf_getshdr(text, &text_header) ||
	    !dwfl_module_getelf(module, &bias))
		return NULL;
	uint64_t entry = 0;
	const char *name = symbols_gopclntab_lookup(
		data->d_buf, data->d_size, text_header.sh_addr, pc - bias,
		&entry);
	if (lookup_pc != pc && (!name || entry != pc - bias))
		name = symbols_gopclntab_lookup(data->d_buf, data->d_size,
						text_header.sh_addr,
						lookup_pc - bias, NULL);
	return name ? symbols_intern(symbols, name, out_of_memory) : NULL;
}

/* The ELF address of the module's symbol `name` (0: none); a linear
 * scan, once per Go module. */
static uint64_t symbol_address(Dwfl_Module *module, const char *name)
{
	/* dwfl_module_getsym gives the address where the module is loaded;
	 * the section headers it is compared with give the file's: a
	 * position-independent Go binary (-buildmode=pie) is loaded away
	 * from them by its bias. */
	GElf_Addr bias;
	if (!dwfl_module_getelf(module, &bias))
		return 0;
	int n = dwfl_module_getsymtab(module);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *s = dwfl_module_getsym(module, i, &sym, NULL);
		if (s && strcmp(s, name) == 0)
			return sym.st_value - bias;
	}
	return 0;
}

/* The module's Go function table when it can name whole frames (a Go
 * 1.20 or later binary with its DWARF and symbol table), else NULL. */
static const struct go_table *go_table(struct ws_symbols *symbols,
				       Dwfl_Module *module)
{
	for (size_t i = 0; i < symbols->ngo_tables; i++)
		if (symbols->go_tables[i].module == module)
			return symbols->go_tables[i].usable
				? &symbols->go_tables[i] : NULL;
	if (!ws_grow((void **)&symbols->go_tables, &symbols->go_tables_cap,
		     symbols->ngo_tables + 1, sizeof(*symbols->go_tables)))
		return NULL;
	struct go_table *g = &symbols->go_tables[symbols->ngo_tables++];
	memset(g, 0, sizeof(*g));
	g->module = module;
	Elf_Scn *scn = ws_module_go_pclntab(module);
	Elf_Scn *text = ws_module_find_section(module, ".text");
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	GElf_Shdr header, text_header;
	if (!data || !data->d_buf || !text || !gelf_getshdr(scn, &header) ||
	    !gelf_getshdr(text, &text_header) ||
	    !dwfl_module_getelf(module, &g->bias))
		return NULL;
	/* Without DWARF (-ldflags=-w) the names stay the symbol table's and
	 * frames have no file, as before. */
	Dwarf_Addr dwarf_bias;
	if (!dwfl_module_getdwarf(module, &dwarf_bias))
		return NULL;
	uint64_t gofunc = symbol_address(module, "go:func.*");
	/* Where Go's text starts (function entries are offsets from it):
	 * runtime.text, which is .text's start only when Go linked the
	 * binary itself; an external link (cgo) puts the C runtime's code
	 * first (go_cgo_extra, Go 1.26: 0x100 bytes after .text, and every
	 * Go frame named after a neighbour). */
	uint64_t text_start = symbol_address(module, "runtime.text");
	if (!text_start)
		text_start = text_header.sh_addr;
	g->usable = gofunc &&
		symbols_gopclntab_open(&g->table, data->d_buf, data->d_size,
				       header.sh_addr, text_start, gofunc);
	return g->usable ? g : NULL;
}

/* Names the frames of a pc in Go code from the module's .gopclntab, as
 * Go's own traceback does (function, file:line, inlined calls, wrappers):
 * a binary search and the function's own tables, where the DWARF way
 * loads the line table of the pc's whole package. False when the table
 * cannot (not Go 1.20 on, not Go code, a return address at its
 * function's entry): then DWARF decides. */
bool symbols_go_frames(struct ws_symbols *symbols, Dwfl_Module *module,
		       Dwarf_Addr lookup_pc, Dwarf_Addr pc,
		       const struct ws_frame *base,
		       struct ws_location **location, bool *out_of_memory)
{
	const struct go_table *g = go_table(symbols, module);
	if (!g)
		return false;
	/* A return address at a function's entry: Go's traceback does not
	 * back it up (see symbols_go_function), nor does this. */
	uint64_t entry;
	if (lookup_pc != pc &&
	    symbols_gopclntab_lookup(g->table.data, g->table.size,
				     g->table.text, pc - g->bias, &entry) &&
	    entry == pc - g->bias)
		return false;
	struct gopclntab_frame frames[MAX_CALL_DEPTH];
	int n = symbols_gopclntab_frames(&g->table, lookup_pc - g->bias,
					 frames, MAX_CALL_DEPTH, &entry);
	if (n <= 0)
		return false;
	struct ws_location *grown = realloc(*location, sizeof(**location) +
					    (size_t)n * sizeof(grown->frames[0]));
	if (!grown) {
		*out_of_memory = true;
		return false;
	}
	*location = grown;
	grown->nframes = 0;
	for (int i = 0; i < n; i++) {
		struct ws_frame *frame = &grown->frames[grown->nframes++];
		*frame = *base;
		frame->function = symbols_intern(symbols, frames[i].function,
					 out_of_memory);
		frame->file = symbols_intern(symbols, frames[i].file, out_of_memory);
		frame->line = frames[i].line;
		frame->inlined = frames[i].inlined;
		frame->wrapper = frames[i].wrapper;
	}
	return true;
}
