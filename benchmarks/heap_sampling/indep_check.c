/*
 * indep_check - TEST-ONLY driver of the independent check (METHOD.md "The independent
 * check"). Shares no code with alloc_patterns or the sampler.
 *
 *   LD_PRELOAD=libindep_interposer.so:libbakeoff_sampler.so SAMPLER_SCHEME=POISSON \
 *   SAMPLER_REFERENCE=NONE SAMPLER_COUNT=0 SAMPLER_POISSON_MEAN_BYTES=524288 \
 *   INDEP_MEAN_BYTES=524288 indep_check poisson ROUNDS ALLOCS_PER_RUN MAX_SECONDS pool
 *
 * "pool": a steady pool of 1024 blocks, requests uniform in 64..4096 bytes: each operation
 * frees a random block and allocates a new one in its place. "cycle": allocate and free at
 * once, sizes stepping through 64..1024 (run_cycle). Each round runs it three times with the
 * same requests, in an order shuffled per round: "off" (both samplers decide nothing),
 * "indep" (the independent interposer decides; bakeoff's sampler forwards as NONE) and
 * "bakeoff" (bakeoff's sampler makes its decision alone, bakeoff_sampler_use_part(2), against
 * its NONE through the same dispatch, part 4, in the other two; the independent one forwards). Without bakeoff's sampler preloaded the round has no "bakeoff"
 * run. One JSON line a round on stdout, ns per allocation (its free included) of each run.
 * Stops after ROUNDS rounds or MAX_SECONDS, whichever comes first.
 *
 *   INDEP_MEAN_BYTES=4096 indep_check poisson|hash ROUNDS BLOCKS MAX_SECONDS inline-SIZE
 *
 * "inline-SIZE" (no interposer needed, none consulted): the decision written into this
 * program's own allocation path, as an allocator has it, and what it adds to a malloc and
 * its free: a run mallocs BLOCKS blocks of SIZE bytes, deciding on each right after its
 * malloc, and then frees them, one clock read either side. Each round runs it without the
 * decision ("off") and with it ("indep"), in an order drawn per round, each timed run
 * right after an untimed one of its own kind. Its own code, from the definitions (the same
 * ones indep_interposer.c states): Poisson a thread-local byte count that the block's usable
 * size (glibc's chunk of the request, less its size word) is taken off, and on going
 * negative (out of line) a new gap -mean ln U from splitmix64, the sample counted and its weight n / (1 - e^(-n/mean)) added; the hash MurmurHash3's fmix64
 * of the address against n * floor(2^64 / mean), every block at n >= mean, on a sample
 * (out of line) the sample counted and its weight added. The class n is known before the
 * decision (the allocator computed it to serve the request). Where the code lies is drawn
 * every IN_ROUNDS_PER_PLACEMENT rounds (IN_COPIES placements of each run function; the
 * round's line names its placement's number and the two copies); INDEP_LAYOUT=K runs every
 * round in copy K.
 */
#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POOL 1024

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *pool[POOL];

/* "cycle": each operation allocates a block and frees it at once, its size stepping through
 * 64..1024 bytes (glibc's per-thread cache serves every one): the cheapest allocator path,
 * and the steadiest, against which a decision of a ns or two stands out. */
static double run_cycle(uint64_t seed, long ops)
{
	size_t size = 64 + seed % 16 * 16;
	double t0 = now_ns();

	for (long i = 0; i < ops; i++) {
		void *p = malloc(size);
		if (!p) {
			fprintf(stderr, "indep_check: out of memory\n");
			exit(1);
		}
		*(volatile char *)p = 1;
		free(p);
		size = size >= 1024 ? 64 : size + 16;
	}
	return (now_ns() - t0) / (double)ops;
}

static double run(uint64_t seed, long ops, bool cycle)
{
	uint64_t s = seed;
	if (cycle)
		return run_cycle(seed, ops);
	double t0 = now_ns();

	for (long i = 0; i < ops; i++) {
		uint64_t r = next(&s);
		size_t slot = r % POOL, size = 64 + (r >> 32) % 4033;
		free(pool[slot]);
		pool[slot] = malloc(size);
		if (!pool[slot]) {
			fprintf(stderr, "indep_check: out of memory\n");
			exit(1);
		}
		*(volatile char *)pool[slot] = 1;
	}
	return (now_ns() - t0) / (double)ops;
}

/* ---- inline-SIZE: the decision in this program's own malloc path ---- */

static __thread int64_t in_left;     /* bytes before the next Poisson sample point */
static __thread uint64_t in_stream;  /* splitmix64 state */
static __thread double in_weighted;  /* what the samples weigh: keeps them live */
static __thread uint64_t in_samples; /* how many: a profiler counts its samples */
static double in_mean = 524288.0;
static uint64_t in_mean_bytes = 524288, in_step;
static void *in_blocks[1 << 16];

static size_t in_usable(size_t n)
{
	size_t chunk = (n + 8 + 15) & ~(size_t)15;

	return (chunk < 32 ? 32 : chunk) - 8;
}

/* Code placement is drawn, not fixed by this build (its own take on METHOD.md "Code
 * placement"): the functions the timed runs execute come in IN_COPIES copies, each starting
 * at a cache line plus an offset of its own, the offset laid before the entry as nops that
 * never run; every round picks its copies at random. A decision of a cycle or two reads
 * several tenths of a ns apart in two placements of the same instructions, so a figure from
 * one placement is one draw; a figure over placements is the reader's (median within a
 * placement, and across them a mean less the dearest and the cheapest). Every offset of a
 * line once per kind of function (13 + 2 * kind is odd, so copy * that mod 64 takes each
 * value once): a few offsets read several times the others, and a subset of offsets is a
 * subset of those. */
#define IN_COPIES 64
#define IN_ROUNDS_PER_PLACEMENT 5
#define IN_OFFSET(copy, kind) ((5 + (13 + 2 * (kind)) * (copy) + 29 * (kind)) & 63)
#define IN_PLACE(copy, kind) \
	__attribute__((noinline, aligned(64), \
		       patchable_function_entry(IN_OFFSET(copy, kind), IN_OFFSET(copy, kind))))

static inline __attribute__((always_inline)) void in_poisson_hit_body(size_t n)
{
	double u = (double)((next(&in_stream) >> 11) + 1) / 9007199254740992.0; /* (0, 1] */

	in_left = (int64_t)(-in_mean * log(u));
	in_samples++;
	in_weighted += (double)n / -expm1(-(double)n / in_mean);
}

static inline __attribute__((always_inline)) void in_hash_hit_body(size_t n)
{
	in_samples++;
	in_weighted += n >= in_mean_bytes ? (double)n :
		(double)n / ((double)(n * in_step) / 18446744073709551616.0);
}

static __attribute__((noinline)) void in_poisson_hit(size_t n)
{
	in_poisson_hit_body(n);
}

static inline uint64_t in_fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

/* One run: `blocks` mallocs of `size`, each decided on by `scheme` (0 none, 1 Poisson,
 * 2 hash) inline right after it, then their frees; ns per malloc+free. A function per
 * scheme (the scheme a constant in each), as a build of an allocator has one; `hit` the
 * out-of-line sample path it calls, a constant in each copy. */
static inline __attribute__((always_inline)) double in_run(int scheme, size_t size, long blocks,
							   void (*hit)(size_t))
{
	/* The class is what the allocator computed to serve the request anyway: known before
	 * the decision, not part of it. */
	size_t n = in_usable(size);
	double t0 = now_ns();

	for (long i = 0; i < blocks; i++) {
		void *p = malloc(size);
		if (!p) {
			fprintf(stderr, "indep_check: out of memory\n");
			exit(1);
		}
		if (scheme == 1) {
			in_left -= (int64_t)n;
			if (__builtin_expect(in_left < 0, 0))
				hit(n);
		} else if (scheme == 2) {
			if (__builtin_expect(n >= in_mean_bytes ||
					     in_fmix64((uint64_t)(uintptr_t)p) < n * in_step, 0))
				hit(n);
		}
		*(volatile char *)p = 1;
		in_blocks[i] = p;
	}
	for (long i = 0; i < blocks; i++)
		free(in_blocks[i]);
	return (now_ns() - t0) / (double)blocks;
}

typedef double (*in_run_fn)(size_t, long);

#define IN_RUNS(c)                                                                            \
	static IN_PLACE(c, 0) void in_poisson_hit_##c(size_t n) { in_poisson_hit_body(n); }   \
	static IN_PLACE(c, 1) void in_hash_hit_##c(size_t n) { in_hash_hit_body(n); }         \
	static IN_PLACE(c, 2) double in_run_off_##c(size_t size, long blocks)                 \
	{                                                                                     \
		return in_run(0, size, blocks, NULL);                                         \
	}                                                                                     \
	static IN_PLACE(c, 3) double in_run_poisson_##c(size_t size, long blocks)             \
	{                                                                                     \
		return in_run(1, size, blocks, in_poisson_hit_##c);                           \
	}                                                                                     \
	static IN_PLACE(c, 4) double in_run_hash_##c(size_t size, long blocks)                \
	{                                                                                     \
		return in_run(2, size, blocks, in_hash_hit_##c);                              \
	}
IN_RUNS(0) IN_RUNS(1) IN_RUNS(2) IN_RUNS(3) IN_RUNS(4) IN_RUNS(5) IN_RUNS(6) IN_RUNS(7)
IN_RUNS(8) IN_RUNS(9) IN_RUNS(10) IN_RUNS(11) IN_RUNS(12) IN_RUNS(13) IN_RUNS(14) IN_RUNS(15)
IN_RUNS(16) IN_RUNS(17) IN_RUNS(18) IN_RUNS(19) IN_RUNS(20) IN_RUNS(21) IN_RUNS(22) IN_RUNS(23)
IN_RUNS(24) IN_RUNS(25) IN_RUNS(26) IN_RUNS(27) IN_RUNS(28) IN_RUNS(29) IN_RUNS(30) IN_RUNS(31)
IN_RUNS(32) IN_RUNS(33) IN_RUNS(34) IN_RUNS(35) IN_RUNS(36) IN_RUNS(37) IN_RUNS(38) IN_RUNS(39)
IN_RUNS(40) IN_RUNS(41) IN_RUNS(42) IN_RUNS(43) IN_RUNS(44) IN_RUNS(45) IN_RUNS(46) IN_RUNS(47)
IN_RUNS(48) IN_RUNS(49) IN_RUNS(50) IN_RUNS(51) IN_RUNS(52) IN_RUNS(53) IN_RUNS(54) IN_RUNS(55)
IN_RUNS(56) IN_RUNS(57) IN_RUNS(58) IN_RUNS(59) IN_RUNS(60) IN_RUNS(61) IN_RUNS(62) IN_RUNS(63)

#define IN_ROW(name) \
	{ name##_0, name##_1, name##_2, name##_3, name##_4, name##_5, name##_6, name##_7, \
	  name##_8, name##_9, name##_10, name##_11, name##_12, name##_13, name##_14, name##_15, \
	  name##_16, name##_17, name##_18, name##_19, name##_20, name##_21, name##_22, name##_23, \
	  name##_24, name##_25, name##_26, name##_27, name##_28, name##_29, name##_30, name##_31, \
	  name##_32, name##_33, name##_34, name##_35, name##_36, name##_37, name##_38, name##_39, \
	  name##_40, name##_41, name##_42, name##_43, name##_44, name##_45, name##_46, name##_47, \
	  name##_48, name##_49, name##_50, name##_51, name##_52, name##_53, name##_54, name##_55, \
	  name##_56, name##_57, name##_58, name##_59, name##_60, name##_61, name##_62, name##_63 }
static const in_run_fn in_runs[3][IN_COPIES] = { IN_ROW(in_run_off), IN_ROW(in_run_poisson),
						 IN_ROW(in_run_hash) };

static int run_inline(int scheme, long rounds, long blocks, double limit_ns, size_t size)
{
	const char *m = getenv("INDEP_MEAN_BYTES");
	uint64_t order_rng = 54321;

	if (blocks < 1 || blocks > (long)(sizeof(in_blocks) / sizeof(in_blocks[0])) || size < 1) {
		fprintf(stderr, "indep_check: inline needs BLOCKS 1..65536 and SIZE >= 1\n");
		return 2;
	}
	if (m && strtoull(m, NULL, 10) >= 1)
		in_mean_bytes = strtoull(m, NULL, 10);
	in_mean = (double)in_mean_bytes;
	in_step = UINT64_MAX / in_mean_bytes;
	in_stream = (uint64_t)now_ns() ^ 0x2545f4914f6cdd1dULL;
	in_poisson_hit(1); /* the first gap */
	uint64_t place_rng = in_stream ^ 0x5851f42d4c957f2dULL; /* a placement per round */
	int pinned = -1; /* INDEP_LAYOUT=K: every round in copy K (one placement, as one build) */
	const char *pin = getenv("INDEP_LAYOUT");
	if (pin && *pin) {
		char *end;
		pinned = (int)strtol(pin, &end, 10);
		if (*end || pinned < 0 || pinned >= IN_COPIES) {
			fprintf(stderr, "indep_check: INDEP_LAYOUT must be 0..%d\n", IN_COPIES - 1);
			return 2;
		}
	}
	/* Freed blocks stay with the heap (no trim of its top), so every run after the first
	 * reuses them: the runs time malloc and free, not the kernel faulting pages back in. */
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
	for (int c = 0; c < IN_COPIES; c++) { /* every copy's code and the heap, once */
		in_runs[0][c](size, blocks);
		in_runs[scheme][c](size, blocks);
	}
	double start = now_ns();
	int off_copy = 0, on_copy = 0;
	for (long round = -3; round < rounds; round++) { /* three warm-up rounds */
		double off, on;
		/* A placement holds for IN_ROUNDS_PER_PLACEMENT rounds, so that a reader can take
		 * the median within one (an interrupt moves one round) and the mean across them
		 * (the steps a placement makes are not symmetric about their median). */
		if (round < 0 || round % IN_ROUNDS_PER_PLACEMENT == 0) {
			off_copy = pinned >= 0 ? pinned : (int)(next(&place_rng) % IN_COPIES);
			on_copy = pinned >= 0 ? pinned : (int)(next(&place_rng) % IN_COPIES);
		}
		in_run_fn in_run_off = in_runs[0][off_copy], with = in_runs[scheme][on_copy];
		/* Each timed run after an untimed run of the same kind: a run right after the
		 * other kind's reads dearer at small blocks (the switch, not the decision). */
		if (next(&order_rng) & 1) {
			in_run_off(size, blocks);
			off = in_run_off(size, blocks);
			with(size, blocks);
			on = with(size, blocks);
		} else {
			with(size, blocks);
			on = with(size, blocks);
			in_run_off(size, blocks);
			off = in_run_off(size, blocks);
		}
		if (round < 0)
			continue;
		printf("{\"round\":%ld,\"off\":%.4f,\"indep\":%.4f,\"placement\":%ld,"
		       "\"off_copy\":%d,\"indep_copy\":%d}\n", round, off, on,
		       round / IN_ROUNDS_PER_PLACEMENT, off_copy, on_copy);
		if (now_ns() - start > limit_ns)
			break;
	}
	fprintf(stderr, "indep_check: weighted total %.0f, %llu samples\n", in_weighted,
		(unsigned long long)in_samples);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && strncmp(argv[5], "inline-", 7) == 0 &&
	    (!strcmp(argv[1], "poisson") || !strcmp(argv[1], "hash")))
		return run_inline(strcmp(argv[1], "poisson") == 0 ? 1 : 2, atol(argv[2]),
				  atol(argv[3]), atof(argv[4]) * 1e9,
				  (size_t)strtoull(argv[5] + 7, NULL, 10));
	if (argc != 6 || (strcmp(argv[1], "poisson") && strcmp(argv[1], "hash")) ||
	    (strcmp(argv[5], "pool") && strcmp(argv[5], "cycle"))) {
		fprintf(stderr, "usage: indep_check poisson|hash ROUNDS ALLOCS_PER_RUN MAX_SECONDS "
				"pool|cycle|inline-SIZE\n");
		return 2;
	}
	bool cycle = strcmp(argv[5], "cycle") == 0;
	int scheme = strcmp(argv[1], "poisson") == 0 ? 1 : 2;
	long rounds = atol(argv[2]), ops = atol(argv[3]);
	double limit_ns = atof(argv[4]) * 1e9;
	void (*indep_use)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "indep_use");
	int (*use_part)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "bakeoff_sampler_use_part");

	if (!indep_use || rounds < 1 || ops < 1) {
		fprintf(stderr, "indep_check: needs libindep_interposer.so preloaded, ROUNDS >= 1, "
				"ALLOCS_PER_RUN >= 1\n");
		return 2;
	}
	if (use_part && use_part(4) != 0) {
		fprintf(stderr, "indep_check: bakeoff's sampler refused its parts (SAMPLER_COUNT=0?)\n");
		return 2;
	}
	int legs = use_part ? 3 : 2;
	uint64_t order_rng = 12345;
	for (size_t i = 0; i < POOL; i++)
		pool[i] = malloc(64);
	double start = now_ns();
	for (long round = -2; round < rounds; round++) { /* two warm-up rounds */
		int order[3] = { 0, 1, 2 };
		double ns[3] = { 0 };
		for (int i = legs - 1; i > 0; i--) { /* Fisher-Yates */
			int j = (int)(next(&order_rng) % (uint64_t)(i + 1)), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (int k = 0; k < legs; k++) {
			int leg = order[k]; /* 0 off, 1 indep, 2 bakeoff */
			indep_use(leg == 1 ? scheme : 0);
			if (use_part)
				use_part(leg == 2 ? 2 : 4);
			ns[leg] = run(0xabcdef + (uint64_t)round, ops, cycle);
		}
		indep_use(0);
		if (use_part)
			use_part(4);
		if (round < 0)
			continue;
		printf("{\"round\":%ld,\"off\":%.4f,\"indep\":%.4f", round, ns[0], ns[1]);
		if (use_part)
			printf(",\"bakeoff\":%.4f", ns[2]);
		printf("}\n");
		if (now_ns() - start > limit_ns)
			break;
	}
	double (*total)(void) = (double (*)(void))dlsym(RTLD_DEFAULT, "indep_weighted_total");
	fprintf(stderr, "indep_check: weighted total %.0f\n", total ? total() : 0.0);
	return 0;
}
