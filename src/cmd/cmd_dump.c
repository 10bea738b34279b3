/*
 * `wallspy dump PID`: attach, take one tick, detach, print. The target is
 * stopped only for that one tick; it is detached before anything is
 * printed, so a slow terminal never holds it. What the header says about
 * the process (its executable and command line) is read from /proc here.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ws_clock.h"

#include "ws_cmd_dump.h"
#include "ws_debugcache.h"
#include "ws_debuginfod.h"
#include "ws_dump.h"
#include "ws_sampler.h"
#include "ws_symbols.h"
#include "ws_target.h"

/* The target's executable (heap), NULL when unreadable. */
static char *read_executable(pid_t pid)
{
	char path[4096];
	return ws_target_executable(pid, path, sizeof(path)) ? strdup(path)
							       : NULL;
}

/* /proc/PID/cmdline with spaces between the arguments (heap), NULL when
 * unreadable or empty (a kernel thread, a zombie). */
static char *read_command(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	return strdup(buf);
}

int ws_cmd_dump(const struct ws_options *o)
{
	uint64_t start_ns = ws_now_ns();
	/* A dump is written at once at the end: in 128 KB writes, not
	 * stdio's 4 KB ones, into a file or pipe (10,000 goroutines: 9 MB of
	 * text). Not 1 MB: its fresh pages were 256 of a 10k dump's 1,300
	 * faults (a median 68.7 ms into a file against 74.8 with 1 MB). */
	static char out_buffer[128 << 10];
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, out_buffer, _IOFBF, sizeof(out_buffer));
	struct ws_target *target;
	struct ws_error *err = ws_target_attach_as("dump", o->pid,
						   ws_cli_target_flags(o), &target);
	if (err)
		return ws_cli_report(err);
	char *executable = read_executable(o->pid);
	char *command = read_command(o->pid);
	/* Handed to the sampler, which opens debug info through them. */
	struct ws_debugcache *debug_cache = ws_cli_debug_cache(o);
	struct ws_debuginfod *debuginfod = ws_cli_debuginfod(o, ws_target_serve,
							     target);

	struct ws_sampler_options so = {
		.runtime = o->runtime,
		.max_stack = o->max_stack,
		.switches = o->switches,
		.debug_cache = debug_cache,
		.debuginfod = debuginfod,
		.system_tasks = o->system_tasks,
		.labels = true,
		.one_tick = true,
	};
	struct ws_sampler *sampler = NULL;
	const struct ws_tick *tick = NULL;
	err = ws_sampler_create(target, &so, &sampler);
	target->detach_on_resume = true;
	if (!err)
		err = ws_sampler_tick(sampler, &tick);
	ws_target_detach(target);
	/* A SIGINT or SIGTERM meanwhile (the work was cut short): the target
	 * is let go, nothing is printed, and wallspy ends of that signal, as
	 * any interrupted command does. */
	if (ws_target_stop_requested()) {
		int sig = ws_target_wait_events(target, 0);
		ws_sampler_destroy(sampler);
		ws_debugcache_close(debug_cache);
		ws_target_destroy(target);
		ws_cli_die_of(sig);
	}
	if (!err && tick && tick->ntasks == 0 && target->exited)
		err = ws_error_create(WS_ERR_TARGET_EXITED,
				      "dump %d: the process exited", o->pid);
	if (!err) {
		struct ws_dump_info info = {
			.pid = o->pid,
			.executable = executable,
			.command = command,
			.runtime = ws_sampler_runtime_name(sampler),
			.held_ns = tick->pause_ns,
			.took_ns = ws_now_ns() - start_ns,
			.group = o->group,
		};
		if (o->json)
			err = ws_dump_write_json(stdout, &info, tick);
		else
			err = ws_dump_write_text(stdout, &info, tick);
		if (!err && fflush(stdout) != 0)
			err = ws_error_create(WS_ERR_OUTPUT, "dump: write failed");
	}
	ws_sampler_destroy(sampler);
	ws_debugcache_close(debug_cache);
	ws_debuginfod_destroy(debuginfod);
	ws_target_destroy(target);
	free(executable);
	free(command);
	return err ? ws_cli_report(err) : 0;
}
