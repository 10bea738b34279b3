/*
 * Names of task states, shared by every runtime adapter and output.
 */
#include "ws_frame.h"

const char *ws_state_name(enum ws_state state)
{
	switch (state) {
	case WS_STATE_RUNNING:
		return "running";
	case WS_STATE_RUNNABLE:
		return "runnable";
	case WS_STATE_WAITING:
		return "waiting";
	case WS_STATE_SYSCALL:
		return "syscall";
	case WS_STATE_IDLE:
		return "idle";
	case WS_STATE_UNKNOWN:
		break;
	}
	return "unknown";
}
