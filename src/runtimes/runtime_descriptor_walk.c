/*
 * The descriptor adapter's registry walk (see runtime_descriptor.c): every
 * root of the registry, lists and rings read one task at a time, arrays
 * sampled within the budgets, and the current task. The walk trusts
 * nothing it reads: each task is visited once per tick whatever `next`
 * says (a visited set with a bit per root), counts are clamped to the
 * descriptor's max and to readable memory, and a registry cut short is a
 * failed sample and a warning, never silence (an error in a live tick, so
 * the sampler reads it again with the target stopped).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_descriptor_internal.h"
#include "ws_grow.h"
#include "ws_hash.h"
#include "ws_random.h"

/* ---- the visited set ---- */

void desc_visited_start(struct visited *v)
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
bool desc_visited_mark(struct visited *v, uint64_t key, unsigned root,
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

bool desc_visited_has(const struct visited *v, uint64_t key)
{
	return v->key && v->stamp[visited_find(v, key)] == v->tick;
}

void desc_visited_free(struct visited *v)
{
	free(v->key);
	free(v->stamp);
	free(v->roots);
}

/* ---- the walk ---- */

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
	desc_warn_once(s, kind, "$.%s: %s (at 0x%" PRIx64 "); later ticks say so as failed samples",
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

/* Where a root starts: its global expression's value (or, for a
 * sentinel ring's header and an array, its address). A null pointer on
 * the way is an empty root (a runtime not set up yet: Crystal's
 * Fiber::fibers before the first fiber), *empty set. */
static struct ws_error *root_start(struct state *s, const struct gref *g,
				   bool address, uint64_t *ret, bool *empty)
{
	*empty = false;
	for (unsigned k = 1; k < g->path.nhops; k++) {
		struct ws_dwpath prefix = g->path;
		uint64_t pointer;
		prefix.nhops = k;
		struct ws_error *err = ws_dwtype_path_uint(s->prog, &prefix,
							   g->var.address, NULL,
							   0, &pointer);
		if (err)
			return err;
		if (!pointer) {
			*empty = true;
			return NULL;
		}
	}
	if (g->path.nhops == 0 && address) {
		*ret = g->var.address;
		return NULL;
	}
	return address ? desc_gref_address(s, g, ret) : desc_gref_uint(s, g, ret);
}

/* A root whose start (or an array's count) cannot be read: an error read
 * live (the tick is read again stopped), else a failed sample `what` and
 * a warning. */
static struct ws_error *root_unreadable(struct state *s,
					const struct ws_read_context *context,
					const struct root *r, struct ws_error *err,
					const char *what, struct ws_task_list *out)
{
	if (context->live)
		return err;
	desc_warn_once(s, WARN_CUT, "$.%s: unreadable: %s", r->where, err->message);
	ws_error_destroy(err);
	return walk_problem(s, context, r, WARN_CUT, what, r->head.var.address,
			    out);
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

/* A list must be walked whole (each task leads to the next), but what it
 * keeps of a tick is bounded by the budgets: with a task limit k, the
 * tasks of a root are a uniform random sample of k (reservoir sampling:
 * the i-th task replaces a kept one with probability k / i), each then
 * standing for seen / k. So a list of a million tasks, or a hostile one
 * as long as registry.max, costs the walk's reads but k tasks' memory and
 * decoded strings, not a million. */
struct reservoir {
	size_t first;              /* out->tasks[first ..]: this root's */
	uint64_t seen;             /* tasks this root reached */
};

/* Adds the task at `address` (its struct in s->buf) to the sample: one
 * of the first k whole, a later one only when it replaces a kept one,
 * with probability k / seen, so the walk decodes about k (1 + ln(n / k))
 * of a list's n tasks, not n. A replaced task's strings stay in the
 * arena until the tick ends. */
static struct ws_error *keep_sampled(struct state *s, struct ws_target *target,
				     const struct ws_read_context *context,
				     uint64_t address, struct ws_task_list *out,
				     struct reservoir *kept)
{
	size_t k = context->limit;
	const char *state_name;
	bool added;
	if (!desc_task_listed(s, address, s->buf, &state_name))
		return NULL;
	kept->seen++;
	if (!k || kept->seen <= k)
		return desc_add_task(s, target, context, address, s->buf, out,
				     &added);
	uint64_t j = ws_random_below(context->random, kept->seen);
	if (j >= k)
		return NULL;
	struct ws_error *err = desc_add_task(s, target, context, address,
					     s->buf, out, &added);
	if (!err && added) {
		out->tasks[kept->first + j] = out->tasks[out->n - 1];
		out->n--;
	}
	return err;
}

/* Each of the k tasks kept of a root sampled down stands for seen / k
 * (a failed sample the walk ended with, after them, for itself). */
static void reservoir_scale(const struct reservoir *kept,
			    const struct ws_read_context *context,
			    struct ws_task_list *out)
{
	size_t k = context->limit;
	if (!k || kept->seen <= k)
		return;
	double scale = (double)kept->seen / (double)k;
	for (size_t i = kept->first; i < kept->first + k; i++)
		out->tasks[i].scale = scale;
}

/* Walks list root r, keeping its tasks in `kept`. */
static struct ws_error *walk_list_into(struct state *s, struct ws_target *target,
				       const struct ws_read_context *context,
				       const struct root *r, unsigned ridx,
				       struct ws_task_list *out,
				       struct reservoir *kept)
{
	struct descriptor *d = &s->d;
	size_t size = (size_t)d->task_size;
	uint64_t raw, stop = 0, count = 0;
	struct ws_error *err;
	if (r->has_count && (err = desc_gref_uint(s, &r->count, &count))) {
		if (context->live)
			return err;
		/* The walk goes on, bounded by registry.max instead. */
		desc_warn_once(s, WARN_COUNT, "$.%s: count unreadable: %s; walking up to registry.max",
			       r->where, err->message);
		ws_error_destroy(err);
		count = 0;
	}
	bool empty;
	bool sentinel = r->layout == LAYOUT_SENTINEL_RING;
	err = root_start(s, &r->head, sentinel, sentinel ? &stop : &raw, &empty);
	if (!err && sentinel && !empty)
		err = ws_dwtype_path_uint(s->prog, &r->header_next, stop, NULL, 0,
					  &raw);
	if (err)
		return root_unreadable(s, context, r, err,
				       "registry root unreadable", out);
	if (empty)
		return NULL;
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
		if (!desc_visited_mark(&s->visited, task, ridx, &was))
			return &ws_error_nomem;
		if (was & (1u << ridx))
			return walk_problem(s, context, r, WARN_CYCLE,
					    "registry list has a cycle", raw, out);
		if ((err = desc_mem_read(s, task, s->buf, size))) {
			ws_error_destroy(err);
			return walk_problem(s, context, r, WARN_CUT,
					    "registry list cut short: next pointer unreadable",
					    raw, out);
		}
		/* Listed once, whichever root reached it first. */
		if (!was && (err = keep_sampled(s, target, context, task, out,
						kept)))
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

static struct ws_error *walk_list(struct state *s, struct ws_target *target,
				  const struct ws_read_context *context,
				  const struct root *r, unsigned ridx,
				  struct ws_task_list *out)
{
	struct reservoir kept = { .first = out->n };
	/* Each task leads to the next: read through the block cache, which
	 * serves neighbouring structs from one read. */
	if (s->blocks)
		ws_read_cache_begin(s->blocks);
	struct ws_error *err = walk_list_into(s, target, context, r, ridx, out,
					      &kept);
	if (s->blocks)
		ws_read_cache_end(s->blocks);
	reservoir_scale(&kept, context, out);
	return err;
}

/* The largest k <= n such that element k - 1 of `elem` bytes from base is
 * readable, assuming readable elements come first (a count larger than
 * the memory behind it). One probe when all are; else a binary search. */
static uint64_t clamp_readable(struct state *s, uint64_t base, uint64_t elem,
			       uint64_t n)
{
	uint64_t lo = 0, hi = n;
	if (n == 0 || desc_readable(s, base + n * elem - 1))
		return n;
	while (lo + 1 < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (desc_readable(s, base + mid * elem - 1))
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
	bool empty;
	err = root_start(s, &r->head, r->head.kind != WS_DWTYPE_POINTER, &base,
			 &empty);
	if (err)
		return root_unreadable(s, context, r, err,
				       "registry root unreadable", out);
	s->table[ridx] = base;
	s->table_len[ridx] = 0;
	if (empty || !base)
		return NULL; /* no table yet */
	if (r->has_count) {
		if ((err = desc_gref_uint(s, &r->count, &n)))
			return root_unreadable(s, context, r, err,
					       "registry count unreadable", out);
	} else {
		n = r->head.size / elem;
	}
	/* Counts the target holds are clamped, never trusted: to the
	 * descriptor's max, then to the memory readable behind the base. */
	uint64_t max = d->max_tasks > out->n ? d->max_tasks - out->n : 0;
	if (n > max) {
		if (!context->live)
			desc_warn_once(s, WARN_LONG, "$.%s: count %" PRIu64 " over registry.max (%" PRIu64 "): reading %" PRIu64,
				  r->where, n, d->max_tasks, max);
		n = max;
	}
	uint64_t fit = n <= UINT64_MAX / elem && base + n * elem >= base
			       ? clamp_readable(s, base, elem, n) : 0;
	if (fit < n) {
		if (context->live)
			return ws_error_create(WS_ERR_OTHER, "%s: count over readable memory", r->where);
		desc_warn_once(s, WARN_CLAMPED, "$.%s: count %" PRIu64 " exceeds the memory readable at 0x%" PRIx64 ": reading %" PRIu64,
			  r->where, n, base, fit);
		n = fit;
	}
	s->table_len[ridx] = n;
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
		if (n && (err = desc_mem_read(s, base, s->pointers,
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
			if (!desc_visited_mark(&s->visited, s->slots[i].address,
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
		desc_mem_readv(s, ranges, k);
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
			err = desc_add_task(s, target, context, slot->address,
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
	if (!s->current || desc_visited_has(&s->visited, s->current))
		return NULL;
	uint32_t was;
	if (!desc_visited_mark(&s->visited, s->current, MAX_ROOTS, &was))
		return &ws_error_nomem;
	struct ws_error *err = desc_mem_read(s, s->current, s->buf,
					(size_t)s->d.task_size);
	if (err) {
		if (context->live)
			return err;
		desc_warn_once(s, WARN_CURRENT, "registry.current points at unreadable memory (0x%" PRIx64 ")",
			  s->current);
		ws_error_destroy(err);
		return NULL;
	}
	bool added;
	return desc_add_task(s, target, context, s->current, s->buf, out, &added);
}

struct ws_error *desc_walk(struct state *s, struct ws_target *target,
			    const struct ws_read_context *context,
			    struct ws_task_list *out)
{
	struct descriptor *d = &s->d;
	struct ws_error *err = NULL;
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
	return err;
}
