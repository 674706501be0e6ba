/*
 * counters.h - kernel counters of a measured program, counted only in its measured window.
 *
 * The time of a case says how much; counters say why (page faults, TLB flushes, bpf() calls,
 * context switches per operation). They are perf events the program opens on itself and
 * enables only around each timed section, so set-up, warm-up and output are not counted:
 *
 *     bench_counters_open("tlb:tlb_flush");        once, before the first sample
 *     ...
 *     bench_counters_start();                      just before the timer's first reading
 *     t0 = bench_now_ns(); ...work of `ops` operations...; t1 = bench_now_ns();
 *     bench_counters_stop();                       just after the timer's last reading
 *     bench_emit_sample("ns_per_op", (t1 - t0) / ops);
 *     bench_counters_emit(ops);                    one sample line per counter, per operation
 *
 * Start and stop are one prctl(2) each (PR_TASK_PERF_EVENTS_ENABLE/DISABLE enables every
 * event the task opened on itself), outside the timer's readings, so they add no time to the
 * sample; the kernel's own cost of keeping events on a task (saved and restored at each context
 * switch) is what the room's METHOD.md measures as the overhead of counting.
 *
 * Counted, each a sample metric "per_op.<name>" (the value is the window's count / ops):
 * - always (software events, no PMU needed): task_clock_ns, context_switches, cpu_migrations,
 *   page_faults_minor, page_faults_major;
 * - where the host has a PMU: cycles, instructions, branch_misses, cache_misses,
 *   dtlb_load_misses; absent ones are named in the meta line with the reason;
 * - tracepoints the program names, plus any in the environment variable BAKEOFF_TRACEPOINTS
 *   (comma-separated "subsystem:event"), counted with PERF_TYPE_TRACEPOINT, which needs no
 *   PMU: "tlb:tlb_flush" -> per_op.tlb.tlb_flush.
 * The meta line gets "counters" (what was opened) and "counters_absent" ("name: reason; ...").
 *
 * BAKEOFF_COUNTERS=off opens nothing (the meta line says so): the same program without
 * counting, to measure what counting costs.
 *
 * Nothing here is fatal: a machine that cannot count still measures time. Counters of other
 * processes (a helper, a daemon) are not counted: events are per task, not inherited.
 */
#ifndef BAKEOFF_COUNTERS_H
#define BAKEOFF_COUNTERS_H

#include <stdint.h>

/* Opens the events; `tracepoints` may be NULL. Calling it twice is a bug: exit 1. */
void bench_counters_open(const char *tracepoints);
void bench_counters_start(void);
void bench_counters_stop(void);
/* One sample per opened counter: the count since the previous bench_counters_emit(), / ops. */
void bench_counters_emit(double ops);
/* Forgets the counts since the previous emit: a warm-up sample's window is not reported. */
void bench_counters_discard(void);
/* Adds "counters" and "counters_absent" to a meta line being built (bench_meta_begin()). */
void bench_counters_meta(void);
/* How many counters are open (0 before bench_counters_open()). */
int bench_counters_open_count(void);

#endif
