/* memstat.c - see memstat.h. */
#include "memstat.h"

#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* ---- the target ---------------------------------------------------------------------- */

static bool file_has_word(const char *path, const char *word)
{
	char buf[4096], *save = NULL;
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (char *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		if (strcmp(w, word) == 0)
			return true;
	return false;
}

/* The v1 memory hierarchy's mount, else a cgroup2 mount whose root offers memory. */
static bool find_memory_controller(char *dir, size_t len, enum cg_version *version)
{
	FILE *mounts = setmntent("/proc/self/mounts", "r");
	struct mntent *m;
	bool found = false;

	if (!mounts)
		return false;
	while (!found && (m = getmntent(mounts))) {
		if (strcmp(m->mnt_type, "cgroup") == 0 && hasmntopt(m, "memory")) {
			snprintf(dir, len, "%s", m->mnt_dir);
			*version = CG_V1;
			found = true;
		}
	}
	endmntent(mounts);
	if (found)
		return true;
	mounts = setmntent("/proc/self/mounts", "r");
	if (!mounts)
		return false;
	while (!found && (m = getmntent(mounts))) {
		char controllers[PATH_MAX];

		if (strcmp(m->mnt_type, "cgroup2") != 0)
			continue;
		snprintf(controllers, sizeof(controllers), "%s/cgroup.controllers", m->mnt_dir);
		if (file_has_word(controllers, "memory")) {
			snprintf(dir, len, "%s", m->mnt_dir);
			*version = CG_V2;
			found = true;
		}
	}
	endmntent(mounts);
	return found;
}

enum target_status memcg_target_resolve(const char *arg, struct memcg_target *t, char *err,
					size_t errlen)
{
	char stat_path[PATH_MAX + 16];
	struct statfs fs;
	struct stat st;
	size_t len;
	int fd;

	if (strcmp(arg, "root") == 0) {
		if (!find_memory_controller(t->dir, sizeof(t->dir), &t->version)) {
			snprintf(err, errlen, "no memory controller is mounted (cgroup v1 memory or "
				 "cgroup2 with memory in cgroup.controllers)");
			return TARGET_UNMET;
		}
		return TARGET_OK;
	}
	if (arg[0] != '/') {
		snprintf(err, errlen, "target=%s: give root or an absolute cgroup path such as "
			 "/sys/fs/cgroup/memory/NAME", arg);
		return TARGET_BAD;
	}
	len = strlen(arg);
	if (len >= sizeof(t->dir)) {
		snprintf(err, errlen, "target=%.40s...: path too long", arg);
		return TARGET_BAD;
	}
	memcpy(t->dir, arg, len + 1);
	while (len > 1 && t->dir[len - 1] == '/')
		t->dir[--len] = '\0';
	if (stat(t->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "target=%s does not exist (or is not a directory)", arg);
		return TARGET_BAD;
	}
	if (statfs(t->dir, &fs) != 0 ||
	    (fs.f_type != CGROUP_SUPER_MAGIC && fs.f_type != CGROUP2_SUPER_MAGIC)) {
		snprintf(err, errlen, "target=%s is not a cgroup (not on a cgroup file system)", arg);
		return TARGET_BAD;
	}
	t->version = fs.f_type == CGROUP2_SUPER_MAGIC ? CG_V2 : CG_V1;
	snprintf(stat_path, sizeof(stat_path), "%s/memory.stat", t->dir);
	fd = open(stat_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		snprintf(err, errlen, "target=%s is not a memory cgroup (it has no memory.stat)", arg);
		return TARGET_BAD;
	}
	if (fd < 0) {
		snprintf(err, errlen, "target=%s is not readable: %s/memory.stat: %s", arg, t->dir,
			 strerror(errno));
		return TARGET_BAD;
	}
	close(fd);
	return TARGET_OK;
}

/* ---- memory.stat text --------------------------------------------------------------------- */

size_t memstat_parse_all(const char *text, size_t len, struct memstat_line *out, size_t max)
{
	const char *p = text, *end = text + len;
	size_t n = 0;

	while (p < end && n < max) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			nl = end;
		if (sp && sp < nl && (size_t)(sp - p) < MEMSTAT_NAME_MAX) {
			memcpy(out[n].name, p, (size_t)(sp - p));
			out[n].name[sp - p] = '\0';
			out[n].value = strtoull(sp + 1, NULL, 10);
			n++;
		}
		p = nl + 1;
	}
	return n;
}

bool memstat_lookup(const struct memstat_line *lines, size_t n, const char *name, uint64_t *value)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(lines[i].name, name) == 0) {
			*value = lines[i].value;
			return true;
		}
	}
	return false;
}

/* ---- where each field lives ---------------------------------------------------------------- */

/*
 * cgroup v1 (mm/memcontrol-v1.c, memcg1_stat_format): each counter twice, this cgroup's own
 * (state_local/events_local) and, as total_<name>, the hierarchy's (state/events). In the
 * order fields=N takes them.
 */
static const struct memstat_field_def v1_fields[] = {
	{ "rss", "NR_ANON_MAPPED", ENUM_NODE, UNIT_PAGE, true },
	{ "cache", "NR_FILE_PAGES", ENUM_NODE, UNIT_PAGE, true },
	{ "swap", "MEMCG_SWAP", ENUM_MEMCG, UNIT_PAGE, true },
	{ "shmem", "NR_SHMEM", ENUM_NODE, UNIT_PAGE, true },
	{ "mapped_file", "NR_FILE_MAPPED", ENUM_NODE, UNIT_PAGE, true },
	{ "dirty", "NR_FILE_DIRTY", ENUM_NODE, UNIT_PAGE, true },
	{ "writeback", "NR_WRITEBACK", ENUM_NODE, UNIT_PAGE, true },
	{ "rss_huge", "NR_ANON_THPS", ENUM_NODE, UNIT_PAGE, true },
	{ "swapcached", "NR_SWAPCACHE", ENUM_NODE, UNIT_PAGE, true },
	{ "pgfault", "PGFAULT", ENUM_EVENT, UNIT_ONE, true },
	{ "pgmajfault", "PGMAJFAULT", ENUM_EVENT, UNIT_ONE, true },
	{ "inactive_anon", "NR_INACTIVE_ANON", ENUM_NODE, UNIT_PAGE, true },
	{ "active_anon", "NR_ACTIVE_ANON", ENUM_NODE, UNIT_PAGE, true },
	{ "inactive_file", "NR_INACTIVE_FILE", ENUM_NODE, UNIT_PAGE, true },
	{ "active_file", "NR_ACTIVE_FILE", ENUM_NODE, UNIT_PAGE, true },
	{ "unevictable", "NR_UNEVICTABLE", ENUM_NODE, UNIT_PAGE, true },
	{ "workingset_refault_anon", "WORKINGSET_REFAULT_ANON", ENUM_NODE, UNIT_ONE, true },
	{ "workingset_refault_file", "WORKINGSET_REFAULT_FILE", ENUM_NODE, UNIT_ONE, true },
	{ "pgpgin", "PGPGIN", ENUM_EVENT, UNIT_ONE, true },
	{ "pgpgout", "PGPGOUT", ENUM_EVENT, UNIT_ONE, true },
};

/* cgroup v2 (mm/memcontrol.c, memory_stats[] and memcg_vm_event_stat[]): hierarchical. */
static const struct memstat_field_def v2_fields[] = {
	{ "anon", "NR_ANON_MAPPED", ENUM_NODE, UNIT_PAGE, false },
	{ "file", "NR_FILE_PAGES", ENUM_NODE, UNIT_PAGE, false },
	{ "kernel", "MEMCG_KMEM", ENUM_MEMCG, UNIT_PAGE, false },
	{ "sock", "MEMCG_SOCK", ENUM_MEMCG, UNIT_PAGE, false },
	{ "shmem", "NR_SHMEM", ENUM_NODE, UNIT_PAGE, false },
	{ "file_mapped", "NR_FILE_MAPPED", ENUM_NODE, UNIT_PAGE, false },
	{ "file_dirty", "NR_FILE_DIRTY", ENUM_NODE, UNIT_PAGE, false },
	{ "file_writeback", "NR_WRITEBACK", ENUM_NODE, UNIT_PAGE, false },
	{ "swapcached", "NR_SWAPCACHE", ENUM_NODE, UNIT_PAGE, false },
	{ "anon_thp", "NR_ANON_THPS", ENUM_NODE, UNIT_PAGE, false },
	{ "inactive_anon", "NR_INACTIVE_ANON", ENUM_NODE, UNIT_PAGE, false },
	{ "active_anon", "NR_ACTIVE_ANON", ENUM_NODE, UNIT_PAGE, false },
	{ "inactive_file", "NR_INACTIVE_FILE", ENUM_NODE, UNIT_PAGE, false },
	{ "active_file", "NR_ACTIVE_FILE", ENUM_NODE, UNIT_PAGE, false },
	{ "unevictable", "NR_UNEVICTABLE", ENUM_NODE, UNIT_PAGE, false },
	{ "slab_reclaimable", "NR_SLAB_RECLAIMABLE_B", ENUM_NODE, UNIT_ONE, false },
	{ "slab_unreclaimable", "NR_SLAB_UNRECLAIMABLE_B", ENUM_NODE, UNIT_ONE, false },
	{ "kernel_stack", "NR_KERNEL_STACK_KB", ENUM_NODE, UNIT_KIB, false },
	{ "pagetables", "NR_PAGETABLE", ENUM_NODE, UNIT_PAGE, false },
	{ "sec_pagetables", "NR_SECONDARY_PAGETABLE", ENUM_NODE, UNIT_PAGE, false },
	{ "percpu", "MEMCG_PERCPU_B", ENUM_MEMCG, UNIT_ONE, false },
	/* MEMCG_VMALLOC became the node item NR_VMALLOC later; the loader looks in both. */
	{ "vmalloc", "MEMCG_VMALLOC", ENUM_MEMCG, UNIT_PAGE, false },
	{ "zswap", "MEMCG_ZSWAP_B", ENUM_MEMCG, UNIT_ONE, false },
	{ "zswapped", "MEMCG_ZSWAPPED", ENUM_MEMCG, UNIT_PAGE, false },
	{ "file_thp", "NR_FILE_THPS", ENUM_NODE, UNIT_PAGE, false },
	{ "shmem_thp", "NR_SHMEM_THPS", ENUM_NODE, UNIT_PAGE, false },
	{ "hugetlb", "NR_HUGETLB", ENUM_NODE, UNIT_PAGE, false },
	{ "workingset_refault_anon", "WORKINGSET_REFAULT_ANON", ENUM_NODE, UNIT_ONE, false },
	{ "workingset_refault_file", "WORKINGSET_REFAULT_FILE", ENUM_NODE, UNIT_ONE, false },
	{ "workingset_activate_anon", "WORKINGSET_ACTIVATE_ANON", ENUM_NODE, UNIT_ONE, false },
	{ "workingset_activate_file", "WORKINGSET_ACTIVATE_FILE", ENUM_NODE, UNIT_ONE, false },
	{ "workingset_restore_anon", "WORKINGSET_RESTORE_ANON", ENUM_NODE, UNIT_ONE, false },
	{ "workingset_restore_file", "WORKINGSET_RESTORE_FILE", ENUM_NODE, UNIT_ONE, false },
	{ "workingset_nodereclaim", "WORKINGSET_NODERECLAIM", ENUM_NODE, UNIT_ONE, false },
	{ "pgdemote_kswapd", "PGDEMOTE_KSWAPD", ENUM_NODE, UNIT_ONE, false },
	{ "pgdemote_direct", "PGDEMOTE_DIRECT", ENUM_NODE, UNIT_ONE, false },
	{ "pgdemote_khugepaged", "PGDEMOTE_KHUGEPAGED", ENUM_NODE, UNIT_ONE, false },
	{ "pgdemote_proactive", "PGDEMOTE_PROACTIVE", ENUM_NODE, UNIT_ONE, false },
	{ "pgpromote_success", "PGPROMOTE_SUCCESS", ENUM_NODE, UNIT_ONE, false },
	{ "pgfault", "PGFAULT", ENUM_EVENT, UNIT_ONE, false },
	{ "pgmajfault", "PGMAJFAULT", ENUM_EVENT, UNIT_ONE, false },
	{ "pswpin", "PSWPIN", ENUM_EVENT, UNIT_ONE, false },
	{ "pswpout", "PSWPOUT", ENUM_EVENT, UNIT_ONE, false },
	/* vm events on 6.18; node stats on later kernels: the loader looks in both. */
	{ "pgscan_kswapd", "PGSCAN_KSWAPD", ENUM_EVENT, UNIT_ONE, false },
	{ "pgscan_direct", "PGSCAN_DIRECT", ENUM_EVENT, UNIT_ONE, false },
	{ "pgscan_khugepaged", "PGSCAN_KHUGEPAGED", ENUM_EVENT, UNIT_ONE, false },
	{ "pgscan_proactive", "PGSCAN_PROACTIVE", ENUM_EVENT, UNIT_ONE, false },
	{ "pgsteal_kswapd", "PGSTEAL_KSWAPD", ENUM_EVENT, UNIT_ONE, false },
	{ "pgsteal_direct", "PGSTEAL_DIRECT", ENUM_EVENT, UNIT_ONE, false },
	{ "pgsteal_khugepaged", "PGSTEAL_KHUGEPAGED", ENUM_EVENT, UNIT_ONE, false },
	{ "pgsteal_proactive", "PGSTEAL_PROACTIVE", ENUM_EVENT, UNIT_ONE, false },
	{ "pgrefill", "PGREFILL", ENUM_EVENT, UNIT_ONE, false },
	{ "pgactivate", "PGACTIVATE", ENUM_EVENT, UNIT_ONE, false },
	{ "pgdeactivate", "PGDEACTIVATE", ENUM_EVENT, UNIT_ONE, false },
	{ "pglazyfree", "PGLAZYFREE", ENUM_EVENT, UNIT_ONE, false },
	{ "pglazyfreed", "PGLAZYFREED", ENUM_EVENT, UNIT_ONE, false },
	{ "swpin_zero", "SWPIN_ZERO", ENUM_EVENT, UNIT_ONE, false },
	{ "swpout_zero", "SWPOUT_ZERO", ENUM_EVENT, UNIT_ONE, false },
	{ "zswpin", "ZSWPIN", ENUM_EVENT, UNIT_ONE, false },
	{ "zswpout", "ZSWPOUT", ENUM_EVENT, UNIT_ONE, false },
	{ "zswpwb", "ZSWPWB", ENUM_EVENT, UNIT_ONE, false },
	{ "thp_fault_alloc", "THP_FAULT_ALLOC", ENUM_EVENT, UNIT_ONE, false },
	{ "thp_collapse_alloc", "THP_COLLAPSE_ALLOC", ENUM_EVENT, UNIT_ONE, false },
	{ "thp_swpout", "THP_SWPOUT", ENUM_EVENT, UNIT_ONE, false },
	{ "thp_swpout_fallback", "THP_SWPOUT_FALLBACK", ENUM_EVENT, UNIT_ONE, false },
	{ "numa_pages_migrated", "NUMA_PAGE_MIGRATE", ENUM_EVENT, UNIT_ONE, false },
	{ "numa_pte_updates", "NUMA_PTE_UPDATES", ENUM_EVENT, UNIT_ONE, false },
	{ "numa_hint_faults", "NUMA_HINT_FAULTS", ENUM_EVENT, UNIT_ONE, false },
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

const struct memstat_field_def *memstat_field_defs(enum cg_version v, size_t *n)
{
	*n = v == CG_V1 ? ARRAY_LEN(v1_fields) : ARRAY_LEN(v2_fields);
	return v == CG_V1 ? v1_fields : v2_fields;
}

bool memstat_field_def(const char *name, enum cg_version v, struct memstat_field_def *out)
{
	bool total = v == CG_V1 && strncmp(name, "total_", 6) == 0;
	const char *base = total ? name + 6 : name;
	size_t n;
	const struct memstat_field_def *defs = memstat_field_defs(v, &n);

	for (size_t i = 0; i < n; i++) {
		if (strcmp(defs[i].name, base) == 0) {
			*out = defs[i];
			out->name = name;
			out->local = defs[i].local && !total;
			return true;
		}
	}
	return false;
}

/* Not counters (limits) or sums of other lines: a consumer selects their parts instead. */
static bool is_counter_field(const char *name)
{
	static const char *const excluded[] = {
		"hierarchical_memory_limit", "hierarchical_memsw_limit", "slab", "pgscan", "pgsteal",
	};
	for (size_t i = 0; i < ARRAY_LEN(excluded); i++)
		if (strcmp(name, excluded[i]) == 0)
			return false;
	return true;
}

static bool already(const char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

static size_t add_present(const struct memstat_line *lines, size_t n, const char *name,
			  const char **names, size_t count, size_t max)
{
	for (size_t i = 0; i < n && count < max; i++) {
		if (strcmp(lines[i].name, name) == 0 && !already(names, count, lines[i].name)) {
			names[count++] = lines[i].name;
			break;
		}
	}
	return count;
}

size_t memstat_counter_fields(const struct memstat_line *lines, size_t n, enum cg_version v,
			      const char **names, size_t max)
{
	size_t ndefs, count = 0;
	const struct memstat_field_def *defs = memstat_field_defs(v, &ndefs);
	char total[MEMSTAT_NAME_MAX + 8];

	for (size_t i = 0; i < ndefs; i++)
		count = add_present(lines, n, defs[i].name, names, count, max);
	if (v == CG_V1) { /* then the hierarchy's totals, in the same order */
		for (size_t i = 0; i < ndefs; i++) {
			snprintf(total, sizeof(total), "total_%s", defs[i].name);
			count = add_present(lines, n, total, names, count, max);
		}
	}
	for (size_t i = 0; i < n && count < max; i++)
		if (is_counter_field(lines[i].name) && !already(names, count, lines[i].name))
			names[count++] = lines[i].name;
	return count;
}

/* ---- extraction ------------------------------------------------------------------------- */

/* FNV-1a over the name's bytes. */
static uint32_t name_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

void field_set_init(struct field_set *fs, const char *const *names, size_t n)
{
	memset(fs, 0, sizeof(*fs));
	fs->count = n;
	for (size_t i = 0; i < n; i++) {
		uint32_t slot = name_hash(names[i], strlen(names[i])) & (FIELD_SET_SLOTS - 1);

		while (fs->names[slot])
			slot = (slot + 1) & (FIELD_SET_SLOTS - 1);
		fs->names[slot] = names[i];
		fs->index[slot] = (uint16_t)i;
	}
}

static int field_set_find(const struct field_set *fs, const char *name, size_t len)
{
	uint32_t slot = name_hash(name, len) & (FIELD_SET_SLOTS - 1);

	while (fs->names[slot]) {
		if (strncmp(fs->names[slot], name, len) == 0 && fs->names[slot][len] == '\0')
			return fs->index[slot];
		slot = (slot + 1) & (FIELD_SET_SLOTS - 1);
	}
	return -1;
}

size_t field_set_extract(const struct field_set *fs, const char *text, size_t len,
			 uint64_t *values)
{
	const char *p = text, *end = text + len;
	size_t found = 0;

	while (p < end && found < fs->count) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		const char *q;
		uint64_t v = 0;
		int idx;

		if (!sp)
			break;
		idx = field_set_find(fs, p, (size_t)(sp - p));
		for (q = sp + 1; q < end && *q >= '0' && *q <= '9'; q++)
			if (idx >= 0)
				v = v * 10 + (uint64_t)(*q - '0');
		if (idx >= 0) {
			values[idx] = v;
			found++;
		}
		while (q < end && *q != '\n')
			q++;
		p = q + 1;
	}
	return found;
}
