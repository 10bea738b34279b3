/*
 * descriptor_edit: editing runtime descriptors for the tests (see
 * descriptor_edit.h).
 */
#include "descriptor_edit.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e_util.h"

cJSON *de_load(const char *path)
{
	cJSON *root = e2e_load_json(path);

	cr_assert_not_null(root, "cannot read %s", path);
	return root;
}

/* The object at a dotted path. */
static cJSON *object_at(cJSON *root, const char *path)
{
	char copy[128];
	cJSON *node = root;

	if (!path[0])
		return root;
	snprintf(copy, sizeof(copy), "%s", path);
	for (char *save, *key = strtok_r(copy, ".", &save); key;
	     key = strtok_r(NULL, ".", &save)) {
		node = cJSON_GetObjectItemCaseSensitive(node, key);
		cr_assert_not_null(node, "the descriptor has no %s", path);
	}
	return node;
}

void de_set_string(cJSON *root, const char *path, const char *key,
		   const char *value)
{
	cJSON *obj = object_at(root, path);

	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	cr_assert_not_null(cJSON_AddStringToObject(obj, key, value));
}

void de_delete(cJSON *root, const char *path, const char *key)
{
	cJSON *obj = object_at(root, path);

	cr_assert(cJSON_HasObjectItem(obj, key), "no %s.%s to delete", path, key);
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
}

const char *de_text(const cJSON *root)
{
	char *text = cJSON_Print(root);

	cr_assert_not_null(text);
	const char *copy = e2e_strndup(text, strlen(text));
	free(text);
	return copy;
}

const char *de_write(const cJSON *root, const char *name)
{
	const char *path = e2e_path(e2e_tmpdir(), name);
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write %s", path);
	fputs(de_text(root), f);
	cr_assert_eq(fclose(f), 0);
	return path;
}
