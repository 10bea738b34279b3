/*
 * pprof writer (see ws_pprof.h): a small protobuf encoder for the fields of
 * pprof's profile.proto, streamed through zlib's gzip. The Profile message
 * is a sequence of top-level fields, so each sample, location, function and
 * string is encoded on its own and written as soon as it is first needed;
 * protobuf readers gather repeated fields wherever they appear (the string
 * table included: its indices are its entries' order). Field numbers are
 * pprof's (proto/profile.proto, which `go tool pprof` decodes).
 */
#include "ws_pprof.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ws_grow.h"
#include "ws_hash.h"

/* profile.proto's field numbers. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12, PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
	MAPPING_ID = 1, MAPPING_MEMORY_START = 2, MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4, MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7, MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9, MAPPING_HAS_INLINE_FRAMES = 10,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4, FUNCTION_START_LINE = 5,
};

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* --- protobuf encoding into a growable buffer --- */

struct pb {
	uint8_t *data;
	size_t len, capacity;
	bool nomem;
};

static void pb_bytes(struct pb *b, const void *bytes, size_t n)
{
	if (b->nomem || !ws_grow((void **)&b->data, &b->capacity, b->len + n, 1)) {
		b->nomem = true;
		return;
	}
	memcpy(b->data + b->len, bytes, n);
	b->len += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t out[10];
	size_t n = 0;
	do {
		out[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	pb_bytes(b, out, n);
}

static void pb_tag(struct pb *b, int field, int wire)
{
	pb_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

/* A varint field; proto3 leaves zeros out. int64 values go as their two's
 * complement. */
static void pb_uint(struct pb *b, int field, uint64_t v)
{
	if (!v)
		return;
	pb_tag(b, field, WIRE_VARINT);
	pb_varint(b, v);
}

static void pb_message(struct pb *b, int field, const struct pb *m)
{
	pb_tag(b, field, WIRE_LEN);
	pb_varint(b, m->len);
	pb_bytes(b, m->data, m->len);
	if (m->nomem)
		b->nomem = true;
}

/* A packed repeated varint field. */
static void pb_packed(struct pb *b, struct pb *scratch, int field,
		      const uint64_t *v, size_t n)
{
	scratch->len = 0;
	for (size_t i = 0; i < n; i++)
		pb_varint(scratch, v[i]);
	pb_message(b, field, scratch);
}

/* --- a map from byte strings to ids (strings, functions, locations) --- */

struct id_slot {
	uint64_t hash;
	size_t offset, len;  /* into the map's keys */
	uint64_t id;         /* 0: empty slot */
};

struct id_map {
	struct id_slot *slots;
	size_t capacity, count;
	struct pb keys;
};

/* The id of key, or 0 after making room for it: *slot_out is where the
 * caller's new id goes (id_map_set). False when out of memory. */
static bool id_map_find(struct id_map *m, const void *key, size_t len,
			uint64_t *id, size_t *slot_out)
{
	if ((m->count + 1) * 2 > m->capacity) {
		size_t capacity = m->capacity ? m->capacity * 2 : 1024;
		struct id_slot *slots = calloc(capacity, sizeof(*slots));
		if (!slots)
			return false;
		struct id_slot *old = m->slots;
		size_t old_capacity = m->capacity;
		m->slots = slots;
		m->capacity = capacity;
		for (size_t i = 0; i < old_capacity; i++) {
			const struct id_slot *o = &old[i];
			if (!o->id)
				continue;
			size_t j = o->hash & (capacity - 1);
			while (m->slots[j].id)
				j = (j + 1) & (capacity - 1);
			m->slots[j] = *o;
		}
		free(old);
	}
	uint64_t hash = ws_hash_bytes(key, len, 0);
	size_t mask = m->capacity - 1;
	size_t i = hash & mask;
	for (; m->slots[i].id; i = (i + 1) & mask) {
		if (m->slots[i].hash == hash && m->slots[i].len == len &&
		    memcmp(m->keys.data + m->slots[i].offset, key, len) == 0) {
			*id = m->slots[i].id;
			return true;
		}
	}
	*id = 0;
	*slot_out = i;
	m->slots[i].hash = hash;
	m->slots[i].offset = m->keys.len;
	m->slots[i].len = len;
	pb_bytes(&m->keys, key, len);
	return !m->keys.nomem;
}

static void id_map_set(struct id_map *m, size_t slot, uint64_t id)
{
	m->slots[slot].id = id;
	m->count++;
}

static void id_map_free(struct id_map *m)
{
	free(m->slots);
	free(m->keys.data);
}

/* --- the writer --- */

/* `top` collects encoded top-level fields (strings as they are first
 * used, then the function, location or sample that uses them); `msg` is
 * the message being built, `sub` one of its sub-messages, `scratch` a
 * packed field or a map key. */

struct pprof_writer {
	const struct ws_profile *profile;
	z_stream z;
	FILE *file;
	bool failed;          /* compression or write error */
	bool nomem;
	struct pb top;        /* one top-level field at a time */
	struct pb msg, sub, scratch;
	struct id_map strings, functions, locations;
	uint64_t nstrings, nfunctions, nlocations;
	/* Per line: its function id (0: not yet), its mapping id. */
	uint64_t *line_function;
	uint64_t *ids;        /* a sample's location ids */
	size_t ids_capacity;
	const char *task_label;
	uint64_t key_state, key_reason, key_task, key_thread, key_name;
};

/* Compresses and writes what `top` holds, then empties it. */
static void flush_top(struct pprof_writer *w, int flush)
{
	if (w->top.nomem)
		w->nomem = true;
	if (w->failed || w->nomem) {
		w->top.len = 0;
		return;
	}
	uint8_t out[16384];
	w->z.next_in = w->top.data;
	w->z.avail_in = (uInt)w->top.len;
	int rc;
	do {
		w->z.next_out = out;
		w->z.avail_out = sizeof(out);
		rc = deflate(&w->z, flush);
		if (rc == Z_STREAM_ERROR) {
			w->failed = true;
			break;
		}
		size_t n = sizeof(out) - w->z.avail_out;
		if (n && fwrite(out, 1, n, w->file) != n) {
			w->failed = true;
			break;
		}
	} while (w->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
	w->top.len = 0;
}

static void emit(struct pprof_writer *w, int field, const struct pb *m)
{
	pb_message(&w->top, field, m);
	if (w->top.len >= 65536)
		flush_top(w, Z_NO_FLUSH);
}

/* The string table index of s (NULL: ""), adding it on first use. */
static uint64_t string_id(struct pprof_writer *w, const char *s)
{
	if (!s || !*s)
		return 0;
	size_t len = strlen(s), slot;
	uint64_t id;
	if (!id_map_find(&w->strings, s, len, &id, &slot)) {
		w->nomem = true;
		return 0;
	}
	if (id)
		return id;
	id = ++w->nstrings;
	id_map_set(&w->strings, slot, id);
	pb_tag(&w->top, PROFILE_STRING_TABLE, WIRE_LEN);
	pb_varint(&w->top, len);
	pb_bytes(&w->top, s, len);
	return id;
}

static void emit_value_type(struct pprof_writer *w, int field,
			    const char *type, const char *unit)
{
	uint64_t t = string_id(w, type), u = string_id(w, unit);
	w->msg.len = 0;
	pb_uint(&w->msg, VALUE_TYPE_TYPE, t);
	pb_uint(&w->msg, VALUE_TYPE_UNIT, u);
	emit(w, field, &w->msg);
}

/* Mapping ids are module indices + 1. */
static uint64_t mapping_id(const struct pprof_writer *w, const char *module)
{
	if (!module)
		return 0;
	size_t n = ws_profile_module_count(w->profile);
	for (size_t i = 0; i < n; i++)
		if (strcmp(ws_profile_module(w->profile, i)->name, module) == 0)
			return i + 1;
	return 0;
}

static void emit_mappings(struct pprof_writer *w)
{
	size_t n = ws_profile_module_count(w->profile);
	for (size_t i = 0; i < n; i++) {
		const struct ws_profile_module *m = ws_profile_module(w->profile, i);
		uint64_t file = string_id(w, m->path ? m->path : m->name);
		uint64_t build_id = string_id(w, m->build_id);
		w->msg.len = 0;
		pb_uint(&w->msg, MAPPING_ID, i + 1);
		pb_uint(&w->msg, MAPPING_MEMORY_START, m->start);
		pb_uint(&w->msg, MAPPING_MEMORY_LIMIT, m->limit);
		pb_uint(&w->msg, MAPPING_FILE_OFFSET, m->offset);
		pb_uint(&w->msg, MAPPING_FILENAME, file);
		pb_uint(&w->msg, MAPPING_BUILD_ID, build_id);
		/* Named by wallspy: pprof must not symbolize again. */
		pb_uint(&w->msg, MAPPING_HAS_FUNCTIONS, 1);
		pb_uint(&w->msg, MAPPING_HAS_FILENAMES, 1);
		pb_uint(&w->msg, MAPPING_HAS_LINE_NUMBERS, 1);
		pb_uint(&w->msg, MAPPING_HAS_INLINE_FRAMES, 1);
		emit(w, PROFILE_MAPPING, &w->msg);
	}
}

/* The function of a line, (name, file) as pprof's granularity is,
 * emitted on first use. */
static uint64_t function_id(struct pprof_writer *w, uint32_t line_index)
{
	if (w->line_function[line_index])
		return w->line_function[line_index];
	const struct ws_profile_line *line =
		ws_profile_line(w->profile, line_index);
	const char *file = line->file ? line->file : "";
	size_t nlen = strlen(line->name), flen = strlen(file);
	w->scratch.len = 0;
	pb_bytes(&w->scratch, line->name, nlen + 1);
	pb_bytes(&w->scratch, file, flen);
	if (w->scratch.nomem) {
		w->nomem = true;
		return 0;
	}
	uint64_t id;
	size_t slot;
	if (!id_map_find(&w->functions, w->scratch.data, w->scratch.len, &id,
			 &slot)) {
		w->nomem = true;
		return 0;
	}
	if (!id) {
		id = ++w->nfunctions;
		id_map_set(&w->functions, slot, id);
		uint64_t name = string_id(w, line->name);
		uint64_t system_name = string_id(w, line->system_name
							    ? line->system_name
							    : line->name);
		uint64_t filename = string_id(w, line->file);
		w->msg.len = 0;
		pb_uint(&w->msg, FUNCTION_ID, id);
		pb_uint(&w->msg, FUNCTION_NAME, name);
		pb_uint(&w->msg, FUNCTION_SYSTEM_NAME, system_name);
		pb_uint(&w->msg, FUNCTION_FILENAME, filename);
		emit(w, PROFILE_FUNCTION, &w->msg);
	}
	w->line_function[line_index] = id;
	return id;
}

/* The location of lines[0..n): one pc, its function outermost (lines[0])
 * and the calls inlined into it; emitted on first use. */
static uint64_t location_id(struct pprof_writer *w, const uint32_t *lines,
			    size_t n)
{
	uint64_t id;
	size_t slot;
	if (!id_map_find(&w->locations, lines, n * sizeof(*lines), &id,
			 &slot)) {
		w->nomem = true;
		return 0;
	}
	if (id)
		return id;
	id = ++w->nlocations;
	id_map_set(&w->locations, slot, id);
	/* Functions (and their strings) first: into `top` before the
	 * location, which is built in `msg` after. */
	uint64_t functions[64];
	size_t nf = n < 64 ? n : 64;
	for (size_t i = 0; i < nf; i++)
		functions[i] = function_id(w, lines[i]);
	const struct ws_profile_line *outer = ws_profile_line(w->profile,
							      lines[0]);
	const struct ws_profile_line *inner = ws_profile_line(w->profile,
							      lines[n - 1]);
	w->msg.len = 0;
	pb_uint(&w->msg, LOCATION_ID, id);
	pb_uint(&w->msg, LOCATION_MAPPING_ID, mapping_id(w, outer->module));
	pb_uint(&w->msg, LOCATION_ADDRESS, inner->address);
	/* Lines innermost first, as pprof lists inlined calls. */
	for (size_t k = nf; k-- > 0;) {
		const struct ws_profile_line *line =
			ws_profile_line(w->profile, lines[k]);
		w->sub.len = 0;
		pb_uint(&w->sub, LINE_FUNCTION_ID, functions[k]);
		pb_uint(&w->sub, LINE_LINE, (uint64_t)line->line);
		pb_message(&w->msg, LOCATION_LINE, &w->sub);
	}
	emit(w, PROFILE_LOCATION, &w->msg);
	return id;
}

static void label_str(struct pprof_writer *w, uint64_t key, const char *value)
{
	uint64_t v = string_id(w, value);
	w->sub.len = 0;
	pb_uint(&w->sub, LABEL_KEY, key);
	pb_uint(&w->sub, LABEL_STR, v);
	pb_message(&w->msg, SAMPLE_LABEL, &w->sub);
}

static void label_num(struct pprof_writer *w, uint64_t key, uint64_t value)
{
	w->sub.len = 0;
	pb_uint(&w->sub, LABEL_KEY, key);
	pb_uint(&w->sub, LABEL_NUM, value);
	pb_message(&w->msg, SAMPLE_LABEL, &w->sub);
}

static struct ws_error *write_sample(const struct ws_profile_sample *s,
				     void *arg)
{
	struct pprof_writer *w = arg;
	/* Locations leaf first: walk the root-first lines from the leaf,
	 * each location the run of lines inlined into one outer line. */
	size_t nids = 0;
	if (!ws_grow((void **)&w->ids, &w->ids_capacity, s->depth + 1,
		     sizeof(*w->ids)))
		return &ws_error_nomem;
	/* The root the runtime's own profiles leave out (Go's
	 * runtime.goexit), unless it is all there is or holds an inlined
	 * call. */
	size_t first = 0;
	const char *hidden = ws_profile_pprof_hidden_root(w->profile);
	if (hidden && s->depth > 1 &&
	    strcmp(ws_profile_line(w->profile, s->lines[0])->name, hidden) == 0 &&
	    !ws_profile_line(w->profile, s->lines[1])->inlined)
		first = 1;
	size_t end = s->depth;
	while (end > first) {
		size_t start = end - 1;
		while (start > first &&
		       ws_profile_line(w->profile, s->lines[start])->inlined)
			start--;
		w->ids[nids++] = location_id(w, s->lines + start, end - start);
		end = start;
	}
	const struct ws_profile_context *c = s->context;
	w->msg.len = 0;
	/* Strings of the labels go into `top` before the sample. */
	pb_packed(&w->msg, &w->scratch, SAMPLE_LOCATION_ID, w->ids, nids);
	uint64_t values[2] = {s->count, (uint64_t)llround(s->weight * 1e9)};
	pb_packed(&w->msg, &w->scratch, SAMPLE_VALUE, values, 2);
	label_str(w, w->key_state, ws_state_name(c->state));
	if (c->wait_reason)
		label_str(w, w->key_reason, c->wait_reason);
	/* An idle worker's id is its thread's, not a task's; an OS thread
	 * is its own task. */
	if (c->state != WS_STATE_IDLE && w->key_task)
		label_num(w, w->key_task, c->task_id);
	if (c->thread)
		label_num(w, w->key_thread, (uint64_t)c->thread);
	if (c->task_name)
		label_str(w, w->key_name, c->task_name);
	emit(w, PROFILE_SAMPLE, &w->msg);
	return w->nomem ? &ws_error_nomem : NULL;
}

static void write_header(struct pprof_writer *w)
{
	const struct ws_profile *p = w->profile;
	/* string_table[0] must be "". */
	pb_tag(&w->top, PROFILE_STRING_TABLE, WIRE_LEN);
	pb_varint(&w->top, 0);
	emit_value_type(w, PROFILE_SAMPLE_TYPE, "samples", "count");
	emit_value_type(w, PROFILE_SAMPLE_TYPE, "wall", "nanoseconds");
	emit_value_type(w, PROFILE_PERIOD_TYPE, "wall", "nanoseconds");
	pb_uint(&w->top, PROFILE_PERIOD,
		(uint64_t)llround(ws_profile_interval(p) * 1e9));
	pb_uint(&w->top, PROFILE_TIME_NANOS, ws_profile_start_time(p));
	pb_uint(&w->top, PROFILE_DURATION_NANOS,
		(uint64_t)llround(ws_profile_duration(p) * 1e9));
	pb_uint(&w->top, PROFILE_DEFAULT_SAMPLE_TYPE, string_id(w, "wall"));
	const char *title = ws_profile_title(p);
	if (title) {
		char *comment;
		if (asprintf(&comment, "wallspy " WS_VERSION ": %s", title) >= 0) {
			pb_uint(&w->top, PROFILE_COMMENT, string_id(w, comment));
			free(comment);
		}
	}
	const char *runtime = ws_profile_runtime(p);
	w->task_label = runtime && strcmp(runtime, "go") == 0 ? "goroutine"
							       : "task_id";
	w->key_state = string_id(w, "state");
	w->key_reason = string_id(w, "wait_reason");
	w->key_task = runtime && strcmp(runtime, "threads") == 0
			      ? 0
			      : string_id(w, w->task_label);
	w->key_thread = string_id(w, "thread_id");
	w->key_name = string_id(w, "task_name");
	emit_mappings(w);
}

struct ws_error *ws_write_pprof(const struct ws_profile *profile, FILE *file)
{
	struct pprof_writer w = {.profile = profile, .file = file};
	/* 15 + 16: a gzip wrapper, as pprof's files are. */
	if (deflateInit2(&w.z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return ws_error_create(WS_ERR_OTHER, "write pprof profile: zlib: %s",
				       w.z.msg ? w.z.msg : "cannot start");
	w.line_function = calloc(ws_profile_line_count(profile) + 1,
				 sizeof(*w.line_function));
	struct ws_error *err = w.line_function ? NULL : &ws_error_nomem;
	errno = 0;
	if (!err) {
		write_header(&w);
		err = ws_profile_visit_samples(profile, write_sample, &w);
	}
	if (!err)
		flush_top(&w, Z_FINISH);
	deflateEnd(&w.z);
	free(w.line_function);
	free(w.ids);
	free(w.top.data);
	free(w.msg.data);
	free(w.sub.data);
	free(w.scratch.data);
	id_map_free(&w.strings);
	id_map_free(&w.functions);
	id_map_free(&w.locations);
	if (err)
		return err;
	if (w.nomem)
		return &ws_error_nomem;
	if (w.failed || fflush(file) != 0 || ferror(file))
		return ws_error_create(WS_ERR_OUTPUT, "write pprof profile: %s",
				       strerror(errno ? errno : EIO));
	return NULL;
}
