/*
 * Symbolization (ws_symbols.h): turns pcs of one target process into frames
 * (function, file:line, module) with libdw, expanding inlined calls. Owns the
 * process's Dwfl, a cache keyed by (pc, is_return_address) and every string
 * and ws_location it hands out. It never attaches to the target: unwinding and
 * DWARF types belong to other modules, which borrow the Dwfl.
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

/* FNV-1a. */
static uint64_t hash_string(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
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

/* Returns the table's copy of s (NULL for NULL). On out of memory returns
 * NULL and sets *out_of_memory, so the caller can tell "unknown" from
 * "failed". */
static const char *intern(struct ws_symbols *symbols, const char *s,
			  bool *out_of_memory)
{
	if (!s)
		return NULL;
	/* Keep the load at most 3/4 so probe sequences stay short. */
	if ((symbols->strings_count + 1) * 4 > symbols->strings_capacity * 3 &&
	    !strings_grow(symbols)) {
		*out_of_memory = true;
		return NULL;
	}
	uint64_t hash = hash_string(s);
	size_t mask = symbols->strings_capacity - 1;
	size_t i = hash & mask;
	for (; symbols->strings[i].str; i = (i + 1) & mask) {
		if (symbols->strings[i].hash == hash &&
		    strcmp(symbols->strings[i].str, s) == 0)
			return symbols->strings[i].str;
	}
	char *copy = strdup(s);
	if (!copy) {
		*out_of_memory = true;
		return NULL;
	}
	symbols->strings[i] = (struct string_slot){ .hash = hash, .str = copy };
	symbols->strings_count++;
	return copy;
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

/* Appends the DWARF frames of `lookup_pc` to location: one per enclosing
 * DW_TAG_inlined_subroutine, innermost first, then the DW_TAG_subprogram.
 * `base` carries the address, module and the pc's own file:line. Returns
 * false when DWARF names no function there (then nothing was appended). On
 * out of memory sets *out_of_memory. */
static bool add_dwarf_frames(struct ws_symbols *symbols, Dwfl_Module *module,
			     Dwarf_Addr lookup_pc, const struct ws_frame *base,
			     struct ws_location **location,
			     bool *out_of_memory)
{
	Dwarf_Addr bias;
	Dwarf_Die *cudie = dwfl_module_addrdie(module, lookup_pc, &bias);
	if (!cudie)
		return false;

	Dwarf_Die chain[MAX_CALL_DEPTH];
	int depth = 0;
	find_call_chain(cudie, lookup_pc - bias, chain, &depth);

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

	Dwfl_Line *line = dwfl_module_getsrc(module, lookup_pc);
	if (line) {
		const char *file = dwfl_lineinfo(line, NULL, &base.line, NULL,
						 NULL, NULL);
		base.file = intern(symbols, file, &out_of_memory);
		if (!base.file)
			base.line = 0;
	}

	if (!add_dwarf_frames(symbols, module, lookup_pc, &base, &location,
			      &out_of_memory) && !out_of_memory) {
		/* No DWARF function (stripped module, assembly, PLT): the
		 * symbol table, a linear scan (~0.5 ms in libc). */
		GElf_Off offset;
		GElf_Sym sym;
		const char *name = dwfl_module_addrinfo(module, lookup_pc,
							&offset, &sym, NULL,
							NULL, NULL);
		struct ws_frame *frame = &location->frames[location->nframes++];
		*frame = base;
		frame->function = intern(symbols, name, &out_of_memory);
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
