/*
 * Goroutine labels (runtime/pprof.Do, SetGoroutineLabels) read from the
 * target: g.labels points at a runtime/pprof.labelMap, which Go has kept in
 * two forms, both found by DWARF names:
 *  - Go 1.24 on: a struct holding a sorted slice of key/value strings
 *    (labelMap{LabelSet{list []label{key, value}}}; 1.26 spells it
 *    labelMap{Set{List []Label{Key, Value}}});
 *  - Go 1.19 to 1.23: map[string]string, a pointer to the runtime's
 *    hash<string,string> (count, B, buckets, oldbuckets) of
 *    bucket<string,string> (tophash[8], keys[8], values[8], overflow); a
 *    cell whose tophash is at least minTopHash (5) holds an entry, in the
 *    buckets or, during a grow, in an old bucket not yet evacuated.
 * A label set is never changed once a goroutine points at it (pprof makes a
 * new one), so each distinct pointer is decoded once per tick.
 */
#include "runtime_go_internal.h"

#include <stdlib.h>
#include <string.h>

#include "ws_grow.h"

enum {
	MAX_LABELS = 64,        /* pairs kept per set */
	MAX_LABEL_LEN = 256,    /* bytes kept per key or value */
	MAP_MAX_B = 6,          /* 2^B buckets read at most (512 cells) */
	BUCKET_CELLS = 8,
	MIN_TOP_HASH = 5,       /* runtime/map.go's minTopHash */
};

struct label_set {
	uint64_t address;       /* the labelMap g.labels points at */
	const char **pairs;     /* key, value, key, value, ... (owned) */
	size_t n;               /* pairs */
};

struct go_labels {
	struct ws_dwtype_program *prog;
	struct ws_dwtype map_type;      /* runtime/pprof.labelMap */
	bool is_map;                    /* Go <= 1.23 */
	const char *list_path, *key, *value;
	struct label_set *sets;         /* this tick's */
	size_t nsets, sets_cap;
};

static const char *const list_paths[] = { "Set.List", "LabelSet.list" };
static const char *const key_names[] = { "Key", "key" };
static const char *const value_names[] = { "Value", "value" };

struct ws_error *go_labels_create(struct ws_dwtype_program *prog,
				  struct go_labels **ret)
{
	*ret = NULL;
	struct go_labels *l = calloc(1, sizeof(*l));
	if (!l)
		return &ws_error_nomem;
	l->prog = prog;
	/* Absent when the program never imports runtime/pprof: then no
	 * goroutine has labels. */
	struct ws_error *err = ws_dwtype_find_type(prog, NULL,
						   "runtime/pprof.labelMap",
						   &l->map_type);
	if (err) {
		free(l);
		return err;
	}
	l->is_map = ws_dwtype_kind(&l->map_type) == WS_DWTYPE_POINTER;
	if (!l->is_map) {
		struct ws_dwfield f;
		for (size_t i = 0; i < 2 && !l->list_path; i++) {
			struct ws_error *e = ws_dwtype_field(prog, &l->map_type,
							     list_paths[i], &f);
			if (!e)
				l->list_path = list_paths[i];
			ws_error_destroy(e);
		}
		if (!l->list_path) {
			free(l);
			return ws_error_create(WS_ERR_NO_DEBUGINFO,
					       "go: runtime/pprof.labelMap has no label list");
		}
	}
	*ret = l;
	return NULL;
}

static void free_sets(struct go_labels *l)
{
	for (size_t i = 0; i < l->nsets; i++) {
		for (size_t k = 0; k < 2 * l->sets[i].n; k++)
			free((char *)l->sets[i].pairs[k]);
		free(l->sets[i].pairs);
	}
	l->nsets = 0;
}

void go_labels_new_tick(struct go_labels *l)
{
	free_sets(l);
}

void go_labels_destroy(struct go_labels *l)
{
	if (!l)
		return;
	free_sets(l);
	free(l->sets);
	free(l);
}

static bool read_string(const struct ws_dwobj *obj, char **ret)
{
	char buf[MAX_LABEL_LEN];
	size_t len;
	struct ws_error *err = ws_dwtype_read_gostring(obj, buf, sizeof(buf),
						       &len);
	if (err) {
		ws_error_destroy(err);
		return false;
	}
	*ret = strdup(buf);
	return *ret != NULL;
}

static bool add_pair(struct label_set *set, char *key, char *value)
{
	if (set->n == MAX_LABELS) {
		free(key);
		free(value);
		return false;
	}
	set->pairs[2 * set->n] = key;
	set->pairs[2 * set->n + 1] = value;
	set->n++;
	return true;
}

/* A member by the first of two names that exists. */
static struct ws_error *member2(const struct ws_dwobj *obj,
				const char *const names[2],
				struct ws_dwobj *ret)
{
	struct ws_error *err = ws_dwtype_member(obj, names[0], ret);
	if (!err)
		return NULL;
	ws_error_destroy(err);
	return ws_dwtype_member(obj, names[1], ret);
}

/* Go >= 1.24: the slice of labels. */
static void read_list(struct go_labels *l, const struct ws_dwobj *map,
		      struct label_set *set)
{
	struct ws_dwobj list, elem, key, value;
	struct ws_dwslice slice;
	struct ws_error *err = ws_dwtype_member(map, l->list_path, &list);
	if (!err)
		err = ws_dwtype_slice(&list, &slice);
	for (uint64_t i = 0; !err && i < slice.len && i < MAX_LABELS; i++) {
		char *k = NULL, *v = NULL;
		err = ws_dwtype_slice_at(&slice, i, &elem);
		if (!err)
			err = member2(&elem, key_names, &key);
		if (!err)
			err = member2(&elem, value_names, &value);
		if (!err && read_string(&key, &k) && read_string(&value, &v))
			add_pair(set, k, v);
		else {
			free(k);
			free(v);
		}
	}
	ws_error_destroy(err);
}

/* The live cells of one bucket and its overflow chain. */
static void read_bucket_chain(const struct ws_dwobj *bucket0,
			      struct label_set *set)
{
	struct ws_dwobj bucket = *bucket0;
	for (int chain = 0; chain < 16; chain++) {
		uint8_t bytes[1024];
		struct ws_dwobj b, tophash, keys, values, cell, next;
		struct ws_error *err = bucket.size <= sizeof(bytes)
			? ws_dwtype_load(&bucket, bytes, sizeof(bytes), &b)
			: ws_error_create(WS_ERR_OTHER, "bucket too large");
		if (!err)
			err = ws_dwtype_member(&b, "tophash", &tophash);
		if (!err)
			err = ws_dwtype_member(&b, "keys", &keys);
		if (!err)
			err = ws_dwtype_member(&b, "values", &values);
		for (uint64_t i = 0; !err && i < BUCKET_CELLS; i++) {
			uint64_t top;
			char *k = NULL, *v = NULL;
			err = ws_dwtype_index(&tophash, i, &cell);
			if (!err)
				err = ws_dwtype_read_uint(&cell, &top);
			if (err || top < MIN_TOP_HASH)
				continue;
			struct ws_dwobj ko, vo;
			err = ws_dwtype_index(&keys, i, &ko);
			if (!err)
				err = ws_dwtype_index(&values, i, &vo);
			if (!err && read_string(&ko, &k) && read_string(&vo, &v))
				add_pair(set, k, v);
			else {
				free(k);
				free(v);
			}
		}
		uint64_t overflow = 0;
		if (!err)
			err = ws_dwtype_member(&b, "overflow", &next);
		if (!err)
			err = ws_dwtype_read_pointer(&next, &overflow);
		if (err || !overflow) {
			ws_error_destroy(err);
			return;
		}
		err = ws_dwtype_deref(&next, &bucket);
		if (err) {
			ws_error_destroy(err);
			return;
		}
	}
}

/* 2^B buckets at the array member `name` of the hash ("buckets",
 * "oldbuckets": then 2^(B-1)); a null array is none. */
static void read_buckets(const struct ws_dwobj *hash, const char *name,
			 uint64_t count, struct label_set *set)
{
	struct ws_dwobj array, first, bucket;
	uint64_t address = 0, size;
	struct ws_error *err = ws_dwtype_member(hash, name, &array);
	if (!err)
		err = ws_dwtype_read_pointer(&array, &address);
	if (!err && address)
		err = ws_dwtype_deref(&array, &first);
	if (!err && address)
		err = ws_dwtype_sizeof(&first, &size);
	for (uint64_t i = 0; !err && address && i < count; i++) {
		err = ws_dwtype_object(first.prog, &first.type,
				       address + i * size, &bucket);
		if (!err)
			read_bucket_chain(&bucket, set);
	}
	ws_error_destroy(err);
}

/* Go <= 1.23: the map. */
static void read_map(const struct ws_dwobj *map, struct label_set *set)
{
	struct ws_dwobj hash, b, old;
	uint64_t nb = 0, oldbuckets = 0;
	struct ws_error *err = ws_dwtype_deref(map, &hash);
	if (!err)
		err = ws_dwtype_member(&hash, "B", &b);
	if (!err)
		err = ws_dwtype_read_uint(&b, &nb);
	if (!err && nb > MAP_MAX_B)
		nb = MAP_MAX_B;
	if (!err)
		read_buckets(&hash, "buckets", 1ull << nb, set);
	if (!err && !ws_dwtype_member(&hash, "oldbuckets", &old) &&
	    !ws_dwtype_read_pointer(&old, &oldbuckets) && oldbuckets && nb)
		read_buckets(&hash, "oldbuckets", 1ull << (nb - 1), set);
	ws_error_destroy(err);
}

static int compare_pairs(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char *const *go_labels_read(struct go_labels *l, uint64_t address,
				  size_t *n)
{
	*n = 0;
	if (!address)
		return NULL;
	for (size_t i = 0; i < l->nsets; i++)
		if (l->sets[i].address == address) {
			*n = l->sets[i].n;
			return l->sets[i].pairs;
		}
	if (!ws_grow((void **)&l->sets, &l->sets_cap, l->nsets + 1,
		     sizeof(*l->sets)))
		return NULL;
	struct label_set *set = &l->sets[l->nsets];
	*set = (struct label_set){ .address = address };
	set->pairs = calloc(2 * MAX_LABELS, sizeof(*set->pairs));
	if (!set->pairs)
		return NULL;
	l->nsets++;
	struct ws_dwobj map;
	struct ws_error *err = ws_dwtype_object(l->prog, &l->map_type, address,
						&map);
	if (!err) {
		if (l->is_map)
			read_map(&map, set);
		else
			read_list(l, &map, set);
	}
	ws_error_destroy(err);
	/* Sorted by key, as Go 1.24+ keeps them and prints them. */
	qsort(set->pairs, set->n, 2 * sizeof(*set->pairs), compare_pairs);
	*n = set->n;
	return set->pairs;
}
