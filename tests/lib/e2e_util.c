/*
 * e2e_util: process, file and JSON helpers shared by the end-to-end tests.
 * Owns the per-test registry of spawned processes, allocations and temporary
 * directories that e2e_cleanup() releases (each Criterion test runs in its
 * own worker process, so the registry is per test). See e2e_util.h.
 */
#include "e2e_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ftw.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

enum { MAX_TRACKED = 256 };

static pid_t tracked_pids[MAX_TRACKED];
static int tracked_pid_count;
static void *tracked_allocs[MAX_TRACKED];
static int tracked_alloc_count;
static cJSON *tracked_json[MAX_TRACKED];
static int tracked_json_count;
static char *tracked_dirs[MAX_TRACKED];
static int tracked_dir_count;

static void *track_alloc(void *ptr)
{
	cr_assert_not_null(ptr, "out of memory");
	cr_assert_lt(tracked_alloc_count, MAX_TRACKED, "too many allocations");
	tracked_allocs[tracked_alloc_count++] = ptr;
	return ptr;
}

static void track_pid(pid_t pid)
{
	cr_assert_lt(tracked_pid_count, MAX_TRACKED, "too many processes");
	tracked_pids[tracked_pid_count++] = pid;
}

static void untrack_pid(pid_t pid)
{
	for (int i = 0; i < tracked_pid_count; i++) {
		if (tracked_pids[i] == pid) {
			tracked_pids[i] = tracked_pids[--tracked_pid_count];
			return;
		}
	}
}

static bool is_tracked(pid_t pid)
{
	for (int i = 0; i < tracked_pid_count; i++)
		if (tracked_pids[i] == pid)
			return true;
	return false;
}

const char *e2e_wallspy(void)
{
	return WS_BUILD_DIR "/wallspy";
}

const char *e2e_fixture(const char *name)
{
	char *path;

	if (asprintf(&path, "%s/fixtures/%s", WS_BUILD_DIR, name) < 0)
		path = NULL;
	return track_alloc(path);
}

double e2e_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void e2e_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

struct e2e_proc e2e_spawn(char *const argv[], const struct e2e_spawn_opts *opts)
{
	static const struct e2e_spawn_opts defaults;
	int out_pipe[2] = { -1, -1 }, err_pipe[2] = { -1, -1 };
	int exec_pipe[2];               /* carries errno if exec fails */
	pid_t parent = getpid();
	struct e2e_proc proc = { .pid = -1, .out_fd = -1, .err_fd = -1 };

	if (!opts)
		opts = &defaults;
	if (opts->pipe_stdout)
		cr_assert_eq(pipe2(out_pipe, O_CLOEXEC), 0, "pipe: %s",
			     strerror(errno));
	if (opts->pipe_stderr)
		cr_assert_eq(pipe2(err_pipe, O_CLOEXEC), 0, "pipe: %s",
			     strerror(errno));
	cr_assert_eq(pipe2(exec_pipe, O_CLOEXEC), 0, "pipe: %s", strerror(errno));
	/* Criterion's output must not be duplicated by the child. */
	fflush(NULL);

	pid_t pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* Child: only async-signal-safe calls until exec. */
		int devnull = open("/dev/null", O_RDONLY);
		int exec_errno;

		close(exec_pipe[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO);
		if (out_pipe[1] >= 0)
			dup2(out_pipe[1], STDOUT_FILENO);
		if (err_pipe[1] >= 0)
			dup2(err_pipe[1], STDERR_FILENO);
		if (opts->cwd && chdir(opts->cwd) != 0) {
			exec_errno = errno;
			(void)!write(exec_pipe[1], &exec_errno, sizeof(exec_errno));
			_exit(127);
		}
		/* Criterion may block signals in its workers: start clean. */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], argv);
		exec_errno = errno;
		(void)!write(exec_pipe[1], &exec_errno, sizeof(exec_errno));
		_exit(127);
	}
	track_pid(pid);
	close(exec_pipe[1]);
	int exec_errno = 0;
	ssize_t got;
	while ((got = read(exec_pipe[0], &exec_errno, sizeof(exec_errno))) < 0 &&
	       errno == EINTR)
		;
	close(exec_pipe[0]);
	cr_assert_eq(got, 0, "cannot start %s: %s", argv[0], strerror(exec_errno));
	proc.pid = pid;
	if (out_pipe[1] >= 0) {
		close(out_pipe[1]);
		proc.out_fd = out_pipe[0];
	}
	if (err_pipe[1] >= 0) {
		close(err_pipe[1]);
		proc.err_fd = err_pipe[0];
	}
	return proc;
}

/* Reads fd until a line that equals `want` (or, with prefix, starts with
 * it) arrives; copies it into line (size > 0) when line is not NULL. */
static bool wait_line(int fd, const char *want, bool prefix, char *line,
		      size_t size, int timeout_ms)
{
	double deadline = e2e_now() + timeout_ms / 1000.0;
	size_t want_len = strlen(want);
	char buf[4096];
	size_t len = 0;

	for (;;) {
		/* Check complete lines already buffered. */
		size_t start = 0;

		for (size_t i = 0; i < len; i++) {
			if (buf[i] != '\n')
				continue;
			size_t n = i - start;
			if ((prefix ? n >= want_len : n == want_len) &&
			    memcmp(buf + start, want, want_len) == 0) {
				if (line)
					snprintf(line, size, "%.*s", (int)n,
						 buf + start);
				return true;
			}
			start = i + 1;
		}
		memmove(buf, buf + start, len - start);
		len -= start;
		if (len == sizeof(buf))
			len = 0;        /* an overlong line cannot be ours */

		int left = (int)((deadline - e2e_now()) * 1000);
		if (left <= 0)
			return false;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int ready = poll(&pfd, 1, left);
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready <= 0)
			return false;
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		len += (size_t)n;
	}
}

bool e2e_wait_line(int fd, const char *line, int timeout_ms)
{
	return wait_line(fd, line, false, NULL, 0, timeout_ms);
}

bool e2e_wait_line_prefix(int fd, const char *prefix, char *line, size_t size,
			  int timeout_ms)
{
	return wait_line(fd, prefix, true, line, size, timeout_ms);
}

bool e2e_wait_timeout(pid_t pid, int timeout_ms, int *status)
{
	double deadline = e2e_now() + timeout_ms / 1000.0;

	for (;;) {
		pid_t got = waitpid(pid, status, WNOHANG);

		if (got == pid) {
			untrack_pid(pid);
			return true;
		}
		if (got < 0 && errno != EINTR) {
			untrack_pid(pid);
			return false;
		}
		if (e2e_now() >= deadline)
			return false;
		e2e_sleep_ms(5);
	}
}

void e2e_track(pid_t pid)
{
	if (!is_tracked(pid))
		track_pid(pid);
}

void e2e_forget(pid_t pid)
{
	untrack_pid(pid);
}

void e2e_kill(pid_t pid)
{
	if (pid <= 0 || !is_tracked(pid))
		return;
	kill(pid, SIGKILL);
	for (;;) {
		pid_t got = waitpid(pid, NULL, __WALL | WNOHANG);

		if (got == pid || (got < 0 && errno != EINTR))
			break;
		/* When this test traces the process (test_target), the
		 * leader's death is reported only once its threads' are, and
		 * those come to us, its tracer: reap them. waitpid on a tid
		 * that is not our tracee fails; nothing else is touched. */
		pid_t tids[256];
		int n = e2e_tids(pid, tids, 256);
		for (int i = 0; i < n; i++)
			if (tids[i] != pid)
				waitpid(tids[i], NULL, __WALL | WNOHANG);
		e2e_sleep_ms(1);
	}
	untrack_pid(pid);
}

struct growbuf {
	char *data;
	size_t len;
	size_t cap;
};

static void growbuf_add(struct growbuf *b, const char *bytes, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (b->len + n + 1 > cap)
			cap *= 2;
		b->data = realloc(b->data, cap);
		cr_assert_not_null(b->data, "out of memory");
		b->cap = cap;
	}
	memcpy(b->data + b->len, bytes, n);
	b->len += n;
	b->data[b->len] = '\0';
}

/* Reads what is available from *fd into b; closes it and sets -1 at EOF. */
static void drain(int *fd, struct growbuf *b)
{
	char chunk[8192];

	for (;;) {
		ssize_t n = read(*fd, chunk, sizeof(chunk));

		if (n > 0) {
			growbuf_add(b, chunk, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			close(*fd);
			*fd = -1;
		}
		return;         /* EOF or EAGAIN */
	}
}

void e2e_collect(struct e2e_proc *proc, int timeout_ms, int signal_to_send,
		 int signal_after_ms, struct e2e_result *res)
{
	double start = e2e_now();
	double deadline = start + timeout_ms / 1000.0;
	double signal_at = start + signal_after_ms / 1000.0;
	bool signalled = signal_to_send == 0;
	struct growbuf out = { 0 }, err = { 0 };
	bool exited = false;

	memset(res, 0, sizeof(*res));
	growbuf_add(&out, "", 0);
	growbuf_add(&err, "", 0);
	if (proc->out_fd >= 0)
		fcntl(proc->out_fd, F_SETFL, O_NONBLOCK);
	if (proc->err_fd >= 0)
		fcntl(proc->err_fd, F_SETFL, O_NONBLOCK);

	while (!exited) {
		struct pollfd pfds[2];
		int nfds = 0;

		if (proc->out_fd >= 0)
			pfds[nfds++] = (struct pollfd){ proc->out_fd, POLLIN, 0 };
		if (proc->err_fd >= 0)
			pfds[nfds++] = (struct pollfd){ proc->err_fd, POLLIN, 0 };
		/* Short slices: the exit is noticed by waitpid, not by EOF,
		 * since a detached grandchild may hold the pipes open. */
		if (nfds > 0)
			poll(pfds, nfds, 10);
		else
			e2e_sleep_ms(10);
		if (proc->out_fd >= 0)
			drain(&proc->out_fd, &out);
		if (proc->err_fd >= 0)
			drain(&proc->err_fd, &err);

		if (!signalled && e2e_now() >= signal_at) {
			kill(proc->pid, signal_to_send);
			signalled = true;
		}
		pid_t got = waitpid(proc->pid, &res->status, WNOHANG);
		if (got == proc->pid) {
			exited = true;
			untrack_pid(proc->pid);
		} else if (e2e_now() >= deadline) {
			res->timed_out = true;
			e2e_kill(proc->pid);
			break;
		}
	}
	res->seconds = e2e_now() - start;
	/* Whatever the process wrote before exiting is in the pipes now. */
	if (proc->out_fd >= 0) {
		drain(&proc->out_fd, &out);
		if (proc->out_fd >= 0)
			close(proc->out_fd);
		proc->out_fd = -1;
	}
	if (proc->err_fd >= 0) {
		drain(&proc->err_fd, &err);
		if (proc->err_fd >= 0)
			close(proc->err_fd);
		proc->err_fd = -1;
	}
	res->out = track_alloc(out.data);
	res->err = track_alloc(err.data);
}

void e2e_run(char *const argv[], const char *cwd, int timeout_ms,
	     struct e2e_result *res)
{
	struct e2e_spawn_opts opts = {
		.pipe_stdout = true, .pipe_stderr = true, .cwd = cwd,
	};
	double start = e2e_now();
	struct e2e_proc proc = e2e_spawn(argv, &opts);

	e2e_collect(&proc, timeout_ms, 0, 0, res);
	res->seconds = e2e_now() - start;
}

int e2e_exit_code(const struct e2e_result *res)
{
	if (res->timed_out || !WIFEXITED(res->status))
		return -1;
	return WEXITSTATUS(res->status);
}

/* The fields of /proc/PID[/task/TID]/stat after "(COMM)", split at spaces
 * into fields[0..max): fields[0] is the state. Returns how many. */
static int stat_fields(pid_t pid, pid_t tid, char *buf, size_t size,
		       char **fields, int max)
{
	char path[64];
	FILE *f;

	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* COMM may contain spaces and parentheses: start after the last ')'. */
	char *p = strrchr(buf, ')');
	int count = 0;
	if (!p)
		return 0;
	for (char *save, *field = strtok_r(p + 1, " \n", &save);
	     field && count < max; field = strtok_r(NULL, " \n", &save))
		fields[count++] = field;
	return count;
}

char e2e_proc_state(pid_t pid, pid_t tid)
{
	char buf[1024], *fields[1];

	return stat_fields(pid, tid, buf, sizeof(buf), fields, 1) == 1
		       ? fields[0][0] : 0;
}

bool e2e_wait_proc_state(pid_t pid, char state, int timeout_ms)
{
	for (int waited = 0; e2e_proc_state(pid, 0) != state; waited += 10) {
		if (waited >= timeout_ms)
			return false;
		e2e_sleep_ms(10);
	}
	return true;
}

double e2e_cpu_seconds(pid_t pid, pid_t tid)
{
	char buf[1024], *fields[16];

	/* utime and stime are fields 14 and 15 of stat: 12 and 13 here. */
	if (stat_fields(pid, tid, buf, sizeof(buf), fields, 16) < 14)
		return -1;
	return (double)(strtoull(fields[11], NULL, 10) +
			strtoull(fields[12], NULL, 10)) /
	       (double)sysconf(_SC_CLK_TCK);
}

bool e2e_wait_cpu(pid_t pid, pid_t tid, double seconds, int timeout_ms)
{
	double deadline = e2e_now() + timeout_ms / 1000.0;

	for (;;) {
		double used = e2e_cpu_seconds(pid, tid);

		if (used >= seconds)
			return true;
		if (used < 0 || e2e_now() >= deadline)
			return false;
		e2e_sleep_ms(5);
	}
}

pid_t e2e_tracer(pid_t pid, pid_t tid)
{
	char path[64], line[256];
	FILE *f;
	pid_t tracer = -1;

	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	fclose(f);
	return tracer;
}

bool e2e_traced_by(pid_t pid, pid_t tracer)
{
	pid_t tids[256];
	int n = e2e_tids(pid, tids, 256);

	if (n <= 0)
		return false;
	for (int i = 0; i < n; i++) {
		pid_t t = e2e_tracer(pid, tids[i]);

		/* A thread other than the leader that exited since it was
		 * listed (a churning process) has no status left: skipped. */
		if (t == -1 && tids[i] != pid)
			continue;
		if (t != tracer)
			return false;
	}
	return true;
}

bool e2e_wait_traced(pid_t pid, pid_t tracer, int timeout_ms)
{
	double deadline = e2e_now() + timeout_ms / 1000.0;

	while (e2e_tracer(pid, pid) != tracer) {
		if (e2e_now() >= deadline)
			return false;
		e2e_sleep_ms(2);
	}
	return true;
}

long e2e_ctxt_switches(pid_t pid, pid_t tid)
{
	char path[64], line[256];
	long n, total = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1 ||
		    sscanf(line, "nonvoluntary_ctxt_switches: %ld", &n) == 1)
			total = (total < 0 ? 0 : total) + n;
	fclose(f);
	return total;
}

bool e2e_wait_woken(pid_t pid, pid_t tid, int times, int timeout_ms)
{
	double deadline = e2e_now() + timeout_ms / 1000.0;
	long start = e2e_ctxt_switches(pid, tid);

	if (start < 0)
		return false;
	for (;;) {
		long now = e2e_ctxt_switches(pid, tid);

		if (now < 0)
			return false;
		if (now - start >= times)
			return true;
		if (e2e_now() >= deadline)
			return false;
		e2e_sleep_ms(2);
	}
}

pid_t e2e_thread_named(pid_t pid, const char *comm)
{
	pid_t tids[256];
	int n = e2e_tids(pid, tids, 256);
	char name[64];

	for (int i = 0; i < n; i++)
		if (e2e_thread_comm(pid, tids[i], name, sizeof(name)) &&
		    strcmp(name, comm) == 0)
			return tids[i];
	return 0;
}

bool e2e_thread_syscall(pid_t pid, pid_t tid, long *nr, uint64_t *sp,
			uint64_t *pc)
{
	char path[64], line[512];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	/* "NR ARG1 ... ARG6 SP PC" while blocked in a call, "running" or
	 * "-1 SP PC" otherwise. */
	ok = fgets(line, sizeof(line), f) &&
	     sscanf(line, "%ld %*x %*x %*x %*x %*x %*x %" SCNx64 " %" SCNx64,
		    nr, sp, pc) == 3;
	fclose(f);
	return ok && *nr >= 0;
}

bool e2e_read_mem(pid_t pid, uint64_t address, void *buf, size_t size)
{
	char path[64];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = pread(fd, buf, size, (off_t)address);
	close(fd);
	return n == (ssize_t)size;
}

int e2e_tids(pid_t pid, pid_t *tids, int max)
{
	char path[64];
	DIR *dir;
	struct dirent *ent;
	int count = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((ent = readdir(dir)) && count < max) {
		if (ent->d_name[0] >= '0' && ent->d_name[0] <= '9')
			tids[count++] = atoi(ent->d_name);
	}
	closedir(dir);
	return count;
}

bool e2e_running_not_stopped(pid_t pid, int checks, int interval_ms)
{
	for (int i = 0; i < checks; i++) {
		pid_t tids[256];
		int n = e2e_tids(pid, tids, 256);
		char state = e2e_proc_state(pid, 0);

		if (state == 0 || state == 'T' || state == 't' || state == 'Z' ||
		    n == 0)
			return false;
		for (int j = 0; j < n; j++) {
			char s = e2e_proc_state(pid, tids[j]);

			if (s == 'T' || s == 't')
				return false;
		}
		if (i + 1 < checks)
			e2e_sleep_ms(interval_ms);
	}
	return true;
}

bool e2e_thread_comm(pid_t pid, pid_t tid, char *buf, size_t size)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)size, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

char *e2e_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	struct growbuf b = { 0 };
	char chunk[65536];
	size_t n;

	if (!f)
		return NULL;
	growbuf_add(&b, "", 0);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		growbuf_add(&b, chunk, n);
	fclose(f);
	return track_alloc(b.data);
}

cJSON *e2e_parse_json(const char *text)
{
	cJSON *json = cJSON_Parse(text);

	if (json) {
		cr_assert_lt(tracked_json_count, MAX_TRACKED, "too many JSON trees");
		tracked_json[tracked_json_count++] = json;
	}
	return json;
}

bool e2e_json_is_integer(const cJSON *item)
{
	return cJSON_IsNumber(item) &&
	       item->valuedouble == (double)(long)item->valuedouble;
}

cJSON *e2e_load_json(const char *path)
{
	char *text = e2e_read_file(path);

	return text ? e2e_parse_json(text) : NULL;
}

const char *e2e_tmpdir(void)
{
	char *dir = strdup("/tmp/wallspy-e2e-XXXXXX");

	cr_assert_not_null(dir, "out of memory");
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	cr_assert_lt(tracked_dir_count, MAX_TRACKED, "too many directories");
	tracked_dirs[tracked_dir_count++] = dir;
	return dir;
}

const char *e2e_path(const char *dir, const char *name)
{
	char *path;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		path = NULL;
	return track_alloc(path);
}

const char *e2e_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return e2e_strndup(".", 1);
	return e2e_strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

const char *e2e_strndup(const char *s, size_t n)
{
	return track_alloc(strndup(s, n));
}

int e2e_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *ent;
	int count = 0;

	if (!d)
		return -1;
	while ((ent = readdir(d))) {
		if (strcmp(ent->d_name, ".") != 0 && strcmp(ent->d_name, "..") != 0)
			count++;
	}
	closedir(d);
	return count;
}

const char *e2e_dir_list(const char *dir)
{
	struct dirent **names;
	struct growbuf b = { 0 };
	int n = scandir(dir, &names, NULL, alphasort);

	growbuf_add(&b, "", 0);
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") != 0 &&
		    strcmp(names[i]->d_name, "..") != 0) {
			growbuf_add(&b, names[i]->d_name, strlen(names[i]->d_name));
			growbuf_add(&b, "\n", 1);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	return track_alloc(b.data);
}

bool e2e_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

bool e2e_match(const char *text, const char *regex)
{
	regex_t re;

	cr_assert_eq(regcomp(&re, regex, REG_EXTENDED | REG_NEWLINE | REG_NOSUB),
		     0, "bad regex %s", regex);
	bool matched = regexec(&re, text, 0, NULL, 0) == 0;
	regfree(&re);
	return matched;
}

bool e2e_is_one_error_line(const char *text)
{
	size_t len = strlen(text);

	return strncmp(text, "wallspy: ", 9) == 0 && len > 10 &&
	       strchr(text, '\n') == text + len - 1;
}

void e2e_become_subreaper(void)
{
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0,
		     "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
}

/* Parent PID from /proc/PID/stat ("PID (COMM) S PPID ..."); -1 if gone. */
static pid_t parent_of(pid_t pid)
{
	char buf[1024], *fields[2];

	return stat_fields(pid, 0, buf, sizeof(buf), fields, 2) == 2
		       ? (pid_t)atoi(fields[1]) : -1;
}

int e2e_adopt_orphans(pid_t *pids, int max)
{
	DIR *dir = opendir("/proc");
	struct dirent *ent;
	pid_t self = getpid();
	int count = 0;

	cr_assert_not_null(dir, "/proc: %s", strerror(errno));
	while ((ent = readdir(dir))) {
		if (ent->d_name[0] < '1' || ent->d_name[0] > '9')
			continue;
		pid_t pid = atoi(ent->d_name);

		if (parent_of(pid) != self || is_tracked(pid))
			continue;
		if (tracked_pid_count < MAX_TRACKED)
			track_pid(pid);
		if (pids && count < max)
			pids[count] = pid;
		count++;
	}
	closedir(dir);
	return count;
}

void e2e_cleanup_adopting(void)
{
	e2e_adopt_orphans(NULL, 0);
	e2e_cleanup();
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void e2e_cleanup(void)
{
	while (tracked_pid_count > 0)
		e2e_kill(tracked_pids[tracked_pid_count - 1]);
	for (int i = 0; i < tracked_json_count; i++)
		cJSON_Delete(tracked_json[i]);
	tracked_json_count = 0;
	for (int i = 0; i < tracked_alloc_count; i++)
		free(tracked_allocs[i]);
	tracked_alloc_count = 0;
	for (int i = 0; i < tracked_dir_count; i++) {
		nftw(tracked_dirs[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(tracked_dirs[i]);
	}
	tracked_dir_count = 0;
}

pid_t e2e_start_ready(char *const argv[], const char *ready, int timeout_ms)
{
	struct e2e_spawn_opts opts = { .pipe_stdout = true };
	struct e2e_proc proc = e2e_spawn(argv, &opts);

	cr_assert(e2e_wait_line(proc.out_fd, ready, timeout_ms),
		  "%s did not print %s", argv[0], ready);
	close(proc.out_fd);
	return proc.pid;
}

pid_t e2e_start_fixture(const char *name, const char *arg, const char *ready,
			int timeout_ms)
{
	char *argv[] = { (char *)e2e_fixture(name), (char *)arg, NULL };

	return e2e_start_ready(argv, ready, timeout_ms);
}

const char *e2e_need_fixture(const char *name)
{
	const char *path = e2e_fixture(name);
	const char *slash = strrchr(path, '/');
	char *why = NULL;

	/* A Go release of the matrix whose toolchain is missing says why in
	 * its directory (tools/go-toolchains build). */
	if (slash) {
		char *unavailable;

		cr_assert_geq(asprintf(&unavailable, "%.*s/UNAVAILABLE",
				       (int)(slash - path), path), 0);
		why = e2e_read_file(unavailable);
		free(unavailable);
	}
	if (why)
		cr_skip_test("fixture %s not built: %s", path, why);
	if (access(path, X_OK) != 0) {
		/* A fixture that could not be built may leave a plain file
		 * in its place saying why (fixtures/pth/build-pth.sh). */
		why = e2e_read_file(path);
		if (why && *why)
			cr_skip_test("%s", why);
		cr_skip_test("fixture %s not built (the Go fixtures need "
			     "golang-go, the Crystal one crystal)", path);
	}
	return path;
}

const char *e2e_need_go_fixture(const char *release, const char *name)
{
	char path[64];

	if (release)
		snprintf(path, sizeof(path), "go/go%s/%s", release, name);
	else
		snprintf(path, sizeof(path), "go/%s", name);
	return e2e_need_fixture(path);
}

struct e2e_proc e2e_start_go(const char *name, const char *const args[],
			     int timeout_ms)
{
	const char *argv[16];
	struct e2e_spawn_opts opts = { .pipe_stdout = true };
	char ready[64];
	int n = 0;

	argv[n++] = e2e_need_fixture(name);
	for (int i = 0; args && args[i]; i++) {
		cr_assert_lt(n, 15);
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	struct e2e_proc proc = e2e_spawn((char *const *)argv, &opts);
	snprintf(ready, sizeof(ready), "ready pid=%d", proc.pid);
	cr_assert(e2e_wait_line(proc.out_fd, ready, timeout_ms),
		  "%s never printed \"%s\"", name, ready);
	return proc;
}

const char *e2e_build_go(const char *source, const char *ldflags)
{
	if (system("command -v go >/dev/null 2>&1") != 0)
		cr_skip_test("no Go toolchain (go) on PATH");
	const char *dir = e2e_tmpdir();
	const char *main_go = e2e_path(dir, "main.go");
	FILE *f = fopen(main_go, "w");
	cr_assert_not_null(f, "%s: %s", main_go, strerror(errno));
	fputs(source, f);
	cr_assert_eq(fclose(f), 0);
	char *cmd;
	cr_assert_geq(asprintf(&cmd,
		"cd '%s' && GOCACHE='%s/tests/gocache' GOPATH='%s/gopath' "
		"GO111MODULE=off GOFLAGS=-buildvcs=false "
		"go build -ldflags='%s' -o prog main.go >build.log 2>&1",
		dir, WS_BUILD_DIR, dir, ldflags ? ldflags : ""), 0);
	int status = system(cmd);
	free(cmd);
	cr_assert_eq(status, 0, "go build failed: %s",
		     e2e_read_file(e2e_path(dir, "build.log")));
	return e2e_path(dir, "prog");
}

void e2e_check_healthy_then_stop(pid_t pid)
{
	int status;

	cr_assert(e2e_running_not_stopped(pid, 5, 50),
		  "target %d stopped or gone after wallspy finished", pid);
	cr_assert_eq(kill(pid, SIGTERM), 0);
	cr_assert(e2e_wait_timeout(pid, 5000, &status),
		  "target did not exit on SIGTERM");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "target ended with status 0x%x, expected exit 0", status);
}
