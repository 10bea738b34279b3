/*
 * ws_cmd_dump: `wallspy dump`, every task's stack once.
 */
#ifndef WS_CMD_DUMP_H
#define WS_CMD_DUMP_H

#include "ws_cli.h"

/* Runs dump as `options` says; returns wallspy's exit code. */
int ws_cmd_dump(const struct ws_options *options);

#endif
