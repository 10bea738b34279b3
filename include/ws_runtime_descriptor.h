/*
 * ws_runtime_descriptor: the runtime adapter driven by a JSON descriptor
 * (wallspy-descriptor(5)): any green-thread runtime whose registry can be
 * described in DWARF names, without writing C.
 */
#ifndef WS_RUNTIME_DESCRIPTOR_H
#define WS_RUNTIME_DESCRIPTOR_H

#include "ws_error.h"
#include "ws_runtime.h"

/* The ELF section a target (or one of its libraries) may carry its
 * descriptor in, as the JSON text. */
#define WS_DESCRIPTOR_SECTION ".wallspy.descriptor"

/* Creates the adapter from descriptor `text`; `source` names it in
 * messages. Every DWARF name is resolved here: an error names the JSON path
 * and the missing DWARF thing. Errors: WS_ERR_USAGE (malformed descriptor),
 * WS_ERR_NO_DEBUGINFO (names missing from the target's DWARF). */
struct ws_error *ws_runtime_descriptor_create(const char *text,
					      const char *source,
					      struct ws_target *target,
					      struct ws_symbols *symbols,
					      struct ws_runtime **ret);

/* Creates the adapter from the descriptor file at `path` (--runtime FILE).
 * Errors: those of ws_runtime_descriptor_create; an unreadable file is
 * WS_ERR_USAGE. */
struct ws_error *ws_runtime_descriptor_create_from_file(const char *path,
							struct ws_target *target,
							struct ws_symbols *symbols,
							struct ws_runtime **ret);

/* For `auto`: a descriptor the target carries (the section
 * .wallspy.descriptor in any loaded module, else a file EXE.wallspy.json
 * beside the executable) creates the adapter; without one *ret stays NULL.
 * A descriptor found but wrong is an error, not a silent fallback. */
struct ws_error *ws_runtime_descriptor_detect(struct ws_target *target,
					      struct ws_symbols *symbols,
					      struct ws_runtime **ret);

#endif
