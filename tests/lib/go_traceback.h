/*
 * go_traceback: parses the text of Go's own goroutine traceback — the output
 * of runtime.Stack(buf, true) or of a GOTRACEBACK=all crash/SIGQUIT dump —
 * into goroutines, states, frames and "created by" lines. It is the ground
 * truth the end-to-end tests compare wallspy's Go stacks with. Only the text
 * format is known here; running fixtures is left to the tests.
 */
#ifndef WS_GO_TRACEBACK_H
#define WS_GO_TRACEBACK_H

#include <stdbool.h>
#include <stddef.h>

#include "ws_error.h"

/* One printed frame: the two lines
 *	main.(*T).Method(0xc000010000, {0x1, 0x2})
 *		/src/x.go:42 +0x1d
 * or, for a frame the compiler inlined into the one below it,
 *	main.helper(...)
 *		/src/x.go:17
 */
struct ws_go_frame {
	char *function;       /* as printed, with package path, receiver and
	                         "[...]" of generics: "main.(*T).Method",
	                         "main.worker.func1", "net.(*conn).Read" */
	char *args;           /* text between the argument parentheses:
	                         "0xc000010000, {0x1, 0x2}", "" or "..." */
	char *file;           /* absolute source path as printed */
	int line;
	bool inlined;         /* printed as "NAME(...)": inlined into the next
	                         frame (which is its caller) */
	bool has_pc_offset;   /* "+0x1d" present (absent on inlined frames and
	                         when the pc is the function's entry) */
	unsigned long pc_offset;  /* pc - function entry when has_pc_offset */
};

struct ws_go_goroutine {
	long goid;
	char *raw_state;      /* bracket contents as printed, e.g.
	                         "chan receive, 10 minutes, locked to thread" */
	char *state;          /* raw_state without the " (scan)", ", N minutes",
	                         ", locked to thread" and ", synctest bubble N"
	                         suffixes: the wait reason
	                         ("chan receive", "semacquire", "IO wait", ...) or
	                         the status ("running", "runnable", "syscall") */
	int wait_minutes;     /* the ", N minutes" suffix; 0 when absent */
	bool locked_to_thread;
	bool scan;            /* " (scan)": GC was scanning its stack */
	long synctest_bubble; /* ", synctest bubble N" (Go >= 1.25); 0: none */
	struct ws_go_frame *frames;  /* innermost first, as printed */
	size_t nframes;
	bool frames_elided;   /* "...additional frames elided..." (Go 1.19 and
	                         1.20: after the first 100 frames) or "...N
	                         frames elided..." (Go >= 1.21: between the
	                         innermost 50 and the outermost 50) */
	size_t elided_at;     /* frames printed before the elision line (the
	                         gap lies between frames[elided_at - 1] and
	                         frames[elided_at]); nframes when none */
	long elided_count;    /* the N of "...N frames elided..." (frames
	                         Go would have printed); -1 when not said */
	bool stack_unavailable;  /* "goroutine running on other thread; stack
	                            unavailable" (crash dumps only) */
	size_t nancestors;    /* "[originating from goroutine N]:" sections
	                         (GODEBUG=tracebackancestors); their frames are
	                         skipped */
	bool has_created_by;  /* false for goroutine 1 and runtime.main's kin */
	char *created_by;     /* creating function: "main.startAll" */
	long created_by_goid; /* "created by F in goroutine N" (Go >= 1.21);
	                         -1 when not printed (Go 1.19) */
	char *created_by_file;
	int created_by_line;
};

struct ws_go_traceback {
	struct ws_go_goroutine *goroutines;  /* in printed order */
	size_t ngoroutines;
};

/*
 * Parses `len` bytes of traceback text. Lines outside goroutine sections (a
 * panic message, "SIGQUIT: quit", register dumps, "exit status 2") are
 * ignored; inside a section (from "goroutine N [...]:" to a blank line) every
 * line must be understood, else the error names the line number and text.
 * On success *ret is a new traceback (free with ws_go_traceback_destroy).
 * Cost: linear in the text, one allocation per string.
 */
struct ws_error *ws_go_traceback_parse(const char *text, size_t len,
				       struct ws_go_traceback **ret);

/* Reads the file at path and parses it as ws_go_traceback_parse does. */
struct ws_error *ws_go_traceback_parse_file(const char *path,
					    struct ws_go_traceback **ret);

/* Frees tb and everything it owns; accepts NULL. */
void ws_go_traceback_destroy(struct ws_go_traceback *tb);

/* The goroutine with id goid, or NULL. Linear scan. */
const struct ws_go_goroutine *
ws_go_traceback_find(const struct ws_go_traceback *tb, long goid);

/* Index of the first frame of g whose function is exactly `function`, or -1. */
long ws_go_goroutine_find_frame(const struct ws_go_goroutine *g,
				const char *function);

#endif
