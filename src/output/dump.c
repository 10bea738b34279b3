/*
 * Text and JSON renderings of one tick (see ws_dump.h). Both stream with
 * stdio: a dump of 100k tasks never becomes a tree in memory. The order
 * (main thread first, then ids) and the groups (runs of equal stacks in a
 * second index sorted by stack) are computed here, over indexes into the
 * tick; the tick itself is never reordered.
 */
#include "ws_dump.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ws_grow.h"
#include "ws_json_out.h"
#include "ws_symbols.h"

/* A text group header lists at most this many of its tasks. */
enum { GROUP_IDS_SHOWN = 10 };

/* ---- order and groups ---- */

/* A group: by_stack[start .. start + count) are its tasks' positions. */
struct run {
	size_t start, count;
};

/* The tasks in output order, and the groups of equal stacks. */
struct layout {
	const struct ws_tick *tick;
	pid_t pid;
	size_t *order;		/* tick indexes: main thread first, then id */
	size_t *by_stack;	/* positions in order[], sorted by stack, then
				 * position: a group's tasks are a run */
	struct run *groups;	/* sorted by their first task's position */
	size_t ngroups;
};

/* The process's own main thread: the OS thread whose tid is the pid. */
static bool is_main_thread(const struct ws_task *t, pid_t pid)
{
	return t->thread == pid && t->id == (uint64_t)pid;
}

static int compare_strings(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

static int compare_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

/* Frames compare as they print: a named frame by function, file:line and
 * inlined; an unnamed one by module and offset, else by address. */
static int compare_frames(const struct ws_frame *a, const struct ws_frame *b)
{
	int c = compare_strings(a->function, b->function);
	if (!c)
		c = compare_strings(a->file, b->file);
	if (!c)
		c = (a->line > b->line) - (a->line < b->line);
	if (!c)
		c = (int)a->inlined - (int)b->inlined;
	if (c || a->function)
		return c;
	if ((c = compare_strings(a->module, b->module)))
		return c;
	return compare_u64(a->module ? a->module_offset : a->address,
			   b->module ? b->module_offset : b->address);
}

/* Labels as pairs, compared key then value. */
static int compare_labels(const struct ws_task *x, const struct ws_task *y)
{
	int c = compare_u64(x->nlabels, y->nlabels);
	for (size_t i = 0; !c && i < 2 * x->nlabels; i++)
		c = compare_strings(x->labels[i], y->labels[i]);
	return c;
}

/* The creation site's frame: the go statement's caller. */
static const struct ws_frame *creator_frame(const struct ws_tick_task *tt)
{
	return tt->creator ? &tt->creator->frames[tt->creator->nframes - 1]
			   : NULL;
}

/* What a group shares: state, wait reason, being locked to a thread,
 * bubble, labels (as Go's debug=1 goroutine profile groups), error, frames,
 * creator. */
static int compare_stacks(const struct ws_tick *tick,
			  const struct ws_tick_task *a,
			  const struct ws_tick_task *b)
{
	const struct ws_task *x = a->task, *y = b->task;
	int c = (int)x->state - (int)y->state;
	if (!c)
		c = compare_strings(x->wait_reason, y->wait_reason);
	if (!c)
		c = (int)x->locked_to_thread - (int)y->locked_to_thread;
	if (!c)
		c = compare_strings(x->bubble_kind, y->bubble_kind);
	if (!c)
		c = compare_u64(x->bubble_id, y->bubble_id);
	if (!c)
		c = compare_labels(x, y);
	if (!c)
		c = compare_strings(a->error, b->error);
	if (!c)
		c = (int)a->not_started - (int)b->not_started;
	if (!c)
		c = compare_u64(a->nframes, b->nframes);
	for (size_t k = 0; !c && k < a->nframes; k++)
		c = compare_frames(&tick->frames[a->first_frame + k],
				   &tick->frames[b->first_frame + k]);
	if (c || (!a->creator && !b->creator))
		return c;
	if (!a->creator || !b->creator)
		return (a->creator != NULL) - (b->creator != NULL);
	return compare_frames(creator_frame(a), creator_frame(b));
}

/* qsort takes no argument: the layout being sorted. */
static const struct layout *sorting;

static int compare_order(const void *a, const void *b)
{
	size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
	const struct ws_task *x = sorting->tick->tasks[ia].task;
	const struct ws_task *y = sorting->tick->tasks[ib].task;
	bool mx = is_main_thread(x, sorting->pid);
	bool my = is_main_thread(y, sorting->pid);
	if (mx != my)
		return mx ? -1 : 1;
	int c = compare_u64(x->id, y->id);
	return c ? c : compare_u64(ia, ib);
}

static int compare_by_stack(const void *a, const void *b)
{
	size_t pa = *(const size_t *)a, pb = *(const size_t *)b;
	const struct ws_tick *tick = sorting->tick;
	int c = compare_stacks(tick, &tick->tasks[sorting->order[pa]],
			       &tick->tasks[sorting->order[pb]]);
	return c ? c : compare_u64(pa, pb);
}

static int compare_groups(const void *a, const void *b)
{
	const struct run *x = a, *y = b;
	return compare_u64(sorting->by_stack[x->start],
			   sorting->by_stack[y->start]);
}

static void layout_free(struct layout *l)
{
	ws_free_large(l->order);  /* by_stack and groups with it */
}

/* Orders the tick's tasks and, with `group`, finds the groups (else each
 * task is a group of its own). */
static bool layout_init(struct layout *l, const struct ws_tick *tick,
			pid_t pid, bool group)
{
	size_t n = tick->ntasks;
	*l = (struct layout){ .tick = tick, .pid = pid };
	/* One block (ws_alloc_large: 10k tasks' indexes are 320 KB of fresh
	 * pages otherwise). */
	size_t entry = 2 * sizeof(*l->order) + sizeof(*l->groups);
	if (n + 1 > SIZE_MAX / entry)
		return false;
	uint8_t *block = ws_alloc_large((n + 1) * entry);
	if (!block)
		return false;
	l->order = (size_t *)block;
	l->by_stack = l->order + n + 1;
	l->groups = (struct run *)(l->by_stack + n + 1);
	for (size_t i = 0; i < n; i++)
		l->order[i] = l->by_stack[i] = i;
	sorting = l;
	qsort(l->order, n, sizeof(*l->order), compare_order);
	if (group)
		qsort(l->by_stack, n, sizeof(*l->by_stack), compare_by_stack);
	for (size_t i = 0; i < n; i++) {
		if (group && i > 0 &&
		    compare_stacks(tick, &tick->tasks[l->order[l->by_stack[i - 1]]],
				   &tick->tasks[l->order[l->by_stack[i]]]) == 0) {
			l->groups[l->ngroups - 1].count++;
			continue;
		}
		l->groups[l->ngroups++] = (struct run){ .start = i, .count = 1 };
	}
	qsort(l->groups, l->ngroups, sizeof(*l->groups), compare_groups);
	sorting = NULL;
	return true;
}

static size_t group_size(const struct layout *l, size_t g)
{
	return l->groups[g].count;
}

/* The tick task of the k-th task of group g (output order within it). */
static const struct ws_tick_task *group_task(const struct layout *l, size_t g,
					     size_t k)
{
	return &l->tick->tasks[l->order[l->by_stack[l->groups[g].start + k]]];
}

/* ---- text ---- */

/* "[waiting: chan receive]"; a state the adapter does not know says
 * which: "[unknown state 12]"; ", locked to thread" and ", synctest
 * bubble 3" as Go's traceback says them. */
static void write_state(FILE *f, const struct ws_task *t)
{
	fprintf(f, "[%s", ws_state_name(t->state));
	if (t->wait_reason)
		fprintf(f, "%s%s", t->state == WS_STATE_UNKNOWN ? " " : ": ",
			t->wait_reason);
	if (t->locked_to_thread)
		fputs(", locked to thread", f);
	if (t->bubble_kind)
		fprintf(f, ", %s %" PRIu64, t->bubble_kind, t->bubble_id);
	fputc(']', f);
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

static void write_labels_line(FILE *f, const struct ws_task *t)
{
	if (!t->nlabels)
		return;
	fputs("    labels: ", f);
	write_labels(f, t);
	fputc('\n', f);
}

static void write_task_header(FILE *f, const char *noun,
			      const struct ws_task *t)
{
	fprintf(f, "%s %" PRIu64, noun, t->id);
	if (t->name)
		fprintf(f, " \"%s\"", t->name);
	fputc(' ', f);
	write_state(f, t);
	if (t->thread)
		fprintf(f, " thread %d", (int)t->thread);
	fputc('\n', f);
	write_labels_line(f, t);
}

/* Whether every task of group g has the name of its first. */
static bool group_shares_name(const struct layout *l, size_t g)
{
	const char *name = group_task(l, g, 0)->task->name;
	for (size_t k = 1; k < group_size(l, g); k++)
		if (compare_strings(group_task(l, g, k)->task->name, name))
			return false;
	return true;
}

/* `N tasks "NAME" [STATE]: ID, ID, ... and M more` ("goroutines" for
 * Go), the name once when all share it, else after each id. */
static void write_group_header(FILE *f, const char *noun,
			       const struct layout *l, size_t g)
{
	size_t n = group_size(l, g);
	bool shared = group_shares_name(l, g);
	const struct ws_task *first = group_task(l, g, 0)->task;
	fprintf(f, "%zu %ss ", n, noun);
	if (shared && first->name)
		fprintf(f, "\"%s\" ", first->name);
	write_state(f, first);
	fputc(':', f);
	for (size_t k = 0; k < n && k < GROUP_IDS_SHOWN; k++) {
		const struct ws_task *t = group_task(l, g, k)->task;
		fprintf(f, "%s %" PRIu64, k ? "," : "", t->id);
		if (!shared && t->name)
			fprintf(f, " \"%s\"", t->name);
	}
	if (n > GROUP_IDS_SHOWN)
		fprintf(f, " and %zu more", n - GROUP_IDS_SHOWN);
	fputc('\n', f);
	write_labels_line(f, first);
}

/* The text of frame ranges already written (tasks with equal stacks share
 * one range of the tick's frames, see ws_tick_task): each range is
 * formatted once into `text` and copied from there for every other task
 * that has it, so a dump's cost per task does not grow with the depth of
 * stacks it has seen. Open addressing by first frame; off: out of memory,
 * every range formatted each time. */
struct frames_memo {
	struct memo_slot {
		size_t first_frame, nframes;  /* nframes 0: empty */
		size_t start, length;         /* in text */
	} *slots;
	size_t size, used;
	FILE *text;
	char *bytes;
	size_t nbytes;
	bool dirty;  /* written since the last flush */
	bool off;
};

static void memo_init(struct frames_memo *m)
{
	*m = (struct frames_memo){0};
	m->text = open_memstream(&m->bytes, &m->nbytes);
	m->off = m->text == NULL;
}

static void memo_deinit(struct frames_memo *m)
{
	if (m->text)
		fclose(m->text);
	free(m->bytes);
	free(m->slots);
}

/* The slot of a range, or of where it goes; NULL when the memo is off or
 * cannot grow. */
static struct memo_slot *memo_slot(struct frames_memo *m, size_t first_frame,
				   size_t nframes)
{
	if (m->off)
		return NULL;
	if ((m->used + 1) * 2 > m->size) {
		size_t size = m->size ? 2 * m->size : 1024;
		struct memo_slot *slots = calloc(size, sizeof(*slots));
		if (!slots) {
			m->off = true;
			return NULL;
		}
		for (size_t i = 0; i < m->size; i++) {
			if (!m->slots[i].nframes)
				continue;
			size_t j = m->slots[i].first_frame & (size - 1);
			while (slots[j].nframes)
				j = (j + 1) & (size - 1);
			slots[j] = m->slots[i];
		}
		free(m->slots);
		m->slots = slots;
		m->size = size;
	}
	size_t mask = m->size - 1;
	size_t i = first_frame & mask;
	while (m->slots[i].nframes && (m->slots[i].first_frame != first_frame ||
				       m->slots[i].nframes != nframes))
		i = (i + 1) & mask;
	return &m->slots[i];
}

static void write_frames_text(FILE *f, const struct ws_tick *tick,
			      const struct ws_tick_task *tt)
{
	char name[128];
	for (size_t k = 0; k < tt->nframes; k++) {
		const struct ws_frame *fr = &tick->frames[tt->first_frame + k];
		fprintf(f, "    %s", ws_frame_display_name(fr, name, sizeof(name)));
		if (fr->file)
			fprintf(f, " (%s:%d)", fr->file, fr->line);
		else if (fr->function && fr->module)
			fprintf(f, " (%s+0x%" PRIx64 ")", fr->module,
				fr->module_offset);
		if (fr->inlined)
			fputs(" [inlined]", f);
		fputc('\n', f);
	}
}

/* write_frames_text through the memo. */
static void write_frames_memo(FILE *f, const struct ws_tick *tick,
			      const struct ws_tick_task *tt,
			      struct frames_memo *memo)
{
	struct memo_slot *slot = tt->nframes
		? memo_slot(memo, tt->first_frame, tt->nframes) : NULL;
	if (!slot) {
		write_frames_text(f, tick, tt);
		return;
	}
	if (!slot->nframes) {
		long start = ftell(memo->text);
		write_frames_text(memo->text, tick, tt);
		long end = ftell(memo->text);
		if (start < 0 || end < start || ferror(memo->text)) {
			memo->off = true;
			write_frames_text(f, tick, tt);
			return;
		}
		*slot = (struct memo_slot){
			.first_frame = tt->first_frame, .nframes = tt->nframes,
			.start = (size_t)start, .length = (size_t)(end - start)};
		memo->used++;
		memo->dirty = true;
	}
	/* The bytes are where the stream says only after a flush. */
	if (memo->dirty && fflush(memo->text) != 0) {
		memo->off = true;
		write_frames_text(f, tick, tt);
		return;
	}
	memo->dirty = false;
	fwrite(memo->bytes + slot->start, 1, slot->length, f);
}

/* One task's frames, or a group's (one_task false: its tasks' creators
 * differ, so no creator id is printed). */
static void write_stack_text(FILE *f, const struct ws_tick *tick,
			     const struct ws_tick_task *tt, bool one_task,
			     struct frames_memo *memo)
{
	char name[128];
	if (tt->error)
		fprintf(f, "    [failed to sample: %s]\n", tt->error);
	else if (tt->not_started)
		fputs("    [not started]\n", f);
	write_frames_memo(f, tick, tt, memo);
	const struct ws_frame *fr = creator_frame(tt);
	if (fr) {
		/* Like Go's traceback. */
		fprintf(f, "    created by %s",
			ws_frame_display_name(fr, name, sizeof(name)));
		if (one_task && tt->task->creator_id)
			fprintf(f, " in %s %" PRIu64, tick->task_noun,
				tt->task->creator_id);
		if (fr->file)
			fprintf(f, " (%s:%d)", fr->file, fr->line);
		fputc('\n', f);
	}
}

static void write_text_header(FILE *f, const struct ws_dump_info *info,
			      const struct layout *l)
{
	fprintf(f, "process %d: %s\n", (int)info->pid,
		info->command ? info->command : "?");
	fprintf(f, "executable %s, runtime %s, %zu tasks",
		info->executable ? info->executable : "?", info->runtime,
		l->tick->ntasks);
	if (info->group)
		fprintf(f, " in %zu stacks", l->ngroups);
	fprintf(f, ", held %.2f ms, took %.1f ms\n",
		(double)info->held_ns / 1e6, (double)info->took_ns / 1e6);
}

struct ws_error *ws_dump_write_text(FILE *f, const struct ws_dump_info *info,
				    const struct ws_tick *tick)
{
	struct layout l;
	if (!layout_init(&l, tick, info->pid, info->group))
		return &ws_error_nomem;
	write_text_header(f, info, &l);
	struct frames_memo memo;
	memo_init(&memo);
	for (size_t g = 0; g < l.ngroups; g++) {
		fputc('\n', f);
		const struct ws_tick_task *first = group_task(&l, g, 0);
		bool one = group_size(&l, g) == 1;
		if (one)
			write_task_header(f, tick->task_noun, first->task);
		else
			write_group_header(f, tick->task_noun, &l, g);
		write_stack_text(f, tick, first, one, &memo);
	}
	memo_deinit(&memo);
	layout_free(&l);
	if (ferror(f))
		return ws_error_create(WS_ERR_OUTPUT, "dump: write failed");
	return NULL;
}

/* ---- JSON ---- */

static void write_frames_json(FILE *f, const struct ws_tick *tick,
			      const struct ws_tick_task *tt)
{
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
	fputc(']', f);
}

static void write_state_json(FILE *f, const struct ws_tick_task *tt)
{
	fputs(", \"state\": ", f);
	ws_json_write_string(f, ws_state_name(tt->task->state));
	fputs(", \"wait_reason\": ", f);
	ws_json_write_string(f, tt->task->wait_reason);
	fputs(", \"error\": ", f);
	ws_json_write_string(f, tt->error);
	fprintf(f, ", \"not_started\": %s",
		tt->not_started ? "true" : "false");
	fprintf(f, ", \"locked_to_thread\": %s",
		tt->task->locked_to_thread ? "true" : "false");
	fputs(", \"bubble\": ", f);
	if (tt->task->bubble_kind) {
		fputs("{\"kind\": ", f);
		ws_json_write_string(f, tt->task->bubble_kind);
		fprintf(f, ", \"id\": %" PRIu64 "}", tt->task->bubble_id);
	} else {
		fputs("null", f);
	}
	fputs(", \"labels\": ", f);
	if (tt->task->nlabels)
		write_labels(f, tt->task);
	else
		fputs("null", f);
}

/* "created_by": the go statement's site and, where the runtime keeps
 * it, the creating task (one_task false: a group, whose tasks' creators
 * differ: null). */
static void write_created_by_json(FILE *f, const struct ws_tick_task *tt,
				  bool one_task)
{
	fputs(", \"created_by\": ", f);
	const struct ws_frame *cr = creator_frame(tt);
	if (!cr) {
		fputs("null", f);
		return;
	}
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
	if (one_task && tt->task->creator_id)
		fprintf(f, ", \"parent\": %" PRIu64 "}", tt->task->creator_id);
	else
		fputs(", \"parent\": null}", f);
}

static void write_task_json(FILE *f, const struct ws_tick *tick,
			    const struct ws_tick_task *tt)
{
	const struct ws_task *t = tt->task;
	fprintf(f, "{\"id\": %" PRIu64 ", \"name\": ", t->id);
	ws_json_write_string(f, t->name);
	if (t->thread)
		fprintf(f, ", \"thread\": %d", (int)t->thread);
	else
		fputs(", \"thread\": null", f);
	write_state_json(f, tt);
	write_frames_json(f, tick, tt);
	write_created_by_json(f, tt, true);
	fputc('}', f);
}

static void write_group_json(FILE *f, const struct layout *l, size_t g)
{
	size_t n = group_size(l, g);
	fprintf(f, "{\"count\": %zu, \"ids\": [", n);
	for (size_t k = 0; k < n; k++)
		fprintf(f, "%s%" PRIu64, k ? ", " : "",
			group_task(l, g, k)->task->id);
	fputc(']', f);
	write_state_json(f, group_task(l, g, 0));
	write_frames_json(f, l->tick, group_task(l, g, 0));
	write_created_by_json(f, group_task(l, g, 0), false);
	fputc('}', f);
}

struct ws_error *ws_dump_write_json(FILE *f, const struct ws_dump_info *info,
				    const struct ws_tick *tick)
{
	struct layout l;
	if (!layout_init(&l, tick, info->pid, info->group))
		return &ws_error_nomem;
	fprintf(f, "{\"pid\": %d, \"runtime\": ", (int)info->pid);
	ws_json_write_string(f, info->runtime);
	fputs(", \"executable\": ", f);
	ws_json_write_string(f, info->executable);
	fputs(", \"command\": ", f);
	ws_json_write_string(f, info->command);
	fprintf(f, ", \"task_count\": %zu, \"held_ms\": %.3f, \"took_ms\": %.3f",
		tick->ntasks, (double)info->held_ns / 1e6,
		(double)info->took_ns / 1e6);
	fputs(", \"tasks\": [", f);
	for (size_t i = 0; i < tick->ntasks; i++) {
		fputs(i ? ",\n " : "\n ", f);
		write_task_json(f, tick, &tick->tasks[l.order[i]]);
	}
	fputs("\n]", f);
	if (info->group) {
		fputs(", \"groups\": [", f);
		for (size_t g = 0; g < l.ngroups; g++) {
			fputs(g ? ",\n " : "\n ", f);
			write_group_json(f, &l, g);
		}
		fputs("\n]", f);
	}
	fputs("}\n", f);
	layout_free(&l);
	if (ferror(f))
		return ws_error_create(WS_ERR_OUTPUT, "dump: write failed");
	return NULL;
}
