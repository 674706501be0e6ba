/*
 * bakeoff_tracer - the eBPF tracer of the tracing-overhead benchmark: a uprobe and a
 * uretprobe on one function of one library, entry and exit records through a BPF ring
 * buffer into a trace file, with a chosen wake-up policy.
 *
 *   bakeoff_tracer --library PATH --function NAME --mode MODE --output FILE [--poll-us N]
 *
 * MODE: force     BPF_RB_FORCE_WAKEUP on every record; the consumer sleeps in epoll (the
 *                 seed's tracer)
 *       adaptive  flags 0: the kernel wakes the consumer only when it had caught up
 *       batched   BPF_RB_NO_WAKEUP: no wake-ups at all; the consumer drains every --poll-us
 *                 microseconds (default 1000, the seed's 1 ms poll timeout)
 *       floor     the same probes with empty programs, nothing recorded: the uprobe floor
 *
 * Probes attach to every process that maps the library (pid -1), so they are in place
 * before the app starts. stdout, one JSON line each:
 *
 *   {"type":"ready"}                            once both probes are attached
 *   {"type":"tracer_done","events":N,...}       after SIGINT or SIGTERM: the ring buffer
 *                                               drained, the trace file closed
 *
 * On SIGINT or SIGTERM it stops, drains what is left (the app has exited, so every record is
 * committed and one drain gets them all), reports, detaches and exits 0. Probes and maps
 * are file descriptors of this process: if it dies, the kernel removes them.
 */
#include "bench.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <linux/types.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "bakeoff_tracer.h"
#include "bakeoff_tracer.skel.h"

enum mode { MODE_FORCE, MODE_ADAPTIVE, MODE_BATCHED, MODE_FLOOR };

static const char *const mode_names[] = { "force", "adaptive", "batched", "floor" };

struct options {
	const char *library;
	const char *function;
	const char *output;
	enum mode mode;
	long poll_us;
};

struct consumer {
	FILE *out;
	unsigned long long entries, exits, other;
	int write_errno;
};

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

static void usage(void)
{
	printf("usage: bakeoff_tracer --library PATH --function NAME "
	       "--mode force|adaptive|batched|floor --output FILE [--poll-us N]\n");
	exit(0);
}

static enum mode parse_mode(const char *text)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (strcmp(text, mode_names[i]) == 0)
			return (enum mode)i;
	bench_usage_error("--mode %s is unknown; use force, adaptive, batched or floor", text);
}

static struct options parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "library", required_argument, NULL, 'l' },
		{ "function", required_argument, NULL, 'f' },
		{ "mode", required_argument, NULL, 'm' },
		{ "output", required_argument, NULL, 'o' },
		{ "poll-us", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct options o = { .mode = MODE_FORCE, .poll_us = 1000 };
	bool have_mode = false;
	char *end;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'l': o.library = optarg; break;
		case 'f': o.function = optarg; break;
		case 'o': o.output = optarg; break;
		case 'm': o.mode = parse_mode(optarg); have_mode = true; break;
		case 'p':
			errno = 0;
			o.poll_us = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || o.poll_us < 1 || o.poll_us > 1000000)
				bench_usage_error("--poll-us %s: give 1 to 1000000 microseconds",
						  optarg);
			break;
		case 'h': usage(); break;
		default: bench_usage_error("unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (!o.library || !o.function || !o.output || !have_mode)
		bench_usage_error("--library, --function, --mode and --output are required "
				  "(see --help)");
	return o;
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct consumer *c = ctx;
	const struct bakeoff_event *e = data;

	if (size < sizeof(*e)) {
		c->other++;
		return 0;
	}
	if (e->kind == BAKEOFF_ENTRY)
		c->entries++;
	else if (e->kind == BAKEOFF_EXIT)
		c->exits++;
	else
		c->other++;
	if (fwrite(e, sizeof(*e), 1, c->out) != 1) {
		c->write_errno = errno ? errno : EIO;
		return -c->write_errno; /* stops this poll; the loop reports it */
	}
	return 0;
}

static void sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	nanosleep(&ts, NULL); /* EINTR is fine: the loop checks the flag */
}

/* Until SIGINT/SIGTERM; returns the number of polls that found records ("wake-ups"). */
static long long consume_until_stopped(struct ring_buffer *rb, const struct options *o)
{
	long long wakeups = 0;
	int n;

	while (!exiting) {
		switch (o->mode) {
		case MODE_FORCE:
		case MODE_ADAPTIVE:
			/* The timeout only bounds how late a stop is seen; records wake us. */
			n = ring_buffer__poll(rb, 100);
			break;
		case MODE_BATCHED:
			sleep_us(o->poll_us);
			n = ring_buffer__consume(rb);
			break;
		default:
			poll(NULL, 0, 100);
			n = 0;
			break;
		}
		if (n == -EINTR)
			break;
		if (n < 0)
			return n;
		if (n > 0)
			wakeups++;
	}
	return wakeups;
}

static unsigned long long sum_drops(struct bakeoff_tracer_bpf *skel)
{
	int ncpus = libbpf_num_possible_cpus();
	unsigned long long total = 0;
	__u32 zero = 0;

	if (ncpus <= 0)
		return 0;
	__u64 *values = calloc((size_t)ncpus, sizeof(__u64));
	if (!values)
		bench_fatal_errno("failed to allocate the drop counters");
	if (bpf_map__lookup_elem(skel->maps.bakeoff_drops, &zero, sizeof(zero), values,
				 sizeof(__u64) * (size_t)ncpus, 0) != 0)
		bench_fatal_errno("failed to read the drop counters");
	for (int i = 0; i < ncpus; i++)
		total += values[i];
	free(values);
	return total;
}

/* The trace file, fully buffered: the consumer writes every record there. */
static void open_trace(struct consumer *c, const char *output)
{
	static char outbuf[1 << 20];

	c->out = fopen(output, "wx");
	if (!c->out)
		bench_fatal_errno("failed to create the trace file %s", output);
	setvbuf(c->out, outbuf, _IOFBF, sizeof(outbuf));
}

/* Open and load the skeleton: the floor loads only the empty programs. 0 or -errno. */
static int load_programs(struct bakeoff_tracer_bpf **skel_out, enum mode mode)
{
	struct bakeoff_tracer_bpf *skel = bakeoff_tracer_bpf__open();

	*skel_out = skel;
	if (!skel) {
		int err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to open BPF skeleton: %s\n", strerror(-err));
		return err;
	}
	/* Read-only config before load: the wake-up policy, and which programs exist at all. */
	skel->rodata->submit_flags = mode == MODE_FORCE	  ? BPF_RB_FORCE_WAKEUP
				     : mode == MODE_BATCHED ? BPF_RB_NO_WAKEUP
							    : 0;
	bool floor = mode == MODE_FLOOR;
	bpf_program__set_autoload(skel->progs.bakeoff_entry, !floor);
	bpf_program__set_autoload(skel->progs.bakeoff_exit, !floor);
	bpf_program__set_autoload(skel->progs.bakeoff_nop_in, floor);
	bpf_program__set_autoload(skel->progs.bakeoff_nop_out, floor);

	/* Load (libbpf 1.x raises RLIMIT_MEMLOCK only where the kernel still charges it;
	 * kernels >= 5.11 charge BPF memory to the memory cgroup instead). */
	int err = bakeoff_tracer_bpf__load(skel);
	if (err)
		fprintf(stderr, "bakeoff_tracer: failed to load BPF programs: %s\n", strerror(-err));
	return err;
}

/* Attach to the entry and return of the function, in every process mapping the library;
 * unless this is the floor, the ring buffer's consumer in *rb. 0 or -errno. */
static int attach_probes(struct bakeoff_tracer_bpf *skel, const struct options *o,
			 const char *library, struct consumer *c, struct ring_buffer **rb)
{
	bool floor = o->mode == MODE_FLOOR;
	struct bpf_program *on_entry = floor ? skel->progs.bakeoff_nop_in : skel->progs.bakeoff_entry;
	struct bpf_program *on_exit = floor ? skel->progs.bakeoff_nop_out : skel->progs.bakeoff_exit;
	LIBBPF_OPTS(bpf_uprobe_opts, entry_opts, .func_name = o->function, .retprobe = false);
	LIBBPF_OPTS(bpf_uprobe_opts, exit_opts, .func_name = o->function, .retprobe = true);
	struct bpf_link *entry_link = bpf_program__attach_uprobe_opts(on_entry, -1, library, 0,
								      &entry_opts);
	if (!entry_link) {
		int err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to attach uprobe to %s:%s: %s\n", library,
			o->function, strerror(errno));
		return err;
	}
	struct bpf_link *exit_link = bpf_program__attach_uprobe_opts(on_exit, -1, library, 0,
								     &exit_opts);
	if (!exit_link) {
		int err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to attach uretprobe to %s:%s: %s\n",
			library, o->function, strerror(errno));
		bpf_link__destroy(entry_link);
		return err;
	}
	/* The skeleton destroys the links with itself. */
	if (floor) {
		skel->links.bakeoff_nop_in = entry_link;
		skel->links.bakeoff_nop_out = exit_link;
		return 0;
	}
	skel->links.bakeoff_entry = entry_link;
	skel->links.bakeoff_exit = exit_link;
	*rb = ring_buffer__new(bpf_map__fd(skel->maps.bakeoff_events), handle_event, c, NULL);
	if (!*rb) {
		int err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to create ring buffer consumer: %s\n",
			strerror(errno));
		return err;
	}
	return 0;
}

/* Until stopped, then (the app is gone: every record is committed) drained until nothing
 * is left. The number of wake-ups, or -errno. */
static long long consume(struct ring_buffer *rb, const struct options *o)
{
	if (!rb)
		return consume_until_stopped(NULL, o);
	long long wakeups = consume_until_stopped(rb, o);
	int n;
	while (wakeups >= 0 && (n = ring_buffer__consume(rb)) > 0)
		;
	if (wakeups >= 0 && n < 0)
		wakeups = n;
	return wakeups;
}

/* The trace file closed (every record written) and its size. 0 or -errno. */
static int finish_trace(struct consumer *c, const char *output, off_t *size)
{
	FILE *out = c->out;
	struct stat st;

	c->out = NULL;
	if (fclose(out) != 0) {
		int err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to write the trace file: %s\n",
			strerror(errno));
		return err;
	}
	if (stat(output, &st) != 0) {
		int err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to stat the trace file: %s\n",
			strerror(errno));
		return err;
	}
	*size = st.st_size;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv);
	struct bakeoff_tracer_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct consumer c = { 0 };
	char library[PATH_MAX];
	off_t trace_bytes = 0;
	int err;

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* libbpf resolves func_name from the ELF file itself: it wants the real path. */
	if (!realpath(o.library, library))
		bench_fatal_errno("failed to resolve --library %s", o.library);
	open_trace(&c, o.output);
	err = load_programs(&skel, o.mode);
	if (!err)
		err = attach_probes(skel, &o, library, &c, &rb);
	if (err)
		goto cleanup;

	printf("{\"type\":\"ready\",\"mode\":\"%s\",\"libbpf\":\"%u.%u\"}\n", mode_names[o.mode],
	       libbpf_major_version(), libbpf_minor_version());
	fflush(stdout);

	long long wakeups = consume(rb, &o);
	if (wakeups < 0) {
		err = (int)wakeups;
		fprintf(stderr, "bakeoff_tracer: failed to consume the ring buffer: %s\n",
			strerror(c.write_errno ? c.write_errno : (int)-wakeups));
		goto cleanup;
	}
	err = finish_trace(&c, o.output, &trace_bytes);
	if (err)
		goto cleanup;
	printf("{\"type\":\"tracer_done\",\"mode\":\"%s\",\"events\":%llu,\"entries\":%llu,"
	       "\"exits\":%llu,\"malformed\":%llu,\"dropped\":%llu,\"trace_bytes\":%lld,"
	       "\"wakeups\":%lld}\n",
	       mode_names[o.mode], c.entries + c.exits, c.entries, c.exits, c.other,
	       o.mode == MODE_FLOOR ? 0ULL : sum_drops(skel), (long long)trace_bytes, wakeups);
	fflush(stdout);

cleanup:
	ring_buffer__free(rb);
	bakeoff_tracer_bpf__destroy(skel);
	if (c.out)
		fclose(c.out);
	return err ? BENCH_EXIT_FATAL : 0;
}
