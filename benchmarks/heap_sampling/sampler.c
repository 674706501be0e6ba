/*
 * libbakeoff_sampler.so - an allocation sampler loaded into any program with LD_PRELOAD.
 *
 *   SAMPLER_SCHEME=POISSON LD_PRELOAD=build/heap_sampling/libbakeoff_sampler.so prog ...
 *
 * Interposes malloc, free, calloc, realloc, reallocarray, posix_memalign, aligned_alloc,
 * memalign, valloc, pvalloc and malloc_usable_size; forwards each to the next definition
 * (glibc), counts exactly what happened, and lets the chosen scheme (sampler_schemes.h) decide
 * which blocks to sample. At exit it writes a JSON summary: allocations, frees, samples, the
 * 1/p-weighted estimates of the bytes allocated and of the bytes live at exit, the true
 * values, and with SAMPLER_TIMING=1 the cost of each decision in TSC ticks and ns.
 *
 * Environment (read once, at the first call):
 *   SAMPLER_SCHEME              POISSON | POISSON_TAGGED | STATELESS_HASH | COMBINED | NONE
 *                               (default NONE)
 *   SAMPLER_POISSON_MEAN_BYTES  mean bytes between samples, both schemes (default 4096)
 *   SAMPLER_HASH_MEAN_BYTES     the hash's own mean, if it differs (default: the one above);
 *                               set to give both schemes the same sample rate
 *   SAMPLER_TIMING              0 | 1 (default 0): time every decision
 *   SAMPLER_COUNT               1 | 0 (default 1): count exactly (true bytes, calls, distinct
 *                               hash decisions) for the error figures. 0: only what the scheme
 *                               needs, so that a cost run times the scheme, not our counting
 *   SAMPLER_HEADER              0 | 1 (default 0; always 1 for POISSON_TAGGED): 16 bytes in
 *                               front of every block, where a tag bit can live
 *   SAMPLER_REFERENCE           a second scheme (e.g. NONE) the program may switch to and back
 *                               with bakeoff_sampler_use_reference(1/0): a cost run pairs the
 *                               scheme with its reference inside one process
 *   SAMPLER_OUTPUT              file for the summary (default: one line on stderr); never
 *                               followed if it is a symbolic link; "%p" in it becomes the pid
 * A value that makes no sense falls back to the default with one warning on stderr; so does
 * an empty one (VAR= is more likely a shell variable that was never set than a choice).
 * Only an unset variable means the default silently.
 *
 * Which process writes: the one started under the sampler (the "root": its parent does not
 * have this library mapped; exec keeps the pid and the role). Children it forks or executes
 * stay silent unless SAMPLER_OUTPUT contains %p. A process that ends in _exit() or by a signal
 * runs no exit handlers and writes nothing.
 *
 * Safety rules, each for a reason:
 * - dlsym() allocates (calloc) while we resolve the real functions: those calls are served
 *   from a static bootstrap arena that is never handed to libc's free.
 * - Our own set-up and summary call into libc, which may allocate: a thread-local guard passes
 *   such calls straight through, uncounted.
 * - Thread-local state uses the initial-exec TLS model: the general-dynamic model may call
 *   __tls_get_addr, which may call malloc.
 * - Counters live in a per-thread slot (plain stores, no lock prefix); the Poisson live table
 *   is striped (sampler_schemes.h); fork() takes every lock first (pthread_atfork).
 * - Nothing here allocates with malloc: tables come from mmap, the summary from a static
 *   buffer.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampler_schemes.h"

#define EXPORT __attribute__((visibility("default")))
#define THREAD_LOCAL __thread __attribute__((tls_model("initial-exec")))

#define DEFAULT_MEAN_BYTES 4096
#define MAX_MEAN_BYTES ((uint64_t)1 << 40)
/* A timed decision longer than this (~13 µs at 2.5 GHz) held something else: another task
 * run in its place, a long interrupt. A decision's own work is tens of ticks, its sample work
 * hundreds, a page fault it takes a few thousand. Counted as an outlier, not added to the
 * mean: beside CPU hogs, preemptions under the old bound of 2^20 ticks (~400 µs) made
 * NONE's empty decision, 0 on a quiet machine, read tens of ticks. */
#define TICKS_OUTLIER ((uint64_t)1 << 15)
/* The TSC rate is measured over the process lifetime; at least this long. */
#define TSC_RATE_MIN_NS 20000000ull
#define TSC_FLOOR_PAIRS 20001

/* ---- the real functions ------------------------------------------------------------------ */

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static size_t (*real_usable_size)(void *);

/* ---- configuration ----------------------------------------------------------------------- */

static struct {
	enum scheme { SCHEME_NONE, SCHEME_POISSON, SCHEME_HASH, SCHEME_COMBINED,
		      SCHEME_POISSON_TAGGED } scheme;
	uint64_t mean;
	double mean_d;
	uint64_t hash_mean;
	struct hash_params hp;
	bool timing;
	enum scheme main_scheme, reference; /* SAMPLER_REFERENCE, or the main scheme */
	/* Which part of the scheme a cost run times (bakeoff_sampler_use_part): what the
	 * sampler ships, or its decision alone, or the decision and the live-heap tracking, each
	 * on the size a real allocator knows without asking (request_class, chunk_usable). */
	enum part { PART_SHIPPED, PART_DECIDE, PART_TRACK } part;
	bool count;  /* exact counting for the error figures (SAMPLER_COUNT) */
	bool header; /* the header layout (SAMPLER_HEADER, or POISSON_TAGGED) */
	bool root;         /* this process writes the summary */
	bool per_pid;      /* SAMPLER_OUTPUT contains %p: every process writes its own */
	char output[PATH_MAX]; /* absolute, or "" for stderr */
	uint64_t floor_ticks;
	uint64_t tsc0, ns0; /* for the TSC rate */
} cfg;

static const char *const scheme_names[] = { "NONE", "POISSON", "STATELESS_HASH", "COMBINED",
					    "POISSON_TAGGED" };
#define N_SCHEME_NAMES 5

/* ---- statistics: one slot per thread ----------------------------------------------------- */

enum call { CALL_MALLOC, CALL_CALLOC, CALL_REALLOC, CALL_ALIGNED, CALL_FREE, N_CALLS };
static const char *const call_names[] = { "malloc", "calloc", "realloc", "aligned", "free" };

/* Per-scheme statistics; NONE has only timing (of an empty decision: the floor check). */
enum slot_scheme { S_NONE, S_POISSON, S_HASH, N_SCHEMES };
static const char *const slot_prefix[] = { "none", "poisson", "hash" };
enum path { PATH_MALLOC, PATH_FREE, N_PATHS };
static const char *const path_names[] = { "malloc", "free" };

enum {
	C_ALLOCATIONS,
	C_FREES,
	C_REQUESTED_BYTES,
	C_ALLOCATED_BYTES, /* usable bytes of every block handed out */
	C_FREED_BYTES,
	C_CALLS,
	C_SCHEME = C_CALLS + N_CALLS,
};
enum {
	SC_SAMPLES,
	SC_SAMPLED_BYTES,
	SC_SAMPLED_FREES,
	SC_TABLE_LOOKUPS, /* frees that consulted the live table (counted with SAMPLER_COUNT) */
	SC_DECISIONS,
	SC_TICKS = SC_DECISIONS + N_PATHS,
	SC_FLOOR_TICKS = SC_TICKS + N_PATHS, /* the empty pair beside each timed decision */
	SC_OUTLIERS = SC_FLOOR_TICKS + N_PATHS,
	/* sum of (decision pair - empty pair)^2: the net cost's standard error */
	SC_NET_SQUARES = SC_OUTLIERS + N_PATHS,
	SC_N = SC_NET_SQUARES + N_PATHS,
};
#define N_COUNTERS (C_SCHEME + N_SCHEMES * SC_N)
#define SC(scheme, what) (C_SCHEME + (scheme) * SC_N + (what))
enum { D_EST_TOTAL, D_EST_LIVE, D_N };
#define N_DOUBLES (N_SCHEMES * D_N)
#define SD(scheme, what) ((scheme) * D_N + (what))

struct thread_stats {
	_Atomic uint64_t c[N_COUNTERS];
	_Atomic double d[N_DOUBLES];
};

struct stats_sum {
	uint64_t c[N_COUNTERS];
	double d[N_DOUBLES];
};

/*
 * A thread owns a slot until it exits (then its numbers are folded into `shared` and the slot
 * is reused). Threads beyond MAX_SLOTS, and exited threads that still allocate from late
 * destructors, update `shared` with atomic read-modify-writes.
 */
#define MAX_SLOTS 1024
static struct thread_stats slots[MAX_SLOTS];
static bool slot_used[MAX_SLOTS];
static int free_slots[MAX_SLOTS];
static int n_free_slots, n_slots_made;
static struct thread_stats shared;
static _Atomic int slots_lock;
static pthread_key_t thread_key;
static bool have_thread_key;

struct thread_state {
	struct thread_stats *stats;
	bool shared;      /* stats == &shared */
	int guard;        /* > 0: inside our own code; calls pass straight through */
	bool resolving;   /* inside dlsym: memory from the bootstrap arena */
	bool initializing;
	struct poisson_state poisson;
};
static THREAD_LOCAL struct thread_state ts;

static struct live_table live;
/* Accuracy runs of the hash: the distinct (address, size) pairs it sampled. Repeats of one
 * pair are one decision repeated, so this count, not the samples, is its effective n. */
static struct live_table hash_seen;

enum { INIT_NOT_STARTED, INIT_RUNNING, INIT_READY };
static _Atomic int init_state;

/* ---- small helpers ----------------------------------------------------------------------- */

/* The owner is the only writer of its slot: a relaxed load and store (no lock prefix) are
 * enough, and the summary reading concurrently sees a value that was true at some point. */
static inline void cadd(struct thread_stats *st, int i, uint64_t v)
{
	if (unlikely(ts.shared))
		atomic_fetch_add_explicit(&st->c[i], v, memory_order_relaxed);
	else
		atomic_store_explicit(&st->c[i],
				      atomic_load_explicit(&st->c[i], memory_order_relaxed) + v,
				      memory_order_relaxed);
}

static inline void dadd_atomic(_Atomic double *x, double v)
{
	double old = atomic_load_explicit(x, memory_order_relaxed);

	while (!atomic_compare_exchange_weak_explicit(x, &old, old + v, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

static inline void dadd(struct thread_stats *st, int i, double v)
{
	if (unlikely(ts.shared))
		dadd_atomic(&st->d[i], v);
	else
		atomic_store_explicit(&st->d[i],
				      atomic_load_explicit(&st->d[i], memory_order_relaxed) + v,
				      memory_order_relaxed);
}

/* One line on stderr, one write(2); no stdio (it may allocate, and stderr may be closed). */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[PATH_MAX + 512];
	va_list ap;
	int n = snprintf(line, sizeof(line), "libbakeoff_sampler: ");

	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t ignored = write(STDERR_FILENO, line, (size_t)n);
	(void)ignored;
}

static uint64_t thread_seed(void)
{
	return mix64(tsc_start() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)&ts);
}

/* ---- the bootstrap arena ----------------------------------------------------------------- */

#define BOOTSTRAP_BYTES (256 * 1024)
static _Alignas(64) unsigned char bootstrap[BOOTSTRAP_BYTES];
static _Atomic size_t bootstrap_used;

struct bootstrap_header {
	size_t size;
	size_t pad; /* keeps blocks 16-byte aligned, as malloc's are */
};

static inline bool is_bootstrap(const void *p)
{
	return (const unsigned char *)p >= bootstrap &&
	       (const unsigned char *)p < bootstrap + BOOTSTRAP_BYTES;
}

/* Zeroed (the arena is never reused), aligned to `align` (a power of two >= 16). */
static void *bootstrap_alloc(size_t size, size_t align)
{
	size_t hdr = sizeof(struct bootstrap_header);

	if (align < 16)
		align = 16;
	if (size > BOOTSTRAP_BYTES)
		goto full;
	for (;;) {
		size_t used = atomic_load(&bootstrap_used);
		size_t start = (used + hdr + align - 1) & ~(align - 1);
		size_t end = (start + size + 15) & ~(size_t)15;
		if (end > BOOTSTRAP_BYTES)
			goto full;
		if (atomic_compare_exchange_weak(&bootstrap_used, &used, end)) {
			((struct bootstrap_header *)(bootstrap + start))[-1].size = size;
			return bootstrap + start;
		}
	}
full:
	errno = ENOMEM;
	return NULL;
}

static size_t bootstrap_size(const void *p)
{
	return ((const struct bootstrap_header *)p)[-1].size;
}

/* ---- configuration from the environment -------------------------------------------------- */

static void warn_config(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn_config(const char *fmt, ...)
{
	char msg[PATH_MAX + 256];
	va_list ap;

	if (!cfg.root && !cfg.per_pid)
		return; /* descendants fall back silently: the root said it once */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	say("warning: %s", msg);
}

static enum scheme parse_scheme(const char *name, enum scheme fallback)
{
	const char *v = getenv(name);

	if (!v)
		return fallback;
	for (int s = 0; s < N_SCHEME_NAMES; s++)
		if (strcmp(v, scheme_names[s]) == 0)
			return (enum scheme)s;
	warn_config("%s='%.64s' is not one of POISSON, POISSON_TAGGED, STATELESS_HASH, COMBINED, "
		    "NONE; using %s", name, v, scheme_names[fallback]);
	return fallback;
}

static uint64_t parse_mean(const char *name, uint64_t fallback)
{
	const char *v = getenv(name);
	char *end;

	if (!v)
		return fallback;
	errno = 0;
	unsigned long long m = strtoull(v, &end, 10);
	if (v[0] < '0' || v[0] > '9' || *end || errno || m == 0 || m > MAX_MEAN_BYTES) {
		warn_config("%s='%.64s' is not a whole number of bytes from 1 to 2^40; using %llu",
			    name, v, (unsigned long long)fallback);
		return fallback;
	}
	return m;
}

static bool parse_flag(const char *name, bool fallback)
{
	const char *v = getenv(name);

	if (!v)
		return fallback;
	if (strcmp(v, "0") == 0)
		return false;
	if (strcmp(v, "1") == 0)
		return true;
	warn_config("%s='%.64s' is not 0 or 1; using %d", name, v, fallback);
	return fallback;
}

/* SAMPLER_OUTPUT made absolute now: the program may chdir before it exits. */
static void parse_output(void)
{
	const char *v = getenv("SAMPLER_OUTPUT");
	char cwd[PATH_MAX];
	int n;

	cfg.output[0] = '\0';
	if (!v || !*v)
		return;
	if (v[0] == '/')
		n = snprintf(cfg.output, sizeof(cfg.output), "%s", v);
	else if (getcwd(cwd, sizeof(cwd)))
		n = snprintf(cfg.output, sizeof(cfg.output), "%s/%s", cwd, v);
	else
		n = -1;
	if (n < 0 || n >= (int)sizeof(cfg.output) - 16) {
		cfg.output[0] = '\0';
		warn_config("SAMPLER_OUTPUT is too long or its directory unknown; the summary goes "
			    "to stderr");
	}
}

/* Does our parent have this library mapped? Then we were started by a sampled process. */
static bool parent_is_sampled(void)
{
	static const char needle[] = "libbakeoff_sampler";
	const size_t nlen = sizeof(needle) - 1;
	char path[64], buf[4096 + sizeof(needle)];
	size_t keep = 0;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)getppid());
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	for (;;) {
		ssize_t n = read(fd, buf + keep, 4096);
		if (n <= 0)
			break;
		size_t len = keep + (size_t)n;
		if (memmem(buf, len, needle, nlen)) {
			found = true;
			break;
		}
		keep = len < nlen ? len : nlen;
		memmove(buf, buf + len - keep, keep);
	}
	close(fd);
	return found;
}

static void read_config(void)
{
	const char *out = getenv("SAMPLER_OUTPUT");

	cfg.per_pid = out && strstr(out, "%p");
	cfg.root = !parent_is_sampled();
	cfg.scheme = cfg.main_scheme = parse_scheme("SAMPLER_SCHEME", SCHEME_NONE);
	cfg.reference = parse_scheme("SAMPLER_REFERENCE", cfg.scheme);
	cfg.mean = parse_mean("SAMPLER_POISSON_MEAN_BYTES", DEFAULT_MEAN_BYTES);
	cfg.mean_d = (double)cfg.mean;
	cfg.hash_mean = parse_mean("SAMPLER_HASH_MEAN_BYTES", cfg.mean);
	cfg.hp = hash_params_make(cfg.hash_mean);
	cfg.timing = parse_flag("SAMPLER_TIMING", false);
	cfg.count = parse_flag("SAMPLER_COUNT", true);
	cfg.header = parse_flag("SAMPLER_HEADER", false) || cfg.scheme == SCHEME_POISSON_TAGGED ||
		     cfg.reference == SCHEME_POISSON_TAGGED;
	parse_output();
}

/* ---- threads and fork -------------------------------------------------------------------- */

static void stats_fold_into_shared(struct thread_stats *st)
{
	for (int i = 0; i < N_COUNTERS; i++) {
		atomic_fetch_add_explicit(&shared.c[i], atomic_load(&st->c[i]),
					  memory_order_relaxed);
		atomic_store(&st->c[i], 0);
	}
	for (int i = 0; i < N_DOUBLES; i++) {
		dadd_atomic(&shared.d[i], atomic_load(&st->d[i]));
		atomic_store(&st->d[i], 0.0);
	}
}

/* pthread key destructor: the thread is exiting; its numbers outlive it in `shared`. */
static void thread_exit(void *arg)
{
	int idx = (int)(uintptr_t)arg - 1;

	spin_lock(&slots_lock);
	stats_fold_into_shared(&slots[idx]);
	slot_used[idx] = false;
	free_slots[n_free_slots++] = idx;
	spin_unlock(&slots_lock);
	ts.stats = &shared;
	ts.shared = true;
}

static __attribute__((noinline)) struct thread_stats *claim_slot(void)
{
	int idx = -1;

	spin_lock(&slots_lock);
	if (n_free_slots > 0)
		idx = free_slots[--n_free_slots];
	else if (n_slots_made < MAX_SLOTS)
		idx = n_slots_made++;
	if (idx >= 0)
		slot_used[idx] = true;
	spin_unlock(&slots_lock);
	if (idx < 0) {
		ts.stats = &shared;
		ts.shared = true;
		return ts.stats;
	}
	ts.stats = &slots[idx];
	ts.shared = false;
	if (have_thread_key) {
		ts.guard++; /* a key past the first 32 makes glibc allocate */
		pthread_setspecific(thread_key, (void *)(uintptr_t)(idx + 1));
		ts.guard--;
	}
	return ts.stats;
}

static inline struct thread_stats *my_stats(void)
{
	return likely(ts.stats != NULL) ? ts.stats : claim_slot();
}

static void fork_prepare(void)
{
	live_lock_all(&live);
	live_lock_all(&hash_seen);
	spin_lock(&slots_lock);
}

static void fork_parent(void)
{
	spin_unlock(&slots_lock);
	live_unlock_all(&hash_seen);
	live_unlock_all(&live);
}

static void fork_child(void)
{
	spin_unlock(&slots_lock);
	live_unlock_all(&hash_seen);
	live_unlock_all(&live);
	/* The child would otherwise draw the same gaps as the parent: its next decision
	 * reseeds (poisson_point). */
	ts.poisson.ready = false;
	ts.poisson.until = 0;
	/* A forked copy is not the process the user started (unless every pid writes). */
	cfg.root = false;
}

/* ---- initialisation ---------------------------------------------------------------------- */

static void *next_symbol(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p && (strcmp(name, "malloc") == 0 || strcmp(name, "free") == 0 ||
		   strcmp(name, "realloc") == 0 || strcmp(name, "calloc") == 0 ||
		   strcmp(name, "malloc_usable_size") == 0)) {
		say("fatal: cannot find the next definition of %s (a static program?)", name);
		abort();
	}
	return p;
}

static void resolve_real_functions(void)
{
	ts.resolving = true;
	real_malloc = next_symbol("malloc");
	real_free = next_symbol("free");
	real_calloc = next_symbol("calloc");
	real_realloc = next_symbol("realloc");
	real_usable_size = next_symbol("malloc_usable_size");
	real_posix_memalign = next_symbol("posix_memalign");
	real_aligned_alloc = next_symbol("aligned_alloc");
	real_memalign = next_symbol("memalign");
	real_valloc = next_symbol("valloc");
	real_pvalloc = next_symbol("pvalloc");
	ts.resolving = false;
}

static void initialize(void)
{
	ts.initializing = true;
	resolve_real_functions();
	ts.guard++;
	read_config();
	for (int i = 0; i < 2; i++) {
		enum scheme s = i ? cfg.reference : cfg.main_scheme;
		if ((s == SCHEME_POISSON || s == SCHEME_COMBINED) && !live.filter)
			live_init(&live);
		if (cfg.count && (s == SCHEME_HASH || s == SCHEME_COMBINED) && !hash_seen.filter)
			live_init(&hash_seen);
	}
	if (cfg.timing) {
		cfg.floor_ticks = tsc_floor_ticks(TSC_FLOOR_PAIRS);
		cfg.tsc0 = tsc_start();
		cfg.ns0 = mono_ns();
	}
	have_thread_key = pthread_key_create(&thread_key, thread_exit) == 0;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	ts.guard--;
	ts.initializing = false;
	atomic_store_explicit(&init_state, INIT_READY, memory_order_release);
}

/*
 * Slow path of every entry point until the sampler is ready. false: the caller is dlsym
 * inside our own resolution and must be served from the bootstrap arena.
 */
static __attribute__((noinline)) bool become_ready(void)
{
	if (ts.resolving)
		return false;
	if (ts.initializing)
		return true; /* our own set-up: real functions known, guard up */
	int expected = INIT_NOT_STARTED;
	if (atomic_compare_exchange_strong(&init_state, &expected, INIT_RUNNING)) {
		initialize();
		return true;
	}
	while (atomic_load_explicit(&init_state, memory_order_acquire) != INIT_READY)
		sched_yield();
	return true;
}

static inline bool ready(void)
{
	return likely(atomic_load_explicit(&init_state, memory_order_acquire) == INIT_READY) ||
	       become_ready();
}

/* n + extra, or SIZE_MAX (which malloc refuses) when that overflows. */
static inline size_t plus(size_t n, size_t extra)
{
	size_t total;

	return __builtin_add_overflow(n, extra, &total) ? SIZE_MAX : total;
}

/* ---- the header layout: where an allocator-integrated sampler keeps its tag -------------- */

/*
 * tcmalloc does not look a freed pointer up in a table of samples: the allocation is marked
 * as sampled in the allocator's own metadata, which its free() reads anyway (docs/sampling.md;
 * the span of a sampled object is flagged). An interposer has no such metadata, so with
 * SAMPLER_HEADER=1 every block gets 16 bytes in front of it: a check word (which proves that
 * the header is ours) and an info word (offset to the real block << 8 | flags). POISSON_TAGGED
 * sets HDR_SAMPLED there; its free() tests that bit in the line it reads for the check anyway.
 * The cost of the layout itself (16 more bytes, the header writes) is paid by every scheme run
 * with it, so its reference is NONE with SAMPLER_HEADER=1. Blocks our own set-up allocates (the
 * guard passes them straight through) have no header: the check word tells them apart.
 */
#define HDR_BYTES 16
#define HDR_MAGIC 0x5a3c9e1bd7f2a468ull
#define HDR_SAMPLED 1u

struct block_header {
	uint64_t check; /* HDR_MAGIC ^ user address while the block is live */
	uint64_t info;  /* offset from the real block << 8 | flags */
};

static inline struct block_header *header_of(void *p)
{
	return (struct block_header *)p - 1;
}

static inline void *header_wrap(void *base, size_t offset)
{
	if (unlikely(base == NULL))
		return NULL;
	void *p = (char *)base + offset;
	*header_of(p) = (struct block_header){ HDR_MAGIC ^ (uintptr_t)p, (uint64_t)offset << 8 };
	return p;
}

/* Reading 16 bytes before any pointer malloc returned is safe: glibc's chunk header is there. */
static inline bool header_owned(void *p)
{
	return cfg.header && header_of(p)->check == (HDR_MAGIC ^ (uintptr_t)p);
}

static inline void *header_base(void *p)
{
	return (char *)p - (header_of(p)->info >> 8);
}

/* The usable size of a block as the program sees it. */
static inline uint64_t block_usable(void *p)
{
	if (cfg.header && header_owned(p))
		return real_usable_size(header_base(p)) - (header_of(p)->info >> 8);
	return real_usable_size(p);
}

/*
 * The sizes of the cost parts (PART_DECIDE, PART_TRACK), without malloc_usable_size: a real
 * allocator decides on the requested size or on the size class it computes from it anyway,
 * and its free() knows the class from the metadata it reads anyway. glibc's "class" is the
 * chunk: request + 8-byte size word rounded up to 16, at least 32, of which all but the size
 * word is usable. request_class is that arithmetic (in the header layout, of the request
 * plus the header); chunk_usable reads the size word glibc's own free() reads first (low 3
 * bits are flags; an mmapped chunk lends no next prev_size, so 16 bytes are not usable).
 * They agree except where glibc hands out a chunk larger than asked (a split whose
 * remainder would be under 32 bytes, or an mmapped chunk): a cost run estimates nothing.
 */
static inline uint64_t request_class(size_t requested)
{
	size_t hdr = cfg.header ? HDR_BYTES : 0, r = plus(requested, hdr + 8 + 15);
	size_t chunk = r < 32 ? 32 : r & ~(size_t)15;

	return chunk - 8 - hdr;
}

static inline uint64_t chunk_usable(void *p)
{
	size_t offset = cfg.header && header_owned(p) ? header_of(p)->info >> 8 : 0;
	size_t word = ((const size_t *)((char *)p - offset))[-1];

	return (word & ~(size_t)7) - ((word & 2) ? 16 : 8) - offset;
}

/* ---- the decisions ----------------------------------------------------------------------- */

/*
 * Timed: an empty rdtsc/rdtscp pair right before the decision measures the timer's own cost
 * in the same place and state (after the same malloc work, same caches); the decision's pair
 * follows. Net cost = mean(decision pair) - mean(empty pair). A floor measured once in a tight
 * loop at start-up is lower than this in-place one (reported beside it as timer_floor_ticks),
 * and subtracting it would charge part of the timer to the decision.
 */
static inline void timed_end(struct thread_stats *st, enum slot_scheme s, enum path p,
			     uint64_t empty, uint64_t t0)
{
	uint64_t d = tsc_stop() - t0;

	if (unlikely(d > TICKS_OUTLIER || empty > TICKS_OUTLIER)) {
		cadd(st, SC(s, SC_OUTLIERS + p), 1);
		return;
	}
	cadd(st, SC(s, SC_DECISIONS + p), 1);
	cadd(st, SC(s, SC_TICKS + p), d);
	cadd(st, SC(s, SC_FLOOR_TICKS + p), empty);
	int64_t net = (int64_t)d - (int64_t)empty; /* both below 2^15: the square fits */
	cadd(st, SC(s, SC_NET_SQUARES + p), (uint64_t)(net * net));
}

/* Runs `decision`, timed as scheme s on path p when SAMPLER_TIMING=1. */
#define DECIDE(st, s, p, decision)                                   \
	do {                                                         \
		if (unlikely(cfg.timing)) {                          \
			uint64_t e0_ = tsc_start();                  \
			uint64_t empty_ = tsc_stop() - e0_;          \
			uint64_t t0_ = tsc_start();                  \
			decision;                                    \
			timed_end((st), (s), (p), empty_, t0_);      \
		} else {                                             \
			decision;                                    \
		}                                                    \
	} while (0)

static inline void sample_taken(struct thread_stats *st, enum slot_scheme s, uint64_t u,
				double w, bool live_known)
{
	cadd(st, SC(s, SC_SAMPLES), 1);
	cadd(st, SC(s, SC_SAMPLED_BYTES), u);
	dadd(st, SD(s, D_EST_TOTAL), w);
	if (live_known)
		dadd(st, SD(s, D_EST_LIVE), w);
}

/*
 * The Poisson test as an allocator's fast path has it: a decrement and a sign test, and
 * nothing else inline. Everything else is out of line, so the fast path needs no stack frame
 * (with the sample work inline, the compiler saved five registers on every call: a ns per
 * allocation here, more than the test itself). A thread's counter starts at 0, so its first
 * decision lands in poisson_point, which seeds it (and fork_child zeroes it again).
 */
static __attribute__((noinline)) bool poisson_point(uint64_t u)
{
	if (unlikely(!ts.poisson.ready)) {
		poisson_seed(&ts.poisson, thread_seed(), cfg.mean_d);
		return poisson_sampled(&ts.poisson, u, cfg.mean_d);
	}
	ts.poisson.until = poisson_gap(&ts.poisson, cfg.mean_d);
	return true;
}

static inline bool poisson_decides(uint64_t u)
{
	ts.poisson.until -= (int64_t)u;
	if (likely(ts.poisson.until >= 0))
		return false;
	return poisson_point(u);
}

static __attribute__((noinline)) void poisson_malloc_sample(struct thread_stats *st, uintptr_t a,
							     uint64_t u)
{
	bool tracked = live_insert(&live, a, u);
	if (!tracked) /* free() will not recognise it: keep it out of the live estimate */
		atomic_fetch_add_explicit(&live.insert_failures, 1, memory_order_relaxed);
	sample_taken(st, S_POISSON, u, poisson_weighted_bytes(u, cfg.mean_d), tracked);
}

static inline void poisson_malloc(struct thread_stats *st, uintptr_t a, uint64_t u)
{
	if (likely(!poisson_decides(u)))
		return;
	poisson_malloc_sample(st, a, u);
}

/* Returns the usable size the block was sampled with, or 0 if it was not sampled. */
static inline uint64_t poisson_free(struct thread_stats *st, uintptr_t a)
{
	uint64_t u;

	if (cfg.count)
		cadd(st, SC(S_POISSON, SC_TABLE_LOOKUPS), 1);
	if (likely(!live_remove(&live, a, &u)))
		return 0;
	cadd(st, SC(S_POISSON, SC_SAMPLED_FREES), 1);
	dadd(st, SD(S_POISSON, D_EST_LIVE), -poisson_weighted_bytes(u, cfg.mean_d));
	return u;
}


/* Tagged: the sample is marked in the block's header, not inserted in a table. */
static __attribute__((noinline)) void poisson_tagged_sample(struct thread_stats *st, void *p,
							     uint64_t u)
{
	header_of(p)->info |= HDR_SAMPLED;
	sample_taken(st, S_POISSON, u, poisson_weighted_bytes(u, cfg.mean_d), true);
}

static inline void poisson_tagged_malloc(struct thread_stats *st, void *p, uint64_t u)
{
	if (likely(!poisson_decides(u)))
		return;
	poisson_tagged_sample(st, p, u);
}

/* A tagged block's size is read only for a sampled one (the weight to take off). */
static inline void poisson_tagged_free(struct thread_stats *st, void *p)
{
	if (likely(!(header_of(p)->info & HDR_SAMPLED)))
		return;
	cadd(st, SC(S_POISSON, SC_SAMPLED_FREES), 1);
	dadd(st, SD(S_POISSON, D_EST_LIVE), -poisson_weighted_bytes(block_usable(p), cfg.mean_d));
}

static inline void hash_malloc(struct thread_stats *st, uintptr_t a, uint64_t u)
{
	if (likely(!hash_sampled(a, u, &cfg.hp)))
		return;
	sample_taken(st, S_HASH, u, hash_weighted_bytes(u, &cfg.hp), true);
	if (cfg.count) /* accuracy runs only: the effective n of the hash's estimate */
		live_insert(&hash_seen, (uintptr_t)(mix64(a ^ mix64(u)) | 1), u);
}

static inline bool hash_free(struct thread_stats *st, uintptr_t a, uint64_t u)
{
	if (likely(!hash_sampled(a, u, &cfg.hp)))
		return false;
	cadd(st, SC(S_HASH, SC_SAMPLED_FREES), 1);
	dadd(st, SD(S_HASH, D_EST_LIVE), -hash_weighted_bytes(u, &cfg.hp));
	return true;
}

/*
 * The cost parts (bakeoff_sampler_use_part), each as lean as an allocator's fast path would
 * have it and all through the same dispatch, so that two parts differ by their work alone:
 * every part computes the class of the request (an allocator has its size class before it
 * samples), NONE then stops; PART_DECIDE tests, and on a sample draws the next gap and
 * records the weight; PART_TRACK also makes the sample recognisable on free (Poisson's table
 * insert, the tag), and on free looks (the table's filter and probe, the tag bit, the hash
 * recomputed from the size in the chunk's size word). No timing, no counting: cost runs only.
 */
static __attribute__((noinline)) void part_sample(uint64_t u, enum slot_scheme s, double w)
{
	sample_taken(my_stats(), s, u, w, false);
}

/* A sampled block freed: its weight leaves the live estimate. */
static __attribute__((noinline)) void part_freed(enum slot_scheme s, double w)
{
	dadd(my_stats(), SD(s, D_EST_LIVE), -w);
}

static inline void part_alloc(void *p, size_t requested)
{
	uintptr_t a = (uintptr_t)p;
	enum scheme scheme = cfg.scheme;

	if (scheme == SCHEME_NONE)
		return;
	uint64_t u = request_class(requested);
	/* Tests in a row, not a switch: a jump table's indirect jump costs as much as a test. */
	if (scheme == SCHEME_HASH || scheme == SCHEME_COMBINED) {
		if (unlikely(hash_sampled(a, u, &cfg.hp)))
			part_sample(u, S_HASH, hash_weighted_bytes(u, &cfg.hp));
		if (scheme == SCHEME_HASH)
			return;
	}
	if (likely(!poisson_decides(u)))
		return;
	if (cfg.part != PART_TRACK)
		part_sample(u, S_POISSON, poisson_weighted_bytes(u, cfg.mean_d));
	else if (scheme == SCHEME_POISSON_TAGGED)
		poisson_tagged_sample(my_stats(), p, u);
	else
		poisson_malloc_sample(my_stats(), a, u);
}

static inline void part_free(void *p)
{
	uintptr_t a = (uintptr_t)p;
	uint64_t u;

	if (cfg.part != PART_TRACK)
		return;
	switch (cfg.scheme) {
	case SCHEME_NONE:
		return;
	case SCHEME_COMBINED:
	case SCHEME_HASH:
		u = chunk_usable(p);
		if (unlikely(hash_sampled(a, u, &cfg.hp)))
			part_freed(S_HASH, hash_weighted_bytes(u, &cfg.hp));
		if (cfg.scheme == SCHEME_HASH)
			return;
		__attribute__((fallthrough));
	case SCHEME_POISSON:
		if (unlikely(live_remove(&live, a, &u)))
			part_freed(S_POISSON, poisson_weighted_bytes(u, cfg.mean_d));
		return;
	case SCHEME_POISSON_TAGGED:
		if (unlikely(header_of(p)->info & HDR_SAMPLED))
			poisson_tagged_free(my_stats(), p);
		return;
	}
}

static inline void record_alloc(void *p, size_t requested, enum call call)
{
	if (unlikely(cfg.part != PART_SHIPPED)) {
		part_alloc(p, requested);
		return;
	}
	/* NONE in a cost run does nothing, as in the parts (part_alloc): every scheme's cost is
	 * measured against this, so all of its own dispatch below is in its figure. */
	if (cfg.scheme == SCHEME_NONE && !cfg.count && !cfg.timing)
		return;
	struct thread_stats *st = my_stats();
	uintptr_t a = (uintptr_t)p;
	/* Every scheme decides on the usable size, and the exact accounting needs it; NONE in a
	 * cost run (SAMPLER_COUNT=0) does not, so variant - NONE includes this call. */
	uint64_t u = cfg.count || cfg.scheme != SCHEME_NONE ? block_usable(p) : 0;

	if (cfg.count) {
		cadd(st, C_CALLS + call, 1);
		cadd(st, C_ALLOCATIONS, 1);
		cadd(st, C_REQUESTED_BYTES, requested);
		cadd(st, C_ALLOCATED_BYTES, u);
	}
	switch (cfg.scheme) {
	case SCHEME_NONE:
		DECIDE(st, S_NONE, PATH_MALLOC, (void)0);
		break;
	case SCHEME_POISSON:
		DECIDE(st, S_POISSON, PATH_MALLOC, poisson_malloc(st, a, u));
		break;
	case SCHEME_HASH:
		DECIDE(st, S_HASH, PATH_MALLOC, hash_malloc(st, a, u));
		break;
	case SCHEME_COMBINED:
		DECIDE(st, S_POISSON, PATH_MALLOC, poisson_malloc(st, a, u));
		DECIDE(st, S_HASH, PATH_MALLOC, hash_malloc(st, a, u));
		break;
	case SCHEME_POISSON_TAGGED:
		DECIDE(st, S_POISSON, PATH_MALLOC, poisson_tagged_malloc(st, p, u));
		break;
	}
}

/* What freeing a block undid, so that a failed realloc can put it back. */
struct freed {
	uint64_t u;
	uint64_t poisson_u; /* 0: was not a Poisson sample */
	bool hash;
};

/* Before the real free: once libc has the block, another thread may get the same address. */
static inline struct freed record_free(void *p, enum call call)
{
	if (unlikely(cfg.part != PART_SHIPPED)) {
		part_free(p);
		return (struct freed){ 0 };
	}
	if (cfg.scheme == SCHEME_NONE && !cfg.count && !cfg.timing)
		return (struct freed){ 0 };
	struct thread_stats *st = my_stats();
	uintptr_t a = (uintptr_t)p;
	/* Only the hash needs the size on free (it recomputes its decision); Poisson gets it from
	 * its table or its tag, NONE needs nothing unless it counts. */
	bool size_needed = cfg.count || cfg.scheme == SCHEME_HASH || cfg.scheme == SCHEME_COMBINED;
	struct freed f = { .u = size_needed ? block_usable(p) : 0 };

	if (cfg.count) {
		cadd(st, C_CALLS + call, call == CALL_FREE);
		cadd(st, C_FREES, 1);
		cadd(st, C_FREED_BYTES, f.u);
	}
	switch (cfg.scheme) {
	case SCHEME_NONE:
		DECIDE(st, S_NONE, PATH_FREE, (void)0);
		break;
	case SCHEME_POISSON:
		DECIDE(st, S_POISSON, PATH_FREE, f.poisson_u = poisson_free(st, a));
		break;
	case SCHEME_HASH:
		DECIDE(st, S_HASH, PATH_FREE, f.hash = hash_free(st, a, f.u));
		break;
	case SCHEME_COMBINED:
		DECIDE(st, S_POISSON, PATH_FREE, f.poisson_u = poisson_free(st, a));
		DECIDE(st, S_HASH, PATH_FREE, f.hash = hash_free(st, a, f.u));
		break;
	case SCHEME_POISSON_TAGGED:
		DECIDE(st, S_POISSON, PATH_FREE, poisson_tagged_free(st, p));
		break;
	}
	return f;
}

/* realloc failed: the old block is still the program's. */
static void undo_free(void *p, const struct freed *f)
{
	struct thread_stats *st = my_stats();

	cadd(st, C_FREES, (uint64_t)-1);
	cadd(st, C_FREED_BYTES, (uint64_t)0 - f->u);
	if (f->poisson_u) {
		cadd(st, SC(S_POISSON, SC_SAMPLED_FREES), (uint64_t)-1);
		if (live_insert(&live, (uintptr_t)p, f->poisson_u))
			dadd(st, SD(S_POISSON, D_EST_LIVE),
			     poisson_weighted_bytes(f->poisson_u, cfg.mean_d));
	}
	if (f->hash) {
		cadd(st, SC(S_HASH, SC_SAMPLED_FREES), (uint64_t)-1);
		dadd(st, SD(S_HASH, D_EST_LIVE), hash_weighted_bytes(f->u, &cfg.hp));
	}
}

/* ---- the interposed functions ------------------------------------------------------------ */

EXPORT void *malloc(size_t n)
{
	if (unlikely(!ready()))
		return bootstrap_alloc(n, 16);
	if (unlikely(ts.guard))
		return real_malloc(n);
	void *p = cfg.header ? header_wrap(real_malloc(plus(n, HDR_BYTES)), HDR_BYTES)
			     : real_malloc(n);
	if (likely(p != NULL))
		record_alloc(p, n, CALL_MALLOC);
	return p;
}

EXPORT void free(void *p)
{
	if (unlikely(p == NULL) || unlikely(is_bootstrap(p)))
		return; /* bootstrap blocks were never libc's */
	if (unlikely(!ready()))
		return;
	if (cfg.header && !ts.guard) {
		if (unlikely(!header_owned(p))) {
			real_free(p); /* passed through uncounted when it was allocated */
			return;
		}
		record_free(p, CALL_FREE);
		void *base = header_base(p);
		header_of(p)->check = 0; /* a stale check word must never vouch for another block */
		real_free(base);
		return;
	}
	if (likely(!ts.guard))
		record_free(p, CALL_FREE);
	real_free(p);
}

/* The header layout for aligned blocks: the header sits just below the aligned address. */
static void *header_aligned(size_t align, size_t n)
{
	size_t a = align < HDR_BYTES ? HDR_BYTES : align;

	if (a & (a - 1)) {
		errno = EINVAL;
		return NULL;
	}
	return header_wrap(real_memalign(a, plus(n, a)), a);
}

EXPORT void *calloc(size_t n, size_t size)
{
	if (unlikely(!ready())) {
		size_t total;
		if (__builtin_mul_overflow(n, size, &total)) {
			errno = ENOMEM;
			return NULL;
		}
		return bootstrap_alloc(total, 16);
	}
	if (unlikely(ts.guard))
		return real_calloc(n, size);
	void *p;
	if (cfg.header) {
		size_t total;
		if (__builtin_mul_overflow(n, size, &total)) {
			errno = ENOMEM;
			return NULL;
		}
		p = header_wrap(real_calloc(1, plus(total, HDR_BYTES)), HDR_BYTES);
	} else {
		p = real_calloc(n, size);
	}
	if (likely(p != NULL))
		record_alloc(p, n * size, CALL_CALLOC);
	return p;
}

static void *realloc_bootstrap(void *old, size_t n)
{
	size_t have = bootstrap_size(old);
	void *p = malloc(n);

	if (p)
		memcpy(p, old, have < n ? have : n);
	return p;
}

EXPORT void *realloc(void *old, size_t n)
{
	if (old == NULL) {
		if (unlikely(!ready()))
			return bootstrap_alloc(n, 16);
		if (cfg.header && !ts.guard)
			return malloc(n);
		void *p = real_realloc(NULL, n);
		if (likely(p != NULL) && likely(!ts.guard))
			record_alloc(p, n, CALL_REALLOC);
		return p;
	}
	if (unlikely(is_bootstrap(old)))
		return realloc_bootstrap(old, n);
	if (unlikely(!ready()) || unlikely(ts.guard))
		return real_realloc(old, n);
	if (cfg.header && header_owned(old)) {
		/* Move to a new block: simple, and the old one is untouched if that fails. */
		uint64_t have = block_usable(old);
		void *p = malloc(n);
		if (p) {
			memcpy(p, old, have < n ? have : n);
			free(old);
		}
		return p;
	}
	if (cfg.header)
		return real_realloc(old, n); /* a block that passed through uncounted */
	struct freed f = record_free(old, CALL_REALLOC);
	void *p = real_realloc(old, n);
	if (p)
		record_alloc(p, n, CALL_REALLOC);
	else if (n != 0) /* failed: old is untouched (n == 0: glibc freed it) */
		undo_free(old, &f);
	return p;
}

EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(old, total);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (unlikely(!ready())) {
		void *p = bootstrap_alloc(n, align);
		if (!p)
			return ENOMEM;
		*out = p;
		return 0;
	}
	if (cfg.header && !ts.guard) {
		if (align % sizeof(void *) || (align & (align - 1)))
			return EINVAL;
		void *p = header_aligned(align, n);
		if (!p)
			return ENOMEM;
		*out = p;
		record_alloc(p, n, CALL_ALIGNED);
		return 0;
	}
	int err = real_posix_memalign(out, align, n);
	if (err == 0 && likely(!ts.guard))
		record_alloc(*out, n, CALL_ALIGNED);
	return err;
}

static inline void *aligned_result(void *p, size_t n)
{
	if (likely(p != NULL) && likely(!ts.guard))
		record_alloc(p, n, CALL_ALIGNED);
	return p;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (unlikely(!ready()))
		return bootstrap_alloc(n, align);
	if (cfg.header && !ts.guard)
		return aligned_result(header_aligned(align, n), n);
	return aligned_result(real_aligned_alloc(align, n), n);
}

EXPORT void *memalign(size_t align, size_t n)
{
	if (unlikely(!ready()))
		return bootstrap_alloc(n, align);
	if (cfg.header && !ts.guard)
		return aligned_result(header_aligned(align, n), n);
	return aligned_result(real_memalign(align, n), n);
}

EXPORT void *valloc(size_t n)
{
	if (unlikely(!ready()))
		return bootstrap_alloc(n, 4096);
	if (cfg.header && !ts.guard)
		return aligned_result(header_aligned(4096, n), n);
	return aligned_result(real_valloc(n), n);
}

EXPORT void *pvalloc(size_t n)
{
	if (unlikely(!ready()))
		return bootstrap_alloc(n, 4096);
	if (cfg.header && !ts.guard)
		return aligned_result(header_aligned(4096, (plus(n, 4095) / 4096) * 4096), n);
	return aligned_result(real_pvalloc(n), n);
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (p == NULL)
		return 0;
	if (is_bootstrap(p))
		return bootstrap_size(p);
	if (unlikely(!ready()))
		return 0;
	return block_usable(p);
}

/*
 * A cost run's switch (SAMPLER_REFERENCE): between runs of a workload, never while another
 * thread allocates. The estimates of such a run mean nothing (a block sampled under one scheme
 * may be freed under the other): it is for timing only, with SAMPLER_COUNT=0.
 */
EXPORT void bakeoff_sampler_use_reference(int on)
{
	if (!ready())
		return;
	cfg.scheme = on ? cfg.reference : cfg.main_scheme;
	cfg.part = PART_SHIPPED;
	atomic_thread_fence(memory_order_release); /* threads started later see it */
}

/*
 * The cost decomposition's switch, between runs like the one above (part_alloc, part_free):
 * 0 the main scheme as the sampler ships it, 1 the reference as shipped, 2 the main scheme's
 * decision alone (on the class of the request; free() does nothing), 3 the decision and the
 * live-heap tracking, 4 the reference through the same lean dispatch as 2 and 3 (what they
 * are measured against). Returns 0, or -1 when counting (SAMPLER_COUNT=1: the counts need
 * the usable size) or for a part it does not know.
 */
EXPORT int bakeoff_sampler_use_part(int part)
{
	if (!ready() || cfg.count || part < 0 || part > 4)
		return -1;
	cfg.scheme = part == 1 || part == 4 ? cfg.reference : cfg.main_scheme;
	cfg.part = part == 2 || part == 4 ? PART_DECIDE : part == 3 ? PART_TRACK : PART_SHIPPED;
	atomic_thread_fence(memory_order_release);
	return 0;
}

/* ---- the summary ------------------------------------------------------------------------- */

static void stats_sum(struct stats_sum *out)
{
	memset(out, 0, sizeof(*out));
	spin_lock(&slots_lock);
	for (int s = -1; s < n_slots_made; s++) {
		struct thread_stats *st = s < 0 ? &shared : &slots[s];
		if (s >= 0 && !slot_used[s])
			continue; /* folded into shared when its thread exited */
		for (int i = 0; i < N_COUNTERS; i++)
			out->c[i] += atomic_load_explicit(&st->c[i], memory_order_relaxed);
		for (int i = 0; i < N_DOUBLES; i++)
			out->d[i] += atomic_load_explicit(&st->d[i], memory_order_relaxed);
	}
	spin_unlock(&slots_lock);
}

struct json {
	char buf[16384];
	size_t len;
};

static void json_raw(struct json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void json_raw(struct json *j, const char *fmt, ...)
{
	va_list ap;

	if (j->len >= sizeof(j->buf))
		return;
	va_start(ap, fmt);
	int n = vsnprintf(j->buf + j->len, sizeof(j->buf) - j->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		j->len += (size_t)n;
}

static void json_u64(struct json *j, const char *key, uint64_t v)
{
	json_raw(j, ",\"%s\":%llu", key, (unsigned long long)v);
}

static void json_num(struct json *j, const char *key, double v)
{
	if (isfinite(v))
		json_raw(j, ",\"%s\":%.17g", key, v);
}

static void json_scheme_estimates(struct json *j, const struct stats_sum *t, enum slot_scheme s,
				  uint64_t true_total, uint64_t true_live)
{
	char key[64];
	double est_total = t->d[SD(s, D_EST_TOTAL)], est_live = t->d[SD(s, D_EST_LIVE)];
	const char *p = slot_prefix[s];

#define KEY(what) (snprintf(key, sizeof(key), "%s_%s", p, what), key)
	json_u64(j, KEY("samples"), t->c[SC(s, SC_SAMPLES)]);
	json_u64(j, KEY("sampled_bytes"), t->c[SC(s, SC_SAMPLED_BYTES)]);
	json_u64(j, KEY("sampled_frees"), t->c[SC(s, SC_SAMPLED_FREES)]);
	if (s == S_POISSON)
		json_u64(j, KEY("table_lookups"), t->c[SC(s, SC_TABLE_LOOKUPS)]);
	json_num(j, KEY("est_total_bytes"), est_total);
	json_num(j, KEY("est_live_bytes"), est_live);
	if (true_total)
		json_num(j, KEY("total_error_pct"), (est_total - (double)true_total) /
							    (double)true_total * 100.0);
	if (true_live)
		json_num(j, KEY("live_error_pct"), (est_live - (double)true_live) /
							   (double)true_live * 100.0);
	/* Independent decisions behind the estimate: every Poisson sample is a fresh draw; the
	 * hash's repeats of one (address, size) pair are one decision (counted when SAMPLER_COUNT). */
	json_u64(j, KEY("independent_decisions"),
		 s == S_HASH ? live_count(&hash_seen) : t->c[SC(s, SC_SAMPLES)]);
	if (s == S_POISSON) {
		json_u64(j, KEY("live_table_entries"), live_count(&live));
		json_u64(j, KEY("live_table_insert_failures"), atomic_load(&live.insert_failures));
	}
#undef KEY
}

/* Ticks per ns, measured over the life of the process (at least TSC_RATE_MIN_NS). */
static double tsc_ghz(void)
{
	uint64_t ns1;

	while ((ns1 = mono_ns()) - cfg.ns0 < TSC_RATE_MIN_NS)
		;
	uint64_t t1 = tsc_start();
	return (double)(t1 - cfg.tsc0) / (double)(ns1 - cfg.ns0);
}

static void json_scheme_timing(struct json *j, const struct stats_sum *t, enum slot_scheme s,
			       double ghz)
{
	char key[80];

	for (int p = 0; p < N_PATHS; p++) {
		uint64_t n = t->c[SC(s, SC_DECISIONS + p)];
		double raw = n ? (double)t->c[SC(s, SC_TICKS + p)] / (double)n : 0.0;
		double floor = n ? (double)t->c[SC(s, SC_FLOOR_TICKS + p)] / (double)n : 0.0;
		double net = raw - floor;

#define KEY(what) (snprintf(key, sizeof(key), "%s_%s_%s", slot_prefix[s], path_names[p], what), key)
		json_u64(j, KEY("decisions"), n);
		json_u64(j, KEY("outliers"), t->c[SC(s, SC_OUTLIERS + p)]);
		if (n) {
			json_num(j, KEY("raw_ticks_per_decision"), raw);
			json_num(j, KEY("floor_ticks_per_decision"), floor);
			json_num(j, KEY("ticks_per_decision"), net);
			/* The standard error of that mean, from the pairs' own scatter: what a
			 * reader (and a test) needs to tell a cost from the noise of a busy CPU. */
			double sq = (double)t->c[SC(s, SC_NET_SQUARES + p)] / (double)n;
			json_num(j, KEY("ticks_per_decision_se"),
				 sqrt(fmax(0.0, sq - net * net) / (double)n));
			json_num(j, KEY("ns_per_decision"), net / ghz);
		}
#undef KEY
	}
}

static void build_summary(struct json *j)
{
	struct stats_sum t;

	stats_sum(&t);
	uint64_t live_bytes = t.c[C_ALLOCATED_BYTES] - t.c[C_FREED_BYTES];
	json_raw(j, "{\"sampler\":\"libbakeoff_sampler\",\"format\":1,\"pid\":%d,\"scheme\":\"%s\"",
		 (int)getpid(), scheme_names[cfg.scheme]);
	json_u64(j, "mean_bytes", cfg.mean);
	json_u64(j, "hash_mean_bytes", cfg.hash_mean);
	json_u64(j, "timing", cfg.timing);
	json_u64(j, "count", cfg.count);
	json_u64(j, "header", cfg.header);
	json_u64(j, "allocations", t.c[C_ALLOCATIONS]);
	json_u64(j, "frees", t.c[C_FREES]);
	json_u64(j, "requested_bytes", t.c[C_REQUESTED_BYTES]);
	json_u64(j, "allocated_bytes", t.c[C_ALLOCATED_BYTES]);
	json_u64(j, "freed_bytes", t.c[C_FREED_BYTES]);
	json_u64(j, "live_bytes", live_bytes);
	json_u64(j, "live_blocks", t.c[C_ALLOCATIONS] - t.c[C_FREES]);
	for (int c = 0; c < N_CALLS; c++) {
		char key[32];
		snprintf(key, sizeof(key), "%s_calls", call_names[c]);
		json_u64(j, key, t.c[C_CALLS + c]);
	}
	if (!cfg.count) /* a cost run: the true values are unknown, so are the errors */
		live_bytes = t.c[C_ALLOCATED_BYTES] = 0;
	if (cfg.scheme == SCHEME_POISSON || cfg.scheme == SCHEME_COMBINED ||
	    cfg.scheme == SCHEME_POISSON_TAGGED)
		json_scheme_estimates(j, &t, S_POISSON, t.c[C_ALLOCATED_BYTES], live_bytes);
	if (cfg.scheme == SCHEME_HASH || cfg.scheme == SCHEME_COMBINED)
		json_scheme_estimates(j, &t, S_HASH, t.c[C_ALLOCATED_BYTES], live_bytes);
	if (cfg.timing) {
		double ghz = tsc_ghz();
		json_raw(j, ",\"timing_method\":\"rdtsc/rdtscp pair around each decision, an empty "
			    "pair just before it; ticks_per_decision = mean(raw) - mean(empty pair); "
			    "timer_floor_ticks: median of %d empty pairs in a tight loop at start, for "
			    "comparison\"",
			 TSC_FLOOR_PAIRS);
		json_num(j, "tsc_ghz", ghz);
		json_u64(j, "timer_floor_ticks", cfg.floor_ticks);
		json_u64(j, "outlier_ticks_threshold", TICKS_OUTLIER);
		if (cfg.scheme == SCHEME_NONE)
			json_scheme_timing(j, &t, S_NONE, ghz);
		if (cfg.scheme == SCHEME_POISSON || cfg.scheme == SCHEME_COMBINED ||
		    cfg.scheme == SCHEME_POISSON_TAGGED)
			json_scheme_timing(j, &t, S_POISSON, ghz);
		if (cfg.scheme == SCHEME_HASH || cfg.scheme == SCHEME_COMBINED)
			json_scheme_timing(j, &t, S_HASH, ghz);
	}
	json_raw(j, "}\n");
}

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* The output path with the first %p replaced by the pid. */
static void output_path(char *out, size_t n)
{
	const char *pp = strstr(cfg.output, "%p");

	if (!pp) {
		snprintf(out, n, "%s", cfg.output);
		return;
	}
	snprintf(out, n, "%.*s%d%s", (int)(pp - cfg.output), cfg.output, (int)getpid(), pp + 2);
}

/*
 * O_NOFOLLOW: a symbolic link planted at the path (in /tmp, say) must not make us truncate
 * the file it points to. Anything but a regular file is refused too (a FIFO would block).
 */
static bool write_summary_file(const struct json *j)
{
	char path[PATH_MAX];
	struct stat sb;

	output_path(path, sizeof(path));
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
	if (fd < 0) {
		if (errno == ELOOP)
			say("warning: SAMPLER_OUTPUT %s is a symbolic link; not following it, the "
			    "summary goes to stderr", path);
		else
			say("warning: cannot open SAMPLER_OUTPUT %s: %s; the summary goes to stderr",
			    path, strerror(errno));
		return false;
	}
	bool ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
	if (!ok)
		say("warning: SAMPLER_OUTPUT %s is not a regular file; the summary goes to stderr",
		    path);
	else if (ftruncate(fd, 0) != 0 || !write_all(fd, j->buf, j->len)) {
		say("warning: cannot write SAMPLER_OUTPUT %s: %s; the summary goes to stderr", path,
		    strerror(errno));
		ok = false;
	}
	close(fd);
	return ok;
}

static struct json summary; /* static: 16 KiB is too much for some threads' stacks */

__attribute__((destructor)) static void sampler_exit(void)
{
	if (atomic_load(&init_state) != INIT_READY || (!cfg.root && !cfg.per_pid))
		return;
	ts.guard++;
	summary.len = 0;
	build_summary(&summary);
	if (cfg.output[0] && write_summary_file(&summary))
		goto out;
	char prefix[] = "libbakeoff_sampler: summary ";
	if (write_all(STDERR_FILENO, prefix, sizeof(prefix) - 1))
		write_all(STDERR_FILENO, summary.buf, summary.len);
out:
	ts.guard--;
}

__attribute__((constructor)) static void sampler_start(void)
{
	(void)ready();
}
