/*
 * End-to-end tests of bad runtime descriptors (`--runtime FILE.json`)
 * against a live greenrt program (greenrt_parked): each error is one
 * "wallspy: " line naming the descriptor file and the JSON path ($.…) at
 * fault and, when the descriptor names something the target's DWARF lacks,
 * that name; exit code 2 for a malformed descriptor (bad JSON, wrong format
 * tag, missing or ill-typed keys, an unknown state name) and 7 for a name
 * missing from DWARF (global, member, enumerator). Nothing is printed on
 * stdout, no profile is written, and the target is left running, not
 * stopped. Each bad descriptor is the fixture's real one
 * (fixtures/greenrt/greenrt.wallspy.json) with one change, made here, so the
 * tests follow the descriptor as it evolves; descriptors that are not JSON
 * are files in tests/data/.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "e2e_util.h"
#include "wallspy_run.h"

#define DESCRIPTOR WS_SOURCE_DIR "/fixtures/greenrt/greenrt.wallspy.json"
#define DATA_DIR WS_SOURCE_DIR "/tests/data"

enum { EXIT_USAGE = 2, EXIT_NO_DEBUGINFO = 7 };

/* The fixture's descriptor as a cJSON tree (freed by e2e_cleanup). */
static cJSON *good_descriptor(void)
{
	cJSON *root = e2e_load_json(DESCRIPTOR);

	cr_assert_not_null(root, "cannot read %s", DESCRIPTOR);
	return root;
}

/* The object at a dotted path ("task.state.values"). */
static cJSON *object_at(cJSON *root, const char *path)
{
	char copy[128];
	cJSON *node = root;

	snprintf(copy, sizeof(copy), "%s", path);
	for (char *key = strtok(copy, "."); key; key = strtok(NULL, ".")) {
		node = cJSON_GetObjectItemCaseSensitive(node, key);
		cr_assert_not_null(node, "the fixture's descriptor has no %s", path);
	}
	return node;
}

/* Sets (adds or replaces) string key in the object at path ("" = top). */
static void set_string(cJSON *root, const char *path, const char *key,
		       const char *value)
{
	cJSON *obj = path[0] ? object_at(root, path) : root;

	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	cr_assert_not_null(cJSON_AddStringToObject(obj, key, value));
}

static void delete_key(cJSON *root, const char *path, const char *key)
{
	cJSON *obj = path[0] ? object_at(root, path) : root;

	cr_assert(cJSON_HasObjectItem(obj, key), "no %s.%s to delete", path, key);
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
}

/* Writes the tree to DIR/name and returns the path. */
static const char *write_descriptor(const cJSON *root, const char *name)
{
	const char *path = e2e_path(e2e_tmpdir(), name);
	char *text = cJSON_Print(root);
	FILE *f = fopen(path, "w");

	cr_assert_not_null(text);
	cr_assert_not_null(f, "cannot write %s", path);
	fputs(text, f);
	fclose(f);
	free(text);
	return path;
}

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

/* --- not JSON --- */

/* A pretty-printed descriptor missing a comma: the most common typo. */
Test(e2e_descriptor, malformed_missing_comma, .timeout = 60, .fini = e2e_cleanup)
{
	check_rejected(DATA_DIR "/descriptor_missing_comma.json", EXIT_USAGE, NULL);
}

Test(e2e_descriptor, malformed_truncated, .timeout = 60, .fini = e2e_cleanup)
{
	check_rejected(DATA_DIR "/descriptor_truncated.json", EXIT_USAGE, NULL);
}

Test(e2e_descriptor, not_an_object, .timeout = 60, .fini = e2e_cleanup)
{
	const char *path = e2e_path(e2e_tmpdir(), "array.json");
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs("[1, 2, 3]\n", f);
	fclose(f);
	check_rejected(path, EXIT_USAGE, (const char *const[]){ "$.wallspy", NULL });
}

Test(e2e_descriptor, missing_file, .timeout = 60, .fini = e2e_cleanup)
{
	const char *path = e2e_path(e2e_tmpdir(), "absent.wallspy.json");

	check_rejected(path, EXIT_USAGE, NULL);
}

/* --- format errors (exit 2) --- */

Test(e2e_descriptor, wrong_format_tag, .timeout = 60, .fini = e2e_cleanup)
{
	cJSON *d = good_descriptor();

	set_string(d, "", "wallspy", "runtime-descriptor/99");
	check_rejected(write_descriptor(d, "tag.json"), EXIT_USAGE,
		       (const char *const[]){ "$.wallspy", NULL });
}

Test(e2e_descriptor, missing_registry_global, .timeout = 60, .fini = e2e_cleanup)
{
	cJSON *d = good_descriptor();

	delete_key(d, "registry", "global");
	check_rejected(write_descriptor(d, "no_global.json"), EXIT_USAGE,
		       (const char *const[]){ "$.registry.global", NULL });
}

Test(e2e_descriptor, missing_rip_register, .timeout = 60, .fini = e2e_cleanup)
{
	cJSON *d = good_descriptor();

	delete_key(d, "task.registers", "rip");
	check_rejected(write_descriptor(d, "no_rip.json"), EXIT_USAGE,
		       (const char *const[]){ "$.task.registers.rip", NULL });
}

Test(e2e_descriptor, unknown_layout, .timeout = 60, .fini = e2e_cleanup)
{
	cJSON *d = good_descriptor();

	set_string(d, "registry", "layout", "tree");
	check_rejected(write_descriptor(d, "layout.json"), EXIT_USAGE,
		       (const char *const[]){ "$.registry.layout", NULL });
}

/* A state name wallspy does not know (not running, runnable, waiting,
 * syscall, idle or done). */
Test(e2e_descriptor, unknown_state_name, .timeout = 60, .fini = e2e_cleanup)
{
	cJSON *d = good_descriptor();

	set_string(d, "task.state.values", "GREENRT_RUNNING", "spinning");
	check_rejected(write_descriptor(d, "state.json"), EXIT_USAGE,
		       (const char *const[]){ "$.task.state.values.GREENRT_RUNNING",
					      NULL });
}

/* --- names missing from DWARF (exit 7) --- */

Test(e2e_descriptor, global_not_in_dwarf, .timeout = 60, .fini = e2e_cleanup)
{
	cJSON *d = good_descriptor();

	set_string(d, "registry", "global", "greenrt_all_taskz");
	check_rejected(write_descriptor(d, "global.json"), EXIT_NO_DEBUGINFO,
		       (const char *const[]){ "$.registry.global",
					      "greenrt_all_taskz", NULL });
}

Test(e2e_descriptor, count_global_not_in_dwarf, .timeout = 60,
     .fini = e2e_cleanup)
{
	cJSON *d = good_descriptor();

	set_string(d, "registry", "count", "greenrt_task_counter");
	check_rejected(write_descriptor(d, "count.json"), EXIT_NO_DEBUGINFO,
		       (const char *const[]){ "$.registry.count",
					      "greenrt_task_counter", NULL });
}

/* The brief's example: a register path whose first member is misspelt. */
Test(e2e_descriptor, member_not_in_dwarf, .timeout = 60, .fini = e2e_cleanup)
{
	cJSON *d = good_descriptor();

	set_string(d, "task.registers", "rip", "ctxx.uc_mcontext.gregs[16]");
	check_rejected(write_descriptor(d, "member.json"), EXIT_NO_DEBUGINFO,
		       (const char *const[]){ "$.task.registers.rip", "'ctxx'",
					      "struct greenrt_task", NULL });
}

/* A miss deep in a member path: the member that is missing is named. */
Test(e2e_descriptor, nested_member_not_in_dwarf, .timeout = 60,
     .fini = e2e_cleanup)
{
	cJSON *d = good_descriptor();

	set_string(d, "task.registers", "rsp", "ctx.uc_mcontext.gregz[15]");
	check_rejected(write_descriptor(d, "nested.json"), EXIT_NO_DEBUGINFO,
		       (const char *const[]){ "$.task.registers.rsp", "'gregz'",
					      NULL });
}

Test(e2e_descriptor, list_link_not_in_dwarf, .timeout = 60, .fini = e2e_cleanup)
{
	/* The list form of greenrt's descriptor (the embedded one reads its
	 * array of task pointers). */
	cJSON *d = e2e_load_json(WS_SOURCE_DIR "/fixtures/greenrt/greenrt-list.wallspy.json");
	cr_assert_not_null(d);

	set_string(d, "registry", "next", "all_nxt");
	check_rejected(write_descriptor(d, "next.json"), EXIT_NO_DEBUGINFO,
		       (const char *const[]){ "$.registry.next", "'all_nxt'", NULL });
}

Test(e2e_descriptor, worker_member_not_in_dwarf, .timeout = 60,
     .fini = e2e_cleanup)
{
	cJSON *d = good_descriptor();

	set_string(d, "workers", "tid", "thread_id");
	check_rejected(write_descriptor(d, "workers.json"), EXIT_NO_DEBUGINFO,
		       (const char *const[]){ "$.workers.tid", "'thread_id'", NULL });
}

Test(e2e_descriptor, enumerator_not_in_dwarf, .timeout = 60, .fini = e2e_cleanup)
{
	cJSON *d = good_descriptor();

	/* A state value that enum greenrt_state does not have. */
	set_string(d, "task.state.values", "GREENRT_PARKED", "waiting");
	check_rejected(write_descriptor(d, "enum.json"), EXIT_NO_DEBUGINFO,
		       (const char *const[]){ "$.task.state.values.GREENRT_PARKED",
					      "GREENRT_PARKED", NULL });
}

/* record with a bad descriptor: the same error, no profile left behind, and
 * the command it launched is not left running (as our orphan). */
Test(e2e_descriptor, record_rejects_and_cleans_up, .timeout = 60,
     .fini = e2e_cleanup_adopting)
{
	cJSON *d = good_descriptor();
	const char *descriptor;
	const char *dir = e2e_tmpdir();
	const char *out = e2e_path(dir, "out.json");
	struct e2e_result res;
	pid_t orphans[8];

	set_string(d, "task.registers", "rip", "ctxx.uc_mcontext.gregs[16]");
	descriptor = write_descriptor(d, "member.json");
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
		for (int wait = 0; wait < 100 && e2e_proc_state(orphans[i], 0) != 'Z';
		     wait++)
			e2e_sleep_ms(10);
		cr_assert_eq(e2e_proc_state(orphans[i], 0), 'Z',
			     "the launched target %d outlived wallspy (state %c)",
			     orphans[i], e2e_proc_state(orphans[i], 0));
	}
}
