/*
 * ws_dwtype, part 1 of 4: finding things by name. Owns the program object,
 * its module list (main executable first) and a lazy per-module index of
 * global variables and named types, built in one pass over each module's
 * top-level DIEs on first use (libdw 0.188 has no name index). The Dwfl is
 * borrowed from ws_symbols.
 */
#include "dwtype_internal.h"

#include <dwarf.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ws_grow.h"
#include "ws_hash.h"

/* ------------------------------------------------------------------------ */
/* The hash map (struct map in dwtype_internal.h): linear probing, at most
 * half full. */

static uint64_t map_hash(const void *scope, uint32_t extra, const char *key,
			 size_t len)
{
	return ws_hash_bytes(key, len,
			     ws_hash_u64((uint64_t)(uintptr_t)scope) ^ extra);
}

/* The slot holding the key, or the empty slot where it would go; NULL for a
 * map never inserted into. */
static struct map_slot *map_find(const struct map *m, const void *scope,
				 uint32_t extra, const char *key, size_t len,
				 uint64_t h)
{
	if (!m->slots)
		return NULL;
	for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
		struct map_slot *s = &m->slots[i];
		if (!s->key || (s->hash == h && s->scope == scope &&
				s->extra == extra && s->len == len &&
				memcmp(s->key, key, len) == 0))
			return s;
	}
}

bool dwtype_map_get(const struct map *m, const void *scope, uint32_t extra,
		    const char *key, size_t len, size_t *value)
{
	struct map_slot *s = map_find(m, scope, extra, key, len,
				      map_hash(scope, extra, key, len));
	if (!s || !s->key)
		return false;
	*value = s->value;
	return true;
}

bool dwtype_map_put(struct map *m, const void *scope, uint32_t extra,
		    const char *key, size_t len, size_t value)
{
	if (!m->slots || (m->count + 1) * 2 > m->mask + 1) {
		size_t cap = m->slots ? (m->mask + 1) * 2 : 64;
		struct map_slot *slots = ws_alloc_large(cap * sizeof(*slots));
		if (!slots)
			return false;
		struct map old = *m;
		m->slots = slots;
		m->mask = cap - 1;
		for (size_t i = 0; old.slots && i <= old.mask; i++) {
			struct map_slot *o = &old.slots[i];
			if (o->key)
				*map_find(m, o->scope, o->extra, o->key, o->len,
					  o->hash) = *o;
		}
		ws_free_large(old.slots);
	}
	uint64_t h = map_hash(scope, extra, key, len);
	struct map_slot *s = map_find(m, scope, extra, key, len, h);
	*s = (struct map_slot){ scope, key, (uint32_t)len, extra, h, value };
	m->count++;
	return true;
}

static void map_free(struct map *m, bool owned_keys)
{
	for (size_t i = 0; owned_keys && m->slots && i <= m->mask; i++)
		free((char *)m->slots[i].key);
	ws_free_large(m->slots);
}

/* ------------------------------------------------------------------------ */
/* The program and its modules. */

/* Whether a module is the main executable: ET_EXEC, or a PIE (DF_1_PIE, or
 * an interpreter and no soname: libc.so.6 has PT_INTERP too, but a soname). */
static bool module_is_executable(Dwfl_Module *mod)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	GElf_Ehdr ehdr;
	if (!elf || !gelf_getehdr(elf, &ehdr))
		return false;
	if (ehdr.e_type == ET_EXEC)
		return true;
	size_t n;
	bool interp = false, soname = false;
	if (ehdr.e_type != ET_DYN || elf_getphdrnum(elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr phdr;
		if (gelf_getphdr(elf, (int)i, &phdr) &&
		    phdr.p_type == PT_INTERP)
			interp = true;
	}
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr;
		Elf_Data *data;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNAMIC ||
		    !(data = elf_getdata(scn, NULL)) || !shdr.sh_entsize)
			continue;
		for (size_t k = 0; k < shdr.sh_size / shdr.sh_entsize; k++) {
			GElf_Dyn dyn;
			if (!gelf_getdyn(data, (int)k, &dyn))
				break;
			if (dyn.d_tag == DT_FLAGS_1 &&
			    (dyn.d_un.d_val & DF_1_PIE))
				return true;
			if (dyn.d_tag == DT_SONAME)
				soname = true;
		}
	}
	return interp && !soname;
}

static int collect_module(Dwfl_Module *mod, void **userdata, const char *name,
			  Dwarf_Addr start, void *arg)
{
	(void)userdata;
	(void)start;
	struct ws_dwtype_program *prog = arg;
	if (!ws_grow((void **)&prog->mods, &prog->mods_cap, prog->nmods + 1,
		     sizeof(*prog->mods)))
		return DWARF_CB_ABORT;
	struct module *mods = prog->mods;
	struct module m = { .mod = mod, .name = name ? name : "?" };
	mods[prog->nmods] = m;
	if (!prog->have_executable && module_is_executable(mod)) {
		prog->have_executable = true;
		mods[prog->nmods] = mods[0];
		mods[0] = m;
	}
	prog->nmods++;
	return DWARF_CB_OK;
}

struct ws_error *ws_dwtype_program_create(Dwfl *dwfl,
					  const struct ws_memory_reader *reader,
					  struct ws_dwtype_program **ret)
{
	struct ws_dwtype_program *prog = calloc(1, sizeof(*prog));
	if (!prog)
		return &ws_error_nomem;
	prog->dwfl = dwfl;
	prog->reader = *reader;
	if (dwfl_getmodules(dwfl, collect_module, prog, 0) != 0) {
		ws_dwtype_program_destroy(prog);
		return &ws_error_nomem;
	}
	*ret = prog;
	return NULL;
}

void ws_dwtype_program_destroy(struct ws_dwtype_program *prog)
{
	if (!prog)
		return;
	for (size_t i = 0; i < prog->nmods; i++) {
		map_free(&prog->mods[i].vars, false);
		map_free(&prog->mods[i].types, false);
		map_free(&prog->mods[i].decls, false);
	}
	for (size_t i = 0; i < prog->nowned; i++)
		free(prog->owned[i]);
	free(prog->owned);
	free(prog->mods);
	ws_free_large(prog->dies);
	map_free(&prog->paths, true);
	free(prog->pathv);
	free(prog);
}

void ws_dwtype_program_set_reader(struct ws_dwtype_program *prog,
				  const struct ws_memory_reader *reader)
{
	prog->reader = *reader;
}

/* ------------------------------------------------------------------------ */
/* Indexing a module: one pass over the top-level DIEs of every unit, and
 * of C++ namespaces and classes inside them. */

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

/* A string the program owns (qualified names): freed with it. */
static const char *own_string(struct ws_dwtype_program *prog, char *text)
{
	if (!text || !ws_grow((void **)&prog->owned, &prog->owned_cap,
			      prog->nowned + 1, sizeof(*prog->owned))) {
		free(text);
		return NULL;
	}
	return prog->owned[prog->nowned++] = text;
}

/* A DIE's offset as a map key (module->decls). */
static bool offset_key(Dwarf_Die *die, char key[20])
{
	return snprintf(key, 20, "%" PRIx64, (uint64_t)dwarf_dieoffset(die)) > 0;
}

/* Adds `name` for `die` to `map` under `scope` unless present; an external
 * variable definition replaces a file-static one. */
static bool index_name(struct ws_dwtype_program *prog, struct map *map,
		       const void *scope, const char *name, Dwarf_Die *die,
		       bool variable)
{
	size_t len = strlen(name), value;
	if (dwtype_map_get(map, scope, 0, name, len, &value)) {
		/* An external definition beats a file-static one. */
		if (variable &&
		    !dwarf_hasattr_integrate(&prog->dies[value], DW_AT_external) &&
		    dwarf_hasattr_integrate(die, DW_AT_external))
			prog->dies[value] = *die;
		return true;
	}
	if (!ws_grow_large((void **)&prog->dies, &prog->dies_cap,
			   prog->ndies + 1, sizeof(*prog->dies)))
		return false;
	prog->dies[prog->ndies] = *die;
	return dwtype_map_put(map, scope, 0, name, len, prog->ndies++);
}

/* How a unit names things: Go's names are unique and qualified already;
 * C++ nests names in namespaces and classes. */
enum unit_lang { LANG_C, LANG_CXX, LANG_GO };

static bool index_children(struct ws_dwtype_program *prog, struct module *m,
			   Dwarf_Die *parent, enum unit_lang lang,
			   const char *prefix, int depth);

/* Indexes one DIE of a unit's top level, or of a namespace or class
 * (`prefix` "ns::", "" at the top): by its bare name, and by its
 * qualified one inside a namespace or class. */
static bool index_die(struct ws_dwtype_program *prog, struct module *m,
		      Dwarf_Die *die, enum unit_lang lang, const char *prefix,
		      int depth)
{
	bool go = lang == LANG_GO;
	int tag = dwarf_tag(die);
	const char *name = die_name(die);
	const void *scope = NULL;
	struct map *map;
	bool variable = tag == DW_TAG_variable;

	if (tag == DW_TAG_constant) {
		/* Go's named constants ("runtime._Gwaiting"), in the
		 * variables' map under their own scope; the first wins. */
		if (!name || !dwarf_hasattr(die, DW_AT_const_value))
			return true;
		return index_name(prog, &m->vars, DWTYPE_CONSTANT_SCOPE, name, die,
				  false);
	}
	if (tag == DW_TAG_namespace) {
		char *inner = NULL;
		/* An anonymous namespace's members are named without it. */
		if (name && asprintf(&inner, "%s%s::", prefix, name) < 0)
			return false;
		bool ok = index_children(prog, m, die, lang,
					 inner ? inner : prefix, depth + 1);
		free(inner);
		return ok;
	}
	if (variable) {
		char key[20];
		Dwarf_Attribute attr;
		Dwarf_Die spec;
		size_t value;
		if (!dwarf_hasattr(die, DW_AT_location)) {
			/* A declaration in a namespace or class: its
			 * qualified name, for the definition outside
			 * (DW_AT_specification) to be found by. */
			char *full;
			if (!*prefix || !name || !offset_key(die, key))
				return true;
			if (asprintf(&full, "%s%s", prefix, name) < 0)
				return false;
			const char *q = own_string(prog, full);
			const char *k = own_string(prog, strdup(key));
			return q && k &&
			       dwtype_map_put(&m->decls, NULL, 0, k, strlen(k),
					      prog->nowned - 2);
		}
		map = &m->vars;
		if (dwarf_attr(die, DW_AT_specification, &attr) &&
		    dwarf_formref_die(&attr, &spec) && offset_key(&spec, key) &&
		    dwtype_map_get(&m->decls, NULL, 0, key, strlen(key), &value) &&
		    !index_name(prog, map, NULL, prog->owned[value], die, true))
			return false;
	} else {
		switch (tag) {
		case DW_TAG_structure_type:
		case DW_TAG_class_type:
		case DW_TAG_union_type:
		case DW_TAG_enumeration_type:
			if (dwarf_hasattr(die, DW_AT_declaration))
				return true;
			/* C tags live in their own namespaces; Go's names are
			 * already unique ("runtime.g"). */
			if (!go)
				scope = (const void *)(uintptr_t)
					(tag == DW_TAG_class_type
						 ? DW_TAG_structure_type : tag);
			break;
		case DW_TAG_typedef:
		case DW_TAG_base_type:
			break;
		case DW_TAG_pointer_type:
			/* Go names its pointers ("*runtime.g"), Crystal its
			 * reference types ("Fiber"); C compilers none. */
			break;
		case DW_TAG_array_type:
		case DW_TAG_subroutine_type:
			if (go) /* "[4]uint8", "func(...)" */
				break;
			return true;
		default:
			return true;
		}
		map = &m->types;
	}
	if (!name)
		return true;
	if (!index_name(prog, map, scope, name, die, variable))
		return false;
	if (*prefix) {
		char *full;
		if (asprintf(&full, "%s%s", prefix, name) < 0)
			return false;
		const char *q = own_string(prog, full);
		if (!q || !index_name(prog, map, scope, q, die, variable))
			return false;
	}
	/* Types and static members declared inside a C++ class. */
	if (lang == LANG_CXX && (tag == DW_TAG_structure_type ||
				 tag == DW_TAG_class_type)) {
		char *inner;
		if (asprintf(&inner, "%s%s::", prefix, name) < 0)
			return false;
		bool ok = index_children(prog, m, die, lang, inner, depth + 1);
		free(inner);
		return ok;
	}
	return true;
}

static bool index_children(struct ws_dwtype_program *prog, struct module *m,
			   Dwarf_Die *parent, enum unit_lang lang,
			   const char *prefix, int depth)
{
	Dwarf_Die child;
	if (depth > 8 || dwarf_child(parent, &child) != 0)
		return true;
	do {
		if (!index_die(prog, m, &child, lang, prefix, depth))
			return false;
	} while (dwarf_siblingof(&child, &child) == 0);
	return true;
}

static struct ws_error *module_ready(struct ws_dwtype_program *prog,
				     struct module *m)
{
	if (m->state != MOD_UNINDEXED)
		return NULL;
	m->dbg = dwfl_module_getdwarf(m->mod, &m->bias);
	if (!m->dbg) {
		m->state = MOD_NO_DWARF;
		return NULL;
	}
	Dwarf_CU *cu = NULL;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie, subdie;
	while (dwarf_get_units(m->dbg, cu, &cu, &version, &unit_type, &cudie,
			       &subdie) == 0) {
		int srclang = dwarf_srclang(&cudie);
		enum unit_lang lang = srclang == DW_LANG_Go ? LANG_GO
			: srclang == DW_LANG_C_plus_plus ||
			  srclang == DW_LANG_C_plus_plus_11 ||
			  srclang == DW_LANG_C_plus_plus_14 ? LANG_CXX
			: LANG_C;
		if (!index_children(prog, m, &cudie, lang, "", 0))
			return &ws_error_nomem;
	}
	m->state = MOD_INDEXED;
	return NULL;
}

static bool module_matches(const struct module *m, const char *want)
{
	if (!want)
		return true;
	const char *base = strrchr(m->name, '/');
	return strcmp(m->name, want) == 0 ||
	       (base && strcmp(base + 1, want) == 0);
}

/* Appends "a, b and N more modules" style lists of module names. */
static void list_modules(struct ws_dwtype_program *prog, const char *want,
			 enum module_state state, char *buf, size_t size)
{
	size_t used = 0, shown = 0, total = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < prog->nmods; i++) {
		struct module *m = &prog->mods[i];
		if (!module_matches(m, want) || m->state != state)
			continue;
		total++;
		if (shown < 3 && used < size) {
			used += snprintf(buf + used, size - used, "%s%s",
					 shown ? ", " : "", m->name);
			shown++;
		}
	}
	if (total > shown && used < size)
		snprintf(buf + used, size - used, " and %zu more modules",
			 total - shown);
}

struct ws_error *dwtype_lookup(struct ws_dwtype_program *prog, const char *want,
			       bool types, const void *scope, const char *key,
			       const char *what, const char *full_name,
			       struct module **mod_ret, Dwarf_Die *ret)
{
	size_t matched = 0, with_dwarf = 0, value;
	for (size_t i = 0; i < prog->nmods; i++) {
		struct module *m = &prog->mods[i];
		if (!module_matches(m, want))
			continue;
		matched++;
		struct ws_error *err = module_ready(prog, m);
		if (err)
			return err;
		if (m->state != MOD_INDEXED)
			continue;
		with_dwarf++;
		if (dwtype_map_get(types ? &m->types : &m->vars, scope, 0,
				   key, strlen(key), &value)) {
			*mod_ret = m;
			*ret = prog->dies[value];
			return NULL;
		}
	}
	char list[512];
	if (matched == 0)
		return ws_error_create(WS_ERR_OTHER, "no module '%s' in the target",
				       want);
	if (with_dwarf == 0) {
		list_modules(prog, want, MOD_NO_DWARF, list, sizeof(list));
		return ws_error_create(WS_ERR_NO_DEBUGINFO,
				       "no DWARF debug info in %s (looking for %s '%s')",
				       list, what, full_name);
	}
	list_modules(prog, want, MOD_INDEXED, list, sizeof(list));
	return ws_error_create(WS_ERR_NO_DEBUGINFO, "no DWARF %s '%s' in %s",
			       what, full_name, list);
}

void dwtype_complete(struct ws_dwtype_program *prog, Dwarf_Die *die)
{
	if (!prog || !dwarf_hasattr(die, DW_AT_declaration))
		return;
	const char *name = dwarf_diename(die);
	Dwarf_Die cudie;
	if (!name || !dwarf_diecu(die, &cudie, NULL, NULL))
		return;
	int tag = dwarf_tag(die);
	bool go = dwarf_srclang(&cudie) == DW_LANG_Go;
	const void *scope = go ? NULL : (const void *)(uintptr_t)
		(tag == DW_TAG_class_type ? DW_TAG_structure_type : tag);
	struct module *m;
	Dwarf_Die def;
	struct ws_error *err = dwtype_lookup(prog, NULL, true, scope, name,
					     "type", name, &m, &def);
	if (!err)
		*die = def;
	ws_error_destroy(err);
}

struct ws_error *ws_dwtype_constant(struct ws_dwtype_program *prog,
				    const char *module, const char *name,
				    int64_t *ret)
{
	struct module *m;
	Dwarf_Die die;
	struct ws_error *err = dwtype_lookup(prog, module, false,
					     DWTYPE_CONSTANT_SCOPE, name,
					     "constant", name, &m, &die);
	if (err)
		return err;
	Dwarf_Attribute attr;
	Dwarf_Sword value;
	if (dwarf_formsdata(dwarf_attr(&die, DW_AT_const_value, &attr),
			    &value) != 0)
		return ws_error_create(WS_ERR_NO_DEBUGINFO,
				       "constant '%s' in %s: %s", name,
				       m->name, dwarf_errmsg(-1));
	*ret = value;
	return NULL;
}

struct ws_error *ws_dwtype_find_type(struct ws_dwtype_program *prog,
				     const char *module, const char *name,
				     struct ws_dwtype *ret)
{
	static const struct { const char *prefix; int tag; } tags[] = {
		{ "struct ", DW_TAG_structure_type },
		{ "union ", DW_TAG_union_type },
		{ "enum ", DW_TAG_enumeration_type },
		{ "class ", DW_TAG_structure_type },
	};
	enum { NTAGS = sizeof(tags) / sizeof(tags[0]) };
	struct module *m;
	*ret = (struct ws_dwtype){ .dims_skipped = 0 };
	for (size_t i = 0; i < NTAGS; i++) {
		size_t plen = strlen(tags[i].prefix);
		const void *scope = (const void *)(uintptr_t)tags[i].tag;
		if (strncmp(name, tags[i].prefix, plen) == 0)
			return dwtype_lookup(prog, module, true, scope,
					     name + plen, "type", name, &m,
					     &ret->die);
	}
	/* A bare name: a typedef, base or Go type, else a C tag (struct,
	 * union, enum). The error reported is the first one. */
	struct ws_error *err = dwtype_lookup(prog, module, true, NULL, name,
					     "type", name, &m, &ret->die);
	for (size_t i = 0; i < NTAGS - 1 && err &&
			   err->kind == WS_ERR_NO_DEBUGINFO; i++) {
		const void *scope = (const void *)(uintptr_t)tags[i].tag;
		struct ws_error *again = dwtype_lookup(prog, module, true,
						       scope, name, "type",
						       name, &m, &ret->die);
		if (!again) {
			ws_error_destroy(err);
			return NULL;
		}
		ws_error_destroy(again);
	}
	return err;
}
