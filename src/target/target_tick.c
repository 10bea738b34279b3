/*
 * One tick's stopping of the traced process (see ws_target.h): interrupt
 * the wanted threads, collect their stops with their registers, and resume
 * them, all at once (stop_all) or each as soon as it is read (a rolling
 * tick). The events met meanwhile are target_events.c's to handle.
 */
#include "target_internal.h"

#include <stdint.h>
#include <sys/ptrace.h>

/* Reads the registers of every newly stopped thread of t; in a rolling
 * tick, visits and resumes it at once (a thread not asked for, stopped by
 * an event meanwhile, is resumed unvisited). A thread's hold is from the
 * moment its stop was collected to its resume, so waiting for its turn
 * counts. */
static size_t collect_stopped(struct ws_target *t, ws_thread_visit_fn visit,
			      void *arg, uint64_t *longest_ns,
			      size_t *outstanding)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		if (th->run != WS_THREAD_STOPPED || th->visited)
			continue;
		th->visited = true;
		if (th->wanted && *outstanding)
			(*outstanding)--;
		if (visit && !th->wanted) {
			target_thread_resume(t, th);
			continue;
		}
		if (ptrace(PTRACE_GETREGS, th->tid, 0, &th->regs) != 0) {
			/* A rolling tick has no resume_all to come: do not
			 * leave the thread in its stop. */
			if (visit)
				target_thread_resume(t, th);
			continue;
		}
		th->regs_valid = true;
		n++;
		if (!visit)
			continue;
		visit(th, arg);
		target_thread_resume(t, th);
		/* Its registers stay this tick's for the adapter. */
		th->regs_valid = true;
		uint64_t since = th->stop_seen_ns ? th->stop_seen_ns : ws_now_ns();
		uint64_t held = ws_now_ns() - since;
		if (held > *longest_ns)
			*longest_ns = held;
	}
	return n;
}

/* Interrupts wanted threads not interrupted yet, up to `room` of them
 * (SIZE_MAX: all); returns how many were. */
static size_t interrupt_wanted(struct ws_target *t, size_t *next, size_t room)
{
	size_t sent = 0;
	for (; *next < t->nthreads && sent < room; (*next)++) {
		struct ws_thread *th = &t->threads[*next];
		if (th->wanted && th->run == WS_THREAD_RUNNING &&
		    !th->interrupt_sent && !th->visited) {
			/* ESRCH: exiting; its exit status will tell. */
			if (ptrace(PTRACE_INTERRUPT, th->tid, 0, 0) == 0) {
				th->interrupt_sent = true;
				sent++;
			}
		}
	}
	return sent;
}

/* Stops the wanted threads (see ws_target_stop_all). A rolling tick keeps
 * at most t->interrupt_window of them interrupted and not yet visited: a
 * thousand threads interrupted at once would each wait in its stop for the
 * ones before it. */
static void stop_wanted(struct ws_target *t, long timeout_ns,
			ws_thread_visit_fn visit, void *arg, size_t *stopped,
			uint64_t *longest_ns)
{
	uint64_t longest = 0;
	size_t window = visit && t->interrupt_window ? t->interrupt_window
						     : SIZE_MAX;
	size_t next = 0;
	size_t outstanding = interrupt_wanted(t, &next, window);

	size_t n = 0;
	uint64_t deadline = ws_now_ns() + (uint64_t)timeout_ns;
	for (;;) {
		target_drain_events(t->tracer, t);
		if (visit) {
			n += collect_stopped(t, visit, arg, &longest,
					     &outstanding);
			if (outstanding < window)
				outstanding += interrupt_wanted(
					t, &next, window - outstanding);
		}
		if (t->exited)
			break;
		bool waiting = next < t->nthreads;
		for (size_t i = 0; i < t->nthreads && !waiting; i++)
			waiting = t->threads[i].interrupt_sent &&
				  t->threads[i].run == WS_THREAD_RUNNING;
		if (!waiting)
			break;
		if (!target_wait_sigchld(deadline))
			break;
	}
	if (!visit)
		n += collect_stopped(t, NULL, NULL, &longest, &outstanding);
	*stopped = n;
	if (longest_ns)
		*longest_ns = longest;
}

/* A new tick: no thread visited, no registers read, every one (`all`) or
 * none wanted yet. */
static struct ws_error *begin_tick(struct ws_target *t, bool all)
{
	struct ws_error *err = target_threads_compact(t);
	if (err)
		return err;
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		th->regs_valid = false;
		th->visited = false;
		th->wanted = all;
		th->stop_seen_ns = 0;
	}
	return NULL;
}

struct ws_error *ws_target_stop_all(struct ws_target *t, long timeout_ns,
				    ws_thread_visit_fn visit, void *arg,
				    size_t *stopped, uint64_t *longest_ns)
{
	struct ws_error *err = begin_tick(t, true);
	if (err)
		return err;
	stop_wanted(t, timeout_ns, visit, arg, stopped, longest_ns);
	return NULL;
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
	for (size_t i = 0; i < ntids; i++) {
		struct ws_thread *th = target_thread_find(t, tids[i]);
		if (th)
			th->wanted = true;
	}
	stop_wanted(t, timeout_ns, visit, arg, stopped, longest_ns);
	return NULL;
}

void ws_target_resume_all(struct ws_target *t)
{
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		if (th->run == WS_THREAD_STOPPED)
			target_thread_resume(t, th);
	}
}

