/*
 * cgstat - what one query of a memory cgroup's statistics costs, by how it is read (the
 * variant: cat, reopen, held, pread) and what it returns (the content param: both files in
 * full, N fields extracted from them, the out-of-tree .ks files, or a BPF cgroup iterator).
 * One trial: one variant, one content, one target; see METHOD.md for what is timed.
 *
 *   cgstat --variant held --param target=root --param content=legacy --samples 10
 *   cgstat --variant cat --param target=/sys/fs/cgroup/memory/foo --param content=bpf-iter \
 *          --param fields=16 --param reads=2000
 *
 * A query is everything a consumer does to get one fresh set of values: for file contents,
 * memory.stat and memory.numa_stat (as the seed read them), then, for N fields, extracting
 * them; for bpf-iter, one run of the iterator program (N binary counters).
 */
#include "bench.h"
#include "counters.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgstat.h"
#include "memcg_iter.h"
#include "memstat.h"

enum variant { V_CAT, V_REOPEN, V_HELD, V_PREAD };
enum content { C_LEGACY, C_PARSE, C_KS, C_BPF, C_BPF_FLUSH };

/* Same order as enum variant. */
static const struct bench_variant variants[] = {
	{ "cat", "fork+exec cat per query and read its output from a pipe (what scripts do)" },
	{ "reopen", "open+read+close each file per query" },
	{ "held", "baseline: lseek(0)+read on files opened once (the seed's binary_read_test)" },
	{ "pread", "pread at offset 0 on files opened once" },
	{ NULL, NULL },
};

/* Same order as enum content. */
static const char *const content_names[] = {
	"legacy", "legacy-parse", "ks", "bpf-iter", "bpf-iter-flush",
};

static const struct bench_param params[] = {
	{ "target", true, NULL, "root or an absolute memory cgroup path" },
	{ "content", false, "legacy",
	  "legacy | legacy-parse | ks | bpf-iter | bpf-iter-flush (see METHOD.md)" },
	{ "fields", false, "all", "N fields selected (parse, ks, bpf-iter), or all" },
	{ "reads", false, "100000", "queries per trial, split over the samples; the spec sets it "
					"per profile (not in the benchmark's grid)" },
	{ "emit_values", false, "0", "1: also print each field's value as a counter "
					  "value.<name> (not in the benchmark's grid)" },
	{ NULL, false, NULL, NULL },
};

static const struct bench_spec spec = {
	"Reading a memory cgroup's statistics: cost of one query by access method and content.\n"
	"Samples: us_per_query and queries_per_s per sample; p50_us, p99_us and max_us once per\n"
	"trial (of per-batch times; batch = 1 query for the slow variants).",
	variants,
	params,
};

/* Big enough for memory.stat (~1 KiB v1, ~3 KiB v2) and numa_stat on many nodes. */
#define FILE_BUF_BYTES ((size_t)64 << 10)
#define MAX_FILES 2

struct source {
	enum variant variant;
	enum content content;
	size_t nfiles;
	char paths[MAX_FILES][PATH_MAX + 32];
	int fds[MAX_FILES];
	struct memcg_iter iter;
	bool iter_open;
	char cat_path[PATH_MAX];
};

struct result {
	char *buf;
	size_t cap;
	size_t first_len; /* bytes of the first file (memory.stat or its .ks), what N is taken from */
	size_t total_len;
	struct field_set fields;
	size_t nfields;
	uint64_t values[CGSTAT_MAX_FIELDS];
	uint64_t sink; /* every query's output feeds it, so no work is dead */
	uint64_t misses;
};

static struct source src = { .fds = { -1, -1 } };
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

/* Runs at every exit, bench_fatal's too: the pin, the private bpffs, the link, the program. */
static void cleanup(void)
{
	for (size_t i = 0; i < MAX_FILES; i++)
		if (src.fds[i] >= 0)
			close(src.fds[i]);
	if (src.iter_open)
		memcg_iter_close(&src.iter);
	src.iter_open = false;
}

static void stop_if_asked(void)
{
	if (stop_signal) {
		cleanup();
		_exit(128 + stop_signal);
	}
}

static void install_stop_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop; /* no SA_RESTART: a blocked read returns EINTR and we stop */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	atexit(cleanup);
}

/* ---- the charger: the process that gives bakeoff's child cgroup its memory --------------- */

/* Set by the session for target=child: the PID of cgstat_charger in the target cgroup. If
 * it dies mid-trial (killed, OOM), the kernel uncharges its memory and the queries go on
 * reading a cgroup that holds nothing: shorter numbers, other counters, not the case asked
 * for, so the trial fails (bench_watch_check after each sample, outside the timed part). */
#define ENV_CHARGER_PID "BAKEOFF_CGSTAT_CHARGER_PID"

static struct bench_watch charger = { .fd = -1 };

static void check_charger(void)
{
	bench_watch_check(&charger, "its memory was uncharged mid-measurement, so the trial does "
			  "not count; the session starts a new charger for the next trial");
}

/* ---- one query ---------------------------------------------------------------------------- */

/* One read() as the seed did; set-up checked that one read returns the whole file. */
static size_t read_once(int fd, char *buf, size_t cap, const char *what)
{
	ssize_t n;

	do
		n = read(fd, buf, cap);
	while (n < 0 && errno == EINTR && !stop_signal);
	if (n < 0) {
		stop_if_asked();
		bench_fatal_errno("failed to read %s", what);
	}
	return (size_t)n;
}

static size_t pread_once(int fd, char *buf, size_t cap, const char *what)
{
	ssize_t n = pread(fd, buf, cap, 0);

	if (n < 0) {
		stop_if_asked();
		bench_fatal_errno("failed to pread %s", what);
	}
	return (size_t)n;
}

static int open_or_die(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		stop_if_asked();
		bench_fatal_errno("failed to open %s", path);
	}
	return fd;
}

/* fork + exec cat with every path, its stdout a pipe we read to the end, then wait. */
static size_t cat_files(struct result *r)
{
	char *argv[MAX_FILES + 2];
	size_t len = 0;
	int pipefd[2], status;
	pid_t pid;

	argv[0] = "cat";
	for (size_t i = 0; i < src.nfiles; i++)
		argv[i + 1] = src.paths[i];
	argv[src.nfiles + 1] = NULL;
	if (pipe2(pipefd, O_CLOEXEC) != 0)
		bench_fatal_errno("failed to create a pipe");
	pid = fork();
	if (pid < 0)
		bench_fatal_errno("failed to fork");
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		execv(src.cat_path, argv);
		_exit(127);
	}
	close(pipefd[1]);
	for (;;) {
		ssize_t n = read(pipefd[0], r->buf + len, r->cap - len);

		if (n < 0 && errno == EINTR && !stop_signal)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == r->cap)
			bench_fatal("cat printed more than %zu bytes", r->cap);
	}
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	stop_if_asked();
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bench_fatal("%s %s failed (status %d)", src.cat_path, src.paths[0], status);
	return len;
}

/* Fills r->buf with this query's bytes: the files one after the other, or the counters. */
static void fetch(struct result *r)
{
	bool bpf = src.content == C_BPF || src.content == C_BPF_FLUSH;
	size_t len = 0;

	if (src.variant == V_CAT) {
		len = cat_files(r);
		r->first_len = len; /* the .stat file comes first; extraction stops at its fields */
	} else if (bpf && src.variant == V_HELD) {
		/* The iterator's "held" form: the link stays, each query is a fresh iterator fd. */
		int fd = memcg_iter_create_fd(&src.iter);

		if (fd < 0)
			bench_fatal_errno("failed to create an iterator fd");
		len = read_once(fd, r->buf, r->cap, "the iterator");
		close(fd);
		r->first_len = len;
	} else {
		for (size_t i = 0; i < src.nfiles; i++) {
			size_t n;

			if (src.variant == V_REOPEN) {
				int fd = open_or_die(src.paths[i]);

				n = read_once(fd, r->buf + len, r->cap - len, src.paths[i]);
				close(fd);
			} else if (src.variant == V_PREAD) {
				n = pread_once(src.fds[i], r->buf + len, r->cap - len, src.paths[i]);
			} else {
				if (lseek(src.fds[i], 0, SEEK_SET) != 0)
					bench_fatal_errno("failed to lseek %s", src.paths[i]);
				n = read_once(src.fds[i], r->buf + len, r->cap - len, src.paths[i]);
			}
			if (i == 0)
				r->first_len = n;
			len += n;
		}
	}
	r->total_len = len;
}

/* What the consumer does with the bytes: nothing (legacy), extract N fields, or take the
 * binary counters. A query that does not deliver all N values is counted as a miss. */
static void consume(struct result *r)
{
	switch (src.content) {
	case C_LEGACY:
		r->sink += r->total_len + (uint8_t)r->buf[0];
		break;
	case C_PARSE:
	case C_KS:
		if (field_set_extract(&r->fields, r->buf, r->first_len, r->values) != r->nfields)
			r->misses++;
		r->sink += r->values[0] + r->values[r->nfields - 1];
		break;
	case C_BPF:
	case C_BPF_FLUSH:
		if (r->total_len != r->nfields * sizeof(uint64_t)) {
			r->misses++;
			break;
		}
		memcpy(r->values, r->buf, r->total_len);
		r->sink += r->values[0] + r->values[r->nfields - 1];
		break;
	}
}

static void query(struct result *r)
{
	fetch(r);
	consume(r);
}

/* ---- set-up ------------------------------------------------------------------------------- */

static enum content parse_content(const char *s)
{
	for (size_t i = 0; i < sizeof(content_names) / sizeof(content_names[0]); i++)
		if (strcmp(s, content_names[i]) == 0)
			return (enum content)i;
	bench_usage_error("--param content=%s is unknown; use legacy, legacy-parse, ks, bpf-iter "
			  "or bpf-iter-flush", s);
}

static bool resolve_in_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char copy[4096], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", path && *path ? path : "/usr/bin:/bin");
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", dir, name);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

/* memory.stat's text, read once in full. */
static size_t read_memory_stat(const struct memcg_target *t, char *buf, size_t cap)
{
	char path[PATH_MAX + 16];
	int fd;
	size_t n;

	snprintf(path, sizeof(path), "%s/memory.stat", t->dir);
	fd = open_or_die(path);
	n = read_once(fd, buf, cap - 1, path);
	close(fd);
	buf[n] = '\0';
	return n;
}

/* The first N counter fields of memory.stat, in the documented order (memstat.h). */
static size_t select_fields(const struct memcg_target *t, const char *fields_arg,
			    struct memstat_line *lines, const char **names)
{
	static char text[FILE_BUF_BYTES];
	size_t nlines = memstat_parse_all(text, read_memory_stat(t, text, sizeof(text)), lines,
					  MEMSTAT_MAX_LINES);
	size_t available = memstat_counter_fields(lines, nlines, t->version, names,
						  CGSTAT_MAX_FIELDS);
	char *end;
	unsigned long n;

	if (strcmp(fields_arg, "all") == 0)
		return available;
	n = strtoul(fields_arg, &end, 10);
	if (*end || end == fields_arg || n == 0)
		bench_usage_error("--param fields=%s: give a number of fields (1..%zu) or all",
				  fields_arg, available);
	if (n > available)
		bench_unmet("%s/memory.stat has %zu counter fields; fields=%lu is more", t->dir,
			    available, n);
	return n;
}

/* The .ks files take the selection as "flush,name,name,..." (flush first: flush, then read). */
static void write_ks_filter(const char *path, const char *const *names, size_t n)
{
	char filter[8192];
	size_t len = (size_t)snprintf(filter, sizeof(filter), "flush");
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	for (size_t i = 0; i < n && len < sizeof(filter); i++)
		len += (size_t)snprintf(filter + len, sizeof(filter) - len, ",%s", names[i]);
	if (fd < 0 || write(fd, filter, len) != (ssize_t)len)
		bench_unmet("failed to write the field filter to %s: %s", path, strerror(errno));
	close(fd);
}

static void setup_files(const struct memcg_target *t, const char *const *names, size_t n)
{
	const char *suffix = src.content == C_KS ? ".ks" : "";
	const char *files[MAX_FILES] = { "memory.stat", "memory.numa_stat" };

	src.nfiles = 0;
	for (size_t i = 0; i < MAX_FILES; i++) {
		char *path = src.paths[src.nfiles];

		snprintf(path, sizeof(src.paths[0]), "%s/%s%s", t->dir, files[i], suffix);
		if (access(path, R_OK) != 0) {
			if (i == 0 && src.content == C_KS)
				bench_unmet("%s does not exist: this kernel lacks the out-of-tree "
					    "memory.stat.ks patch", path);
			if (i == 0)
				bench_fatal_errno("cannot read %s", path);
			continue; /* memory.numa_stat needs CONFIG_NUMA */
		}
		if (src.content == C_KS)
			write_ks_filter(path, names, n);
		src.nfiles++;
	}
}

static void setup_bpf(const struct memcg_target *t, const char *const *names, size_t n)
{
	char err[512];
	bool pin = src.variant == V_REOPEN || src.variant == V_CAT;
	enum iter_status st = memcg_iter_open(&src.iter, t, names, n, src.content == C_BPF_FLUSH,
					      pin, err, sizeof(err));

	if (st == ITER_UNMET)
		bench_unmet("%s", err);
	if (st != ITER_OK)
		bench_fatal("%s", err);
	src.iter_open = true;
	if (pin) {
		src.nfiles = 1;
		snprintf(src.paths[0], sizeof(src.paths[0]), "%s", src.iter.pin_path);
	}
}

/* Held fds, and proof that one read() returns a whole file (the next one returns 0). */
static void open_held(struct result *r)
{
	if (src.variant != V_HELD && src.variant != V_PREAD)
		return;
	for (size_t i = 0; i < src.nfiles; i++) {
		src.fds[i] = open_or_die(src.paths[i]);
		if (read_once(src.fds[i], r->buf, r->cap, src.paths[i]) == 0 ||
		    read_once(src.fds[i], r->buf, r->cap, src.paths[i]) != 0)
			bench_fatal("%s does not read whole in one read()", src.paths[i]);
	}
}

/* ---- the check: bpf-iter values against memory.stat's ------------------------------------ */

struct check {
	size_t fields, mismatches;
	double max_abs_diff;
};

/* What one pending rstat update can be worth in memory.stat's unit: updates are counted in
 * pages for page and byte counters (the kernel converts _B items to pages), in ones for events. */
static double unflushed_unit(const struct memstat_field_def *def)
{
	size_t len = strlen(def->item);
	bool bytes = len > 2 && strcmp(def->item + len - 2, "_B") == 0;

	if (def->unit == UNIT_PAGE || bytes)
		return (double)sysconf(_SC_PAGESIZE);
	return def->unit == UNIT_KIB ? 1024.0 : 1.0;
}

/*
 * memory.stat before and after one iterator read; a value is right when it lies between the
 * two readings, give or take what rstat may not have flushed yet (memcg flushes when more
 * than 64 updates per CPU are pending: up to 64 x CPUs pages, or events).
 */
static struct check check_values(const struct memcg_target *t, struct result *r,
				 const char *const *names, bool emit_values)
{
	static char before_text[FILE_BUF_BYTES], after_text[FILE_BUF_BYTES];
	static struct memstat_line before[MEMSTAT_MAX_LINES], after[MEMSTAT_MAX_LINES];
	size_t nb = memstat_parse_all(before_text,
				      read_memory_stat(t, before_text, sizeof(before_text)), before,
				      MEMSTAT_MAX_LINES);
	struct check c = { 0, 0, 0 };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t na;

	query(r);
	na = memstat_parse_all(after_text, read_memory_stat(t, after_text, sizeof(after_text)),
			       after, MEMSTAT_MAX_LINES);
	for (size_t i = 0; i < r->nfields; i++) {
		struct memstat_field_def def;
		uint64_t b, a, lo, hi, got = r->values[i];
		double slack, diff;

		if (!memstat_lookup(before, nb, names[i], &b) || !memstat_lookup(after, na, names[i], &a))
			continue;
		memstat_field_def(names[i], t->version, &def);
		slack = 64.0 * (double)cpus * unflushed_unit(&def);
		lo = a < b ? a : b;
		hi = a < b ? b : a;
		diff = got < lo ? (double)(lo - got) : got > hi ? (double)(got - hi) : 0.0;
		c.fields++;
		if (diff > c.max_abs_diff)
			c.max_abs_diff = diff;
		if (diff > slack) {
			c.mismatches++;
			fprintf(stderr, "cgstat: %s: iterator says %llu, memory.stat %llu..%llu\n",
				names[i], (unsigned long long)got, (unsigned long long)lo,
				(unsigned long long)hi);
		}
		if (emit_values) {
			char key[MEMSTAT_NAME_MAX + 8];

			snprintf(key, sizeof(key), "value.%s", names[i]);
			bench_emit_counter(key, (double)got);
		}
	}
	return c;
}

/* ---- measuring ---------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The cheaper of one timed query and the mean of a short timed run, after one untimed. */
static double calibrate_ns(struct result *r)
{
	uint64_t t0, t1;
	double single, mean;

	query(r);
	t0 = bench_now_ns();
	query(r);
	t1 = bench_now_ns();
	single = (double)(t1 - t0);
	t0 = bench_now_ns();
	for (int i = 0; i < 8; i++)
		query(r);
	mean = (double)(bench_now_ns() - t0) / 8.0;
	return single < mean ? single : mean;
}

struct timing {
	double *latency_us; /* per batch: batch time / batch size */
	size_t nlat;
};

/* `count` queries in timed batches of `batch`; returns the total ns. Counted: the kernel
 * counters run around each batch's pair of timer reads, never between batches. */
static uint64_t run_queries(struct result *r, uint64_t count, uint64_t batch, struct timing *tm,
			    bool counted)
{
	uint64_t total = 0;

	for (uint64_t done = 0; done < count;) {
		uint64_t k = count - done < batch ? count - done : batch, t0, dt;

		if (counted)
			bench_counters_start();
		t0 = bench_now_ns();
		for (uint64_t j = 0; j < k; j++)
			query(r);
		dt = bench_now_ns() - t0;
		if (counted)
			bench_counters_stop();
		stop_if_asked();
		total += dt;
		if (tm)
			tm->latency_us[tm->nlat++] = (double)dt / (double)k / 1000.0;
		done += k;
	}
	return total;
}

/*
 * What the counted samples count besides counters.h's software events: the system calls a
 * query makes (a path lookup per reopen, a seek per held read, one call per pread, an
 * iterator fd per bpf-iter query, a fork per cat), and the statistics flushes (memcg's
 * flush calls, and the rstat lock each flush that happens takes).
 */
static const char tracepoints[] =
	"syscalls:sys_enter_openat,syscalls:sys_enter_read,syscalls:sys_enter_lseek,"
	"syscalls:sys_enter_pread64,syscalls:sys_enter_bpf,syscalls:sys_enter_clone,"
	"memcg:memcg_flush_stats,cgroup:cgroup_rstat_locked";

static bool is_bpf(void)
{
	return src.content == C_BPF || src.content == C_BPF_FLUSH;
}

/* The arguments beyond bench.h's own rules; the target resolved. Returns reads per trial. */
static uint64_t check_args(const struct bench_args *args, struct memcg_target *target)
{
	char err[512];
	uint64_t reads = bench_param_u64(args, "reads");

	if (reads < args->samples)
		bench_usage_error("--param reads=%llu: give at least one read per sample (%llu)",
				  (unsigned long long)reads, (unsigned long long)args->samples);
	if (is_bpf() && src.variant == V_PREAD)
		bench_usage_error("--variant pread does not apply to content=%s: an iterator fd has "
				  "no offset to pread at; use held, reopen or cat",
				  content_names[src.content]);
	if (strcmp(bench_param(args, "target"), "child") == 0)
		bench_usage_error("--param target=child is the cgroup bakeoff's session creates; "
				  "by hand give root or a memory cgroup path");
	switch (memcg_target_resolve(bench_param(args, "target"), target, err, sizeof(err))) {
	case TARGET_BAD:
		bench_usage_error("%s", err);
	case TARGET_UNMET:
		bench_unmet("%s", err);
	case TARGET_OK:
		break;
	}
	if (src.variant == V_CAT && !resolve_in_path("cat", src.cat_path, sizeof(src.cat_path)))
		bench_unmet("cat is not on PATH");
	return reads;
}

/* The read buffer, the fields, the files or the iterator, opened; with the iterator, its
 * values checked against memory.stat before any timing: wrong values would make every
 * number meaningless. */
static struct check prepare(const struct bench_args *args, struct memcg_target *target,
			    struct result *r, const char **names)
{
	static struct memstat_line lines[MEMSTAT_MAX_LINES];
	struct check chk = { 0, 0, 0 };

	memset(r, 0, sizeof(*r));
	r->cap = FILE_BUF_BYTES;
	r->buf = malloc(r->cap);
	if (!r->buf)
		bench_fatal_errno("failed to allocate the read buffer");
	r->nfields = select_fields(target, bench_param(args, "fields"), lines, names);
	field_set_init(&r->fields, names, r->nfields);
	if (is_bpf())
		setup_bpf(target, names, r->nfields);
	else
		setup_files(target, names, r->nfields);
	open_held(r);
	stop_if_asked();
	if (is_bpf())
		chk = check_values(target, r, names, false);
	if (chk.mismatches)
		bench_fatal("%zu of %zu iterator values disagree with memory.stat (listed above)",
			    chk.mismatches, chk.fields);
	return chk;
}

static void emit_meta(const struct bench_args *args, const struct memcg_target *target,
		      const struct result *r, uint64_t per_sample, uint64_t batch, double est_ns)
{
	bench_meta_begin();
	bench_meta_str("variant", args->variant);
	bench_meta_str("content", content_names[src.content]);
	bench_meta_str("cgroup_version", target->version == CG_V1 ? "v1" : "v2");
	bench_meta_num("fields", (double)r->nfields);
	bench_meta_num("files", (double)src.nfiles);
	bench_meta_num("queries_per_sample", (double)per_sample);
	bench_meta_num("batch", (double)batch);
	bench_meta_num("calibration_ns", est_ns);
	bench_meta_end();
}

/* The warm-up, the measured samples, the counted ones (counters.h: their times as
 * counted.<metric>, their counters per query), then the latency quantiles over every timed
 * batch of the measured samples. */
static void emit_samples(const struct bench_args *args, struct result *r, uint64_t per_sample,
			 uint64_t batch)
{
	struct timing tm = { NULL, 0 }, one = { NULL, 0 };

	tm.latency_us = calloc(args->samples * (per_sample / batch + 1), sizeof(double));
	one.latency_us = calloc(per_sample / batch + 1, sizeof(double));
	if (!tm.latency_us || !one.latency_us)
		bench_fatal_errno("failed to allocate the latency array");
	run_queries(r, args->warmup * per_sample, batch, NULL, false);
	r->misses = 0;
	for (uint64_t s = 0; s < bench_samples_total(args); s++) {
		bool counted = bench_sample_counted(args, s);
		if (counted && s == args->samples) {
			bench_counters_open_late(tracepoints);
			/* the warm-up window: one batch, see bench_counters_open_late() in counters.h */
			run_queries(r, batch < per_sample ? batch : per_sample, batch, NULL, true);
			bench_counters_discard();
		}
		one.nlat = 0;
		uint64_t ns = run_queries(r, per_sample, batch, &one, counted);

		check_charger();
		/* Counted batches stay out of p50/p99/max (see METHOD.md, Counters). */
		if (!counted) {
			memcpy(tm.latency_us + tm.nlat, one.latency_us, one.nlat * sizeof(double));
			tm.nlat += one.nlat;
		}
		/* The median batch: a query's cost, not the slices other tasks took out of
		 * the sample, which inflate its mean (METHOD.md, Timing). */
		qsort(one.latency_us, one.nlat, sizeof(double), cmp_double);
		double median_us = one.nlat % 2 ? one.latency_us[one.nlat / 2]
						: (one.latency_us[one.nlat / 2 - 1] +
						   one.latency_us[one.nlat / 2]) / 2;
		bench_emit_sample(bench_metric(counted, "us_per_query"), median_us);
		bench_emit_sample(bench_metric(counted, "queries_per_s"), 1e6 / median_us);
		bench_emit_sample(bench_metric(counted, "mean_us_per_query"),
				  (double)ns / (double)per_sample / 1000.0);
		if (counted)
			bench_counters_emit((double)per_sample);
	}
	qsort(tm.latency_us, tm.nlat, sizeof(double), cmp_double);
	bench_emit_sample("p50_us", tm.latency_us[(size_t)ceil(0.50 * (double)tm.nlat) - 1]);
	bench_emit_sample("p99_us", tm.latency_us[(size_t)ceil(0.99 * (double)tm.nlat) - 1]);
	bench_emit_sample("max_us", tm.latency_us[tm.nlat - 1]);
	bench_emit_counter("bytes_per_query", (double)r->total_len);
	bench_emit_counter("missed_queries", (double)r->misses);
	free(tm.latency_us);
	free(one.latency_us);
}

/* The iterator's values checked again after measuring (and printed for whoever asked);
 * then every query must have returned every field. */
static void check_after(const struct bench_args *args, struct memcg_target *target,
			struct result *r, const char **names, struct check chk)
{
	if (is_bpf()) {
		struct check after = check_values(target, r, names,
						  bench_param_u64(args, "emit_values") != 0);

		chk.fields = after.fields;
		chk.mismatches += after.mismatches;
		if (after.max_abs_diff > chk.max_abs_diff)
			chk.max_abs_diff = after.max_abs_diff;
		bench_emit_counter("check_fields", (double)chk.fields);
		bench_emit_counter("check_mismatches", (double)chk.mismatches);
		bench_emit_counter("check_max_abs_diff", chk.max_abs_diff);
	}
	check_charger(); /* the p50/p99/max samples above cover every query, the last included */
	if (r->misses)
		bench_fatal("%llu queries did not return all %zu fields",
			    (unsigned long long)r->misses, r->nfields);
	if (chk.mismatches)
		bench_fatal("iterator values disagree with memory.stat after measuring");
}

int main(int argc, char **argv)
{
	static const char *names[CGSTAT_MAX_FIELDS];
	struct bench_args args;
	struct memcg_target target;
	struct result r;

	bench_parse_args(argc, argv, &spec, &args);
	src.variant = (enum variant)args.variant_index;
	src.content = parse_content(bench_param(&args, "content"));
	uint64_t reads = check_args(&args, &target);
	install_stop_handlers();
	charger = bench_watch_env(ENV_CHARGER_PID, "the memory charger of the target cgroup");

	struct check chk = prepare(&args, &target, &r, names);
	double est_ns = calibrate_ns(&r);
	uint64_t batch = bench_batch_size(est_ns);
	uint64_t per_sample = reads / args.samples;
	emit_meta(&args, &target, &r, per_sample, batch, est_ns);
	emit_samples(&args, &r, per_sample, batch);
	check_after(&args, &target, &r, names, chk);
	/* The sink keeps the compiler from dropping the queries' results. */
	if (r.sink == 42)
		fputc('\n', stderr);
	free(r.buf);
	return 0;
}
