/*
 * memcg_layout.c - see memcg_layout.h.
 *
 * struct memcg_vmstats holds state[] and events[] (and, since 6.6, state_local[] and
 * events_local[]); how an item maps to a slot changed twice:
 *   - events[] is compacted since 6.1 ("memcg: reduce size of memcg vmstats structures"):
 *     slot = position in the static table memcg_vm_event_stat[] of mm/memcontrol.c;
 *   - state[] is indexed by the item's enum value (node_stat_item, then memcg_stat_item from
 *     NR_VM_NODE_STAT_ITEMS) until 6.9, and compacted since 6.10 ("memcg: reduce memory size
 *     of mem_cgroup_events_index" and its series) by memcg_node_stat_items[] then
 *     memcg_stat_items[].
 * BTF tells which: state[] as long as MEMCG_NR_STAT means indexed by enum value. The tables
 * are static data, not types, so they are not in BTF (and not in kallsyms without
 * CONFIG_KALLSYMS_ALL, which this project's own machine lacks): they are carried here, one per
 * era, each entry kept only when its enum item exists in this kernel's BTF and, for items
 * behind a config option that adds no enum item, when that option's marker is there (items
 * come and go with config options). A table fits when it gives exactly BTF's array length;
 * the newest fitting table of the right era is used, and none fitting means an unknown
 * layout (the iterator refuses to run). A table that fits in size but not in order would
 * still give wrong values: every trial therefore checks the values against memory.stat
 * before it measures (cgstat.c). The tables were checked against the kernels' own
 * (read from /proc/kcore) on Debian's 6.1 and 6.12 and this machine's 6.18
 * (docs/notes/kernels-rooms-20261129-epyc.md).
 */
#include "memcg_layout.h"

#include <stdio.h>
#include <string.h>

#include <bpf/btf.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* An item is in a table only when its enum member exists and, if `needs` is set, when the
 * kernel has that config (told by another enum member or struct member, see has_marker). */
struct table_entry {
	const char *item;
	const char *needs;
};

struct table {
	const char *name; /* the kernel the order was taken from */
	const struct table_entry *entries;
	size_t n;
};

/* memcg_node_stat_items[] then memcg_stat_items[], 6.18 order; later kernels' NR_VMALLOC and
 * PGSTEAL/PGSCAN node items exist in enum node_stat_item only there. */
static const struct table_entry states_618[] = {
	{ "NR_INACTIVE_ANON", NULL }, { "NR_ACTIVE_ANON", NULL }, { "NR_INACTIVE_FILE", NULL },
	{ "NR_ACTIVE_FILE", NULL }, { "NR_UNEVICTABLE", NULL }, { "NR_SLAB_RECLAIMABLE_B", NULL },
	{ "NR_SLAB_UNRECLAIMABLE_B", NULL }, { "WORKINGSET_REFAULT_ANON", NULL },
	{ "WORKINGSET_REFAULT_FILE", NULL }, { "WORKINGSET_ACTIVATE_ANON", NULL },
	{ "WORKINGSET_ACTIVATE_FILE", NULL }, { "WORKINGSET_RESTORE_ANON", NULL },
	{ "WORKINGSET_RESTORE_FILE", NULL }, { "WORKINGSET_NODERECLAIM", NULL },
	{ "NR_ANON_MAPPED", NULL }, { "NR_FILE_MAPPED", NULL }, { "NR_FILE_PAGES", NULL },
	{ "NR_FILE_DIRTY", NULL }, { "NR_WRITEBACK", NULL }, { "NR_SHMEM", NULL },
	{ "NR_SHMEM_THPS", NULL }, { "NR_FILE_THPS", NULL }, { "NR_ANON_THPS", NULL },
	{ "NR_VMALLOC", NULL }, { "NR_KERNEL_STACK_KB", NULL }, { "NR_PAGETABLE", NULL },
	{ "NR_SECONDARY_PAGETABLE", NULL }, { "NR_SWAPCACHE", "config:SWAP" },
	{ "PGPROMOTE_SUCCESS", NULL }, { "PGDEMOTE_KSWAPD", NULL }, { "PGDEMOTE_DIRECT", NULL },
	{ "PGDEMOTE_KHUGEPAGED", NULL }, { "PGDEMOTE_PROACTIVE", NULL },
	{ "PGSTEAL_KSWAPD", NULL }, { "PGSTEAL_DIRECT", NULL }, { "PGSTEAL_KHUGEPAGED", NULL },
	{ "PGSTEAL_PROACTIVE", NULL }, { "PGSTEAL_ANON", NULL }, { "PGSTEAL_FILE", NULL },
	{ "PGSCAN_KSWAPD", NULL }, { "PGSCAN_DIRECT", NULL }, { "PGSCAN_KHUGEPAGED", NULL },
	{ "PGSCAN_PROACTIVE", NULL }, { "PGSCAN_ANON", NULL }, { "PGSCAN_FILE", NULL },
	{ "PGREFILL", NULL }, { "NR_HUGETLB", NULL },
	/* memcg_stat_items[] */
	{ "MEMCG_SWAP", NULL }, { "MEMCG_SOCK", NULL }, { "MEMCG_PERCPU_B", NULL },
	{ "MEMCG_VMALLOC", NULL }, { "MEMCG_KMEM", NULL }, { "MEMCG_ZSWAP_B", NULL },
	{ "MEMCG_ZSWAPPED", NULL },
};

/* memcg_vm_event_stat[], 6.18 order. */
static const struct table_entry events_618[] = {
	{ "PGPGIN", "config:MEMCG_V1" }, { "PGPGOUT", "config:MEMCG_V1" }, { "PSWPIN", NULL },
	{ "PSWPOUT", NULL }, { "PGSCAN_KSWAPD", NULL }, { "PGSCAN_DIRECT", NULL },
	{ "PGSCAN_KHUGEPAGED", NULL }, { "PGSCAN_PROACTIVE", NULL }, { "PGSTEAL_KSWAPD", NULL },
	{ "PGSTEAL_DIRECT", NULL }, { "PGSTEAL_KHUGEPAGED", NULL }, { "PGSTEAL_PROACTIVE", NULL },
	{ "PGFAULT", NULL }, { "PGMAJFAULT", NULL }, { "PGREFILL", NULL }, { "PGACTIVATE", NULL },
	{ "PGDEACTIVATE", NULL }, { "PGLAZYFREE", NULL }, { "PGLAZYFREED", NULL },
	{ "SWPIN_ZERO", NULL }, { "SWPOUT_ZERO", NULL }, { "ZSWPIN", NULL }, { "ZSWPOUT", NULL },
	{ "ZSWPWB", NULL }, { "THP_FAULT_ALLOC", NULL }, { "THP_COLLAPSE_ALLOC", NULL },
	{ "THP_SWPOUT", NULL }, { "THP_SWPOUT_FALLBACK", NULL }, { "NUMA_PAGE_MIGRATE", NULL },
	{ "NUMA_PTE_UPDATES", NULL }, { "NUMA_HINT_FAULTS", NULL },
};

/* memcg_vm_event_stat[] of 6.12: 6.18's without PSWPIN and PSWPOUT (proactive reclaim's items
 * do not exist in its enum yet). */
static const struct table_entry events_612[] = {
	{ "PGPGIN", "config:MEMCG_V1" }, { "PGPGOUT", "config:MEMCG_V1" },
	{ "PGSCAN_KSWAPD", NULL }, { "PGSCAN_DIRECT", NULL }, { "PGSCAN_KHUGEPAGED", NULL },
	{ "PGSTEAL_KSWAPD", NULL }, { "PGSTEAL_DIRECT", NULL }, { "PGSTEAL_KHUGEPAGED", NULL },
	{ "PGFAULT", NULL }, { "PGMAJFAULT", NULL }, { "PGREFILL", NULL }, { "PGACTIVATE", NULL },
	{ "PGDEACTIVATE", NULL }, { "PGLAZYFREE", NULL }, { "PGLAZYFREED", NULL },
	{ "SWPIN_ZERO", NULL }, { "SWPOUT_ZERO", NULL }, { "ZSWPIN", NULL }, { "ZSWPOUT", NULL },
	{ "ZSWPWB", NULL }, { "THP_FAULT_ALLOC", NULL }, { "THP_COLLAPSE_ALLOC", NULL },
	{ "THP_SWPOUT", NULL }, { "THP_SWPOUT_FALLBACK", NULL }, { "NUMA_PAGE_MIGRATE", NULL },
	{ "NUMA_PTE_UPDATES", NULL }, { "NUMA_HINT_FAULTS", NULL },
};

/* memcg_vm_event_stat[] of 6.1 (unconditional PGPGIN/PGPGOUT; no PSWPIN, khugepaged, zero
 * swap, zswap writeback, THP swap-out or NUMA items yet). */
static const struct table_entry events_61[] = {
	{ "PGPGIN", NULL }, { "PGPGOUT", NULL }, { "PGSCAN_KSWAPD", NULL },
	{ "PGSCAN_DIRECT", NULL }, { "PGSTEAL_KSWAPD", NULL }, { "PGSTEAL_DIRECT", NULL },
	{ "PGFAULT", NULL }, { "PGMAJFAULT", NULL }, { "PGREFILL", NULL }, { "PGACTIVATE", NULL },
	{ "PGDEACTIVATE", NULL }, { "PGLAZYFREE", NULL }, { "PGLAZYFREED", NULL },
	{ "ZSWPIN", NULL }, { "ZSWPOUT", NULL }, { "THP_FAULT_ALLOC", NULL },
	{ "THP_COLLAPSE_ALLOC", NULL },
};

/* Newest first. Compacted state tables exist since 6.10 only; the 6.1 event table belongs to
 * kernels whose state[] is indexed by enum value. */
static const struct table compact_state_tables[] = {
	{ "6.18", states_618, ARRAY_LEN(states_618) },
};
static const struct table event_tables_compact_states[] = {
	{ "6.18", events_618, ARRAY_LEN(events_618) },
	{ "6.12", events_612, ARRAY_LEN(events_612) },
};
static const struct table event_tables_direct_states[] = {
	{ "6.1", events_61, ARRAY_LEN(events_61) },
};

/* The value of enum member `item` of `enum_name`, or -1 when this kernel has no such member. */
static long enum_value(const struct btf *btf, const char *enum_name, const char *item)
{
	int id = btf__find_by_name_kind(btf, enum_name, BTF_KIND_ENUM);
	const struct btf_type *t;
	const struct btf_enum *e;

	if (id < 0)
		return -1;
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++, e++)
		if (strcmp(btf__name_by_offset(btf, e->name_off), item) == 0)
			return e->val;
	return -1;
}

/* The struct member's type, or NULL. */
static const struct btf_type *member_type(const struct btf *btf, const char *st, const char *name)
{
	int id = btf__find_by_name_kind(btf, st, BTF_KIND_STRUCT);
	const struct btf_type *t;
	const struct btf_member *m;

	if (id < 0)
		return NULL;
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++)
		if (strcmp(btf__name_by_offset(btf, m->name_off), name) == 0)
			return btf__type_by_id(btf, m->type);
	return NULL;
}

/* Config options that only change the tables, told by what else they add to BTF:
 * CONFIG_SWAP adds the SWAP_RA vm event; CONFIG_MEMCG_V1 adds mem_cgroup.events_percpu. */
static bool has_marker(const struct btf *btf, const char *needs)
{
	if (!needs)
		return true;
	if (strcmp(needs, "config:SWAP") == 0)
		return enum_value(btf, "vm_event_item", "SWAP_RA") >= 0;
	if (strcmp(needs, "config:MEMCG_V1") == 0)
		return member_type(btf, "mem_cgroup", "events_percpu") != NULL;
	return false;
}

static int array_len(const struct btf *btf, const char *member)
{
	const struct btf_type *t = member_type(btf, "memcg_vmstats", member);

	return t && btf_is_array(t) ? (int)btf_array(t)->nelems : -1;
}

/* A state item's enum value: node_stat_item, or memcg_stat_item (which continues it). */
static long state_enum_value(const struct btf *btf, const char *item)
{
	long v = enum_value(btf, "node_stat_item", item);

	return v >= 0 ? v : enum_value(btf, "memcg_stat_item", item);
}

/* The slot of `item` in a table on this kernel (-1 if not there); *nslots gets the table's
 * length on this kernel. State entries must exist in node_stat_item or memcg_stat_item,
 * event entries in vm_event_item: some names are in both over time. */
static int table_slot(const struct btf *btf, const struct table *tab, bool events,
		      const char *item, int *nslots)
{
	int slot = -1, count = 0;

	for (size_t i = 0; i < tab->n; i++) {
		const char *name = tab->entries[i].item;
		bool exists = events ? enum_value(btf, "vm_event_item", name) >= 0
				     : state_enum_value(btf, name) >= 0;

		if (!exists || !has_marker(btf, tab->entries[i].needs))
			continue;
		if (item && strcmp(name, item) == 0)
			slot = count;
		count++;
	}
	*nslots = count;
	return slot;
}

/* The newest table whose length on this kernel is `len`, or NULL. */
static const struct table *fitting_table(const struct btf *btf, const struct table *tabs,
					 size_t ntabs, bool events, int len)
{
	int n;

	for (size_t i = 0; i < ntabs; i++) {
		table_slot(btf, &tabs[i], events, NULL, &n);
		if (n == len)
			return &tabs[i];
	}
	return NULL;
}

static const struct table *find_table(const struct table *tabs, size_t ntabs, const char *name)
{
	for (size_t i = 0; i < ntabs; i++)
		if (strcmp(tabs[i].name, name) == 0)
			return &tabs[i];
	return NULL;
}

static const struct table *event_tables(const struct memcg_layout *l, size_t *n)
{
	*n = l->states_direct ? ARRAY_LEN(event_tables_direct_states)
			      : ARRAY_LEN(event_tables_compact_states);
	return l->states_direct ? event_tables_direct_states : event_tables_compact_states;
}

int memcg_layout_read(const struct btf *btf, struct memcg_layout *l, char *err, size_t errlen)
{
	const struct table *st = NULL, *ev, *tabs;
	long nr_stat = enum_value(btf, "memcg_stat_item", "MEMCG_NR_STAT");
	size_t ntabs;

	memset(l, 0, sizeof(*l));
	l->states = array_len(btf, "state");
	l->events = array_len(btf, "events");
	if (l->states < 0 || l->events < 0) {
		snprintf(err, errlen, "this kernel's BTF has no struct memcg_vmstats with state[] and "
			 "events[] (memcg stats had another layout before 6.1)");
		return -1;
	}
	l->has_local = array_len(btf, "state_local") == l->states &&
		       array_len(btf, "events_local") == l->events;
	l->states_direct = nr_stat == l->states;
	if (l->states_direct) {
		l->state_table = "enum";
	} else {
		st = fitting_table(btf, compact_state_tables, ARRAY_LEN(compact_state_tables),
				   false, l->states);
		l->state_table = st ? st->name : NULL;
	}
	tabs = event_tables(l, &ntabs);
	ev = fitting_table(btf, tabs, ntabs, true, l->events);
	l->event_table = ev ? ev->name : NULL;
	if (!l->state_table || !l->event_table) {
		int known_states = -1, known_events;

		if (!l->states_direct)
			table_slot(btf, &compact_state_tables[0], false, NULL, &known_states);
		table_slot(btf, &tabs[0], true, NULL, &known_events);
		snprintf(err, errlen, "unknown memcg stats layout: BTF says %d states (%s) and %d "
			 "events, the newest known tables give %d and %d", l->states,
			 l->states_direct ? "indexed by enum value" : "compacted", l->events,
			 l->states_direct ? l->states : known_states, known_events);
		return -1;
	}
	return 0;
}

int memcg_layout_slot(const struct btf *btf, const struct memcg_layout *l, const char *item,
		      bool *is_event, int *slot)
{
	const struct table *tab;
	size_t ntabs;
	int n;

	*is_event = false;
	if (l->states_direct) {
		long v = state_enum_value(btf, item);

		*slot = v >= 0 && v < l->states ? (int)v : -1;
	} else {
		tab = find_table(compact_state_tables, ARRAY_LEN(compact_state_tables),
				 l->state_table);
		*slot = tab ? table_slot(btf, tab, false, item, &n) : -1;
	}
	if (*slot >= 0)
		return 0;
	tab = event_tables(l, &ntabs);
	tab = find_table(tab, ntabs, l->event_table);
	*is_event = true;
	*slot = tab ? table_slot(btf, tab, true, item, &n) : -1;
	return *slot >= 0 ? 0 : -1;
}
