/*
 * libindep_interposer.so - TEST-ONLY. A second, independent implementation of the sampling
 * decision, to check bakeoff's decision figure against (tests/test_heap_sampling.py, METHOD.md
 * "The independent check"). Written from the definitions, not from sampler.c or
 * sampler_schemes.h: it shares no code with them.
 *
 * A minimal interposer: malloc makes the decision on the size glibc hands out for the request
 * (usable_of_request) and forwards; free only forwards (it keeps no live heap). Switched by indep_use(0 off, 1 Poisson, 2 hash) from
 * the program, between runs; the mean from INDEP_MEAN_BYTES (default 524288).
 *
 * - Poisson: a thread-local count of bytes left before the next sample point; a request of
 *   n bytes takes n off it; when it goes negative the request is sampled and a new gap is
 *   drawn, -mean * ln(U) with U uniform in (0, 1] from a splitmix64 stream; the sample's
 *   weight n / (1 - e^(-n/mean)) goes into a thread-local total.
 * - Hash: sampled when fmix64(address) (MurmurHash3's 64-bit finaliser) is below
 *   n * floor(2^64 / mean) (every block at n >= mean); the weight n / p into the total.
 *
 * Forwarding goes to the next definition (RTLD_NEXT), so this library can sit in front of
 * another interposer in LD_PRELOAD and both be timed in one process. dlsym may call calloc
 * before the pointers are known: those calls get zeroed memory from a static buffer that is
 * never forwarded to free.
 */
#include <dlfcn.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define VISIBLE __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);

static unsigned char early[8192];
static size_t early_used;
static int resolving;

static volatile int scheme; /* 0 off, 1 Poisson, 2 hash */
static double mean = 524288.0;
static uint64_t mean_bytes = 524288; /* the same, whole: the hash's compare stays in integers */
static uint64_t hash_step;           /* floor(2^64 / mean) */

static TLS int64_t bytes_left;
static TLS uint64_t stream;
static TLS int started;
static TLS double weighted_total;

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

static int64_t next_gap(void)
{
	double u = (double)((splitmix64(&stream) >> 11) + 1) / 9007199254740992.0; /* (0, 1] */

	return (int64_t)(-mean * log(u));
}

/* Off the fast path, as tcmalloc's sampler has it (its counter starts at 0, so a thread's
 * first allocation lands here and starts the stream): a sample point, or the first call. */
static __attribute__((noinline)) void poisson_slow(size_t n)
{
	if (!started) {
		stream = (uint64_t)(uintptr_t)&bytes_left ^ 0x2545f4914f6cdd1dULL;
		started = 1;
		bytes_left = next_gap() - (int64_t)n;
		if (bytes_left >= 0)
			return;
	}
	bytes_left = next_gap();
	weighted_total += (double)n / -expm1(-(double)n / mean);
}

static inline void decide_poisson(size_t n)
{
	bytes_left -= (int64_t)n;
	if (__builtin_expect(bytes_left < 0, 0))
		poisson_slow(n);
}

static __attribute__((noinline)) void hash_hit(size_t n, uint64_t bar)
{
	weighted_total += (double)n / ((double)bar / 18446744073709551616.0);
}

static inline void decide_hash(void *p, size_t n)
{
	if (n >= mean_bytes) {
		weighted_total += (double)n;
		return;
	}
	uint64_t bar = (uint64_t)n * hash_step;
	if (__builtin_expect(fmix64((uint64_t)(uintptr_t)p) < bar, 0))
		hash_hit(n, bar);
}

static void resolve(void)
{
	resolving = 1;
	next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	next_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	resolving = 0;
	const char *m = getenv("INDEP_MEAN_BYTES");
	if (m && strtoull(m, NULL, 10) >= 1)
		mean_bytes = strtoull(m, NULL, 10);
	mean = (double)mean_bytes;
	hash_step = UINT64_MAX / mean_bytes;
}

static __attribute__((constructor)) void indep_init(void)
{
	if (!next_malloc)
		resolve();
}

static int is_early(const void *p)
{
	return (const unsigned char *)p >= early && (const unsigned char *)p < early + sizeof(early);
}

/*
 * The size decided on: what glibc hands out for a request of n bytes (its chunk: n plus an
 * 8-byte size word, rounded up to 16, at least 32; all but the size word usable), as an
 * allocator decides on the size class it has already picked. bakeoff's sampler decides on
 * the same quantity, so the two make the same decision.
 */
static inline size_t usable_of_request(size_t n)
{
	size_t chunk = (n + 8 + 15) & ~(size_t)15;

	return (chunk < 32 ? 32 : chunk) - 8;
}

static inline void decide(void *p, size_t n)
{
	int s = scheme;

	if (s == 1)
		decide_poisson(usable_of_request(n));
	else if (s == 2)
		decide_hash(p, usable_of_request(n));
}

VISIBLE void *malloc(size_t n)
{
	if (__builtin_expect(!next_malloc, 0))
		resolve();
	void *p = next_malloc(n);
	if (__builtin_expect(p != NULL, 1))
		decide(p, n);
	return p;
}

VISIBLE void *calloc(size_t count, size_t size)
{
	if (__builtin_expect(resolving, 0)) {
		size_t n = (count * size + 15) & ~(size_t)15;
		if (early_used + n > sizeof(early))
			return NULL;
		early_used += n;
		return early + early_used - n; /* static storage: already zero */
	}
	if (__builtin_expect(!next_calloc, 0))
		resolve();
	void *p = next_calloc(count, size);
	if (p)
		decide(p, count * size);
	return p;
}

VISIBLE void *realloc(void *old, size_t n)
{
	if (__builtin_expect(!next_realloc, 0))
		resolve();
	if (is_early(old)) {
		size_t room = (size_t)(early + sizeof(early) - (unsigned char *)old);
		void *p = malloc(n);
		if (p)
			memcpy(p, old, n < room ? n : room);
		return p;
	}
	void *p = next_realloc(old, n);
	if (p)
		decide(p, n);
	return p;
}

VISIBLE void free(void *p)
{
	if (p == NULL || is_early(p))
		return;
	if (__builtin_expect(!next_free, 0))
		resolve();
	next_free(p);
}

/* 0 off, 1 Poisson, 2 hash; between runs, never while another thread allocates. */
VISIBLE void indep_use(int s)
{
	scheme = s;
}

/* What the decisions weighed, so none of them is dead code to the compiler. */
VISIBLE double indep_weighted_total(void)
{
	return weighted_total;
}
