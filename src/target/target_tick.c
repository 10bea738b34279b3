/*
 * One tick's stopping of the traced process (see ws_target.h): interrupt
 * the wanted threads, collect their stops with their registers, and resume
 * them, all at once (stop_all) or each as soon as it is read (a rolling
 * tick). The events met meanwhile are target_events.c's to handle.
 */
#include "target_internal.h"

#include <sys/ptrace.h>

/* Reads the registers of every newly stopped thread; in a rolling tick,
 * visits and resumes it at once (a thread not asked for, stopped by an
 * event meanwhile, is resumed unvisited). */
static size_t collect_stopped(struct ws_target *t, ws_thread_visit_fn visit,
			      void *arg, uint64_t *longest_ns)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		if (th->run != WS_THREAD_STOPPED || th->visited)
			continue;
		th->visited = true;
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
		th->syscall = ws_syscall_current(th->tid, &th->regs,
						 &th->syscall_memory);
		n++;
		if (!visit)
			continue;
		uint64_t held = ws_now_ns();
		visit(th, arg);
		target_thread_resume(t, th);
		/* Its registers stay this tick's for the adapter. */
		th->regs_valid = true;
		held = ws_now_ns() - held;
		if (held > *longest_ns)
			*longest_ns = held;
	}
	return n;
}

/* Stops the wanted threads (see ws_target_stop_all). */
static void stop_wanted(struct ws_target *t, long timeout_ns,
			ws_thread_visit_fn visit, void *arg, size_t *stopped,
			uint64_t *longest_ns)
{
	uint64_t longest = 0;
	for (size_t i = 0; i < t->nthreads; i++) {
		struct ws_thread *th = &t->threads[i];
		if (th->wanted && th->run == WS_THREAD_RUNNING &&
		    !th->interrupt_sent) {
			/* ESRCH: exiting; its exit status will tell. */
			if (ptrace(PTRACE_INTERRUPT, th->tid, 0, 0) == 0)
				th->interrupt_sent = true;
		}
	}

	size_t n = 0;
	uint64_t deadline = ws_now_ns() + (uint64_t)timeout_ns;
	for (;;) {
		target_drain_events(t, true);
		if (visit)
			n += collect_stopped(t, visit, arg, &longest);
		if (t->exited)
			break;
		bool waiting = false;
		for (size_t i = 0; i < t->nthreads; i++) {
			if (t->threads[i].interrupt_sent &&
			    t->threads[i].run == WS_THREAD_RUNNING) {
				waiting = true;
				break;
			}
		}
		if (!waiting)
			break;
		if (!target_wait_sigchld(deadline)) {
			break;
		}
	}
	if (!visit)
		n += collect_stopped(t, NULL, NULL, &longest);
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

