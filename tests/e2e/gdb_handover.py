# Shared by the gdb scripts of the e2e tests (go_stop_in_g0_vdso.py,
# greenrt_stop_switching_in.py), which import it from their own directory:
# reading the inferior's memory, and handing the stopped program over to
# wallspy.
import os
import time

import gdb


def u64(address):
    data = gdb.selected_inferior().read_memory(address, 8).tobytes()
    return int.from_bytes(data, 'little')


def hand_over():
    """Resumes the selected thread with SIGSTOP (it takes the signal before
    it runs another instruction: a group stop), detaches, which leaves every
    thread in the group stop, then waits until the file named by
    $WALLSPY_TEST_DONE exists so the program keeps its parent meanwhile."""
    gdb.execute('set scheduler-locking off')
    # Not queue-signal + detach: gdb's detach dropped the queued SIGSTOP in
    # 3 of 4 runs (the program ran on to its end: a zombie, 2026-12-02).
    gdb.execute('signal SIGSTOP')
    gdb.execute('detach')
    done = os.environ.get('WALLSPY_TEST_DONE', '')
    for _ in range(1200):
        if not done or os.path.exists(done):
            break
        time.sleep(0.05)
