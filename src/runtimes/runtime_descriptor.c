/*
 * The descriptor-driven runtime adapter: a JSON file (format in
 * wallspy-descriptor(5), parsed by runtime_descriptor_parse.c) names, in
 * DWARF terms only, a green-thread runtime's task registry, and this
 * adapter walks it every tick: each task struct is read in one piece and
 * its fields decoded from the copy (one more read per pointer a path
 * follows); array registries are sampled within the pause and CPU budgets.
 *
 * The walk trusts nothing it reads: each task is visited once per tick
 * whatever `next` says, counts are clamped to readable memory and to the
 * descriptor's max, and a registry cut short is a failed sample and a
 * warning, never silence. It reads memory only through a ws_memory_reader
 * (batched with process_vm_readv for a real process), so it runs, and is
 * tested, over an in-memory image.
 */
#include "ws_runtime_descriptor.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_descriptor_internal.h"
#include "ws_dwtype.h"
#include "ws_grow.h"
#include "ws_hash.h"
#include "ws_maps.h"
#include "ws_remote_memory.h"
#include "ws_symbols.h"
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

/* The tasks a tick has reached, by address, with a bit per root that
 * reached them: a task is listed once, and a root that reaches a task
 * twice has a cycle. Open addressing, stamped per tick (no clearing). */
struct visited {
	uint64_t *key;
	uint32_t *stamp;
	uint32_t *roots;           /* bit r: root r; bit MAX_ROOTS: current */
	size_t mask, count;
	uint32_t tick;
};

/* Task names and wait reasons of a tick: 64 KiB blocks that never move,
 * so the strings stay valid until the next list. */
enum { ARENA_BLOCK = 65536 };
struct arena {
	char **block;
	size_t nblocks, capacity;
	size_t current, used;      /* the block being filled, bytes in it */
};

/* What a warning is about: each is said once per run. */
enum warning {
	WARN_CUT, WARN_CYCLE, WARN_LONG, WARN_CLAMPED, WARN_UNREADABLE,
	WARN_CURRENT, WARN_GUARD, WARN_MAX
};

/* Strings read from the target by address (names, wait reasons): they are
 * mostly literals or immutable. At most CACHE_MAX between ticks. */
enum { CACHE_MAX = 4096, TEXT_MAX = 64 };

struct state {
	struct ws_runtime_caps caps;
	struct descriptor d;
	struct ws_dwtype_program *prog;
	struct ws_memory_reader reader;
	pid_t pid;                 /* 0: an in-memory image */
	ws_descriptor_warn_fn warn;
	void *warn_arg;
	uint32_t warned;           /* bit per enum warning */
	/* glibc's pointer guard (mangled setjmp registers) */
	bool guard_known;
	uint64_t guard;
	/* the main thread's stack, for a task without bounds it runs */
	uint64_t start_stack;      /* /proc/PID/stat startstack; 0: unknown */
	uint64_t main_lo, main_hi;
	struct ws_maps maps;
	bool maps_reloaded;        /* this tick */
	/* per tick */
	uint64_t current;          /* the descriptor's current task, 0: none */
	uint8_t *buf;              /* one task struct */
	uint8_t frame[8192 + 16];  /* registers saved around a stack pointer */
	struct arena strings;
	struct visited visited;
	struct worker_info *workers;
	size_t nworkers, workers_capacity;
	struct { uint64_t address; char *text; } *cache;
	size_t cache_n, cache_capacity;
	char idle_names[64][24];
	/* array registries: the slots of a tick, struct copies */
	struct slot *slots;
	size_t slots_capacity;
	uint64_t *pointers;        /* a pointer array's slots, as read */
	size_t pointers_capacity;
	uint64_t table[MAX_ROOTS]; /* each root's array, as last read */
	uint8_t *bulk;
	size_t bulk_capacity;
};

/* ---- memory ---- */

static struct ws_error *mem_read(struct state *s, uint64_t address, void *buf,
				 size_t size)
{
	return ws_memory_read(&s->reader, address, buf, size);
}

/* Batched reads: process_vm_readv for a process, else one by one. */
static void mem_readv(struct state *s, struct ws_remote_range *ranges, size_t n)
{
	if (s->pid) {
		ws_remote_readv(s->pid, ranges, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct ws_error *err = mem_read(s, ranges[i].address,
						ranges[i].buf, ranges[i].size);
		ranges[i].done = err ? 0 : ranges[i].size;
		ws_error_destroy(err);
	}
}

static bool readable(struct state *s, uint64_t address)
{
	uint8_t byte;
	struct ws_error *err = mem_read(s, address, &byte, 1);
	ws_error_destroy(err);
	return err == NULL;
}

/* A path's value in the task at `address`, whose copy is `tb`. */
static struct ws_error *get(struct state *s, const struct ws_dwpath *path,
			    uint64_t address, const uint8_t *tb, uint64_t *ret)
{
	return ws_dwtype_path_uint(s->prog, path, address, tb,
				   (size_t)s->d.task_size, ret);
}

static struct ws_error *gref_address(struct state *s, const struct gref *g,
				     uint64_t *ret)
{
	if (g->path.nhops == 0) {
		*ret = g->var.address;
		return NULL;
	}
	return ws_dwtype_path_locate(s->prog, &g->path, g->var.address, NULL, 0,
				     ret);
}

static struct ws_error *gref_uint(struct state *s, const struct gref *g,
				  uint64_t *ret)
{
	if (g->path.nhops == 0)
		return ws_dwtype_read_uint(&g->var, ret);
	return ws_dwtype_path_uint(s->prog, &g->path, g->var.address, NULL, 0,
				   ret);
}

/* ---- warnings ---- */

static void warn_once(struct state *s, enum warning kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void warn_once(struct state *s, enum warning kind, const char *fmt, ...)
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

/* ---- per tick: strings, the visited set ---- */

static void arena_reset(struct arena *a)
{
	a->current = 0;
	a->used = 0;
}

static const char *keep_string(struct state *s, const char *text, size_t len)
{
	struct arena *a = &s->strings;
	if (len >= ARENA_BLOCK)
		len = ARENA_BLOCK - 1;
	if (a->nblocks && a->used + len + 1 > ARENA_BLOCK) {
		a->current++;
		a->used = 0;
	}
	if (a->current >= a->nblocks) {
		char *block = malloc(ARENA_BLOCK);
		if (!block || !ws_grow((void **)&a->block, &a->capacity,
				       a->nblocks + 1, sizeof(*a->block))) {
			free(block);
			return NULL;
		}
		a->block[a->nblocks++] = block;
		a->current = a->nblocks - 1;
		a->used = 0;
	}
	char *out = a->block[a->current] + a->used;
	memcpy(out, text, len);
	out[len] = '\0';
	a->used += len + 1;
	return out;
}

static void visited_start(struct visited *v)
{
	if (++v->tick == 0) { /* wrapped: forget every stamp */
		if (v->stamp)
			memset(v->stamp, 0, (v->mask + 1) * sizeof(*v->stamp));
		v->tick = 1;
	}
	v->count = 0;
}

/* The slot of `key` this tick, or the free slot where it goes. */
static size_t visited_find(const struct visited *v, uint64_t key)
{
	for (size_t i = ws_hash_u64(key) & v->mask;; i = (i + 1) & v->mask)
		if (v->stamp[i] != v->tick || v->key[i] == key)
			return i;
}

static bool visited_grow(struct visited *v)
{
	size_t cap = v->key ? (v->mask + 1) * 2 : 1024;
	struct visited n = {
		.key = malloc(cap * sizeof(*n.key)),
		.stamp = calloc(cap, sizeof(*n.stamp)),
		.roots = malloc(cap * sizeof(*n.roots)),
		.mask = cap - 1, .tick = v->tick, .count = v->count,
	};
	if (!n.key || !n.stamp || !n.roots) {
		free(n.key);
		free(n.stamp);
		free(n.roots);
		return false;
	}
	for (size_t i = 0; v->key && i <= v->mask; i++) {
		if (v->stamp[i] != v->tick)
			continue;
		size_t j = visited_find(&n, v->key[i]);
		n.key[j] = v->key[i];
		n.stamp[j] = n.tick;
		n.roots[j] = v->roots[i];
	}
	free(v->key);
	free(v->stamp);
	free(v->roots);
	*v = n;
	return true;
}

/* Marks `key` reached by root `root` (MAX_ROOTS: the current task); *was
 * gets the roots that had reached it before. False: out of memory. */
static bool visited_mark(struct visited *v, uint64_t key, unsigned root,
			 uint32_t *was)
{
	if ((!v->key || (v->count + 1) * 2 > v->mask + 1) && !visited_grow(v))
		return false;
	size_t i = visited_find(v, key);
	if (v->stamp[i] != v->tick) {
		v->stamp[i] = v->tick;
		v->key[i] = key;
		v->roots[i] = 0;
		v->count++;
	}
	*was = v->roots[i];
	v->roots[i] |= 1u << (root < MAX_ROOTS ? root : MAX_ROOTS);
	return true;
}

static bool visited_has(const struct visited *v, uint64_t key)
{
	return v->key && v->stamp[visited_find(v, key)] == v->tick;
}

/* ---- strings from the target ---- */

static const char *cache_find(struct state *s, uint64_t address)
{
	for (size_t i = 0; i < s->cache_n; i++)
		if (s->cache[i].address == address)
			return s->cache[i].text;
	return NULL;
}

static const char *cache_add(struct state *s, uint64_t address,
			     const char *text, size_t len)
{
	if (!ws_grow((void **)&s->cache, &s->cache_capacity, s->cache_n + 1,
		     sizeof(*s->cache)))
		return NULL;
	char *copy = strndup(text, len);
	if (!copy)
		return NULL;
	s->cache[s->cache_n].address = address;
	s->cache[s->cache_n].text = copy;
	s->cache_n++;
	return copy;
}

static void cache_trim(struct state *s)
{
	if (s->cache_n <= CACHE_MAX)
		return;
	for (size_t i = 0; i < s->cache_n; i++)
		free(s->cache[i].text);
	s->cache_n = 0;
}

/* A NUL-terminated string at `address` (up to TEXT_MAX - 1 bytes). */
static const char *target_cstring(struct state *s, uint64_t address)
{
	if (!address)
		return NULL;
	const char *hit = cache_find(s, address);
	if (hit)
		return hit;
	char text[TEXT_MAX];
	struct ws_remote_range r = {.address = address, .buf = text,
				    .size = sizeof(text) - 1};
	/* Up to a NUL in one read; a string near the end of a mapping
	 * reads short. */
	mem_readv(s, &r, 1);
	if (r.done == 0) {
		r.size = 8;
		mem_readv(s, &r, 1);
	}
	return cache_add(s, address, text, strnlen(text, r.done));
}

/* A length-prefixed string object at `address` (Crystal's String). */
static const char *target_prefixed(struct state *s, uint64_t address)
{
	if (!address)
		return NULL;
	const char *hit = cache_find(s, address);
	if (hit)
		return hit;
	const struct ws_dwfield *lf = ws_dwpath_last(&s->d.name_length);
	uint8_t lb[16];
	uint64_t len;
	struct ws_error *err = lf->size <= sizeof(lb) ? mem_read(s, address + lf->offset, lb, (size_t)lf->size)
						      : &ws_error_nomem;
	struct ws_dwfield at = *lf;
	at.offset = 0;
	if (err || ws_dwtype_field_uint(&at, lb, (size_t)lf->size, &len)) {
		ws_error_destroy(err);
		return NULL;
	}
	char text[TEXT_MAX];
	size_t n = len < sizeof(text) ? (size_t)len : sizeof(text) - 1;
	struct ws_remote_range r = {
		.address = address + ws_dwpath_last(&s->d.name_bytes)->offset,
		.buf = text, .size = n,
	};
	if (n)
		mem_readv(s, &r, 1);
	return cache_add(s, address, text, r.done);
}

/* A char array or char pointer member `path` of the task. */
static const char *task_string(struct state *s, const struct ws_dwpath *path,
			       uint64_t address, const uint8_t *tb)
{
	const struct ws_dwfield *f = ws_dwpath_last(path);
	uint64_t v;
	if (f->kind == WS_DWTYPE_ARRAY) {
		size_t n = f->size < TEXT_MAX - 1 ? (size_t)f->size : TEXT_MAX - 1;
		if (path->nhops == 1) {
			const char *raw = (const char *)tb + f->offset;
			return keep_string(s, raw, strnlen(raw, n));
		}
		char text[TEXT_MAX];
		uint64_t at;
		struct ws_error *err = ws_dwtype_path_locate(s->prog, path,
							     address, tb,
							     (size_t)s->d.task_size,
							     &at);
		if (!err)
			err = mem_read(s, at, text, n);
		if (err) {
			ws_error_destroy(err);
			return NULL;
		}
		return keep_string(s, text, strnlen(text, n));
	}
	struct ws_error *err = get(s, path, address, tb, &v);
	if (err) {
		ws_error_destroy(err);
		return NULL;
	}
	return target_cstring(s, v);
}

/* Wait-reason bits as "time|msg", in the order of their values. */
static const char *reason_bits(struct state *s, uint64_t v)
{
	char text[256];
	size_t used = 0;
	text[0] = '\0';
	for (int bit = 0; bit < 64 && v; bit++) {
		uint64_t b = UINT64_C(1) << bit;
		if (!(v & b))
			continue;
		v &= ~b;
		const char *name = ws_descriptor_map_lookup(&s->d.reasons, (int64_t)b);
		char hex[24];
		if (!name) {
			snprintf(hex, sizeof(hex), "0x%" PRIx64, b);
			name = hex;
		}
		int w = snprintf(text + used, sizeof(text) - used, "%s%s",
				 used ? "|" : "", name);
		if (w < 0 || (size_t)w >= sizeof(text) - used)
			break;
		used += (size_t)w;
	}
	return used ? keep_string(s, text, used) : NULL;
}

/* ---- workers and the current task ---- */

static struct ws_error *read_workers(struct state *s)
{
	struct descriptor *d = &s->d;
	s->nworkers = 0;
	if (!d->has_workers)
		return NULL;
	uint64_t n = d->workers.size / d->worker_size, base;
	struct ws_error *err = gref_address(s, &d->workers, &base);
	if (err)
		return err;
	if (d->has_worker_count) {
		uint64_t count;
		if ((err = gref_uint(s, &d->worker_count, &count)))
			return err;
		if (count < n)
			n = count;
	}
	size_t bytes = (size_t)(n * d->worker_size);
	uint8_t *buf = malloc(bytes ? bytes : 1);
	if (!buf)
		return &ws_error_nomem;
	err = bytes ? mem_read(s, base, buf, bytes) : NULL;
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
static const struct worker_info *running_worker(const struct state *s,
						uint64_t address)
{
	for (size_t i = 0; i < s->nworkers; i++)
		if (s->workers[i].current == address)
			return &s->workers[i];
	return NULL;
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
		struct ws_error *err = mem_read(s, th->regs.fs_base + 0x30,
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
	if (d->has_current && (err = gref_uint(s, &d->current, &s->current))) {
		if (context->live)
			return err;
		warn_once(s, WARN_CURRENT, "registry.current unreadable: %s",
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
		struct ws_error *err = get(s, &rs->member, address, tb, &v);
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
				err = v ? mem_read(s, v + (uint64_t)d->frame_lo,
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
	struct ws_error *err = get(s, &d->stack_a, address, tb, &a);
	if (!err)
		err = get(s, &d->stack_b, address, tb, &b);
	ws_error_destroy(err);
	if (err)
		return;
	lo = a;
	hi = d->stack_kind == STACK_BASE_SIZE ? a + b : b;
	if (lo && hi > lo) {
		task->stack_lo = lo;
		task->stack_hi = hi;
	}
}

/* Fills `task` (zeroed) from the copy of its struct; false when the struct
 * holds no task (done, or no readable state). */
static bool decode_task(struct state *s, struct ws_target *target,
			const struct ws_read_context *context, uint64_t address,
			const uint8_t *tb, struct ws_task *task)
{
	struct descriptor *d = &s->d;
	uint64_t v;
	struct ws_error *err = get(s, &d->state, address, tb, &v);
	if (err) {
		ws_error_destroy(err);
		return false;
	}
	const char *state_name = ws_descriptor_map_lookup(&d->states, (int64_t)v);
	if (state_name && strcmp(state_name, "done") == 0)
		return false;

	task->address = address;
	task->id = address;
	if (d->has_id && !(err = get(s, &d->id, address, tb, &v)))
		task->id = v;
	ws_error_destroy(err);
	if (d->has_switches && !(err = get(s, &d->switches, address, tb, &v)))
		task->version = v;
	ws_error_destroy(err);
	if (d->name_kind == NAME_CHARS) {
		task->name = task_string(s, &d->name_path, address, tb);
	} else if (d->name_kind == NAME_LENGTH_PREFIXED &&
		   !(err = get(s, &d->name_path, address, tb, &v))) {
		task->name = target_prefixed(s, v);
	}
	ws_error_destroy(err);
	if (!state_name) {
		task->state = WS_STATE_UNKNOWN;
		task->error = "unknown state value";
		task->start = WS_START_NONE;
		return true;
	}
	bool not_started = strcmp(state_name, "new") == 0;
	task->state = state_from_name(state_name);
	if (task->state == WS_STATE_WAITING && d->reason_kind != REASON_NONE) {
		if (d->reason_kind == REASON_STRING) {
			task->wait_reason = task_string(s, &d->reason, address, tb);
		} else if (!(err = get(s, &d->reason, address, tb, &v))) {
			task->wait_reason = d->reason_kind == REASON_BITS
				? reason_bits(s, v)
				: ws_descriptor_map_lookup(&d->reasons, (int64_t)v);
		}
		ws_error_destroy(err);
	}
	decode_stack(s, address, tb, task);
	if (d->has_entry && !(err = get(s, &d->entry, address, tb, &v)))
		task->entry_pc = v;
	ws_error_destroy(err);

	/* A task on a CPU (ws_task_start_on_cpu: its thread's live
	 * registers while that thread is on the task's stack, else its saved
	 * context). A worker's `current`, or the registry's, is on the CPU
	 * whatever the state says: runtimes set the state before switching
	 * out, and the context is saved only by the switch. */
	pid_t tid = 0;
	bool candidate = task->state == WS_STATE_RUNNING;
	if (d->has_workers) {
		const struct worker_info *cpu = running_worker(s, address);
		uint64_t worker = 0;
		if (!cpu && candidate && d->has_worker &&
		    (err = get(s, &d->worker, address, tb, &worker)))
			ws_error_destroy(err);
		tid = cpu ? cpu->tid : worker_tid(s, worker, address);
		candidate |= cpu != NULL;
	} else if (d->single_thread) {
		candidate |= d->has_current && address == s->current;
		tid = target->pid;
	}
	if (candidate && !not_started) {
		enum ws_on_cpu where = on_cpu(s, task, target, tid, context->live);
		if (where != WS_ON_CPU_SAVED) {
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
static struct ws_error *add_task(struct state *s, struct ws_target *target,
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

/* ---- walking ---- */

/* A registry that does not hold together. Read while the target runs, it
 * may just have changed under the walk: an error, so the tick reads it
 * again with every thread stopped. Stopped, it is what it is: a failed
 * sample standing where the walk broke off, and a warning once. */
static struct ws_error *walk_problem(struct state *s,
				     const struct ws_read_context *context,
				     const struct root *r, enum warning kind,
				     const char *what, uint64_t at,
				     struct ws_task_list *out)
{
	if (context->live)
		return ws_error_create(WS_ERR_OTHER, "%s: %s", r->where, what);
	warn_once(s, kind, "$.%s: %s (at 0x%" PRIx64 "); later ticks say so as failed samples",
		  r->where, what, at);
	struct ws_task *task = ws_task_list_add(out);
	if (!task)
		return &ws_error_nomem;
	task->id = at;
	task->state = WS_STATE_UNKNOWN;
	task->start = WS_START_NONE;
	task->error = what;
	return NULL;
}

/* How many tasks a walk may reach this tick. */
static uint64_t walk_bound(const struct state *s, const struct root *r,
			   uint64_t count, size_t listed)
{
	uint64_t max = s->d.max_tasks > listed ? s->d.max_tasks - listed : 0;
	/* A list caught mid-update may be one longer than its count. */
	if (r->has_count && count < UINT64_MAX - 64 && count + 64 < max)
		return count + 64;
	return max;
}

static struct ws_error *walk_list(struct state *s, struct ws_target *target,
				  const struct ws_read_context *context,
				  const struct root *r, unsigned ridx,
				  struct ws_task_list *out)
{
	struct descriptor *d = &s->d;
	size_t size = (size_t)d->task_size;
	uint64_t raw, stop = 0, count = 0;
	struct ws_error *err;
	if (r->has_count && (err = gref_uint(s, &r->count, &count))) {
		if (context->live)
			return err;
		ws_error_destroy(err);
		count = 0;
	}
	if (r->layout == LAYOUT_SENTINEL_RING) {
		if ((err = gref_address(s, &r->head, &stop)) ||
		    (err = ws_dwtype_path_uint(s->prog, &r->header_next, stop,
					       NULL, 0, &raw)))
			return err;
	} else if ((err = gref_uint(s, &r->head, &raw))) {
		return err;
	}
	uint64_t first = raw, bound = walk_bound(s, r, count, out->n);
	const struct ws_dwpath *next = &r->next;
	for (uint64_t n = 0; raw && raw != stop; n++) {
		if (n > 0 && r->layout == LAYOUT_RING && raw == first)
			break;
		if (n == bound)
			return walk_problem(s, context, r, WARN_LONG,
					    r->has_count ? "registry list longer than its count"
							 : "registry list longer than registry.max",
					    raw, out);
		uint64_t task = raw - r->link;
		uint32_t was;
		if (raw < r->link)
			return walk_problem(s, context, r, WARN_CUT,
					    "registry list cut short: wild next pointer",
					    raw, out);
		if (!visited_mark(&s->visited, task, ridx, &was))
			return &ws_error_nomem;
		if (was & (1u << ridx))
			return walk_problem(s, context, r, WARN_CYCLE,
					    "registry list has a cycle", raw, out);
		if ((err = mem_read(s, task, s->buf, size))) {
			ws_error_destroy(err);
			return walk_problem(s, context, r, WARN_CUT,
					    "registry list cut short: next pointer unreadable",
					    raw, out);
		}
		/* Listed once, whichever root reached it first. */
		bool added;
		if (!was && (err = add_task(s, target, context, task, s->buf,
					    out, &added)))
			return err;
		uint64_t to = 0;
		err = ws_dwtype_path_uint(s->prog, next, raw, s->buf + r->link,
					  size - (size_t)r->link, &to);
		if (err) {
			ws_error_destroy(err);
			return walk_problem(s, context, r, WARN_CUT,
					    "registry list cut short: next pointer unreadable",
					    raw, out);
		}
		raw = to;
		if (!raw && r->layout != LAYOUT_LIST)
			return walk_problem(s, context, r, WARN_CUT,
					    "registry ring broken: null next pointer",
					    task, out);
	}
	return NULL;
}

/* The largest k <= n such that element k - 1 of `elem` bytes from base is
 * readable, assuming readable elements come first (a count larger than
 * the memory behind it). One probe when all are; else a binary search. */
static uint64_t clamp_readable(struct state *s, uint64_t base, uint64_t elem,
			       uint64_t n)
{
	uint64_t lo = 0, hi = n;
	if (n == 0 || readable(s, base + n * elem - 1))
		return n;
	while (lo + 1 < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (readable(s, base + mid * elem - 1))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Array registries can be sampled without reading every task: pick a
 * uniform random subset of the slots (the budgets' `limit`), each task
 * found standing for slots/picked, and read the picked task structs with
 * batched reads. */
static struct ws_error *walk_array(struct state *s, struct ws_target *target,
				   const struct ws_read_context *context,
				   const struct root *r, unsigned ridx,
				   struct ws_task_list *out)
{
	struct descriptor *d = &s->d;
	size_t size = (size_t)d->task_size;
	bool pointers = r->layout == LAYOUT_POINTER_ARRAY;
	uint64_t elem = pointers ? 8 : size, base, n;
	struct ws_error *err;
	if (r->head.kind == WS_DWTYPE_POINTER)
		err = gref_uint(s, &r->head, &base);
	else
		err = gref_address(s, &r->head, &base);
	if (err)
		return err;
	s->table[ridx] = base;
	if (r->has_count) {
		if ((err = gref_uint(s, &r->count, &n)))
			return err;
	} else {
		n = r->head.size / elem;
	}
	/* Counts the target holds are clamped, never trusted: to the
	 * descriptor's max, then to the memory readable behind the base. */
	uint64_t max = d->max_tasks > out->n ? d->max_tasks - out->n : 0;
	if (n > max) {
		if (!context->live)
			warn_once(s, WARN_LONG, "$.%s: count %" PRIu64 " over registry.max (%" PRIu64 "): reading %" PRIu64,
				  r->where, n, d->max_tasks, max);
		n = max;
	}
	uint64_t fit = base && n <= UINT64_MAX / elem && base + n * elem >= base
			       ? clamp_readable(s, base, elem, n) : 0;
	if (fit < n) {
		if (context->live)
			return ws_error_create(WS_ERR_OTHER, "%s: count over readable memory", r->where);
		warn_once(s, WARN_CLAMPED, "$.%s: count %" PRIu64 " exceeds the memory readable at 0x%" PRIx64 ": reading %" PRIu64,
			  r->where, n, base, fit);
		n = fit;
	}
	if (!ws_grow((void **)&s->slots, &s->slots_capacity, (size_t)n,
		     sizeof(*s->slots)))
		return &ws_error_nomem;
	if (!pointers) {
		for (uint64_t i = 0; i < n; i++)
			s->slots[i] = (struct slot){base + i * size, 0};
	} else {
		if (!ws_grow((void **)&s->pointers, &s->pointers_capacity,
			     (size_t)n, sizeof(*s->pointers)))
			return &ws_error_nomem;
		if (n && (err = mem_read(s, base, s->pointers,
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
			uint32_t was;
			if (!s->slots[i].address)
				continue; /* an empty slot */
			if (!visited_mark(&s->visited, s->slots[i].address,
					  ridx, &was))
				return &ws_error_nomem;
			if (was)
				continue; /* listed already, or twice here */
			ranges[k] = (struct ws_remote_range){
				.address = s->slots[i].address,
				.buf = s->bulk + i * size,
				.size = size,
			};
			index[k++] = (size_t)i;
		}
		mem_readv(s, ranges, k);
		for (size_t j = 0; j < k; j++) {
			const struct slot *slot = &s->slots[index[j]];
			/* Live, a slot that cannot be read is a task caught
			 * being freed; stopped, a wild pointer. */
			if (ranges[j].done != size) {
				if (!context->live &&
				    (err = walk_problem(s, context, r, WARN_UNREADABLE,
							"task struct unreadable",
							slot->address, out)))
					return err;
				continue;
			}
			bool added;
			err = add_task(s, target, context, slot->address,
				       s->bulk + index[j] * size, out, &added);
			if (err)
				return err;
			if (added) {
				out->tasks[out->n - 1].scale = scale;
				out->tasks[out->n - 1].slot = slot->slot;
			}
		}
	}
	return NULL;
}

/* The registry's current task, when no root reached it (Pth's
 * __pth_current is in no queue while it runs). */
static struct ws_error *add_current(struct state *s, struct ws_target *target,
				    const struct ws_read_context *context,
				    struct ws_task_list *out)
{
	if (!s->current || visited_has(&s->visited, s->current))
		return NULL;
	uint32_t was;
	if (!visited_mark(&s->visited, s->current, MAX_ROOTS, &was))
		return &ws_error_nomem;
	struct ws_error *err = mem_read(s, s->current, s->buf,
					(size_t)s->d.task_size);
	if (err) {
		if (context->live)
			return err;
		warn_once(s, WARN_CURRENT, "registry.current points at unreadable memory (0x%" PRIx64 ")",
			  s->current);
		ws_error_destroy(err);
		return NULL;
	}
	bool added;
	return add_task(s, target, context, s->current, s->buf, out, &added);
}

static void add_idle_workers(struct state *s, struct ws_target *target,
			     struct ws_task_list *out)
{
	for (size_t i = 0; i < s->nworkers && i < 64; i++) {
		const struct worker_info *w = &s->workers[i];
		if (w->current)
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
	arena_reset(&s->strings);
	cache_trim(s);
	visited_start(&s->visited);
	s->maps_reloaded = false;
	struct ws_error *err = read_cpus(s, target, context);
	if (err)
		return err;
	if (d->uses_guard && !s->guard_known)
		warn_once(s, WARN_GUARD, "the pointer guard of mangled registers is unknown: no thread's registers were read");
	/* (A list is walked whole and the sampler subsamples; arrays are
	 * sampled by walk_array.) */
	for (unsigned i = 0; i < d->nroots && !err; i++) {
		const struct root *r = &d->roots[i];
		if (r->layout == LAYOUT_ARRAY || r->layout == LAYOUT_POINTER_ARRAY)
			err = walk_array(s, target, context, r, i, out);
		else
			err = walk_list(s, target, context, r, i, out);
	}
	if (!err)
		err = add_current(s, target, context, out);
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
	struct ws_error *err = read_cpus(s, target, context);
	if (err)
		return err;
	/* A table that moved may have been freed: its slots prove nothing. */
	bool moved = false;
	for (unsigned i = 0; i < d->nroots; i++) {
		const struct root *r = &d->roots[i];
		uint64_t table;
		if (r->layout != LAYOUT_POINTER_ARRAY || r->head.kind != WS_DWTYPE_POINTER)
			continue;
		if ((err = gref_uint(s, &r->head, &table)))
			return err;
		moved |= table != s->table[i];
	}
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
		mem_readv(s, ranges, k);
		k = 0;
		for (size_t i = first; i < n && i < first + BATCH; i++) {
			if (!tasks[i].address) {
				/* An idle worker or a failed sample: no
				 * stack to tear. */
				result[i] = WS_REREAD_SAME;
				continue;
			}
			bool ok = ranges[k++].done == size;
			if (tasks[i].slot)
				ok = ranges[k++].done == 8 && ok &&
				     s->pointers[i] == tasks[i].address && !moved;
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
		for (size_t i = 0; i < s->strings.nblocks; i++)
			free(s->strings.block[i]);
		free(s->strings.block);
		free(s->visited.key);
		free(s->visited.stamp);
		free(s->visited.roots);
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
	/* After "(comm)", fields 3 on; startstack is field 28. */
	char *p = strrchr(text, ')');
	for (int field = 2; p && field < 28; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
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
	s->reader = reader ? *reader : ws_remote_reader(&s->pid);
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
	s->caps = (struct ws_runtime_caps){
		.name = s->d.name,
		.root_function = s->d.root_function,
		.root_file = s->d.root_file,
		.tick = live ? WS_TICK_LIVE : WS_TICK_STOPPED,
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
