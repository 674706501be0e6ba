/*
 * memcg_iter.h - loads cgstat.bpf.c, resolves where each selected memory.stat field lives in
 * struct memcg_vmstats on the running kernel, and attaches a cgroup iterator to the target.
 */
#ifndef MEMCG_ITER_H
#define MEMCG_ITER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "memstat.h"

struct cgstat_bpf;
struct bpf_link;

struct memcg_iter {
	struct cgstat_bpf *skel;
	struct bpf_link *link;
	int link_fd;
	int cgroup_fd;
	size_t nbytes;                /* one read: 8 bytes per selected field */
	char bpffs_dir[PATH_MAX];     /* a private bpffs mount, when pinned */
	char pin_path[PATH_MAX + 16]; /* the pinned iterator: open() + read() like a file */
	bool mounted, pinned;
};

enum iter_status { ITER_OK, ITER_UNMET, ITER_FAILED };

/*
 * Loads and attaches; with pin, also mounts a private bpffs (mkdtemp bakeoff-<pid>-bpffs-*)
 * and pins the link there so the iterator can be opened by path. On failure writes one
 * line to err and returns ITER_UNMET (this kernel cannot) or ITER_FAILED.
 */
enum iter_status memcg_iter_open(struct memcg_iter *it, const struct memcg_target *target,
				 const char *const *names, size_t n, bool flush, bool pin,
				 char *err, size_t errlen);

/* Whether a BPF program can flush memcg stats on this kernel; if not, why (one line). */
bool memcg_iter_flush_available(char *err, size_t errlen);

/* A fresh iterator fd (bpf_iter_create): one read() of it runs the program once. */
int memcg_iter_create_fd(const struct memcg_iter *it);

/* Unpins, unmounts, detaches, unloads; safe on a partly opened iterator and twice. */
void memcg_iter_close(struct memcg_iter *it);

#endif /* MEMCG_ITER_H */
