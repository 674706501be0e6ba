/*
 * dump.h - what the loader and the readers of bpf-map-dump agree on: the map's name and
 * shape, the value stored under each key, the params, and how a loader announces its map.
 *
 * Header-only (static functions): common.mk builds each program from one .c file plus
 * bench.c, and both programs need these few helpers.
 */
#ifndef BAKEOFF_DUMP_H
#define BAKEOFF_DUMP_H

#include <errno.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <signal.h>
#include <unistd.h>

#include "bench.h"

/* <= 15 characters (BPF_OBJ_NAME_LEN - 1). The creating PID is not in the name (it does not
 * fit beside "bakeoff" and a purpose): concurrent runs' maps differ by ID, and
 * /proc/PID/fdinfo (map_id) says which process holds which. The map is never pinned, so it
 * cannot outlive the loader that created it (and the readers holding it while they run). */
#define DUMP_MAP_NAME "bakeoff_dump"

/* Keys are u32 (0..N-1) and so are values, as in the seed. The kernel's hash map allows at
 * most 2^28 buckets of 16 bytes (U32_MAX / sizeof(struct bucket)) and rounds max_entries up
 * to a power of two for its buckets, so 2^28 entries is the largest map both types can make. */
#define DUMP_MAX_ENTRIES (1u << 28)

/* Set by whoever starts a loader or a reader and expects it to die with them: if the parent
 * is already gone when the child checks, PR_SET_PDEATHSIG came too late to fire. */
#define DUMP_ENV_PARENT_PID "BAKEOFF_DUMP_PARENT_PID"
/* Set by the benchmark's session: read the map with this ID instead of starting a loader. */
#define DUMP_ENV_MAP_ID "BAKEOFF_DUMP_MAP_ID"
/* Set with DUMP_ENV_MAP_ID: the loader's fill counters, "name=value,name=value", which the
 * reader reports as its own counters so that every trial carries the fill comparison. */
#define DUMP_ENV_FILL "BAKEOFF_DUMP_FILL"
/* Set with DUMP_ENV_MAP_ID: the PID of the loader holding that map. A reader whose loader
 * dies while it reads fails the trial (bench_watch_env), though its own fd keeps the map: the
 * machine was not the one the trial meant to measure (the OOM killer at work, or someone
 * killing bakeoff's processes), and the session starts another loader for the next one. */
#define DUMP_ENV_LOADER_PID "BAKEOFF_DUMP_LOADER_PID"

enum dump_map_kind { DUMP_HASH, DUMP_ARRAY };

/*
 * The value stored under key k. An odd multiplier makes it a bijection on u32, so a value
 * can only belong to its own key: a reader that pairs a key with its neighbour's value, or
 * reads a stale slot, is caught. The xor keeps f(0) != 0, so an array slot never written
 * (all zeros) is caught too.
 */
static inline uint32_t dump_value_of(uint32_t key)
{
	return key * 2654435761u ^ 0x5bd1e995u;
}

/* splitmix64's finaliser: the per-entry term of the checksum every reader reports. */
static inline uint64_t dump_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* The checksum as emitted: the sum over all entries of mix64(key << 32 | value), modulo 2^52
 * so that it is an exact integer in a JSON double. Order-independent: every reader, in C or
 * Go, reports the same number for the same map, and the tests recompute it independently. */
#define DUMP_CHECKSUM_MASK ((1ull << 52) - 1)

static inline enum dump_map_kind dump_parse_map(const struct bench_args *args)
{
	const char *map = bench_param(args, "map");

	if (strcmp(map, "hash") == 0)
		return DUMP_HASH;
	if (strcmp(map, "array") == 0)
		return DUMP_ARRAY;
	bench_usage_error("--param map=%s is not a map type; use map=hash or map=array", map);
}

static inline uint32_t dump_parse_entries(const struct bench_args *args)
{
	uint64_t n = bench_param_u64(args, "entries");

	if (n < 1 || n > DUMP_MAX_ENTRIES)
		bench_usage_error("--param entries=%llu is out of range; use 1 to %u (2^28, the "
				  "kernel's hash bucket limit)",
				  (unsigned long long)n, DUMP_MAX_ENTRIES);
	return (uint32_t)n;
}

static inline const char *dump_map_name(enum dump_map_kind kind)
{
	return kind == DUMP_HASH ? "hash" : "array";
}

/*
 * Die with the parent: PR_SET_PDEATHSIG(SIGKILL), then make sure the parent named in
 * DUMP_ENV_PARENT_PID (if any) is still the parent, since a parent that died before the
 * prctl would never trigger it. SIGKILL because nothing here needs user-space cleanup: the
 * kernel frees a map when its last file descriptor closes.
 */
static inline void dump_die_with_parent(void)
{
	const char *want = getenv(DUMP_ENV_PARENT_PID);

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		bench_fatal_errno("failed to set PR_SET_PDEATHSIG");
	if (want && *want && (pid_t)strtol(want, NULL, 10) != getppid())
		bench_fatal("parent %s exited before this process started; exiting", want);
}

/*
 * Kernels >= 5.11 charge BPF memory to the memory cgroup, not RLIMIT_MEMLOCK; older ones need
 * the limit raised. Raising it to infinity fails with EPERM here even as root (no
 * CAP_SYS_RESOURCE), so try, fall back to the hard limit, and never abort on it.
 */
static inline void dump_raise_memlock(void)
{
	struct rlimit r = { RLIM_INFINITY, RLIM_INFINITY };

	if (setrlimit(RLIMIT_MEMLOCK, &r) == 0 || getrlimit(RLIMIT_MEMLOCK, &r) != 0)
		return;
	r.rlim_cur = r.rlim_max;
	(void)setrlimit(RLIMIT_MEMLOCK, &r);
}

#endif /* BAKEOFF_DUMP_H */
