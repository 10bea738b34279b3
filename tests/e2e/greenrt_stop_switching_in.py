# gdb script (python) for e2e_green's running_task_caught_switching_in test:
# runs the greenrt program given to gdb, stops a worker in swapcontext
# while it switches into a task that ran before (greenrt.c's scheduler:
# swapcontext(&w->sched_ctx, &t->ctx), t->switches > 1), steps it until its
# stack pointer is the task's saved one (loaded from t->ctx) while its pc is
# still in swapcontext, and prints
#   WALLSPY-TEST pid=P tid=T id=N word=W
# (W: the word at the stack pointer, which the switch has not yet made a
# return address), then resumes that thread with SIGSTOP (a group stop,
# taken before any other instruction of it), detaches, and waits until the
# file named by $WALLSPY_TEST_DONE exists so the program keeps its parent.
import os
import sys

import gdb

sys.path.insert(0, os.path.dirname(__file__))
from gdb_handover import hand_over, u64  # noqa: E402


def value(expression):
    return int(gdb.parse_and_eval(expression)) & (2**64 - 1)


CTX = value('&((struct greenrt_task *)0)->ctx')
SCHED = value('&((struct greenrt_worker *)0)->sched_ctx')
WORKER_SIZE = value('sizeof(struct greenrt_worker)')
NWORKERS = value('sizeof(greenrt_workers)') // WORKER_SIZE


class SwitchIn(gdb.Breakpoint):
    def stop(self):
        # Evaluated here: the program is relocated (PIE) once it runs.
        workers = value('&greenrt_workers[0]')
        worker = value('$rdi') - SCHED
        if worker < workers or (worker - workers) % WORKER_SIZE or \
                (worker - workers) // WORKER_SIZE >= NWORKERS:
            return False
        task = value('$rsi') - CTX
        return value('((struct greenrt_task *)%d)->switches' % task) > 1


SwitchIn('swapcontext')
gdb.execute('run')
# Only this thread steps from here; the others stay where they are.
gdb.execute('delete')
gdb.execute('set scheduler-locking on')
task = value('$rsi') - CTX
saved_sp = value('((struct greenrt_task *)%d)->ctx.uc_mcontext.gregs[15]' % task)
ucp = value('$rsi')
for _ in range(200):
    gdb.execute('stepi', to_string=True)
    if value('$rsp') == saved_sp:
        break
frame = gdb.selected_frame()
name = frame.name() or ''
print('WALLSPY-TEST pid=%d tid=%d id=%d word=%#x in=%s' % (
    gdb.selected_inferior().pid, gdb.selected_thread().ptid[1],
    value('((struct greenrt_task *)%d)->id' % task), u64(saved_sp),
    name if value('$rsp') == saved_sp else 'not-reached'), flush=True)
hand_over()
