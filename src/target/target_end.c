/*
 * Ending a command wallspy launched (ws_target_end, see ws_target.h): the
 * recording is over, the command must not run on unprofiled, orphaned.
 * Detach first, so the target handles the signal itself (its handlers,
 * its cleanup) as it would under timeout(1); then SIGCONT, as timeout(1)
 * sends, so a command in a group stop (SIGSTOP, Ctrl-Z) handles it rather
 * than sit out the grace; then SIGKILL after the grace period. Waiting
 * uses the same blocked-SIGCHLD wait as every other wait of wallspy, so a
 * second Ctrl-C is seen at once.
 */
#include "target_internal.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

/* Reaps the leader when it is gone; true then. */
static bool reaped(struct ws_target *t)
{
	int status;
	pid_t got = waitpid(t->pid, &status, __WALL | WNOHANG);
	if (got == t->pid && (WIFEXITED(status) || WIFSIGNALED(status))) {
		t->exited = true;
		t->exit_status = status;
		return true;
	}
	/* ECHILD: reaped already (the detach's own wait took the leader's
	 * exit, and with it set exited). */
	if (got < 0 && errno == ECHILD) {
		t->exited = true;
		return true;
	}
	return false;
}

void ws_target_end(struct ws_target *t, int signal, uint64_t grace_ns,
		   struct ws_target_end *ret)
{
	*ret = (struct ws_target_end){ .signal = signal,
				       .grace = (double)grace_ns / 1e9 };
	if (t->exited)
		return;
	ws_target_detach(t);
	if (t->exited || reaped(t))
		return;
	if (signal)
		kill(t->pid, signal);
	/* Also after the terminal's signal (0 here), pending on a stopped
	 * command until it runs. */
	if (signal != SIGCONT)
		kill(t->pid, SIGCONT);
	uint64_t deadline = ws_now_ns() + grace_ns;
	while (!reaped(t)) {
		if (ws_target_stop_requested() || !target_wait_sigchld(deadline)) {
			ret->killed = true;
			kill(t->pid, SIGKILL);
			while (waitpid(t->pid, &t->exit_status, __WALL) < 0 &&
			       errno == EINTR)
				;
			t->exited = true;
			return;
		}
	}
}
