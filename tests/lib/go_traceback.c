/*
 * go_traceback: a line-by-line parser for Go's goroutine traceback text (see
 * go_traceback.h). Goroutine sections start at "goroutine N [STATE]:" and end
 * at a blank line; the printer they mirror is goroutineheader, traceback1 and
 * printcreatedby in Go's runtime/traceback.go.
 */
#include "go_traceback.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum parse_state {
	OUTSIDE,            /* between sections: ignore anything else */
	IN_GOROUTINE,       /* expecting a frame, "created by", elision, blank */
	EXPECT_FRAME_FILE,  /* after a frame's function line */
	EXPECT_CREATED_FILE,/* after "created by ..." */
	IN_ANCESTOR,        /* skipping an "[originating from ...]" section */
};

struct parser {
	struct ws_go_traceback *tb;
	size_t goroutines_cap;
	size_t frames_cap;      /* of the last goroutine */
	size_t lineno;          /* 1-based, for messages */
	enum parse_state state;
};

static bool starts_with(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && memcmp(s, prefix, n) == 0;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);
	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static bool all_digits(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Parses len decimal digits (checked by the caller with all_digits). */
static long parse_decimal(const char *s, size_t len)
{
	long v = 0;
	for (size_t i = 0; i < len; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

static struct ws_error *copy_string(const char *s, size_t len, char **ret)
{
	char *copy = strndup(s, len);
	if (!copy)
		return &ws_error_nomem;
	*ret = copy;
	return NULL;
}

static struct ws_error *syntax_error(const struct parser *p, const char *what,
				     const char *line, size_t len)
{
	return ws_error_create(WS_ERR_OTHER,
			       "go traceback line %zu: %s: \"%.*s\"",
			       p->lineno, what, (int)(len > 200 ? 200 : len),
			       line);
}

static struct ws_go_goroutine *current(struct parser *p)
{
	return &p->tb->goroutines[p->tb->ngoroutines - 1];
}

/*
 * Splits the bracket of a header into state and flags. Go prints
 * "STATUS[ (scan)][, N minutes][, locked to thread][, synctest bubble N]";
 * strip from the end so a state that itself contains ", " is left whole.
 */
static struct ws_error *parse_state_text(struct ws_go_goroutine *g,
					 const char *s, size_t len)
{
	struct ws_error *err = copy_string(s, len, &g->raw_state);
	if (err)
		return err;
	/* ", synctest bubble N" (Go >= 1.25: the goroutine's bubble). */
	size_t digits = len;
	while (digits > 0 && s[digits - 1] >= '0' && s[digits - 1] <= '9')
		digits--;
	if (digits < len && digits >= strlen(", synctest bubble ") &&
	    ends_with(s, digits, ", synctest bubble ")) {
		g->synctest_bubble = parse_decimal(s + digits, len - digits);
		len = digits - strlen(", synctest bubble ");
	}
	if (ends_with(s, len, ", locked to thread")) {
		g->locked_to_thread = true;
		len -= strlen(", locked to thread");
	}
	/* ", N minutes" (Go 1.19 always writes "minutes"; accept "minute"). */
	size_t end = len;
	if (ends_with(s, end, " minutes"))
		end -= strlen(" minutes");
	else if (ends_with(s, end, " minute"))
		end -= strlen(" minute");
	size_t start = end;
	while (start > 0 && s[start - 1] >= '0' && s[start - 1] <= '9')
		start--;
	if (end < len && start < end && start >= 2 && s[start - 2] == ',' &&
	    s[start - 1] == ' ') {
		g->wait_minutes = (int)parse_decimal(s + start, end - start);
		len = start - 2;
	}
	if (ends_with(s, len, " (scan)")) {
		g->scan = true;
		len -= strlen(" (scan)");
	}
	return copy_string(s, len, &g->state);
}

/* "goroutine N [STATE]:" (Go >= 1.21 may put "gp=... m=..." before '['). */
static bool is_header(const char *line, size_t len)
{
	if (!starts_with(line, len, "goroutine ") || !ends_with(line, len, "]:"))
		return false;
	const char *id = line + strlen("goroutine ");
	return id < line + len && *id >= '0' && *id <= '9' &&
	       memchr(line, '[', len) != NULL;
}

static struct ws_error *start_goroutine(struct parser *p, const char *line,
					size_t len)
{
	struct ws_go_traceback *tb = p->tb;
	if (tb->ngoroutines == p->goroutines_cap) {
		size_t cap = p->goroutines_cap ? 2 * p->goroutines_cap : 64;
		struct ws_go_goroutine *grown =
			realloc(tb->goroutines, cap * sizeof(*grown));
		if (!grown)
			return &ws_error_nomem;
		tb->goroutines = grown;
		p->goroutines_cap = cap;
	}
	struct ws_go_goroutine *g = &tb->goroutines[tb->ngoroutines++];
	memset(g, 0, sizeof(*g));
	g->created_by_goid = -1;
	g->elided_count = -1;
	p->frames_cap = 0;

	const char *id = line + strlen("goroutine ");
	size_t idlen = 0;
	while (id[idlen] >= '0' && id[idlen] <= '9')
		idlen++;
	g->goid = parse_decimal(id, idlen);

	const char *open = memchr(line, '[', len);
	const char *close = line + len - 2; /* the "]:" */
	if (open >= close)
		return syntax_error(p, "bad goroutine header", line, len);
	return parse_state_text(g, open + 1, (size_t)(close - open - 1));
}

/*
 * "\tFILE:LINE[ +0xOFF][ fp=... sp=... pc=...]" into file, line and offset.
 * The file is everything before the last ':' of the location, so paths with
 * colons survive.
 */
static struct ws_error *parse_location(struct parser *p, const char *line,
				       size_t len, char **file, int *lineno,
				       bool *has_offset, unsigned long *offset)
{
	if (len < 2 || line[0] != '\t')
		return syntax_error(p, "expected \"\\tFILE:LINE\"", line, len);
	const char *loc = line + 1;
	size_t loclen = len - 1;
	const char *plus = memmem(loc, loclen, " +0x", 4);
	const char *fp = memmem(loc, loclen, " fp=", 4);
	if (plus)
		loclen = (size_t)(plus - loc);
	else if (fp)
		loclen = (size_t)(fp - loc);

	const char *colon = NULL;
	for (size_t i = loclen; i > 0; i--) {
		if (loc[i - 1] == ':') {
			colon = loc + i - 1;
			break;
		}
	}
	if (!colon || colon == loc)
		return syntax_error(p, "expected FILE:LINE", line, len);
	const char *num = colon + 1;
	size_t numlen = (size_t)(loc + loclen - num);
	if (!all_digits(num, numlen))
		return syntax_error(p, "bad line number", line, len);

	if (has_offset) {
		*has_offset = plus != NULL;
		*offset = 0;
		if (plus) {
			char *end;
			errno = 0;
			*offset = strtoul(plus + 2, &end, 16);
			if (errno || end == plus + 2 ||
			    (end < line + len && *end != ' '))
				return syntax_error(p, "bad pc offset", line, len);
		}
	}
	*lineno = (int)parse_decimal(num, numlen);
	return copy_string(loc, (size_t)(colon - loc), file);
}

/*
 * "FUNCTION(ARGS)". Function names hold parentheses themselves
 * ("main.(*T).M"), argument lists never do, so the arguments open at the
 * '(' matching the final ')'.
 */
static struct ws_error *add_frame(struct parser *p, const char *line,
				  size_t len)
{
	if (!ends_with(line, len, ")"))
		return syntax_error(p, "expected a frame \"FUNCTION(ARGS)\"",
				    line, len);
	size_t depth = 0, open = len;
	for (size_t i = len; i > 0; i--) {
		if (line[i - 1] == ')') {
			depth++;
		} else if (line[i - 1] == '(' && --depth == 0) {
			open = i - 1;
			break;
		}
	}
	if (open == len || open == 0)
		return syntax_error(p, "unbalanced frame", line, len);

	struct ws_go_goroutine *g = current(p);
	if (g->nframes == p->frames_cap) {
		size_t cap = p->frames_cap ? 2 * p->frames_cap : 8;
		struct ws_go_frame *grown =
			realloc(g->frames, cap * sizeof(*grown));
		if (!grown)
			return &ws_error_nomem;
		g->frames = grown;
		p->frames_cap = cap;
	}
	struct ws_go_frame *f = &g->frames[g->nframes++];
	memset(f, 0, sizeof(*f));
	struct ws_error *err = copy_string(line, open, &f->function);
	if (!err)
		err = copy_string(line + open + 1, len - open - 2, &f->args);
	if (err)
		return err;
	f->inlined = strcmp(f->args, "...") == 0;
	if (!g->frames_elided)
		g->elided_at = g->nframes;
	return NULL;
}

/* "created by FUNCTION" or "created by FUNCTION in goroutine N". */
static struct ws_error *parse_created_by(struct parser *p, const char *line,
					 size_t len)
{
	struct ws_go_goroutine *g = current(p);
	const char *fn = line + strlen("created by ");
	size_t fnlen = len - strlen("created by ");
	static const char in_goroutine[] = " in goroutine ";
	const char *in = memmem(fn, fnlen, in_goroutine,
				sizeof(in_goroutine) - 1);
	if (in) {
		const char *num = in + sizeof(in_goroutine) - 1;
		size_t numlen = (size_t)(fn + fnlen - num);
		if (!all_digits(num, numlen))
			return syntax_error(p, "bad \"created by\" goroutine",
					    line, len);
		g->created_by_goid = parse_decimal(num, numlen);
		fnlen = (size_t)(in - fn);
	}
	if (fnlen == 0)
		return syntax_error(p, "empty \"created by\"", line, len);
	g->has_created_by = true;
	return copy_string(fn, fnlen, &g->created_by);
}

static struct ws_error *parse_goroutine_line(struct parser *p,
					     const char *line, size_t len)
{
	struct ws_go_goroutine *g = current(p);
	if (line[0] == '\t') {
		static const char unavailable[] =
			"\tgoroutine running on other thread; stack unavailable";
		if (len == sizeof(unavailable) - 1 &&
		    memcmp(line, unavailable, len) == 0) {
			g->stack_unavailable = true;
			return NULL;
		}
		return syntax_error(p, "location without a frame", line, len);
	}
	if (starts_with(line, len, "created by ")) {
		p->state = EXPECT_CREATED_FILE;
		return parse_created_by(p, line, len);
	}
	if (starts_with(line, len, "...") && ends_with(line, len, "...") &&
	    memmem(line, len, "elided", 6)) {
		/* "...additional frames elided..." or "...N frames elided...". */
		size_t digits = 0;
		while (3 + digits < len && line[3 + digits] >= '0' &&
		       line[3 + digits] <= '9')
			digits++;
		if (g->frames_elided)
			return syntax_error(p, "a second elision", line, len);
		g->frames_elided = true;
		g->elided_at = g->nframes;
		if (digits)
			g->elided_count = parse_decimal(line + 3, digits);
		return NULL;
	}
	if (starts_with(line, len, "[originating from goroutine ")) {
		g->nancestors++;
		p->state = IN_ANCESTOR;
		return NULL;
	}
	p->state = EXPECT_FRAME_FILE;
	return add_frame(p, line, len);
}

static struct ws_error *parse_line(struct parser *p, const char *line,
				   size_t len)
{
	struct ws_go_goroutine *g;
	struct ws_go_frame *f;
	struct ws_error *err;

	if (len == 0) {
		if (p->state == EXPECT_FRAME_FILE ||
		    p->state == EXPECT_CREATED_FILE)
			return syntax_error(p, "section ends before FILE:LINE",
					    line, len);
		p->state = OUTSIDE;
		return NULL;
	}
	switch (p->state) {
	case OUTSIDE:
		if (!is_header(line, len))
			return NULL;
		p->state = IN_GOROUTINE;
		return start_goroutine(p, line, len);
	case IN_GOROUTINE:
		return parse_goroutine_line(p, line, len);
	case EXPECT_FRAME_FILE:
		g = current(p);
		f = &g->frames[g->nframes - 1];
		p->state = IN_GOROUTINE;
		err = parse_location(p, line, len, &f->file, &f->line,
				     &f->has_pc_offset, &f->pc_offset);
		/* "(...)" also marks ancestors' frames, which have offsets;
		 * an inlined frame never has one. */
		if (!err && f->has_pc_offset)
			f->inlined = false;
		return err;
	case EXPECT_CREATED_FILE:
		g = current(p);
		p->state = IN_GOROUTINE;
		return parse_location(p, line, len, &g->created_by_file,
				      &g->created_by_line, NULL, NULL);
	case IN_ANCESTOR:
		return NULL;
	}
	return NULL;
}

struct ws_error *ws_go_traceback_parse(const char *text, size_t len,
				       struct ws_go_traceback **ret)
{
	struct parser p = { .state = OUTSIDE };
	p.tb = calloc(1, sizeof(*p.tb));
	if (!p.tb)
		return &ws_error_nomem;

	const char *end = text + len;
	for (const char *line = text; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *line_end = nl ? nl : end;
		size_t line_len = (size_t)(line_end - line);
		if (line_len > 0 && line[line_len - 1] == '\r')
			line_len--;
		p.lineno++;
		struct ws_error *err = parse_line(&p, line, line_len);
		if (err) {
			ws_go_traceback_destroy(p.tb);
			return err;
		}
		line = nl ? nl + 1 : end;
	}
	if (p.state == EXPECT_FRAME_FILE || p.state == EXPECT_CREATED_FILE) {
		ws_go_traceback_destroy(p.tb);
		return ws_error_create(WS_ERR_OTHER,
				       "go traceback: text ends before FILE:LINE");
	}
	*ret = p.tb;
	return NULL;
}

struct ws_error *ws_go_traceback_parse_file(const char *path,
					    struct ws_go_traceback **ret)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return ws_error_from_errno(errno, WS_ERR_OTHER, "%s", path);
	char *text = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (cap - len < 65536) {
			cap = cap ? 2 * cap : 1 << 20;
			char *grown = realloc(text, cap);
			if (!grown) {
				free(text);
				fclose(f);
				return &ws_error_nomem;
			}
			text = grown;
		}
		size_t n = fread(text + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	int read_failed = ferror(f);
	fclose(f);
	struct ws_error *err = read_failed
		? ws_error_create(WS_ERR_OTHER, "read: I/O error")
		: ws_go_traceback_parse(text, len, ret);
	free(text);
	return ws_error_wrap(err, "%s", path);
}

void ws_go_traceback_destroy(struct ws_go_traceback *tb)
{
	if (!tb)
		return;
	for (size_t i = 0; i < tb->ngoroutines; i++) {
		struct ws_go_goroutine *g = &tb->goroutines[i];
		for (size_t j = 0; j < g->nframes; j++) {
			free(g->frames[j].function);
			free(g->frames[j].args);
			free(g->frames[j].file);
		}
		free(g->frames);
		free(g->raw_state);
		free(g->state);
		free(g->created_by);
		free(g->created_by_file);
	}
	free(tb->goroutines);
	free(tb);
}

const struct ws_go_goroutine *
ws_go_traceback_find(const struct ws_go_traceback *tb, long goid)
{
	for (size_t i = 0; i < tb->ngoroutines; i++)
		if (tb->goroutines[i].goid == goid)
			return &tb->goroutines[i];
	return NULL;
}

long ws_go_goroutine_find_frame(const struct ws_go_goroutine *g,
				const char *function)
{
	for (size_t i = 0; i < g->nframes; i++)
		if (strcmp(g->frames[i].function, function) == 0)
			return (long)i;
	return -1;
}
