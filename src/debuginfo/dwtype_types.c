/*
 * ws_dwtype, part 2 of 4: types and member paths. Peeling, kinds, sizes,
 * array dimensions and names for messages; member paths resolved against a
 * type once and cached per (type, path), so an adapter asking for
 * "sched.sp" on 100k goroutines walks DWARF once. Reads no memory.
 */
#include "dwtype_internal.h"

#include <dwarf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ws_grow.h"

/* ------------------------------------------------------------------------ */
/* Types. */

/* Peels typedefs and qualifiers; false for void (including `const void`). */
bool dwtype_peel(const Dwarf_Die *in, Dwarf_Die *out)
{
	if (!in->addr)
		return false;
	Dwarf_Die copy = *in;
	int r = dwarf_peel_type(&copy, out);
	if (r == 1)
		return false;
	if (r < 0)
		*out = *in;
	return true;
}

bool dwtype_die_type(Dwarf_Die *die, Dwarf_Die *ret)
{
	Dwarf_Attribute attr;
	return dwarf_formref_die(dwarf_attr_integrate(die, DW_AT_type, &attr),
				 ret) != NULL;
}

bool dwtype_die_udata(Dwarf_Die *die, int name, Dwarf_Word *ret)
{
	Dwarf_Attribute attr;
	return dwarf_formudata(dwarf_attr(die, name, &attr), ret) == 0;
}

static enum ws_dwtype_kind encoding_kind(Dwarf_Die *die)
{
	Dwarf_Word enc;
	if (!dwtype_die_udata(die, DW_AT_encoding, &enc))
		return WS_DWTYPE_OTHER;
	switch (enc) {
	case DW_ATE_signed:
	case DW_ATE_signed_char:
	case DW_ATE_signed_fixed:
		return WS_DWTYPE_SIGNED;
	case DW_ATE_unsigned:
	case DW_ATE_unsigned_char:
	case DW_ATE_unsigned_fixed:
	case DW_ATE_boolean:
	case DW_ATE_address:
	case DW_ATE_UTF:
		return WS_DWTYPE_UNSIGNED;
	case DW_ATE_float:
	case DW_ATE_complex_float:
	case DW_ATE_decimal_float:
		return WS_DWTYPE_FLOAT;
	default:
		return WS_DWTYPE_OTHER;
	}
}

static enum ws_dwtype_kind die_kind(const Dwarf_Die *in, int depth)
{
	Dwarf_Die d, under;
	if (!dwtype_peel(in, &d))
		return WS_DWTYPE_VOID;
	switch (dwarf_tag(&d)) {
	case DW_TAG_base_type:
		return encoding_kind(&d);
	case DW_TAG_enumeration_type:
		if (depth < 4 && dwtype_die_type(&d, &under))
			return die_kind(&under, depth + 1);
		if (dwarf_hasattr(&d, DW_AT_encoding))
			return encoding_kind(&d);
		return WS_DWTYPE_UNSIGNED;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		return WS_DWTYPE_POINTER;
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
		return WS_DWTYPE_STRUCT;
	case DW_TAG_union_type:
		return WS_DWTYPE_UNION;
	case DW_TAG_array_type:
		return WS_DWTYPE_ARRAY;
	case DW_TAG_subroutine_type:
		return WS_DWTYPE_FUNCTION;
	case DW_TAG_unspecified_type:
		return WS_DWTYPE_VOID;
	default:
		return WS_DWTYPE_OTHER;
	}
}

enum ws_dwtype_kind ws_dwtype_kind(const struct ws_dwtype *type)
{
	return type->dims_skipped ? WS_DWTYPE_ARRAY : die_kind(&type->die, 0);
}

/* Element counts of an array DIE's dimensions; unknown counts (flexible
 * arrays, VLAs) are UINT64_MAX. */
static unsigned array_dims(Dwarf_Die *array, uint64_t *counts)
{
	Dwarf_Die child;
	unsigned n = 0;
	if (dwarf_child(array, &child) != 0)
		return 0;
	do {
		if (dwarf_tag(&child) != DW_TAG_subrange_type ||
		    n == DWTYPE_MAX_DIMS)
			continue;
		Dwarf_Word count, upper, lower = 0;
		if (dwtype_die_udata(&child, DW_AT_count, &count)) {
			counts[n] = count;
		} else if (dwtype_die_udata(&child, DW_AT_upper_bound,
					    &upper)) {
			dwtype_die_udata(&child, DW_AT_lower_bound, &lower);
			/* GCC writes [0] arrays as upper bound -1. */
			counts[n] = upper == UINT64_MAX || upper < lower
					    ? 0 : upper - lower + 1;
		} else {
			counts[n] = UINT64_MAX;
		}
		n++;
	} while (dwarf_siblingof(&child, &child) == 0);
	return n;
}

bool dwtype_array_info(struct ws_dwtype_program *prog,
		       const struct ws_dwtype *t, struct dwtype_array *a)
{
	if (!dwtype_peel(&t->die, &a->die) ||
	    dwarf_tag(&a->die) != DW_TAG_array_type)
		return false;
	a->ndims = array_dims(&a->die, a->counts);
	a->first = t->dims_skipped;
	if (a->first >= a->ndims)
		return false;
	struct ws_dwtype elem = { .dims_skipped = 0 };
	if (!dwtype_die_type(&a->die, &elem.die) ||
	    !dwtype_type_size(prog, &elem, &a->elem_size)) {
		a->elem_size = UINT64_MAX;
		return true;
	}
	for (unsigned i = a->first + 1; i < a->ndims; i++) {
		if (a->counts[i] == UINT64_MAX ||
		    __builtin_mul_overflow(a->elem_size, a->counts[i],
					   &a->elem_size)) {
			a->elem_size = UINT64_MAX;
			break;
		}
	}
	return true;
}

bool dwtype_type_size(struct ws_dwtype_program *prog,
		      const struct ws_dwtype *t, uint64_t *ret)
{
	Dwarf_Die d, cudie;
	Dwarf_Word size;
	uint8_t address_size;
	struct dwtype_array a;
	if (!dwtype_peel(&t->die, &d))
		return false;
	switch (dwarf_tag(&d)) {
	case DW_TAG_array_type:
		if (!dwtype_array_info(prog, t, &a) ||
		    a.elem_size == UINT64_MAX ||
		    a.counts[a.first] == UINT64_MAX)
			return false;
		return !__builtin_mul_overflow(a.elem_size, a.counts[a.first],
					       ret);
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		if (dwtype_die_udata(&d, DW_AT_byte_size, &size)) {
			*ret = size;
			return true;
		}
		if (!dwarf_diecu(&d, &cudie, &address_size, NULL))
			return false;
		*ret = address_size;
		return true;
	default:
		dwtype_complete(prog, &d);
		if (dwarf_hasattr(&d, DW_AT_declaration) ||
		    dwarf_aggregate_size(&d, &size) != 0)
			return false;
		*ret = size;
		return true;
	}
}

struct ws_error *ws_dwtype_type_sizeof(struct ws_dwtype_program *prog,
				       const struct ws_dwtype *type,
				       uint64_t *ret)
{
	char name[256];
	if (dwtype_type_size(prog, type, ret))
		return NULL;
	return ws_error_create(WS_ERR_NO_DEBUGINFO, "type '%s' has no known size",
			       ws_dwtype_name(type, name, sizeof(name)));
}

bool dwtype_target_type(struct ws_dwtype_program *prog,
			const struct ws_dwtype *t, struct ws_dwtype *ret)
{
	struct dwtype_array a;
	Dwarf_Die d;
	if (dwtype_array_info(prog, t, &a)) {
		*ret = (struct ws_dwtype){ a.die, a.first + 1 };
		if (a.first + 1 < a.ndims)
			return true;
		ret->dims_skipped = 0;
		return dwtype_die_type(&a.die, &ret->die);
	}
	if (die_kind(&t->die, 0) != WS_DWTYPE_POINTER ||
	    !dwtype_peel(&t->die, &d))
		return false;
	*ret = (struct ws_dwtype){ .dims_skipped = 0 };
	if (!dwtype_die_type(&d, &ret->die))
		ret->die.addr = NULL; /* void * */
	return true;
}

struct ws_error *ws_dwtype_target(const struct ws_dwtype *type,
				  struct ws_dwtype *ret)
{
	char name[256];
	if (dwtype_target_type(NULL, type, ret))
		return NULL;
	return ws_error_create(WS_ERR_OTHER, "type '%s' is not a pointer or array",
			       ws_dwtype_name(type, name, sizeof(name)));
}

/* Appends a C-like name; Go types are named by the name Go gave them. */
static size_t name_into(Dwarf_Die *die, unsigned skip, char *buf, size_t size,
			size_t used, int depth)
{
#define APPEND(...) (used += (size_t)snprintf(				\
		buf + (used < size ? used : size),			\
		used < size ? size - used : 0, __VA_ARGS__))
	Dwarf_Die inner, cudie;
	if (!die || !die->addr || depth > 8) {
		APPEND("%s", die && die->addr ? "..." : "void");
		return used;
	}
	const char *name = dwarf_diename(die);
	if (name && dwarf_diecu(die, &cudie, NULL, NULL) &&
	    dwarf_srclang(&cudie) == DW_LANG_Go && !skip) {
		APPEND("%s", name);
		return used;
	}
	bool has_inner = dwtype_die_type(die, &inner);
	uint64_t counts[DWTYPE_MAX_DIMS];
	unsigned n;
	switch (dwarf_tag(die)) {
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_union_type:
	case DW_TAG_enumeration_type:
		APPEND("%s %s", dwarf_tag(die) == DW_TAG_union_type ? "union"
			: dwarf_tag(die) == DW_TAG_enumeration_type ? "enum"
			: dwarf_tag(die) == DW_TAG_class_type ? "class"
			: "struct", name ? name : "<anonymous>");
		break;
	case DW_TAG_const_type:
	case DW_TAG_volatile_type: {
		/* Compilers chain qualifiers in any order: print C's. */
		bool is_const = false, is_volatile = false;
		Dwarf_Die q = *die;
		bool more = true;
		while (more && (dwarf_tag(&q) == DW_TAG_const_type ||
				dwarf_tag(&q) == DW_TAG_volatile_type)) {
			if (dwarf_tag(&q) == DW_TAG_const_type)
				is_const = true;
			else
				is_volatile = true;
			more = dwtype_die_type(&q, &q);
		}
		APPEND("%s%s", is_const ? "const " : "",
		       is_volatile ? "volatile " : "");
		used = name_into(more ? &q : NULL, 0, buf, size, used,
				 depth + 1);
		break;
	}
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		used = name_into(has_inner ? &inner : NULL, 0, buf, size, used,
				 depth + 1);
		APPEND(" %s", dwarf_tag(die) == DW_TAG_pointer_type ? "*" : "&");
		break;
	case DW_TAG_array_type:
		used = name_into(has_inner ? &inner : NULL, 0, buf, size, used,
				 depth + 1);
		n = array_dims(die, counts);
		for (unsigned i = skip; i < n; i++) {
			if (counts[i] == UINT64_MAX)
				APPEND("[]");
			else
				APPEND("[%" PRIu64 "]", counts[i]);
		}
		break;
	case DW_TAG_subroutine_type:
		APPEND("function");
		break;
	default:
		APPEND("%s", name ? name : "?");
	}
	return used;
#undef APPEND
}

const char *ws_dwtype_name(const struct ws_dwtype *type, char *buf,
			   size_t size)
{
	if (size == 0)
		return buf;
	buf[0] = '\0';
	Dwarf_Die die = type->die;
	name_into(&die, type->dims_skipped, buf, size, 0, 0);
	return buf;
}

/* ------------------------------------------------------------------------ */
/* Member paths. */

const char *dwtype_type_str(const struct ws_dwtype *t, char *buf)
{
	return ws_dwtype_name(t, buf, 256);
}

/* Byte position of a member inside its struct, in bits; *bits is the width
 * of a bitfield (0 otherwise). Handles DWARF 4+ DW_AT_data_bit_offset and
 * the older DW_AT_bit_offset (counted from the storage unit's top bit, on a
 * little-endian target). */
static bool member_position(Dwarf_Die *mem, uint64_t *bitpos, uint64_t *bits)
{
	Dwarf_Attribute attr;
	Dwarf_Word w, byte_offset = 0;
	*bits = dwtype_die_udata(mem, DW_AT_bit_size, &w) ? w : 0;
	if (dwtype_die_udata(mem, DW_AT_data_bit_offset, &w)) {
		*bitpos = w;
		return true;
	}
	if (dwarf_attr(mem, DW_AT_data_member_location, &attr)) {
		Dwarf_Op *ops;
		size_t n;
		if (dwarf_formudata(&attr, &byte_offset) != 0) {
			if (dwarf_getlocation(&attr, &ops, &n) != 0 || n != 1 ||
			    ops[0].atom != DW_OP_plus_uconst)
				return false;
			byte_offset = ops[0].number;
		}
	}
	*bitpos = byte_offset * 8;
	if (*bits && dwtype_die_udata(mem, DW_AT_bit_offset, &w)) {
		Dwarf_Word storage;
		Dwarf_Die t;
		if (!dwtype_die_udata(mem, DW_AT_byte_size, &storage) &&
		    !(dwtype_die_type(mem, &t) && dwtype_peel(&t, &t) &&
		      dwarf_aggregate_size(&t, &storage) == 0))
			return false;
		*bitpos += storage * 8 - w - *bits;
	}
	return true;
}

/* Finds member `name` of the struct/union `sdie`, looking inside anonymous
 * struct/union members like C does, then in base classes (C++: a class's
 * own members hide its bases'), at most `depth` levels down. */
static bool find_member(struct ws_dwtype_program *prog, Dwarf_Die *sdie,
			const char *name, size_t len, Dwarf_Die *ret,
			uint64_t *bitpos, uint64_t *bits, int depth)
{
	Dwarf_Die child, t;
	if (depth > 16 || dwarf_child(sdie, &child) != 0)
		return false;
	bool has_bases = false;
	do {
		has_bases |= dwarf_tag(&child) == DW_TAG_inheritance;
		if (dwarf_tag(&child) != DW_TAG_member)
			continue;
		const char *mname = dwarf_diename(&child);
		if (mname && (strlen(mname) != len || memcmp(mname, name, len)))
			continue;
		uint64_t pos, inner_pos;
		if (!member_position(&child, &pos, bits))
			continue;
		if (mname) {
			*ret = child;
			*bitpos = pos;
			return true;
		}
		if (dwtype_die_type(&child, &t) && dwtype_peel(&t, &t)) {
			dwtype_complete(prog, &t);
			if (find_member(prog, &t, name, len, ret, &inner_pos,
					bits, depth + 1)) {
				*bitpos = pos + inner_pos;
				return true;
			}
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	if (!has_bases || dwarf_child(sdie, &child) != 0)
		return false;
	do {
		uint64_t pos, inner_pos, no_bits;
		if (dwarf_tag(&child) != DW_TAG_inheritance ||
		    !member_position(&child, &pos, &no_bits) ||
		    !dwtype_die_type(&child, &t) || !dwtype_peel(&t, &t))
			continue;
		dwtype_complete(prog, &t);
		if (find_member(prog, &t, name, len, ret, &inner_pos, bits,
				depth + 1)) {
			*bitpos = pos + inner_pos;
			return true;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

bool dwtype_parse_index(const char *path, size_t *i, size_t len, uint64_t *ret)
{
	size_t j = *i + 1;
	int base = 10;
	uint64_t v = 0;
	if (j + 1 < len && path[j] == '0' && (path[j + 1] | 0x20) == 'x') {
		base = 16;
		j += 2;
	}
	size_t start = j;
	for (; j < len && path[j] != ']'; j++) {
		int c = path[j], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && (c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (c | 0x20) - 'a' + 10;
		else
			return false;
		if (__builtin_mul_overflow(v, (uint64_t)base, &v) ||
		    __builtin_add_overflow(v, (uint64_t)d, &v))
			return false;
	}
	if (j == start || j >= len)
		return false;
	*i = j + 1;
	*ret = v;
	return true;
}

bool dwtype_is_arrow(const char *p, size_t i, size_t len)
{
	return i + 1 < len && p[i] == '-' && p[i + 1] == '>';
}

struct ws_error *dwtype_path_error(const char *path, size_t at,
				   const char *what)
{
	return ws_error_create(WS_ERR_OTHER, "bad member path '%s': %s at offset %zu",
			       path, what, at);
}

/* "[idx]" on the array f: moves f to the element. */
static struct ws_error *step_index(struct ws_dwtype_program *prog,
				   struct ws_dwfield *f, uint64_t idx,
				   uint64_t *bitpos)
{
	char tname[256];
	struct dwtype_array a;
	const char *type = dwtype_type_str(&f->type, tname);
	if (f->kind != WS_DWTYPE_ARRAY ||
	    !dwtype_array_info(prog, &f->type, &a))
		return ws_error_create(WS_ERR_OTHER,
				       "type '%s' is not an array or pointer",
				       type);
	if (a.counts[a.first] != UINT64_MAX && idx >= a.counts[a.first])
		return ws_error_create(WS_ERR_OTHER,
				       "index %" PRIu64 " out of range for type '%s'",
				       idx, type);
	if (a.elem_size == UINT64_MAX)
		return ws_error_create(WS_ERR_NO_DEBUGINFO,
				       "type '%s' has elements of unknown size",
				       type);
	*bitpos += idx * a.elem_size * 8;
	dwtype_target_type(prog, &f->type, &f->type);
	f->kind = ws_dwtype_kind(&f->type);
	return NULL;
}

/* ".name" on the struct or union f: moves f to the member; *bits becomes
 * the member's bitfield width (0 if none). */
static struct ws_error *step_member(struct ws_dwtype_program *prog,
				    struct ws_dwfield *f, const char *name,
				    size_t len, uint64_t *bitpos,
				    uint64_t *bits)
{
	char tname[256];
	Dwarf_Die sdie, mem;
	uint64_t pos;
	if (f->kind == WS_DWTYPE_POINTER)
		return ws_error_create(WS_ERR_OTHER,
				       "type '%s' is a pointer: follow it with '->%.*s'",
				       dwtype_type_str(&f->type, tname),
				       (int)len, name);
	if ((f->kind != WS_DWTYPE_STRUCT && f->kind != WS_DWTYPE_UNION) ||
	    !dwtype_peel(&f->type.die, &sdie))
		return ws_error_create(WS_ERR_OTHER,
				       "type '%s' is not a struct or union (member '%.*s')",
				       dwtype_type_str(&f->type, tname),
				       (int)len, name);
	dwtype_complete(prog, &sdie);
	if (!find_member(prog, &sdie, name, len, &mem, &pos, bits, 0)) {
		struct ws_dwtype st = { sdie, 0 };
		return ws_error_create(WS_ERR_NO_DEBUGINFO,
				       "type '%s' has no member '%.*s'",
				       dwtype_type_str(&st, tname), (int)len,
				       name);
	}
	*bitpos += pos;
	f->type = (struct ws_dwtype){ .dims_skipped = 0 };
	if (!dwtype_die_type(&mem, &f->type.die))
		f->type.die.addr = NULL;
	f->kind = ws_dwtype_kind(&f->type);
	return NULL;
}

/* Resolves path[start, end) against `base` as far as offsets go: stops
 * before "->" and before "[N]" applied to a pointer (the caller reads the
 * pointer). A segment starts with a name, ".name" or "[N]". */
static struct ws_error *resolve(struct ws_dwtype_program *prog,
				const struct ws_dwtype *base, const char *path,
				size_t start, size_t end,
				struct path_entry *ret)
{
	struct ws_dwfield f = { .type = *base, .kind = ws_dwtype_kind(base) };
	uint64_t bitpos = 0, bits = 0;
	size_t i = start;
	struct ws_error *err = NULL;

	while (!err && i < end && !dwtype_is_arrow(path, i, end)) {
		if (bits)
			return ws_error_create(WS_ERR_OTHER,
					       "member path '%s': bitfield '%.*s' has no parts",
					       path, (int)(i - start),
					       path + start);
		if (path[i] == '[') {
			uint64_t idx;
			size_t open = i;
			if (f.kind == WS_DWTYPE_POINTER)
				break;
			if (!dwtype_parse_index(path, &i, end, &idx))
				return dwtype_path_error(path, open,
							 "expected [NUMBER]");
			err = step_index(prog, &f, idx, &bitpos);
			continue;
		}
		if (path[i] == '.')
			i++;
		else if (i != start)
			return dwtype_path_error(path, i,
						 "expected '.', '[' or '->'");
		size_t name = i;
		while (i < end && path[i] != '.' && path[i] != '[' &&
		       path[i] != ']' && !dwtype_is_arrow(path, i, end))
			i++;
		if (i == name)
			return dwtype_path_error(path, name,
						 "expected a member name");
		err = step_member(prog, &f, path + name, i - name, &bitpos,
				  &bits);
	}
	if (err)
		return err;

	f.offset = bitpos / 8;
	if (bits) {
		f.bit_offset = bitpos % 8;
		f.bit_size = (uint8_t)bits;
		f.size = (f.bit_offset + bits + 7) / 8;
	} else if (bitpos % 8 || !dwtype_type_size(prog, &f.type, &f.size)) {
		f.size = WS_DWTYPE_SIZE_UNKNOWN;
	}
	ret->field = f;
	ret->consumed = i - start;
	return NULL;
}

/* resolve() through the cache: the first call per (type, path part) walks
 * DWARF, later ones are one hash lookup. Paths built with varying indices
 * ("nodes[%d]") would each take an entry: past DWTYPE_PATH_CACHE_MAX
 * entries new paths are resolved uncached rather than grow without bound. */
struct ws_error *dwtype_resolve_cached(struct ws_dwtype_program *prog,
				       const struct ws_dwtype *base,
				       const char *path, size_t start,
				       size_t end, struct path_entry *ret)
{
	size_t value;
	if (dwtype_map_get(&prog->paths, base->die.addr, base->dims_skipped,
			   path + start, end - start, &value)) {
		*ret = prog->pathv[value];
		return NULL;
	}
	struct ws_error *err = resolve(prog, base, path, start, end, ret);
	if (err || prog->npaths >= DWTYPE_PATH_CACHE_MAX)
		return err;
	char *key = strndup(path + start, end - start);
	if (!key || !ws_grow((void **)&prog->pathv, &prog->paths_cap,
				 prog->npaths + 1, sizeof(*prog->pathv)) ||
	    !dwtype_map_put(&prog->paths, base->die.addr, base->dims_skipped,
			    key, end - start, prog->npaths)) {
		free(key);
		return NULL; /* resolved; only the caching failed */
	}
	prog->pathv[prog->npaths++] = *ret;
	return NULL;
}

struct ws_error *ws_dwtype_field(struct ws_dwtype_program *prog,
				 const struct ws_dwtype *type,
				 const char *path, struct ws_dwfield *ret)
{
	size_t len = strlen(path);
	struct path_entry e;
	struct ws_error *err = dwtype_resolve_cached(prog, type, path, 0, len,
						     &e);
	if (err)
		return err;
	if (e.consumed != len)
		return ws_error_create(WS_ERR_OTHER,
				       "member path '%s' follows a pointer at offset %zu; a field must lie inside the object",
				       path, e.consumed);
	*ret = e.field;
	return NULL;
}

