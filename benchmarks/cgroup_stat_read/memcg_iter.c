/*
 * memcg_iter.c - see memcg_iter.h.
 *
 * Where a counter lives: struct memcg_vmstats holds state[], state_local[], events[] and
 * events_local[], but not indexed by the kernel's enum values. Since 6.10 (commit "memcg:
 * reduce memory size of mem_cgroup_events_index") memcg keeps only the items it accounts, in
 * the order of three static tables in mm/memcontrol.c (memcg_node_stat_items[],
 * memcg_stat_items[], memcg_vm_event_stat[]): slot = position in that list. Those tables are
 * not in BTF (and static data is not in kallsyms without CONFIG_KALLSYMS_ALL), so the lists
 * are carried here as the superset of what kernels have had, and each entry is kept only if
 * its enum item exists in this kernel's BTF (items come and go with config options and
 * versions). The result must then have exactly as many slots as BTF says the arrays have,
 * or the layout is unknown and the iterator refuses to run (exit 3). A layout that matches
 * in size but not in order would still give wrong values: every trial therefore checks the
 * values against memory.stat before it measures (cgstat.c).
 */
#include "memcg_iter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "cgstat.h"
#include "cgstat.skel.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* An item is in the list only when its enum member exists and, if `needs` is set, when the
 * kernel has that config (told by another enum member or struct member, see has_marker). */
struct layout_entry {
	const char *item;
	const char *needs;
};

/* memcg_node_stat_items[] then memcg_stat_items[] (6.18 order; later kernels add NR_VMALLOC
 * and the PGSTEAL/PGSCAN items, which exist in enum node_stat_item only there). */
static const struct layout_entry state_layout[] = {
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

/* memcg_vm_event_stat[] (6.18 order). */
static const struct layout_entry event_layout[] = {
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

static bool enum_has(const struct btf *btf, const char *enum_name, const char *item)
{
	int id = btf__find_by_name_kind(btf, enum_name, BTF_KIND_ENUM);
	const struct btf_type *t;
	const struct btf_enum *e;

	if (id < 0)
		return false;
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++, e++)
		if (strcmp(btf__name_by_offset(btf, e->name_off), item) == 0)
			return true;
	return false;
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
		return enum_has(btf, "vm_event_item", "SWAP_RA");
	if (strcmp(needs, "config:MEMCG_V1") == 0)
		return member_type(btf, "mem_cgroup", "events_percpu") != NULL;
	return false;
}

static int array_len(const struct btf *btf, const char *member)
{
	const struct btf_type *t = member_type(btf, "memcg_vmstats", member);

	return t && btf_is_array(t) ? (int)btf_array(t)->nelems : -1;
}

/* The slot of `item` in a layout, or -1 when the layout does not hold it. Which enum an entry
 * must exist in: state entries in node_stat_item or memcg_stat_item, events in vm_event_item. */
static int layout_slot(const struct btf *btf, const struct layout_entry *layout, size_t n,
		       bool events, const char *item, int *nslots)
{
	int slot = -1, count = 0;

	for (size_t i = 0; i < n; i++) {
		const char *name = layout[i].item;
		bool exists = events ? enum_has(btf, "vm_event_item", name)
				     : enum_has(btf, "node_stat_item", name) ||
					       enum_has(btf, "memcg_stat_item", name);

		if (!exists || !has_marker(btf, layout[i].needs))
			continue;
		if (item && strcmp(name, item) == 0)
			slot = count;
		count++;
	}
	*nslots = count;
	return slot;
}

/* Where one memory.stat field is: array and slot. Looks for the item as a state first, then
 * as an event, whatever enum it was in on 6.18 (items move between the two over time). */
static int resolve_field(const struct btf *btf, const struct memstat_field_def *def,
			 struct cgstat_field *out, char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);
	const char *item = def->item;
	int nslots, slot;

	if (strcmp(item, "MEMCG_VMALLOC") == 0 && !enum_has(btf, "memcg_stat_item", item))
		item = "NR_VMALLOC";
	slot = layout_slot(btf, state_layout, ARRAY_LEN(state_layout), false, item, &nslots);
	if (slot >= 0) {
		out->array = def->local ? CGSTAT_STATE_LOCAL : CGSTAT_STATE;
	} else {
		slot = layout_slot(btf, event_layout, ARRAY_LEN(event_layout), true, item, &nslots);
		if (slot < 0) {
			snprintf(err, errlen, "memory.stat field %s: kernel item %s is not in memcg's "
				 "stats on this kernel", def->name, def->item);
			return -1;
		}
		out->array = def->local ? CGSTAT_EVENTS_LOCAL : CGSTAT_EVENTS;
	}
	out->slot = (__u32)slot;
	out->unit = def->unit == UNIT_PAGE ? (__u64)page : def->unit == UNIT_KIB ? 1024 : 1;
	return 0;
}

/* The lists above must give exactly BTF's array sizes, or this is a layout we do not know. */
static int check_layout(const struct btf *btf, char *err, size_t errlen)
{
	int states, events;
	int want_states = array_len(btf, "state"), want_events = array_len(btf, "events");

	layout_slot(btf, state_layout, ARRAY_LEN(state_layout), false, NULL, &states);
	layout_slot(btf, event_layout, ARRAY_LEN(event_layout), true, NULL, &events);
	if (want_states < 0 || want_events < 0) {
		snprintf(err, errlen, "this kernel's BTF has no struct memcg_vmstats with state[] and "
			 "events[] (before 6.10 memcg stats had another layout)");
		return -1;
	}
	if (states != want_states || events != want_events) {
		snprintf(err, errlen, "unknown memcg stats layout: BTF says %d states and %d events, "
			 "the known item lists give %d and %d", want_states, want_events, states,
			 events);
		return -1;
	}
	return 0;
}

static enum iter_status resolve_fields(struct cgstat_bpf *skel, const struct memcg_target *target,
				       const char *const *names, size_t n, char *err,
				       size_t errlen)
{
	struct btf *btf = btf__load_vmlinux_btf();
	enum iter_status status = ITER_OK;

	if (!btf) {
		snprintf(err, errlen, "failed to load kernel BTF: %s", strerror(errno));
		return ITER_UNMET;
	}
	if (check_layout(btf, err, errlen) != 0) {
		status = ITER_UNMET;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct memstat_field_def def;

		if (!memstat_field_def(names[i], target->version, &def)) {
			snprintf(err, errlen, "memory.stat field %s has no known kernel counter", names[i]);
			status = ITER_UNMET;
			goto out;
		}
		if (resolve_field(btf, &def, (struct cgstat_field *)&skel->rodata->fields[i], err,
				  errlen) != 0) {
			status = ITER_UNMET;
			goto out;
		}
	}
	skel->rodata->nr_fields = (__u32)n;
out:
	btf__free(btf);
	return status;
}

/* The memcg flush a BPF program can call: cgroup_rstat_flush(cgrp), 5.19 to 6.15. */
bool memcg_iter_flush_available(char *err, size_t errlen)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool old = btf && btf__find_by_name_kind(btf, "cgroup_rstat_flush", BTF_KIND_FUNC) > 0;
	bool new = btf && btf__find_by_name_kind(btf, "css_rstat_flush", BTF_KIND_FUNC) > 0;

	btf__free(btf);
	if (old)
		return true;
	if (new)
		snprintf(err, errlen, "no memcg flush from BPF on this kernel: its rstat kfunc "
			 "css_rstat_flush (6.16+) flushes the subsystem of the css it is given, and "
			 "the verifier lets a program pass only a trusted css: &cgrp->self (base "
			 "stats), not the memory css read from cgrp->subsys[]");
	else
		snprintf(err, errlen, "no rstat flush kfunc in this kernel's BTF");
	return false;
}

static int mount_private_bpffs(struct memcg_iter *it, char *err, size_t errlen)
{
	/* Under TMPDIR like every other scratch directory of a run (the sweep finds the mount by
	 * its name wherever it is). */
	const char *tmp = getenv("TMPDIR");

	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	snprintf(it->bpffs_dir, sizeof(it->bpffs_dir), "%s/bakeoff-%d-bpffs-XXXXXX", tmp, (int)getpid());
	if (!mkdtemp(it->bpffs_dir)) {
		snprintf(err, errlen, "failed to create %s: %s", it->bpffs_dir, strerror(errno));
		it->bpffs_dir[0] = '\0';
		return -1;
	}
	if (mount("bpf", it->bpffs_dir, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") != 0) {
		snprintf(err, errlen, "failed to mount bpffs on %s: %s", it->bpffs_dir, strerror(errno));
		rmdir(it->bpffs_dir);
		it->bpffs_dir[0] = '\0';
		return -1;
	}
	it->mounted = true;
	return 0;
}

enum iter_status memcg_iter_open(struct memcg_iter *it, const struct memcg_target *target,
				 const char *const *names, size_t n, bool flush, bool pin,
				 char *err, size_t errlen)
{
	union bpf_iter_link_info linfo;
	LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	struct bpf_program *prog;
	enum iter_status status;
	int ret;

	memset(it, 0, sizeof(*it));
	it->link_fd = it->cgroup_fd = -1;
	if (n > CGSTAT_MAX_FIELDS) {
		snprintf(err, errlen, "at most %d fields", CGSTAT_MAX_FIELDS);
		return ITER_FAILED;
	}
	it->nbytes = n * sizeof(__u64);

	/* Open the skeleton. */
	it->skel = cgstat_bpf__open();
	if (!it->skel) {
		snprintf(err, errlen, "failed to open BPF skeleton: %s", strerror(errno));
		return ITER_FAILED;
	}
	/* Read-only config: the fields, resolved against this kernel's BTF. */
	status = resolve_fields(it->skel, target, names, n, err, errlen);
	if (status != ITER_OK)
		goto fail;
	if (flush && !memcg_iter_flush_available(err, errlen)) {
		status = ITER_UNMET;
		goto fail;
	}
	/* Only one of the two programs: the sleepable one needs the cgroup_rstat_flush kfunc. */
	prog = flush ? it->skel->progs.dump_flush : it->skel->progs.dump;
	bpf_program__set_autoload(flush ? it->skel->progs.dump : it->skel->progs.dump_flush, false);

	/* Load. */
	ret = cgstat_bpf__load(it->skel);
	if (ret) {
		snprintf(err, errlen, "failed to load BPF program %s: %s%s", bpf_program__name(prog),
			 strerror(-ret), flush ? " (the flush needs the sleepable cgroup_rstat_flush "
			 "kfunc)" : "");
		status = ret == -EPERM ? ITER_UNMET : ITER_FAILED;
		goto fail;
	}

	/* Attach: a cgroup iterator over the target alone (BPF_CGROUP_ITER_SELF_ONLY, 6.1). */
	it->cgroup_fd = open(target->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (it->cgroup_fd < 0) {
		snprintf(err, errlen, "failed to open %s: %s", target->dir, strerror(errno));
		status = ITER_FAILED;
		goto fail;
	}
	memset(&linfo, 0, sizeof(linfo));
	linfo.cgroup.cgroup_fd = (__u32)it->cgroup_fd;
	linfo.cgroup.order = BPF_CGROUP_ITER_SELF_ONLY;
	opts.link_info = &linfo;
	opts.link_info_len = sizeof(linfo);
	it->link = bpf_program__attach_iter(prog, &opts);
	if (!it->link) {
		snprintf(err, errlen, "failed to attach cgroup iterator to %s: %s", target->dir,
			 strerror(errno));
		status = ITER_UNMET;
		goto fail;
	}
	it->link_fd = bpf_link__fd(it->link);

	/* Pin, so that the iterator can be opened by path (reopen, cat). */
	if (pin) {
		if (mount_private_bpffs(it, err, errlen) != 0) {
			status = ITER_FAILED;
			goto fail;
		}
		snprintf(it->pin_path, sizeof(it->pin_path), "%s/memcg_stat", it->bpffs_dir);
		ret = bpf_link__pin(it->link, it->pin_path);
		if (ret) {
			snprintf(err, errlen, "failed to pin iterator at %s: %s", it->pin_path,
				 strerror(-ret));
			status = ITER_FAILED;
			goto fail;
		}
		it->pinned = true;
	}
	return ITER_OK;
fail:
	memcg_iter_close(it);
	return status;
}

int memcg_iter_create_fd(const struct memcg_iter *it)
{
	return bpf_iter_create(it->link_fd);
}

void memcg_iter_close(struct memcg_iter *it)
{
	if (it->pinned) {
		bpf_link__unpin(it->link);
		it->pinned = false;
	}
	if (it->mounted) {
		umount2(it->bpffs_dir, MNT_DETACH);
		it->mounted = false;
	}
	if (it->bpffs_dir[0]) {
		rmdir(it->bpffs_dir);
		it->bpffs_dir[0] = '\0';
	}
	bpf_link__destroy(it->link);
	it->link = NULL;
	it->link_fd = -1;
	if (it->cgroup_fd >= 0)
		close(it->cgroup_fd);
	it->cgroup_fd = -1;
	cgstat_bpf__destroy(it->skel);
	it->skel = NULL;
}
