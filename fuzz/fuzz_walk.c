/*
 * Fuzz target: the descriptor adapter's registry walk and task decoding
 * (runtime_descriptor_walk.c, runtime_descriptor.c) over hostile memory.
 * The runtime is made up: its types are this program's own (the structs
 * below, compiled with -g: DWARF is trusted, it comes from the binary on
 * disk), its registry every shape format 2 can say (a ring, a list with a
 * count, a sentinel ring through link members, an array of pointers with a
 * count, an array of structs behind a pointer, a current task), its tasks
 * decoded with registers saved on their stacks, pointer-mangled ones,
 * names behind pointers, wait-reason bits and stack bounds. The memory is
 * the fuzzer's input, served at the address of `fw` through the
 * ws_memory_reader the adapter reads through (no process: pid 0).
 *
 * Input: byte 0 picks the descriptor and whether the ticks are live,
 * byte 1 the sampling limit for arrays, the rest is the image. So that
 * pointers inside the image survive ASLR (the corpus stays meaningful),
 * every aligned 8-byte word of the image whose top 32 bits are
 * 0xa5a5a5a5 is relocated to the image's base plus its low 32 bits before
 * the walk; any other word is served as it is.
 *
 * What must hold: no crash or bad access whatever the bytes (cycles, wild
 * pointers, counts of 2^31 or -1), every task listed at most once per
 * tick, at most `max` tasks per tick plus one failed sample per root, and
 * a bounded number of reads.
 */
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_image.h"
#include "runtime_descriptor_internal.h"
#include "ws_random.h"
#include "ws_target.h"
#include "ws_task.h"

/* ---- the made-up runtime ---- */

struct fw_link {
	struct fw_link *next;
};

struct fw_string {           /* length-prefixed, as Crystal's String */
	int32_t type_id;
	int32_t bytesize;
	uint8_t c;
};

struct fw_task {
	long id;
	int state;               /* 1 runnable, 2 waiting, 3 running, 9 done */
	unsigned events;         /* wait reasons, a bit each */
	struct fw_task *next;
	struct fw_string *label;
	char name[16];
	uint64_t sp;             /* registers saved on the task's stack */
	uint64_t jb[3];          /* mangled ones, as glibc's setjmp */
	uint64_t stack_base;
	uint32_t stack_size;
	struct fw_link link;     /* intrusive lists point here */
	unsigned switches;
};

struct fw_queue {
	struct fw_task *head;
	long count;
};

struct fw_world {
	struct fw_task tasks[6];
	struct fw_queue ring, list;
	struct fw_link header;   /* a sentinel ring's header */
	struct fw_task *current;
	struct fw_task *table[6];
	long table_len;
	struct fw_task *dyn;     /* an array of task structs behind a pointer */
	long dyn_len;
	uint64_t stack[16];
};

/* The layout lives in DWARF; the object is never read directly. */
__attribute__((used)) struct fw_world fw;

/* Every shape at once, names as chars, registers on the stack. */
static const char every_root[] =
	"{\"wallspy\": \"runtime-descriptor/2\", \"name\": \"fw\","
	" \"registry\": {\"next\": \"next\", \"max\": 48, \"task\": \"struct fw_task\","
	"  \"roots\": ["
	"   {\"global\": \"fw.ring.head\", \"count\": \"fw.ring.count\", \"layout\": \"ring\"},"
	"   {\"global\": \"fw.list.head\", \"count\": \"fw.list.count\"},"
	"   {\"global\": \"fw.header\", \"layout\": \"sentinel-ring\", \"link\": \"link\"},"
	"   {\"global\": \"fw.table\", \"count\": \"fw.table_len\", \"layout\": \"pointer-array\"},"
	"   {\"global\": \"fw.dyn\", \"count\": \"fw.dyn_len\", \"layout\": \"array\"}],"
	"  \"current\": \"fw.current\"},"
	" \"task\": {\"id\": \"id\", \"name\": \"name\", \"switches\": \"switches\","
	"  \"state\": {\"member\": \"state\", \"values\": {\"1\": \"runnable\","
	"   \"2\": \"waiting\", \"3\": \"running\", \"9\": \"done\"}},"
	"  \"wait_reason\": {\"member\": \"events\", \"bits\": {\"0x10\": \"time\", \"0x20\": \"msg\"}},"
	"  \"stack\": {\"base\": \"stack_base\", \"size\": \"stack_size\"},"
	"  \"registers\": {\"rip\": {\"member\": \"sp\", \"at\": 8},"
	"   \"rsp\": {\"member\": \"sp\", \"add\": 16},"
	"   \"rbp\": {\"member\": \"sp\", \"at\": 0}}}}";

/* A list through pointers, names behind pointers, mangled registers and
 * a second register set. */
static const char mangled_list[] =
	"{\"wallspy\": \"runtime-descriptor/2\", \"name\": \"fw\","
	" \"registry\": {\"global\": \"fw.current->next\", \"next\": \"next->next\","
	"  \"max\": 32, \"current\": \"fw.current\"},"
	" \"task\": {\"name\": {\"member\": \"label\", \"length\": \"bytesize\", \"bytes\": \"c\"},"
	"  \"state\": {\"member\": \"state\", \"values\": {\"1\": \"runnable\","
	"   \"2\": \"waiting\", \"3\": \"running\", \"9\": \"done\"}},"
	"  \"wait_reason\": {\"member\": \"events\", \"bits\": {\"0x1\": \"fd\"}},"
	"  \"stack\": {\"lo\": \"stack_base\", \"hi\": \"sp\"},"
	"  \"registers\": [{\"rip\": {\"member\": \"jb[2]\", \"mangled\": true},"
	"    \"rsp\": {\"member\": \"jb[1]\", \"mangled\": true},"
	"    \"rbp\": \"jb[0]\"},"
	"   {\"rip\": {\"member\": \"sp\", \"at\": 8}, \"rsp\": \"sp\"}]}}";

static const char *const descriptors[] = { every_root, mangled_list };
enum { NDESC = sizeof(descriptors) / sizeof(descriptors[0]) };

/* ---- the harness ---- */

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

static struct fuzz_image image;
static struct ws_target target;      /* no process, no threads */
static struct ws_runtime *runtimes[NDESC];
static uint8_t *relocated;
static size_t relocated_size;

static void ignore_warning(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

static void setup(void)
{
	Dwfl *dwfl = dwfl_begin(&callbacks);
	if (!dwfl || dwfl_linux_proc_report(dwfl, getpid()) != 0 ||
	    dwfl_report_end(dwfl, NULL, NULL) != 0) {
		fprintf(stderr, "fuzz_walk: cannot report myself\n");
		abort();
	}
	image.base = (uint64_t)(uintptr_t)&fw;
	struct ws_memory_reader reader = fuzz_image_reader(&image);
	for (size_t i = 0; i < NDESC; i++) {
		struct ws_error *err = ws_descriptor_runtime_create(
			descriptors[i], "fuzz_walk.json", &target, dwfl, &reader,
			ignore_warning, NULL, &runtimes[i]);
		if (err) {
			fprintf(stderr, "fuzz_walk: descriptor %zu: %s\n", i,
				err->message);
			abort();
		}
	}
	/* With no thread to read fs_base from, glibc's pointer guard is
	 * given, so mangled registers are decoded rather than refused. */
	struct state *mangled = runtimes[1]->state;
	mangled->guard_known = true;
	mangled->guard = 0x5a5a5a5a12345678;
	/* dwfl stays: the runtimes borrow it for the fuzzer's lifetime. */
}

/* The image with its tagged words relocated (see the header). */
static void load_image(const uint8_t *data, size_t size)
{
	if (!relocated || size > relocated_size) {
		free(relocated);
		relocated_size = size ? size : 1;
		relocated = malloc(relocated_size);
		if (!relocated)
			abort();
	}
	memcpy(relocated, data, size);
	for (size_t off = 0; off + 8 <= size; off += 8) {
		uint64_t word;
		memcpy(&word, relocated + off, 8);
		if (word >> 32 == 0xa5a5a5a5u) {
			word = image.base + (word & 0xffffffffu);
			memcpy(relocated + off, &word, 8);
		}
	}
	image.bytes = relocated;
	image.size = size;
}

/* FUZZ_WALK_SHOW=1: each tick's tasks on stderr, to check what a corpus
 * input reaches (`FUZZ_WALK_SHOW=1 build/fuzz/fuzz/fuzz_walk FILE`). */
static bool show;

static void show_tick(const struct ws_error *err, const struct ws_task_list *list)
{
	if (err)
		fprintf(stderr, "tick: error: %s\n", err->message);
	for (size_t i = 0; !err && i < list->n; i++) {
		const struct ws_task *t = &list->tasks[i];
		fprintf(stderr, "tick: 0x%" PRIx64 " id %" PRIu64 " %s: %s\n",
			t->address, t->id, t->name ? t->name : "-",
			t->error ? t->error : "ok");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!runtimes[0]) {
		setup();
		show = getenv("FUZZ_WALK_SHOW") != NULL;
	}
	if (size < 2)
		return 0;
	struct ws_runtime *rt = runtimes[data[0] % NDESC];
	struct ws_random random;
	ws_random_seed(&random, 1);
	struct ws_read_context context = {
		.live = data[0] & 0x80,
		.limit = data[1] & 7,
		.random = &random,
	};
	load_image(data + 2, size - 2);
	image.reads = 0;

	/* Two ticks: the second reuses the visited set and the caches. */
	struct ws_task_list list = { 0 };
	for (int t = 0; t < 2; t++) {
		ws_task_list_clear(&list);
		struct ws_error *err = rt->ops->list_tasks(rt, &target, &context,
							   &list);
		if (show)
			show_tick(err, &list);
		if (err) {
			ws_error_destroy(err);
			continue;
		}
		/* At most `max` tasks and a failed sample per root (and the
		 * current task); each task struct listed once. */
		if (list.n > 48 + 6 + 1)
			abort();
		for (size_t i = 0; i < list.n; i++)
			for (size_t j = i + 1; j < list.n; j++)
				if (!list.tasks[i].error && !list.tasks[j].error &&
				    list.tasks[i].address == list.tasks[j].address)
					abort();
		if (context.live && list.n) {
			enum ws_reread result[64];
			err = rt->ops->reread(rt, &target, &context, list.tasks,
					      list.n < 64 ? list.n : 64, result);
			ws_error_destroy(err);
		}
	}
	ws_task_list_deinit(&list);
	/* A walk reads a bounded amount: a few reads per task and root. */
	if (image.reads > 4096)
		abort();
	return 0;
}
