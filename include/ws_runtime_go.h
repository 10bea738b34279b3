/*
 * ws_runtime_go: the adapter for Go programs (goroutines via runtime.allgs
 * and the target's DWARF). Tested with Go 1.19.
 */
#ifndef WS_RUNTIME_GO_H
#define WS_RUNTIME_GO_H

#include "ws_error.h"
#include "ws_runtime.h"

/* Creates the adapter. Errors: WS_ERR_NO_DEBUGINFO when the target is a Go
 * program without DWARF (the message says how to rebuild) or is not Go. */
struct ws_error *ws_runtime_go_create(struct ws_target *target,
				      struct ws_symbols *symbols,
				      struct ws_runtime **ret);

/* For `auto`: creates the adapter when a loaded module is a Go binary
 * (.go.buildinfo or .gopclntab), else leaves *ret NULL. A Go binary
 * without DWARF is an error (WS_ERR_NO_DEBUGINFO), not a profile of its
 * threads that would hide every goroutine. */
struct ws_error *ws_runtime_go_detect(struct ws_target *target,
				      struct ws_symbols *symbols,
				      struct ws_runtime **ret);

#endif
