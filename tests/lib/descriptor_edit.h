/*
 * descriptor_edit: bad runtime descriptors made from good ones. A test
 * loads a fixture's real descriptor (the .wallspy.json files of fixtures/greenrt) and
 * changes one thing, so the tests follow the descriptor as it evolves.
 * Trees and texts are freed by e2e_cleanup; any failure fails the test.
 */
#ifndef DESCRIPTOR_EDIT_H
#define DESCRIPTOR_EDIT_H

#include <cJSON.h>

/* greenrt's descriptors: the embedded one (an array of task pointers) and
 * the linked-list form. */
#define GREENRT_DESCRIPTOR WS_SOURCE_DIR "/fixtures/greenrt/greenrt.wallspy.json"
#define GREENRT_LIST_DESCRIPTOR \
	WS_SOURCE_DIR "/fixtures/greenrt/greenrt-list.wallspy.json"

/* The descriptor file at path as a tree. */
cJSON *de_load(const char *path);

/* Sets (adds or replaces) string `key` in the object at the dotted path
 * ("task.state.values"; "" = the top). */
void de_set_string(cJSON *root, const char *path, const char *key,
		   const char *value);

/* Deletes `key`, which must exist, from the object at path. */
void de_delete(cJSON *root, const char *path, const char *key);

/* The tree as JSON text. */
const char *de_text(const cJSON *root);

/* The tree written to a fresh temporary directory as `name`; its path. */
const char *de_write(const cJSON *root, const char *name);

#endif
