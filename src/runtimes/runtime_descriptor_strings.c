/*
 * The descriptor adapter's strings (runtime_descriptor.c decodes the
 * tasks): task names and wait reasons, copied into a per-tick arena,
 * read from the target as C strings or length-prefixed objects
 * (Crystal's String) through a small cache by address, and wait-reason
 * bits spelled as "time|msg". Every read goes through the state's
 * memory reader and is bounded (TEXT_MAX).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_descriptor_internal.h"
#include "ws_dwtype.h"
#include "ws_grow.h"

/* ---- per tick: strings ---- */

void desc_arena_reset(struct arena *a)
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

void desc_string_cache_trim(struct state *s)
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
	desc_mem_readv(s, &r, 1);
	if (r.done == 0) {
		r.size = 8;
		desc_mem_readv(s, &r, 1);
	}
	return cache_add(s, address, text, strnlen(text, r.done));
}

/* A length-prefixed string object at `address` (Crystal's String). */
const char *desc_target_prefixed(struct state *s, uint64_t address)
{
	if (!address)
		return NULL;
	const char *hit = cache_find(s, address);
	if (hit)
		return hit;
	const struct ws_dwfield *lf = ws_dwpath_last(&s->d.name_length);
	uint8_t lb[16];
	uint64_t len;
	struct ws_error *err = lf->size <= sizeof(lb) ? desc_mem_read(s, address + lf->offset, lb, (size_t)lf->size)
						      : &ws_error_nomem;
	struct ws_dwfield at = *lf;
	at.offset = 0;
	if (!err)
		err = ws_dwtype_field_uint(&at, lb, (size_t)lf->size, &len);
	if (err) {
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
		desc_mem_readv(s, &r, 1);
	return cache_add(s, address, text, r.done);
}

/* A char array or char pointer member `path` of the task. */
const char *desc_task_string(struct state *s, const struct ws_dwpath *path,
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
			err = desc_mem_read(s, at, text, n);
		if (err) {
			ws_error_destroy(err);
			return NULL;
		}
		return keep_string(s, text, strnlen(text, n));
	}
	struct ws_error *err = desc_task_uint(s, path, address, tb, &v);
	if (err) {
		ws_error_destroy(err);
		return NULL;
	}
	return target_cstring(s, v);
}

/* Wait-reason bits as "time|msg", in the order of their values. */
const char *desc_reason_bits(struct state *s, uint64_t v)
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
