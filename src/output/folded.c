/*
 * Folded-stacks writer, the input of flamegraph.pl and inferno: one line
 * "root;...;leaf COUNT" per distinct stack (of names) of each group. COUNT
 * is the stack's wall time in ticks of the sampling interval (1/rate s),
 * rounded per line to the integer these tools read: task-seconds x rate in
 * merged groups, observed seconds x rate in a thread's or task's. With
 * every task sampled at every tick and no tick missed it is the number of
 * samples. Names are sanitized so the format stays parseable; file and
 * line are left out, as flamegraph.pl expects.
 */
#include "ws_folded.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct folded_writer {
	const struct ws_profile *profile;
	FILE *file;
	const char *group_name;  /* the root element, or NULL */
	double interval;
};

/* Writes a name with the folded format's separators taken out: ';' joins
 * frames and a line ends a stack, so neither may appear inside a frame.
 * Copies runs between separators with fwrite: a file can hold millions of
 * frame names, and putc per byte was most of the writer's time. */
static void write_name(FILE *file, const char *name)
{
	for (;;) {
		size_t run = strcspn(name, ";\n\r");
		fwrite(name, 1, run, file);
		name += run;
		if (!*name)
			return;
		putc(*name == ';' ? ':' : ' ', file);
		name++;
	}
}

static long long weight_to_count(double weight, double interval)
{
	double ticks = weight / interval;
	if (!(ticks >= 1))
		return 1; /* also NaN: every stored stack was seen at least once */
	if (ticks >= 9e18)
		return 9000000000000000000LL;
	return llround(ticks);
}

static struct ws_error *write_line(const uint32_t *stack, size_t depth,
				   double weight, void *arg)
{
	struct folded_writer *w = arg;
	bool first = true;
	if (w->group_name) {
		write_name(w->file, w->group_name);
		first = false;
	}
	for (size_t i = 0; i < depth; i++) {
		if (!first)
			putc(';', w->file);
		write_name(w->file, ws_profile_frame(w->profile, stack[i])->name);
		first = false;
	}
	fprintf(w->file, " %lld\n", weight_to_count(weight, w->interval));
	return NULL;
}

struct ws_error *ws_write_folded(const struct ws_profile *profile, FILE *file)
{
	errno = 0;
	struct folded_writer w = {
		.profile = profile,
		.file = file,
		.interval = ws_profile_interval(profile),
	};
	bool named_groups = ws_profile_group_by(profile) != WS_GROUP_ALL;
	size_t groups = ws_profile_group_count(profile);
	for (size_t g = 0; g < groups; g++) {
		w.group_name = named_groups ? ws_profile_group_name(profile, g)
					    : NULL;
		/* Time-ordered groups hold one stack many times, and frames
		 * of one name may differ by file or line: sum by names so
		 * each stack is one line, as the format's readers expect. */
		struct ws_error *err = ws_profile_visit_aggregated(
			profile, g, true, write_line, &w);
		if (err)
			return err;
	}
	if (fflush(file) != 0 || ferror(file))
		return ws_error_create(WS_ERR_OUTPUT,
				       "write folded stacks: %s",
				       strerror(errno ? errno : EIO));
	return NULL;
}
