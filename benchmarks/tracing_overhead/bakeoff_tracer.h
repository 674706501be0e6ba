/* bakeoff_tracer.h - what the eBPF tracer's programs and its consumer share. */
#ifndef BAKEOFF_TRACER_H
#define BAKEOFF_TRACER_H

enum bakeoff_event_kind {
	BAKEOFF_ENTRY = 1,
	BAKEOFF_EXIT = 2,
};

/* One record in the ring buffer and in the trace file: what the LTTng variant records too
 * (a timestamp, the process and thread, the argument at entry or the return value at exit). */
struct bakeoff_event {
	__u64 ts_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 pid;
	__u32 tid;
	__u64 value; /* entry: duration_us; exit: the return value */
	__u32 kind;  /* enum bakeoff_event_kind */
	__u32 cpu;
};

#endif /* BAKEOFF_TRACER_H */
