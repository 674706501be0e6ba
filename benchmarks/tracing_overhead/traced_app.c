/*
 * traced_app - the application under tracing: calls bakeoff_traced_work() from
 * libbakeoff_traced.so `calls` times and times its own loop.
 *
 *   traced_app --duration-us 100 --calls 10000 [--samples 10] [--warmup 1]
 *
 * The calls are split into warmup + samples batches of equal size (the remainder joins the
 * first, untimed, batch), so the app makes exactly `calls` calls, as the seed's sample_app,
 * and every one of them is traced: a tracer must record 2 x calls events. Each timed batch
 * prints one sample, per_call_ns = batch time / batch size, the batch's wait for a CPU taken
 * off at duration_us=0 (timed_batch). Output: JSON lines (bench.h).
 *
 * --counted-samples N adds N batches of the same size after the measured ones, with kernel
 * counters on around each (counters.h): counted.per_call_ns and per_op.<counter> per call.
 * They are calls too (a tracer records them: meta counted_calls), so the counters are opened
 * only once the measured batches are done, and the app reports the counted section's wall
 * and CPU time (counted_section) for the driver to take out of the whole-app figures.
 */
#include "bench.h"
#include "counters.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

uint64_t bakeoff_traced_work(uint32_t duration_us);

/* 1 s per call is far beyond any scenario and keeps duration * 1000 inside 32 bits. */
#define MAX_DURATION_US 1000000u

struct options {
	uint32_t duration_us;
	uint64_t calls, samples, warmup, counted;
};

/*
 * What tells the tracers apart, counted in the app's own thread: the uprobe and uretprobe
 * hits (on x86-64 since Linux 6.11 a uretprobe returns through the uretprobe() system call,
 * and an optimised uprobe enters through uprobe(); an int3 uprobe has no tracepoint), the
 * wake-ups a ring buffer submit causes (sched_waking fires in the waker, here the app; a
 * forced wake-up goes through an irq_work on the app's CPU), and the system calls LTTng-UST
 * may make to wake its consumer.
 */
#define APP_TRACEPOINTS                                                                    \
	"syscalls:sys_enter_uretprobe,sched:sched_waking,irq_vectors:irq_work_entry"

static uint64_t parse_u64(const char *flag, const char *text)
{
	char *end;

	if (!text[0] || strspn(text, "0123456789") != strlen(text))
		bench_usage_error("%s=%s is not a whole number", flag, text);
	errno = 0;
	uint64_t v = strtoull(text, &end, 10);
	if (errno)
		bench_usage_error("%s=%s is too large", flag, text);
	return v;
}

static void usage(void)
{
	printf("usage: traced_app --duration-us US --calls N [--samples N] [--warmup N]\n"
	       "                  [--counted-samples N]\n"
	       "Calls bakeoff_traced_work(US) N times through libbakeoff_traced.so; prints\n"
	       "per_call_ns samples as JSON lines (one per timed batch). --counted-samples N\n"
	       "adds N more batches with kernel counters on (counted.per_call_ns, per_op.*).\n");
	exit(0);
}

static struct options parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "duration-us", required_argument, NULL, 'd' },
		{ "calls", required_argument, NULL, 'n' },
		{ "samples", required_argument, NULL, 's' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "counted-samples", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct options o = { .samples = 10, .warmup = 1 };
	bool have_duration = false, have_calls = false;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': {
			uint64_t d = parse_u64("--duration-us", optarg);
			if (d > MAX_DURATION_US)
				bench_usage_error("--duration-us=%s is above %u (1 s per call)",
						  optarg, MAX_DURATION_US);
			o.duration_us = (uint32_t)d;
			have_duration = true;
			break;
		}
		case 'n':
			o.calls = parse_u64("--calls", optarg);
			have_calls = true;
			break;
		case 's':
			o.samples = parse_u64("--samples", optarg);
			break;
		case 'w':
			o.warmup = parse_u64("--warmup", optarg);
			break;
		case 'c':
			o.counted = parse_u64("--counted-samples", optarg);
			break;
		case 'h':
			usage();
			break;
		default:
			bench_usage_error("unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bench_usage_error("unexpected argument '%s' (see --help)", argv[optind]);
	if (!have_duration || !have_calls)
		bench_usage_error("--duration-us and --calls are required (e.g. --duration-us 100 "
				  "--calls 10000)");
	if (o.samples < 1)
		bench_usage_error("--samples must be at least 1");
	if (o.calls < o.samples + o.warmup)
		bench_usage_error("--calls=%" PRIu64 " is fewer than samples + warmup = %" PRIu64
				  " batches of at least one call; raise --calls",
				  o.calls, o.samples + o.warmup);
	return o;
}

static void call_batch(uint32_t duration_us, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		bakeoff_traced_work(duration_us);
}

/*
 * Time off the CPU. On a busy machine a timed batch can lose its CPU to another task for a
 * time slice or more, and the batch's wall time then carries the neighbour's turn: at
 * duration_us=0, where a batch of ebpf-force calls runs for milliseconds, that put the added
 * cost at several times what the calls took (issue 33; docs/notes/indep-checks-20261129-
 * epyc.md). The kernel counts the wait: the second field of /proc/thread-self/schedstat,
 * run_delay, the ns this thread waited runnable on a runqueue, read just outside the timer
 * on both sides and taken off the batch's time. Only at duration_us=0: a busy-waiting call
 * ends on the clock, so a wait inside its busy-wait is absorbed by it (the call is no longer
 * for it), and taking the wait off would cut the call below its duration. A wait as long as
 * the whole batch fell at least partly beside the timer and is not taken off. Without
 * schedstat the wall time is kept.
 */
static int schedstat_fd = -1;

static uint64_t run_delay_ns(void)
{
	return schedstat_fd < 0 ? 0 : bench_run_delay_ns(schedstat_fd);
}

/* One timed batch: ns per call, the run-queue wait taken off at duration_us=0. */
static double timed_batch(uint32_t duration_us, uint64_t n)
{
	uint64_t w0 = run_delay_ns();
	uint64_t t0 = bench_now_ns();
	call_batch(duration_us, n);
	uint64_t t1 = bench_now_ns();
	uint64_t waited = run_delay_ns() - w0, wall = t1 - t0;

	if (duration_us == 0 && waited < wall)
		wall -= waited;
	return (double)wall / (double)n;
}

static long long tv_us(struct timeval tv)
{
	return (long long)tv.tv_sec * 1000000 + tv.tv_usec;
}

/*
 * The counted batches, after the measured ones. Everything they add to the process (opening
 * the counters, the calls, the counters' cost) lies between the two readings printed in the
 * counted_section line, which the driver subtracts from the whole-app wall and CPU time.
 */
static void counted_batches(const struct options *o, uint64_t per_batch)
{
	struct rusage ru0, ru1;
	uint64_t wall0 = bench_now_ns();
	getrusage(RUSAGE_SELF, &ru0);

	bench_counters_open(APP_TRACEPOINTS);
	bench_meta_begin();
	bench_meta_num("counted_calls", (double)(per_batch * o->counted));
	bench_counters_meta();
	bench_meta_end();
	for (uint64_t s = 0; s < o->counted; s++) {
		bench_counters_start();
		double per_call = timed_batch(o->duration_us, per_batch);
		bench_counters_stop();
		bench_emit_sample(bench_metric(true, "per_call_ns"), per_call);
		bench_counters_emit((double)per_batch);
	}
	getrusage(RUSAGE_SELF, &ru1);
	uint64_t wall1 = bench_now_ns();
	printf("{\"type\":\"counted_section\",\"wall_ns\":%llu,\"user_us\":%lld,\"sys_us\":%lld}\n",
	       (unsigned long long)(wall1 - wall0), tv_us(ru1.ru_utime) - tv_us(ru0.ru_utime),
	       tv_us(ru1.ru_stime) - tv_us(ru0.ru_stime));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv);
	uint64_t batches = o.samples + o.warmup;
	uint64_t per_batch = o.calls / batches;
	uint64_t first_untimed = per_batch + o.calls % batches;

	schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	bench_meta_begin();
	bench_meta_num("duration_us", o.duration_us);
	bench_meta_num("calls", (double)o.calls);
	bench_meta_num("calls_per_sample", (double)per_batch);
	bench_meta_num("warmup_calls", (double)(o.calls - per_batch * o.samples));
	bench_meta_end();

	/* Untimed: lazy binding of the PLT slot, the first uprobe hit of this process (it maps
	 * the uprobe XOL page), LTTng-UST's first event; the remainder of the split rides here. */
	if (o.warmup > 0) {
		call_batch(o.duration_us, first_untimed);
		for (uint64_t w = 1; w < o.warmup; w++)
			call_batch(o.duration_us, per_batch);
	}
	for (uint64_t s = 0; s < o.samples; s++) {
		uint64_t n = s == 0 && o.warmup == 0 ? first_untimed : per_batch;
		bench_emit_sample("per_call_ns", timed_batch(o.duration_us, n));
	}
	if (o.counted > 0)
		counted_batches(&o, per_batch);
	return 0;
}
