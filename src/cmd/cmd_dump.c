/*
 * `wallspy dump PID`: attach, take one tick, detach, print. The target is
 * stopped only for that one tick; it is detached before anything is
 * printed, so a slow terminal never holds it.
 */
#include <stdio.h>

#include "ws_cmd_dump.h"
#include "ws_debugcache.h"
#include "ws_dump.h"
#include "ws_sampler.h"
#include "ws_symbols.h"
#include "ws_target.h"

int ws_cmd_dump(const struct ws_options *o)
{
	struct ws_target *target;
	struct ws_error *err = ws_target_attach(o->pid, ws_cli_target_flags(o), &target);
	if (err)
		return ws_cli_report(err);
	/* Handed to the sampler, which opens debug info through it. */
	struct ws_debugcache *debug_cache = ws_cli_debug_cache(o);

	struct ws_sampler_options so = {
		.runtime = o->runtime,
		.max_stack = o->max_stack,
		.switches = o->switches,
		.debug_cache = debug_cache,
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
		if (o->json)
			err = ws_dump_write_json(stdout, o->pid,
						 ws_sampler_runtime_name(sampler),
						 tick);
		else
			err = ws_dump_write_text(stdout, tick);
		if (!err && fflush(stdout) != 0)
			err = ws_error_create(WS_ERR_OUTPUT, "dump: write failed");
	}
	ws_sampler_destroy(sampler);
	ws_debugcache_close(debug_cache);
	ws_target_destroy(target);
	return err ? ws_cli_report(err) : 0;
}
