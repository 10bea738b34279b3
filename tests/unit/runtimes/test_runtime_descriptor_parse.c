/*
 * Unit tests of runtime descriptor parsing (src/runtimes/
 * runtime_descriptor_parse.c, ws_descriptor_parse): greenrt's descriptors
 * resolved against greenrt_parked's DWARF, read offline from the fixture's
 * file (no process), through a ws_dwtype_program whose memory reader is an
 * empty in-memory image that counts reads: parsing resolves names, it reads
 * no target memory. The resolved offsets and sizes are checked against the
 * compiler's, from fixtures/greenrt/greenrt.h compiled into this test; the
 * state values against greenrt's enum. Bad descriptors are the fixture's
 * real one with one change (tests/lib/descriptor_edit) or files of
 * tests/data; each error has its kind (WS_ERR_USAGE: exit 2, a malformed
 * descriptor; WS_ERR_NO_DEBUGINFO: exit 7, a name the DWARF lacks) and one
 * line naming the descriptor, the JSON path and the missing name. How the
 * binary reports them (exit code, message, the target unharmed) is
 * tests/e2e/test_e2e_descriptor.c. The shipped descriptors (descriptors/)
 * are parsed against the real runtimes' fixtures (Pth's two builds,
 * Crystal), offline the same way: which register set resolves, which
 * registers are mangled or saved on the stack, at the offsets the
 * runtimes' own sources give.
 */
#include <criterion/criterion.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include "descriptor_edit.h"
#include "e2e_util.h"
#include "greenrt.h"
#include "runtime_descriptor_internal.h"
#include "ws_dwtype.h"

#define FIXTURE "greenrt/greenrt_parked"
#define DATA_DIR WS_SOURCE_DIR "/tests/data"
#define SOURCE "test.wallspy.json"

/* ---- the program over the fixture's DWARF, memory in an empty image ---- */

static Dwfl *dwfl;
static struct ws_dwtype_program *prog;
static unsigned long reads;

static struct ws_error *image_read(void *arg, uint64_t address, void *buf,
				   size_t size)
{
	(void)arg;
	(void)buf;
	reads++;
	return ws_error_create(WS_ERR_OTHER, "image: nothing at 0x%" PRIx64 "+%zu",
			       address, size);
}

static const Dwfl_Callbacks offline = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static void open_fixture(void)
{
	const char *path = e2e_fixture(FIXTURE);
	static const struct ws_memory_reader image = { image_read, NULL };

	dwfl = dwfl_begin(&offline);
	cr_assert_not_null(dwfl);
	cr_assert_not_null(dwfl_report_offline(dwfl, "greenrt_parked", path, -1),
			   "%s: %s", path, dwfl_errmsg(-1));
	cr_assert_eq(dwfl_report_end(dwfl, NULL, NULL), 0);
	struct ws_error *err = ws_dwtype_program_create(dwfl, &image, &prog);
	cr_assert_null(err, "%s", err ? err->message : "");
	reads = 0;
}

static void close_fixture(void)
{
	ws_dwtype_program_destroy(prog);
	prog = NULL;
	if (dwfl)
		dwfl_end(dwfl);
	dwfl = NULL;
	e2e_cleanup();
}

#define FIXTURE_OPTS .init = open_fixture, .fini = close_fixture, .timeout = 30

/* Parses text as descriptor SOURCE; NULL on success (d filled). */
static struct ws_error *parse(const char *text, struct descriptor *d)
{
	memset(d, 0, sizeof(*d));
	d->source = SOURCE;
	return ws_descriptor_parse(d, prog, text);
}

/* ---- good descriptors ---- */

static const struct reg_spec *reg(const struct descriptor *d, int regno)
{
	for (size_t i = 0; i < d->nregs; i++)
		if (d->regs[i].regno == regno)
			return &d->regs[i];
	return NULL;
}

#define GREG_OFFSET(r) \
	(offsetof(struct greenrt_task, ctx.uc_mcontext.gregs) + (r) * sizeof(greg_t))

/* What both greenrt descriptors resolve alike: the task's members and
 * registers (ucontext gregs by glibc's REG_* numbers, as DWARF numbers:
 * rip 16, rsp 7, rbp 6, rbx 3, r12-r15 12-15), states and workers. */
static void check_common(const struct descriptor *d)
{
	static const struct { int regno, greg; } regs[] = {
		{ 16, REG_RIP }, { 7, REG_RSP }, { 6, REG_RBP }, { 3, REG_RBX },
		{ 12, REG_R12 }, { 13, REG_R13 }, { 14, REG_R14 }, { 15, REG_R15 },
	};

	cr_assert_str_eq(d->name, "greenrt");
	cr_assert_str_eq(d->root_function, "greenrt_task_main");
	cr_assert_eq(d->task_size, sizeof(struct greenrt_task));
	cr_assert(d->has_id && d->name_kind == NAME_CHARS && d->has_entry &&
		  d->has_worker && d->stack_kind == STACK_LO_HI);
	cr_assert_eq(d->version, 1);
	cr_assert_eq(d->nroots, 1);
	cr_assert_not(d->single_thread, "format 1: no main-thread rule");
	/* No pointers: every path is one hop inside the task struct. */
	cr_assert_eq(d->id.nhops, 1);
	cr_assert_eq(d->id.hop[0].offset, offsetof(struct greenrt_task, id));
	cr_assert_eq(d->id.hop[0].size, sizeof(uint64_t));
	cr_assert_eq(d->name_path.hop[0].offset, offsetof(struct greenrt_task, name));
	cr_assert_eq(d->name_path.hop[0].size, GREENRT_NAME_LEN);
	cr_assert_eq(d->state.hop[0].offset, offsetof(struct greenrt_task, state));
	cr_assert_eq(d->state.hop[0].size, sizeof(enum greenrt_state));
	cr_assert_eq(d->reason_kind, REASON_STRING, "wait_reason is a string");
	cr_assert_eq(d->reason.hop[0].offset, offsetof(struct greenrt_task, wait_reason));
	cr_assert_eq(d->stack_a.hop[0].offset, offsetof(struct greenrt_task, stack_lo));
	cr_assert_eq(d->stack_b.hop[0].offset, offsetof(struct greenrt_task, stack_hi));
	cr_assert_eq(d->entry.hop[0].offset, offsetof(struct greenrt_task, entry));
	cr_assert_eq(d->worker.hop[0].offset, offsetof(struct greenrt_task, worker));

	cr_assert_eq(d->nregs, 8);
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		const struct reg_spec *r = reg(d, regs[i].regno);

		cr_assert_not_null(r, "no register %d", regs[i].regno);
		cr_assert_eq(r->member.nhops, 1);
		cr_assert_eq(r->member.hop[0].offset, GREG_OFFSET(regs[i].greg),
			     "register %d at %" PRIu64 ", gregs[%d] is at %zu",
			     regs[i].regno, r->member.hop[0].offset, regs[i].greg,
			     GREG_OFFSET(regs[i].greg));
		cr_assert_eq(r->member.hop[0].size, sizeof(greg_t));
		cr_assert(!r->mangled && !r->has_at && r->add == 0);
	}

	/* Enumerator names resolved to greenrt's values. */
	cr_assert_eq(d->states.n, 5);
	cr_assert_str_eq(ws_descriptor_map_lookup(&d->states, GREENRT_NEW), "runnable");
	cr_assert_str_eq(ws_descriptor_map_lookup(&d->states, GREENRT_RUNNABLE),
			 "runnable");
	cr_assert_str_eq(ws_descriptor_map_lookup(&d->states, GREENRT_RUNNING),
			 "running");
	cr_assert_str_eq(ws_descriptor_map_lookup(&d->states, GREENRT_WAITING),
			 "waiting");
	cr_assert_str_eq(ws_descriptor_map_lookup(&d->states, GREENRT_DONE), "done");
	cr_assert_null(ws_descriptor_map_lookup(&d->states, 12345));

	cr_assert(d->has_workers && d->has_worker_count);
	cr_assert_eq(d->workers.kind, WS_DWTYPE_ARRAY);
	cr_assert_eq(d->worker_size, sizeof(struct greenrt_worker));
	cr_assert_eq(d->worker_tid.hop[0].offset, offsetof(struct greenrt_worker, tid));
	cr_assert_eq(d->worker_current.hop[0].offset,
		     offsetof(struct greenrt_worker, current));
}

Test(runtime_descriptor_parse, pointer_array_descriptor, FIXTURE_OPTS)
{
	struct descriptor d;
	struct ws_error *err = parse(de_text(de_load(GREENRT_DESCRIPTOR)), &d);

	cr_assert_null(err, "%s", err ? err->message : "");
	check_common(&d);
	cr_assert_eq(d.roots[0].layout, LAYOUT_POINTER_ARRAY);
	cr_assert(d.roots[0].has_count);
	cr_assert(d.has_switches);
	cr_assert_eq(d.switches.hop[0].offset, offsetof(struct greenrt_task, switches));
	cr_assert_eq(reads, 0, "parsing read the target's memory %lu times", reads);
	ws_descriptor_deinit(&d);
}

Test(runtime_descriptor_parse, list_descriptor, FIXTURE_OPTS)
{
	struct descriptor d;
	struct ws_error *err = parse(de_text(de_load(GREENRT_LIST_DESCRIPTOR)), &d);

	cr_assert_null(err, "%s", err ? err->message : "");
	check_common(&d);
	cr_assert_eq(d.roots[0].layout, LAYOUT_LIST);
	cr_assert_eq(d.roots[0].head.kind, WS_DWTYPE_POINTER);
	cr_assert_eq(d.roots[0].next.nhops, 1);
	cr_assert_eq(d.roots[0].next.hop[0].offset, offsetof(struct greenrt_task, all_next));
	cr_assert_eq(d.roots[0].link, 0);
	cr_assert_not(d.has_switches, "the list form has no switch count");
	cr_assert_eq(reads, 0, "parsing read the target's memory %lu times", reads);
	ws_descriptor_deinit(&d);
}

/* ---- bad descriptors ---- */

/* Parsing text fails with `kind` and one line naming the descriptor and
 * each of names (NULL-terminated). Returns the message. */
static const char *check_rejected(const char *text, enum ws_error_kind kind,
				  const char *const names[])
{
	struct descriptor d;
	struct ws_error *err = parse(text, &d);
	static char message[1024];

	cr_assert_not_null(err, "a bad descriptor was accepted");
	snprintf(message, sizeof(message), "%s", err->message);
	cr_log_info("-> kind %d: %s", err->kind, message);
	cr_assert_eq(err->kind, kind, "kind %d, expected %d: %s", err->kind, kind,
		     message);
	ws_error_destroy(err);
	ws_descriptor_deinit(&d);
	cr_assert_null(strchr(message, '\n'), "not one line: %s", message);
	cr_assert(strstr(message, SOURCE), "the error does not name %s: %s",
		  SOURCE, message);
	for (int i = 0; names && names[i]; i++)
		cr_assert(strstr(message, names[i]), "the error does not name %s: %s",
			  names[i], message);
	return message;
}

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* The fixture's descriptor with string `key` of the object at `path` set
 * to `value` (NULL: deleted). */
static const char *edited(const char *file, const char *path, const char *key,
			  const char *value)
{
	cJSON *d = de_load(file);

	if (value)
		de_set_string(d, path, key, value);
	else
		de_delete(d, path, key);
	return de_text(d);
}

/* --- not JSON (WS_ERR_USAGE) --- */

/* A pretty-printed descriptor missing a comma, the commonest typo: the
 * error points at the first token that cannot follow, where "next" starts
 * in the file (line and column counted here from the file itself). */
Test(runtime_descriptor_parse, malformed_missing_comma, FIXTURE_OPTS)
{
	const char *text = e2e_read_file(DATA_DIR "/descriptor_missing_comma.json");
	cr_assert_not_null(text);
	const char *token = strstr(text, "\"next\"");
	cr_assert_not_null(token);
	int line = 1, column = 1;
	for (const char *p = text; p < token; p++) {
		column = *p == '\n' ? 1 : column + 1;
		line += *p == '\n';
	}
	char where[64];
	snprintf(where, sizeof(where), "line %d, column %d", line, column);
	check_rejected(text, WS_ERR_USAGE, NAMES("invalid JSON", where));
}

Test(runtime_descriptor_parse, malformed_truncated, FIXTURE_OPTS)
{
	const char *text = e2e_read_file(DATA_DIR "/descriptor_truncated.json");

	cr_assert_not_null(text);
	check_rejected(text, WS_ERR_USAGE, NAMES("invalid JSON"));
}

Test(runtime_descriptor_parse, not_an_object, FIXTURE_OPTS)
{
	check_rejected("[1, 2, 3]\n", WS_ERR_USAGE, NAMES("$.wallspy"));
}

/* --- format errors (WS_ERR_USAGE) --- */

Test(runtime_descriptor_parse, wrong_format_tag, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "", "wallspy",
			      "runtime-descriptor/99"),
		       WS_ERR_USAGE, NAMES("$.wallspy"));
}

Test(runtime_descriptor_parse, missing_name, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "", "name", NULL),
		       WS_ERR_USAGE, NAMES("$.name"));
}

Test(runtime_descriptor_parse, missing_registry_global, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "registry", "global", NULL),
		       WS_ERR_USAGE, NAMES("$.registry.global"));
}

Test(runtime_descriptor_parse, missing_rip_register, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "task.registers", "rip", NULL),
		       WS_ERR_USAGE, NAMES("$.task.registers.rip"));
}

Test(runtime_descriptor_parse, missing_state_member, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "task.state", "member", NULL),
		       WS_ERR_USAGE, NAMES("$.task.state.member"));
}

Test(runtime_descriptor_parse, unknown_layout, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "registry", "layout", "tree"),
		       WS_ERR_USAGE, NAMES("$.registry.layout"));
}

/* A list needs the member linking its tasks. */
Test(runtime_descriptor_parse, list_without_next, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_LIST_DESCRIPTOR, "registry", "next", NULL),
		       WS_ERR_USAGE, NAMES("$.registry.next"));
}

/* A state name wallspy does not know (not running, runnable, waiting,
 * syscall, idle or done). */
Test(runtime_descriptor_parse, unknown_state_name, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "task.state.values",
			      "GREENRT_RUNNING", "spinning"),
		       WS_ERR_USAGE, NAMES("$.task.state.values.GREENRT_RUNNING",
					   "'spinning'"));
}

/* --- names missing from DWARF (WS_ERR_NO_DEBUGINFO) --- */

Test(runtime_descriptor_parse, global_not_in_dwarf, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "registry", "global",
			      "greenrt_all_taskz"),
		       WS_ERR_NO_DEBUGINFO,
		       NAMES("$.registry.global", "greenrt_all_taskz"));
}

Test(runtime_descriptor_parse, count_global_not_in_dwarf, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "registry", "count",
			      "greenrt_task_counter"),
		       WS_ERR_NO_DEBUGINFO,
		       NAMES("$.registry.count", "greenrt_task_counter"));
}

/* The brief's example: a register path whose first member is misspelt. */
Test(runtime_descriptor_parse, member_not_in_dwarf, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "task.registers", "rip",
			      "ctxx.uc_mcontext.gregs[16]"),
		       WS_ERR_NO_DEBUGINFO,
		       NAMES("$.task.registers.rip", "'ctxx'", "struct greenrt_task"));
}

/* A miss deep in a member path: the member that is missing is named. */
Test(runtime_descriptor_parse, nested_member_not_in_dwarf, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "task.registers", "rsp",
			      "ctx.uc_mcontext.gregz[15]"),
		       WS_ERR_NO_DEBUGINFO, NAMES("$.task.registers.rsp", "'gregz'"));
}

Test(runtime_descriptor_parse, list_link_not_in_dwarf, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_LIST_DESCRIPTOR, "registry", "next",
			      "all_nxt"),
		       WS_ERR_NO_DEBUGINFO, NAMES("$.registry.next", "'all_nxt'"));
}

Test(runtime_descriptor_parse, worker_member_not_in_dwarf, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "workers", "tid", "thread_id"),
		       WS_ERR_NO_DEBUGINFO, NAMES("$.workers.tid", "'thread_id'"));
}

/* A state value that enum greenrt_state does not have. */
Test(runtime_descriptor_parse, enumerator_not_in_dwarf, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "task.state.values",
			      "GREENRT_PARKED", "waiting"),
		       WS_ERR_NO_DEBUGINFO,
		       NAMES("$.task.state.values.GREENRT_PARKED", "GREENRT_PARKED",
			     "enum greenrt_state"));
}

/* --- paths the DWARF cannot follow (WS_ERR_USAGE: exit 2, not 1) --- */

/* A register index past gregs[23]. */
Test(runtime_descriptor_parse, register_index_out_of_range, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "task.registers", "rip",
			      "ctx.uc_mcontext.gregs[99]"),
		       WS_ERR_USAGE, NAMES("$.task.registers.rip", "index 99 out of range"));
}

/* "->" through a member that is not a pointer. */
Test(runtime_descriptor_parse, hop_through_a_non_pointer, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_DESCRIPTOR, "task", "switches", "id->x"),
		       WS_ERR_USAGE, NAMES("$.task.switches", "'id'", "is not a pointer"));
}

/* A list whose next is not a pointer is caught at load, not mid-walk. */
Test(runtime_descriptor_parse, next_not_a_pointer, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_LIST_DESCRIPTOR, "registry", "next", "id"),
		       WS_ERR_USAGE, NAMES("$.registry.next", "is not a pointer"));
}

/* Format 2's shapes need format 2. */
Test(runtime_descriptor_parse, ring_needs_format_2, FIXTURE_OPTS)
{
	check_rejected(edited(GREENRT_LIST_DESCRIPTOR, "registry", "layout", "ring"),
		       WS_ERR_USAGE, NAMES("$.registry.layout", "runtime-descriptor/2"));
}

/* A path through a pointer, the count as a member path into a global, in
 * format 2: greenrt's list descriptor walking tasks through `worker->`. */
Test(runtime_descriptor_parse, format_2_paths_through_pointers, FIXTURE_OPTS)
{
	cJSON *j = de_load(GREENRT_LIST_DESCRIPTOR);
	struct descriptor d;

	de_set_string(j, "", "wallspy", "runtime-descriptor/2");
	de_set_string(j, "task", "switches", "worker->tid");
	struct ws_error *err = parse(de_text(j), &d);
	cr_assert_null(err, "%s", err ? err->message : "");
	cr_assert_eq(d.version, 2);
	cr_assert(d.has_switches);
	cr_assert_eq(d.switches.nhops, 2);
	cr_assert_eq(d.switches.hop[0].offset, offsetof(struct greenrt_task, worker));
	cr_assert_eq(d.switches.hop[1].offset, offsetof(struct greenrt_worker, tid));
	/* With workers, format 2 is not the main-thread rule. */
	cr_assert_not(d.single_thread);
	cr_assert_eq(reads, 0);
	ws_descriptor_deinit(&d);
}

/* ---- the shipped descriptors, against the real runtimes' DWARF ---- */

#define PTH_DESCRIPTOR WS_SOURCE_DIR "/descriptors/pth.wallspy.json"
#define CRYSTAL_DESCRIPTOR WS_SOURCE_DIR "/descriptors/crystal.wallspy.json"

/* Opens a built real-runtime fixture offline instead of greenrt_parked;
 * skips when it was not built (build-pth.sh says why in its place). */
static void open_real(const char *name)
{
	const char *path = e2e_fixture(name);
	static const struct ws_memory_reader image = { image_read, NULL };

	if (access(path, X_OK) != 0)
		cr_skip_test("%s not built", path);
	dwfl = dwfl_begin(&offline);
	cr_assert_not_null(dwfl_report_offline(dwfl, name, path, -1),
			   "%s: %s", path, dwfl_errmsg(-1));
	cr_assert_eq(dwfl_report_end(dwfl, NULL, NULL), 0);
	struct ws_error *err = ws_dwtype_program_create(dwfl, &image, &prog);
	cr_assert_null(err, "%s", err ? err->message : "");
	reads = 0;
}

static void open_pth_uctx(void) { open_real("pth/pth_fixture_uctx"); }
static void open_pth_sjlj(void) { open_real("pth/pth_fixture_sjlj"); }
static void open_crystal(void) { open_real("crystal/crystal_fibers"); }

static const struct reg_spec *parsed_reg(const struct descriptor *d, int regno)
{
	const struct reg_spec *r = reg(d, regno);
	cr_assert_not_null(r, "no register %d", regno);
	return r;
}

/* Pth: five rings and the current thread, wait reasons from bits, stack
 * as base and size, dispatches as the switch count; the first register
 * set (ucontext gregs) resolves in the default build. */
static void check_pth(const struct descriptor *d)
{
	cr_assert_str_eq(d->name, "pth");
	cr_assert_str_eq(d->detect_symbol, "__pth_NQ");
	cr_assert_eq(d->nroots, 5);
	for (size_t i = 0; i < d->nroots; i++) {
		cr_assert_eq(d->roots[i].layout, LAYOUT_RING);
		cr_assert(d->roots[i].has_count);
		cr_assert_eq(d->roots[i].head.path.nhops, 1, "q_head inside the queue");
	}
	cr_assert(d->has_current && d->single_thread && d->has_switches);
	cr_assert_eq(d->reason_kind, REASON_BITS);
	cr_assert_eq(d->reason.nhops, 2, "events->ev_type");
	cr_assert_str_eq(ws_descriptor_map_lookup(&d->reasons, 0x20), "msg");
	cr_assert_eq(d->stack_kind, STACK_BASE_SIZE);
	cr_assert_eq(d->nregs, 8);
}

Test(runtime_descriptor_parse, pth_ucontext, .init = open_pth_uctx,
     .fini = close_fixture, .timeout = 30)
{
	struct descriptor d;
	struct ws_error *err = parse(de_text(de_load(PTH_DESCRIPTOR)), &d);

	cr_assert_null(err, "%s", err ? err->message : "");
	check_pth(&d);
	/* gregs by glibc's REG_* numbers: rsp 15 and rip 16 adjacent. */
	const struct reg_spec *rsp = parsed_reg(&d, WS_REG_RSP), *rip = parsed_reg(&d, WS_REG_RIP);
	cr_assert_eq(rip->member.hop[0].offset, rsp->member.hop[0].offset + sizeof(greg_t));
	cr_assert(!rsp->mangled && !rip->mangled && !d.uses_guard);
	cr_assert_eq(reads, 0);
	ws_descriptor_deinit(&d);
}

/* The setjmp build has no mctx.uc: the jmp_buf set resolves, with rbp,
 * rsp and the pc mangled (__jmpbuf[1], [6], [7]) and the others not. */
Test(runtime_descriptor_parse, pth_setjmp, .init = open_pth_sjlj,
     .fini = close_fixture, .timeout = 30)
{
	struct descriptor d;
	struct ws_error *err = parse(de_text(de_load(PTH_DESCRIPTOR)), &d);

	cr_assert_null(err, "%s", err ? err->message : "");
	check_pth(&d);
	cr_assert(d.uses_guard);
	const struct reg_spec *rbx = parsed_reg(&d, WS_REG_RBX);
	static const struct { int regno, slot; bool mangled; } jb[] = {
		{ WS_REG_RBX, 0, false }, { WS_REG_RBP, 1, true }, { 12, 2, false },
		{ 13, 3, false }, { 14, 4, false }, { 15, 5, false },
		{ WS_REG_RSP, 6, true }, { WS_REG_RIP, 7, true },
	};
	for (size_t i = 0; i < sizeof(jb) / sizeof(jb[0]); i++) {
		const struct reg_spec *r = parsed_reg(&d, jb[i].regno);
		cr_assert_eq(r->member.hop[0].offset,
			     rbx->member.hop[0].offset + 8 * (uint64_t)jb[i].slot,
			     "register %d", jb[i].regno);
		cr_assert_eq(r->mangled, jb[i].mangled, "register %d", jb[i].regno);
	}
	ws_descriptor_deinit(&d);
}

/* Crystal: the registry behind an ELF symbol typed from DWARF (no
 * variable DIE exists), names as String objects, and the registers saved
 * on the fiber's stack at the offsets Crystal's swapcontext pushes them. */
Test(runtime_descriptor_parse, crystal, .init = open_crystal,
     .fini = close_fixture, .timeout = 30)
{
	struct descriptor d;
	struct ws_error *err = parse(de_text(de_load(CRYSTAL_DESCRIPTOR)), &d);

	cr_assert_null(err, "%s", err ? err->message : "");
	cr_assert_eq(d.nroots, 1);
	cr_assert_eq(d.roots[0].layout, LAYOUT_LIST);
	cr_assert_eq(d.roots[0].head.var.kind, WS_DWTYPE_POINTER,
		     "Fiber::fibers holds a reference");
	cr_assert_eq(d.roots[0].head.path.nhops, 2, "Fiber::fibers->head");
	cr_assert_eq(d.name_kind, NAME_LENGTH_PREFIXED);
	cr_assert(d.single_thread && !d.has_switches && !d.has_current);
	cr_assert(d.has_frame);
	cr_assert_eq(d.frame_lo, 0);
	cr_assert_eq(d.frame_hi, 0x40);
	static const struct { int regno; int64_t at; } at[] = {
		{ 15, 0x00 }, { 14, 0x08 }, { 13, 0x10 }, { 12, 0x18 },
		{ WS_REG_RBP, 0x20 }, { WS_REG_RBX, 0x28 }, { WS_REG_RIP, 0x38 },
	};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		const struct reg_spec *r = parsed_reg(&d, at[i].regno);
		cr_assert(r->has_at && r->at == at[i].at, "register %d", at[i].regno);
	}
	const struct reg_spec *rsp = parsed_reg(&d, WS_REG_RSP);
	cr_assert(!rsp->has_at && rsp->add == 0x40);
	cr_assert_str_eq(d.root_file, "/fiber.cr");
	cr_assert_eq(reads, 0, "parsing read the target's memory %lu times", reads);
	ws_descriptor_deinit(&d);
}

/* ---- the manual's examples are the files ---- */

/* The JSON of the .EX block of man/wallspy-descriptor.5 that holds
 * `marker`, groff escapes undone. */
static cJSON *man_example(const char *marker)
{
	char *man = e2e_read_file(WS_SOURCE_DIR "/man/wallspy-descriptor.5");
	cr_assert_not_null(man);
	for (char *ex = strstr(man, ".EX\n{"); ex; ex = strstr(ex + 1, ".EX\n{")) {
		char *end = strstr(ex, "\n.EE");
		cr_assert_not_null(end);
		*end = '\0';
		if (!strstr(ex, marker)) {
			*end = '\n';
			continue;
		}
		char *out = ex + 4, *w = out;
		for (const char *r = out; *r; r++) {
			if (r[0] == '\\' && (r[1] == '-' || r[1] == 'e')) {
				*w++ = r[1] == '-' ? '-' : '\\';
				r++;
			} else {
				*w++ = *r;
			}
		}
		*w = '\0';
		cJSON *json = cJSON_Parse(out);
		cr_assert_not_null(json, "the example with %s is not JSON", marker);
		return json;
	}
	cr_assert_fail("no example with %s in wallspy-descriptor(5)", marker);
	return NULL;
}

Test(runtime_descriptor_parse, manual_examples_are_the_files)
{
	static const struct { const char *marker, *file; } examples[] = {
		{ "\"name\": \"greenrt\"", GREENRT_LIST_DESCRIPTOR },
		{ "\"name\": \"pth\"", PTH_DESCRIPTOR },
		{ "\"name\": \"crystal\"", CRYSTAL_DESCRIPTOR },
	};
	for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
		cJSON *man = man_example(examples[i].marker);
		cJSON *file = de_load(examples[i].file);
		cr_assert(cJSON_Compare(man, file, true),
			  "wallspy-descriptor(5)'s example differs from %s", examples[i].file);
		cJSON_Delete(man);
	}
}
