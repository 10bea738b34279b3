/*
 * go_fidelity: compares wallspy's `dump --json` of a Go program with the
 * program's own goroutine traceback (go_traceback.h: runtime.Stack(buf,
 * true), or the SIGQUIT dump), goroutine by goroutine, and says how they
 * differ. The truth is Go's; the rules for what Go leaves out (unexported
 * runtime functions, the middle of deep stacks) are Go's own, from
 * runtime/traceback.go. Used by the fidelity tests of the Go fixtures and of
 * a real Go server. Running programs is left to the tests.
 */
#ifndef WS_GO_FIDELITY_H
#define WS_GO_FIDELITY_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "elf_util.h"
#include "go_traceback.h"

/* One frame of a goroutine in wallspy's dump. */
struct go_dump_frame {
	char *name;           /* generics normalized to "[...]" as Go prints
	                         them; NULL when unsymbolized */
	const char *raw_name; /* as wallspy printed it (the DWARF name) */
	const char *file;
	long line;
	bool inlined;
	unsigned long address;
};

/* One task of wallspy's dump (strings borrowed from the cJSON tree). */
struct go_dump_goroutine {
	long id;
	const char *state;
	const char *wait_reason;
	const char *error;
	bool locked_to_thread;
	/* "created_by" (NULL function: none). */
	char *created_by;     /* generics normalized */
	const char *created_by_file;
	long created_by_line;
	long created_by_goid; /* -1: not known */
	struct go_dump_frame *frames;   /* innermost first */
	size_t nframes;
};

struct go_dump {
	struct go_dump_goroutine *goroutines;
	size_t n;
};

/* Reads the tasks of a parsed `dump --json` (root must outlive the dump). */
struct go_dump go_dump_load(const cJSON *root);
void go_dump_free(struct go_dump *dump);
const struct go_dump_goroutine *go_dump_find(const struct go_dump *dump,
					     long id);

/* Go prints a generic function's type arguments as "[...]"; DWARF spells
 * the shape ("main.f[go.shape.int_0]"). Returns a new string with every
 * outermost bracket group replaced by "[...]". */
char *go_normalize_generics(const char *name);

/* The kinds of disagreement. */
enum go_mismatch {
	GO_MM_MISSING,       /* goroutine Go printed, absent from wallspy's */
	GO_MM_EXTRA,         /* goroutine only wallspy listed */
	GO_MM_STATE,         /* wait reason / status */
	GO_MM_LOCKED,        /* "locked to thread" */
	GO_MM_FRAMES,        /* a Go frame missing or out of order */
	GO_MM_LINE,          /* same functions, a file:line differs */
	GO_MM_INLINED,       /* inlined marker */
	GO_MM_PC,            /* return address != entry + Go's +0x offset */
	GO_MM_EXTRA_FRAME,   /* a frame Go would have printed but did not */
	GO_MM_ELIDED,        /* not the N frames Go said it elided */
	GO_MM_CREATED_BY,    /* creator function, location or goroutine */
	GO_MM_KINDS
};

struct go_fidelity {
	size_t go_goroutines, ws_goroutines;
	size_t parked;        /* parked in Go's traceback and in wallspy's */
	size_t exact;         /* of those, no mismatch at all */
	size_t elisions;      /* parked stacks with Go's elision line */
	size_t kinds[GO_MM_KINDS];  /* goroutines with each mismatch */
};

struct go_fidelity_options {
	/* Go's traceback shows runtime frames (GOTRACEBACK=system, and the
	 * SIGQUIT dump): then they are compared too. */
	bool go_shows_runtime;
	/* Goroutines allowed only in wallspy's dump: those whose entry (the
	 * frame above runtime.goexit) is in package runtime (wallspy was
	 * asked for system goroutines, which runtime.Stack leaves out). */
	bool allow_system_extra;
};

/*
 * Compares every goroutine of Go's traceback with wallspy's dump:
 *  - the goroutine sets (missing, extra);
 *  - for every goroutine: "created by" (function with generics normalized,
 *    file:line of the go statement, and the creating goroutine where Go
 *    prints it, Go >= 1.21);
 *  - for every parked one (Go's state neither running nor runnable): the
 *    state (Go's bracket is the wait reason of a waiting goroutine, else
 *    the status, "syscall"), "locked to thread", and the frames: Go's
 *    frames appear in wallspy's, in order, with the same function, file:
 *    line, inlined marker and return address (the function's .symtab
 *    entry in st + Go's "+0x" offset); every wallspy frame Go did not
 *    print is one Go hides (an unexported runtime function, unless
 *    go_shows_runtime), or lies where Go cut the stack: beyond its first
 *    100 physical frames (Go 1.19, 1.20), or in the gap of "...N frames
 *    elided..." (Go >= 1.21), which must hold exactly the N frames Go
 *    would have printed.
 * Every mismatch is logged with both chains.
 */
void go_fidelity_compare(const struct ws_go_traceback *tb,
			 const struct go_dump *dump,
			 const struct e2e_symtab *st,
			 const struct go_fidelity_options *options,
			 struct go_fidelity *ret);

/* Logs the totals and the count of each mismatch kind, prefixed `what`. */
void go_fidelity_log(const struct go_fidelity *r, const char *what);

/* Whether Go's state text is a parked one (neither running nor runnable). */
bool go_state_is_parked(const char *go_state);

/* The frames of a wallspy goroutine as "a:12 <- b:7 (inl) <- c:3 x97",
 * innermost first (a new string). */
char *go_dump_chain_text(const struct go_dump_goroutine *g);

#endif
