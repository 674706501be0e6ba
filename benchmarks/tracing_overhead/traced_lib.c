/*
 * traced_lib.c - the library whose one function every tracer of this room watches.
 *
 * Built twice (see the Makefile):
 *   libbakeoff_traced.so        the plain build: the app links it, uprobes attach to it;
 *   libbakeoff_traced_lttng.so  -DBAKEOFF_LTTNG: the same body between LTTng-UST entry and
 *                               exit tracepoints. The lttng variant puts it in front of the
 *                               plain one with LD_PRELOAD, so the app is not changed (as the
 *                               seed did).
 */
#include <stdint.h>
#include <time.h>

#ifdef BAKEOFF_LTTNG
#include "traced_tp.h"
#endif

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Busy-waits duration_us microseconds on CLOCK_MONOTONIC (not usleep: a sleeping function
 * would measure the scheduler's wake-up latency, not the tracer) and returns how many times
 * it read the clock, so the exit probe has a value to record.
 *
 * noipa: the compiler may neither inline this function into a caller, nor clone or
 * specialise it, nor use what it knows of its body at call sites: every call in the app is a
 * real call of this one symbol, which is what a uprobe and a tracepoint pair watch. The
 * empty asm keeps the body from being proved empty at duration 0.
 */
__attribute__((noipa, visibility("default"))) uint64_t bakeoff_traced_work(uint32_t duration_us)
{
	uint64_t reads = 0;

	__asm__ __volatile__("");
#ifdef BAKEOFF_LTTNG
	lttng_ust_tracepoint(bakeoff_traced, entry, duration_us);
#endif
	if (duration_us > 0) {
		uint64_t start = monotonic_ns();
		uint64_t target = (uint64_t)duration_us * 1000u;

		do
			reads++;
		while (monotonic_ns() - start < target);
	}
#ifdef BAKEOFF_LTTNG
	lttng_ust_tracepoint(bakeoff_traced, exit, reads);
#endif
	return reads;
}
