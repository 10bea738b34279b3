/*
 * /proc/PID/maps parsing and address lookup (see ws_maps.h).
 */
#include "ws_maps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ws_grow.h"

void ws_maps_init(struct ws_maps *maps, pid_t pid)
{
	memset(maps, 0, sizeof(*maps));
	maps->pid = pid;
}

void ws_maps_deinit(struct ws_maps *maps)
{
	free(maps->mappings);
	memset(maps, 0, sizeof(*maps));
}

struct ws_error *ws_maps_reload(struct ws_maps *maps)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", maps->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return ws_error_from_errno(errno, WS_ERR_OTHER, "read %s", path);
	maps->n = 0;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end;
		char perms[8];
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &start, &end,
			   perms) != 3)
			goto skip;
		if (!ws_grow((void **)&maps->mappings, &maps->capacity,
			     maps->n + 1, sizeof(*maps->mappings))) {
			fclose(f);
			return &ws_error_nomem;
		}
		struct ws_mapping *m = &maps->mappings[maps->n++];
		m->start = start;
		m->end = end;
		m->prot = (perms[0] == 'r' ? PROT_READ : 0) |
			  (perms[1] == 'w' ? PROT_WRITE : 0) |
			  (perms[2] == 'x' ? PROT_EXEC : 0);
skip:
		/* Lines longer than the buffer: swallow the rest. */
		while (!strchr(line, '\n') && fgets(line, sizeof(line), f))
			;
	}
	fclose(f);
	maps->generation++;
	return NULL;
}

const struct ws_mapping *ws_maps_find(const struct ws_maps *maps,
				      uint64_t address)
{
	size_t lo = 0, hi = maps->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ws_mapping *m = &maps->mappings[mid];
		if (address < m->start)
			hi = mid;
		else if (address >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}
