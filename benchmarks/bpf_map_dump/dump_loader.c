/*
 * dump_loader - creates the map that bpf-map-dump's readers read, fills it, and holds it.
 *
 *     dump_loader --variant hold --param map=hash|array --param entries=N \
 *                 [--samples R] [--warmup W]
 *
 * Like the seed's bin/load: the map (named "bakeoff_dump", u32 keys 0..N-1, u32 values
 * dump_value_of(key)) lives as long as this process. Readers open it by the ID printed last:
 *
 *     {"type":"counter","name":"map_id","value":668}
 *
 * after which the loader waits for SIGINT, SIGTERM or SIGHUP and exits 0. It also dies with
 * its parent (PR_SET_PDEATHSIG): the map is never pinned, so no loader, no map.
 *
 * Before holding, it times the fill both ways, W + R times each, into the same map, emptied
 * in between (hash: delete_batch; an array cannot be emptied and is overwritten), in
 * alternating order (A B, B A, ...) so that drift hits both alike:
 *   fill_elem_ns_per_entry    one BPF_MAP_UPDATE_ELEM per entry
 *   fill_batch_ns_per_entry   BPF_MAP_UPDATE_BATCH, FILL_BATCH entries per call
 * The first W rounds are warm-up and print nothing. Counters: the medians of both, their
 * ratio (fill_batch_speedup = elem / batch), fill_reps, map_memlock_bytes, map_id.
 * Hash maps are preallocated (the kernel's default, as in the seed); arrays are created
 * BPF_F_MMAPABLE so that the mmap reader reads the same map as the others.
 */
#include <bpf/bpf.h>
#include <stdlib.h>

#include "dump.h"

/* Entries per BPF_MAP_UPDATE_BATCH call: the seed's read chunk. The kernel does not check
 * for signals inside one batch call, so a bounded chunk keeps a 100M fill interruptible. */
#define FILL_BATCH 4096u
/* How often (in entries) the per-entry fill looks at the stop flag. */
#define STOP_CHECK_MASK 0xffffu

static const struct bench_variant variants[] = {
	{ "hold", "create and fill the map, print its ID, hold it until a signal or the parent "
		  "dies" },
	{ NULL, NULL },
};

static const struct bench_param params[] = {
	{ "map", true, NULL, "map type: hash (preallocated) or array (BPF_F_MMAPABLE)" },
	{ "entries", true, NULL, "number of entries, keys 0..N-1 (1 to 2^28)" },
	{ NULL, false, NULL, NULL },
};

static const struct bench_spec spec = {
	"create and fill a BPF map (timing update_elem vs update_batch), then hold it for readers",
	variants, params,
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

/* Told to stop while filling: nothing to undo in user space, the kernel frees the map. */
static void exit_if_stopped(void)
{
	if (stop_signal) {
		fprintf(stderr, "dump_loader: stopped by signal %d before the map was ready\n",
			(int)stop_signal);
		exit(128 + stop_signal);
	}
}

struct fill_input {
	uint32_t *keys;
	uint32_t *vals;
	uint32_t n;
};

static int create_map(enum dump_map_kind kind, uint32_t entries)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = kind == DUMP_ARRAY ? BPF_F_MMAPABLE : 0);
	enum bpf_map_type type = kind == DUMP_HASH ? BPF_MAP_TYPE_HASH : BPF_MAP_TYPE_ARRAY;
	int fd = bpf_map_create(type, DUMP_MAP_NAME, sizeof(uint32_t), sizeof(uint32_t), entries,
				&opts);

	if (fd < 0) {
		errno = -fd;
		if (errno == ENOMEM || errno == E2BIG)
			bench_unmet("failed to create a %s map of %u entries: %s (not enough memory)",
				    dump_map_name(kind), entries, strerror(errno));
		bench_fatal_errno("failed to create a %s map of %u entries", dump_map_name(kind),
				  entries);
	}
	return fd;
}

static uint64_t fill_by_elem(int fd, const struct fill_input *in)
{
	uint64_t t0 = bench_now_ns();

	for (uint32_t i = 0; i < in->n; i++) {
		if (bpf_map_update_elem(fd, &in->keys[i], &in->vals[i], BPF_ANY))
			bench_fatal_errno("failed to update key %u", in->keys[i]);
		if ((i & STOP_CHECK_MASK) == 0)
			exit_if_stopped();
	}
	return bench_now_ns() - t0;
}

static uint64_t fill_by_batch(int fd, const struct fill_input *in)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint64_t t0 = bench_now_ns();

	for (uint32_t done = 0; done < in->n;) {
		uint32_t count = in->n - done < FILL_BATCH ? in->n - done : FILL_BATCH;

		if (bpf_map_update_batch(fd, in->keys + done, in->vals + done, &count, &opts))
			bench_fatal_errno("failed to update a batch at key %u", in->keys[done]);
		done += count;
		exit_if_stopped();
	}
	return bench_now_ns() - t0;
}

/* Not timed. A hash map is emptied so that each fill inserts into an empty map; an array
 * slot cannot be deleted, and writing it costs the same whatever it held. */
static void empty_map(int fd, enum dump_map_kind kind, const struct fill_input *in)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	if (kind == DUMP_ARRAY)
		return;
	for (uint32_t done = 0; done < in->n;) {
		uint32_t count = in->n - done < FILL_BATCH ? in->n - done : FILL_BATCH;

		if (bpf_map_delete_batch(fd, in->keys + done, &count, &opts))
			bench_fatal_errno("failed to empty the map at key %u", in->keys[done]);
		done += count;
		exit_if_stopped();
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The kernel's own figure for the map's memory (/proc/self/fdinfo "memlock:"), 0 if absent. */
static double map_memlock_bytes(int fd)
{
	char path[64], line[256];
	double bytes = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %lf", &bytes) == 1)
			break;
	fclose(f);
	return bytes;
}

static uint32_t map_id_of(int fd)
{
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		bench_fatal_errno("failed to read the map's info");
	return info.id;
}

/* Blocks until SIGINT, SIGTERM or SIGHUP; sigsuspend closes the race a pause() would leave
 * between testing the flag and sleeping. */
static void hold_until_signal(void)
{
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	while (!stop_signal)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void fill_input_init(struct fill_input *in, uint32_t n)
{
	in->n = n;
	in->keys = malloc((size_t)n * sizeof(uint32_t));
	in->vals = malloc((size_t)n * sizeof(uint32_t));
	if (!in->keys || !in->vals)
		bench_unmet("failed to allocate %zu bytes of fill input: not enough memory",
			    (size_t)n * 2 * sizeof(uint32_t));
	for (uint32_t k = 0; k < n; k++) {
		in->keys[k] = k;
		in->vals[k] = dump_value_of(k);
	}
}

int main(int argc, char **argv)
{
	struct bench_args args;
	struct fill_input in;
	struct sigaction sa = { .sa_handler = on_stop };
	double *elem_ns, *batch_ns;
	enum dump_map_kind kind;
	uint32_t entries;
	uint64_t reps;
	int fd;

	bench_parse_args(argc, argv, &spec, &args);
	kind = dump_parse_map(&args);
	entries = dump_parse_entries(&args);
	dump_die_with_parent();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	dump_raise_memlock();

	reps = args.warmup + args.samples;
	elem_ns = calloc(args.samples, sizeof(double));
	batch_ns = calloc(args.samples, sizeof(double));
	if (!elem_ns || !batch_ns)
		bench_fatal_errno("failed to allocate sample buffers");
	fill_input_init(&in, entries);
	fd = create_map(kind, entries);

	bench_meta_begin();
	bench_meta_str("loader_variant", args.variant);
	bench_meta_str("map", dump_map_name(kind));
	bench_meta_num("entries", entries);
	bench_meta_num("fill_batch_chunk", FILL_BATCH);
	bench_meta_bool("map_mmapable", kind == DUMP_ARRAY);
	bench_meta_num("fill_warmup_reps", (double)args.warmup);
	bench_meta_end();

	/* Round r: elem then batch when r is even, batch then elem when odd. The map is full
	 * after every fill, and emptied before the next. */
	bool full = false;
	for (uint64_t r = 0; r < reps; r++) {
		for (int step = 0; step < 2; step++) {
			bool elem = (step == 0) == (r % 2 == 0);

			if (full)
				empty_map(fd, kind, &in);
			uint64_t ns = elem ? fill_by_elem(fd, &in) : fill_by_batch(fd, &in);
			full = true;
			if (r < args.warmup)
				continue;
			double per_entry = (double)ns / entries;
			(elem ? elem_ns : batch_ns)[r - args.warmup] = per_entry;
			bench_emit_sample(elem ? "fill_elem_ns_per_entry" : "fill_batch_ns_per_entry",
					  per_entry);
		}
	}
	free(in.keys);
	free(in.vals);

	double elem_med = median(elem_ns, args.samples);
	double batch_med = median(batch_ns, args.samples);
	bench_emit_counter("fill_elem_ns_per_entry", elem_med);
	bench_emit_counter("fill_batch_ns_per_entry", batch_med);
	bench_emit_counter("fill_batch_speedup", elem_med / batch_med);
	bench_emit_counter("fill_reps", (double)args.samples);
	bench_emit_counter("map_memlock_bytes", map_memlock_bytes(fd));
	/* Last: the line a parent waits for. */
	bench_emit_counter("map_id", map_id_of(fd));

	hold_until_signal();
	close(fd);
	return 0;
}
