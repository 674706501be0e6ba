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
 */
#include <dlfcn.h>
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

int main(int argc, char **argv)
{
	if (argc != 6 || (strcmp(argv[1], "poisson") && strcmp(argv[1], "hash")) ||
	    (strcmp(argv[5], "pool") && strcmp(argv[5], "cycle"))) {
		fprintf(stderr, "usage: indep_check poisson|hash ROUNDS ALLOCS_PER_RUN MAX_SECONDS "
				"pool|cycle\n");
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
