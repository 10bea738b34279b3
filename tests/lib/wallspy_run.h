/*
 * wallspy_run: running the built wallspy from the tests, one helper per
 * way: any command line, a dump, a recording of a launched command, an
 * attach for a while. Each asserts wallspy did not time out and, where it
 * says so, its exit code; output files go to fresh temporary directories
 * (e2e_cleanup removes them).
 */
#ifndef WALLSPY_RUN_H
#define WALLSPY_RUN_H

#include <sys/types.h>

#include <cJSON.h>

#include "e2e_util.h"

/* `wallspy ARGS...` (NULL-terminated, without argv[0]) in cwd (NULL:
 * inherit), killed after timeout_ms. */
struct e2e_result e2e_wallspy_run(const char *const args[], const char *cwd,
				  int timeout_ms);

/* `wallspy dump OPTS... PID` (opts NULL-terminated, may be NULL) in cwd
 * (NULL: inherit), killed after timeout_ms; asserts exit code want_code
 * (0: success). */
struct e2e_result e2e_run_dump(pid_t pid, const char *const opts[],
			       const char *cwd, int want_code, int timeout_ms);

/* `wallspy dump --json OPTS... PID`, exit 0, parsed (freed by
 * e2e_cleanup); asserts it is JSON with a "tasks" array. */
cJSON *e2e_dump_json(pid_t pid, const char *const opts[]);

/* The task named `name` in a dump --json (NULL: none); fails the test
 * when two have that name. */
const cJSON *e2e_dump_task(const cJSON *dump, const char *name);

/* `wallspy record -o DIR/out.json OPTS... -- TARGET...` in a fresh
 * directory DIR (its cwd), killed after timeout_ms; asserts exit 0. The
 * output's path in *out. A target the recording detached from keeps
 * running: a caller that made itself a subreaper (e2e_become_subreaper)
 * adopts it (e2e_adopt_orphans, or e2e_cleanup_adopting as .fini). */
struct e2e_result e2e_record(const char *const opts[],
			     const char *const target[], const char **out,
			     int timeout_ms);

/* `wallspy attach -o DIR/NAME OPTS... PID` in a fresh directory DIR,
 * killed after timeout_ms (opts should hold -d SECONDS); asserts exit 0.
 * The output's path in *out. */
struct e2e_result e2e_attach(pid_t pid, const char *const opts[],
			     const char *name, const char **out,
			     int timeout_ms);

/* Starts `wallspy attach -o DIR/NAME OPTS... PID` in a fresh directory DIR
 * (stdout and stderr piped, for e2e_collect) and waits up to 10 s until it
 * has seized pid (its leader's TracerPid is wallspy's). The
 * output's path in *out. */
struct e2e_proc e2e_spawn_attach(pid_t pid, const char *const opts[],
				 const char *name, const char **out);

#endif
