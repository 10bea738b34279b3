/*
 * Private to symbols*.c: what symbols.c (the cache and the naming of
 * frames) asks of symbols_index.c (where a pc lies in DWARF), of
 * symbols_gopclntab.c and symbols_go.c (Go's function table), and what
 * symbols_go.c and symbols_modules.c use of symbols.c (its state and
 * string table). Nothing outside src/debuginfo/symbols*.c includes this.
 */
#ifndef WS_SYMBOLS_INTERNAL_H
#define WS_SYMBOLS_INTERNAL_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Deepest inlining that is expanded; deeper (never seen in practice) loses
 * the innermost calls. */
enum { MAX_CALL_DEPTH = 64 };

/* Appends to chain[*depth..] (room for MAX_CALL_DEPTH in all) the
 * DW_TAG_subprogram and DW_TAG_inlined_subroutine DIEs among the
 * descendants of `parent` that contain pc (a DWARF address, before the
 * module's bias), outermost first. Returns true once a DIE containing pc
 * was found (the search ends there: scopes nest, so no sibling contains
 * it). Cost: one pass over the DIEs before the pc's function in parent. */
bool symbols_find_call_chain(Dwarf_Die *parent, Dwarf_Addr pc,
			     Dwarf_Die *chain, int *depth);

/* The Go function holding pc (a link-time address) in a .gopclntab
 * section's bytes (section, size), text_start the link-time address of
 * runtime.text (the .text section's; read only where the table does not
 * say, as since Go 1.23): its name (pointing into section) and
 * its entry in *entry (may be NULL); NULL when the table does not cover pc
 * or is not one of the layouts known (Go 1.16 and later). A binary search:
 * O(log functions), no allocation. */
const char *symbols_gopclntab_lookup(const void *section, size_t size,
				     uint64_t text_start, uint64_t pc,
				     uint64_t *entry);

/* A module's .gopclntab opened for whole frames (Go 1.20 on). Offsets
 * are from the start of the section. */
struct gopclntab {
	const uint8_t *data;
	size_t size;
	uint64_t text;			/* the ELF address of entry offset 0 */
	uint64_t nfunc, funcnames, cutab, filetab, pctab, functab;
	uint64_t gofunc;		/* go:func.*, where inline trees lie */
	unsigned quantum;
	uint8_t wrapper_id;		/* abi.FuncIDWrapper */
};

/* One frame of a pc, innermost first; strings point into the section. */
struct gopclntab_frame {
	const char *function, *file;
	int line;
	bool inlined, wrapper;
};

/* Opens the section (bytes at ELF address section_address; go:func.* at
 * ELF address gofunc); false for a layout other than 1.20's and later's. */
bool symbols_gopclntab_open(struct gopclntab *t, const void *section,
			    size_t size, uint64_t section_address,
			    uint64_t text_start, uint64_t gofunc);

/* The frames of ELF address pc (inlined calls first, the function last)
 * and its function's entry; 0 when the table does not cover pc. */
int symbols_gopclntab_frames(const struct gopclntab *t, uint64_t pc,
			     struct gopclntab_frame *frames, int max,
			     uint64_t *entry);

struct module_index;

/* The indexes of one Dwfl's modules, each built on the first address its
 * .debug_aranges missed. Few (one per module that needed one): searched
 * linearly, keyed by module (refresh only adds modules, never removes). */
struct symbols_index {
	struct module_index *modules;
	size_t count, capacity;
};

/* Frees every module's index; the struct may then be zeroed and reused. */
void symbols_index_deinit(struct symbols_index *indexes);

/* Finds the CU holding `pc` (a runtime address in `module`) through the
 * module's index, building it on first use (~0.1 ms for a small Go
 * program; the CU's table of functions on its first lookup, about as much):
 * its DIE in *cudie (returned), the DWARF address of pc in *address, and
 * the call chain there as symbols_find_call_chain would. Returns NULL when
 * no CU holds pc; on out of memory also sets *out_of_memory. */
Dwarf_Die *symbols_index_lookup(struct symbols_index *indexes,
				Dwfl_Module *module, Dwarf_Addr pc,
				Dwarf_Die *cudie, Dwarf_Addr *address,
				Dwarf_Die *chain, int *depth,
				bool *out_of_memory);

struct ws_finder;
struct ws_frame;
struct ws_location;

/* One slot of the location cache; location == NULL marks an empty slot. */
struct cache_slot {
	uint64_t pc;
	bool is_return_address;
	struct ws_location *location;
};

/* Whether and how a module's Go function table names whole frames. */
struct go_table {
	Dwfl_Module *module;
	bool usable;
	GElf_Addr bias;
	struct gopclntab table;
};

/* One slot of the string table; str == NULL marks an empty slot. */
struct string_slot {
	uint64_t hash;
	char *str;
};

struct ws_symbols {
	pid_t pid;
	Dwfl *dwfl;
	struct ws_finder *finder;	/* where module files come from */
	/* Open addressing with linear probing; capacities are powers of two. */
	struct cache_slot *cache;
	size_t cache_capacity;
	size_t cache_count;
	struct string_slot *strings;
	size_t strings_capacity;
	size_t strings_count;
	struct symbols_index index;	/* for modules without aranges */
	struct go_table *go_tables;	/* modules' .gopclntab, opened once */
	size_t ngo_tables, go_tables_cap;
	uint64_t cold_ns;		/* time in resolve(), summed */
};

/* Returns the string table's copy of s (NULL for NULL); valid until
 * ws_symbols_destroy. On out of memory returns NULL and sets
 * *out_of_memory, so the caller can tell "unknown" from "failed". */
const char *symbols_intern(struct ws_symbols *symbols, const char *s,
			   bool *out_of_memory);

/* The name frames give a module, from its path: its basename, or "[vdso]"
 * for the vDSO (no PID in the name). Points into path or is static. */
const char *symbols_module_basename(const char *path);

/* A Go function's name from the module's .gopclntab for pcs the symbol
 * table misses (lookup_pc: pc, or pc - 1 for a return address), interned;
 * NULL when no table covers it. Cold lookups only. */
const char *symbols_go_function(struct ws_symbols *symbols,
				Dwfl_Module *module, Dwarf_Addr lookup_pc,
				Dwarf_Addr pc, bool *out_of_memory);

/* Names the frames of pc from the module's .gopclntab (Go 1.20 on) into
 * *location (reallocated to fit; each frame starts as *base). False when
 * the table cannot: then DWARF decides. On out of memory sets
 * *out_of_memory. */
bool symbols_go_frames(struct ws_symbols *symbols, Dwfl_Module *module,
		       Dwarf_Addr lookup_pc, Dwarf_Addr pc,
		       const struct ws_frame *base,
		       struct ws_location **location, bool *out_of_memory);

#endif
