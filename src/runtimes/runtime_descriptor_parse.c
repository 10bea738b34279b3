/*
 * Runtime descriptors (wallspy-descriptor(5)), formats 1 and 2: the JSON
 * parsed with cJSON and every DWARF name resolved once, to offsets and to
 * paths through pointers (ws_dwpath), so a tick only decodes copies and
 * follows the hops a path names. Checks what a walk would trip on later
 * (a `next` that is not a pointer, a link that is not a member) at load.
 * Errors name the JSON path and the missing DWARF thing; finding a target's
 * descriptor is runtime_descriptor_find.c.
 */
#include <cJSON.h>
#include <dwarf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_descriptor_internal.h"

enum { MAX_SYMBOLS = 16 };

struct parser {
	struct descriptor *d;
	struct ws_dwtype_program *prog;
	/* Format 2's "symbols": ELF symbols typed from DWARF. */
	size_t nsymbols;
	char *symbol_name[MAX_SYMBOLS];
	struct ws_dwobj symbol[MAX_SYMBOLS];
};

static struct ws_error *derr(const struct descriptor *d, const char *path,
			     struct ws_error *cause)
{
	/* A path the DWARF cannot follow (not a pointer, an index out of
	 * range, a malformed path) is the descriptor's mistake: usage. */
	if (cause && cause->kind == WS_ERR_OTHER)
		cause->kind = WS_ERR_USAGE;
	return ws_error_wrap(cause, "runtime descriptor %s: $.%s", d->source,
			     path);
}

static struct ws_error *dmsg(const struct descriptor *d, const char *path,
			     const char *msg)
{
	return ws_error_create(WS_ERR_USAGE, "runtime descriptor %s: $.%s: %s",
			       d->source, path, msg);
}

static const char *jstring(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *jget(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* An integer given as a JSON number or a string ("0x38", "-8"). */
static bool jinteger(const cJSON *v, int64_t *ret)
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

static char *strdup_or_null(const char *s, bool *nomem)
{
	if (!s)
		return NULL;
	char *copy = strdup(s);
	*nomem |= !copy;
	return copy;
}

/* ---- paths ---- */

static struct ws_error *resolve_path(struct parser *s, const char *jpath,
				     const struct ws_dwtype *type,
				     const char *text, struct ws_dwpath *ret)
{
	struct ws_error *err = ws_dwtype_path(s->prog, type, text, ret);
	return err ? derr(s->d, jpath, err) : NULL;
}

/* An optional member path: absent is fine, present must resolve. */
static struct ws_error *optional_path(struct parser *s, const cJSON *obj,
				      const char *key, const char *jpath,
				      const struct ws_dwtype *type, bool *has,
				      struct ws_dwpath *ret)
{
	const cJSON *v = jget(obj, key);
	*has = false;
	if (!v)
		return NULL;
	if (!cJSON_IsString(v))
		return dmsg(s->d, jpath, "expected a member path (string)");
	*has = true;
	return resolve_path(s, jpath, type, v->valuestring, ret);
}

static struct ws_error *require_integer(struct parser *s, const char *jpath,
					const struct ws_dwfield *f)
{
	if (f->kind == WS_DWTYPE_SIGNED || f->kind == WS_DWTYPE_UNSIGNED ||
	    f->kind == WS_DWTYPE_POINTER)
		return NULL;
	char tn[256], msg[320];
	snprintf(msg, sizeof(msg), "'%s' is not an integer or pointer",
		 ws_dwtype_name(&f->type, tn, sizeof(tn)));
	return dmsg(s->d, jpath, msg);
}

static struct ws_error *require_pointer(struct parser *s, const char *jpath,
					const struct ws_dwfield *f)
{
	if (f->kind == WS_DWTYPE_POINTER)
		return NULL;
	char tn[256], msg[320];
	snprintf(msg, sizeof(msg), "'%s' is not a pointer",
		 ws_dwtype_name(&f->type, tn, sizeof(tn)));
	return dmsg(s->d, jpath, msg);
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
static struct ws_error *parse_gref(struct parser *s, const cJSON *v,
				   const char *jpath, struct gref *ret)
{
	if (!cJSON_IsString(v))
		return dmsg(s->d, jpath, "expected a global (variable and member path)");
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
			return derr(s->d, jpath, err);
		const struct ws_dwfield *last = ws_dwpath_last(&ret->path);
		ret->type = last->type;
		ret->kind = last->kind;
		ret->size = last->size;
		return NULL;
	}
	return derr(s->d, jpath, first ? first
					: ws_error_create(WS_ERR_USAGE, "empty global"));
}

/* Format 2's "symbols": {"Fiber::fibers": "Thread::LinkedList(Fiber)"}. */
static struct ws_error *parse_symbols(struct parser *s, const cJSON *root)
{
	const cJSON *syms = jget(root, "symbols"), *v;
	if (!syms)
		return NULL;
	if (!cJSON_IsObject(syms))
		return dmsg(s->d, "symbols", "expected an object of symbol: DWARF type name");
	cJSON_ArrayForEach(v, syms) {
		char jp[300];
		snprintf(jp, sizeof(jp), "symbols.%.200s", v->string);
		if (!cJSON_IsString(v))
			return dmsg(s->d, jp, "expected a DWARF type name");
		if (s->nsymbols == MAX_SYMBOLS)
			return dmsg(s->d, "symbols", "too many symbols");
		struct ws_error *err = ws_dwtype_symbol(s->prog, NULL, v->string,
							v->valuestring,
							&s->symbol[s->nsymbols]);
		if (err)
			return derr(s->d, jp, err);
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

static struct ws_error *parse_values(struct parser *s, const cJSON *values,
				     const char *jpath,
				     const struct ws_dwfield *field,
				     const char *const *allowed,
				     struct value_map *map)
{
	if (!cJSON_IsObject(values))
		return dmsg(s->d, jpath, "expected an object of value: name");
	const cJSON *v;
	cJSON_ArrayForEach(v, values) {
		if (map->n == MAX_REASON_VALUES)
			return dmsg(s->d, jpath, "too many values");
		if (!cJSON_IsString(v))
			return dmsg(s->d, jpath, "values must be strings");
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
				return dmsg(s->d, p, msg);
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
	const cJSON *v = jget(root, key);
	return v ? v : jget(registry, key);
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
		return dmsg(d, jp, "a sentinel ring needs registry.link and registry.task");
	case LAYOUT_ARRAY:
		err = ws_dwtype_target(&r->head.type, ret);
		break;
	case LAYOUT_POINTER_ARRAY:
		err = ws_dwtype_target(&r->head.type, &inner);
		if (!err)
			err = ws_dwtype_target(&inner, ret);
		break;
	}
	return err ? derr(d, jp, err) : NULL;
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
		return derr(d, jp, err);
	if (!d->task_size) {
		if (size == 0 || size > (1u << 20))
			return dmsg(d, jp, "the task type's size is 0 or over 1 MiB");
		d->task_type = *tt;
		d->task_size = size;
		return NULL;
	}
	/* Typedefs and qualifiers may name it differently: compare sizes. */
	if (size != d->task_size)
		return dmsg(d, jp, "leads to another task type than the first root");
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
		return derr(s->d, jp, err);
	if (f.kind != WS_DWTYPE_STRUCT && f.kind != WS_DWTYPE_UNION)
		return dmsg(s->d, jp, "the link must be a struct member of the task (the node list pointers point at)");
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
		return dmsg(d, jp, "expected list, ring, sentinel-ring, array or pointer-array");
	if (d->version < 2 && r->layout != LAYOUT_LIST &&
	    r->layout != LAYOUT_ARRAY && r->layout != LAYOUT_POINTER_ARRAY)
		return dmsg(d, jp, "rings need \"wallspy\": \"runtime-descriptor/2\"");
	bool array = r->layout == LAYOUT_ARRAY || r->layout == LAYOUT_POINTER_ARRAY;

	const cJSON *gv = jget(jroot, "global");
	snprintf(jp, sizeof(jp), "%s.global", r->where);
	if (!gv)
		return dmsg(d, jp, "missing (the registry's global variable)");
	struct ws_error *err = parse_gref(s, gv, jp, &r->head);
	if (err)
		return err;
	if ((r->layout == LAYOUT_LIST || r->layout == LAYOUT_RING) &&
	    r->head.kind != WS_DWTYPE_POINTER)
		return dmsg(d, jp, "a list's global must be a pointer to the first task");
	if (r->layout == LAYOUT_SENTINEL_RING && r->head.kind != WS_DWTYPE_STRUCT)
		return dmsg(d, jp, "a sentinel ring's global must be its header (a struct)");

	const cJSON *cv = jget(jroot, "count");
	snprintf(jp, sizeof(jp), "%s.count", r->where);
	if (cv) {
		if ((err = parse_gref(s, cv, jp, &r->count)))
			return err;
		struct ws_dwfield f = {.type = r->count.type, .kind = r->count.kind};
		if ((err = require_integer(s, jp, &f)))
			return err;
		r->has_count = true;
	} else if (array && r->head.kind != WS_DWTYPE_ARRAY) {
		return dmsg(d, jp, "needed for an array reached through a pointer");
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
			return dmsg(d, jp, "expected a member of the task");
		if (!d->task_size)
			return dmsg(d, "registry.task", "missing (the task type's name: with a link, list pointers do not say it)");
		if ((err = parse_link(s, r, link->valuestring, &next_base)))
			return err;
	}
	const cJSON *next = root_key(jroot, registry, "next");
	snprintf(jp, sizeof(jp), "%s.next", r->where);
	if (!cJSON_IsString(next))
		return dmsg(d, jp, "missing (the member linking to the next task)");
	if ((err = resolve_path(s, jp, &next_base, next->valuestring, &r->next)) ||
	    (err = require_pointer(s, jp, ws_dwpath_last(&r->next))))
		return err;
	if (r->layout == LAYOUT_SENTINEL_RING &&
	    ((err = resolve_path(s, jp, &r->head.type, next->valuestring,
				 &r->header_next)) ||
	     (err = require_pointer(s, jp, ws_dwpath_last(&r->header_next)))))
		return err;
	return NULL;
}

static struct ws_error *parse_registry(struct parser *s, const cJSON *root)
{
	struct descriptor *d = s->d;
	const cJSON *reg = jget(root, "registry");
	if (!cJSON_IsObject(reg))
		return dmsg(d, "registry", "missing (an object)");
	const cJSON *roots = jget(reg, "roots");
	struct ws_error *err;
	const cJSON *task = jget(reg, "task");
	if (task) {
		struct ws_dwtype tt;
		if (d->version < 2 || !cJSON_IsString(task))
			return dmsg(d, "registry.task", "expected a type name (format 2)");
		if ((err = ws_dwtype_find_type(s->prog, NULL, task->valuestring, &tt)))
			return derr(d, "registry.task", err);
		if ((err = set_task_type(s, "registry.task", &tt)))
			return err;
	}
	if (roots && d->version < 2)
		return dmsg(d, "registry.roots", "needs \"wallspy\": \"runtime-descriptor/2\"");
	if (roots) {
		if (!cJSON_IsArray(roots) || cJSON_GetArraySize(roots) == 0)
			return dmsg(d, "registry.roots", "expected a non-empty array of roots");
		const cJSON *r;
		cJSON_ArrayForEach(r, roots) {
			if (d->nroots == MAX_ROOTS)
				return dmsg(d, "registry.roots", "too many roots (16 at most)");
			struct root *out = &d->roots[d->nroots];
			snprintf(out->where, sizeof(out->where),
				 "registry.roots[%zu]", d->nroots);
			if (!cJSON_IsObject(r))
				return dmsg(d, out->where, "expected an object");
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

	const cJSON *current = jget(reg, "current");
	if (current) {
		if (d->version < 2)
			return dmsg(d, "registry.current", "needs \"wallspy\": \"runtime-descriptor/2\"");
		if ((err = parse_gref(s, current, "registry.current", &d->current)))
			return err;
		struct ws_dwfield f = {.type = d->current.type, .kind = d->current.kind};
		if ((err = require_pointer(s, "registry.current", &f)))
			return err;
		d->has_current = true;
	}

	const cJSON *max = jget(reg, "max");
	int64_t m;
	d->max_tasks = 1000000;
	if (max && (!jinteger(max, &m) || m < 1))
		return dmsg(d, "registry.max", "expected a positive integer");
	if (max)
		d->max_tasks = (uint64_t)m;
	return NULL;
}

/* ---- the task ---- */

static const char *const state_names[] = {
	"new", "running", "runnable", "waiting", "syscall", "idle", "done", NULL,
};

static struct ws_error *parse_name(struct parser *s, const cJSON *task)
{
	struct descriptor *d = s->d;
	const cJSON *name = jget(task, "name");
	struct ws_error *err;
	bool has;
	if (!name)
		return NULL;
	if (cJSON_IsString(name)) {
		if ((err = optional_path(s, task, "name", "task.name",
					 &d->task_type, &has, &d->name_path)))
			return err;
		const struct ws_dwfield *f = ws_dwpath_last(&d->name_path);
		if (f->kind != WS_DWTYPE_ARRAY && f->kind != WS_DWTYPE_POINTER)
			return dmsg(d, "task.name", "expected a char array or char pointer member (or a length-prefixed string object)");
		d->name_kind = NAME_CHARS;
		return NULL;
	}
	if (d->version < 2 || !cJSON_IsObject(name))
		return dmsg(d, "task.name", "expected a member path");
	/* {"member": P, "length": L, "bytes": B}: P points at a string
	 * object holding its length L and its bytes from B on (Crystal's
	 * String: bytesize, then c). */
	const char *member = jstring(name, "member"), *len = jstring(name, "length"),
		   *bytes = jstring(name, "bytes");
	if (!member || !len || !bytes)
		return dmsg(d, "task.name", "needs member, length and bytes");
	if ((err = resolve_path(s, "task.name.member", &d->task_type, member,
				&d->name_path)) ||
	    (err = require_pointer(s, "task.name.member", ws_dwpath_last(&d->name_path))))
		return err;
	struct ws_dwtype str;
	if ((err = ws_dwtype_target(&ws_dwpath_last(&d->name_path)->type, &str)))
		return derr(d, "task.name.member", err);
	if ((err = resolve_path(s, "task.name.length", &str, len, &d->name_length)) ||
	    (err = require_integer(s, "task.name.length", ws_dwpath_last(&d->name_length))) ||
	    (err = resolve_path(s, "task.name.bytes", &str, bytes, &d->name_bytes)))
		return err;
	if (d->name_length.nhops != 1 || d->name_bytes.nhops != 1)
		return dmsg(d, "task.name", "length and bytes must lie inside the string object");
	d->name_kind = NAME_LENGTH_PREFIXED;
	return NULL;
}

static struct ws_error *parse_reason(struct parser *s, const cJSON *task)
{
	struct descriptor *d = s->d;
	const cJSON *reason = jget(task, "wait_reason");
	if (!reason)
		return NULL;
	const char *member = jstring(reason, "member");
	if (!member)
		return dmsg(d, "task.wait_reason.member", "missing");
	struct ws_error *err = resolve_path(s, "task.wait_reason.member",
					    &d->task_type, member, &d->reason);
	if (err)
		return err;
	const struct ws_dwfield *f = ws_dwpath_last(&d->reason);
	const cJSON *values = jget(reason, "values"), *bits = jget(reason, "bits");
	if (values && bits)
		return dmsg(d, "task.wait_reason", "values or bits, not both");
	if (values) {
		d->reason_kind = REASON_VALUES;
		return parse_values(s, values, "task.wait_reason.values", f, NULL,
				    &d->reasons);
	}
	if (bits) {
		if (d->version < 2)
			return dmsg(d, "task.wait_reason.bits", "needs \"wallspy\": \"runtime-descriptor/2\"");
		if ((err = require_integer(s, "task.wait_reason.member", f)))
			return err;
		d->reason_kind = REASON_BITS;
		if ((err = parse_values(s, bits, "task.wait_reason.bits", f, NULL,
					&d->reasons)))
			return err;
		for (size_t i = 0; i < d->reasons.n; i++) {
			uint64_t b = (uint64_t)d->reasons.value[i];
			if (b == 0 || (b & (b - 1)))
				return dmsg(d, "task.wait_reason.bits", "each key must be one bit (0x1, 0x2, 0x4, ...)");
		}
		return NULL;
	}
	if (f->kind != WS_DWTYPE_ARRAY && f->kind != WS_DWTYPE_POINTER)
		return dmsg(d, "task.wait_reason.member", "a string member (char array or char pointer) without values");
	d->reason_kind = REASON_STRING;
	return NULL;
}

static const struct { const char *key; int regno; } reg_names[] = {
	{"rip", 16}, {"rsp", 7}, {"rbp", 6}, {"rbx", 3},
	{"r12", 12}, {"r13", 13}, {"r14", 14}, {"r15", 15},
};

/* One register: "member.path", or {"member": P, "mangled": true,
 * "at": OFFSET, "add": N}. */
static struct ws_error *parse_register(struct parser *s, const cJSON *v,
				       const char *jp, struct reg_spec *rs)
{
	struct descriptor *d = s->d;
	const char *member = cJSON_IsString(v) ? v->valuestring : NULL;
	if (!member && cJSON_IsObject(v)) {
		if (d->version < 2)
			return dmsg(d, jp, "register objects need \"wallspy\": \"runtime-descriptor/2\"");
		member = jstring(v, "member");
		const cJSON *mangled = jget(v, "mangled"), *at = jget(v, "at"),
			    *add = jget(v, "add");
		if (mangled && !cJSON_IsBool(mangled))
			return dmsg(d, jp, "mangled: expected true or false");
		rs->mangled = cJSON_IsTrue(mangled);
		if (at && (!jinteger(at, &rs->at) || rs->at < -4096 || rs->at > 4096))
			return dmsg(d, jp, "at: expected an offset within 4096 bytes");
		rs->has_at = at != NULL;
		if (add && !jinteger(add, &rs->add))
			return dmsg(d, jp, "add: expected an integer");
	}
	if (!member)
		return dmsg(d, jp, "expected a member path, or an object with member");
	struct ws_error *err = resolve_path(s, jp, &d->task_type, member,
					    &rs->member);
	if (!err)
		err = require_integer(s, jp, ws_dwpath_last(&rs->member));
	return err;
}

/* One register set: {"rip": ..., "rsp": ..., ...}. */
static struct ws_error *parse_register_set(struct parser *s, const cJSON *regs)
{
	struct descriptor *d = s->d;
	const cJSON *v;
	d->nregs = 0;
	d->uses_guard = d->has_frame = false;
	d->frame_lo = d->frame_hi = 0;
	cJSON_ArrayForEach(v, regs) {
		bool known = false;
		for (size_t i = 0; i < sizeof(reg_names) / sizeof(reg_names[0]); i++)
			known |= strcmp(v->string, reg_names[i].key) == 0;
		if (!known) {
			char jp[300];
			snprintf(jp, sizeof(jp), "task.registers.%.200s", v->string);
			return dmsg(d, jp, "unknown register (expected rip, rsp, rbp, rbx, r12, r13, r14 or r15)");
		}
	}
	bool first_at = true;
	for (size_t i = 0; i < sizeof(reg_names) / sizeof(reg_names[0]); i++) {
		const cJSON *r = jget(regs, reg_names[i].key);
		char jp[64];
		snprintf(jp, sizeof(jp), "task.registers.%s", reg_names[i].key);
		if (!r) {
			if (reg_names[i].regno == WS_REG_RIP ||
			    reg_names[i].regno == WS_REG_RSP)
				return dmsg(d, jp, "missing (rip and rsp are required)");
			continue;
		}
		struct reg_spec *rs = &d->regs[d->nregs];
		memset(rs, 0, sizeof(*rs));
		rs->regno = reg_names[i].regno;
		struct ws_error *err = parse_register(s, r, jp, rs);
		if (err)
			return err;
		d->nregs++;
		d->uses_guard |= rs->mangled;
		if (rs->has_at) {
			if (first_at || rs->at < d->frame_lo)
				d->frame_lo = rs->at;
			if (first_at || rs->at + 8 > d->frame_hi)
				d->frame_hi = rs->at + 8;
			first_at = false;
			d->has_frame = true;
		}
	}
	return NULL;
}

/* task.registers: one register set, or (format 2) an array of them, the
 * first whose paths the target's DWARF has winning: one descriptor for a
 * runtime built with either machine context (Pth: a ucontext or a
 * jmp_buf). */
static struct ws_error *parse_registers(struct parser *s, const cJSON *task)
{
	struct descriptor *d = s->d;
	const cJSON *regs = jget(task, "registers");
	if (cJSON_IsObject(regs))
		return parse_register_set(s, regs);
	if (!cJSON_IsArray(regs) || d->version < 2 || !cJSON_GetArraySize(regs))
		return dmsg(d, "task.registers", "missing (member paths of the saved rip, rsp, ...)");
	struct ws_error *first = NULL;
	const cJSON *set;
	cJSON_ArrayForEach(set, regs) {
		if (!cJSON_IsObject(set)) {
			ws_error_destroy(first);
			return dmsg(d, "task.registers", "expected an array of register objects");
		}
		struct ws_error *err = parse_register_set(s, set);
		if (!err) {
			ws_error_destroy(first);
			return NULL;
		}
		if (err->kind != WS_ERR_NO_DEBUGINFO) {
			ws_error_destroy(first);
			return err;
		}
		if (first)
			ws_error_destroy(err);
		else
			first = err;
	}
	return first;
}

static struct ws_error *parse_stack(struct parser *s, const cJSON *task)
{
	struct descriptor *d = s->d;
	const cJSON *stack = jget(task, "stack");
	struct ws_error *err;
	if (!stack)
		return NULL;
	const char *lo = jstring(stack, "lo"), *hi = jstring(stack, "hi");
	const char *base = jstring(stack, "base"), *size = jstring(stack, "size");
	if (lo && hi) {
		if ((err = resolve_path(s, "task.stack.lo", &d->task_type, lo, &d->stack_a)) ||
		    (err = resolve_path(s, "task.stack.hi", &d->task_type, hi, &d->stack_b)))
			return err;
		d->stack_kind = STACK_LO_HI;
	} else if (base && size && d->version >= 2) {
		if ((err = resolve_path(s, "task.stack.base", &d->task_type, base, &d->stack_a)) ||
		    (err = resolve_path(s, "task.stack.size", &d->task_type, size, &d->stack_b)))
			return err;
		d->stack_kind = STACK_BASE_SIZE;
	} else {
		return dmsg(d, "task.stack", d->version >= 2
			    ? "needs lo and hi, or base and size, member paths"
			    : "needs lo and hi member paths");
	}
	if ((err = require_integer(s, "task.stack", ws_dwpath_last(&d->stack_a))) ||
	    (err = require_integer(s, "task.stack", ws_dwpath_last(&d->stack_b))))
		return err;
	return NULL;
}

static struct ws_error *parse_task(struct parser *s, const cJSON *root)
{
	struct descriptor *d = s->d;
	const struct ws_dwtype *tt = &d->task_type;
	const cJSON *task = jget(root, "task");
	if (!cJSON_IsObject(task))
		return dmsg(d, "task", "missing (an object)");
	struct ws_error *err;
	if ((err = optional_path(s, task, "id", "task.id", tt, &d->has_id, &d->id)) ||
	    (err = optional_path(s, task, "entry", "task.entry", tt, &d->has_entry, &d->entry)) ||
	    (err = optional_path(s, task, "worker", "task.worker", tt, &d->has_worker, &d->worker)) ||
	    (err = optional_path(s, task, "switches", "task.switches", tt, &d->has_switches, &d->switches)) ||
	    (err = parse_name(s, task)))
		return err;

	const cJSON *state = jget(task, "state");
	const char *member = state ? jstring(state, "member") : NULL;
	if (!member)
		return dmsg(d, "task.state.member", "missing (the state member)");
	if ((err = resolve_path(s, "task.state.member", tt, member, &d->state)) ||
	    (err = require_integer(s, "task.state.member", ws_dwpath_last(&d->state))))
		return err;
	if ((err = parse_values(s, jget(state, "values"), "task.state.values",
				ws_dwpath_last(&d->state), state_names,
				&d->states)))
		return err;
	for (size_t i = 0; i < d->states.n && d->version < 2; i++)
		if (strcmp(d->states.name[i], "new") == 0)
			return dmsg(d, "task.state.values", "state new needs \"wallspy\": \"runtime-descriptor/2\"");

	if ((err = parse_reason(s, task)) || (err = parse_registers(s, task)) ||
	    (err = parse_stack(s, task)))
		return err;
	bool nomem = false;
	d->root_function = strdup_or_null(jstring(task, "root_function"), &nomem);
	d->root_file = strdup_or_null(jstring(task, "root_file"), &nomem);
	return nomem ? &ws_error_nomem : NULL;
}

static struct ws_error *parse_workers(struct parser *s, const cJSON *root)
{
	struct descriptor *d = s->d;
	const cJSON *w = jget(root, "workers");
	if (!w) {
		d->single_thread = d->version >= 2;
		return NULL;
	}
	const cJSON *global = jget(w, "global");
	if (!global)
		return dmsg(d, "workers.global", "missing (an array of worker structs)");
	struct ws_error *err = parse_gref(s, global, "workers.global", &d->workers);
	if (err)
		return err;
	if (d->workers.kind != WS_DWTYPE_ARRAY)
		return dmsg(d, "workers.global", "must be an array of worker structs");
	if ((err = ws_dwtype_target(&d->workers.type, &d->worker_type)))
		return derr(d, "workers.global", err);
	if ((err = ws_dwtype_type_sizeof(s->prog, &d->worker_type,
					 &d->worker_size)))
		return derr(d, "workers.global", err);
	if (d->worker_size == 0 || d->workers.size == WS_DWTYPE_SIZE_UNKNOWN)
		return dmsg(d, "workers.global", "an array of known length is needed");
	const cJSON *count = jget(w, "count");
	if (count) {
		if ((err = parse_gref(s, count, "workers.count", &d->worker_count)))
			return err;
		d->has_worker_count = true;
	}
	const char *tid = jstring(w, "tid"), *current = jstring(w, "current");
	if (!tid || !current)
		return dmsg(d, "workers", "needs tid and current member paths");
	if ((err = resolve_path(s, "workers.tid", &d->worker_type, tid,
				&d->worker_tid)) ||
	    (err = resolve_path(s, "workers.current", &d->worker_type, current,
				&d->worker_current)))
		return err;
	if (d->worker_tid.nhops != 1 || d->worker_current.nhops != 1)
		return dmsg(d, "workers", "tid and current must lie inside the worker struct");
	d->has_workers = true;
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
	const char *format = jstring(root, "wallspy");
	const char *name = jstring(root, "name");
	if (format && strcmp(format, "runtime-descriptor/1") == 0)
		d->version = 1;
	else if (format && strcmp(format, "runtime-descriptor/2") == 0)
		d->version = 2;
	if (!d->version)
		err = dmsg(d, "wallspy", "expected \"runtime-descriptor/2\" (or /1)");
	else if (!name)
		err = dmsg(d, "name", "missing (the runtime's name)");
	else if (!(d->name = strdup(name)))
		err = &ws_error_nomem;
	const cJSON *detect = jget(root, "detect");
	if (!err && detect) {
		const char *sym = jstring(detect, "symbol");
		if (!sym)
			err = dmsg(d, "detect.symbol", "missing (a symbol every program of the runtime has)");
		else if (!(d->detect_symbol = strdup(sym)))
			err = &ws_error_nomem;
	}
	if (!err && d->version >= 2)
		err = parse_symbols(s, root);
	if (!err)
		err = parse_registry(s, root);
	if (!err)
		err = parse_task(s, root);
	if (!err)
		err = parse_workers(s, root);
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
