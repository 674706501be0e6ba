/*
 * memcg_layout.h - where each memcg statistic lives in struct memcg_vmstats on a kernel,
 * read from that kernel's BTF (the running one, or any vmlinux/BTF file for the tests).
 *
 * The BPF program (cgstat.bpf.c) reaches struct memcg_vmstats and its arrays through CO-RE
 * relocations; what CO-RE cannot give is which slot of an array holds an item, because the
 * tables that compact the arrays are static data in mm/memcontrol.c, not types. This module
 * decides the slot from BTF: the array lengths, the enum values, and which tables this kernel
 * has (memcg_layout.c says how).
 */
#ifndef MEMCG_LAYOUT_H
#define MEMCG_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

struct btf;

struct memcg_layout {
	int states, events;      /* lengths of memcg_vmstats.state[] and .events[] in BTF */
	bool states_direct;      /* state[] indexed by enum value (6.1 to 6.9) */
	bool has_local;          /* state_local[] and events_local[] exist (6.6+) */
	const char *state_table; /* which known table gave the state slots ("enum" if direct) */
	const char *event_table; /* which known table gave the event slots */
};

/* Reads the layout; on an unknown layout writes one line to err and returns -1. */
int memcg_layout_read(const struct btf *btf, struct memcg_layout *l, char *err, size_t errlen);

/* Where a kernel item (an enum node_stat_item, memcg_stat_item or vm_event_item member's
 * name) lives: *is_event tells the array, *slot the index. -1 when memcg does not keep it. */
int memcg_layout_slot(const struct btf *btf, const struct memcg_layout *l, const char *item,
		      bool *is_event, int *slot);

#endif /* MEMCG_LAYOUT_H */
