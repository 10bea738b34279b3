/*
 * Fuzz target: the runtime descriptor parser (ws_descriptor_parse) over
 * arbitrary JSON. A descriptor may come from the target itself (an ELF
 * section, a file beside its executable) while wallspy runs as root, so
 * the parser must reject anything malformed with an error, never crash,
 * and resolve names without reading target memory. The DWARF it resolves
 * against is greenrt_parked's, read offline from the fixture's file
 * ($WS_FUZZ_FIXTURE: tools/fuzz points it at the main build's).
 */
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_image.h"
#include "runtime_descriptor_internal.h"
#include "ws_dwtype.h"

static const Dwfl_Callbacks offline = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static struct fuzz_image image;  /* empty: parsing reads no memory */
static struct ws_dwtype_program *prog;

static void setup(void)
{
	const char *fixture = getenv("WS_FUZZ_FIXTURE");
	Dwfl *dwfl = dwfl_begin(&offline);
	if (!fixture || !dwfl ||
	    !dwfl_report_offline(dwfl, "greenrt_parked", fixture, -1) ||
	    dwfl_report_end(dwfl, NULL, NULL) != 0) {
		fprintf(stderr, "fuzz_descriptor_parse: cannot read "
			"$WS_FUZZ_FIXTURE (%s)\n", fixture ? fixture : "unset");
		abort();
	}
	struct ws_memory_reader reader = fuzz_image_reader(&image);
	struct ws_error *err = ws_dwtype_program_create(dwfl, &reader, &prog);
	if (err) {
		fprintf(stderr, "fuzz_descriptor_parse: %s\n", err->message);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!prog)
		setup();
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	struct descriptor d;
	memset(&d, 0, sizeof(d));
	static char source[] = "fuzz.wallspy.json";
	d.source = source;
	image.reads = 0;
	struct ws_error *err = ws_descriptor_parse(&d, prog, text);
	ws_error_destroy(err);
	ws_descriptor_deinit(&d);
	free(text);
	if (image.reads)
		abort(); /* parsing must not read the target */
	return 0;
}
