/*
 * Unit tests of command-line parsing (src/cmd/cli.c): options land in the
 * struct, defaults hold, and every malformed line is a usage error.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ws_cli.h"

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

/* --no-debug-cache (the debug-info cache off) for every command. */
Test(cli, no_debug_cache_option_for_every_command)
{
	char *dump[] = { "wallspy", "dump", "--no-debug-cache", "42", NULL };
	char *attach[] = { "wallspy", "attach", "--no-debug-cache", "42", NULL };
	char *record[] = { "wallspy", "record", "--no-debug-cache", "--", "true",
			   NULL };
	char *plain[] = { "wallspy", "dump", "42", NULL };
	char **argvs[] = { dump, attach, record };
	for (size_t i = 0; i < 3; i++) {
		int argc = 0;
		while (argvs[i][argc])
			argc++;
		struct ws_options o;
		struct ws_error *err = ws_cli_parse(argc, argvs[i], &o);
		cr_assert_null(err, "%s: %s", argvs[i][1], err ? err->message : "");
		cr_assert(o.no_debug_cache, "%s", argvs[i][1]);
	}
	struct ws_options o;
	cr_assert_null(ws_cli_parse(3, plain, &o));
	cr_assert_not(o.no_debug_cache);
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
