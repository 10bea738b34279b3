/*
 * profile_fixture: the hand-made recordings of profile_fixture.h.
 */
#include "profile_fixture.h"

#include <criterion/criterion.h>
#include <stdlib.h>

const struct ws_frame pf_leaf_to_main[3] = {
	{.address = 0x401030, .function = "leaf", .file = "a.c", .line = 30},
	{.address = 0x401020, .function = "middle", .file = "a.c", .line = 20},
	{.address = 0x401010, .function = "main", .file = "a.c", .line = 10},
};

const struct ws_frame pf_other_to_main[3] = {
	{.address = 0x7f0000000010, .module = "libc.so.6",
	 .module_offset = 0x10},
	{.address = 0x401050, .function = "other", .file = "b.c", .line = 5},
	{.address = 0x401010, .function = "main", .file = "a.c", .line = 10},
};

const char *const pf_nasty_names[] = {
	"quote\"backslash\\slash/",
	"ctl\x01\x1f\x7f tab\t nl\n cr\r bs\b ff\f",
	"semi;colon;and\nnewline",
	"utf8 h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80",
	"operator<<(std::ostream&, T const&) [with T = int]",
};
const size_t pf_nasty_count = sizeof(pf_nasty_names) / sizeof(pf_nasty_names[0]);

struct ws_profile *pf_create(enum ws_group_by group_by)
{
	struct ws_profile *profile = NULL;
	struct ws_error *err = ws_profile_create(group_by, 0.01, &profile);
	cr_assert_null(err, "create: %s", err ? err->message : "");
	return profile;
}

void pf_add(struct ws_profile *profile, const struct ws_sample *sample)
{
	struct ws_error *err = ws_profile_add(profile, sample);
	cr_assert_null(err, "add: %s", err ? err->message : "");
}

double pf_fill(struct ws_profile *profile)
{
	double total = 0;
	struct ws_frame nasty[sizeof(pf_nasty_names) / sizeof(pf_nasty_names[0]) + 1];
	size_t nnasty = pf_nasty_count;
	for (size_t i = 0; i < nnasty; i++)
		nasty[i] = (struct ws_frame){.function = pf_nasty_names[i],
					     .file = "weird \"file\".c",
					     .line = (int)i + 1};
	nasty[nnasty] = pf_leaf_to_main[2];
	for (int i = 0; i < 300; i++) {
		struct ws_sample s = {
			.task_id = (uint64_t)(i % 3),
			.task_name = i % 3 == 1 ? "worker \"1\"" : NULL,
			.thread = 100 + i % 3,
			.weight = 0.01,
			.time = (i / 3) * 0.01,
		};
		switch (i % 5) {
		case 0:
			s.frames = pf_leaf_to_main;
			s.nframes = 3;
			s.state = WS_STATE_RUNNING;
			break;
		case 1:
			s.frames = pf_other_to_main;
			s.nframes = 3;
			s.state = WS_STATE_WAITING;
			s.wait_reason = "futex";
			break;
		case 2:
			s.frames = nasty;
			s.nframes = nnasty + 1;
			s.state = WS_STATE_SYSCALL;
			s.weight = 0.02;
			break;
		case 3:
			s.state = WS_STATE_RUNNABLE;
			s.error = "task exited";
			break;
		default:
			s.frames = pf_leaf_to_main + 1;
			s.nframes = 2;
			s.state = WS_STATE_WAITING;
			s.wait_reason = "semi;colon";
		}
		pf_add(profile, &s);
		total += s.weight;
	}
	ws_profile_set_title(profile, "wallspy record ./app \"x\"");
	ws_profile_set_duration(profile, 1.0);
	return total;
}

char *pf_write_to_memory(const struct ws_profile *profile,
			 struct ws_error *(*writer)(const struct ws_profile *,
						    FILE *))
{
	char *text = NULL;
	size_t size = 0;
	FILE *file = open_memstream(&text, &size);
	cr_assert_not_null(file);
	struct ws_error *err = writer(profile, file);
	cr_assert_null(err, "writer: %s", err ? err->message : "");
	cr_assert_eq(fclose(file), 0);
	return text;
}
