/*
 * The data model every stage shares: a symbolized frame and the task states.
 * Unwinders produce addresses; ws_symbols turns each address into one or more
 * ws_frame (inlined calls expanded); the profile and the dump consume them.
 */
#ifndef WS_FRAME_H
#define WS_FRAME_H

#include <stdbool.h>
#include <stdint.h>

/* A task's scheduling state. The names (ws_state_name) are the ones users see
 * in leaf frames ("[running]", "[waiting: futex]") and in dump output; they
 * serve every runtime. */
enum ws_state {
	WS_STATE_RUNNING,   /* on a CPU (or, for OS threads, ready to run) */
	WS_STATE_RUNNABLE,  /* ready, waiting for a worker / CPU */
	WS_STATE_WAITING,   /* blocked; wait_reason says on what */
	WS_STATE_SYSCALL,   /* inside a system call (green-thread runtimes) */
	WS_STATE_IDLE,      /* a worker with no task */
	WS_STATE_UNKNOWN,
};

/* "running", "runnable", "waiting", "syscall", "idle", "unknown". */
const char *ws_state_name(enum ws_state state);

/* One symbolized frame. Strings are owned by whoever produced the frame (the
 * symbol cache keeps them for its lifetime) and may be NULL when unknown. */
struct ws_frame {
	uint64_t address;      /* the pc as unwound (return address for callers) */
	const char *function;  /* demangled function name, NULL if unknown */
	const char *linkage_name; /* its mangled (linkage) name, NULL if none */
	const char *file;      /* source file, NULL if unknown */
	int line;              /* source line, 0 if unknown */
	const char *module;    /* basename of the ELF module, NULL if unmapped */
	uint64_t module_offset;/* address - module load base */
	bool inlined;          /* an inlined call expanded from `address` */
	/* `address` is a return address: the call is the instruction that
	 * ends there, named from address - 1. */
	bool return_address;
	/* A compiler-made wrapper (DWARF's DW_AT_trampoline: Go's wrappers of
	 * go statements and methods), which runtimes may hide. */
	bool wrapper;
};

#endif
