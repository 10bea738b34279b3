/*
 * End-to-end tests of `-f pprof`, judged by Go's own `go tool pprof`
 * (/usr/local/go's, else the one the Go fixtures are built with): it must
 * read the file without a warning, print its header (sample and period
 * types, period, start time, duration) and the fixture's mapping with its
 * file and build ID, show the fixtures' known stacks with their leaf
 * functions as leaves (states are labels, not frames) and their labels,
 * list the states, wait reasons and ids with -tags, select samples with
 * -tagfocus (ids as numbers), leave runtime.goexit out of goroutines'
 * stacks as Go's own profiles do, and total the recording's task-seconds: threads_blocked's 7 threads for
 * every tick of an attach, and go_parked_n's parked goroutines, every one
 * sampled at every tick.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "e2e_util.h"
#include "elf_util.h"
#include "fixture_truth.h"
#include "pprof_tool.h"
#include "summary.h"
#include "wallspy_run.h"

E2E_SERIAL_TESTS()

enum { RATE_HZ = 100 };

Test(e2e_pprof, threads_stacks_labels_and_total, .timeout = 400,
     .fini = e2e_cleanup)
{
	pid_t pid = e2e_start_fixture("threads_blocked", "60", "ready", 10000);
	const char *opts[] = { "-d", "1.5", "-f", "pprof", NULL };
	const char *out;
	time_t before = time(NULL);
	struct e2e_result res = e2e_attach(pid, opts, "out.pb.gz", &out, 30000);
	time_t after = time(NULL);
	struct e2e_summary s = e2e_parse_summary(res.err);

	/* The header, as pprof prints it raw: sample types, period (1e9 /
	 * rate ns), when the recording started and how long it took. */
	const char *raw = pt_run(out, (const char *[]){ "-raw", NULL });
	cr_expect(strstr(raw, "\nPeriodType: wall nanoseconds\n") &&
		  strstr(raw, "\nPeriod: 10000000\n") &&
		  strstr(raw, "\nsamples/count wall/nanoseconds[dflt]\n"),
		  "-raw header: %.400s", raw);
	const char *when = strstr(raw, "\nTime: ");
	struct tm tm = {0};
	cr_assert(when && strptime(when + 7, "%Y-%m-%d %H:%M:%S", &tm),
		  "-raw: no Time: %.400s", raw);
	time_t started = timegm(&tm);
	cr_expect(started >= before - 1 && started <= after,
		  "Time %ld, the attach ran from %ld to %ld", (long)started,
		  (long)before, (long)after);
	const char *duration = strstr(raw, "\nDuration: ");
	double seconds = 0;
	cr_expect(duration && sscanf(duration, "\nDuration: %lf", &seconds) == 1 &&
		  seconds > 1.4 && seconds < 1.7, "-d 1.5, Duration: %.3f", seconds);
	/* The fixture's mapping: its file and the build ID its ELF notes
	 * hold; the vDSO's without a PID. */
	char build_id[129];
	const char *fixture = e2e_fixture("threads_blocked");
	cr_assert(e2e_elf_build_id(fixture, build_id), "%s: no build ID", fixture);
	const char *mappings = strstr(raw, "\nMappings\n");
	cr_assert_not_null(mappings, "-raw: no mappings");
	cr_expect(pt_line_with(mappings, (const char *[]){ fixture, build_id, NULL }),
		  "no mapping %s %s in: %s", fixture, build_id, mappings);
	cr_expect(!strstr(mappings, "[vdso:"), "a PID in the vDSO's mapping: %s",
		  mappings);

	/* No state in any frame: -top lists functions only. */
	const char *top = pt_run(out, (const char *[]){ "-top", "-nodecount=1000", NULL });
	cr_assert_null(strstr(top, "[waiting"), "a state as a frame: %s", top);
	cr_assert_null(strstr(top, "[running]"), "a state as a frame: %s", top);

	/* Each thread's chain, its inner function right below its outer one
	 * (pprof -traces prints leaf first, one frame a line). */
	const char *traces = pt_run(out, (const char *[]){ "-traces", NULL });
	for (int t = 0; t < TB_THREADS; t++) {
		char chain[256];
		snprintf(chain, sizeof(chain), "%s\n             %s\n",
			 tb_threads[t].inner, tb_threads[t].outer);
		cr_expect(strstr(traces, chain), "no %s above %s in -traces",
			  tb_threads[t].inner, tb_threads[t].outer);
	}
	/* The spinner's leaf is its own function. */
	cr_expect(strstr(traces, "  spinner_block\n             spinner_outer\n"),
		  "spinner_block is not a leaf: %s", traces);

	/* Labels: every state and wait reason by name, ids as numbers. */
	const char *tags = pt_run(out, (const char *[]){ "-tags", NULL });
	for (int t = 0; t < TB_THREADS; t++) {
		const char *reason = tb_threads[t].wait_reason;
		const char *alt = tb_threads[t].wait_reason_alt;
		char want[64];
		if (!reason)
			continue;
		snprintf(want, sizeof(want), ": %s\n", reason);
		bool found = strstr(tags, want) != NULL;
		if (!found && alt) {
			snprintf(want, sizeof(want), ": %s\n", alt);
			found = strstr(tags, want) != NULL;
		}
		cr_expect(found, "wait_reason %s missing from -tags: %s", reason, tags);
	}
	cr_expect(strstr(tags, " state: ") && strstr(tags, ": waiting\n") &&
		  strstr(tags, ": running\n"), "-tags: %s", tags);
	char tid[32];
	snprintf(tid, sizeof(tid), ": %d\n", e2e_thread_named(pid, "t_spin"));
	cr_expect(strstr(tags, " thread_id: ") && strstr(tags, tid),
		  "thread ids missing from -tags: %s", tags);
	cr_expect(strstr(tags, " task_name: ") && strstr(tags, ": t_mutex\n"),
		  "-tags: %s", tags);

	/* -traces shows each stack with its labels: the pipe reader's
	 * reason on the pipe reader's trace. */
	const char *trace = strstr(traces, "wait_reason:  read\n");
	const char *next = trace ? strstr(trace, "-----------+") : NULL;
	const char *leaf = trace ? strstr(trace, "pipe_reader_block") : NULL;
	cr_expect(leaf && (!next || leaf < next),
		  "no trace with wait_reason read and pipe_reader_block: %s",
		  traces);

	/* Numeric labels are numbers: pprof reads -tagfocus=KEY=N as a
	 * numeric range, which never matches a string label. The spinner's
	 * thread id selects the spinner alone. */
	char focus[64];
	snprintf(focus, sizeof(focus), "-tagfocus=thread_id=%d",
		 e2e_thread_named(pid, "t_spin"));
	const char *spin_top = pt_run(out, (const char *[]){ "-top", focus, NULL });
	cr_expect(pt_line_with(spin_top, (const char *[]){ "spinner_block", NULL }),
		  "%s: %s", focus, spin_top);
	cr_expect_null(pt_line_with(spin_top, (const char *[]){ "pipe_reader_block",
								NULL }),
		       "%s shows the pipe reader: %s", focus, spin_top);

	/* -tagfocus selects by label: the pipe reader alone. */
	const char *read_top = pt_run(out, (const char *[]){
		"-top", "-tagfocus=wait_reason=read", NULL });
	cr_expect(pt_line_with(read_top, (const char *[]){ "pipe_reader_block", NULL }),
		  "-tagfocus=wait_reason=read: %s", read_top);
	cr_expect_null(pt_line_with(read_top, (const char *[]){ "spinner_block", NULL }),
		       "-tagfocus=wait_reason=read shows the spinner: %s", read_top);

	/* The total is the task-seconds: 7 threads (the table's and main) at
	 * every tick, each tick weighing (1 + missed) / rate. */
	double want = (TB_THREADS + 1) * (double)(s.ticks + s.missed) / RATE_HZ;
	double total = pt_total(out, NULL);
	cr_log_info("pprof total %.3f s, %d threads x (%ld ticks + %ld missed) "
		    "/ %d Hz = %.3f s", total, TB_THREADS + 1, s.ticks, s.missed,
		    RATE_HZ, want);
	cr_expect(fabs(total - want) < 0.0015, "pprof total %.3f s, task-seconds "
		  "%.3f s", total, want);
	e2e_check_healthy_then_stop(pid);
}

/*
 * Go: goroutine ids as numeric labels, Go's wait reasons whole (pprof
 * trims parenthesised suffixes from frame names, not from labels: "force
 * gc (idle)" stays), -tagfocus=wait_reason=chan receive selects the
 * receivers, and the parked goroutines' total is theirs: 400 goroutines,
 * 100 per chain, each at every tick (no budget).
 */
Test(e2e_pprof, go_labels_and_total, .timeout = 400, .fini = e2e_cleanup)
{
	const char *args[] = { "400", NULL };
	struct e2e_proc proc = e2e_start_go("go/go_parked_n", args, 30000);
	/* --system-tasks: forcegc, parked in "force gc (idle)", is one. */
	const char *opts[] = { "-d", "1.5", "-f", "pprof", "--max-pause", "0",
			       "--max-cpu", "0", "--system-tasks", NULL };
	const char *out;
	struct e2e_result res = e2e_attach(proc.pid, opts, "out.pb.gz", &out, 60000);
	struct e2e_summary s = e2e_parse_summary(res.err);

	const char *tags = pt_run(out, (const char *[]){ "-tags", NULL });
	cr_expect(strstr(tags, " goroutine: "), "no goroutine label: %s", tags);
	cr_expect(strstr(tags, ": chan receive\n") && strstr(tags, ": select\n") &&
		  strstr(tags, ": semacquire\n"), "-tags: %s", tags);
	cr_expect(strstr(tags, ": force gc (idle)\n"),
		  "\"force gc (idle)\" not whole in -tags: %s", tags);

	const char *recv = pt_run(out, (const char *[]){
		"-top", "-tagfocus=wait_reason=chan receive", NULL });
	cr_expect(pt_line_with(recv, (const char *[]){ "main.recvInner", NULL }),
		  "-tagfocus=wait_reason=chan receive: %s", recv);
	cr_expect_null(pt_line_with(recv, (const char *[]){ "main.selectInner", NULL }),
		       "chan receive focus shows select: %s", recv);

	/* As Go's runtime/pprof writes them: no runtime.goexit under every
	 * goroutine; each receiver's stack ends at its goroutine's entry,
	 * main.recvOuter's caller, as the program's go statement has it. */
	const char *traces = pt_run(out, (const char *[]){ "-traces", NULL });
	cr_expect_null(strstr(traces, "runtime.goexit"),
		       "runtime.goexit in -traces: %.600s", traces);
	int receivers = 0;
	for (const char *block = strstr(traces, "-----------+"); block;) {
		const char *next = strstr(block + 1, "-----------+");
		const char *end = next ? next : block + strlen(block);
		const char *inner = strstr(block, "main.recvInner");
		if (inner && inner < end) {
			/* The block's last frame line. */
			const char *last = end;
			while (last > block && last[-1] == '\n')
				last--;
			const char *line = last;
			while (line > block && line[-1] != '\n')
				line--;
			while (*line == ' ')
				line++;
			cr_expect(strncmp(line, "main.recvOuter\n", 15) == 0,
				  "a receiver's stack does not end at its go "
				  "statement's function: %.*s", (int)(end - block),
				  block);
			receivers++;
		}
		block = next;
	}
	cr_expect_gt(receivers, 0, "no receiver in -traces: %.600s", traces);

	double want = 100 * (double)(s.ticks + s.missed) / RATE_HZ;
	double got = pt_total(out, (const char *[]){ "-focus=main.recvOuter", NULL });
	cr_log_info("main.recvOuter: %.3f s, 100 x (%ld + %ld) / %d Hz = %.3f s",
		    got, s.ticks, s.missed, RATE_HZ, want);
	cr_expect(fabs(got - want) < 0.0015, "main.recvOuter %.3f s, expected %.3f s",
		  got, want);
	e2e_kill(proc.pid);
}

/* The line of fixtures/FILE holding `text` (its first), from the source. */
static int source_line(const char *file, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/fixtures/%s", WS_SOURCE_DIR, file);
	char *source = e2e_read_file(path);
	cr_assert_not_null(source, "%s", path);
	const char *at = strstr(source, text);
	cr_assert_not_null(at, "%s: no \"%s\"", path, text);
	int line = 1;
	for (const char *p = source; p < at; p++)
		line += *p == '\n';
	return line;
}

/*
 * Inlined calls: fixtures/spin_inline.c spins in spin_inlined_step, a
 * static inline function -O2 expands into spin_outer. pprof must see one
 * location per pc with two Line entries, innermost first: -traces marks
 * the inlined function "(inline)" right above its caller, and -raw lists
 * the caller's line at the call, as the source has it.
 */
Test(e2e_pprof, inlined_calls_are_lines_of_one_location, .timeout = 300,
     .fini = e2e_cleanup)
{
	const char *opts[] = { "-f", "pprof", NULL };
	const char *target[] = { e2e_fixture("spin_inline"), "1", NULL };
	const char *out;
	e2e_record(opts, target, &out, 30000);

	const char *traces = pt_run(out, (const char *[]){ "-traces", NULL });
	cr_expect(strstr(traces, "  spin_inlined_step (inline)\n"
				 "             spin_outer\n"),
		  "no spin_inlined_step (inline) above spin_outer: %s", traces);

	char call[64];
	snprintf(call, sizeof(call), "spin_inline.c:%d:",
		 source_line("spin_inline.c", "x = spin_inlined_step(x);"));
	const char *raw = pt_run(out, (const char *[]){ "-raw", NULL });
	const char *inner = pt_line_with(strstr(raw, "\nLocations\n"),
					 (const char *[]){ "spin_inlined_step",
							   "spin_inline.c:", NULL });
	cr_assert_not_null(inner, "-raw: no spin_inlined_step line: %s", raw);
	const char *outer = strchr(inner, '\n') + 1;
	cr_expect(pt_line_with(outer, (const char *[]){ "spin_outer", call, NULL }) == outer,
		  "the line after spin_inlined_step's is not spin_outer at %s: %.300s",
		  call, inner);
}

/* One instruction of `go tool objdump`'s listing. */
struct insn {
	uint64_t start;
	size_t length;
	bool call;
};

static int compare_insn(const void *a, const void *b)
{
	const struct insn *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

/* The instructions of a `go tool objdump` listing ("  file.go:12\t0x4a5b37
 * \te8c4ffffff\t\tCALL main.f(SB)"), sorted by address; *n of them. */
static struct insn *parse_objdump(const char *listing, size_t *n)
{
	size_t cap = 1 << 16;
	struct insn *v = malloc(cap * sizeof(*v));
	cr_assert_not_null(v);
	*n = 0;
	for (const char *line = listing; line && *line;) {
		const char *end = strchr(line, '\n');
		const char *at = strstr(line, "\t0x");
		unsigned long long start;
		char bytes[64], text[64];
		if (at && (!end || at < end) &&
		    sscanf(at, "\t0x%llx\t%63[0-9a-f]\t%63s", &start, bytes,
			   text) == 3) {
			if (*n == cap) {
				cap *= 2;
				v = realloc(v, cap * sizeof(*v));
				cr_assert_not_null(v);
			}
			v[(*n)++] = (struct insn){
				.start = start, .length = strlen(bytes) / 2,
				.call = strncmp(text, "CALL", 4) == 0 };
		}
		line = end ? end + 1 : NULL;
	}
	qsort(v, *n, sizeof(*v), compare_insn);
	return v;
}

/* The instruction holding `address`, or NULL. */
static const struct insn *insn_at(const struct insn *v, size_t n,
				  uint64_t address)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].start <= address)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct insn *i = &v[lo - 1];
	return address < i->start + i->length ? i : NULL;
}

/*
 * Callers' locations point into their calls: a parked goroutine's every
 * frame is a return address (its saved pc too: where gopark's mcall
 * returns), and pprof wants such a location where Go's runtime/pprof puts
 * it, inside the call instruction (a return address may be the next
 * line's, or the next function's). Judged by Go's own disassembler: every
 * location's address in the fixture lies strictly inside a CALL (the
 * root, runtime.goexit, whose planted return address Go's profiles leave
 * out, aside).
 */
Test(e2e_pprof, go_caller_locations_are_inside_their_calls, .timeout = 400,
     .fini = e2e_cleanup)
{
	const char *binary = e2e_need_go_fixture(NULL, "go_parked_n");
	const char *args[] = { "40", NULL };
	struct e2e_proc proc = e2e_start_go("go/go_parked_n", args, 30000);
	const char *opts[] = { "-d", "0.3", "-f", "pprof", "--system-tasks",
			       NULL };
	const char *out;
	e2e_attach(proc.pid, opts, "out.pb.gz", &out, 60000);
	e2e_kill(proc.pid);

	size_t ninsns;
	struct insn *insns = parse_objdump(pt_objdump(binary), &ninsns);
	cr_assert_gt(ninsns, 10000, "go tool objdump listed %zu instructions",
		     ninsns);
	const char *raw = pt_run(out, (const char *[]){ "-raw", NULL });
	const char *locations = strstr(raw, "\nLocations\n");
	cr_assert_not_null(locations, "-raw: %.400s", raw);
	size_t checked = 0;
	for (const char *line = locations + 11; line && *line;) {
		const char *end = strchr(line, '\n');
		unsigned id;
		unsigned long long address;
		char function[256];
		if (sscanf(line, " %u: 0x%llx M=%*u %255s", &id, &address,
			   function) == 3 &&
		    strcmp(function, "runtime.goexit") != 0) {
			const struct insn *i = insn_at(insns, ninsns, address);
			cr_expect(i && i->call && address > i->start,
				  "location %u of %s at %#llx: %s", id, function,
				  address,
				  !i ? "in no instruction"
				     : !i->call ? "not inside a CALL"
						: "at the start of its CALL");
			checked++;
		}
		line = end ? end + 1 : NULL;
	}
	cr_log_info("%zu locations inside their calls", checked);
	cr_expect_geq(checked, 10, "only %zu locations: %s", checked, raw);
	free(insns);
}
