// SPDX-License-Identifier: GPL-2.0
/*
 * cgstat.bpf.c - a cgroup iterator that emits N selected memcg counters of one cgroup as
 * N native-endian u64 values, read straight from struct memcg_vmstats (what memory.stat
 * formats as text). Attached with order BPF_CGROUP_ITER_SELF_ONLY: each read of an iterator
 * fd visits the target cgroup once.
 *
 * Two programs, the loader autoloads one:
 *   dump        no flush: the values are as fresh as the last rstat flush (memory.stat's
 *               own reads flush when enough updates are pending; a worker flushes every 2 s)
 *   dump_flush  sleepable; flushes the cgroup's rstat first with the cgroup_rstat_flush
 *               kfunc (5.19 to 6.15), as memory.stat does when enough updates are pending.
 *               Since 6.16 the kfunc is css_rstat_flush(css) and flushes one subsystem's
 *               tree: a BPF program can pass it only a trusted css, i.e. &cgrp->self (base
 *               stats); the memory css read from cgrp->subsys[] is untrusted to the
 *               verifier. So on 6.16+ there is no memcg flush from BPF and the loader
 *               refuses dump_flush with that reason (METHOD.md).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cgstat.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load: which counters, where they are, their units. */
const volatile __u32 nr_fields = 0;
const volatile struct cgstat_field fields[CGSTAT_MAX_FIELDS] = {};

/* Sleepable kfunc, 5.19 to 6.15 (renamed and narrowed to css_rstat_flush in 6.16); weak so
 * that `dump` still loads on a kernel without it. */
extern void cgroup_rstat_flush(struct cgroup *cgrp) __ksym __weak;

/*
 * One counter. Everything about struct memcg_vmstats is a CO-RE relocation against the running
 * kernel's BTF: where state[], events[], state_local[] and events_local[] are (their offsets
 * moved as arrays were compacted and added between 6.1, 6.10 and 6.12) and whether the local
 * arrays exist at all (6.6+; the loader refuses local fields without them, and the guard keeps
 * the program loadable on 6.1: a relocation against a missing field is poisoned, and fails the
 * load wherever the verifier can reach it, so it must stay inside the guard).
 * Which slot holds an item is the loader's (memcg_layout.c). Counters that went negative
 * through per-CPU drift print as 0, as memcg_page_state does.
 */
static __always_inline __u64 read_counter(struct memcg_vmstats *vm, const volatile struct cgstat_field *f)
{
	long value = 0;
	__u32 slot = f->slot;

	switch (f->array) {
	case CGSTAT_STATE:
		bpf_core_read(&value, sizeof(value), &vm->state[slot]);
		break;
	case CGSTAT_STATE_LOCAL:
		if (bpf_core_field_exists(vm->state_local)) {
			barrier_var(vm); /* or clang hoists &vm->state_local out of the guard */
			bpf_core_read(&value, sizeof(value), &vm->state_local[slot]);
		}
		break;
	case CGSTAT_EVENTS:
		bpf_core_read(&value, sizeof(value), &vm->events[slot]);
		return (__u64)value * f->unit;
	case CGSTAT_EVENTS_LOCAL:
		if (bpf_core_field_exists(vm->events_local)) {
			barrier_var(vm);
			bpf_core_read(&value, sizeof(value), &vm->events_local[slot]);
		}
		return (__u64)value * f->unit;
	}
	return value < 0 ? 0 : (__u64)value * f->unit;
}

static __always_inline struct cgroup_subsys_state *memcg_css(struct cgroup *cgrp)
{
	return cgrp->subsys[bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id)];
}

static __always_inline int emit(struct seq_file *seq, struct cgroup_subsys_state *css)
{
	struct mem_cgroup *memcg;
	struct memcg_vmstats *vm;
	__u32 n = nr_fields;

	if (!css)
		return 0;
	/* css is the first member of struct mem_cgroup; container_of keeps it CO-RE anyway. */
	memcg = container_of(css, struct mem_cgroup, css);
	vm = BPF_CORE_READ(memcg, vmstats);
	if (!vm)
		return 0;
	/* One 8-byte write per counter: a 128-counter buffer would not fit the 512-byte stack,
	 * and bpf_seq_write only copies into the seq_file buffer. */
	for (__u32 i = 0; i < CGSTAT_MAX_FIELDS; i++) {
		__u64 value;

		if (i >= n)
			break;
		value = read_counter(vm, &fields[i]);
		bpf_seq_write(seq, &value, sizeof(value));
	}
	return 0;
}

SEC("iter/cgroup")
int dump(struct bpf_iter__cgroup *ctx)
{
	struct cgroup *cgrp = ctx->cgroup;

	if (!cgrp) /* the end-of-iteration call */
		return 0;
	return emit(ctx->meta->seq, memcg_css(cgrp));
}

SEC("iter.s/cgroup")
int dump_flush(struct bpf_iter__cgroup *ctx)
{
	struct cgroup *cgrp = ctx->cgroup;

	if (!cgrp)
		return 0;
	cgroup_rstat_flush(cgrp);
	return emit(ctx->meta->seq, memcg_css(cgrp));
}
