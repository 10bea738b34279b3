/*
 * Symbolization (ws_symbols.h): turns pcs of one target process into frames
 * (function, file:line, module) with libdw, expanding inlined calls. Owns the
 * process's Dwfl, a cache keyed by (pc, is_return_address) and every string
 * and ws_location it hands out. It never attaches to the target: unwinding and
 * DWARF types belong to other modules, which borrow the Dwfl.
 *
 * libdw finds an address's CU through .debug_aranges only; modules without it
 * (Go binaries, clang's default output) get a per-module index of the CUs'
 * own ranges, built on the first address libdw cannot place.
 */
#include "ws_symbols.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One slot of the location cache; location == NULL marks an empty slot. */
struct cache_slot {
	uint64_t pc;
	bool is_return_address;
	struct ws_location *location;
};

/* One slot of the string table; str == NULL marks an empty slot. */
struct string_slot {
	uint64_t hash;
	char *str;
};

/* One address range of a CU, in the DWARF's addresses (before the module's
 * bias). */
struct cu_range {
	Dwarf_Addr low, high;	/* [low, high) */
	Dwarf_Off cu_offset;	/* of the CU DIE, for dwarf_offdie */
};

/* A module's CU ranges, sorted by low and disjoint. Built for the modules
 * where dwfl_module_addrdie missed an address (no or partial .debug_aranges);
 * nranges == 0 when the module has no DWARF or no CU has ranges. */
struct cu_index {
	Dwfl_Module *module;
	Dwarf *dwarf;
	Dwarf_Addr bias;
	struct cu_range *ranges;
	size_t nranges;
};

struct ws_symbols {
	pid_t pid;
	Dwfl *dwfl;
	/* Open addressing with linear probing; capacities are powers of two. */
	struct cache_slot *cache;
	size_t cache_capacity;
	size_t cache_count;
	struct string_slot *strings;
	size_t strings_capacity;
	size_t strings_count;
	/* Few (one per module that needed one): searched linearly. */
	struct cu_index *cu_indexes;
	size_t ncu_indexes;
};

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

/* find_elf opens each module by the path in /proc/PID/maps (or reads the
 * vDSO from memory); find_debuginfo looks in /usr/lib/debug and .build-id.
 * Callbacks must outlive the Dwfl, hence static. */
static char *debuginfo_path;
static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

/* splitmix64's finalizer: pcs of one function differ in the low bits only,
 * and the table indexes by the low bits, so mix them all. */
static uint64_t hash_pc(uint64_t pc, bool is_return_address)
{
	uint64_t x = pc ^ (is_return_address ? 0x9e3779b97f4a7c15ULL : 0);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* FNV-1a over s[0..len). */
static uint64_t hash_string(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
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
	uint64_t hash = hash_string(s, len);
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
static const char *intern(struct ws_symbols *symbols, const char *s,
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

/* ---- the CU index, for modules whose .debug_aranges miss addresses ---- */

static int compare_cu_ranges(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;
	if (x->low != y->low)
		return x->low < y->low ? -1 : 1;
	return (x->high > y->high) - (x->high < y->high);
}

/* Appends every range of every CU of index->dwarf (dwarf_ranges reads
 * DW_AT_low_pc/high_pc and DW_AT_ranges, DWARF 2 to 5), then sorts them and
 * makes them disjoint. Reads the unit headers and the CU DIEs only, not
 * their children (~0.1 ms for a Go binary's 60 CUs). Returns false on out of
 * memory. */
static bool cu_index_build(struct cu_index *index)
{
	struct cu_range *ranges = NULL;
	size_t nranges = 0, capacity = 0;
	Dwarf_CU *cu = NULL;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie;
	while (dwarf_get_units(index->dwarf, cu, &cu, &version, &unit_type,
			       &cudie, NULL) == 0) {
		/* Type units hold no code; other kinds leave cudie cleared. */
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial &&
		    unit_type != DW_UT_skeleton)
			continue;
		Dwarf_Addr base, low, high;
		ptrdiff_t offset = 0;
		while ((offset = dwarf_ranges(&cudie, offset, &base, &low,
					      &high)) > 0) {
			/* GNU ld leaves the ranges of discarded functions at
			 * 0, where they overlap each other. */
			if (low == 0 || low >= high)
				continue;
			if (nranges == capacity) {
				capacity = capacity ? capacity * 2 : 64;
				struct cu_range *grown = realloc(
					ranges, capacity * sizeof(*ranges));
				if (!grown) {
					free(ranges);
					return false;
				}
				ranges = grown;
			}
			ranges[nranges++] = (struct cu_range){
				.low = low,
				.high = high,
				.cu_offset = dwarf_dieoffset(&cudie),
			};
		}
	}
	if (nranges > 0)
		qsort(ranges, nranges, sizeof(*ranges), compare_cu_ranges);

	/* CUs do not share code, but should two ranges overlap anyway the
	 * earlier keeps the overlap, so one binary search settles every pc. */
	size_t kept = 0;
	Dwarf_Addr covered = 0;
	for (size_t i = 0; i < nranges; i++) {
		struct cu_range range = ranges[i];
		if (range.low < covered)
			range.low = covered;
		if (range.low >= range.high)
			continue;
		ranges[kept++] = range;
		covered = range.high;
	}
	index->ranges = ranges;
	index->nranges = kept;
	return true;
}

/* The CU index of `module`, built on first use (a module without DWARF gets
 * an empty one). NULL on out of memory. */
static struct cu_index *cu_index_get(struct ws_symbols *symbols,
				     Dwfl_Module *module)
{
	for (size_t i = 0; i < symbols->ncu_indexes; i++) {
		if (symbols->cu_indexes[i].module == module)
			return &symbols->cu_indexes[i];
	}
	struct cu_index index = { .module = module };
	index.dwarf = dwfl_module_getdwarf(module, &index.bias);
	if (index.dwarf && !cu_index_build(&index))
		return NULL;
	struct cu_index *grown = realloc(symbols->cu_indexes,
					 (symbols->ncu_indexes + 1) *
					 sizeof(*grown));
	if (!grown) {
		free(index.ranges);
		return NULL;
	}
	symbols->cu_indexes = grown;
	grown[symbols->ncu_indexes] = index;
	return &grown[symbols->ncu_indexes++];
}

/* Finds the CU DIE whose ranges hold `pc` (an address of the process) into
 * *cudie, and the module's bias into *bias. Returns NULL when no CU holds it;
 * on out of memory also sets *out_of_memory. */
static Dwarf_Die *cu_index_find(struct ws_symbols *symbols,
				Dwfl_Module *module, Dwarf_Addr pc,
				Dwarf_Die *cudie, Dwarf_Addr *bias,
				bool *out_of_memory)
{
	struct cu_index *index = cu_index_get(symbols, module);
	if (!index) {
		*out_of_memory = true;
		return NULL;
	}
	/* Modular, as in libdwfl: a bias may "wrap". */
	Dwarf_Addr address = pc - index->bias;
	/* The first range starting above address; the one before it is the
	 * only candidate. */
	size_t low = 0, high = index->nranges;
	while (low < high) {
		size_t mid = low + (high - low) / 2;
		if (index->ranges[mid].low <= address)
			low = mid + 1;
		else
			high = mid;
	}
	if (low == 0 || address >= index->ranges[low - 1].high)
		return NULL;
	*bias = index->bias;
	return dwarf_offdie(index->dwarf, index->ranges[low - 1].cu_offset,
			    cudie);
}

/* ---- resolving one address ---- */

/* The name of a subprogram or inlined call: DW_AT_name, following
 * DW_AT_abstract_origin and DW_AT_specification (inlined instances and
 * out-of-line clones carry no name of their own). */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
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

/* Deepest inlining that is expanded; deeper (never seen in practice) loses
 * the innermost calls. */
enum { MAX_CALL_DEPTH = 64 };

/* Appends to chain[*depth..] the DW_TAG_subprogram and
 * DW_TAG_inlined_subroutine DIEs among the descendants of `parent` that
 * contain pc, outermost first. Returns true once a DIE containing pc was
 * found (the search ends there: scopes nest, so no sibling contains it).
 *
 * One pass that descends only into scopes containing pc, skipping other
 * subtrees through DW_AT_sibling. dwarf_getscopes would not do: above the
 * innermost inlined call it continues with the scopes of the abstract
 * definition (what variable lookup wants), losing the callers; recovering
 * them with dwarf_getscopes_die walks the CU again and costs twice as much. */
static bool find_call_chain(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *chain,
			    int *depth)
{
	Dwarf_Die child;
	if (dwarf_child(parent, &child) != 0)
		return false;
	do {
		int tag = dwarf_tag(&child);
		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			if (dwarf_haspc(&child, pc) != 1)
				break;
			if (tag != DW_TAG_lexical_block &&
			    tag != DW_TAG_try_block &&
			    tag != DW_TAG_catch_block) {
				if (*depth == MAX_CALL_DEPTH)
					return true;
				chain[(*depth)++] = child;
			}
			find_call_chain(&child, pc, chain, depth);
			return true;
		case DW_TAG_namespace:
		case DW_TAG_module:
			/* No pc range of their own, but hold functions (C++,
			 * Fortran). */
			if (find_call_chain(&child, pc, chain, depth))
				return true;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* Appends the DWARF frames of `address` (in the DWARF's addresses: the pc
 * less the module's bias) in `cudie` to location: one per enclosing
 * DW_TAG_inlined_subroutine, innermost first, then the DW_TAG_subprogram.
 * `base` carries the address, module and the pc's own file:line. Returns
 * false when DWARF names no function there (then nothing was appended). On
 * out of memory sets *out_of_memory. */
static bool add_dwarf_frames(struct ws_symbols *symbols, Dwarf_Die *cudie,
			     Dwarf_Addr address, const struct ws_frame *base,
			     struct ws_location **location,
			     bool *out_of_memory)
{
	Dwarf_Die chain[MAX_CALL_DEPTH];
	int depth = 0;
	find_call_chain(cudie, address, chain, &depth);

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
		frame->function = intern(symbols, die_name(&chain[i]),
					 out_of_memory);
		frame->file = intern(symbols, file, out_of_memory);
		frame->line = line;
		frame->inlined = i != subprogram;
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

/* Resolves pc from scratch. Returns NULL on out of memory. */
static struct ws_location *resolve(struct ws_symbols *symbols, uint64_t pc,
				   bool is_return_address)
{
	/* A return address points after the call, possibly into the next
	 * line or even the next function: the call itself is one byte back. */
	Dwarf_Addr lookup_pc = is_return_address && pc > 0 ? pc - 1 : pc;
	bool out_of_memory = false;
	struct ws_frame base = { .address = pc };

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

	if (path) {
		const char *slash = strrchr(path, '/');
		base.module = intern(symbols, slash ? slash + 1 : path,
				     &out_of_memory);
	}
	base.module_offset = pc - start;

	/* The CU: libdwfl's lookup (through .debug_aranges) first, so
	 * modules that have them (gcc's output, libc) take the path they
	 * always took; our CU index for the rest (Go, clang). */
	Dwarf_Addr bias = 0;
	Dwarf_Die cudie_storage;
	Dwarf_Die *cudie = dwfl_module_addrdie(module, lookup_pc, &bias);
	const char *file = NULL;
	if (cudie) {
		Dwfl_Line *line = dwfl_module_getsrc(module, lookup_pc);
		if (line)
			file = dwfl_lineinfo(line, NULL, &base.line, NULL,
					     NULL, NULL);
	} else {
		cudie = cu_index_find(symbols, module, lookup_pc,
				      &cudie_storage, &bias, &out_of_memory);
		/* dwfl_module_getsrc goes through .debug_aranges too. */
		Dwarf_Line *line = cudie ?
			dwarf_getsrc_die(cudie, lookup_pc - bias) : NULL;
		if (line) {
			file = dwarf_linesrc(line, NULL, NULL);
			dwarf_lineno(line, &base.line);
		}
	}
	base.file = intern(symbols, file, &out_of_memory);
	if (!base.file)
		base.line = 0;

	if ((!cudie || !add_dwarf_frames(symbols, cudie, lookup_pc - bias,
					 &base, &location, &out_of_memory)) &&
	    !out_of_memory) {
		/* No DWARF function (stripped module, assembly, PLT): the
		 * symbol table, a linear scan (~0.5 ms in libc). */
		GElf_Off offset;
		GElf_Sym sym;
		const char *name = dwfl_module_addrinfo(module, lookup_pc,
							&offset, &sym, NULL,
							NULL, NULL);
		struct ws_frame *frame = &location->frames[location->nframes++];
		*frame = base;
		frame->function = name ?
			intern_prefix(symbols, name, symbol_name_length(name),
				      &out_of_memory) : NULL;
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
	struct ws_symbols *symbols = calloc(1, sizeof(*symbols));
	if (!symbols)
		return &ws_error_nomem;
	symbols->pid = pid;
	symbols->cache = calloc(CACHE_INITIAL_CAPACITY,
				sizeof(*symbols->cache));
	if (!symbols->cache) {
		free(symbols);
		return &ws_error_nomem;
	}
	symbols->cache_capacity = CACHE_INITIAL_CAPACITY;
	if (!strings_grow(symbols)) {
		ws_symbols_destroy(symbols);
		return &ws_error_nomem;
	}

	symbols->dwfl = dwfl_begin(&proc_callbacks);
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
	for (size_t i = 0; i < symbols->ncu_indexes; i++)
		free(symbols->cu_indexes[i].ranges);
	free(symbols->cu_indexes);
	if (symbols->dwfl)
		dwfl_end(symbols->dwfl);
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

	struct ws_location *location = resolve(symbols, pc, is_return_address);
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
	if (err)
		return err;
	if (!cache_rebuild(symbols, symbols->cache_capacity, is_unmapped))
		return &ws_error_nomem;
	return NULL;
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
