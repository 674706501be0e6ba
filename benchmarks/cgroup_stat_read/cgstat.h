/* cgstat.h - what the memcg iterator (cgstat.bpf.c) and its loader (memcg_iter.c) share. */
#ifndef CGSTAT_H
#define CGSTAT_H

/* memory.stat has about 40 counters on cgroup v1 and about 90 on v2 (6.18). */
#define CGSTAT_MAX_FIELDS 128

/* Which array of struct memcg_vmstats a counter lives in. */
enum cgstat_array {
	CGSTAT_STATE,        /* hierarchical node/memcg stats: v2 memory.stat, v1 total_* */
	CGSTAT_STATE_LOCAL,  /* this cgroup's own: v1 memory.stat without total_ */
	CGSTAT_EVENTS,       /* hierarchical vm events */
	CGSTAT_EVENTS_LOCAL, /* this cgroup's own vm events */
};

/* One selected counter: where it is, and what to multiply it by to print memory.stat's
 * value (PAGE_SIZE for page counts, 1024 for NR_KERNEL_STACK_KB, 1 for bytes and events). */
struct cgstat_field {
	__u32 array; /* enum cgstat_array */
	__u32 slot;  /* index into that array (memcg stats are a compacted subset, see loader) */
	__u64 unit;
};

#endif /* CGSTAT_H */
