/*
 * Taking the per-tick copies of registers and stack tops (see
 * ws_snapshot.h). The stack ranges of all tasks are read in one batched
 * ws_remote_readv, which is the bulk of the target's pause after the
 * ptrace stop itself.
 */
#include "ws_snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "ws_grow.h"
#include "ws_hash.h"
#include "ws_remote_memory.h"
#include "ws_target.h"

void ws_snapshot_set_init(struct ws_snapshot_set *set, pid_t pid)
{
	memset(set, 0, sizeof(*set));
	ws_maps_init(&set->maps, pid);
}

void ws_snapshot_set_deinit(struct ws_snapshot_set *set)
{
	ws_free_large(set->snaps);
	ws_free_large(set->arena);
	for (size_t i = 0; i < set->nchunks; i++)
		ws_free_large(set->chunks[i].bytes);
	free(set->chunks);
	ws_maps_deinit(&set->maps);
	memset(set, 0, sizeof(*set));
}

static void regs_from_thread(struct ws_regs *r, const struct ws_thread *th)
{
	const struct user_regs_struct *u = &th->regs;
	r->value[0] = u->rax;
	r->value[1] = u->rdx;
	r->value[2] = u->rcx;
	r->value[3] = u->rbx;
	r->value[4] = u->rsi;
	r->value[5] = u->rdi;
	r->value[6] = u->rbp;
	r->value[7] = u->rsp;
	r->value[8] = u->r8;
	r->value[9] = u->r9;
	r->value[10] = u->r10;
	r->value[11] = u->r11;
	r->value[12] = u->r12;
	r->value[13] = u->r13;
	r->value[14] = u->r14;
	r->value[15] = u->r15;
	r->value[16] = u->rip;
	r->valid = (1u << WS_NREGS) - 1;
}

void ws_snapshot_set_clear(struct ws_snapshot_set *set)
{
	set->n = 0;
	for (size_t i = 0; i < set->nchunks; i++)
		set->chunks[i].used = 0;
	set->chunk = 0;
}

/* `size` bytes of the set's chunks for one copy, or NULL. One buffer per
 * thread would cost a fault on each fresh page of each thread's first
 * copy and keep up to --max-stack per thread for the whole recording
 * (4,000 threads: 500 MB of address space). A chunk fills one huge page
 * (ws_alloc_large; the rest of the page is the large array's header). */
static uint8_t *chunk_alloc(struct ws_snapshot_set *set, size_t size)
{
	enum { CHUNK = (2 << 20) - 4096 };
	for (; set->chunk < set->nchunks; set->chunk++) {
		struct ws_snapshot_chunk *c = &set->chunks[set->chunk];
		if (c->size - c->used >= size) {
			c->used += size;
			return c->bytes + c->used - size;
		}
	}
	if (!ws_grow((void **)&set->chunks, &set->chunks_cap, set->nchunks + 1,
		     sizeof(*set->chunks)))
		return NULL;
	size_t want = size > CHUNK ? size : CHUNK;
	uint8_t *bytes = ws_alloc_large(want);
	if (!bytes)
		return NULL;
	set->chunks[set->nchunks++] = (struct ws_snapshot_chunk){
		.bytes = bytes, .size = want, .used = size};
	set->chunk = set->nchunks - 1;
	return bytes;
}

/* Finds the end of the stack holding sp for a thread, caching the mapping
 * in the thread; reloads the map at most once per tick. */
static uint64_t thread_stack_end(struct ws_snapshot_set *set,
				 struct ws_thread *th, uint64_t sp,
				 bool *reloaded)
{
	if (sp >= th->stack_lo && sp < th->stack_hi)
		return th->stack_hi;
	const struct ws_mapping *m = ws_maps_find(&set->maps, sp);
	if (!m && !*reloaded) {
		*reloaded = true;
		if (ws_maps_reload(&set->maps) == NULL)
			m = ws_maps_find(&set->maps, sp);
	}
	if (!m)
		return 0;
	th->stack_lo = m->start;
	th->stack_hi = m->end;
	return m->end;
}

/* What one range of a batch reads. */
struct range_owner {
	size_t snap;
	const struct ws_task *guard;   /* a guard read, or NULL: the stack */
};

/* Reads a batch; a short read ends a copy where readable memory ends, and
 * the unwind of that task stops there. A guard read short or not hashing
 * as listed fails its snapshot's guard. */
static void read_ranges(struct ws_snapshot_set *set, pid_t pid,
			struct ws_remote_range *ranges,
			const struct range_owner *owner, size_t n)
{
	if (n == 0)
		return;
	ws_remote_readv(pid, ranges, n);
	for (size_t r = 0; r < n; r++) {
		struct ws_snapshot *snap = &set->snaps[owner[r].snap];
		const struct ws_task *guard = owner[r].guard;
		if (guard) {
			if (ranges[r].done != ranges[r].size ||
			    ws_hash_bytes(ranges[r].buf, ranges[r].size, 0) !=
			    guard->guard_hash)
				snap->guard_failed = true;
			continue;
		}
		if (ranges[r].done < snap->stack_size)
			snap->truncated = false;
		snap->stack_size = ranges[r].done;
	}
}

/* Fills snap's registers and the range its copy needs (stack_start,
 * stack_size; stack not yet set), or its error. `th`: the thread of a
 * WS_START_THREAD task, NULL if unknown. */
static void plan(struct ws_snapshot_set *set, struct ws_snapshot *snap,
		 const struct ws_task *task, struct ws_thread *th,
		 size_t max_stack, bool *reloaded)
{
	memset(snap, 0, sizeof(*snap));
	snap->stack_lo = task->stack_lo;
	snap->stack_hi = task->stack_hi;
	uint64_t end = task->stack_hi;
	if (task->start == WS_START_THREAD) {
		if (!th || !th->regs_valid) {
			snap->error = task->error ? task->error
						  : "thread registers unavailable";
			return;
		}
		regs_from_thread(&snap->regs, th);
		snap->pc_exact = true;
		if (!end)
			end = thread_stack_end(set, th,
					       snap->regs.value[WS_REG_RSP],
					       reloaded);
	} else if (task->start == WS_START_SAVED) {
		snap->regs = task->regs;
		snap->pc_exact = task->pc_exact;
	} else {
		snap->error = task->error ? task->error : "no stack";
		return;
	}
	if (!(snap->regs.valid & (1u << WS_REG_RSP)) ||
	    !(snap->regs.valid & (1u << WS_REG_RIP))) {
		snap->error = "no stack pointer or pc";
		return;
	}
	uint64_t sp = snap->regs.value[WS_REG_RSP];
	size_t size = max_stack;
	if (end > sp && end - sp < size)
		size = (size_t)(end - sp);
	else if (end > sp)
		snap->truncated = true;
	else if (end != 0 && end <= sp) {
		snap->error = "stack pointer outside the task's stack";
		return;
	}
	snap->stack_start = sp;
	snap->stack_size = size;
}

struct ws_error *ws_snapshot_take(struct ws_snapshot_set *set,
				  struct ws_target *target,
				  const struct ws_task_list *tasks,
				  size_t max_stack)
{
	return ws_snapshot_take_first(set, target, tasks, tasks->n, max_stack);
}

struct ws_error *ws_snapshot_take_first(struct ws_snapshot_set *set,
					struct ws_target *target,
					const struct ws_task_list *tasks,
					size_t ncopy, size_t max_stack)
{
	if (!ws_grow_large((void **)&set->snaps, &set->capacity, tasks->n,
			   sizeof(*set->snaps)))
		return &ws_error_nomem;
	set->n = tasks->n;

	/* First pass: registers and the range each copy needs. */
	size_t total = 0;
	bool reloaded = false;
	for (size_t i = 0; i < tasks->n; i++) {
		const struct ws_task *task = &tasks->tasks[i];
		if (i >= ncopy && task->start != WS_START_NONE) {
			memset(&set->snaps[i], 0, sizeof(set->snaps[i]));
			set->snaps[i].error = task->error ? task->error
							  : "not copied";
			continue;
		}
		struct ws_thread *th = task->start == WS_START_THREAD
			? ws_target_find_thread(target, task->thread) : NULL;
		plan(set, &set->snaps[i], task, th, max_stack, &reloaded);
		total += set->snaps[i].stack_size;
		if (set->snaps[i].stack_size)
			total += 2 * (size_t)task->guard_size;
	}

	if (!ws_grow_large((void **)&set->arena, &set->arena_size, total, 1))
		return &ws_error_nomem;

	/* Second pass: batched reads, up to 256 ranges per call; a guarded
	 * task's stack between two reads of its guard, in the same call. */
	enum { BATCH = 256 };
	struct ws_remote_range ranges[BATCH];
	struct range_owner owner[BATCH];
	size_t nranges = 0, offset = 0;
	for (size_t i = 0; i < tasks->n; i++) {
		struct ws_snapshot *snap = &set->snaps[i];
		const struct ws_task *task = &tasks->tasks[i];
		if (snap->error || !snap->stack_size)
			continue;
		if (nranges + 3 > BATCH) {
			read_ranges(set, target->pid, ranges, owner, nranges);
			nranges = 0;
		}
		for (int part = 0; part < 3; part++) {
			bool is_guard = part != 1;
			if (is_guard && !task->guard_size)
				continue;
			size_t size = is_guard ? task->guard_size : snap->stack_size;
			if (!is_guard)
				snap->stack = set->arena + offset;
			ranges[nranges] = (struct ws_remote_range){
				.address = is_guard ? task->guard_address
						    : snap->stack_start,
				.buf = set->arena + offset,
				.size = size,
			};
			owner[nranges++] = (struct range_owner){
				i, is_guard ? task : NULL };
			offset += size;
		}
	}
	read_ranges(set, target->pid, ranges, owner, nranges);
	return NULL;
}

struct ws_error *ws_snapshot_take_thread(struct ws_snapshot_set *set,
					 size_t index, struct ws_thread *th,
					 const struct ws_task *task,
					 size_t max_stack)
{
	if (!ws_grow_large((void **)&set->snaps, &set->capacity, index + 1,
			   sizeof(*set->snaps)))
		return &ws_error_nomem;
	if (index >= set->n)
		set->n = index + 1;
	struct ws_snapshot *snap = &set->snaps[index];
	bool reloaded = false;
	plan(set, snap, task, th, max_stack, &reloaded);
	if (snap->error)
		return NULL;
	uint64_t sp = snap->stack_start;
	size_t size = snap->stack_size;
	uint8_t *copy = chunk_alloc(set, size ? size : 1);
	if (!copy)
		return &ws_error_nomem;
	struct ws_remote_range r = {.address = sp, .buf = copy, .size = size};
	ws_remote_readv(set->maps.pid, &r, 1);
	if (r.done < size)
		snap->truncated = false;
	snap->stack = copy;
	snap->stack_size = r.done;
	return NULL;
}
