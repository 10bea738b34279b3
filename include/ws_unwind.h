/*
 * ws_unwind: turns a snapshot into return addresses, after the target has
 * been resumed. libunwind's remote interface with wallspy's own accessors:
 * registers and stack memory come from the snapshot; other memory (unwind
 * tables, code) from the live process through a small page cache; unwind
 * table lookup goes through libunwind-ptrace's _UPT_find_proc_info.
 */
#ifndef WS_UNWIND_H
#define WS_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ws_error.h"
#include "ws_snapshot.h"

struct ws_unwinder;

/* One unwound frame. */
struct ws_pc {
	uint64_t pc;
	bool is_return_address;  /* look up at pc - 1 */
};

struct ws_error *ws_unwinder_create(pid_t pid, struct ws_unwinder **ret);
void ws_unwinder_destroy(struct ws_unwinder *unwinder);

/* Forgets cached memory of the previous tick (call once per tick). */
void ws_unwinder_new_tick(struct ws_unwinder *unwinder);

/* Forgets everything derived from the old program image (after exec). */
void ws_unwinder_flush(struct ws_unwinder *unwinder);

/* Unwinds one snapshot into pcs[0..max), innermost first; returns the
 * count. *stop_reason is NULL for a complete stack, else why the unwind
 * ended early ("stack deeper than --max-stack", "unwind failed: ..."),
 * a static string. Cost: ~1 us per frame with warm caches. */
size_t ws_unwind(struct ws_unwinder *unwinder, const struct ws_snapshot *snap,
		 struct ws_pc *pcs, size_t max, const char **stop_reason);

#endif
