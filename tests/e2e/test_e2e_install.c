/*
 * End-to-end test of `meson install` (into a scratch DESTDIR): what the
 * manual pages refer to is there and works. The installed wallspy prints
 * the built one's version; wallspy-embed-descriptor's header, compiled by
 * cc, puts the descriptor byte for byte into .wallspy.descriptor (objcopy
 * --dump-section reads it back); the example descriptors are the sources'; the bash
 * completion, sourced by bash, completes commands, options, every
 * --runtime value of the table of runtimes (src/runtimes/runtime.c) and
 * PIDs.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e_util.h"
#include "wallspy_run.h"
#include "ws_runtime.h"

/* DESTDIR/PREFIX/DIR/NAME (DIR relative to the prefix, as meson's options
 * are unless absolute). */
static const char *installed(const char *destdir, const char *dir,
			     const char *name)
{
	char path[4096];

	if (dir[0] == '/')
		snprintf(path, sizeof(path), "%s%s/%s", destdir, dir, name);
	else
		snprintf(path, sizeof(path), "%s%s/%s/%s", destdir, WS_PREFIX, dir, name);
	return e2e_strndup(path, sizeof(path));
}

static struct e2e_result run(char *const argv[])
{
	struct e2e_result res;

	e2e_run(argv, NULL, 60000, &res);
	cr_assert_eq(e2e_exit_code(&res), 0, "%s failed: %s%s", argv[0], res.out,
		     res.err);
	return res;
}

static void same_file(const char *a, const char *b)
{
	const char *x = e2e_read_file(a), *y = e2e_read_file(b);

	cr_assert_not_null(x, "missing %s", a);
	cr_assert_not_null(y, "missing %s", b);
	cr_assert_str_eq(x, y, "%s differs from %s", a, b);
}

/* What the completion offers for the words (after "wallspy"). */
static const char *complete(const char *completion, const char *wallspy,
			    const char *words)
{
	char *script;

	cr_assert(asprintf(&script,
			   "source '%s'; COMP_WORDS=('%s' %s); "
			   "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _wallspy; "
			   "printf '%%s\\n' \"${COMPREPLY[@]}\"",
			   completion, wallspy, words) > 0);
	char *argv[] = { "/bin/bash", "--norc", "-c", script, NULL };
	struct e2e_result res = run(argv);
	free(script);
	return res.out;
}

static bool offers(const char *reply, const char *word)
{
	char line[256];

	snprintf(line, sizeof(line), "\n%s\n", word);
	char *all;
	cr_assert(asprintf(&all, "\n%s", reply) > 0);
	bool found = strstr(all, line) != NULL;
	free(all);
	return found;
}

Test(e2e_install, meson_install, .timeout = 120, .fini = e2e_cleanup)
{
	const char *destdir = e2e_tmpdir();
	char *install[] = { "/usr/bin/meson", "install", "-C", WS_BUILD_DIR,
			    "--destdir", (char *)destdir, "--no-rebuild", "--quiet",
			    NULL };
	run(install);

	/* The binary. */
	const char *wallspy = installed(destdir, WS_BINDIR, "wallspy");
	char *version[] = { (char *)wallspy, "--version", NULL };
	char *built_version[] = { (char *)e2e_wallspy(), "--version", NULL };
	cr_assert_str_eq(run(version).out, run(built_version).out);

	/* The manual pages. */
	same_file(installed(destdir, WS_MANDIR, "man1/wallspy.1"),
		  WS_SOURCE_DIR "/man/wallspy.1");
	same_file(installed(destdir, WS_MANDIR, "man5/wallspy-descriptor.5"),
		  WS_SOURCE_DIR "/man/wallspy-descriptor.5");

	/* The examples, and wallspy-embed-descriptor on one of them. */
	const char *json = WS_SOURCE_DIR "/fixtures/greenrt/greenrt-list.wallspy.json";
	same_file(installed(destdir, WS_DATADIR, "wallspy/examples/greenrt-list.wallspy.json"),
		  json);
	same_file(installed(destdir, WS_DATADIR, "wallspy/examples/greenrt.wallspy.json"),
		  WS_SOURCE_DIR "/fixtures/greenrt/greenrt.wallspy.json");
	const char *dir = e2e_tmpdir();
	const char *header = e2e_path(dir, "descriptor.h");
	const char *source = e2e_path(dir, "prog.c");
	const char *prog = e2e_path(dir, "prog");
	const char *section = e2e_path(dir, "section");
	char *embed[] = { (char *)installed(destdir, WS_BINDIR, "wallspy-embed-descriptor"),
			  (char *)json, (char *)header, NULL };
	run(embed);
	FILE *f = fopen(source, "w");
	cr_assert_not_null(f);
	fprintf(f, "#include \"%s\"\nint main(void) { return 0; }\n", header);
	fclose(f);
	char *cc[] = { "/usr/bin/cc", "-o", (char *)prog, (char *)source, NULL };
	run(cc);
	char *dump_section;
	cr_assert(asprintf(&dump_section, ".wallspy.descriptor=%s", section) > 0);
	char *objcopy[] = { "/usr/bin/objcopy", "--dump-section", dump_section,
			    (char *)prog, NULL };
	run(objcopy);
	free(dump_section);
	same_file(section, json);

	/* The bash completion, with the installed wallspy. */
	const char *completion = installed(destdir, WS_DATADIR,
					   "bash-completion/completions/wallspy");
	cr_assert(offers(complete(completion, wallspy, "rec"), "record"));
	cr_assert(offers(complete(completion, wallspy, "record --keep"),
			 "--keep-running"));
	cr_assert(offers(complete(completion, wallspy, "dump --gr"), "--group"));
	/* Values as the help lists them (so a new one needs no change to
	 * the completion). */
	const char *formats = complete(completion, wallspy, "record -f ''");
	cr_assert(offers(formats, "speedscope") && offers(formats, "folded"),
		  "-f offers:\n%s", formats);
	const char *groups = complete(completion, wallspy, "attach --group-by ''");
	for (const char *const *key = (const char *const[]){ "all", "thread", "state",
			"task", NULL }; *key; key++)
		cr_assert(offers(groups, *key), "--group-by does not offer %s:\n%s",
			  *key, groups);
	cr_assert_not(offers(groups, "default"), "--group-by offers:\n%s", groups);
	const char *runtimes = complete(completion, wallspy, "attach --runtime ''");
	cr_assert(offers(runtimes, "auto"), "--runtime offers:\n%s", runtimes);
	for (size_t i = 0; ws_runtime_table_name(i); i++)
		cr_assert(offers(runtimes, ws_runtime_table_name(i)),
			  "--runtime does not offer %s:\n%s", ws_runtime_table_name(i),
			  runtimes);
	char words[64], me[32];
	snprintf(me, sizeof(me), "%d", getpid());
	snprintf(words, sizeof(words), "dump %s", me);
	cr_assert(offers(complete(completion, wallspy, words), me));
}
