/*
 * ws_symbols: names addresses of a target process with libdw (elfutils).
 * Owns the process's Dwfl (modules reported from /proc/PID/maps) and a cache
 * keyed by pc, so each address is resolved once per recording (a cold lookup
 * costs tens of µs with DWARF, ~0.15-0.5 ms through the symbol table when a
 * module has no DWARF). Inlined calls are expanded. Never attaches to the
 * process (the caller already traces it). Not thread-safe: one thread uses a
 * ws_symbols at a time.
 */
#ifndef WS_SYMBOLS_H
#define WS_SYMBOLS_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ws_error.h"
#include "ws_frame.h"

struct ws_symbols;

/* The frames one address resolves to, innermost first: inlined callees (each
 * with inlined = true) then the containing function. All share address,
 * module and module_offset; each frame's file:line is where that function is
 * at the pc (the line table's for the innermost, the call site of the next
 * inner inlined call for the others). Names come from DWARF (the source
 * name: "__libc_write", not its alias "write"), else from the ELF symbol
 * table, less a Go ABI suffix ("runtime.goexit.abi0" is "runtime.goexit", as
 * in DWARF and Go's tracebacks); a function DWARF marks DW_AT_trampoline is
 * flagged `wrapper`. Modules without .debug_aranges (Go) are
 * covered too. nframes >= 1: an address that cannot be named yields one
 * frame with function = NULL whose module/module_offset are set when the
 * address lies in a known module. */
struct ws_location {
	size_t nframes;
	struct ws_frame frames[];
};

struct ws_finder_options;

/* Reports the modules of `pid` (which need not be stopped). Their files
 * are opened through the target's view of the filesystem, debug info
 * found in its root, then the host's, then through files->debuginfod, and
 * compressed DWARF swapped for files->debug_cache's uncompressed copies
 * (ws_finder.h; files may be NULL: neither; what it points to is borrowed
 * and must outlive symbols). */
struct ws_error *ws_symbols_create_with(pid_t pid,
					const struct ws_finder_options *files,
					struct ws_symbols **ret);

/* ws_symbols_create_with without a cache or debuginfod. */
struct ws_error *ws_symbols_create(pid_t pid, struct ws_symbols **ret);

/* Frees everything, including every ws_location handed out. NULL is fine. */
void ws_symbols_destroy(struct ws_symbols *symbols);

/* Resolves `pc`. `is_return_address`: pc is a return address (every frame but
 * the innermost of a live thread, and every frame of a saved context), so it
 * is looked up at pc - 1 to land inside the call. The result lives until
 * ws_symbols_destroy; a return address whose pc - 1 names nothing (it
 * lies in padding: a runtime's fake resume point at a function's entry) is
 * named at pc. Repeated calls with the same (pc, flag) are a hash
 * lookup (~5 ns). Cold: the first address in a module loads its debug info
 * (~0.1-0.3 s for libc, ~10 ms for a small Go program), the first in a CU
 * parses its line table (~20 µs); then ~30 µs in libc, ~10 µs in Go. Without
 * .debug_aranges (Go) the first address in the module also indexes its CUs
 * (~0.1 ms), the first in a CU its functions (~0.1 ms for Go's runtime); a
 * module whose aranges miss an address (a PLT stub) is checked once for CUs
 * they leave out (~1 ms for libc). Never fails: out of memory degrades to a
 * static unnamed frame (address 0, not cached). */
const struct ws_location *ws_symbols_lookup(struct ws_symbols *symbols,
					    uint64_t pc,
					    bool is_return_address);

/* Nanoseconds spent so far resolving addresses for the first time (cache
 * misses: loading debug info, parsing line tables), so a caller can tell
 * a tick slowed by first sights from one slowed by its steady work. */
uint64_t ws_symbols_cold_ns(const struct ws_symbols *symbols);

/* Re-reads /proc/PID/maps when new modules may have appeared (dlopen): call
 * it when a lookup found no module (frames[0].module == NULL) for an address
 * that should have one, not every tick (~0.1-0.2 ms for a dozen modules,
 * more with more mappings). Keeps the cached addresses that lay in a module;
 * forgets those that did not, so they resolve anew. Known modules stay
 * (dwfl_report_begin_add): after a dlclose, another library mapped at the
 * same addresses may be named after the old one. */
struct ws_error *ws_symbols_refresh(struct ws_symbols *symbols);

/* Finds the address of function `name` in the symbol tables of the loaded
 * modules (a linear scan: call once, not per tick). A Go assembly symbol's
 * ".abi0" suffix is ignored. False when there is none. */
bool ws_symbols_find_function(struct ws_symbols *symbols, const char *name,
			      uint64_t *address);

/* The section named `name` of a module's ELF file, or NULL (a linear scan
 * of the section headers). */
Elf_Scn *ws_module_find_section(Dwfl_Module *module, const char *name);

/* A Go module's function table, .gopclntab (".data.rel.ro.gopclntab" in a
 * position-independent binary, whose read-only data Go's linker puts in
 * relro sections), or NULL: not Go. */
Elf_Scn *ws_module_go_pclntab(Dwfl_Module *module);

/* Called for each named symbol of a module with the symbol and its
 * address in the process (dwfl_module_getsym_info: sym->st_value is left
 * as the file has it); true stops the walk. */
typedef bool (*ws_module_symbol_fn)(const char *name, const GElf_Sym *sym,
				    GElf_Addr address, void *arg);

/* Calls fn for the module's symbols in table order (its .symtab, from the
 * debug file if libdwfl finds one, else .dynsym) until fn returns true;
 * returns whether it did. A linear scan: once per module, not per tick. */
bool ws_module_each_symbol(Dwfl_Module *module, ws_module_symbol_fn fn,
			   void *arg);

/* One module of the target, for a profile's mappings. Strings live until
 * ws_symbols_destroy (name, path) or the callback returns (build_id). */
struct ws_symbols_module {
	const char *name;      /* basename, as in ws_frame.module */
	const char *path;      /* as mapped ("[vdso]" for the vDSO) */
	const char *build_id;  /* hex, NULL if none */
	uint64_t start, end;
};

/* Calls fn for each module, lowest address first (the executable before
 * its libraries, as mapped). Stops at fn's error. A walk of the Dwfl's
 * modules and a sort. */
typedef struct ws_error *(*ws_symbols_module_fn)(
	const struct ws_symbols_module *module, void *arg);
struct ws_error *ws_symbols_modules(struct ws_symbols *symbols,
				    ws_symbols_module_fn fn, void *arg);

/* The underlying Dwfl, for DWARF type lookups (ws_dwtype). Owned by symbols. */
Dwfl *ws_symbols_dwfl(struct ws_symbols *symbols);

/* Formats a frame's display name into buf: the function name, else
 * "module+0xOFFSET", else "0xADDRESS". Returns buf. */
const char *ws_frame_display_name(const struct ws_frame *frame, char *buf,
				  size_t size);

#endif
