/*
 * ws_dwtype, part 3 of 4: objects (a type plus an address) and reads through
 * the program's ws_memory_reader: integers of any width and bitfields,
 * pointers, member paths that follow pointers, arrays, C and Go strings, Go
 * slices, and whole-object loads so one read serves many fields.
 */
#include "dwtype_internal.h"

#include <dwarf.h>
#include <inttypes.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Objects and reads. */

void dwtype_make_object(struct ws_dwtype_program *prog,
			const struct ws_dwtype *type, uint64_t address,
			struct ws_dwobj *ret)
{
	*ret = (struct ws_dwobj){
		.prog = prog,
		.type = *type,
		.kind = ws_dwtype_kind(type),
		.address = address,
	};
	if (!dwtype_type_size(prog, type, &ret->size))
		ret->size = WS_DWTYPE_SIZE_UNKNOWN;
}

struct ws_error *ws_dwtype_object(struct ws_dwtype_program *prog,
				  const struct ws_dwtype *type,
				  uint64_t address, struct ws_dwobj *ret)
{
	dwtype_make_object(prog, type, address, ret);
	return NULL;
}

/* The address of a variable whose location is a lone DW_OP_addr (or addrx),
 * before the module's bias. False for thread-local, register or location-
 * list variables. */
static bool static_address(Dwarf_Die *var, Dwarf_Addr *ret)
{
	Dwarf_Attribute attr, value;
	Dwarf_Op *ops;
	Dwarf_Block block;
	Dwarf_Die cudie;
	size_t n;
	uint8_t address_size;
	if (!dwarf_attr(var, DW_AT_location, &attr))
		return false;
	if (dwarf_getlocation(&attr, &ops, &n) == 0) {
		if (n == 1 && ops[0].atom == DW_OP_addr) {
			*ret = ops[0].number;
			return true;
		}
		return n == 1 && (ops[0].atom == DW_OP_addrx ||
				  ops[0].atom == DW_OP_GNU_addr_index) &&
		       dwarf_getlocation_attr(&attr, &ops[0], &value) == 0 &&
		       dwarf_formaddr(&value, ret) == 0;
	}
	/* Go writes DWARF 4 locations as DW_FORM_block1, which libdw 0.188
	 * refuses for version >= 4 ("not a location list value"): decode
	 * the one expression Go uses, DW_OP_addr, by hand. */
	if (dwarf_formblock(&attr, &block) != 0 ||
	    !dwarf_diecu(var, &cudie, &address_size, NULL) ||
	    address_size > 8 || block.length != 1u + address_size ||
	    block.data[0] != DW_OP_addr)
		return false;
	uint64_t a = 0;
	for (unsigned i = 0; i < address_size; i++)
		a |= (uint64_t)block.data[1 + i] << (8 * i);
	*ret = a;
	return true;
}

struct ws_error *ws_dwtype_global(struct ws_dwtype_program *prog,
				  const char *module, const char *name,
				  struct ws_dwobj *ret)
{
	struct module *m;
	Dwarf_Die var;
	struct ws_error *err = dwtype_lookup(prog, module, false, NULL, name,
				      "variable", name, &m, &var);
	if (err)
		return err;

	Dwarf_Addr address;
	if (!static_address(&var, &address))
		return ws_error_create(WS_ERR_OTHER,
				       "variable '%s' in %s has no static address",
				       name, m->name);
	struct ws_dwtype type = { .dims_skipped = 0 };
	if (!dwtype_die_type(&var, &type.die))
		return ws_error_create(WS_ERR_NO_DEBUGINFO,
				       "variable '%s' in %s has no type", name,
				       m->name);
	dwtype_make_object(prog, &type, address + m->bias, ret);
	return NULL;
}

/* Reads bytes of the target, from obj's loaded buffer when it covers them. */
static struct ws_error *obj_bytes(const struct ws_dwobj *o, uint64_t address,
				  void *buf, size_t n)
{
	if (o->loaded && address >= o->loaded_address &&
	    address - o->loaded_address <= o->loaded_size &&
	    n <= o->loaded_size - (address - o->loaded_address)) {
		memcpy(buf, o->loaded + (address - o->loaded_address), n);
		return NULL;
	}
	return ws_memory_read(&o->prog->reader, address, buf, n);
}

/* Whether `size` bytes (or a bitfield of bit_size bits) of `kind` can be
 * read as an integer. */
static struct ws_error *check_integer(const struct ws_dwtype *type,
				      enum ws_dwtype_kind kind, uint64_t size,
				      unsigned bit_size)
{
	char tname[256];
	if (kind != WS_DWTYPE_SIGNED && kind != WS_DWTYPE_UNSIGNED &&
	    kind != WS_DWTYPE_POINTER)
		return ws_error_create(WS_ERR_OTHER, "type '%s' is not an integer",
				       dwtype_type_str(type, tname));
	/* A bitfield of up to 64 bits starting at bit 7 spans 9 bytes. */
	if (size == 0 || size > (bit_size ? 9 : 8) || bit_size > 64)
		return ws_error_create(WS_ERR_OTHER,
				       "type '%s' is %" PRIu64 " bytes: too wide to read as an integer",
				       dwtype_type_str(type, tname), size);
	return NULL;
}

/* Decodes an integer of `size` bytes (or a bitfield) from little-endian
 * bytes, zero- or sign-extended by kind. */
static struct ws_error *decode(const struct ws_dwtype *type,
			       enum ws_dwtype_kind kind, const unsigned char *p,
			       uint64_t size, unsigned bit_offset,
			       unsigned bit_size, uint64_t *ret)
{
	struct ws_error *err = check_integer(type, kind, size, bit_size);
	if (err)
		return err;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* Whole bytes of a common width: one load. Every field of every
	 * sampled task and every slot of an array registry is decoded here
	 * each tick (3.8 % of an attach to 1,000 green tasks, perf). */
	bool sign = kind == WS_DWTYPE_SIGNED;
	if (!bit_size && !bit_offset) {
		switch (size) {
		case 8: {
			uint64_t v;
			memcpy(&v, p, 8);
			*ret = v;
			return NULL;
		}
		case 4: {
			uint32_t v;
			memcpy(&v, p, 4);
			*ret = sign ? (uint64_t)(int64_t)(int32_t)v : v;
			return NULL;
		}
		case 2: {
			uint16_t v;
			memcpy(&v, p, 2);
			*ret = sign ? (uint64_t)(int64_t)(int16_t)v : v;
			return NULL;
		}
		case 1:
			*ret = sign ? (uint64_t)(int64_t)(int8_t)p[0] : p[0];
			return NULL;
		}
	}
#endif
	unsigned width = bit_size ? bit_size : (unsigned)size * 8;
	unsigned __int128 x = 0;
	for (uint64_t i = 0; i < size; i++)
		x |= (unsigned __int128)p[i] << (8 * i);
	uint64_t v = (uint64_t)(x >> bit_offset);
	if (width < 64) {
		v &= (UINT64_C(1) << width) - 1;
		if (kind == WS_DWTYPE_SIGNED && (v >> (width - 1)) & 1)
			v |= ~UINT64_C(0) << width;
	}
	*ret = v;
	return NULL;
}

struct ws_error *ws_dwtype_field_uint(const struct ws_dwfield *field,
				      const void *buf, size_t size,
				      uint64_t *ret)
{
	if (field->size == WS_DWTYPE_SIZE_UNKNOWN || field->offset > size ||
	    field->size > size - field->offset)
		return ws_error_create(WS_ERR_OTHER,
				       "field at offset %" PRIu64 " lies outside a %zu-byte buffer",
				       field->offset, size);
	return decode(&field->type, field->kind,
		      (const unsigned char *)buf + field->offset, field->size,
		      field->bit_offset, field->bit_size, ret);
}

struct ws_error *ws_dwtype_field_int(const struct ws_dwfield *field,
				     const void *buf, size_t size,
				     int64_t *ret)
{
	return ws_dwtype_field_uint(field, buf, size, (uint64_t *)ret);
}

struct ws_error *ws_dwtype_read_uint(const struct ws_dwobj *obj,
				     uint64_t *ret)
{
	unsigned char bytes[16];
	struct ws_dwfield f = {
		.type = obj->type, .kind = obj->kind, .offset = 0,
		.size = obj->size, .bit_offset = obj->bit_offset,
		.bit_size = obj->bit_size,
	};
	struct ws_error *err = check_integer(&obj->type, obj->kind, obj->size,
					     obj->bit_size);
	if (err)
		return err;
	err = obj_bytes(obj, obj->address, bytes, obj->size);
	if (err)
		return err;
	return ws_dwtype_field_uint(&f, bytes, obj->size, ret);
}

struct ws_error *ws_dwtype_read_int(const struct ws_dwobj *obj, int64_t *ret)
{
	return ws_dwtype_read_uint(obj, (uint64_t *)ret);
}

static struct ws_error *not_pointer(const struct ws_dwobj *obj)
{
	char tname[256];
	return ws_error_create(WS_ERR_OTHER, "type '%s' is not a pointer",
			       dwtype_type_str(&obj->type, tname));
}

struct ws_error *ws_dwtype_read_pointer(const struct ws_dwobj *obj,
					uint64_t *ret)
{
	if (obj->kind != WS_DWTYPE_POINTER)
		return not_pointer(obj);
	return ws_dwtype_read_uint(obj, ret);
}

static struct ws_dwobj sub_object(const struct ws_dwobj *obj,
				  const struct ws_dwfield *f)
{
	struct ws_dwobj o = *obj;
	o.type = f->type;
	o.kind = f->kind;
	o.address = obj->address + f->offset;
	o.size = f->size;
	o.bit_offset = f->bit_offset;
	o.bit_size = f->bit_size;
	return o;
}

struct ws_error *ws_dwtype_field_object(const struct ws_dwobj *obj,
					const struct ws_dwfield *field,
					struct ws_dwobj *ret)
{
	*ret = sub_object(obj, field);
	return NULL;
}

/* Reads pointer `obj` and makes the object of its target type at value +
 * i * size; `what` names the pointer in a null error. */
static struct ws_error *follow(const struct ws_dwobj *obj, uint64_t i,
			       const char *what, int what_len,
			       struct ws_dwobj *ret)
{
	char tname[256];
	struct ws_dwtype target;
	uint64_t value, size = 0;
	if (obj->kind != WS_DWTYPE_POINTER ||
	    !dwtype_target_type(obj->prog, &obj->type, &target))
		return not_pointer(obj);
	struct ws_error *err = ws_dwtype_read_uint(obj, &value);
	if (err)
		return err;
	if (value == 0)
		return ws_error_create(WS_ERR_OTHER, "'%.*s' (%s) is a null pointer",
				       what_len, what,
				       dwtype_type_str(&obj->type, tname));
	if (i && !dwtype_type_size(obj->prog, &target, &size))
		return ws_error_create(WS_ERR_NO_DEBUGINFO,
				       "type '%s' has no known size to index by",
				       dwtype_type_str(&target, tname));
	struct ws_dwobj o;
	dwtype_make_object(obj->prog, &target, value + i * size, &o);
	o.loaded = obj->loaded;
	o.loaded_address = obj->loaded_address;
	o.loaded_size = obj->loaded_size;
	*ret = o;
	return NULL;
}

struct ws_error *ws_dwtype_member(const struct ws_dwobj *obj,
				  const char *path, struct ws_dwobj *ret)
{
	struct ws_dwobj cur = *obj;
	size_t len = strlen(path), pos = 0;
	for (;;) {
		struct path_entry e;
		struct ws_error *err = dwtype_resolve_cached(cur.prog,
							     &cur.type, path,
							     pos, len, &e);
		if (err)
			return err;
		cur = sub_object(&cur, &e.field);
		pos += e.consumed;
		if (pos == len)
			break;
		const char *held = pos ? path : "(object)";
		int held_len = pos ? (int)pos : 8;
		if (dwtype_is_arrow(path, pos, len)) {
			err = follow(&cur, 0, held, held_len, &cur);
			pos += 2;
		} else {
			uint64_t idx;
			size_t open = pos;
			if (!dwtype_parse_index(path, &pos, len, &idx))
				return dwtype_path_error(path, open,
							 "expected [NUMBER]");
			err = follow(&cur, idx, held, held_len, &cur);
		}
		if (err)
			return err;
	}
	*ret = cur;
	return NULL;
}

struct ws_error *ws_dwtype_deref(const struct ws_dwobj *obj,
				 struct ws_dwobj *ret)
{
	return follow(obj, 0, "(object)", 8, ret);
}

struct ws_error *ws_dwtype_index(const struct ws_dwobj *obj, uint64_t i,
				 struct ws_dwobj *ret)
{
	char tname[256];
	struct dwtype_array a;
	if (obj->kind == WS_DWTYPE_POINTER)
		return follow(obj, i, "(object)", 8, ret);
	if (obj->kind != WS_DWTYPE_ARRAY ||
	    !dwtype_array_info(obj->prog, &obj->type, &a))
		return ws_error_create(WS_ERR_OTHER,
				       "type '%s' is not an array or pointer",
				       dwtype_type_str(&obj->type, tname));
	if (a.counts[a.first] != UINT64_MAX && i >= a.counts[a.first])
		return ws_error_create(WS_ERR_OTHER,
				       "index %" PRIu64 " out of range for type '%s'",
				       i, dwtype_type_str(&obj->type, tname));
	if (a.elem_size == UINT64_MAX)
		return ws_error_create(WS_ERR_NO_DEBUGINFO,
				       "type '%s' has elements of unknown size",
				       dwtype_type_str(&obj->type, tname));
	struct ws_dwtype elem;
	dwtype_target_type(obj->prog, &obj->type, &elem);
	struct ws_dwobj o;
	dwtype_make_object(obj->prog, &elem, obj->address + i * a.elem_size,
			   &o);
	o.loaded = obj->loaded;
	o.loaded_address = obj->loaded_address;
	o.loaded_size = obj->loaded_size;
	*ret = o;
	return NULL;
}

struct ws_error *ws_dwtype_sizeof(const struct ws_dwobj *obj, uint64_t *ret)
{
	char tname[256];
	if (obj->size == WS_DWTYPE_SIZE_UNKNOWN)
		return ws_error_create(WS_ERR_NO_DEBUGINFO,
				       "type '%s' has no known size",
				       dwtype_type_str(&obj->type, tname));
	*ret = obj->size;
	return NULL;
}

struct ws_error *ws_dwtype_load(const struct ws_dwobj *obj, void *buf,
				size_t size, struct ws_dwobj *ret)
{
	uint64_t need;
	struct ws_error *err = ws_dwtype_sizeof(obj, &need);
	if (err)
		return err;
	if (need > size)
		return ws_error_create(WS_ERR_OTHER,
				       "load: object of %" PRIu64 " bytes does not fit a %zu-byte buffer",
				       need, size);
	err = obj_bytes(obj, obj->address, buf, need);
	if (err)
		return err;
	ws_dwtype_attach(obj, buf, need, ret);
	return NULL;
}

void ws_dwtype_attach(const struct ws_dwobj *obj, const void *bytes,
		      size_t size, struct ws_dwobj *ret)
{
	*ret = *obj;
	ret->loaded = bytes;
	ret->loaded_address = obj->address;
	ret->loaded_size = size;
}

/* ------------------------------------------------------------------------ */
/* Strings and slices. */

enum { PAGE = 4096 };

struct ws_error *ws_dwtype_read_cstring(const struct ws_dwobj *obj, char *buf,
					size_t size, size_t *ret)
{
	char tname[256];
	if (size == 0)
		return ws_error_create(WS_ERR_OTHER, "read_cstring: empty buffer");
	size_t max = size - 1, got = 0;
	if (obj->kind == WS_DWTYPE_ARRAY &&
	    obj->size != WS_DWTYPE_SIZE_UNKNOWN) {
		/* The array bounds the string: read it (or what fits) once. */
		size_t want = obj->size < max ? (size_t)obj->size : max;
		struct ws_error *err = obj_bytes(obj, obj->address, buf, want);
		if (err)
			return err;
		char *nul = memchr(buf, '\0', want);
		got = nul ? (size_t)(nul - buf) : want;
		buf[got] = '\0';
		*ret = nul || obj->size <= max ? got : size;
		return NULL;
	}
	uint64_t address = obj->address;  /* an array of unknown length */
	struct ws_error *err;
	if (obj->kind == WS_DWTYPE_POINTER) {
		err = ws_dwtype_read_pointer(obj, &address);
		if (err)
			return err;
		if (address == 0)
			return ws_error_create(WS_ERR_OTHER,
					       "type '%s': null string pointer",
					       dwtype_type_str(&obj->type,
							       tname));
	} else if (obj->kind != WS_DWTYPE_ARRAY) {
		return ws_error_create(WS_ERR_OTHER,
				       "type '%s' is not a char pointer or array",
				       dwtype_type_str(&obj->type,
						       tname));
	}
	/* A page at a time: the string may end just before an unmapped page.
	 * A reader narrower than pages (a snapshot, an image) may refuse a
	 * chunk that runs past its end though the NUL comes earlier: then
	 * halve the chunk, down to single bytes, before giving up. */
	size_t limit = PAGE;
	while (got < max) {
		size_t chunk = PAGE - (size_t)((address + got) % PAGE);
		if (chunk > max - got)
			chunk = max - got;
		if (chunk > limit)
			chunk = limit;
		err = obj_bytes(obj, address + got, buf + got, chunk);
		if (err && chunk > 1 && err->kind == WS_ERR_OTHER) {
			ws_error_destroy(err);
			limit = chunk / 2;
			continue;
		}
		if (err)
			return err;
		char *nul = memchr(buf + got, '\0', chunk);
		if (nul) {
			*ret = (size_t)(nul - buf);
			return NULL;
		}
		got += chunk;
	}
	buf[max] = '\0';
	*ret = size;
	return NULL;
}

/* Loads a small header struct (a Go string or slice) into `bytes`. */
static struct ws_error *header(const struct ws_dwobj *obj, const char *what,
			       unsigned char *bytes, size_t size)
{
	char tname[256];
	if (obj->kind != WS_DWTYPE_STRUCT || obj->size > size)
		return ws_error_create(WS_ERR_OTHER, "type '%s' is not a Go %s",
				       dwtype_type_str(&obj->type, tname),
				       what);
	return obj_bytes(obj, obj->address, bytes, obj->size);
}

struct ws_error *ws_dwtype_read_gostring(const struct ws_dwobj *obj,
					 char *buf, size_t size, size_t *ret)
{
	unsigned char bytes[64];
	struct ws_dwfield str, len;
	uint64_t address;
	int64_t n;
	if (size == 0)
		return ws_error_create(WS_ERR_OTHER, "read_gostring: empty buffer");
	struct ws_error *err = ws_dwtype_field(obj->prog, &obj->type, "str",
					       &str);
	if (!err)
		err = ws_dwtype_field(obj->prog, &obj->type, "len", &len);
	if (!err)
		err = header(obj, "string", bytes, sizeof(bytes));
	if (!err)
		err = ws_dwtype_field_uint(&str, bytes, obj->size, &address);
	if (!err)
		err = ws_dwtype_field_int(&len, bytes, obj->size, &n);
	if (err)
		return err;
	if (n < 0 || (n > 0 && address == 0))
		return ws_error_create(WS_ERR_OTHER,
				       "corrupt Go string at 0x%" PRIx64 " (str 0x%" PRIx64 ", len %" PRId64 ")",
				       obj->address, address, n);
	size_t want = (uint64_t)n < size - 1 ? (size_t)n : size - 1;
	if (want) {
		err = ws_memory_read(&obj->prog->reader, address, buf, want);
		if (err)
			return err;
	}
	buf[want] = '\0';
	*ret = (size_t)n;
	return NULL;
}

struct ws_error *ws_dwtype_slice(const struct ws_dwobj *obj,
				 struct ws_dwslice *ret)
{
	char tname[256];
	unsigned char bytes[64];
	struct ws_dwfield array, len, cap;
	uint64_t address;
	struct ws_dwtype elem;
	struct ws_error *err = ws_dwtype_field(obj->prog, &obj->type, "array",
					       &array);
	if (!err)
		err = ws_dwtype_field(obj->prog, &obj->type, "len", &len);
	if (!err)
		err = header(obj, "slice", bytes, sizeof(bytes));
	if (!err)
		err = ws_dwtype_field_uint(&array, bytes, obj->size, &address);
	if (!err)
		err = ws_dwtype_field_uint(&len, bytes, obj->size, &ret->len);
	if (err)
		return err;
	ret->cap = 0;
	err = ws_dwtype_field(obj->prog, &obj->type, "cap", &cap);
	if (!err)
		err = ws_dwtype_field_uint(&cap, bytes, obj->size, &ret->cap);
	ws_error_destroy(err);
	if (!dwtype_target_type(obj->prog, &array.type, &elem) ||
	    !dwtype_type_size(obj->prog, &elem, &ret->elem_size))
		return ws_error_create(WS_ERR_OTHER,
				       "slice '%s': member 'array' is not a pointer to sized elements",
				       dwtype_type_str(&obj->type, tname));
	dwtype_make_object(obj->prog, &elem, address, &ret->first);
	return NULL;
}

struct ws_error *ws_dwtype_slice_at(const struct ws_dwslice *slice,
				    uint64_t i, struct ws_dwobj *ret)
{
	if (i >= slice->len)
		return ws_error_create(WS_ERR_OTHER,
				       "index %" PRIu64 " out of range for a slice of length %" PRIu64,
				       i, slice->len);
	*ret = slice->first;
	ret->address += i * slice->elem_size;
	return NULL;
}
