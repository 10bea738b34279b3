/*
 * speedscope JSON writer: the shared frame table, then one "sampled"
 * profile per group, streamed with stdio so memory stays constant however
 * many samples there are (a cJSON tree of 1M samples needs ~1.7 GB). The
 * format is speedscope's file-format-schema.json; tools/validate-speedscope
 * checks our output against it.
 */
#include "ws_grow.h"
#include "ws_json_out.h"
#include "ws_speedscope.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct samples_writer {
	FILE *file;
	bool first;
	char *line;  /* one sample's "[i,j,...]" */
	size_t capacity;
};

/* Formats v in decimal at the end of buf; returns the first digit. */
static char *format_index(uint32_t v, char *end)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

/* One sample per line: formatted by hand into a buffer and written with one
 * fwrite, because a file can hold millions of frame indices and fprintf per
 * index would dominate the writer's time. */
static struct ws_error *write_sample(const uint32_t *stack, size_t depth,
				     double weight, void *arg)
{
	(void)weight;
	struct samples_writer *w = arg;
	size_t need = depth * 11 + 4; /* ",\n[" + digits and commas + "]" */
	if (!ws_grow((void **)&w->line, &w->capacity, need, 1))
		return &ws_error_nomem;
	char *p = w->line;
	if (!w->first)
		*p++ = ',';
	*p++ = '\n';
	*p++ = '[';
	char digits[10];
	for (size_t i = 0; i < depth; i++) {
		if (i)
			*p++ = ',';
		char *end = digits + sizeof(digits);
		char *start = format_index(stack[i], end);
		memcpy(p, start, (size_t)(end - start));
		p += end - start;
	}
	*p++ = ']';
	fwrite(w->line, 1, (size_t)(p - w->line), w->file);
	w->first = false;
	return NULL;
}

static struct ws_error *write_weight(const uint32_t *stack, size_t depth,
				     double weight, void *arg)
{
	(void)stack;
	(void)depth;
	struct samples_writer *w = arg;
	if (!w->first)
		putc(',', w->file);
	ws_json_write_number(w->file, weight);
	w->first = false;
	return NULL;
}

static void write_frames(const struct ws_profile *profile, FILE *file)
{
	fputs("\"shared\":{\"frames\":[", file);
	size_t count = ws_profile_frame_count(profile);
	for (size_t i = 0; i < count; i++) {
		const struct ws_profile_frame *frame = ws_profile_frame(profile, i);
		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", file);
		ws_json_write_string(file, frame->name);
		if (frame->file) {
			fputs(",\"file\":", file);
			ws_json_write_string(file, frame->file);
		}
		if (frame->line > 0)
			fprintf(file, ",\"line\":%d", frame->line);
		putc('}', file);
	}
	fputs("\n]},\n", file);
}

static void write_profile_header(FILE *file, const char *name, double start,
				 double end)
{
	fputs("{\"type\":\"sampled\",\"name\":", file);
	ws_json_write_string(file, name);
	fputs(",\"unit\":\"seconds\",\"startValue\":", file);
	ws_json_write_number(file, start);
	fputs(",\"endValue\":", file);
	ws_json_write_number(file, end);
}

static struct ws_error *write_group(const struct ws_profile *profile,
				    size_t group, struct samples_writer *w)
{
	/* speedscope lays samples end to end from startValue and takes
	 * max(endValue - startValue, sum of weights) as the total, so the
	 * group's own span keeps a thread's percentages relative to its
	 * lifetime rather than to the whole recording. */
	write_profile_header(w->file, ws_profile_group_name(profile, group),
			     ws_profile_group_start(profile, group),
			     ws_profile_group_end(profile, group));
	fputs(",\n\"samples\":[", w->file);
	w->first = true;
	struct ws_error *err = ws_profile_visit(profile, group, write_sample, w);
	if (err)
		return err;
	fputs("],\n\"weights\":[", w->file);
	w->first = true;
	err = ws_profile_visit(profile, group, write_weight, w);
	if (err)
		return err;
	fputs("]}", w->file);
	return NULL;
}

struct ws_error *ws_write_speedscope(const struct ws_profile *profile,
				     FILE *file)
{
	errno = 0;
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
	      "\"exporter\":\"wallspy@" WS_VERSION "\",\n\"name\":", file);
	const char *title = ws_profile_title(profile);
	ws_json_write_string(file, title ? title : "wallspy");
	fputs(",\n\"activeProfileIndex\":0,\n", file);
	write_frames(profile, file);

	fputs("\"profiles\":[", file);
	struct samples_writer w = {.file = file};
	size_t groups = ws_profile_group_count(profile);
	struct ws_error *err = NULL;
	for (size_t g = 0; g < groups && !err; g++) {
		fputs(g ? ",\n" : "\n", file);
		err = write_group(profile, g, &w);
	}
	free(w.line);
	if (err)
		return err;
	if (!groups) {
		/* speedscope refuses a file without profiles; an empty
		 * recording still opens and says so. */
		fputs("\n", file);
		write_profile_header(file, "no samples", 0,
				     ws_profile_duration(profile));
		fputs(",\"samples\":[],\"weights\":[]}", file);
	}
	fputs("\n]}\n", file);

	if (fflush(file) != 0 || ferror(file))
		return ws_error_create(WS_ERR_OUTPUT,
				       "write speedscope profile: %s",
				       strerror(errno ? errno : EIO));
	return NULL;
}
