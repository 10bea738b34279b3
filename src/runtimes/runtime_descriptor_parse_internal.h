/*
 * The descriptor parser's own state and helpers, shared by its two files:
 * runtime_descriptor_parse.c (the JSON, DWARF paths and globals, value
 * maps, the registry) and runtime_descriptor_parse_task.c (a task's
 * fields: name, state, wait reason, registers, stack; the workers). Private
 * to them: everyone else calls ws_descriptor_parse.
 */
#ifndef WS_RUNTIME_DESCRIPTOR_PARSE_INTERNAL_H
#define WS_RUNTIME_DESCRIPTOR_PARSE_INTERNAL_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime_descriptor_internal.h"

enum { MAX_SYMBOLS = 16 };

struct parser {
	struct descriptor *d;
	struct ws_dwtype_program *prog;
	/* Format 2's "symbols": ELF symbols typed from DWARF. */
	size_t nsymbols;
	char *symbol_name[MAX_SYMBOLS];
	struct ws_dwobj symbol[MAX_SYMBOLS];
};


/* `cause` wrapped with the descriptor and JSON path it came from ($.path);
 * a DWARF path it could not follow becomes a usage error. */
struct ws_error *dparse_err(const struct descriptor *d, const char *path,
			    struct ws_error *cause);

/* A usage error at JSON path `path` of the descriptor. */
struct ws_error *dparse_msg(const struct descriptor *d, const char *path,
			    const char *msg);

/* obj[key] when it is a string, else NULL. */
const char *dparse_string(const cJSON *obj, const char *key);

/* obj[key] (case-sensitive), or NULL. */
const cJSON *dparse_get(const cJSON *obj, const char *key);

/* An integer given as a JSON number or a string ("0x38", "-8"). */
bool dparse_integer(const cJSON *v, int64_t *ret);

/* A copy of s (NULL for NULL); sets *nomem when out of memory. */
char *dparse_strdup(const char *s, bool *nomem);

/* A member path from `type`, resolved (ws_dwtype_path); errors at jpath. */
struct ws_error *dparse_path(struct parser *s, const char *jpath,
			     const struct ws_dwtype *type,
			     const char *text, struct ws_dwpath *ret);

/* An optional member path obj[key]: absent is fine (*has false), present
 * must resolve. */
struct ws_error *dparse_optional_path(struct parser *s, const cJSON *obj,
				      const char *key, const char *jpath,
				      const struct ws_dwtype *type, bool *has,
				      struct ws_dwpath *ret);

/* Errors unless field f is an integer or a pointer. */
struct ws_error *dparse_require_integer(struct parser *s, const char *jpath,
					const struct ws_dwfield *f);

/* Errors unless field f is a pointer. */
struct ws_error *dparse_require_pointer(struct parser *s, const char *jpath,
					const struct ws_dwfield *f);

/* A global expression: a variable (or declared symbol) and a member path
 * from it ("__pth_WQ.q_head", "Fiber::fibers->head"). */
struct ws_error *dparse_gref(struct parser *s, const cJSON *v,
			     const char *jpath, struct gref *ret);

/* A value map {"N": "name"} of `field` (keys may name enumerators), each
 * name one of `allowed` when given. */
struct ws_error *dparse_values(struct parser *s, const cJSON *values,
			       const char *jpath,
			       const struct ws_dwfield *field,
			       const char *const *allowed,
			       struct value_map *map);

/* "task": how to decode one task (runtime_descriptor_parse_task.c). */
struct ws_error *dparse_task(struct parser *s, const cJSON *root);

/* "workers": which OS thread runs which task (runtime_descriptor_parse_task.c). */
struct ws_error *dparse_workers(struct parser *s, const cJSON *root);

#endif
