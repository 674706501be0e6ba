/*
 * heap_bench - one trial of heap-sampling: what sampling allocations costs, and how well the
 * samples estimate the heap, for the Poisson and the stateless-hash schemes.
 *
 *   heap_bench --variant poisson --param workload=mode1 --param mean=4096 --param scale=0.1
 *
 * Two kinds of workload (METHOD.md has the details):
 * - micro-64, micro-4096: the decision micro-benchmark, in this process, no real malloc. The
 *   decision code is sampler_schemes.h, the same the sampler runs. Timed in calibrated
 *   batches of malloc-path decisions and of free-path decisions over a heap-like stream of
 *   addresses of one size.
 * - mode1..mode4: a driver. It runs alloc_patterns (built beside this program) as child
 *   processes: under the variant's scheme, under SAMPLER_SCHEME=NONE (the paired reference,
 *   for the overhead over forwarding), and once more with SAMPLER_TIMING=1 for the per-decision
 *   cost. Each child is a fresh process (fresh ASLR, fresh PRNG). The workload's own samples
 *   (ns_per_alloc) are passed on; the sampler's summary (SAMPLER_OUTPUT, in a private temp
 *   directory) becomes the estimation errors and the decision costs.
 *
 * Metrics (one JSON line each on stdout, see DESIGN.md):
 *   ns_per_alloc                       per allocation (its free included); micro: the
 *                                      decisions for one allocation (malloc + free path)
 *   overhead_vs_none_ns                variant minus the NONE reference, same trial (1/trial)
 *   ticks_per_decision_{malloc,free}   TSC ticks per decision (micro: batch/k; modes: timed
 *                                      run, the timer floor subtracted)
 *   ns_per_decision_{malloc,free}
 *   poisson_over_hash                  combined only: Poisson's decision ticks over the hash's,
 *                                      same stream, same process (the seed's speed-up)
 *   {poisson,hash}_{total,live}_error_pct  signed estimation error (modes only, 1/trial)
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampler_schemes.h"

enum variant { V_NO_PRELOAD, V_NONE, V_POISSON, V_HASH, V_COMBINED };

/* Same order as enum variant. */
static const struct bench_variant variants[] = {
	{ "no-preload", "baseline: the workload alone (micro: the loop with an empty decision)" },
	{ "none", "sampler preloaded with SAMPLER_SCHEME=NONE: forwarding and exact counting" },
	{ "poisson", "SAMPLER_SCHEME=POISSON: byte counter with exponential gaps, live table" },
	{ "stateless-hash", "SAMPLER_SCHEME=STATELESS_HASH: hash(address) < threshold(size)" },
	{ "combined", "SAMPLER_SCHEME=COMBINED: both schemes on the same allocation stream" },
	{ NULL, NULL },
};

static const struct bench_param params[] = {
	{ "workload", true, NULL, "micro-64 | micro-4096 | mode1 | mode2 | mode3 | mode4" },
	{ "mean", false, "4096", "mean bytes between samples (SAMPLER_POISSON_MEAN_BYTES)" },
	{ "scale", false, "1", "modes: fraction of the seed's allocation count (1 = the seed's)" },
	{ NULL, false, NULL, NULL },
};

static const struct bench_spec spec = {
	"Heap sampling: cost per allocation and per decision, and estimation error, of Poisson "
	"and\nstateless-hash sampling (micro-benchmark in-process; modes via alloc_patterns).",
	variants,
	params,
};

/* The schemes as the sampler names them; EMPTY is the micro-benchmark's no-preload. */
enum scheme { S_EMPTY, S_NONE, S_POISSON, S_HASH };
static const char *const env_scheme[] = { NULL, "NONE", "POISSON", "STATELESS_HASH",
					  "COMBINED" };

static struct bench_args args;
static enum variant variant;
static uint64_t mean;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, size_t n)
{
	double *c = malloc(n * sizeof(double));

	if (!c)
		bench_fatal_errno("failed to allocate %zu values", n);
	memcpy(c, v, n * sizeof(double));
	qsort(c, n, sizeof(double), cmp_double);
	double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2.0;
	free(c);
	return m;
}

/* ==== the decision micro-benchmark ========================================================== */

#define MICRO_K_MIN 4096
#define MICRO_K_MAX 65536

struct micro {
	uintptr_t *addr; /* the stream: k heap-like addresses of blocks of `size` */
	size_t k;
	uint64_t size;
	double mean;
	struct hash_params hp;
	struct poisson_state ps;
	struct live_table *live;
	/* What the decisions produce, so none of them is dead code. */
	uint64_t samples[4];
	double est_total[4], est_live[4];
};

static struct live_table micro_live;

/* noinline with an empty asm: one call per decision, as in the sampler where every decision
 * sits in its own malloc() call; the compiler can neither delete the loop nor vectorise the
 * hashes of consecutive addresses, which a real allocation stream never allows. */
static __attribute__((noinline)) void decide_empty(struct micro *m, uintptr_t a)
{
	__asm__ __volatile__("" : : "r"(m), "r"(a) : "memory");
}

static __attribute__((noinline)) void decide_malloc(struct micro *m, enum scheme s, uintptr_t a)
{
	uint64_t u = m->size;
	double w;

	switch (s) {
	case S_EMPTY:
	case S_NONE:
		break;
	case S_POISSON:
		if (likely(!poisson_sampled(&m->ps, u, m->mean)))
			break;
		w = poisson_weighted_bytes(u, m->mean);
		m->samples[s]++;
		m->est_total[s] += w;
		if (live_insert(m->live, a, u))
			m->est_live[s] += w;
		break;
	case S_HASH:
		if (likely(!hash_sampled(a, u, &m->hp)))
			break;
		w = hash_weighted_bytes(u, &m->hp);
		m->samples[s]++;
		m->est_total[s] += w;
		m->est_live[s] += w;
		break;
	}
	__asm__ __volatile__("" : : "r"(m) : "memory");
}

static __attribute__((noinline)) void decide_free(struct micro *m, enum scheme s, uintptr_t a)
{
	uint64_t u = m->size, found;

	switch (s) {
	case S_EMPTY:
	case S_NONE:
		break;
	case S_POISSON:
		if (likely(!live_remove(m->live, a, &found)))
			break;
		m->est_live[s] -= poisson_weighted_bytes(found, m->mean);
		break;
	case S_HASH:
		if (likely(!hash_sampled(a, u, &m->hp)))
			break;
		m->est_live[s] -= hash_weighted_bytes(u, &m->hp);
		break;
	}
	__asm__ __volatile__("" : : "r"(m) : "memory");
}

struct batch_time {
	uint64_t ns, ticks;
};

static struct batch_time micro_batch(struct micro *m, enum scheme s, bool free_path)
{
	uint64_t n0 = bench_now_ns(), t0 = tsc_start();

	if (s == S_EMPTY)
		for (size_t i = 0; i < m->k; i++)
			decide_empty(m, m->addr[i]);
	else if (free_path)
		for (size_t i = 0; i < m->k; i++)
			decide_free(m, s, m->addr[i]);
	else
		for (size_t i = 0; i < m->k; i++)
			decide_malloc(m, s, m->addr[i]);
	uint64_t t1 = tsc_stop(), n1 = bench_now_ns();
	return (struct batch_time){ n1 - n0, t1 - t0 };
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
	if (!m->addr)
		bench_fatal_errno("failed to allocate the address stream");
	for (size_t i = 0; i < m->k; i++)
		m->addr[i] = base + i * chunk;
}

/* The schemes a variant runs, and the NONE reference it is compared with (if any). */
static size_t micro_schemes(enum scheme *out)
{
	switch (variant) {
	case V_NO_PRELOAD:
		out[0] = S_EMPTY;
		return 1;
	case V_NONE:
		out[0] = S_NONE;
		return 1;
	case V_POISSON:
		out[0] = S_POISSON;
		return 1;
	case V_HASH:
		out[0] = S_HASH;
		return 1;
	case V_COMBINED:
		out[0] = S_POISSON;
		out[1] = S_HASH;
		return 2;
	}
	return 0;
}

/* k decisions per batch: long enough that the timer is < 0.1% of it (bench.h), short enough
 * that the stream stays a realistic working set. */
static size_t micro_batch_size(struct micro *m, const enum scheme *schemes, size_t n)
{
	m->k = MICRO_K_MIN;
	micro_batch(m, schemes[0], false); /* warm the code, the table and the stream */
	micro_batch(m, schemes[0], true);
	struct batch_time a = micro_batch(m, schemes[0], false);
	struct batch_time b = micro_batch(m, schemes[0], true);
	double per_op = (double)(a.ns + b.ns) / (2.0 * (double)m->k) * (double)n;
	uint64_t k = bench_batch_size(per_op);
	return k < MICRO_K_MIN ? MICRO_K_MIN : k > MICRO_K_MAX ? MICRO_K_MAX : k;
}

static void run_micro(uint64_t size)
{
	enum scheme schemes[2];
	size_t nschemes = micro_schemes(schemes);
	bool paired = variant >= V_POISSON;
	struct micro m = { .size = size, .mean = (double)mean, .hp = hash_params_make(mean),
			   .live = &micro_live };

	live_init(&micro_live);
	poisson_seed(&m.ps, tsc_start() ^ (uint64_t)getpid(), m.mean);
	m.k = MICRO_K_MAX;
	micro_stream(&m);
	m.k = micro_batch_size(&m, schemes, nschemes);

	bench_meta_begin();
	bench_meta_str("variant", args.variant);
	bench_meta_str("workload", size == 64 ? "micro-64" : "micro-4096");
	bench_meta_num("mean", (double)mean);
	bench_meta_num("batch", (double)m.k);
	bench_meta_str("timing", "batches: k malloc-path decisions, then k free-path decisions, "
				 "each between one pair of timer reads (no floor subtracted)");
	bench_meta_num("timer_floor_ticks", (double)tsc_floor_ticks(20001));
	bench_meta_end();

	uint64_t total = args.warmup + args.samples;
	double *mine = calloc(total, sizeof(double)), *ref = calloc(total, sizeof(double));
	if (!mine || !ref)
		bench_fatal_errno("failed to allocate sample arrays");
	for (uint64_t i = 0; i < total; i++) {
		struct batch_time path[2][2] = { 0 }; /* [scheme][malloc, free] */
		struct batch_time none[2] = { 0 };
		bool ref_first = i % 2; /* alternate, so drift hits both alike */

		if (paired && ref_first)
			none[0] = micro_batch(&m, S_NONE, false), none[1] = micro_batch(&m, S_NONE, true);
		for (size_t s = 0; s < nschemes; s++) {
			path[s][0] = micro_batch(&m, schemes[s], false);
			path[s][1] = micro_batch(&m, schemes[s], true);
		}
		if (paired && !ref_first)
			none[0] = micro_batch(&m, S_NONE, false), none[1] = micro_batch(&m, S_NONE, true);

		double k = (double)m.k, ns[2] = { 0, 0 }, ticks[2] = { 0, 0 };
		for (size_t s = 0; s < nschemes; s++)
			for (int p = 0; p < 2; p++)
				ns[p] += (double)path[s][p].ns, ticks[p] += (double)path[s][p].ticks;
		mine[i] = (ns[0] + ns[1]) / k;
		ref[i] = (double)(none[0].ns + none[1].ns) / k;
		if (i < args.warmup)
			continue;
		bench_emit_sample("ns_per_alloc", mine[i]);
		bench_emit_sample("ns_per_decision_malloc", ns[0] / k);
		bench_emit_sample("ns_per_decision_free", ns[1] / k);
		bench_emit_sample("ticks_per_decision_malloc", ticks[0] / k);
		bench_emit_sample("ticks_per_decision_free", ticks[1] / k);
		if (variant == V_COMBINED)
			bench_emit_sample("poisson_over_hash",
					  (double)(path[0][0].ticks + path[0][1].ticks) /
						  (double)(path[1][0].ticks + path[1][1].ticks));
	}
	if (paired)
		bench_emit_sample("overhead_vs_none_ns",
				  median(mine + args.warmup, args.samples) -
					  median(ref + args.warmup, args.samples));
	for (size_t s = 0; s < nschemes; s++) {
		const char *name = schemes[s] == S_POISSON ? "poisson_samples" : schemes[s] == S_HASH
				   ? "hash_samples" : "samples";
		bench_emit_counter(name, (double)m.samples[schemes[s]]);
	}
	bench_emit_counter("decisions_per_sample", 2.0 * (double)m.k * (double)nschemes);
	free(mine);
	free(ref);
	free(m.addr);
}

/* ==== the driver for the allocation patterns =============================================== */

/* Everything a SIGTERM must undo: set before it exists, cleared once it is gone. */
static volatile pid_t child_pid;
static char tmp_dir[PATH_MAX];
static char summary_path[PATH_MAX];

static void on_stop_signal(int sig)
{
	/* Only async-signal-safe calls: the harness stops a trial with SIGTERM and wants it gone
	 * quickly, with nothing left behind. */
	if (child_pid > 0)
		kill(child_pid, SIGKILL);
	if (summary_path[0])
		unlink(summary_path);
	if (tmp_dir[0])
		rmdir(tmp_dir);
	_exit(128 + sig);
}

static void install_stop_handlers(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

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
	if (snprintf(summary_path, sizeof(summary_path), "%s/summary.json", tmp_dir) >=
	    (int)sizeof(summary_path))
		bench_fatal("failed to name the summary file: TMPDIR is too long");
	block_stop_signals(false);
}

static void remove_tmp_dir(void)
{
	block_stop_signals(true);
	unlink(summary_path);
	rmdir(tmp_dir);
	summary_path[0] = tmp_dir[0] = '\0';
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
	double *samples;
	size_t nsamples;
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

static void parse_child_stdout(char *text, struct child_out *out)
{
	size_t cap = 16;

	out->samples = malloc(cap * sizeof(double));
	if (!out->samples)
		bench_fatal_errno("failed to allocate samples");
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		double v, value;
		if (strstr(line, "\"type\":\"sample\"") && json_number(line, "value", &v)) {
			if (out->nsamples == cap &&
			    !(out->samples = realloc(out->samples, (cap *= 2) * sizeof(double))))
				bench_fatal_errno("failed to grow samples");
			out->samples[out->nsamples++] = v;
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
	if (out->nsamples != args.samples)
		bench_fatal("failed to get %" PRIu64 " samples from alloc_patterns (got %zu)",
			    args.samples, out->nsamples);
}

static char *read_summary(void)
{
	int fd = open(summary_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		bench_fatal_errno("failed to read the sampler's summary %s", summary_path);
	char *s = read_fd_all(fd);
	close(fd);
	unlink(summary_path);
	return s;
}

static const char *preload_path(void)
{
	static char path[PATH_MAX];

	if (!path[0])
		sibling(path, sizeof(path), "libbakeoff_sampler.so");
	return path;
}

/* Our environment without anything that could change what the child measures. */
static char **child_env(const char *scheme, bool timing)
{
	extern char **environ;
	size_t n = 0;

	while (environ[n])
		n++;
	char **env = calloc(n + 8, sizeof(char *));
	size_t k = 0;
	if (!env)
		bench_fatal_errno("failed to allocate the environment");
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "SAMPLER_", 8) && strncmp(environ[i], "LD_PRELOAD=", 11) &&
		    strncmp(environ[i], "MALLOC_", 7) && strncmp(environ[i], "GLIBC_TUNABLES=", 15))
			env[k++] = environ[i];
	if (scheme) {
		char *v[5];
		if (asprintf(&v[0], "LD_PRELOAD=%s", preload_path()) < 0 ||
		    asprintf(&v[1], "SAMPLER_SCHEME=%s", scheme) < 0 ||
		    asprintf(&v[2], "SAMPLER_POISSON_MEAN_BYTES=%" PRIu64, mean) < 0 ||
		    asprintf(&v[3], "SAMPLER_TIMING=%d", timing) < 0 ||
		    asprintf(&v[4], "SAMPLER_OUTPUT=%s", summary_path) < 0)
			bench_fatal_errno("failed to build the environment");
		for (int i = 0; i < 5; i++)
			env[k++] = v[i];
	}
	env[k] = NULL;
	return env;
}

/* Runs alloc_patterns under `scheme` (NULL: no preload) and collects what it printed. */
static struct child_out run_workload(const struct workload_args *w, const char *scheme,
				     bool timing)
{
	static char program[PATH_MAX];
	char samples[32], warmup[32];
	char *argv[24];
	int argc = 0, fds[2];

	if (!program[0])
		sibling(program, sizeof(program), "alloc_patterns");
	argv[argc++] = program;
	for (int i = 0; w->argv[i]; i++)
		argv[argc++] = w->argv[i];
	snprintf(samples, sizeof(samples), "%" PRIu64, args.samples);
	snprintf(warmup, sizeof(warmup), "%" PRIu64, args.warmup);
	argv[argc++] = "--samples";
	argv[argc++] = samples;
	argv[argc++] = "--warmup";
	argv[argc++] = warmup;
	argv[argc] = NULL;
	char **env = child_env(scheme, timing);

	if (pipe2(fds, O_CLOEXEC) != 0)
		bench_fatal_errno("failed to create a pipe");
	fflush(stdout);
	block_stop_signals(true); /* child_pid is known before a handler can run */
	pid_t pid = fork();
	if (pid < 0)
		bench_fatal_errno("failed to fork");
	if (pid == 0) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		sigaction(SIGTERM, &dfl, NULL);
		sigaction(SIGINT, &dfl, NULL);
		sigaction(SIGHUP, &dfl, NULL);
		block_stop_signals(false);
		dup2(fds[1], STDOUT_FILENO);
		execve(program, argv, env);
		_exit(127);
	}
	child_pid = pid;
	block_stop_signals(false);
	close(fds[1]);
	char *text = read_fd_all(fds[0]);
	close(fds[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			bench_fatal_errno("failed to wait for alloc_patterns");
	child_pid = 0;
	for (char **e = env; *e; e++)
		if (strncmp(*e, "SAMPLER_", 8) == 0 || strncmp(*e, "LD_PRELOAD=", 11) == 0)
			free(*e);
	free(env);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bench_fatal("failed to run alloc_patterns %s under %s: %s %d", w->text,
			    scheme ? scheme : "no preload",
			    WIFEXITED(status) ? "exit status" : "signal",
			    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));

	struct child_out out = { 0 };
	parse_child_stdout(text, &out);
	free(text);
	if (scheme)
		out.summary = read_summary();
	return out;
}

static void free_child(struct child_out *c)
{
	free(c->samples);
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
	bench_emit_counter("true_allocations", seen);
	bench_emit_counter("untracked_allocations", seen - c->allocations);
	bench_emit_counter("true_allocated_bytes",
			   json_required(c->summary, "allocated_bytes", "the summary"));
	bench_emit_counter("true_live_bytes", json_required(c->summary, "live_bytes", "the summary"));
}

/* A live estimate is only worth a relative error when the heap holds many mean gaps. */
#define LIVE_MIN_MEANS 64

static void emit_accuracy(const struct child_out *c, const char *prefix)
{
	char key[64], metric[64];
	double v, live = json_required(c->summary, "live_bytes", "the summary");

	snprintf(key, sizeof(key), "%s_total_error_pct", prefix);
	if (json_number(c->summary, key, &v))
		bench_emit_sample(key, v);
	snprintf(key, sizeof(key), "%s_live_error_pct", prefix);
	if (json_number(c->summary, key, &v) && live >= LIVE_MIN_MEANS * (double)mean)
		bench_emit_sample(key, v);
	snprintf(key, sizeof(key), "%s_samples", prefix);
	bench_emit_counter(key, json_required(c->summary, key, "the summary"));
	snprintf(metric, sizeof(metric), "%s_sampled_pct", prefix);
	bench_emit_counter(metric, 100.0 * json_required(c->summary, key, "the summary") /
					   json_required(c->summary, "allocations", "the summary"));
	if (strcmp(prefix, "poisson") == 0 &&
	    json_required(c->summary, "poisson_live_table_insert_failures", "the summary") > 0)
		bench_fatal("failed to track every Poisson sample: the live table could not grow");
}

/* Net ticks per decision of one scheme and path from a timed summary (0 if none). */
static double decision_ticks(const char *summary, const char *scheme, const char *path,
			     double *decisions)
{
	char key[80];
	double v = 0;

	snprintf(key, sizeof(key), "%s_%s_decisions", scheme, path);
	*decisions = json_required(summary, key, "the timed summary");
	snprintf(key, sizeof(key), "%s_%s_ticks_per_decision", scheme, path);
	if (*decisions > 0)
		v = json_required(summary, key, "the timed summary");
	return v;
}

static void emit_decision_costs(const char *summary)
{
	const char *schemes[2];
	int n = 0;
	double ghz = json_required(summary, "tsc_ghz", "the timed summary");
	double floor_ticks = json_required(summary, "timer_floor_ticks", "the timed summary");

	bench_emit_counter("tsc_ghz", ghz);
	bench_emit_counter("timer_floor_ticks", floor_ticks);
	if (variant == V_NONE) {
		/* An empty decision: after the floor is subtracted this should be ~0 ticks. */
		double d;
		bench_emit_counter("floor_check_malloc_ticks",
				   decision_ticks(summary, "none", "malloc", &d));
		bench_emit_counter("floor_check_free_ticks",
				   decision_ticks(summary, "none", "free", &d));
		return;
	}
	if (variant == V_POISSON || variant == V_COMBINED)
		schemes[n++] = "poisson";
	if (variant == V_HASH || variant == V_COMBINED)
		schemes[n++] = "hash";
	double per_path[2] = { 0, 0 }, total[2] = { 0, 0 };
	static const char *const paths[2] = { "malloc", "free" };
	for (int s = 0; s < n; s++) {
		for (int p = 0; p < 2; p++) {
			double d, t = decision_ticks(summary, schemes[s], paths[p], &d);
			char key[64];
			snprintf(key, sizeof(key), "%s_%s_ticks", schemes[s], paths[p]);
			bench_emit_counter(key, t);
			per_path[p] += t;
			total[s] += t * d;
		}
	}
	bench_emit_sample("ticks_per_decision_malloc", per_path[0]);
	bench_emit_sample("ticks_per_decision_free", per_path[1]);
	bench_emit_sample("ns_per_decision_malloc", per_path[0] / ghz);
	bench_emit_sample("ns_per_decision_free", per_path[1] / ghz);
	if (variant == V_COMBINED) {
		double hash_per = total[1] / (json_required(summary, "allocations", "summary") +
					      json_required(summary, "frees", "summary"));
		/* A hash decision costs about the timer floor: a ratio over a difference that
		 * small would be noise. */
		if (hash_per >= 1.0)
			bench_emit_sample("poisson_over_hash", total[0] / total[1]);
		else
			bench_emit_counter("poisson_over_hash_below_resolution", 1);
	}
}

static void run_pattern(int mode, double scale)
{
	struct workload_args w;

	workload_args(mode, scale, &w);
	install_stop_handlers();
	make_tmp_dir();
	/* Which of the two untimed runs goes first: chosen per trial, recorded. */
	bool none_first = mix64(tsc_start() ^ (uint64_t)getpid()) & 1;
	bool paired = variant >= V_POISSON;
	const char *scheme = env_scheme[variant];

	bench_meta_begin();
	bench_meta_str("variant", args.variant);
	bench_meta_str("workload", bench_param(&args, "workload"));
	bench_meta_num("mean", (double)mean);
	bench_meta_num("scale", scale);
	bench_meta_str("workload_args", w.text);
	if (paired)
		bench_meta_str("paired_order", none_first ? "none,variant" : "variant,none");
	if (scheme)
		bench_meta_str("preload", preload_path());
	bench_meta_end();

	struct child_out ref = { 0 }, mine;
	if (paired && none_first)
		ref = run_workload(&w, "NONE", false);
	mine = run_workload(&w, scheme, false);
	if (paired && !none_first)
		ref = run_workload(&w, "NONE", false);

	for (size_t i = 0; i < mine.nsamples; i++)
		bench_emit_sample("ns_per_alloc", mine.samples[i]);
	bench_emit_counter("allocations", mine.allocations);
	bench_emit_counter("frees", mine.frees);
	if (mode == 4)
		bench_emit_counter("address_reuse_pct", mine.address_reuse_pct);
	if (paired) {
		double m = median(mine.samples, mine.nsamples), r = median(ref.samples, ref.nsamples);
		bench_emit_sample("overhead_vs_none_ns", m - r);
		bench_emit_counter("overhead_vs_none_pct", (m / r - 1.0) * 100.0);
	}
	if (scheme)
		check_counts(&mine);
	if (variant == V_POISSON || variant == V_COMBINED)
		emit_accuracy(&mine, "poisson");
	if (variant == V_HASH || variant == V_COMBINED)
		emit_accuracy(&mine, "hash");
	if (scheme) {
		struct child_out timed = run_workload(&w, scheme, true);
		emit_decision_costs(timed.summary);
		free_child(&timed);
	}
	free_child(&mine);
	free_child(&ref);
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
	const char *workload = bench_param(&args, "workload");

	if (strcmp(workload, "micro-64") == 0)
		run_micro(64);
	else if (strcmp(workload, "micro-4096") == 0)
		run_micro(4096);
	else if (strncmp(workload, "mode", 4) == 0 && workload[4] >= '1' && workload[4] <= '4' &&
		 workload[5] == '\0')
		run_pattern(workload[4] - '0', scale);
	else
		bench_usage_error("--param workload=%s: use micro-64, micro-4096, mode1, mode2, mode3 "
				  "or mode4", workload);
	return 0;
}
