/*
 * fixture_truth: what the fixtures in fixtures/ are by construction, typed
 * once for every test that checks wallspy against them (the fixtures'
 * header comments say the same in prose).
 */
#ifndef FIXTURE_TRUTH_H
#define FIXTURE_TRUTH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cJSON.h>

/* fixtures/threads_blocked.c: one thread per way of blocking, each in a
 * noinline `inner` function called directly from a noinline `outer` one,
 * itself called from thread_main (start_thread's routine). */
struct tb_thread {
	const char *name;            /* its comm */
	const char *outer;
	const char *inner;
	const char *wait_reason;     /* its system call; NULL: running */
	const char *wait_reason_alt; /* what glibc may call instead */
};

enum { TB_THREADS = 6 };
extern const struct tb_thread tb_threads[TB_THREADS];

/* The main thread's comm (it waits in sigtimedwait; not in the table). */
#define TB_MAIN_NAME "threads_blocked"
/* The routine every table thread starts in (pthread_create's). */
#define TB_THREAD_MAIN "thread_main"

/* Asserts that `dump` (wallspy dump --json of threads_blocked, parsed)
 * names every table thread's stack by construction: inner, outer and
 * thread_main in a row (each with a line in threads_blocked.c), then
 * start_thread; and the main thread (comm main_comm: the executable's
 * name, TB_MAIN_NAME unless copied) from main down to _start. */
void tb_check_dump_stacks(const cJSON *dump, const char *main_comm);

/* Waits up to 10 s until a tracer samples threads_blocked `pid`: its
 * t_sleep, asleep for an hour, is woken only by PTRACE_INTERRUPT, twice a
 * tick (/proc/PID/task/TID/status); fails the test when it is not. */
void tb_wait_sampled(pid_t pid);

/* fixtures/threads_waiting.c: one thread in each waiting system call, its
 * comm the call's name; `nr` is the call's number from <sys/syscall.h>. */
struct tw_thread {
	const char *name;
	long nr;
	/* Entered through glibc's generic syscall(): nothing in its code says
	 * which call it is, so only a tracer that saw the call begin knows it
	 * once the kernel restarts it as restart_syscall. */
	bool generic;
};

enum { TW_THREADS = 8 };
extern const struct tw_thread tw_threads[TW_THREADS];

/* fixtures/thread_churn.c: the sum it prints ("churn done COUNT sum=SUM"),
 * computed here independently. */
uint64_t churn_sum(uint64_t count);

/* A green-thread fixture's truth table, as `FIXTURE --expected` prints it
 * (greenrt_parked, pth_fixture, crystal_fibers): one task per line, its
 * name, STATE (WAITING or RUNNING), wait reason or "-", then its chain of
 * functions, root first, tab-separated. */
enum { TRUTH_MAX_TASKS = 16, TRUTH_MAX_CHAIN = 16 };

struct truth_task {
	char name[32];
	char state[16];              /* wallspy's name: "waiting", "running" */
	char reason[32];             /* "" when none */
	char chain[TRUTH_MAX_CHAIN][48]; /* root first */
	int nchain;
};

/* Runs `path --expected` and parses its table into out (at most
 * TRUTH_MAX_TASKS); returns the number of tasks, failing the test on a
 * malformed line or an empty table. */
int truth_load(const char *path, struct truth_task *out);

#endif
