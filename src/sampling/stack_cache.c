/*
 * Per-task memo of unwinds (see ws_stack_cache.h).
 */
#include "ws_stack_cache.h"

#include <stdlib.h>
#include <string.h>

#include "ws_hash.h"

/* A slot's keys apart from its frames: the lookups of a tick touch only
 * these (24 bytes a slot; 4,096 slots in 96 KB), not a kilobyte of
 * frames each, nor an untouched page of them. */
struct tag {
	uint64_t task_id;
	uint64_t key;              /* 0: empty */
	uint64_t context;          /* 0: none */
};

struct unwind {
	const char *stop_reason;
	uint32_t n;
	struct ws_pc pcs[WS_STACK_CACHE_FRAMES];
};

struct ws_stack_cache {
	struct tag *tags;
	struct unwind *unwinds;    /* calloc'd: untouched slots cost no RSS */
	size_t nslots;             /* a power of two */
};

struct ws_stack_cache *ws_stack_cache_create(size_t slots)
{
	struct ws_stack_cache *c = calloc(1, sizeof(*c));
	size_t n = 1;
	while (n < slots)
		n *= 2;
	if (c) {
		c->tags = calloc(n, sizeof(*c->tags));
		c->unwinds = calloc(n, sizeof(*c->unwinds));
	}
	if (!c || !c->tags || !c->unwinds) {
		if (c) {
			free(c->tags);
			free(c->unwinds);
		}
		free(c);
		return NULL;
	}
	c->nslots = n;
	return c;
}

void ws_stack_cache_destroy(struct ws_stack_cache *c)
{
	if (c) {
		free(c->tags);
		free(c->unwinds);
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

static size_t get(const struct unwind *u, struct ws_pc *pcs, size_t max,
		  const char **stop_reason)
{
	if (u->n > max)
		return 0;
	memcpy(pcs, u->pcs, u->n * sizeof(*pcs));
	*stop_reason = u->stop_reason;
	return u->n;
}

size_t ws_stack_cache_get(struct ws_stack_cache *c, uint64_t task_id,
			  uint64_t key, struct ws_pc *pcs, size_t max,
			  const char **stop_reason)
{
	size_t i = slot_of(c, task_id);
	if (c->tags[i].key != key || c->tags[i].task_id != task_id)
		return 0;
	return get(&c->unwinds[i], pcs, max, stop_reason);
}

bool ws_stack_cache_has_context(struct ws_stack_cache *c, uint64_t task_id,
				uint64_t context)
{
	if (!context)
		return false;
	const struct tag *t = &c->tags[slot_of(c, task_id)];
	return t->key && t->context == context && t->task_id == task_id;
}

size_t ws_stack_cache_get_context(struct ws_stack_cache *c, uint64_t task_id,
				  uint64_t context, struct ws_pc *pcs,
				  size_t max, const char **stop_reason)
{
	if (!ws_stack_cache_has_context(c, task_id, context))
		return 0;
	return get(&c->unwinds[slot_of(c, task_id)], pcs, max, stop_reason);
}

void ws_stack_cache_put(struct ws_stack_cache *c, uint64_t task_id,
			uint64_t key, uint64_t context,
			const struct ws_pc *pcs, size_t n,
			const char *stop_reason)
{
	if (n == 0 || n > WS_STACK_CACHE_FRAMES)
		return;
	size_t i = slot_of(c, task_id);
	c->tags[i] = (struct tag){ task_id, key, context };
	struct unwind *u = &c->unwinds[i];
	u->stop_reason = stop_reason;
	u->n = (uint32_t)n;
	memcpy(u->pcs, pcs, n * sizeof(*pcs));
}
