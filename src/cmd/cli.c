/*
 * Command-line parsing and help (see ws_cli.h), and the settings wallspy
 * takes from the environment (the debug-info cache's), read here once.
 * getopt_long in "+" mode so options stop at the first non-option:
 * `wallspy record prog -x` passes -x to prog, as does
 * `wallspy record -- prog -x`.
 */
#include "ws_cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ws_debugcache.h"
#include "ws_debuginfod.h"
#include "ws_runtime.h"
#include "ws_target.h"

/* The help, around the --runtime lines, which come from the table of
 * runtimes (ws_runtime_choices). */
static const char help_head[] =
"usage: wallspy record [OPTIONS] -- CMD [ARGS...]\n"
"       wallspy record [OPTIONS] -p PID   (as attach)\n"
"       wallspy attach [OPTIONS] [-p] PID\n"
"       wallspy dump [--json] [--group] [--runtime NAME] [--system-tasks]\n"
"                    [-p] PID\n"
"\n"
"A wall-time profiler: samples every task of a process, running or not.\n"
"\n"
"commands:\n"
"  record        launch CMD traced and sample it until it exits, --duration\n"
"                ends or Ctrl-C; a CMD still running then is ended as\n"
"                timeout(1) would: the signal wallspy got (SIGTERM when\n"
"                --duration ran out), SIGKILL 5 s later\n"
"  attach        sample a running process until it exits, --duration ends,\n"
"                or Ctrl-C (the process keeps running)\n"
"  dump          print every task's stack once, then detach: a header\n"
"                (process, runtime, tasks, how long it took), then the\n"
"                main thread, then the other tasks by id\n"
"\n"
"options (record, attach):\n"
"  -o, --output FILE       output file (default wallspy-PID.speedscope.json,\n"
"                          wallspy-PID.folded or wallspy-PID.pb.gz; - for\n"
"                          standard output)\n"
"  -f, --format FORMAT     speedscope (default), folded (root;...;leaf COUNT,\n"
"                          COUNT in ticks of 1/rate s) or pprof (gzipped\n"
"                          profile.proto for go tool pprof: states, wait\n"
"                          reasons and task ids as labels)\n"
"  -r, --rate HZ           samples per second (default 100, at most 10000)\n"
"  -d, --duration SECONDS  stop after this long (default: until exit/Ctrl-C)\n"
"      --group-by KEY      all (default: one merged profile of task-seconds),\n"
"                          thread, state, task, process, or label:NAME (Go:\n"
"                          the value of each goroutine's runtime/pprof label\n"
"                          NAME): one speedscope profile per group (a\n"
"                          thread's or task's shows when it was observed)\n"
"      --subprocesses      follow fork, vfork and exec into every descendant:\n"
"                          each process's tasks are sampled, their stacks\n"
"                          under a \"process PID \\\"COMMAND\\\"\" root frame\n"
"      --lines             one frame per source line (default: one frame per\n"
"                          function)\n"
"      --started-only      leave out tasks that have not started yet (shown\n"
"                          as [not started] under their entry by default)\n"
"      --max-pause MS      pause budget per tick (default 1; 0 = none): with\n"
"                          more tasks than fit, a random subset is sampled\n"
"                          each tick, weighted to stay unbiased; no OS\n"
"                          thread is held longer\n"
"      --max-cpu PERCENT   CPU budget for reading, unwinding and naming\n"
"                          stacks, in % of one core (default 2; 0 = none):\n"
"                          beyond it, a weighted random subset of tasks (or\n"
"                          OS threads) is sampled\n"
"      --stop-all          hold every thread of the target while its tasks\n"
"                          are read, as dump does (default: green threads\n"
"                          and goroutines are read while the target runs,\n"
"                          checked, and only threads running a task stop)\n"
"      --keep-running      (record) leave CMD running when the recording\n"
"                          ends before it (-d, Ctrl-C)\n"
"  -q, --quiet             no status line and no summary\n"
"options (dump):\n"
"      --json              JSON instead of text\n"
"      --group             tasks with identical stacks once, with their\n"
"                          count and ids\n"
"options (all commands):\n"
"  -p, --pid PID           the process to sample (record -p: attach to it)\n"
"      --system-tasks      also the tasks a runtime runs for itself (Go: GC\n"
"                          workers, finalizer, scavenger, forcegc: what Go's\n"
"                          own traceback and goroutine profile leave out)\n";

static const char help_tail[] =
"      --max-stack BYTES   stack bytes copied per task and tick (default\n"
"                          128K; suffixes K, M); deeper stacks are cut and end\n"
"                          in a [stack deeper than --max-stack] frame\n"
"      --no-debug-cache    read compressed debug info as it is installed,\n"
"                          without the uncompressed copy wallspy keeps in\n"
"                          ~/.cache/wallspy/debuginfo (see wallspy(1))\n"
"      --no-debuginfod     do not download missing debug info from the\n"
"                          debuginfod servers DEBUGINFOD_URLS names\n"
"  -h, --help              this help\n"
"  -V, --version           print the version\n"
"\n"
"exit status:\n"
"  0  success (also when the profiled command itself failed)\n"
"  1  internal error\n"
"  2  usage error\n"
"  3  no such process (or the command cannot be executed)\n"
"  4  permission denied (the message says what is missing)\n"
"  5  the target exited before anything was sampled\n"
"  6  cannot write the output file\n"
"  7  the target lacks debug info the runtime needs\n"
"  8  the process cannot be traced: a kernel thread, already traced (the\n"
"     tracer is named), or its main thread has exited\n";

unsigned ws_cli_target_flags(const struct ws_options *o)
{
	return (o->subprocesses ? WS_TARGET_CHILDREN : 0) |
	       (o->switches.trace_clones ? WS_TARGET_TRACE_CLONES : 0);
}

/* Appends `words` to buf at column 26, wrapped before column 78. */
static size_t append_wrapped(char *buf, size_t size, size_t len,
			     const char *words)
{
	enum { INDENT = 26, WIDTH = 78 };
	size_t col = INDENT;
	while (*words && len < size) {
		size_t word = strcspn(words, " ");
		if (col > INDENT && col + 1 + word > WIDTH) {
			len += (size_t)snprintf(buf + len, size - len, "\n%*s",
						INDENT, "");
			col = INDENT;
		} else if (col > INDENT) {
			len += (size_t)snprintf(buf + len, size - len, " ");
			col++;
		}
		len += (size_t)snprintf(buf + len, size - len, "%.*s",
					(int)word, words);
		col += word;
		words += word;
		words += strspn(words, " ");
	}
	if (len < size)
		len += (size_t)snprintf(buf + len, size - len, "\n");
	return len;
}

const char *ws_cli_help(void)
{
	static char help[sizeof(help_head) + sizeof(help_tail) + 512];
	if (!help[0]) {
		char runtimes[512];
		snprintf(runtimes, sizeof(runtimes),
			 "how tasks are found: %s (default auto: a descriptor "
			 "the target carries, else its language's runtime, "
			 "else threads; see wallspy-descriptor(5))",
			 ws_runtime_choices());
		size_t len = (size_t)snprintf(help, sizeof(help), "%s%-26s",
					      help_head,
					      "      --runtime NAME");
		len = append_wrapped(help, sizeof(help), len, runtimes);
		snprintf(help + len, sizeof(help) - len, "%s", help_tail);
	}
	return help;
}

static struct ws_error *usage(const char *fmt, const char *arg)
{
	return ws_error_create(WS_ERR_USAGE, fmt, arg);
}

static struct ws_error *parse_double(const char *opt, const char *arg,
				     double min, double max, double *ret)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || v < min || v > max) {
		return ws_error_create(WS_ERR_USAGE,
				       "%s: invalid value '%s' (expected a number from %g to %g)",
				       opt, arg, min, max);
	}
	*ret = v;
	return NULL;
}

static struct ws_error *parse_size(const char *arg, size_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(arg, &end, 10);
	if (errno || end == arg || arg[0] == '-')
		goto bad;
	if (*end == 'k' || *end == 'K') {
		v *= 1024;
		end++;
	} else if (*end == 'm' || *end == 'M') {
		v *= 1024 * 1024;
		end++;
	}
	if (*end || v < 4096 || v > 64ull * 1024 * 1024)
		goto bad;
	*ret = (size_t)v;
	return NULL;
bad:
	return usage("--max-stack: invalid size '%s' (expected 4K to 64M)", arg);
}

static struct ws_error *parse_pid(const char *arg, pid_t *ret)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0 || v > 0x3fffffff)
		return usage("invalid PID '%s'", arg);
	*ret = (pid_t)v;
	return NULL;
}

enum {
	OPT_GROUP_BY = 256,
	OPT_RUNTIME,
	OPT_MAX_STACK,
	OPT_MAX_PAUSE,
	OPT_MAX_CPU,
	OPT_JSON,
	OPT_GROUP,
	OPT_NO_DEBUG_CACHE,
	OPT_NO_DEBUGINFOD,
	OPT_STOP_ALL,
	OPT_KEEP_RUNNING,
	OPT_SYSTEM_TASKS,
	OPT_LINES,
	OPT_STARTED_ONLY,
	OPT_SUBPROCESSES,
};

static const struct option long_options[] = {
	{"output", required_argument, NULL, 'o'},
	{"format", required_argument, NULL, 'f'},
	{"rate", required_argument, NULL, 'r'},
	{"duration", required_argument, NULL, 'd'},
	{"group-by", required_argument, NULL, OPT_GROUP_BY},
	{"runtime", required_argument, NULL, OPT_RUNTIME},
	{"max-stack", required_argument, NULL, OPT_MAX_STACK},
	{"max-pause", required_argument, NULL, OPT_MAX_PAUSE},
	{"max-cpu", required_argument, NULL, OPT_MAX_CPU},
	{"quiet", no_argument, NULL, 'q'},
	{"json", no_argument, NULL, OPT_JSON},
	{"group", no_argument, NULL, OPT_GROUP},
	{"no-debug-cache", no_argument, NULL, OPT_NO_DEBUG_CACHE},
	{"no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD},
	{"stop-all", no_argument, NULL, OPT_STOP_ALL},
	{"keep-running", no_argument, NULL, OPT_KEEP_RUNNING},
	{"pid", required_argument, NULL, 'p'},
	{"system-tasks", no_argument, NULL, OPT_SYSTEM_TASKS},
	{"lines", no_argument, NULL, OPT_LINES},
	{"started-only", no_argument, NULL, OPT_STARTED_ONLY},
	{"subprocesses", no_argument, NULL, OPT_SUBPROCESSES},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static struct ws_error *parse_option(int c, const char *arg,
				     struct ws_options *o)
{
	bool dump = o->command == WS_CMD_DUMP;
	/* Options that only make sense when recording. */
	if (dump && c != OPT_JSON && c != OPT_GROUP && c != OPT_RUNTIME &&
	    c != OPT_MAX_STACK && c != 'p' && c != OPT_SYSTEM_TASKS &&
	    c != OPT_NO_DEBUG_CACHE && c != OPT_NO_DEBUGINFOD && c != 'h' &&
	    c != 'V' && c != 'q')
		return ws_error_create(WS_ERR_USAGE,
				       "dump: option not supported (see wallspy --help)");
	switch (c) {
	case 'o':
		o->output = arg;
		return NULL;
	case 'f':
		if (strcmp(arg, "speedscope") == 0)
			o->format = WS_FORMAT_SPEEDSCOPE;
		else if (strcmp(arg, "folded") == 0)
			o->format = WS_FORMAT_FOLDED;
		else if (strcmp(arg, "pprof") == 0)
			o->format = WS_FORMAT_PPROF;
		else
			return usage("--format: unknown format '%s' (expected speedscope, folded or pprof)", arg);
		return NULL;
	case 'r':
		return parse_double("--rate", arg, 0.1, 10000, &o->rate);
	case 'd':
		return parse_double("--duration", arg, 0.001, 1e9, &o->duration);
	case OPT_GROUP_BY:
		if (strcmp(arg, "all") == 0)
			o->group_by = WS_GROUP_ALL;
		else if (strcmp(arg, "thread") == 0)
			o->group_by = WS_GROUP_THREAD;
		else if (strcmp(arg, "state") == 0)
			o->group_by = WS_GROUP_STATE;
		else if (strcmp(arg, "task") == 0)
			o->group_by = WS_GROUP_TASK;
		else if (strcmp(arg, "process") == 0)
			o->group_by = WS_GROUP_PROCESS;
		else if (strncmp(arg, "label:", 6) == 0 && arg[6]) {
			o->group_by = WS_GROUP_LABEL;
			o->group_label = arg + 6;
		} else
			return usage("--group-by: unknown key '%s' (expected all, thread, state, task, process or label:NAME)", arg);
		return NULL;
	case OPT_RUNTIME:
		o->runtime = arg;
		return NULL;
	case OPT_MAX_STACK:
		return parse_size(arg, &o->max_stack);
	case OPT_MAX_PAUSE:
		return parse_double("--max-pause", arg, 0, 10000, &o->max_pause);
	case OPT_MAX_CPU:
		return parse_double("--max-cpu", arg, 0, 100, &o->max_cpu);
	case 'q':
		o->quiet = true;
		return NULL;
	case OPT_JSON:
		if (!dump)
			return usage("%s: only for dump", "--json");
		o->json = true;
		return NULL;
	case OPT_GROUP:
		if (!dump)
			return usage("%s: only for dump", "--group");
		o->group = true;
		return NULL;
	case OPT_NO_DEBUG_CACHE:
		o->no_debug_cache = true;
		return NULL;
	case OPT_NO_DEBUGINFOD:
		o->no_debuginfod = true;
		return NULL;
	case OPT_STOP_ALL:
		o->stop_all = true;
		return NULL;
	case OPT_KEEP_RUNNING:
		if (o->command != WS_CMD_RECORD)
			return usage("%s: only for record", "--keep-running");
		o->keep_running = true;
		return NULL;
	case 'p':
		return parse_pid(arg, &o->pid);
	case OPT_SYSTEM_TASKS:
		o->system_tasks = true;
		return NULL;
	case OPT_LINES:
		o->lines = true;
		return NULL;
	case OPT_STARTED_ONLY:
		o->started_only = true;
		return NULL;
	case OPT_SUBPROCESSES:
		o->subprocesses = true;
		return NULL;
	case 'h':
		o->command = WS_CMD_HELP;
		return NULL;
	case 'V':
		o->command = WS_CMD_VERSION;
		return NULL;
	default:
		return NULL;
	}
}

void ws_cli_read_environment(struct ws_options *o)
{
	struct ws_sampler_switches *sw = &o->switches;
	const char *unwinder = getenv("WALLSPY_UNWINDER");
	sw->unwinder = WS_UNWINDER_RUNTIME;
	if (unwinder && strcmp(unwinder, "libdw") == 0)
		sw->unwinder = WS_UNWINDER_LIBDW;
	else if (unwinder && strcmp(unwinder, "libunwind") == 0)
		sw->unwinder = WS_UNWINDER_LIBUNWIND;
	sw->no_step_cache = getenv("WALLSPY_NO_STEP_CACHE") != NULL;
	sw->no_stack_cache = getenv("WALLSPY_NO_STACK_CACHE") != NULL;
	sw->report_pause = getenv("WALLSPY_DEBUG_PAUSE") != NULL;
	sw->trace_clones = getenv("WALLSPY_TRACE_CLONES") != NULL;
}

struct ws_error *ws_cli_parse(int argc, char **argv, struct ws_options *ret)
{
	struct ws_options o = {
		.command = WS_CMD_HELP,
		.format = WS_FORMAT_SPEEDSCOPE,
		.rate = WS_DEFAULT_RATE,
		.group_by = WS_GROUP_ALL,
		.runtime = "auto",
		.max_stack = 128 * 1024,
		.max_pause = WS_DEFAULT_MAX_PAUSE_MS,
		.max_cpu = WS_DEFAULT_MAX_CPU_PERCENT,
	};
	if (argc < 2)
		return usage("%s", "missing command (record, attach or dump; see wallspy --help)");

	const char *cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 ||
	    strcmp(cmd, "help") == 0) {
		*ret = o;
		return NULL;
	}
	if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
		o.command = WS_CMD_VERSION;
		*ret = o;
		return NULL;
	}
	if (strcmp(cmd, "record") == 0)
		o.command = WS_CMD_RECORD;
	else if (strcmp(cmd, "attach") == 0)
		o.command = WS_CMD_ATTACH;
	else if (strcmp(cmd, "dump") == 0)
		o.command = WS_CMD_DUMP;
	else
		return usage("unknown command '%s' (expected record, attach or dump)", cmd);
	enum ws_command command = o.command;

	/* getopt over the subcommand's arguments: argv[1] acts as argv[0]. */
	int sub_argc = argc - 1;
	char **sub_argv = argv + 1;
	optind = 0; /* full re-initialisation, so parsing can be repeated */
	opterr = 0;
	int c;
	while ((c = getopt_long(sub_argc, sub_argv, "+:o:f:r:d:p:qhV",
				long_options, NULL)) != -1) {
		if (c == '?') {
			if (optopt)
				return ws_error_create(WS_ERR_USAGE,
						       "unknown option '-%c'", optopt);
			return usage("unknown option '%s'",
				     sub_argv[optind - 1]);
		}
		if (c == ':')
			return usage("option '%s' needs a value",
				     sub_argv[optind - 1]);
		struct ws_error *err = parse_option(c, optarg, &o);
		if (err)
			return err;
		if (o.command == WS_CMD_HELP || o.command == WS_CMD_VERSION) {
			*ret = o;
			return NULL;
		}
	}
	o.command = command;

	char **rest = sub_argv + optind;
	int nrest = sub_argc - optind;
	switch (o.command) {
	case WS_CMD_RECORD:
		if (o.pid && nrest > 0)
			return usage("%s", "record: -p PID or a command to run, not both");
		if (o.pid) {
			/* py-spy's `record --pid`: sample a running process. */
			o.command = WS_CMD_ATTACH;
			break;
		}
		if (nrest < 1)
			return usage("%s", "record: missing command to run (wallspy record [OPTIONS] -- CMD [ARGS...], or -p PID)");
		o.argv = rest;
		break;
	case WS_CMD_ATTACH:
	case WS_CMD_DUMP:
		if (o.pid && nrest == 0)
			break;
		if (nrest != 1 || o.pid)
			return usage("%s: expected exactly one PID",
				     o.command == WS_CMD_ATTACH ? "attach" : "dump");
		struct ws_error *err = parse_pid(rest[0], &o.pid);
		if (err)
			return err;
		break;
	default:
		break;
	}
	*ret = o;
	return NULL;
}

/* --- the environment --- */

char *ws_cli_debug_cache_dir(void)
{
	const char *env = getenv("WALLSPY_DEBUG_CACHE");
	if (env) {
		if (!*env || strcmp(env, "off") == 0)
			return NULL;
		return strdup(env);
	}
	char *dir = NULL;
	/* The XDG spec says to ignore a relative XDG_CACHE_HOME. */
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	if (xdg && xdg[0] == '/') {
		if (asprintf(&dir, "%s/wallspy/debuginfo", xdg) < 0)
			dir = NULL;
	} else if (home && home[0] == '/') {
		if (asprintf(&dir, "%s/.cache/wallspy/debuginfo", home) < 0)
			dir = NULL;
	}
	return dir;
}

struct ws_debugcache *ws_cli_debug_cache(const struct ws_options *o)
{
	if (o->no_debug_cache)
		return NULL;
	const char *log = getenv("WALLSPY_DEBUG_CACHE_LOG");
	char *dir = ws_cli_debug_cache_dir();
	struct ws_debugcache_options options = {
		.dir = dir,
		.log = log && *log && strcmp(log, "0") != 0,
	};
	struct ws_debugcache *cache = NULL;
	/* Out of memory only: then the installed files are read. */
	ws_error_destroy(ws_debugcache_create(&options, &cache));
	free(dir);
	return cache;
}

struct ws_debuginfod *ws_cli_debuginfod(const struct ws_options *o,
					bool (*service)(void *arg), void *arg)
{
	/* libdebuginfod reads the variable itself; here only whether it
	 * names anything. */
	const char *urls = getenv("DEBUGINFOD_URLS");
	if (o->no_debuginfod || !urls || !urls[strspn(urls, " \t")])
		return NULL;
	struct ws_debuginfod_options options = {
		.progress = !o->quiet,
		.service = service,
		.service_arg = arg,
	};
	struct ws_debuginfod *client = NULL;
	/* Out of memory only: then nothing is downloaded. */
	ws_error_destroy(ws_debuginfod_create(&options, &client));
	return client;
}

struct ws_permission_facts ws_cli_permission_facts(void)
{
	struct ws_permission_facts f = {.root = geteuid() == 0,
					 .yama_scope = -1};
	char buf[4096];
	FILE *file = fopen("/proc/self/status", "re");
	if (file) {
		while (fgets(buf, sizeof(buf), file)) {
			unsigned long long caps;
			if (sscanf(buf, "CapEff: %llx", &caps) == 1)
				f.cap_sys_ptrace = caps & (1ull << 19);
		}
		fclose(file);
	}
	file = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (file) {
		if (fscanf(file, "%d", &f.yama_scope) != 1)
			f.yama_scope = -1;
		fclose(file);
	}
	return f;
}

void ws_cli_permission_advice(const struct ws_permission_facts *f, char *buf,
			      size_t size)
{
	if (f->yama_scope >= 3) {
		snprintf(buf, size, "kernel.yama.ptrace_scope is 3: tracing is disabled until the next boot");
		return;
	}
	if (f->cap_sys_ptrace) {
		snprintf(buf, size, "wallspy has CAP_SYS_PTRACE, so a security module (SELinux, AppArmor) or the target's user namespace forbids it");
		return;
	}
	const char *who = f->root
		? "wallspy runs as root without CAP_SYS_PTRACE (in a container: --cap-add SYS_PTRACE)"
		: "tracing a process of another user, or a setuid one, needs root or CAP_SYS_PTRACE";
	const char *yama = "";
	if (f->yama_scope == 1)
		yama = "; kernel.yama.ptrace_scope is 1: without it only a parent may trace ('wallspy record' works, or sysctl kernel.yama.ptrace_scope=0)";
	else if (f->yama_scope == 2)
		yama = "; kernel.yama.ptrace_scope is 2: only CAP_SYS_PTRACE may trace";
	snprintf(buf, size, "%s%s", who, yama);
}

_Noreturn void ws_cli_die_of(int sig)
{
	fflush(stdout);
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	raise(sig); /* pending while blocked, */
	sigprocmask(SIG_UNBLOCK, &set, NULL); /* delivered here */
	_exit(128 + sig);
}

int ws_cli_report(struct ws_error *err)
{
	int code = err->kind;
	/* One line, with the way out when it is a permission problem. */
	if (err->kind == WS_ERR_PERMISSION) {
		char advice[512];
		struct ws_permission_facts facts = ws_cli_permission_facts();
		ws_cli_permission_advice(&facts, advice, sizeof(advice));
		fprintf(stderr, "wallspy: %s (%s)\n", err->message, advice);
	} else {
		fprintf(stderr, "wallspy: %s\n", err->message);
	}
	ws_error_destroy(err);
	return code;
}
