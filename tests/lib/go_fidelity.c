/*
 * go_fidelity: wallspy's dump of a Go program against Go's own traceback
 * (see go_fidelity.h). Frames are matched as a subsequence (Go hides some,
 * wallspy hides none Go shows); what Go hides follows showfuncinfo and the
 * elision of traceback1 in Go's runtime/traceback.go.
 */
#include "go_fidelity.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "e2e_util.h"

enum {
	/* Go 1.19 and 1.20 walk at most this many physical frames
	 * (_TracebackMaxFrames); deeper ones are never printed. */
	GO_MAX_FRAMES = 100,
};

static const char *const mismatch_names[GO_MM_KINDS] = {
	"goroutine missing from wallspy", "goroutine only in wallspy",
	"state/wait reason", "locked to thread", "synctest bubble", "frames",
	"file:line",
	"inlined marker", "return address", "unexplained extra frame",
	"elided frame count", "created by",
};

/* ---- wallspy's dump ---- */

static const char *str_of(const cJSON *obj, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(obj, key));
}

static long long_of(const cJSON *obj, const char *key)
{
	const cJSON *item = cJSON_GetObjectItem(obj, key);

	return cJSON_IsNumber(item) ? (long)item->valuedouble : -1;
}

char *go_normalize_generics(const char *name)
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

struct go_dump go_dump_load(const cJSON *root)
{
	const cJSON *tasks = cJSON_GetObjectItem(root, "tasks");
	size_t n = (size_t)cJSON_GetArraySize(tasks), i = 0;
	struct go_dump_goroutine *gs = calloc(n ? n : 1, sizeof(*gs));
	const cJSON *task;

	cr_assert_not_null(gs);
	cJSON_ArrayForEach(task, tasks) {
		struct go_dump_goroutine *g = &gs[i++];
		const cJSON *frames = cJSON_GetObjectItem(task, "frames");
		const cJSON *created = cJSON_GetObjectItem(task, "created_by");
		const cJSON *frame;
		size_t k = 0;

		g->id = long_of(task, "id");
		g->state = str_of(task, "state");
		g->wait_reason = str_of(task, "wait_reason");
		g->error = str_of(task, "error");
		g->locked_to_thread =
			cJSON_IsTrue(cJSON_GetObjectItem(task, "locked_to_thread"));
		if (cJSON_IsObject(cJSON_GetObjectItem(task, "bubble"))) {
			const cJSON *bubble = cJSON_GetObjectItem(task, "bubble");

			g->bubble_kind = str_of(bubble, "kind");
			g->bubble_id = long_of(bubble, "id");
		}
		g->created_by_goid = -1;
		if (cJSON_IsObject(created) && str_of(created, "function")) {
			g->created_by = go_normalize_generics(str_of(created, "function"));
			g->created_by_file = str_of(created, "file");
			g->created_by_line = long_of(created, "line");
			g->created_by_goid = long_of(created, "parent");
		}
		g->nframes = (size_t)cJSON_GetArraySize(frames);
		g->frames = calloc(g->nframes ? g->nframes : 1, sizeof(*g->frames));
		cr_assert_not_null(g->frames);
		cJSON_ArrayForEach(frame, frames) {
			struct go_dump_frame *f = &g->frames[k++];
			const char *fn = str_of(frame, "function");
			const char *address = str_of(frame, "address");

			f->raw_name = fn;
			f->name = fn ? go_normalize_generics(fn) : NULL;
			f->file = str_of(frame, "file");
			f->line = long_of(frame, "line");
			f->inlined = cJSON_IsTrue(cJSON_GetObjectItem(frame, "inlined"));
			f->address = address ? strtoul(address, NULL, 16) : 0;
		}
	}
	return (struct go_dump){ gs, n };
}

void go_dump_free(struct go_dump *dump)
{
	for (size_t i = 0; i < dump->n; i++) {
		struct go_dump_goroutine *g = &dump->goroutines[i];

		for (size_t k = 0; k < g->nframes; k++)
			free(g->frames[k].name);
		free(g->frames);
		free(g->created_by);
	}
	free(dump->goroutines);
	*dump = (struct go_dump){ 0 };
}

const struct go_dump_goroutine *go_dump_find(const struct go_dump *dump,
					     long id)
{
	for (size_t i = 0; i < dump->n; i++)
		if (dump->goroutines[i].id == id)
			return &dump->goroutines[i];
	return NULL;
}

/* The goroutine's entry: the frame just inside runtime.goexit, or NULL. */
static const char *entry_function(const struct go_dump_goroutine *g)
{
	for (size_t k = 1; k < g->nframes; k++)
		if (g->frames[k].name && strcmp(g->frames[k].name, "runtime.goexit") == 0)
			return g->frames[k - 1].name;
	return NULL;
}

/* ---- text for reports ---- */

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
static char *chain_text_go(const struct ws_go_goroutine *g)
{
	struct strbuf b = { 0 };

	sb_printf(&b, "%s", "");
	for (size_t k = 0; k < g->nframes;) {
		size_t run = 1;

		if (g->frames_elided && k == g->elided_at && k)
			sb_printf(&b, " <- ...%ld elided...", g->elided_count);
		while (k + run < g->nframes && k + run != g->elided_at &&
		       strcmp(g->frames[k + run].function, g->frames[k].function) == 0)
			run++;
		sb_printf(&b, "%s%s:%d%s", k ? " <- " : "", g->frames[k].function,
			  g->frames[k].line, g->frames[k].inlined ? " (inl)" : "");
		if (run > 1)
			sb_printf(&b, " x%zu", run);
		k += run;
	}
	if (g->frames_elided && g->elided_at == g->nframes)
		sb_printf(&b, " <- ...elided...");
	return b.s;
}

char *go_dump_chain_text(const struct go_dump_goroutine *g)
{
	struct strbuf b = { 0 };

	sb_printf(&b, "%s", "");
	for (size_t k = 0; k < g->nframes;) {
		size_t run = 1;
		const char *name = g->frames[k].name ? g->frames[k].name : "?";

		while (k + run < g->nframes && g->frames[k + run].name &&
		       strcmp(g->frames[k + run].name, name) == 0)
			run++;
		sb_printf(&b, "%s%s:%ld%s", k ? " <- " : "", name,
			  g->frames[k].line, g->frames[k].inlined ? " (inl)" : "");
		if (run > 1)
			sb_printf(&b, " x%zu", run);
		k += run;
	}
	if (g->error)
		sb_printf(&b, " [error: %s]", g->error);
	return b.s;
}

/* ---- frame matching ---- */

bool go_state_is_parked(const char *go_state)
{
	return strcmp(go_state, "running") != 0 && strcmp(go_state, "runnable") != 0;
}

/* Go's traceback hides runtime functions but exported ones (showfuncinfo:
 * "runtime." and a lower-case letter), and functions whose names have no
 * '.' (no package: cgo's _cgoexp_ wrappers of exported functions). */
static bool hidden_runtime_frame(const char *name)
{
	return !strchr(name, '.') ||
	       (strncmp(name, "runtime.", 8) == 0 &&
		!(name[8] >= 'A' && name[8] <= 'Z'));
}

/* Whether Go's traceback would have printed wallspy's frame. */
static bool go_would_print(const struct go_dump_frame *f,
			   const struct go_fidelity_options *options)
{
	return !f->name || options->go_shows_runtime ||
	       !hidden_runtime_frame(f->name);
}

static bool same_location(const struct ws_go_frame *gf,
			  const struct go_dump_frame *wf)
{
	return wf->file && strcmp(gf->file, wf->file) == 0 && gf->line == wf->line;
}

static bool frame_matches(const struct ws_go_frame *gf,
			  const struct go_dump_frame *wf, bool by_location)
{
	return wf->name && strcmp(wf->name, gf->function) == 0 &&
	       (!by_location || same_location(gf, wf));
}

/* Greedy subsequence match of Go's frames in wallspy's: map[i] = index in
 * ws of Go frame i. by_location: also file:line must agree. Greedy is exact
 * for "is a subsequence" with a fixed equality. The frames Go printed after
 * a "...N frames elided..." are the outermost ones: they are matched from
 * the outer end, so a gap in a recursion lands where Go left it. */
static bool match_frames(const struct ws_go_goroutine *go,
			 const struct go_dump_goroutine *ws, bool by_location,
			 size_t *map)
{
	size_t inner = go->frames_elided ? go->elided_at : go->nframes;
	size_t j = 0;

	for (size_t i = 0; i < inner; i++) {
		while (j < ws->nframes &&
		       !frame_matches(&go->frames[i], &ws->frames[j], by_location))
			j++;
		if (j == ws->nframes)
			return false;
		map[i] = j++;
	}
	size_t lo = j, k = ws->nframes;
	for (size_t i = go->nframes; i > inner; i--) {
		while (k > lo &&
		       !frame_matches(&go->frames[i - 1], &ws->frames[k - 1],
				      by_location))
			k--;
		if (k == lo)
			return false;
		map[i - 1] = --k;
	}
	return true;
}

static bool symtab_entry(const struct e2e_symtab *st, const char *name,
			 unsigned long *entry)
{
	const struct e2e_sym *sym = e2e_symtab_find(st, name);

	if (!sym || !sym->is_function)
		return false;
	*entry = sym->value + st->bias;
	return true;
}

/* The state as Go's bracket would say it. */
static const char *ws_state_as_go(const struct go_dump_goroutine *ws)
{
	const char *state = ws->state ? ws->state : "(null)";

	if (strcmp(state, "waiting") == 0)
		return ws->wait_reason ? ws->wait_reason : "(no reason)";
	return state;
}

static unsigned compare_created_by(const struct ws_go_goroutine *go,
				   const struct go_dump_goroutine *ws,
				   struct strbuf *why)
{
	if (!go->has_created_by) {
		if (!ws->created_by)
			return 0;
		sb_printf(why, " created by: Go none, wallspy %s;", ws->created_by);
		return 1u << GO_MM_CREATED_BY;
	}
	char *want = go_normalize_generics(go->created_by);
	unsigned kinds = 0;

	if (!ws->created_by || strcmp(ws->created_by, want) != 0 ||
	    !ws->created_by_file ||
	    strcmp(ws->created_by_file, go->created_by_file) != 0 ||
	    ws->created_by_line != go->created_by_line ||
	    (go->created_by_goid >= 0 && ws->created_by_goid != go->created_by_goid)) {
		kinds = 1u << GO_MM_CREATED_BY;
		sb_printf(why, " created by: Go %s in goroutine %ld (%s:%d), wallspy "
			  "%s in goroutine %ld (%s:%ld);", want, go->created_by_goid,
			  go->created_by_file, go->created_by_line,
			  ws->created_by ? ws->created_by : "(none)",
			  ws->created_by_goid,
			  ws->created_by_file ? ws->created_by_file : "?",
			  ws->created_by_line);
	}
	free(want);
	return kinds;
}

/* A compiler-made wrapper as Go's traceback prints it: a go statement's
 * (Go >= 1.22: "pkg.f.gowrapN") or a method's ("<autogenerated>" file).
 * Go prints them only at GOTRACEBACK=system and in crash dumps
 * (showfuncinfo: FuncIDWrapper, elideWrapperCalling); wallspy leaves them
 * out as runtime.Stack does. */
static bool go_wrapper_frame(const struct ws_go_frame *f)
{
	const char *dot = strrchr(f->function, '.');

	return strcmp(f->file, "<autogenerated>") == 0 ||
	       (dot && strncmp(dot + 1, "gowrap", 6) == 0 && dot[7] >= '0' &&
		dot[7] <= '9');
}

/* go without its wrapper frames (frames in buf, nframes + 1 long). */
static struct ws_go_goroutine without_wrappers(const struct ws_go_goroutine *go,
					       struct ws_go_frame *buf)
{
	struct ws_go_goroutine out = *go;
	size_t n = 0;

	for (size_t i = 0; i < go->nframes; i++) {
		if (i == go->elided_at)
			out.elided_at = n;
		if (!go_wrapper_frame(&go->frames[i]))
			buf[n++] = go->frames[i];
	}
	if (go->elided_at >= go->nframes)
		out.elided_at = n;
	out.frames = buf;
	out.nframes = n;
	return out;
}

/* Frames of a parked goroutine; returns the mismatch kinds. */
static unsigned compare_frames(const struct ws_go_goroutine *go_printed,
			       const struct go_dump_goroutine *ws,
			       const struct e2e_symtab *st,
			       const struct go_fidelity_options *options,
			       struct strbuf *why)
{
	unsigned kinds = 0;
	struct ws_go_frame *unwrapped = calloc(go_printed->nframes + 1,
					       sizeof(*unwrapped));
	cr_assert_not_null(unwrapped);
	struct ws_go_goroutine shown = options->go_shows_runtime
		? without_wrappers(go_printed, unwrapped) : *go_printed;
	const struct ws_go_goroutine *go = &shown;
	size_t *map = calloc(go->nframes + 1, sizeof(*map));

	cr_assert_not_null(map);
	if (!match_frames(go, ws, true, map)) {
		if (!match_frames(go, ws, false, map)) {
			sb_printf(why, " Go's frames are not a subsequence of wallspy's;");
			free(map);
			free(unwrapped);
			return 1u << GO_MM_FRAMES;
		}
		kinds |= 1u << GO_MM_LINE;
		for (size_t i = 0; i < go->nframes; i++) {
			const struct go_dump_frame *wf = &ws->frames[map[i]];

			if (!same_location(&go->frames[i], wf))
				sb_printf(why, " %s: Go %s:%d, wallspy %s:%ld;",
					  go->frames[i].function, go->frames[i].file,
					  go->frames[i].line, wf->file ? wf->file : "?",
					  wf->line);
		}
	}

	bool *matched = calloc(ws->nframes + 1, sizeof(*matched));
	cr_assert_not_null(matched);
	for (size_t i = 0; i < go->nframes; i++) {
		const struct ws_go_frame *gf = &go->frames[i];
		const struct go_dump_frame *wf = &ws->frames[map[i]];
		unsigned long entry;

		matched[map[i]] = true;
		if (gf->inlined != wf->inlined) {
			kinds |= 1u << GO_MM_INLINED;
			sb_printf(why, " %s: inlined Go %d wallspy %d;", gf->function,
				  gf->inlined, wf->inlined);
		}
		/* Go prints +0x(pc - entry) with pc the return address (frame
		 * pc, not pc-1); wallspy's address is that pc, for every
		 * frame (runtime.goexit's too: entry + 1, the return address
		 * newproc plants, shown at GOTRACEBACK=system and in crash
		 * dumps, test_e2e_goserver). */
		if (gf->has_pc_offset && !wf->inlined && wf->raw_name &&
		    symtab_entry(st, wf->raw_name, &entry) &&
		    wf->address - entry != gf->pc_offset) {
			kinds |= 1u << GO_MM_PC;
			sb_printf(why, " %s: Go +%#lx, wallspy %#lx = entry %#lx + %#lx;",
				  gf->function, gf->pc_offset, wf->address, entry,
				  wf->address - entry);
		}
	}

	/* Where Go cut the stack: the gap of "...N frames elided..." between
	 * two printed frames (Go >= 1.21), or everything past 100 physical
	 * frames (Go 1.19, 1.20: a trailing elision line, or none). */
	bool middle = go->frames_elided && go->elided_at > 0 &&
		      go->elided_at < go->nframes;
	size_t gap_lo = middle ? map[go->elided_at - 1] : 0;
	size_t gap_hi = middle ? map[go->elided_at] : 0;
	size_t physical = 0;
	long in_gap = 0;
	for (size_t k = 0; k < ws->nframes; k++) {
		const struct go_dump_frame *wf = &ws->frames[k];
		bool beyond_go = !middle && physical >= GO_MAX_FRAMES;
		bool gap = middle && k > gap_lo && k < gap_hi;

		if (!wf->inlined)
			physical++;
		if (gap && go_would_print(wf, options))
			in_gap++;
		if (matched[k] || beyond_go || gap || !go_would_print(wf, options))
			continue;
		kinds |= 1u << GO_MM_EXTRA_FRAME;
		sb_printf(why, " extra frame #%zu %s (%#lx);", k,
			  wf->name ? wf->name : "(unsymbolized)", wf->address);
	}
	if (middle && go->elided_count >= 0 && in_gap != go->elided_count) {
		kinds |= 1u << GO_MM_ELIDED;
		sb_printf(why, " Go elided %ld frames, wallspy has %ld there;",
			  go->elided_count, in_gap);
	}
	free(matched);
	free(map);
	free(unwrapped);
	return kinds;
}

void go_fidelity_compare(const struct ws_go_traceback *tb,
			 const struct go_dump *dump,
			 const struct e2e_symtab *st,
			 const struct go_fidelity_options *options,
			 struct go_fidelity *r)
{
	*r = (struct go_fidelity){ .go_goroutines = tb->ngoroutines,
				   .ws_goroutines = dump->n };
	for (size_t i = 0; i < tb->ngoroutines; i++) {
		const struct ws_go_goroutine *go = &tb->goroutines[i];
		const struct go_dump_goroutine *ws = go_dump_find(dump, go->goid);
		struct strbuf why = { 0 };
		unsigned kinds = 0;

		/* "goroutine 0" of a crash or SIGQUIT traceback is the
		 * signalled thread's scheduler stack (its g0): no goroutine,
		 * in neither runtime.Stack nor allgs. */
		if (go->goid == 0) {
			r->go_goroutines--;
			continue;
		}
		if (!ws) {
			char *chain = chain_text_go(go);

			r->kinds[GO_MM_MISSING]++;
			cr_log_error("goroutine %ld [%s]: missing from wallspy's dump; "
				     "Go: %s", go->goid, go->raw_state, chain);
			free(chain);
			continue;
		}
		kinds |= compare_created_by(go, ws, &why);
		if (go_state_is_parked(go->state)) {
			r->parked++;
			if (strcmp(go->state, ws_state_as_go(ws)) != 0) {
				kinds |= 1u << GO_MM_STATE;
				sb_printf(&why, " state: Go [%s], wallspy [%s%s%s];",
					  go->state, ws->state ? ws->state : "(null)",
					  ws->wait_reason ? ": " : "",
					  ws->wait_reason ? ws->wait_reason : "");
			}
			if (go->locked_to_thread != ws->locked_to_thread) {
				kinds |= 1u << GO_MM_LOCKED;
				sb_printf(&why, " locked to thread: Go %d, wallspy %d;",
					  go->locked_to_thread, ws->locked_to_thread);
			}
			if (!go->bubble_kind != !ws->bubble_kind ||
			    (go->bubble_kind &&
			     (strcmp(go->bubble_kind, ws->bubble_kind) != 0 ||
			      go->bubble_id != ws->bubble_id))) {
				kinds |= 1u << GO_MM_BUBBLE;
				sb_printf(&why, " bubble: Go \"%s %ld\", wallspy \"%s %ld\";",
					  go->bubble_kind ? go->bubble_kind : "none",
					  go->bubble_id,
					  ws->bubble_kind ? ws->bubble_kind : "none",
					  ws->bubble_id);
			}
			kinds |= compare_frames(go, ws, st, options, &why);
			if (go->frames_elided)
				r->elisions++;
			if (!kinds)
				r->exact++;
		}
		if (!kinds)
			continue;
		for (int k = 0; k < GO_MM_KINDS; k++)
			if (kinds & (1u << k))
				r->kinds[k]++;
		char *gochain = chain_text_go(go);
		char *wschain = go_dump_chain_text(ws);
		cr_log_error("goroutine %ld mismatch:%s\n    Go [%s]: %s\n    wallspy "
			     "[%s%s%s]: %s", go->goid, why.s, go->raw_state, gochain,
			     ws->state ? ws->state : "?", ws->wait_reason ? ": " : "",
			     ws->wait_reason ? ws->wait_reason : "", wschain);
		free(why.s);
		free(gochain);
		free(wschain);
	}

	for (size_t i = 0; i < dump->n; i++) {
		const struct go_dump_goroutine *ws = &dump->goroutines[i];
		const char *entry;

		if (ws_go_traceback_find(tb, ws->id))
			continue;
		entry = entry_function(ws);
		if (options->allow_system_extra && entry &&
		    strncmp(entry, "runtime.", 8) == 0)
			continue;
		r->kinds[GO_MM_EXTRA]++;
		char *chain = go_dump_chain_text(ws);
		cr_log_error("goroutine %ld [%s%s%s] only in wallspy's dump (entry %s): %s",
			     ws->id, ws->state ? ws->state : "?",
			     ws->wait_reason ? ": " : "",
			     ws->wait_reason ? ws->wait_reason : "",
			     entry ? entry : "(none)", chain);
		free(chain);
	}
}

void go_fidelity_log(const struct go_fidelity *r, const char *what)
{
	double rate = r->parked ? 100.0 * (double)r->exact / (double)r->parked : 0;

	cr_log_info("%s: Go printed %zu goroutines, wallspy listed %zu; %zu of %zu "
		    "parked match exactly (%.1f %%), %zu cut stacks checked", what,
		    r->go_goroutines, r->ws_goroutines, r->exact, r->parked, rate,
		    r->elisions);
	for (int k = 0; k < GO_MM_KINDS; k++)
		if (r->kinds[k])
			cr_log_info("%s:   mismatch \"%s\": %zu goroutines", what,
				    mismatch_names[k], r->kinds[k]);
}

void go_fidelity_expect_exact(const struct go_fidelity *r, const char *what)
{
	cr_expect_eq(r->kinds[GO_MM_MISSING], 0, "%s: %zu goroutines of Go's "
		     "traceback missing in wallspy's dump", what,
		     r->kinds[GO_MM_MISSING]);
	cr_expect_eq(r->kinds[GO_MM_EXTRA], 0, "%s: %zu goroutines only in "
		     "wallspy's dump", what, r->kinds[GO_MM_EXTRA]);
	cr_expect_eq(r->exact, r->parked, "%s: %zu of %zu parked goroutines "
		     "differ from Go's traceback", what, r->parked - r->exact,
		     r->parked);
}
