/*
 * `wallspy record` and `wallspy attach`: the sampling loop, from launching
 * or attaching to the written profile. When ticks fall (a jittered grid,
 * missed ticks counted and carried as weight) is ws_timer's. Between ticks
 * wallspy waits on SIGCHLD, so target signals are passed on at once and
 * SIGINT/SIGTERM end the recording cleanly: detach, write, exit 0. A
 * command `record` launched does not outlive a recording that ended
 * early (-d, a signal): it is ended as timeout(1) would, unless
 * --keep-running.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ws_budget.h"
#include "ws_clock.h"
#include "ws_cmd_record.h"
#include "ws_debugcache.h"
#include "ws_debuginfod.h"
#include "ws_folded.h"
#include "ws_grow.h"
#include "ws_output_file.h"
#include "ws_pprof.h"
#include "ws_speedscope.h"
#include "ws_profile.h"
#include "ws_sampler.h"
#include "ws_status.h"
#include "ws_symbols.h"
#include "ws_target.h"
#include "ws_timer.h"

/* A process of the tree other than the root (--subprocesses) and its
 * sampler (NULL when it could not be created: said once, then skipped). */
struct child {
	struct ws_target *target;
	struct ws_sampler *sampler;
	uint64_t failed_ticks;
};

struct recording {
	const struct ws_options *options;
	struct ws_sampler_options sampler_options;
	struct ws_target *target;
	struct ws_sampler *sampler;
	struct child *children;
	size_t nchildren, children_cap;
	struct ws_profile *profile;
	struct ws_status status;
	char *output_path;
	int stop_signal;	/* the signal that ended the recording, or 0 */
	/* The target was in wallspy's process group at the last look (see
	 * note_group): a terminal's signal to wallspy reached it too. */
	bool same_group;
	pid_t own_group;         /* getpgrp(), once */
	uint64_t group_checked_ns;
	bool ended;		/* the launched command was ended: see end */
	struct ws_target_end end;
	uint64_t failed_ticks, failed_ticks_in_row;
	bool said_rest;         /* the ticks spaced for a walk, said */
	/* Grid points skipped because a tick's cost at the floor of sampled
	 * tasks was over --max-cpu (said at the end), and whether the last
	 * rest asked for was that. */
	uint64_t cost_rested;
	bool resting_for_cost;
	const char *task_noun;
	/* The last tick's cost, from its firing to its samples added, and
	 * the part of it spent naming addresses for the first time. */
	uint64_t last_work_ns, last_cold_ns;
	/* A sample's frames with its process's root frame (--subprocesses). */
	struct ws_frame *frames;
	size_t frames_cap;
};

/* --group-by label:KEY: "KEY=VALUE", or "no KEY label", into buf. */
static const char *label_group(const char *key, const struct ws_task *task,
			       char *buf, size_t size)
{
	for (size_t i = 0; i < task->nlabels; i++)
		if (strcmp(task->labels[2 * i], key) == 0) {
			snprintf(buf, size, "%s=%s", key, task->labels[2 * i + 1]);
			return buf;
		}
	snprintf(buf, size, "no %s label", key);
	return buf;
}

/* Adds a tick of process `proc`. Following subprocesses, every stack gets
 * its process as the outermost frame, "process PID \"COMMAND\"", so the
 * merged profile splits by process first (as py-spy's does); not with
 * --group-by process, whose groups are named so already. */
static struct ws_error *add_tick(struct recording *r, struct ws_target *proc,
				 const struct ws_tick *tick,
				 const struct ws_timer_tick *due)
{
	double t = due->covers_from, weight = due->weight;
	bool tree = r->options->subprocesses;
	bool root_frame = tree && r->options->group_by != WS_GROUP_PROCESS;
	char root_name[64];
	snprintf(root_name, sizeof(root_name), "process %d \"%s\"", (int)proc->pid,
		 proc->comm);
	const char *label_key = r->options->group_by == WS_GROUP_LABEL
		? r->options->group_label : NULL;
	char label[512];
	for (size_t i = 0; i < tick->ntasks; i++) {
		const struct ws_tick_task *tt = &tick->tasks[i];
		if (tt->not_started && r->options->started_only)
			continue;
		struct ws_sample sample = {
			.task_id = tt->task->id,
			.task_name = tt->task->name,
			.thread = tt->task->thread,
			.process = tree ? (int)proc->pid : 0,
			.process_name = tree ? proc->comm : NULL,
			.state = tt->task->state,
			.wait_reason = tt->task->wait_reason,
			.error = tt->error,
			.not_started = tt->not_started,
			.frames = tick->frames + tt->first_frame,
			.nframes = tt->nframes,
			.weight = weight,
			.scale = tt->scale,
			.time = t,
			.group_label = label_key
				? label_group(label_key, tt->task, label, sizeof(label))
				: NULL,
		};
		if (root_frame) {
			if (!ws_grow((void **)&r->frames, &r->frames_cap,
				     tt->nframes + 1, sizeof(*r->frames)))
				return &ws_error_nomem;
			memcpy(r->frames, sample.frames,
			       tt->nframes * sizeof(*r->frames));
			r->frames[tt->nframes] = (struct ws_frame){
				.function = root_name};
			sample.frames = r->frames;
			sample.nframes = tt->nframes + 1;
		}
		struct ws_error *err = ws_profile_add(r->profile, &sample);
		if (err)
			return err;
	}
	return NULL;
}

/* Updates same_group while the target can still be asked: at start and
 * end (`now`), and in between at most every 100 ms (two system calls a
 * tick are a share of a tick's cost). wallspy's own group never changes:
 * it is taken once. */
static void note_group(struct recording *r, bool now)
{
	uint64_t t = ws_now_ns();
	if (!now && t - r->group_checked_ns < 100000000u)
		return;
	r->group_checked_ns = t;
	if (!r->own_group)
		r->own_group = getpgrp();
	pid_t pgid = getpgid(r->target->pid);
	if (pgid >= 0)
		r->same_group = pgid == r->own_group;
}

/* Brings the children up to the tree: a process born since the last tick
 * gets a sampler, one that exited is finished (its samples stay in the
 * profile) and released. */
static struct ws_error *sync_children(struct recording *r)
{
	for (size_t i = 0; i < r->nchildren;) {
		struct child *c = &r->children[i];
		if (!c->target->exited) {
			i++;
			continue;
		}
		ws_sampler_destroy(c->sampler);
		ws_target_release(c->target);
		r->children[i] = r->children[--r->nchildren];
	}
	for (size_t p = 1; p < ws_target_tree_size(r->target); p++) {
		struct ws_target *proc = ws_target_tree_at(r->target, p);
		bool known = false;
		for (size_t i = 0; i < r->nchildren && !known; i++)
			known = r->children[i].target == proc;
		if (known || proc->exited)
			continue;
		if (!ws_grow((void **)&r->children, &r->children_cap,
			     r->nchildren + 1, sizeof(*r->children)))
			return &ws_error_nomem;
		struct child *c = &r->children[r->nchildren++];
		*c = (struct child){.target = proc};
		struct ws_error *err = ws_sampler_create(proc, &r->sampler_options,
							 &c->sampler);
		if (err) {
			ws_status_clear(&r->status);
			fprintf(stderr, "wallspy: process %d (%s) is not sampled: %s\n",
				(int)proc->pid, proc->comm, err->message);
			ws_error_destroy(err);
			c->sampler = NULL;
		}
	}
	return NULL;
}

/* One tick of every child process. A child that exits during its tick is
 * finished at the next; any other failure of one tick is skipped, the
 * first of each child said. */
static struct ws_error *tick_children(struct recording *r,
				      const struct ws_timer_tick *due)
{
	struct ws_error *err = sync_children(r);
	for (size_t i = 0; !err && i < r->nchildren && !ws_target_stop_requested();
	     i++) {
		struct child *c = &r->children[i];
		if (!c->sampler || c->target->exited)
			continue;
		const struct ws_tick *tick;
		struct ws_error *tick_err = ws_sampler_tick(c->sampler, &tick);
		if (tick_err) {
			ws_target_poll_events(c->target);
			if (!c->target->exited && tick_err->kind != WS_ERR_NO_PROCESS &&
			    c->failed_ticks++ == 0) {
				ws_status_clear(&r->status);
				fprintf(stderr,
					"wallspy: process %d (%s): a tick failed (%s); going on\n",
					(int)c->target->pid, c->target->comm,
					tick_err->message);
			}
			ws_error_destroy(tick_err);
			continue;
		}
		/* Counted as samples, not as ticks of the root. */
		r->status.samples += tick->ntasks;
		err = add_tick(r, c->target, tick, due);
	}
	return err;
}

static void finish_children(struct recording *r)
{
	for (size_t i = 0; i < r->nchildren; i++)
		ws_sampler_destroy(r->children[i].sampler);
	free(r->children);
	r->children = NULL;
	r->nchildren = 0;
}

static struct ws_error *sample_loop(struct recording *r)
{
	const struct ws_options *o = r->options;
	struct ws_timer timer;
	ws_timer_init(&timer, r->status.start_ns, o->rate, o->duration,
		      ws_now_ns());

	for (;;) {
		uint64_t next = ws_timer_next(&timer);
		for (;;) {
			int sig = ws_target_wait_events(r->target, next);
			if (sig) {
				r->stop_signal = sig;
				return NULL;
			}
			if (r->target->exited)
				return NULL;
			if (ws_now_ns() >= next)
				break;
		}
		/* A sample stands for the time since the previous one: when
		 * ticks were missed (wallspy was late), it carries theirs too
		 * (due.weight). */
		/* Late because the last tick loaded debug info for new
		 * addresses (the first ticks do, and any new code path): a
		 * lower rate would not help, so it is no "falling behind". */
		bool excused = r->last_work_ns - r->last_cold_ns < timer.interval_ns &&
			       r->last_work_ns >= timer.interval_ns;
		struct ws_timer_tick due;
		uint64_t fired_ns = ws_now_ns();
		if (!ws_timer_fire(&timer, fired_ns, r->status.ticks, excused,
				   &due))
			return NULL;
		r->status.missed_ticks += due.missed;
		if (r->resting_for_cost)
			r->cost_rested += due.rested;
		r->resting_for_cost = false;
		if (due.warn_late) {
			ws_status_clear(&r->status);
			fprintf(stderr,
				"wallspy: falling behind the %.4g Hz rate; counting missed ticks (try a lower --rate)\n",
				o->rate);
		}
		const struct ws_tick *tick;
		struct ws_error *err = ws_sampler_tick(r->sampler, &tick);
		if (err) {
			/* The target exiting during a tick ends the recording
			 * like any exit. Another failure of one tick (a
			 * registry caught mid-update) is counted and the
			 * recording goes on; only a run of them is fatal. */
			ws_target_poll_events(r->target);
			if (r->target->exited || err->kind == WS_ERR_NO_PROCESS) {
				ws_error_destroy(err);
				return NULL;
			}
			if (++r->failed_ticks_in_row >= 100)
				return ws_error_wrap(err, "100 ticks failed in a row");
			r->failed_ticks++;
			if (r->failed_ticks == 1) {
				ws_status_clear(&r->status);
				fprintf(stderr, "wallspy: a tick failed (%s); going on\n",
					err->message);
			}
			ws_error_destroy(err);
			continue;
		}
		r->failed_ticks_in_row = 0;
		note_group(r, false);
		if (o->subprocesses && (err = tick_children(r, &due)))
			return err;
		if (tick->ntasks == 0)
			continue; /* the target exited during the tick */
		/* Live tasks: each sample stands for `scale` of them. */
		double live = 0;
		for (size_t i = 0; i < tick->ntasks; i++)
			live += tick->tasks[i].scale;
		ws_status_tick(&r->status, tick->pause_ns, tick->ntasks,
			       (size_t)(live + 0.5));
		err = add_tick(r, r->target, tick, &due);
		if (err)
			return err;
		if (tick->rest_ns) {
			/* A registry walked whole costs what its length does,
			 * and a tick of the fewest tasks may cost more than
			 * the budget: the ticks are spaced to keep --max-cpu.
			 * The cost's spacing varies tick to tick: it is said
			 * at the end, with the rate it came to. */
			ws_timer_rest(&timer, tick->rest_ns);
			r->resting_for_cost = tick->rest_for_cost;
			r->task_noun = tick->task_noun;
			if (!r->said_rest && !tick->rest_for_cost) {
				r->said_rest = true;
				ws_status_clear(&r->status);
				fprintf(stderr,
					"wallspy: walking every %s takes more than --max-cpu allows at %.4g Hz; ticks spaced to %.2f s (a higher --max-cpu samples more often)\n",
					tick->task_noun, o->rate,
					(double)(tick->rest_ns + timer.interval_ns) / 1e9);
			}
		}
		r->last_work_ns = ws_now_ns() - fired_ns;
		r->last_cold_ns = tick->cold_naming_ns;
		ws_status_draw(&r->status, ws_now_ns());
	}
}

/* The ticks spaced for the cost of a tick (ws_tick.rest_for_cost), when
 * that took more than a twentieth of them: the rate they came to. */
static void say_cost_rest(const struct recording *r, uint64_t stop_ns)
{
	const struct ws_status *st = &r->status;
	uint64_t grid = st->ticks + st->missed_ticks + r->cost_rested;
	double seconds = (double)(stop_ns - st->start_ns) / 1e9;
	if (!r->cost_rested || r->cost_rested * 20 < grid || seconds <= 0)
		return;
	fprintf(stderr,
		"wallspy: a tick cost more than --max-cpu %.4g %% allows at %.4g Hz, even with the fewest %ss sampled (%d): ticks spaced to %.3g Hz on average (a higher --max-cpu samples more often)\n",
		r->options->max_cpu, r->options->rate, r->task_noun,
		WS_BUDGET_MIN_TASKS, (double)st->ticks / seconds);
}

/* How long a command `record` ends has to exit after its signal before
 * SIGKILL (timeout(1)'s --kill-after). */
#define END_GRACE_NS (5 * 1000000000ull)

/* The signal that ended the recording came from the terminal to the
 * whole foreground process group, which the target was in. */
static bool terminal_reached_target(const struct recording *r)
{
	return r->stop_signal && ws_target_signal_from_kernel() && r->same_group;
}

/* The signal that ends a launched command when the recording ended
 * early: the one wallspy got, passed on as timeout(1) does, unless the
 * terminal's reached the command too (it has its own, already passed on
 * while it was traced); SIGTERM when -d ran out. */
static int end_signal(const struct recording *r)
{
	if (!r->stop_signal)
		return SIGTERM;
	if (terminal_reached_target(r))
		return 0;
	return r->stop_signal;
}

/* "exited with status 0", "killed by signal 15 (Terminated)" */
static void describe_exit(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, size, "gone");
}

/* The target's fate for the summary: what happened, never a guess. */
static void describe_target(const struct recording *r, char *buf, size_t size)
{
	const struct ws_target *t = r->target;
	char how[96];
	if (!t->exited) {
		snprintf(buf, size, "target still running%s",
			 r->options->keep_running && t->launched
				 ? " (--keep-running)" : "");
		return;
	}
	describe_exit(t->exit_status, how, sizeof(how));
	if (!r->ended && terminal_reached_target(r))
		snprintf(buf, size, "target got the terminal's SIG%s, then %s",
			 sigabbrev_np(r->stop_signal), how);
	else if (!r->ended)
		snprintf(buf, size, "target %s", how);
	else if (r->end.killed)
		snprintf(buf, size, "target still running %.0f s after %sSIG%s: killed by wallspy with SIGKILL",
			 r->end.grace,
			 r->end.signal ? "wallspy sent " : "the terminal's ",
			 sigabbrev_np(r->end.signal ? r->end.signal : r->stop_signal));
	else if (r->end.signal)
		snprintf(buf, size, "target sent SIG%s by wallspy, then %s",
			 sigabbrev_np(r->end.signal), how);
	else
		snprintf(buf, size, "target got the terminal's SIG%s, then %s",
			 sigabbrev_np(r->stop_signal), how);
}

static struct ws_error *add_module(const struct ws_symbols_module *m,
				   void *arg)
{
	struct ws_profile_module pm = {
		.name = m->name,
		.path = m->path,
		.build_id = m->build_id,
		.start = m->start,
		.limit = m->end,
	};
	return ws_profile_add_module(arg, &pm);
}

static struct ws_error *write_profile(struct recording *r)
{
	struct ws_output *out;
	struct ws_error *err = NULL;
	/* pprof's mappings: the modules the target has now (after an exec,
	 * the new program's). */
	if (r->options->format == WS_FORMAT_PPROF)
		err = ws_symbols_modules(ws_sampler_symbols(r->sampler),
					 add_module, r->profile);
	if (!err)
		err = ws_output_open(r->output_path, &out);
	if (err)
		return err;
	if (r->options->format == WS_FORMAT_FOLDED)
		err = ws_write_folded(r->profile, ws_output_file(out));
	else if (r->options->format == WS_FORMAT_PPROF)
		err = ws_write_pprof(r->profile, ws_output_file(out));
	else
		err = ws_write_speedscope(r->profile, ws_output_file(out));
	if (err) {
		ws_output_abort(out);
		/* The writers know the stream, not its name. */
		return err->kind == WS_ERR_OUTPUT
			       ? ws_error_wrap(err, "%s", r->output_path)
			       : err;
	}
	return ws_output_commit(out);
}

static char *default_output(const struct ws_options *o, pid_t pid)
{
	char *path;
	const char *suffix = o->format == WS_FORMAT_FOLDED  ? "folded"
			     : o->format == WS_FORMAT_PPROF ? "pb.gz"
							    : "speedscope.json";
	if (asprintf(&path, "wallspy-%d.%s", (int)pid, suffix) < 0)
		return NULL;
	return path;
}

static char *make_title(const struct ws_options *o, pid_t pid)
{
	char *title = NULL;
	if (o->command == WS_CMD_RECORD) {
		size_t len = 0;
		for (char **a = o->argv; *a; a++)
			len += strlen(*a) + 1;
		title = malloc(len + 1);
		if (!title)
			return NULL;
		title[0] = '\0';
		for (char **a = o->argv; *a; a++) {
			if (a != o->argv)
				strcat(title, " ");
			strcat(title, *a);
		}
	} else if (asprintf(&title, "pid %d", (int)pid) < 0) {
		title = NULL;
	}
	return title;
}

int ws_cmd_record(const struct ws_options *o)
{
	struct recording r = {.options = o};
	struct ws_error *err = NULL;

	ws_target_block_signals();
	signal(SIGPIPE, SIG_IGN);
	/* Before the target is touched, so a bad -o costs nothing. */
	if (o->output && (err = ws_output_check(o->output)))
		return ws_cli_report(err);

	if (o->command == WS_CMD_RECORD)
		err = ws_target_launch(o->argv, ws_cli_target_flags(o), &r.target);
	else
		err = ws_target_attach(o->pid, ws_cli_target_flags(o), &r.target);
	if (err)
		return ws_cli_report(err);

	r.output_path = o->output ? strdup(o->output)
				  : default_output(o, r.target->pid);
	if (!r.output_path)
		err = &ws_error_nomem;
	else if (!o->output)
		err = ws_output_check(r.output_path);

	/* Handed to the sampler, which opens debug info through them. */
	struct ws_debugcache *debug_cache = ws_cli_debug_cache(o);
	struct ws_debuginfod *debuginfod = ws_cli_debuginfod(o, ws_target_serve,
							     r.target);
	struct ws_sampler_options so = r.sampler_options = (struct ws_sampler_options){
		.runtime = o->runtime,
		.max_stack = o->max_stack,
		.max_pause_ns = (uint64_t)(o->max_pause * 1e6),
		.max_cpu = o->max_cpu / 100,
		.interval_ns = (uint64_t)(1e9 / o->rate),
		.live = !o->stop_all,
		.switches = o->switches,
		.debug_cache = debug_cache,
		.debuginfod = debuginfod,
		.system_tasks = o->system_tasks,
		.labels = o->group_by == WS_GROUP_LABEL,
	};
	/* A SIGINT or SIGTERM while attaching: nothing more to prepare
	 * (loading debug info can take a while); the loop's first wait hands
	 * it out and the target is let go. */
	if (!err && !ws_target_stop_requested())
		err = ws_sampler_create(r.target, &so, &r.sampler);
	if (!err)
		err = ws_profile_create(o->group_by, 1.0 / o->rate, &r.profile);
	if (!err) {
		ws_profile_set_frame_key(r.profile, o->lines ? WS_FRAMES_BY_LINE
							     : WS_FRAMES_BY_FUNCTION);
		ws_profile_set_process(r.profile, r.target->pid);
		ws_profile_set_runtime(r.profile,
				       ws_sampler_runtime_name(r.sampler));
		ws_profile_set_pprof_hidden_root(
			r.profile, ws_sampler_pprof_hidden_root(r.sampler));
		char *title = make_title(o, r.target->pid);
		if (title)
			ws_profile_set_title(r.profile, title);
		free(title);
	}
	if (err) {
		/* A launched command must not run on unprofiled. */
		if (r.target->launched)
			ws_target_kill(r.target);
		ws_target_destroy(r.target);
		ws_sampler_destroy(r.sampler);
		ws_debugcache_close(debug_cache);
		ws_debuginfod_destroy(debuginfod);
		free(r.output_path);
		return ws_cli_report(err);
	}

	/* A launched command waits at its exec stop until now: the clock
	 * starts with its first instruction. */
	ws_target_resume_all(r.target);
	ws_status_init(&r.status, !o->quiet && isatty(STDERR_FILENO),
		       ws_now_ns());
	char hint[4200];
	snprintf(hint, sizeof(hint), "Ctrl-C to stop and write %s",
		 strcmp(r.output_path, "-") == 0 ? "the profile" : r.output_path);
	r.status.hint = hint;
	note_group(&r, true);
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	ws_profile_set_start_time(r.profile, (uint64_t)wall.tv_sec * 1000000000u +
						     (uint64_t)wall.tv_nsec);
	err = sample_loop(&r);
	uint64_t stop_ns = ws_now_ns();
	/* The target's exit can end a tick before the signal that caused it
	 * (the terminal's Ctrl-C, which wallspy got too) is handed out. */
	if (r.target->exited && !r.stop_signal)
		r.stop_signal = ws_target_wait_events(r.target, 0);
	note_group(&r, true);
	if (!r.target->exited && r.target->launched && !o->keep_running) {
		/* The status line would stay on screen during the grace. */
		ws_status_clear(&r.status);
		ws_target_end(r.target, end_signal(&r), END_GRACE_NS, &r.end);
		r.ended = true;
	} else if (!r.target->exited) {
		/* It keeps running (or stays in its group stop). */
		ws_target_detach(r.target);
	}
	ws_status_clear(&r.status);
	ws_profile_set_duration(r.profile,
				(double)(stop_ns - r.status.start_ns) / 1e9);

	if (!err && r.status.samples == 0)
		err = ws_error_create(WS_ERR_TARGET_EXITED, "%s %d: %s",
				      o->command == WS_CMD_RECORD ? "record"
								  : "attach",
				      (int)r.target->pid,
				      r.target->exited
					      ? "the target exited before anything was sampled"
					      : "stopped before anything was sampled");
	if (!err)
		err = write_profile(&r);

	int code = 0;
	if (err) {
		code = ws_cli_report(err);
	} else if (!o->quiet) {
		char stats[256], target[192];
		ws_status_format(&r.status, stop_ns, stats, sizeof(stats));
		describe_target(&r, target, sizeof(target));
		/* wallspy's own cost, without the target's (a reaped child's
		 * time would count in RUSAGE_CHILDREN, never here). */
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
			     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
		say_cost_rest(&r, stop_ns);
		fprintf(stderr,
			"wallspy: %s; wallspy cpu %.2f s (%.1f us/sample), max rss %ld MB; %s; wrote %s\n",
			stats, cpu,
			r.status.samples ? cpu * 1e6 / (double)r.status.samples : 0,
			ru.ru_maxrss / 1024, target, r.output_path);
	}
	ws_sampler_destroy(r.sampler);
	finish_children(&r);
	ws_debugcache_close(debug_cache);
	ws_debuginfod_destroy(debuginfod);
	ws_profile_destroy(r.profile);
	ws_status_deinit(&r.status);
	free(r.output_path);
	free(r.frames);
	ws_target_destroy(r.target);
	return code;
}
