/*
 * ws_cmd_record: `wallspy record` and `wallspy attach`, the sampling loop
 * from the first tick to the written profile.
 */
#ifndef WS_CMD_RECORD_H
#define WS_CMD_RECORD_H

#include "ws_cli.h"

/* Runs record or attach as `options` says; returns wallspy's exit code. */
int ws_cmd_record(const struct ws_options *options);

#endif
