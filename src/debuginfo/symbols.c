/*
 * Symbolization (ws_symbols.h): turns pcs of one target process into frames
 * (function, file:line, module) with libdw, expanding inlined calls. Owns the
 * process's Dwfl, a cache keyed by (pc, is_return_address) and every string
 * and ws_location it hands out. Finding the scopes that hold a pc (and the
 * index for modules without .debug_aranges) is symbols_index.c's, naming
 * Go code from its .gopclntab symbols_go.c's, and questions about modules
 * (sections, a function by name, the module list) symbols_modules.c's. It
 * never attaches to the target: unwinding and DWARF types belong to other
 * modules, which borrow the Dwfl.
 */
#include "ws_symbols.h"

#include "symbols_internal.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <inttypes.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ws_clock.h"
#include "ws_debugcache.h"
#include "ws_finder.h"
#include "ws_hash.h"

enum {
	CACHE_INITIAL_CAPACITY = 1024,
	STRINGS_INITIAL_CAPACITY = 256,
};

/* What a lookup returns when memory runs out: one frame with nothing known.
 * Not cached, so the address is resolved again once memory is back. */
static const struct ws_location nomem_location = {
	.nframes = 1,
	.frames = { { .function = NULL } },
};

/* pcs of one function differ in the low bits only, and the table indexes
 * by the low bits: ws_hash_u64 spreads them. */
static uint64_t hash_pc(uint64_t pc, bool is_return_address)
{
	return ws_hash_u64(pc ^ (is_return_address ? 0x9e3779b97f4a7c15ULL : 0));
}

/* ---- the string table: names and paths, each stored once ---- */

static bool strings_grow(struct ws_symbols *symbols)
{
	size_t capacity = symbols->strings_capacity ?
		symbols->strings_capacity * 2 : STRINGS_INITIAL_CAPACITY;
	struct string_slot *slots = calloc(capacity, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t i = 0; i < symbols->strings_capacity; i++) {
		struct string_slot *old = &symbols->strings[i];
		if (!old->str)
			continue;
		size_t j = old->hash & (capacity - 1);
		while (slots[j].str)
			j = (j + 1) & (capacity - 1);
		slots[j] = *old;
	}
	free(symbols->strings);
	symbols->strings = slots;
	symbols->strings_capacity = capacity;
	return true;
}

/* Returns the table's copy of s[0..len) (s need not end there). On out of
 * memory returns NULL and sets *out_of_memory. */
static const char *intern_prefix(struct ws_symbols *symbols, const char *s,
				 size_t len, bool *out_of_memory)
{
	/* Keep the load at most 3/4 so probe sequences stay short. */
	if ((symbols->strings_count + 1) * 4 > symbols->strings_capacity * 3 &&
	    !strings_grow(symbols)) {
		*out_of_memory = true;
		return NULL;
	}
	uint64_t hash = ws_hash_bytes(s, len, 0);
	size_t mask = symbols->strings_capacity - 1;
	size_t i = hash & mask;
	for (; symbols->strings[i].str; i = (i + 1) & mask) {
		const char *str = symbols->strings[i].str;
		if (symbols->strings[i].hash == hash &&
		    strncmp(str, s, len) == 0 && str[len] == '\0')
			return str;
	}
	char *copy = strndup(s, len);
	if (!copy) {
		*out_of_memory = true;
		return NULL;
	}
	symbols->strings[i] = (struct string_slot){ .hash = hash, .str = copy };
	symbols->strings_count++;
	return copy;
}

/* Returns the table's copy of s (NULL for NULL). On out of memory returns
 * NULL and sets *out_of_memory, so the caller can tell "unknown" from
 * "failed". */
const char *symbols_intern(struct ws_symbols *symbols, const char *s,
			   bool *out_of_memory)
{
	return s ? intern_prefix(symbols, s, strlen(s), out_of_memory) : NULL;
}

/* ---- the location cache ---- */

/* Returns the slot holding (pc, flag), or the empty slot where it belongs. */
static struct cache_slot *cache_slot(struct ws_symbols *symbols, uint64_t pc,
				     bool is_return_address)
{
	size_t mask = symbols->cache_capacity - 1;
	size_t i = hash_pc(pc, is_return_address) & mask;
	for (;; i = (i + 1) & mask) {
		struct cache_slot *slot = &symbols->cache[i];
		if (!slot->location ||
		    (slot->pc == pc &&
		     slot->is_return_address == is_return_address))
			return slot;
	}
}

/* Rehashes into a table of `capacity` slots, dropping (and freeing) the
 * entries `drop` selects. */
static bool cache_rebuild(struct ws_symbols *symbols, size_t capacity,
			  bool (*drop)(const struct ws_location *))
{
	struct cache_slot *slots = calloc(capacity, sizeof(*slots));
	if (!slots)
		return false;
	struct cache_slot *old = symbols->cache;
	size_t old_capacity = symbols->cache_capacity;
	symbols->cache = slots;
	symbols->cache_capacity = capacity;
	symbols->cache_count = 0;
	for (size_t i = 0; i < old_capacity; i++) {
		if (!old[i].location)
			continue;
		if (drop && drop(old[i].location)) {
			free(old[i].location);
			continue;
		}
		*cache_slot(symbols, old[i].pc, old[i].is_return_address) =
			old[i];
		symbols->cache_count++;
	}
	free(old);
	return true;
}

/* ---- DWARF: names and call sites ---- */

/* The name of a subprogram or inlined call: DW_AT_name, following
 * DW_AT_abstract_origin and DW_AT_specification (inlined instances and
 * out-of-line clones carry no name of their own). */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

/* Its mangled name (C++, Rust), found the same way; NULL for C and Go. */
static const char *die_linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = dwarf_formstring(
		dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(
			dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	return name;
}

/* ---- demangling ---- */

/* Whether a symbol is mangled the Itanium C++ way (also Rust's legacy
 * scheme) or Rust's v0 way: only those are handed to the demangler, so a
 * C or Go name is never taken for another language's. */
static bool is_mangled(const char *name)
{
	return name && name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

/* The demangled form of `mangled` ("app::Worker::wait_for_job(int)",
 * "<r::app::Worker>::wait_for_job", legacy Rust without its ::h<hash>),
 * interned; NULL when it is not mangled or the demangler gives up.
 * libiberty's cplus_demangle, the demangler of binutils and gdb: it reads
 * C++ and both Rust schemes (libstdc++'s __cxa_demangle reads neither Rust
 * v0 nor legacy Rust's escapes and hash). ~1-10 us, on cold lookups only. */
static const char *demangle(struct ws_symbols *symbols, const char *mangled,
			    bool *out_of_memory)
{
	if (!is_mangled(mangled))
		return NULL;
	char *plain = cplus_demangle(mangled, DMGL_PARAMS | DMGL_ANSI |
						      DMGL_AUTO);
	if (!plain)
		return NULL;
	const char *kept = symbols_intern(symbols, plain, out_of_memory);
	free(plain);
	return kept;
}

/* Where an inlined call was made: DW_AT_call_file (an index into the line
 * table's file list of the DIE's own CU) and DW_AT_call_line. */
static void call_site(Dwarf_Die *inlined, const char **file, int *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word value;

	*file = NULL;
	*line = 0;
	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr),
			    &value) == 0)
		*line = (int)value;

	Dwarf_Die cudie;
	Dwarf_Files *files;
	size_t nfiles;
	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr),
			    &value) == 0 &&
	    dwarf_diecu(inlined, &cudie, NULL, NULL) &&
	    dwarf_getsrcfiles(&cudie, &files, &nfiles) == 0 &&
	    value < nfiles)
		*file = dwarf_filesrc(files, value, NULL, NULL);
}

static struct ws_location *location_alloc(size_t capacity)
{
	struct ws_location *location = malloc(sizeof(*location) +
					      capacity *
					      sizeof(location->frames[0]));
	if (location)
		location->nframes = 0;
	return location;
}

/* The CU of die is C++ (whose functions without a linkage name, such as
 * a lambda's operator() inside a function, still belong to a class). */
static bool in_cplusplus(Dwarf_Die *die)
{
	Dwarf_Die cu;
	if (!dwarf_diecu(die, &cu, NULL, NULL))
		return false;
	int lang = dwarf_srclang(&cu);
	return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
	       lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

/* A C++ function without a linkage name, qualified by the scopes its
 * declaration sits in: "main()::(anonymous class)::operator()" (a lambda
 * in main) rather than "operator()". NULL when it is not C++ or has no enclosing named scope.
 * dwarf_getscopes_die walks the CU from its start: cold lookups only. */
static const char *scoped_name(struct ws_symbols *symbols, Dwarf_Die *die,
			       bool *out_of_memory)
{
	if (!in_cplusplus(die))
		return NULL;
	/* From an inlined or out-of-line instance to the declaration. */
	Dwarf_Die decl = *die, next;
	Dwarf_Attribute attr;
	for (int hops = 0; hops < 8; hops++) {
		if (dwarf_formref_die(dwarf_attr(&decl, DW_AT_abstract_origin, &attr),
				      &next) ||
		    dwarf_formref_die(dwarf_attr(&decl, DW_AT_specification, &attr),
				      &next))
			decl = next;
		else
			break;
	}
	const char *own = die_name(&decl);
	Dwarf_Die *scopes = NULL;
	int n = own ? dwarf_getscopes_die(&decl, &scopes) : 0;
	char name[1024];
	size_t len = 0;
	/* scopes[0] is decl, scopes[n - 1] the CU: the ones between,
	 * outermost first. */
	for (int k = n - 2; k >= 1; k--) {
		int tag = dwarf_tag(&scopes[k]);
		if (tag != DW_TAG_namespace && tag != DW_TAG_class_type &&
		    tag != DW_TAG_structure_type && tag != DW_TAG_union_type &&
		    tag != DW_TAG_subprogram)
			continue;
		const char *part = die_name(&scopes[k]);
		if (!part)
			part = tag == DW_TAG_namespace ? "(anonymous namespace)"
						       : "(anonymous class)";
		/* A function's own scope reads as c++filt writes it. */
		int w = snprintf(name + len, sizeof(name) - len, "%s%s::", part,
				 tag == DW_TAG_subprogram ? "()" : "");
		if (w < 0 || (size_t)w >= sizeof(name) - len)
			break;
		len += (size_t)w;
	}
	free(scopes);
	if (len == 0)
		return NULL;
	snprintf(name + len, sizeof(name) - len, "%s", own);
	return symbols_intern(symbols, name, out_of_memory);
}

/* ---- resolving one address ---- */

/* Appends to location the frames of a call chain (as
 * symbols_find_call_chain leaves it, outermost first): one per DW_TAG_inlined_subroutine inside the
 * innermost DW_TAG_subprogram, innermost first, then that subprogram.
 * `base` carries the address, module and the pc's own file:line. Returns
 * false when the chain names no function (then nothing was appended). On
 * out of memory sets *out_of_memory. */
static bool add_dwarf_frames(struct ws_symbols *symbols, Dwarf_Die *chain,
			     int depth, const struct ws_frame *base,
			     struct ws_location **location,
			     bool *out_of_memory)
{
	/* The innermost subprogram is the function (one nested in another,
	 * GNU C, holds the pc without the outer one's code around it). */
	int subprogram = -1;
	for (int i = depth - 1; i >= 0 && subprogram < 0; i--) {
		if (dwarf_tag(&chain[i]) == DW_TAG_subprogram)
			subprogram = i;
	}
	if (subprogram < 0 || !die_name(&chain[subprogram]))
		return false;

	size_t nframes = (size_t)(depth - subprogram);
	/* Not ws_grow: a location is a header and its frames in one block,
	 * sized exactly (it lives as long as the cache, one per pc). */
	struct ws_location *grown = realloc(*location, sizeof(**location) +
					    nframes *
					    sizeof(grown->frames[0]));
	if (!grown) {
		*out_of_memory = true;
		return false;
	}
	*location = grown;

	/* Each frame's file:line is where the pc is in that function: the line
	 * table's for the innermost, the call site of the inlined call just
	 * inside it for the others. */
	const char *file = base->file;
	int line = base->line;
	for (int i = depth - 1; i >= subprogram; i--) {
		struct ws_frame *frame = &grown->frames[grown->nframes++];
		*frame = *base;
		/* C++ and Rust: the qualified name the linkage name spells
		 * (the DIE's own is the bare "wait_for_job"). */
		const char *linkage = die_linkage_name(&chain[i]);
		frame->linkage_name = symbols_intern(symbols, linkage, out_of_memory);
		frame->function = demangle(symbols, linkage, out_of_memory);
		if (!frame->function && !linkage)
			frame->function = scoped_name(symbols, &chain[i],
						      out_of_memory);
		if (!frame->function)
			frame->function = symbols_intern(symbols, die_name(&chain[i]),
						 out_of_memory);
		frame->file = symbols_intern(symbols, file, out_of_memory);
		frame->line = line;
		frame->inlined = i != subprogram;
		/* Go marks its go-statement and method wrappers so. */
		frame->wrapper = dwarf_hasattr_integrate(&chain[i],
							 DW_AT_trampoline);
		if (frame->inlined)
			call_site(&chain[i], &file, &line);
	}
	return true;
}

/* The length of an ELF symbol's name without a Go ABI suffix: Go's
 * assembly functions (and their ABI wrappers) are "runtime.goexit.abi0" in
 * the symbol table, "runtime.goexit" in DWARF and in Go's tracebacks. */
static size_t symbol_name_length(const char *name)
{
	static const char *const suffixes[] = { ".abi0", ".abiinternal" };
	size_t length = strlen(name);
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t n = strlen(suffixes[i]);
		if (length > n &&
		    strcmp(name + length - n, suffixes[i]) == 0)
			return length - n;
	}
	return length;
}

/* The name frames give a module: its file's basename, and "[vdso]" for
 * the vDSO, which libdwfl reports as "[vdso: PID]" (a PID in a name makes
 * the same code a different frame in every run). */
const char *symbols_module_basename(const char *path)
{
	if (strncmp(path, "[vdso", 5) == 0)
		return "[vdso]";
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Code no symbol covers (a static function of a stripped library, the
 * vDSO's helpers): named after its module and the start of its function
 * as the unwind tables (CFI) delimit it, "libfoo.so+0x1110", so that all
 * its pcs are one frame; NULL when no CFI covers pc either (the frame is
 * then named after its own offset). ~1 us, on cold lookups only. */
static const char *unnamed_function(struct ws_symbols *symbols,
				    Dwfl_Module *module, Dwarf_Addr module_start,
				    Dwarf_Addr pc, bool *out_of_memory)
{
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(module, &bias);
	Dwarf_Frame *frame;
	if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0) {
		cfi = dwfl_module_dwarf_cfi(module, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0)
			return NULL;
	}
	Dwarf_Addr start, end;
	bool signal;
	dwarf_frame_info(frame, &start, &end, &signal);
	free(frame);
	const char *path = dwfl_module_info(module, NULL, NULL, NULL, NULL,
					    NULL, NULL, NULL);
	char name[512];
	snprintf(name, sizeof(name), "%s+0x%" PRIx64,
		 path ? symbols_module_basename(path) : "?",
		 (uint64_t)(start + bias - module_start));
	return symbols_intern(symbols, name, out_of_memory);
}

/* Resolves pc from scratch. Returns NULL on out of memory. */
static struct ws_location *resolve(struct ws_symbols *symbols, uint64_t pc,
				   bool is_return_address)
{
	/* A return address points after the call, possibly into the next
	 * line or even the next function: the call itself is one byte back. */
	Dwarf_Addr lookup_pc = is_return_address && pc > 0 ? pc - 1 : pc;
	bool out_of_memory = false;
	struct ws_frame base = { .address = pc,
				 .return_address = is_return_address };

	struct ws_location *location = location_alloc(1);
	if (!location)
		return NULL;

	/* dwfl_addrmodule answers with the nearest module below the address:
	 * the gap up to the next module (heap, stacks, JIT code, a library
	 * loaded since) counts as the lower module's. Check containment. */
	Dwfl_Module *module = dwfl_addrmodule(symbols->dwfl, lookup_pc);
	Dwarf_Addr start = 0, end = 0;
	const char *path = NULL;
	if (module)
		path = dwfl_module_info(module, NULL, &start, &end, NULL, NULL,
					NULL, NULL);
	if (!module || lookup_pc < start || lookup_pc >= end) {
		location->frames[location->nframes++] = base;
		return location;
	}

	if (path)
		base.module = symbols_intern(symbols, symbols_module_basename(path),
				     &out_of_memory);
	base.module_offset = pc - start;
	if (symbols_go_frames(symbols, module, lookup_pc, pc, &base, &location,
		      &out_of_memory)) {
		if (!out_of_memory)
			return location;
		free(location);
		return NULL;
	}
	if (out_of_memory) {
		free(location);
		return NULL;
	}

	/* The CU and the call chain: libdwfl's lookup (through
	 * .debug_aranges) first, so modules that have them (gcc's output,
	 * libc) take the path they always took; the module index for the
	 * rest (Go, clang). */
	Dwarf_Die chain[MAX_CALL_DEPTH];
	int depth = 0;
	Dwarf_Addr bias;
	const char *file = NULL;
	Dwarf_Die *cudie = dwfl_module_addrdie(module, lookup_pc, &bias);
	/* libdwfl 0.188 answers with the arange at or below the address
	 * without checking its end: in a module whose aranges cover only
	 * some CUs (a cgo binary: gcc's CUs have them, Go's none) an address
	 * of Go code lands in the C CU before it. Such a CU does not hold
	 * the address: the module index decides. */
	if (cudie && dwarf_haspc(cudie, lookup_pc - bias) <= 0)
		cudie = NULL;
	if (cudie) {
		Dwfl_Line *line = dwfl_module_getsrc(module, lookup_pc);
		if (line)
			file = dwfl_lineinfo(line, NULL, &base.line, NULL,
					     NULL, NULL);
		symbols_find_call_chain(cudie, lookup_pc - bias, chain,
					&depth);
	} else {
		Dwarf_Die cudie_storage;
		Dwarf_Addr address;
		cudie = symbols_index_lookup(&symbols->index, module,
					     lookup_pc, &cudie_storage,
					     &address, chain, &depth,
					     &out_of_memory);
		/* dwfl_module_getsrc goes through .debug_aranges too. */
		Dwarf_Line *line = cudie ?
			dwarf_getsrc_die(cudie, address) : NULL;
		if (line) {
			file = dwarf_linesrc(line, NULL, NULL);
			dwarf_lineno(line, &base.line);
		}
	}
	base.file = symbols_intern(symbols, file, &out_of_memory);
	if (!base.file)
		base.line = 0;

	if (!add_dwarf_frames(symbols, chain, depth, &base, &location,
			      &out_of_memory) && !out_of_memory) {
		/* No DWARF function (stripped module, assembly, PLT): the
		 * symbol table, a linear scan (~0.5 ms in libc), then Go's
		 * function table. */
		GElf_Off offset;
		GElf_Sym sym;
		const char *name = dwfl_module_addrinfo(module, lookup_pc,
							&offset, &sym, NULL,
							NULL, NULL);
		struct ws_frame *frame = &location->frames[location->nframes++];
		*frame = base;
		if (is_mangled(name)) {
			frame->linkage_name = symbols_intern(symbols, name, &out_of_memory);
			frame->function = demangle(symbols, name, &out_of_memory);
		}
		if (name && !frame->function)
			frame->function = intern_prefix(symbols, name,
							symbol_name_length(name),
							&out_of_memory);
		if (!name)
			frame->function = symbols_go_function(symbols, module,
						      lookup_pc, pc,
						      &out_of_memory);
		if (!name && !frame->function)
			frame->function = unnamed_function(symbols, module,
							   start, lookup_pc,
							   &out_of_memory);
	}

	if (out_of_memory) {
		free(location);
		return NULL;
	}
	return location;
}

/* ---- public interface ---- */

/* Maps the result of dwfl_linux_proc_report (0, an errno, or -1 for a
 * libdwfl error) to an error. */
static struct ws_error *report_error(int rc, pid_t pid)
{
	if (rc == 0)
		return NULL;
	if (rc == ENOENT)
		return ws_error_create(WS_ERR_NO_PROCESS,
				       "read modules of process %d: no such "
				       "process", (int)pid);
	if (rc > 0)
		return ws_error_from_errno(rc, WS_ERR_OTHER,
					   "read modules of process %d",
					   (int)pid);
	return ws_error_create(WS_ERR_OTHER, "read modules of process %d: %s",
			       (int)pid, dwfl_errmsg(-1));
}

struct ws_error *ws_symbols_create(pid_t pid, struct ws_symbols **ret)
{
	return ws_symbols_create_with(pid, NULL, ret);
}

struct ws_error *ws_symbols_create_with(pid_t pid,
					const struct ws_finder_options *files,
					struct ws_symbols **ret)
{
	struct ws_symbols *symbols = calloc(1, sizeof(*symbols));
	if (!symbols)
		return &ws_error_nomem;
	symbols->pid = pid;
	struct ws_error *ferr = ws_finder_create(pid, files, &symbols->finder);
	if (ferr) {
		free(symbols);
		return ferr;
	}
	symbols->cache = calloc(CACHE_INITIAL_CAPACITY,
				sizeof(*symbols->cache));
	if (!symbols->cache) {
		ws_symbols_destroy(symbols);
		return &ws_error_nomem;
	}
	symbols->cache_capacity = CACHE_INITIAL_CAPACITY;
	if (!strings_grow(symbols)) {
		ws_symbols_destroy(symbols);
		return &ws_error_nomem;
	}

	symbols->dwfl = dwfl_begin(ws_finder_callbacks());
	if (!symbols->dwfl) {
		ws_symbols_destroy(symbols);
		return ws_error_create(WS_ERR_OTHER, "dwfl_begin: %s",
				       dwfl_errmsg(-1));
	}
	/* Only the module list: no dwfl_linux_proc_attach, whose
	 * PTRACE_ATTACH fails on threads the caller has already seized. */
	dwfl_report_begin(symbols->dwfl);
	int rc = dwfl_linux_proc_report(symbols->dwfl, pid);
	struct ws_error *err = report_error(rc, pid);
	if (dwfl_report_end(symbols->dwfl, NULL, NULL) != 0 && !err)
		err = ws_error_create(WS_ERR_OTHER,
				      "read modules of process %d: %s",
				      (int)pid, dwfl_errmsg(-1));
	if (err) {
		ws_symbols_destroy(symbols);
		return err;
	}
	ws_finder_attach(symbols->finder, symbols->dwfl);
	*ret = symbols;
	return NULL;
}

void ws_symbols_destroy(struct ws_symbols *symbols)
{
	if (!symbols)
		return;
	for (size_t i = 0; i < symbols->cache_capacity; i++)
		free(symbols->cache[i].location);
	free(symbols->cache);
	for (size_t i = 0; i < symbols->strings_capacity; i++)
		free(symbols->strings[i].str);
	free(symbols->strings);
	symbols_index_deinit(&symbols->index);
	free(symbols->go_tables);
	if (symbols->dwfl)
		dwfl_end(symbols->dwfl);
	ws_finder_destroy(symbols->finder);
	free(symbols);
}

const struct ws_location *ws_symbols_lookup(struct ws_symbols *symbols,
					    uint64_t pc,
					    bool is_return_address)
{
	struct cache_slot *slot = cache_slot(symbols, pc, is_return_address);
	if (slot->location)
		return slot->location;

	/* Grow before resolving, so a new location always finds a home (the
	 * caller does not own it and could not free it). Load at most 3/4. */
	if ((symbols->cache_count + 1) * 4 > symbols->cache_capacity * 3) {
		if (!cache_rebuild(symbols, symbols->cache_capacity * 2, NULL))
			return &nomem_location;
		slot = cache_slot(symbols, pc, is_return_address);
	}

	uint64_t cold_start = ws_now_ns();
	struct ws_location *location = resolve(symbols, pc, is_return_address);
	/* A "return address" whose byte before belongs to no function (the
	 * padding before a function's entry) was never one: a runtime saved
	 * a function's entry as a fake resume point (Go 1.19's g.sched.pc =
	 * runtime.systemstack_switch while on the system stack). Named at
	 * the pc itself. */
	if (location && is_return_address && !location->frames[0].function &&
	    location->frames[0].module) {
		struct ws_location *at_pc = resolve(symbols, pc, false);
		if (at_pc && at_pc->frames[0].function) {
			free(location);
			location = at_pc;
		} else {
			free(at_pc);
		}
	}
	symbols->cold_ns += ws_now_ns() - cold_start;
	if (!location)
		return &nomem_location;
	*slot = (struct cache_slot){
		.pc = pc,
		.is_return_address = is_return_address,
		.location = location,
	};
	symbols->cache_count++;
	return location;
}

/* Addresses outside every module may belong to a library loaded since. */
static bool is_unmapped(const struct ws_location *location)
{
	return location->frames[0].module == NULL;
}

struct ws_error *ws_symbols_refresh(struct ws_symbols *symbols)
{
	/* begin_add keeps the modules already known (and their loaded debug
	 * info); re-reported ones are matched by name and range. */
	dwfl_report_begin_add(symbols->dwfl);
	int rc = dwfl_linux_proc_report(symbols->dwfl, symbols->pid);
	struct ws_error *err = report_error(rc, symbols->pid);
	if (dwfl_report_end(symbols->dwfl, NULL, NULL) != 0 && !err)
		err = ws_error_create(WS_ERR_OTHER,
				      "read modules of process %d: %s",
				      (int)symbols->pid, dwfl_errmsg(-1));
	/* Modules new since the last report have no finder yet. */
	ws_finder_attach(symbols->finder, symbols->dwfl);
	if (err)
		return err;
	if (!cache_rebuild(symbols, symbols->cache_capacity, is_unmapped))
		return &ws_error_nomem;
	return NULL;
}

uint64_t ws_symbols_cold_ns(const struct ws_symbols *symbols)
{
	return symbols->cold_ns;
}

Dwfl *ws_symbols_dwfl(struct ws_symbols *symbols)
{
	return symbols->dwfl;
}

const char *ws_frame_display_name(const struct ws_frame *frame, char *buf,
				  size_t size)
{
	if (size == 0)
		return buf;
	if (frame->function)
		snprintf(buf, size, "%s", frame->function);
	else if (frame->module)
		snprintf(buf, size, "%s+0x%" PRIx64, frame->module,
			 frame->module_offset);
	else
		snprintf(buf, size, "0x%" PRIx64, frame->address);
	return buf;
}
