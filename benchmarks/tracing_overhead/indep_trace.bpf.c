// SPDX-License-Identifier: GPL-2.0
/* TEST-ONLY: the BPF half of indep_trace.c, the independent check of the room's headline
 * (METHOD.md, "The independent check"). Written apart from bakeoff_tracer.bpf.c.
 *
 * Three pairs of uprobe/uretprobe programs, one pair per traced function of indep_trace:
 *   floor   - empty: what the trap in and out and the BPF dispatch cost;
 *   batched - a 32-byte record per event into the ring buffer, BPF_RB_NO_WAKEUP (the
 *             consumer drains on its own 1 ms poll timeout);
 *   force   - the same record with BPF_RB_FORCE_WAKEUP (every record wakes the consumer). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct indep_record {
	__u64 when_ns;
	__u32 pid;
	__u32 tid;
	__u64 value; /* the argument on entry, the return value on exit */
	__u32 cpu;
	__u32 is_exit;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} records SEC(".maps");

/* Reserve failures (ring buffer full): the check fails unless this stays 0. */
__u64 lost = 0;

static __always_inline int emit(__u64 value, __u32 is_exit, __u64 flags)
{
	struct indep_record *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	__u64 id = bpf_get_current_pid_tgid();

	if (!r) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	r->when_ns = bpf_ktime_get_ns();
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->value = value;
	r->cpu = bpf_get_smp_processor_id();
	r->is_exit = is_exit;
	bpf_ringbuf_submit(r, flags);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(floor_entry) { return 0; }

SEC("uretprobe")
int BPF_KRETPROBE(floor_exit) { return 0; }

SEC("uprobe")
int BPF_KPROBE(batched_entry, unsigned int duration_us)
{
	return emit(duration_us, 0, BPF_RB_NO_WAKEUP);
}

SEC("uretprobe")
int BPF_KRETPROBE(batched_exit, long ret)
{
	return emit(ret, 1, BPF_RB_NO_WAKEUP);
}

SEC("uprobe")
int BPF_KPROBE(force_entry, unsigned int duration_us)
{
	return emit(duration_us, 0, BPF_RB_FORCE_WAKEUP);
}

SEC("uretprobe")
int BPF_KRETPROBE(force_exit, long ret)
{
	return emit(ret, 1, BPF_RB_FORCE_WAKEUP);
}
