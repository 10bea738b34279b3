/*
 * The runtime descriptor's resolved form, shared by its parser
 * (runtime_descriptor_parse.c: JSON to offsets and paths), the adapter
 * (runtime_descriptor.c: a task, live rereads; runtime_descriptor_walk.c:
 * the registry walk) and the code that finds a target's descriptor
 * (runtime_descriptor_find.c); then the adapter's state, shared by its two
 * files. Private to those files and their tests: the walker and the parser
 * run against any Dwfl and memory reader, so tests (and fuzzers) drive
 * them over an in-memory image (ws_descriptor_runtime_create).
 */
#ifndef WS_RUNTIME_DESCRIPTOR_INTERNAL_H
#define WS_RUNTIME_DESCRIPTOR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ws_dwtype.h"
#include "ws_error.h"
#include "ws_runtime.h"

enum layout {
	LAYOUT_LIST,           /* root -> first task, `next` to the next, null ends */
	LAYOUT_RING,           /* the same, ends when `next` is the first again */
	LAYOUT_SENTINEL_RING,  /* root is a header; ends back at the header */
	LAYOUT_ARRAY,          /* root is an array of task structs */
	LAYOUT_POINTER_ARRAY,  /* root is an array of (or pointer to) task pointers */
};

enum { MAX_ROOTS = 16, MAX_REASON_VALUES = 64 };

struct value_map {
	size_t n;
	int64_t value[MAX_REASON_VALUES];
	const char *name[MAX_REASON_VALUES]; /* state or wait-reason name */
};

/* A global and a path from it ("__pth_WQ.q_head", "Fiber::fibers->head"):
 * where a registry, a count or the current task is. */
struct gref {
	struct ws_dwobj var;       /* the variable, or a declared symbol */
	struct ws_dwpath path;     /* nhops 0: the variable itself */
	struct ws_dwtype type;     /* of what the path ends at */
	enum ws_dwtype_kind kind;
	uint64_t size;             /* WS_DWTYPE_SIZE_UNKNOWN if unknown */
};

/* One place tasks are found. */
struct root {
	enum layout layout;
	struct gref head;          /* lists: the first pointer; sentinel: the header; arrays: the array or its pointer */
	bool has_count;
	struct gref count;
	struct ws_dwpath next;     /* lists: in the task, or in its link member */
	struct ws_dwpath header_next; /* sentinel ring: `next` in the header */
	uint64_t link;             /* offset of the member list pointers point at */
	char where[32];            /* "registry.roots[2]", for messages */
};

/* One saved register of a parked task: a member's value, demangled
 * (glibc's setjmp), or the word at (value + at), plus `add`. */
struct reg_spec {
	int regno;
	struct ws_dwpath member;
	bool mangled;
	bool has_at;
	int64_t at, add;
};

enum stack_kind { STACK_NONE, STACK_LO_HI, STACK_BASE_SIZE };
enum name_kind { NAME_NONE, NAME_CHARS, NAME_LENGTH_PREFIXED };
enum reason_kind { REASON_NONE, REASON_STRING, REASON_VALUES, REASON_BITS };

struct descriptor {
	int version;               /* 1 or 2 */
	char *name;
	char *source;              /* where it came from, for messages */
	char *root_function, *root_file;
	char *detect_symbol;       /* shipped descriptors: the runtime's symbol */
	struct root roots[MAX_ROOTS];
	size_t nroots;
	bool has_current;
	struct gref current;       /* the task on the CPU (a pointer) */
	uint64_t max_tasks;        /* per tick */
	struct ws_dwtype task_type;
	uint64_t task_size;
	bool has_id, has_entry, has_worker, has_switches;
	struct ws_dwpath id, entry, worker, switches, state;
	unsigned switches_bits;  /* the width of switches */
	enum name_kind name_kind;
	struct ws_dwpath name_path; /* chars: the member; prefixed: the pointer */
	struct ws_dwpath name_length, name_bytes; /* prefixed: in the pointee */
	struct value_map states;   /* value -> state name ("done" skips) */
	enum reason_kind reason_kind;
	struct ws_dwpath reason;
	struct value_map reasons;  /* values, or bits */
	struct reg_spec regs[WS_NREGS];
	size_t nregs;
	bool uses_guard;           /* a register is pointer-mangled */
	bool has_frame;            /* registers saved on the stack (`at`) */
	int64_t frame_lo, frame_hi; /* the bytes around their base read at once */
	enum stack_kind stack_kind;
	struct ws_dwpath stack_a, stack_b; /* lo/hi or base/size */
	/* Workers: which OS thread runs which task. */
	bool has_workers;
	struct gref workers;       /* an array of worker structs */
	bool has_worker_count;
	struct gref worker_count;
	struct ws_dwtype worker_type;
	uint64_t worker_size;
	struct ws_dwpath worker_tid, worker_current;
	/* Format 2 without workers: every task runs on the process's main
	 * thread (Pth, Crystal without -Dpreview_mt). */
	bool single_thread;
};

/* Parses descriptor `text` into d (zeroed, d->source set by the caller),
 * resolving every DWARF name through prog; reads no target memory.
 * Errors name the JSON path and the DWARF name: WS_ERR_USAGE for a
 * malformed descriptor (exit 2), WS_ERR_NO_DEBUGINFO for a name the DWARF
 * lacks (exit 7). */
struct ws_error *ws_descriptor_parse(struct descriptor *d,
				     struct ws_dwtype_program *prog,
				     const char *text);

/* Frees what ws_descriptor_parse allocated in d (not d itself). */
void ws_descriptor_deinit(struct descriptor *d);

/* The name a value maps to, or NULL. */
const char *ws_descriptor_map_lookup(const struct value_map *map,
				     int64_t value);

/* The runtime over the modules of `dwfl` (reported; borrowed), reading
 * memory through `reader` (copied; NULL: the memory of process
 * `target->pid`). `target->pid` 0 means no process (an in-memory image:
 * batched reads go through the reader one by one, and no thread is known;
 * `target` may have no threads). Warnings (a count clamped, a registry cut
 * short) go to `warn` once each, or to stderr when NULL. */
typedef void (*ws_descriptor_warn_fn)(void *arg, const char *message);
struct ws_error *ws_descriptor_runtime_create(const char *text,
					      const char *source,
					      struct ws_target *target,
					      Dwfl *dwfl,
					      const struct ws_memory_reader *reader,
					      ws_descriptor_warn_fn warn,
					      void *warn_arg,
					      struct ws_runtime **ret);

/* Reads a whole file (a descriptor) into a NUL-terminated string. */
struct ws_error *ws_descriptor_read_file(const char *path, char **ret);


/* ---- the adapter's state (runtime_descriptor.c and _walk.c) ---- */

#include "ws_maps.h"
#include "ws_read_cache.h"
#include "ws_remote_memory.h"
#include "ws_target.h"

struct worker_info {
	uint64_t address;          /* of the worker struct */
	pid_t tid;
	uint64_t current;          /* task address or 0 */
	bool busy;                 /* a task read since runs on it */
	bool seen;                 /* `current`'s record was read since */
};

/* A slot of an array registry: the task struct's address and, for arrays
 * of pointers, where that pointer was read (0: none). */
struct slot {
	uint64_t address;
	uint64_t slot;
};

/* The tasks a tick has reached, by address, with a bit per root that
 * reached them: a task is listed once, and a root that reaches a task
 * twice has a cycle. Open addressing, stamped per tick (no clearing). */
struct visited {
	uint64_t *key;
	uint32_t *stamp;
	uint32_t *roots;           /* bit r: root r; bit MAX_ROOTS: current */
	size_t mask, count;
	uint32_t tick;
};

/* Task names and wait reasons of a tick: 64 KiB blocks that never move,
 * so the strings stay valid until the next list. */
enum { ARENA_BLOCK = 65536 };
struct arena {
	char **block;
	size_t nblocks, capacity;
	size_t current, used;      /* the block being filled, bytes in it */
};

/* What a warning is about: each is said once per run. */
enum warning {
	WARN_CUT, WARN_CYCLE, WARN_LONG, WARN_CLAMPED, WARN_UNREADABLE,
	WARN_CURRENT, WARN_GUARD, WARN_COUNT, WARN_MAX
};

/* Strings read from the target by address (names, wait reasons): they are
 * mostly literals or immutable. At most CACHE_MAX between ticks. */
enum { CACHE_MAX = 4096, TEXT_MAX = 64 };

struct state {
	struct ws_runtime_caps caps;
	struct descriptor d;
	struct ws_dwtype_program *prog;
	struct ws_memory_reader reader; /* through `blocks` when it exists */
	struct ws_read_cache *blocks;   /* on while a list is walked */
	pid_t pid;                 /* 0: an in-memory image */
	ws_descriptor_warn_fn warn;
	void *warn_arg;
	uint32_t warned;           /* bit per enum warning */
	/* glibc's pointer guard (mangled setjmp registers) */
	bool guard_known;
	uint64_t guard;
	/* the main thread's stack, for a task without bounds it runs */
	uint64_t start_stack;      /* /proc/PID/stat startstack; 0: unknown */
	uint64_t main_lo, main_hi;
	struct ws_maps maps;
	bool maps_reloaded;        /* this tick */
	/* per tick */
	uint64_t current;          /* the descriptor's current task, 0: none */
	uint8_t *buf;              /* one task struct */
	uint8_t frame[8192 + 16];  /* registers saved around a stack pointer */
	struct arena strings;
	struct visited visited;
	struct worker_info *workers;
	size_t nworkers, workers_capacity;
	struct { uint64_t address; char *text; } *cache;
	size_t cache_n, cache_capacity;
	char idle_names[64][24];
	/* array registries: the slots of a tick, struct copies */
	struct slot *slots;
	size_t slots_capacity;
	uint64_t *pointers;        /* a pointer array's slots, as read */
	size_t pointers_capacity;
	uint64_t table[MAX_ROOTS]; /* each root's array, as last read */
	uint64_t table_len[MAX_ROOTS]; /* and its slots then */
	uint8_t *bulk;
	size_t bulk_capacity;
};

/* Memory of the target through the state's reader; batched reads with
 * process_vm_readv when there is a process. */
struct ws_error *desc_mem_read(struct state *s, uint64_t address, void *buf,
			       size_t size);
void desc_mem_readv(struct state *s, struct ws_remote_range *ranges, size_t n);
bool desc_readable(struct state *s, uint64_t address);
/* A global expression's address, and its value as an integer. */
struct ws_error *desc_gref_address(struct state *s, const struct gref *g,
				   uint64_t *ret);
struct ws_error *desc_gref_uint(struct state *s, const struct gref *g,
				uint64_t *ret);
/* Says `fmt` on the warning hook, once per kind and run. */
void desc_warn_once(struct state *s, enum warning kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A path's value in the task at `address`, whose copy is `tb`. */
struct ws_error *desc_task_uint(struct state *s, const struct ws_dwpath *path,
				uint64_t address, const uint8_t *tb,
				uint64_t *ret);
/* Strings (runtime_descriptor_strings.c), valid until the next tick's
 * desc_arena_reset: a char array or char pointer member `path` of the
 * task; a length-prefixed string object at `address` (Crystal's String);
 * wait-reason bits as "time|msg". NULL when unreadable or out of room. */
void desc_arena_reset(struct arena *a);
void desc_string_cache_trim(struct state *s);
const char *desc_task_string(struct state *s, const struct ws_dwpath *path,
			     uint64_t address, const uint8_t *tb);
const char *desc_target_prefixed(struct state *s, uint64_t address);
const char *desc_reason_bits(struct state *s, uint64_t v);
/* Whether the copy `tb` of the struct at `address` holds a task to list
 * (its state is readable and not "done"), and the state's name (NULL: a
 * value the descriptor does not map). Cheap: one member. */
bool desc_task_listed(struct state *s, uint64_t address, const uint8_t *tb,
		      const char **state_name);
/* Adds the task decoded from the copy `tb` of the struct at `address`, if
 * it holds one (*added: desc_task_listed). */
struct ws_error *desc_add_task(struct state *s, struct ws_target *target,
			       const struct ws_read_context *context,
			       uint64_t address, const uint8_t *tb,
			       struct ws_task_list *out, bool *added);

/* The visited set (runtime_descriptor_walk.c). */
void desc_visited_start(struct visited *v);
bool desc_visited_mark(struct visited *v, uint64_t key, unsigned root,
		       uint32_t *was);
bool desc_visited_has(const struct visited *v, uint64_t key);
void desc_visited_free(struct visited *v);

/* Walks every root and the current task into `out` (visited set started
 * by the caller). Errors: out of memory; in a live tick, a registry that
 * did not hold together. */
struct ws_error *desc_walk(struct state *s, struct ws_target *target,
			   const struct ws_read_context *context,
			   struct ws_task_list *out);

#endif
