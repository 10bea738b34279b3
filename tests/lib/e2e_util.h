/*
 * e2e_util: helpers for the end-to-end tests (test_e2e_*.c), which run the
 * built wallspy binary against fixture programs: spawning with pipes and
 * PR_SET_PDEATHSIG, running a command to completion with a timeout,
 * waiting for a line, /proc state checks, JSON loading, temporary
 * directories. Every process spawned here is remembered until reaped and
 * every temporary directory until removed; e2e_cleanup() (use it as the
 * Criterion .fini of every e2e test) kills leftovers by PID (SIGKILL +
 * waitpid) and removes the directories, so a failed assertion leaks nothing.
 * Processes are only ever signalled by PID, and only our own unreaped
 * children (a zombie keeps its PID, so the PID cannot have been reused).
 */
#ifndef E2E_UTIL_H
#define E2E_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cJSON.h>

/* Path of the wallspy binary (a constant) and of fixture NAME (a heap
 * string freed by e2e_cleanup). */
const char *e2e_wallspy(void);
const char *e2e_fixture(const char *name);

/* Options of e2e_spawn. */
struct e2e_spawn_opts {
	bool pipe_stdout;        /* else stdout is inherited */
	bool pipe_stderr;        /* else stderr is inherited */
	const char *cwd;         /* NULL: inherit */
};

/* A spawned process. out_fd/err_fd are read ends (-1 when not piped). */
struct e2e_proc {
	pid_t pid;
	int out_fd;
	int err_fd;
};

/* Forks and execs argv[0] (a path, no PATH search) with stdin from
 * /dev/null and PR_SET_PDEATHSIG(SIGKILL), so the child dies with the test
 * worker. Aborts the test on failure. The process is registered for
 * e2e_cleanup until e2e_wait/e2e_wait_timeout reaps it. */
struct e2e_proc e2e_spawn(char *const argv[], const struct e2e_spawn_opts *opts);

/* Reads fd until a line equal to `line` (without newline) arrives. Returns
 * false on EOF, error or after timeout_ms. Bytes after the line may be
 * consumed and lost. */
bool e2e_wait_line(int fd, const char *line, int timeout_ms);

/* Like e2e_wait_line for the first line starting with `prefix`, copied
 * (NUL-terminated, truncated to size) into line. */
bool e2e_wait_line_prefix(int fd, const char *prefix, char *line, size_t size,
			  int timeout_ms);

/* Waits up to timeout_ms for pid to end and reaps it. Returns true and sets
 * *status when it ended; false on timeout (the process is left running). */
bool e2e_wait_timeout(pid_t pid, int timeout_ms, int *status);

/* SIGKILL + waitpid of a registered child; no-op when already reaped. */
void e2e_kill(pid_t pid);

/* Registers a child of ours that something else started (ws_target_launch
 * forks it) for e2e_cleanup; e2e_forget drops it once another call reaped
 * it (its PID may then be reused: it must not be killed any more). */
void e2e_track(pid_t pid);
void e2e_forget(pid_t pid);

/* Result of e2e_run. */
struct e2e_result {
	int status;              /* waitpid status; valid unless timed_out */
	bool timed_out;          /* killed after the timeout */
	char *out;               /* captured stdout, NUL-terminated */
	char *err;               /* captured stderr, NUL-terminated */
	double seconds;          /* wall time from fork to exit */
};

/* Runs argv to completion capturing stdout and stderr, killing it (SIGKILL
 * by PID) after timeout_ms. Output written by grandchildren that outlive
 * the process (a target wallspy detached from) is captured only up to the
 * process's exit. cwd may be NULL. The buffers are freed by e2e_cleanup. */
void e2e_run(char *const argv[], const char *cwd, int timeout_ms,
	     struct e2e_result *res);

/* Like e2e_run for an already spawned process with piped stdout/stderr:
 * captures until it exits or timeout_ms, optionally sending `signal_to_send`
 * (0: none) after signal_after_ms. */
void e2e_collect(struct e2e_proc *proc, int timeout_ms, int signal_to_send,
		 int signal_after_ms, struct e2e_result *res);

/* Starts argv (e2e_spawn, stdout piped), waits up to timeout_ms for the
 * line `ready` on its stdout and returns its pid; fails the test if the
 * line does not come. */
pid_t e2e_start_ready(char *const argv[], const char *ready, int timeout_ms);

/* e2e_start_ready of fixture `name` (under WS_BUILD_DIR/fixtures) with one
 * argument or none (arg NULL). threads_blocked takes its lifetime in
 * seconds. */
pid_t e2e_start_fixture(const char *name, const char *arg, const char *ready,
			int timeout_ms);

/* e2e_fixture(name), skipping the test when it was not built (the Go
 * fixtures are built only where golang-go is installed, the Crystal one
 * where crystal is; a release of the Go matrix, "go/go1.23/NAME", only
 * where its toolchain was fetched: the skip message is its directory's
 * UNAVAILABLE). A fixture that could not be built may leave a plain file
 * in its place saying why (fixtures/pth/build-pth.sh): the skip message
 * is that text. */
const char *e2e_need_fixture(const char *name);

/* e2e_need_fixture of Go fixture `name` ("go_flip") built with Go release
 * `release` ("1.26", go_releases.h), or with option 'go' when NULL. */
const char *e2e_need_go_fixture(const char *release, const char *name);

/* Starts Go fixture `name` ("go/go_fidelity"; skipped when not built) with
 * args (NULL-terminated; may be NULL) and waits up to timeout_ms for its
 * "ready pid=PID" line. Its stdout stays piped at out_fd, for the lines it
 * prints later ("dumped", "goroutineprofile ..."); every Go fixture exits
 * 0 on SIGTERM. */
struct e2e_proc e2e_start_go(const char *name, const char *const args[],
			     int timeout_ms);

/* Builds the Go program `source` (one file, package main, standard library
 * only) with `go build -ldflags=LDFLAGS` (NULL: none) in a fresh temporary
 * directory and returns the binary's path. The build cache is one for
 * every such build, in the build directory (BUILD/tests/gocache; nothing
 * outside it is touched): the standard library is compiled once per go
 * command, not once per test (Go's cache is safe for builds running at
 * once). Skips the test when there is no `go` on PATH; fails it, with the
 * compiler's output, when the build fails. */
const char *e2e_build_go(const char *source, const char *ldflags);

/* After wallspy is done with a target: it runs, is not stopped, and exits 0
 * on SIGTERM (so it was left untraced, its signal handling intact). */
void e2e_check_healthy_then_stop(pid_t pid);

/* Exit code of a normal exit, or -1 (killed, timed out). */
int e2e_exit_code(const struct e2e_result *res);

/* State letter of /proc/PID/stat (or /proc/PID/task/TID/stat when tid > 0):
 * 'R', 'S', 'T', 't', 'Z', ...; 0 when it cannot be read. */
char e2e_proc_state(pid_t pid, pid_t tid);

/* Waits up to timeout_ms until pid's leader is in state `state` (polling
 * every 10 ms); returns whether it got there. */
bool e2e_wait_proc_state(pid_t pid, char state, int timeout_ms);

/* True when pid and all its threads are neither stopped ('T') nor
 * trace-stopped ('t'), checked `checks` times spaced by interval_ms. */
bool e2e_running_not_stopped(pid_t pid, int checks, int interval_ms);

/* CPU time (user + system) of pid, or of its thread tid when tid > 0,
 * from /proc/.../stat; -1 when it cannot be read. */
double e2e_cpu_seconds(pid_t pid, pid_t tid);

/* Waits up to timeout_ms until pid (thread tid when > 0) has used at
 * least `seconds` of CPU: a spinning program is past its start-up and in
 * its loop. False on timeout or when it is gone. */
bool e2e_wait_cpu(pid_t pid, pid_t tid, double seconds, int timeout_ms);

/* TracerPid of pid (thread tid when > 0): 0 untraced, -1 unreadable. */
pid_t e2e_tracer(pid_t pid, pid_t tid);

/* Whether every thread of pid has TracerPid `tracer` (threads that exit
 * while they are looked at are skipped; the leader never is). */
bool e2e_traced_by(pid_t pid, pid_t tracer);

/* Waits up to timeout_ms until pid's leader has TracerPid `tracer`: wallspy
 * attach has seized it (its other threads are traced only while a tick
 * samples them). */
bool e2e_wait_traced(pid_t pid, pid_t tracer, int timeout_ms);

/* Context switches (voluntary + involuntary) of thread tid of pid so far,
 * from /proc/PID/task/TID/status; -1 when it cannot be read. */
long e2e_ctxt_switches(pid_t pid, pid_t tid);

/* Waits up to timeout_ms until thread tid of pid has been switched out
 * `times` more times. A thread that sleeps for an hour (threads_blocked's
 * t_sleep) is woken only by a tracer's PTRACE_INTERRUPT, twice a tick:
 * this is how a test sees that wallspy is sampling. */
bool e2e_wait_woken(pid_t pid, pid_t tid, int times, int timeout_ms);

/* The thread of pid whose comm is `comm`, or 0. */
pid_t e2e_thread_named(pid_t pid, const char *comm);

/* The system call thread tid of pid is blocked in, with its stack pointer
 * and pc, from /proc/PID/task/TID/syscall (the kernel's copy of the
 * thread's user registers); false when it runs or is not in a call. */
bool e2e_thread_syscall(pid_t pid, pid_t tid, long *nr, uint64_t *sp,
			uint64_t *pc);

/* Reads size bytes of pid's memory at address through /proc/PID/mem (not
 * process_vm_readv): a second way to see the target's memory. */
bool e2e_read_mem(pid_t pid, uint64_t address, void *buf, size_t size);

/* Thread ids of pid from /proc/PID/task; returns the count (at most max). */
int e2e_tids(pid_t pid, pid_t *tids, int max);

/* Contents of /proc/PID/task/TID/comm without the newline, into buf. */
bool e2e_thread_comm(pid_t pid, pid_t tid, char *buf, size_t size);

/* Reads and parses a JSON file; NULL when missing or invalid. The tree is
 * freed by e2e_cleanup. */
cJSON *e2e_load_json(const char *path);
/* Parses a string; NULL when invalid. Freed by e2e_cleanup. */
cJSON *e2e_parse_json(const char *text);

/* A JSON number with an integral value. */
bool e2e_json_is_integer(const cJSON *item);

/* Reads a whole file (NUL-terminated, freed by e2e_cleanup); NULL if absent. */
char *e2e_read_file(const char *path);

/* Creates a fresh temporary directory (removed with its contents by
 * e2e_cleanup) and returns its path. */
const char *e2e_tmpdir(void);

/* "DIR/NAME" as a heap string freed by e2e_cleanup. */
const char *e2e_path(const char *dir, const char *name);

/* The directory part of path ("." when it has none), freed by
 * e2e_cleanup. */
const char *e2e_dirname(const char *path);

/* At most n bytes of s as a string freed by e2e_cleanup. */
const char *e2e_strndup(const char *s, size_t n);

/* Number of entries in dir other than . and ..; -1 if it cannot be read. */
int e2e_dir_entries(const char *dir);

/* Names of dir's entries (not . and ..), sorted, one per line; freed by
 * e2e_cleanup. */
const char *e2e_dir_list(const char *dir);

/* True when path exists. */
bool e2e_exists(const char *path);

/* Monotonic time in seconds. */
double e2e_now(void);

/* Sleeps ms milliseconds. */
void e2e_sleep_ms(int ms);

/* POSIX extended regex match of text (REG_NEWLINE: ^ and $ match at line
 * boundaries). */
bool e2e_match(const char *text, const char *regex);

/* True when text is exactly one line "wallspy: ...\n" (the contract's
 * error format). */
bool e2e_is_one_error_line(const char *text);

/* Makes this test process a child subreaper (PR_SET_CHILD_SUBREAPER, not
 * inherited by children): a process that a child of ours leaves behind —
 * the target `wallspy record -d` detached from, or the tracee of a wallspy
 * that was killed — becomes our child instead of init's, so
 * e2e_adopt_orphans can register it. Call it before spawning wallspy. */
void e2e_become_subreaper(void);

/* Registers every child of this process that is not registered yet (the
 * orphans adopted as subreaper; zombies included) so e2e_cleanup kills and
 * reaps them, stores up to max of their PIDs in pids (may be NULL) and
 * returns how many there were. Found by the parent PID in /proc/PID/stat,
 * so only our own children are ever taken. */
int e2e_adopt_orphans(pid_t *pids, int max);

/* e2e_adopt_orphans, then e2e_cleanup: the .fini of tests that use
 * e2e_become_subreaper. */
void e2e_cleanup_adopting(void);

/* Kills every registered process, frees every registered allocation and
 * removes every temporary directory. Use as .fini of each e2e test. */
void e2e_cleanup(void);

/* Makes the test binary run its tests one at a time (CRITERION_JOBS=1,
 * unless the caller set it): for binaries whose tests measure wall time
 * or CPU share. Put `E2E_SERIAL_TESTS();` at file scope. */
#define E2E_SERIAL_TESTS()                                                  \
	__attribute__((constructor)) static void e2e_serial_tests(void)     \
	{                                                                   \
		setenv("CRITERION_JOBS", "1", 0);                           \
	}

#endif
