/*
 * Unit tests of ws_target (src/target/target.c): ptrace of fixtures this
 * test starts. An attached fixture is started by tests/lib/e2e_util (it
 * dies with the test; e2e_cleanup kills it by PID and reaps it); a launched
 * one goes through `setpriv --pdeathsig KILL` for the same reason, and is
 * registered with e2e_track. The truths come from /proc and the fixtures'
 * construction: the thread list (/proc/PID/task), thread states ('t' while
 * ptrace-stopped), tracers (TracerPid), CPU time (a held thread uses none),
 * the stack pointer and pc of a thread blocked in a system call
 * (/proc/PID/task/TID/syscall, the kernel's copy of its user registers),
 * and fixtures/threads_blocked.c's table (tests/lib/fixture_truth).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_util.h"
#include "elf_util.h"
#include "fixture_truth.h"
#include "ws_clock.h"
#include "ws_target.h"

#define SETPRIV "/usr/bin/setpriv"

enum { STOP_TIMEOUT_NS = 2000 * 1000 * 1000L };

static void expect_ok(struct ws_error *err, const char *what)
{
	cr_assert_null(err, "%s: %s", what, err ? err->message : "");
}

/* The live thread named comm, or NULL. */
static struct ws_thread *thread_named(struct ws_target *t, const char *comm)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].run != WS_THREAD_GONE &&
		    strcmp(t->threads[i].comm, comm) == 0)
			return &t->threads[i];
	return NULL;
}

/* Threads the target does not consider gone. */
static size_t live_threads(const struct ws_target *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nthreads; i++)
		n += t->threads[i].run != WS_THREAD_GONE;
	return n;
}

/* threads_blocked, running with no lifetime (it exits only on SIGTERM or
 * SIGINT), attached. */
static struct ws_target *attach_threads_blocked(void)
{
	pid_t pid = e2e_start_fixture("threads_blocked", NULL, "ready", 10000);
	struct ws_target *t = NULL;

	expect_ok(ws_target_attach(pid, 0, &t), "attach");
	ws_target_read_names(t);
	return t;
}

/* Every thread of /proc/PID/task is in the target, and the target has no
 * other live thread. */
static void check_thread_set(struct ws_target *t)
{
	pid_t tids[64];
	int n = e2e_tids(t->pid, tids, 64);

	cr_assert_gt(n, 0);
	for (int i = 0; i < n; i++)
		cr_assert_not_null(ws_target_find_thread(t, tids[i]),
				   "thread %d of /proc is not traced", tids[i]);
	cr_assert_eq(live_threads(t), (size_t)n, "%zu threads traced, %d in /proc",
		     live_threads(t), n);
}

/*
 * ws_target_resume_all returns when the last held thread was let go: after
 * the stop, before its own return; every thread runs again; and wallspy
 * (this test) is back to the scheduling policy it had, whether the resumes
 * ran real-time (as root) or could not (ws_target.h, wallspy(1)).
 */
Test(target, resume_all_returns_let_go_and_restores_policy, .timeout = 30,
     .fini = e2e_cleanup)
{
	struct ws_target *t = attach_threads_blocked();
	int policy = sched_getscheduler(0);
	struct sched_param before, after;
	cr_assert_eq(sched_getparam(0, &before), 0);

	for (int round = 0; round < 3; round++) {
		size_t stopped = 0;
		expect_ok(ws_target_stop_all(t, STOP_TIMEOUT_NS, NULL, NULL,
					     &stopped, NULL), "stop_all");
		cr_assert_eq(stopped, TB_THREADS + 1);
		cr_assert(ws_target_all_stopped(t));
		uint64_t held = ws_now_ns();
		uint64_t let_go = ws_target_resume_all(t);
		uint64_t back = ws_now_ns();
		cr_assert(let_go >= held && let_go <= back,
			  "let go at %" PRIu64 ", outside [%" PRIu64 ", %" PRIu64 "]",
			  let_go, held, back);
		cr_assert_eq(sched_getscheduler(0), policy,
			     "policy %d after the resumes, %d before",
			     sched_getscheduler(0), policy);
		cr_assert_eq(sched_getparam(0, &after), 0);
		cr_assert_eq(after.sched_priority, before.sched_priority);
		cr_assert(e2e_running_not_stopped(t->pid, 3, 20),
			  "a thread still stopped after resume_all");
	}
	/* Nothing held: now. */
	uint64_t a = ws_now_ns();
	uint64_t none = ws_target_resume_all(t);
	cr_assert_geq(none, a);
	ws_target_destroy(t);
}

Test(target, attach_seizes_every_thread, .timeout = 30, .fini = e2e_cleanup)
{
	struct ws_target *t = attach_threads_blocked();
	pid_t pid = t->pid;

	/* Six table threads and main, each known under its own name, none
	 * stopped; the leader seized by us, the others traced only while a
	 * tick samples them (TracerPid 0 until then). */
	pid_t tids[64];
	int n = e2e_tids(pid, tids, 64);
	cr_assert_eq(n, TB_THREADS + 1);
	check_thread_set(t);
	/* Every thread of /proc is known: none is counted as new. */
	cr_assert_eq(ws_target_untraced(t, NULL), 0);
	for (int i = 0; i < n; i++)
		cr_assert_eq(e2e_tracer(pid, tids[i]), tids[i] == pid ? getpid() : 0,
			     "thread %d: tracer %d", tids[i], e2e_tracer(pid, tids[i]));
	size_t stopped = 0;
	expect_ok(ws_target_stop_all(t, STOP_TIMEOUT_NS, NULL, NULL, &stopped,
				     NULL), "stop_all");
	cr_assert_eq(stopped, TB_THREADS + 1);
	cr_assert(e2e_traced_by(pid, getpid()), "a held thread is not traced by us");
	ws_target_resume_all(t);
	for (int i = 0; i < n; i++)
		cr_assert_eq(e2e_tracer(pid, tids[i]), tids[i] == pid ? getpid() : 0,
			     "thread %d still traced after its tick", tids[i]);
	cr_assert(e2e_running_not_stopped(pid, 3, 20),
		  "seizing stopped a thread");
	cr_assert_not_null(thread_named(t, TB_MAIN_NAME));
	for (int i = 0; i < TB_THREADS; i++) {
		struct ws_thread *th = thread_named(t, tb_threads[i].name);
		char comm[32];

		cr_assert_not_null(th, "no thread named %s", tb_threads[i].name);
		cr_assert(e2e_thread_comm(pid, th->tid, comm, sizeof(comm)));
		cr_assert_str_eq(comm, tb_threads[i].name);
		cr_assert_eq(th->run, WS_THREAD_RUNNING);
	}
	ws_target_destroy(t);
	cr_assert(e2e_traced_by(pid, 0), "still traced after destroy");
	e2e_check_healthy_then_stop(pid);
}

/* Whether the thread's own CPU clock stands still for `ms`. */
static bool cpu_still(pid_t pid, pid_t tid, int ms)
{
	double before = e2e_cpu_seconds(pid, tid);

	e2e_sleep_ms(ms);
	return e2e_cpu_seconds(pid, tid) == before;
}

/* stop_all holds every thread (in a ptrace stop, using no CPU) with its
 * registers read; resume_all lets them all go. The registers of each
 * blocked thread are the ones /proc reported for its system call before
 * we attached; the spinner's pc lies in spinner_block, by the fixture's
 * own symbol table. */
Test(target, stop_all_holds_every_thread_with_its_registers, .timeout = 30,
     .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_blocked", NULL, "ready", 10000);
	pid_t tids[64];
	int ntids = e2e_tids(pid, tids, 64);
	struct { long nr; uint64_t sp, pc; bool blocked; } before[64];

	/* Every thread but the spinner blocks in a system call; main prints
	 * "ready" just before it does: wait until /proc shows each there. */
	for (int i = 0; i < ntids; i++) {
		char comm[32];

		cr_assert(e2e_thread_comm(pid, tids[i], comm, sizeof(comm)));
		for (int wait = 0; wait < 200; wait++) {
			before[i].blocked = e2e_thread_syscall(pid, tids[i],
				&before[i].nr, &before[i].sp, &before[i].pc);
			if (before[i].blocked || strcmp(comm, "t_spin") == 0)
				break;
			e2e_sleep_ms(10);
		}
	}
	struct ws_target *t = NULL;
	expect_ok(ws_target_attach(pid, 0, &t), "attach");
	ws_target_read_names(t);
	size_t stopped = 0;
	expect_ok(ws_target_stop_all(t, STOP_TIMEOUT_NS, NULL, NULL, &stopped,
				     NULL), "stop_all");
	cr_assert_eq(stopped, (size_t)ntids, "%zu of %d threads stopped",
		     stopped, ntids);

	int blocked = 0;
	for (int i = 0; i < ntids; i++) {
		struct ws_thread *th = ws_target_find_thread(t, tids[i]);

		cr_assert_not_null(th);
		cr_assert_eq(th->run, WS_THREAD_STOPPED, "thread %d", th->tid);
		cr_assert(th->regs_valid, "thread %d: no registers", th->tid);
		cr_assert_eq(e2e_proc_state(pid, th->tid), 't',
			     "thread %d is in state %c, not ptrace-stopped",
			     th->tid, e2e_proc_state(pid, th->tid));
		cr_assert(e2e_in_code_of(pid, th->regs.rip, NULL),
			  "thread %d: rip %#llx is not code", th->tid, th->regs.rip);
		if (!before[i].blocked)
			continue;
		blocked++;
		cr_assert_eq(th->regs.rsp, before[i].sp,
			     "thread %d: rsp %#llx, /proc said %#" PRIx64, th->tid,
			     th->regs.rsp, before[i].sp);
		cr_assert_eq(th->regs.rip, before[i].pc,
			     "thread %d: rip %#llx, /proc said %#" PRIx64, th->tid,
			     th->regs.rip, before[i].pc);
		cr_assert_eq((long)th->regs.orig_rax, before[i].nr,
			     "thread %d: system call %lld, /proc said %ld",
			     th->tid, th->regs.orig_rax, before[i].nr);
	}
	/* Five table threads and main block in system calls. */
	cr_assert_eq(blocked, TB_THREADS, "%d threads blocked in a call", blocked);

	struct ws_thread *spin = thread_named(t, "t_spin");
	cr_assert_not_null(spin);
	const char *fixture = e2e_fixture("threads_blocked");
	struct e2e_symtab st = e2e_symtab_load(fixture);
	const struct e2e_sym *fn = e2e_symtab_function_at(
		&st, spin->regs.rip - e2e_load_bias(pid, fixture));
	cr_assert(fn && strcmp(fn->name, "spinner_block") == 0,
		  "t_spin stopped at %#llx (%s), not in spinner_block",
		  spin->regs.rip, fn ? fn->name : "no function");
	e2e_symtab_free(&st);

	/* Held: the spinner uses no CPU; resumed: it spins again. */
	cr_assert(cpu_still(pid, spin->tid, 100), "t_spin ran while stopped");
	cr_assert_eq(e2e_proc_state(pid, spin->tid), 't');
	ws_target_resume_all(t);
	cr_assert(e2e_running_not_stopped(pid, 3, 20), "a thread stayed stopped");
	cr_assert(!cpu_still(pid, spin->tid, 100), "t_spin did not run again");
	ws_target_destroy(t);
	e2e_check_healthy_then_stop(pid);
}

struct visits {
	pid_t pid;
	pid_t tids[8];
	int n;
	pid_t listed[2];
	bool others_ran;        /* a thread not listed was stopped meanwhile */
	bool held;              /* each visited thread was stopped in its visit */
};

static void visit(struct ws_thread *th, void *arg)
{
	struct visits *v = arg;
	pid_t tids[64];
	int n = e2e_tids(v->pid, tids, 64);

	cr_assert_lt(v->n, 8);
	v->tids[v->n++] = th->tid;
	v->held &= th->regs_valid && e2e_proc_state(v->pid, th->tid) == 't';
	for (int i = 0; i < n; i++)
		if (tids[i] != v->listed[0] && tids[i] != v->listed[1] &&
		    e2e_proc_state(v->pid, tids[i]) == 't')
			v->others_ran = true;
}

/* A rolling tick of two threads: only they are stopped, each is visited
 * once while held and resumed right after; the others never stop. */
Test(target, stop_threads_holds_only_the_listed_threads, .timeout = 30,
     .fini = e2e_cleanup)
{
	struct ws_target *t = attach_threads_blocked();
	struct ws_thread *pipe_reader = thread_named(t, "t_pipe");
	struct ws_thread *spin = thread_named(t, "t_spin");
	cr_assert(pipe_reader && spin);
	struct visits v = { .pid = t->pid, .held = true,
			    .listed = { pipe_reader->tid, spin->tid } };
	size_t stopped = 0;
	uint64_t longest = 0;

	expect_ok(ws_target_stop_threads(t, v.listed, 2, STOP_TIMEOUT_NS, visit,
					 &v, &stopped, &longest), "stop_threads");
	cr_assert_eq(stopped, 2);
	cr_assert_eq(v.n, 2, "%d visits", v.n);
	cr_assert((v.tids[0] == v.listed[0] && v.tids[1] == v.listed[1]) ||
		  (v.tids[0] == v.listed[1] && v.tids[1] == v.listed[0]),
		  "visited %d and %d, listed %d and %d", v.tids[0], v.tids[1],
		  v.listed[0], v.listed[1]);
	cr_assert(v.held, "a thread was not stopped while visited");
	cr_assert(!v.others_ran, "a thread not listed was stopped");
	cr_assert_gt(longest, 0);
	for (size_t i = 0; i < t->nthreads; i++) {
		const struct ws_thread *th = &t->threads[i];
		bool listed = th->tid == v.listed[0] || th->tid == v.listed[1];

		cr_assert_eq(th->regs_valid, listed, "thread %d (%s): regs_valid %d",
			     th->tid, th->comm, th->regs_valid);
	}
	cr_assert(e2e_running_not_stopped(t->pid, 3, 20),
		  "a thread stayed stopped after the rolling tick");
	pid_t pid = t->pid;
	ws_target_destroy(t);
	e2e_check_healthy_then_stop(pid);
}

/* Destroying a target while every thread is held detaches them all and
 * leaves the process running: untraced, not stopped, spinning, and its
 * signal handling intact (exit 0 on SIGTERM). */
Test(target, detach_leaves_the_target_running, .timeout = 30,
     .fini = e2e_cleanup)
{
	struct ws_target *t = attach_threads_blocked();
	pid_t pid = t->pid;
	size_t stopped = 0;

	expect_ok(ws_target_stop_all(t, STOP_TIMEOUT_NS, NULL, NULL, &stopped,
				     NULL), "stop_all");
	cr_assert_eq(stopped, TB_THREADS + 1);
	pid_t spin = thread_named(t, "t_spin")->tid;
	ws_target_destroy(t);
	cr_assert(e2e_traced_by(pid, 0), "a thread is still traced");
	cr_assert(e2e_running_not_stopped(pid, 3, 20), "a thread stayed stopped");
	cr_assert(!cpu_still(pid, spin, 100), "t_spin does not run after detach");
	e2e_check_healthy_then_stop(pid);
}

/* ---- launching ---- */

/* ws_target_launch of argv behind `setpriv --pdeathsig KILL` (so the
 * command dies with the test worker), its stdout a pipe read at *out_fd
 * (the command gets the launcher's stdio: ours, pointed at the pipe for
 * the launch). */
static struct ws_target *launch(const char *const argv[], int *out_fd)
{
	const char *full[16] = { SETPRIV, "--pdeathsig", "KILL", "--" };
	int n = 4, fds[2];

	if (access(SETPRIV, X_OK) != 0)
		cr_skip_test("no %s (util-linux)", SETPRIV);
	for (int i = 0; argv[i]; i++)
		full[n++] = argv[i];
	full[n] = NULL;
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	cr_assert_geq(saved, 0);
	cr_assert_eq(dup2(fds[1], STDOUT_FILENO), STDOUT_FILENO);
	struct ws_target *t = NULL;
	struct ws_error *err = ws_target_launch((char *const *)full, 0, &t);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fds[1]);
	expect_ok(err, "launch");
	e2e_track(t->pid);
	*out_fd = fds[0];
	return t;
}

/* Lets the target run, handling its ptrace events (new threads, signals,
 * exec), until it prints `want` on out_fd; false on timeout or exit. */
static bool run_until_line(struct ws_target *t, int out_fd, const char *want,
			   int timeout_ms)
{
	uint64_t deadline = ws_now_ns() + (uint64_t)timeout_ms * 1000000;
	char buf[1024];
	size_t len = 0;

	while (ws_now_ns() < deadline && !t->exited) {
		ws_target_wait_events(t, ws_now_ns() + 10 * 1000000);
		if (ws_target_untraced(t, NULL))
			expect_ok(ws_target_scan(t), "scan");
		struct pollfd p = { .fd = out_fd, .events = POLLIN };
		if (poll(&p, 1, 0) != 1)
			continue;
		ssize_t got = read(out_fd, buf + len, sizeof(buf) - 1 - len);
		if (got <= 0)
			return false;
		len += (size_t)got;
		buf[len] = '\0';
		for (char *line = buf, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
			*nl = '\0';
			if (strcmp(line, want) == 0)
				return true;
			*nl = '\n';
		}
	}
	return false;
}

/* The path /proc/PID/exe points at. */
static const char *exe_of(pid_t pid)
{
	static char path[4096];
	char link[64];

	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = '\0';
	return path;
}

/* A launched command waits at its exec stop, before its first
 * instruction, until resumed; then it runs, its new threads are traced
 * once a scan finds them, and it is left running when the target is
 * destroyed. */
Test(target, launch_holds_the_command_at_exec, .timeout = 30,
     .fini = e2e_cleanup)
{
	const char *argv[] = { e2e_fixture("threads_blocked"), NULL };
	int out_fd;
	struct ws_target *t = launch(argv, &out_fd);
	pid_t pid = t->pid;
	char real[4096];

	cr_assert(t->launched);
	cr_assert_eq(e2e_proc_state(pid, 0), 't', "state %c at the exec stop",
		     e2e_proc_state(pid, 0));
	cr_assert_not_null(realpath(SETPRIV, real));
	cr_assert_str_eq(exe_of(pid), real, "not held at the launcher's exec");
	cr_assert_eq(e2e_tids(pid, (pid_t[8]){0}, 8), 1);
	cr_assert(cpu_still(pid, 0, 100), "it ran before being resumed");
	cr_assert_eq(e2e_proc_state(pid, 0), 't', "it left its exec stop");

	ws_target_resume_all(t);
	cr_assert(run_until_line(t, out_fd, "ready", 10000),
		  "threads_blocked never printed ready");
	cr_assert_not_null(realpath(argv[0], real));
	cr_assert_str_eq(exe_of(pid), real);
	check_thread_set(t);
	cr_assert_eq(live_threads(t), TB_THREADS + 1);
	cr_assert_eq(e2e_tracer(pid, pid), getpid());
	ws_target_destroy(t);
	close(out_fd);
	e2e_check_healthy_then_stop(pid);
}

/* thread_churn creates and joins 2000 threads, eight at a time, while we
 * stop it over and over: every thread a tick holds is one of the process
 * at that instant (/proc lists it: it is stopped), new threads are found
 * by the scan before each tick (many distinct threads are seen), and the
 * program's
 * work is unharmed: it prints the sum fixture_truth computes and exits 0,
 * which the target reports. */
Test(target, follows_thread_churn, .timeout = 60, .fini = e2e_cleanup)
{
	const char *argv[] = { e2e_fixture("thread_churn"), "2000", NULL };
	int out_fd;
	struct ws_target *t = launch(argv, &out_fd);
	pid_t pid = t->pid, seen[512];
	int nseen = 0, ticks = 0;

	ws_target_resume_all(t);
	while (!t->exited) {
		size_t stopped = 0;

		if (ws_target_untraced(t, NULL))
			expect_ok(ws_target_scan(t), "scan");
		expect_ok(ws_target_stop_all(t, STOP_TIMEOUT_NS, NULL, NULL,
					     &stopped, NULL), "stop_all");
		for (size_t i = 0; i < t->nthreads; i++) {
			const struct ws_thread *th = &t->threads[i];
			char task[64];
			bool known = false;

			if (th->run != WS_THREAD_STOPPED || !th->regs_valid)
				continue;
			snprintf(task, sizeof(task), "/proc/%d/task/%d", pid, th->tid);
			cr_assert(e2e_exists(task), "held thread %d is not in /proc",
				  th->tid);
			cr_assert_eq(e2e_proc_state(pid, th->tid), 't');
			for (int k = 0; k < nseen && !known; k++)
				known = seen[k] == th->tid;
			if (!known && nseen < 512)
				seen[nseen++] = th->tid;
		}
		ticks++;
		ws_target_resume_all(t);
		ws_target_wait_events(t, ws_now_ns() + 1000000);
	}
	/* The target reaped it: the PID is free from here. */
	e2e_forget(pid);
	char line[128], want[128];
	snprintf(want, sizeof(want), "churn done 2000 sum=%" PRIu64,
		 churn_sum(2000));
	cr_assert(e2e_wait_line_prefix(out_fd, "churn done", line, sizeof(line),
				       5000), "thread_churn printed nothing");
	cr_assert_str_eq(line, want);
	cr_assert(WIFEXITED(t->exit_status) && WEXITSTATUS(t->exit_status) == 0,
		  "exit status %#x", t->exit_status);
	cr_log_info("%d ticks held %d distinct threads", ticks, nseen);
	cr_assert_gt(ticks, 10, "only %d ticks", ticks);
	cr_assert_geq(nseen, 10, "only %d distinct threads held in %d ticks",
		      nseen, ticks);
	close(out_fd);
	ws_target_destroy(t);
}
