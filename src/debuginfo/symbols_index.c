/*
 * Where a pc lies in a module's DWARF, for symbols.c: the chain of
 * functions and inlined calls holding it, and for modules without
 * .debug_aranges (Go, clang by default) the index that finds its CU and
 * function. Owns those indexes; naming the frames, the cache and the
 * strings stay in symbols.c.
 *
 * libdw 0.188 finds an address's CU through .debug_aranges only, so the
 * first address libdw cannot place in a module builds that module's index
 * of the CUs aranges leave out (their own DW_AT_low_pc/high_pc or
 * DW_AT_ranges), and the first address in each such CU an index of its
 * functions: a cold lookup there is two binary searches and a walk of one
 * function's DIEs.
 */
#include "symbols_internal.h"

#include <dwarf.h>
#include <stdlib.h>

#include "ws_grow.h"

/* An address range [low, high) in the DWARF's addresses (before the
 * module's bias), and what lies there. */
struct addr_range {
	Dwarf_Addr low, high;
	uint64_t value;
};

/* Ranges sorted by low and disjoint once range_table_finish ran. */
struct range_table {
	struct addr_range *ranges;
	size_t count, capacity;
};

/* One CU of a module_index. */
struct indexed_cu {
	Dwarf_Off offset;	/* of the CU DIE */
	/* The outermost scopes with code (the functions: what
	 * symbols_find_call_chain enters first from the CU DIE); value is
	 * the DIE offset. Built on the CU's first lookup. */
	struct range_table scopes;
	bool scopes_built;
};

/* Where the code of a module's CUs and functions lies, for a module whose
 * .debug_aranges missed an address (Go writes none, clang by default none;
 * libdw 0.188 finds CUs through them only). Built on that first miss. */
struct module_index {
	Dwfl_Module *module;
	Dwarf *dwarf;			/* NULL: the module has no DWARF */
	Dwarf_Addr bias;
	struct range_table cu_ranges;	/* value: the index into cus */
	struct indexed_cu *cus;
	size_t ncus, cus_capacity;
};

/* ---- the chain of scopes holding a pc ---- */

/* One pass that descends only into scopes containing pc, skipping other
 * subtrees through DW_AT_sibling. dwarf_getscopes would not do: above the
 * innermost inlined call it continues with the scopes of the abstract
 * definition (what variable lookup wants), losing the callers; recovering
 * them with dwarf_getscopes_die walks the CU again and costs twice as much. */
bool symbols_find_call_chain(Dwarf_Die *parent, Dwarf_Addr pc,
			     Dwarf_Die *chain, int *depth)
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
			symbols_find_call_chain(&child, pc, chain, depth);
			return true;
		case DW_TAG_namespace:
		case DW_TAG_module:
			/* No pc range of their own, but hold functions (C++,
			 * Fortran). */
			if (symbols_find_call_chain(&child, pc, chain, depth))
				return true;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* ---- the module index: CUs and functions by address, without aranges ---- */

static bool range_table_add(struct range_table *table, Dwarf_Addr low,
			    Dwarf_Addr high, uint64_t value)
{
	if (!ws_grow((void **)&table->ranges, &table->capacity,
		     table->count + 1, sizeof(*table->ranges)))
		return false;
	table->ranges[table->count++] = (struct addr_range){
		.low = low,
		.high = high,
		.value = value,
	};
	return true;
}

/* Adds every range of `die` (dwarf_ranges: DW_AT_low_pc/high_pc or
 * DW_AT_ranges, DWARF 2 to 5) with `value`. */
static bool range_table_add_die(struct range_table *table, Dwarf_Die *die,
				uint64_t value)
{
	Dwarf_Addr base, low, high;
	ptrdiff_t offset = 0;
	while ((offset = dwarf_ranges(die, offset, &base, &low, &high)) > 0) {
		/* GNU ld leaves the ranges of discarded functions at 0, where
		 * they overlap each other. */
		if (low == 0 || low >= high)
			continue;
		if (!range_table_add(table, low, high, value))
			return false;
	}
	return true;
}

static int compare_ranges(const void *a, const void *b)
{
	const struct addr_range *x = a, *y = b;
	if (x->low != y->low)
		return x->low < y->low ? -1 : 1;
	return (x->high > y->high) - (x->high < y->high);
}

/* Sorts the table and makes it disjoint. Ranges should not overlap, but
 * should two do anyway the lower keeps the overlap, so that one binary
 * search settles every address. */
static void range_table_finish(struct range_table *table)
{
	if (table->count == 0)
		return;
	qsort(table->ranges, table->count, sizeof(table->ranges[0]),
	      compare_ranges);
	size_t kept = 0;
	Dwarf_Addr covered = 0;
	for (size_t i = 0; i < table->count; i++) {
		struct addr_range range = table->ranges[i];
		if (range.low < covered)
			range.low = covered;
		if (range.low >= range.high)
			continue;
		table->ranges[kept++] = range;
		covered = range.high;
	}
	table->count = kept;
}

/* The range holding address, or NULL. O(log count). */
static const struct addr_range *range_table_find(
	const struct range_table *table, Dwarf_Addr address)
{
	/* The first range starting above address: the one before it is the
	 * only candidate. */
	size_t low = 0, high = table->count;
	while (low < high) {
		size_t mid = low + (high - low) / 2;
		if (table->ranges[mid].low <= address)
			low = mid + 1;
		else
			high = mid;
	}
	if (low == 0 || address >= table->ranges[low - 1].high)
		return NULL;
	return &table->ranges[low - 1];
}

static int compare_offsets(const void *a, const void *b)
{
	Dwarf_Off x = *(const Dwarf_Off *)a, y = *(const Dwarf_Off *)b;
	return (x > y) - (x < y);
}

/* The CU DIE offsets .debug_aranges names, sorted (duplicates kept), in
 * *ret; *count = 0 without aranges. Returns false on out of memory. */
static bool arange_cus(Dwarf *dwarf, Dwarf_Off **ret, size_t *count)
{
	Dwarf_Aranges *aranges;
	size_t naranges;
	*ret = NULL;
	*count = 0;
	if (dwarf_getaranges(dwarf, &aranges, &naranges) != 0 ||
	    naranges == 0)
		return true;
	Dwarf_Off *offsets = malloc(naranges * sizeof(*offsets));
	if (!offsets)
		return false;
	size_t n = 0;
	for (size_t i = 0; i < naranges; i++) {
		Dwarf_Addr start;
		Dwarf_Word length;
		if (dwarf_getarangeinfo(dwarf_onearange(aranges, i), &start,
					&length, &offsets[n]) == 0)
			n++;
	}
	qsort(offsets, n, sizeof(*offsets), compare_offsets);
	*ret = offsets;
	*count = n;
	return true;
}

/* Reads the ranges of the CUs of index->dwarf that .debug_aranges leaves
 * out (all of them for Go): the unit headers and those CU DIEs only, not
 * their children. ~0.1 ms for a small Go program's 60 CUs; for a module
 * whose aranges cover every CU, an empty index for one pass over the
 * headers (~0.5-1.5 ms for libc's 2,000). Returns false on out of memory. */
static bool module_index_build(struct module_index *index)
{
	Dwarf_Off *covered;
	size_t ncovered;
	if (!arange_cus(index->dwarf, &covered, &ncovered))
		return false;

	bool ok = true;
	Dwarf_CU *cu = NULL;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie;
	while (ok && dwarf_get_units(index->dwarf, cu, &cu, &version,
				     &unit_type, &cudie, NULL) == 0) {
		/* Type units hold no code; other kinds leave cudie cleared. */
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial &&
		    unit_type != DW_UT_skeleton)
			continue;
		Dwarf_Off offset = dwarf_dieoffset(&cudie);
		if (ncovered > 0 && bsearch(&offset, covered, ncovered,
					    sizeof(*covered), compare_offsets))
			continue;
		if (!ws_grow((void **)&index->cus, &index->cus_capacity,
			     index->ncus + 1, sizeof(*index->cus))) {
			ok = false;
			break;
		}
		index->cus[index->ncus] = (struct indexed_cu){
			.offset = offset,
		};
		ok = range_table_add_die(&index->cu_ranges, &cudie,
					 index->ncus);
		index->ncus++;
	}
	free(covered);
	range_table_finish(&index->cu_ranges);
	return ok;
}

static void module_index_deinit(struct module_index *index)
{
	for (size_t i = 0; i < index->ncus; i++)
		free(index->cus[i].scopes.ranges);
	free(index->cus);
	free(index->cu_ranges.ranges);
}

void symbols_index_deinit(struct symbols_index *indexes)
{
	for (size_t i = 0; i < indexes->count; i++)
		module_index_deinit(&indexes->modules[i]);
	free(indexes->modules);
}

/* The index of `module`, built on first use (a module without DWARF gets an
 * empty one, so it is asked once). NULL on out of memory. */
static struct module_index *module_index_get(struct symbols_index *indexes,
					     Dwfl_Module *module)
{
	for (size_t i = 0; i < indexes->count; i++) {
		if (indexes->modules[i].module == module)
			return &indexes->modules[i];
	}
	struct module_index index = { .module = module };
	index.dwarf = dwfl_module_getdwarf(module, &index.bias);
	if ((index.dwarf && !module_index_build(&index)) ||
	    !ws_grow((void **)&indexes->modules, &indexes->capacity,
		     indexes->count + 1, sizeof(*indexes->modules))) {
		module_index_deinit(&index);
		return NULL;
	}
	indexes->modules[indexes->count] = index;
	return &indexes->modules[indexes->count++];
}

static bool is_scope_with_code(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
	       tag == DW_TAG_catch_block;
}

/* Adds the ranges of the scopes symbols_find_call_chain(parent) would
 * consider
 * first: parent's children with code, and those of its namespaces. */
static bool collect_scopes(Dwarf_Die *parent, struct range_table *scopes)
{
	Dwarf_Die child;
	if (dwarf_child(parent, &child) != 0)
		return true;
	do {
		int tag = dwarf_tag(&child);
		if (is_scope_with_code(tag)) {
			if (!range_table_add_die(scopes, &child,
						 dwarf_dieoffset(&child)))
				return false;
		} else if (tag == DW_TAG_namespace || tag == DW_TAG_module) {
			if (!collect_scopes(&child, scopes))
				return false;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return true;
}

/* symbols_find_call_chain(cudie, address, ...) through the CU's table of
 * scopes:
 * straight to the function, then only down its subtree. The first lookup
 * in a CU builds the table, one walk of the CU's top-level DIEs (as costly
 * as one symbols_find_call_chain from the CU: Go writes no DW_AT_sibling, so
 * stepping over a function parses all of its DIEs). Returns false on out of
 * memory. */
static bool indexed_call_chain(struct module_index *index,
			       struct indexed_cu *cu, Dwarf_Die *cudie,
			       Dwarf_Addr address, Dwarf_Die *chain,
			       int *depth)
{
	if (!cu->scopes_built) {
		if (!collect_scopes(cudie, &cu->scopes)) {
			free(cu->scopes.ranges);
			cu->scopes = (struct range_table){ 0 };
			return false;
		}
		range_table_finish(&cu->scopes);
		cu->scopes_built = true;
	}
	const struct addr_range *range = range_table_find(&cu->scopes,
							  address);
	Dwarf_Die scope;
	if (!range || !dwarf_offdie(index->dwarf, range->value, &scope))
		return true;
	int tag = dwarf_tag(&scope);
	if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
		chain[(*depth)++] = scope;
	symbols_find_call_chain(&scope, address, chain, depth);
	return true;
}

Dwarf_Die *symbols_index_lookup(struct symbols_index *indexes,
				Dwfl_Module *module, Dwarf_Addr pc,
				Dwarf_Die *cudie, Dwarf_Addr *address,
				Dwarf_Die *chain, int *depth,
				bool *out_of_memory)
{
	struct module_index *index = module_index_get(indexes, module);
	if (!index) {
		*out_of_memory = true;
		return NULL;
	}
	if (!index->dwarf)
		return NULL;
	/* Modular, as in libdwfl: a bias may "wrap". */
	*address = pc - index->bias;
	const struct addr_range *range = range_table_find(&index->cu_ranges,
							  *address);
	if (!range)
		return NULL;
	struct indexed_cu *cu = &index->cus[range->value];
	if (!dwarf_offdie(index->dwarf, cu->offset, cudie))
		return NULL;
	if (!indexed_call_chain(index, cu, cudie, *address, chain, depth))
		*out_of_memory = true;
	return cudie;
}

