/*
 * memstat.h - memory cgroups as files: finding the target, memory.stat's text, the fields a
 * consumer selects, and where each field lives in the kernel (for the BPF iterator).
 */
#ifndef MEMSTAT_H
#define MEMSTAT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cg_version { CG_V1 = 1, CG_V2 = 2 };

struct memcg_target {
	char dir[PATH_MAX]; /* the cgroup's directory, no trailing slash */
	enum cg_version version;
};

enum target_status {
	TARGET_OK,
	TARGET_BAD,   /* the user's value is wrong: exit 2 */
	TARGET_UNMET, /* this machine has no memory controller: exit 3 */
};

/* "root" (the memory controller's root cgroup, v1 or v2, whichever has memory) or an
 * absolute path of a memory cgroup. On failure writes one sentence naming the problem. */
enum target_status memcg_target_resolve(const char *arg, struct memcg_target *t, char *err,
					size_t errlen);

#define MEMSTAT_NAME_MAX 64
#define MEMSTAT_MAX_LINES 256

struct memstat_line {
	char name[MEMSTAT_NAME_MAX];
	uint64_t value;
};

/* Every "name value" line of a memory.stat text; returns how many (at most max). */
size_t memstat_parse_all(const char *text, size_t len, struct memstat_line *out, size_t max);

/* The value of `name` among lines, or false when absent. */
bool memstat_lookup(const struct memstat_line *lines, size_t n, const char *name, uint64_t *value);

/*
 * The fields a consumer may select, in the order fields=N takes them: the commonly read ones
 * first (anon/rss, file/cache, ...), then the rest as the file lists them. Lines that are not
 * counters (v1 hierarchical_*_limit) or are sums of other lines (v2 slab, pgscan, pgsteal) are
 * left out. Writes pointers into lines[].name; returns the count.
 */
size_t memstat_counter_fields(const struct memstat_line *lines, size_t n, enum cg_version v,
			      const char **names, size_t max);

/* ---- extracting N named fields from the text, as a consumer does --------------------- */

#define FIELD_SET_SLOTS 512 /* power of two, > 2 * CGSTAT_MAX_FIELDS */

struct field_set {
	const char *names[FIELD_SET_SLOTS]; /* open addressing on the name's hash */
	uint16_t index[FIELD_SET_SLOTS];    /* the name's position among the selected */
	size_t count;
};

void field_set_init(struct field_set *fs, const char *const *names, size_t n);

/* Scans a memory.stat text once; values[i] gets the i-th selected field's value. Returns how
 * many selected fields were found (a correct read finds all of them). */
size_t field_set_extract(const struct field_set *fs, const char *text, size_t len,
			 uint64_t *values);

/* ---- where a memory.stat field lives in the kernel ------------------------------------- */

enum item_enum { ENUM_NODE, ENUM_MEMCG, ENUM_EVENT };
enum item_unit { UNIT_PAGE, UNIT_ONE, UNIT_KIB };

struct memstat_field_def {
	const char *name;         /* as memory.stat prints it */
	const char *item;         /* the kernel enum item behind it */
	enum item_enum enum_kind; /* the enum it was in on 6.18 (the loader also looks elsewhere) */
	enum item_unit unit;      /* memory.stat value = counter * unit */
	bool local;               /* v1 without total_: this cgroup only (state_local/events_local) */
};

/* Every memory.stat field of a cgroup version whose kernel counter is known (v1: the
 * cgroup's own names; total_<name> is the same item, hierarchical). */
const struct memstat_field_def *memstat_field_defs(enum cg_version v, size_t *n);

/* The kernel counter behind a memory.stat field name, or NULL if it has none known. */
bool memstat_field_def(const char *name, enum cg_version v, struct memstat_field_def *out);

#endif /* MEMSTAT_H */
