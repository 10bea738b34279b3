/*
 * Tests of greenrt, the green-thread runtime fixture, without wallspy:
 * channel, mutex, semaphore, sleep, IO-wait, join and yield semantics; the
 * registry as a sampler would read it; 65536 spawned tasks; the parked
 * chains in-process (each parked task's saved context unwound with local
 * libunwind and compared with parked_expected[]); and the built workload
 * and fixture programs, scaled down.
 *
 * Tasks never call cr_assert (it longjmps, and they run on their own
 * stacks on other threads): they record what they saw in globals, and the
 * test asserts after greenrt_run returns.
 */
#define UNW_LOCAL_ONLY
#include <criterion/criterion.h>
#include <libunwind.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e_util.h"
#include "greenrt.h"
#include "parked_tasks.h"

#define FIXTURE_DIR WS_BUILD_DIR "/fixtures/greenrt/"

static const uint64_t MS = 1000000;

static void run_with_workers(void (*root)(void *), int workers)
{
	struct greenrt_config config = { .workers = workers };

	cr_assert_eq(greenrt_run_with(&config, root, NULL), 0,
		     "greenrt_run: %s", strerror(errno));
	/* Everything finished: the registry is empty again. */
	cr_assert_eq(greenrt_task_count, 0);
	cr_assert_null(greenrt_all_tasks);
}

/* ---- channels ---- */

static struct greenrt_chan *chan;
static int log_values[256];
static int log_count;
static bool flag;
static enum greenrt_state seen_state;
static const char *seen_reason;
static void *seen_object;

static void receive_100(void *unused)
{
	void *value;

	(void)unused;
	while (log_count < 100 && greenrt_chan_recv(chan, &value))
		log_values[log_count++] = (int)(intptr_t)value;
}

static void send_one_then_flag(void *unused)
{
	(void)unused;
	greenrt_chan_send(chan, (void *)(intptr_t)7);
	flag = true;
}

static void unbuffered_root(void *unused)
{
	struct greenrt_task *receiver, *sender;
	void *value = NULL;

	(void)unused;
	chan = greenrt_chan_create(0);
	receiver = greenrt_spawn("receiver", receive_100, NULL);
	for (intptr_t i = 1; i <= 100; i++)
		greenrt_chan_send(chan, (void *)i);
	greenrt_join(receiver);

	/* Without a receiver, a send parks until one comes. */
	sender = greenrt_spawn("sender", send_one_then_flag, NULL);
	greenrt_sleep(30 * MS);
	seen_state = greenrt_task_state(sender);
	seen_reason = sender->wait_reason;
	seen_object = sender->wait_object;
	log_values[200] = flag;
	greenrt_chan_recv(chan, &value);
	log_values[201] = (int)(intptr_t)value;
	greenrt_join(sender);
	greenrt_chan_destroy(chan);
}

Test(greenrt, chan_unbuffered_in_order_and_rendezvous, .timeout = 10)
{
	run_with_workers(unbuffered_root, 2);
	cr_assert_eq(log_count, 100);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(log_values[i], i + 1, "value %d: %d", i,
			     log_values[i]);
	cr_assert_eq(seen_state, GREENRT_WAITING);
	cr_assert_str_eq(seen_reason, "chan send");
	cr_assert_eq(seen_object, (void *)chan);
	cr_assert_eq(log_values[200], 0, "send returned without a receiver");
	cr_assert_eq(log_values[201], 7);
	cr_assert(flag);
}

static int sent_count;

static void send_five(void *unused)
{
	(void)unused;
	for (intptr_t i = 1; i <= 5; i++) {
		greenrt_chan_send(chan, (void *)i);
		sent_count++;
	}
}

static void buffered_root(void *unused)
{
	struct greenrt_task *sender;
	void *value;

	(void)unused;
	chan = greenrt_chan_create(4);
	sender = greenrt_spawn("sender", send_five, NULL);
	greenrt_sleep(30 * MS);
	log_values[100] = sent_count;	/* 4 buffered, the 5th parks */
	seen_state = greenrt_task_state(sender);
	for (int i = 0; i < 5; i++)
		if (greenrt_chan_recv(chan, &value))
			log_values[log_count++] = (int)(intptr_t)value;
	greenrt_join(sender);
	greenrt_chan_destroy(chan);
}

Test(greenrt, chan_buffered_blocks_when_full, .timeout = 10)
{
	run_with_workers(buffered_root, 2);
	cr_assert_eq(log_values[100], 4);
	cr_assert_eq(seen_state, GREENRT_WAITING);
	cr_assert_eq(log_count, 5);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(log_values[i], i + 1);
	cr_assert_eq(sent_count, 5);
}

static int closed_receives;
static int failed_sends;

static void receive_until_closed(void *unused)
{
	(void)unused;
	if (!greenrt_chan_recv(chan, NULL))
		__atomic_add_fetch(&closed_receives, 1, __ATOMIC_RELAXED);
}

static void send_until_closed(void *arg)
{
	if (greenrt_chan_send(arg, NULL) != 0)
		__atomic_add_fetch(&failed_sends, 1, __ATOMIC_RELAXED);
}

static void close_root(void *unused)
{
	struct greenrt_chan *unbuffered = greenrt_chan_create(0);
	struct greenrt_task *tasks[5];
	void *value;
	int i = 0;

	(void)unused;
	/* Buffered values survive the close; then receives report it. */
	chan = greenrt_chan_create(2);
	greenrt_chan_send(chan, (void *)(intptr_t)1);
	greenrt_chan_send(chan, (void *)(intptr_t)2);
	greenrt_chan_close(chan);
	log_values[0] = greenrt_chan_recv(chan, &value) && value == (void *)1;
	log_values[1] = greenrt_chan_recv(chan, &value) && value == (void *)2;
	log_values[2] = greenrt_chan_recv(chan, &value);
	log_values[3] = greenrt_chan_send(chan, NULL);
	greenrt_chan_destroy(chan);

	/* Parked receivers and senders are woken by close. */
	chan = greenrt_chan_create(0);
	for (i = 0; i < 3; i++)
		tasks[i] = greenrt_spawn("receiver", receive_until_closed, NULL);
	for (; i < 5; i++)
		tasks[i] = greenrt_spawn("sender", send_until_closed,
					 unbuffered);
	greenrt_sleep(20 * MS);
	greenrt_chan_close(chan);
	greenrt_chan_close(unbuffered);
	for (i = 0; i < 5; i++)
		greenrt_join(tasks[i]);
	greenrt_chan_destroy(chan);
	greenrt_chan_destroy(unbuffered);
}

Test(greenrt, chan_close_drains_then_wakes_everyone, .timeout = 10)
{
	run_with_workers(close_root, 2);
	cr_assert_eq(log_values[0], 1);
	cr_assert_eq(log_values[1], 1);
	cr_assert_eq(log_values[2], 0, "receive on a closed, empty channel");
	cr_assert_eq(log_values[3], -1, "send on a closed channel");
	cr_assert_eq(closed_receives, 3);
	cr_assert_eq(failed_sends, 2);
}

/* ---- mutex, semaphore ---- */

static struct greenrt_mutex mutex;
static struct greenrt_sem sem;
static int inside, max_inside, violations, counter;

static void increment_under_mutex(void *unused)
{
	(void)unused;
	for (int i = 0; i < 200; i++) {
		greenrt_mutex_lock(&mutex);
		if (++inside != 1)
			violations++;
		/* Hold it across a switch so others really park on it. */
		greenrt_yield();
		counter++;
		inside--;
		greenrt_mutex_unlock(&mutex);
	}
}

static void mutex_root(void *unused)
{
	struct greenrt_task *tasks[8];

	(void)unused;
	greenrt_mutex_init(&mutex);
	for (int i = 0; i < 8; i++)
		tasks[i] = greenrt_spawn("incrementer", increment_under_mutex,
					 NULL);
	for (int i = 0; i < 8; i++)
		greenrt_join(tasks[i]);
}

Test(greenrt, mutex_excludes, .timeout = 10)
{
	run_with_workers(mutex_root, 2);
	cr_assert_eq(violations, 0);
	cr_assert_eq(counter, 8 * 200);
}

static void hold_semaphore(void *unused)
{
	int now;

	(void)unused;
	greenrt_sem_acquire(&sem);
	now = __atomic_add_fetch(&inside, 1, __ATOMIC_RELAXED);
	/* Racy max is fine: two tasks never update it at once on W=1. */
	if (now > max_inside)
		max_inside = now;
	greenrt_sleep(2 * MS);
	__atomic_sub_fetch(&inside, 1, __ATOMIC_RELAXED);
	greenrt_sem_release(&sem);
}

static void sem_root(void *unused)
{
	struct greenrt_task *tasks[10];

	(void)unused;
	greenrt_sem_init(&sem, 3);
	for (int i = 0; i < 10; i++)
		tasks[i] = greenrt_spawn("holder", hold_semaphore, NULL);
	for (int i = 0; i < 10; i++)
		greenrt_join(tasks[i]);
}

Test(greenrt, semaphore_admits_count, .timeout = 10)
{
	run_with_workers(sem_root, 1);
	cr_assert_eq(max_inside, 3);
	cr_assert_eq(sem.count, 3);
}

/* ---- sleep, IO wait, join, yield ---- */

static uint64_t elapsed_ns;

static void sleep_then_log(void *arg)
{
	int ms = (int)(intptr_t)arg;

	greenrt_sleep((uint64_t)ms * MS);
	log_values[__atomic_fetch_add(&log_count, 1, __ATOMIC_RELAXED)] = ms;
}

static void sleep_root(void *unused)
{
	static const int durations[] = { 50, 10, 40, 20, 30 };
	struct greenrt_task *tasks[5];
	uint64_t t0 = greenrt_now_ns();

	(void)unused;
	greenrt_sleep(50 * MS);
	elapsed_ns = greenrt_now_ns() - t0;
	for (int i = 0; i < 5; i++)
		tasks[i] = greenrt_spawn("sleeper", sleep_then_log,
					 (void *)(intptr_t)durations[i]);
	for (int i = 0; i < 5; i++)
		greenrt_join(tasks[i]);
}

Test(greenrt, sleep_takes_its_time_and_wakes_in_deadline_order,
     .timeout = 10)
{
	run_with_workers(sleep_root, 2);
	cr_assert_geq(elapsed_ns, 50 * MS);
	cr_assert_lt(elapsed_ns, 150 * MS, "slept %llu ns",
		     (unsigned long long)elapsed_ns);
	cr_assert_eq(log_count, 5);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(log_values[i], 10 * (i + 1), "woke %d: %d ms", i,
			     log_values[i]);
}

static int io_pipe[2];
static int seen_fd;

static void read_pipe(void *unused)
{
	char byte = 0;
	uint64_t t0 = greenrt_now_ns();

	(void)unused;
	log_values[0] = (int)greenrt_read(io_pipe[0], &byte, 1);
	log_values[1] = byte;
	elapsed_ns = greenrt_now_ns() - t0;
}

static void write_pipe_later(void *unused)
{
	(void)unused;
	greenrt_sleep(40 * MS);
	log_values[2] = (int)greenrt_write(io_pipe[1], "x", 1);
}

static void io_root(void *unused)
{
	struct greenrt_task *reader, *writer;

	(void)unused;
	if (pipe2(io_pipe, O_NONBLOCK) != 0)
		return;
	reader = greenrt_spawn("reader", read_pipe, NULL);
	writer = greenrt_spawn("writer", write_pipe_later, NULL);
	greenrt_sleep(15 * MS);
	seen_state = greenrt_task_state(reader);
	seen_reason = reader->wait_reason;
	seen_fd = reader->wait_fd;
	greenrt_join(reader);
	greenrt_join(writer);
}

Test(greenrt, io_wait_wakes_on_write, .timeout = 10)
{
	run_with_workers(io_root, 2);
	cr_assert_eq(seen_state, GREENRT_WAITING);
	cr_assert_str_eq(seen_reason, "IO wait");
	cr_assert_eq(seen_fd, io_pipe[0]);
	cr_assert_eq(log_values[2], 1);
	cr_assert_eq(log_values[0], 1);
	cr_assert_eq(log_values[1], 'x');
	cr_assert_geq(elapsed_ns, 35 * MS);
}

static void sleep_then_flag(void *unused)
{
	(void)unused;
	greenrt_sleep(30 * MS);
	flag = true;
}

static void quick(void *unused)
{
	(void)unused;
	counter++;
}

static void join_root(void *unused)
{
	struct greenrt_task *slow, *fast;

	(void)unused;
	slow = greenrt_spawn("slow", sleep_then_flag, NULL);
	greenrt_join(slow);
	log_values[0] = flag;

	/* Joining a task that is already done returns at once. */
	fast = greenrt_spawn("fast", quick, NULL);
	greenrt_sleep(10 * MS);
	log_values[1] = greenrt_task_state(fast) == GREENRT_DONE;
	greenrt_join(fast);
}

Test(greenrt, join_waits_for_the_end, .timeout = 10)
{
	run_with_workers(join_root, 2);
	cr_assert_eq(log_values[0], 1);
	cr_assert_eq(log_values[1], 1);
	cr_assert_eq(counter, 1);
}

static char order[16];

static void append_letter(void *arg)
{
	for (int i = 0; i < 3; i++) {
		order[log_count++] = (char)(intptr_t)arg;
		greenrt_yield();
	}
}

static void yield_root(void *unused)
{
	struct greenrt_task *a, *b;

	(void)unused;
	a = greenrt_spawn("a", append_letter, (void *)(intptr_t)'A');
	b = greenrt_spawn("b", append_letter, (void *)(intptr_t)'B');
	greenrt_join(a);
	greenrt_join(b);
}

Test(greenrt, yield_round_robins_on_one_worker, .timeout = 10)
{
	run_with_workers(yield_root, 1);
	cr_assert_str_eq(order, "ABABAB");
}

/* ---- registry, scale ---- */

static int spawned_ran;
static int peak_count;

static void count_one(void *unused)
{
	(void)unused;
	__atomic_add_fetch(&spawned_ran, 1, __ATOMIC_RELAXED);
}

static void spawn_many_root(void *arg)
{
	int n = (int)(intptr_t)arg;

	for (int i = 0; i < n; i++)
		greenrt_go("short", count_one, NULL);
	peak_count = greenrt_task_count;
}

static void spawn_65536_root(void *unused)
{
	(void)unused;
	spawn_many_root((void *)(intptr_t)65536);
}

Test(greenrt, spawn_65536_all_complete, .timeout = 20)
{
	run_with_workers(spawn_65536_root, 2);
	cr_assert_eq(spawned_ran, 65536);
	cr_assert_gt(peak_count, 1);
}

struct registry_view {
	int count;
	int waiting_ok;
	bool root_ok;
	bool ids_ok;
	struct greenrt_task *root;
};

static struct registry_view view;

static bool inspect_task(const struct greenrt_task *t, void *arg)
{
	struct registry_view *v = arg;

	v->count++;
	if (t == v->root) {
		v->root_ok = t->id == 1 && strcmp(t->name, "main") == 0 &&
			t->state == GREENRT_RUNNING && t->worker &&
			t->worker->current == t &&
			t->worker->tid == gettid() && !t->wait_reason;
		return true;
	}
	if (t->id <= 1)
		v->ids_ok = false;
	/* Parked: off CPU, a saved rsp inside its own stack, a reason. */
	if (t->state == GREENRT_WAITING && !t->worker &&
	    strcmp(t->name, "parked") == 0 && t->wait_reason &&
	    strcmp(t->wait_reason, "chan receive") == 0 &&
	    t->wait == GREENRT_WAIT_CHAN_RECEIVE && t->wait_object == chan &&
	    (char *)t->ctx.uc_mcontext.gregs[REG_RSP] > (char *)t->stack_lo &&
	    (char *)t->ctx.uc_mcontext.gregs[REG_RSP] < (char *)t->stack_hi &&
	    (size_t)((char *)t->stack_hi - (char *)t->stack_lo) ==
		    GREENRT_DEFAULT_STACK_SIZE)
		v->waiting_ok++;
	return true;
}

static bool count_waiting(const struct greenrt_task *t, void *arg)
{
	if (greenrt_task_state(t) == GREENRT_WAITING && !t->worker)
		(*(int *)arg)++;
	return true;
}

static void registry_root(void *unused)
{
	struct greenrt_task *tasks[10];
	int waiting = 0;

	(void)unused;
	chan = greenrt_chan_create(0);
	for (int i = 0; i < 10; i++)
		tasks[i] = greenrt_spawn("parked", receive_until_closed, NULL);
	while (waiting < 10) {
		greenrt_sleep(MS);
		waiting = 0;
		greenrt_foreach_task(count_waiting, &waiting);
	}
	view = (struct registry_view){ .root = greenrt_self(), .ids_ok = true };
	greenrt_foreach_task(inspect_task, &view);
	greenrt_chan_close(chan);
	for (int i = 0; i < 10; i++)
		greenrt_join(tasks[i]);
	log_values[0] = greenrt_task_count;
	greenrt_chan_destroy(chan);
}

Test(greenrt, registry_lists_tasks_as_a_sampler_reads_them, .timeout = 10)
{
	run_with_workers(registry_root, 2);
	cr_assert_eq(view.count, 11);
	cr_assert(view.root_ok, "root task entry");
	cr_assert(view.ids_ok);
	cr_assert_eq(view.waiting_ok, 10);
	cr_assert_eq(log_values[0], 1, "only the root left");
	cr_assert_eq(greenrt_worker_count, 2);
	cr_assert_neq(greenrt_workers[0].tid, 0);
	cr_assert_neq(greenrt_workers[1].tid, 0);
	cr_assert_neq(greenrt_poller_tid, 0);
}

/* 1024 parked tasks and 4096 yielding compute tasks at once. */
static double sums[4096];

static struct greenrt_mutex start_gate;

static void small_compute(void *slot)
{
	double sum = 0;

	/* Wait for the root to count everyone, then compute. */
	greenrt_mutex_lock(&start_gate);
	greenrt_mutex_unlock(&start_gate);
	for (int i = 1; i <= 4096; i++) {
		sum += sqrt(i);
		if (i % 1024 == 0)
			greenrt_yield();
	}
	*(double *)slot = sum;
}

static void stress_root(void *unused)
{
	static struct greenrt_task *compute[4096];

	(void)unused;
	chan = greenrt_chan_create(0);
	greenrt_mutex_init(&start_gate);
	greenrt_mutex_lock(&start_gate);
	for (int i = 0; i < 1024; i++)
		greenrt_go("parked", receive_until_closed, NULL);
	for (int i = 0; i < 4096; i++)
		compute[i] = greenrt_spawn("compute", small_compute, &sums[i]);
	greenrt_sleep(MS);
	peak_count = greenrt_task_count;
	greenrt_mutex_unlock(&start_gate);
	for (int i = 0; i < 4096; i++)
		greenrt_join(compute[i]);
	greenrt_chan_close(chan);
}

Test(greenrt, parked_and_compute_tasks_at_scale, .timeout = 20)
{
	run_with_workers(stress_root, 2);
	cr_assert_eq(peak_count, 1 + 1024 + 4096);
	cr_assert_eq(closed_receives, 1024);
	for (int i = 0; i < 4096; i++)
		cr_assert_eq(sums[i], sums[0]);
	cr_assert_gt(sums[0], 0);
}

static void deadlock_root(void *unused)
{
	(void)unused;
	chan = greenrt_chan_create(0);
	greenrt_chan_recv(chan, NULL);
}

Test(greenrt, deadlock_aborts, .signal = SIGABRT, .timeout = 10)
{
	/* Tell the reader the message on stderr is expected. */
	fprintf(stderr, "test_greenrt: the deadlock report below is expected\n");
	run_with_workers(deadlock_root, 2);
}

/* ---- the parked chains, in-process ---- */

static void parked_root(void *unused)
{
	(void)unused;
	parked_spawn_all();
}

static void *run_parked(void *unused)
{
	struct greenrt_config config = { .workers = 2 };

	(void)unused;
	greenrt_run_with(&config, parked_root, NULL);
	return NULL;
}

static bool collect_task(const struct greenrt_task *t, void *arg)
{
	const struct greenrt_task **tasks = arg;

	for (int i = 0; i < parked_expected_count; i++)
		if (!tasks[i]) {
			tasks[i] = t;
			break;
		}
	return true;
}

/* Unwind a parked task from its saved context, as wallspy does remotely:
 * names leaf first into names[], returns how many; *clean tells whether
 * the unwinder ended the stack itself (unw_step returned 0). */
static int unwind_parked(const struct greenrt_task *t, char names[][64],
			 int max, bool *clean)
{
	ucontext_t ctx = t->ctx;
	unw_cursor_t cursor;
	int n = 0, step;

	*clean = false;
	if (unw_init_local(&cursor, &ctx) != 0)
		return 0;
	do {
		unw_word_t offset;

		if (unw_get_proc_name(&cursor, names[n], 64, &offset) != 0)
			snprintf(names[n], 64, "?");
		n++;
	} while (n < max && (step = unw_step(&cursor)) > 0);
	*clean = n < max && step == 0;
	return n;
}

Test(greenrt, parked_chains_in_process, .timeout = 10)
{
	const struct greenrt_task *tasks[16] = { 0 };
	pthread_t runner;
	uint64_t deadline = greenrt_now_ns() + 5000 * MS;

	cr_assert_eq(pthread_create(&runner, NULL, run_parked, NULL), 0);
	pthread_detach(runner);
	while (!parked_all_settled() && greenrt_now_ns() < deadline)
		usleep(1000);
	cr_assert(parked_all_settled(), "tasks did not settle in 5 s");

	/* They never change again: unwinding after the lock is safe. */
	greenrt_foreach_task(collect_task, tasks);
	for (int i = 0; i < parked_expected_count; i++) {
		const struct greenrt_task *t = tasks[i];
		const struct parked_expectation *e = NULL;
		char names[16][64];
		int depth, n;
		bool clean;

		cr_assert_not_null(t);
		for (int j = 0; j < parked_expected_count; j++)
			if (strcmp(parked_expected[j].name, t->name) == 0)
				e = &parked_expected[j];
		cr_assert_not_null(e, "unexpected task %s", t->name);
		if (e->state != GREENRT_WAITING)
			continue;	/* the spinner's registers are live */
		for (depth = 0; depth < PARKED_CHAIN_MAX && e->chain[depth];)
			depth++;
		n = unwind_parked(t, names, 16, &clean);
		cr_assert_eq(n, depth, "%s: %d frames, expected %d (leaf %s)",
			     t->name, n, depth, names[0]);
		for (int f = 0; f < depth; f++)
			cr_assert_str_eq(names[f], e->chain[depth - 1 - f],
					 "%s frame %d", t->name, f);
		cr_assert(clean, "%s: unwind did not end at greenrt_task_main",
			  t->name);
	}
}

/* ---- the built programs ---- */

/* Runs argv (tests/lib/e2e_util: it dies with the test) and asserts it
 * exits 0 within timeout_ms. */
static void assert_program_exits_0(char *const argv[], int timeout_ms)
{
	struct e2e_result res;

	e2e_run(argv, NULL, timeout_ms, &res);
	cr_assert(!res.timed_out, "%s did not finish in %d ms", argv[0],
		  timeout_ms);
	cr_assert_eq(e2e_exit_code(&res), 0, "%s: status %#x", argv[0],
		     res.status);
}

Test(greenrt, workloads_scaled_down_exit_0, .timeout = 30, .fini = e2e_cleanup)
{
	/* w1: 20 × 10 ms; w2: 2000 × 100 µs, both orders; w3: 64 tasks of
	 * 2^16 iterations, yielding every 2^12. */
	char *w1[] = { FIXTURE_DIR "greenrt_w1_channel", "20", NULL };
	char *w2[] = { FIXTURE_DIR "greenrt_w2_short_lived", "2000", NULL };
	char *w2i[] = { FIXTURE_DIR "greenrt_w2_short_lived", "2000",
			"interleaved", NULL };
	char *w3[] = { FIXTURE_DIR "greenrt_w3_compute", "64", "65536",
		       "4096", NULL };

	assert_program_exits_0(w1, 5000);
	assert_program_exits_0(w2, 5000);
	assert_program_exits_0(w2i, 5000);
	assert_program_exits_0(w3, 5000);
}

Test(greenrt, parked_fixture_prints_ready_and_exits_on_sigterm,
     .timeout = 15, .fini = e2e_cleanup)
{
	char *argv[] = { FIXTURE_DIR "greenrt_parked", NULL };
	char *expected_argv[] = { FIXTURE_DIR "greenrt_parked", "--expected",
				  NULL };
	struct e2e_spawn_opts opts = { .pipe_stdout = true };
	struct e2e_proc proc = e2e_spawn(argv, &opts);
	char line[256];
	int status, lines = 0;

	/* Its first line, whatever it is, must be "ready". */
	cr_assert(e2e_wait_line_prefix(proc.out_fd, "", line, sizeof(line), 5000),
		  "no line within 5 s");
	cr_assert_str_eq(line, "ready");
	kill(proc.pid, SIGTERM);
	cr_assert(e2e_wait_timeout(proc.pid, 5000, &status),
		  "greenrt_parked ignored SIGTERM");
	close(proc.out_fd);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "status %#x", status);

	/* --expected prints the table, one task a line. */
	struct e2e_result res;
	e2e_run(expected_argv, NULL, 5000, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "--expected: status %#x",
		     res.status);
	for (const char *p = res.out; *p; p++)
		lines += *p == '\n';
	cr_assert_eq(lines, parked_expected_count);
}
