/*
 * Tests of ws_symbols on this very process (built -O2 -g): its own noinline
 * functions, a return address, an always_inline function expanded into its
 * caller, libc (a few functions, then pcs all over it), an unmapped
 * address, the cache, refresh after dlopen. Then a Go program built at
 * test time (DWARF without .debug_aranges), checked against what the Go
 * runtime itself says of its addresses, and pcs all over it. What lookups
 * cost is bench/run's row 6 (bench/fixtures/symbol_lookup.c).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dlfcn.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "e2e_util.h"
#include "ws_symbols.h"

/* ---- fixtures: functions whose names and lines are known by construction.
 * noipa keeps each a real, uncloned function with an opaque body, so calls
 * stay calls; the empty asm after a call keeps it from being a tail call. */

enum { TARGET_FIRST_LINE = __LINE__ };
__attribute__((noipa)) int symbols_test_target(int x)
{
	return x * 3 + 1;
}
enum { TARGET_LAST_LINE = __LINE__ };

__attribute__((noipa)) void *symbols_test_return_address(void)
{
	return __builtin_return_address(0);
}

static int caller_call_line;

__attribute__((noipa)) void *symbols_test_caller(void)
{
	void *ra = symbols_test_return_address(); caller_call_line = __LINE__;
	__asm__ volatile("" ::: "memory");
	return ra;
}

static int inline_call_line;  /* the inlined body's call of the leaf */
static int host_call_line;    /* the host's "call" of the inlined body */

static inline __attribute__((always_inline)) void *symbols_test_inlined(void)
{
	void *ra = symbols_test_return_address(); inline_call_line = __LINE__;
	__asm__ volatile("" ::: "memory");
	return ra;
}

__attribute__((noipa)) void *symbols_test_inline_host(void)
{
	void *ra = symbols_test_inlined(); host_call_line = __LINE__;
	__asm__ volatile("" ::: "memory");
	return ra;
}

/* ---- helpers ---- */

static struct ws_symbols *create_self(void)
{
	struct ws_symbols *symbols = NULL;
	struct ws_error *err = ws_symbols_create(getpid(), &symbols);
	cr_assert_null(err, "ws_symbols_create: %s", err ? err->message : "");
	cr_assert_not_null(symbols);
	return symbols;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static uint64_t addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* ---- tests ---- */

Test(symbols, create_fails_for_missing_process)
{
	struct ws_symbols *symbols = NULL;
	/* Beyond the default pid_max (4194304): never a live process. */
	struct ws_error *err = ws_symbols_create(999999999, &symbols);
	cr_assert_not_null(err);
	cr_expect_eq(err->kind, WS_ERR_NO_PROCESS, "kind %d: %s", err->kind,
		     err->message);
	cr_expect_null(symbols);
	ws_error_destroy(err);
}

Test(symbols, names_own_function)
{
	struct ws_symbols *symbols = create_self();
	uint64_t pc = addr((void *)symbols_test_target);
	const struct ws_location *loc = ws_symbols_lookup(symbols, pc, false);

	cr_assert_eq(loc->nframes, 1);
	const struct ws_frame *f = &loc->frames[0];
	cr_assert_str_eq(f->function, "symbols_test_target");
	cr_expect_eq(f->address, pc);
	cr_expect_not(f->inlined);
	cr_assert_not_null(f->file);
	cr_expect(ends_with(f->file, "test_symbols.c"), "file %s", f->file);
	cr_expect(f->line > TARGET_FIRST_LINE && f->line < TARGET_LAST_LINE,
		  "line %d not in (%d, %d)", f->line, TARGET_FIRST_LINE,
		  TARGET_LAST_LINE);
	cr_assert_not_null(f->module);
	cr_expect(ends_with(f->module, "test_symbols"), "module %s",
		  f->module);
	cr_expect(strchr(f->module, '/') == NULL, "module %s is a path",
		  f->module);
	cr_expect_gt(f->module_offset, 0);
	cr_expect_lt(f->module_offset, pc);

	char buf[128];
	cr_expect_str_eq(ws_frame_display_name(f, buf, sizeof(buf)),
			 "symbols_test_target");
	ws_symbols_destroy(symbols);
}

Test(symbols, return_address_names_caller_and_call_line)
{
	struct ws_symbols *symbols = create_self();
	uint64_t ra = addr(symbols_test_caller());
	const struct ws_location *loc = ws_symbols_lookup(symbols, ra, true);

	cr_assert_eq(loc->nframes, 1);
	const struct ws_frame *f = &loc->frames[0];
	cr_assert_str_eq(f->function, "symbols_test_caller");
	cr_expect_eq(f->address, ra, "address is the pc as given");
	cr_expect_not(f->inlined);
	cr_assert_not_null(f->file);
	cr_expect(ends_with(f->file, "test_symbols.c"), "file %s", f->file);
	cr_expect_eq(f->line, caller_call_line);
	ws_symbols_destroy(symbols);
}

Test(symbols, inlined_call_is_expanded)
{
	struct ws_symbols *symbols = create_self();
	uint64_t ra = addr(symbols_test_inline_host());
	const struct ws_location *loc = ws_symbols_lookup(symbols, ra, true);

	cr_assert_eq(loc->nframes, 2, "nframes %zu", loc->nframes);
	const struct ws_frame *inner = &loc->frames[0];
	const struct ws_frame *outer = &loc->frames[1];

	cr_assert_str_eq(inner->function, "symbols_test_inlined");
	cr_expect(inner->inlined);
	cr_assert_not_null(inner->file);
	cr_expect(ends_with(inner->file, "test_symbols.c"), "file %s",
		  inner->file);
	cr_expect_eq(inner->line, inline_call_line);

	cr_assert_str_eq(outer->function, "symbols_test_inline_host");
	cr_expect_not(outer->inlined);
	cr_assert_not_null(outer->file);
	cr_expect(ends_with(outer->file, "test_symbols.c"), "file %s",
		  outer->file);
	cr_expect_eq(outer->line, host_call_line);

	/* One pc: all frames share address and module position. */
	cr_expect_eq(inner->address, ra);
	cr_expect_eq(outer->address, ra);
	cr_expect_eq(inner->module, outer->module);
	cr_expect_eq(inner->module_offset, outer->module_offset);
	ws_symbols_destroy(symbols);
}

static void expect_libc_function(struct ws_symbols *symbols, const void *fn,
				 const char *name)
{
	const struct ws_location *loc = ws_symbols_lookup(symbols, addr(fn),
							  false);
	const struct ws_frame *f = &loc->frames[loc->nframes - 1];
	cr_assert_not_null(f->function, "%s unnamed", name);
	/* DWARF names glibc's implementation (__getpid, __libc_write); the
	 * symbol table the public alias. Either contains the name. */
	cr_expect(strstr(f->function, name) != NULL, "%s resolved to %s",
		  name, f->function);
	cr_expect_not(f->inlined);
	cr_assert_not_null(f->module);
	cr_expect_str_eq(f->module, "libc.so.6");
	cr_log_info("%s -> %s %s:%d", name, f->function,
		    f->file ? f->file : "?", f->line);
}

Test(symbols, names_libc_functions)
{
	struct ws_symbols *symbols = create_self();
	expect_libc_function(symbols, (void *)getpid, "getpid");
	expect_libc_function(symbols, (void *)write, "write");
	ws_symbols_destroy(symbols);
}

Test(symbols, unmapped_address_is_unnamed)
{
	void *page = mmap(NULL, 4096, PROT_READ,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(page, MAP_FAILED);
	struct ws_symbols *symbols = create_self();

	uint64_t pc = addr(page) + 0x10;
	const struct ws_location *loc = ws_symbols_lookup(symbols, pc, false);
	cr_assert_eq(loc->nframes, 1);
	const struct ws_frame *f = &loc->frames[0];
	cr_expect_null(f->function);
	cr_expect_null(f->module);
	cr_expect_null(f->file);
	cr_expect_eq(f->address, pc);

	char buf[64], expected[64];
	snprintf(expected, sizeof(expected), "0x%" PRIx64, pc);
	cr_expect_str_eq(ws_frame_display_name(f, buf, sizeof(buf)),
			 expected);

	/* Gaps between modules: libdwfl's own lookup would name the module
	 * below (the stack's is usually ld.so). */
	int on_stack = 0;
	void *on_heap = malloc(64);
	uint64_t gaps[] = { addr(&on_stack), addr(on_heap) };
	for (size_t i = 0; i < 2; i++) {
		loc = ws_symbols_lookup(symbols, gaps[i], false);
		cr_expect_null(loc->frames[0].module, "%#" PRIx64 " in %s",
			       gaps[i], loc->frames[0].module);
		cr_expect_null(loc->frames[0].function);
	}
	free(on_heap);

	/* pc 0 as a return address must not wrap around. */
	loc = ws_symbols_lookup(symbols, 0, true);
	cr_expect_null(loc->frames[0].function);
	ws_symbols_destroy(symbols);
	munmap(page, 4096);
}

Test(symbols, display_name_falls_back_to_module_offset)
{
	struct ws_frame f = {
		.address = 0x7f0000001234,
		.module = "libfoo.so",
		.module_offset = 0x1234,
	};
	char buf[64];
	cr_expect_str_eq(ws_frame_display_name(&f, buf, sizeof(buf)),
			 "libfoo.so+0x1234");
	/* Truncates, still terminated. */
	cr_expect_str_eq(ws_frame_display_name(&f, buf, 4), "lib");
}

Test(symbols, repeated_lookup_is_cached)
{
	struct ws_symbols *symbols = create_self();
	uint64_t pc = addr((void *)symbols_test_target) + 1;
	const struct ws_location *a = ws_symbols_lookup(symbols, pc, false);
	const struct ws_location *b = ws_symbols_lookup(symbols, pc, false);
	cr_expect_eq(a, b);
	/* The flag is part of the key: pc - 1 may be another line. */
	const struct ws_location *c = ws_symbols_lookup(symbols, pc, true);
	cr_expect_neq(a, c);
	cr_expect_eq(c, ws_symbols_lookup(symbols, pc, true));

	/* Many distinct keys force the table to grow; earlier results keep
	 * their addresses. */
	for (uint64_t i = 0; i < 5000; i++)
		ws_symbols_lookup(symbols, 0x1000 + i * 16, false);
	cr_expect_eq(a, ws_symbols_lookup(symbols, pc, false));
	cr_expect_eq(c, ws_symbols_lookup(symbols, pc, true));
	cr_expect_str_eq(a->frames[0].function, "symbols_test_target");
	ws_symbols_destroy(symbols);
}

/* Libraries of Debian 12 that this test process does not load, each with
 * a function of its own: one is dlopened by the refresh tests. */
static const struct {
	const char *library, *function;
} candidates[] = {
	{ "libuuid.so.1", "uuid_generate" },
	{ "libexpat.so.1", "XML_ParserCreate" },
	{ "libgmp.so.10", "__gmpz_init" },
	{ "libacl.so.1", "acl_init" },
};

Test(symbols, refresh_finds_dlopened_library)
{
	struct ws_symbols *symbols = create_self();
	const struct ws_location *known = ws_symbols_lookup(
		symbols, addr((void *)symbols_test_target), false);

	void *handle = NULL, *fn = NULL;
	const char *library = NULL;
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]);
	     i++) {
		if (dlopen(candidates[i].library, RTLD_LAZY | RTLD_NOLOAD))
			continue;
		handle = dlopen(candidates[i].library, RTLD_LAZY);
		if (!handle)
			continue;
		fn = dlsym(handle, candidates[i].function);
		library = candidates[i].library;
		break;
	}
	if (!fn)
		cr_skip_test("no unloaded library to dlopen");

	const struct ws_location *before = ws_symbols_lookup(symbols,
							     addr(fn), false);
	cr_expect_null(before->frames[0].module, "module %s before refresh",
		       before->frames[0].module);

	struct ws_error *err = ws_symbols_refresh(symbols);
	cr_assert_null(err, "refresh: %s", err ? err->message : "");

	const struct ws_location *after = ws_symbols_lookup(symbols, addr(fn),
							    false);
	const struct ws_frame *f = &after->frames[after->nframes - 1];
	cr_assert_not_null(f->module);
	/* The file mapped, e.g. libuuid.so.1.3.0 for libuuid.so.1. */
	cr_expect(strncmp(f->module, library, strlen(library)) == 0,
		  "module %s for %s", f->module, library);
	cr_expect_not_null(f->function);
	/* Resolved addresses stay cached across a refresh. */
	cr_expect_eq(known, ws_symbols_lookup(
		symbols, addr((void *)symbols_test_target), false));
	ws_symbols_destroy(symbols);
	dlclose(handle);
}

/* A library mapped after the first read of the target's maps, from a file
 * deleted since: only /proc/PID/map_files opens it, and only once the
 * maps are read again (the finder keeps them from its first module). */
Test(symbols, refresh_opens_deleted_library_mapped_later)
{
	struct ws_symbols *symbols = create_self();
	/* Every module named once: the maps have been read. */
	ws_symbols_lookup(symbols, addr((void *)symbols_test_target), false);

	char dir[] = "/tmp/wallspy-symbols-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char copy[256] = "";
	void *handle = NULL, *fn = NULL;
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]) &&
			   !fn; i++) {
		char from[256], cmd[600];
		snprintf(from, sizeof(from), "/usr/lib/x86_64-linux-gnu/%s",
			 candidates[i].library);
		if (access(from, R_OK) != 0)
			continue;
		snprintf(copy, sizeof(copy), "%s/copy-%zu.so", dir, i);
		snprintf(cmd, sizeof(cmd), "cp -L '%s' '%s'", from, copy);
		if (system(cmd) != 0)
			continue;
		handle = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
		fn = handle ? dlsym(handle, candidates[i].function) : NULL;
		unlink(copy);
	}
	rmdir(dir);
	if (!fn)
		cr_skip_test("no library to copy and dlopen");

	struct ws_error *err = ws_symbols_refresh(symbols);
	cr_assert_null(err, "refresh: %s", err ? err->message : "");
	const struct ws_location *loc = ws_symbols_lookup(symbols, addr(fn),
							  false);
	const struct ws_frame *f = &loc->frames[loc->nframes - 1];
	cr_assert_not_null(f->function, "no function for %p in deleted %s",
			   fn, copy);
	ws_symbols_destroy(symbols);
	dlclose(handle);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

enum { NPCS = 1000 };

/* NPCS distinct pcs in the middle of mod's functions, spread over all of
 * it (the module's symbol table, through libdwfl); fills pcs. */
static void pcs_in_functions(Dwfl_Module *mod, uint64_t pcs[NPCS])
{
	int nsyms = dwfl_module_getsymtab(mod);
	cr_assert_gt(nsyms, NPCS);
	uint64_t *all = calloc((size_t)nsyms, sizeof(*all));
	cr_assert_not_null(all);
	size_t n = 0, unique = 0;
	for (int i = 0; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr value;
		if (dwfl_module_getsym_info(mod, i, &sym, &value, NULL, NULL, NULL) &&
		    GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_size > 0)
			all[n++] = value + sym.st_size / 2;
	}
	qsort(all, n, sizeof(*all), compare_u64);
	for (size_t i = 0; i < n; i++)
		if (unique == 0 || all[unique - 1] != all[i])
			all[unique++] = all[i];
	cr_assert_geq(unique, NPCS);
	for (size_t i = 0; i < NPCS; i++)
		pcs[i] = all[i * unique / NPCS];
	free(all);
}

/* Over all of libc (pcs in the middle of 1000 of its functions, most in a
 * CU of their own), nearly every lookup gets a name. What each costs is
 * measured by bench/run (row 6, bench/fixtures/symbol_lookup.c). */
Test(symbols, names_functions_all_over_libc, .timeout = 120)
{
	struct ws_symbols *symbols = create_self();
	Dwfl_Module *libc = dwfl_addrmodule(ws_symbols_dwfl(symbols),
					    addr((void *)write));
	cr_assert_not_null(libc);
	static uint64_t pcs[NPCS];
	pcs_in_functions(libc, pcs);
	size_t named = 0;
	for (size_t i = 0; i < NPCS; i++) {
		const struct ws_location *loc = ws_symbols_lookup(symbols, pcs[i], false);
		named += loc->frames[loc->nframes - 1].function != NULL;
	}
	cr_log_info("%zu of %d pcs in libc named", named, NPCS);
	cr_expect_gt(named, NPCS * 9 / 10, "only %zu of %d pcs in libc named",
		     named, NPCS);
	ws_symbols_destroy(symbols);
}

/* ---- a Go program, built at test time ---- */

/* Go 1.19 writes .debug_info, .debug_line and .debug_ranges but no
 * .debug_aranges, so libdw alone places no address in a CU. The program
 * prints "ready", then the addresses to check, each with what Go's own
 * runtime (pclntab, independent of DWARF) says of it, then blocks in the
 * noinline main.park:
 *   ready ENTRY FILE LINE                       main.park's first instruction
 *         PC FUNC FILE LINE FUNC FILE LINE      a return address in main.park
 *                                               inside the inlined main.inner
 *         PC FUNC FILE LINE                     the bottom frame's return
 *                                               address, in runtime.goexit */
static const char go_source[] =
	"package main\n"
	"\n"
	"import (\n"
	"\t\"fmt\"\n"
	"\t\"reflect\"\n"
	"\t\"runtime\"\n"
	"\t\"time\"\n"
	")\n"
	"\n"
	"// inner is inlined into park.\n"
	"func inner() {\n"
	"\treport()\n"
	"}\n"
	"\n"
	"//go:noinline\n"
	"func report() {\n"
	"\tvar pcs [32]uintptr\n"
	"\tn := runtime.Callers(2, pcs[:])\n"
	"\tentry := reflect.ValueOf(park).Pointer()\n"
	"\tfile, line := runtime.FuncForPC(entry).FileLine(entry)\n"
	"\tvar frames []runtime.Frame\n"
	"\tit := runtime.CallersFrames(pcs[:n])\n"
	"\tfor {\n"
	"\t\tf, more := it.Next()\n"
	"\t\tframes = append(frames, f)\n"
	"\t\tif !more {\n"
	"\t\t\tbreak\n"
	"\t\t}\n"
	"\t}\n"
	"\tlast := frames[len(frames)-1]\n"
	"\tfmt.Printf(\"ready %#x %s %d \"+\n"
	"\t\t\"%#x %s %s %d %s %s %d %#x %s %s %d\\n\",\n"
	"\t\tentry, file, line,\n"
	"\t\tpcs[0], frames[0].Function, frames[0].File, frames[0].Line,\n"
	"\t\tframes[1].Function, frames[1].File, frames[1].Line,\n"
	"\t\tpcs[n-1], last.Function, last.File, last.Line)\n"
	"}\n"
	"\n"
	"//go:noinline\n"
	"func park() {\n"
	"\tinner()\n"
	"\tfor {\n"
	"\t\ttime.Sleep(time.Hour)\n"
	"\t}\n"
	"}\n"
	"\n"
	"func main() {\n"
	"\tpark()\n"
	"}\n";

/* Where Go puts a pc. */
struct go_frame {
	char function[128];
	char file[512];
	int line;
};

/* The program's report. */
struct go_truth {
	uint64_t entry;			/* main.park's first instruction */
	struct go_frame entry_frame;
	uint64_t inlined_pc;		/* a return address */
	struct go_frame inlined[2];	/* main.inner (inlined), main.park */
	uint64_t goexit_pc;		/* a return address */
	struct go_frame goexit;
};

/* One program per test (each test runs in a process of its own), killed
 * by PID, reaped and removed with its directory by e2e_cleanup, the .fini
 * of the Go tests, whether the test passes or not. */
static pid_t go_pid = -1;

/* Builds go_source with `go build -ldflags=LDFLAGS` (tests/lib/e2e_util:
 * skipped where there is no Go toolchain), starts it and reads its
 * report. */
static void start_go(const char *ldflags, struct go_truth *truth)
{
	char *argv[] = { (char *)e2e_build_go(go_source, ldflags), NULL };
	struct e2e_spawn_opts opts = { .pipe_stdout = true };
	struct e2e_proc proc = e2e_spawn(argv, &opts);
	char line[4096];

	go_pid = proc.pid;
	cr_assert(e2e_wait_line_prefix(proc.out_fd, "ready ", line, sizeof(line),
				       10000), "%s never said ready", argv[0]);
	close(proc.out_fd);

	struct go_frame *e = &truth->entry_frame, *i0 = &truth->inlined[0],
			*i1 = &truth->inlined[1], *g = &truth->goexit;
	snprintf(e->function, sizeof(e->function), "main.park");
	int fields = sscanf(line,
		"ready %" SCNx64 " %511s %d "
		"%" SCNx64 " %127s %511s %d %127s %511s %d "
		"%" SCNx64 " %127s %511s %d",
		&truth->entry, e->file, &e->line,
		&truth->inlined_pc, i0->function, i0->file, &i0->line,
		i1->function, i1->file, &i1->line,
		&truth->goexit_pc, g->function, g->file, &g->line);
	cr_assert_eq(fields, 14, "report: %s", line);
	/* The premises: Go expands the inlined call, the goroutine starts in
	 * runtime.goexit. */
	cr_assert_str_eq(i0->function, "main.inner", "%s", line);
	cr_assert_str_eq(i1->function, "main.park", "%s", line);
	cr_assert_str_eq(g->function, "runtime.goexit", "%s", line);
}

static struct ws_symbols *create_go(void)
{
	struct ws_symbols *symbols = NULL;
	struct ws_error *err = ws_symbols_create(go_pid, &symbols);
	cr_assert_null(err, "ws_symbols_create: %s", err ? err->message : "");
	return symbols;
}

/* Checks one frame against Go's word for it. */
static void expect_go_frame(const struct ws_frame *f,
			    const struct go_frame *truth, bool inlined)
{
	cr_assert_not_null(f->function, "unnamed, Go says %s",
			   truth->function);
	cr_expect_str_eq(f->function, truth->function);
	cr_expect_eq(f->inlined, inlined, "%s inlined %d", f->function,
		     f->inlined);
	cr_assert_not_null(f->file, "%s has no file", f->function);
	cr_expect_str_eq(f->file, truth->file, "%s", f->function);
	cr_expect_eq(f->line, truth->line, "%s line %d, Go says %d",
		     f->function, f->line, truth->line);
	cr_expect_str_eq(f->module, "prog");
}

/* runtime.systemstack_switch, as a goroutine on the system stack shows
 * it: Go saves as the goroutine's pc the function's entry (Go 1.19) or
 * its entry + 8 (Go 1.21 on; runtime/asm_amd64.s,
 * gosave_systemstack_switch), a "return address" that is no return
 * address (Go's traceback backs up only a pc past its function's entry),
 * beyond the 1 byte the symbol table gives the function. The entry is the
 * symbol table's. */
static void expect_systemstack_switch(struct ws_symbols *symbols)
{
	uint64_t entry;
	cr_assert(ws_symbols_find_function(symbols, "runtime.systemstack_switch",
					   &entry), "no runtime.systemstack_switch");
	for (int skip = 0; skip <= 8; skip += 8) {
		const struct ws_location *loc =
			ws_symbols_lookup(symbols, entry + skip, true);
		const struct ws_frame *f = &loc->frames[loc->nframes - 1];
		cr_assert_not_null(f->function, "entry + %d unnamed", skip);
		cr_expect_str_eq(f->function, "runtime.systemstack_switch",
				 "entry + %d", skip);
	}
}

Test(symbols, go_functions_lines_and_inlining, .fini = e2e_cleanup,
     .timeout = 120)
{
	struct go_truth truth;
	start_go("", &truth);
	struct ws_symbols *symbols = create_go();

	/* A function's entry: one frame, in main.go, at the func line. */
	const struct ws_location *loc = ws_symbols_lookup(symbols, truth.entry,
							  false);
	cr_assert_eq(loc->nframes, 1, "nframes %zu", loc->nframes);
	expect_go_frame(&loc->frames[0], &truth.entry_frame, false);
	cr_expect(ends_with(loc->frames[0].file, ".go"), "file %s",
		  loc->frames[0].file);
	cr_expect_gt(loc->frames[0].line, 0);
	cr_expect_eq(loc->frames[0].address, truth.entry);

	/* Inside an inlined call: the callee, then its caller at the call. */
	loc = ws_symbols_lookup(symbols, truth.inlined_pc, true);
	cr_assert_eq(loc->nframes, 2, "nframes %zu: %s", loc->nframes,
		     loc->frames[0].function);
	expect_go_frame(&loc->frames[0], &truth.inlined[0], true);
	expect_go_frame(&loc->frames[1], &truth.inlined[1], false);

	/* An assembly function: DWARF's name, without the symbol table's
	 * ".abi0", and its line in the .s file. */
	loc = ws_symbols_lookup(symbols, truth.goexit_pc, true);
	cr_assert_eq(loc->nframes, 1, "nframes %zu", loc->nframes);
	expect_go_frame(&loc->frames[0], &truth.goexit, false);
	cr_expect(ends_with(loc->frames[0].file, ".s"), "file %s",
		  loc->frames[0].file);
	/* The pc itself (not a return address) is goexit's too. */
	loc = ws_symbols_lookup(symbols, truth.goexit_pc, false);
	cr_assert_not_null(loc->frames[0].function);
	cr_expect_str_eq(loc->frames[0].function, "runtime.goexit");
	expect_systemstack_switch(symbols);
	ws_symbols_destroy(symbols);
}

/* Without DWARF (-ldflags=-w) names come from the symbol table, where Go's
 * assembly functions carry their ABI: ".abi0" is dropped, as Go's
 * tracebacks do; and from Go's function table where the symbol table's
 * sizes fall short. */
Test(symbols, go_without_dwarf_drops_abi_suffix, .fini = e2e_cleanup,
     .timeout = 120)
{
	struct go_truth truth;
	start_go("-w", &truth);
	struct ws_symbols *symbols = create_go();

	const struct ws_location *loc = ws_symbols_lookup(symbols,
							  truth.goexit_pc,
							  true);
	cr_assert_eq(loc->nframes, 1);
	cr_assert_not_null(loc->frames[0].function);
	cr_expect_str_eq(loc->frames[0].function, "runtime.goexit");
	cr_expect_null(loc->frames[0].file);

	loc = ws_symbols_lookup(symbols, truth.entry, false);
	cr_assert_not_null(loc->frames[0].function);
	cr_expect_str_eq(loc->frames[0].function, "main.park");
	expect_systemstack_switch(symbols);
	ws_symbols_destroy(symbols);
}

/* Over all of the Go program (pcs in the middle of 1000 of its
 * functions), nearly every lookup gets a DWARF name, file and line: DWARF
 * without .debug_aranges still places every pc in its CU. The cost is
 * measured by bench/run (row 6). */
Test(symbols, go_names_and_lines_all_over_the_program, .fini = e2e_cleanup,
     .timeout = 120)
{
	struct go_truth truth;
	start_go("", &truth);
	struct ws_symbols *symbols = create_go();
	Dwfl_Module *prog = dwfl_addrmodule(ws_symbols_dwfl(symbols), truth.entry);
	cr_assert_not_null(prog);
	static uint64_t pcs[NPCS];
	pcs_in_functions(prog, pcs);
	size_t with_line = 0;
	for (size_t i = 0; i < NPCS; i++) {
		const struct ws_location *loc = ws_symbols_lookup(symbols, pcs[i], false);
		const struct ws_frame *f = &loc->frames[loc->nframes - 1];
		with_line += f->function && f->file && f->line > 0;
	}
	cr_log_info("%zu of %d pcs in the Go program named with a line",
		    with_line, NPCS);
	cr_expect_gt(with_line, NPCS * 9 / 10, "only %zu of %d pcs with a DWARF "
		     "name and line", with_line, NPCS);
	ws_symbols_destroy(symbols);
}
