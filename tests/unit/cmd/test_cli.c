/*
 * Unit tests of command-line parsing (src/cmd/cli.c): options land in the
 * struct, defaults hold, and every malformed line is a usage error.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ws_cli.h"
#include "ws_runtime.h"

#define ARGV(...) ((char *[]){"wallspy", __VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){"wallspy", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(o, ...) ws_cli_parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (o))

static void expect_usage(struct ws_error *err)
{
	cr_assert_not_null(err);
	cr_expect_eq(err->kind, WS_ERR_USAGE, "kind %d: %s", err->kind,
		     err->message);
	cr_expect_null(strchr(err->message, '\n'), "one line: %s",
		       err->message);
	ws_error_destroy(err);
}

Test(cli, record_defaults)
{
	struct ws_options o;
	cr_assert_null(PARSE(&o, "record", "--", "sleep", "1"));
	cr_expect_eq(o.command, WS_CMD_RECORD);
	cr_expect_eq(o.rate, 100);
	cr_expect_eq(o.duration, 0);
	cr_expect_eq(o.format, WS_FORMAT_SPEEDSCOPE);
	cr_expect_eq(o.group_by, WS_GROUP_ALL);
	cr_expect_str_eq(o.runtime, "auto");
	cr_expect_eq(o.max_stack, 128 * 1024);
	cr_expect_eq(o.max_pause, 1.0);
	cr_expect_eq(o.max_cpu, 2.0);
	cr_expect_null(o.output);
	cr_expect_not(o.quiet);
	cr_expect_not(o.stop_all);
	cr_expect_str_eq(o.argv[0], "sleep");
	cr_expect_str_eq(o.argv[1], "1");
	cr_expect_null(o.argv[2]);
}

Test(cli, record_options)
{
	struct ws_options o;
	cr_assert_null(PARSE(&o, "record", "-o", "x.folded", "-f", "folded",
			     "-r", "250", "-d", "1.5", "--group-by", "state",
			     "--runtime", "threads", "--max-stack", "64K",
			     "--stop-all", "-q", "--", "prog", "-r", "9"));
	cr_expect_str_eq(o.output, "x.folded");
	cr_expect_eq(o.format, WS_FORMAT_FOLDED);
	cr_expect_eq(o.rate, 250);
	cr_expect_eq(o.duration, 1.5);
	cr_expect_eq(o.group_by, WS_GROUP_STATE);
	cr_expect_str_eq(o.runtime, "threads");
	cr_expect_eq(o.max_stack, 64 * 1024);
	cr_expect(o.stop_all);
	cr_expect(o.quiet);
	/* Options after the command belong to the command. */
	cr_expect_str_eq(o.argv[0], "prog");
	cr_expect_str_eq(o.argv[1], "-r");
}

Test(cli, subprocesses_and_group_by_process)
{
	struct ws_options o;
	cr_assert_null(PARSE(&o, "attach", "--subprocesses", "--group-by",
			     "process", "1234"));
	cr_expect(o.subprocesses);
	cr_expect_eq(o.group_by, WS_GROUP_PROCESS);
	cr_assert_null(PARSE(&o, "record", "--", "sh"));
	cr_expect_not(o.subprocesses);
}

Test(cli, record_without_dashes_stops_at_command)
{
	struct ws_options o;
	cr_assert_null(PARSE(&o, "record", "--rate=50", "prog", "--rate", "7"));
	cr_expect_eq(o.rate, 50);
	cr_expect_str_eq(o.argv[0], "prog");
	cr_expect_str_eq(o.argv[2], "7");
}

Test(cli, attach_and_dump)
{
	struct ws_options o;
	cr_assert_null(PARSE(&o, "attach", "--duration", "2", "--group-by",
			     "thread", "1234"));
	cr_expect_eq(o.command, WS_CMD_ATTACH);
	cr_expect_eq(o.pid, 1234);
	cr_expect_eq(o.duration, 2);
	cr_expect_eq(o.group_by, WS_GROUP_THREAD);

	cr_assert_null(PARSE(&o, "dump", "--json", "77"));
	cr_expect_eq(o.command, WS_CMD_DUMP);
	cr_expect(o.json);
	cr_expect_eq(o.pid, 77);

	cr_assert_null(PARSE(&o, "dump", "77"));
	cr_expect_not(o.json);
	cr_expect_not(o.system_tasks);

	/* The runtime's own tasks, in dumps and recordings alike. */
	cr_assert_null(PARSE(&o, "dump", "--system-tasks", "77"));
	cr_expect(o.system_tasks);
	cr_assert_null(PARSE(&o, "attach", "--system-tasks", "--group-by",
			     "label:handler", "77"));
	cr_expect(o.system_tasks);
	cr_expect_eq(o.group_by, WS_GROUP_LABEL);
	cr_expect_str_eq(o.group_label, "handler");
}

Test(cli, help_and_version)
{
	struct ws_options o;
	cr_assert_null(PARSE(&o, "--help"));
	cr_expect_eq(o.command, WS_CMD_HELP);
	cr_assert_null(PARSE(&o, "--version"));
	cr_expect_eq(o.command, WS_CMD_VERSION);
	cr_assert_null(PARSE(&o, "record", "--help"));
	cr_expect_eq(o.command, WS_CMD_HELP);
	/* The help names every exit code. */
	for (int code = 0; code <= 7; code++) {
		char needle[8];
		snprintf(needle, sizeof(needle), "  %d  ", code);
		cr_expect_not_null(strstr(ws_cli_help(), needle),
				   "exit code %d missing from --help", code);
	}
}

Test(cli, usage_errors)
{
	struct ws_options o;
	expect_usage(ws_cli_parse(1, (char *[]){"wallspy", NULL}, &o));
	expect_usage(PARSE(&o, "frobnicate"));
	expect_usage(PARSE(&o, "record"));
	expect_usage(PARSE(&o, "record", "--"));
	expect_usage(PARSE(&o, "record", "--rate", "0", "--", "x"));
	expect_usage(PARSE(&o, "record", "--rate", "fast", "--", "x"));
	expect_usage(PARSE(&o, "record", "--rate", "20000", "--", "x"));
	expect_usage(PARSE(&o, "record", "--duration", "-1", "--", "x"));
	expect_usage(PARSE(&o, "record", "--format", "nope", "--", "x"));
	expect_usage(PARSE(&o, "record", "--group-by", "color", "--", "x"));
	expect_usage(PARSE(&o, "record", "--group-by", "label:", "--", "x"));
	expect_usage(PARSE(&o, "record", "--max-stack", "12", "--", "x"));
	expect_usage(PARSE(&o, "record", "--max-cpu", "150", "--", "x"));
	expect_usage(PARSE(&o, "record", "--max-pause", "-1", "--", "x"));
	expect_usage(PARSE(&o, "record", "--bogus", "--", "x"));
	expect_usage(PARSE(&o, "record", "-Z", "--", "x"));
	expect_usage(PARSE(&o, "record", "-o"));
	expect_usage(PARSE(&o, "attach"));
	expect_usage(PARSE(&o, "attach", "notanumber"));
	expect_usage(PARSE(&o, "attach", "12", "13"));
	expect_usage(PARSE(&o, "attach", "-5"));
	expect_usage(PARSE(&o, "attach", "--json", "12"));
	expect_usage(PARSE(&o, "dump", "--rate", "5", "12"));
}

/* Parses `option` with each command; asserts success, fills o[3]. */
static void parse_for_every_command(const char *option, struct ws_options o[3])
{
	char *dump[] = { "wallspy", "dump", (char *)option, "42", NULL };
	char *attach[] = { "wallspy", "attach", (char *)option, "42", NULL };
	char *record[] = { "wallspy", "record", (char *)option, "--", "true",
			   NULL };
	char **argvs[] = { dump, attach, record };
	for (size_t i = 0; i < 3; i++) {
		int argc = 0;
		while (argvs[i][argc])
			argc++;
		struct ws_error *err = ws_cli_parse(argc, argvs[i], &o[i]);
		cr_assert_null(err, "%s %s: %s", argvs[i][1], option,
			       err ? err->message : "");
	}
}

/* --no-debug-cache (the debug-info cache off) for every command. */
Test(cli, no_debug_cache_option_for_every_command)
{
	struct ws_options o[3];
	parse_for_every_command("--no-debug-cache", o);
	for (size_t i = 0; i < 3; i++)
		cr_assert(o[i].no_debug_cache && !o[i].no_debuginfod);
	char *plain[] = { "wallspy", "dump", "42", NULL };
	cr_assert_null(ws_cli_parse(3, plain, &o[0]));
	cr_assert_not(o[0].no_debug_cache);
}

/* --no-debuginfod (no downloads) for every command. */
Test(cli, no_debuginfod_option_for_every_command)
{
	struct ws_options o[3];
	parse_for_every_command("--no-debuginfod", o);
	for (size_t i = 0; i < 3; i++)
		cr_assert(o[i].no_debuginfod && !o[i].no_debug_cache);
	char *plain[] = { "wallspy", "attach", "42", NULL };
	cr_assert_null(ws_cli_parse(3, plain, &o[0]));
	cr_assert_not(o[0].no_debuginfod);
}

/* The debug cache's directory: WALLSPY_DEBUG_CACHE, else
 * $XDG_CACHE_HOME/wallspy/debuginfo (absolute only), else
 * ~/.cache/wallspy/debuginfo (wallspy(1), FILES). */
Test(cli, debug_cache_dir_follows_the_environment, .timeout = 10)
{
	setenv("WALLSPY_DEBUG_CACHE", "off", 1);
	cr_assert_null(ws_cli_debug_cache_dir());
	setenv("WALLSPY_DEBUG_CACHE", "", 1);
	cr_assert_null(ws_cli_debug_cache_dir());
	setenv("WALLSPY_DEBUG_CACHE", "/x/y", 1);
	char *dir = ws_cli_debug_cache_dir();
	cr_assert_str_eq(dir, "/x/y");
	free(dir);

	unsetenv("WALLSPY_DEBUG_CACHE");
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	setenv("HOME", "/home/u", 1);
	dir = ws_cli_debug_cache_dir();
	cr_assert_str_eq(dir, "/xdg/wallspy/debuginfo");
	free(dir);
	setenv("XDG_CACHE_HOME", "relative", 1);
	dir = ws_cli_debug_cache_dir();
	cr_assert_str_eq(dir, "/home/u/.cache/wallspy/debuginfo");
	free(dir);
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	cr_assert_null(ws_cli_debug_cache_dir());
}

/* --group: dump only. */
Test(cli, group_for_dump_only)
{
	char *dump[] = { "wallspy", "dump", "--group", "--json", "42", NULL };
	char *record[] = { "wallspy", "record", "--group", "--", "true", NULL };
	char *attach[] = { "wallspy", "attach", "--group", "42", NULL };
	struct ws_options o;
	struct ws_error *err = ws_cli_parse(5, dump, &o);
	cr_assert_null(err);
	cr_assert(o.group && o.json);
	err = ws_cli_parse(5, record, &o);
	cr_assert_not_null(err);
	cr_assert_eq(err->kind, WS_ERR_USAGE);
	ws_error_destroy(err);
	err = ws_cli_parse(4, attach, &o);
	cr_assert_not_null(err);
	cr_assert_eq(err->kind, WS_ERR_USAGE);
	ws_error_destroy(err);
}

/* -p/--pid: the PID for attach and dump; record -p PID is attach (as
 * py-spy's record --pid); a PID twice, or with a command, is an error. */
Test(cli, pid_option)
{
	struct ws_options o;
	cr_assert_null(PARSE(&o, "record", "-p", "42", "-d", "2"));
	cr_expect_eq(o.command, WS_CMD_ATTACH);
	cr_expect_eq(o.pid, 42);
	cr_expect_eq(o.duration, 2);
	cr_assert_null(PARSE(&o, "record", "--pid", "43"));
	cr_expect_eq(o.command, WS_CMD_ATTACH);
	cr_expect_eq(o.pid, 43);
	cr_assert_null(PARSE(&o, "attach", "-p", "44"));
	cr_expect_eq(o.command, WS_CMD_ATTACH);
	cr_expect_eq(o.pid, 44);
	cr_assert_null(PARSE(&o, "dump", "--json", "--pid", "45"));
	cr_expect_eq(o.command, WS_CMD_DUMP);
	cr_expect_eq(o.pid, 45);
	expect_usage(PARSE(&o, "record", "-p", "42", "--", "sleep", "1"));
	expect_usage(PARSE(&o, "attach", "-p", "42", "43"));
	expect_usage(PARSE(&o, "dump", "-p", "0"));
	expect_usage(PARSE(&o, "attach", "-p"));
}

/* --keep-running: record only. */
Test(cli, keep_running_for_record_only)
{
	struct ws_options o;
	cr_assert_null(PARSE(&o, "record", "--", "true"));
	cr_expect_not(o.keep_running);
	cr_assert_null(PARSE(&o, "record", "--keep-running", "-d", "1", "--", "true"));
	cr_expect(o.keep_running);
	expect_usage(PARSE(&o, "attach", "--keep-running", "42"));
	expect_usage(PARSE(&o, "dump", "--keep-running", "42"));
}

/* --help names every --runtime value of the table of runtimes
 * (src/runtimes/runtime.c), auto and descriptor files, and every one of
 * them parses. */
Test(cli, help_lists_every_runtime)
{
	const char *help = ws_cli_help();
	const char *at = strstr(help, "--runtime NAME");
	cr_assert_not_null(at);
	cr_expect_not_null(strstr(at, "auto"));
	cr_expect_not_null(strstr(at, "FILE.json"));
	size_t n = 0;
	for (const char *name; (name = ws_runtime_table_name(n)); n++) {
		char word[64];
		snprintf(word, sizeof(word), " %s,", name);
		char last[64];
		snprintf(last, sizeof(last), " %s or", name);
		cr_expect(strstr(at, word) || strstr(at, last),
			  "--help does not list runtime %s", name);
		struct ws_options o;
		cr_assert_null(PARSE(&o, "dump", "--runtime", (char *)name, "1"));
		cr_expect_str_eq(o.runtime, name);
	}
	cr_expect_geq(n, 2, "the table has %zu named runtimes", n);
	/* Lines stay within 79 columns. */
	for (const char *line = help; *line;) {
		size_t len = strcspn(line, "\n");
		cr_expect_leq(len, 79, "long help line: %.*s", (int)len, line);
		line += len + (line[len] == '\n');
	}
}

/* The permission advice says only what applies: Yama's scope only where
 * the kernel has Yama, the container's --cap-add only for a root without
 * the capability, and, with the capability, that something else forbids
 * it. */
Test(cli, permission_advice_only_what_applies)
{
	char buf[512];
	struct ws_permission_facts user = {.yama_scope = -1};
	ws_cli_permission_advice(&user, buf, sizeof(buf));
	cr_assert(strstr(buf, "CAP_SYS_PTRACE") && !strstr(buf, "ptrace_scope") &&
		  !strstr(buf, "cap-add"), "%s", buf);

	struct ws_permission_facts user_yama = {.yama_scope = 1};
	ws_cli_permission_advice(&user_yama, buf, sizeof(buf));
	cr_assert(strstr(buf, "CAP_SYS_PTRACE") &&
		  strstr(buf, "ptrace_scope is 1") &&
		  strstr(buf, "wallspy record"), "%s", buf);

	struct ws_permission_facts container = {.root = true, .yama_scope = 0};
	ws_cli_permission_advice(&container, buf, sizeof(buf));
	cr_assert(strstr(buf, "--cap-add SYS_PTRACE") &&
		  !strstr(buf, "ptrace_scope"), "%s", buf);

	struct ws_permission_facts capable = {.root = true,
					      .cap_sys_ptrace = true,
					      .yama_scope = 1};
	ws_cli_permission_advice(&capable, buf, sizeof(buf));
	cr_assert(strstr(buf, "security module") && !strstr(buf, "cap-add"),
		  "%s", buf);

	struct ws_permission_facts locked = {.root = true,
					     .cap_sys_ptrace = true,
					     .yama_scope = 3};
	ws_cli_permission_advice(&locked, buf, sizeof(buf));
	cr_assert(strstr(buf, "ptrace_scope is 3"), "%s", buf);
}
