/*
 * pprof_tool: running `go tool pprof` for the tests (see pprof_tool.h).
 */
#include "pprof_tool.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "e2e_util.h"

static const char *go_command(void)
{
	if (access("/usr/local/go/bin/go", X_OK) == 0)
		return "/usr/local/go/bin/go";
	if (access(WS_GO, X_OK) == 0)
		return WS_GO;
	cr_skip_test("no go command for go tool pprof");
	return NULL;
}

const char *pt_run(const char *file, const char *const args[])
{
	char *argv[16];
	int n = 0;
	argv[n++] = (char *)go_command();
	argv[n++] = "tool";
	argv[n++] = "pprof";
	for (int i = 0; args[i] && n < 14; i++)
		argv[n++] = (char *)args[i];
	argv[n++] = (char *)file;
	argv[n] = NULL;
	struct e2e_result res;
	/* Go's own build cache holds the tool; pprof's scratch files go to
	 * the test's directory. */
	const char *dir = e2e_tmpdir();
	setenv("PPROF_TMPDIR", dir, 1);
	e2e_run(argv, dir, 300000, &res);
	cr_assert(!res.timed_out && e2e_exit_code(&res) == 0,
		  "go tool pprof %s: status %#x, stderr: %s", args[0], res.status,
		  res.err);
	cr_assert(!strstr(res.err, "arning") && !strstr(res.err, "rror"),
		  "go tool pprof %s warns: %s", args[0], res.err);
	return res.out;
}

const char *pt_objdump(const char *binary)
{
	char *argv[] = { (char *)go_command(), "tool", "objdump",
			 (char *)binary, NULL };
	struct e2e_result res;
	e2e_run(argv, e2e_tmpdir(), 300000, &res);
	cr_assert(!res.timed_out && e2e_exit_code(&res) == 0,
		  "go tool objdump %s: status %#x, stderr: %s", binary,
		  res.status, res.err);
	return res.out;
}

double pt_total(const char *file, const char *const extra[])
{
	const char *args[12] = { "-top", "-unit=ms", "-nodefraction=0",
				 "-nodecount=1000000" };
	int n = 4;
	for (int i = 0; extra && extra[i] && n < 11; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	const char *out = pt_run(file, args);
	const char *p = strstr(out, "accounting for ");
	double ms = -1;
	cr_assert(p && sscanf(p, "accounting for %lfms", &ms) == 1,
		  "no total in: %s", out);
	return ms / 1000;
}

const char *pt_line_with(const char *text, const char *const words[])
{
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[1024];
		snprintf(buf, sizeof(buf), "%.*s", (int)len, line);
		bool all = true;
		for (int i = 0; words[i] && all; i++)
			all = strstr(buf, words[i]) != NULL;
		if (all)
			return line;
		line = end ? end + 1 : NULL;
	}
	return NULL;
}
