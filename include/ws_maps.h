/*
 * ws_maps: the target's memory map (/proc/PID/maps), parsed once and looked
 * up by address, to bound stack copies by the mapping that holds the stack.
 */
#ifndef WS_MAPS_H
#define WS_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ws_error.h"

struct ws_mapping {
	uint64_t start, end;  /* [start, end) */
	unsigned prot;        /* PROT_READ | PROT_WRITE | PROT_EXEC */
};

struct ws_maps {
	pid_t pid;
	struct ws_mapping *mappings;  /* sorted by start */
	size_t n, capacity;
	uint64_t generation;          /* bumped on every reload */
};

void ws_maps_init(struct ws_maps *maps, pid_t pid);
void ws_maps_deinit(struct ws_maps *maps);

/* Re-reads /proc/PID/maps (~20-100 us). */
struct ws_error *ws_maps_reload(struct ws_maps *maps);

/* The mapping containing address, or NULL (binary search). */
const struct ws_mapping *ws_maps_find(const struct ws_maps *maps,
				      uint64_t address);

#endif
