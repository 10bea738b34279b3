/*
 * ws_clock: the one clock wallspy measures time with (CLOCK_MONOTONIC, in
 * nanoseconds): tick deadlines, pauses, CPU budgets and recording times all
 * compare readings of it; ws_cpu_ns is wallspy's own CPU, for --max-cpu.
 * Async-signal-safe (clock_gettime is).
 */
#ifndef WS_CLOCK_H
#define WS_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds (~20 ns through the vDSO). */
uint64_t ws_now_ns(void);

/* The calling thread's CPU time, user and system (its ptrace calls'
 * kernel work included), in nanoseconds: what --max-cpu bounds. A system
 * call, about 0.3 us. */
uint64_t ws_cpu_ns(void);

#endif
