/*
 * Fuzz target: both unwinders (ws_unwind.h), and the CFI steps before
 * them (ws_unwind_cfi.h), over a hostile stack copy. The
 * input is a task's saved registers and the bytes of its stack, as a
 * runtime's registry or a thread's stack would hand them over; the code
 * they point into is this process's own (its functions, libc's), so the
 * unwind tables are real and the frames the bytes fabricate are not. The
 * copy stands at an address nothing is mapped at, so every read beyond it
 * fails as it would for a stack that ends there. An unwind must end
 * cleanly on any bytes: no crash, at most the frames asked for, and a
 * reason whenever it stops short.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ws_symbols.h"
#include "ws_unwind.h"

enum { MAX_FRAMES = 256 };

/* Far from any mapping of this process (checked at setup). */
static const uint64_t stack_base = UINT64_C(0x5a5a00000000);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ws_symbols *symbols;
static struct ws_unwinder *unwinder;
static uint64_t code[8];

__attribute__((noinline)) static int leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) static int middle(int x)
{
	return leaf(x) + 2;
}

static void setup(void)
{
	struct ws_error *err = ws_symbols_create(getpid(), &symbols);
	if (!err)
		err = ws_unwinder_create(getpid(), ws_symbols_dwfl(symbols),
					 &unwinder);
	if (err) {
		fprintf(stderr, "fuzz_unwind: %s\n", err->message);
		abort();
	}
	/* Places code really is: the registers' pc is one of these, moved by
	 * the input, or the input's own value. */
	code[0] = (uint64_t)(uintptr_t)&leaf;
	code[1] = (uint64_t)(uintptr_t)&middle;
	code[2] = (uint64_t)(uintptr_t)&LLVMFuzzerTestOneInput;
	code[3] = (uint64_t)(uintptr_t)&memcpy;
	code[4] = (uint64_t)(uintptr_t)&nanosleep;
	code[5] = (uint64_t)(uintptr_t)&qsort;
	code[6] = (uint64_t)(uintptr_t)&fprintf;
	code[7] = (uint64_t)(uintptr_t)&clock_gettime;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!unwinder)
		setup();
	/* Header: pick, pc offset, sp offset, bp, rbx, r12..r15; then the
	 * stack. */
	enum { HEADER = 1 + 2 + 2 + 6 * 8 };
	if (size < HEADER)
		return 0;
	uint8_t pick = data[0];
	uint16_t pc_off, sp_off;
	memcpy(&pc_off, data + 1, 2);
	memcpy(&sp_off, data + 3, 2);
	uint64_t more[6];
	memcpy(more, data + 5, sizeof(more));

	struct ws_snapshot snap;
	memset(&snap, 0, sizeof(snap));
	uint64_t pc = (pick & 0x80) ? more[5]
				    : code[pick % 8] + (pc_off % 512);
	snap.stack = data + HEADER;
	snap.stack_size = size - HEADER;
	snap.stack_start = stack_base;
	snap.stack_lo = (pick & 0x20) ? 0 : stack_base - 4096;
	snap.stack_hi = (pick & 0x20) ? 0 : stack_base + snap.stack_size;
	snap.truncated = pick & 0x10;
	snap.pc_exact = pick & 0x08;
	snap.regs.value[WS_REG_RIP] = pc;
	snap.regs.value[WS_REG_RSP] = stack_base + (sp_off % 64);
	snap.regs.value[WS_REG_RBP] = more[0];
	snap.regs.value[WS_REG_RBX] = more[1];
	snap.regs.value[WS_REG_R12] = more[2];
	snap.regs.value[13] = more[3];
	snap.regs.value[14] = more[4];
	snap.regs.valid = (1u << WS_REG_RIP) | (1u << WS_REG_RSP) |
			  (1u << WS_REG_RBP) | (1u << WS_REG_RBX) |
			  (1u << WS_REG_R12) | (1u << 13) | (1u << 14);

	struct ws_error *err = ws_unwinder_set_backend(
		unwinder, (pick & 0x40) ? WS_UNWIND_LIBDW : WS_UNWIND_LIBUNWIND);
	if (err) {
		ws_error_destroy(err);
		return 0;
	}
	ws_unwinder_use_step_cache(unwinder, pick & 0x04);
	/* The CFI steps on most inputs, as for every C stack wallspy reads
	 * (the low bits also pick the code). */
	ws_unwinder_use_cfi_steps(unwinder, (pick & 0x03) != 0);
	ws_unwinder_new_tick(unwinder);
	static struct ws_pc pcs[MAX_FRAMES];
	const char *reason = NULL;
	size_t n = ws_unwind(unwinder, &snap, pcs, MAX_FRAMES, &reason);
	if (n > MAX_FRAMES)
		abort();
	/* Naming what was unwound must hold up too. */
	for (size_t k = 0; k < n && k < 8; k++)
		ws_symbols_lookup(symbols, pcs[k].pc, pcs[k].is_return_address);
	return 0;
}
