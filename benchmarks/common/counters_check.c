/*
 * counters-check - a program whose counts are known, to check counters.c against.
 *
 * Each operation does one known thing; the tests compare the counters per operation with it:
 *   getppid  one getppid(2):                         per_op.syscalls.sys_enter_getppid == 1
 *   fault    touch one fresh page of an mmap region: per_op.page_faults_minor ~= 1
 * Before every window it does the same work again outside the window (set-up a real program
 * would have), which must not be counted; nor may the measured samples' windows be: only the
 * counted samples (--counted-samples N) count.
 */
#include "bench.h"
#include "counters.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct bench_variant variants[] = {
	{ "getppid", "one getppid(2) per operation (baseline)" },
	{ "fault", "one first touch of a fresh 4 KiB page per operation" },
	{ NULL, NULL },
};
static const struct bench_param params[] = {
	{ "ops", false, "1000", "operations per sample" },
	{ NULL, false, NULL, NULL },
};
static const struct bench_spec spec = {
	"operations with known kernel counts, to check the counters", variants, params
};

static void do_getppid(uint64_t ops)
{
	for (uint64_t i = 0; i < ops; i++)
		syscall(SYS_getppid);
}

static char *fresh_pages(uint64_t pages, size_t page)
{
	char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	if (p == MAP_FAILED)
		bench_fatal_errno("mmap of %llu pages failed", (unsigned long long)pages);
	/* 4 KiB pages, one fault each: no huge page may back a whole 2 MiB of them at once. */
	madvise(p, pages * page, MADV_NOHUGEPAGE);
	return p;
}

static void touch(char *p, uint64_t pages, size_t page)
{
	for (uint64_t i = 0; i < pages; i++)
		((volatile char *)p)[i * page] = 1;
}

int main(int argc, char **argv)
{
	struct bench_args args;

	bench_parse_args(argc, argv, &spec, &args);
	uint64_t ops = bench_param_u64(&args, "ops");
	if (ops == 0)
		bench_usage_error("--param ops=0: give at least 1 operation per sample");
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	bool faults = strcmp(args.variant, "fault") == 0;

	bench_meta_begin();
	bench_meta_str("variant", args.variant);
	bench_meta_num("ops", (double)ops);
	bench_meta_end();
	/* Warm-ups first (never counted, never printed), then the measured samples, then the
	 * counted ones (--counted-samples): the pattern of counters.h. */
	uint64_t total = args.warmup + bench_samples_total(&args);
	for (uint64_t s = 0; s < total; s++) {
		bool warm = s < args.warmup;
		bool counted = !warm && bench_sample_counted(&args, s - args.warmup);
		char *outside = NULL, *inside = NULL;
		if (faults) {
			/* set-up outside the window: the same kind of work, never counted */
			outside = fresh_pages(ops, page);
			touch(outside, ops, page);
			inside = fresh_pages(ops, page);
		} else {
			do_getppid(ops);
		}
		if (counted && !bench_counters_opened())
			bench_counters_open_late(faults ? NULL : "syscalls:sys_enter_getppid");
		if (counted)
			bench_counters_start();
		uint64_t t0 = bench_now_ns();
		if (faults)
			touch(inside, ops, page);
		else
			do_getppid(ops);
		uint64_t t1 = bench_now_ns();
		if (counted)
			bench_counters_stop();
		if (faults) {
			munmap(outside, ops * page);
			munmap(inside, ops * page);
		}
		if (warm)
			continue;
		bench_emit_sample(bench_metric(counted, "ns_per_op"), (double)(t1 - t0) / (double)ops);
		if (counted)
			bench_counters_emit((double)ops);
	}
	return 0;
}
