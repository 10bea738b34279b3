/*
 * End-to-end tests of --subprocesses: wallspy follows fork, vfork and exec
 * into every descendant. Truths: the fixtures' construction (their
 * functions, from tests/lib/fixture_truth and fixtures/prefork_server.c),
 * the pids the fixtures print and /proc (children, TracerPid, states):
 * every process is in the profile under its own "process PID \"COMMAND\""
 * root frame, and none is left traced or stopped, whatever happens to
 * wallspy. Network use is loopback only.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "e2e_util.h"
#include "fixture_truth.h"
#include "speedscope_view.h"
#include "summary.h"
#include "wallspy_run.h"

/* A shell starting two fixture processes: the shell and both children are
 * in the profile, one profile each with --group-by process, each child
 * named after what it runs (its exec) with every thread's function. */
Test(e2e_subprocesses, shell_starting_two_fixtures, .timeout = 90,
     .fini = e2e_cleanup)
{
	char script[1024];
	const char *tb = e2e_fixture("threads_blocked");
	snprintf(script, sizeof(script), "%s 2 & %s 2 & wait", tb, tb);
	const char *opts[] = { "--subprocesses", "--group-by", "process", NULL };
	const char *target[] = { "/bin/sh", "-c", script, NULL };
	const char *out;
	struct e2e_result res = e2e_record(opts, target, &out, 60000);
	cr_assert_str_eq(e2e_parse_summary(res.err).target,
			 "target exited with status 0", "%s", res.err);

	struct ss_view v = ss_load(out);
	int shells = 0, fixtures = 0;
	for (const cJSON *p = v.profiles->child; p; p = p->next) {
		const char *name = ss_profile_name(p);
		if (e2e_match(name, "^process [0-9]+ \"sh\"$"))
			shells++;
		if (!e2e_match(name, "^process [0-9]+ \"threads_blocked\"$"))
			continue;
		fixtures++;
		/* Each thread's inner function; the profile's name is the
		 * process, not a frame of its own. */
		for (int t = 0; t < TB_THREADS; t++) {
			bool found = false;
			for (const cJSON *s = cJSON_GetObjectItem(p, "samples")->child;
			     s && !found; s = s->next) {
				cr_assert(!e2e_match(ss_frame_at(&v, s, 0), "^process "),
					  "%s: the process is a frame too", name);
				found = ss_has(&v, s, tb_threads[t].inner);
			}
			cr_assert(found, "%s: no sample in %s", name,
				  tb_threads[t].inner);
		}
	}
	cr_assert_eq(fixtures, 2, "%d threads_blocked processes profiled", fixtures);
	cr_assert_geq(shells, 1, "the shell is not in the profile");
}

/* Samples of profile p holding `function`. */
static int samples_in(const struct ss_view *v, const cJSON *p, const char *function)
{
	int n = 0;
	for (const cJSON *s = cJSON_GetObjectItem(p, "samples")->child; s; s = s->next)
		n += ss_has(v, s, function);
	return n;
}

/* A shell starting two Go programs (go_workload1 150: 150 goroutines
 * waiting in main.takeFromChannel for about 1.5 s): each child, found as
 * a shell at its fork, runs Go after its exec, and is profiled as Go, its
 * goroutines in main.takeFromChannel. wallspy crashed here (the Go
 * runtime read the debug info of the child's image before the exec,
 * freed when the sampler reopened it). */
Test(e2e_subprocesses, shell_starting_two_go_programs, .timeout = 90,
     .fini = e2e_cleanup)
{
	char script[1024];
	const char *w1 = e2e_need_go_fixture(NULL, "go_workload1");
	snprintf(script, sizeof(script), "%s 150 & %s 150 & wait", w1, w1);
	const char *opts[] = { "--subprocesses", "--group-by", "process", NULL };
	const char *target[] = { "/bin/sh", "-c", script, NULL };
	const char *out;
	struct e2e_result res = e2e_record(opts, target, &out, 60000);
	cr_assert_eq(e2e_exit_code(&res), 0, "status %#x, stderr: %s", res.status,
		     res.err);
	cr_assert_str_eq(e2e_parse_summary(res.err).target,
			 "target exited with status 0", "%s", res.err);

	struct ss_view v = ss_load(out);
	int programs = 0;
	for (const cJSON *p = v.profiles->child; p; p = p->next) {
		const char *name = ss_profile_name(p);
		if (!e2e_match(name, "^process [0-9]+ \"go_workload1\"$"))
			continue;
		programs++;
		cr_assert_gt(samples_in(&v, p, "main.takeFromChannel"), 0,
			     "%s: no goroutine in main.takeFromChannel", name);
	}
	cr_assert_eq(programs, 2, "%d go_workload1 processes profiled", programs);
}

/* The command itself execs a Go program after a while (a shell's exec, a
 * wrapper script's): the recording goes on in the new image with its own
 * runtime, Go's goroutines, not the OS threads the shell was recorded as
 * (what wallspy did before it chose the runtime anew at an exec). */
Test(e2e_subprocesses, command_execs_a_go_program, .timeout = 90,
     .fini = e2e_cleanup)
{
	char script[1024];
	snprintf(script, sizeof(script), "sleep 0.3; exec %s 150",
		 e2e_need_go_fixture(NULL, "go_workload1"));
	const char *opts[] = { "--group-by", "task", NULL };
	const char *target[] = { "/bin/sh", "-c", script, NULL };
	const char *out;
	struct e2e_result res = e2e_record(opts, target, &out, 60000);
	cr_assert_eq(e2e_exit_code(&res), 0, "status %#x, stderr: %s", res.status,
		     res.err);

	struct ss_view v = ss_load(out);
	int in_channel = 0, goroutines = 0;
	for (const cJSON *p = v.profiles->child; p; p = p->next) {
		int n = samples_in(&v, p, "main.takeFromChannel");
		in_channel += n;
		goroutines += n > 0;
	}
	/* 150 goroutines wait there the whole run; a sampled subset of them
	 * per tick still names many. */
	cr_assert_geq(goroutines, 10, "%d tasks in main.takeFromChannel (%d samples): "
		      "the Go program was not read as Go after the exec; stderr: %s",
		      goroutines, in_channel, res.err);
}

/* The root of a sample holding `function`, or NULL. */
static const char *root_of(const struct ss_view *v, const char *function)
{
	SS_FOR_EACH_SAMPLE(v, profile, sample, w) {
		(void)w;
		if (ss_has(v, sample, function))
			return ss_frame_at(v, sample, 0);
	}
	return NULL;
}

/* vfork then exec, and clone without CLONE_THREAD and without SIGCHLD
 * (fixtures/spawn_kinds.c): both children are followed, each its own
 * process in the profile, apart from their parent. */
Test(e2e_subprocesses, vfork_exec_and_clone_followed, .timeout = 90,
     .fini = e2e_cleanup)
{
	const char *opts[] = { "--subprocesses", NULL };
	const char *target[] = { e2e_fixture("spawn_kinds"), "1", NULL };
	const char *out;
	struct e2e_result res = e2e_record(opts, target, &out, 60000);
	cr_assert_str_eq(e2e_parse_summary(res.err).target,
			 "target exited with status 0", "%s", res.err);
	struct ss_view v = ss_load(out);
	const char *fns[] = { "parent_waits", "in_execed_child", "in_cloned_child" };
	const char *roots[3];
	for (int i = 0; i < 3; i++) {
		roots[i] = root_of(&v, fns[i]);
		cr_assert(roots[i], "no sample in %s", fns[i]);
		cr_assert(e2e_match(roots[i], "^process [0-9]+ \"spawn_kinds\"$"),
			  "%s: root %s", fns[i], roots[i]);
		for (int j = 0; j < i; j++)
			cr_assert_str_neq(roots[i], roots[j], "%s and %s in one process",
					  fns[i], fns[j]);
	}
}

/* Connects to 127.0.0.1:port, sends a line, returns whether "ok" came. */
static bool ask(int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char buf[64] = { 0 };
	bool ok = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		  write(s, "hello\n", 6) == 6 && read(s, buf, sizeof(buf) - 1) > 0 &&
		  strncmp(buf, "ok ", 3) == 0;
	close(s);
	return ok;
}

/* The children of pid (/proc/PID/task/PID/children), at most max. */
static int children_of(pid_t pid, pid_t *out, int max)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
	FILE *f = fopen(path, "r");
	int n = 0;
	while (f && n < max && fscanf(f, "%d", &out[n]) == 1)
		n++;
	if (f)
		fclose(f);
	return n;
}

/* A pre-forking server recorded from its start: its parent accepts, its
 * forked workers handle the connections (every one answered), and each
 * worker's handling is in the profile under its own process. */
Test(e2e_subprocesses, prefork_server_recorded, .timeout = 90,
     .fini = e2e_cleanup)
{
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	char *argv[] = { (char *)e2e_wallspy(), "record", "--subprocesses", "-o",
			 (char *)out, "--", (char *)e2e_fixture("prefork_server"),
			 "2", NULL };
	struct e2e_proc wallspy = e2e_spawn(argv, &(struct e2e_spawn_opts){
		.pipe_stdout = true, .pipe_stderr = true, .cwd = dir });
	char line[128];
	int server = 0, port = 0;
	cr_assert(e2e_wait_line_prefix(wallspy.out_fd, "pid ", line, sizeof(line),
				       30000), "the server did not start");
	cr_assert_eq(sscanf(line, "pid %d port %d", &server, &port), 2, "%s", line);
	pid_t workers[2];
	for (int i = 0; i < 200 && children_of(server, workers, 2) < 2; i++)
		e2e_sleep_ms(10);
	cr_assert_eq(children_of(server, workers, 2), 2, "no two workers");
	for (int i = 0; i < 20; i++)
		cr_assert(ask(port), "request %d not answered", i);
	cr_assert_eq(kill(server, SIGTERM), 0);
	struct e2e_result res;
	e2e_collect(&wallspy, 30000, 0, 0, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "stderr: %s", res.err);
	cr_assert_str_eq(e2e_parse_summary(res.err).target,
			 "target exited with status 0", "%s", res.err);

	struct ss_view v = ss_load(out);
	char roots[3][64];
	snprintf(roots[0], sizeof(roots[0]), "process %d \"prefork_server\"", server);
	for (int w = 0; w < 2; w++)
		snprintf(roots[w + 1], sizeof(roots[w + 1]),
			 "process %d \"prefork_server\"", workers[w]);
	bool parent_accepts = false, handled[2] = { false, false };
	SS_FOR_EACH_SAMPLE(&v, profile, sample, w) {
		(void)w;
		const char *root = ss_frame_at(&v, sample, 0);
		if (strcmp(root, roots[0]) == 0 && strstr(ss_frame_at(&v, sample, -1),
							   "accept"))
			parent_accepts = true;
		for (int k = 0; k < 2; k++)
			if (strcmp(root, roots[k + 1]) == 0 &&
			    ss_has(&v, sample, "worker_handle") &&
			    ss_has(&v, sample, "worker_compute"))
				handled[k] = true;
	}
	cr_assert(parent_accepts, "no sample of the parent waiting in accept");
	for (int k = 0; k < 2; k++)
		cr_assert(handled[k], "worker %d: no sample in worker_compute", workers[k]);
}

/* wallspy killed (SIGKILL) while it traces a server and its workers: the
 * kernel lets go of them all, none stays traced or stopped, and the server
 * goes on answering, then exits 0 on SIGTERM. */
Test(e2e_subprocesses, nothing_left_traced_when_wallspy_dies, .timeout = 90,
     .fini = e2e_cleanup)
{
	pid_t server = e2e_start_fixture("prefork_server", "2", "ready", 10000);
	pid_t workers[2];
	for (int i = 0; i < 200 && children_of(server, workers, 2) < 2; i++)
		e2e_sleep_ms(10);
	cr_assert_eq(children_of(server, workers, 2), 2);
	char port_line[64];
	snprintf(port_line, sizeof(port_line), "/proc/%d/net/tcp", server);
	const char *opts[] = { "--subprocesses", "-r", "500", NULL };
	const char *out;
	struct e2e_proc wallspy = e2e_spawn_attach(server, opts, "out.json", &out);
	for (int k = 0; k < 2; k++) {
		if (e2e_wait_traced(workers[k], wallspy.pid, 10000))
			continue;
		pid_t tracer = e2e_tracer(workers[k], workers[k]);
		struct e2e_result res;
		e2e_collect(&wallspy, 10000, SIGINT, 0, &res);
		cr_assert_fail("worker %d not followed (tracer %d, wallspy %d): %s",
			       workers[k], tracer, wallspy.pid, res.err);
	}
	e2e_sleep_ms(300);
	cr_assert_eq(kill(wallspy.pid, SIGKILL), 0);
	int status;
	cr_assert(e2e_wait_timeout(wallspy.pid, 10000, &status));
	pid_t all[3] = { server, workers[0], workers[1] };
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < 200 && !e2e_traced_by(all[k], 0); i++)
			e2e_sleep_ms(10);
		cr_assert(e2e_traced_by(all[k], 0), "process %d still traced", all[k]);
		cr_assert(e2e_running_not_stopped(all[k], 3, 20),
			  "process %d left stopped", all[k]);
	}
	e2e_check_healthy_then_stop(server);
}
