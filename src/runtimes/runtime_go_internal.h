/*
 * Private to the Go adapter: runtime_go.c (goroutines) and
 * runtime_go_labels.c (their runtime/pprof labels).
 */
#ifndef WS_RUNTIME_GO_INTERNAL_H
#define WS_RUNTIME_GO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ws_dwtype.h"
#include "ws_error.h"

struct go_labels;

/* Finds how the target keeps label sets (the DWARF type
 * runtime/pprof.labelMap). Errors: the program has no such type (it never
 * imports runtime/pprof: no goroutine has labels) or a form not known. */
struct ws_error *go_labels_create(struct ws_dwtype_program *prog,
				  struct go_labels **ret);
void go_labels_destroy(struct go_labels *labels);

/* Forgets the sets read in the last tick (their strings too). */
void go_labels_new_tick(struct go_labels *labels);

/* The labels of the set at `address` (a g.labels; 0: none) as key, value,
 * key, value, ... sorted by key; *n pairs. Valid until the next
 * go_labels_new_tick. Decoded once per tick per set (a few reads: the
 * slice, or the map's buckets, and each string); a set that cannot be read
 * has no labels. */
const char *const *go_labels_read(struct go_labels *labels, uint64_t address,
				  size_t *n);

#endif
