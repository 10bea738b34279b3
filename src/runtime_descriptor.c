/*
 * The descriptor-driven runtime adapter: a JSON file (format in
 * wallspy-descriptor(5)) names, in DWARF terms only, a green-thread
 * runtime's task registry, and this adapter walks it every tick. Every member
 * path is resolved to an offset once, when the descriptor is loaded; a tick
 * then reads each task struct in one piece and decodes its fields from the
 * copy. Also finds a descriptor a target carries with it (an ELF section
 * .wallspy.descriptor, or a file beside the executable).
 */
#include "ws_runtime_descriptor.h"

#include <cJSON.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ws_dwtype.h"
#include "ws_memory.h"
#include "ws_random.h"
#include "ws_symbols.h"
#include "ws_syscalls.h"
#include "ws_target.h"

enum layout {
	LAYOUT_LIST,           /* global -> first task, next member */
	LAYOUT_ARRAY,          /* global is an array of task structs */
	LAYOUT_POINTER_ARRAY,  /* global is an array of (or pointer to) task pointers */
};

enum { MAX_STATE_VALUES = 32, MAX_REASON_VALUES = 64 };

struct value_map {
	size_t n;
	int64_t value[MAX_REASON_VALUES];
	const char *name[MAX_REASON_VALUES]; /* state or wait-reason name */
};

/* One register of a parked task: where it lives in the task struct. */
struct reg_field {
	int regno;
	struct ws_dwfield field;
};

struct descriptor {
	char *name;
	char *source;              /* where it came from, for messages */
	char *root_function;
	enum layout layout;
	struct ws_dwobj registry;  /* the global */
	bool has_count;
	struct ws_dwobj count;     /* global holding the number of tasks */
	uint64_t max_tasks;
	struct ws_dwtype task_type;
	uint64_t task_size;
	bool has_next;
	struct ws_dwfield next;
	bool has_id, has_name, has_entry, has_worker, has_stack;
	struct ws_dwfield id, name_field, entry, worker, stack_lo, stack_hi;
	struct ws_dwfield state;
	struct value_map states;   /* value -> state name ("done" skips) */
	enum { REASON_NONE, REASON_STRING, REASON_VALUES } reason_kind;
	struct ws_dwfield reason;
	struct value_map reasons;
	struct reg_field regs[WS_NREGS];
	size_t nregs;
	/* Workers: which OS thread runs which task. */
	bool has_workers;
	struct ws_dwobj workers;   /* array global */
	bool has_worker_count;
	struct ws_dwobj worker_count;
	struct ws_dwtype worker_type;
	uint64_t worker_size;
	struct ws_dwfield worker_tid, worker_current;
};

struct worker_info {
	uint64_t address;          /* of the worker struct */
	pid_t tid;
	uint64_t current;          /* task address or 0 */
};

struct state {
	struct descriptor d;
	struct ws_dwtype_program *prog;
	pid_t pid;
	/* per tick */
	uint8_t *buf;              /* task struct copies */
	size_t buf_size;
	char *strings;             /* task names and wait reasons */
	size_t strings_size, strings_used;
	struct worker_info *workers;
	size_t nworkers, workers_capacity;
	/* wait-reason strings by address: they are almost always literals */
	struct { uint64_t address; char *text; } *reason_cache;
	size_t reason_cache_n, reason_cache_capacity;
	char idle_names[64][24];
	/* array registries: slot addresses, struct copies, sampling */
	uint64_t *addrs;
	size_t addrs_capacity;
	uint8_t *bulk;
	size_t bulk_capacity;
	struct ws_random rng;
};

/* --- descriptor parsing --- */

static struct ws_error *derr(const struct descriptor *d, const char *path,
			     struct ws_error *cause)
{
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

static struct ws_error *resolve_field(struct state *s, const char *jpath,
				      const struct ws_dwtype *type,
				      const char *member,
				      struct ws_dwfield *ret)
{
	struct ws_error *err = ws_dwtype_field(s->prog, type, member, ret);
	return err ? derr(&s->d, jpath, err) : NULL;
}

/* Optional string member: absent is fine, present must resolve. */
static struct ws_error *optional_field(struct state *s, const cJSON *obj,
				       const char *key, const char *jpath,
				       const struct ws_dwtype *type,
				       bool *has, struct ws_dwfield *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	*has = false;
	if (!v)
		return NULL;
	if (!cJSON_IsString(v))
		return dmsg(&s->d, jpath, "expected a member path (string)");
	*has = true;
	return resolve_field(s, jpath, type, v->valuestring, ret);
}

/* The value of enumerator `name` in the enum type of `field`. */
static bool enumerator_value(const struct ws_dwfield *field, const char *name,
			     int64_t *ret)
{
	Dwarf_Die die = field->type.die;
	/* Peel typedefs and qualifiers down to the enumeration. */
	while (dwarf_tag(&die) != DW_TAG_enumeration_type) {
		Dwarf_Attribute attr;
		if (!dwarf_attr_integrate(&die, DW_AT_type, &attr) ||
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

static struct ws_error *parse_values(struct state *s, const cJSON *values,
				     const char *jpath,
				     const struct ws_dwfield *field,
				     const char *const *allowed,
				     struct value_map *map)
{
	if (!cJSON_IsObject(values))
		return dmsg(&s->d, jpath, "expected an object of value: name");
	const cJSON *v;
	cJSON_ArrayForEach(v, values) {
		if (map->n == MAX_REASON_VALUES)
			return dmsg(&s->d, jpath, "too many values");
		if (!cJSON_IsString(v))
			return dmsg(&s->d, jpath, "values must be strings");
		if (allowed) {
			bool ok = false;
			for (const char *const *a = allowed; *a; a++)
				ok |= strcmp(*a, v->valuestring) == 0;
			if (!ok) {
				char p[256];
				snprintf(p, sizeof(p), "%s.%s", jpath, v->string);
				char msg[128];
				snprintf(msg, sizeof(msg),
					 "unknown state '%.40s' (expected running, runnable, waiting, syscall, idle or done)",
					 v->valuestring);
				return dmsg(&s->d, p, msg);
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
			snprintf(p, sizeof(p), "%s.%s", jpath, v->string);
			return ws_error_create(WS_ERR_NO_DEBUGINFO,
					       "runtime descriptor %s: $.%s: no enumerator '%s' in type '%s'",
					       s->d.source, p, v->string,
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

static const char *map_lookup(const struct value_map *map, int64_t value)
{
	for (size_t i = 0; i < map->n; i++)
		if (map->value[i] == value)
			return map->name[i];
	return NULL;
}

static const struct { const char *key; int regno; } reg_names[] = {
	{"rip", 16}, {"rsp", 7}, {"rbp", 6}, {"rbx", 3},
	{"r12", 12}, {"r13", 13}, {"r14", 14}, {"r15", 15},
};

static struct ws_error *parse_registry(struct state *s, const cJSON *root)
{
	struct descriptor *d = &s->d;
	const cJSON *reg = cJSON_GetObjectItemCaseSensitive(root, "registry");
	if (!cJSON_IsObject(reg))
		return dmsg(d, "registry", "missing (an object)");
	const char *global = jstring(reg, "global");
	if (!global)
		return dmsg(d, "registry.global", "missing (the registry's global variable)");
	struct ws_error *err = ws_dwtype_global(s->prog, NULL, global,
						&d->registry);
	if (err)
		return derr(d, "registry.global", err);

	const char *layout = jstring(reg, "layout");
	if (!layout || strcmp(layout, "list") == 0)
		d->layout = LAYOUT_LIST;
	else if (strcmp(layout, "array") == 0)
		d->layout = LAYOUT_ARRAY;
	else if (strcmp(layout, "pointer-array") == 0)
		d->layout = LAYOUT_POINTER_ARRAY;
	else
		return dmsg(d, "registry.layout", "expected list, array or pointer-array");

	const char *count = jstring(reg, "count");
	if (count) {
		err = ws_dwtype_global(s->prog, NULL, count, &d->count);
		if (err)
			return derr(d, "registry.count", err);
		d->has_count = true;
	} else if (d->layout != LAYOUT_LIST &&
		   d->registry.kind != WS_DWTYPE_ARRAY) {
		return dmsg(d, "registry.count", "needed for an array reached through a pointer");
	}
	const cJSON *max = cJSON_GetObjectItemCaseSensitive(reg, "max");
	d->max_tasks = cJSON_IsNumber(max) && max->valuedouble >= 1
			       ? (uint64_t)max->valuedouble
			       : 10000000;

	/* The task type follows from the registry's type. */
	struct ws_dwtype t = d->registry.type, inner;
	switch (d->layout) {
	case LAYOUT_LIST:
		if (d->registry.kind != WS_DWTYPE_POINTER)
			return dmsg(d, "registry.global", "a list's global must be a pointer to the first task");
		err = ws_dwtype_target(&t, &d->task_type);
		break;
	case LAYOUT_ARRAY:
		err = ws_dwtype_target(&t, &d->task_type);
		break;
	case LAYOUT_POINTER_ARRAY:
		err = ws_dwtype_target(&t, &inner);
		if (!err)
			err = ws_dwtype_target(&inner, &d->task_type);
		break;
	}
	if (err)
		return derr(d, "registry.global", err);
	err = ws_dwtype_type_sizeof(s->prog, &d->task_type, &d->task_size);
	if (err)
		return derr(d, "registry.global", err);
	if (d->layout == LAYOUT_LIST) {
		const char *next = jstring(reg, "next");
		if (!next)
			return dmsg(d, "registry.next", "missing (the member linking to the next task)");
		err = resolve_field(s, "registry.next", &d->task_type, next,
				    &d->next);
		if (err)
			return err;
		d->has_next = true;
	}
	return NULL;
}

static const char *const state_names[] = {
	"running", "runnable", "waiting", "syscall", "idle", "done", NULL,
};

static struct ws_error *parse_task(struct state *s, const cJSON *root)
{
	struct descriptor *d = &s->d;
	const struct ws_dwtype *tt = &d->task_type;
	const cJSON *task = cJSON_GetObjectItemCaseSensitive(root, "task");
	if (!cJSON_IsObject(task))
		return dmsg(d, "task", "missing (an object)");
	struct ws_error *err;
	if ((err = optional_field(s, task, "id", "task.id", tt, &d->has_id, &d->id)) ||
	    (err = optional_field(s, task, "name", "task.name", tt, &d->has_name, &d->name_field)) ||
	    (err = optional_field(s, task, "entry", "task.entry", tt, &d->has_entry, &d->entry)) ||
	    (err = optional_field(s, task, "worker", "task.worker", tt, &d->has_worker, &d->worker)))
		return err;

	const cJSON *state = cJSON_GetObjectItemCaseSensitive(task, "state");
	const char *member = state ? jstring(state, "member") : NULL;
	if (!member)
		return dmsg(d, "task.state.member", "missing (the state member)");
	if ((err = resolve_field(s, "task.state.member", tt, member, &d->state)))
		return err;
	if ((err = parse_values(s, cJSON_GetObjectItemCaseSensitive(state, "values"),
				"task.state.values", &d->state, state_names,
				&d->states)))
		return err;

	const cJSON *reason = cJSON_GetObjectItemCaseSensitive(task, "wait_reason");
	if (reason) {
		member = jstring(reason, "member");
		if (!member)
			return dmsg(d, "task.wait_reason.member", "missing");
		if ((err = resolve_field(s, "task.wait_reason.member", tt,
					 member, &d->reason)))
			return err;
		const cJSON *values = cJSON_GetObjectItemCaseSensitive(reason, "values");
		if (values) {
			d->reason_kind = REASON_VALUES;
			if ((err = parse_values(s, values, "task.wait_reason.values",
						&d->reason, NULL, &d->reasons)))
				return err;
		} else {
			d->reason_kind = REASON_STRING;
		}
	}

	const cJSON *regs = cJSON_GetObjectItemCaseSensitive(task, "registers");
	if (!cJSON_IsObject(regs))
		return dmsg(d, "task.registers", "missing (member paths of the saved rip, rsp, ...)");
	for (size_t i = 0; i < sizeof(reg_names) / sizeof(reg_names[0]); i++) {
		const char *path = jstring(regs, reg_names[i].key);
		char jp[64];
		snprintf(jp, sizeof(jp), "task.registers.%s", reg_names[i].key);
		if (!path) {
			if (reg_names[i].regno == WS_REG_RIP ||
			    reg_names[i].regno == WS_REG_RSP)
				return dmsg(d, jp, "missing (rip and rsp are required)");
			continue;
		}
		struct reg_field *rf = &d->regs[d->nregs++];
		rf->regno = reg_names[i].regno;
		if ((err = resolve_field(s, jp, tt, path, &rf->field)))
			return err;
	}

	const cJSON *stack = cJSON_GetObjectItemCaseSensitive(task, "stack");
	if (stack) {
		const char *lo = jstring(stack, "lo"), *hi = jstring(stack, "hi");
		if (!lo || !hi)
			return dmsg(d, "task.stack", "needs lo and hi member paths");
		if ((err = resolve_field(s, "task.stack.lo", tt, lo, &d->stack_lo)) ||
		    (err = resolve_field(s, "task.stack.hi", tt, hi, &d->stack_hi)))
			return err;
		d->has_stack = true;
	}
	const char *root_fn = jstring(task, "root_function");
	if (root_fn && !(d->root_function = strdup(root_fn)))
		return &ws_error_nomem;
	return NULL;
}

static struct ws_error *parse_workers(struct state *s, const cJSON *root)
{
	struct descriptor *d = &s->d;
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "workers");
	if (!w)
		return NULL;
	const char *global = jstring(w, "global");
	if (!global)
		return dmsg(d, "workers.global", "missing (an array of worker structs)");
	struct ws_error *err = ws_dwtype_global(s->prog, NULL, global,
						&d->workers);
	if (err)
		return derr(d, "workers.global", err);
	if (d->workers.kind != WS_DWTYPE_ARRAY)
		return dmsg(d, "workers.global", "must be an array of worker structs");
	if ((err = ws_dwtype_target(&d->workers.type, &d->worker_type)))
		return derr(d, "workers.global", err);
	if ((err = ws_dwtype_type_sizeof(s->prog, &d->worker_type,
					 &d->worker_size)))
		return derr(d, "workers.global", err);
	const char *count = jstring(w, "count");
	if (count) {
		if ((err = ws_dwtype_global(s->prog, NULL, count, &d->worker_count)))
			return derr(d, "workers.count", err);
		d->has_worker_count = true;
	}
	const char *tid = jstring(w, "tid"), *current = jstring(w, "current");
	if (!tid || !current)
		return dmsg(d, "workers", "needs tid and current member paths");
	if ((err = resolve_field(s, "workers.tid", &d->worker_type, tid,
				 &d->worker_tid)) ||
	    (err = resolve_field(s, "workers.current", &d->worker_type, current,
				 &d->worker_current)))
		return err;
	d->has_workers = true;
	return NULL;
}

static struct ws_error *parse_descriptor(struct state *s, const char *text)
{
	struct descriptor *d = &s->d;
	cJSON *root = cJSON_Parse(text);
	if (!root) {
		/* Where the parser stopped, as line:column, and a one-line
		 * excerpt of what it saw there. */
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
	struct ws_error *err = NULL;
	const char *format = jstring(root, "wallspy");
	const char *name = jstring(root, "name");
	if (!format || strcmp(format, "runtime-descriptor/1") != 0)
		err = dmsg(d, "wallspy", "expected \"runtime-descriptor/1\"");
	else if (!name)
		err = dmsg(d, "name", "missing (the runtime's name)");
	else if (!(d->name = strdup(name)))
		err = &ws_error_nomem;
	if (!err)
		err = parse_registry(s, root);
	if (!err)
		err = parse_task(s, root);
	if (!err)
		err = parse_workers(s, root);
	cJSON_Delete(root);
	return err;
}

/* --- per tick --- */

static const char *keep_string(struct state *s, const char *text, size_t len)
{
	if (s->strings_used + len + 1 > s->strings_size)
		return NULL; /* sized up front per tick; see list_tasks */
	char *out = s->strings + s->strings_used;
	memcpy(out, text, len);
	out[len] = '\0';
	s->strings_used += len + 1;
	return out;
}

static struct ws_error *read_uint_global(struct ws_dwobj *obj, uint64_t *ret)
{
	return ws_dwtype_read_uint(obj, ret);
}

static struct ws_error *read_workers(struct state *s)
{
	struct descriptor *d = &s->d;
	s->nworkers = 0;
	if (!d->has_workers)
		return NULL;
	uint64_t n = d->workers.size / d->worker_size;
	if (d->has_worker_count) {
		uint64_t count;
		struct ws_error *err = read_uint_global(&d->worker_count, &count);
		if (err)
			return err;
		if (count < n)
			n = count;
	}
	size_t bytes = (size_t)(n * d->worker_size);
	uint8_t *buf = malloc(bytes ? bytes : 1);
	if (!buf)
		return &ws_error_nomem;
	struct ws_error *err = ws_remote_read(s->pid, d->workers.address, buf,
					      bytes);
	if (err) {
		free(buf);
		return err;
	}
	if (n > s->workers_capacity) {
		struct worker_info *w = realloc(s->workers, n * sizeof(*w));
		if (!w) {
			free(buf);
			return &ws_error_nomem;
		}
		s->workers = w;
		s->workers_capacity = n;
	}
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *wb = buf + i * d->worker_size;
		uint64_t tid = 0, cur = 0;
		if (ws_dwtype_field_uint(&d->worker_tid, wb, d->worker_size, &tid) ||
		    ws_dwtype_field_uint(&d->worker_current, wb, d->worker_size, &cur))
			continue;
		if (tid == 0)
			continue;
		struct worker_info *w = &s->workers[s->nworkers++];
		w->address = d->workers.address + i * d->worker_size;
		w->tid = (pid_t)tid;
		w->current = cur;
	}
	free(buf);
	return NULL;
}

static pid_t worker_tid(const struct state *s, uint64_t worker_address,
			uint64_t task_address)
{
	for (size_t i = 0; i < s->nworkers; i++) {
		if ((worker_address && s->workers[i].address == worker_address) ||
		    (!worker_address && s->workers[i].current == task_address))
			return s->workers[i].tid;
	}
	return 0;
}

static const char *wait_reason_string(struct state *s, uint64_t address)
{
	if (!address)
		return NULL;
	for (size_t i = 0; i < s->reason_cache_n; i++)
		if (s->reason_cache[i].address == address)
			return s->reason_cache[i].text;
	char text[64];
	size_t len = 0;
	/* Read what is there, up to a NUL, in one go. */
	struct ws_remote_range r = {.address = address, .buf = text,
				    .size = sizeof(text) - 1};
	ws_remote_readv(s->pid, &r, 1);
	text[r.done] = '\0';
	len = strnlen(text, r.done);
	text[len] = '\0';
	if (s->reason_cache_n == s->reason_cache_capacity) {
		size_t cap = s->reason_cache_capacity ? s->reason_cache_capacity * 2 : 16;
		void *c = realloc(s->reason_cache, cap * sizeof(*s->reason_cache));
		if (!c)
			return NULL;
		s->reason_cache = c;
		s->reason_cache_capacity = cap;
	}
	char *copy = strdup(text);
	if (!copy)
		return NULL;
	s->reason_cache[s->reason_cache_n].address = address;
	s->reason_cache[s->reason_cache_n].text = copy;
	s->reason_cache_n++;
	return copy;
}

static enum ws_state state_from_name(const char *name)
{
	if (strcmp(name, "running") == 0)
		return WS_STATE_RUNNING;
	if (strcmp(name, "runnable") == 0)
		return WS_STATE_RUNNABLE;
	if (strcmp(name, "waiting") == 0)
		return WS_STATE_WAITING;
	if (strcmp(name, "syscall") == 0)
		return WS_STATE_SYSCALL;
	if (strcmp(name, "idle") == 0)
		return WS_STATE_IDLE;
	return WS_STATE_UNKNOWN;
}

/* Fills one task from the copy of its struct. */
static struct ws_error *decode_task(struct state *s, struct ws_target *target,
				    uint64_t address, const uint8_t *tb,
				    struct ws_task_list *out)
{
	struct descriptor *d = &s->d;
	size_t size = (size_t)d->task_size;
	uint64_t v;
	if (ws_dwtype_field_uint(&d->state, tb, size, &v))
		return NULL;
	const char *state_name = map_lookup(&d->states, (int64_t)v);
	if (state_name && strcmp(state_name, "done") == 0)
		return NULL;

	struct ws_task *task = ws_task_list_add(out);
	if (!task)
		return &ws_error_nomem;
	task->id = address;
	if (d->has_id && !ws_dwtype_field_uint(&d->id, tb, size, &v))
		task->id = v;
	if (d->has_name) {
		if (d->name_field.kind == WS_DWTYPE_ARRAY) {
			const char *raw = (const char *)tb + d->name_field.offset;
			task->name = keep_string(s, raw,
						 strnlen(raw, (size_t)d->name_field.size));
		} else if (!ws_dwtype_field_uint(&d->name_field, tb, size, &v)) {
			task->name = wait_reason_string(s, v);
		}
	}
	if (!state_name) {
		task->state = WS_STATE_UNKNOWN;
		task->error = "unknown state value";
		task->start = WS_START_NONE;
		return NULL;
	}
	task->state = state_from_name(state_name);
	if (d->reason_kind == REASON_STRING &&
	    !ws_dwtype_field_uint(&d->reason, tb, size, &v)) {
		if (d->reason.kind == WS_DWTYPE_ARRAY) {
			const char *raw = (const char *)tb + d->reason.offset;
			task->wait_reason = keep_string(s, raw,
							strnlen(raw, (size_t)d->reason.size));
		} else {
			task->wait_reason = wait_reason_string(s, v);
		}
	} else if (d->reason_kind == REASON_VALUES &&
		   !ws_dwtype_field_uint(&d->reason, tb, size, &v)) {
		task->wait_reason = map_lookup(&d->reasons, (int64_t)v);
	}
	if (task->state != WS_STATE_WAITING)
		task->wait_reason = NULL;

	if (d->has_stack) {
		uint64_t lo = 0, hi = 0;
		ws_dwtype_field_uint(&d->stack_lo, tb, size, &lo);
		ws_dwtype_field_uint(&d->stack_hi, tb, size, &hi);
		if (lo && hi > lo) {
			task->stack_lo = lo;
			task->stack_hi = hi;
		}
	}
	if (d->has_entry && !ws_dwtype_field_uint(&d->entry, tb, size, &v))
		task->entry_pc = v;

	/* A task on a CPU: its worker thread's live registers, as long as
	 * that thread is on the task's stack (else it is mid-switch and the
	 * saved context is the truth). */
	if (task->state == WS_STATE_RUNNING) {
		uint64_t worker = 0;
		if (d->has_worker)
			ws_dwtype_field_uint(&d->worker, tb, size, &worker);
		pid_t tid = worker_tid(s, worker, address);
		struct ws_thread *th = tid ? ws_target_find_thread(target, tid) : NULL;
		if (th && !th->regs_valid) {
			/* Its saved context is stale while it runs: say so
			 * rather than show an old stack. */
			task->thread = tid;
			task->start = WS_START_NONE;
			task->error = "worker thread did not stop in time";
			return NULL;
		}
		if (th) {
			task->thread = tid;
			uint64_t sp = th->regs.rsp;
			if (!task->stack_hi ||
			    (sp >= task->stack_lo && sp < task->stack_hi)) {
				task->start = WS_START_THREAD;
				long nr;
				if (ws_syscall_blocked(&th->regs, &nr)) {
					task->state = WS_STATE_SYSCALL;
					task->wait_reason = ws_syscall_name(nr);
				}
				return NULL;
			}
		}
	}

	if (!task->stack_hi && d->has_stack) {
		/* No stack yet: a task that has never run. */
		task->start = WS_START_NONE;
		if (task->state != WS_STATE_RUNNABLE)
			task->error = "no stack";
		return NULL;
	}
	task->start = WS_START_SAVED;
	for (size_t i = 0; i < d->nregs; i++) {
		const struct reg_field *rf = &d->regs[i];
		if (!ws_dwtype_field_uint(&rf->field, tb, size, &v)) {
			task->regs.value[rf->regno] = v;
			task->regs.valid |= 1u << rf->regno;
		}
	}
	if (!task->regs.value[WS_REG_RIP] || !task->regs.value[WS_REG_RSP]) {
		task->start = WS_START_NONE;
		task->error = "no saved context";
	}
	return NULL;
}

static struct ws_error *walk_list(struct state *s, struct ws_target *target,
				  uint64_t limit, struct ws_task_list *out)
{
	struct descriptor *d = &s->d;
	uint64_t address;
	struct ws_error *err = ws_dwtype_read_pointer(&d->registry, &address);
	if (err)
		return err;
	size_t size = (size_t)d->task_size;
	for (uint64_t n = 0; address && n < limit; n++) {
		err = ws_remote_read(s->pid, address, s->buf, size);
		if (err) {
			/* A torn list (a stop mid-update): keep what we have. */
			ws_error_destroy(err);
			break;
		}
		err = decode_task(s, target, address, s->buf, out);
		if (err)
			return err;
		uint64_t next = 0;
		ws_dwtype_field_uint(&d->next, s->buf, size, &next);
		address = next;
	}
	return NULL;
}

/* Array registries can be sampled without reading every task: pick a
 * uniform random subset of the slots (the pause budget's `limit`), each
 * task found standing for slots/picked, and read the picked task structs
 * with batched process_vm_readv. */
static struct ws_error *walk_array(struct state *s, struct ws_target *target,
				   uint64_t n, size_t limit,
				   struct ws_task_list *out)
{
	struct descriptor *d = &s->d;
	size_t size = (size_t)d->task_size;
	uint64_t base = d->registry.address;
	struct ws_error *err;
	if (d->registry.kind == WS_DWTYPE_POINTER &&
	    (err = ws_dwtype_read_pointer(&d->registry, &base)))
		return err;
	if (n > s->addrs_capacity) {
		uint64_t *a = realloc(s->addrs, (size_t)n * sizeof(*a));
		if (!a)
			return &ws_error_nomem;
		s->addrs = a;
		s->addrs_capacity = (size_t)n;
	}
	if (d->layout == LAYOUT_ARRAY) {
		for (uint64_t i = 0; i < n; i++)
			s->addrs[i] = base + i * size;
	} else if (n && (err = ws_remote_read(s->pid, base, s->addrs,
					      (size_t)n * sizeof(uint64_t)))) {
		return err;
	}
	double scale = 1;
	if (limit && limit < n) {
		for (size_t i = 0; i < limit; i++) {
			size_t j = i + (size_t)ws_random_below(&s->rng, n - i);
			uint64_t t = s->addrs[i];
			s->addrs[i] = s->addrs[j];
			s->addrs[j] = t;
		}
		scale = (double)n / (double)limit;
		n = limit;
	}
	if ((size_t)n * size > s->bulk_capacity) {
		uint8_t *b = realloc(s->bulk, (size_t)n * size);
		if (!b)
			return &ws_error_nomem;
		s->bulk = b;
		s->bulk_capacity = (size_t)n * size;
	}
	enum { BATCH = 1024 };
	struct ws_remote_range ranges[BATCH];
	size_t index[BATCH];
	for (uint64_t first = 0; first < n; first += BATCH) {
		size_t k = 0;
		for (uint64_t i = first; i < n && i < first + BATCH; i++) {
			if (!s->addrs[i])
				continue; /* an empty slot */
			ranges[k] = (struct ws_remote_range){
				.address = s->addrs[i],
				.buf = s->bulk + i * size,
				.size = size,
			};
			index[k++] = (size_t)i;
		}
		ws_remote_readv(s->pid, ranges, k);
		for (size_t r = 0; r < k; r++) {
			/* A slot that cannot be read is a task caught being
			 * freed: skip it. */
			if (ranges[r].done != size)
				continue;
			size_t before = out->n;
			err = decode_task(s, target, s->addrs[index[r]],
					  s->bulk + index[r] * size, out);
			if (err)
				return err;
			if (out->n > before)
				out->tasks[out->n - 1].scale = scale;
		}
	}
	return NULL;
}

static void add_idle_workers(struct state *s, struct ws_target *target,
			     struct ws_task_list *out)
{
	for (size_t i = 0; i < s->nworkers && i < 64; i++) {
		const struct worker_info *w = &s->workers[i];
		if (w->current)
			continue;
		struct ws_thread *th = ws_target_find_thread(target, w->tid);
		if (!th)
			continue;
		struct ws_task *task = ws_task_list_add(out);
		if (!task)
			return;
		snprintf(s->idle_names[i], sizeof(s->idle_names[i]),
			 "worker %zu", i);
		task->id = (uint64_t)w->tid;
		task->name = s->idle_names[i];
		task->thread = w->tid;
		task->state = WS_STATE_IDLE;
		task->start = WS_START_THREAD;
		/* Idle by the registry; its stack is unknown this tick. */
		if (!th->regs_valid)
			task->start = WS_START_NONE;
	}
}

static struct ws_error *descriptor_list(struct ws_runtime *runtime,
					struct ws_target *target,
					size_t limit,
					struct ws_task_list *out)
{
	struct state *s = runtime->state;
	struct descriptor *d = &s->d;
	uint64_t count = 0;
	/* (A list is walked whole and the sampler subsamples; arrays are
	 * sampled by walk_array.) */
	struct ws_error *err;
	if (d->has_count && (err = read_uint_global(&d->count, &count)))
		return err;
	uint64_t bound;
	if (d->layout == LAYOUT_LIST)
		/* The count may be off by one while the list is mid-update;
		 * the bound also stops a cycle. */
		bound = d->has_count ? count + 64 : d->max_tasks;
	else if (d->has_count)
		bound = count;
	else
		bound = d->registry.size / (d->layout == LAYOUT_ARRAY
						    ? d->task_size : 8);
	if (bound > d->max_tasks)
		bound = d->max_tasks;

	/* Names are copied into one buffer sized for this tick. */
	size_t need = (size_t)(bound + 1) * (d->has_name ? d->name_field.size + 1 : 1) + 4096;
	if (need > s->strings_size) {
		char *p = realloc(s->strings, need);
		if (!p)
			return &ws_error_nomem;
		s->strings = p;
		s->strings_size = need;
	}
	s->strings_used = 0;
	if ((err = read_workers(s)))
		return err;
	if (d->layout == LAYOUT_LIST)
		err = walk_list(s, target, bound, out);
	else
		err = walk_array(s, target, bound, limit, out);
	if (err)
		return err;
	add_idle_workers(s, target, out);
	return NULL;
}

static void descriptor_destroy(struct ws_runtime *runtime)
{
	struct state *s = runtime->state;
	if (s) {
		ws_dwtype_program_destroy(s->prog);
		free(s->d.name);
		free(s->d.source);
		free(s->d.root_function);
		for (size_t i = 0; i < s->d.states.n; i++)
			free((char *)s->d.states.name[i]);
		for (size_t i = 0; i < s->d.reasons.n; i++)
			free((char *)s->d.reasons.name[i]);
		free(s->buf);
		free(s->addrs);
		free(s->bulk);
		free(s->strings);
		free(s->workers);
		for (size_t i = 0; i < s->reason_cache_n; i++)
			free(s->reason_cache[i].text);
		free(s->reason_cache);
		free(s);
	}
	free(runtime);
}

static const struct ws_runtime_ops descriptor_ops = {
	.name = "descriptor",
	.list_tasks = descriptor_list,
	.destroy = descriptor_destroy,
};

struct ws_error *ws_runtime_descriptor_create(const char *text,
					      const char *source,
					      struct ws_target *target,
					      struct ws_symbols *symbols,
					      struct ws_runtime **ret)
{
	struct ws_runtime *rt = calloc(1, sizeof(*rt));
	struct state *s = calloc(1, sizeof(*s));
	if (!rt || !s) {
		free(rt);
		free(s);
		return &ws_error_nomem;
	}
	rt->ops = &descriptor_ops;
	rt->state = s;
	s->pid = target->pid;
	ws_random_seed(&s->rng, ws_now_ns());
	s->d.source = strdup(source);
	struct ws_error *err = s->d.source ? NULL : &ws_error_nomem;
	if (!err) {
		struct ws_memory_reader reader = ws_remote_reader(&s->pid);
		err = ws_dwtype_program_create(ws_symbols_dwfl(symbols),
					       &reader, &s->prog);
	}
	if (!err)
		err = parse_descriptor(s, text);
	if (!err && !(s->buf = malloc((size_t)s->d.task_size)))
		err = &ws_error_nomem;
	if (err) {
		descriptor_destroy(rt);
		return err;
	}
	rt->name = s->d.name;
	rt->root_function = s->d.root_function;
	*ret = rt;
	return NULL;
}

/* --- finding a descriptor --- */

struct ws_error *ws_runtime_descriptor_read_file(const char *path, char **ret)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return ws_error_from_errno(errno, WS_ERR_USAGE,
					   "runtime descriptor %s", path);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	char chunk[4096];
	size_t n;
	while (m && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	if (!m || fclose(m) != 0) {
		free(text);
		return &ws_error_nomem;
	}
	*ret = text;
	return NULL;
}

struct find_section {
	char *text;
	char *source;
};

static int module_section(Dwfl_Module *mod, void **userdata, const char *name,
			  Dwarf_Addr start, void *arg)
{
	(void)userdata, (void)start;
	struct find_section *fs = arg;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return DWARF_CB_OK;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr))
			continue;
		const char *sname = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!sname || strcmp(sname, WS_DESCRIPTOR_SECTION) != 0)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || data->d_size == 0)
			continue;
		fs->text = strndup(data->d_buf, data->d_size);
		if (fs->text && asprintf(&fs->source, "%s(%s)", name,
					 WS_DESCRIPTOR_SECTION) < 0)
			fs->source = NULL;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

bool ws_runtime_descriptor_find(pid_t pid, struct ws_symbols *symbols,
				char **text, char **source)
{
	struct find_section fs = {0};
	dwfl_getmodules(ws_symbols_dwfl(symbols), module_section, &fs, 0);
	if (fs.text && fs.source) {
		*text = fs.text;
		*source = fs.source;
		return true;
	}
	free(fs.text);
	free(fs.source);

	/* A file beside the executable: /path/prog.wallspy.json. */
	char exe[4096], link[64];
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(link, exe, sizeof(exe) - 32);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	char *path;
	if (asprintf(&path, "%s.wallspy.json", exe) < 0)
		return false;
	if (access(path, R_OK) == 0 &&
	    ws_runtime_descriptor_read_file(path, text) == NULL) {
		*source = path;
		return true;
	}
	free(path);
	return false;
}
