/*
 * Interning for the profile: each distinct frame (name, file, line) and
 * each distinct stack (its frame indices) is stored once and named by its
 * index, the strings in large chunks. The names of generated frames (the
 * leaf's state or failure, unnamed addresses) are made here too, so every
 * writer shows the same frames. Groups and their entries are profile.c's.
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

static char *strings_copy(struct string_chunk **chunks, const char *s,
			  size_t len)
{
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

/* --- frames --- */

struct frame_key {
	const struct ws_profile *profile;
	const char *name;
	size_t name_len;
	const char *file;  /* NULL if unknown */
	int line;
};

static bool frame_eq(const void *key_arg, uint32_t index)
{
	const struct frame_key *key = key_arg;
	const struct frame_record *record = &key->profile->frames[index];
	if (record->name_len != key->name_len ||
	    record->frame.line != key->line ||
	    memcmp(record->frame.name, key->name, key->name_len) != 0)
		return false;
	if (!record->frame.file || !key->file)
		return record->frame.file == key->file;
	return strcmp(record->frame.file, key->file) == 0;
}

/* Interns (name[0..name_len), file, line); an empty file is unknown. The
 * hash leaves the file out: one name on one line in several files is rare,
 * and hashing the path too would add a second pass over bytes per frame. */
static struct ws_error *intern_frame(struct ws_profile *profile,
				     const char *name, size_t name_len,
				     const char *file, int line, uint32_t *ret)
{
	if (file && !*file)
		file = NULL;
	if (line < 0)
		line = 0;
	if (name_len > UINT32_MAX)
		name_len = UINT32_MAX; /* a 4 GiB name: keep a prefix */
	uint32_t hash = (uint32_t)(ws_hash_bytes(name, name_len,
						 (uint64_t)(unsigned)line) >> 32);

	struct frame_key key = {profile, name, name_len, file, line};
	if (!index_set_reserve(&profile->frame_set))
		return &ws_error_nomem;
	uint64_t *slot = index_set_find(&profile->frame_set, hash, frame_eq,
					&key);
	if (*slot) {
		*ret = (uint32_t)*slot - 1;
		return NULL;
	}

	if (profile->frame_count >= UINT32_MAX)
		return ws_error_create(WS_ERR_OTHER, "profile: too many frames");
	if (!ws_grow((void **)&profile->frames, &profile->frame_capacity,
		  profile->frame_count + 1, sizeof(*profile->frames)))
		return &ws_error_nomem;

	struct frame_record *record = &profile->frames[profile->frame_count];
	record->frame.name = strings_copy(&profile->strings, name, name_len);
	record->frame.file = file ? strings_copy(&profile->strings, file,
						 strlen(file))
				  : NULL;
	record->frame.line = line;
	record->name_len = (uint32_t)name_len;
	if (!record->frame.name || (file && !record->frame.file))
		return &ws_error_nomem;
	index_set_insert(&profile->frame_set, slot, hash,
			 (uint32_t)profile->frame_count);
	*ret = (uint32_t)profile->frame_count++;
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
		return intern_frame(profile, frame->function,
				    strlen(frame->function), frame->file,
				    frame->line, ret);
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
	return intern_frame(profile, profile->scratch_name,
			    strlen(profile->scratch_name), frame->file,
			    frame->line, ret);
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

/* The leaf frame: the failure when the sample failed, else the state. A
 * wait reason is shown for waiting, syscall and unknown states only (an
 * unknown one says which: "[unknown state 12]"): adapters of
 * runtimes that keep a stale reason in other states should not have it
 * appear under running code. */
struct ws_error *profile_intern_leaf(struct ws_profile *profile,
				     const struct ws_sample *sample,
				     uint32_t *ret)
{
	size_t len;
	if (sample->error) {
		len = leaf_name(profile, "failed to sample", ": ", sample->error);
	} else if (sample->state == WS_STATE_IDLE) {
		len = leaf_name(profile, "idle worker", "", NULL);
	} else {
		const char *reason = NULL;
		if (sample->state == WS_STATE_WAITING ||
		    sample->state == WS_STATE_SYSCALL ||
		    sample->state == WS_STATE_UNKNOWN)
			reason = sample->wait_reason;
		len = leaf_name(profile, ws_state_name(sample->state),
				sample->state == WS_STATE_UNKNOWN ? " " : ": ",
				reason);
	}
	if (!len)
		return &ws_error_nomem;
	return intern_frame(profile, profile->scratch_name, len, NULL, 0, ret);
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
	if (!index_set_reserve(&profile->stack_set))
		return &ws_error_nomem;
	uint64_t *slot = index_set_find(&profile->stack_set, hash, stack_eq,
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
	index_set_insert(&profile->stack_set, slot, hash,
			 (uint32_t)profile->stack_count);
	*ret = (uint32_t)profile->stack_count++;
	return NULL;
}

