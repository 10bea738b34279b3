/*
 * The descriptor-driven runtime adapter: a JSON file (format in
 * wallspy-descriptor(5), parsed by runtime_descriptor_parse.c) names, in
 * DWARF terms only, a green-thread runtime's task registry, and this
 * adapter walks it every tick: each task struct is read in one piece and
 * its fields decoded from the copy at offsets resolved once; array
 * registries are sampled within the pause and CPU budgets.
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

#include "runtime_descriptor_internal.h"
#include "ws_dwtype.h"
#include "ws_grow.h"
#include "ws_remote_memory.h"
#include "ws_symbols.h"
#include "ws_syscalls.h"
#include "ws_target.h"

struct worker_info {
	uint64_t address;          /* of the worker struct */
	pid_t tid;
	uint64_t current;          /* task address or 0 */
};

/* A slot of an array registry: the task struct's address and, for arrays
 * of pointers, where that pointer was read (0: none). */
struct slot {
	uint64_t address;
	uint64_t slot;
};

struct state {
	struct ws_runtime_caps caps;
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
	/* array registries: the slots of a tick, struct copies */
	struct slot *slots;
	size_t slots_capacity;
	uint64_t *pointers;        /* a pointer array's slots, as read */
	size_t pointers_capacity;
	uint64_t table;            /* the registry's array, as last read */
	uint8_t *bulk;
	size_t bulk_capacity;
};

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
	if (!ws_grow((void **)&s->workers, &s->workers_capacity, (size_t)n,
		     sizeof(*s->workers))) {
		free(buf);
		return &ws_error_nomem;
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
	if (!ws_grow((void **)&s->reason_cache, &s->reason_cache_capacity,
		     s->reason_cache_n + 1, sizeof(*s->reason_cache)))
		return NULL;
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

/* The worker whose `current` is the task at `address`, or NULL. */
static const struct worker_info *running_worker(const struct state *s,
						uint64_t address)
{
	for (size_t i = 0; i < s->nworkers; i++)
		if (s->workers[i].current == address)
			return &s->workers[i];
	return NULL;
}

/* Fills `task` (zeroed) from the copy of its struct; false when the struct
 * holds no task (done, or no readable state). */
static bool decode_task(struct state *s, struct ws_target *target,
			const struct ws_read_context *context, uint64_t address,
			const uint8_t *tb, struct ws_task *task)
{
	struct descriptor *d = &s->d;
	size_t size = (size_t)d->task_size;
	uint64_t v;
	if (ws_dwtype_field_uint(&d->state, tb, size, &v))
		return false;
	const char *state_name = ws_descriptor_map_lookup(&d->states, (int64_t)v);
	if (state_name && strcmp(state_name, "done") == 0)
		return false;

	task->address = address;
	task->id = address;
	if (d->has_id && !ws_dwtype_field_uint(&d->id, tb, size, &v))
		task->id = v;
	if (d->has_switches && !ws_dwtype_field_uint(&d->switches, tb, size, &v))
		task->version = v;
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
		return true;
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
		task->wait_reason = ws_descriptor_map_lookup(&d->reasons, (int64_t)v);
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

	/* A task on a CPU (ws_task_start_on_cpu: its worker thread's live
	 * registers while that thread is on the task's stack, else its saved
	 * context). A worker whose `current` names the task has it on its
	 * CPU whatever the state says: runtimes set the state before
	 * switching out, and the context is saved only by the switch. */
	const struct worker_info *cpu = running_worker(s, address);
	if (task->state == WS_STATE_RUNNING || cpu) {
		uint64_t worker = 0;
		if (d->has_worker)
			ws_dwtype_field_uint(&d->worker, tb, size, &worker);
		pid_t tid = cpu ? cpu->tid : worker_tid(s, worker, address);
		if (ws_task_start_on_cpu(task, target, tid, true,
					 context->live) != WS_ON_CPU_SAVED)
			return true;
	}

	if (!task->stack_hi && d->has_stack) {
		/* No stack yet: a task that has never run. */
		task->start = WS_START_NONE;
		if (task->state != WS_STATE_RUNNABLE)
			task->error = "no stack";
		return true;
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
	return true;
}

/* Adds the task decoded from `tb`, if it is one. */
static struct ws_error *add_task(struct state *s, struct ws_target *target,
				 const struct ws_read_context *context,
				 uint64_t address, const uint8_t *tb,
				 struct ws_task_list *out)
{
	struct ws_task *task = ws_task_list_add(out);
	if (!task)
		return &ws_error_nomem;
	if (!decode_task(s, target, context, address, tb, task))
		out->n--;
	return NULL;
}

static struct ws_error *walk_list(struct state *s, struct ws_target *target,
				  const struct ws_read_context *context,
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
		err = add_task(s, target, context, address, s->buf, out);
		if (err)
			return err;
		uint64_t next = 0;
		ws_dwtype_field_uint(&d->next, s->buf, size, &next);
		address = next;
	}
	return NULL;
}

/* Array registries can be sampled without reading every task: pick a
 * uniform random subset of the slots (the budgets' `limit`), each task
 * found standing for slots/picked, and read the picked task structs with
 * batched process_vm_readv. */
static struct ws_error *walk_array(struct state *s, struct ws_target *target,
				   const struct ws_read_context *context,
				   uint64_t n, struct ws_task_list *out)
{
	struct descriptor *d = &s->d;
	size_t size = (size_t)d->task_size;
	uint64_t base = d->registry.address;
	struct ws_error *err;
	if (d->registry.kind == WS_DWTYPE_POINTER &&
	    (err = ws_dwtype_read_pointer(&d->registry, &base)))
		return err;
	s->table = base;
	if (!ws_grow((void **)&s->slots, &s->slots_capacity, (size_t)n,
		     sizeof(*s->slots)))
		return &ws_error_nomem;
	if (d->layout == LAYOUT_ARRAY) {
		for (uint64_t i = 0; i < n; i++)
			s->slots[i] = (struct slot){base + i * size, 0};
	} else {
		if (!ws_grow((void **)&s->pointers, &s->pointers_capacity,
			     (size_t)n, sizeof(*s->pointers)))
			return &ws_error_nomem;
		if (n && (err = ws_remote_read(s->pid, base, s->pointers,
					       (size_t)n * sizeof(uint64_t))))
			return err;
		for (uint64_t i = 0; i < n; i++)
			s->slots[i] = (struct slot){s->pointers[i],
						    base + i * sizeof(uint64_t)};
	}
	double scale = 1;
	size_t limit = context->limit;
	if (limit && limit < n) {
		ws_random_sample_front(context->random, s->slots, (size_t)n,
				       limit, sizeof(*s->slots));
		scale = (double)n / (double)limit;
		n = limit;
	}
	if (!ws_grow((void **)&s->bulk, &s->bulk_capacity, (size_t)n * size, 1))
		return &ws_error_nomem;
	enum { BATCH = 1024 };
	struct ws_remote_range ranges[BATCH];
	size_t index[BATCH];
	for (uint64_t first = 0; first < n; first += BATCH) {
		size_t k = 0;
		for (uint64_t i = first; i < n && i < first + BATCH; i++) {
			if (!s->slots[i].address)
				continue; /* an empty slot */
			ranges[k] = (struct ws_remote_range){
				.address = s->slots[i].address,
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
			const struct slot *slot = &s->slots[index[r]];
			size_t before = out->n;
			err = add_task(s, target, context, slot->address,
				       s->bulk + index[r] * size, out);
			if (err)
				return err;
			if (out->n > before) {
				out->tasks[out->n - 1].scale = scale;
				out->tasks[out->n - 1].slot = slot->slot;
			}
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
		/* Idle by the registry; its stack is unknown this tick. A
		 * live tick does not stop an idle worker just to show where
		 * the scheduler waits: two ptrace stops per worker and tick
		 * were most of such a tick's cost (~0.1 ms of 0.25). */
		if (!th->regs_valid)
			task->start = WS_START_NONE;
	}
}

static struct ws_error *descriptor_list(struct ws_runtime *runtime,
					struct ws_target *target,
					const struct ws_read_context *context,
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
	/* Twice: a live tick decodes changed tasks again (reread). */
	size_t need = 2 * ((size_t)(bound + 1) * (d->has_name ? d->name_field.size + 1 : 1) + 4096);
	if (!ws_grow((void **)&s->strings, &s->strings_size, need, 1))
		return &ws_error_nomem;
	s->strings_used = 0;
	if ((err = read_workers(s)))
		return err;
	if (d->layout == LAYOUT_LIST)
		err = walk_list(s, target, context, bound, out);
	else
		err = walk_array(s, target, context, bound, out);
	if (err)
		return err;
	add_idle_workers(s, target, out);
	return NULL;
}

static struct ws_error *descriptor_reread(struct ws_runtime *runtime,
					  struct ws_target *target,
					  const struct ws_read_context *context,
					  struct ws_task *tasks, size_t n,
					  enum ws_reread *result)
{
	struct state *s = runtime->state;
	struct descriptor *d = &s->d;
	size_t size = (size_t)d->task_size;
	struct ws_error *err = read_workers(s);
	if (err)
		return err;
	/* A table that moved may have been freed: its slots prove nothing. */
	uint64_t table = s->table;
	if (d->registry.kind == WS_DWTYPE_POINTER &&
	    (err = ws_dwtype_read_pointer(&d->registry, &table)))
		return err;
	if (!ws_grow((void **)&s->bulk, &s->bulk_capacity, n * size, 1) ||
	    !ws_grow((void **)&s->pointers, &s->pointers_capacity, n,
		     sizeof(*s->pointers)))
		return &ws_error_nomem;
	/* Each task's struct and the slot that pointed at it, in one batch
	 * of up to 512 tasks. */
	enum { BATCH = 512 };
	struct ws_remote_range ranges[2 * BATCH];
	for (size_t first = 0; first < n; first += BATCH) {
		size_t k = 0;
		for (size_t i = first; i < n && i < first + BATCH; i++) {
			s->pointers[i] = 0;
			if (!tasks[i].address)
				continue;
			ranges[k++] = (struct ws_remote_range){
				.address = tasks[i].address,
				.buf = s->bulk + i * size, .size = size,
			};
			if (tasks[i].slot)
				ranges[k++] = (struct ws_remote_range){
					.address = tasks[i].slot,
					.buf = &s->pointers[i], .size = 8,
				};
		}
		ws_remote_readv(s->pid, ranges, k);
		k = 0;
		for (size_t i = first; i < n && i < first + BATCH; i++) {
			if (!tasks[i].address) {
				/* An idle worker: no stack to tear. */
				result[i] = WS_REREAD_SAME;
				continue;
			}
			bool ok = ranges[k++].done == size;
			if (tasks[i].slot)
				ok = ranges[k++].done == 8 && ok &&
				     s->pointers[i] == tasks[i].address &&
				     table == s->table;
			struct ws_task fresh = {0};
			if (!ok || !decode_task(s, target, context,
						tasks[i].address,
						s->bulk + i * size, &fresh)) {
				result[i] = WS_REREAD_GONE;
				continue;
			}
			result[i] = ws_task_reread(&tasks[i], &fresh);
		}
	}
	return NULL;
}

static void descriptor_destroy(struct ws_runtime *runtime)
{
	struct state *s = runtime->state;
	if (s) {
		ws_dwtype_program_destroy(s->prog);
		ws_descriptor_deinit(&s->d);
		free(s->d.source);
		free(s->buf);
		free(s->slots);
		free(s->pointers);
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
	.list_tasks = descriptor_list,
	.reread = descriptor_reread,
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
	rt->caps = &s->caps;
	s->pid = target->pid;
	s->d.source = strdup(source);
	struct ws_error *err = s->d.source ? NULL : &ws_error_nomem;
	if (!err) {
		struct ws_memory_reader reader = ws_remote_reader(&s->pid);
		err = ws_dwtype_program_create(ws_symbols_dwfl(symbols),
					       &reader, &s->prog);
	}
	if (!err)
		err = ws_descriptor_parse(&s->d, s->prog, text);
	if (!err && !(s->buf = malloc((size_t)s->d.task_size)))
		err = &ws_error_nomem;
	if (err) {
		descriptor_destroy(rt);
		return err;
	}
	/* A list cannot be walked safely while it changes, without the
	 * workers' table a running task's thread is unknown, and without a
	 * switch count a task that ran and parked again at the same context
	 * while its stack was copied would go unnoticed. */
	bool live = s->d.layout != LAYOUT_LIST && s->d.has_workers &&
		    s->d.has_switches;
	s->caps = (struct ws_runtime_caps){
		.name = s->d.name,
		.root_function = s->d.root_function,
		.tick = live ? WS_TICK_LIVE : WS_TICK_STOPPED,
	};
	*ret = rt;
	return NULL;
}

