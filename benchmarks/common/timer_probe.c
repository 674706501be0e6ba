/*
 * timer-probe: the cost of reading each timer on this host, as one meta JSON line.
 *
 *   {"type":"meta","timer":"clock_gettime(CLOCK_MONOTONIC_RAW)","timer_overhead_ns":...,
 *    "timer_resolution_ns":1,"rdtscp_overhead_ticks":...,"tsc_ticks_per_ns":...,
 *    "rdtscp_overhead_ns":...}
 *
 * The harness runs it once per run to record the host's timer floor beside the results.
 * rdtscp is read as "lfence; rdtscp; lfence" (no CPUID: it traps to the hypervisor in a VM);
 * its cost is in TSC ticks, which are reference ticks at a constant rate, not core cycles.
 * The rdtscp fields are left out where the CPU has no rdtscp (or is not x86).
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_RDTSCP 1
#else
#define HAVE_RDTSCP 0
#endif

#define DIFFS 1001

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

#if HAVE_RDTSCP
/* From /proc/cpuinfo, because asking CPUID costs tens of µs in a VM and rdtscp without
 * support would be SIGILL. */
static int cpu_has_rdtscp(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		char *colon = strchr(line, ':');

		if (!colon)
			break;
		for (char *tok = strtok(colon + 1, " \t\n"); tok; tok = strtok(NULL, " \t\n"))
			if (strcmp(tok, "rdtscp") == 0)
				found = 1;
		break;
	}
	fclose(f);
	return found;
}

static inline uint64_t read_tsc(void)
{
	unsigned int aux;

	_mm_lfence();
	uint64_t t = __rdtscp(&aux);
	_mm_lfence();
	return t;
}

static double rdtscp_overhead_ticks(void)
{
	static uint64_t t[DIFFS + 1], d[DIFFS];

	for (int i = 0; i < 100; i++)
		t[0] = read_tsc();
	for (int i = 0; i <= DIFFS; i++)
		t[i] = read_tsc();
	for (int i = 0; i < DIFFS; i++)
		d[i] = t[i + 1] - t[i];
	qsort(d, DIFFS, sizeof(d[0]), cmp_u64);
	return (double)d[DIFFS / 2];
}

/* TSC ticks per ns against CLOCK_MONOTONIC_RAW over ~20 ms: enough for 4 significant digits
 * when each endpoint is known to within a timer read. */
static double tsc_ticks_per_ns(void)
{
	uint64_t n0 = bench_now_ns(), c0 = read_tsc();
	uint64_t n1, c1;

	do {
		n1 = bench_now_ns();
		c1 = read_tsc();
	} while (n1 - n0 < 20000000u);
	return (double)(c1 - c0) / (double)(n1 - n0);
}
#endif

int main(int argc, char **argv)
{
	struct timespec res;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage: %s\n\nPrints one meta JSON line: the cost of one "
		       "clock_gettime(CLOCK_MONOTONIC_RAW) call (ns)\nand, on x86 with rdtscp, of "
		       "one lfence+rdtscp+lfence read (TSC ticks and ns).\n",
		       argv[0]);
		return 0;
	}
	if (argc > 1)
		bench_usage_error("unexpected argument '%s' (timer-probe takes none; see --help)",
				  argv[1]);
	if (clock_getres(CLOCK_MONOTONIC_RAW, &res) != 0)
		bench_fatal_errno("failed to read the resolution of CLOCK_MONOTONIC_RAW");

	bench_meta_begin();
	bench_meta_num("timer_resolution_ns", (double)res.tv_sec * 1e9 + (double)res.tv_nsec);
#if HAVE_RDTSCP
	if (cpu_has_rdtscp()) {
		double ticks = rdtscp_overhead_ticks();
		double per_ns = tsc_ticks_per_ns();

		bench_meta_num("rdtscp_overhead_ticks", ticks);
		bench_meta_num("tsc_ticks_per_ns", per_ns);
		bench_meta_num("rdtscp_overhead_ns", ticks / per_ns);
	}
#endif
	bench_meta_end();
	return 0;
}
