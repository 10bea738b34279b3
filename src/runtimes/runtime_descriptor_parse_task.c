/*
 * Runtime descriptors, continued (runtime_descriptor_parse.c has the JSON,
 * the registry and the helpers): how one task is decoded, its id, name,
 * state, wait reason, saved registers and stack, resolved to DWARF paths
 * once, and the optional workers table that names the OS thread running
 * each task.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_descriptor_parse_internal.h"

static const char *const state_names[] = {
	"new", "running", "runnable", "waiting", "syscall", "idle", "done", NULL,
};

static struct ws_error *parse_name(struct parser *s, const cJSON *task)
{
	struct descriptor *d = s->d;
	const cJSON *name = dparse_get(task, "name");
	struct ws_error *err;
	bool has;
	if (!name)
		return NULL;
	if (cJSON_IsString(name)) {
		if ((err = dparse_optional_path(s, task, "name", "task.name",
						&d->task_type, &has, &d->name_path)))
			return err;
		const struct ws_dwfield *f = ws_dwpath_last(&d->name_path);
		if (f->kind != WS_DWTYPE_ARRAY && f->kind != WS_DWTYPE_POINTER)
			return dparse_msg(d, "task.name", "expected a char array or char pointer member (or a length-prefixed string object)");
		d->name_kind = NAME_CHARS;
		return NULL;
	}
	if (d->version < 2 || !cJSON_IsObject(name))
		return dparse_msg(d, "task.name", "expected a member path");
	/* {"member": P, "length": L, "bytes": B}: P points at a string
	 * object holding its length L and its bytes from B on (Crystal's
	 * String: bytesize, then c). */
	const char *member = dparse_string(name, "member"), *len = dparse_string(name, "length"),
		   *bytes = dparse_string(name, "bytes");
	if (!member || !len || !bytes)
		return dparse_msg(d, "task.name", "needs member, length and bytes");
	if ((err = dparse_path(s, "task.name.member", &d->task_type, member,
			       &d->name_path)) ||
	    (err = dparse_require_pointer(s, "task.name.member", ws_dwpath_last(&d->name_path))))
		return err;
	struct ws_dwtype str;
	if ((err = ws_dwtype_target(&ws_dwpath_last(&d->name_path)->type, &str)))
		return dparse_err(d, "task.name.member", err);
	if ((err = dparse_path(s, "task.name.length", &str, len, &d->name_length)) ||
	    (err = dparse_require_integer(s, "task.name.length", ws_dwpath_last(&d->name_length))) ||
	    (err = dparse_path(s, "task.name.bytes", &str, bytes, &d->name_bytes)))
		return err;
	if (d->name_length.nhops != 1 || d->name_bytes.nhops != 1)
		return dparse_msg(d, "task.name", "length and bytes must lie inside the string object");
	d->name_kind = NAME_LENGTH_PREFIXED;
	return NULL;
}

static struct ws_error *parse_reason(struct parser *s, const cJSON *task)
{
	struct descriptor *d = s->d;
	const cJSON *reason = dparse_get(task, "wait_reason");
	if (!reason)
		return NULL;
	const char *member = dparse_string(reason, "member");
	if (!member)
		return dparse_msg(d, "task.wait_reason.member", "missing");
	struct ws_error *err = dparse_path(s, "task.wait_reason.member",
					   &d->task_type, member, &d->reason);
	if (err)
		return err;
	const struct ws_dwfield *f = ws_dwpath_last(&d->reason);
	const cJSON *values = dparse_get(reason, "values"), *bits = dparse_get(reason, "bits");
	if (values && bits)
		return dparse_msg(d, "task.wait_reason", "values or bits, not both");
	if (values) {
		d->reason_kind = REASON_VALUES;
		return dparse_values(s, values, "task.wait_reason.values", f, NULL,
				     &d->reasons);
	}
	if (bits) {
		if (d->version < 2)
			return dparse_msg(d, "task.wait_reason.bits", "needs \"wallspy\": \"runtime-descriptor/2\"");
		if ((err = dparse_require_integer(s, "task.wait_reason.member", f)))
			return err;
		d->reason_kind = REASON_BITS;
		if ((err = dparse_values(s, bits, "task.wait_reason.bits", f, NULL,
					 &d->reasons)))
			return err;
		for (size_t i = 0; i < d->reasons.n; i++) {
			uint64_t b = (uint64_t)d->reasons.value[i];
			if (b == 0 || (b & (b - 1)))
				return dparse_msg(d, "task.wait_reason.bits", "each key must be one bit (0x1, 0x2, 0x4, ...)");
		}
		return NULL;
	}
	if (f->kind != WS_DWTYPE_ARRAY && f->kind != WS_DWTYPE_POINTER)
		return dparse_msg(d, "task.wait_reason.member", "a string member (char array or char pointer) without values");
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
			return dparse_msg(d, jp, "register objects need \"wallspy\": \"runtime-descriptor/2\"");
		member = dparse_string(v, "member");
		const cJSON *mangled = dparse_get(v, "mangled"), *at = dparse_get(v, "at"),
			    *add = dparse_get(v, "add");
		if (mangled && !cJSON_IsBool(mangled))
			return dparse_msg(d, jp, "mangled: expected true or false");
		rs->mangled = cJSON_IsTrue(mangled);
		if (at && (!dparse_integer(at, &rs->at) || rs->at < -4096 || rs->at > 4096))
			return dparse_msg(d, jp, "at: expected an offset within 4096 bytes");
		rs->has_at = at != NULL;
		if (add && !dparse_integer(add, &rs->add))
			return dparse_msg(d, jp, "add: expected an integer");
	}
	if (!member)
		return dparse_msg(d, jp, "expected a member path, or an object with member");
	struct ws_error *err = dparse_path(s, jp, &d->task_type, member,
					   &rs->member);
	if (!err)
		err = dparse_require_integer(s, jp, ws_dwpath_last(&rs->member));
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
			return dparse_msg(d, jp, "unknown register (expected rip, rsp, rbp, rbx, r12, r13, r14 or r15)");
		}
	}
	bool first_at = true;
	for (size_t i = 0; i < sizeof(reg_names) / sizeof(reg_names[0]); i++) {
		const cJSON *r = dparse_get(regs, reg_names[i].key);
		char jp[64];
		snprintf(jp, sizeof(jp), "task.registers.%s", reg_names[i].key);
		if (!r) {
			if (reg_names[i].regno == WS_REG_RIP ||
			    reg_names[i].regno == WS_REG_RSP)
				return dparse_msg(d, jp, "missing (rip and rsp are required)");
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
	const cJSON *regs = dparse_get(task, "registers");
	if (cJSON_IsObject(regs))
		return parse_register_set(s, regs);
	if (!cJSON_IsArray(regs) || d->version < 2 || !cJSON_GetArraySize(regs))
		return dparse_msg(d, "task.registers", "missing (member paths of the saved rip, rsp, ...)");
	struct ws_error *first = NULL;
	const cJSON *set;
	cJSON_ArrayForEach(set, regs) {
		if (!cJSON_IsObject(set)) {
			ws_error_destroy(first);
			return dparse_msg(d, "task.registers", "expected an array of register objects");
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
	const cJSON *stack = dparse_get(task, "stack");
	struct ws_error *err;
	if (!stack)
		return NULL;
	const char *lo = dparse_string(stack, "lo"), *hi = dparse_string(stack, "hi");
	const char *base = dparse_string(stack, "base"), *size = dparse_string(stack, "size");
	if (lo && hi) {
		if ((err = dparse_path(s, "task.stack.lo", &d->task_type, lo, &d->stack_a)) ||
		    (err = dparse_path(s, "task.stack.hi", &d->task_type, hi, &d->stack_b)))
			return err;
		d->stack_kind = STACK_LO_HI;
	} else if (base && size && d->version >= 2) {
		if ((err = dparse_path(s, "task.stack.base", &d->task_type, base, &d->stack_a)) ||
		    (err = dparse_path(s, "task.stack.size", &d->task_type, size, &d->stack_b)))
			return err;
		d->stack_kind = STACK_BASE_SIZE;
	} else {
		return dparse_msg(d, "task.stack", d->version >= 2
				  ? "needs lo and hi, or base and size, member paths"
				  : "needs lo and hi member paths");
	}
	if ((err = dparse_require_integer(s, "task.stack", ws_dwpath_last(&d->stack_a))) ||
	    (err = dparse_require_integer(s, "task.stack", ws_dwpath_last(&d->stack_b))))
		return err;
	return NULL;
}

struct ws_error *dparse_task(struct parser *s, const cJSON *root)
{
	struct descriptor *d = s->d;
	const struct ws_dwtype *tt = &d->task_type;
	const cJSON *task = dparse_get(root, "task");
	if (!cJSON_IsObject(task))
		return dparse_msg(d, "task", "missing (an object)");
	struct ws_error *err;
	if ((err = dparse_optional_path(s, task, "id", "task.id", tt, &d->has_id, &d->id)) ||
	    (err = dparse_optional_path(s, task, "entry", "task.entry", tt, &d->has_entry, &d->entry)) ||
	    (err = dparse_optional_path(s, task, "worker", "task.worker", tt, &d->has_worker, &d->worker)) ||
	    (err = dparse_optional_path(s, task, "switches", "task.switches", tt, &d->has_switches, &d->switches)) ||
	    (err = parse_name(s, task)))
		return err;
	if (d->has_switches) {
		const struct ws_dwfield *f = ws_dwpath_last(&d->switches);
		d->switches_bits = f->bit_size ? f->bit_size
					       : (unsigned)(f->size * 8);
	}

	const cJSON *state = dparse_get(task, "state");
	const char *member = state ? dparse_string(state, "member") : NULL;
	if (!member)
		return dparse_msg(d, "task.state.member", "missing (the state member)");
	if ((err = dparse_path(s, "task.state.member", tt, member, &d->state)) ||
	    (err = dparse_require_integer(s, "task.state.member", ws_dwpath_last(&d->state))))
		return err;
	if ((err = dparse_values(s, dparse_get(state, "values"), "task.state.values",
				ws_dwpath_last(&d->state), state_names,
				&d->states)))
		return err;
	for (size_t i = 0; i < d->states.n && d->version < 2; i++)
		if (strcmp(d->states.name[i], "new") == 0)
			return dparse_msg(d, "task.state.values", "state new needs \"wallspy\": \"runtime-descriptor/2\"");

	if ((err = parse_reason(s, task)) || (err = parse_registers(s, task)) ||
	    (err = parse_stack(s, task)))
		return err;
	bool nomem = false;
	d->root_function = dparse_strdup(dparse_string(task, "root_function"), &nomem);
	d->root_file = dparse_strdup(dparse_string(task, "root_file"), &nomem);
	return nomem ? &ws_error_nomem : NULL;
}

struct ws_error *dparse_workers(struct parser *s, const cJSON *root)
{
	struct descriptor *d = s->d;
	const cJSON *w = dparse_get(root, "workers");
	if (!w) {
		d->single_thread = d->version >= 2;
		return NULL;
	}
	const cJSON *global = dparse_get(w, "global");
	if (!global)
		return dparse_msg(d, "workers.global", "missing (an array of worker structs)");
	struct ws_error *err = dparse_gref(s, global, "workers.global", &d->workers);
	if (err)
		return err;
	if (d->workers.kind != WS_DWTYPE_ARRAY)
		return dparse_msg(d, "workers.global", "must be an array of worker structs");
	if ((err = ws_dwtype_target(&d->workers.type, &d->worker_type)))
		return dparse_err(d, "workers.global", err);
	if ((err = ws_dwtype_type_sizeof(s->prog, &d->worker_type,
					 &d->worker_size)))
		return dparse_err(d, "workers.global", err);
	if (d->worker_size == 0 || d->workers.size == WS_DWTYPE_SIZE_UNKNOWN)
		return dparse_msg(d, "workers.global", "an array of known length is needed");
	const cJSON *count = dparse_get(w, "count");
	if (count) {
		if ((err = dparse_gref(s, count, "workers.count", &d->worker_count)))
			return err;
		d->has_worker_count = true;
	}
	const char *tid = dparse_string(w, "tid"), *current = dparse_string(w, "current");
	if (!tid || !current)
		return dparse_msg(d, "workers", "needs tid and current member paths");
	if ((err = dparse_path(s, "workers.tid", &d->worker_type, tid,
			       &d->worker_tid)) ||
	    (err = dparse_path(s, "workers.current", &d->worker_type, current,
			       &d->worker_current)))
		return err;
	if (d->worker_tid.nhops != 1 || d->worker_current.nhops != 1)
		return dparse_msg(d, "workers", "tid and current must lie inside the worker struct");
	d->has_workers = true;
	return NULL;
}
