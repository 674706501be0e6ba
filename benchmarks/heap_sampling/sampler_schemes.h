/*
 * sampler_schemes.h - the two ways of deciding which allocations a heap profiler samples, and
 * the table the Poisson scheme needs to recognise its samples on free().
 *
 * Shared by the LD_PRELOAD sampler (sampler.c) and the decision micro-benchmark
 * (heap_bench.c) so that both time exactly the same code. Everything here is static inline or
 * static: each of the two translation units gets its own copy, and nothing in here calls
 * malloc (the sampler would recurse into itself).
 *
 * Both schemes decide on the usable size u of a block (malloc_usable_size: what the allocator
 * handed out, and the only size free() can recover without bookkeeping) and both give a block
 * of u bytes a known probability p(u) of being sampled, so that the Horvitz-Thompson estimate
 * sum(u / p(u)) over sampled blocks is unbiased for the bytes allocated (METHOD.md derives its
 * variance).
 *
 * - Poisson (tcmalloc, jemalloc, Go): sample points fall on the stream of allocated bytes as a
 *   Poisson process with mean gap m; a block is sampled when a point falls inside it, so
 *   p(u) = 1 - exp(-u/m). Per thread: a byte counter and a PRNG. An allocator marks a sampled
 *   block in its own metadata (tcmalloc flags it), so its free() looks nothing up; an
 *   LD_PRELOAD has no such metadata and must look every freed pointer up: the live table
 *   below (or, with the sampler's header layout, a tag in a header of its own).
 * - Stateless hash: sampled when hash(address) < u * 2^64 / m, so p(u) = min(1, u/m): not
 *   Poisson's p (above it for every u > 0; the two agree only as u/m -> 0). free()
 *   recomputes the same test; no state, no lookup. Its weakness: an address that is reused
 *   for a block of the same size gets the same answer every time.
 */
#ifndef BAKEOFF_SAMPLER_SCHEMES_H
#define BAKEOFF_SAMPLER_SCHEMES_H

#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ---- the stateless hash ------------------------------------------------------------------ */

/* MurmurHash3's 64-bit finaliser: every input bit flips each output bit with probability ~1/2,
 * so the 16-byte-aligned addresses malloc returns (low 4 bits zero) still hash uniformly. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

struct hash_params {
	uint64_t mean;  /* m, bytes */
	uint64_t scale; /* floor((2^64 - 1) / m): u * scale is the threshold for u < m */
};

static inline struct hash_params hash_params_make(uint64_t mean)
{
	return (struct hash_params){ .mean = mean, .scale = UINT64_MAX / mean };
}

static inline bool hash_sampled(uintptr_t addr, uint64_t u, const struct hash_params *hp)
{
	if (unlikely(u >= hp->mean))
		return true;
	return mix64(addr) < u * hp->scale; /* u < m, so u * scale < 2^64: no overflow */
}

/* u / p(u), p(u) = u * scale / 2^64 exactly as hash_sampled tests it. */
static inline double hash_weighted_bytes(uint64_t u, const struct hash_params *hp)
{
	if (u >= hp->mean)
		return (double)u;
	return (double)u / ((double)(u * hp->scale) * 0x1p-64);
}

/* ---- the Poisson process over allocated bytes -------------------------------------------- */

struct poisson_state {
	int64_t until; /* bytes left before the next sample point */
	uint64_t rng;  /* xorshift64* state, never 0 */
	bool ready;
};

static inline uint64_t xorshift64s(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* floor of an Exp(mean) draw. floor(X) < u <=> X < u for whole u, so flooring keeps
 * p(u) = 1 - exp(-u/m) exact. */
static inline int64_t poisson_gap(struct poisson_state *s, double mean)
{
	double unit = ((double)(xorshift64s(&s->rng) >> 11) + 1.0) * 0x1p-53; /* (0, 1] */
	double gap = -mean * log(unit);

	return gap < 0x1p62 ? (int64_t)gap : (int64_t)1 << 62;
}

static inline void poisson_seed(struct poisson_state *s, uint64_t seed, double mean)
{
	s->rng = mix64(seed) | 1;
	s->until = poisson_gap(s, mean);
	s->ready = true;
}

/*
 * A block of u bytes is sampled when the next sample point falls inside it. After a sample
 * the next gap is drawn afresh from the end of the block: by memorylessness this is the same
 * process, and p(u) = 1 - exp(-u/m) for every block whatever came before.
 */
static inline bool poisson_sampled(struct poisson_state *s, uint64_t u, double mean)
{
	s->until -= (int64_t)u;
	if (likely(s->until >= 0))
		return false;
	s->until = poisson_gap(s, mean);
	return true;
}

static inline double poisson_weighted_bytes(uint64_t u, double mean)
{
	return (double)u / -expm1(-(double)u / mean);
}

/* ---- the live table: which pointers did Poisson sample? ---------------------------------- */

/*
 * Striped open-addressing hash set of sampled live pointers (key -> usable size). 64 stripes,
 * each with its own spinlock and its own linear-probing array (mmap'd, grown at half load,
 * backward-shift deletion so there are no tombstones). In front of it, a counting filter:
 * 2^17 counters, counter i = number of entries whose hash maps to i. free() of a pointer whose
 * counter is 0 (most frees: most blocks are not sampled) takes no lock at all. That is what a
 * careful interposer would do; a naive one-lock table would make Poisson look worse than it is.
 * The filter (512 KiB) is faulted in when the table is created (MAP_POPULATE, ~0.3 ms here), so
 * its first touches are a start-up cost, not a cost of the first decisions; the stripes grow
 * on demand, and faulting in their new memory is part of the insert that grew them.
 */
#define LIVE_STRIPES 64
#define LIVE_FILTER_BITS 17
#define LIVE_INITIAL_CAP 256

struct live_entry {
	uintptr_t key; /* 0 = empty */
	uint64_t size;
};

struct live_stripe {
	_Atomic int lock;
	size_t cap; /* power of two, or 0 before the first insert */
	size_t count;
	struct live_entry *slots;
} __attribute__((aligned(64)));

struct live_table {
	struct live_stripe stripe[LIVE_STRIPES];
	_Atomic uint32_t *filter; /* NULL if it could not be mapped: then every free locks */
	_Atomic uint64_t insert_failures;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__)
	_mm_pause();
#endif
}

static inline void spin_lock(_Atomic int *l)
{
	for (unsigned spins = 0;; spins++) {
		if (!atomic_load_explicit(l, memory_order_relaxed) &&
		    !atomic_exchange_explicit(l, 1, memory_order_acquire))
			return;
		/* Two vCPUs: a holder that was preempted will not release soon; let it run. */
		if (spins < 64)
			cpu_relax();
		else
			sched_yield();
	}
}

static inline void spin_unlock(_Atomic int *l)
{
	atomic_store_explicit(l, 0, memory_order_release);
}

static inline void *live_map(size_t bytes, int extra_flags)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Zeroed table in static storage or from live_map; only the filter needs mapping. */
static inline void live_init(struct live_table *t)
{
	t->filter = live_map(sizeof(uint32_t) << LIVE_FILTER_BITS, MAP_POPULATE);
}

static inline _Atomic uint32_t *live_filter(struct live_table *t, uint64_t h)
{
	return t->filter ? &t->filter[(h >> 32) & ((1u << LIVE_FILTER_BITS) - 1)] : NULL;
}

static inline void live_place(struct live_entry *slots, size_t cap, struct live_entry e)
{
	size_t i = mix64(e.key) & (cap - 1);

	while (slots[i].key)
		i = (i + 1) & (cap - 1);
	slots[i] = e;
}

static __attribute__((noinline, cold)) bool live_grow(struct live_stripe *st)
{
	size_t cap = st->cap ? st->cap * 2 : LIVE_INITIAL_CAP;
	struct live_entry *slots = live_map(cap * sizeof(*slots), 0);

	if (!slots)
		return false;
	for (size_t i = 0; i < st->cap; i++)
		if (st->slots[i].key)
			live_place(slots, cap, st->slots[i]);
	if (st->slots)
		munmap(st->slots, st->cap * sizeof(*st->slots));
	st->slots = slots;
	st->cap = cap;
	return true;
}

/* false only when memory for a bigger stripe could not be mapped (counted by the caller). */
static inline bool live_insert(struct live_table *t, uintptr_t key, uint64_t size)
{
	uint64_t h = mix64(key);
	struct live_stripe *st = &t->stripe[h >> 58];
	_Atomic uint32_t *f = live_filter(t, h);
	bool ok = true;

	spin_lock(&st->lock);
	if ((st->count + 1) * 2 > st->cap && !live_grow(st)) {
		ok = false;
		goto out;
	}
	size_t mask = st->cap - 1, i = h & mask;
	while (st->slots[i].key && st->slots[i].key != key)
		i = (i + 1) & mask;
	if (st->slots[i].key == key) {
		/* Freed behind our back (a path we do not see); the new block replaces it. */
		st->slots[i].size = size;
		goto out;
	}
	st->slots[i] = (struct live_entry){ key, size };
	st->count++;
	if (f)
		atomic_fetch_add_explicit(f, 1, memory_order_relaxed);
out:
	spin_unlock(&st->lock);
	return ok;
}

/* Deletes slot i of a linear-probing array, shifting later members of its run back so that
 * every remaining key stays reachable from its home slot. */
static inline void live_delete_at(struct live_stripe *st, size_t i)
{
	size_t mask = st->cap - 1, j = i;

	for (;;) {
		j = (j + 1) & mask;
		if (!st->slots[j].key)
			break;
		size_t home = mix64(st->slots[j].key) & mask;
		bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
		if (stays)
			continue;
		st->slots[i] = st->slots[j];
		i = j;
	}
	st->slots[i].key = 0;
}

/* Was key sampled? If so, forget it and return its size in *size. */
static inline bool live_remove(struct live_table *t, uintptr_t key, uint64_t *size)
{
	uint64_t h = mix64(key);
	_Atomic uint32_t *f = live_filter(t, h);

	/* The insert that would have raised this counter happened before the block was handed
	 * to the program, so any thread that can free the block sees it. */
	if (f && atomic_load_explicit(f, memory_order_relaxed) == 0)
		return false;
	struct live_stripe *st = &t->stripe[h >> 58];
	bool found = false;

	spin_lock(&st->lock);
	if (st->cap) {
		size_t mask = st->cap - 1;
		for (size_t i = h & mask; st->slots[i].key; i = (i + 1) & mask) {
			if (st->slots[i].key == key) {
				*size = st->slots[i].size;
				live_delete_at(st, i);
				st->count--;
				found = true;
				break;
			}
		}
	}
	if (found && f)
		atomic_fetch_sub_explicit(f, 1, memory_order_relaxed);
	spin_unlock(&st->lock);
	return found;
}

static inline size_t live_count(struct live_table *t)
{
	size_t n = 0;

	for (int i = 0; i < LIVE_STRIPES; i++)
		n += t->stripe[i].count;
	return n;
}

/* fork(): no other thread may hold a stripe while the child's copy is taken. */
static inline void live_lock_all(struct live_table *t)
{
	for (int i = 0; i < LIVE_STRIPES; i++)
		spin_lock(&t->stripe[i].lock);
}

static inline void live_unlock_all(struct live_table *t)
{
	for (int i = LIVE_STRIPES - 1; i >= 0; i--)
		spin_unlock(&t->stripe[i].lock);
}

/* ---- the time stamp counter ------------------------------------------------------------- */

/*
 * TSC ticks: constant rate, not core cycles (no PMU on these VMs; MACHINE-NOTES). lfence
 * before and after the first read keeps earlier and later work out of the interval; rdtscp
 * waits for the timed work to finish. No CPUID: it traps to the hypervisor (tens of µs).
 * Elsewhere than x86-64, nanoseconds stand in for ticks.
 */
static inline uint64_t tsc_start(void)
{
#if defined(__x86_64__)
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

static inline uint64_t tsc_stop(void)
{
#if defined(__x86_64__)
	unsigned aux;
	uint64_t t = __rdtscp(&aux);
	_mm_lfence();
	return t;
#else
	return tsc_start();
#endif
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The timer floor: the median of `pairs` back-to-back tsc_start()/tsc_stop() intervals with
 * nothing between. Found from a histogram (no sorting buffer, no malloc); an interval longer
 * than the histogram (an interrupt) lands in the last bucket and cannot move the median.
 */
#define TSC_FLOOR_BUCKETS 1024
static inline uint64_t tsc_floor_ticks(unsigned pairs)
{
	uint32_t hist[TSC_FLOOR_BUCKETS] = { 0 };

	for (unsigned i = 0; i < 200; i++) /* warm the code and the instruction path */
		(void)(tsc_stop() - tsc_start());
	for (unsigned i = 0; i < pairs; i++) {
		uint64_t t0 = tsc_start();
		uint64_t d = tsc_stop() - t0;
		hist[d < TSC_FLOOR_BUCKETS ? d : TSC_FLOOR_BUCKETS - 1]++;
	}
	unsigned seen = 0;
	for (uint64_t d = 0; d < TSC_FLOOR_BUCKETS; d++) {
		seen += hist[d];
		if (seen * 2 > pairs)
			return d;
	}
	return TSC_FLOOR_BUCKETS - 1;
}

#endif /* BAKEOFF_SAMPLER_SCHEMES_H */
