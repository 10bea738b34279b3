#!/usr/bin/env python3
# Writes the named seeds of fuzz/corpus/fuzz_walk (see fuzz/fuzz_walk.c):
# its world's layout (ctypes lays it out as the C compiler does), pointers
# tagged for relocation (top 32 bits 0xa5a5a5a5, low 32: the offset).
# usage: fuzz/walk_seeds.py fuzz/corpus/fuzz_walk
import ctypes as C, os, sys
class Link(C.Structure): _fields_=[("next",C.c_uint64)]
class Task(C.Structure):
    _fields_=[("id",C.c_long),("state",C.c_int),("events",C.c_uint),("next",C.c_uint64),
              ("label",C.c_uint64),("name",C.c_char*16),("sp",C.c_uint64),("jb",C.c_uint64*3),
              ("stack_base",C.c_uint64),("stack_size",C.c_uint32),("link",Link),("switches",C.c_uint)]
class Queue(C.Structure): _fields_=[("head",C.c_uint64),("count",C.c_long)]
class World(C.Structure):
    _fields_=[("tasks",Task*6),("ring",Queue),("list",Queue),("header",Link),("current",C.c_uint64),
              ("table",C.c_uint64*6),("table_len",C.c_long),("dyn",C.c_uint64),("dyn_len",C.c_long),
              ("stack",C.c_uint64*16)]
TAG=0xa5a5a5a5<<32
def task(i): return TAG|(i*C.sizeof(Task))
def link(i): return TAG|(i*C.sizeof(Task)+Task.link.offset)
def at(field, extra=0): return TAG|(getattr(World,field).offset+extra)
def base():
    w=World()
    for i in range(6):
        t=w.tasks[i]; t.id=100+i; t.state=[1,2,1,2,3,2][i]; t.events=0x10 if i%2 else 0x21
        t.name=b"t%d"%i; t.sp=at("stack",8*8); t.stack_base=0x10000; t.stack_size=0x4000
        t.label=at("stack",8*12); t.switches=i
        t.jb[0]=0x1111; t.jb[1]=0x2222; t.jb[2]=0x3333
    w.stack[9]=0x401000
    w.stack[12]=(5<<32)|7  # type_id 7, bytesize 5
    w.stack[13]=int.from_bytes(b"label\0\0\0","little")
    w.tasks[0].next=task(1); w.tasks[1].next=task(0); w.ring.head=task(0); w.ring.count=2
    w.tasks[2].next=task(3); w.tasks[3].next=0; w.list.head=task(2); w.list.count=2
    w.header.next=link(4); w.tasks[4].link.next=at("header")
    for i in range(6): w.table[i]=task(i)
    w.table_len=6; w.dyn=task(0); w.dyn_len=6; w.current=task(5)
    return w
out=sys.argv[1]
def save(name, sel, limit, w):
    open(os.path.join(out,name),"wb").write(bytes([sel,limit])+bytes(w))
w=base(); save("every_root_ok",0,0,w); save("every_root_live",0x80,3,w)
w=base(); w.tasks[3].next=task(2); w.list.count=1<<31; save("list_cycle_count_2e31",0,0,w)
w=base(); w.table_len=-1; w.dyn_len=1<<31; save("array_counts_huge",0,2,w)
w=base(); w.tasks[2].next=0x7000dead0000; save("list_wild_next",0,0,w)
w=base(); w.tasks[4].link.next=link(4); save("sentinel_ring_self_cycle",0,0,w)
w=base(); w.current=task(0)
for i in range(5): w.tasks[i].next=task(i+1)
save("mangled_list_ok",1,0,w); save("mangled_list_live",0x81,0,w)
w.tasks[5].next=task(0); save("mangled_list_ring",1,0,w)
