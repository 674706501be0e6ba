/*
 * memcg_iter.c - see memcg_iter.h.
 *
 * The BPF program finds struct memcg_vmstats and its arrays by CO-RE relocations against the
 * running kernel's BTF; which slot of an array holds a memory.stat field's item is decided here
 * from the same BTF (memcg_layout.c), because CO-RE resolves names fixed at compile time while
 * the fields are chosen at run time from memory.stat, and the tables that order the slots are
 * static data, not types. An unknown layout refuses to run (exit 3); every trial checks the
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
#include "memcg_layout.h"

/* Where one memory.stat field is: array and slot. Looks for the item as a state first, then
 * as an event, whatever enum it was in on 6.18 (items move between the two over time). */
static enum iter_status resolve_field(const struct btf *btf, const struct memcg_layout *layout,
				      const struct memstat_field_def *def, struct cgstat_field *out,
				      char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);
	const char *item = def->item;
	bool is_event;
	int slot;

	if (memcg_layout_slot(btf, layout, item, &is_event, &slot) != 0 &&
	    strcmp(item, "MEMCG_VMALLOC") == 0) /* a node item (NR_VMALLOC) on later kernels */
		memcg_layout_slot(btf, layout, "NR_VMALLOC", &is_event, &slot);
	if (slot < 0) {
		snprintf(err, errlen, "memory.stat field %s: kernel item %s is not in memcg's "
			 "stats on this kernel", def->name, def->item);
		return ITER_UNMET;
	}
	if (def->local && !layout->has_local) {
		snprintf(err, errlen, "memory.stat field %s is this cgroup's own count, which memcg "
			 "keeps only per CPU on this kernel (state_local[] came in 6.6): the "
			 "iterator reads the hierarchical total_%s alone", def->name, def->name);
		return ITER_UNMET;
	}
	if (is_event)
		out->array = def->local ? CGSTAT_EVENTS_LOCAL : CGSTAT_EVENTS;
	else
		out->array = def->local ? CGSTAT_STATE_LOCAL : CGSTAT_STATE;
	out->slot = (__u32)slot;
	out->unit = def->unit == UNIT_PAGE ? (__u64)page : def->unit == UNIT_KIB ? 1024 : 1;
	return ITER_OK;
}

static enum iter_status resolve_fields(struct cgstat_bpf *skel, const struct memcg_target *target,
				       const char *const *names, size_t n, char *err,
				       size_t errlen)
{
	struct btf *btf = btf__load_vmlinux_btf();
	enum iter_status status = ITER_OK;
	struct memcg_layout layout;

	if (!btf) {
		snprintf(err, errlen, "failed to load kernel BTF: %s", strerror(errno));
		return ITER_UNMET;
	}
	if (memcg_layout_read(btf, &layout, err, errlen) != 0) {
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
		status = resolve_field(btf, &layout, &def,
				       (struct cgstat_field *)&skel->rodata->fields[i], err, errlen);
		if (status != ITER_OK)
			goto out;
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
