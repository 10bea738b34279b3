/*
 * The descriptor-driven runtime adapter: a JSON file (format in
 * wallspy-descriptor(5), parsed by runtime_descriptor_parse.c) names, in
 * DWARF terms only, a green-thread runtime's task registry; each tick
 * runtime_descriptor_walk.c walks it, and this file decodes each task from
 * the copy of its struct (fields at offsets resolved once, one more read
 * per pointer a path follows), decides where it runs (workers, the
 * current task, the main thread of a single-thread runtime), reads tasks
 * again for live ticks, and creates the adapter. Memory is read only
 * through a ws_memory_reader (batched with process_vm_readv for a real
 * process), so all of it runs, and is tested, over an in-memory image.
 * Task names and wait-reason strings are runtime_descriptor_strings.c's.
 */
#include "ws_runtime_descriptor.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_descriptor_internal.h"
#include "ws_dwtype.h"
#include "ws_grow.h"
#include "ws_hash.h"
#include "ws_maps.h"
#include "ws_procstat.h"
#include "ws_remote_memory.h"
#include "ws_symbols.h"
#include "ws_target.h"

/* ---- memory ---- */

struct ws_error *desc_mem_read(struct state *s, uint64_t address, void *buf,
				 size_t size)
{
	return ws_memory_read(&s->reader, address, buf, size);
}

/* Batched reads: process_vm_readv for a process, else one by one. */
void desc_mem_readv(struct state *s, struct ws_remote_range *ranges, size_t n)
{
	if (s->pid) {
		ws_remote_readv(s->pid, ranges, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct ws_error *err = desc_mem_read(s, ranges[i].address,
						ranges[i].buf, ranges[i].size);
		ranges[i].done = err ? 0 : ranges[i].size;
		ws_error_destroy(err);
	}
}

bool desc_readable(struct state *s, uint64_t address)
{
	uint8_t byte;
	struct ws_error *err = desc_mem_read(s, address, &byte, 1);
	ws_error_destroy(err);
	return err == NULL;
}

/* A path's value in the task at `address`, whose copy is `tb`. */
struct ws_error *desc_task_uint(struct state *s, const struct ws_dwpath *path,
				uint64_t address, const uint8_t *tb, uint64_t *ret)
{
	return ws_dwtype_path_uint(s->prog, path, address, tb,
				   (size_t)s->d.task_size, ret);
}

/* desc_task_uint(), for a member whose absence is no failure: false when it cannot
 * be read. */
static bool try_get(struct state *s, const struct ws_dwpath *path,
		    uint64_t address, const uint8_t *tb, uint64_t *ret)
{
	struct ws_error *err = desc_task_uint(s, path, address, tb, ret);
	ws_error_destroy(err);
	return err == NULL;
}

struct ws_error *desc_gref_address(struct state *s, const struct gref *g,
				     uint64_t *ret)
{
	if (g->path.nhops == 0) {
		*ret = g->var.address;
		return NULL;
	}
	return ws_dwtype_path_locate(s->prog, &g->path, g->var.address, NULL, 0,
				     ret);
}

struct ws_error *desc_gref_uint(struct state *s, const struct gref *g,
				  uint64_t *ret)
{
	if (g->path.nhops == 0)
		return ws_dwtype_read_uint(&g->var, ret);
	return ws_dwtype_path_uint(s->prog, &g->path, g->var.address, NULL, 0,
				   ret);
}

/* ---- warnings ---- */

void desc_warn_once(struct state *s, enum warning kind, const char *fmt, ...)
{
	if (s->warned & (1u << kind))
		return;
	s->warned |= 1u << kind;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->warn)
		s->warn(s->warn_arg, msg);
	else
		fprintf(stderr, "wallspy: warning: runtime descriptor %s: %s\n",
			s->d.source, msg);
}

/* ---- workers and the current task ---- */

static struct ws_error *read_workers(struct state *s)
{
	struct descriptor *d = &s->d;
	s->nworkers = 0;
	if (!d->has_workers)
		return NULL;
	uint64_t n = d->workers.size / d->worker_size, base;
	struct ws_error *err = desc_gref_address(s, &d->workers, &base);
	if (err)
		return err;
	if (d->has_worker_count) {
		uint64_t count;
		if ((err = desc_gref_uint(s, &d->worker_count, &count)))
			return err;
		if (count < n)
			n = count;
	}
	size_t bytes = (size_t)(n * d->worker_size);
	uint8_t *buf = malloc(bytes ? bytes : 1);
	if (!buf)
		return &ws_error_nomem;
	err = bytes ? desc_mem_read(s, base, buf, bytes) : NULL;
	if (!err && !ws_grow((void **)&s->workers, &s->workers_capacity,
			     (size_t)n, sizeof(*s->workers)))
		err = &ws_error_nomem;
	for (uint64_t i = 0; !err && i < n; i++) {
		const uint8_t *wb = buf + i * d->worker_size;
		uint64_t tid = 0, cur = 0;
		if (ws_dwtype_field_uint(&d->worker_tid.hop[0], wb, (size_t)d->worker_size, &tid) ||
		    ws_dwtype_field_uint(&d->worker_current.hop[0], wb, (size_t)d->worker_size, &cur))
			continue;
		if (tid == 0 || tid > INT32_MAX)
			continue;
		struct worker_info *w = &s->workers[s->nworkers++];
		w->address = base + i * d->worker_size;
		w->tid = (pid_t)tid;
		w->current = cur;
		w->busy = false;
		w->seen = false;
	}
	free(buf);
	return err;
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

/* The worker whose `current` is the task at `address`, or NULL. */
static struct worker_info *running_worker(struct state *s, uint64_t address)
{
	for (size_t i = 0; i < s->nworkers; i++)
		if (s->workers[i].current == address)
			return &s->workers[i];
	return NULL;
}

/* The worker on thread tid runs a task the walk has read: not idle,
 * whatever its `current` said when the walk began (a task started on it
 * since, which its record shows). */
static void mark_busy(struct state *s, pid_t tid)
{
	for (size_t i = 0; tid && i < s->nworkers; i++)
		if (s->workers[i].tid == tid)
			s->workers[i].busy = true;
}

/* The pointer guard glibc mangles setjmp's rbp, rsp and pc with: the word
 * at fs_base + 0x30 of any thread (tcbhead_t.pointer_guard), the same for
 * all. Needs one thread whose registers were read. */
static void find_guard(struct state *s, struct ws_target *target)
{
	if (!s->d.uses_guard || s->guard_known)
		return;
	for (size_t i = 0; i < target->nthreads; i++) {
		const struct ws_thread *th = &target->threads[i];
		uint64_t guard;
		if (!th->regs_valid || !th->regs.fs_base)
			continue;
		struct ws_error *err = desc_mem_read(s, th->regs.fs_base + 0x30,
						&guard, sizeof(guard));
		if (!err) {
			s->guard = guard;
			s->guard_known = true;
			return;
		}
		ws_error_destroy(err);
	}
}

/* A tick's view of who is where: workers, the current task, the guard. A
 * failure is an error in a live tick (read again stopped), else told. */
static struct ws_error *read_cpus(struct state *s, struct ws_target *target,
				  const struct ws_read_context *context)
{
	struct descriptor *d = &s->d;
	struct ws_error *err = read_workers(s);
	if (err)
		return err;
	s->current = 0;
	if (d->has_current && (err = desc_gref_uint(s, &d->current, &s->current))) {
		if (context->live)
			return err;
		desc_warn_once(s, WARN_CURRENT, "registry.current unreadable: %s",
			  err->message);
		ws_error_destroy(err);
	}
	find_guard(s, target);
	if (d->uses_guard && !s->guard_known && context->live)
		return ws_error_create(WS_ERR_OTHER, "pointer guard unknown until a thread stops");
	return NULL;
}

/* ---- one task ---- */

static enum ws_state state_from_name(const char *name)
{
	if (strcmp(name, "running") == 0)
		return WS_STATE_RUNNING;
	if (strcmp(name, "runnable") == 0 || strcmp(name, "new") == 0)
		return WS_STATE_RUNNABLE;
	if (strcmp(name, "waiting") == 0)
		return WS_STATE_WAITING;
	if (strcmp(name, "syscall") == 0)
		return WS_STATE_SYSCALL;
	if (strcmp(name, "idle") == 0)
		return WS_STATE_IDLE;
	return WS_STATE_UNKNOWN;
}

/* The main thread's stack mapping, for a task without bounds it runs (a
 * single-OS-thread runtime's main task runs on the process stack).
 * Reloads the map at most once a tick, when the thread's sp is outside
 * the mapping known (the stack grew, or the thread is elsewhere). */
static void main_stack(struct state *s, const struct ws_thread *th,
		       uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = 0;
	if (!s->start_stack)
		return;
	uint64_t sp = th && th->regs_valid ? th->regs.rsp : 0;
	bool inside = s->main_hi && sp >= s->main_lo && sp < s->main_hi;
	if ((!s->main_hi || (sp && !inside)) && !s->maps_reloaded) {
		s->maps_reloaded = true;
		struct ws_error *err = ws_maps_reload(&s->maps);
		const struct ws_mapping *m = err ? NULL
					   : ws_maps_find(&s->maps, s->start_stack);
		ws_error_destroy(err);
		if (m) {
			s->main_lo = m->start;
			s->main_hi = m->end;
		}
	}
	*lo = s->main_lo;
	*hi = s->main_hi;
}

/* ws_task_start_on_cpu, over a target that may have no threads at all
 * (an in-memory image: every thread is unknown). */
static enum ws_on_cpu on_cpu(struct state *s, struct ws_task *task,
			     struct ws_target *target, pid_t tid, bool live)
{
	if (!target->nthreads || !tid) {
		if (live) {
			task->start = WS_START_THREAD;
			task->thread = 0;
			return WS_ON_CPU_PENDING;
		}
		return WS_ON_CPU_SAVED;
	}
	if (s->d.single_thread && !task->stack_hi && tid == target->pid)
		main_stack(s, ws_target_find_thread(target, tid),
			   &task->stack_lo, &task->stack_hi);
	return ws_task_start_on_cpu(task, target, tid, true, live);
}

/* The saved registers; false (and task->error) when they cannot be had. */
static bool saved_registers(struct state *s, uint64_t address,
			    const uint8_t *tb, struct ws_task *task)
{
	struct descriptor *d = &s->d;
	uint64_t frame_base = 0;
	bool frame_loaded = false;
	for (size_t i = 0; i < d->nregs; i++) {
		const struct reg_spec *rs = &d->regs[i];
		uint64_t v;
		struct ws_error *err = desc_task_uint(s, &rs->member, address, tb, &v);
		if (err) {
			ws_error_destroy(err);
			task->error = "saved registers unreadable";
			return false;
		}
		if (rs->mangled) {
			if (!s->guard_known) {
				task->error = "pointer guard unknown (no thread stopped yet)";
				return false;
			}
			v = ((v >> 0x11) | (v << (64 - 0x11))) ^ s->guard;
		}
		if (rs->has_at) {
			size_t size = (size_t)(d->frame_hi - d->frame_lo);
			if (!frame_loaded || frame_base != v) {
				err = v ? desc_mem_read(s, v + (uint64_t)d->frame_lo,
						   s->frame, size)
					: ws_error_create(WS_ERR_OTHER, "null");
				if (err) {
					ws_error_destroy(err);
					task->error = "saved registers unreadable";
					return false;
				}
				frame_base = v;
				frame_loaded = true;
			}
			memcpy(&v, s->frame + (rs->at - d->frame_lo), sizeof(v));
		}
		v += (uint64_t)rs->add;
		task->regs.value[rs->regno] = v;
		task->regs.valid |= 1u << rs->regno;
	}
	if (!task->regs.value[WS_REG_RIP] || !task->regs.value[WS_REG_RSP]) {
		task->error = "no saved context";
		return false;
	}
	return true;
}

static void decode_stack(struct state *s, uint64_t address, const uint8_t *tb,
			 struct ws_task *task)
{
	struct descriptor *d = &s->d;
	uint64_t a = 0, b = 0, lo, hi;
	if (d->stack_kind == STACK_NONE)
		return;
	if (!try_get(s, &d->stack_a, address, tb, &a) ||
	    !try_get(s, &d->stack_b, address, tb, &b))
		return;
	lo = a;
	hi = d->stack_kind == STACK_BASE_SIZE ? a + b : b;
	if (lo && hi > lo) {
		task->stack_lo = lo;
		task->stack_hi = hi;
	}
}

/* Whether task's thread (its live registers chosen) is caught switching
 * into it: the switch has loaded the task's saved stack pointer (or pushed
 * the saved pc there, 8 bytes below) but not yet jumped to its saved pc.
 * There the word at the stack pointer is no return address (glibc's
 * swapcontext: between `mov oRSP, %rsp` and its `ret`), so the live
 * registers do not unwind, while the saved context is exactly where the
 * task is about to resume. An instant after the jump, a call the task makes
 * at once looks the same, and the saved context then misses that one new
 * frame. *saved: the task's saved registers, once read. */
static bool switching_in(struct state *s, struct ws_target *target,
			 uint64_t address, const uint8_t *tb,
			 const struct ws_task *task, struct ws_regs *saved)
{
	const struct ws_thread *th = ws_target_find_thread(target, task->thread);
	if (!th || !th->regs_valid)
		return false;
	struct ws_task copy = *task;
	copy.regs = (struct ws_regs){0};
	if (!saved_registers(s, address, tb, &copy))
		return false;
	const uint32_t need = (1u << WS_REG_RSP) | (1u << WS_REG_RIP);
	if ((copy.regs.valid & need) != need)
		return false;
	uint64_t sp = copy.regs.value[WS_REG_RSP];
	*saved = copy.regs;
	return th->regs.rip != copy.regs.value[WS_REG_RIP] &&
	       (th->regs.rsp == sp || th->regs.rsp == sp - 8);
}

/* Fills `task` (zeroed) from the copy of its struct; false when the struct
 * holds no task (done, or no readable state). */
bool desc_task_listed(struct state *s, uint64_t address, const uint8_t *tb,
		      const char **state_name)
{
	uint64_t v;
	if (!try_get(s, &s->d.state, address, tb, &v))
		return false;
	*state_name = ws_descriptor_map_lookup(&s->d.states, (int64_t)v);
	return !*state_name || strcmp(*state_name, "done") != 0;
}

static bool decode_task(struct state *s, struct ws_target *target,
			const struct ws_read_context *context, uint64_t address,
			const uint8_t *tb, struct ws_task *task)
{
	struct descriptor *d = &s->d;
	uint64_t v;
	const char *state_name;
	if (!desc_task_listed(s, address, tb, &state_name))
		return false;

	task->address = address;
	task->id = address;
	if (d->has_id && try_get(s, &d->id, address, tb, &v))
		task->id = v;
	if (d->has_switches && try_get(s, &d->switches, address, tb, &v)) {
		task->version = v;
		task->version_wide = d->switches_bits >= 32;
	}
	if (d->name_kind == NAME_CHARS)
		task->name = desc_task_string(s, &d->name_path, address, tb);
	else if (d->name_kind == NAME_LENGTH_PREFIXED &&
		 try_get(s, &d->name_path, address, tb, &v))
		task->name = desc_target_prefixed(s, v);
	if (!state_name) {
		task->state = WS_STATE_UNKNOWN;
		task->error = "unknown state value";
		task->start = WS_START_NONE;
		return true;
	}
	bool not_started = strcmp(state_name, "new") == 0;
	task->state = state_from_name(state_name);
	if (task->state == WS_STATE_WAITING && d->reason_kind == REASON_STRING)
		task->wait_reason = desc_task_string(s, &d->reason, address, tb);
	else if (task->state == WS_STATE_WAITING && d->reason_kind != REASON_NONE &&
		 try_get(s, &d->reason, address, tb, &v))
		task->wait_reason = d->reason_kind == REASON_BITS
			? desc_reason_bits(s, v)
			: ws_descriptor_map_lookup(&d->reasons, (int64_t)v);
	decode_stack(s, address, tb, task);
	if (d->has_entry && try_get(s, &d->entry, address, tb, &v))
		task->entry_pc = v;

	/* A task on a CPU (ws_task_start_on_cpu: its thread's live
	 * registers while that thread is on the task's stack, else its saved
	 * context). A worker's `current`, or the registry's, is on the CPU
	 * whatever the state says: runtimes set the state before switching
	 * out, and the context is saved only by the switch. */
	pid_t tid = 0;
	bool candidate = task->state == WS_STATE_RUNNING;
	if (d->has_workers) {
		struct worker_info *cpu = running_worker(s, address);
		uint64_t worker = 0;
		if (cpu)
			cpu->seen = true;
		if (!cpu && candidate && d->has_worker &&
		    !try_get(s, &d->worker, address, tb, &worker))
			worker = 0;
		tid = cpu ? cpu->tid : worker_tid(s, worker, address);
		candidate |= cpu != NULL;
	} else if (d->single_thread) {
		candidate |= d->has_current && address == s->current;
		tid = target->pid;
	}
	if (candidate && !not_started) {
		enum ws_on_cpu where = on_cpu(s, task, target, tid, context->live);
		struct ws_regs saved;
		if (where == WS_ON_CPU_LIVE &&
		    switching_in(s, target, address, tb, task, &saved)) {
			/* On its CPU all the same, from where it resumes. */
			task->start = WS_START_SAVED;
			task->regs = saved;
		}
		if (where != WS_ON_CPU_SAVED) {
			mark_busy(s, task->thread);
			/* Format 2: on its CPU is running (Pth has no such
			 * state; its current task is "ready"). */
			if (d->version >= 2 && task->state != WS_STATE_SYSCALL)
				task->state = WS_STATE_RUNNING;
			return true;
		}
	}

	/* Not started: its entry is its stack (format 1: no stack yet). */
	if (not_started || (d->version < 2 && d->stack_kind != STACK_NONE &&
			    !task->stack_hi)) {
		task->start = WS_START_NONE;
		if (d->version < 2 && task->state != WS_STATE_RUNNABLE)
			task->error = "no stack";
		return true;
	}
	task->start = WS_START_SAVED;
	if (!saved_registers(s, address, tb, task))
		task->start = WS_START_NONE;
	return true;
}

/* Adds the task decoded from `tb`, if it is one; *added says whether. */
struct ws_error *desc_add_task(struct state *s, struct ws_target *target,
				 const struct ws_read_context *context,
				 uint64_t address, const uint8_t *tb,
				 struct ws_task_list *out, bool *added)
{
	struct ws_task *task = ws_task_list_add(out);
	if (!task)
		return &ws_error_nomem;
	*added = decode_task(s, target, context, address, tb, task);
	if (!*added)
		out->n--;
	return NULL;
}

/* Reads the record of worker w's `current`, which the walk left out (a
 * sample of the registry): decode_task marks w busy if it is on w's CPU. */
static void read_current(struct state *s, struct ws_target *target,
			 const struct ws_read_context *context,
			 const struct worker_info *w)
{
	struct ws_task task = {0};
	struct ws_error *err = desc_mem_read(s, w->current, s->buf,
					     (size_t)s->d.task_size);
	if (!err)
		decode_task(s, target, context, w->current, s->buf, &task);
	ws_error_destroy(err);
}

/* The workers that run no task the walk read as on its CPU are listed as
 * idle workers, so that each worker's time has one sample a tick: idle by
 * its `current`, or switching to or from a task (one not started yet, or
 * done, is not on a CPU). A task that started on a worker after
 * read_cpus, read running by the walk, has that worker's time. */
static void add_idle_workers(struct state *s, struct ws_target *target,
			     const struct ws_read_context *context,
			     struct ws_task_list *out)
{
	for (size_t i = 0; i < s->nworkers && i < 64; i++) {
		const struct worker_info *w = &s->workers[i];
		if (w->current && !w->seen && !w->busy)
			read_current(s, target, context, w);
		if (w->busy)
			continue;
		struct ws_thread *th = target->nthreads
			? ws_target_find_thread(target, w->tid) : NULL;
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
	desc_arena_reset(&s->strings);
	desc_string_cache_trim(s);
	desc_visited_start(&s->visited);
	s->maps_reloaded = false;
	struct ws_error *err = read_cpus(s, target, context);
	if (err)
		return err;
	if (d->uses_guard && !s->guard_known)
		desc_warn_once(s, WARN_GUARD, "the pointer guard of mangled registers is unknown: no thread's registers were read");
	if ((err = desc_walk(s, target, context, out)))
		return err;
	add_idle_workers(s, target, context, out);
	return NULL;
}

static uint64_t descriptor_thread_current(struct ws_runtime *runtime,
					  pid_t tid)
{
	const struct state *s = runtime->state;
	for (size_t i = 0; i < s->nworkers; i++)
		if (s->workers[i].tid == tid)
			return s->workers[i].current;
	return 0;
}

/* A pointer array the list read may have moved since (grown: copied to a
 * new table, the old one freed): the slots of tasks[0, n) in an old table
 * are moved to the same index of the new one, so that a task is checked
 * against the registry as it is now, not against freed memory. A slot
 * beyond the new table's count is SLOT_DROPPED: the task is not there. */
#define SLOT_DROPPED UINT64_MAX

static struct ws_error *follow_tables(struct state *s, struct ws_task *tasks,
				      size_t n)
{
	const struct descriptor *d = &s->d;
	for (unsigned i = 0; i < d->nroots; i++) {
		const struct root *r = &d->roots[i];
		uint64_t table, count, old = s->table[i], len = s->table_len[i];
		if (r->layout != LAYOUT_POINTER_ARRAY ||
		    r->head.kind != WS_DWTYPE_POINTER || !old)
			continue;
		struct ws_error *err = desc_gref_uint(s, &r->head, &table);
		if (err)
			return err;
		if (table == old)
			continue;
		count = 0;
		if (r->has_count && (err = desc_gref_uint(s, &r->count, &count)))
			return err;
		for (size_t j = 0; j < n; j++) {
			uint64_t slot = tasks[j].slot;
			if (!slot || slot < old || slot >= old + len * 8)
				continue;
			uint64_t index = (slot - old) / 8;
			tasks[j].slot = table && index < count ? table + index * 8
							       : SLOT_DROPPED;
		}
	}
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
	struct ws_error *err = read_cpus(s, target, context);
	if (err)
		return err;
	if ((err = follow_tables(s, tasks, n)))
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
			if (tasks[i].slot && tasks[i].slot != SLOT_DROPPED)
				ranges[k++] = (struct ws_remote_range){
					.address = tasks[i].slot,
					.buf = &s->pointers[i], .size = 8,
				};
		}
		desc_mem_readv(s, ranges, k);
		k = 0;
		for (size_t i = first; i < n && i < first + BATCH; i++) {
			if (!tasks[i].address) {
				/* An idle worker or a failed sample: no
				 * stack to tear. */
				result[i] = WS_REREAD_SAME;
				continue;
			}
			bool ok = ranges[k++].done == size;
			if (tasks[i].slot == SLOT_DROPPED)
				ok = false;
			else if (tasks[i].slot)
				ok = ranges[k++].done == 8 && ok &&
				     s->pointers[i] == tasks[i].address;
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
		ws_read_cache_destroy(s->blocks);
		ws_descriptor_deinit(&s->d);
		free(s->d.source);
		free(s->buf);
		free(s->slots);
		free(s->pointers);
		free(s->bulk);
		for (size_t i = 0; i < s->strings.nblocks; i++)
			free(s->strings.block[i]);
		free(s->strings.block);
		desc_visited_free(&s->visited);
		free(s->workers);
		for (size_t i = 0; i < s->cache_n; i++)
			free(s->cache[i].text);
		free(s->cache);
		ws_maps_deinit(&s->maps);
		free(s);
	}
	free(runtime);
}

static const struct ws_runtime_ops descriptor_ops = {
	.list_tasks = descriptor_list,
	.reread = descriptor_reread,
	.thread_current = descriptor_thread_current,
	.destroy = descriptor_destroy,
};

/* /proc/PID/stat's startstack: an address inside the main thread's
 * stack. 0 when unknown. */
static uint64_t read_start_stack(pid_t pid)
{
	char path[64], text[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	const char *start_stack = ws_procstat_field(text, 28);
	return start_stack ? strtoull(start_stack, NULL, 10) : 0;
}

struct ws_error *ws_descriptor_runtime_create(const char *text,
					      const char *source,
					      struct ws_target *target,
					      Dwfl *dwfl,
					      const struct ws_memory_reader *reader,
					      ws_descriptor_warn_fn warn,
					      void *warn_arg,
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
	struct ws_memory_reader inner = reader ? *reader
					       : ws_remote_reader(&s->pid);
	/* A list's walk reads each task after the one before it: blocks of
	 * 16 KiB serve the reads that fall near each other (structs
	 * allocated side by side) with one system call per block, yet copy
	 * little more than needed when tasks lie far apart (one per stack
	 * mapping), as 64 KiB blocks would. Without the cache (out of
	 * memory), reads go straight to the target. */
	s->blocks = ws_read_cache_create(&inner, 16384, 32);
	s->reader = s->blocks ? ws_read_cache_reader(s->blocks) : inner;
	s->warn = warn;
	s->warn_arg = warn_arg;
	ws_maps_init(&s->maps, target->pid);
	s->d.source = strdup(source);
	struct ws_error *err = s->d.source ? NULL : &ws_error_nomem;
	if (!err)
		err = ws_dwtype_program_create(dwfl, &s->reader, &s->prog);
	if (!err)
		err = ws_descriptor_parse(&s->d, s->prog, text);
	if (!err && !(s->buf = malloc((size_t)s->d.task_size)))
		err = &ws_error_nomem;
	if (err) {
		descriptor_destroy(rt);
		return err;
	}
	if (s->pid && s->d.single_thread)
		s->start_stack = read_start_stack(s->pid);
	/* Live ticks need a switch count (a task that ran and parked again
	 * at the same context while its stack was copied would otherwise go
	 * unnoticed) and to know which thread runs a task: a workers table,
	 * or a single-thread runtime's main thread. Format 1 also wanted an
	 * array: its lists were not walked defensively. */
	struct descriptor *d = &s->d;
	bool live = d->has_switches && (d->has_workers || d->single_thread);
	if (d->version < 2)
		live = d->has_workers && d->has_switches &&
		       d->roots[0].layout != LAYOUT_LIST;
	/* Without them, a list's walk (desc_walk: each task visited once,
	 * bounded, an error where a live read breaks off) can still leave
	 * the pause. */
	bool walks_list = false;
	for (unsigned i = 0; i < d->nroots; i++)
		walks_list |= d->roots[i].layout == LAYOUT_LIST ||
			      d->roots[i].layout == LAYOUT_RING ||
			      d->roots[i].layout == LAYOUT_SENTINEL_RING;
	s->caps = (struct ws_runtime_caps){
		.name = s->d.name,
		.root_function = s->d.root_function,
		.root_file = s->d.root_file,
		.tick = live ? WS_TICK_LIVE : WS_TICK_STOPPED,
		.walk_live = !live && walks_list,
	};
	*ret = rt;
	return NULL;
}

struct ws_error *ws_runtime_descriptor_create(const char *text,
					      const char *source,
					      struct ws_target *target,
					      struct ws_symbols *symbols,
					      struct ws_runtime **ret)
{
	return ws_descriptor_runtime_create(text, source, target,
					    ws_symbols_dwfl(symbols), NULL,
					    NULL, NULL, ret);
}
