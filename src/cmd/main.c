/*
 * wallspy's entry point: parse the command line and dispatch to the
 * subcommand (cmd_record.c, cmd_dump.c). Errors become exit codes here.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ws_cli.h"
#include "ws_cmd_dump.h"
#include "ws_cmd_record.h"
#include "ws_version.h"

int main(int argc, char **argv)
{
	struct ws_options options;
	struct ws_error *err = ws_cli_parse(argc, argv, &options);
	if (err)
		return ws_cli_report(err);
	ws_cli_read_environment(&options);
	switch (options.command) {
	case WS_CMD_HELP:
		fputs(ws_cli_help(), stdout);
		return 0;
	case WS_CMD_VERSION:
		if (WS_VCS_DESCRIBE[0])
			printf("wallspy %s (git %s)\n", WS_VERSION, WS_VCS_DESCRIBE);
		else
			printf("wallspy %s\n", WS_VERSION);
		return 0;
	case WS_CMD_RECORD:
	case WS_CMD_ATTACH:
		return ws_cmd_record(&options);
	case WS_CMD_DUMP:
		return ws_cmd_dump(&options);
	}
	return 1;
}
