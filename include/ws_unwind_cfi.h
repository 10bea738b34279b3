/*
 * ws_unwind_cfi: unwinding with steps read from each pc's CFI once and kept,
 * for the rules that need no register but sp and rbp: the caller's frame
 * (CFA) at sp or rbp plus a constant, the return address and rbp saved at
 * constant offsets from it (or rbp unchanged), and the end of the stack
 * where the CFI leaves the return address undefined. That is what
 * compilers emit for nearly every pc of x86-64 code with or without frame
 * pointers; anything else (a signal frame, a CFA in another register or an
 * expression, a pc without CFI) is left to the full unwinders, for the
 * whole stack. Used by ws_unwind (unwind.c) before libunwind or libdw: a
 * step it knows costs a table lookup and a word read, where libunwind's
 * cached step costs two sigprocmask calls (its cache lock) and libdw's a
 * CFI interpretation.
 */
#ifndef WS_UNWIND_CFI_H
#define WS_UNWIND_CFI_H

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>

#include "ws_snapshot.h"
#include "ws_unwind.h"

struct ws_cfi_steps;

/* NULL when out of memory. */
struct ws_cfi_steps *ws_cfi_steps_create(void);
void ws_cfi_steps_destroy(struct ws_cfi_steps *steps);

/* Forgets every step (the module list changed: a pc without CFI before
 * may have it now). */
void ws_cfi_steps_clear(struct ws_cfi_steps *steps);

/* Reads the target's word at addr (from the snapshot, else its memory);
 * 0 on success. */
typedef int (*ws_cfi_read_fn)(void *arg, uint64_t addr, uint64_t *out);

/* Unwinds snap's stack with steps from the CFI of dwfl's modules: up to
 * max pcs into pcs, innermost first, frame 0 a return address unless
 * snap->pc_exact. Returns 0 when some frame's rule is not one it keeps or
 * a read fails (the caller unwinds the stack with a full unwinder, which
 * also says why a stack is cut short), else the frames, ending where the
 * CFI ends the stack, at a zero return address, where the caller's frame
 * leaves the task's stack or at max ("stack deeper than the frame limit"
 * in *stop_reason). */
size_t ws_cfi_unwind(struct ws_cfi_steps *steps, Dwfl *dwfl,
		     const struct ws_snapshot *snap, ws_cfi_read_fn read,
		     void *arg, struct ws_pc *pcs, size_t max,
		     const char **stop_reason);

#endif
