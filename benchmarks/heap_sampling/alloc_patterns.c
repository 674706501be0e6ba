/*
 * alloc_patterns - the seed's allocation patterns (bench_alloc_patterns), timed, to run with or
 * without a sampler preloaded. Arguments as the seed's, options anywhere:
 *
 *   alloc_patterns 1 <n> <min> <max>                          monotonic heap: n blocks, then
 *                                                             95% freed, 5% leaked
 *   alloc_patterns 2 <pool> <iterations> <min> <max> <churn%> steady-state pool: each
 *                                                             iteration replaces churn% of it
 *   alloc_patterns 3 <threads> <allocs_per_thread> <min> <max>
 *                                                             multi-threaded churn with
 *                                                             cross-thread frees (not in the
 *                                                             seed: proves thread safety)
 *   alloc_patterns 4 <slots> <rounds> <min> <max>             high address reuse: the same
 *                                                             slots allocated and freed round
 *                                                             after round
 *   options: --samples N (default 1) --warmup N (default 0) --seed S (default 1)
 *            --counted-samples N (default 0): N more samples after the measured ones, with
 *            kernel counters on (counters.h) around the run of the pattern (paired: around
 *            the sampler's side only), printed as counted.<metric> and per_op.<counter> per
 *            allocation; the counters are this process's main thread's (mode 3's threads are
 *            not counted: events are per task)
 *            --paired F: under libbakeoff_sampler with SAMPLER_REFERENCE set, each sample is
 *            a pair of runs with the same requests, one under the sampler's scheme
 *            (ns_per_alloc) and one under its reference scheme (ref_ns_per_alloc), switched
 *            in this process; F = 1: the reference goes first in the first pair; the order
 *            alternates from pair to pair, so a drift hits both sides alike
 *            --parts 1 (with --paired): the cost decomposition. Each measured sample is a
 *            round of five runs with the same requests: the two above, the scheme's decision
 *            alone (decide_leg_ns_per_alloc), the decision with its live-heap tracking
 *            (track_leg_ns_per_alloc), and glibc called directly, past the interposer
 *            (bypass_leg_ns_per_alloc: __libc_malloc, __libc_free). The order follows a
 *            Williams design over ten rounds (williams_leg): each run takes every place,
 *            and follows every other run, equally often. Warm-up and counted samples stay
 *            pairs.
 *            --parts-row K (0-9, with --parts 1): the design's row of round 0 (default F).
 *            A process of fewer than ten rounds runs only some rows, always in the same
 *            places: drawn per process (heap_bench does), the orders balance over processes.
 *
 * Sizes are uniform in [min, max], drawn from a PRNG with a fixed seed, so every run makes the
 * same requests: across processes only the addresses (ASLR) and the sampler's own randomness
 * change. Each sample is one whole run of the pattern; stdout gets one JSON line per sample,
 * {"type":"sample","metric":"ns_per_alloc",...} (wall time of the run / allocations in it,
 * the frees included), then counters with what the process did in total.
 *
 * This program makes no heap allocation but the pattern's own, so a sampler's exact counts
 * must equal the counters printed here: its bookkeeping comes from mmap, and its output is
 * written with write(2) instead of bench.h's emitters (which allocate a buffer per line).
 */
#include "bench.h"
#include "counters.h"
#include "heap_counters.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_ARGS 5
#define MAX_THREADS 256
#define THREAD_POOL 64 /* live blocks per thread in mode 3 */
#define EXCHANGE 256   /* slots through which mode-3 threads hand blocks to each other */

static const char *const usage =
	"usage: alloc_patterns MODE ARGS... [--samples N] [--warmup N] [--seed S]\n"
	"  1 <n> <min> <max>                           monotonic heap (95% freed, 5% leaked)\n"
	"  2 <pool> <iterations> <min> <max> <churn%>  steady-state pool with random churn\n"
	"  3 <threads> <allocs_per_thread> <min> <max> multi-threaded churn\n"
	"  4 <slots> <rounds> <min> <max>              high address reuse\n";

static const int nargs_of_mode[] = { 0, 3, 5, 4, 4 };

struct run {
	int mode;
	uint64_t a[MAX_ARGS];
	uint64_t samples, warmup, seed, counted;
	uint64_t min, max;
	int paired; /* -1: not paired; else which side goes first in the first pair */
	bool parts; /* --parts 1: rounds of the cost decomposition's five runs */
	int parts_row; /* --parts-row: the Williams row of round 0; -1: --paired's side */
};

/*
 * The pattern allocates and frees through these: the interposed malloc and free (which
 * resolve to a preloaded sampler's), or glibc's own entry points past any interposer (the
 * bypass run of --parts). Every run calls through the pointers, so the call is the same.
 */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
static void *(*pattern_malloc)(size_t) = malloc;
static void (*pattern_free)(void *) = free;

/* The runs of a --parts round, and the sampler's part for each (bakeoff_sampler_use_part). */
enum leg { LEG_SCHEME, LEG_REFERENCE, LEG_DECIDE, LEG_TRACK, LEG_BYPASS, N_LEGS };
static const char *const leg_metric[N_LEGS] = { "ns_per_alloc", "ref_ns_per_alloc",
						"decide_leg_ns_per_alloc", "track_leg_ns_per_alloc",
						"bypass_leg_ns_per_alloc" };
/*
 * The order of a --parts round's five runs: a Williams design, ten orders in turn, in which
 * each run takes every place twice and follows every other run exactly twice. A run right
 * after another kind of run reads dearer (at small blocks the switch costs more than the
 * decision: METHOD.md), so the order must balance what comes before each run, not only
 * where it stands: the rotation used before put the track run after the bypass run (glibc
 * called directly) in every other round and the decision run never, and NONE's live-heap
 * part, which compares identical code, read above 0 in every sample of a CI run.
 */
static unsigned williams_leg(uint64_t round, uint64_t place)
{
	/* Row k: 0, 1, 4, 2, 3 shifted by k (mod 5); rows 5-9: rows 0-4 reversed. */
	static const unsigned first[N_LEGS] = { 0, 1, 4, 2, 3 };
	unsigned row = (unsigned)(round % (2 * N_LEGS));
	unsigned at = row < N_LEGS ? (unsigned)place : N_LEGS - 1 - (unsigned)place;

	return (first[at] + row % N_LEGS) % N_LEGS;
}

/* The reference of a round is NONE through the parts' own dispatch (4), which the decision
 * and the tracking (2, 3) are measured against; the scheme as shipped is 0. */
static const int leg_part[N_LEGS] = { 0, 4, 2, 3, 4 };

/* What the whole process did: a sampler's exact counts must match. */
static struct {
	uint64_t allocations, frees, requested_bytes, leaked_blocks;
	uint64_t reused, reuse_candidates; /* mode 4: same slot, same address as last round */
} did;

/* ---- output without allocating ------------------------------------------------------------ */

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(line))
		bench_fatal("bug: output line too long");
	for (const char *p = line; n > 0;) {
		ssize_t w = write(STDOUT_FILENO, p, (size_t)n);
		if (w <= 0)
			bench_fatal_errno("failed to write to stdout");
		p += w;
		n -= (int)w;
	}
}

/* Median cost of one bench_now_ns(), from a histogram (bench.h's version sorts with qsort,
 * which allocates for arrays this large). */
static double timer_overhead_ns(void)
{
	static uint32_t hist[1024];
	const int pairs = 1001;

	for (int i = 0; i < 100; i++)
		(void)bench_now_ns();
	for (int i = 0; i < pairs; i++) {
		uint64_t t0 = bench_now_ns(), d = bench_now_ns() - t0;
		hist[d < 1023 ? d : 1023]++;
	}
	for (int d = 0, seen = 0; d < 1024; d++)
		if ((seen += (int)hist[d]) * 2 > pairs)
			return d;
	return 1023;
}

/* ---- arguments ---------------------------------------------------------------------------- */

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;

	if (s[0] < '0' || s[0] > '9')
		bench_usage_error("%s '%s' is not a whole number\n%s", what, s, usage);
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end || errno)
		bench_usage_error("%s '%s' is not a whole number", what, s);
	return v;
}

static void parse(int argc, char **argv, struct run *r)
{
	int npos = 0;
	uint64_t pos[1 + MAX_ARGS];

	*r = (struct run){ .samples = 1, .warmup = 0, .seed = 1, .paired = -1, .parts_row = -1 };
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			out("%s", usage);
			exit(0);
		}
		if (strncmp(argv[i], "--", 2) == 0) {
			if (i + 1 >= argc)
				bench_usage_error("%s needs a value", argv[i]);
			uint64_t v = parse_u64(argv[i + 1], argv[i]);
			if (strcmp(argv[i], "--samples") == 0 && v >= 1)
				r->samples = v;
			else if (strcmp(argv[i], "--warmup") == 0)
				r->warmup = v;
			else if (strcmp(argv[i], "--counted-samples") == 0)
				r->counted = v;
			else if (strcmp(argv[i], "--seed") == 0)
				r->seed = v ? v : 1;
			else if (strcmp(argv[i], "--paired") == 0 && v <= 1)
				r->paired = (int)v;
			else if (strcmp(argv[i], "--parts") == 0 && v <= 1)
				r->parts = v == 1;
			else if (strcmp(argv[i], "--parts-row") == 0 && v < 2 * N_LEGS)
				r->parts_row = (int)v;
			else
				bench_usage_error("unknown option %s (or --samples 0); see --help",
						  argv[i]);
			i++;
			continue;
		}
		if (npos == 1 + MAX_ARGS)
			bench_usage_error("too many arguments; see --help");
		pos[npos++] = parse_u64(argv[i], "argument");
	}
	if (npos == 0 || pos[0] < 1 || pos[0] > 4)
		bench_usage_error("MODE must be 1, 2, 3 or 4; see --help");
	r->mode = (int)pos[0];
	if (npos - 1 != nargs_of_mode[r->mode])
		bench_usage_error("mode %d takes %d arguments, got %d; see --help", r->mode,
				  nargs_of_mode[r->mode], npos - 1);
	memcpy(r->a, pos + 1, sizeof(uint64_t) * (size_t)(npos - 1));
	int size_at = r->mode == 1 ? 1 : 2;
	r->min = r->a[size_at];
	r->max = r->a[size_at + 1];
	if (r->min < 1 || r->max < r->min || r->max > ((uint64_t)1 << 30))
		bench_usage_error("sizes must satisfy 1 <= min <= max <= 1 GiB (got %" PRIu64
				  " %" PRIu64 ")", r->min, r->max);
	if (r->a[0] < 1 || (r->mode != 1 && r->a[1] < 1))
		bench_usage_error("counts must be at least 1");
	if (r->mode == 2 && (r->a[4] < 1 || r->a[4] > 100))
		bench_usage_error("churn%% must be 1..100 (got %" PRIu64 ")", r->a[4]);
	if (r->mode == 3 && r->a[0] > MAX_THREADS)
		bench_usage_error("at most %d threads", MAX_THREADS);
	if (r->parts && r->paired < 0)
		bench_usage_error("--parts 1 needs --paired (a sampler with SAMPLER_REFERENCE)");
	if (r->parts_row >= 0 && !r->parts)
		bench_usage_error("--parts-row goes with --parts 1");
}

/* ---- the patterns ------------------------------------------------------------------------- */

static uint64_t next_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static uint64_t draw_size(uint64_t *rng, const struct run *r)
{
	return r->min + next_rand(rng) % (r->max - r->min + 1);
}

/* Bookkeeping arrays come from mmap: they are not part of the pattern. */
static void *map_array(size_t n, size_t elem)
{
	size_t bytes = n * elem > 0 ? n * elem : 1;
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		bench_fatal_errno("failed to map %zu bookkeeping entries", n);
	return p;
}

static void *xmalloc(uint64_t size)
{
	void *p = pattern_malloc(size);

	if (!p)
		bench_fatal_errno("failed to allocate %" PRIu64 " bytes", size);
	*(volatile char *)p = 1; /* used, so it cannot be optimised away; as a program would */
	return p;
}

/* Each pattern returns the allocations it made (the divisor of the sample). */

static uint64_t monotonic_heap(const struct run *r, uint64_t *rng, void **ptrs)
{
	uint64_t n = r->a[0];

	for (uint64_t i = 0; i < n; i++) {
		uint64_t size = draw_size(rng, r);
		ptrs[i] = xmalloc(size);
		did.requested_bytes += size;
	}
	for (uint64_t i = 0; i < n; i++) {
		if (next_rand(rng) % 100 < 95) {
			pattern_free(ptrs[i]);
			did.frees++;
		} else {
			did.leaked_blocks++;
		}
	}
	return n;
}

static uint64_t steady_pool(const struct run *r, uint64_t *rng, void **pool)
{
	uint64_t n = r->a[0], iterations = r->a[1], churn = n * r->a[4] / 100, made = 0;

	for (uint64_t i = 0; i < n; i++, made++) {
		uint64_t size = draw_size(rng, r);
		pool[i] = xmalloc(size);
		did.requested_bytes += size;
	}
	for (uint64_t it = 0; it < iterations; it++) {
		for (uint64_t k = 0; k < churn; k++, made++) {
			uint64_t j = next_rand(rng) % n, size = draw_size(rng, r);
			pattern_free(pool[j]);
			did.frees++;
			pool[j] = xmalloc(size);
			did.requested_bytes += size;
		}
	}
	did.leaked_blocks += n; /* the steady state is what a live-heap profile is about */
	return made;
}

static struct {
	const struct run *r;
	_Atomic int go;
	_Atomic uint64_t requested;
	void *_Atomic exchange[EXCHANGE];
} churn;

static void *churn_thread(void *arg)
{
	uint64_t rng = churn.r->seed * 0x9e3779b97f4a7c15ULL + (uintptr_t)arg + 1, requested = 0;
	void *pool[THREAD_POOL] = { 0 };

	while (!atomic_load_explicit(&churn.go, memory_order_acquire))
		sched_yield();
	for (uint64_t k = 0; k < churn.r->a[1]; k++) {
		uint64_t j = next_rand(&rng) % THREAD_POOL, size = draw_size(&rng, churn.r);
		if (pool[j] && next_rand(&rng) % 8 == 0) {
			/* Hand the block to whichever thread next takes this slot; free what was
			 * there: a block another thread allocated (and maybe sampled). */
			void *theirs = atomic_exchange(&churn.exchange[next_rand(&rng) % EXCHANGE],
						       pool[j]);
			pattern_free(theirs);
		} else {
			pattern_free(pool[j]);
		}
		pool[j] = xmalloc(size);
		requested += size;
	}
	for (int j = 0; j < THREAD_POOL; j++)
		pattern_free(pool[j]);
	atomic_fetch_add(&churn.requested, requested);
	return NULL;
}

static uint64_t threaded_churn(const struct run *r, uint64_t *elapsed_ns)
{
	uint64_t threads = r->a[0];
	pthread_t tid[MAX_THREADS];

	churn.r = r;
	atomic_store(&churn.go, 0);
	atomic_store(&churn.requested, 0);
	for (uint64_t t = 0; t < threads; t++) {
		int err = pthread_create(&tid[t], NULL, churn_thread, (void *)(uintptr_t)t);
		if (err) {
			errno = err;
			bench_fatal_errno("failed to create thread %" PRIu64, t);
		}
	}
	uint64_t t0 = bench_now_ns();
	atomic_store_explicit(&churn.go, 1, memory_order_release);
	for (uint64_t t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	*elapsed_ns = bench_now_ns() - t0;
	for (int i = 0; i < EXCHANGE; i++)
		pattern_free(atomic_exchange(&churn.exchange[i], NULL));
	uint64_t made = threads * r->a[1];
	did.requested_bytes += atomic_load(&churn.requested);
	did.frees += made; /* every block is freed: by its thread, another, or main */
	return made;
}

static uint64_t address_reuse(const struct run *r, const uint64_t *sizes, void **slot)
{
	uint64_t slots = r->a[0], rounds = r->a[1];

	for (uint64_t round = 0; round < rounds; round++) {
		for (uint64_t s = 0; s < slots; s++) {
			void *prev = slot[s];
			slot[s] = xmalloc(sizes[s]);
			did.requested_bytes += sizes[s];
			if (round > 0) {
				did.reuse_candidates++;
				did.reused += slot[s] == prev;
			}
		}
		if (round + 1 == rounds)
			break; /* the last round stays live */
		for (uint64_t s = slots; s-- > 0;) { /* reverse: LIFO bins hand them back in order */
			pattern_free(slot[s]);
			did.frees++;
		}
	}
	did.leaked_blocks += slots;
	return slots * rounds;
}

/* ---- main --------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	struct run r;
	uint64_t rng;
	void **ptrs = NULL;
	uint64_t *sizes = NULL;

	parse(argc, argv, &r);
	rng = r.seed;
	/* Freed memory stays mapped, so warm-up runs fault the heap in and measured runs time the
	 * allocator, not page faults (~2 µs each here; MACHINE-NOTES). Same for every variant. */
	mallopt(M_TRIM_THRESHOLD, INT32_MAX);
	if (r.mode == 1 || r.mode == 2 || r.mode == 4)
		ptrs = map_array(r.a[0], sizeof(void *));
	if (r.mode == 4) {
		sizes = map_array(r.a[0], sizeof(uint64_t));
		for (uint64_t s = 0; s < r.a[0]; s++)
			sizes[s] = draw_size(&rng, &r);
	}
	out("{\"type\":\"meta\",\"program\":\"alloc_patterns\",\"mode\":%d,\"timer\":\"%s\","
	    "\"timer_overhead_ns\":%.1f,\"seed\":%" PRIu64 ",\"samples\":%" PRIu64
	    ",\"warmup\":%" PRIu64 "}\n",
	    r.mode, BENCH_TIMER_NAME, timer_overhead_ns(), r.seed, r.samples, r.warmup);

	/* Paired: the sampler's switch between its scheme and its reference (same library, same
	 * process, same heap), so the difference of a pair is the scheme's cost alone. */
	void (*use_reference)(int) = NULL;
	if (r.paired >= 0) {
		*(void **)&use_reference = dlsym(RTLD_DEFAULT, "bakeoff_sampler_use_reference");
		if (!use_reference)
			bench_usage_error("--paired needs libbakeoff_sampler preloaded with "
					  "SAMPLER_REFERENCE set");
	}
	int (*use_part)(int) = NULL;
	if (r.parts) {
		*(void **)&use_part = dlsym(RTLD_DEFAULT, "bakeoff_sampler_use_part");
		if (!use_part || use_part(0) != 0)
			bench_usage_error("--parts needs libbakeoff_sampler preloaded with "
					  "SAMPLER_COUNT=0");
	}
	uint64_t per_sample = r.paired >= 0 ? 2 : 1;
	/* One more counted sample than asked: the first window after opening pays a one-time
	 * cost (up to three times the next ones in this VM), so the first counted pair (or run)
	 * is a warm-up, counted and discarded. */
	uint64_t counted_runs = r.counted ? r.counted + 1 : 0;
	uint64_t rounds = r.warmup + r.samples + counted_runs;
	bool counters_opened = false;
	for (uint64_t round = 0; round < rounds; round++) {
		bool in_counted = round >= r.warmup + r.samples;
		/* A warm-up round is a pair: it faults the heap in, which every run shares (one
		 * arena), and the counted rounds are pairs too. */
		uint64_t nlegs = r.parts && round >= r.warmup && !in_counted ? N_LEGS : per_sample;
		/* same requests in every run of a round */
		uint64_t round_seed = r.seed * 0x9e3779b97f4a7c15ULL + round + 1;
		for (uint64_t j = 0; j < nlegs; j++) {
			enum leg leg = LEG_SCHEME;
			if (nlegs == 2) {
				/* ABBA...: the first side of pair k alternates with k */
				leg = ((j % 2) ^ (round % 2) ^ (uint64_t)r.paired) ? LEG_REFERENCE : LEG_SCHEME;
			} else if (nlegs == N_LEGS) {
				leg = (enum leg)williams_leg(round + (uint64_t)(r.parts_row >= 0 ? r.parts_row
											: r.paired), j);
			}
			bool reference = leg == LEG_REFERENCE;
			if (r.paired >= 0) {
				if (use_part)
					use_part(leg_part[leg]);
				else
					use_reference(reference);
				rng = round_seed;
			}
			pattern_malloc = leg == LEG_BYPASS ? __libc_malloc : malloc;
			pattern_free = leg == LEG_BYPASS ? __libc_free : free;
			/* Counted: the sampler's side of a counted pair, or a counted unpaired run. */
			bool counted = in_counted && !reference;
			/*
			 * Opened right before the first counted run, not at start: an open tracepoint
			 * event keeps the kernel's tracepoint site live even while disabled (a system-call
			 * tracepoint puts every task's system calls on the slow path), which would slow
			 * the measured runs. Opening and the meta line allocate: only a cost run counts,
			 * never an accuracy run, whose allocations the sampler must count exactly.
			 */
			if (counted && !counters_opened) {
				counters_opened = true;
				bench_counters_open_late(HEAP_TRACEPOINTS);
			}
			if (counted)
				bench_counters_start();
			uint64_t made = 0, t0 = bench_now_ns(), elapsed = 0;
			switch (r.mode) {
			case 1:
				made = monotonic_heap(&r, &rng, ptrs);
				break;
			case 2:
				made = steady_pool(&r, &rng, ptrs);
				break;
			case 3:
				made = threaded_churn(&r, &elapsed);
				break;
			case 4:
				made = address_reuse(&r, sizes, ptrs);
				break;
			}
			if (r.mode != 3) /* mode 3 times from the start signal to the last join */
				elapsed = bench_now_ns() - t0;
			if (counted)
				bench_counters_stop();
			did.allocations += made;
			if (round < r.warmup)
				continue;
			if (round == r.warmup + r.samples) { /* the counted warm-up */
				if (counted)
					bench_counters_discard();
				continue;
			}
			out("{\"type\":\"sample\",\"metric\":\"%s%s\",\"value\":%.6f}\n",
			    in_counted ? "counted." : "", leg_metric[leg], (double)elapsed / (double)made);
			if (counted) {
				/* bench.h's emitters allocate a line buffer: outside the timed run, and
				 * only in a cost run, whose allocations nobody checks. */
				bench_counters_emit((double)made);
				fflush(stdout);
			}
		}
	}
	pattern_malloc = malloc;
	pattern_free = free;
	if (use_reference)
		use_reference(0);

	out("{\"type\":\"counter\",\"name\":\"allocations\",\"value\":%" PRIu64 "}\n",
	    did.allocations);
	out("{\"type\":\"counter\",\"name\":\"frees\",\"value\":%" PRIu64 "}\n", did.frees);
	out("{\"type\":\"counter\",\"name\":\"requested_bytes\",\"value\":%" PRIu64 "}\n",
	    did.requested_bytes);
	out("{\"type\":\"counter\",\"name\":\"leaked_blocks\",\"value\":%" PRIu64 "}\n",
	    did.leaked_blocks);
	if (r.mode == 4)
		out("{\"type\":\"counter\",\"name\":\"address_reuse_pct\",\"value\":%.3f}\n",
		    did.reuse_candidates ? 100.0 * (double)did.reused /
						   (double)did.reuse_candidates
					 : 0.0);
	return 0;
}
