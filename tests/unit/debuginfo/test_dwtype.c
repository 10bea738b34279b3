/*
 * Tests of ws_dwtype (typed reads over DWARF; process_vm_readv itself is
 * tests/unit/target/test_remote_memory.c). Against the live fixture
 * fixtures/dwtype_structs.c: member offsets against the compiler's own offsetof table, values known by
 * construction, paths, error messages, strings, slices, bulk loads. A Go
 * program built at test time, read through its runtime's registry
 * (runtime.allgs). Then the layer over an in-memory image of this process's
 * own globals, to show reads go only through the reader.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "e2e_util.h"
#include "ws_dwtype.h"
#include "ws_remote_memory.h"

#define FIXTURE WS_BUILD_DIR "/fixtures/dwtype_structs"
#define FIXTURE_NODEBUG WS_BUILD_DIR "/fixtures/dwtype_structs_nodebug"

/* ---- the live fixture ---- */

static pid_t child = -1;
static Dwfl *dwfl;
static struct ws_dwtype_program *prog;
static struct ws_memory_reader remote;

/* Counts reads, so tests can check "one read per struct". */
static unsigned long reads;
static struct ws_error *counting_read(void *arg, uint64_t address, void *buf,
				      size_t size)
{
	reads++;
	return ws_remote_read(*(pid_t *)arg, address, buf, size);
}

static void expect_ok(struct ws_error *err, const char *what)
{
	cr_assert_null(err, "%s: %s", what, err ? err->message : "");
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

/* Reports pid's modules into a fresh Dwfl (never attaching to it). */
static Dwfl *report(pid_t pid)
{
	Dwfl *d = dwfl_begin(&callbacks);
	cr_assert_not_null(d);
	cr_assert_eq(dwfl_linux_proc_report(d, pid), 0);
	cr_assert_eq(dwfl_report_end(d, NULL, NULL), 0);
	return d;
}

/* Starts the program at path, waits for its "ready" and opens the DWARF
 * layer over it (the fixture dies with the test: tests/lib/e2e_util). */
static void start(const char *path)
{
	char *argv[] = { (char *)path, NULL };

	child = e2e_start_ready(argv, "ready", 10000);
	dwfl = report(child);
	remote = (struct ws_memory_reader){ counting_read, &child };
	expect_ok(ws_dwtype_program_create(dwfl, &remote, &prog), "create");
}

static void start_fixture(void)
{
	start(FIXTURE);
}

static void start_nodebug(void)
{
	start(FIXTURE_NODEBUG);
}

/* The .fini of every test that starts a program. */
static void stop(void)
{
	ws_dwtype_program_destroy(prog);
	prog = NULL;
	if (dwfl)
		dwfl_end(dwfl);
	dwfl = NULL;
	e2e_cleanup();
	child = -1;
}

static struct ws_dwobj global(const char *name)
{
	struct ws_dwobj obj;
	expect_ok(ws_dwtype_global(prog, NULL, name, &obj), name);
	return obj;
}

static struct ws_dwobj member(const struct ws_dwobj *obj, const char *path)
{
	struct ws_dwobj out;
	expect_ok(ws_dwtype_member(obj, path, &out), path);
	return out;
}

static int64_t sval(const struct ws_dwobj *obj, const char *path)
{
	struct ws_dwobj m = member(obj, path);
	int64_t v;
	expect_ok(ws_dwtype_read_int(&m, &v), path);
	return v;
}

static uint64_t uval(const struct ws_dwobj *obj, const char *path)
{
	struct ws_dwobj m = member(obj, path);
	uint64_t v;
	expect_ok(ws_dwtype_read_uint(&m, &v), path);
	return v;
}

static uint64_t global_uint(const char *name)
{
	struct ws_dwobj obj = global(name);
	uint64_t v;
	expect_ok(ws_dwtype_read_uint(&obj, &v), name);
	return v;
}

static const char *member_type_name(const struct ws_dwobj *obj,
				    const char *path)
{
	static char buf[256];
	struct ws_dwobj m = member(obj, path);
	return ws_dwtype_name(&m.type, buf, sizeof(buf));
}

static struct ws_dwobj task(int i)
{
	struct ws_dwobj tasks = global("tasks"), t;
	expect_ok(ws_dwtype_index(&tasks, (uint64_t)i, &t), "tasks[i]");
	return t;
}

/* The error's message, checked for kind; the error is freed. */
static char *message(struct ws_error *err, enum ws_error_kind kind)
{
	static char buf[1024];
	cr_assert_not_null(err, "expected an error");
	cr_assert_eq(err->kind, kind, "kind %d for: %s", err->kind,
		     err->message);
	snprintf(buf, sizeof(buf), "%s", err->message);
	ws_error_destroy(err);
	return buf;
}

#define LIVE .init = start_fixture, .fini = stop, .timeout = 20

/* ---- offsets and sizes against the compiler ---- */

/* Reads the fixture's table of {path, offsetof, sizeof} through the layer and
 * with one raw read, and checks each path resolved from DWARF. */
Test(dwtype, offsets_match_compiler, LIVE)
{
	struct ws_dwobj table = global("task_fields");
	uint64_t count = global_uint("task_fields_count");
	cr_assert_gt(count, 20);
	cr_assert_eq(table.kind, WS_DWTYPE_ARRAY);
	cr_assert_eq(table.size, count * global_uint("sizeof_field_check"));

	/* The raw bytes of the table: three 8-byte words per entry. */
	uint64_t *raw = calloc(count * 3, sizeof(uint64_t));
	expect_ok(ws_remote_read(child, table.address, raw, count * 24), "raw");

	struct ws_dwtype task_type, task_typedef;
	expect_ok(ws_dwtype_find_type(prog, NULL, "struct task", &task_type),
		  "struct task");
	expect_ok(ws_dwtype_find_type(prog, NULL, "task_t", &task_typedef),
		  "task_t");
	for (uint64_t i = 0; i < count; i++) {
		struct ws_dwobj entry, path_obj;
		char path[128];
		size_t len;
		expect_ok(ws_dwtype_index(&table, i, &entry), "entry");
		path_obj = member(&entry, "path");
		expect_ok(ws_dwtype_read_cstring(&path_obj, path, sizeof(path),
						 &len), "path string");
		uint64_t offset = uval(&entry, "offset");
		uint64_t size = uval(&entry, "size");
		uint64_t path_ptr;
		expect_ok(ws_dwtype_read_pointer(&path_obj, &path_ptr), "ptr");
		cr_assert_eq(raw[3 * i], path_ptr);
		cr_assert_eq(raw[3 * i + 1], offset, "%s", path);
		cr_assert_eq(raw[3 * i + 2], size, "%s", path);

		struct ws_dwfield f, g;
		expect_ok(ws_dwtype_field(prog, &task_type, path, &f), path);
		cr_assert_eq(f.offset, offset, "%s: DWARF %" PRIu64
			     ", compiler %" PRIu64, path, f.offset, offset);
		cr_assert_eq(f.size, size, "%s: DWARF size %" PRIu64
			     ", compiler %" PRIu64, path, f.size, size);
		cr_assert_eq(f.bit_size, 0);
		expect_ok(ws_dwtype_field(prog, &task_typedef, path, &g), path);
		cr_assert_eq(g.offset, offset);
		cr_assert_eq(g.size, size);
	}
	free(raw);

	uint64_t size;
	expect_ok(ws_dwtype_type_sizeof(prog, &task_typedef, &size), "size");
	cr_assert_eq(size, global_uint("sizeof_task"));
}

/* ---- values ---- */

Test(dwtype, integers_of_every_width, LIVE)
{
	for (int i = 0; i < 3; i++) {
		struct ws_dwobj t = task(i);
		cr_assert_eq(sval(&t, "id"), 100 + i);
		cr_assert_eq(sval(&t, "i8"), -100);
		cr_assert_eq(sval(&t, "i16"), -30000);
		cr_assert_eq(uval(&t, "u64"), 0xfedcba9876543210ull);
		cr_assert_eq(uval(&t, "tag.u32"), 0x11223344u + (unsigned)i);
		cr_assert_eq(uval(&t, "tag.bytes[0]"), 0x44u + (unsigned)i);
		cr_assert_eq(uval(&t, "tag.bytes[3]"), 0x11);
		cr_assert_eq(sval(&t, "se"), -3);          /* signed enum */
		cr_assert_eq(uval(&t, "done"), 1);
		cr_assert_eq(sval(&t, "anon_a"), 7);       /* anonymous struct */
		cr_assert_eq(sval(&t, "anon_b"), -8);
		cr_assert_eq(sval(&t, "anon_u"), -123456789);
		/* const volatile enum: qualifiers peeled */
		cr_assert_eq(uval(&t, "state"), i == 0 ? 1u : i == 1 ? 4u : 6u);
	}
	struct ws_dwobj neg = global("negatives"), e;
	int64_t want[] = { -1, -128, -32768, INT64_MIN };
	for (int i = 0; i < 4; i++) {
		int64_t v;
		expect_ok(ws_dwtype_index(&neg, (uint64_t)i, &e), "idx");
		expect_ok(ws_dwtype_read_int(&e, &v), "neg");
		cr_assert_eq(v, want[i]);
	}
	/* A file-static variable is indexed too. */
	cr_assert_eq(global_uint("file_static"), 42);

	struct ws_dwobj three = global("three_bytes");
	cr_assert_eq(three.size, 3);
	cr_assert_eq(uval(&three, "[2]"), 0x83);
}

Test(dwtype, bitfields, LIVE)
{
	struct ws_dwobj t = task(1);
	cr_assert_eq(uval(&t, "flag_a"), 5);
	cr_assert_eq(sval(&t, "flag_b"), -7);
	cr_assert_eq(uval(&t, "wide"), 0x123456789aull);

	/* The same from a loaded buffer through resolved fields. */
	unsigned char buf[1024];
	struct ws_dwobj loaded;
	expect_ok(ws_dwtype_load(&t, buf, sizeof(buf), &loaded), "load");
	struct ws_dwfield fa, fb, fw;
	expect_ok(ws_dwtype_field(prog, &t.type, "flag_a", &fa), "fa");
	expect_ok(ws_dwtype_field(prog, &t.type, "flag_b", &fb), "fb");
	expect_ok(ws_dwtype_field(prog, &t.type, "wide", &fw), "fw");
	cr_assert_eq(fa.bit_size, 3);
	cr_assert_eq(fb.bit_size, 5);
	cr_assert_eq(fw.bit_size, 40);
	uint64_t u;
	int64_t s;
	expect_ok(ws_dwtype_field_uint(&fa, buf, t.size, &u), "a");
	cr_assert_eq(u, 5);
	expect_ok(ws_dwtype_field_int(&fb, buf, t.size, &s), "b");
	cr_assert_eq(s, -7);
	expect_ok(ws_dwtype_field_uint(&fw, buf, t.size, &u), "w");
	cr_assert_eq(u, 0x123456789aull);
	cr_assert_not_null(strstr(message(ws_dwtype_member(&t, "flag_a.x",
							   &loaded),
					  WS_ERR_OTHER), "bitfield"));
}

Test(dwtype, member_paths, LIVE)
{
	struct ws_dwobj t = task(1);
	cr_assert_eq(uval(&t, "ctx.mc.gregs[15]"), 0x1000 + 15);
	cr_assert_eq(uval(&t, "ctx.mc.gregs[0x10]"), 0x1000 + 16);
	cr_assert_eq(sval(&t, "ctx.flags"), 8);
	cr_assert_eq(sval(&t, "path[3].y"), -3);
	cr_assert_eq(sval(&t, "path[2].x"), 12);
	cr_assert_eq(sval(&t, "grid[2][3]"), 1203);
	cr_assert_eq(sval(&t, "grid[0][4]"), 1004);

	/* A row of a two-dimensional array, indexed step by step. */
	struct ws_dwobj row = member(&t, "grid[1]"), cell;
	char name[64];
	cr_assert_eq(row.kind, WS_DWTYPE_ARRAY);
	cr_assert_eq(row.size, 5 * sizeof(int));
	cr_assert_str_eq(ws_dwtype_name(&row.type, name, sizeof(name)),
			 "int[5]");
	expect_ok(ws_dwtype_index(&row, 4, &cell), "cell");
	cr_assert_eq(sval(&cell, ""), 1104);
	cr_assert_eq(sval(&row, "[2]"), 1102);

	/* Pointers: "->" and "[N]" on a pointer read them. */
	struct ws_dwobj head = global("green_all_tasks");
	cr_assert_eq(sval(&head, "->id"), 100);
	cr_assert_eq(sval(&head, "->next->next->id"), 102);
	cr_assert_eq(sval(&head, "[0].next->ctx.mc.gregs[16]"), 0x1000 + 16);
	cr_assert_eq(uval(&t, "name[5]"), '1');   /* "task-1" */
	struct ws_dwobj list = head;
	int n = 0;
	for (;;) {   /* walk the linked list the way an adapter would */
		uint64_t p;
		expect_ok(ws_dwtype_read_pointer(&list, &p), "p");
		if (!p)
			break;
		struct ws_dwobj node;
		expect_ok(ws_dwtype_deref(&list, &node), "deref");
		cr_assert_eq(sval(&node, "id"), 100 + n);
		list = member(&node, "next");
		n++;
	}
	cr_assert_eq(n, 3);

	cr_assert_str_eq(message(ws_dwtype_member(&head,
						  "->next->next->next->id",
						  &list), WS_ERR_OTHER),
			 "'->next->next->next' (struct task *) is a null pointer");

	/* Flexible array member: no bound in DWARF, indexing still works. */
	struct ws_dwobj flex = global("flex_obj"), items = member(&flex, "items");
	cr_assert_eq(items.size, WS_DWTYPE_SIZE_UNKNOWN);
	cr_assert_eq(sval(&flex, "items[2]"), 33);
}

Test(dwtype, types_and_names, LIVE)
{
	char name[256];
	struct ws_dwobj t = task(0);
	struct ws_dwtype ty;
	cr_assert_str_eq(ws_dwtype_name(&t.type, name, sizeof(name)), "task_t");
	cr_assert_str_eq(member_type_name(&t, "state"),
			 "const volatile enum task_state");
	cr_assert_str_eq(member_type_name(&t, "next"), "struct task *");
	cr_assert_str_eq(member_type_name(&t, "path"), "struct point[4]");
	cr_assert_str_eq(member_type_name(&t, "grid"), "int[3][5]");
	cr_assert_str_eq(member_type_name(&t, "grid[2]"), "int[5]");
	cr_assert_str_eq(member_type_name(&t, "opaque"), "void *");
	cr_assert_str_eq(member_type_name(&t, "name"), "name_t");
	cr_assert_eq(member(&t, "ratio").kind, WS_DWTYPE_FLOAT);
	cr_assert_eq(member(&t, "tag").kind, WS_DWTYPE_UNION);
	cr_assert_eq(member(&t, "ctx").kind, WS_DWTYPE_STRUCT);
	cr_assert_eq(member(&t, "name").kind, WS_DWTYPE_POINTER);
	cr_assert_eq(member(&t, "u64").kind, WS_DWTYPE_UNSIGNED);
	cr_assert_eq(member(&t, "se").kind, WS_DWTYPE_SIGNED);

	/* A bare name finds a struct tag when nothing else has it. */
	expect_ok(ws_dwtype_find_type(prog, NULL, "point", &ty), "point");
	cr_assert_str_eq(ws_dwtype_name(&ty, name, sizeof(name)),
			 "struct point");
	expect_ok(ws_dwtype_find_type(prog, "dwtype_structs", "int", &ty), "int");
	cr_assert_eq(ws_dwtype_kind(&ty), WS_DWTYPE_SIGNED);
	struct ws_dwtype target;
	struct ws_dwobj next = member(&t, "next");
	expect_ok(ws_dwtype_target(&next.type, &target), "target");
	cr_assert_str_eq(ws_dwtype_name(&target, name, sizeof(name)),
			 "struct task");
	/* ws_dwtype_object: a cast of a raw address. */
	struct ws_dwobj cast;
	expect_ok(ws_dwtype_object(prog, &target, task(2).address, &cast), "o");
	cr_assert_eq(sval(&cast, "id"), 102);
}

/* ---- errors ---- */

Test(dwtype, error_messages, LIVE)
{
	struct ws_dwobj obj, t = task(0);
	struct ws_dwobj id = member(&t, "id"), ratio = member(&t, "ratio");
	struct ws_dwobj ctx = member(&t, "ctx");
	struct ws_dwtype ty;
	struct ws_dwfield f;
	cr_assert_str_eq(message(ws_dwtype_global(prog, FIXTURE,
						  "green_all_taskz", &obj),
				 WS_ERR_NO_DEBUGINFO),
			 "no DWARF variable 'green_all_taskz' in " FIXTURE);
	/* By file name; and every module (libc, ld.so may have DWARF). */
	cr_assert_str_eq(message(ws_dwtype_global(prog, "dwtype_structs",
						  "nope", &obj),
				 WS_ERR_NO_DEBUGINFO),
			 "no DWARF variable 'nope' in " FIXTURE);
	const char *all = message(ws_dwtype_global(prog, NULL, "no_such_var_xyz",
						   &obj), WS_ERR_NO_DEBUGINFO);
	fprintf(stderr, "dwtype: all modules: %s\n", all);
	cr_assert_not_null(strstr(all, "no DWARF variable 'no_such_var_xyz' in "
				  FIXTURE), "%s", all);
	cr_assert_str_eq(message(ws_dwtype_global(prog, "libnothing.so", "x",
						  &obj), WS_ERR_OTHER),
			 "no module 'libnothing.so' in the target");
	cr_assert_str_eq(message(ws_dwtype_find_type(prog, FIXTURE,
						     "struct nothing", &ty),
				 WS_ERR_NO_DEBUGINFO),
			 "no DWARF type 'struct nothing' in " FIXTURE);

	cr_assert_str_eq(message(ws_dwtype_member(&t, "ctxx", &obj),
				 WS_ERR_NO_DEBUGINFO),
			 "type 'struct task' has no member 'ctxx'");
	cr_assert_str_eq(message(ws_dwtype_member(&t, "ctx.mc.regs[1]", &obj),
				 WS_ERR_NO_DEBUGINFO),
			 "type 'struct regs' has no member 'regs'");
	cr_assert_str_eq(message(ws_dwtype_deref(&id, &obj), WS_ERR_OTHER),
			 "type 'int' is not a pointer");
	cr_assert_str_eq(message(ws_dwtype_member(&t, "path[4]", &obj),
				 WS_ERR_OTHER),
			 "index 4 out of range for type 'struct point[4]'");
	cr_assert_str_eq(message(ws_dwtype_member(&t, "next.id", &obj),
				 WS_ERR_OTHER),
			 "type 'struct task *' is a pointer: follow it with '->id'");
	cr_assert_str_eq(message(ws_dwtype_member(&t, "id.x", &obj),
				 WS_ERR_OTHER),
			 "type 'int' is not a struct or union (member 'x')");
	cr_assert_str_eq(message(ws_dwtype_member(&t, "id[1]", &obj),
				 WS_ERR_OTHER),
			 "type 'int' is not an array or pointer");
	cr_assert_str_eq(message(ws_dwtype_member(&t, "ctx..flags", &obj),
				 WS_ERR_OTHER),
			 "bad member path 'ctx..flags': expected a member name at offset 4");
	cr_assert_str_eq(message(ws_dwtype_member(&t, "path[x]", &obj),
				 WS_ERR_OTHER),
			 "bad member path 'path[x]': expected [NUMBER] at offset 4");
	cr_assert_str_eq(message(ws_dwtype_field(prog, &t.type, "next->id", &f),
				 WS_ERR_OTHER),
			 "member path 'next->id' follows a pointer at offset 4; a field must lie inside the object");
	uint64_t u;
	cr_assert_str_eq(message(ws_dwtype_read_uint(&ratio, &u), WS_ERR_OTHER),
			 "type 'double' is not an integer");
	cr_assert_str_eq(message(ws_dwtype_read_uint(&ctx, &u), WS_ERR_OTHER),
			 "type 'struct context' is not an integer");
	cr_assert_str_eq(message(ws_dwtype_member(&t, "opaque->x", &obj),
				 WS_ERR_OTHER),
			 "'opaque' (void *) is a null pointer");

	/* A bad address: the reader's error passes through unchanged. */
	struct ws_dwobj bad, bad_id;
	int64_t v;
	expect_ok(ws_dwtype_object(prog, &t.type, 0x10, &bad), "object");
	bad_id = member(&bad, "id");
	cr_assert_str_eq(message(ws_dwtype_read_int(&bad_id, &v), WS_ERR_OTHER),
			 "read 0x10+4: Bad address");
}

Test(dwtype, no_debuginfo, .init = start_nodebug, .fini = stop,
     .timeout = 20)
{
	struct ws_dwobj obj;
	cr_assert_str_eq(message(ws_dwtype_global(prog, FIXTURE_NODEBUG,
						  "tasks", &obj),
				 WS_ERR_NO_DEBUGINFO),
			 "no DWARF debug info in " FIXTURE_NODEBUG
			 " (looking for variable 'tasks')");
}

/* ---- strings and slices ---- */

Test(dwtype, strings, LIVE)
{
	char buf[64];
	size_t len;
	struct ws_dwobj t = task(2), o;

	o = member(&t, "name");            /* typedef const char * */
	expect_ok(ws_dwtype_read_cstring(&o, buf, sizeof(buf), &len), "name");
	cr_assert_str_eq(buf, "task-2");
	cr_assert_eq(len, 6);
	o = member(&t, "label");           /* char[16] */
	expect_ok(ws_dwtype_read_cstring(&o, buf, sizeof(buf), &len), "label");
	cr_assert_str_eq(buf, "label-2");
	cr_assert_eq(len, 7);
	expect_ok(ws_dwtype_read_cstring(&o, buf, 4, &len), "short");
	cr_assert_str_eq(buf, "lab");
	cr_assert_eq(len, 4, "truncated: len == size");

	o = global("c_string");
	expect_ok(ws_dwtype_read_cstring(&o, buf, sizeof(buf), &len), "c");
	cr_assert_str_eq(buf, "hello from the fixture");
	expect_ok(ws_dwtype_read_cstring(&o, buf, 6, &len), "c short");
	cr_assert_str_eq(buf, "hello");
	cr_assert_eq(len, 6);

	o = global("go_name");
	expect_ok(ws_dwtype_read_gostring(&o, buf, sizeof(buf), &len), "go");
	cr_assert_str_eq(buf, "goroutine name");
	cr_assert_eq(len, 14);
	expect_ok(ws_dwtype_read_gostring(&o, buf, 5, &len), "go short");
	cr_assert_str_eq(buf, "goro");
	cr_assert_eq(len, 14);

	struct ws_dwobj names = global("go_names"), e;
	expect_ok(ws_dwtype_index(&names, 0, &e), "e");
	expect_ok(ws_dwtype_read_gostring(&e, buf, sizeof(buf), &len), "go0");
	cr_assert_str_eq(buf, "chan receive");
	expect_ok(ws_dwtype_index(&names, 1, &e), "e");
	expect_ok(ws_dwtype_read_gostring(&e, buf, sizeof(buf), &len), "go1");
	cr_assert_str_eq(buf, "");
	cr_assert_eq(len, 0);

	cr_assert_str_eq(message(ws_dwtype_read_gostring(&t, buf, sizeof(buf),
							 &len),
				 WS_ERR_NO_DEBUGINFO),
			 "type 'struct task' has no member 'str'");
}

Test(dwtype, go_slices, LIVE)
{
	struct ws_dwobj s = global("task_slice"), e, g;
	struct ws_dwslice slice;
	expect_ok(ws_dwtype_slice(&s, &slice), "slice");
	cr_assert_eq(slice.len, 3);
	cr_assert_eq(slice.cap, 4);
	cr_assert_eq(slice.elem_size, 8);
	int want[] = { 102, 100, 101 };
	for (uint64_t i = 0; i < slice.len; i++) {
		expect_ok(ws_dwtype_slice_at(&slice, i, &e), "at");
		expect_ok(ws_dwtype_deref(&e, &g), "deref");
		cr_assert_eq(sval(&g, "id"), want[i]);
		cr_assert_eq(sval(&e, "->id"), want[i]);
	}
	cr_assert_str_eq(message(ws_dwtype_slice_at(&slice, 3, &e),
				 WS_ERR_OTHER),
			 "index 3 out of range for a slice of length 3");
	/* The same elements through a path: "array[N]" indexes the pointer. */
	cr_assert_eq(sval(&s, "array[1]->id"), 100);
}

/* ---- bulk reads ---- */

Test(dwtype, bulk_loads, LIVE)
{
	struct ws_dwobj t = task(1), loaded;
	unsigned char buf[1024];
	cr_assert_lt(t.size, sizeof(buf));

	reads = 0;
	expect_ok(ws_dwtype_load(&t, buf, sizeof(buf), &loaded), "load");
	cr_assert_eq(reads, 1, "one read per struct");
	cr_assert_eq(sval(&loaded, "id"), 101);
	cr_assert_eq(uval(&loaded, "ctx.mc.gregs[15]"), 0x1000 + 15);
	cr_assert_eq(sval(&loaded, "grid[2][4]"), 1204);
	cr_assert_eq(sval(&loaded, "flag_b"), -7);
	cr_assert_eq(reads, 1, "fields come from the loaded bytes");
	cr_assert_eq(sval(&loaded, "next->id"), 102);   /* leaves the buffer */
	cr_assert_eq(reads, 2);
	char want[128];
	snprintf(want, sizeof(want), "load: object of %" PRIu64
		 " bytes does not fit a 8-byte buffer", t.size);
	cr_assert_str_eq(message(ws_dwtype_load(&t, buf, 8, &loaded),
				 WS_ERR_OTHER), want);

	/* All three tasks with one process_vm_readv, then decoded with
	 * resolved fields: the adapter's hot path. */
	static unsigned char many[3][1024];
	struct ws_remote_range ranges[3];
	for (int i = 0; i < 3; i++)
		ranges[i] = (struct ws_remote_range){
			task(i).address, many[i], t.size, 0 };
	cr_assert_eq(ws_remote_readv(child, ranges, 3), 3);
	struct ws_dwfield id, sp;
	expect_ok(ws_dwtype_field(prog, &t.type, "id", &id), "id");
	expect_ok(ws_dwtype_field(prog, &t.type, "ctx.mc.gregs[15]", &sp), "sp");
	reads = 0;
	for (int i = 0; i < 3; i++) {
		int64_t v;
		uint64_t u;
		expect_ok(ws_dwtype_field_int(&id, many[i], t.size, &v), "id");
		cr_assert_eq(v, 100 + i);
		expect_ok(ws_dwtype_field_uint(&sp, many[i], t.size, &u), "sp");
		cr_assert_eq(u, 0x1000u * (unsigned)i + 15);
		struct ws_dwobj at, o, ti = task(i);
		ws_dwtype_attach(&ti, many[i], t.size, &at);
		expect_ok(ws_dwtype_field_object(&at, &sp, &o), "fo");
		expect_ok(ws_dwtype_read_uint(&o, &u), "fo read");
		cr_assert_eq(u, 0x1000u * (unsigned)i + 15);
	}
	cr_assert_eq(reads, 0);
	int64_t v;
	cr_assert_str_eq(message(ws_dwtype_field_int(&id, many[0], 2, &v),
				 WS_ERR_OTHER),
			 "field at offset 0 lies outside a 2-byte buffer");
}

/* Resolving a path once and then from the cache: the second million costs
 * hash lookups only (printed, and bounded generously). */
Test(dwtype, path_cache, LIVE)
{
	struct ws_dwobj t = task(0);
	struct ws_dwfield f;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	expect_ok(ws_dwtype_field(prog, &t.type, "ctx.mc.gregs[15]", &f), "f");
	clock_gettime(CLOCK_MONOTONIC, &b);
	double first = (double)(b.tv_sec - a.tv_sec) * 1e9 +
		       (double)(b.tv_nsec - a.tv_nsec);
	enum { N = 100000 };
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < N; i++) {
		struct ws_dwfield g;
		expect_ok(ws_dwtype_field(prog, &t.type, "ctx.mc.gregs[15]",
					  &g), "g");
		cr_assert_eq(g.offset, f.offset);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double each = ((double)(b.tv_sec - a.tv_sec) * 1e9 +
		       (double)(b.tv_nsec - a.tv_nsec)) / N;
	fprintf(stderr, "dwtype: first resolve %.0f ns, cached %.0f ns\n",
		first, each);
	cr_assert_lt(each, 2000.0);
}

/* ---- a Go program: the runtime's own registry ---- */

/* Built at test time (the Go toolchain compiles this in well under a
 * second); the test is skipped where there is no `go`. */
static const char go_source[] =
	"package main\n"
	"import (\"fmt\"; \"time\")\n"
	"var blockers = make(chan int)\n"
	"func main() {\n"
	"	for i := 0; i < 10; i++ { go func() { <-blockers }() }\n"
	"	go func() { time.Sleep(time.Hour) }()\n"
	"	time.Sleep(50 * time.Millisecond)\n"
	"	fmt.Println(\"ready\")\n"
	"	select {}\n"
	"}\n";

/* Counts goroutines waiting with reason `want`, checking each one's saved
 * sp lies on its stack. Reads each runtime.g with one read. */
static int count_waiting(const char *want)
{
	struct ws_dwobj allgs = global("runtime.allgs");
	struct ws_dwobj reasons = global("runtime.waitReasonStrings");
	struct ws_dwslice gs;
	struct ws_dwtype g_type;
	struct ws_dwfield status, sp, lo, hi, reason;
	uint64_t g_size;
	expect_ok(ws_dwtype_slice(&allgs, &gs), "allgs");
	expect_ok(ws_dwtype_find_type(prog, NULL, "runtime.g", &g_type), "g");
	expect_ok(ws_dwtype_type_sizeof(prog, &g_type, &g_size), "sizeof g");
	/* uint32 in Go 1.19, atomic.Uint32{value} from 1.20 */
	expect_ok(ws_dwtype_field(prog, &g_type, "atomicstatus", &status), "st");
	if (status.kind == WS_DWTYPE_STRUCT)
		expect_ok(ws_dwtype_field(prog, &g_type, "atomicstatus.value",
					  &status), "st.value");
	expect_ok(ws_dwtype_field(prog, &g_type, "sched.sp", &sp), "sp");
	expect_ok(ws_dwtype_field(prog, &g_type, "stack.lo", &lo), "lo");
	expect_ok(ws_dwtype_field(prog, &g_type, "stack.hi", &hi), "hi");
	expect_ok(ws_dwtype_field(prog, &g_type, "waitreason", &reason), "wr");

	unsigned char *buf = malloc(g_size);
	int n = 0;
	for (uint64_t i = 0; i < gs.len; i++) {
		struct ws_dwobj slot, g, text;
		uint64_t st, spv, lov, hiv, wr;
		char name[64];
		size_t len;
		expect_ok(ws_dwtype_slice_at(&gs, i, &slot), "slot");
		expect_ok(ws_dwtype_deref(&slot, &g), "g");
		expect_ok(ws_remote_read(child, g.address, buf, g_size), "read g");
		expect_ok(ws_dwtype_field_uint(&status, buf, g_size, &st), "st");
		if ((st & ~0x1000u) != 4) /* _Gwaiting, _Gscan masked */
			continue;
		expect_ok(ws_dwtype_field_uint(&reason, buf, g_size, &wr), "wr");
		expect_ok(ws_dwtype_index(&reasons, wr, &text), "reason");
		expect_ok(ws_dwtype_read_gostring(&text, name, sizeof(name),
						  &len), "reason text");
		if (strcmp(name, want) != 0)
			continue;
		expect_ok(ws_dwtype_field_uint(&sp, buf, g_size, &spv), "sp");
		expect_ok(ws_dwtype_field_uint(&lo, buf, g_size, &lov), "lo");
		expect_ok(ws_dwtype_field_uint(&hi, buf, g_size, &hiv), "hi");
		cr_assert(lov <= spv && spv < hiv, "sp %#" PRIx64 " off stack",
			  spv);
		n++;
	}
	free(buf);
	return n;
}

Test(dwtype, go_runtime, .fini = stop, .timeout = 60)
{
	start(e2e_build_go(go_source, NULL));

	char text[64], name[64];
	size_t len;
	struct ws_dwobj version = global("runtime.buildVersion");
	expect_ok(ws_dwtype_read_gostring(&version, text, sizeof(text), &len),
		  "buildVersion");
	cr_assert_eq(strncmp(text, "go1.", 4), 0, "%s", text);
	struct ws_dwobj allgs = global("runtime.allgs");
	cr_assert_str_eq(ws_dwtype_name(&allgs.type, name, sizeof(name)),
			 "[]*runtime.g");

	/* The goroutines may still be parking: give them a moment. */
	int n = 0;
	for (int tries = 0; tries < 40 && (n = count_waiting("chan receive"))
			    != 10; tries++)
		usleep(50000);
	cr_assert_eq(n, 10);
	cr_assert_eq(count_waiting("sleep"), 1);

	/* runtime.allm -> procid is one of the process's threads. */
	struct ws_dwobj allm = global("runtime.allm"), procid, missing;
	uint64_t tid;
	expect_ok(ws_dwtype_member(&allm, "->procid", &procid), "procid");
	expect_ok(ws_dwtype_read_uint(&procid, &tid), "procid");
	char task_dir[64];
	snprintf(task_dir, sizeof(task_dir), "/proc/%d/task/%" PRIu64, child,
		 tid);
	cr_assert_eq(access(task_dir, F_OK), 0, "%s", task_dir);
	cr_assert_str_eq(message(ws_dwtype_member(&allm, "->no_such", &missing),
				 WS_ERR_NO_DEBUGINFO),
			 "type 'runtime.m' has no member 'no_such'");

	/* Go's named constants (runtime2.go: _Gwaiting = 4 since Go 1.0,
	 * _Gscan = 0x1000). */
	int64_t value;
	expect_ok(ws_dwtype_constant(prog, NULL, "runtime._Gwaiting", &value),
		  "_Gwaiting");
	cr_assert_eq(value, 4);
	expect_ok(ws_dwtype_constant(prog, NULL, "runtime._Gscan", &value),
		  "_Gscan");
	cr_assert_eq(value, 0x1000);
	struct ws_error *err = ws_dwtype_constant(prog, NULL,
						  "runtime._Gno_such", &value);
	cr_assert_not_null(err);
	cr_assert_eq(err->kind, WS_ERR_NO_DEBUGINFO);
	ws_error_destroy(err);
	/* A variable is no constant. */
	err = ws_dwtype_constant(prog, NULL, "runtime.allgs", &value);
	cr_assert_not_null(err);
	ws_error_destroy(err);
}

/* ---- the same layer over an in-memory image ---- */

struct img_node {
	int value;
	struct img_node *next;
	const char *label;
	unsigned short small[3];
};

struct img_world {
	struct img_node nodes[3];
	char text[32];
};

/* This process's own global, described by this test binary's DWARF. */
__attribute__((used)) struct img_world img_world = {
	.nodes = {
		{ 1, &img_world.nodes[1], img_world.text, { 1, 2, 3 } },
		{ 2, &img_world.nodes[2], img_world.text + 6, { 4, 5, 6 } },
		{ 3, NULL, NULL, { 7, 8, 9 } },
	},
	.text = "first\0second",
};

/* A snapshot of img_world served at its own addresses; everything else is
 * "unmapped". */
struct image {
	uint64_t base;
	unsigned char bytes[sizeof(struct img_world)];
	unsigned long reads;
};

static struct ws_error *image_read(void *arg, uint64_t address, void *buf,
				   size_t size)
{
	struct image *img = arg;
	img->reads++;
	if (address < img->base || address - img->base > sizeof(img->bytes) ||
	    size > sizeof(img->bytes) - (address - img->base))
		return ws_error_create(WS_ERR_OTHER,
				       "image: 0x%" PRIx64 "+%zu is outside",
				       address, size);
	memcpy(buf, img->bytes + (address - img->base), size);
	return NULL;
}

Test(dwtype, in_memory_image, .timeout = 20)
{
	static struct image img;
	img.base = (uint64_t)(uintptr_t)&img_world;
	memcpy(img.bytes, &img_world, sizeof(img_world));
	/* Change the live value: the layer must see the image only. */
	img_world.nodes[0].value = 1000;

	Dwfl *self = report(getpid());
	struct ws_memory_reader reader = { image_read, &img };
	struct ws_dwtype_program *p;
	expect_ok(ws_dwtype_program_create(self, &reader, &p), "create");

	struct ws_dwobj w, o;
	expect_ok(ws_dwtype_global(p, NULL, "img_world", &w), "img_world");
	cr_assert_eq(w.address, img.base);
	cr_assert_eq(w.size, sizeof(struct img_world));
	cr_assert_eq(img.reads, 0, "lookups read no memory");

	int64_t v;
	expect_ok(ws_dwtype_member(&w, "nodes[0].value", &o), "v0");
	expect_ok(ws_dwtype_read_int(&o, &v), "v0");
	cr_assert_eq(v, 1);
	expect_ok(ws_dwtype_member(&w, "nodes[0].next->next->value", &o), "v2");
	expect_ok(ws_dwtype_read_int(&o, &v), "v2");
	cr_assert_eq(v, 3);
	expect_ok(ws_dwtype_member(&w, "nodes[1].small[2]", &o), "small");
	expect_ok(ws_dwtype_read_int(&o, &v), "small");
	cr_assert_eq(v, 6);

	char buf[32];
	size_t len;
	expect_ok(ws_dwtype_member(&w, "nodes[1].label", &o), "label");
	expect_ok(ws_dwtype_read_cstring(&o, buf, sizeof(buf), &len), "str");
	cr_assert_str_eq(buf, "second");

	/* Load the whole image once; every later read is served from it. */
	static unsigned char copy[sizeof(struct img_world)];
	struct ws_dwobj lw;
	img.reads = 0;
	expect_ok(ws_dwtype_load(&w, copy, sizeof(copy), &lw), "load");
	expect_ok(ws_dwtype_member(&lw, "nodes[0].next->next->small[1]", &o),
		  "path");
	expect_ok(ws_dwtype_read_int(&o, &v), "small");
	cr_assert_eq(v, 8);
	cr_assert_eq(img.reads, 1, "one read: the load");

	/* A read outside the image fails with the reader's own error. */
	struct ws_dwobj out;
	expect_ok(ws_dwtype_object(p, &w.type, 0x1000, &out), "cast");
	expect_ok(ws_dwtype_member(&out, "nodes[2].value", &o), "far");
	cr_assert_str_eq(message(ws_dwtype_read_int(&o, &v), WS_ERR_OTHER),
			 "image: 0x1040+4 is outside");

	ws_dwtype_program_destroy(p);
	dwfl_end(self);
}

/* ---- paths through pointers, resolved once (ws_dwtype_path) ---- */

/* The C fixture's list, read through resolved paths: "next->next->id"
 * from tasks[0] is tasks[2]'s id (102), one hop per "->", and a path
 * without pointers is one hop at the compiler's offset. */
Test(dwtype, path_through_pointers, LIVE)
{
	struct ws_dwobj tasks = global("tasks");
	struct ws_dwobj t0;
	struct ws_dwtype task_type;
	struct ws_dwpath p;
	uint64_t v;

	expect_ok(ws_dwtype_index(&tasks, 0, &t0), "tasks[0]");
	task_type = t0.type;
	expect_ok(ws_dwtype_path(prog, &task_type, "next->next->id", &p), "path");
	cr_assert_eq(p.nhops, 3);
	cr_assert_eq(ws_dwpath_last(&p)->size, 4);
	reads = 0;
	expect_ok(ws_dwtype_path_uint(prog, &p, t0.address, NULL, 0, &v), "read");
	cr_assert_eq(v, 102);
	cr_assert_eq(reads, 3, "two pointers and the id: %lu reads", reads);

	/* With the outer struct in hand, its pointer costs no read. */
	static unsigned char copy[4096];
	cr_assert_leq(t0.size, sizeof(copy));
	expect_ok(ws_remote_read(child, t0.address, copy, (size_t)t0.size), "copy");
	reads = 0;
	expect_ok(ws_dwtype_path_uint(prog, &p, t0.address, copy, (size_t)t0.size,
				      &v), "from copy");
	cr_assert_eq(v, 102);
	cr_assert_eq(reads, 2);

	/* A pointer's [N] is an offset of N elements after the hop. */
	expect_ok(ws_dwtype_path(prog, &task_type, "next[1].id", &p), "index");
	cr_assert_eq(p.nhops, 2);
	expect_ok(ws_dwtype_path_uint(prog, &p, t0.address, NULL, 0, &v), "read");
	cr_assert_eq(v, 102, "tasks[1] + 1 is tasks[2]");

	/* One hop: the same field ws_dwtype_field resolves, no read. */
	struct ws_dwfield f;
	expect_ok(ws_dwtype_field(prog, &task_type, "ctx.mc.gregs[15]", &f), "field");
	expect_ok(ws_dwtype_path(prog, &task_type, "ctx.mc.gregs[15]", &p), "path");
	cr_assert_eq(p.nhops, 1);
	cr_assert_eq(p.hop[0].offset, f.offset);
	reads = 0;
	expect_ok(ws_dwtype_path_uint(prog, &p, t0.address, copy, (size_t)t0.size,
				      &v), "gregs");
	cr_assert_eq(v, 15);
	cr_assert_eq(reads, 0);

	/* tasks[2].next is null: the hop through it is an error. */
	struct ws_dwobj t2;
	expect_ok(ws_dwtype_index(&tasks, 2, &t2), "tasks[2]");
	expect_ok(ws_dwtype_path(prog, &task_type, "next->id", &p), "path");
	cr_assert_str_eq(message(ws_dwtype_path_uint(prog, &p, t2.address, NULL, 0,
						     &v), WS_ERR_OTHER),
			 "null pointer at hop 1 of a member path");
}

Test(dwtype, path_errors, LIVE)
{
	struct ws_dwobj tasks = global("tasks");
	struct ws_dwobj t0;
	struct ws_dwpath p;

	expect_ok(ws_dwtype_index(&tasks, 0, &t0), "tasks[0]");
	cr_assert_str_eq(message(ws_dwtype_path(prog, &t0.type, "id->x", &p),
				 WS_ERR_OTHER),
			 "member path 'id->x': 'id' (int) is not a pointer");
	cr_assert_str_eq(message(ws_dwtype_path(prog, &t0.type, "next->", &p),
				 WS_ERR_OTHER),
			 "bad member path 'next->': expected a member name at offset 6");
	cr_assert_str_eq(message(ws_dwtype_path(prog, &t0.type, "next->nope", &p),
				 WS_ERR_NO_DEBUGINFO),
			 "type 'struct task' has no member 'nope'");
	cr_assert_str_eq(message(ws_dwtype_path(prog, &t0.type,
			"next->next->next->next->next->next->next->next->id", &p),
				 WS_ERR_OTHER),
			 "member path 'next->next->next->next->next->next->next->next->id': more than 7 pointer hops");
}

/* ---- C++: qualified names, base classes, globals by ELF symbol ---- */

#define FIXTURE_CXX WS_BUILD_DIR "/fixtures/dwtype_cxx"

static void start_cxx(void)
{
	if (access(FIXTURE_CXX, X_OK) != 0)
		cr_skip_test("%s not built (needs g++)", FIXTURE_CXX);
	start(FIXTURE_CXX);
}

#define LIVE_CXX .init = start_cxx, .fini = stop, .timeout = 20

/* Two namespaces' globals of one bare name are two objects, each found by
 * its qualified name; the bare name still finds one of them. */
Test(dwtype_cxx, qualified_globals, LIVE_CXX)
{
	struct ws_dwobj app = global("app::main_ctx");
	struct ws_dwobj other = global("other::main_ctx");
	struct ws_dwobj bare = global("main_ctx");

	cr_assert_neq(app.address, other.address);
	cr_assert(bare.address == app.address || bare.address == other.address);
	cr_assert_eq(sval(&app, "a"), 11);
	cr_assert_eq(sval(&app, "b"), 12);
	cr_assert_eq(sval(&app, "inner.deep"), 13);
	cr_assert_eq(sval(&other, "x"), 21);
	const char *miss = message(ws_dwtype_global(prog, NULL, "third::main_ctx",
						    &bare), WS_ERR_NO_DEBUGINFO);
	cr_assert(strncmp(miss, "no DWARF variable 'third::main_ctx' in " FIXTURE_CXX,
			  strlen("no DWARF variable 'third::main_ctx' in " FIXTURE_CXX)) == 0,
		  "%s", miss);

	/* Types by qualified name; a class's nested type too. */
	struct ws_dwtype t;
	uint64_t size;
	expect_ok(ws_dwtype_find_type(prog, NULL, "app::Ctx", &t), "app::Ctx");
	expect_ok(ws_dwtype_type_sizeof(prog, &t, &size), "sizeof");
	cr_assert_eq(size, 3 * sizeof(long));
	expect_ok(ws_dwtype_find_type(prog, NULL, "other::Ctx", &t), "other::Ctx");
	expect_ok(ws_dwtype_type_sizeof(prog, &t, &size), "sizeof");
	cr_assert_eq(size, sizeof(long));
	expect_ok(ws_dwtype_find_type(prog, NULL, "app::Ctx::Inner", &t), "Inner");
	expect_ok(ws_dwtype_type_sizeof(prog, &t, &size), "sizeof");
	cr_assert_eq(size, sizeof(long));
}

/* A static member defined outside its class (DW_AT_specification) is found
 * by the qualified name of its declaration. */
Test(dwtype_cxx, static_member, LIVE_CXX)
{
	struct ws_dwobj head = global("app::Registry::head");
	struct ws_dwobj nodes = global("nodes");
	struct ws_dwobj n0;
	uint64_t v;

	expect_ok(ws_dwtype_read_pointer(&head, &v), "head");
	expect_ok(ws_dwtype_index(&nodes, 0, &n0), "nodes[0]");
	cr_assert(v > n0.address && v < n0.address + n0.size,
		  "head points into nodes[0] (its Hook part)");
	cr_assert_eq(sval(&head, "->pad"), 99);
}

/* Members of base classes, the second base at a nonzero offset, through
 * a resolved path with a hop: nodes[0].next_ points at nodes[1]'s Hook. */
Test(dwtype_cxx, base_class_members, LIVE_CXX)
{
	struct ws_dwobj nodes = global("nodes");
	struct ws_dwobj n0;
	struct ws_dwpath p;
	uint64_t v;

	expect_ok(ws_dwtype_index(&nodes, 0, &n0), "nodes[0]");
	cr_assert_eq(sval(&n0, "tag"), 7);
	cr_assert_eq(sval(&n0, "pad"), 99);
	cr_assert_eq(sval(&n0, "value"), 42);
	expect_ok(ws_dwtype_path(prog, &n0.type, "next_->pad", &p), "path");
	cr_assert_eq(p.nhops, 2);
	cr_assert_gt(p.hop[0].offset, 0, "Hook follows Tagged");
	expect_ok(ws_dwtype_path_uint(prog, &p, n0.address, NULL, 0, &v), "read");
	cr_assert_eq(v, 100);
}

/* A global found by its ELF symbol and typed by name is the same object
 * DWARF's variable gives; a missing symbol names itself. */
Test(dwtype_cxx, symbol_global, LIVE_CXX)
{
	struct ws_dwobj by_symbol, by_dwarf = global("app::main_ctx");

	expect_ok(ws_dwtype_symbol(prog, NULL, "_ZN3app8main_ctxE", "app::Ctx",
				   &by_symbol), "symbol");
	cr_assert_eq(by_symbol.address, by_dwarf.address);
	cr_assert_eq(by_symbol.size, by_dwarf.size);
	cr_assert_eq(sval(&by_symbol, "b"), 12);
	cr_assert_str_eq(message(ws_dwtype_symbol(prog, NULL, "no_such_symbol",
						  "app::Ctx", &by_symbol),
				 WS_ERR_NO_DEBUGINFO),
			 "no ELF symbol 'no_such_symbol' in the target's modules");
	/* other::main_ctx is 8 bytes: too small for an app::Ctx. */
	cr_assert_str_eq(message(ws_dwtype_symbol(prog, NULL, "_ZN5other8main_ctxE",
						  "app::Ctx", &by_symbol),
				 WS_ERR_OTHER),
			 "symbol '_ZN5other8main_ctxE' is 8 bytes, smaller than its type 'struct Ctx' (24)");
}
