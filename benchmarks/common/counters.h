/*
 * counters.h - kernel counters of a measured program, counted only in its measured window.
 *
 * The time of a case says how much; counters say why (page faults, TLB flushes, bpf() calls,
 * context switches per operation). They are perf events the program opens on itself and
 * enables only around the timed section of a *counted* sample. Counting is not free (a
 * counted syscall tracepoint puts every system call of the task on the slow path, ~120 ns
 * here), so the measured samples are never counted: the harness asks for a few counted
 * samples after them (--counted-samples N), whose times come out as "counted.<metric>", so
 * their ratio to the measured ones is the cost of counting, measured in every trial:
 *
 *     ...warm-up samples, nothing counted...
 *     for (uint64_t i = 0; i < bench_samples_total(&args); i++) {
 *             bool counted = bench_sample_counted(&args, i);
 *             if (counted && !bench_counters_opened())
 *                     bench_counters_open_late("tlb:tlb_flush");   at the first counted one
 *             if (counted)
 *                     bench_counters_start();      just before the timer's first reading
 *             t0 = bench_now_ns(); ...work of `ops` operations...; t1 = bench_now_ns();
 *             if (counted)
 *                     bench_counters_stop();       just after the timer's last reading
 *             bench_emit_sample(bench_metric(counted, "ns_per_op"), (t1 - t0) / ops);
 *             if (counted)
 *                     bench_counters_emit(ops);    one sample line per counter, per operation
 *     }
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
 *   PMU: "tlb:tlb_flush" -> per_op.tlb.tlb_flush. Each distinct tracepoint costs the program
 *   ~40 ms at exit (an RCU grace period to unregister it), so system calls share one:
 *   "syscalls:sys_enter_openat" is counted on raw_syscalls:sys_enter filtered on openat's
 *   number, same count, same name (per_op.syscalls.sys_enter_openat); a call the build's
 *   headers do not know gets its own tracepoint (counters.c). The price is paid in the
 *   counted windows instead: each system call there passes every such counter's filter
 *   (~17 ns per counter here, against ~40 ms per trial saved for each but one).
 * The meta line gets "counters" (what was opened), "counters_on_raw_syscalls" (those of them
 * counted so) and "counters_absent" ("name: reason; ...").
 *
 * BAKEOFF_COUNTERS=off opens nothing (the meta line says so): the same program without
 * counting, to measure what counting costs.
 *
 * Nothing here is fatal: a machine that cannot count still measures time. Counters of other
 * processes (a helper, a daemon) are not counted: events are per task, not inherited, except
 * for a program that measures the processes it starts (bench_counters_open_children()).
 */
#ifndef BAKEOFF_COUNTERS_H
#define BAKEOFF_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

struct bench_args;

/* The loop bound of a sample loop: the measured samples, then the counted ones. */
uint64_t bench_samples_total(const struct bench_args *args);
/* Sample i (0-based, warm-up not included) is a counted one: the measured come first. */
bool bench_sample_counted(const struct bench_args *args, uint64_t i);
/* "counted.<metric>" for a counted sample, else metric itself. The result lives until the next
 * call. */
const char *bench_metric(bool counted, const char *metric);

/* Opens the events; `tracepoints` may be NULL. Calling it twice is a bug: exit 1. */
void bench_counters_open(const char *tracepoints);
/*
 * bench_counters_open(), then a meta line naming what was opened (bench_counters_meta()): for
 * a program that opens its counters right before its first counted sample, as it should. An
 * open event costs even while disabled: a tracepoint's site in the kernel stays live for every
 * task (a system-call tracepoint takes every system call through the slow path), and a
 * software event's hook runs at each fault or switch. Opened at the start, the events slowed
 * mremap-vs-memcpy's measured samples here (~3% at 256 KiB); opened late, nothing measured
 * pays. The first window after opening pays a one-time cost too (up to three times the next
 * ones), so a program whose samples are short runs one counted window of the same work first
 * and discards it (bench_counters_discard()).
 */
void bench_counters_open_late(const char *tracepoints);
/*
 * The same, for a program whose operation is another process (bakeoff-cmd-exec runs a
 * command): the events are inherited by every process it starts while they are enabled, and
 * a child's counts are added to the program's when the child exits; so a window around
 * spawn + wait counts the whole execution, the children's children included.
 */
void bench_counters_open_children(const char *tracepoints);
void bench_counters_start(void);
void bench_counters_stop(void);
/* One sample per opened counter: the count since the previous bench_counters_emit(), / ops. */
void bench_counters_emit(double ops);
/* Forgets the counts since the previous emit: a warm-up sample's window is not reported. */
void bench_counters_discard(void);
/* Adds "counters" and "counters_absent" to a meta line being built (bench_meta_begin()). */
void bench_counters_meta(void);
/* bench_counters_open() was called (even if it opened nothing: BAKEOFF_COUNTERS=off). */
bool bench_counters_opened(void);
/* How many counters are open (0 before bench_counters_open()). */
int bench_counters_open_count(void);

#endif
