/*
 * End-to-end tests of frame names beyond plain C with DWARF, each truth
 * from outside wallspy: C++ functions by their qualified names, as c++filt
 * spells the symbols of fixtures/names/cpp_names (in the dump and in the
 * profile alike); Rust methods in both manglings, named by the fixture's
 * construction (r::app::Worker::wait_for_job); a library without debug info
 * named from its .symtab, its stripped twin from .dynsym and, for its
 * static function, its module and that function's start as the twin's
 * .symtab has it; vDSO frames by the vDSO's own symbol names, with no
 * process id in any name.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "e2e_util.h"
#include "elf_util.h"
#include "speedscope_view.h"
#include "wallspy_run.h"

E2E_SERIAL_TESTS()

/* c++filt's reading of the mangled symbol of path whose name contains
 * every one of the words (NULL-terminated); fails the test when none
 * does. */
static const char *cxxfilt(const char *path, const char *const words[])
{
	struct e2e_symtab st = e2e_symtab_load(path);
	const char *mangled = NULL;
	for (size_t i = 0; i < st.n && !mangled; i++) {
		if (!st.syms[i].is_function || strncmp(st.syms[i].name, "_Z", 2))
			continue;
		bool all = true;
		for (int k = 0; words[k] && all; k++)
			all = strstr(st.syms[i].name, words[k]) != NULL;
		if (all)
			mangled = e2e_strndup(st.syms[i].name, strlen(st.syms[i].name));
	}
	e2e_symtab_free(&st);
	cr_assert_not_null(mangled, "no symbol with %s in %s", words[0], path);
	if (access("/usr/bin/c++filt", X_OK) != 0)
		cr_skip_test("no c++filt (binutils)");
	char *argv[] = { "/usr/bin/c++filt", (char *)mangled, NULL };
	struct e2e_result res;
	e2e_run(argv, NULL, 10000, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "c++filt: %s", res.err);
	char *nl = strchr(res.out, '\n');
	if (nl)
		*nl = '\0';
	return res.out;
}

/* Whether the dump (JSON) of pid has a frame named `name`. */
static bool dump_has(const cJSON *dump, const char *name)
{
	const cJSON *task, *frame;
	cJSON_ArrayForEach(task, cJSON_GetObjectItem(dump, "tasks"))
		cJSON_ArrayForEach(frame, cJSON_GetObjectItem(task, "frames")) {
			const cJSON *f = cJSON_GetObjectItem(frame, "function");
			if (cJSON_IsString(f) && strcmp(f->valuestring, name) == 0)
				return true;
		}
	return false;
}

/* A speedscope profile of a 0.5 s attach to pid. */
static struct ss_view attach_view(pid_t pid)
{
	const char *opts[] = { "-d", "0.5", NULL };
	const char *out;
	e2e_attach(pid, opts, "out.json", &out, 30000);
	return ss_load(out);
}

/* Whether some frame of the view is named exactly name, or (prefix)
 * starts with it. */
static bool view_has_frame(const struct ss_view *v, const char *name,
			   bool prefix)
{
	const cJSON *frame;
	cJSON_ArrayForEach(frame, v->frames) {
		const char *f = cJSON_GetObjectItem(frame, "name")->valuestring;
		if (prefix ? strncmp(f, name, strlen(name)) == 0
			   : strcmp(f, name) == 0)
			return true;
	}
	return false;
}

Test(e2e_names, cpp_qualified_names, .timeout = 60, .fini = e2e_cleanup)
{
	const char *path = e2e_need_fixture("names/cpp_names");
	const char *wait = cxxfilt(path, (const char *[]){ "Worker", "wait_for_job", NULL });
	const char *run = cxxfilt(path, (const char *[]){ "3app3run", NULL });
	const char *m_run = cxxfilt(path, (const char *[]){ "_M_run", "Worker", "start", NULL });
	cr_log_info("c++filt: %s | %s | %s", wait, run, m_run);
	cr_assert_str_eq(wait, "app::Worker::wait_for_job(int)");

	pid_t pid = e2e_start_fixture("names/cpp_names", NULL, "ready", 10000);
	cJSON *dump = e2e_dump_json(pid, NULL);
	struct ss_view v = attach_view(pid);
	const char *names[] = { wait, run, m_run };
	for (int i = 0; i < 3; i++) {
		cr_expect(dump_has(dump, names[i]), "dump: no frame %s", names[i]);
		cr_expect(view_has_frame(&v, names[i], false),
			  "profile: no frame %s", names[i]);
	}
	/* No bare DWARF name of a member survives. */
	cr_expect(!dump_has(dump, "wait_for_job") && !dump_has(dump, "_M_run"),
		  "a bare name in the dump");
	e2e_kill(pid);
}

/* Builds fixtures/names/rust_names.rs with rustc (skips without one),
 * mangling its symbols the v0 way or rustc's default, the legacy one. */
static const char *build_rust(const char *mangling)
{
	if (system("command -v rustc >/dev/null 2>&1") != 0)
		cr_skip_test("no rustc on PATH");
	const char *dir = e2e_tmpdir();
	char *cmd;
	bool v0 = strcmp(mangling, "v0") == 0;
	cr_assert_geq(asprintf(&cmd, "rustc -g -O %s "
			       "-o '%s/prog' '%s/fixtures/names/rust_names.rs' "
			       ">'%s/build.log' 2>&1",
			       v0 ? "-C symbol-mangling-version=v0" : "", dir,
			       WS_SOURCE_DIR, dir), 0);
	int status = system(cmd);
	free(cmd);
	cr_assert_eq(status, 0, "rustc failed: %s",
		     e2e_read_file(e2e_path(dir, "build.log")));
	return e2e_path(dir, "prog");
}

static void check_rust(const char *mangling, const char *expected)
{
	char *argv[] = { (char *)build_rust(mangling), NULL };
	pid_t pid = e2e_start_ready(argv, "ready", 10000);
	cJSON *dump = e2e_dump_json(pid, NULL);
	struct ss_view v = attach_view(pid);
	cr_expect(dump_has(dump, expected), "%s: dump has no frame %s", mangling,
		  expected);
	cr_expect(view_has_frame(&v, expected, false), "%s: profile has no "
		  "frame %s", mangling, expected);
	e2e_kill(pid);
}

Test(e2e_names, rust_v0, .timeout = 120, .fini = e2e_cleanup)
{
	check_rust("v0", "<rust_names::app::Worker>::wait_for_job");
}

Test(e2e_names, rust_legacy, .timeout = 120, .fini = e2e_cleanup)
{
	check_rust("legacy", "rust_names::app::Worker::wait_for_job");
}

/* The vDSO's frames: its exported function by name, nothing with a pid. */
static void check_vdso(const struct ss_view *v)
{
	cr_expect(view_has_frame(v, "__vdso_clock_gettime", false),
		  "no __vdso_clock_gettime frame");
	cr_expect(!view_has_frame(v, "[vdso:", true), "a frame names the pid");
}

/* A recording of pid (attach_view) with every one of the frames named
 * (NULL-terminated), or the last of a few if none has them all: each is a
 * sample of where the fixture spins, and a short one can miss a frame
 * that takes half its time. The checks run on that recording. */
static struct ss_view attach_view_with(pid_t pid, const char *const names[])
{
	for (int attempt = 1;; attempt++) {
		struct ss_view v = attach_view(pid);
		bool all = true;
		for (int i = 0; names[i] && all; i++)
			all = view_has_frame(&v, names[i], false);
		if (all || attempt == 4)
			return v;
		cr_log_info("recording %d lacks a frame, recording again", attempt);
	}
}

Test(e2e_names, library_symtab_and_vdso, .timeout = 60, .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("names/nodebug_symtab", NULL, "ready", 10000);
	e2e_sleep_ms(300);
	struct ss_view v = attach_view_with(pid, (const char *[]){
		"local_spin", "exported_spin", "__vdso_clock_gettime", NULL });
	cr_expect(view_has_frame(&v, "local_spin", false), "no local_spin frame");
	cr_expect(view_has_frame(&v, "exported_spin", false), "no exported_spin");
	check_vdso(&v);
	e2e_kill(pid);
}

Test(e2e_names, library_dynsym_only, .timeout = 60, .fini = e2e_cleanup)
{
	/* Where local_spin starts, from the twin that keeps .symtab (the
	 * same code: -s strips tables, not code). */
	struct e2e_symtab st = e2e_symtab_load(
		e2e_fixture("names/libnodebug_symtab.so"));
	const struct e2e_sym *local = e2e_symtab_find(&st, "local_spin");
	cr_assert_not_null(local);
	char expected[128];
	snprintf(expected, sizeof(expected), "libnodebug_stripped.so+0x%" PRIx64,
		 local->value);
	e2e_symtab_free(&st);

	pid_t pid = e2e_start_fixture("names/nodebug_stripped", NULL, "ready", 10000);
	e2e_sleep_ms(300);
	struct ss_view v = attach_view_with(pid, (const char *[]){
		"exported_spin", expected, "__vdso_clock_gettime", NULL });
	cr_expect(view_has_frame(&v, "exported_spin", false),
		  "no exported_spin (from .dynsym)");
	cr_expect(view_has_frame(&v, expected, false), "no frame %s", expected);
	check_vdso(&v);
	e2e_kill(pid);
}
