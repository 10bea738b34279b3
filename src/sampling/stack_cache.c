/*
 * Per-task memo of unwinds (see ws_stack_cache.h).
 */
#include "ws_stack_cache.h"

#include <stdlib.h>
#include <string.h>

#include "ws_hash.h"

/* A slot: its keys and where its frames are. The lookups of a tick touch
 * only these (48 bytes a slot; 4,096 slots in 192 KB). */
struct tag {
	uint64_t task_id;
	uint64_t key;              /* 0: empty */
	uint64_t context;          /* 0: none */
	uint64_t at;               /* its first frame's index in the ring */
	const char *stop_reason;
	uint32_t n;
};

/* The frames of every slot live in one ring, each unwind's frames side by
 * side, a frame in 8 bytes (its pc, with bit 63 for "is a return
 * address"): memory in proportion to the frames stored, not to the
 * deepest stack kept, which fresh pages make dear where a page fault
 * costs 15 us (measured on these machines: a 1 KB slot a task had cost
 * a fault for every 4 tasks sampled first). An unwind is lost once the
 * ring has passed over it: it is then simply unwound again. */
#define RETURN_ADDRESS_BIT (UINT64_C(1) << 63)
enum { RING_FRAMES_PER_SLOT = 16 };

struct ws_stack_cache {
	struct tag *tags;
	uint64_t *ring;            /* calloc'd: unused frames cost no RSS */
	size_t nslots;             /* a power of two */
	size_t nframes;            /* the ring's size */
	uint64_t head;             /* frames written since creation */
};

struct ws_stack_cache *ws_stack_cache_create(size_t slots)
{
	struct ws_stack_cache *c = calloc(1, sizeof(*c));
	size_t n = 1;
	while (n < slots)
		n *= 2;
	size_t frames = n * RING_FRAMES_PER_SLOT;
	if (frames < 2 * WS_STACK_CACHE_FRAMES)
		frames = 2 * WS_STACK_CACHE_FRAMES;
	if (c) {
		c->tags = calloc(n, sizeof(*c->tags));
		c->ring = calloc(frames, sizeof(*c->ring));
	}
	if (!c || !c->tags || !c->ring) {
		if (c) {
			free(c->tags);
			free(c->ring);
		}
		free(c);
		return NULL;
	}
	c->nslots = n;
	c->nframes = frames;
	return c;
}

void ws_stack_cache_destroy(struct ws_stack_cache *c)
{
	if (c) {
		free(c->tags);
		free(c->ring);
	}
	free(c);
}

void ws_stack_cache_clear(struct ws_stack_cache *c)
{
	memset(c->tags, 0, c->nslots * sizeof(*c->tags));
}

/* Everything but the stack bytes, as one block to hash: the bytes are
 * then hashed under it (ws_hash_bytes, 16 bytes a multiply: hashing a few
 * KB of stack costs a fraction of unwinding it). */
struct key_header {
	uint64_t regs[WS_NREGS];   /* 0 where not valid */
	uint64_t valid_and_flags;
	uint64_t stack_start, stack_size, stack_lo, stack_hi;
};

uint64_t ws_stack_cache_key(const struct ws_snapshot *snap)
{
	struct key_header k;
	memset(&k, 0, sizeof(k));
	for (int r = 0; r < WS_NREGS; r++)
		if (snap->regs.valid & (1u << r))
			k.regs[r] = snap->regs.value[r];
	k.valid_and_flags = (uint64_t)snap->regs.valid << 2 |
			    (uint64_t)snap->pc_exact << 1 | snap->truncated;
	k.stack_start = snap->stack_start;
	k.stack_size = snap->stack_size;
	k.stack_lo = snap->stack_lo;
	k.stack_hi = snap->stack_hi;
	uint64_t h = ws_hash_bytes(snap->stack, snap->stack_size,
				   ws_hash_bytes(&k, sizeof(k), 0));
	return h ? h : 1;
}

/* What a saved context's unwind depends on, but the stack bytes: those
 * the wide version stands for. */
struct context_header {
	uint64_t task_id, version;
	uint64_t regs[WS_NREGS];   /* 0 where not valid */
	uint64_t valid_and_flags;
	uint64_t stack_lo, stack_hi;
};

uint64_t ws_stack_cache_context_key(const struct ws_task *task)
{
	if (!task->version_wide || task->start != WS_START_SAVED)
		return 0;
	struct context_header k;
	memset(&k, 0, sizeof(k));
	k.task_id = task->id;
	k.version = task->version;
	for (int r = 0; r < WS_NREGS; r++)
		if (task->regs.valid & (1u << r))
			k.regs[r] = task->regs.value[r];
	k.valid_and_flags = (uint64_t)task->regs.valid << 1 | task->pc_exact;
	k.stack_lo = task->stack_lo;
	k.stack_hi = task->stack_hi;
	uint64_t h = ws_hash_bytes(&k, sizeof(k), 0);
	return h ? h : 1;
}

static size_t slot_of(const struct ws_stack_cache *c, uint64_t task_id)
{
	return ws_hash_u64(task_id) & (c->nslots - 1);
}

/* Whether slot t's frames are still in the ring (none written over them
 * since: the ring is written in order, an unwind never across its end). */
static bool intact(const struct ws_stack_cache *c, const struct tag *t)
{
	return c->head - t->at <= c->nframes;
}

static size_t get(const struct ws_stack_cache *c, const struct tag *t,
		  struct ws_pc *pcs, size_t max, const char **stop_reason)
{
	if (t->n > max || !intact(c, t))
		return 0;
	const uint64_t *f = c->ring + t->at % c->nframes;
	for (uint32_t k = 0; k < t->n; k++) {
		pcs[k].pc = f[k] & ~RETURN_ADDRESS_BIT;
		pcs[k].is_return_address = (f[k] & RETURN_ADDRESS_BIT) != 0;
	}
	*stop_reason = t->stop_reason;
	return t->n;
}

size_t ws_stack_cache_get(struct ws_stack_cache *c, uint64_t task_id,
			  uint64_t key, struct ws_pc *pcs, size_t max,
			  const char **stop_reason)
{
	const struct tag *t = &c->tags[slot_of(c, task_id)];
	if (t->key != key || t->task_id != task_id)
		return 0;
	return get(c, t, pcs, max, stop_reason);
}

bool ws_stack_cache_has_context(struct ws_stack_cache *c, uint64_t task_id,
				uint64_t context)
{
	if (!context)
		return false;
	const struct tag *t = &c->tags[slot_of(c, task_id)];
	return t->key && t->context == context && t->task_id == task_id &&
	       intact(c, t);
}

size_t ws_stack_cache_get_context(struct ws_stack_cache *c, uint64_t task_id,
				  uint64_t context, struct ws_pc *pcs,
				  size_t max, const char **stop_reason)
{
	if (!ws_stack_cache_has_context(c, task_id, context))
		return 0;
	return get(c, &c->tags[slot_of(c, task_id)], pcs, max, stop_reason);
}

void ws_stack_cache_put(struct ws_stack_cache *c, uint64_t task_id,
			uint64_t key, uint64_t context,
			const struct ws_pc *pcs, size_t n,
			const char *stop_reason)
{
	if (n == 0 || n > WS_STACK_CACHE_FRAMES)
		return;
	for (size_t k = 0; k < n; k++)
		if (pcs[k].pc & RETURN_ADDRESS_BIT)
			return; /* no user address: not kept */
	/* Side by side, never across the ring's end. */
	uint64_t at = c->head;
	size_t offset = (size_t)(at % c->nframes);
	if (offset + n > c->nframes)
		at += c->nframes - offset;
	uint64_t *f = c->ring + at % c->nframes;
	for (size_t k = 0; k < n; k++)
		f[k] = pcs[k].pc |
		       (pcs[k].is_return_address ? RETURN_ADDRESS_BIT : 0);
	c->head = at + n;
	c->tags[slot_of(c, task_id)] = (struct tag){
		.task_id = task_id, .key = key, .context = context,
		.at = at, .stop_reason = stop_reason, .n = (uint32_t)n,
	};
}
