/*
 * End-to-end tests of bad runtime descriptors (`--runtime FILE.json`)
 * through the binary, against a live greenrt program (greenrt_parked): a
 * malformed descriptor, a missing file and a register index out of range
 * exit 2, a name missing from DWARF exits 7, each with one "wallspy: "
 * line naming the descriptor file and the JSON path ($.…) at fault and
 * the missing name; nothing is printed
 * on stdout, no profile is written, the target dump attached to is left
 * running, not stopped, and the command record launched does not outlive
 * the failure. Every way a descriptor can be wrong, and what the error
 * says, is tested on the parser itself in
 * tests/unit/runtimes/test_runtime_descriptor_parse.c; these cases check
 * how the binary reports them.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "descriptor_edit.h"
#include "e2e_util.h"
#include "wallspy_run.h"

#define DATA_DIR WS_SOURCE_DIR "/tests/data"

enum { EXIT_USAGE = 2, EXIT_NO_DEBUGINFO = 7 };

/* Runs `wallspy dump --json --runtime descriptor PID` on a fresh
 * greenrt_parked and checks the failure: exit code, one "wallspy: " line
 * naming the descriptor file and each of `names` (NULL-terminated: the
 * JSON path, the missing DWARF name), nothing on stdout, and the target
 * unharmed. */
static void check_rejected(const char *descriptor, int code,
			   const char *const names[])
{
	pid_t pid = e2e_start_fixture("greenrt/greenrt_parked", NULL, "ready", 20000);
	const char *opts[] = { "--json", "--runtime", descriptor, NULL };
	int status;

	struct e2e_result res = e2e_run_dump(pid, opts, NULL, code, 30000);
	cr_log_info("%s -> exit %d: %s", descriptor, e2e_exit_code(&res), res.err);
	cr_assert(e2e_is_one_error_line(res.err),
		  "stderr is not one \"wallspy: \" line: \"%s\"", res.err);
	cr_assert(strstr(res.err, descriptor), "the error does not name %s: %s",
		  descriptor, res.err);
	for (int i = 0; names && names[i]; i++)
		cr_assert(strstr(res.err, names[i]), "the error does not name %s: %s",
			  names[i], res.err);
	cr_assert_str_eq(res.out, "", "output on stdout: %s", res.out);

	/* The target was attached and must be left as it was. */
	cr_assert(e2e_running_not_stopped(pid, 5, 50),
		  "target stopped or gone after the failed dump");
	cr_assert_eq(kill(pid, SIGTERM), 0);
	cr_assert(e2e_wait_timeout(pid, 5000, &status), "target ignored SIGTERM");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "target ended with status 0x%x", status);
}

/* A pretty-printed descriptor missing a comma, the commonest typo: exit 2. */
Test(e2e_descriptor, malformed_missing_comma, .timeout = 60, .fini = e2e_cleanup)
{
	check_rejected(DATA_DIR "/descriptor_missing_comma.json", EXIT_USAGE, NULL);
}

/* A descriptor file that is not there: exit 2, the file named. */
Test(e2e_descriptor, missing_file, .timeout = 60, .fini = e2e_cleanup)
{
	const char *path = e2e_path(e2e_tmpdir(), "absent.wallspy.json");

	check_rejected(path, EXIT_USAGE, NULL);
}

/* A register path whose first member is misspelt: exit 7, the member and
 * the type named. */
Test(e2e_descriptor, member_not_in_dwarf, .timeout = 60, .fini = e2e_cleanup)
{
	cJSON *d = de_load(GREENRT_DESCRIPTOR);

	de_set_string(d, "task.registers", "rip", "ctxx.uc_mcontext.gregs[16]");
	check_rejected(de_write(d, "member.json"), EXIT_NO_DEBUGINFO,
		       (const char *const[]){ "$.task.registers.rip", "'ctxx'",
					      "struct greenrt_task", NULL });
}

/* A register index past the array's end (gregs has 23 elements): a
 * malformed descriptor, exit 2 (it exited 1 before), the index named. */
Test(e2e_descriptor, register_index_out_of_range, .timeout = 60,
     .fini = e2e_cleanup)
{
	cJSON *d = de_load(GREENRT_DESCRIPTOR);

	de_set_string(d, "task.registers", "rip", "ctx.uc_mcontext.gregs[99]");
	check_rejected(de_write(d, "index.json"), EXIT_USAGE,
		       (const char *const[]){ "$.task.registers.rip",
					      "index 99 out of range", NULL });
}

/* record with a bad descriptor: the same error, no profile left behind, and
 * the command it launched is not left running (as our orphan). */
Test(e2e_descriptor, record_rejects_and_cleans_up, .timeout = 60,
     .fini = e2e_cleanup_adopting)
{
	cJSON *d = de_load(GREENRT_DESCRIPTOR);
	const char *descriptor;
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	struct e2e_result res;
	pid_t orphans[8];

	de_set_string(d, "task.registers", "rip", "ctxx.uc_mcontext.gregs[16]");
	descriptor = de_write(d, "member.json");
	e2e_become_subreaper();
	char *argv[] = { (char *)e2e_wallspy(), "record", "-o", (char *)out,
			 "--runtime", (char *)descriptor, "--",
			 (char *)e2e_fixture("greenrt/greenrt_parked"), NULL };
	e2e_run(argv, dir, 30000, &res);
	int norphans = e2e_adopt_orphans(orphans, 8);
	cr_assert_eq(e2e_exit_code(&res), EXIT_NO_DEBUGINFO,
		     "exit %d, stderr: %s", e2e_exit_code(&res), res.err);
	cr_assert(e2e_is_one_error_line(res.err),
		  "stderr is not one \"wallspy: \" line: \"%s\"", res.err);
	cr_assert(strstr(res.err, "$.task.registers.rip") && strstr(res.err, "'ctxx'"),
		  "stderr: %s", res.err);
	cr_assert_eq(e2e_dir_entries(dir), 0, "files left behind: %s",
		     e2e_dir_list(dir));
	/* The launched command must die with the failed recording (wallspy
	 * kills it; the kill may land just after wallspy's exit): still
	 * alive, not a zombie, a second later, it was left behind. */
	for (int i = 0; i < norphans && i < 8; i++) {
		cr_assert(e2e_wait_proc_state(orphans[i], 'Z', 1000),
			  "the launched target %d outlived wallspy (state %c)",
			  orphans[i], e2e_proc_state(orphans[i], 0));
	}
}
