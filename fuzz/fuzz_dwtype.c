/*
 * Fuzz target: the typed-memory layer (ws_dwtype.h) over hostile memory.
 * The types are this program's own (the structs below, compiled with -g:
 * DWARF is trusted, it comes from the binary on disk); the memory they are
 * read from is the fuzzer's input, served at the address of `world`. Every
 * operation a runtime adapter uses is run on it: member paths through
 * pointers, array and pointer indexing with input-chosen indices, integer,
 * C string and Go string reads, slices and bulk loads. The layer must fail
 * cleanly on any bytes: no crash, no read outside what it was asked to
 * read, and a bounded number of reads (no loop follows a pointer cycle).
 */
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_image.h"
#include "ws_dwtype.h"

struct node {
	int value;
	struct node *next;
	const char *label;
	char name[12];
	short small[3];
	unsigned flags : 5;
	signed delta : 7;
};

struct gostr {
	const uint8_t *str;
	long len;
};

struct goslice {
	struct node **array;
	long len;
	long cap;
};

struct world {
	struct node nodes[4];
	struct node *head;
	struct gostr names[3];
	struct goslice all;
	uint64_t count;
	unsigned char raw[64];
};

/* The layout lives in DWARF; the object is never read directly. */
__attribute__((used)) struct world world;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

static struct fuzz_image image;
static struct ws_dwtype_program *prog;
static struct ws_dwobj root;

static void setup(void)
{
	Dwfl *dwfl = dwfl_begin(&callbacks);
	if (!dwfl || dwfl_linux_proc_report(dwfl, getpid()) != 0 ||
	    dwfl_report_end(dwfl, NULL, NULL) != 0) {
		fprintf(stderr, "fuzz_dwtype: cannot report myself\n");
		abort();
	}
	struct ws_memory_reader reader = fuzz_image_reader(&image);
	struct ws_error *err = ws_dwtype_program_create(dwfl, &reader, &prog);
	if (!err)
		err = ws_dwtype_global(prog, NULL, "world", &root);
	if (err) {
		fprintf(stderr, "fuzz_dwtype: %s\n", err->message);
		abort();
	}
	image.base = root.address;
}

/* Paths an adapter might follow, through pointers the input controls. */
static const char *const paths[] = {
	"head", "head->next", "head->next->next->next->value",
	"head->label", "head->name", "nodes[1].next->small[2]",
	"nodes[3].flags", "nodes[2].delta", "nodes[0].next->next->label",
	"names[0]", "names[2].len", "all", "count", "raw[63]",
	"head->next->name[11]", "nodes[0].next->next->next->next->next",
};

/* Errors are data here: the layer reports, the fuzzer goes on. */
static void check(struct ws_error *err)
{
	ws_error_destroy(err);
}

static bool ok(struct ws_error *err)
{
	ws_error_destroy(err);
	return err == NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!prog)
		setup();
	if (size < 4)
		return 0;
	/* The first bytes choose operations, the rest is the memory. */
	uint8_t ops = data[0], which = data[1];
	uint16_t index;
	memcpy(&index, data + 2, 2);
	image.bytes = data + 4;
	image.size = size - 4;
	image.reads = 0;

	struct ws_dwobj obj, elem;
	uint64_t u;
	int64_t i;
	char buf[48];
	size_t len;
	const char *path = paths[which % (sizeof(paths) / sizeof(paths[0]))];
	if (ok(ws_dwtype_member(&root, path, &obj))) {
		check(ws_dwtype_read_uint(&obj, &u));
		check(ws_dwtype_read_int(&obj, &i));
		check(ws_dwtype_read_cstring(&obj, buf, sizeof(buf), &len));
		check(ws_dwtype_read_gostring(&obj, buf, sizeof(buf), &len));
		if (ok(ws_dwtype_index(&obj, index % 8, &elem)))
			check(ws_dwtype_read_uint(&elem, &u));
		if (ok(ws_dwtype_deref(&obj, &elem)))
			check(ws_dwtype_member(&elem, "next->next", &elem));
	}
	if (ops & 1) {
		struct ws_dwslice slice;
		if (ok(ws_dwtype_member(&root, "all", &obj)) &&
		    ok(ws_dwtype_slice(&obj, &slice)) && slice.len &&
		    ok(ws_dwtype_slice_at(&slice, index % slice.len, &elem)) &&
		    ok(ws_dwtype_deref(&elem, &elem)))
			check(ws_dwtype_member(&elem, "label", &elem));
	}
	if (ops & 2) {
		/* A bulk load of the whole world, then reads served from it. */
		static uint8_t copy[sizeof(struct world)];
		struct ws_dwobj loaded;
		if (ok(ws_dwtype_load(&root, copy, sizeof(copy), &loaded)) &&
		    ok(ws_dwtype_member(&loaded, path, &obj)))
			check(ws_dwtype_read_cstring(&obj, buf, sizeof(buf),
						     &len));
	}
	if (ops & 4) {
		/* Walk a list the input links, as a registry walk does, with
		 * the walker's own bound. */
		bool going = ok(ws_dwtype_member(&root, "head", &obj));
		for (int n = 0; going && n < 64; n++) {
			uint64_t next;
			going = ok(ws_dwtype_read_pointer(&obj, &next)) && next &&
				ok(ws_dwtype_deref(&obj, &elem)) &&
				ok(ws_dwtype_member(&elem, "next", &obj));
		}
	}
	/* Every operation above reads a bounded amount: a string a page at
	 * a time, a path one pointer per hop. */
	if (image.reads > 4096)
		abort();
	return 0;
}
