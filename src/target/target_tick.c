/*
 * One tick's stopping of the traced process (see ws_target.h): interrupt
 * the wanted threads, collect their stops with their registers, and resume
 * them, all at once (stop_all) or each as soon as it is read (a rolling
 * tick). The events met meanwhile are target_events.c's to handle.
 */
#include "target_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "ws_grow.h"

/* The wanted threads of a tick, by tid (the table may move while events
 * are handled): [0, next) were interrupted or found stopped, and
 * [first_pending, next) of those are not visited yet. Each pass over it
 * costs what the tick wants, not what the process has: a rolling tick of
 * 32 of 4,000 threads looks at 32. */
struct wanted {
	pid_t *tids;
	size_t n, next, first_pending;
};

/* Reads the registers of thread th, stopped; in a rolling tick, visits
 * and resumes it at once. Its hold is from the moment its stop was
 * collected to its resume, so waiting for its turn counts. True when its
 * registers were read. */
static bool take_stopped(struct ws_target *t, struct ws_thread *th,
			 ws_thread_visit_fn visit, void *arg,
			 uint64_t *longest_ns)
{
	th->visited = true;
	/* wallspy's own SIGINT/SIGTERM: the rest of a rolling tick is only
	 * let go (detached where the tick would detach), not read. */
	if (visit && ws_target_stop_requested()) {
		target_thread_resume(t, th);
		return false;
	}
	uint64_t start = ws_now_ns();
	if (ptrace(PTRACE_GETREGS, th->tid, 0, &th->regs) != 0) {
		/* A rolling tick has no resume_all to come: do not leave the
		 * thread in its stop. */
		if (visit)
			target_thread_resume(t, th);
		return false;
	}
	th->regs_valid = true;
	th->syscall = ws_syscall_current(th->tid, &th->regs,
					 &th->syscall_memory);
	if (!visit)
		return true;
	visit(th, arg);
	/* Its hold ends as its resume is asked for: the time wallspy then
	 * waits to run again, the woken thread running in its place, holds
	 * no one. */
	uint64_t now = ws_now_ns();
	target_thread_resume(t, th);
	/* Its registers stay this tick's for the adapter. */
	th->regs_valid = true;
	t->held_alone_ns += now - start;
	uint64_t held = now - (th->stop_seen_ns ? th->stop_seen_ns : now);
	if (held > *longest_ns)
		*longest_ns = held;
	return true;
}

/* Takes every pending wanted thread that has stopped (or will not: gone);
 * returns how many had their registers read. */
static size_t collect(struct ws_target *t, struct wanted *w,
		      ws_thread_visit_fn visit, void *arg, uint64_t *longest_ns)
{
	size_t n = 0;
	for (size_t i = w->first_pending; i < w->next; i++) {
		struct ws_thread *th = target_thread_find(t, w->tids[i]);
		bool done = !th || th->visited || th->run == WS_THREAD_GONE;
		if (!done && th->run == WS_THREAD_STOPPED) {
			n += take_stopped(t, th, visit, arg, longest_ns);
			done = true;
		}
		if (done) {
			/* Out of the pending range: swap it to its front. */
			pid_t tid = w->tids[i];
			w->tids[i] = w->tids[w->first_pending];
			w->tids[w->first_pending++] = tid;
		}
	}
	return n;
}

/* Seizes a thread known but not traced, for this tick. One that exits
 * meanwhile is gone; one that cannot be seized for another cause is
 * marked refused (its sample says so). */
static bool seize_for_tick(struct ws_target *t, struct ws_thread *th)
{
	if (ptrace(PTRACE_SEIZE, th->tid, 0, (void *)t->tracer->options) == 0) {
		th->traced = true;
		th->refused = false;
		return true;
	}
	struct ws_error *why = target_seize_refused("sample", t->pid, th->tid,
						    errno);
	if (why)
		th->refused = true;
	else
		th->run = WS_THREAD_GONE;
	ws_error_destroy(why);
	return false;
}

/* Interrupts wanted threads until `window` are pending (0: all). */
static void interrupt_more(struct ws_target *t, struct wanted *w,
			   size_t window)
{
	while (w->next < w->n &&
	       (!window || w->next - w->first_pending < window) &&
	       !ws_target_stop_requested()) {
		struct ws_thread *th = target_thread_find(t, w->tids[w->next++]);
		if (!th || th->run != WS_THREAD_RUNNING || th->interrupt_sent)
			continue;
		if (!th->traced && !seize_for_tick(t, th))
			continue;
		/* ESRCH: exiting; its exit status will tell. */
		if (ptrace(PTRACE_INTERRUPT, th->tid, 0, 0) == 0)
			th->interrupt_sent = true;
	}
}

/* Takes the waitpid statuses of the wanted threads still to stop, each by
 * its tid: the kernel answers a wait for one tid at once, while a wait for
 * any (-1) walks every tracee, taking the signal lock of each one already
 * stopped, so that collecting n stops that way takes n^2 / 2 of them (a
 * 512-thread dump here held its target 20 ms that way, 10 ms this way).
 * Returns how many statuses were taken. */
static size_t take_statuses(struct ws_target *t, struct wanted *w)
{
	size_t n = 0;
	for (size_t i = w->first_pending; i < w->next; i++) {
		struct ws_thread *th = target_thread_find(t, w->tids[i]);
		if (!th || !th->interrupt_sent || th->run != WS_THREAD_RUNNING)
			continue;
		int status;
		pid_t got = waitpid(w->tids[i], &status, __WALL | WNOHANG);
		if (got == w->tids[i]) {
			target_handle_status(t->tracer, t, got, status);
			n++;
		} else if (got < 0 && errno == ECHILD) {
			/* Not ours any more: nothing to wait for. */
			th->interrupt_sent = false;
		}
	}
	return n;
}

/*
 * While wallspy resumes held threads, and on a busy machine while it
 * stops, holds and resumes them (CONTENDED_NS), it runs SCHED_FIFO
 * priority 1 (what perf record -r asks for its whole run), when it may:
 * root or RLIMIT_RTPRIO; otherwise it runs as it is. On a busy machine a
 * thread it wakes (its resume) runs in its place, the scheduler favouring
 * a task that slept, while the threads still held wait in their stops
 * until wallspy runs again; and a stop it sleeps for is collected only
 * when the scheduler gets to it. Real-time, neither: a stop wakes it at
 * once, and what it wakes does not preempt it.
 * - under record of go_parked_n 10000, 3 ticks that held 6 threads took
 *   0.4-1.1 ms to resume them; real-time, 5 such ticks took 50-95 us to
 *   read their tasks and resume them;
 * - record of compute_threads 8 (8 busy threads on 2 cores), 3 runs:
 *   hold p99 3.8-3.9 ms and 91-130 missed ticks; real-time, 0.06 ms and
 *   14-21, wallspy's CPU the same (0.09-0.14 s, 0.10-0.12 s);
 * - bench row 7, 3 rounds each, the kernel's view of each stop: p99
 *   6.0, 12.2, 23.0 ms at 1,000 threads (42.1, 0.5, 4.7 at 4,000);
 *   real-time 9.9, 0.2, 6.5 ms (2.7, 1.0, 1.6), stops over 1 ms 2-7 %
 *   (1-6 %) against 0-2 % (1 %).
 */
struct rt_scope {
	bool boosted;    /* made real-time here, to be undone */
	bool realtime;   /* real-time now (boosted, or run so: chrt) */
	int policy;
	struct sched_param param;
};

static void rt_enter(struct ws_tracer *tr, struct rt_scope *rt)
{
	*rt = (struct rt_scope){.policy = sched_getscheduler(0)};
	if (rt->policy == SCHED_FIFO || rt->policy == SCHED_RR) {
		rt->realtime = true;
		return;
	}
	if (tr->realtime_allowed < 0 || rt->policy < 0 ||
	    sched_getparam(0, &rt->param) != 0)
		return;
	struct sched_param fifo = {.sched_priority = 1};
	rt->boosted = sched_setscheduler(0, SCHED_FIFO, &fifo) == 0;
	rt->realtime = rt->boosted;
	tr->realtime_allowed = rt->boosted ? 1 : -1;
}

static void rt_leave(const struct rt_scope *rt)
{
	if (rt->boosted)
		sched_setscheduler(0, rt->policy, &rt->param);
}

/* How long a tick not run real-time (rt_enter) polls for the stops it
 * waits for before it sleeps until SIGCHLD, counted from its start or the
 * last stop taken; real-time, it sleeps at once (polling, it would hold a
 * CPU that a thread to stop may need: 0.22 s of CPU against 0.10 s on
 * compute_threads 8, with no shorter holds). A stop comes
 * within tens of microseconds of its interrupt; sleeping for it instead
 * means waking when the scheduler gets to wallspy, which on a machine
 * busy with the target's own threads takes milliseconds, all of them
 * spent by the stopped thread in its stop. wakers 1000 10, attach -r 100
 * -d 5, each thread's stop as the kernel saw it (sched_switch to 't' until
 * its wakeup, perf record -a): p99 8.6 and 8.7 ms sleeping, 1.7 and 1.1 ms
 * polling for 300 us, wallspy's CPU the same (0.23-0.27 s against
 * 0.18-0.24 s). */
enum { STOP_SPIN_NS = 300 * 1000 };

/* How long stops run real-time once one was slower than the polling (a
 * busy machine), before a tick tries without again. Each real-time tick
 * costs two sched_setscheduler calls and a sleep per stop: on
 * parked_threads 64 (idle machine, a stop within the polling) 0.12-0.15 s
 * of CPU in 5 s and 514-618 samples against 0.11-0.12 s and 665-1289
 * without, 4 runs each; so only where stops are slow. One tick in 500
 * (5 s at 100 Hz) of a busy machine is then held as before. */
#define CONTENDED_NS (5 * 1000 * 1000 * 1000ULL)

/* Stops the wanted threads (see ws_target_stop_all). A rolling tick keeps
 * at most t->interrupt_window of them interrupted and not yet visited: a
 * thousand threads interrupted at once would each wait in its stop for the
 * ones before it. */
static void stop_wanted(struct ws_target *t, struct wanted *w, long timeout_ns,
			ws_thread_visit_fn visit, void *arg, size_t *stopped,
			uint64_t *longest_ns)
{
	uint64_t longest = 0;
	size_t window = visit ? t->interrupt_window : 0;
	struct rt_scope rt = {0};
	uint64_t start = ws_now_ns();
	if (start < t->tracer->contended_until_ns)
		rt_enter(t->tracer, &rt);
	size_t n = 0;
	uint64_t deadline = start + (uint64_t)timeout_ns;
	interrupt_more(t, w, window);
	/* The wanted threads' stops are taken by tid; every other status
	 * (a new thread's, an exit, a signal) only when a wake-up brought
	 * none of theirs, and once at the end, so that a foreign event
	 * waits at most this tick. */
	bool woken = false;
	uint64_t spin_until = ws_now_ns() + STOP_SPIN_NS;
	for (;;) {
		if (take_statuses(t, w))
			spin_until = ws_now_ns() + STOP_SPIN_NS;
		else if (woken)
			target_drain_events(t->tracer, t);
		woken = false;
		if (visit) {
			n += collect(t, w, visit, arg, &longest);
			interrupt_more(t, w, window);
		}
		/* wallspy's own SIGINT/SIGTERM ends the tick: what stopped
		 * is resumed, the rest is answered as it comes. */
		if (t->exited || ws_target_stop_requested())
			break;
		bool waiting = w->next < w->n;
		for (size_t i = w->first_pending; i < w->next && !waiting; i++) {
			struct ws_thread *th = target_thread_find(t, w->tids[i]);
			waiting = th && th->interrupt_sent &&
				  th->run == WS_THREAD_RUNNING;
		}
		if (!waiting)
			break;
		if (!rt.realtime && ws_now_ns() < spin_until) {
			/* The CPU to the target meanwhile: on a busy machine
			 * the thread to stop may be waiting for this one. */
			sched_yield();
			continue;
		}
		/* A stop slower than the polling: threads wait for a CPU. */
		if (!rt.realtime)
			t->tracer->contended_until_ns = ws_now_ns() + CONTENDED_NS;
		if (!target_wait_sigchld(deadline))
			break;
		woken = true;
	}
	target_drain_events(t->tracer, t);
	if (!visit)
		n += collect(t, w, NULL, NULL, &longest);
	rt_leave(&rt);
	*stopped = n;
	if (longest_ns)
		*longest_ns = longest;
}

/* A thread's marks of a tick, cleared. */
static void clear_marks(struct ws_thread *th)
{
	th->regs_valid = false;
	th->visited = false;
	th->wanted = false;
	th->stop_seen_ns = 0;
}

/* A new tick: no thread visited, no registers read, none wanted yet.
 * After a tick of some threads only those are cleared (a rolling tick of
 * 20 of 4,000 threads touches 20), and exited threads stay in the table
 * until ws_target_untraced drops them between ticks. A tick of every
 * thread (`all`) compacts the table and marks every thread wanted. */
static struct ws_error *begin_tick(struct ws_target *t, bool all)
{
	t->held_alone_ns = 0;
	if (all || t->tick_all) {
		struct ws_error *err = target_threads_compact(t);
		if (err)
			return err;
		for (size_t i = 0; i < t->nthreads; i++) {
			clear_marks(&t->threads[i]);
			t->threads[i].wanted = all;
		}
	} else {
		for (size_t i = 0; i < t->ntick_tids; i++) {
			struct ws_thread *th = target_thread_find(t, t->tick_tids[i]);
			if (th)
				clear_marks(th);
		}
	}
	t->tick_all = all;
	t->ntick_tids = 0;
	return NULL;
}

/* The tick's list of wanted threads, room for n (kept for the next
 * begin_tick). */
static bool wanted_room(struct ws_target *t, struct wanted *w, size_t n)
{
	if (!ws_grow((void **)&t->tick_tids, &t->tick_tids_cap, n ? n : 1,
		     sizeof(*t->tick_tids)))
		return false;
	*w = (struct wanted){.tids = t->tick_tids};
	return true;
}

struct ws_error *ws_target_stop_all(struct ws_target *t, long timeout_ns,
				    ws_thread_visit_fn visit, void *arg,
				    size_t *stopped, uint64_t *longest_ns)
{
	struct ws_error *err = begin_tick(t, true);
	if (err)
		return err;
	struct wanted w;
	if (!wanted_room(t, &w, t->nthreads))
		return &ws_error_nomem;
	for (size_t i = 0; i < t->nthreads; i++)
		w.tids[w.n++] = t->threads[i].tid;
	t->ntick_tids = w.n;
	stop_wanted(t, &w, timeout_ns, visit, arg, stopped, longest_ns);
	return NULL;
}

bool ws_target_all_stopped(const struct ws_target *t)
{
	for (size_t i = 0; i < t->nthreads; i++) {
		const struct ws_thread *th = &t->threads[i];
		if (th->wanted && th->run == WS_THREAD_RUNNING)
			return false;
	}
	return true;
}

void ws_target_forget_regs(struct ws_target *t)
{
	for (size_t i = 0; i < t->nthreads; i++)
		t->threads[i].regs_valid = false;
}

struct ws_error *ws_target_stop_threads(struct ws_target *t,
					const pid_t *tids, size_t ntids,
					long timeout_ns,
					ws_thread_visit_fn visit, void *arg,
					size_t *stopped, uint64_t *longest_ns)
{
	struct ws_error *err = begin_tick(t, false);
	if (err)
		return err;
	struct wanted w;
	if (!wanted_room(t, &w, ntids))
		return &ws_error_nomem;
	for (size_t i = 0; i < ntids; i++) {
		struct ws_thread *th = target_thread_find(t, tids[i]);
		if (th && th->run != WS_THREAD_GONE && !th->wanted) {
			clear_marks(th);
			th->wanted = true;
			w.tids[w.n++] = tids[i];
		}
	}
	t->ntick_tids = w.n;
	stop_wanted(t, &w, timeout_ns, visit, arg, stopped, longest_ns);
	return NULL;
}

uint64_t ws_target_resume_all(struct ws_target *t)
{
	size_t held = 0;
	for (size_t i = 0; i < t->nthreads && held < 2; i++)
		held += t->threads[i].run == WS_THREAD_STOPPED;
	struct rt_scope rt = {0};
	if (held > 1)
		rt_enter(t->tracer, &rt);
	uint64_t let_go = 0;
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		if (th->run == WS_THREAD_STOPPED) {
			let_go = ws_now_ns();
			target_thread_resume(t, th);
		}
	}
	rt_leave(&rt);
	return let_go ? let_go : ws_now_ns();
}

