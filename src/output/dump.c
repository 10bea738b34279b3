/*
 * Text and JSON renderings of one tick (see ws_dump.h). Both stream with
 * stdio: a dump of 100k tasks never becomes a tree in memory.
 */
#include "ws_dump.h"

#include <inttypes.h>

#include "ws_json_out.h"
#include "ws_symbols.h"

static void write_header(FILE *f, const char *noun,
			 const struct ws_tick_task *tt)
{
	const struct ws_task *t = tt->task;
	fprintf(f, "%s %" PRIu64, noun, t->id);
	if (t->name)
		fprintf(f, " \"%s\"", t->name);
	fprintf(f, " [%s", ws_state_name(t->state));
	/* "[chan receive]"; a state the adapter does not know says which:
	 * "[unknown state 12]". */
	if (t->wait_reason)
		fprintf(f, "%s%s", t->state == WS_STATE_UNKNOWN ? " " : ": ",
			t->wait_reason);
	/* As Go's traceback says it. */
	if (t->locked_to_thread)
		fputs(", locked to thread", f);
	fputc(']', f);
	if (t->thread)
		fprintf(f, " thread %d", (int)t->thread);
	fputc('\n', f);
}

/* {"key":"value", ...}, as Go's goroutine profile prints labels. */
static void write_labels(FILE *f, const struct ws_task *t)
{
	fputc('{', f);
	for (size_t i = 0; i < t->nlabels; i++) {
		if (i)
			fputs(", ", f);
		ws_json_write_string(f, t->labels[2 * i]);
		fputc(':', f);
		ws_json_write_string(f, t->labels[2 * i + 1]);
	}
	fputc('}', f);
}

/* The creation site's frame: the go statement's caller. */
static const struct ws_frame *creator_frame(const struct ws_tick_task *tt)
{
	return tt->creator ? &tt->creator->frames[tt->creator->nframes - 1]
			   : NULL;
}

struct ws_error *ws_dump_write_text(FILE *f, const struct ws_tick *tick)
{
	char name[128];
	for (size_t i = 0; i < tick->ntasks; i++) {
		const struct ws_tick_task *tt = &tick->tasks[i];
		if (i)
			fputc('\n', f);
		write_header(f, tick->task_noun, tt);
		if (tt->task->nlabels) {
			fputs("    labels: ", f);
			write_labels(f, tt->task);
			fputc('\n', f);
		}
		if (tt->error)
			fprintf(f, "    [failed to sample: %s]\n", tt->error);
		for (size_t k = 0; k < tt->nframes; k++) {
			const struct ws_frame *fr = &tick->frames[tt->first_frame + k];
			fprintf(f, "    %s",
				ws_frame_display_name(fr, name, sizeof(name)));
			if (fr->file)
				fprintf(f, " (%s:%d)", fr->file, fr->line);
			else if (fr->function && fr->module)
				fprintf(f, " (%s+0x%" PRIx64 ")", fr->module,
					fr->module_offset);
			if (fr->inlined)
				fputs(" [inlined]", f);
			fputc('\n', f);
		}
		const struct ws_frame *fr = creator_frame(tt);
		if (fr) {
			/* Like Go's traceback. */
			fprintf(f, "    created by %s",
				ws_frame_display_name(fr, name, sizeof(name)));
			if (tt->task->creator_id)
				fprintf(f, " in %s %" PRIu64, tick->task_noun,
					tt->task->creator_id);
			if (fr->file)
				fprintf(f, " (%s:%d)", fr->file, fr->line);
			fputc('\n', f);
		}
	}
	if (ferror(f))
		return ws_error_create(WS_ERR_OUTPUT, "dump: write failed");
	return NULL;
}

struct ws_error *ws_dump_write_json(FILE *f, pid_t pid, const char *runtime,
				    const struct ws_tick *tick)
{
	fprintf(f, "{\"pid\": %d, \"runtime\": ", (int)pid);
	ws_json_write_string(f, runtime);
	fputs(", \"tasks\": [", f);
	for (size_t i = 0; i < tick->ntasks; i++) {
		const struct ws_tick_task *tt = &tick->tasks[i];
		const struct ws_task *t = tt->task;
		fprintf(f, "%s\n {\"id\": %" PRIu64 ", \"name\": ",
			i ? "," : "", t->id);
		ws_json_write_string(f, t->name);
		if (t->thread)
			fprintf(f, ", \"thread\": %d", (int)t->thread);
		else
			fputs(", \"thread\": null", f);
		fputs(", \"state\": ", f);
		ws_json_write_string(f, ws_state_name(t->state));
		fputs(", \"wait_reason\": ", f);
		ws_json_write_string(f, t->wait_reason);
		fputs(", \"error\": ", f);
		ws_json_write_string(f, tt->error);
		fprintf(f, ", \"locked_to_thread\": %s",
			t->locked_to_thread ? "true" : "false");
		fputs(", \"labels\": ", f);
		if (t->nlabels)
			write_labels(f, t);
		else
			fputs("null", f);
		fputs(", \"frames\": [", f);
		for (size_t k = 0; k < tt->nframes; k++) {
			const struct ws_frame *fr = &tick->frames[tt->first_frame + k];
			fputs(k ? ", {\"function\": " : "{\"function\": ", f);
			ws_json_write_string(f, fr->function);
			fputs(", \"file\": ", f);
			ws_json_write_string(f, fr->file);
			if (fr->file && fr->line > 0)
				fprintf(f, ", \"line\": %d", fr->line);
			else
				fputs(", \"line\": null", f);
			fprintf(f, ", \"inlined\": %s, \"address\": \"0x%" PRIx64 "\"}",
				fr->inlined ? "true" : "false", fr->address);
		}
		fputs("], \"created_by\": ", f);
		const struct ws_frame *cr = creator_frame(tt);
		if (cr) {
			char name[128];
			fputs("{\"function\": ", f);
			ws_json_write_string(f, cr->function
					     ? cr->function
					     : ws_frame_display_name(cr, name, sizeof(name)));
			fputs(", \"file\": ", f);
			ws_json_write_string(f, cr->file);
			if (cr->file && cr->line > 0)
				fprintf(f, ", \"line\": %d", cr->line);
			else
				fputs(", \"line\": null", f);
			/* The creating task (goroutine), where kept. */
			if (t->creator_id)
				fprintf(f, ", \"parent\": %" PRIu64 "}",
					t->creator_id);
			else
				fputs(", \"parent\": null}", f);
		} else {
			fputs("null", f);
		}
		fputc('}', f);
	}
	fputs("\n]}\n", f);
	if (ferror(f))
		return ws_error_create(WS_ERR_OUTPUT, "dump: write failed");
	return NULL;
}
