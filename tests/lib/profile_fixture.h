/*
 * profile_fixture: small in-memory recordings for the tests of the profile
 * and of its writers (tests/unit/profile, tests/unit/output), built by hand
 * through ws_profile_add: no process is traced. Fails the test on any
 * error.
 */
#ifndef PROFILE_FIXTURE_H
#define PROFILE_FIXTURE_H

#include <stddef.h>
#include <stdio.h>

#include "ws_profile.h"

/* leaf <- middle <- main, in a.c (innermost first, as unwinders give it). */
extern const struct ws_frame pf_leaf_to_main[3];
/* An unnamed libc frame <- other (b.c) <- main. */
extern const struct ws_frame pf_other_to_main[3];
/* Names that need every kind of JSON escaping, and folded's separators. */
extern const char *const pf_nasty_names[];
extern const size_t pf_nasty_count;

/* A profile grouped by group_by at 100 Hz (0.01 s a tick). */
struct ws_profile *pf_create(enum ws_group_by group_by);

/* ws_profile_add, asserted. */
void pf_add(struct ws_profile *profile, const struct ws_sample *sample);

/* A small recording: 300 samples of 3 threads (task 1 named `worker "1"`)
 * cycling through five kinds (i % 5: running leaf;middle;main, waiting on
 * "futex" in other_to_main, a syscall in the nasty names weighing 0.02, a
 * failure "task exited", waiting on "semi;colon" in middle;main), titled
 * `wallspy record ./app "x"`, 1 s long. Returns the total weight added. */
double pf_fill(struct ws_profile *profile);

/* Runs a writer into memory; returns its text (free it). */
char *pf_write_to_memory(const struct ws_profile *profile,
			 struct ws_error *(*writer)(const struct ws_profile *,
						    FILE *));

#endif
