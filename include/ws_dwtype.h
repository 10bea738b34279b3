/*
 * ws_dwtype: typed reads of the target's memory, described by its DWARF.
 * Runtime adapters find globals by name, follow member paths ("sched.sp",
 * "ctx.uc_mcontext.gregs[15]", "m->procid"), index arrays, pointers and Go
 * slices, and read integers and strings, so no adapter hard-codes an offset.
 * Owns a per-module name index (globals, named types) and a cache of resolved
 * member paths; borrows the Dwfl (ws_symbols owns it) and a memory reader.
 *
 * The model is libdrgn's: an object is a type plus an address, and memory is
 * read only when a value is asked for. Nothing here is thread-safe; nothing
 * is async-signal-safe. Errors are one line naming the missing thing
 * ("no DWARF variable 'x' in /bin/y", "type 'struct t' has no member 'z'").
 * Missing DWARF things (no debug info, variable, type or member) have kind
 * WS_ERR_NO_DEBUGINFO; misuse (not a pointer, index out of range, bad path)
 * WS_ERR_OTHER; memory errors keep the reader's kind.
 *
 * Member paths: a name, then any of ".name", "[N]", "->name". "." and "[N]"
 * on an array are offsets (resolved once per (type, path), then cached);
 * "->name" and "[N]" on a pointer read the pointer (one remote read each). N
 * is decimal or 0x-hex. "." never follows a pointer implicitly: a remote read
 * should be visible in the path. Anonymous struct/union members are searched
 * as C does, and members of base classes (DW_TAG_inheritance) as C++ does,
 * after the class's own. The cache is keyed by the path string: pass indices that vary
 * at run time to ws_dwtype_index / ws_dwtype_slice_at, not in paths (the
 * cache stops growing at 4096 paths; later ones are resolved every time).
 */
#ifndef WS_DWTYPE_H
#define WS_DWTYPE_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ws_error.h"
#include "ws_remote_memory.h"

struct ws_dwtype_program;

/* A type: a DIE as declared (typedefs and qualifiers kept, so messages use
 * the name the program used). die.addr == NULL means void. dims_skipped > 0
 * names a row of a multi-dimensional array: the array DIE with its first
 * dims_skipped dimensions indexed away. */
struct ws_dwtype {
	Dwarf_Die die;
	unsigned dims_skipped;
};

/* What a type is, after typedefs and qualifiers are peeled. Enums take their
 * underlying integer's signedness; bool and char follow their encoding. */
enum ws_dwtype_kind {
	WS_DWTYPE_VOID,
	WS_DWTYPE_SIGNED,
	WS_DWTYPE_UNSIGNED,
	WS_DWTYPE_FLOAT,
	WS_DWTYPE_POINTER,   /* also C++ references */
	WS_DWTYPE_STRUCT,    /* struct and class */
	WS_DWTYPE_UNION,
	WS_DWTYPE_ARRAY,
	WS_DWTYPE_FUNCTION,
	WS_DWTYPE_OTHER,
};

/* Size of an object whose size DWARF does not give (void, an incomplete
 * struct, a flexible array). */
#define WS_DWTYPE_SIZE_UNKNOWN UINT64_MAX

/* An object: a typed place in the target's memory. A plain struct the caller
 * copies freely; valid while the program lives. `loaded`, when not NULL,
 * holds the target's bytes [loaded_address, loaded_address + loaded_size)
 * already read (see ws_dwtype_load): reads inside it cost no system call,
 * and member/index results inherit it. */
struct ws_dwobj {
	struct ws_dwtype_program *prog;
	struct ws_dwtype type;
	enum ws_dwtype_kind kind;
	uint64_t address;
	uint64_t size;          /* bytes; WS_DWTYPE_SIZE_UNKNOWN if unknown */
	uint8_t bit_offset;     /* bitfields: first bit within the first byte */
	uint8_t bit_size;       /* bitfields: width; 0 = not a bitfield */
	const unsigned char *loaded;
	uint64_t loaded_address;
	size_t loaded_size;
};

/* A member path resolved against a type: where it lies inside an object of
 * that type. For bulk reads: read a whole struct once, then decode fields
 * from the buffer with ws_dwtype_field_uint / _int. */
struct ws_dwfield {
	struct ws_dwtype type;
	enum ws_dwtype_kind kind;
	uint64_t offset;        /* bytes from the start of the outer object */
	uint64_t size;          /* bytes (bitfields: the bytes the bits span) */
	uint8_t bit_offset;
	uint8_t bit_size;
};

/* A member path resolved through pointers ("uc->uc_mcontext.gregs[16]",
 * "head->next"): hop[0] lies inside the outer object; each later hop lies
 * inside the object that the pointer at the hop before points to, `offset`
 * bytes from the pointer's value (a pointer's "[N]" is an offset of N
 * elements). A path without "->" or pointer indexing is one hop, the
 * ws_dwfield ws_dwtype_field resolves. */
enum { WS_DWPATH_MAX_HOPS = 8 };
struct ws_dwpath {
	unsigned nhops;
	struct ws_dwfield hop[WS_DWPATH_MAX_HOPS];
};

/* The field the path ends at (its type, size, bitfield). */
static inline const struct ws_dwfield *ws_dwpath_last(const struct ws_dwpath *p)
{
	return &p->hop[p->nhops - 1];
}

/* A Go slice (struct with `array`, `len` and optionally `cap`), read. */
struct ws_dwslice {
	struct ws_dwobj first;  /* element 0: element type, at `array` */
	uint64_t elem_size;
	uint64_t len;
	uint64_t cap;           /* 0 when the struct has no `cap` */
};

/* --- the program --- */

/* Creates a program over `dwfl` (modules already reported; borrowed, must
 * outlive the program) and `reader` (copied; its arg is borrowed). Cheap: a
 * module's DWARF is loaded and indexed on the first lookup that needs it,
 * one pass over its top-level DIEs (measured: 0.1 ms for a small C binary,
 * 10 ms for a Go binary, ~100 ms for libc with libc6-dbg). Modules reported
 * to the Dwfl later are not seen: create a new program after the Dwfl's
 * module list changes. */
struct ws_error *ws_dwtype_program_create(Dwfl *dwfl,
					  const struct ws_memory_reader *reader,
					  struct ws_dwtype_program **ret);

/* Frees the program, its indexes and caches. NULL is fine. Objects, types
 * and fields taken from it become invalid. */
void ws_dwtype_program_destroy(struct ws_dwtype_program *prog);

/* Replaces the memory reader (e.g. to serve reads from a snapshot). */
void ws_dwtype_program_set_reader(struct ws_dwtype_program *prog,
				  const struct ws_memory_reader *reader);

/* --- lookups (hash lookups once a module is indexed) --- */

/* Finds the global (or file-static) variable `name` ("runtime.allgs",
 * "green_all_tasks", or qualified by its C++ namespaces, "app::main_ctx";
 * the bare name finds the first of that name) with a static address.
 * `module`: NULL searches every
 * module, the main executable first (so a miss indexes every module with
 * DWARF, libc included); otherwise a module's path or its file name
 * ("libc.so.6"). An external definition wins over a static one of the same
 * name. Reads no target memory. Errors: "no DWARF variable 'x' in PATHS",
 * "no DWARF debug info in PATH (looking for variable 'x')" (both
 * WS_ERR_NO_DEBUGINFO), "no module 'm' in the target" (WS_ERR_OTHER). */
struct ws_error *ws_dwtype_global(struct ws_dwtype_program *prog,
				  const char *module, const char *name,
				  struct ws_dwobj *ret);

/* The value of the named constant `name` (DW_TAG_constant with
 * DW_AT_const_value: Go emits its package-level constants, e.g.
 * "runtime._Gwaiting"), looked up like ws_dwtype_global. Reads no target
 * memory. Errors: as ws_dwtype_global, "no DWARF constant 'x' in ...". */
struct ws_error *ws_dwtype_constant(struct ws_dwtype_program *prog,
				    const char *module, const char *name,
				    int64_t *ret);

/* The object at ELF symbol `symbol` (a data symbol of the symbol table or
 * the dynamic one), typed by the DWARF type `type_name` (as
 * ws_dwtype_find_type finds it): for compilers that describe types but
 * emit no variable DIEs (Crystal: the symbol "Fiber::fibers", type
 * "Thread::LinkedList(Fiber)", itself a reference, i.e. a named pointer
 * type). `module` as for ws_dwtype_global. A linear scan of the symbol
 * tables (the main executable's first): for loading, not for ticks.
 * Errors: "no ELF symbol 'x' in ..." (WS_ERR_NO_DEBUGINFO), the type's
 * lookup errors, a symbol smaller than its type (WS_ERR_OTHER). */
struct ws_error *ws_dwtype_symbol(struct ws_dwtype_program *prog,
				  const char *module, const char *symbol,
				  const char *type_name, struct ws_dwobj *ret);

/* Whether a module of `dwfl` matching `module` (NULL: any) defines the
 * data symbol `symbol` in its own ELF file (symbol table or dynamic one;
 * functions do not count; separate debug files are not read, so asking
 * costs no debug info): its address (bias applied) and size. A linear
 * scan, to recognise a runtime. */
bool ws_dwtype_find_symbol(Dwfl *dwfl, const char *module,
			   const char *symbol, uint64_t *address,
			   uint64_t *size);

/* Finds a named type: "struct task", "union u", "enum e", a typedef or base
 * type name ("task_t", "int"), a Go type name as written in its DWARF
 * ("runtime.g", "[]*runtime.g"), or a named pointer type (Crystal names a
 * reference type's pointer "Fiber", its struct "struct Fiber"). C++ names
 * may be qualified by their namespaces ("app::Task"). A bare name also
 * matches a struct, union or enum tag when nothing else has that name.
 * Declarations are skipped. */
struct ws_error *ws_dwtype_find_type(struct ws_dwtype_program *prog,
				     const char *module, const char *name,
				     struct ws_dwtype *ret);

/* An object of `type` at `address` (a cast, or a pointer value read from a
 * loaded buffer). Reads nothing. */
struct ws_error *ws_dwtype_object(struct ws_dwtype_program *prog,
				  const struct ws_dwtype *type,
				  uint64_t address, struct ws_dwobj *ret);

/* --- types (no memory reads) --- */

enum ws_dwtype_kind ws_dwtype_kind(const struct ws_dwtype *type);

/* Size in bytes; an error names a type without a known size. `prog` lets an
 * opaque struct (declared only) be completed from its definition elsewhere;
 * NULL skips that. */
struct ws_error *ws_dwtype_type_sizeof(struct ws_dwtype_program *prog,
				       const struct ws_dwtype *type,
				       uint64_t *ret);

/* The pointed-to type of a pointer, or the element type of an array (a row
 * for a multi-dimensional one). */
struct ws_error *ws_dwtype_target(const struct ws_dwtype *type,
				  struct ws_dwtype *ret);

/* Writes a C-like (or, for Go, Go's own) name of the type into buf
 * ("struct task *", "int[4]", "*runtime.g"); returns buf. */
const char *ws_dwtype_name(const struct ws_dwtype *type, char *buf,
			   size_t size);

/* Resolves a member path without "->" or pointer indexing ("sched.sp",
 * "ctx.gregs[15]"): offset, size and type inside `type`. Cached per (type,
 * path): a repeated call is one hash lookup. `prog` holds the cache. */
struct ws_error *ws_dwtype_field(struct ws_dwtype_program *prog,
				 const struct ws_dwtype *type,
				 const char *path, struct ws_dwfield *ret);

/* Resolves a member path that may follow pointers ("->name", "[N]" on a
 * pointer) against `type`, once: each part between pointers through the
 * path cache. Reads no memory. Errors as ws_dwtype_field's, and a hop
 * through something that is not a pointer ("member path 'a->b': 'a'
 * (int) is not a pointer"), at most WS_DWPATH_MAX_HOPS - 1 pointers. */
struct ws_error *ws_dwtype_path(struct ws_dwtype_program *prog,
				const struct ws_dwtype *type, const char *path,
				struct ws_dwpath *ret);

/* Where the final field of `path` lies, for an object at `address` of the
 * type it was resolved against, whose first `size` bytes the caller holds
 * in `buf` (NULL, 0: none): a pointer inside buf is decoded from it, any
 * other read through the program's reader, one read per hop. A null
 * pointer on the way is an error. */
struct ws_error *ws_dwtype_path_locate(struct ws_dwtype_program *prog,
				       const struct ws_dwpath *path,
				       uint64_t address, const void *buf,
				       size_t size, uint64_t *ret);

/* Reads the final field of `path` as ws_dwtype_field_uint does: decoded
 * from buf, without a read, when the path has one hop; else one read per
 * hop (ws_dwtype_path_locate) and one of the field. */
struct ws_error *ws_dwtype_path_uint(struct ws_dwtype_program *prog,
				     const struct ws_dwpath *path,
				     uint64_t address, const void *buf,
				     size_t size, uint64_t *ret);

/* Decode an integer, enum, bool, pointer or bitfield `field` from `buf`, the
 * `size` bytes of an object of the field's containing type. Zero- or sign-
 * extended by the field's type; read_uint of a negative value returns its
 * two's complement. Errors: field outside buf, or not an integer. */
struct ws_error *ws_dwtype_field_uint(const struct ws_dwfield *field,
				      const void *buf, size_t size,
				      uint64_t *ret);
struct ws_error *ws_dwtype_field_int(const struct ws_dwfield *field,
				     const void *buf, size_t size,
				     int64_t *ret);

/* --- objects --- */

/* Follows a member path (see the top of this file) from `obj`. Offset parts
 * cost a cache lookup; each "->" or pointer "[N]" one read of a pointer
 * (served from obj->loaded when inside it). A null pointer is an error
 * naming the path prefix that held it. */
struct ws_error *ws_dwtype_member(const struct ws_dwobj *obj,
				  const char *path, struct ws_dwobj *ret);

/* The object at `field` (resolved against obj's type) inside obj. */
struct ws_error *ws_dwtype_field_object(const struct ws_dwobj *obj,
					const struct ws_dwfield *field,
					struct ws_dwobj *ret);

/* *obj: reads the pointer. Error if obj is not a pointer or is null. */
struct ws_error *ws_dwtype_deref(const struct ws_dwobj *obj,
				 struct ws_dwobj *ret);

/* obj[i]: an array's element (bounds-checked when the length is known; no
 * read), or a pointer's i-th pointee (reads the pointer). */
struct ws_error *ws_dwtype_index(const struct ws_dwobj *obj, uint64_t i,
				 struct ws_dwobj *ret);

struct ws_error *ws_dwtype_sizeof(const struct ws_dwobj *obj, uint64_t *ret);

/* Reads an integer (any width up to 8 bytes, bitfields), enum, bool or
 * pointer; same extension rules as ws_dwtype_field_uint. One read unless
 * loaded. */
struct ws_error *ws_dwtype_read_uint(const struct ws_dwobj *obj,
				     uint64_t *ret);
struct ws_error *ws_dwtype_read_int(const struct ws_dwobj *obj, int64_t *ret);

/* Reads a pointer's value; error if obj is not a pointer. */
struct ws_error *ws_dwtype_read_pointer(const struct ws_dwobj *obj,
					uint64_t *ret);

/* Reads a C string into buf (NUL-terminated, at most size - 1 bytes) from a
 * `char *`-like pointer (reads it, then the string a page at a time), a char
 * array (bounded by the array; one read) or an array of unknown length.
 * *ret is the string's length, or size when no NUL arrived within size - 1
 * bytes (truncated). size must be > 0. A null pointer is an error. */
struct ws_error *ws_dwtype_read_cstring(const struct ws_dwobj *obj, char *buf,
					size_t size, size_t *ret);

/* Reads a Go string (struct with `str` and `len`) into buf, NUL-terminated,
 * at most size - 1 bytes; *ret is the Go length (>= size: truncated). One
 * read of the header (unless loaded) and one of the bytes. */
struct ws_error *ws_dwtype_read_gostring(const struct ws_dwobj *obj,
					 char *buf, size_t size, size_t *ret);

/* Reads a Go slice header (struct with `array` pointer, `len`, `cap`). */
struct ws_error *ws_dwtype_slice(const struct ws_dwobj *obj,
				 struct ws_dwslice *ret);

/* Element i of a slice read by ws_dwtype_slice; i < len. No read. */
struct ws_error *ws_dwtype_slice_at(const struct ws_dwslice *slice,
				    uint64_t i, struct ws_dwobj *ret);

/* Reads all of obj (obj->size bytes, known) into buf (size >= obj->size) in
 * one read and returns obj with `loaded` pointing at buf: later reads of
 * obj, its members and elements inside it are served from buf. buf must
 * outlive the uses of *ret. */
struct ws_error *ws_dwtype_load(const struct ws_dwobj *obj, void *buf,
				size_t size, struct ws_dwobj *ret);

/* Like ws_dwtype_load for bytes the caller already read (e.g. many structs
 * with one ws_remote_readv): `bytes` are the target's `size` bytes at
 * obj->address. No read. */
void ws_dwtype_attach(const struct ws_dwobj *obj, const void *bytes,
		      size_t size, struct ws_dwobj *ret);

#endif
