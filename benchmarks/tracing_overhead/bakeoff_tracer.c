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

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv);
	struct bakeoff_tracer_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct consumer c = { 0 };
	char library[PATH_MAX];
	long long wakeups = 0;
	int err = 0;

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* libbpf resolves func_name from the ELF file itself: it wants the real path. */
	if (!realpath(o.library, library))
		bench_fatal_errno("failed to resolve --library %s", o.library);
	c.out = fopen(o.output, "wx");
	if (!c.out)
		bench_fatal_errno("failed to create the trace file %s", o.output);
	static char outbuf[1 << 20];
	setvbuf(c.out, outbuf, _IOFBF, sizeof(outbuf));

	/* Open the skeleton. */
	skel = bakeoff_tracer_bpf__open();
	if (!skel) {
		err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to open BPF skeleton: %s\n", strerror(errno));
		goto cleanup;
	}

	/* Read-only config before load: the wake-up policy, and which programs exist at all. */
	skel->rodata->submit_flags = o.mode == MODE_FORCE   ? BPF_RB_FORCE_WAKEUP
				     : o.mode == MODE_BATCHED ? BPF_RB_NO_WAKEUP
							      : 0;
	bool floor = o.mode == MODE_FLOOR;
	bpf_program__set_autoload(skel->progs.bakeoff_entry, !floor);
	bpf_program__set_autoload(skel->progs.bakeoff_exit, !floor);
	bpf_program__set_autoload(skel->progs.bakeoff_nop_in, floor);
	bpf_program__set_autoload(skel->progs.bakeoff_nop_out, floor);

	/* Load (libbpf 1.x raises RLIMIT_MEMLOCK only where the kernel still charges it;
	 * kernels >= 5.11 charge BPF memory to the memory cgroup instead). */
	err = bakeoff_tracer_bpf__load(skel);
	if (err) {
		fprintf(stderr, "bakeoff_tracer: failed to load BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}

	/* Attach: entry and return of the function, in every process mapping the library. */
	struct bpf_program *on_entry = floor ? skel->progs.bakeoff_nop_in : skel->progs.bakeoff_entry;
	struct bpf_program *on_exit = floor ? skel->progs.bakeoff_nop_out : skel->progs.bakeoff_exit;
	LIBBPF_OPTS(bpf_uprobe_opts, entry_opts, .func_name = o.function, .retprobe = false);
	LIBBPF_OPTS(bpf_uprobe_opts, exit_opts, .func_name = o.function, .retprobe = true);
	struct bpf_link *entry_link = bpf_program__attach_uprobe_opts(on_entry, -1, library, 0,
								      &entry_opts);
	if (!entry_link) {
		err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to attach uprobe to %s:%s: %s\n", library,
			o.function, strerror(errno));
		goto cleanup;
	}
	struct bpf_link *exit_link = bpf_program__attach_uprobe_opts(on_exit, -1, library, 0,
								     &exit_opts);
	if (!exit_link) {
		err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to attach uretprobe to %s:%s: %s\n",
			library, o.function, strerror(errno));
		bpf_link__destroy(entry_link);
		goto cleanup;
	}
	/* The skeleton destroys the links with itself. */
	if (floor) {
		skel->links.bakeoff_nop_in = entry_link;
		skel->links.bakeoff_nop_out = exit_link;
	} else {
		skel->links.bakeoff_entry = entry_link;
		skel->links.bakeoff_exit = exit_link;
		rb = ring_buffer__new(bpf_map__fd(skel->maps.bakeoff_events), handle_event, &c, NULL);
		if (!rb) {
			err = -errno;
			fprintf(stderr, "bakeoff_tracer: failed to create ring buffer consumer: %s\n",
				strerror(errno));
			goto cleanup;
		}
	}

	printf("{\"type\":\"ready\",\"mode\":\"%s\",\"libbpf\":\"%u.%u\"}\n", mode_names[o.mode],
	       libbpf_major_version(), libbpf_minor_version());
	fflush(stdout);

	if (rb) {
		wakeups = consume_until_stopped(rb, &o);
		/* The app is gone: every record is committed; drain until nothing is left. */
		int n;
		while (wakeups >= 0 && (n = ring_buffer__consume(rb)) > 0)
			;
		if (wakeups >= 0 && n < 0)
			wakeups = n;
	} else {
		wakeups = consume_until_stopped(NULL, &o);
	}
	if (wakeups < 0) {
		err = (int)wakeups;
		fprintf(stderr, "bakeoff_tracer: failed to consume the ring buffer: %s\n",
			strerror(c.write_errno ? c.write_errno : (int)-wakeups));
		goto cleanup;
	}
	if (fclose(c.out) != 0) {
		c.out = NULL;
		err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to write the trace file: %s\n",
			strerror(errno));
		goto cleanup;
	}
	c.out = NULL;
	struct stat st;
	if (stat(o.output, &st) != 0) {
		err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to stat the trace file: %s\n",
			strerror(errno));
		goto cleanup;
	}
	printf("{\"type\":\"tracer_done\",\"mode\":\"%s\",\"events\":%llu,\"entries\":%llu,"
	       "\"exits\":%llu,\"malformed\":%llu,\"dropped\":%llu,\"trace_bytes\":%lld,"
	       "\"wakeups\":%lld}\n",
	       mode_names[o.mode], c.entries + c.exits, c.entries, c.exits, c.other,
	       floor ? 0ULL : sum_drops(skel), (long long)st.st_size, wakeups);
	fflush(stdout);

cleanup:
	ring_buffer__free(rb);
	bakeoff_tracer_bpf__destroy(skel);
	if (c.out)
		fclose(c.out);
	return err ? BENCH_EXIT_FATAL : 0;
}
