/*
 * The profile, read back (profile.c keeps it): groups in their documented
 * order, and the visits the writers make: by display frame with the state
 * as leaf (speedscope, folded), in time order or summed per distinct
 * stack, or by line with the context (pprof). Nothing here changes what
 * was recorded; the group order is computed once, on first use.
 */
#include "ws_profile.h"

#include "profile_internal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ws_grow.h"
#include "ws_hash.h"

/* Where a group comes in the order of ws_profile_group_name's contract:
 * (rank, key). Time-ordered groups first, the main thread or first task
 * before the others, then by id; merged groups after, in order of first
 * appearance. */
struct group_rank {
	int rank;
	uint64_t key;
	uint32_t index;
};

static int compare_ranks(const void *a, const void *b)
{
	const struct group_rank *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

static const struct group *group_at(const struct ws_profile *cprofile,
				    size_t i)
{
	/* The order is a cache of the groups, built on first read: the
	 * profile is logically const here. */
	struct ws_profile *profile = (struct ws_profile *)cprofile;
	if (profile->order_count != profile->group_count) {
		struct group_rank *ranks = malloc(profile->group_count *
						  sizeof(*ranks));
		uint32_t *order = realloc(profile->order, profile->group_count *
					  sizeof(*order));
		if (!ranks || !order) {
			free(ranks);
			if (order)
				profile->order = order;
			return &profile->groups[i]; /* unsorted, still whole */
		}
		profile->order = order;
		for (size_t g = 0; g < profile->group_count; g++) {
			const struct group *group = &profile->groups[g];
			uint64_t key = group->key;
			int rank;
			if (group->aggregated) {
				rank = 3;
				key = 0;
			} else if (key >> 63) {
				rank = 2; /* idle workers */
			} else if (group->main_thread) {
				rank = 0;
			} else {
				rank = 1;
			}
			ranks[g] = (struct group_rank){rank, key, (uint32_t)g};
		}
		qsort(ranks, profile->group_count, sizeof(*ranks),
		      compare_ranks);
		for (size_t g = 0; g < profile->group_count; g++)
			order[g] = ranks[g].index;
		free(ranks);
		profile->order_count = profile->group_count;
	}
	return &profile->groups[profile->order[i]];
}

const char *ws_profile_group_name(const struct ws_profile *profile,
				  size_t group)
{
	return group_at(profile, group)->name;
}

double ws_profile_group_start(const struct ws_profile *profile, size_t group)
{
	return group_at(profile, group)->start;
}

double ws_profile_group_end(const struct ws_profile *profile, size_t group)
{
	return group_at(profile, group)->end;
}

double ws_profile_group_weight(const struct ws_profile *profile, size_t group)
{
	return group_at(profile, group)->weight;
}

bool ws_profile_group_merged(const struct ws_profile *profile, size_t group)
{
	return group_at(profile, group)->aggregated;
}

size_t ws_profile_group_entry_count(const struct ws_profile *profile,
				    size_t group)
{
	return group_at(profile, group)->count;
}

/* --- visiting by display frame --- */

/* An entry's stack as display frames, leaf last, into *buf; returns its
 * depth. Gaps have depth 0. `by_name`: each frame its name's first frame. */
static size_t display_stack(const struct ws_profile *profile,
			    const struct group *group, size_t i, bool by_name,
			    uint32_t **buf, size_t *capacity, bool *nomem)
{
	uint32_t stack_index = group->stacks[i];
	if (stack_index == GAP_STACK)
		return 0;
	const struct stack_record *stack = &profile->stacks[stack_index];
	size_t depth = stack->depth + 1;
	if (!ws_grow((void **)buf, capacity, depth, sizeof(**buf))) {
		*nomem = true;
		return 0;
	}
	const uint32_t *lines = profile->stack_pool + stack->offset;
	for (size_t k = 0; k < stack->depth; k++)
		(*buf)[k] = profile->lines[lines[k]].display;
	(*buf)[stack->depth] =
		profile->lines[profile->contexts[group->contexts[i]].leaf].display;
	if (by_name)
		for (size_t k = 0; k < depth; k++)
			(*buf)[k] = profile->frames[(*buf)[k]].name_id;
	return depth;
}

static double entry_weight(const struct group *group, size_t i)
{
	return group->aggregated ? group->merged[i] : group->observed[i];
}

struct ws_error *ws_profile_visit(const struct ws_profile *profile,
				  size_t group_index, ws_profile_visit_fn fn,
				  void *arg)
{
	const struct group *group = group_at(profile, group_index);
	if (group->aggregated)
		return ws_profile_visit_aggregated(profile, group_index, false,
						   fn, arg);
	/* Time order: runs of one display stack come as one sample. */
	uint32_t *cur = NULL, *prev = NULL;
	size_t cur_cap = 0, prev_cap = 0, prev_depth = 0;
	double pending = 0;
	bool have = false, nomem = false;
	struct ws_error *err = NULL;
	for (size_t i = 0; i < group->count && !err; i++) {
		size_t depth = display_stack(profile, group, i, false, &cur,
					     &cur_cap, &nomem);
		if (nomem)
			break;
		double w = entry_weight(group, i);
		if (have && depth == prev_depth &&
		    memcmp(cur, prev, depth * sizeof(*cur)) == 0) {
			pending += w;
			continue;
		}
		if (have)
			err = fn(prev, prev_depth, pending, arg);
		uint32_t *t = prev;
		prev = cur;
		cur = t;
		size_t tc = prev_cap;
		prev_cap = cur_cap;
		cur_cap = tc;
		prev_depth = depth;
		pending = w;
		have = true;
	}
	if (!err && !nomem && have)
		err = fn(prev, prev_depth, pending, arg);
	free(cur);
	free(prev);
	return nomem ? &ws_error_nomem : err;
}

/* The distinct display stacks of a visit, in order of first appearance. */
struct stack_sums {
	uint32_t *pool;
	size_t pool_used, pool_capacity;
	struct stack_record *stacks;
	double *weights;
	size_t count, capacity;
	struct ws_index_set set;
};

struct sums_key {
	const struct stack_sums *sums;
	const uint32_t *frames;
	size_t depth;
};

static bool sums_eq(const void *key_arg, uint32_t index)
{
	const struct sums_key *key = key_arg;
	const struct stack_record *stack = &key->sums->stacks[index];
	return stack->depth == key->depth &&
	       memcmp(key->sums->pool + stack->offset, key->frames,
		      key->depth * sizeof(*key->frames)) == 0;
}

static bool sums_add(struct stack_sums *sums, const uint32_t *frames,
		     size_t depth, double weight)
{
	uint32_t hash = (uint32_t)(ws_hash_bytes(frames, depth * sizeof(*frames),
						 0) >> 32);
	struct sums_key key = {sums, frames, depth};
	if (!ws_index_set_reserve(&sums->set))
		return false;
	uint64_t *slot = ws_index_set_find(&sums->set, hash, sums_eq, &key);
	if (*slot) {
		sums->weights[(uint32_t)*slot - 1] += weight;
		return true;
	}
	size_t capacity = sums->capacity;
	if (!ws_grow((void **)&sums->pool, &sums->pool_capacity,
		     sums->pool_used + depth, sizeof(*sums->pool)) ||
	    !ws_grow((void **)&sums->stacks, &capacity, sums->count + 1,
		     sizeof(*sums->stacks)))
		return false;
	capacity = sums->capacity;
	if (!ws_grow((void **)&sums->weights, &capacity, sums->count + 1,
		     sizeof(*sums->weights)))
		return false;
	sums->capacity = capacity;
	memcpy(sums->pool + sums->pool_used, frames, depth * sizeof(*frames));
	sums->stacks[sums->count] = (struct stack_record){
		.offset = sums->pool_used, .depth = (uint32_t)depth,
		.hash = hash};
	sums->weights[sums->count] = weight;
	sums->pool_used += depth;
	ws_index_set_insert(&sums->set, slot, hash, (uint32_t)sums->count++);
	return true;
}

struct ws_error *ws_profile_visit_aggregated(const struct ws_profile *profile,
					     size_t group_index, bool by_name,
					     ws_profile_visit_fn fn, void *arg)
{
	const struct group *group = group_at(profile, group_index);
	struct stack_sums sums = {0};
	uint32_t *buf = NULL;
	size_t capacity = 0;
	bool nomem = false;
	for (size_t i = 0; i < group->count && !nomem; i++) {
		size_t depth = display_stack(profile, group, i, by_name, &buf,
					     &capacity, &nomem);
		if (!nomem && depth &&
		    !sums_add(&sums, buf, depth, entry_weight(group, i)))
			nomem = true;
	}
	struct ws_error *err = nomem ? &ws_error_nomem : NULL;
	for (size_t i = 0; i < sums.count && !err; i++)
		err = fn(sums.pool + sums.stacks[i].offset, sums.stacks[i].depth,
			 sums.weights[i], arg);
	free(buf);
	free(sums.pool);
	free(sums.stacks);
	free(sums.weights);
	ws_index_set_deinit(&sums.set);
	return err;
}

/* --- read access by line --- */

size_t ws_profile_line_count(const struct ws_profile *profile)
{
	return profile->line_count;
}

const struct ws_profile_line *ws_profile_line(const struct ws_profile *profile,
					      size_t index)
{
	return index < profile->line_count ? &profile->lines[index].line : NULL;
}

size_t ws_profile_module_count(const struct ws_profile *profile)
{
	return profile->module_count;
}

const struct ws_profile_module *ws_profile_module(const struct ws_profile *profile,
						  size_t index)
{
	return index < profile->module_count ? &profile->modules[index].module
					     : NULL;
}

struct ws_error *ws_profile_visit_samples(const struct ws_profile *profile,
					  ws_profile_sample_fn fn, void *arg)
{
	uint32_t *buf = NULL;
	size_t capacity = 0;
	struct ws_error *err = NULL;
	for (size_t g = 0; g < profile->group_count && !err; g++) {
		const struct group *group = group_at(profile, g);
		for (size_t i = 0; i < group->count && !err; i++) {
			if (group->stacks[i] == GAP_STACK)
				continue;
			const struct stack_record *stack =
				&profile->stacks[group->stacks[i]];
			const struct context_record *context =
				&profile->contexts[group->contexts[i]];
			if (!ws_grow((void **)&buf, &capacity, stack->depth + 1,
				     sizeof(*buf))) {
				err = &ws_error_nomem;
				break;
			}
			memcpy(buf, profile->stack_pool + stack->offset,
			       stack->depth * sizeof(*buf));
			size_t depth = stack->depth;
			/* A state with no stack at all keeps its leaf: a
			 * sample is never without a location. */
			if (!context->leaf_is_state || depth == 0)
				buf[depth++] = context->leaf;
			struct ws_profile_sample sample = {
				.lines = buf,
				.depth = depth,
				.context = &context->context,
				.count = group->counts[i],
				.weight = group->merged[i],
			};
			err = fn(&sample, arg);
		}
	}
	free(buf);
	return err;
}
