/*
 * Interning for the profile: each distinct line (function, file, line,
 * module, inlined), display frame (function and file, or with the line),
 * context (task, thread, state, reason) and stack (its line indices) is
 * stored once and named by its index, the strings in large chunks. The
 * names of generated frames (the leaf's state or failure, unnamed
 * addresses) are made here too, so every writer shows the same frames.
 * Groups and their entries are profile.c's.
 */
#include "profile_internal.h"

#include <string.h>

#include "ws_grow.h"
#include "ws_hash.h"
#include "ws_symbols.h"

/* Strings the profile keeps (frame names, files) live in large chunks: one
 * allocation per few thousand strings instead of one each, and one free. */
struct string_chunk {
	struct string_chunk *next;
	size_t used, size;
	char data[];
};

enum { STRING_CHUNK_SIZE = 64 * 1024 };

char *profile_strings_copy(struct ws_profile *profile, const char *s,
			   size_t len)
{
	struct string_chunk **chunks = &profile->strings;
	struct string_chunk *chunk = *chunks;
	if (!chunk || chunk->size - chunk->used < len + 1) {
		size_t size = len + 1 > STRING_CHUNK_SIZE ? len + 1
							  : STRING_CHUNK_SIZE;
		chunk = malloc(sizeof(*chunk) + size);
		if (!chunk)
			return NULL;
		chunk->used = 0;
		chunk->size = size;
		chunk->next = *chunks;
		*chunks = chunk;
	}
	char *copy = chunk->data + chunk->used;
	memcpy(copy, s, len);
	copy[len] = '\0';
	chunk->used += len + 1;
	return copy;
}

void profile_strings_free(struct string_chunk *chunks)
{
	while (chunks) {
		struct string_chunk *next = chunks->next;
		free(chunks);
		chunks = next;
	}
}

/* --- strings compared --- */

/* Equal strings, NULL being equal only to NULL. */
static bool same_string(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return a == b || strcmp(a, b) == 0;
}

static uint64_t hash_string(const char *s, uint64_t seed)
{
	return s ? ws_hash_bytes(s, strlen(s), seed) : seed ^ 0x5bd1e995;
}

/* A copy in the profile's chunks (NULL for NULL); *nomem on failure. */
static const char *keep(struct ws_profile *profile, const char *s, bool *nomem)
{
	if (!s)
		return NULL;
	char *copy = profile_strings_copy(profile, s, strlen(s));
	if (!copy)
		*nomem = true;
	return copy;
}

/* --- display frames --- */

struct frame_key {
	const struct ws_profile *profile;
	const char *name;
	size_t name_len;
	const char *file;  /* NULL if unknown */
	int line;          /* -1: any (keyed by function) */
};

static bool frame_eq(const void *key_arg, uint32_t index)
{
	const struct frame_key *key = key_arg;
	const struct frame_record *record = &key->profile->frames[index];
	return record->name_len == key->name_len &&
	       (key->line < 0 || record->frame.line == key->line) &&
	       memcmp(record->frame.name, key->name, key->name_len) == 0 &&
	       same_string(record->frame.file, key->file);
}

struct name_key {
	const struct ws_profile *profile;
	const char *name;
	size_t name_len;
};

static bool name_eq(const void *key_arg, uint32_t index)
{
	const struct name_key *key = key_arg;
	const struct frame_record *record = &key->profile->frames[index];
	return record->name_len == key->name_len &&
	       memcmp(record->frame.name, key->name, key->name_len) == 0;
}

/* The display frame of a new line: (name, file), with the line when the
 * profile keys frames by line. The name and file are the line's own
 * copies. */
static struct ws_error *intern_display(struct ws_profile *profile,
				       const struct line_record *line,
				       uint32_t name_hash, uint32_t *ret)
{
	int key_line = profile->frame_key == WS_FRAMES_BY_LINE ? line->line.line
								 : -1;
	uint32_t hash = name_hash ^ (uint32_t)(key_line + 1) * 0x9e3779b1u;
	struct frame_key key = {profile, line->line.name, line->name_len,
				line->line.file, key_line};
	if (!ws_index_set_reserve(&profile->frame_set) ||
	    !ws_index_set_reserve(&profile->name_set))
		return &ws_error_nomem;
	uint64_t *slot = ws_index_set_find(&profile->frame_set, hash, frame_eq,
					   &key);
	if (*slot) {
		*ret = (uint32_t)*slot - 1;
		return NULL;
	}
	if (!ws_grow((void **)&profile->frames, &profile->frame_capacity,
		     profile->frame_count + 1, sizeof(*profile->frames)))
		return &ws_error_nomem;
	uint32_t index = (uint32_t)profile->frame_count;
	struct frame_record *record = &profile->frames[index];
	*record = (struct frame_record){
		.frame = {line->line.name, line->line.file, line->line.line},
		.name_len = line->name_len,
		.name_id = index,
	};
	struct name_key nkey = {profile, line->line.name, line->name_len};
	uint64_t *nslot = ws_index_set_find(&profile->name_set, name_hash,
					    name_eq, &nkey);
	if (*nslot)
		record->name_id = (uint32_t)*nslot - 1;
	else
		ws_index_set_insert(&profile->name_set, nslot, name_hash,
				    index);
	ws_index_set_insert(&profile->frame_set, slot, hash, index);
	profile->frame_count++;
	*ret = index;
	return NULL;
}

/* --- lines --- */

struct line_key {
	const struct ws_profile *profile;
	const char *name;
	size_t name_len;
	const struct ws_frame *frame;  /* file, line, module, inlined */
};

static bool line_eq(const void *key_arg, uint32_t index)
{
	const struct line_key *key = key_arg;
	const struct ws_profile_line *line = &key->profile->lines[index].line;
	const struct ws_frame *f = key->frame;
	return key->profile->lines[index].name_len == key->name_len &&
	       line->line == f->line && line->inlined == f->inlined &&
	       memcmp(line->name, key->name, key->name_len) == 0 &&
	       same_string(line->file, f->file) &&
	       same_string(line->module, f->module);
}

/* Interns (name[0..name_len), and the frame's file, line, module, inlined
 * flag); an empty file is unknown. The hash leaves the file and module out:
 * one name on one line in several files is rare, and hashing the path too
 * would add a second pass over bytes per frame. */
static struct ws_error *intern_line(struct ws_profile *profile,
				    const char *name, size_t name_len,
				    const struct ws_frame *frame_in,
				    uint32_t *ret)
{
	struct ws_frame frame = *frame_in;
	if (frame.file && !*frame.file)
		frame.file = NULL;
	if (frame.line < 0)
		frame.line = 0;
	if (name_len > UINT32_MAX)
		name_len = UINT32_MAX; /* a 4 GiB name: keep a prefix */
	uint32_t name_hash = (uint32_t)(ws_hash_bytes(name, name_len, 0) >> 32);
	uint32_t hash = name_hash ^
			((uint32_t)(unsigned)frame.line * 0x85ebca6bu) ^
			(frame.inlined ? 0xc2b2ae35u : 0);

	struct line_key key = {profile, name, name_len, &frame};
	if (!ws_index_set_reserve(&profile->line_set))
		return &ws_error_nomem;
	uint64_t *slot = ws_index_set_find(&profile->line_set, hash, line_eq,
					   &key);
	if (*slot) {
		*ret = (uint32_t)*slot - 1;
		return NULL;
	}

	if (profile->line_count >= UINT32_MAX - 1)
		return ws_error_create(WS_ERR_OTHER, "profile: too many frames");
	if (!ws_grow((void **)&profile->lines, &profile->line_capacity,
		     profile->line_count + 1, sizeof(*profile->lines)))
		return &ws_error_nomem;

	bool nomem = false;
	struct line_record *record = &profile->lines[profile->line_count];
	char *name_copy = profile_strings_copy(profile, name, name_len);
	*record = (struct line_record){
		.line = {
			.name = name_copy,
			.system_name = keep(profile, frame.linkage_name, &nomem),
			.file = keep(profile, frame.file, &nomem),
			.line = frame.line,
			.module = keep(profile, frame.module, &nomem),
			.address = frame.return_address && frame.address
					   ? frame.address - 1 : frame.address,
			.inlined = frame.inlined,
		},
		.name_len = (uint32_t)name_len,
	};
	if (!name_copy || nomem)
		return &ws_error_nomem;
	struct ws_error *err = intern_display(profile, record, name_hash,
					      &record->display);
	if (err)
		return err;
	record->line.frame = record->display;
	ws_index_set_insert(&profile->line_set, slot, hash,
			    (uint32_t)profile->line_count);
	*ret = (uint32_t)profile->line_count++;
	return NULL;
}

/* Makes the name scratch buffer hold at least `size` bytes. */
static bool reserve_name(struct ws_profile *profile, size_t size)
{
	return ws_grow((void **)&profile->scratch_name,
		    &profile->scratch_name_capacity, size, 1);
}

struct ws_error *profile_intern_frame(struct ws_profile *profile,
				      const struct ws_frame *frame,
				      uint32_t *ret)
{
	if (frame->function && *frame->function)
		return intern_line(profile, frame->function,
				   strlen(frame->function), frame, ret);
	/* Unnamed (an empty name counts as none): "module+0xOFFSET" or
	 * "0xADDRESS", formatted by the one function that defines how
	 * frames are shown. */
	struct ws_frame unnamed = *frame;
	unnamed.function = NULL;
	size_t module_len = frame->module ? strlen(frame->module) : 0;
	if (!reserve_name(profile, module_len + 32))
		return &ws_error_nomem;
	ws_frame_display_name(&unnamed, profile->scratch_name,
			      profile->scratch_name_capacity);
	return intern_line(profile, profile->scratch_name,
			   strlen(profile->scratch_name), frame, ret);
}

/* Writes "[PREFIX: DETAIL]" ("[PREFIX]" without detail) into the scratch
 * name; returns its length or 0 when out of memory. */
static size_t leaf_name(struct ws_profile *profile, const char *prefix,
			const char *sep, const char *detail)
{
	size_t prefix_len = strlen(prefix);
	size_t sep_len = strlen(sep);
	size_t detail_len = detail ? strlen(detail) : 0;
	if (!reserve_name(profile, prefix_len + sep_len + detail_len + 3))
		return 0;
	char *p = profile->scratch_name;
	*p++ = '[';
	memcpy(p, prefix, prefix_len);
	p += prefix_len;
	if (detail_len) {
		memcpy(p, sep, sep_len);
		memcpy(p + sep_len, detail, detail_len);
		p += sep_len + detail_len;
	}
	*p++ = ']';
	*p = '\0';
	return (size_t)(p - profile->scratch_name);
}

/* The leaf line: the failure when the sample failed, "[not started]",
 * else the state. A wait reason is shown for waiting, syscall and unknown
 * states only (an unknown one says which: "[unknown state 12]"): adapters
 * of runtimes that keep a stale reason in other states should not have it
 * appear under running code. */
static struct ws_error *intern_leaf(struct ws_profile *profile,
				    const struct ws_profile_context *c,
				    uint32_t *ret, bool *is_state)
{
	size_t len;
	*is_state = false;
	if (c->error) {
		len = leaf_name(profile, "failed to sample", ": ", c->error);
	} else if (c->not_started) {
		len = leaf_name(profile, "not started", "", NULL);
	} else if (c->state == WS_STATE_IDLE) {
		len = leaf_name(profile, "idle worker", "", NULL);
		*is_state = true;
	} else {
		const char *reason = NULL;
		if (c->state == WS_STATE_WAITING ||
		    c->state == WS_STATE_SYSCALL ||
		    c->state == WS_STATE_UNKNOWN)
			reason = c->wait_reason;
		len = leaf_name(profile, ws_state_name(c->state),
				c->state == WS_STATE_UNKNOWN ? " " : ": ",
				reason);
		*is_state = true;
	}
	if (!len)
		return &ws_error_nomem;
	struct ws_frame leaf = {0};
	return intern_line(profile, profile->scratch_name, len, &leaf, ret);
}

/* --- contexts --- */

struct context_key {
	const struct ws_profile *profile;
	const struct ws_profile_context *context;
};

static bool context_eq(const void *key_arg, uint32_t index)
{
	const struct context_key *key = key_arg;
	const struct ws_profile_context *a =
		&key->profile->contexts[index].context;
	const struct ws_profile_context *b = key->context;
	return a->task_id == b->task_id && a->thread == b->thread &&
	       a->state == b->state && a->not_started == b->not_started &&
	       same_string(a->wait_reason, b->wait_reason) &&
	       same_string(a->error, b->error) &&
	       same_string(a->task_name, b->task_name);
}

struct ws_error *profile_intern_context(struct ws_profile *profile,
					const struct ws_sample *sample,
					uint32_t *ret)
{
	/* A wait reason is kept for waiting and syscall states only:
	 * adapters of runtimes that keep a stale reason in other states
	 * should not have it appear under running code. */
	struct ws_profile_context c = {
		.task_id = sample->task_id,
		.task_name = sample->task_name,
		.thread = sample->thread,
		.state = sample->state,
		.wait_reason = sample->state == WS_STATE_WAITING ||
				       sample->state == WS_STATE_SYSCALL ||
				       sample->state == WS_STATE_UNKNOWN
			       ? sample->wait_reason
			       : NULL,
		.error = sample->error,
		.not_started = sample->not_started && !sample->error,
	};
	uint64_t h = ws_hash_u64(c.task_id ^ ((uint64_t)(unsigned)c.thread << 32));
	h = hash_string(c.wait_reason, h ^ (uint64_t)c.state);
	h = hash_string(c.error, h + c.not_started);
	uint32_t hash = (uint32_t)(h >> 32);
	struct context_key key = {profile, &c};
	if (!ws_index_set_reserve(&profile->context_set))
		return &ws_error_nomem;
	uint64_t *slot = ws_index_set_find(&profile->context_set, hash,
					   context_eq, &key);
	if (*slot) {
		*ret = (uint32_t)*slot - 1;
		return NULL;
	}
	if (profile->context_count >= UINT32_MAX - 1)
		return ws_error_create(WS_ERR_OTHER, "profile: too many tasks");
	if (!ws_grow((void **)&profile->contexts, &profile->context_capacity,
		     profile->context_count + 1, sizeof(*profile->contexts)))
		return &ws_error_nomem;
	uint32_t leaf;
	bool is_state;
	struct ws_error *err = intern_leaf(profile, &c, &leaf, &is_state);
	if (err)
		return err;
	bool nomem = false;
	c.task_name = keep(profile, c.task_name, &nomem);
	c.wait_reason = keep(profile, c.wait_reason, &nomem);
	c.error = keep(profile, c.error, &nomem);
	if (nomem)
		return &ws_error_nomem;
	profile->contexts[profile->context_count] = (struct context_record){
		.context = c,
		.leaf = leaf,
		.leaf_is_state = is_state,
		.hash = hash,
	};
	ws_index_set_insert(&profile->context_set, slot, hash,
			    (uint32_t)profile->context_count);
	*ret = (uint32_t)profile->context_count++;
	return NULL;
}

/* --- stacks --- */

struct stack_key {
	const struct ws_profile *profile;
	const uint32_t *frames;
	size_t depth;
};

static bool stack_eq(const void *key_arg, uint32_t index)
{
	const struct stack_key *key = key_arg;
	const struct stack_record *stack = &key->profile->stacks[index];
	return stack->depth == key->depth &&
	       memcmp(key->profile->stack_pool + stack->offset, key->frames,
		      key->depth * sizeof(*key->frames)) == 0;
}

struct ws_error *profile_intern_stack(struct ws_profile *profile,
				      const uint32_t *frames, size_t depth,
				      uint32_t *ret)
{
	if (depth > UINT32_MAX)
		return ws_error_create(WS_ERR_OTHER, "profile: stack too deep");
	uint32_t hash = (uint32_t)(ws_hash_bytes(frames,
						 depth * sizeof(*frames), 0) >> 32);
	struct stack_key key = {profile, frames, depth};
	if (!ws_index_set_reserve(&profile->stack_set))
		return &ws_error_nomem;
	uint64_t *slot = ws_index_set_find(&profile->stack_set, hash, stack_eq,
					   &key);
	if (*slot) {
		*ret = (uint32_t)*slot - 1;
		return NULL;
	}

	if (profile->stack_count >= UINT32_MAX)
		return ws_error_create(WS_ERR_OTHER, "profile: too many stacks");
	if (!ws_grow((void **)&profile->stack_pool, &profile->pool_capacity,
		  profile->pool_used + depth, sizeof(*profile->stack_pool)) ||
	    !ws_grow((void **)&profile->stacks, &profile->stack_capacity,
		  profile->stack_count + 1, sizeof(*profile->stacks)))
		return &ws_error_nomem;
	memcpy(profile->stack_pool + profile->pool_used, frames,
	       depth * sizeof(*frames));
	profile->stacks[profile->stack_count] = (struct stack_record){
		.offset = profile->pool_used,
		.depth = (uint32_t)depth,
		.hash = hash,
	};
	profile->pool_used += depth;
	ws_index_set_insert(&profile->stack_set, slot, hash,
			    (uint32_t)profile->stack_count);
	*ret = (uint32_t)profile->stack_count++;
	return NULL;
}

