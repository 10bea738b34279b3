/*
 * Runtime descriptors (wallspy-descriptor(5)): parsing the JSON with cJSON
 * and resolving every DWARF name it holds to an offset once, so a tick only
 * decodes copies; and finding the descriptor a target carries (an ELF
 * section .wallspy.descriptor, or a file beside the executable). Errors name
 * the JSON path and the missing DWARF thing.
 */
#include "ws_runtime_descriptor.h"

#include <cJSON.h>
#include <dwarf.h>
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime_descriptor_internal.h"
#include "ws_symbols.h"
#include "ws_target.h"

struct parser {
	struct descriptor *d;
	struct ws_dwtype_program *prog;
};


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

static struct ws_error *resolve_field(struct parser *s, const char *jpath,
				      const struct ws_dwtype *type,
				      const char *member,
				      struct ws_dwfield *ret)
{
	struct ws_error *err = ws_dwtype_field(s->prog, type, member, ret);
	/* A path the types do not allow (an index out of range, an index
	 * into what is not an array) is the descriptor's mistake: exit 2,
	 * as for any other; a member missing from DWARF stays exit 7. */
	if (err && err != &ws_error_nomem && err->kind == WS_ERR_OTHER)
		err->kind = WS_ERR_USAGE;
	return err ? derr(s->d, jpath, err) : NULL;
}

/* Optional string member: absent is fine, present must resolve. */
static struct ws_error *optional_field(struct parser *s, const cJSON *obj,
				       const char *key, const char *jpath,
				       const struct ws_dwtype *type,
				       bool *has, struct ws_dwfield *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	*has = false;
	if (!v)
		return NULL;
	if (!cJSON_IsString(v))
		return dmsg(s->d, jpath, "expected a member path (string)");
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
				snprintf(p, sizeof(p), "%s.%s", jpath, v->string);
				char msg[128];
				snprintf(msg, sizeof(msg),
					 "unknown state '%.40s' (expected running, runnable, waiting, syscall, idle or done)",
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
			snprintf(p, sizeof(p), "%s.%s", jpath, v->string);
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


static const struct { const char *key; int regno; } reg_names[] = {
	{"rip", 16}, {"rsp", 7}, {"rbp", 6}, {"rbx", 3},
	{"r12", 12}, {"r13", 13}, {"r14", 14}, {"r15", 15},
};

static struct ws_error *parse_registry(struct parser *s, const cJSON *root)
{
	struct descriptor *d = s->d;
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

static struct ws_error *parse_task(struct parser *s, const cJSON *root)
{
	struct descriptor *d = s->d;
	const struct ws_dwtype *tt = &d->task_type;
	const cJSON *task = cJSON_GetObjectItemCaseSensitive(root, "task");
	if (!cJSON_IsObject(task))
		return dmsg(d, "task", "missing (an object)");
	struct ws_error *err;
	if ((err = optional_field(s, task, "id", "task.id", tt, &d->has_id, &d->id)) ||
	    (err = optional_field(s, task, "name", "task.name", tt, &d->has_name, &d->name_field)) ||
	    (err = optional_field(s, task, "entry", "task.entry", tt, &d->has_entry, &d->entry)) ||
	    (err = optional_field(s, task, "worker", "task.worker", tt, &d->has_worker, &d->worker)) ||
	    (err = optional_field(s, task, "switches", "task.switches", tt, &d->has_switches, &d->switches)))
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

static struct ws_error *parse_workers(struct parser *s, const cJSON *root)
{
	struct descriptor *d = s->d;
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

static struct ws_error *parse_descriptor(struct parser *s, const char *text)
{
	struct descriptor *d = s->d;
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

struct ws_error *ws_descriptor_parse(struct descriptor *d,
				     struct ws_dwtype_program *prog,
				     const char *text)
{
	struct parser p = {.d = d, .prog = prog};
	return parse_descriptor(&p, text);
}

void ws_descriptor_deinit(struct descriptor *d)
{
	free(d->name);
	free(d->root_function);
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

/* --- finding a descriptor --- */

static struct ws_error *read_file(const char *path, char **ret)
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
	Elf_Scn *scn = ws_module_find_section(mod, WS_DESCRIPTOR_SECTION);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	if (!data || !data->d_buf || data->d_size == 0)
		return DWARF_CB_OK;
	fs->text = strndup(data->d_buf, data->d_size);
	if (fs->text && asprintf(&fs->source, "%s(%s)", name,
				 WS_DESCRIPTOR_SECTION) < 0)
		fs->source = NULL;
	return DWARF_CB_ABORT;
}

/* A descriptor the target carries; the caller frees *text and *source. */
static bool find_descriptor(pid_t pid, struct ws_symbols *symbols,
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
	    read_file(path, text) == NULL) {
		*source = path;
		return true;
	}
	free(path);
	return false;
}


struct ws_error *ws_runtime_descriptor_create_from_file(const char *path,
							struct ws_target *target,
							struct ws_symbols *symbols,
							struct ws_runtime **ret)
{
	char *text;
	struct ws_error *err = read_file(path, &text);
	if (err)
		return err;
	err = ws_runtime_descriptor_create(text, path, target, symbols, ret);
	free(text);
	return err;
}

struct ws_error *ws_runtime_descriptor_detect(struct ws_target *target,
					      struct ws_symbols *symbols,
					      struct ws_runtime **ret)
{
	char *text, *source;
	*ret = NULL;
	if (!find_descriptor(target->pid, symbols, &text, &source))
		return NULL;
	struct ws_error *err = ws_runtime_descriptor_create(text, source, target,
							    symbols, ret);
	free(text);
	free(source);
	return err;
}
