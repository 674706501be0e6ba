/*
 * heap_bench - one trial of heap-sampling: what sampling adds per allocation, what a decision
 * and a sample cost, and how well the samples estimate the heap, for Poisson (with a live
 * table, and tagged) and the stateless hash (at the same mean, and at the equal-p mean).
 *
 *   heap_bench --variant poisson --param workload=mode1 --param mean=4096 --param scale=0.1
 *
 * Three kinds of workload (METHOD.md has the details):
 * - inline-64, inline-4096: the decision inlined in a malloc path, in this process: batches of
 *   glibc mallocs, each decided on right after it, and their frees, against the same batches
 *   without the decision (the seed's question at its block sizes; per malloc+free).
 * - micro-64, micro-1024, micro-4096: the decision micro-benchmark, in this process, no real
 *   malloc. The decision code is sampler_schemes.h, the same the sampler runs. Timed in
 *   calibrated batches of malloc-path decisions and of free-path decisions over a heap-like
 *   stream of addresses of one size: the full decision, the test alone, the sample work alone,
 *   and NONE's dispatch beside each full pair.
 * - mode1..mode4: a driver. It runs alloc_patterns (built beside this program) as child
 *   processes: once for the cost, each sample a round of five runs with the same requests
 *   switched inside that process (SAMPLER_REFERENCE, SAMPLER_COUNT=0, --parts 1): the
 *   variant's scheme as shipped, NONE, the decision alone, the decision with its live-heap
 *   tracking, and glibc past the interposer; and
 *   --param accuracy_runs times (default 8) for the errors (fresh processes: fresh ASLR,
 *   fresh PRNG; SAMPLER_COUNT=1). The sampler's
 *   summaries (SAMPLER_OUTPUT, in a private temp directory) become the errors and counters.
 *
 * Metrics (one JSON line each on stdout, see docs/ARCHITECTURE.md "The program protocol"):
 *   decide_ns_per_alloc                the decision alone minus NONE (inline: per
 *                                      malloc+free; micro: the malloc-path batch alone)
 *   live_heap_ns_per_alloc             decision + tracking minus the decision (micro: free path)
 *   interposer_ns_per_alloc            NONE minus glibc past the interposer (modes)
 *   bookkeeping_ns_per_alloc           shipped minus decision + tracking (modes)
 *   added_ns_per_alloc                 shipped minus NONE, one value per round
 *   ns_per_alloc                       per allocation (its free included); micro: the
 *                                      decisions for one allocation (malloc + free path)
 *   ticks_per_test                     micro: the decrement or hash test, malloc + free path
 *   ticks_per_sample_work              micro: the work of one sample, malloc + free side
 *   ticks_per_decision_{malloc,free}   micro: TSC ticks per full decision (batch / k)
 *   {poisson,hash}_{total,live}_error_pct  signed estimation error, one value per process
 */
#include "bench.h"
#include "counters.h"
#include "heap_counters.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampler_schemes.h"

enum variant { V_NO_PRELOAD, V_NONE, V_POISSON, V_POISSON_TAGGED, V_HASH, V_HASH_EQUAL_P };

/* Same order as enum variant. */
static const struct bench_variant variants[] = {
	{ "no-preload", "baseline: the workload alone (micro: the loop with an empty decision)" },
	{ "none", "sampler preloaded with SAMPLER_SCHEME=NONE: forwarding only (paired with "
		  "itself: the A/A check of added_ns_per_alloc)" },
	{ "poisson", "SAMPLER_SCHEME=POISSON: byte counter with exponential gaps, live table" },
	{ "poisson-tagged", "SAMPLER_SCHEME=POISSON_TAGGED: the same decisions, samples tagged "
			    "in a block header instead of a live table" },
	{ "stateless-hash", "SAMPLER_SCHEME=STATELESS_HASH: hash(address) < threshold(size)" },
	{ "hash-equal-p", "the hash with its mean raised so that it samples as many blocks as "
			  "Poisson does" },
	{ NULL, NULL },
};

static const struct bench_param params[] = {
	{ "workload", true, NULL,
	  "inline-64 | inline-4096 | micro-64 | micro-1024 | micro-4096 | mode1 | mode2 | "
	  "mode3 | mode4" },
	{ "mean", false, "4096", "mean bytes between samples (SAMPLER_POISSON_MEAN_BYTES)" },
	{ "scale", false, "1", "modes: fraction of the seed's allocation count (1 = the seed's)" },
	{ "accuracy_runs", false, "8",
	  "modes: fresh processes per trial, each one estimate (the error metrics)" },
	{ NULL, false, NULL, NULL },
};

static const struct bench_spec spec = {
	"Heap sampling: cost per allocation and per decision, and estimation error, of Poisson "
	"and\nstateless-hash sampling (micro-benchmark in-process; modes via alloc_patterns).",
	variants,
	params,
};

/* The schemes the micro-benchmark runs; EMPTY is its no-preload. */
enum scheme { S_EMPTY, S_NONE, S_POISSON, S_TAGGED, S_HASH };
/* SAMPLER_SCHEME of each variant, in enum variant order. */
static const char *const env_scheme[] = { NULL, "NONE", "POISSON", "POISSON_TAGGED",
					  "STATELESS_HASH", "STATELESS_HASH" };

static struct bench_args args;
static enum variant variant;
static uint64_t mean;

/*
 * The equal-sample-rate hash: hash p = min(1, u/m_h), Poisson p = 1 - exp(-u/m). For blocks of
 * one size u, m_h = u / (1 - exp(-u/m)) gives the same p exactly (the hash then samples as
 * often as Poisson, not 36% more at u = m). For a mix of sizes no single m_h matches every u;
 * m_h = E[u] / E[1 - exp(-u/m)] matches the expected number of samples.
 */
static uint64_t equal_p_hash_mean_one(uint64_t u)
{
	return (uint64_t)llround((double)u / -expm1(-(double)u / (double)mean));
}

/* The workloads' requested sizes are uniform in [lo, hi]; glibc's usable size of a request r
 * is its chunk (r + 8 rounded up to 16, at least 32) less the 8-byte header. */
static uint64_t equal_p_hash_mean_uniform(uint64_t lo, uint64_t hi)
{
	double sum_u = 0, sum_p = 0;

	for (uint64_t r = lo; r <= hi; r++) {
		uint64_t chunk = (r + 8 + 15) / 16 * 16;
		double u = (double)((chunk < 32 ? 32 : chunk) - 8);
		sum_u += u;
		sum_p += -expm1(-u / (double)mean);
	}
	return (uint64_t)llround(sum_u / sum_p);
}

/* ==== the decision micro-benchmark ========================================================== */

#define MICRO_K_MIN 4096
#define MICRO_K_MAX 65536
/* Pairs of batches in the counted warm-up window (bench_counters_open_late()): one pair, a
 * fraction of a millisecond, did not always absorb the first window's extra cost here. */
#define MICRO_COUNTED_WARMUP 8
/*
 * (NONE, full) pairs of batches per sample, which goes first alternating: the sample's
 * figures are medians over them (micro_median), so a batch an interrupt or a slow spell of
 * the shared core lands on moves one of MICRO_PAIRS differences, not the sample. With one
 * pair a sample, one such NONE batch made an A/A sample several times the decisions it is
 * the resolution of (METHOD.md "Questions"). Odd, so the median is one pair's.
 */
#define MICRO_PAIRS 9

/*
 * Three kinds of batch per scheme (METHOD.md, "The decision micro-benchmark"):
 * - FULL: what the sampler runs: the test, and on a sample the per-sample work;
 * - TEST: the decrement or the hash test alone; on a sample only a count (Poisson re-arms its
 *   counter by adding the mean: no log, no weight, no table);
 * - WORK: the per-sample work alone, once per decision: Poisson's next gap (a log), its weight
 *   (an expm1) and the table insert, and on the free path the table delete (tagged: a tag
 *   store and clear); the hash's weight on both paths.
 */
enum batch_kind { B_FULL, B_TEST, B_WORK };

struct micro {
	uintptr_t *addr; /* the stream: k heap-like addresses of blocks of `size` */
	uint8_t *tag;    /* POISSON_TAGGED: the tag bit of each block (its header, modelled) */
	size_t k;
	uint64_t size;
	double mean;
	int64_t mean_i;
	struct hash_params hp;
	struct poisson_state ps;
	struct live_table *live;
	/* What the decisions produce, so none of them is dead code. */
	uint64_t samples;
	double est_total, est_live;
};

static struct live_table micro_live;

/* noinline with an empty asm: one call per decision, as in the sampler where every decision
 * sits in its own malloc() call; the compiler can neither delete the loop nor vectorise the
 * hashes of consecutive addresses, which a real allocation stream never allows. */
static __attribute__((noinline)) void decide_empty(struct micro *m, size_t i)
{
	__asm__ __volatile__("" : : "r"(m), "r"(i) : "memory");
}

static __attribute__((noinline)) void decide_malloc(struct micro *m, enum scheme s,
						    enum batch_kind b, size_t i)
{
	uintptr_t a = m->addr[i];
	uint64_t u = m->size;
	double w;

	switch (s) {
	case S_EMPTY:
	case S_NONE:
		break;
	case S_POISSON:
	case S_TAGGED:
		if (b == B_TEST) {
			m->ps.until -= (int64_t)u;
			if (unlikely(m->ps.until < 0)) {
				m->ps.until += m->mean_i;
				m->samples++;
			}
			break;
		}
		if (b == B_FULL && likely(!poisson_sampled(&m->ps, u, m->mean)))
			break;
		if (b == B_WORK)
			m->ps.until = poisson_gap(&m->ps, m->mean);
		w = poisson_weighted_bytes(u, m->mean);
		m->samples++;
		m->est_total += w;
		if (s == S_TAGGED)
			m->tag[i] = 1, m->est_live += w;
		else if (live_insert(m->live, a, u))
			m->est_live += w;
		break;
	case S_HASH:
		if (b != B_WORK && likely(!hash_sampled(a, u, &m->hp)))
			break;
		m->samples++;
		if (b == B_TEST)
			break;
		w = hash_weighted_bytes(u, &m->hp);
		m->est_total += w;
		m->est_live += w;
		break;
	}
	__asm__ __volatile__("" : : "r"(m) : "memory");
}

static __attribute__((noinline)) void decide_free(struct micro *m, enum scheme s,
						  enum batch_kind b, size_t i)
{
	uintptr_t a = m->addr[i];
	uint64_t u = m->size, found;

	switch (s) {
	case S_EMPTY:
	case S_NONE:
		break;
	case S_POISSON:
		if (b == B_TEST) { /* the counting filter every free consults first */
			_Atomic uint32_t *f = live_filter(m->live, mix64(a));
			if (f && atomic_load_explicit(f, memory_order_relaxed))
				m->samples++;
			break;
		}
		if (likely(!live_remove(m->live, a, &found)))
			break;
		m->est_live -= poisson_weighted_bytes(found, m->mean);
		break;
	case S_TAGGED:
		if (likely(!m->tag[i]))
			break;
		if (b == B_TEST) {
			m->samples++;
			break;
		}
		m->tag[i] = 0;
		m->est_live -= poisson_weighted_bytes(u, m->mean);
		break;
	case S_HASH:
		if (b != B_WORK && likely(!hash_sampled(a, u, &m->hp)))
			break;
		if (b == B_TEST) {
			m->samples++;
			break;
		}
		m->est_live -= hash_weighted_bytes(u, &m->hp);
		break;
	}
	__asm__ __volatile__("" : : "r"(m) : "memory");
}

struct batch_time {
	uint64_t ns, ticks;
};

static struct batch_time micro_batch(struct micro *m, enum scheme s, enum batch_kind b,
				     bool free_path)
{
	uint64_t n0 = bench_now_ns(), t0 = tsc_start();

	if (s == S_EMPTY)
		for (size_t i = 0; i < m->k; i++)
			decide_empty(m, i);
	else if (free_path)
		for (size_t i = 0; i < m->k; i++)
			decide_free(m, s, b, i);
	else
		for (size_t i = 0; i < m->k; i++)
			decide_malloc(m, s, b, i);
	uint64_t t1 = tsc_stop(), n1 = bench_now_ns();
	return (struct batch_time){ n1 - n0, t1 - t0 };
}

/* A malloc-path batch and the free-path batch over the same blocks: one allocation's worth. */
struct pair_time {
	struct batch_time malloc, free;
};

static struct pair_time micro_pair(struct micro *m, enum scheme s, enum batch_kind b)
{
	struct pair_time t;

	t.malloc = micro_batch(m, s, b, false);
	t.free = micro_batch(m, s, b, true);
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of n values (n odd); sorts them in place. */
static double micro_median(double *v, size_t n)
{
	qsort(v, n, sizeof(v[0]), cmp_double);
	return v[n / 2];
}

/* The mean of n values (n >= 3) less the lowest and the highest; sorts them in place. Over
 * pairs in drawn placements: a mean over placements (their figures come in steps a cycle
 * apart, two or three modes, whose median jumps between modes where their mean does not),
 * with the one pair an interrupt landed on dropped. */
static double trimmed_mean(double *v, size_t n)
{
	double sum = 0;

	qsort(v, n, sizeof(v[0]), cmp_double);
	for (size_t i = 1; i + 1 < n; i++)
		sum += v[i];
	return sum / (double)(n - 2);
}

/*
 * Addresses as glibc lays out blocks of one size carved from the top of a fresh heap: chunk =
 * size + 8-byte header, rounded up to 16, at least 32. The base moves by whole pages from one
 * process to the next, as ASLR moves the heap.
 */
static void micro_stream(struct micro *m)
{
	uint64_t chunk = (m->size + 8 + 15) / 16 * 16;
	uintptr_t base = 0x555555554000u + (mix64(tsc_start() ^ (uint64_t)getpid()) % (1u << 20)) *
						   4096u + 16;

	if (chunk < 32)
		chunk = 32;
	m->addr = calloc(m->k, sizeof(uintptr_t));
	m->tag = calloc(m->k, 1);
	if (!m->addr || !m->tag)
		bench_fatal_errno("failed to allocate the address stream");
	for (size_t i = 0; i < m->k; i++)
		m->addr[i] = base + i * chunk;
}

/* The scheme a variant runs (EMPTY for no-preload, NONE for none). */
static enum scheme variant_scheme(void)
{
	switch (variant) {
	case V_NO_PRELOAD:
		return S_EMPTY;
	case V_NONE:
		return S_NONE;
	case V_POISSON:
		return S_POISSON;
	case V_POISSON_TAGGED:
		return S_TAGGED;
	case V_HASH:
	case V_HASH_EQUAL_P:
		return S_HASH;
	}
	return S_EMPTY;
}

/* k decisions per batch: long enough that the timer is < 0.1% of it (bench.h), short enough
 * that the stream stays a realistic working set. */
static size_t micro_batch_size(struct micro *m, enum scheme s)
{
	m->k = MICRO_K_MIN;
	micro_pair(m, s, B_FULL); /* warm the code, the table and the stream */
	struct pair_time t = micro_pair(m, s, B_FULL);
	double per_op = (double)(t.malloc.ns + t.free.ns) / (double)m->k;
	uint64_t k = bench_batch_size(per_op);
	return k < MICRO_K_MIN ? MICRO_K_MIN : k > MICRO_K_MAX ? MICRO_K_MAX : k;
}

static void run_micro(uint64_t size)
{
	enum scheme s = variant_scheme();
	bool sampling = s == S_POISSON || s == S_TAGGED || s == S_HASH;
	bool paired = variant != V_NO_PRELOAD; /* none is paired with itself: the A/A check */
	uint64_t hash_mean = variant == V_HASH_EQUAL_P ? equal_p_hash_mean_one(size) : mean;
	struct micro m = { .size = size, .mean = (double)mean, .mean_i = (int64_t)mean,
			   .hp = hash_params_make(hash_mean), .live = &micro_live };

	live_init(&micro_live);
	poisson_seed(&m.ps, tsc_start() ^ (uint64_t)getpid(), m.mean);
	m.k = MICRO_K_MAX;
	micro_stream(&m);
	m.k = micro_batch_size(&m, s);

	bench_meta_begin();
	bench_meta_str("variant", args.variant);
	bench_meta_str("workload", bench_param(&args, "workload"));
	bench_meta_num("mean", (double)mean);
	bench_meta_num("hash_mean", (double)hash_mean);
	bench_meta_num("batch", (double)m.k);
	bench_meta_num("pairs_per_sample", MICRO_PAIRS);
	bench_meta_str("timing", "batches: k malloc-path decisions, then k free-path decisions, "
				 "each between one pair of timer reads (no floor subtracted); a "
				 "sample is the median over its (NONE, full) pairs of batches");
	bench_meta_num("timer_floor_ticks", (double)tsc_floor_ticks(20001));
	bench_meta_str("counted_window", "the full malloc-path and free-path batches of a "
					 "counted sample, per allocation");
	bench_meta_end();

	uint64_t total = args.warmup + bench_samples_total(&args), decisions = 0, samples_full = 0;
	for (uint64_t i = 0; i < total; i++) {
		bool counted = i >= args.warmup && bench_sample_counted(&args, i - args.warmup);
		if (counted && i == args.warmup + args.samples) {
			bench_counters_open_late(HEAP_TRACEPOINTS);
			/* the warm-up window: see bench_counters_open_late() in counters.h */
			bench_counters_start();
			for (int w = 0; w < MICRO_COUNTED_WARMUP; w++)
				micro_pair(&m, s, B_FULL);
			bench_counters_stop();
			bench_counters_discard();
		}
		struct pair_time test = { 0 }, work = { 0 };
		/* Per pair, per allocation (ns; ticks of the full batches): what the sample's
		 * figures are the medians of. */
		double full_ns[MICRO_PAIRS], decide[MICRO_PAIRS], live[MICRO_PAIRS],
			malloc_ticks[MICRO_PAIRS], free_ticks[MICRO_PAIRS];
		double k = (double)m.k;
		uint64_t before = m.samples;

		for (int j = 0; j < MICRO_PAIRS; j++) {
			struct pair_time none = { 0 }, full;
			bool none_first = paired && (i + (uint64_t)j) % 2;

			if (none_first)
				none = micro_pair(&m, S_NONE, B_FULL);
			/* Counted: from before each full malloc-path batch's first timer read to
			 * after its free-path batch's last (between them only the loop's return and
			 * call); the counts add up over the sample's pairs. */
			if (counted)
				bench_counters_start();
			full = micro_pair(&m, s, B_FULL);
			if (counted)
				bench_counters_stop();
			if (paired && !none_first)
				none = micro_pair(&m, S_NONE, B_FULL);
			full_ns[j] = (double)(full.malloc.ns + full.free.ns) / k;
			/* No allocator here, so the split is by path: the malloc path is the decision
			 * (and, on a sample, its table insert or tag: p of them), the free path the
			 * live-heap tracking (probe, tag, re-hash). */
			decide[j] = ((double)full.malloc.ns - (double)none.malloc.ns) / k;
			live[j] = ((double)full.free.ns - (double)none.free.ns) / k;
			malloc_ticks[j] = (double)full.malloc.ticks / k;
			free_ticks[j] = (double)full.free.ticks / k;
		}
		uint64_t sampled = m.samples - before;
		if (sampling) {
			test = micro_pair(&m, s, B_TEST);
			work = micro_pair(&m, s, B_WORK);
		}
		if (i < args.warmup)
			continue;
		if (!counted) { /* the counters below are of the measured samples */
			decisions += (uint64_t)MICRO_PAIRS * m.k;
			samples_full += sampled;
		}
		bench_emit_sample(bench_metric(counted, "ns_per_alloc"),
				  micro_median(full_ns, MICRO_PAIRS));
		if (paired) {
			/* Each path's median; the added cost of one allocation is their sum, so
			 * that decide + live heap = added holds sample by sample, as in the modes. */
			double d = micro_median(decide, MICRO_PAIRS), l = micro_median(live, MICRO_PAIRS);

			bench_emit_sample(bench_metric(counted, "added_ns_per_alloc"), d + l);
			bench_emit_sample(bench_metric(counted, "decide_ns_per_alloc"), d);
			bench_emit_sample(bench_metric(counted, "live_heap_ns_per_alloc"), l);
		}
		bench_emit_sample(bench_metric(counted, "ticks_per_decision_malloc"),
				  micro_median(malloc_ticks, MICRO_PAIRS));
		bench_emit_sample(bench_metric(counted, "ticks_per_decision_free"),
				  micro_median(free_ticks, MICRO_PAIRS));
		if (sampling) {
			bench_emit_sample(bench_metric(counted, "ticks_per_test"),
					  (double)(test.malloc.ticks + test.free.ticks) / k);
			bench_emit_sample(bench_metric(counted, "ticks_per_sample_work"),
					  (double)(work.malloc.ticks + work.free.ticks) / k);
		}
		if (counted)
			bench_counters_emit(k * MICRO_PAIRS);
	}
	if (sampling) {
		bench_emit_counter("sampled_pct", 100.0 * (double)samples_full / (double)decisions);
		bench_emit_counter("hash_mean_bytes", (double)hash_mean);
		/* 0: u >= m, the hash test returns at its first compare and never hashes. */
		bench_emit_counter("hash_hashes", size < hash_mean ? 1 : 0);
	}
	bench_emit_counter("decisions_per_sample", 2.0 * MICRO_PAIRS * (double)m.k);
	free(m.addr);
	free(m.tag);
}

/* ==== the decision inlined in the malloc path ============================================== */

/*
 * inline-64, inline-4096: what deciding adds to a malloc and its free when the decision sits
 * inside the allocation path, as an allocator ships it (tcmalloc's sampler: a decrement and a
 * sign test inline in its malloc fast path, the sample's work out of line), not as a call of
 * its own around each decision. The seed's question at the seed's block sizes (METHOD.md
 * "The decision inlined in the malloc path").
 *
 * A batch: INLINE_K blocks of one size malloc'd (glibc's, in this process), each decided on
 * right after its malloc, then all freed; one clock read before the first malloc and one after
 * the last free, so the batch brackets malloc + decision + free and the figure is per
 * malloc+free. NONE's batch is the same loop with no decision. A sample is the median over
 * INLINE_PAIRS (NONE, scheme) pairs of batches, which goes first alternating.
 *
 * The decision: Poisson takes the block's class (glibc's chunk of the request: the size an
 * allocator knows) off a thread-local counter and tests the sign; on a sample (out of line)
 * it draws the next gap (a log) and the weight (an expm1). The hash tests mix64(address)
 * against the class's threshold (every block at class >= mean); on a sample (out of line) the
 * weight. No stack is taken, nothing is recorded: the decision, not what a profiler does with
 * a sample. The same sampler_schemes.h code the sampler runs.
 */
#define INLINE_K 4096
#define INLINE_PAIRS 9

struct inline_state {
	struct poisson_state ps;
	uint64_t samples;
	double est_total;
};

/* The state thread-local, as an allocator keeps its sampler's counter: malloc and free are
 * calls into libc, so the counter is loaded and stored around each, as in an allocator's fast
 * path. The settings (the mean, the hash's threshold scale) one global, as sampler.c keeps
 * them (its cfg): they are the process's, not a thread's, and a thread-local copy cost the
 * hash's loop a register for the thread-local base, with the request's size then reloaded
 * from the stack after every malloc (docs/notes/heap-sampling-tls-20261130-epyc.md). */
static __thread struct inline_state inl;
static struct {
	struct hash_params hp;
	double mean;
} inl_cfg;
static void *inline_blocks[INLINE_K];

/* glibc's chunk of a request, less its size word: the class an allocator knows (sampler.c
 * request_class without the header layout). */
static inline uint64_t inline_class(size_t n)
{
	size_t chunk = (n + 8 + 15) & ~(size_t)15;

	return (chunk < 32 ? 32 : chunk) - 8;
}

/*
 * Where the code lies is a random factor, drawn per pair (METHOD.md "Code placement"). At
 * 64 B blocks a decision costs a cycle or two beside a malloc+free of about 12 ns, and the
 * same instructions placed otherwise read several tenths of a ns apart: one build's layout
 * is one draw of that factor, and a figure from it says nothing of the next build's. So the
 * timed batch functions and the sample paths they call exist in INLINE_LAYOUTS copies, each
 * aligned to a cache line and entered at its own offset in it (the offset is padding laid
 * before the entry, never executed: patchable_function_entry with every nop before the
 * label); each pair of batches draws a NONE copy and a scheme copy independently, and a
 * sample's decide_ns_per_alloc is the trimmed mean over its pairs: a figure over placements
 * instead of one build's.
 *
 * 64 copies, so each kind of function is entered at every offset of its line once: at a
 * few offsets a figure reads several times the rest, and with 16 copies one such offset
 * stood for a sixteenth of the draws instead of a sixty-fourth, while the independent
 * check's 16 held none, and the two disagreed by that draw
 * (docs/notes/heap-sampling-offsets-20261130-xeon.md).
 */
#define INLINE_LAYOUTS 64
/* A copy's offset in its cache line: k * m mod 64 with m odd takes every value once as k
 * runs over the 64 copies; m differs per kind of function (salt), so that copy k's batch
 * and its sample path do not stand at one fixed distance in every copy. */
#define INLINE_PAD(k, salt) (((k) * (21 + 2 * (salt)) + (salt) * 11) % 64)
#define INLINE_PLACED(k, salt) \
	__attribute__((noinline, aligned(64), \
		       patchable_function_entry(INLINE_PAD(k, salt), INLINE_PAD(k, salt))))
/* A batch's loops counted by index, not rewritten to a moving pointer (GCC's ivopts): with
 * the pointer, the base and the end held registers the scheme's loop then lacked, and it
 * reloaded the request's size from the stack after every malloc, which NONE's loop did not:
 * a load per malloc+free charged to the decision that is this benchmark's loop, not the
 * decision (an allocator's decision sits in malloc, not in its caller's loop). Measured:
 * docs/notes/heap-sampling-layout-20261129-epyc.md. */
#define INLINE_LOOP_SHAPE __attribute__((optimize("no-ivopts")))

static inline __attribute__((always_inline)) void inline_poisson_sample_work(uint64_t u)
{
	inl.ps.until = poisson_gap(&inl.ps, inl_cfg.mean);
	inl.samples++;
	inl.est_total += poisson_weighted_bytes(u, inl_cfg.mean);
}

static inline __attribute__((always_inline)) void inline_hash_sample_work(uint64_t u)
{
	inl.samples++;
	inl.est_total += hash_weighted_bytes(u, &inl_cfg.hp);
}

typedef void (*inline_sample_fn)(uint64_t u);

/* u: the block's class, which the allocator computed to serve the request (known before the
 * decision, not part of it); sample: the out-of-line sample path, a constant in each copy (a
 * direct call). */
static inline __attribute__((always_inline)) void *inline_malloc(enum scheme s, size_t n,
								 uint64_t u,
								 inline_sample_fn sample)
{
	void *p = malloc(n);

	/* Not unlikely() + bench_fatal (noreturn): with those, GCC rotated the scheme's loop
	 * around the failure branch, and at 4 KiB blocks the hash's loop took two more jumps per
	 * malloc than the same loop without them, which NONE's loop did not: a third of its
	 * "decision" was that layout, not the decision, and the independent check disagreed
	 * (docs/notes/indep-checks-20261129-epyc.md). An allocator's failure path does not sit
	 * between its malloc and its sampler's test. */
	if (!p) {
		fputs("heap_bench: out of memory in the inline batch\n", stderr);
		exit(1);
	}
	if (s == S_POISSON || s == S_TAGGED) {
		inl.ps.until -= (int64_t)u;
		if (unlikely(inl.ps.until < 0))
			sample(u);
	} else if (s == S_HASH) {
		if (unlikely(hash_sampled((uintptr_t)p, u, &inl_cfg.hp)))
			sample(u);
	}
	return p;
}

static inline __attribute__((always_inline)) uint64_t inline_loop(enum scheme s, size_t n,
								  inline_sample_fn sample)
{
	/* Taken once: with the sample path a parameter GCC no longer hoisted it by itself and
	 * recomputed it after every malloc (five instructions the allocator does not repeat). */
	const uint64_t u = inline_class(n);
	uint64_t t0 = bench_now_ns();

	for (size_t i = 0; i < INLINE_K; i++) {
		void *p = inline_malloc(s, n, u, sample);
		*(volatile char *)p = 1;
		inline_blocks[i] = p;
	}
	for (size_t i = 0; i < INLINE_K; i++)
		free(inline_blocks[i]);
	return bench_now_ns() - t0;
}

/* Copy k of each: one function per scheme, each with its decision compiled into its loop
 * (as a build of an allocator has one scheme), none inlined into the others' callers. */
#define INLINE_COPY(k)                                                                        \
	static INLINE_PLACED(k, 1) void inline_poisson_sample_##k(uint64_t u)                 \
	{                                                                                     \
		inline_poisson_sample_work(u);                                                \
	}                                                                                     \
	static INLINE_PLACED(k, 2) void inline_hash_sample_##k(uint64_t u)                    \
	{                                                                                     \
		inline_hash_sample_work(u);                                                   \
	}                                                                                     \
	static INLINE_PLACED(k, 3) INLINE_LOOP_SHAPE                                          \
	uint64_t inline_batch_none_##k(size_t n)                                              \
	{                                                                                     \
		return inline_loop(S_NONE, n, NULL);                                          \
	}                                                                                     \
	static INLINE_PLACED(k, 4) INLINE_LOOP_SHAPE                                          \
	uint64_t inline_batch_poisson_##k(size_t n)                                           \
	{                                                                                     \
		return inline_loop(S_POISSON, n, inline_poisson_sample_##k);                  \
	}                                                                                     \
	static INLINE_PLACED(k, 5) INLINE_LOOP_SHAPE                                          \
	uint64_t inline_batch_hash_##k(size_t n)                                              \
	{                                                                                     \
		return inline_loop(S_HASH, n, inline_hash_sample_##k);                        \
	}
#define INLINE_EACH(X) \
	X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) \
	X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) \
	X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) \
	X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31) \
	X(32) X(33) X(34) X(35) X(36) X(37) X(38) X(39) \
	X(40) X(41) X(42) X(43) X(44) X(45) X(46) X(47) \
	X(48) X(49) X(50) X(51) X(52) X(53) X(54) X(55) \
	X(56) X(57) X(58) X(59) X(60) X(61) X(62) X(63)
INLINE_EACH(INLINE_COPY)

typedef uint64_t (*inline_batch_fn)(size_t n);
#define INLINE_NONE_FN(k) inline_batch_none_##k,
#define INLINE_POISSON_FN(k) inline_batch_poisson_##k,
#define INLINE_HASH_FN(k) inline_batch_hash_##k,
static const inline_batch_fn inline_none_fns[INLINE_LAYOUTS] = { INLINE_EACH(INLINE_NONE_FN) };
static const inline_batch_fn inline_poisson_fns[INLINE_LAYOUTS] = {
	INLINE_EACH(INLINE_POISSON_FN)
};
static const inline_batch_fn inline_hash_fns[INLINE_LAYOUTS] = { INLINE_EACH(INLINE_HASH_FN) };

/* The batch function of scheme s in layout copy k. */
static inline_batch_fn inline_batch_fn_of(enum scheme s, unsigned k)
{
	switch (s) {
	case S_POISSON:
	case S_TAGGED:
		return inline_poisson_fns[k];
	case S_HASH:
		return inline_hash_fns[k];
	default:
		return inline_none_fns[k];
	}
}

/* The copies a pair runs: drawn (NONE's and the scheme's independently), or fixed by
 * BAKEOFF_INLINE_LAYOUT=K (0..63; a diagnostic: one layout's figure, as one build has). */
static int inline_fixed_layout = -1;
static uint64_t inline_layout_rng;

static unsigned inline_draw_layout(void)
{
	if (inline_fixed_layout >= 0)
		return (unsigned)inline_fixed_layout;
	return (unsigned)(xorshift64s(&inline_layout_rng) >> 33) % INLINE_LAYOUTS;
}

static void run_inline(size_t size)
{
	enum scheme s = variant_scheme();
	bool sampling = s == S_POISSON || s == S_TAGGED || s == S_HASH;
	bool paired = variant != V_NO_PRELOAD; /* none is paired with itself: the A/A check */
	uint64_t hash_mean = variant == V_HASH_EQUAL_P ?
				     equal_p_hash_mean_one(inline_class(size)) : mean;

	/* Freed memory stays with the heap, so every batch after the first reuses it: the
	 * batches time the allocator, not first-touch page faults. */
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
	inl_cfg.mean = (double)mean;
	inl_cfg.hp = hash_params_make(hash_mean);
	poisson_seed(&inl.ps, tsc_start() ^ (uint64_t)getpid(), inl_cfg.mean);
	inline_layout_rng = mix64(tsc_start() ^ ((uint64_t)getpid() << 32)) | 1;
	const char *fixed = getenv("BAKEOFF_INLINE_LAYOUT");
	if (fixed && *fixed) {
		char *end;
		long k = strtol(fixed, &end, 10);
		if (*end || k < 0 || k >= INLINE_LAYOUTS)
			bench_usage_error("BAKEOFF_INLINE_LAYOUT=%s: give a copy 0..%d, or unset "
					  "it to draw one per pair", fixed, INLINE_LAYOUTS - 1);
		inline_fixed_layout = (int)k;
	}
	/* The heap's pages and every copy's code, once: each timed batch follows an untimed
	 * one of its own copy anyway. */
	for (unsigned k = 0; k < INLINE_LAYOUTS; k++) {
		inline_batch_fn_of(S_NONE, k)(size);
		inline_batch_fn_of(s, k)(size);
	}

	bench_meta_begin();
	bench_meta_str("variant", args.variant);
	bench_meta_str("workload", bench_param(&args, "workload"));
	bench_meta_num("mean", (double)mean);
	bench_meta_num("hash_mean", (double)hash_mean);
	bench_meta_num("batch", INLINE_K);
	bench_meta_num("pairs_per_sample", INLINE_PAIRS);
	bench_meta_num("layouts", INLINE_LAYOUTS);
	bench_meta_num("fixed_layout", inline_fixed_layout);
	bench_meta_str("timing", "batches: k mallocs of one size, each decided on inline right "
				 "after it, then k frees, between one pair of clock reads, each "
				 "right after an untimed batch of its own kind, each (NONE, scheme) "
				 "pair in a placement (copy of each batch function) drawn per "
				 "pair; decide_ns_per_alloc: a sample's pairs' mean less the "
				 "lowest and highest, ns_per_alloc: their median");
	bench_meta_str("counted_window", "the scheme's batches of a counted sample, per "
					 "malloc+free");
	bench_meta_end();

	uint64_t total = args.warmup + bench_samples_total(&args), decisions = 0, sampled = 0;
	double k = INLINE_K;
	for (uint64_t i = 0; i < total; i++) {
		bool counted = i >= args.warmup && bench_sample_counted(&args, i - args.warmup);
		if (counted && i == args.warmup + args.samples) {
			bench_counters_open_late(HEAP_TRACEPOINTS);
			bench_counters_start(); /* the warm-up window (counters.h) */
			for (int w = 0; w < MICRO_COUNTED_WARMUP; w++)
				inline_batch_fn_of(s, inline_draw_layout())(size);
			bench_counters_stop();
			bench_counters_discard();
		}
		double full_ns[INLINE_PAIRS], decide[INLINE_PAIRS];
		uint64_t before = inl.samples;
		for (int j = 0; j < INLINE_PAIRS; j++) {
			/* This pair's placement: NONE's copy and the scheme's, drawn apart. */
			inline_batch_fn none_batch = inline_batch_fn_of(S_NONE, inline_draw_layout());
			inline_batch_fn scheme_batch = inline_batch_fn_of(s, inline_draw_layout());
			uint64_t none = 0, full;
			bool none_first = paired && (i + (uint64_t)j) % 2;

			/* Each timed batch right after an untimed one of its own kind (lead): at
			 * 64 B blocks a batch that follows the other kind's reads dearer than one
			 * that follows its own, by more than the decision, in either scheme,
			 * which no program with one allocator build pays; with alternating
			 * order the median of a sample took that switch to one side or the
			 * other by the sample's parity (METHOD.md "The decision inlined in the
			 * malloc path"). */
			if (none_first) {
				none_batch(size);
				none = none_batch(size);
			}
			scheme_batch(size);
			if (counted)
				bench_counters_start();
			full = scheme_batch(size);
			if (counted)
				bench_counters_stop();
			if (paired && !none_first) {
				none_batch(size);
				none = none_batch(size);
			}
			full_ns[j] = (double)full / k;
			decide[j] = ((double)full - (double)none) / k;
		}
		if (i < args.warmup)
			continue;
		if (!counted) {
			/* the untimed lead batches decided too: 2 scheme batches a pair */
			decisions += 2 * (uint64_t)INLINE_PAIRS * INLINE_K;
			sampled += inl.samples - before;
		}
		bench_emit_sample(bench_metric(counted, "ns_per_alloc"),
				  micro_median(full_ns, INLINE_PAIRS));
		if (paired)
			bench_emit_sample(bench_metric(counted, "decide_ns_per_alloc"),
					  trimmed_mean(decide, INLINE_PAIRS));
		if (counted)
			bench_counters_emit(k * INLINE_PAIRS);
	}
	if (sampling) {
		bench_emit_counter("sampled_pct", 100.0 * (double)sampled / (double)decisions);
		bench_emit_counter("hash_mean_bytes", (double)hash_mean);
		bench_emit_counter("hash_hashes", inline_class(size) < hash_mean ? 1 : 0);
	}
	bench_emit_counter("decisions_per_sample", (double)INLINE_PAIRS * INLINE_K);
	/* What the decisions weighed, so none of them is dead code. */
	bench_emit_counter("inline_estimate_bytes", inl.est_total);
}

/* ==== the driver for the allocation patterns =============================================== */

/* At most this many accuracy runs at once, one on each CPU the trial may use: they are
 * untimed (a run's estimate does not depend on its timing), and one after another they
 * were most of a mode trial's time. */
#define MAX_CHILDREN 4

/* Everything a SIGTERM must undo: set before it exists, cleared once it is gone. A child's
 * slot names its pid and the file its sampler writes its summary to. */
static volatile pid_t child_pids[MAX_CHILDREN];
static char tmp_dir[PATH_MAX];
static char summary_paths[MAX_CHILDREN][PATH_MAX];

/* Every child killed and reaped (not left a zombie for init, which here may be slow to reap
 * it), its summary and the temp dir removed. Only async-signal-safe calls: on_stop_signal
 * runs it, and so does exit() (atexit) after a failure while accuracy runs are under way. */
static void stop_children(void)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (child_pids[i] > 0) {
			kill(child_pids[i], SIGKILL);
			waitpid(child_pids[i], NULL, 0);
			child_pids[i] = 0;
		}
		if (summary_paths[i][0])
			unlink(summary_paths[i]);
	}
	if (tmp_dir[0])
		rmdir(tmp_dir);
}

/* The harness stops a trial with SIGTERM and wants it gone quickly, with nothing left. */
static void on_stop_signal(int sig)
{
	stop_children();
	_exit(128 + sig);
}

static void install_stop_handlers(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	atexit(stop_children);

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void block_stop_signals(bool block)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

static void make_tmp_dir(void)
{
	const char *base = getenv("TMPDIR");
	char path[PATH_MAX];

	if (!base || !*base)
		base = "/tmp";
	snprintf(path, sizeof(path), "%s/bakeoff-%d-heap-XXXXXX", base, (int)getpid());
	block_stop_signals(true);
	if (!mkdtemp(path)) /* mode 0700 */
		bench_fatal_errno("failed to create a temporary directory in %s", base);
	snprintf(tmp_dir, sizeof(tmp_dir), "%s", path);
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (snprintf(summary_paths[i], sizeof(summary_paths[i]), "%s/summary-%d.json",
			     tmp_dir, i) >= (int)sizeof(summary_paths[i]))
			bench_fatal("failed to name the summary file: TMPDIR is too long");
	block_stop_signals(false);
}

static void remove_tmp_dir(void)
{
	block_stop_signals(true);
	for (int i = 0; i < MAX_CHILDREN; i++) {
		unlink(summary_paths[i]);
		summary_paths[i][0] = '\0';
	}
	rmdir(tmp_dir);
	tmp_dir[0] = '\0';
	block_stop_signals(false);
}

/* The directory this program lives in: alloc_patterns and the sampler are built beside it. */
static void sibling(char *out, size_t n, const char *name)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0)
		bench_fatal_errno("failed to read /proc/self/exe");
	self[len] = '\0';
	char *slash = strrchr(self, '/');
	*slash = '\0';
	if (snprintf(out, n, "%s/%s", self, name) >= (int)n)
		bench_fatal("failed to find %s: the path is too long", name);
	if (access(out, R_OK) != 0)
		bench_fatal("failed to find %s: %s (run make)", out, strerror(errno));
}

struct workload_args {
	int mode;
	char text[128];   /* as typed: "1 100000 64 4096" */
	char *argv[16];
	char store[8][32];
};

/*
 * The seed's count times scale, but at least MIN_ALLOCS allocations per run of the pattern:
 * below that, fixed costs of a fresh process (the live table's first pages, lazy binding of
 * libm, cold caches) dominate a per-allocation figure. per_unit: allocations per counted unit.
 */
#define MIN_ALLOCS 100000.0
static uint64_t scaled(double seed_count, double scale, double per_unit)
{
	double v = round(seed_count * scale), floor_count = ceil(MIN_ALLOCS / per_unit);

	return v < floor_count ? (uint64_t)floor_count : (uint64_t)v;
}

/* The seed's arguments, with the allocation count scaled (scale=1: exactly the seed's). */
static void workload_args(int mode, double scale, struct workload_args *w)
{
	uint64_t a[6];
	int n;

	switch (mode) {
	case 1: /* seed: 1 100000 64 4096 */
		n = 4, a[0] = 1, a[1] = scaled(100000, scale, 1), a[2] = 64, a[3] = 4096;
		break;
	case 2: /* seed: 2 1000 1000 64 4096 50: 1000 + 1000 x 500 allocations */
		n = 6, a[0] = 2, a[1] = 1000, a[2] = scaled(1000, scale, 500), a[3] = 64,
		a[4] = 4096, a[5] = 50;
		break;
	case 3: /* ours: 8 threads, 1M allocations in all */
		n = 5, a[0] = 3, a[1] = 8, a[2] = scaled(125000, scale, 8), a[3] = 64, a[4] = 4096;
		break;
	default: /* seed: 4 500 100000 64 4096 */
		n = 5, a[0] = 4, a[1] = 500, a[2] = scaled(100000, scale, 500), a[3] = 64,
		a[4] = 4096;
		break;
	}
	w->mode = mode;
	w->text[0] = '\0';
	for (int i = 0; i < n; i++) {
		snprintf(w->store[i], sizeof(w->store[i]), "%" PRIu64, a[i]);
		w->argv[i] = w->store[i];
		size_t len = strlen(w->text);
		snprintf(w->text + len, sizeof(w->text) - len, "%s%s", i ? " " : "", w->store[i]);
	}
	w->argv[n] = NULL;
}

/* What one child printed, and the sampler's summary if it wrote one. */
struct child_out {
	double *samples, *ref_samples; /* ns_per_alloc; ref_ns_per_alloc of a paired run */
	size_t nsamples, nref;
	/* The other runs of a --parts round: decide_leg_, track_leg_, bypass_leg_ns_per_alloc */
	double *part_samples[3];
	size_t npart[3];
	/* The counted samples (counters.h): counted.ns_per_alloc, counted.ref_ns_per_alloc, and
	 * every per_op.<counter> line as it came, passed on as they are. */
	double *counted, *counted_ref;
	size_t ncounted, ncounted_ref;
	char **per_op_names;
	double *per_op_values;
	size_t nper_op, per_op_cap;
	/* What alloc_patterns opened to count, from its meta line: "counters", "counters_absent" */
	char counters[1024], counters_absent[1024];
	double allocations, frees, requested_bytes, address_reuse_pct;
	char *summary; /* NULL without preload */
};

static char *read_fd_all(int fd)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);

	if (!buf)
		bench_fatal_errno("failed to allocate a read buffer");
	for (;;) {
		if (len + 1 == cap && !(buf = realloc(buf, cap *= 2)))
			bench_fatal_errno("failed to grow a read buffer");
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			bench_fatal_errno("failed to read the workload's output");
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

/* "key":number in a flat JSON object that we wrote ourselves (sampler or alloc_patterns). */
static bool json_number(const char *json, const char *key, double *out)
{
	char needle[96];

	snprintf(needle, sizeof(needle), "\"%s\":", key);
	const char *p = strstr(json, needle);
	if (!p)
		return false;
	char *end;
	*out = strtod(p + strlen(needle), &end);
	return end != p + strlen(needle);
}

static double json_required(const char *json, const char *key, const char *what)
{
	double v;

	if (!json_number(json, key, &v))
		bench_fatal("failed to find \"%s\" in %s", key, what);
	return v;
}

/* The string value of "key" in a flat JSON line we wrote ourselves (no escaped quotes in the
 * values this reads: counter names and the reasons counters.c gives), or false. */
static bool json_string(const char *json, const char *key, char *out, size_t len)
{
	char needle[96];

	snprintf(needle, sizeof(needle), "\"%s\":\"", key);
	const char *p = strstr(json, needle);
	const char *end = p ? strchr(p + strlen(needle), '"') : NULL;
	if (!end)
		return false;
	p += strlen(needle);
	snprintf(out, len, "%.*s", (int)(end - p), p);
	return true;
}

/* The metric of a sample line, copied into name (empty if it has none). */
static void sample_metric(const char *line, char *name, size_t len)
{
	const char *p = strstr(line, "\"metric\":\"");
	const char *end = p ? strchr(p + 10, '"') : NULL;

	name[0] = '\0';
	if (end && (size_t)(end - (p + 10)) < len)
		snprintf(name, len, "%.*s", (int)(end - (p + 10)), p + 10);
}

static void keep_per_op(struct child_out *out, const char *name, double v)
{
	if (out->nper_op == out->per_op_cap) {
		out->per_op_cap = out->per_op_cap ? 2 * out->per_op_cap : 32;
		out->per_op_names = realloc(out->per_op_names, out->per_op_cap * sizeof(char *));
		out->per_op_values = realloc(out->per_op_values, out->per_op_cap * sizeof(double));
		if (!out->per_op_names || !out->per_op_values)
			bench_fatal_errno("failed to keep the counted samples' counters");
	}
	out->per_op_names[out->nper_op] = strdup(name);
	if (!out->per_op_names[out->nper_op])
		bench_fatal_errno("failed to keep a counter's name");
	out->per_op_values[out->nper_op++] = v;
}

/* The runs of a --parts round besides the pair, in child_out.part_samples order. */
enum part_leg { P_DECIDE, P_TRACK, P_BYPASS };
static const char *const part_leg_metric[3] = { "decide_leg_ns_per_alloc",
						 "track_leg_ns_per_alloc",
						 "bypass_leg_ns_per_alloc" };

static int part_of_metric(const char *metric)
{
	for (int k = 0; k < 3; k++)
		if (strcmp(metric, part_leg_metric[k]) == 0)
			return k;
	return -1;
}

static void parse_child_stdout(char *text, struct child_out *out, uint64_t expected,
			       uint64_t counted)
{
	size_t cap = expected;

	out->samples = calloc(cap, sizeof(double));
	out->ref_samples = calloc(cap, sizeof(double));
	out->counted = calloc(counted + 1, sizeof(double));
	out->counted_ref = calloc(counted + 1, sizeof(double));
	if (!out->samples || !out->ref_samples || !out->counted || !out->counted_ref)
		bench_fatal_errno("failed to allocate samples");
	for (int k = 0; k < 3; k++)
		if (!(out->part_samples[k] = calloc(cap, sizeof(double))))
			bench_fatal_errno("failed to allocate samples");
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		double v, value;
		char metric[128];
		if (strstr(line, "\"type\":\"sample\"") && json_number(line, "value", &v)) {
			sample_metric(line, metric, sizeof(metric));
			if (strncmp(metric, "per_op.", 7) == 0) {
				keep_per_op(out, metric, v);
				continue;
			}
			int part = part_of_metric(metric);
			if (part >= 0) {
				if (out->npart[part] == cap)
					bench_fatal("failed to read alloc_patterns: more samples than "
						    "asked for");
				out->part_samples[part][out->npart[part]++] = v;
				continue;
			}
			bool is_counted = strncmp(metric, "counted.", 8) == 0;
			bool ref = strcmp(metric + (is_counted ? 8 : 0), "ref_ns_per_alloc") == 0;
			size_t *n = is_counted ? (ref ? &out->ncounted_ref : &out->ncounted)
					       : (ref ? &out->nref : &out->nsamples);
			if (*n == (is_counted ? counted : cap))
				bench_fatal("failed to read alloc_patterns: more samples than asked for");
			double *to = is_counted ? (ref ? out->counted_ref : out->counted)
						: (ref ? out->ref_samples : out->samples);
			to[(*n)++] = v;
		} else if (strstr(line, "\"type\":\"meta\"") &&
			   json_string(line, "counters", out->counters, sizeof(out->counters))) {
			json_string(line, "counters_absent", out->counters_absent,
				    sizeof(out->counters_absent));
		} else if (strstr(line, "\"type\":\"counter\"") && json_number(line, "value", &value)) {
			if (strstr(line, "\"name\":\"allocations\""))
				out->allocations = value;
			else if (strstr(line, "\"name\":\"frees\""))
				out->frees = value;
			else if (strstr(line, "\"name\":\"requested_bytes\""))
				out->requested_bytes = value;
			else if (strstr(line, "\"name\":\"address_reuse_pct\""))
				out->address_reuse_pct = value;
		}
	}
	for (int k = 0; k < 3; k++)
		if (out->npart[k] != 0 && out->npart[k] != expected)
			bench_fatal("failed to get %" PRIu64 " %s samples from alloc_patterns (got "
				    "%zu)", expected, part_leg_metric[k], out->npart[k]);
	if (out->nsamples != expected || (out->nref != 0 && out->nref != expected))
		bench_fatal("failed to get %" PRIu64 " samples from alloc_patterns (got %zu)",
			    expected, out->nsamples);
	if (out->ncounted != counted || (out->ncounted_ref != 0 && out->ncounted_ref != counted))
		bench_fatal("failed to get %" PRIu64 " counted samples from alloc_patterns (got %zu)",
			    counted, out->ncounted);
}

static char *read_summary(int slot)
{
	int fd = open(summary_paths[slot], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		bench_fatal_errno("failed to read the sampler's summary %s", summary_paths[slot]);
	char *s = read_fd_all(fd);
	close(fd);
	unlink(summary_paths[slot]);
	return s;
}

static const char *preload_path(void)
{
	static char path[PATH_MAX];

	if (!path[0])
		sibling(path, sizeof(path), "libbakeoff_sampler.so");
	return path;
}

/* How a child runs: which scheme (NULL: no preload) and with what settings. */
struct child_cfg {
	const char *scheme;
	const char *reference; /* SAMPLER_REFERENCE: the paired side of a cost run, or NULL */
	int paired_first;      /* alloc_patterns --paired: 0 variant first, 1 reference first */
	bool count;  /* SAMPLER_COUNT: exact counting, for the error figures */
	bool header; /* SAMPLER_HEADER: the tagged layout (its reference needs the same) */
	uint64_t hash_mean;
	uint64_t samples, warmup; /* of alloc_patterns: runs of the pattern in the process */
	uint64_t counted;         /* its --counted-samples */
	bool parts;               /* its --parts 1: the cost decomposition's rounds */
	int parts_row;            /* its --parts-row: the Williams row of its round 0 */
};

/* Our environment without anything that could change what the child measures; its
 * sampler writes its summary to the slot's file. */
static char **child_env(const struct child_cfg *c, int slot)
{
	extern char **environ;
	size_t n = 0;

	while (environ[n])
		n++;
	char **env = calloc(n + 10, sizeof(char *));
	size_t k = 0;
	if (!env)
		bench_fatal_errno("failed to allocate the environment");
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "SAMPLER_", 8) && strncmp(environ[i], "LD_PRELOAD=", 11) &&
		    strncmp(environ[i], "MALLOC_", 7) && strncmp(environ[i], "GLIBC_TUNABLES=", 15))
			env[k++] = environ[i];
	if (c->scheme) {
		char *v[8];
		if (asprintf(&v[0], "LD_PRELOAD=%s", preload_path()) < 0 ||
		    asprintf(&v[1], "SAMPLER_SCHEME=%s", c->scheme) < 0 ||
		    asprintf(&v[2], "SAMPLER_POISSON_MEAN_BYTES=%" PRIu64, mean) < 0 ||
		    asprintf(&v[3], "SAMPLER_HASH_MEAN_BYTES=%" PRIu64, c->hash_mean) < 0 ||
		    asprintf(&v[4], "SAMPLER_COUNT=%d", c->count) < 0 ||
		    asprintf(&v[5], "SAMPLER_HEADER=%d", c->header) < 0 ||
		    asprintf(&v[6], "SAMPLER_OUTPUT=%s", summary_paths[slot]) < 0 ||
		    asprintf(&v[7], "SAMPLER_REFERENCE=%s", c->reference ? c->reference : c->scheme) < 0)
			bench_fatal_errno("failed to build the environment");
		for (int i = 0; i < 8; i++)
			env[k++] = v[i];
	}
	env[k] = NULL;
	return env;
}

/* A started alloc_patterns: its slot (child_pids, summary_paths), the read end of its
 * stdout, the environment it was given. */
struct running_child {
	int slot;
	int fd;
	char **env;
};

/* Starts alloc_patterns as c says in a slot of its own. */
static struct running_child start_workload(const struct workload_args *w,
					   const struct child_cfg *c, int slot)
{
	static char program[PATH_MAX];
	char samples[32], warmup[32], counted[32], first[8], row[8];
	char *argv[24];
	int argc = 0, fds[2];

	if (!program[0])
		sibling(program, sizeof(program), "alloc_patterns");
	argv[argc++] = program;
	for (int i = 0; w->argv[i]; i++)
		argv[argc++] = w->argv[i];
	snprintf(samples, sizeof(samples), "%" PRIu64, c->samples);
	snprintf(warmup, sizeof(warmup), "%" PRIu64, c->warmup);
	argv[argc++] = "--samples";
	argv[argc++] = samples;
	argv[argc++] = "--warmup";
	argv[argc++] = warmup;
	if (c->counted) {
		snprintf(counted, sizeof(counted), "%" PRIu64, c->counted);
		argv[argc++] = "--counted-samples";
		argv[argc++] = counted;
	}
	if (c->reference) {
		snprintf(first, sizeof(first), "%d", c->paired_first);
		argv[argc++] = "--paired";
		argv[argc++] = first;
	}
	if (c->parts) {
		snprintf(row, sizeof(row), "%d", c->parts_row);
		argv[argc++] = "--parts";
		argv[argc++] = "1";
		argv[argc++] = "--parts-row";
		argv[argc++] = row;
	}
	argv[argc] = NULL;
	char **env = child_env(c, slot);

	if (pipe2(fds, O_CLOEXEC) != 0)
		bench_fatal_errno("failed to create a pipe");
	fflush(stdout);
	block_stop_signals(true); /* child_pids is set before a handler can run */
	pid_t pid = fork();
	if (pid < 0)
		bench_fatal_errno("failed to fork");
	if (pid == 0) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		sigaction(SIGTERM, &dfl, NULL);
		sigaction(SIGINT, &dfl, NULL);
		sigaction(SIGHUP, &dfl, NULL);
		block_stop_signals(false);
		/* Slot k on the trial's k-th CPU where the run claimed CPUs (slot 0: the measured
		 * one, which this process already runs on). _exit, not bench_fatal: exit()
		 * would run our atexit handler, which stops the parent's other children. */
		int cpu = bench_trial_cpu(slot);
		cpu_set_t one;
		CPU_ZERO(&one);
		if (cpu >= 0)
			CPU_SET(cpu, &one);
		if (cpu >= 0 && sched_setaffinity(0, sizeof(one), &one) != 0) {
			dprintf(STDERR_FILENO, "heap_bench: failed to pin alloc_patterns to CPU %d\n",
				cpu);
			_exit(127);
		}
		dup2(fds[1], STDOUT_FILENO);
		execve(program, argv, env);
		_exit(127);
	}
	child_pids[slot] = pid;
	block_stop_signals(false);
	close(fds[1]);
	return (struct running_child){ slot, fds[0], env };
}

/* Collects what a started alloc_patterns printed, once it has exited. */
static struct child_out finish_workload(const struct workload_args *w,
					const struct child_cfg *c, struct running_child r)
{
	char *text = read_fd_all(r.fd);
	close(r.fd);
	int status;
	while (waitpid(child_pids[r.slot], &status, 0) < 0)
		if (errno != EINTR)
			bench_fatal_errno("failed to wait for alloc_patterns");
	child_pids[r.slot] = 0;
	char **env = r.env;
	for (char **e = env; *e; e++)
		if (strncmp(*e, "SAMPLER_", 8) == 0 || strncmp(*e, "LD_PRELOAD=", 11) == 0)
			free(*e);
	free(env);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bench_fatal("failed to run alloc_patterns %s under %s: %s %d", w->text,
			    c->scheme ? c->scheme : "no preload",
			    WIFEXITED(status) ? "exit status" : "signal",
			    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));

	struct child_out out = { 0 };
	parse_child_stdout(text, &out, c->samples, c->counted);
	free(text);
	if (c->scheme)
		out.summary = read_summary(r.slot);
	return out;
}

/* Runs alloc_patterns as c says and collects what it printed. */
static struct child_out run_workload(const struct workload_args *w, const struct child_cfg *c)
{
	return finish_workload(w, c, start_workload(w, c, 0));
}

/* How many accuracy runs at once, at most MAX_CHILDREN: the CPUs the run claimed for the
 * trial (BAKEOFF_TRIAL_CPUS; the harness pins this process to the first), or where it is
 * not pinned, the CPUs this process may run on. */
static int children_at_once(void)
{
	int n = 0;

	while (n < MAX_CHILDREN && bench_trial_cpu(n) >= 0)
		n++;
	if (n == 0) {
		cpu_set_t cpus;
		if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0)
			return 1;
		n = CPU_COUNT(&cpus);
	}
	return n < 1 ? 1 : n > MAX_CHILDREN ? MAX_CHILDREN : n;
}

static void free_child(struct child_out *c)
{
	free(c->samples);
	free(c->ref_samples);
	for (int k = 0; k < 3; k++)
		free(c->part_samples[k]);
	free(c->counted);
	free(c->counted_ref);
	for (size_t i = 0; i < c->nper_op; i++)
		free(c->per_op_names[i]);
	free(c->per_op_names);
	free(c->per_op_values);
	free(c->summary);
}

/* The sampler saw every allocation the workload made (and maybe a few of libc's own). */
static void check_counts(const struct child_out *c)
{
	double seen = json_required(c->summary, "allocations", "the summary");
	double freed = json_required(c->summary, "frees", "the summary");

	if (seen < c->allocations || freed < c->frees)
		bench_fatal("failed to count: the sampler saw %.0f allocations and %.0f frees, the "
			    "workload made %.0f and %.0f",
			    seen, freed, c->allocations, c->frees);
}

/* A live estimate is only worth a relative error when the heap holds many mean gaps. */
#define LIVE_MIN_MEANS 64
/* Independent processes per trial for the error figures, each one estimate of one run
 * (--param accuracy_runs); at most this many. */
#define MAX_ACCURACY_RUNS 64
static unsigned accuracy_runs;

/* Sums over a trial's accuracy runs, emitted as means (counters). */
struct accuracy_sums {
	double samples, sampled_pct, independent, bound_total, untracked, true_total, true_live;
	double table_lookups_per_free;
};

/* One accuracy process: its errors as samples (one value per process), the rest summed. */
static void add_accuracy(const struct child_out *c, const char *prefix, uint64_t m_eff,
			 struct accuracy_sums *sum)
{
	char key[64];
	double v, live = json_required(c->summary, "live_bytes", "the summary");
	double total = json_required(c->summary, "allocated_bytes", "the summary");
	double allocations = json_required(c->summary, "allocations", "the summary");

	snprintf(key, sizeof(key), "%s_total_error_pct", prefix);
	if (json_number(c->summary, key, &v))
		bench_emit_sample(key, v);
	snprintf(key, sizeof(key), "%s_live_error_pct", prefix);
	if (json_number(c->summary, key, &v) && live >= LIVE_MIN_MEANS * (double)mean)
		bench_emit_sample(key, v);
	snprintf(key, sizeof(key), "%s_samples", prefix);
	double samples = json_required(c->summary, key, "the summary");
	snprintf(key, sizeof(key), "%s_independent_decisions", prefix);
	sum->samples += samples;
	sum->sampled_pct += 100.0 * samples / allocations;
	sum->independent += json_required(c->summary, key, "the summary");
	/* 1 sigma of the total's relative error if decisions are independent: sqrt(m / T). */
	sum->bound_total += 100.0 * sqrt((double)m_eff / total);
	sum->untracked += allocations - c->allocations;
	sum->true_total += total;
	sum->true_live += live;
	if (strcmp(prefix, "poisson") == 0)
		sum->table_lookups_per_free +=
			json_required(c->summary, "poisson_table_lookups", "the summary") /
			json_required(c->summary, "frees", "the summary");
	if (strcmp(prefix, "poisson") == 0 &&
	    json_required(c->summary, "poisson_live_table_insert_failures", "the summary") > 0)
		bench_fatal("failed to track every Poisson sample: the live table could not grow");
}

static void emit_accuracy_counters(const char *prefix, const struct accuracy_sums *s)
{
	char key[80];
	double n = accuracy_runs;

#define EMIT(what, value) (snprintf(key, sizeof(key), "%s_%s", prefix, what), \
			   bench_emit_counter(key, (value) / n))
	EMIT("samples", s->samples);
	EMIT("sampled_pct", s->sampled_pct);
	EMIT("independent_decisions", s->independent);
	EMIT("total_error_sigma_bound_pct", s->bound_total);
#undef EMIT
	bench_emit_counter("untracked_allocations", s->untracked / n);
	bench_emit_counter("true_allocated_bytes", s->true_total / n);
	bench_emit_counter("true_live_bytes", s->true_live / n);
	bench_emit_counter("accuracy_processes", n);
	if (strcmp(prefix, "poisson") == 0) /* 1: every free looks its pointer up; tagged: 0 */
		bench_emit_counter("poisson_table_lookups_per_free", s->table_lookups_per_free / n);
}

static void run_pattern(int mode, double scale)
{
	struct workload_args w;

	workload_args(mode, scale, &w);
	install_stop_handlers();
	make_tmp_dir();
	uint64_t drawn = mix64(tsc_start() ^ (uint64_t)getpid());
	int ref_first = (int)(drawn & 1);
	/* The Williams row of the cost run's first round, drawn: with one measured round a
	 * process (the default profile's modes), a row set by ref_first alone ran the parts in
	 * two orders only, the tracking run after the decision run in both (METHOD.md, "The
	 * runs of a round"). */
	int parts_row = (int)((drawn >> 1) % 10);
	bool paired = variant != V_NO_PRELOAD; /* none is paired with itself: the A/A check */
	bool sampling = variant >= V_POISSON;
	bool tagged = variant == V_POISSON_TAGGED;
	uint64_t hash_mean = variant == V_HASH_EQUAL_P ? equal_p_hash_mean_uniform(64, 4096) : mean;
	/*
	 * The cost run: one process, each sample a pair of runs of the pattern with the same
	 * requests, one under the variant's scheme and one under NONE, switched inside the process
	 * (same library, same heap, same ASLR): what the scheme adds and nothing else. It counts
	 * nothing (SAMPLER_COUNT=0), so each side pays only what its scheme needs; the tagged
	 * variant's NONE has the same header layout, so only the tagging differs.
	 */
	struct child_cfg cost = { env_scheme[variant], paired ? "NONE" : NULL, ref_first, false,
				  tagged, hash_mean, args.samples, args.warmup,
				  args.counted_samples, paired, parts_row };
	/* The accuracy runs: fresh processes, each one estimate of one run of the pattern; never
	 * counted (the sampler's exact counts must see the pattern's allocations alone). */
	struct child_cfg acc = { env_scheme[variant], NULL, 0, true, tagged, hash_mean, 1, 0, 0,
				 false, 0 };

	bench_meta_begin();
	bench_meta_str("variant", args.variant);
	bench_meta_str("workload", bench_param(&args, "workload"));
	bench_meta_num("mean", (double)mean);
	bench_meta_num("hash_mean", (double)hash_mean);
	bench_meta_num("scale", scale);
	bench_meta_str("workload_args", w.text);
	if (paired) {
		bench_meta_str("paired_order", ref_first ? "none first, then alternating"
							 : "variant first, then alternating");
		bench_meta_num("parts_row", parts_row);
	}
	if (sampling)
		bench_meta_num("accuracy_processes", accuracy_runs);
	if (cost.scheme)
		bench_meta_str("preload", preload_path());
	bench_meta_str("counted_window", "alloc_patterns' main thread, around the run of the "
					 "pattern (paired: the variant's side), per allocation");
	bench_meta_end();

	struct child_out run = run_workload(&w, &cost);
	for (size_t i = 0; i < run.nsamples; i++) {
		bench_emit_sample("ns_per_alloc", run.samples[i]);
		if (!paired)
			continue;
		/* The cost decomposition, each a difference of two runs of one round (same
		 * requests, same process): decision + live heap + size lookups = added. */
		double shipped = run.samples[i], none = run.ref_samples[i];
		double decide = run.part_samples[P_DECIDE][i], track = run.part_samples[P_TRACK][i];
		bench_emit_sample("decide_ns_per_alloc", decide - none);
		bench_emit_sample("live_heap_ns_per_alloc", track - decide);
		bench_emit_sample("bookkeeping_ns_per_alloc", shipped - track);
		bench_emit_sample("added_ns_per_alloc", shipped - none);
		bench_emit_sample("interposer_ns_per_alloc", none - run.part_samples[P_BYPASS][i]);
	}
	for (size_t i = 0; i < run.ncounted; i++) {
		bench_emit_sample("counted.ns_per_alloc", run.counted[i]);
		if (paired)
			bench_emit_sample("counted.added_ns_per_alloc",
					  run.counted[i] - run.counted_ref[i]);
	}
	for (size_t i = 0; i < run.nper_op; i++)
		bench_emit_sample(run.per_op_names[i], run.per_op_values[i]);
	if (run.ncounted) { /* what alloc_patterns opened, as its meta line said */
		bench_meta_begin();
		bench_meta_str("counters", run.counters);
		bench_meta_str("counters_absent", run.counters_absent);
		bench_meta_end();
	}
	bench_emit_counter("allocations", run.allocations);
	bench_emit_counter("frees", run.frees);
	if (mode == 4)
		bench_emit_counter("address_reuse_pct", run.address_reuse_pct);
	free_child(&run);
	if (sampling) {
		const char *prefix = variant == V_HASH || variant == V_HASH_EQUAL_P ? "hash"
										   : "poisson";
		struct accuracy_sums sums = { 0 };
		unsigned at_once = (unsigned)children_at_once();
		for (unsigned r = 0; r < accuracy_runs; r += at_once) {
			struct running_child started[MAX_CHILDREN];
			unsigned k = accuracy_runs - r < at_once ? accuracy_runs - r : at_once;
			for (unsigned i = 0; i < k; i++)
				started[i] = start_workload(&w, &acc, (int)i);
			for (unsigned i = 0; i < k; i++) {
				struct child_out run = finish_workload(&w, &acc, started[i]);
				check_counts(&run);
				add_accuracy(&run, prefix,
					     strcmp(prefix, "hash") == 0 ? hash_mean : mean, &sums);
				free_child(&run);
			}
		}
		emit_accuracy_counters(prefix, &sums);
		if (strcmp(prefix, "hash") == 0)
			bench_emit_counter("hash_mean_bytes", (double)hash_mean);
	}
	remove_tmp_dir();
}

int main(int argc, char **argv)
{
	bench_parse_args(argc, argv, &spec, &args);
	variant = (enum variant)args.variant_index;
	mean = bench_param_u64(&args, "mean");
	if (mean < 1 || mean > ((uint64_t)1 << 40))
		bench_usage_error("--param mean=%" PRIu64 " must be 1 .. 2^40 bytes", mean);
	double scale = bench_param_double(&args, "scale");
	if (!(scale > 0.0) || scale > 100.0)
		bench_usage_error("--param scale=%g must be > 0 and <= 100 (1 = the seed's counts)",
				  scale);
	uint64_t runs = bench_param_u64(&args, "accuracy_runs");
	if (runs < 1 || runs > MAX_ACCURACY_RUNS)
		bench_usage_error("--param accuracy_runs=%" PRIu64 " must be 1 .. %d", runs,
				  MAX_ACCURACY_RUNS);
	accuracy_runs = (unsigned)runs;
	const char *workload = bench_param(&args, "workload");

	if (strcmp(workload, "inline-64") == 0)
		run_inline(64);
	else if (strcmp(workload, "inline-4096") == 0)
		run_inline(4096);
	else if (strcmp(workload, "micro-64") == 0)
		run_micro(64);
	else if (strcmp(workload, "micro-1024") == 0)
		run_micro(1024);
	else if (strcmp(workload, "micro-4096") == 0)
		run_micro(4096);
	else if (strncmp(workload, "mode", 4) == 0 && workload[4] >= '1' && workload[4] <= '4' &&
		 workload[5] == '\0')
		run_pattern(workload[4] - '0', scale);
	else
		bench_usage_error("--param workload=%s: use inline-64, inline-4096, micro-64, "
				  "micro-1024, micro-4096, mode1, mode2, mode3 or mode4", workload);
	return 0;
}
