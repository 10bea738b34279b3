# gdb script (python) for e2e_go's running_goroutine_in_g0_vdso_call test:
# runs the Go program given to gdb, stops the thread that calls
# runtime.nanotime1 on g0 while its M's curg is a running goroutine (the
# runtime's own nanotime: newproc -> systemstack -> wakep -> pidleget, or
# execute -> casgstatus), steps it until m.vdsoSP is set, prints
#   WALLSPY-TEST pid=P goid=N vdsosp=X lo=X hi=X
# resumes that thread with SIGSTOP (it takes the signal before it runs
# another instruction: a group stop, which gdb reports) and detaches, which
# leaves every thread in the group stop, then waits until the file named by
# $WALLSPY_TEST_DONE exists so the program keeps its parent meanwhile.
# Offsets come from the program's DWARF, by field name, through gdb; 2 is
# Go's _Grunning (runtime2.go, every release 1.19 to 1.26).
import os
import sys

import gdb

sys.path.insert(0, os.path.dirname(__file__))
from gdb_handover import hand_over, u64  # noqa: E402


def off(type_name, field):
    return gdb.lookup_type(type_name)[field].bitpos // 8


G_STACK, G_M = off('runtime.g', 'stack'), off('runtime.g', 'm')
G_STATUS, G_GOID = off('runtime.g', 'atomicstatus'), off('runtime.g', 'goid')
M_CURG, M_VDSOSP = off('runtime.m', 'curg'), off('runtime.m', 'vdsoSP')
SCAN, RUNNING = 0x1000, 2


def reg(name):
    return int(gdb.parse_and_eval('$' + name)) & (2**64 - 1)


class OnG0(gdb.Breakpoint):
    def stop(self):
        g = reg('r14')
        m = u64(g + G_M)
        if not m:
            return False
        curg = u64(m + M_CURG)
        status = u64(curg + G_STATUS) & 0xffffffff & ~SCAN if curg else 0
        return curg not in (0, g) and status == RUNNING


OnG0('runtime.nanotime1')
gdb.execute('run')
g = reg('r14')
m = u64(g + G_M)
curg = u64(m + M_CURG)
for _ in range(64):
    if u64(m + M_VDSOSP):
        break
    gdb.execute('stepi', to_string=True)
print('WALLSPY-TEST pid=%d goid=%d vdsosp=%#x lo=%#x hi=%#x' % (
    gdb.selected_inferior().pid, u64(curg + G_GOID), u64(m + M_VDSOSP),
    u64(curg + G_STACK), u64(curg + G_STACK + 8)), flush=True)
hand_over()
