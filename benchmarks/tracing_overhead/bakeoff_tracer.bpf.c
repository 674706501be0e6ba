// SPDX-License-Identifier: GPL-2.0
/*
 * bakeoff_tracer.bpf.c - entry and exit of the traced function into a BPF ring buffer.
 *
 * One uprobe and one uretprobe; each reserves a record, fills it and submits it with the
 * wake-up policy the loader chose (submit_flags). A failed reservation (ring buffer full) is
 * counted per CPU in bakeoff_drops, so the consumer can prove captured + dropped = expected.
 * bakeoff_nop_in/out are the same attach points with empty bodies: the ebpf-floor variant,
 * the cost of the uprobe trap and the BPF dispatch alone.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bakeoff_tracer.h"

char LICENSE[] SEC("license") = "GPL";

/* 0 (adaptive: wake the consumer only if it has caught up), BPF_RB_FORCE_WAKEUP (every
 * record) or BPF_RB_NO_WAKEUP (never; the consumer polls on a timer). Set before load. */
const volatile __u64 submit_flags = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	/* 16 MiB: 400k records of 40 bytes (with the ring's 8-byte header), i.e. the seed's
	 * largest scenario (100k calls, 200k events) twice over even if the consumer never ran. */
	__uint(max_entries, 16 << 20);
} bakeoff_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} bakeoff_drops SEC(".maps");

static __always_inline int record(__u32 kind, __u64 value)
{
	struct bakeoff_event *e;
	__u64 id;

	e = bpf_ringbuf_reserve(&bakeoff_events, sizeof(*e), 0);
	if (!e) {
		__u32 zero = 0;
		__u64 *drops = bpf_map_lookup_elem(&bakeoff_drops, &zero);

		if (drops)
			*drops += 1; /* per-CPU slot: no other writer, no atomic needed */
		return 0;
	}
	id = bpf_get_current_pid_tgid();
	e->ts_ns = bpf_ktime_get_ns();
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->value = value;
	e->kind = kind;
	e->cpu = bpf_get_smp_processor_id();
	bpf_ringbuf_submit(e, submit_flags);
	return 0;
}

/* BPF_KPROBE/BPF_KRETPROBE: libbpf 1.1 has no BPF_UPROBE yet (1.2); both read pt_regs. */
SEC("uprobe")
int BPF_KPROBE(bakeoff_entry, __u32 duration_us)
{
	return record(BAKEOFF_ENTRY, duration_us);
}

SEC("uretprobe")
int BPF_KRETPROBE(bakeoff_exit, __u64 ret)
{
	return record(BAKEOFF_EXIT, ret);
}

SEC("uprobe")
int bakeoff_nop_in(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int bakeoff_nop_out(void *ctx)
{
	return 0;
}
