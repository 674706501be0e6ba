/*
 * dump_reader - reads a whole BPF map, one way per variant, and proves it read every entry
 * exactly once with the right value.
 *
 *     dump_reader --variant V --param map=hash|array --param entries=N [--samples S] [--warmup W]
 *
 * The map is the loader's (dump_loader.c): the benchmark's session passes its ID in
 * BAKEOFF_DUMP_MAP_ID; run by hand, the reader starts its own loader, waits for the ID on a
 * pipe, and stops it at exit (the loader also dies with the reader: PR_SET_PDEATHSIG).
 *
 * One sample = one full dump into user memory (keys and values), timed from the first
 * system call to the last. Not timed: opening the map, loading and attaching the iterator,
 * mmap(), filling the output buffers with a poison pattern before each dump, and the check
 * after each dump (a bitmap of N bits: every key 0..N-1 exactly once, each with
 * dump_value_of(key)). A dump that misses, repeats or garbles an entry ends the trial
 * with exit 1 and the counts. See METHOD.md for what each variant's system calls cost.
 *
 * After the measured dumps, --counted-samples N more, with kernel counters on only around
 * their timed dump (counters.h): printed as counted.<metric>, and per entry as
 * per_op.syscalls.sys_enter_bpf (2 per entry for iterate, ~1/batch for batch-N, 1 per dump
 * for bpf-iter), per_op.syscalls.sys_enter_read (bpf-iter's reads), page faults, etc.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "counters.h"
#include "dump.h"
#include "dump_reader.h"
#include "dump_reader.skel.h"

/* The largest batch any variant requests. The output buffers hold this much beyond N, so a
 * map with more entries than it should have is seen (and reported) instead of truncated. */
#define MAX_BATCH 65536u
#define BUFFER_SLACK (2 * MAX_BATCH)

enum reader { READ_ITERATE, READ_BATCH, READ_BPF_ITER, READ_MMAP };

struct variant_info {
	enum reader reader;
	uint32_t batch; /* entries per BPF_MAP_LOOKUP_BATCH call (READ_BATCH only) */
};

/* Same order as the variants table below. */
static const struct variant_info variant_infos[] = {
	{ READ_ITERATE, 0 },   { READ_BATCH, 256 }, { READ_BATCH, 4096 }, { READ_BATCH, 65536 },
	{ READ_BPF_ITER, 0 }, { READ_MMAP, 0 },    { READ_BATCH, 1 },
};

static const struct bench_variant variants[] = {
	{ "iterate", "BPF_MAP_GET_NEXT_KEY + BPF_MAP_LOOKUP_ELEM per entry (baseline)" },
	{ "batch-256", "BPF_MAP_LOOKUP_BATCH, 256 entries per call" },
	{ "batch-4096", "BPF_MAP_LOOKUP_BATCH, 4096 entries per call (the seed's chunk)" },
	{ "batch-65536", "BPF_MAP_LOOKUP_BATCH, 65536 entries per call" },
	{ "bpf-iter", "a map_elem iterator program; read() from the iterator's fd" },
	{ "mmap", "copy the values out of the mmap()ed array (array maps only)" },
	{ "batch-1", "BPF_MAP_LOOKUP_BATCH, 1 entry per call: exercises ENOSPC on hash buckets "
		     "(not in the benchmark's grid)" },
	{ NULL, NULL },
};

static const struct bench_param params[] = {
	{ "map", true, NULL, "map type: hash or array" },
	{ "entries", true, NULL, "number of entries in the map (1 to 2^28)" },
	{ NULL, false, NULL, NULL },
};

static const struct bench_spec spec = {
	"read a whole BPF map (u32 -> u32) one way, verifying every entry", variants, params,
};

/* ---- the map: the session's, or one from a loader we start ------------------------------- */

#define MAX_RELAYED 16

struct relayed_counter {
	char name[64];
	double value;
};

struct map_source {
	uint32_t id;
	bool own_loader;
	size_t nrelayed;
	struct relayed_counter relayed[MAX_RELAYED];
};

/* For the signal handler: our own loader, stopped with us. */
static volatile pid_t loader_pid;

static void on_stop(int sig)
{
	if (loader_pid > 0)
		kill(loader_pid, SIGKILL);
	_exit(128 + sig);
}

static void relay(struct map_source *src, const char *name, double value)
{
	if (src->nrelayed == MAX_RELAYED)
		return;
	struct relayed_counter *c = &src->relayed[src->nrelayed++];

	snprintf(c->name, sizeof(c->name), "%s", name);
	c->value = value;
}

/* BAKEOFF_DUMP_FILL="fill_elem_ns_per_entry=627.3,fill_batch_ns_per_entry=526.7,..." */
static void relay_fill_from_env(struct map_source *src)
{
	const char *env = getenv(DUMP_ENV_FILL);
	char name[64];
	double value;
	int used;

	while (env && *env && sscanf(env, "%63[^=,]=%lf%n", name, &value, &used) == 2) {
		relay(src, name, value);
		env += used;
		if (*env == ',')
			env++;
	}
}

static void sibling_path(const char *name, char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		bench_fatal_errno("failed to find this program's path");
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	if ((size_t)snprintf(out, len, "%s/%s", self, name) >= len)
		bench_fatal("path of %s too long", name);
}

/*
 * Starts dump_loader (next to this program) and reads its protocol lines until the map_id
 * counter. Its fill counters are relayed; its diagnostics go to our stderr.
 */
static void start_own_loader(struct map_source *src, enum dump_map_kind kind, uint32_t entries)
{
	char loader[PATH_MAX], map_arg[32], entries_arg[32], parent[32], line[512], name[64];
	int pipefd[2];
	double value;

	sibling_path("dump_loader", loader, sizeof(loader));
	snprintf(map_arg, sizeof(map_arg), "map=%s", dump_map_name(kind));
	snprintf(entries_arg, sizeof(entries_arg), "entries=%u", entries);
	snprintf(parent, sizeof(parent), "%d", (int)getpid());
	if (pipe(pipefd))
		bench_fatal_errno("failed to create a pipe for the loader");
	pid_t pid = fork();
	if (pid < 0)
		bench_fatal_errno("failed to start the loader");
	if (pid == 0) {
		char *argv[] = { loader, "--variant", "hold", "--param", map_arg, "--param",
				 entries_arg, "--samples", "1", "--warmup", "0", NULL };

		dup2(pipefd[1], STDOUT_FILENO);
		close(pipefd[0]);
		close(pipefd[1]);
		setenv(DUMP_ENV_PARENT_PID, parent, 1);
		execv(loader, argv);
		fprintf(stderr, "dump_reader: failed to run %s: %s\n", loader, strerror(errno));
		_exit(127);
	}
	loader_pid = pid;
	src->own_loader = true;
	close(pipefd[1]);
	FILE *out = fdopen(pipefd[0], "r");
	if (!out)
		bench_fatal_errno("failed to read the loader's output");
	while (fgets(line, sizeof(line), out)) {
		if (sscanf(line, "{\"type\":\"counter\",\"name\":\"%63[^\"]\",\"value\":%lf}", name,
			   &value) != 2)
			continue;
		if (strcmp(name, "map_id") == 0) {
			src->id = (uint32_t)value;
			fclose(out);
			return;
		}
		relay(src, name, value);
	}
	fclose(out);
	int status = 0;
	waitpid(pid, &status, 0);
	loader_pid = 0;
	bench_fatal("the loader exited (%s %d) before announcing its map; its error is above",
		    WIFEXITED(status) ? "status" : "signal",
		    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

static void stop_own_loader(void)
{
	pid_t pid = loader_pid;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	loader_pid = 0;
}

static void find_map(struct map_source *src, enum dump_map_kind kind, uint32_t entries)
{
	const char *id = getenv(DUMP_ENV_MAP_ID);

	if (id && *id) {
		char *end;
		unsigned long v = strtoul(id, &end, 10);

		if (*end || v == 0 || v > UINT32_MAX)
			bench_usage_error("%s=%s is not a map ID; unset it to start a loader",
					  DUMP_ENV_MAP_ID, id);
		src->id = (uint32_t)v;
		relay_fill_from_env(src);
		return;
	}
	start_own_loader(src, kind, entries);
}

/* The ID must still name the loader's map: same name, type, shape and flags. */
static int open_map(const struct map_source *src, enum dump_map_kind kind, uint32_t entries)
{
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info);
	int fd = bpf_map_get_fd_by_id(src->id);

	if (fd < 0)
		bench_fatal_errno("failed to open map %u by ID (did its loader exit?)", src->id);
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		bench_fatal_errno("failed to read the info of map %u", src->id);
	enum bpf_map_type type = kind == DUMP_HASH ? BPF_MAP_TYPE_HASH : BPF_MAP_TYPE_ARRAY;
	if (strcmp(info.name, DUMP_MAP_NAME) != 0 || info.type != type || info.key_size != 4 ||
	    info.value_size != 4 || info.max_entries != entries ||
	    (kind == DUMP_ARRAY && !(info.map_flags & BPF_F_MMAPABLE)))
		bench_fatal("map %u is '%s' (type %u, %u entries, flags %#x), not the %s map "
			    "'%s' of %u entries this trial needs",
			    src->id, info.name, info.type, info.max_entries, info.map_flags,
			    dump_map_name(kind), DUMP_MAP_NAME, entries);
	return fd;
}

/* ---- output buffers ---------------------------------------------------------------------- */

/* 2 * cap u32 words: keys then values (iterate, batch), or cap (key, value) records
 * (bpf-iter), or the array's 8-byte value slots (mmap). */
struct buffers {
	uint32_t *words;
	size_t cap; /* entries the buffer can hold */
};

static void buffers_init(struct buffers *b, uint32_t entries)
{
	b->cap = (size_t)entries + BUFFER_SLACK;
	b->words = mmap(NULL, b->cap * 2 * sizeof(uint32_t), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (b->words == MAP_FAILED)
		bench_unmet("failed to allocate %zu bytes of output buffer: %s", b->cap * 8,
			    strerror(errno));
}

/* Not timed. 0xff..: key 0xffffffff is never a valid key (entries <= 2^28), so an entry a
 * reader claims but never wrote is caught instead of passing with the previous dump's data. */
static void buffers_poison(struct buffers *b)
{
	memset(b->words, 0xff, b->cap * 2 * sizeof(uint32_t));
}

/* ---- the readers ------------------------------------------------------------------------- */

struct dump {
	uint64_t count;    /* entries the reader produced */
	uint64_t syscalls; /* system calls the dump made */
	uint64_t enospc_retries;
	const uint32_t *keys; /* NULL: key i is i (mmap) */
	const uint32_t *vals;
	size_t stride; /* u32 words from one entry to the next */
};

struct reader_state {
	int map_fd;
	struct dump_reader_bpf *skel; /* bpf-iter */
	struct bpf_link *iter_link;   /* bpf-iter */
	const uint32_t *mapped;       /* mmap: the array's value area */
	size_t mapped_len;
};

static void __attribute__((noreturn)) too_many(uint64_t n)
{
	bench_fatal("the map yielded more than %llu entries: more than it was filled with",
		    (unsigned long long)n);
}

static void dump_iterate(const struct reader_state *st, struct buffers *b, struct dump *d)
{
	uint32_t *keys = b->words, *vals = b->words + b->cap;
	const uint32_t *prev = NULL;
	uint64_t n = 0, calls = 0;

	for (;; n++) {
		if (n == b->cap)
			too_many(n);
		calls++;
		if (bpf_map_get_next_key(st->map_fd, prev, &keys[n])) {
			if (errno == ENOENT)
				break;
			bench_fatal_errno("failed to get the key after entry %llu",
					  (unsigned long long)n);
		}
		calls++;
		if (bpf_map_lookup_elem(st->map_fd, &keys[n], &vals[n]))
			bench_fatal_errno("failed to look up key %u", keys[n]);
		prev = &keys[n];
	}
	*d = (struct dump){ .count = n, .syscalls = calls, .keys = keys, .vals = vals, .stride = 1 };
}

/*
 * BPF_MAP_LOOKUP_BATCH, advancing the cursor: out_batch of one call is in_batch of the next
 * (the seed passed the same start every time and read its first chunk 25,600 times).
 *
 * Hash maps return whole buckets only. When the next bucket holds more entries than the
 * call's count, the kernel copies nothing, sets count to 0 and fails with ENOSPC; a caller
 * must retry from the same cursor with room for that bucket. We double the count (up to the
 * buffer's room) and retry, counting the retries. Arrays never return ENOSPC.
 */
static void dump_batch(const struct reader_state *st, uint32_t batch, struct buffers *b,
		       struct dump *d)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint32_t *keys = b->words, *vals = b->words + b->cap;
	uint32_t cursor = 0, next_cursor = 0; /* a bucket index (hash) or a key (array) */
	void *in = NULL;
	uint64_t n = 0, calls = 0, retries = 0;
	uint32_t want = batch;

	for (;;) {
		uint64_t room = b->cap - n;
		uint32_t count = want < room ? want : (uint32_t)room;

		if (count == 0)
			too_many(n);
		calls++;
		int err = bpf_map_lookup_batch(st->map_fd, in, &next_cursor, keys + n, vals + n,
					       &count, &opts);
		if (err && errno == ENOSPC) {
			if (count != 0 || want >= room)
				bench_fatal("ENOSPC with %u entries copied and room for %llu: a bucket "
					    "larger than the buffer", count, (unsigned long long)room);
			retries++;
			want *= 2;
			continue;
		}
		n += count;
		if (err) {
			if (errno == ENOENT) /* the end; this last call may still have copied some */
				break;
			bench_fatal_errno("failed to look up a batch after %llu entries",
					  (unsigned long long)n);
		}
		cursor = next_cursor;
		in = &cursor;
		want = batch;
	}
	*d = (struct dump){ .count = n, .syscalls = calls, .enospc_retries = retries,
			    .keys = keys, .vals = vals, .stride = 1 };
}

/*
 * A fresh iterator fd per dump (one is good for one pass), read() to EOF. Each read returns
 * what the kernel's seq_file buffer holds (8 pages = 4096 records of 8 bytes here).
 */
static void dump_bpf_iter(const struct reader_state *st, struct buffers *b, struct dump *d)
{
	char *buf = (char *)b->words;
	size_t cap_bytes = b->cap * sizeof(struct dump_kv), off = 0;
	uint64_t calls = 1;
	int iter_fd = bpf_iter_create(bpf_link__fd(st->iter_link));

	if (iter_fd < 0)
		bench_fatal_errno("failed to create an iterator");
	for (;;) {
		if (off == cap_bytes)
			too_many(off / sizeof(struct dump_kv));
		calls++;
		ssize_t got = read(iter_fd, buf + off, cap_bytes - off);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			bench_fatal_errno("failed to read the iterator after %zu bytes", off);
		}
		if (got == 0)
			break;
		off += (size_t)got;
	}
	calls++;
	close(iter_fd);
	if (off % sizeof(struct dump_kv))
		bench_fatal("the iterator returned %zu bytes: not whole %zu-byte records", off,
			    sizeof(struct dump_kv));
	*d = (struct dump){ .count = off / sizeof(struct dump_kv), .syscalls = calls,
			    .keys = b->words, .vals = b->words + 1, .stride = 2 };
}

/* The array's values sit in 8-byte slots (value_size rounded up to 8); key i is slot i. */
static void dump_mmap(const struct reader_state *st, uint32_t entries, struct buffers *b,
		      struct dump *d)
{
	memcpy(b->words, st->mapped, (size_t)entries * 8);
	*d = (struct dump){ .count = entries, .syscalls = 0, .keys = NULL, .vals = b->words,
			    .stride = 2 };
}

/* ---- set-up per variant (not timed) ------------------------------------------------------ */

static void attach_iterator(struct reader_state *st)
{
	union bpf_iter_link_info linfo = { .map = { .map_fd = (uint32_t)st->map_fd } };
	LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &linfo,
		    .link_info_len = sizeof(linfo));

	/* Open and load the skeleton: one iter/bpf_map_elem program, no maps of its own. */
	st->skel = dump_reader_bpf__open_and_load();
	if (!st->skel)
		bench_fatal_errno("failed to load the iterator program");
	/* Attach: the link ties the program to this map; each bpf_iter_create starts a pass. */
	st->iter_link = bpf_program__attach_iter(st->skel->progs.bakeoff_dump_it, &opts);
	if (!st->iter_link)
		bench_fatal_errno("failed to attach the iterator to map fd %d", st->map_fd);
}

static void map_values(struct reader_state *st, uint32_t entries)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	st->mapped_len = ((size_t)entries * 8 + page - 1) / page * page;
	/* The kernel maps every page of the value area at mmap() time (remap_vmalloc_range),
	 * so the dump itself takes no page faults. */
	st->mapped = mmap(NULL, st->mapped_len, PROT_READ, MAP_SHARED, st->map_fd, 0);
	if (st->mapped == MAP_FAILED)
		bench_fatal_errno("failed to mmap the array's values");
}

static uint64_t set_up_reader(struct reader_state *st, enum reader reader, uint32_t entries)
{
	uint64_t t0 = bench_now_ns();

	if (reader == READ_BPF_ITER)
		attach_iterator(st);
	else if (reader == READ_MMAP)
		map_values(st, entries);
	return bench_now_ns() - t0;
}

static void tear_down_reader(struct reader_state *st)
{
	bpf_link__destroy(st->iter_link);
	dump_reader_bpf__destroy(st->skel);
	if (st->mapped)
		munmap((void *)st->mapped, st->mapped_len);
	close(st->map_fd);
}

/* ---- verification (not timed) ------------------------------------------------------------ */

struct verdict {
	uint64_t distinct, repeated, wrong_value, out_of_range;
	uint64_t checksum;
};

static void verify(const struct dump *d, uint32_t entries, uint64_t *bitmap, struct verdict *v)
{
	*v = (struct verdict){ 0 };
	memset(bitmap, 0, ((size_t)entries + 63) / 64 * sizeof(uint64_t));
	for (uint64_t i = 0; i < d->count; i++) {
		uint32_t key = d->keys ? d->keys[i * d->stride] : (uint32_t)i;
		uint32_t value = d->vals[i * d->stride];

		if (key >= entries) {
			v->out_of_range++;
			continue;
		}
		uint64_t bit = 1ull << (key % 64);
		if (bitmap[key / 64] & bit) {
			v->repeated++;
			continue;
		}
		bitmap[key / 64] |= bit;
		v->distinct++;
		if (value != dump_value_of(key))
			v->wrong_value++;
		v->checksum += dump_mix64((uint64_t)key << 32 | value);
	}
	v->checksum &= DUMP_CHECKSUM_MASK;
}

static void require_complete(const char *variant, const struct dump *d, uint32_t entries,
			     const struct verdict *v)
{
	if (d->count == entries && v->distinct == entries && !v->repeated && !v->wrong_value &&
	    !v->out_of_range)
		return;
	bench_fatal("%s read %llu entries: %llu distinct keys of %u, %llu repeated, %llu with a "
		    "wrong value, %llu keys out of range",
		    variant, (unsigned long long)d->count, (unsigned long long)v->distinct, entries,
		    (unsigned long long)v->repeated, (unsigned long long)v->wrong_value,
		    (unsigned long long)v->out_of_range);
}

/* The tracepoints that tell the variants apart (METHOD.md, "Counters"): bpf() calls are what
 * iterate and batch-N differ in, read() calls what bpf-iter makes instead. */
#define READER_TRACEPOINTS "syscalls:sys_enter_bpf,syscalls:sys_enter_read"

/* ---- main -------------------------------------------------------------------------------- */

/*
 * This process's peak RSS: VmHWM, the high-water mark of its own address space. Not
 * getrusage's ru_maxrss, which Linux carries across exec from the pre-exec image: a reader
 * forked by the Python harness would report the harness's RSS (43 MB) whatever it used.
 */
static double peak_rss_kib(void)
{
	char line[256];
	double kib = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %lf kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void run_dump(const struct reader_state *st, const struct variant_info *vi,
		     uint32_t entries, struct buffers *b, struct dump *d)
{
	*d = (struct dump){ 0 };
	switch (vi->reader) {
	case READ_ITERATE:
		dump_iterate(st, b, d);
		break;
	case READ_BATCH:
		dump_batch(st, vi->batch, b, d);
		break;
	case READ_BPF_ITER:
		dump_bpf_iter(st, b, d);
		break;
	case READ_MMAP:
		dump_mmap(st, entries, b, d);
		break;
	}
}

static void catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void emit_meta(const struct bench_args *args, const struct variant_info *vi,
		      enum dump_map_kind kind, uint32_t entries, const struct map_source *src,
		      uint64_t setup_ns)
{
	bench_meta_begin();
	bench_meta_str("variant", args->variant);
	bench_meta_str("map", dump_map_name(kind));
	bench_meta_num("entries", entries);
	bench_meta_num("map_id", src->id);
	bench_meta_str("map_source", src->own_loader ? "own loader" : "session loader");
	if (vi->reader == READ_BATCH)
		bench_meta_num("batch", vi->batch);
	bench_meta_num("setup_ns", (double)setup_ns);
	bench_meta_str("libbpf", libbpf_version_string());
	bench_meta_end();
}

int main(int argc, char **argv)
{
	struct bench_args args;
	struct map_source src = { 0 };
	struct reader_state st = { .map_fd = -1 };
	struct buffers buf;
	struct dump d;
	struct verdict v;
	uint64_t first_checksum = 0, retries = 0, check_ns = 0, checks = 0;
	struct bench_watch loader = { .fd = -1 };

	bench_parse_args(argc, argv, &spec, &args);
	const struct variant_info *vi = &variant_infos[args.variant_index];
	enum dump_map_kind kind = dump_parse_map(&args);
	uint32_t entries = dump_parse_entries(&args);
	if (vi->reader == READ_MMAP && kind != DUMP_ARRAY)
		bench_usage_error("--variant mmap needs --param map=array: only array maps can be "
				  "created BPF_F_MMAPABLE and mmapped");
	dump_die_with_parent();
	catch_stop_signals();
	dump_raise_memlock();

	find_map(&src, kind, entries);
	if (!src.own_loader)
		loader = bench_watch_env(DUMP_ENV_LOADER_PID, "the map loader");
	st.map_fd = open_map(&src, kind, entries);
	buffers_init(&buf, entries);
	uint64_t *bitmap = calloc(((size_t)entries + 63) / 64, sizeof(uint64_t));
	if (!bitmap)
		bench_unmet("failed to allocate the %u-bit check bitmap", entries);
	uint64_t setup_ns = set_up_reader(&st, vi->reader, entries);
	emit_meta(&args, vi, kind, entries, &src, setup_ns);

	/* Warm-ups, then the measured dumps (counters off), then the counted ones (counters.h). */
	bool counters_opened = false;
	for (uint64_t i = 0; i < args.warmup + bench_samples_total(&args); i++) {
		bool counted = i >= args.warmup && bench_sample_counted(&args, i - args.warmup);

		buffers_poison(&buf);
		/* Opened at the first counted dump, not before: open events slow what runs beside
		 * them (counters.h). A dump is long enough that the first window's one-time cost
		 * is lost in it: no discarded window. */
		if (counted && !counters_opened) {
			counters_opened = true;
			bench_counters_open_late(READER_TRACEPOINTS);
		}
		if (counted)
			bench_counters_start();
		uint64_t t0 = bench_now_ns();
		run_dump(&st, vi, entries, &buf, &d);
		uint64_t ns = bench_now_ns() - t0;
		if (counted)
			bench_counters_stop();

		uint64_t c0 = bench_now_ns();
		verify(&d, entries, bitmap, &v);
		check_ns += bench_now_ns() - c0;
		checks++;
		require_complete(args.variant, &d, entries, &v);
		bench_watch_check(&loader, "its map was still read through this reader's fd, but "
				  "the trial does not count; the session starts a new loader for "
				  "the next trial");
		if (i == 0)
			first_checksum = v.checksum;
		else if (v.checksum != first_checksum)
			bench_fatal("dump %llu has checksum %llu, the first had %llu",
				    (unsigned long long)i, (unsigned long long)v.checksum,
				    (unsigned long long)first_checksum);
		/* The process's first dump, warm-up or not: what a one-shot reader (`bpftool map
		 * dump`) pays; the measured dumps after it are what a reader dumping repeatedly
		 * pays (METHOD.md, "The first dump"). */
		if (i == 0)
			bench_emit_sample("first_ns_per_entry", (double)ns / entries);
		if (i < args.warmup)
			continue;
		if (!counted)
			retries += d.enospc_retries;
		bench_emit_sample(bench_metric(counted, "ns_per_entry"), (double)ns / entries);
		bench_emit_sample(bench_metric(counted, "s_per_dump"), (double)ns / 1e9);
		bench_emit_sample(bench_metric(counted, "entries_per_s"), entries / ((double)ns / 1e9));
		bench_emit_sample(bench_metric(counted, "syscalls_per_dump"), (double)d.syscalls);
		if (counted) /* per entry, as ns_per_entry */
			bench_counters_emit((double)entries);
	}

	bench_emit_counter("entries_verified", entries);
	bench_emit_counter("checksum", (double)first_checksum);
	bench_emit_counter("enospc_retries", (double)retries);
	bench_emit_counter("check_ns_per_entry", (double)check_ns / checks / entries);
	bench_emit_counter("reader_peak_rss_kib", peak_rss_kib());
	for (size_t i = 0; i < src.nrelayed; i++)
		bench_emit_counter(src.relayed[i].name, src.relayed[i].value);

	tear_down_reader(&st);
	stop_own_loader();
	return 0;
}
