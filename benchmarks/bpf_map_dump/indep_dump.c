// SPDX-License-Identifier: GPL-2.0
/*
 * indep_dump - TEST-ONLY independent check of bpf-map-dump's headline ratios (METHOD.md,
 * "The independent check"). It shares no code with dump_loader.c or dump_reader.c and does
 * not speak the room's protocol: one process creates a preallocated u32 -> u32 hash map of N
 * entries, fills it, and dumps it R rounds by each of three ways, the ways' order rotating
 * per round:
 *
 *     iterate      bpf_map_get_next_key + bpf_map_lookup_elem per entry
 *     batch        bpf_map_lookup_batch, 65536 entries per call
 *     iter         a map_elem iterator program, read() until EOF
 *
 * Each dump is timed with CLOCK_MONOTONIC from its first call to its last, counted (every
 * key 0..N-1 exactly once, value = key * 2654435761) after the clock stops. One warm-up dump
 * per way comes first, and each timed dump follows an untimed (checked) dump of its own way:
 * a program that dumps a map repeatedly uses one way, and a batch dump right after another
 * way's read a third dearer than after its own (the kernel's state from the other way, not
 * the batch; METHOD.md "The independent check"). It prints one JSON object: the per-entry
 * time of every timed dump per way.
 *
 *     indep_dump ENTRIES ROUNDS
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "indep_dump.skel.h"

#define BATCH 65536u
#define MAX_ROUNDS 1000

enum way { ITERATE, BATCH_WAY, ITER, NWAYS };
static const char *way_names[NWAYS] = { "iterate", "batch-65536", "bpf-iter" };

static uint32_t *keys, *vals, *seen;
static uint32_t n_entries;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "indep_dump: failed to %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint32_t value_of(uint32_t key)
{
	return key * 2654435761u;
}

static uint32_t dump_iterate(int fd)
{
	uint32_t n = 0, key, *prev = NULL;

	while (n < n_entries && bpf_map_get_next_key(fd, prev, &key) == 0) {
		keys[n] = key;
		if (bpf_map_lookup_elem(fd, &key, &vals[n]))
			die("look up an entry");
		prev = &keys[n++];
	}
	return n;
}

static uint32_t dump_batch(int fd)
{
	uint32_t n = 0, out_batch = 0, count;
	void *in = NULL;

	for (;;) {
		count = n_entries - n < BATCH ? n_entries - n : BATCH;
		if (count == 0)
			break;
		int err = bpf_map_lookup_batch(fd, in, &out_batch, keys + n, vals + n, &count,
					       NULL);
		n += count;
		if (err && errno == ENOENT)
			break;
		if (err)
			die("look up a batch");
		in = &out_batch;
	}
	return n;
}

static uint32_t dump_iter(struct bpf_link *link)
{
	int fd = bpf_iter_create(bpf_link__fd(link));
	char *buf = (char *)keys; /* the pairs land in keys[] (2N u32), read as pairs by check() */
	size_t got = 0, cap = (size_t)n_entries * 8;
	ssize_t r;

	if (fd < 0)
		die("create an iterator");
	while ((r = read(fd, buf + got, cap - got > 65536 ? 65536 : cap - got)) > 0)
		got += (size_t)r;
	if (r < 0)
		die("read the iterator");
	close(fd);
	return (uint32_t)(got / 8);
}

static uint32_t dump_way(enum way w, int fd, struct bpf_link *link)
{
	return w == ITERATE ? dump_iterate(fd) : w == BATCH_WAY ? dump_batch(fd) : dump_iter(link);
}

/* After the clock: every key once, with its value. */
static void check(enum way w, uint32_t n)
{
	if (n != n_entries) {
		fprintf(stderr, "indep_dump: %s read %u entries of %u\n", way_names[w], n, n_entries);
		exit(1);
	}
	memset(seen, 0, ((size_t)n_entries + 31) / 32 * 4);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = w == ITER ? keys[2 * i] : keys[i];
		uint32_t v = w == ITER ? keys[2 * i + 1] : vals[i];

		if (k >= n_entries || v != value_of(k) || (seen[k / 32] >> (k % 32) & 1)) {
			fprintf(stderr, "indep_dump: %s: bad entry %u -> %u\n", way_names[w], k, v);
			exit(1);
		}
		seen[k / 32] |= 1u << (k % 32);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3 || atoi(argv[1]) < 1 || atoi(argv[2]) < 1 || atoi(argv[2]) > MAX_ROUNDS) {
		fprintf(stderr, "usage: indep_dump ENTRIES ROUNDS (ROUNDS 1..%d)\n", MAX_ROUNDS);
		return 2;
	}
	n_entries = (uint32_t)atoi(argv[1]);
	int rounds = atoi(argv[2]);
	static double ns[NWAYS][MAX_ROUNDS];

	/* Twice N u32 in keys: bpf-iter's pairs. */
	keys = calloc((size_t)n_entries * 2, sizeof(*keys));
	vals = calloc(n_entries, sizeof(*vals));
	seen = calloc(((size_t)n_entries + 31) / 32, 4);
	if (!keys || !vals || !seen)
		die("allocate the buffers");

	/* The map: preallocated hash, filled by batches. */
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "bko_indep", 4, 4, n_entries, NULL);
	if (fd < 0)
		die("create the map");
	for (uint32_t i = 0; i < n_entries; i++) {
		keys[i] = i;
		vals[i] = value_of(i);
	}
	for (uint32_t done = 0; done < n_entries;) {
		uint32_t count = n_entries - done < BATCH ? n_entries - done : BATCH;

		if (bpf_map_update_batch(fd, keys + done, vals + done, &count, NULL))
			die("fill the map");
		done += count;
	}

	/* The iterator: open, load, attach to the map. */
	struct indep_dump_bpf *skel = indep_dump_bpf__open_and_load();
	if (!skel)
		die("load the iterator program");
	union bpf_iter_link_info info = { .map = { .map_fd = (uint32_t)fd } };
	LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof(info));
	struct bpf_link *link = bpf_program__attach_iter(skel->progs.bko_indep_it, &opts);
	if (!link)
		die("attach the iterator");

	for (int r = -1; r < rounds; r++) { /* round -1: the warm-up */
		for (int j = 0; j < NWAYS; j++) {
			enum way w = (enum way)((j + (r < 0 ? 0 : r)) % NWAYS);

			check(w, dump_way(w, fd, link)); /* the untimed lead of its own way */
			double t0 = now_ns();
			uint32_t n = dump_way(w, fd, link);
			double t = now_ns() - t0;

			check(w, n);
			if (r >= 0)
				ns[w][r] = t / n_entries;
		}
	}

	printf("{\"entries\": %u, \"rounds\": %d, \"ns_per_entry\": {", n_entries, rounds);
	for (int w = 0; w < NWAYS; w++) {
		printf("%s\"%s\": [", w ? ", " : "", way_names[w]);
		for (int r = 0; r < rounds; r++)
			printf("%s%.3f", r ? ", " : "", ns[w][r]);
		printf("]");
	}
	printf("}}\n");
	bpf_link__destroy(link);
	indep_dump_bpf__destroy(skel);
	close(fd);
	return 0;
}
