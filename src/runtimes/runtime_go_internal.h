/*
 * Private to the Go adapter: runtime_go.c (goroutines),
 * runtime_go_layout.c (the runtime's DWARF layout, found at attach) and
 * runtime_go_labels.c (their runtime/pprof labels).
 */
#ifndef WS_RUNTIME_GO_INTERNAL_H
#define WS_RUNTIME_GO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ws_dwtype.h"
#include "ws_error.h"
#include "ws_runtime.h"

struct go_labels;

/* What a goroutine status means here. */
enum g_kind {
	GK_UNKNOWN,      /* a status this adapter does not know */
	GK_SKIP,         /* no goroutine: idle, dead, dead-extra, unused */
	GK_RUNNABLE,
	GK_RUNNING,
	GK_SYSCALL,
	GK_WAITING,
	GK_COPYSTACK,
	GK_PREEMPTED,
	GK_LEAKED,       /* Go 1.26: parked forever, found by the GC */
};

enum {
	MAX_REASONS = 128,
	MAX_STATUS = 64,      /* statuses above: unknown */
	BATCH = 1024,         /* IOV_MAX */
	G_RUN_MAX = 64 << 10, /* bytes of neighbouring gs read as one range */
	G_BATCH = 256 << 10,  /* bytes of gs read per batch */
};

/* Whose a goroutine is, from its start function (Go's isSystemGoroutine). */
enum g_owner {
	OWNER_USER,
	OWNER_SYSTEM,
	OWNER_FINALIZER,  /* the runtime's, unless it runs user finalizers */
	OWNER_CLEANUP,    /* the runtime's, unless it runs user cleanups */
};

struct gfields {
	struct ws_dwfield goid, status, waitreason, m, stack_lo, stack_hi,
		sched_pc, sched_sp, sched_bp, syscallsp, syscallpc, gopc,
		startpc;
	/* Not in every release. */
	struct ws_dwfield tracking_seq, syscallbp, parent_goid, lockedm,
		labels, running_cleanups, bubble;
	bool has_tracking_seq, has_syscallbp, has_parent_goid, has_lockedm,
		has_labels, has_running_cleanups, has_bubble;
};

struct mfields {
	struct ws_dwfield procid, curg, vdso_sp, vdso_pc;
};

struct go_state {
	struct ws_runtime_caps caps;
	pid_t pid;
	struct ws_dwtype_program *prog;
	struct ws_dwobj allgs, allglen;
	struct gfields g;
	struct mfields m;
	uint64_t g_lo, g_hi;      /* window of runtime.g read per goroutine */
	uint64_t guard_lo, guard_hi; /* the live reads' guard inside it */
	uint64_t m_lo, m_hi;
	uint8_t kind_of[MAX_STATUS];
	uint64_t scan_bit;
	char *reasons[MAX_REASONS];
	char *leaked_reasons[MAX_REASONS];   /* "REASON (leaked)" */
	/* "REASON (durable)" where runtime.isIdleInSynctest says a reason
	 * blocks a bubble's goroutine durably and the name does not say so
	 * already; NULL elsewhere. */
	char *durable_reasons[MAX_REASONS];
	/* How Go's traceback names a goroutine's bubble (resolve_bubble):
	 * "synctest bubble" or "synctest group", the path from the bubble to
	 * the number it prints, and whether it adds " (durable)". */
	const char *bubble_kind;
	struct ws_dwpath bubble_id;
	bool has_bubble_id, bubble_durable;
	char *unknown_states[MAX_STATUS];    /* "state N", made when seen */
	size_t nreasons;
	/* The strings could not be read yet (a position-independent binary
	 * launched by record: at exec, before the dynamic loader has
	 * relocated the array's pointers, they are 0): read again at the
	 * next tick. */
	bool reasons_pending;
	/* Whether the finalizer goroutine runs user code: fingStatus's
	 * fingRunningFinalizer bit (Go >= 1.20) or fingRunning (1.19). */
	struct ws_dwobj fing;
	bool has_fing, fing_is_status;
	uint64_t fing_running_bit;
	int fing_running;         /* per tick: -1 unread, 0, 1 */
	/* The functions of package runtime but those that start user
	 * goroutines, sorted by address: [lo, hi) and whose a goroutine that
	 * starts there is. */
	struct runtime_func { uint64_t lo, hi; enum g_owner owner; } *rfuncs;
	size_t nrfuncs, rfuncs_capacity;
	struct go_labels *labels;
	/* per tick */
	uint64_t *gptrs;
	size_t gptrs_capacity;
	uint8_t *gbuf;            /* G_BATCH bytes of g windows (read_gs) */
	struct g_slot { uint64_t address; size_t index; } *gsorted;
	size_t gsorted_capacity;
	struct { uint64_t address; uint8_t *bytes; } *ms;
	size_t nms, ms_capacity;
	/* The Ms seen running a goroutine since the tick's list, by their
	 * thread: where a held thread's current goroutine is read. */
	struct { pid_t tid; uint64_t address; } *thread_ms;
	size_t nthread_ms, thread_ms_capacity;
};

/* The layout of runtime.g and runtime.m (fields by name), into s->g, s->m
 * and the windows read per tick. Errors: a field every release has is
 * missing or not a plain integer or pointer. */
struct ws_error *go_resolve_g(struct go_state *s);
/* The goroutine states and _Gscan by the target's constants (Go's values
 * where one is missing), into s->kind_of and s->scan_bit. */
void go_resolve_states(struct go_state *s);
/* Where the finalizer goroutine says it runs user finalizers (s->fing). */
void go_resolve_finalizer(struct go_state *s);
/* The target's wait-reason strings, with their " (leaked)" and
 * " (durable)" forms; missing strings only cost the reason text. An
 * element whose string cannot be read leaves none read and
 * s->reasons_pending set. */
void go_read_wait_reasons(struct go_state *s);
void go_forget_wait_reasons(struct go_state *s);

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
