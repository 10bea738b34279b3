/*
 * ws_cli: the command line, parsed into one options struct (no side
 * effects, so it is unit-tested by parsing argument lists), the help text
 * with every option and exit code, and the settings read from the
 * environment, each read once here and handed down (wallspy(1),
 * ENVIRONMENT; the sampler's own diagnostics switches aside).
 */
#ifndef WS_CLI_H
#define WS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ws_error.h"
#include "ws_profile.h"
#include "ws_sampler.h"

struct ws_debugcache;
struct ws_debuginfod;

enum ws_command {
	WS_CMD_HELP,
	WS_CMD_VERSION,
	WS_CMD_RECORD,
	WS_CMD_ATTACH,
	WS_CMD_DUMP,
};

enum ws_format {
	WS_FORMAT_SPEEDSCOPE,
	WS_FORMAT_FOLDED,
	WS_FORMAT_PPROF,           /* gzipped profile.proto (go tool pprof) */
};

struct ws_options {
	enum ws_command command;
	const char *output;        /* NULL: wallspy-PID.speedscope.json/.folded/.pb.gz */
	enum ws_format format;
	double rate;               /* Hz */
	double duration;           /* seconds; 0 = until exit or Ctrl-C */
	enum ws_group_by group_by;
	const char *group_label;   /* --group-by label:KEY: the KEY */
	const char *runtime;       /* "auto" */
	size_t max_stack;          /* bytes */
	double max_pause;          /* ms per tick; 0 = no budget */
	double max_cpu;            /* % of one core; 0 = no budget */
	bool quiet;
	bool json;                 /* dump --json */
	bool group;                /* dump --group */
	bool no_debug_cache;       /* --no-debug-cache (ws_debugcache.h) */
	bool no_debuginfod;        /* --no-debuginfod (ws_debuginfod.h) */
	bool stop_all;             /* --stop-all: no live ticks */
	bool keep_running;         /* record --keep-running */
	bool system_tasks;         /* --system-tasks: the runtime's own too */
	bool lines;                /* --lines: a frame per line, not function */
	bool started_only;         /* --started-only: leave out tasks that
				    * have not started ([not started]) */
	bool subprocesses;         /* --subprocesses: follow children */
	pid_t pid;                 /* attach, dump (also record -p: attach) */
	char **argv;               /* record: the command, NULL-terminated */
	/* From the environment (ws_cli_read_environment), not argv. */
	struct ws_sampler_switches switches;
};

enum { WS_DEFAULT_RATE = 100 };
#define WS_DEFAULT_MAX_PAUSE_MS 1.0
#define WS_DEFAULT_MAX_CPU_PERCENT 2.0

/* Parses argv (argv[0] is the program name). On success fills *ret (which
 * points into argv for strings). Errors are WS_ERR_USAGE. */
struct ws_error *ws_cli_parse(int argc, char **argv, struct ws_options *ret);

/* Reads the diagnostic switches (wallspy(1), ENVIRONMENT:
 * WALLSPY_UNWINDER, WALLSPY_NO_STEP_CACHE, WALLSPY_NO_STACK_CACHE,
 * WALLSPY_DEBUG_PAUSE) into options->switches. The only place wallspy
 * reads them. */
void ws_cli_read_environment(struct ws_options *options);

/* The ws_target_flags the options ask for (--subprocesses,
 * WALLSPY_TRACE_CLONES). */
unsigned ws_cli_target_flags(const struct ws_options *options);

/* What decides whether wallspy may trace another process, as
 * ws_cli_permission_advice needs it. */
struct ws_permission_facts {
	bool root;                 /* effective uid 0 */
	bool cap_sys_ptrace;       /* CAP_SYS_PTRACE in the effective set */
	int yama_scope;            /* kernel.yama.ptrace_scope; -1: no Yama */
};

/* The facts of this process and kernel (/proc/self/status CapEff,
 * /proc/sys/kernel/yama/ptrace_scope). */
struct ws_permission_facts ws_cli_permission_facts(void);

/* The advice after a permission error, only the parts that apply: what
 * is missing (root or CAP_SYS_PTRACE, a container's --cap-add), what Yama's
 * scope allows (only where the kernel has Yama), or, when wallspy has the
 * capability already, that a security module or a user namespace forbids
 * it. Writes a NUL-terminated line into buf. */
void ws_cli_permission_advice(const struct ws_permission_facts *facts,
			      char *buf, size_t size);

/* The --help text. */
const char *ws_cli_help(void);

/* The directory of the debug-info cache the environment asks for, as a
 * heap string: $WALLSPY_DEBUG_CACHE (empty or "off": none), else
 * $XDG_CACHE_HOME/wallspy/debuginfo (when absolute), else
 * $HOME/.cache/wallspy/debuginfo (when absolute); NULL for none. */
char *ws_cli_debug_cache_dir(void);

/* The debug-info cache for the command `options` runs (ws_debugcache.h),
 * opened on first use: NULL (none) with --no-debug-cache, else in
 * ws_cli_debug_cache_dir(), logging each decision to stderr when
 * $WALLSPY_DEBUG_CACHE_LOG is set and not "0". The environment is read
 * here, once. Close it with ws_debugcache_close after the last Dwfl that
 * uses it is gone. NULL also when out of memory (installed files are
 * read then). */
struct ws_debugcache *ws_cli_debug_cache(const struct ws_options *options);

/* The debuginfod client for the command `options` runs
 * (ws_debuginfod.h): NULL (nothing is downloaded) with --no-debuginfod or
 * when DEBUGINFOD_URLS names no server. Progress lines unless --quiet.
 * `service` (with `arg`) runs while a download waits and says whether to
 * stop. Destroy it with ws_debuginfod_destroy after the last Dwfl that
 * uses it is gone. */
struct ws_debuginfod *ws_cli_debuginfod(const struct ws_options *options,
					bool (*service)(void *arg), void *arg);

/* Prints "wallspy: MESSAGE" (plus the permission hint when relevant) and
 * returns the error's exit code; destroys err. */
int ws_cli_report(struct ws_error *err);

/* Ends wallspy of signal `sig` (its default action: the shell sees an
 * interrupted command); does not return. For a one-shot command cut short
 * by SIGINT or SIGTERM, after the target is let go. */
_Noreturn void ws_cli_die_of(int sig);

#endif
