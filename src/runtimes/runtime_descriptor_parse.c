/*
 * Runtime descriptors (wallspy-descriptor(5)), formats 1 and 2: the JSON
 * parsed with cJSON and every DWARF name resolved once, to offsets and to
 * paths through pointers (ws_dwpath), so a tick only decodes copies and
 * follows the hops a path names. Checks what a walk would trip on later
 * (a `next` that is not a pointer, a link that is not a member) at load.
 * Errors name the JSON path and the missing DWARF thing. This file has the
 * JSON, paths and globals, value maps and the registry; a task's fields and
 * the workers are runtime_descriptor_parse_task.c's; finding a target's
 * descriptor is runtime_descriptor_find.c.
 */
#include <cJSON.h>
#include <dwarf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_descriptor_parse_internal.h"

struct ws_error *dparse_err(const struct descriptor *d, const char *path,
			    struct ws_error *cause)
{
	/* A path the DWARF cannot follow (not a pointer, an index out of
	 * range, a malformed path) is the descriptor's mistake: usage. */
	if (cause && cause->kind == WS_ERR_OTHER)
		cause->kind = WS_ERR_USAGE;
	return ws_error_wrap(cause, "runtime descriptor %s: $.%s", d->source,
			     path);
}

struct ws_error *dparse_msg(const struct descriptor *d, const char *path,
			    const char *msg)
{
	return ws_error_create(WS_ERR_USAGE, "runtime descriptor %s: $.%s: %s",
			       d->source, path, msg);
}

const char *dparse_string(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

const cJSON *dparse_get(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* An integer given as a JSON number or a string ("0x38", "-8"). */
bool dparse_integer(const cJSON *v, int64_t *ret)
{
	if (cJSON_IsNumber(v)) {
		if (v->valuedouble != (double)(int64_t)v->valuedouble)
			return false;
		*ret = (int64_t)v->valuedouble;
		return true;
	}
	if (!cJSON_IsString(v))
		return false;
	char *end;
	errno = 0;
	long long n = strtoll(v->valuestring, &end, 0);
	if (errno || end == v->valuestring || *end)
		return false;
	*ret = n;
	return true;
}

char *dparse_strdup(const char *s, bool *nomem)
{
	if (!s)
		return NULL;
	char *copy = strdup(s);
	*nomem |= !copy;
	return copy;
}

/* ---- paths ---- */

struct ws_error *dparse_path(struct parser *s, const char *jpath,
			     const struct ws_dwtype *type,
			     const char *text, struct ws_dwpath *ret)
{
	struct ws_error *err = ws_dwtype_path(s->prog, type, text, ret);
	return err ? dparse_err(s->d, jpath, err) : NULL;
}

/* An optional member path: absent is fine, present must resolve. */
struct ws_error *dparse_optional_path(struct parser *s, const cJSON *obj,
				      const char *key, const char *jpath,
				      const struct ws_dwtype *type, bool *has,
				      struct ws_dwpath *ret)
{
	const cJSON *v = dparse_get(obj, key);
	*has = false;
	if (!v)
		return NULL;
	if (!cJSON_IsString(v))
		return dparse_msg(s->d, jpath, "expected a member path (string)");
	*has = true;
	return dparse_path(s, jpath, type, v->valuestring, ret);
}

struct ws_error *dparse_require_integer(struct parser *s, const char *jpath,
					const struct ws_dwfield *f)
{
	if (f->kind == WS_DWTYPE_SIGNED || f->kind == WS_DWTYPE_UNSIGNED ||
	    f->kind == WS_DWTYPE_POINTER)
		return NULL;
	char tn[256], msg[320];
	snprintf(msg, sizeof(msg), "'%s' is not an integer or pointer",
		 ws_dwtype_name(&f->type, tn, sizeof(tn)));
	return dparse_msg(s->d, jpath, msg);
}

struct ws_error *dparse_require_pointer(struct parser *s, const char *jpath,
					const struct ws_dwfield *f)
{
	if (f->kind == WS_DWTYPE_POINTER)
		return NULL;
	char tn[256], msg[320];
	snprintf(msg, sizeof(msg), "'%s' is not a pointer",
		 ws_dwtype_name(&f->type, tn, sizeof(tn)));
	return dparse_msg(s->d, jpath, msg);
}

/* The global an expression starts with: a declared symbol or a DWARF
 * variable. */
static struct ws_error *find_global(struct parser *s, const char *name,
				    struct ws_dwobj *ret)
{
	for (size_t i = 0; i < s->nsymbols; i++)
		if (strcmp(s->symbol_name[i], name) == 0) {
			*ret = s->symbol[i];
			return NULL;
		}
	return ws_dwtype_global(s->prog, NULL, name, ret);
}

/* Whether expr[i] starts a path part: '.', '[' or "->". */
static bool path_separator(const char *expr, size_t i)
{
	return expr[i] == '.' || expr[i] == '[' ||
	       (expr[i] == '-' && expr[i + 1] == '>');
}

/* A global expression: a variable (or declared symbol) and a member path
 * from it, "__pth_WQ.q_head", "Fiber::fibers->head". The longest prefix
 * that names a global wins, so Go's dotted names ("runtime.allgs") and
 * C++'s qualified ones ("app::ctx.x") both work. */
struct ws_error *dparse_gref(struct parser *s, const cJSON *v,
			     const char *jpath, struct gref *ret)
{
	if (!cJSON_IsString(v))
		return dparse_msg(s->d, jpath, "expected a global (variable and member path)");
	const char *expr = v->valuestring;
	size_t len = strlen(expr);
	struct ws_error *first = NULL;
	memset(ret, 0, sizeof(*ret));
	for (size_t cut = len; cut > 0; cut--) {
		if (cut < len && !path_separator(expr, cut))
			continue;
		char name[256];
		if (cut >= sizeof(name))
			continue;
		memcpy(name, expr, cut);
		name[cut] = '\0';
		struct ws_error *err = find_global(s, name, &ret->var);
		if (err) {
			if (!first)
				first = err;
			else
				ws_error_destroy(err);
			if (first->kind != WS_ERR_NO_DEBUGINFO)
				break;
			continue;
		}
		ws_error_destroy(first);
		ret->type = ret->var.type;
		ret->kind = ret->var.kind;
		ret->size = ret->var.size;
		if (cut == len)
			return NULL;
		const char *rest = expr + cut;
		err = ws_dwtype_path(s->prog, &ret->var.type, rest, &ret->path);
		if (err)
			return dparse_err(s->d, jpath, err);
		const struct ws_dwfield *last = ws_dwpath_last(&ret->path);
		ret->type = last->type;
		ret->kind = last->kind;
		ret->size = last->size;
		return NULL;
	}
	return dparse_err(s->d, jpath, first ? first
			  : ws_error_create(WS_ERR_USAGE, "empty global"));
}

/* Format 2's "symbols": {"Fiber::fibers": "Thread::LinkedList(Fiber)"}. */
static struct ws_error *parse_symbols(struct parser *s, const cJSON *root)
{
	const cJSON *syms = dparse_get(root, "symbols"), *v;
	if (!syms)
		return NULL;
	if (!cJSON_IsObject(syms))
		return dparse_msg(s->d, "symbols", "expected an object of symbol: DWARF type name");
	cJSON_ArrayForEach(v, syms) {
		char jp[300];
		snprintf(jp, sizeof(jp), "symbols.%.200s", v->string);
		if (!cJSON_IsString(v))
			return dparse_msg(s->d, jp, "expected a DWARF type name");
		if (s->nsymbols == MAX_SYMBOLS)
			return dparse_msg(s->d, "symbols", "too many symbols");
		struct ws_error *err = ws_dwtype_symbol(s->prog, NULL, v->string,
							v->valuestring,
							&s->symbol[s->nsymbols]);
		if (err)
			return dparse_err(s->d, jp, err);
		if (!(s->symbol_name[s->nsymbols++] = strdup(v->string)))
			return &ws_error_nomem;
	}
	return NULL;
}

/* ---- values ---- */

/* The value of enumerator `name` in the enum type of `field`. */
static bool enumerator_value(const struct ws_dwfield *field, const char *name,
			     int64_t *ret)
{
	Dwarf_Die die = field->type.die;
	if (!die.addr)
		return false;
	/* Peel typedefs and qualifiers down to the enumeration. */
	for (int depth = 0; dwarf_tag(&die) != DW_TAG_enumeration_type; depth++) {
		Dwarf_Attribute attr;
		if (depth > 8 || !dwarf_attr_integrate(&die, DW_AT_type, &attr) ||
		    !dwarf_formref_die(&attr, &die))
			return false;
	}
	Dwarf_Die child;
	if (dwarf_child(&die, &child) != 0)
		return false;
	do {
		if (dwarf_tag(&child) != DW_TAG_enumerator)
			continue;
		const char *n = dwarf_diename(&child);
		if (!n || strcmp(n, name) != 0)
			continue;
		Dwarf_Attribute attr;
		Dwarf_Sword sv;
		if (dwarf_attr(&child, DW_AT_const_value, &attr) &&
		    dwarf_formsdata(&attr, &sv) == 0) {
			*ret = sv;
			return true;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

struct ws_error *dparse_values(struct parser *s, const cJSON *values,
			       const char *jpath,
			       const struct ws_dwfield *field,
			       const char *const *allowed,
			       struct value_map *map)
{
	if (!cJSON_IsObject(values))
		return dparse_msg(s->d, jpath, "expected an object of value: name");
	const cJSON *v;
	cJSON_ArrayForEach(v, values) {
		if (map->n == MAX_REASON_VALUES)
			return dparse_msg(s->d, jpath, "too many values");
		if (!cJSON_IsString(v))
			return dparse_msg(s->d, jpath, "values must be strings");
		if (allowed) {
			bool ok = false;
			for (const char *const *a = allowed; *a; a++)
				ok |= strcmp(*a, v->valuestring) == 0;
			if (!ok) {
				char p[256];
				snprintf(p, sizeof(p), "%s.%.120s", jpath, v->string);
				char msg[160];
				snprintf(msg, sizeof(msg),
					 "unknown state '%.40s' (expected new, running, runnable, waiting, syscall, idle or done)",
					 v->valuestring);
				return dparse_msg(s->d, p, msg);
			}
		}
		char *end;
		errno = 0;
		long long num = strtoll(v->string, &end, 0);
		int64_t value;
		if (!errno && end != v->string && *end == '\0') {
			value = num;
		} else if (!enumerator_value(field, v->string, &value)) {
			char p[256], tn[128];
			snprintf(p, sizeof(p), "%s.%.120s", jpath, v->string);
			return ws_error_create(WS_ERR_NO_DEBUGINFO,
					       "runtime descriptor %s: $.%s: no enumerator '%s' in type '%s'",
					       s->d->source, p, v->string,
					       ws_dwtype_name(&field->type, tn, sizeof(tn)));
		}
		map->value[map->n] = value;
		/* The JSON tree is freed after parsing. */
		map->name[map->n] = strdup(v->valuestring);
		if (!map->name[map->n])
			return &ws_error_nomem;
		map->n++;
	}
	return NULL;
}

/* ---- the registry ---- */

static bool parse_layout(const char *text, enum layout *ret)
{
	static const struct { const char *name; enum layout layout; } layouts[] = {
		{"list", LAYOUT_LIST}, {"ring", LAYOUT_RING},
		{"sentinel-ring", LAYOUT_SENTINEL_RING},
		{"array", LAYOUT_ARRAY}, {"pointer-array", LAYOUT_POINTER_ARRAY},
	};
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (strcmp(text, layouts[i].name) == 0) {
			*ret = layouts[i].layout;
			return true;
		}
	return false;
}

/* A root's key, or the registry's default for it (format 2 roots inherit
 * layout, next and link). */
static const cJSON *root_key(const cJSON *root, const cJSON *registry,
			     const char *key)
{
	const cJSON *v = dparse_get(root, key);
	return v ? v : dparse_get(registry, key);
}

/* The task type a root's global leads to, by layout (without a link:
 * with one, list pointers point at the link, and registry.task names the
 * task type). */
static struct ws_error *root_task_type(struct parser *s, struct root *r,
				       struct ws_dwtype *ret)
{
	struct descriptor *d = s->d;
	char jp[64];
	snprintf(jp, sizeof(jp), "%s.global", r->where);
	struct ws_dwtype inner;
	struct ws_error *err = NULL;
	switch (r->layout) {
	case LAYOUT_LIST:
	case LAYOUT_RING:
		err = ws_dwtype_target(&r->head.type, ret);
		break;
	case LAYOUT_SENTINEL_RING:
		return dparse_msg(d, jp, "a sentinel ring needs registry.link and registry.task");
	case LAYOUT_ARRAY:
		err = ws_dwtype_target(&r->head.type, ret);
		break;
	case LAYOUT_POINTER_ARRAY:
		err = ws_dwtype_target(&r->head.type, &inner);
		if (!err)
			err = ws_dwtype_target(&inner, ret);
		break;
	}
	return err ? dparse_err(d, jp, err) : NULL;
}

/* Sets the descriptor's task type (the first root, or registry.task), or
 * checks another root leads to the same. */
static struct ws_error *set_task_type(struct parser *s, const char *jp,
				      const struct ws_dwtype *tt)
{
	struct descriptor *d = s->d;
	uint64_t size;
	struct ws_error *err = ws_dwtype_type_sizeof(s->prog, tt, &size);
	if (err)
		return dparse_err(d, jp, err);
	if (!d->task_size) {
		if (size == 0 || size > (1u << 20))
			return dparse_msg(d, jp, "the task type's size is 0 or over 1 MiB");
		d->task_type = *tt;
		d->task_size = size;
		return NULL;
	}
	/* Typedefs and qualifiers may name it differently: compare sizes. */
	if (size != d->task_size)
		return dparse_msg(d, jp, "leads to another task type than the first root");
	return NULL;
}

/* `link`: the task member list pointers point at (intrusive lists). */
static struct ws_error *parse_link(struct parser *s, struct root *r,
				   const char *link, struct ws_dwtype *link_type)
{
	char jp[64];
	snprintf(jp, sizeof(jp), "%s.link", r->where);
	struct ws_dwfield f;
	struct ws_error *err = ws_dwtype_field(s->prog, &s->d->task_type, link,
					       &f);
	if (err)
		return dparse_err(s->d, jp, err);
	if (f.kind != WS_DWTYPE_STRUCT && f.kind != WS_DWTYPE_UNION)
		return dparse_msg(s->d, jp, "the link must be a struct member of the task (the node list pointers point at)");
	r->link = f.offset;
	*link_type = f.type;
	return NULL;
}

static struct ws_error *parse_root(struct parser *s, const cJSON *jroot,
				   const cJSON *registry, struct root *r)
{
	struct descriptor *d = s->d;
	char jp[64];
	const cJSON *lv = root_key(jroot, registry, "layout");
	snprintf(jp, sizeof(jp), "%s.layout", r->where);
	r->layout = LAYOUT_LIST;
	if (lv && (!cJSON_IsString(lv) || !parse_layout(lv->valuestring, &r->layout)))
		return dparse_msg(d, jp, "expected list, ring, sentinel-ring, array or pointer-array");
	if (d->version < 2 && r->layout != LAYOUT_LIST &&
	    r->layout != LAYOUT_ARRAY && r->layout != LAYOUT_POINTER_ARRAY)
		return dparse_msg(d, jp, "rings need \"wallspy\": \"runtime-descriptor/2\"");
	bool array = r->layout == LAYOUT_ARRAY || r->layout == LAYOUT_POINTER_ARRAY;

	const cJSON *gv = dparse_get(jroot, "global");
	snprintf(jp, sizeof(jp), "%s.global", r->where);
	if (!gv)
		return dparse_msg(d, jp, "missing (the registry's global variable)");
	struct ws_error *err = dparse_gref(s, gv, jp, &r->head);
	if (err)
		return err;
	if ((r->layout == LAYOUT_LIST || r->layout == LAYOUT_RING) &&
	    r->head.kind != WS_DWTYPE_POINTER)
		return dparse_msg(d, jp, "a list's global must be a pointer to the first task");
	if (r->layout == LAYOUT_SENTINEL_RING && r->head.kind != WS_DWTYPE_STRUCT)
		return dparse_msg(d, jp, "a sentinel ring's global must be its header (a struct)");

	const cJSON *cv = dparse_get(jroot, "count");
	snprintf(jp, sizeof(jp), "%s.count", r->where);
	if (cv) {
		if ((err = dparse_gref(s, cv, jp, &r->count)))
			return err;
		struct ws_dwfield f = {.type = r->count.type, .kind = r->count.kind};
		if ((err = dparse_require_integer(s, jp, &f)))
			return err;
		r->has_count = true;
	} else if (array && r->head.kind != WS_DWTYPE_ARRAY) {
		return dparse_msg(d, jp, "needed for an array reached through a pointer");
	}

	const cJSON *link = array ? NULL : root_key(jroot, registry, "link");
	snprintf(jp, sizeof(jp), "%s.global", r->where);
	if (!link) {
		struct ws_dwtype tt;
		if ((err = root_task_type(s, r, &tt)) ||
		    (err = set_task_type(s, jp, &tt)))
			return err;
	}
	if (array)
		return NULL;

	/* Lists: next, maybe through a link member. */
	struct ws_dwtype next_base = d->task_type;
	if (link) {
		snprintf(jp, sizeof(jp), "%s.link", r->where);
		if (!cJSON_IsString(link))
			return dparse_msg(d, jp, "expected a member of the task");
		if (!d->task_size)
			return dparse_msg(d, "registry.task", "missing (the task type's name: with a link, list pointers do not say it)");
		if ((err = parse_link(s, r, link->valuestring, &next_base)))
			return err;
	}
	const cJSON *next = root_key(jroot, registry, "next");
	snprintf(jp, sizeof(jp), "%s.next", r->where);
	if (!cJSON_IsString(next))
		return dparse_msg(d, jp, "missing (the member linking to the next task)");
	if ((err = dparse_path(s, jp, &next_base, next->valuestring, &r->next)) ||
	    (err = dparse_require_pointer(s, jp, ws_dwpath_last(&r->next))))
		return err;
	if (r->layout == LAYOUT_SENTINEL_RING &&
	    ((err = dparse_path(s, jp, &r->head.type, next->valuestring,
				&r->header_next)) ||
	     (err = dparse_require_pointer(s, jp, ws_dwpath_last(&r->header_next)))))
		return err;
	return NULL;
}

static struct ws_error *parse_registry(struct parser *s, const cJSON *root)
{
	struct descriptor *d = s->d;
	const cJSON *reg = dparse_get(root, "registry");
	if (!cJSON_IsObject(reg))
		return dparse_msg(d, "registry", "missing (an object)");
	const cJSON *roots = dparse_get(reg, "roots");
	struct ws_error *err;
	const cJSON *task = dparse_get(reg, "task");
	if (task) {
		struct ws_dwtype tt;
		if (d->version < 2 || !cJSON_IsString(task))
			return dparse_msg(d, "registry.task", "expected a type name (format 2)");
		if ((err = ws_dwtype_find_type(s->prog, NULL, task->valuestring, &tt)))
			return dparse_err(d, "registry.task", err);
		if ((err = set_task_type(s, "registry.task", &tt)))
			return err;
	}
	if (roots && d->version < 2)
		return dparse_msg(d, "registry.roots", "needs \"wallspy\": \"runtime-descriptor/2\"");
	if (roots) {
		if (!cJSON_IsArray(roots) || cJSON_GetArraySize(roots) == 0)
			return dparse_msg(d, "registry.roots", "expected a non-empty array of roots");
		const cJSON *r;
		cJSON_ArrayForEach(r, roots) {
			if (d->nroots == MAX_ROOTS)
				return dparse_msg(d, "registry.roots", "too many roots (16 at most)");
			struct root *out = &d->roots[d->nroots];
			snprintf(out->where, sizeof(out->where),
				 "registry.roots[%zu]", d->nroots);
			if (!cJSON_IsObject(r))
				return dparse_msg(d, out->where, "expected an object");
			if ((err = parse_root(s, r, reg, out)))
				return err;
			d->nroots++;
		}
	} else {
		snprintf(d->roots[0].where, sizeof(d->roots[0].where), "registry");
		if ((err = parse_root(s, reg, reg, &d->roots[0])))
			return err;
		d->nroots = 1;
	}

	const cJSON *current = dparse_get(reg, "current");
	if (current) {
		if (d->version < 2)
			return dparse_msg(d, "registry.current", "needs \"wallspy\": \"runtime-descriptor/2\"");
		if ((err = dparse_gref(s, current, "registry.current", &d->current)))
			return err;
		struct ws_dwfield f = {.type = d->current.type, .kind = d->current.kind};
		if ((err = dparse_require_pointer(s, "registry.current", &f)))
			return err;
		d->has_current = true;
	}

	const cJSON *max = dparse_get(reg, "max");
	int64_t m;
	d->max_tasks = 1000000;
	if (max && (!dparse_integer(max, &m) || m < 1))
		return dparse_msg(d, "registry.max", "expected a positive integer");
	if (max)
		d->max_tasks = (uint64_t)m;
	return NULL;
}

static struct ws_error *json_error(const struct descriptor *d, const char *text)
{
	/* Where the parser stopped, as line:column, and a one-line excerpt
	 * of what it saw there. */
	const char *where = cJSON_GetErrorPtr();
	int line = 1, column = 1;
	char excerpt[24] = "";
	if (where && where >= text) {
		for (const char *p = text; p < where; p++) {
			column = *p == '\n' ? 1 : column + 1;
			line += *p == '\n';
		}
		size_t i = 0;
		for (; i < sizeof(excerpt) - 1 && where[i]; i++)
			excerpt[i] = (unsigned char)where[i] < ' ' ? ' ' : where[i];
		excerpt[i] = '\0';
	}
	return ws_error_create(WS_ERR_USAGE,
			       "runtime descriptor %s: invalid JSON at line %d, column %d, near '%s'",
			       d->source, line, column, excerpt);
}

static struct ws_error *parse_descriptor(struct parser *s, const char *text)
{
	struct descriptor *d = s->d;
	cJSON *root = cJSON_Parse(text);
	if (!root)
		return json_error(d, text);
	struct ws_error *err = NULL;
	const char *format = dparse_string(root, "wallspy");
	const char *name = dparse_string(root, "name");
	if (format && strcmp(format, "runtime-descriptor/1") == 0)
		d->version = 1;
	else if (format && strcmp(format, "runtime-descriptor/2") == 0)
		d->version = 2;
	if (!d->version)
		err = dparse_msg(d, "wallspy", "expected \"runtime-descriptor/2\" (or /1)");
	else if (!name)
		err = dparse_msg(d, "name", "missing (the runtime's name)");
	else if (!(d->name = strdup(name)))
		err = &ws_error_nomem;
	const cJSON *detect = dparse_get(root, "detect");
	if (!err && detect) {
		const char *sym = dparse_string(detect, "symbol");
		if (!sym)
			err = dparse_msg(d, "detect.symbol", "missing (a symbol every program of the runtime has)");
		else if (!(d->detect_symbol = strdup(sym)))
			err = &ws_error_nomem;
	}
	if (!err && d->version >= 2)
		err = parse_symbols(s, root);
	if (!err)
		err = parse_registry(s, root);
	if (!err)
		err = dparse_task(s, root);
	if (!err)
		err = dparse_workers(s, root);
	cJSON_Delete(root);
	return err;
}

struct ws_error *ws_descriptor_parse(struct descriptor *d,
				     struct ws_dwtype_program *prog,
				     const char *text)
{
	struct parser p = {.d = d, .prog = prog};
	struct ws_error *err = parse_descriptor(&p, text);
	for (size_t i = 0; i < p.nsymbols; i++)
		free(p.symbol_name[i]);
	return err;
}

void ws_descriptor_deinit(struct descriptor *d)
{
	free(d->name);
	free(d->root_function);
	free(d->root_file);
	free(d->detect_symbol);
	for (size_t i = 0; i < d->states.n; i++)
		free((char *)d->states.name[i]);
	for (size_t i = 0; i < d->reasons.n; i++)
		free((char *)d->reasons.name[i]);
}

const char *ws_descriptor_map_lookup(const struct value_map *map, int64_t value)
{
	for (size_t i = 0; i < map->n; i++)
		if (map->value[i] == value)
			return map->name[i];
	return NULL;
}
