/*
 * Private to the dwtype_*.c files: the program's layout and the helpers the
 * four parts share. dwtype_index.c finds things by name (module indexes),
 * dwtype_types.c knows types and member paths, dwtype.c reads objects,
 * dwtype_path.c resolves and reads paths through pointers and finds
 * globals by ELF symbol.
 * Nothing outside src/dwtype*.c includes this.
 */
#ifndef WS_DWTYPE_INTERNAL_H
#define WS_DWTYPE_INTERNAL_H

#include "ws_dwtype.h"

/* A string-keyed open-addressing hash map. Keys are (scope, extra, bytes): the
 * scope separates namespaces (a C tag, or the type DIE a path belongs to).
 * Values are indexes into arrays kept beside the map. */
struct map_slot {
	const void *scope;
	const char *key;        /* NULL: empty slot */
	uint32_t len, extra;
	uint64_t hash;
	size_t value;
};

struct map {
	struct map_slot *slots;
	size_t mask, count;
};

bool dwtype_map_get(const struct map *m, const void *scope, uint32_t extra,
		    const char *key, size_t len, size_t *value);
/* Inserts a key known to be absent; the key is borrowed. False: no memory. */
bool dwtype_map_put(struct map *m, const void *scope, uint32_t extra,
		    const char *key, size_t len, size_t value);

enum module_state { MOD_UNINDEXED, MOD_INDEXED, MOD_NO_DWARF };

struct module {
	Dwfl_Module *mod;
	const char *name;       /* path from /proc/PID/maps; owned by libdwfl */
	Dwarf *dbg;
	Dwarf_Addr bias;
	enum module_state state;
	struct map vars;        /* name -> index into prog->dies */
	struct map types;       /* (tag or 0, name) -> index into prog->dies */
	/* Variable declarations inside namespaces and classes: DIE offset
	 * (hex) -> their qualified name's index in prog->owned. */
	struct map decls;
};

/* A resolved member path piece (see resolve() in dwtype_types.c). */
struct path_entry {
	struct ws_dwfield field;
	size_t consumed;        /* path bytes covered by offsets alone */
};

struct ws_dwtype_program {
	Dwfl *dwfl;
	struct ws_memory_reader reader;
	struct module *mods;    /* the main executable first */
	size_t nmods, mods_cap;
	bool have_executable;   /* mods[0] is it */
	Dwarf_Die *dies;        /* indexed variables and types, all modules */
	size_t ndies, dies_cap;
	struct map paths;       /* (type DIE, dims, path) -> index in pathv */
	struct path_entry *pathv;
	size_t npaths, paths_cap;
	char **owned;           /* qualified names and keys the maps borrow */
	size_t nowned, owned_cap;
};

/* --- dwtype_index.c --- */

/* The scope of named constants (DW_TAG_constant) in a module's vars map. */
#define DWTYPE_CONSTANT_SCOPE ((const void *)(uintptr_t)DW_TAG_constant)

/* Finds `key` among the variables (types = false) or named types of the
 * modules matching `want` (NULL: all), indexing modules on first use. The
 * error names `what` ("variable", "type") and `full_name`. */
struct ws_error *dwtype_lookup(struct ws_dwtype_program *prog, const char *want,
			       bool types, const void *scope, const char *key,
			       const char *what, const char *full_name,
			       struct module **mod_ret, Dwarf_Die *ret);

/* Replaces a declaration-only struct/union/enum (opaque here) with its
 * definition from any module; no-op otherwise or when prog is NULL. */
void dwtype_complete(struct ws_dwtype_program *prog, Dwarf_Die *die);

/* --- dwtype_types.c --- */

/* Peels typedefs and qualifiers; false for void (including `const void`). */
bool dwtype_peel(const Dwarf_Die *in, Dwarf_Die *out);
bool dwtype_die_type(Dwarf_Die *die, Dwarf_Die *ret);
bool dwtype_die_udata(Dwarf_Die *die, int name, Dwarf_Word *ret);

enum { DWTYPE_MAX_DIMS = 16, DWTYPE_PATH_CACHE_MAX = 4096 };

/* For an array type (or row): its peeled DIE, its dimensions, the next one
 * to index, and the size of one element of that dimension. */
struct dwtype_array {
	Dwarf_Die die;
	unsigned ndims, first;
	uint64_t counts[DWTYPE_MAX_DIMS];  /* UINT64_MAX: unknown */
	uint64_t elem_size;                /* UINT64_MAX: unknown */
};

bool dwtype_array_info(struct ws_dwtype_program *prog,
		       const struct ws_dwtype *t, struct dwtype_array *a);
bool dwtype_type_size(struct ws_dwtype_program *prog,
		      const struct ws_dwtype *t, uint64_t *ret);
/* Pointee of a pointer (void: die.addr NULL), element type of an array. */
bool dwtype_target_type(struct ws_dwtype_program *prog,
			const struct ws_dwtype *t, struct ws_dwtype *ret);
/* The type's name in a 256-byte buffer, for messages. */
const char *dwtype_type_str(const struct ws_dwtype *t, char *buf);

bool dwtype_parse_index(const char *path, size_t *i, size_t len,
			uint64_t *ret);
bool dwtype_is_arrow(const char *p, size_t i, size_t len);
struct ws_error *dwtype_path_error(const char *path, size_t at,
				   const char *what);
/* Resolves path[start, end) against `base` as far as offsets go (stops
 * before "->" and before "[N]" on a pointer), through the path cache. */
struct ws_error *dwtype_resolve_cached(struct ws_dwtype_program *prog,
				       const struct ws_dwtype *base,
				       const char *path, size_t start,
				       size_t end, struct path_entry *ret);

/* --- dwtype.c --- */

void dwtype_make_object(struct ws_dwtype_program *prog,
			const struct ws_dwtype *type, uint64_t address,
			struct ws_dwobj *ret);

#endif
