/*
 * ws_unwind: turns a snapshot into return addresses, after the target has
 * been resumed. Two backends share wallspy's memory accessors (registers and
 * stack memory from the snapshot; other memory, such as unwind tables and
 * code, from the live process through a small page cache):
 *  - libunwind's remote interface, unwind tables found through
 *    libunwind-ptrace's _UPT_find_proc_info (the default: C, C++, Rust);
 *  - libdwfl's frame unwinder over the symbols' Dwfl, which reads
 *    .debug_frame as well as .eh_frame: Go binaries have only .debug_frame,
 *    and libunwind as packaged falls back to frame pointers there.
 *    Measured on go_fidelity (105 parked goroutines, Go 1.19): with libdw
 *    every goroutine's stack contains Go's own traceback frames in order;
 *    with libunwind 5 do not: goroutines in a syscall (g.syscallsp gives no
 *    frame pointer) end after their first frame.
 */
#ifndef WS_UNWIND_H
#define WS_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <elfutils/libdwfl.h>

#include "ws_error.h"
#include "ws_snapshot.h"

struct ws_unwinder;

/* One unwound frame. */
struct ws_pc {
	uint64_t pc;
	bool is_return_address;  /* look up at pc - 1 */
};

enum ws_unwind_backend {
	WS_UNWIND_LIBUNWIND,
	WS_UNWIND_LIBDW,
};

/* `dwfl` (borrowed; may be NULL when the libdw backend is never used) is
 * the symbols' Dwfl: the libdw backend attaches its own thread callbacks to
 * it once. */
struct ws_error *ws_unwinder_create(pid_t pid, Dwfl *dwfl,
				    struct ws_unwinder **ret);

/* Chooses the backend for the following unwinds (default libunwind). */
struct ws_error *ws_unwinder_set_backend(struct ws_unwinder *unwinder,
					 enum ws_unwind_backend backend);
void ws_unwinder_destroy(struct ws_unwinder *unwinder);

enum ws_unwind_backend ws_unwinder_backend(const struct ws_unwinder *unwinder);

/* Frames deeper than this are not learnt by the step cache. */
enum { WS_STEP_LEARN_FRAMES = 1024 };

/* For code whose frame sizes are fixed per pc (Go: no alloca, CFA always
 * sp + constant): the libdw backend learns, from its own unwinds, how far
 * each pc's caller frame lies, and later walks stacks with that table
 * alone (about 50 ns a frame instead of 1 us), falling back to libdw for
 * any pc not learnt. A pc seen with two different steps is never guessed. */
void ws_unwinder_use_step_cache(struct ws_unwinder *unwinder, bool on);

/* Unwinds with steps read once per pc from the modules' CFI
 * (ws_unwind_cfi.h) where every frame of a stack has a rule they keep,
 * with the backend otherwise; for code whose frame sizes are not fixed
 * per pc (C, C++: the learnt steps above need them fixed). */
void ws_unwinder_use_cfi_steps(struct ws_unwinder *unwinder, bool on);

/* How many stacks the CFI steps unwound alone, without the backend. */
size_t ws_unwinder_cfi_stacks(const struct ws_unwinder *unwinder);

/* Forgets the CFI steps (the module list changed). */
void ws_unwinder_forget_steps(struct ws_unwinder *unwinder);

/* Forgets cached memory of the previous tick (call once per tick). */
void ws_unwinder_new_tick(struct ws_unwinder *unwinder);

/* Unwinds one snapshot into pcs[0..max), innermost first; returns the
 * count. *stop_reason is NULL for a complete stack, else why the unwind
 * ended early ("stack deeper than --max-stack", "unwind failed: ..."),
 * a static string. Cost: ~1 us per frame with warm caches. */
size_t ws_unwind(struct ws_unwinder *unwinder, const struct ws_snapshot *snap,
		 struct ws_pc *pcs, size_t max, const char **stop_reason);

/* Whether the last ws_unwind (libunwind's) found no unwind table for a pc
 * inside a module the Dwfl knows (its file is deleted, or it is the vDSO:
 * libunwind-ptrace opens files by their /proc/PID/maps path) and guessed
 * its caller from frame pointers: libdw, which reads through the Dwfl,
 * may do better. */
bool ws_unwinder_guessed(const struct ws_unwinder *unwinder);

#endif
