/*
 * End-to-end tests of wallspy on live Go programs (fixtures/go), judged
 * against the one truth nobody here wrote: the Go runtime's own traceback
 * (runtime.Stack(buf, true), which go_fidelity writes on SIGUSR1, parsed by
 * go_traceback.c) and the target's ELF symbol table. Covered here: `dump`
 * fidelity for every parked goroutine (goids, frames, lines, return
 * addresses, wait reasons, "created by"), runtime selection, the no-DWARF
 * error, and dump at 100k goroutines. Recording (the seed's workloads, the
 * pause at 10k goroutines) is in test_e2e_go_record.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "e2e_util.h"
#include "elf_util.h"
#include "wallspy_run.h"
#include "go_traceback.h"

/* Timing-sensitive (the 100k dump is timed) and CPU-heavy: one at a time. */
E2E_SERIAL_TESTS()

enum {
	/* Go 1.19's traceback walks at most this many physical frames
	 * (_TracebackMaxFrames); deeper frames are never printed. */
	GO_MAX_FRAMES = 100,
	/* go_fidelity.go: recurseTruncated/recurseElided depth. */
	ELIDED_DEPTH = 150,
	/* go_fidelity.go's table: goroutines parked by construction. */
	FIDELITY_PARKED = 106,
};

/* ---- fixtures ---- */

/* Path of Go fixture NAME; skips the test when the Go fixtures were not
 * built (no `go` at configure time). */
static const char *go_fixture(const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "go/%s", name);
	return e2e_need_fixture(path);
}

/* A running fixture: stdout piped (for "ready"/"dumped"), registered with
 * e2e_util so .fini kills it on any failure. */
struct go_target {
	struct e2e_proc proc;
	const char *dump_path;   /* go_fidelity's DUMPFILE, or NULL */
};

/* Starts fixture `name` with args and waits for its "ready pid=PID". */
static struct go_target start_go(const char *name, const char *const args[],
				 int ready_timeout_ms)
{
	char path[64];

	snprintf(path, sizeof(path), "go/%s", name);
	return (struct go_target){ e2e_start_go(path, args, ready_timeout_ms),
				   NULL };
}

/* go_fidelity with its dump file in a fresh temporary directory. */
static struct go_target start_fidelity(void)
{
	const char *dump = e2e_path(e2e_tmpdir(), "go-stacks.txt");
	const char *args[] = { dump, NULL };
	struct go_target t = start_go("go_fidelity", args, 30000);

	t.dump_path = dump;
	return t;
}

/* Asks go_fidelity for runtime.Stack(buf, true) and parses it. */
static struct ws_go_traceback *go_own_traceback(struct go_target *t)
{
	struct ws_go_traceback *tb = NULL;

	cr_assert_eq(kill(t->proc.pid, SIGUSR1), 0);
	cr_assert(e2e_wait_line(t->proc.out_fd, "dumped", 30000),
		  "go_fidelity never printed \"dumped\"");
	struct ws_error *err = ws_go_traceback_parse_file(t->dump_path, &tb);
	cr_assert_null(err, "Go's traceback: %s", err ? err->message : "");
	return tb;
}

/* After wallspy is done with it: the target runs, no thread is stopped,
 * and it exits 0 on SIGTERM (every Go fixture does). */
static void stop_go_healthy(struct go_target *t)
{
	int status;

	cr_assert(e2e_running_not_stopped(t->proc.pid, 5, 20),
		  "target %d (or a thread) stopped after wallspy", t->proc.pid);
	cr_assert_eq(kill(t->proc.pid, SIGTERM), 0);
	cr_assert(e2e_wait_timeout(t->proc.pid, 10000, &status),
		  "target did not exit on SIGTERM");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "target ended with status %#x, expected exit 0", status);
	close(t->proc.out_fd);
}

/* ---- running wallspy ---- */

/* `wallspy dump --json [--runtime RUNTIME] PID`, parsed. */
static cJSON *dump_json(pid_t pid, const char *runtime)
{
	const char *with_runtime[] = { "--runtime", runtime, NULL };

	return e2e_dump_json(pid, runtime ? with_runtime : NULL);
}

static const char *str_of(const cJSON *obj, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(obj, key));
}

static long long_of(const cJSON *obj, const char *key)
{
	const cJSON *item = cJSON_GetObjectItem(obj, key);

	return cJSON_IsNumber(item) ? (long)item->valuedouble : -1;
}

/* ---- the target's symbol table (for return-address checks) ---- */

/* Entry of function `name` (tests/lib/elf_util: assembly carries ".abi0"
 * in .symtab). Go's fixtures are static, not PIE: link-time addresses are
 * run-time ones. */
static bool symtab_entry(const struct e2e_symtab *st, const char *name,
			 unsigned long *entry)
{
	const struct e2e_sym *sym = e2e_symtab_find(st, name);

	if (!sym || !sym->is_function)
		return false;
	*entry = sym->value;
	return true;
}

/* ---- wallspy's goroutines ---- */

struct ws_frame_view {
	char *name;           /* generics normalized to "[...]" as Go prints
	                         them; NULL when unsymbolized */
	const char *raw_name; /* as wallspy printed it (the DWARF name) */
	const char *file;
	long line;
	bool inlined;
	unsigned long address;
};

struct ws_goroutine {
	long id;
	const char *state;
	const char *wait_reason;
	const char *error;
	struct ws_frame_view *frames;   /* innermost first */
	size_t nframes;
};

/*
 * Go prints a generic function's type arguments as "[...]"; DWARF (and so
 * wallspy) spells the shape: "main.parkGeneric[go.shape.int_0]". Replaces
 * every outermost bracket group with "[...]".
 */
static char *normalize_generics(const char *name)
{
	size_t len = strlen(name);
	char *out = malloc(len + 6);
	size_t o = 0;

	cr_assert_not_null(out);
	for (size_t i = 0; i < len; i++) {
		if (name[i] != '[') {
			out[o++] = name[i];
			continue;
		}
		int depth = 0;
		size_t j = i;
		for (; j < len; j++) {
			depth += name[j] == '[' ? 1 : name[j] == ']' ? -1 : 0;
			if (depth == 0)
				break;
		}
		memcpy(out + o, "[...]", 5);
		o += 5;
		i = j;          /* at the matching ']' (or the end) */
	}
	out[o] = '\0';
	return out;
}

static struct ws_goroutine *load_ws_goroutines(const cJSON *root, size_t *count)
{
	const cJSON *tasks = cJSON_GetObjectItem(root, "tasks");
	size_t n = (size_t)cJSON_GetArraySize(tasks), i = 0;
	struct ws_goroutine *gs = calloc(n ? n : 1, sizeof(*gs));
	const cJSON *task;

	cr_assert_not_null(gs);
	cJSON_ArrayForEach(task, tasks) {
		struct ws_goroutine *g = &gs[i++];
		const cJSON *frames = cJSON_GetObjectItem(task, "frames");
		const cJSON *frame;
		size_t k = 0;

		g->id = long_of(task, "id");
		g->state = str_of(task, "state");
		g->wait_reason = str_of(task, "wait_reason");
		g->error = str_of(task, "error");
		g->nframes = (size_t)cJSON_GetArraySize(frames);
		g->frames = calloc(g->nframes ? g->nframes : 1, sizeof(*g->frames));
		cr_assert_not_null(g->frames);
		cJSON_ArrayForEach(frame, frames) {
			struct ws_frame_view *f = &g->frames[k++];
			const char *fn = str_of(frame, "function");
			const char *address = str_of(frame, "address");

			f->raw_name = fn;
			f->name = fn ? normalize_generics(fn) : NULL;
			f->file = str_of(frame, "file");
			f->line = long_of(frame, "line");
			f->inlined = cJSON_IsTrue(cJSON_GetObjectItem(frame, "inlined"));
			f->address = address ? strtoul(address, NULL, 16) : 0;
		}
	}
	*count = n;
	return gs;
}

static void free_ws_goroutines(struct ws_goroutine *gs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < gs[i].nframes; k++)
			free(gs[i].frames[k].name);
		free(gs[i].frames);
	}
	free(gs);
}

static const struct ws_goroutine *find_ws(const struct ws_goroutine *gs,
					  size_t n, long id)
{
	for (size_t i = 0; i < n; i++)
		if (gs[i].id == id)
			return &gs[i];
	return NULL;
}

/* The goroutine's entry: the frame just inside runtime.goexit (Go's
 * startpc function, or the compiler's go-statement wrapper), or NULL. */
static const char *entry_function(const struct ws_goroutine *g)
{
	for (size_t k = 1; k < g->nframes; k++)
		if (g->frames[k].name && strcmp(g->frames[k].name, "runtime.goexit") == 0)
			return g->frames[k - 1].name;
	return NULL;
}

/* ---- printing chains (for mismatch reports) ---- */

struct strbuf {
	char *s;
	size_t len, cap;
};

static void sb_printf(struct strbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;

	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		int n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		b->cap = b->cap ? 2 * b->cap + (size_t)n : 256 + (size_t)n;
		b->s = realloc(b->s, b->cap);
		cr_assert_not_null(b->s);
	}
}

/* "a:12 <- b:7 (inl) <- c:3 x97 <- ..." innermost first; runs of equal
 * frames collapsed. */
static void chain_text_go(struct strbuf *b, const struct ws_go_goroutine *g)
{
	for (size_t k = 0; k < g->nframes;) {
		size_t run = 1;

		while (k + run < g->nframes &&
		       strcmp(g->frames[k + run].function, g->frames[k].function) == 0)
			run++;
		sb_printf(b, "%s%s:%d%s", k ? " <- " : "", g->frames[k].function,
			  g->frames[k].line, g->frames[k].inlined ? " (inl)" : "");
		if (run > 1)
			sb_printf(b, " x%zu", run);
		k += run;
	}
	if (g->frames_elided)
		sb_printf(b, " <- ...elided...");
}

static void chain_text_ws(struct strbuf *b, const struct ws_goroutine *g)
{
	for (size_t k = 0; k < g->nframes;) {
		size_t run = 1;
		const char *name = g->frames[k].name ? g->frames[k].name : "?";

		while (k + run < g->nframes && g->frames[k + run].name &&
		       strcmp(g->frames[k + run].name, name) == 0)
			run++;
		sb_printf(b, "%s%s:%ld%s", k ? " <- " : "", name,
			  g->frames[k].line, g->frames[k].inlined ? " (inl)" : "");
		if (run > 1)
			sb_printf(b, " x%zu", run);
		k += run;
	}
	if (g->error)
		sb_printf(b, " [error: %s]", g->error);
}

/* ---- frame matching ---- */

static bool is_parked(const char *go_state)
{
	return strcmp(go_state, "running") != 0 && strcmp(go_state, "runnable") != 0;
}

/* Go's traceback hides unexported runtime functions (showfuncinfo:
 * "runtime." prefix unless the next character is upper case). */
static bool hidden_runtime_frame(const char *name)
{
	return strncmp(name, "runtime.", 8) == 0 &&
	       !(name[8] >= 'A' && name[8] <= 'Z');
}

/* A compiler-made closure name: "...funcN". */
static bool is_funcN(const char *name)
{
	return e2e_match(name, "\\.func[0-9]+$");
}

static bool same_location(const struct ws_go_frame *gf,
			  const struct ws_frame_view *wf)
{
	return wf->file && strcmp(gf->file, wf->file) == 0 && gf->line == wf->line;
}

/* Greedy subsequence match of Go's frames in wallspy's: map[i] = index in
 * ws of Go frame i. by_location: also file:line must agree. Greedy is exact
 * for "is a subsequence" with a fixed equality. */
static bool match_frames(const struct ws_go_goroutine *go,
			 const struct ws_goroutine *ws, bool by_location,
			 size_t *map)
{
	size_t j = 0;

	for (size_t i = 0; i < go->nframes; i++) {
		const struct ws_go_frame *gf = &go->frames[i];

		while (j < ws->nframes &&
		       !(ws->frames[j].name &&
			 strcmp(ws->frames[j].name, gf->function) == 0 &&
			 (!by_location || same_location(gf, &ws->frames[j]))))
			j++;
		if (j == ws->nframes)
			return false;
		map[i] = j++;
	}
	return true;
}

/* The kinds of disagreement between Go's traceback and wallspy's dump. */
enum mismatch_kind {
	MM_MISSING,       /* goroutine absent from wallspy's dump */
	MM_STATE,         /* wait reason / status differs */
	MM_FRAMES,        /* a Go frame missing or out of order */
	MM_LINE,          /* same functions, a file:line differs */
	MM_INLINED,       /* inlined marker differs */
	MM_PC,            /* return address != entry + Go's +0x offset */
	MM_EXTRA_FRAME,   /* a frame Go would have printed but did not */
	MM_KINDS
};

static const char *const mismatch_names[MM_KINDS] = {
	"goroutine missing from wallspy", "state/wait reason", "frames",
	"file:line", "inlined marker", "return address", "unexplained extra frame",
};

/* Compares one goroutine; appends the reasons to why; returns the set of
 * mismatch kinds (bit per kind). */
static unsigned compare_goroutine(const struct ws_go_goroutine *go,
				  const struct ws_goroutine *ws,
				  const struct e2e_symtab *st, struct strbuf *why)
{
	unsigned kinds = 0;
	size_t *map = calloc(go->nframes + 1, sizeof(*map));

	cr_assert_not_null(map);

	/* State: Go's bracket is the wait reason of a waiting goroutine and
	 * the status otherwise ("syscall"). */
	const char *ws_state = ws->state ? ws->state : "(null)";
	if (strcmp(ws_state, "waiting") == 0)
		ws_state = ws->wait_reason ? ws->wait_reason : "(no reason)";
	if (strcmp(go->state, ws_state) != 0) {
		kinds |= 1u << MM_STATE;
		sb_printf(why, " state: Go [%s], wallspy [%s%s%s];", go->state,
			  ws->state ? ws->state : "(null)",
			  ws->wait_reason ? ": " : "",
			  ws->wait_reason ? ws->wait_reason : "");
	}

	if (!match_frames(go, ws, true, map)) {
		if (match_frames(go, ws, false, map)) {
			kinds |= 1u << MM_LINE;
			for (size_t i = 0; i < go->nframes; i++) {
				const struct ws_frame_view *wf = &ws->frames[map[i]];

				if (!same_location(&go->frames[i], wf))
					sb_printf(why, " %s: Go %s:%d, wallspy %s:%ld;",
						  go->frames[i].function,
						  go->frames[i].file, go->frames[i].line,
						  wf->file ? wf->file : "?", wf->line);
			}
		} else {
			kinds |= 1u << MM_FRAMES;
			sb_printf(why, " Go's frames are not a subsequence of wallspy's;");
			free(map);
			return kinds;
		}
	}

	bool *matched = calloc(ws->nframes + 1, sizeof(*matched));
	cr_assert_not_null(matched);
	for (size_t i = 0; i < go->nframes; i++) {
		const struct ws_go_frame *gf = &go->frames[i];
		const struct ws_frame_view *wf = &ws->frames[map[i]];

		matched[map[i]] = true;
		if (gf->inlined != wf->inlined) {
			kinds |= 1u << MM_INLINED;
			sb_printf(why, " %s: inlined Go %d wallspy %d;", gf->function,
				  gf->inlined, wf->inlined);
		}
		/* Go prints +0x(pc - entry) with pc the return address (frame
		 * pc, not pc-1); wallspy's address is that pc. */
		unsigned long entry;
		if (gf->has_pc_offset && !wf->inlined && wf->raw_name &&
		    symtab_entry(st, wf->raw_name, &entry) &&
		    wf->address - entry != gf->pc_offset) {
			kinds |= 1u << MM_PC;
			sb_printf(why, " %s: Go +%#lx, wallspy %#lx = entry %#lx + %#lx;",
				  gf->function, gf->pc_offset, wf->address, entry,
				  wf->address - entry);
		}
	}

	/* Every wallspy frame Go did not print must be one Go hides: an
	 * unexported runtime function, the go statement's wrapper (the
	 * "...funcN" just inside runtime.goexit), or a frame beyond the 100
	 * physical frames Go's traceback walks. */
	size_t physical = 0;
	for (size_t k = 0; k < ws->nframes; k++) {
		const struct ws_frame_view *wf = &ws->frames[k];
		bool beyond_go = physical >= GO_MAX_FRAMES;

		if (!wf->inlined)
			physical++;
		if (matched[k] || beyond_go)
			continue;
		if (wf->name && hidden_runtime_frame(wf->name))
			continue;
		if (wf->name && is_funcN(wf->name) && k + 1 < ws->nframes &&
		    ws->frames[k + 1].name &&
		    strcmp(ws->frames[k + 1].name, "runtime.goexit") == 0)
			continue;
		kinds |= 1u << MM_EXTRA_FRAME;
		sb_printf(why, " extra frame #%zu %s (%#lx);", k,
			  wf->name ? wf->name : "(unsymbolized)", wf->address);
	}
	free(matched);
	free(map);
	return kinds;
}

/*
 * 1. Fidelity against the Go runtime. wallspy's `dump --json` of
 * go_fidelity, then Go's own runtime.Stack(all) of the same process
 * (SIGUSR1), compared goroutine by goroutine:
 *  - every goid Go prints is in wallspy's dump; wallspy's extra goroutines
 *    are the ones runtime.Stack(all) hides: system goroutines, whose entry
 *    (startpc) is in package runtime (Go's isSystemGoroutine rule);
 *  - for every parked goroutine (Go's state neither running nor runnable):
 *    the wait reason equals Go's bracket (for status "syscall": wallspy's
 *    state); Go's frames appear in wallspy's, in order, with the same
 *    function (generics normalized to "[...]"), file:line, inlined marker,
 *    and return address (wallspy's address = the function's .symtab entry +
 *    Go's "+0x" offset); every wallspy frame Go did not print is one Go
 *    hides (unexported runtime.*, the go statement's funcN wrapper) or lies
 *    beyond the 100 physical frames Go walks (the deep fixtures, where Go
 *    cuts silently at 97 printed frames or says "...elided...": wallspy
 *    must have all 150).
 * At least 99 % of parked goroutines must match exactly; every mismatch is
 * printed with both chains.
 */
Test(e2e_go, fidelity_parked_goroutines, .timeout = 120, .fini = e2e_cleanup)
{
	struct go_target t = start_fidelity();
	cJSON *root = dump_json(t.proc.pid, NULL);
	struct ws_go_traceback *tb = go_own_traceback(&t);
	struct e2e_symtab st = e2e_symtab_load(go_fixture("go_fidelity"));
	size_t nws;
	struct ws_goroutine *ws = load_ws_goroutines(root, &nws);
	size_t parked = 0, exact = 0, missing = 0, extra_bad = 0, nextra = 0;
	size_t kind_count[MM_KINDS] = { 0 };

	cr_assert_str_eq(str_of(root, "runtime"), "go");
	cr_log_info("Go printed %zu goroutines, wallspy listed %zu",
		    tb->ngoroutines, nws);

	for (size_t i = 0; i < tb->ngoroutines; i++) {
		const struct ws_go_goroutine *go = &tb->goroutines[i];
		const struct ws_goroutine *w = find_ws(ws, nws, go->goid);
		struct strbuf why = { 0 }, gochain = { 0 }, wschain = { 0 };

		if (!w) {
			missing++;
			kind_count[MM_MISSING]++;
			chain_text_go(&gochain, go);
			cr_log_error("goroutine %ld [%s]: missing from wallspy's dump; "
				     "Go: %s", go->goid, go->raw_state, gochain.s);
			free(gochain.s);
			if (is_parked(go->state))
				parked++;
			continue;
		}
		if (!is_parked(go->state))
			continue;
		parked++;
		unsigned kinds = compare_goroutine(go, w, &st, &why);
		if (!kinds) {
			exact++;
			continue;
		}
		for (int k = 0; k < MM_KINDS; k++)
			if (kinds & (1u << k))
				kind_count[k]++;
		chain_text_go(&gochain, go);
		chain_text_ws(&wschain, w);
		cr_log_error("goroutine %ld mismatch:%s\n    Go [%s]: %s\n    wallspy [%s%s%s]: %s",
			     go->goid, why.s, go->raw_state, gochain.s,
			     w->state ? w->state : "?", w->wait_reason ? ": " : "",
			     w->wait_reason ? w->wait_reason : "", wschain.s);
		free(why.s);
		free(gochain.s);
		free(wschain.s);
	}

	/* The goroutines runtime.Stack(all) hides. */
	for (size_t i = 0; i < nws; i++) {
		const char *entry;

		if (ws_go_traceback_find(tb, ws[i].id))
			continue;
		nextra++;
		entry = entry_function(&ws[i]);
		if (entry && strncmp(entry, "runtime.", 8) == 0) {
			cr_log_info("goroutine %ld [%s%s%s] only in wallspy's dump: "
				    "system goroutine, entry %s", ws[i].id,
				    ws[i].state ? ws[i].state : "?",
				    ws[i].wait_reason ? ": " : "",
				    ws[i].wait_reason ? ws[i].wait_reason : "", entry);
			continue;
		}
		extra_bad++;
		struct strbuf wschain = { 0 };
		chain_text_ws(&wschain, &ws[i]);
		cr_log_error("goroutine %ld only in wallspy's dump, but its entry %s "
			     "is not in package runtime (Go would have printed it): %s",
			     ws[i].id, entry ? entry : "(none)", wschain.s);
		free(wschain.s);
	}

	/* Deep stacks: Go's cut, wallspy's whole. */
	size_t deep_checked = 0;
	for (size_t i = 0; i < tb->ngoroutines; i++) {
		const struct ws_go_goroutine *go = &tb->goroutines[i];
		const char *fn = ws_go_goroutine_find_frame(go, "main.recurseTruncated") >= 0
					 ? "main.recurseTruncated"
				 : ws_go_goroutine_find_frame(go, "main.recurseElided") >= 0
					 ? "main.recurseElided" : NULL;
		const struct ws_goroutine *w = find_ws(ws, nws, go->goid);
		size_t go_count = 0, ws_count = 0;

		if (!fn || !w)
			continue;
		for (size_t k = 0; k < go->nframes; k++)
			go_count += strcmp(go->frames[k].function, fn) == 0;
		for (size_t k = 0; k < w->nframes; k++)
			ws_count += w->frames[k].name && strcmp(w->frames[k].name, fn) == 0;
		cr_log_info("goroutine %ld: Go printed %zu %s%s, wallspy %zu",
			    go->goid, go_count, fn,
			    go->frames_elided ? " + \"...elided...\"" : " (cut silently)",
			    ws_count);
		cr_expect_eq(ws_count, ELIDED_DEPTH,
			     "goroutine %ld: wallspy has %zu %s frames, the stack has %d",
			     go->goid, ws_count, fn, ELIDED_DEPTH);
		cr_expect_lt(go_count, ws_count);
		deep_checked++;
	}

	double rate = parked ? (double)exact / (double)parked : 0;
	cr_log_info("fidelity: %zu of %zu parked goroutines match Go exactly "
		    "(%.1f %%); %zu goroutines only in wallspy's dump (system), "
		    "%zu deep stacks checked", exact, parked, 100 * rate, nextra,
		    deep_checked);
	for (int k = 0; k < MM_KINDS; k++)
		if (kind_count[k])
			cr_log_info("  mismatch kind \"%s\": %zu goroutines",
				    mismatch_names[k], kind_count[k]);

	cr_expect_eq(missing, 0, "%zu goroutines of Go's dump missing in wallspy's",
		     missing);
	cr_expect_eq(extra_bad, 0, "%zu non-system goroutines only in wallspy's",
		     extra_bad);
	cr_expect_eq(deep_checked, 4, "expected 4 deep goroutines, found %zu",
		     deep_checked);
	cr_assert_geq(parked, FIDELITY_PARKED, "only %zu parked goroutines in "
		      "Go's dump (the fixture parks %d)", parked, FIDELITY_PARKED);
	cr_assert_geq(rate, 0.99, "only %zu of %zu parked goroutines match "
		      "(%.1f %%, need 99 %%)", exact, parked, 100 * rate);

	free_ws_goroutines(ws, nws);
	e2e_symtab_free(&st);
	ws_go_traceback_destroy(tb);
	stop_go_healthy(&t);
}

/* ---- "created by" in the text dump ---- */

struct created_by {
	long id;
	char *function;       /* NULL: no "created by" line */
	char *file;
	long line;
};

/* Parses `wallspy dump` text: per "task ID ..." block, its "    created by
 * F (FILE:LINE)" line. */
static struct created_by *parse_created_by(const char *text, size_t *count)
{
	size_t n = 0, cap = 256;
	struct created_by *out = calloc(cap, sizeof(*out));
	const char *line = text;

	cr_assert_not_null(out);
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (strncmp(line, "task ", 5) == 0) {
			if (n == cap) {
				cap *= 2;
				out = realloc(out, cap * sizeof(*out));
				cr_assert_not_null(out);
			}
			out[n++] = (struct created_by){ .id = strtol(line + 5, NULL, 10) };
		} else if (n && len > 15 && strncmp(line, "    created by ", 15) == 0) {
			char *copy = strndup(line + 15, len - 15);
			char *paren = strstr(copy, " (");
			struct created_by *c = &out[n - 1];

			cr_assert_null(c->function, "task %ld: two \"created by\" lines",
				       c->id);
			cr_assert_not_null(paren, "\"created by\" without a location: %s",
					   copy);
			*paren = '\0';
			c->function = normalize_generics(copy);
			char *loc = paren + 2;
			char *colon = strrchr(loc, ':');
			if (colon) {
				*colon = '\0';
				c->file = strdup(loc);
				c->line = strtol(colon + 1, NULL, 10);
			}
			free(copy);
		}
		line = end ? end + 1 : NULL;
	}
	*count = n;
	return out;
}

/*
 * 2. "created by": the text dump's "    created by F (FILE:LINE)" against
 * Go's "created by F / FILE:LINE", for every goroutine Go printed (the
 * creator never changes, so running ones count too): same function, same
 * file and line (Go prints the go statement's line: gopc symbolized one
 * byte back, as wallspy does); no line where Go prints none (goroutine 1).
 */
Test(e2e_go, created_by_matches_go, .timeout = 120, .fini = e2e_cleanup)
{
	struct go_target t = start_fidelity();
	struct e2e_result res = e2e_run_dump(t.proc.pid, NULL, NULL, 0, 60000);
	struct ws_go_traceback *tb = go_own_traceback(&t);
	size_t n, compared = 0, name_bad = 0, loc_bad = 0;
	struct created_by *cb = parse_created_by(res.out, &n);

	cr_assert_gt(n, 0, "no task in the text dump:\n%.2000s", res.out);
	for (size_t i = 0; i < tb->ngoroutines; i++) {
		const struct ws_go_goroutine *go = &tb->goroutines[i];
		const struct created_by *c = NULL;

		for (size_t k = 0; k < n && !c; k++)
			if (cb[k].id == go->goid)
				c = &cb[k];
		cr_assert_not_null(c, "goroutine %ld missing from the text dump",
				   go->goid);
		compared++;
		if (!go->has_created_by) {
			if (c->function) {
				name_bad++;
				cr_log_error("goroutine %ld: Go prints no creator, wallspy "
					     "\"created by %s\"", go->goid, c->function);
			}
			continue;
		}
		char *want = normalize_generics(go->created_by);
		if (!c->function || strcmp(c->function, want) != 0) {
			name_bad++;
			cr_log_error("goroutine %ld [%s]: Go \"created by %s\", wallspy %s%s",
				     go->goid, go->raw_state, want,
				     c->function ? "\"created by " : "(none)",
				     c->function ? c->function : "");
		} else if (!c->file || strcmp(c->file, go->created_by_file) != 0 ||
			   c->line != go->created_by_line) {
			loc_bad++;
			cr_log_error("goroutine %ld: created by %s at Go %s:%d, wallspy %s:%ld",
				     go->goid, want, go->created_by_file,
				     go->created_by_line, c->file ? c->file : "?",
				     c->line);
		}
		free(want);
	}
	cr_log_info("created by: %zu goroutines compared, %zu function and %zu "
		    "location mismatches", compared, name_bad, loc_bad);
	cr_assert_geq(compared, FIDELITY_PARKED);
	cr_expect_eq(name_bad, 0, "%zu \"created by\" functions differ from Go's",
		     name_bad);
	cr_expect_eq(loc_bad, 0, "%zu \"created by\" locations differ from Go's",
		     loc_bad);

	for (size_t k = 0; k < n; k++) {
		free(cb[k].function);
		free(cb[k].file);
	}
	free(cb);
	ws_go_traceback_destroy(tb);
	stop_go_healthy(&t);
}

/* ---- runtime selection ---- */

static bool is_tid_of(pid_t tid, const pid_t *tids, int ntids)
{
	for (int i = 0; i < ntids; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/* How many tasks of a dump have a frame named fn. */
static int tasks_with_frame(const cJSON *root, const char *fn)
{
	const cJSON *task, *frame;
	int count = 0;

	cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks")) {
		cJSON_ArrayForEach(frame, cJSON_GetObjectItem(task, "frames")) {
			const char *f = str_of(frame, "function");

			if (f && strcmp(f, fn) == 0) {
				count++;
				break;
			}
		}
	}
	return count;
}

/*
 * 3. --runtime: auto (and the default, and "go") picks the Go adapter for a
 * Go binary ("runtime": "go", the goroutines); "threads" still shows OS
 * threads ("runtime": "threads", one task per /proc/PID/task entry).
 */
Test(e2e_go, runtime_auto_picks_go_threads_still_threads, .timeout = 120,
     .fini = e2e_cleanup)
{
	const char *args[] = { "1000", NULL };
	struct go_target t = start_go("go_parked_n", args, 60000);
	const char *modes[] = { NULL, "auto", "go" };

	for (size_t m = 0; m < sizeof(modes) / sizeof(*modes); m++) {
		cJSON *root = dump_json(t.proc.pid, modes[m]);
		int tasks = cJSON_GetArraySize(cJSON_GetObjectItem(root, "tasks"));

		cr_assert_str_eq(str_of(root, "runtime"), "go", "--runtime %s",
				 modes[m] ? modes[m] : "(default)");
		cr_assert_geq(tasks, 1000, "--runtime %s: %d tasks",
			      modes[m] ? modes[m] : "(default)", tasks);
		cr_assert_eq(tasks_with_frame(root, "main.recvInner"), 250);
		cr_assert_eq(tasks_with_frame(root, "main.selectInner"), 250);
		cr_assert_eq(tasks_with_frame(root, "main.lockOuter"), 250);
		cr_assert_eq(tasks_with_frame(root, "main.condOuter"), 250);
	}

	pid_t tids[512];
	int ntids = e2e_tids(t.proc.pid, tids, 512);
	cJSON *root = dump_json(t.proc.pid, "threads");
	const cJSON *task;
	int tasks = 0;

	cr_assert_str_eq(str_of(root, "runtime"), "threads");
	cJSON_ArrayForEach(task, cJSON_GetObjectItem(root, "tasks")) {
		long id = long_of(task, "id");

		tasks++;
		cr_assert(is_tid_of((pid_t)id, tids, ntids),
			  "--runtime threads: task %ld is not a thread of %d", id,
			  t.proc.pid);
		cr_assert_eq(long_of(task, "thread"), id);
	}
	cr_assert_eq(tasks, ntids, "--runtime threads: %d tasks, %d threads",
		     tasks, ntids);
	cr_assert_eq(tasks_with_frame(root, "main.recvInner"), 0,
		     "--runtime threads shows parked goroutines");
	stop_go_healthy(&t);
}

/* ---- no DWARF ---- */

static void check_no_dwarf_error(const struct e2e_result *res, const char *what)
{
	cr_assert_eq(e2e_exit_code(res), 7, "%s: status %#x, stderr: %s", what,
		     res->status, res->err);
	cr_assert(e2e_is_one_error_line(res->err),
		  "%s: not one \"wallspy: ...\" line: %s", what, res->err);
	cr_assert(strstr(res->err, "DWARF"), "%s: no mention of DWARF: %s", what,
		  res->err);
	cr_assert(e2e_match(res->err, "(^|[^A-Za-z])-w([^A-Za-z]|$)"),
		  "%s: does not say how to rebuild (-w): %s", what, res->err);
	cr_assert_str_empty(res->out, "%s wrote to stdout: %s", what, res->out);
}

/*
 * 4. A Go binary built with -ldflags=-w (go_nodwarf): `dump` and `record`
 * fail with exit 7 and one line saying DWARF is missing and how to rebuild;
 * record leaves no output file and no live target behind; the target dump
 * attached to is left running, not stopped; --runtime threads still works.
 */
Test(e2e_go, no_dwarf_exit_7, .timeout = 120, .fini = e2e_cleanup_adopting)
{
	const char *args[] = { "100", NULL };
	struct go_target t = start_go("go_nodwarf", args, 30000);
	const char *json[] = { "--json", NULL };
	struct e2e_result res;

	res = e2e_run_dump(t.proc.pid, NULL, NULL, 7, 30000);
	check_no_dwarf_error(&res, "dump");
	cr_log_info("dump of go_nodwarf: %s", res.err);
	res = e2e_run_dump(t.proc.pid, json, NULL, 7, 30000);
	check_no_dwarf_error(&res, "dump --json");
	cr_assert(e2e_running_not_stopped(t.proc.pid, 5, 20),
		  "go_nodwarf stopped after the failed dump");

	const char *threads[] = { "--json", "--runtime", "threads", NULL };
	res = e2e_run_dump(t.proc.pid, threads, NULL, 0, 30000);
	cJSON *root = e2e_parse_json(res.out);
	cr_assert_not_null(root);
	cr_assert_str_eq(str_of(root, "runtime"), "threads");
	cr_assert_gt(cJSON_GetArraySize(cJSON_GetObjectItem(root, "tasks")), 0);
	stop_go_healthy(&t);

	/* record: the launched target must not outlive the failure. */
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	char *argv[] = { (char *)e2e_wallspy(), "record", "-o", (char *)out,
			 "--", (char *)go_fixture("go_nodwarf"), "100", NULL };
	pid_t orphans[8];

	e2e_become_subreaper();
	e2e_run(argv, dir, 30000, &res);
	cr_assert(!res.timed_out, "wallspy record timed out");
	check_no_dwarf_error(&res, "record");
	cr_assert_eq(e2e_dir_entries(dir), 0, "record left files behind: %s",
		     e2e_dir_list(dir));
	int norphans = e2e_adopt_orphans(orphans, 8);
	for (int i = 0; i < norphans; i++) {
		char state = e2e_proc_state(orphans[i], 0);

		cr_expect(state == 'Z' || state == 0,
			  "record's target %d outlived the failure (state %c)",
			  orphans[i], state);
	}
}

/* ---- scale ---- */

static size_t count_lines_starting(const char *text, const char *prefix)
{
	size_t n = 0, len = strlen(prefix);
	const char *line = text;

	while (line && *line) {
		if (strncmp(line, prefix, len) == 0)
			n++;
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return n;
}

/* Checks the root-frame contract on `dump` text: in every "task" block the
 * outermost frame (the last line before "created by") is runtime.goexit.
 * Returns the number of blocks; logs the first few offenders. */
static size_t check_text_roots(const char *text, size_t *bad)
{
	size_t blocks = 0;
	const char *line = text, *last_frame = NULL;
	long id = -1;

	*bad = 0;
	for (;;) {
		const char *end = line ? strchr(line, '\n') : NULL;
		bool block_end = !line || !*line || *line == '\n' ||
				 strncmp(line, "task ", 5) == 0;

		if (block_end && id >= 0) {
			blocks++;
			if (!last_frame || strncmp(last_frame, "    runtime.goexit (", 20) != 0) {
				if (++*bad <= 5) {
					const char *e = last_frame ? strchr(last_frame, '\n') : NULL;
					cr_log_error("task %ld: outermost frame is not "
						     "runtime.goexit: %.*s", id,
						     last_frame ? (int)(e ? e - last_frame
									  : (long)strlen(last_frame))
								: 6,
						     last_frame ? last_frame : "(none)");
				}
			}
			id = -1;
		}
		if (!line || !*line)
			break;
		if (strncmp(line, "task ", 5) == 0) {
			id = strtol(line + 5, NULL, 10);
			last_frame = NULL;
		} else if (id >= 0 && strncmp(line, "    ", 4) == 0 &&
			   strncmp(line, "    created by ", 15) != 0) {
			last_frame = line;
		}
		line = end ? end + 1 : NULL;
	}
	return blocks;
}

/*
 * 6a. `wallspy dump` of 100000 parked goroutines (go_parked_n 100000)
 * completes, exit 0, and lists every one of them with its chain (25000 per
 * chain of go_parked_n's table); the time is printed (not asserted: this
 * is a shared 2-CPU machine; the timeout is generous).
 */
Test(e2e_go, dump_100k_goroutines, .timeout = 400, .fini = e2e_cleanup)
{
	const char *args[] = { "100000", NULL };
	double t0 = e2e_now();
	struct go_target t = start_go("go_parked_n", args, 180000);
	double started = e2e_now() - t0;
	struct e2e_result res = e2e_run_dump(t.proc.pid, NULL, NULL, 0, 300000);
	size_t tasks = count_lines_starting(res.out, "task ");
	size_t recv = count_lines_starting(res.out, "    main.recvInner ");
	size_t sel = count_lines_starting(res.out, "    main.selectInner ");
	size_t lock = count_lines_starting(res.out, "    main.lockOuter ");
	size_t cond = count_lines_starting(res.out, "    main.condOuter ");

	cr_log_info("dump of go_parked_n 100000: %.2f s, %zu tasks, %.1f MB of "
		    "text (fixture ready after %.2f s)", res.seconds, tasks,
		    (double)strlen(res.out) / 1e6, started);
	cr_assert_geq(tasks, 100000, "only %zu goroutines listed", tasks);
	cr_assert_eq(recv, 25000, "%zu goroutines in main.recvInner", recv);
	cr_assert_eq(sel, 25000, "%zu goroutines in main.selectInner", sel);
	cr_assert_eq(lock, 25000, "%zu goroutines in main.lockOuter", lock);
	cr_assert_eq(cond, 25000, "%zu goroutines in main.condOuter", cond);
	cr_assert_geq(count_lines_starting(res.out, "    created by main.main "),
		      100000);
	size_t bad_roots;
	check_text_roots(res.out, &bad_roots);
	cr_expect_eq(bad_roots, 0, "%zu of %zu goroutines do not end in "
		     "runtime.goexit", bad_roots, tasks);
	stop_go_healthy(&t);
}

/* ---- findings beyond the table: frames every goroutine must have ---- */

/*
 * A running goroutine is sampled from its thread's live registers: the dump
 * of go_fidelity must show the spinner (main.spin, never parked) with a
 * stack, not "[failed to sample: ...]" — its thread stops like any other.
 * Three dumps, each must succeed.
 */
Test(e2e_go, dump_running_goroutine_has_stack, .timeout = 120,
     .fini = e2e_cleanup)
{
	struct go_target t = start_fidelity();
	int failed = 0;

	for (int attempt = 0; attempt < 3; attempt++) {
		cJSON *root = dump_json(t.proc.pid, NULL);
		size_t n;
		struct ws_goroutine *ws = load_ws_goroutines(root, &n);
		const struct ws_goroutine *spinner = NULL;

		for (size_t i = 0; i < n && !spinner; i++)
			for (size_t k = 0; k < ws[i].nframes; k++)
				if (ws[i].frames[k].name &&
				    strcmp(ws[i].frames[k].name, "main.spin") == 0)
					spinner = &ws[i];
		cr_assert_not_null(spinner, "no goroutine in main.spin");
		struct strbuf chain = { 0 };
		chain_text_ws(&chain, spinner);
		if (spinner->error) {
			failed++;
			cr_log_error("dump %d: spinner goroutine %ld [%s]: %s", attempt,
				     spinner->id, spinner->state, chain.s);
		} else {
			cr_log_info("dump %d: spinner goroutine %ld [%s]: %s", attempt,
				    spinner->id, spinner->state, chain.s);
		}
		free(chain.s);
		free_ws_goroutines(ws, n);
	}
	cr_expect_eq(failed, 0, "%d of 3 dumps failed to sample the running "
		     "spinner goroutine", failed);
	stop_go_healthy(&t);
}

/*
 * Every frame of every goroutine names a function: the Go fixtures are
 * statically linked with full symbols, so an unnamed frame is a pc wallspy
 * got wrong. go_workload3 dumped right after "ready" has goroutines that
 * have not started (g.sched.pc = the entry of their go statement's
 * function: the man page promises "shown as its entry function") and a
 * main goroutine in runtime code. Unnamed frames are explained from the
 * ELF symbol table.
 */
Test(e2e_go, dump_every_frame_symbolized, .timeout = 120, .fini = e2e_cleanup)
{
	const char *args[] = { "256", "4194304", NULL };
	struct go_target t = start_go("go_workload3", args, 30000);
	cJSON *root = dump_json(t.proc.pid, NULL);
	struct e2e_symtab st = e2e_symtab_load(go_fixture("go_workload3"));
	size_t n, frames = 0, unnamed = 0, unstarted = 0;
	struct ws_goroutine *ws = load_ws_goroutines(root, &n);
	unsigned long reported[16];
	size_t nreported = 0;

	e2e_kill(t.proc.pid);
	for (size_t i = 0; i < n; i++) {
		const struct ws_goroutine *g = &ws[i];

		if (g->state && strcmp(g->state, "runnable") == 0 && g->nframes == 2)
			unstarted++;
		for (size_t k = 0; k < g->nframes; k++) {
			const struct ws_frame_view *f = &g->frames[k];
			bool seen = false;

			frames++;
			if (f->name)
				continue;
			unnamed++;
			for (size_t r = 0; r < nreported; r++)
				seen |= reported[r] == f->address;
			if (seen || nreported == 16)
				continue;
			reported[nreported++] = f->address;
			const struct e2e_sym *fn = e2e_symtab_function_at(&st, f->address);
			cr_log_error("goroutine %ld [%s] frame #%zu at %#lx has no "
				     "function; .symtab: %s%s%s", g->id,
				     g->state ? g->state : "?", k, f->address,
				     fn ? (fn->value == f->address ? "the entry of "
								   : "inside ")
					: "no symbol",
				     fn ? fn->name : "",
				     fn && fn->value == f->address && k == 0
					     ? " (frame 0 of a saved context at a "
					       "function entry, symbolized at pc-1?)"
					     : "");
		}
	}
	cr_log_info("%zu goroutines (%zu runnable with 2 frames), %zu frames, "
		    "%zu without a function", n, unstarted, frames, unnamed);
	cr_expect_eq(unnamed, 0, "%zu of %zu frames name no function", unnamed,
		     frames);
	free_ws_goroutines(ws, n);
	e2e_symtab_free(&st);
}
