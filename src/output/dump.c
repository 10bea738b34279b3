/*
 * Text and JSON renderings of one tick (see ws_dump.h). Both stream with
 * stdio: a dump of 100k tasks never becomes a tree in memory.
 */
#include "ws_dump.h"

#include <inttypes.h>

#include "ws_json_out.h"
#include "ws_symbols.h"

static void write_header(FILE *f, const struct ws_tick_task *tt)
{
	const struct ws_task *t = tt->task;
	fprintf(f, "task %" PRIu64, t->id);
	if (t->name)
		fprintf(f, " \"%s\"", t->name);
	fprintf(f, " [%s", ws_state_name(t->state));
	if (t->wait_reason)
		fprintf(f, ": %s", t->wait_reason);
	fputc(']', f);
	if (t->thread)
		fprintf(f, " thread %d", (int)t->thread);
	fputc('\n', f);
}

struct ws_error *ws_dump_write_text(FILE *f, const struct ws_tick *tick)
{
	char name[128];
	for (size_t i = 0; i < tick->ntasks; i++) {
		const struct ws_tick_task *tt = &tick->tasks[i];
		if (i)
			fputc('\n', f);
		write_header(f, tt);
		if (tt->error)
			fprintf(f, "    [failed to sample: %s]\n", tt->error);
		else if (tt->not_started)
			fputs("    [not started]\n", f);
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
		if (tt->creator) {
			/* Like Go's traceback: the go statement's caller. */
			const struct ws_frame *fr =
				&tt->creator->frames[tt->creator->nframes - 1];
			fprintf(f, "    created by %s",
				ws_frame_display_name(fr, name, sizeof(name)));
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
		fprintf(f, ", \"not_started\": %s",
			tt->not_started ? "true" : "false");
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
		fputs("]}", f);
	}
	fputs("\n]}\n", f);
	if (ferror(f))
		return ws_error_create(WS_ERR_OUTPUT, "dump: write failed");
	return NULL;
}
