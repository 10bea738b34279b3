/*
 * The Go adapter's layout lookup, done once at attach: the fields of
 * runtime.g and runtime.m it reads (by DWARF names, newer layouts first),
 * the goroutine states by the runtime's named constants, where the
 * finalizer goroutine says it runs user code, and the target's wait-reason
 * strings. The per-tick reads that use them are runtime_go.c's.
 */
#include "runtime_go_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ws_dwtype.h"

/* runtime2.go's goroutine states, read from the target's DWARF constants;
 * the values are Go's (unchanged since 1.0 but for additions), used when a
 * constant is missing. -1: a state only some releases have. */
static const struct {
	const char *name;
	int64_t value;
	enum g_kind kind;
} g_states[] = {
	{ "runtime._Gidle", 0, GK_SKIP },
	{ "runtime._Grunnable", 1, GK_RUNNABLE },
	{ "runtime._Grunning", 2, GK_RUNNING },
	{ "runtime._Gsyscall", 3, GK_SYSCALL },
	{ "runtime._Gwaiting", 4, GK_WAITING },
	{ "runtime._Gmoribund_unused", 5, GK_SKIP },
	{ "runtime._Gdead", 6, GK_SKIP },
	{ "runtime._Genqueue_unused", 7, GK_SKIP },
	{ "runtime._Gcopystack", 8, GK_COPYSTACK },
	{ "runtime._Gpreempted", 9, GK_PREEMPTED },
	{ "runtime._Gleaked", -1, GK_LEAKED },
	/* A dead goroutine kept for a C thread's calls into Go. */
	{ "runtime._Gdeadextra", -1, GK_SKIP },
};

/* --- setup --- */

static struct ws_error *field(struct go_state *s, const struct ws_dwtype *t,
			      const char *const *paths, struct ws_dwfield *ret)
{
	/* Candidates in order: a newer layout first, then older ones. */
	struct ws_error *err = NULL;
	for (const char *const *p = paths; *p; p++) {
		ws_error_destroy(err);
		err = ws_dwtype_field(s->prog, t, *p, ret);
		if (!err)
			return NULL;
	}
	return err;
}

#define FIELD(s, t, out, ...) \
	field((s), (t), (const char *const[]){__VA_ARGS__, NULL}, (out))

static void widen(uint64_t *lo, uint64_t *hi, const struct ws_dwfield *f)
{
	if (f->offset < *lo)
		*lo = f->offset;
	if (f->offset + f->size > *hi)
		*hi = f->offset + f->size;
}

/* The fast decoding in get() holds for plain integers and pointers. */
static struct ws_error *check_plain(const struct ws_dwfield *f,
				    const char *name)
{
	bool integer = f->kind == WS_DWTYPE_UNSIGNED ||
		       f->kind == WS_DWTYPE_SIGNED ||
		       f->kind == WS_DWTYPE_POINTER;
	if (!integer || f->bit_size || f->size == 0 || f->size > 8)
		return ws_error_create(WS_ERR_NO_DEBUGINFO,
				       "go: field '%s' is not a plain integer or pointer in this Go version",
				       name);
	return NULL;
}

/* A field some releases have: *has says whether this one does. */
static void optional_field(struct go_state *s, const struct ws_dwtype *gt,
			   const char *const *paths, struct ws_dwfield *f,
			   bool *has)
{
	struct ws_error *err = field(s, gt, paths, f);
	if (!err)
		err = check_plain(f, paths[0]);
	*has = !err;
	ws_error_destroy(err);
	if (*has)
		widen(&s->g_lo, &s->g_hi, f);
}

#define OPTIONAL(s, t, out, has, ...) \
	optional_field((s), (t), (const char *const[]){__VA_ARGS__, NULL}, \
		       (out), (has))

/* The goroutine's testing/synctest bubble and how Go's traceback
 * (goroutineheader) names it, decided by the field's name: g.bubble (Go >=
 * 1.25), a *synctestBubble printed as ", synctest bubble " + its id, with
 * " (durable)" after the wait reasons isIdleInSynctest marks; g.syncGroup
 * (1.24, GOEXPERIMENT=synctest), a *synctestGroup printed as ", synctest
 * group " + the goid of its root (synctest.Run's caller), and no
 * " (durable)". A layout not understood costs the suffix only. */
static void resolve_bubble(struct go_state *s, const struct ws_dwtype *gt)
{
	static const struct {
		const char *field, *kind, *id_path;
		bool durable;
	} forms[] = {
		{ "bubble", "synctest bubble", "id", true },
		{ "syncGroup", "synctest group", "root->goid", false },
	};
	struct gfields *g = &s->g;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]) &&
			   !g->has_bubble; i++) {
		OPTIONAL(s, gt, &g->bubble, &g->has_bubble, forms[i].field);
		if (!g->has_bubble)
			continue;
		s->bubble_kind = forms[i].kind;
		s->bubble_durable = forms[i].durable;
		struct ws_dwtype bt;
		struct ws_error *err = ws_dwtype_target(&g->bubble.type, &bt);
		if (!err)
			err = ws_dwtype_path(s->prog, &bt, forms[i].id_path,
					     &s->bubble_id);
		s->has_bubble_id = !err;
		ws_error_destroy(err);
	}
}

struct ws_error *go_resolve_g(struct go_state *s)
{
	struct ws_dwtype gt;
	struct ws_error *err = ws_dwtype_find_type(s->prog, NULL, "runtime.g",
						   &gt);
	if (err)
		return err;
	struct gfields *g = &s->g;
	if ((err = FIELD(s, &gt, &g->goid, "goid")) ||
	    /* Go 1.20 made atomicstatus an atomic.Uint32. */
	    (err = FIELD(s, &gt, &g->status, "atomicstatus.value", "atomicstatus")) ||
	    (err = FIELD(s, &gt, &g->waitreason, "waitreason")) ||
	    (err = FIELD(s, &gt, &g->m, "m")) ||
	    (err = FIELD(s, &gt, &g->stack_lo, "stack.lo")) ||
	    (err = FIELD(s, &gt, &g->stack_hi, "stack.hi")) ||
	    (err = FIELD(s, &gt, &g->sched_pc, "sched.pc")) ||
	    (err = FIELD(s, &gt, &g->sched_sp, "sched.sp")) ||
	    (err = FIELD(s, &gt, &g->sched_bp, "sched.bp")) ||
	    (err = FIELD(s, &gt, &g->syscallsp, "syscallsp")) ||
	    (err = FIELD(s, &gt, &g->syscallpc, "syscallpc")) ||
	    (err = FIELD(s, &gt, &g->gopc, "gopc")) ||
	    (err = FIELD(s, &gt, &g->startpc, "startpc")))
		return err;
	const struct ws_dwfield *all[] = {
		&g->goid, &g->status, &g->waitreason, &g->m, &g->stack_lo,
		&g->stack_hi, &g->sched_pc, &g->sched_sp, &g->sched_bp,
		&g->syscallsp, &g->syscallpc, &g->gopc, &g->startpc,
	};
	s->g_lo = UINT64_MAX;
	s->g_hi = 0;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if ((err = check_plain(all[i], "runtime.g")))
			return err;
		widen(&s->g_lo, &s->g_hi, all[i]);
	}
	/* casgstatus bumps trackingSeq (a uint8, Go 1.17 on) every time a
	 * goroutine leaves _Grunning: with it, reads of a goroutine taken
	 * while the program runs can be checked (live reads). */
	OPTIONAL(s, &gt, &g->tracking_seq, &g->has_tracking_seq, "trackingSeq");
	/* The frame pointer at entersyscall, Go >= 1.23. */
	OPTIONAL(s, &gt, &g->syscallbp, &g->has_syscallbp, "syscallbp");
	/* The creating goroutine's id, Go >= 1.21. */
	OPTIONAL(s, &gt, &g->parent_goid, &g->has_parent_goid, "parentGoid");
	/* The guard of live reads (ws_task.guard_*): g.m, g.sched, the status
	 * and trackingSeq, and what lies between (schedlink, waitsince,
	 * preemption flags: a change there is rare and costs a retry). */
	if (g->has_tracking_seq) {
		const struct ws_dwfield *guarded[] = {
			&g->m, &g->sched_pc, &g->sched_sp, &g->sched_bp,
			&g->status, &g->tracking_seq,
		};
		s->guard_lo = UINT64_MAX;
		s->guard_hi = 0;
		for (size_t i = 0; i < sizeof(guarded) / sizeof(guarded[0]); i++)
			widen(&s->guard_lo, &s->guard_hi, guarded[i]);
	}
	/* Set by runtime.LockOSThread (a muintptr). */
	OPTIONAL(s, &gt, &g->lockedm, &g->has_lockedm, "lockedm");
	/* runtime/pprof's label set (unsafe.Pointer). */
	OPTIONAL(s, &gt, &g->labels, &g->has_labels, "labels");
	/* The cleanup goroutine runs user cleanups (Go >= 1.25). */
	OPTIONAL(s, &gt, &g->running_cleanups, &g->has_running_cleanups,
		 "runningCleanups.value", "runningCleanups");
	resolve_bubble(s, &gt);

	struct ws_dwtype mt;
	if ((err = ws_dwtype_find_type(s->prog, NULL, "runtime.m", &mt)))
		return err;
	struct mfields *m = &s->m;
	if ((err = FIELD(s, &mt, &m->procid, "procid")) ||
	    (err = FIELD(s, &mt, &m->curg, "curg")) ||
	    (err = FIELD(s, &mt, &m->vdso_sp, "vdsoSP")) ||
	    (err = FIELD(s, &mt, &m->vdso_pc, "vdsoPC")))
		return err;
	if ((err = check_plain(&m->procid, "runtime.m.procid")) ||
	    (err = check_plain(&m->curg, "runtime.m.curg")) ||
	    (err = check_plain(&m->vdso_sp, "runtime.m.vdsoSP")) ||
	    (err = check_plain(&m->vdso_pc, "runtime.m.vdsoPC")))
		return err;
	s->m_lo = UINT64_MAX;
	s->m_hi = 0;
	widen(&s->m_lo, &s->m_hi, &m->procid);
	widen(&s->m_lo, &s->m_hi, &m->curg);
	widen(&s->m_lo, &s->m_hi, &m->vdso_sp);
	widen(&s->m_lo, &s->m_hi, &m->vdso_pc);
	return NULL;
}

/* The goroutine states by their names in the target (a status no name
 * gives stays unknown, and is shown as such). */
void go_resolve_states(struct go_state *s)
{
	for (size_t i = 0; i < sizeof(g_states) / sizeof(g_states[0]); i++) {
		int64_t value;
		struct ws_error *err = ws_dwtype_constant(s->prog, NULL,
							  g_states[i].name,
							  &value);
		ws_error_destroy(err);
		if (err)
			value = g_states[i].value;
		if (value >= 0 && value < MAX_STATUS)
			s->kind_of[value] = (uint8_t)g_states[i].kind;
	}
	int64_t scan;
	struct ws_error *err = ws_dwtype_constant(s->prog, NULL,
						  "runtime._Gscan", &scan);
	ws_error_destroy(err);
	s->scan_bit = err || scan <= 0 ? 0x1000 : (uint64_t)scan;
}

/* Where the finalizer goroutine says whether it runs user finalizers. */
void go_resolve_finalizer(struct go_state *s)
{
	struct ws_error *err = ws_dwtype_global(s->prog, NULL,
						"runtime.fingStatus",
						&s->fing);
	if (!err) {
		/* atomic.Uint32 */
		struct ws_dwobj value;
		err = ws_dwtype_member(&s->fing, "value", &value);
		if (!err)
			s->fing = value;
		ws_error_destroy(err);
		int64_t bit;
		struct ws_error *cerr = ws_dwtype_constant(
			s->prog, NULL, "runtime.fingRunningFinalizer", &bit);
		ws_error_destroy(cerr);
		s->fing_running_bit = cerr || bit <= 0 ? 2 : (uint64_t)bit;
		s->fing_is_status = true;
		s->has_fing = true;
		return;
	}
	ws_error_destroy(err);
	err = ws_dwtype_global(s->prog, NULL, "runtime.fingRunning", &s->fing);
	s->has_fing = !err;
	ws_error_destroy(err);
}

/* Go's traceback (goroutineheader) prints " (durable)" after the wait
 * reason of a waiting goroutine in a synctest bubble when
 * runtime.isIdleInSynctest[reason] holds and the reason's name does not
 * end in "(durable)" already ("synctest.Run (durable)", but "chan receive
 * (durable)" as named). No such array (before 1.24): nothing to add. */
static void read_durable_reasons(struct go_state *s)
{
	struct ws_dwobj idle;
	struct ws_error *err = ws_dwtype_global(s->prog, NULL,
						"runtime.isIdleInSynctest",
						&idle);
	for (size_t i = 0; !err && i < s->nreasons; i++) {
		struct ws_dwobj flag;
		uint64_t durable = 0;
		const char *name = s->reasons[i];
		size_t len = strlen(name);

		err = ws_dwtype_index(&idle, i, &flag);
		if (!err)
			err = ws_dwtype_read_uint(&flag, &durable);
		if (err || !durable ||
		    (len >= 9 && strcmp(name + len - 9, "(durable)") == 0))
			continue;
		if (asprintf(&s->durable_reasons[i], "%s (durable)", name) < 0)
			s->durable_reasons[i] = NULL;
	}
	ws_error_destroy(err);
}

/* The target's own names of wait reasons (their order changes between Go
 * versions). Missing strings only cost the reason text. */
void go_forget_wait_reasons(struct go_state *s)
{
	for (size_t i = 0; i < s->nreasons; i++) {
		free(s->reasons[i]);
		free(s->leaked_reasons[i]);
		free(s->durable_reasons[i]);
		s->reasons[i] = s->leaked_reasons[i] = s->durable_reasons[i] = NULL;
	}
	s->nreasons = 0;
}

void go_read_wait_reasons(struct go_state *s)
{
	go_forget_wait_reasons(s);
	s->reasons_pending = false;
	struct ws_dwobj arr;
	struct ws_error *err = ws_dwtype_global(s->prog, NULL,
						"runtime.waitReasonStrings",
						&arr);
	if (err) {
		ws_error_destroy(err);
		return;
	}
	for (uint64_t i = 0; i < MAX_REASONS; i++) {
		struct ws_dwobj str;
		char buf[80];
		size_t len;
		/* Past the array's end: every reason read. */
		err = ws_dwtype_index(&arr, i, &str);
		if (err) {
			ws_error_destroy(err);
			break;
		}
		err = ws_dwtype_read_gostring(&str, buf, sizeof(buf), &len);
		if (err) {
			ws_error_destroy(err);
			go_forget_wait_reasons(s);
			s->reasons_pending = true;
			return;
		}
		s->reasons[i] = strdup(buf);
		if (asprintf(&s->leaked_reasons[i], "%s (leaked)", buf) < 0)
			s->leaked_reasons[i] = NULL;
		s->nreasons = i + 1;
	}
	read_durable_reasons(s);
}
