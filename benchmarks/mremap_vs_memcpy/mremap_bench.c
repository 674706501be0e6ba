/*
 * mremap_bench - moving memory by copying the bytes (memcpy) against moving the page tables
 * that map them (mremap). One trial: one variant, one size; see METHOD.md for what is timed
 * and why.
 *
 *   mremap_bench --variant mremap --param size=2097152 --samples 10 --warmup 1
 *
 * A move (mremap, memcpy-cold) is timed one per sample: the single move a program makes, set up
 * so that nothing right before it flatters it (METHOD.md "Set-up order"). Only the hot copy,
 * which repeats on the same buffers, is batched to clear the timer's floor.
 *
 * Every operation works on memory laid out in an "arena": a PROT_NONE reservation in which
 * each source and each destination is its own mapping with at least one PROT_NONE guard page
 * on either side, so no two of them merge into one VMA (a merged source would make mremap
 * split a VMA, which the seed never did) and their place relative to 2 MiB boundaries is
 * chosen, not left to the kernel (it changes mremap's cost several times over; METHOD.md).
 */
#include "bench.h"
#include "counters.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14, commit 4ca9b3859dac */
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4 /* Linux 5.7, commit e346b3813067 */
#endif

/* x86-64 with 4 KiB pages: one page-table page (PMD entry) maps 2 MiB; so does a huge page. */
#define PMD_BYTES ((size_t)2 << 20)
/* A batch never faults in more than this; batches only happen for small sizes anyway. */
#define BATCH_MEMORY_BYTES ((size_t)64 << 20)
/* Each slot of a batch is a few VMAs; stay far below vm.max_map_count (65530). */
#define BATCH_MAX_SLOTS 4096
/* Larger sizes are not a benchmark of this machine; they would only overflow the layout. */
#define SIZE_MAX_BYTES ((size_t)1 << 40)
/*
 * The timer floor for moves: one move is timed alone when it lasts at least this many timer
 * reads (the timer then adds at most 1/50 = 2 %, the harness's default verdict threshold).
 * Below it, and only there, a sample is a batch of moves. Batching moves any further would
 * measure something else: back-to-back moves get several times cheaper after the first
 * (METHOD.md), which a realloc never sees.
 */
#define MOVE_FLOOR_TIMER_READS 50.0
/* Single-move calibrations: the cheapest of up to this many decides whether to batch. */
#define MOVE_CALIBRATIONS 3

enum variant {
	V_MEMCPY,
	V_MEMCPY_COLD,
	V_MREMAP,
	V_MREMAP_AFTER_MUNMAP,
	V_MREMAP_THP,
	V_MREMAP_DONTUNMAP,
};

/* Same order as enum variant. */
static const struct bench_variant variants[] = {
	{ "memcpy", "baseline: copy size bytes between two faulted-in buffers" },
	{ "memcpy-cold", "copy size bytes into a fresh, never-touched mapping (faults timed)" },
	{ "mremap", "move a faulted-in size-byte mapping to a hole, growing it to 2*size" },
	{ "mremap-after-munmap", "as mremap, but the hole is punched (munmap) right before the "
				 "move, as bakeoff did before issue 13" },
	{ "mremap-thp", "as mremap, source backed by transparent huge pages (2 MiB multiples)" },
	{ "mremap-dontunmap", "move with MREMAP_DONTUNMAP, size to size; old range stays mapped" },
	{ NULL, NULL },
};

static const struct bench_param params[] = {
	{ "size", true, NULL, "bytes per operation; a multiple of the page size" },
	{ "offset", false, "0", "sources start this many bytes past a 2 MiB boundary "
				  "(not in the benchmark's grid)" },
	{ NULL, false, NULL, NULL },
};

static const struct bench_spec spec = {
	"Moving memory: memcpy of the bytes against mremap of the page tables. One sample is "
	"ns_per_op\nof one move (one per sample unless a move is below the timer floor); the hot "
	"memcpy\nis a calibrated batch of copies divided by its size.",
	variants,
	params,
};

static enum variant variant;
static size_t page_size; /* sysconf(_SC_PAGESIZE) */
static size_t size;      /* --param size */
static size_t offset;    /* --param offset */

/* ---- memory layout ----------------------------------------------------------------------- */

static size_t align_up(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

/* The next 2 MiB boundary after a guard page, plus the chosen offset. */
static size_t place_aligned(size_t *cursor, size_t len)
{
	size_t start = align_up(*cursor + page_size, PMD_BYTES) + offset;

	*cursor = start + len;
	return start;
}

/*
 * Right after the previous region (one guard page between) if it fits in the same 2 MiB
 * range, so it shares that range's page-table page as the kernel's own top-down placement
 * usually gives small mappings; otherwise aligned like a source.
 */
static size_t place_near(size_t *cursor, size_t len)
{
	size_t start = *cursor + page_size;

	if (start / PMD_BYTES == (start + len - 1) / PMD_BYTES)
		return *cursor = start + len, start;
	return place_aligned(cursor, len);
}

/* Bytes a move leaves mapped at the destination: the seed grows 2x like realloc; DONTUNMAP
 * requires old size == new size. */
static size_t moved_len(void)
{
	return variant == V_MREMAP_DONTUNMAP ? size : 2 * size;
}

struct batch {
	size_t k;      /* operations */
	char *raw;     /* the whole reservation, unmapped in one call */
	size_t raw_len;
	char **src;    /* k sources (memcpy: 1; memcpy-cold: k times the same one) */
	char **dst;    /* k destinations (memcpy: 1) */
};

/* Offsets of every source and destination from a 2 MiB-aligned base; returns the length. */
static size_t layout(size_t k, size_t *src_off, size_t *dst_off)
{
	size_t cur = 0;

	switch (variant) {
	case V_MEMCPY: /* one 2*size mapping split into src and dst, as the seed */
		src_off[0] = place_aligned(&cur, 2 * size);
		dst_off[0] = src_off[0] + size;
		break;
	case V_MEMCPY_COLD:
		src_off[0] = place_aligned(&cur, size);
		for (size_t i = 0; i < k; i++)
			dst_off[i] = place_near(&cur, size);
		break;
	default:
		for (size_t i = 0; i < k; i++) {
			src_off[i] = place_aligned(&cur, size);
			dst_off[i] = place_near(&cur, moved_len());
		}
		break;
	}
	return cur + page_size;
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n, sz);

	if (!p)
		bench_fatal_errno("failed to allocate %zu bookkeeping entries", n);
	return p;
}

/* ENOMEM for the size asked is the user's to fix (exit 2); anything else is a failure. */
static void map_fixed_rw(char *addr, size_t len, const char *what)
{
	void *p = mmap(addr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		       -1, 0);

	if (p == MAP_FAILED && errno == ENOMEM)
		bench_usage_error("cannot map %zu bytes for the %s: %s (use a smaller --param size)",
				  len, what, strerror(errno));
	if (p == MAP_FAILED)
		bench_fatal_errno("failed to map the %s (%zu bytes)", what, len);
	/* THP=always would back the 4 KiB variants with huge pages on some hosts and not others;
	 * mremap-thp asks for them explicitly instead. */
	int advice = variant == V_MREMAP_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
	if (madvise(addr, len, advice) != 0)
		bench_fatal_errno("failed to madvise the %s", what);
}

static uint8_t pattern(size_t slot, size_t pg)
{
	return (uint8_t)(1 + (slot * 131 + pg * 7) % 251);
}

/* Whether MADV_POPULATE_WRITE works here; cleared at its first EINVAL (before Linux 5.14). */
static bool populate_write = true;

/*
 * Every page faulted in and backed by its own frame, then one byte per page written. The
 * kernel faults the range in with one MADV_POPULATE_WRITE (Linux 5.14): the same write faults
 * a store to each page takes, so the same private frames and the same page size (the range's
 * MADV_HUGEPAGE or MADV_NOHUGEPAGE is already set), without an exception per page; at 128 MiB
 * that is most of a sample's set-up (docs/notes). The stores that follow put the pattern the
 * checks read and leave the page tables and TLB as the per-page writes did: walked last, in
 * order. Before 5.14 (EINVAL) the stores fault the pages in themselves, as they always did.
 */
static void fault_in(char *p, size_t len, size_t slot)
{
	volatile char *v = p;

	if (populate_write && madvise(p, len, MADV_POPULATE_WRITE) != 0) {
		if (errno != EINVAL)
			bench_fatal_errno("failed to fault in %zu bytes (MADV_POPULATE_WRITE)", len);
		populate_write = false;
	}
	for (size_t off = 0, pg = 0; off < len; off += page_size, pg++)
		v[off] = (char)pattern(slot, pg);
}

/*
 * The grown half is usable, read-write to its end: a write to its first page, to one page in
 * every 2 MiB after it, and to its last page (the seed wrote every page; each write it adds
 * is one more fresh page to allocate, zero and free, half of a 128 MiB sample's set-up, and
 * shows nothing these do not). Outside the timer.
 */
static void touch_grown(char *p, size_t len, size_t slot)
{
	volatile char *v = p;

	for (size_t off = 0; off < len; off += PMD_BYTES)
		v[off] = (char)pattern(slot, off / page_size);
	v[len - page_size] = (char)pattern(slot, len / page_size - 1);
}

static void check_pattern(const char *p, size_t len, size_t slot, const char *what)
{
	const volatile char *v = p;

	for (size_t off = 0, pg = 0; off < len; off += page_size, pg++)
		if ((uint8_t)v[off] != pattern(slot, pg))
			bench_fatal("failed to verify the %s: page %zu holds %u, expected %u", what,
				    pg, (unsigned)(uint8_t)v[off], (unsigned)pattern(slot, pg));
}

/* The destinations: reserved in the arena, now holes the moves can take without unmapping
 * anything first (the seed's mmap-then-munmap). */
static void punch_holes(const struct batch *b)
{
	for (size_t i = 0; i < b->k; i++)
		if (munmap(b->dst[i], moved_len()) != 0)
			bench_fatal_errno("failed to punch the destination hole");
}

static void batch_prepare(struct batch *b, size_t k)
{
	size_t *src_off = xcalloc(k, sizeof(size_t)), *dst_off = xcalloc(k, sizeof(size_t));
	size_t len = layout(k, src_off, dst_off);
	size_t nsrc = variant == V_MEMCPY || variant == V_MEMCPY_COLD ? 1 : k;

	*b = (struct batch){ .k = k, .src = xcalloc(k, sizeof(char *)),
			     .dst = xcalloc(k, sizeof(char *)) };
	/* PROT_NONE + MAP_NORESERVE: address space only, no memory and no commit charge. */
	b->raw_len = len + PMD_BYTES;
	b->raw = mmap(NULL, b->raw_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		      -1, 0);
	if (b->raw == MAP_FAILED && errno == ENOMEM)
		bench_usage_error("cannot reserve %zu bytes of address space: %s (use a smaller "
				  "--param size)",
				  b->raw_len, strerror(errno));
	if (b->raw == MAP_FAILED)
		bench_fatal_errno("failed to reserve the arena (%zu bytes)", b->raw_len);
	char *base = (char *)align_up((uintptr_t)b->raw, PMD_BYTES);

	for (size_t i = 0; i < k; i++) {
		b->src[i] = base + src_off[i < nsrc ? i : 0];
		b->dst[i] = base + dst_off[variant == V_MEMCPY ? 0 : i];
	}

	switch (variant) {
	case V_MEMCPY:
		map_fixed_rw(b->src[0], 2 * size, "source and destination");
		fault_in(b->src[0], 2 * size, 0);
		break;
	case V_MEMCPY_COLD:
		map_fixed_rw(b->src[0], size, "source");
		fault_in(b->src[0], size, 0);
		for (size_t i = 0; i < k; i++)
			map_fixed_rw(b->dst[i], size, "destination");
		break;
	case V_MREMAP_AFTER_MUNMAP:
		/* The order bakeoff used before issue 13, kept to show what it does: sources
		 * first, then the holes, so an munmap is the last thing before the move. */
		for (size_t i = 0; i < k; i++) {
			map_fixed_rw(b->src[i], size, "source");
			fault_in(b->src[i], size, i);
		}
		punch_holes(b);
		break;
	default:
		/* A program's order: the free address range exists before the data is written,
		 * and the move follows the writes. Nothing unmapped right before the timer. */
		punch_holes(b);
		for (size_t i = 0; i < k; i++) {
			map_fixed_rw(b->src[i], size, "source");
			fault_in(b->src[i], size, i);
		}
		break;
	}
	free(src_off);
	free(dst_off);
}

static void batch_release(struct batch *b)
{
	if (munmap(b->raw, b->raw_len) != 0)
		bench_fatal_errno("failed to unmap the arena");
	free(b->src);
	free(b->dst);
	*b = (struct batch){ 0 };
}

/* ---- transparent huge pages -------------------------------------------------------------- */

/* Why THP may have failed, for the message: the system mode ("always [madvise] never" ->
 * "madvise") and this process's own switch (prctl PR_SET_THP_DISABLE, inherited). */
static void thp_why(char *out, size_t n)
{
	char mode[64] = "unknown", self[16] = "unknown", line[256];
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char *l, *r;

	if (f) {
		if (fgets(line, sizeof(line), f) && (l = strchr(line, '[')) &&
		    (r = strchr(l, ']'))) {
			*r = '\0';
			snprintf(mode, sizeof(mode), "%s", l + 1);
		}
		fclose(f);
	}
	f = fopen("/proc/self/status", "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "THP_enabled: %15s", self) == 1)
				break;
		fclose(f);
	}
	snprintf(out, n, "THP enabled=%s, this process THP_enabled=%s", mode, self);
}

/*
 * Rss and AnonHugePages (KiB) of the VMA that starts at each of addrs[0..n), which ascend (the
 * layout places slots in order, as smaps lists VMAs), from one read of /proc/self/smaps (each
 * read walks every page table of the process, so read once).
 */
static void smaps_kib(char *const *addrs, size_t n, uint64_t *rss, uint64_t *huge)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char *line = NULL;
	size_t cap = 0, next = 0;
	ssize_t cur = -1;

	if (!f)
		bench_fatal_errno("failed to open /proc/self/smaps");
	for (size_t i = 0; i < n; i++)
		rss[i] = huge[i] = 0;
	while (getline(&line, &cap, f) > 0) {
		uintptr_t start, end;
		uint64_t v;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &start, &end) == 2) {
			while (next < n && (uintptr_t)addrs[next] < start)
				next++;
			cur = next < n && (uintptr_t)addrs[next] == start ? (ssize_t)next : -1;
		} else if (cur >= 0 && sscanf(line, "Rss: %" SCNu64 " kB", &v) == 1) {
			rss[cur] = v;
		} else if (cur >= 0 && sscanf(line, "AnonHugePages: %" SCNu64 " kB", &v) == 1) {
			huge[cur] = v;
		}
	}
	free(line);
	fclose(f);
}

/*
 * Which pages each move moved, from the moved regions' Rss and AnonHugePages (one read of
 * smaps), after the timer and before the grown half is touched: a read before the move would
 * walk the source's page tables and can warm what the move is about to touch (METHOD.md,
 * "Fairness rules"). Every byte of the source must have come along
 * (Rss = size), in huge pages for mremap-thp and in 4 KiB pages for every other move
 * (MADV_NOHUGEPAGE kept THP off): size/4096 page-table entries. Exit 3 (a requirement the
 * machine did not meet) otherwise. Returns the largest AnonHugePages seen.
 */
static uint64_t moved_pages_verify(const struct batch *b)
{
	uint64_t *rss = xcalloc(b->k, sizeof(uint64_t)), *huge = xcalloc(b->k, sizeof(uint64_t));
	uint64_t want_huge = variant == V_MREMAP_THP ? size / 1024 : 0, max = 0;

	smaps_kib(b->dst, b->k, rss, huge);
	for (size_t i = 0; i < b->k; i++) {
		char why[160];

		if (rss[i] != size / 1024)
			bench_fatal("failed to verify the move: the moved region maps %" PRIu64
				    " KiB, not the %zu KiB of its source",
				    rss[i], size / 1024);
		if (huge[i] == want_huge) {
			if (huge[i] > max)
				max = huge[i];
			continue;
		}
		thp_why(why, sizeof(why));
		if (variant == V_MREMAP_THP)
			bench_unmet("transparent huge pages did not back the moved region: "
				    "AnonHugePages %" PRIu64 " of %" PRIu64 " KiB after MADV_HUGEPAGE "
				    "(%s; needs 'madvise' or 'always', THP_enabled=1 and free 2 MiB "
				    "pages)",
				    huge[i], want_huge, why);
		bench_unmet("huge pages backed %" PRIu64 " KiB of a region that asked for 4 KiB "
			    "pages (MADV_NOHUGEPAGE; %s): this variant would not move 4 KiB pages; "
			    "use a kernel that honours MADV_NOHUGEPAGE",
			    huge[i], why);
	}
	free(rss);
	free(huge);
	return max;
}

/* ---- kernel counters (counters.h) ------------------------------------------------------- */

/*
 * Why a move costs what it does is in the kernel: how many TLB flushes it makes, which IPIs
 * and MSR writes (each one an exit to the hypervisor here), how many pages it allocates (a
 * cold copy: one per destination page; a move: page-table pages at most), how many VMA-tree
 * writes and slab objects. The counted samples (--counted-samples) count these tracepoints,
 * and counters.h's software events (minor page faults above all), around their timed section
 * only. Absent events are named in the meta line.
 */
static const char tracepoints[] =
	"tlb:tlb_flush,"         /* every TLB flush this task makes, local or remote */
	"kmem:mm_page_alloc,"    /* pages allocated: a cold copy's destination, page tables */
	"maple_tree:ma_write";   /* VMA tree updates */
/* Each costs a counted trial ~40 ms at exit (the kernel unregisters its probe after an RCU
 * grace period): only these three, which differ between the variants. IPIs (remote TLB
 * shootdowns: ipi:ipi_send_cpumask, ipi:ipi_send_cpu) were 0 for every variant of this
 * single-threaded program, and are left to BAKEOFF_TRACEPOINTS with msr:write_msr,
 * kmem:mm_page_free and kmem:kmem_cache_alloc. */

/* ---- time off the CPU --------------------------------------------------------------------- */

/*
 * A wall-clock sample also holds whatever time the scheduler gave this thread's CPU to another
 * task in the middle of it. On this busy 2-vCPU machine that was most of a hot 16 MiB copy's
 * sample under load (several times its time on the CPU, one involuntary context switch
 * inside; METHOD.md "Time off the CPU"), while a move of microseconds is almost never
 * interrupted: the ratio then measured the machine's load, not the mechanism.
 *
 * The kernel counts that time: the second field of /proc/thread-self/schedstat, run_delay, is
 * the ns this thread has waited runnable on a runqueue (CONFIG_SCHED_INFO). It is read just
 * outside the timer on both sides. A short sample during which it grew is taken again (fresh
 * set-up), up to OFFCPU_ATTEMPTS times in all: the wait may have fallen in the microseconds
 * between a reading and the timer, where subtracting it would be wrong, and the other task
 * has just evicted what a short operation keeps in cache. A sample of at least
 * OFFCPU_RETAKE_BELOW_NS on the CPU, or the last attempt, is kept with the wait subtracted:
 * those microseconds are then a negligible share, and retaking a long one is dear (a fresh
 * source faulted in each time) and vain under load (a 128 MiB copy was interrupted in every
 * attempt). Where schedstat is missing, involuntary context switches (getrusage) detect an
 * interrupted sample and it is retaken the same way, but nothing can be subtracted.
 */
#define OFFCPU_ATTEMPTS 4
#define OFFCPU_RETAKE_BELOW_NS 1000000ull

static int schedstat_fd = -1; /* /proc/thread-self/schedstat, or -1: count switches instead */

static void offcpu_open(void)
{
	schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
}

/* run_delay in ns, or without schedstat the involuntary context switches so far. */
static uint64_t offcpu_mark(void)
{
	if (schedstat_fd >= 0)
		return bench_run_delay_ns(schedstat_fd);
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		bench_fatal_errno("failed to read rusage");
	return (uint64_t)ru.ru_nivcsw;
}

/* One timed section: its wall time and how long the thread waited off its CPU inside it
 * (without schedstat: 1 if it was switched out, and nothing to subtract). */
struct timed {
	uint64_t wall_ns;
	uint64_t offcpu;
};

/* The time the operation had the CPU: the wall time less the wait. A wait as long as the
 * whole section fell (at least partly) outside the timer, just beside it, between the
 * readings: the timer has nothing of it to subtract. */
static uint64_t on_cpu_ns(struct timed t)
{
	if (schedstat_fd < 0 || t.offcpu >= t.wall_ns)
		return t.wall_ns;
	return t.wall_ns - t.offcpu;
}

/* What emit_samples reports about the retakes (counters offcpu_*). */
static uint64_t offcpu_retaken;       /* measured attempts discarded, interrupted */
static uint64_t offcpu_kept;          /* measured samples kept interrupted (last attempt) */
static double offcpu_subtracted_ns;   /* wait subtracted from the kept ones, all ops */

/* ---- one timed batch --------------------------------------------------------------------- */

/* Keeps a copy the compiler could prove redundant (same bytes again) from being elided. */
static inline void clobber(const void *p)
{
	__asm__ __volatile__("" : : "r"(p) : "memory");
}

static long minor_faults(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		bench_fatal_errno("failed to read rusage");
	return ru.ru_minflt;
}

static struct batch hot; /* memcpy: prepared once, reused by every batch */
/* The largest AnonHugePages a moved region had (moved_pages_verify): 0 for the 4 KiB moves. */
static uint64_t moved_huge_kib;
/* --profile-repeat (bench.h): under bakeoff profile, each timed move is done this many times
 * so that it, not the set-up (faulting in the source: milliseconds against a move's
 * microseconds), fills the profile: the region moves on to a spare range of the same 2 MiB
 * alignment and back (the same page-table move, warm; MREMAP_DONTUNMAP is left out of the
 * return trips). The copies ignore it: a hot copy repeats on the same buffers already, so
 * the longer trials bakeoff profile asks for make it dominate, and a cold copy cannot be
 * repeated (a second copy is a hot one). meta "profile_repeat" says what was done. */
static uint64_t repeat = 1;

/* The profile's extra moves of one moved region: to a spare range and back, (repeat - 1)
 * round trips, ending where it started. */
static void repeat_moves(char *at, size_t len)
{
	if (repeat <= 1)
		return;
	size_t span = len + PMD_BYTES;
	char *raw = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		bench_fatal_errno("failed to reserve %zu bytes for --profile-repeat", span);
	/* The spare starts at the region's offset from a 2 MiB boundary: a move between
	 * differently aligned ranges takes another path, several times slower (METHOD.md). */
	uintptr_t base = (uintptr_t)raw + PMD_BYTES - 1;
	base -= base % PMD_BYTES;
	char *spare = (char *)(base + (uintptr_t)at % PMD_BYTES);
	if (spare + len > raw + span)
		spare -= PMD_BYTES;
	for (uint64_t r = 1; r < repeat; r++) {
		if (mremap(at, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, spare) != spare ||
		    mremap(spare, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, at) != at)
			bench_fatal_errno("failed to move %zu bytes back and forth (--profile-repeat)",
					  len);
	}
	if (munmap(raw, span) != 0)
		bench_fatal_errno("failed to release the --profile-repeat reservation");
}

/*
 * The bookkeeping around one timed section, all of it outside the two timer reads: the minor
 * faults (getrusage) and the wait off the CPU (offcpu_mark) before and after, and the kernel
 * counters of a counted sample inside them. Inline, so that nothing but the section's own work
 * lies between the timer reads.
 */
struct window {
	long faults;
	uint64_t offcpu;
	uint64_t t0;
	bool counted;
};

static inline void window_open(struct window *w, bool counted)
{
	w->counted = counted;
	w->faults = minor_faults();
	w->offcpu = offcpu_mark();
	if (counted)
		bench_counters_start();
	w->t0 = bench_now_ns();
}

/* Closes the window: adds the faults inside it to *faults, returns its times. */
static inline struct timed window_close(struct window *w, long *faults)
{
	uint64_t t1 = bench_now_ns();

	if (w->counted)
		bench_counters_stop();
	uint64_t offcpu = offcpu_mark();
	*faults += minor_faults() - w->faults;
	return (struct timed){ .wall_ns = t1 - w->t0, .offcpu = offcpu - w->offcpu };
}

/* Runs k operations between one pair of timer reads; returns their times and adds the minor
 * faults taken inside the timed section to *faults. Counted: the kernel counters run from
 * just before the first timer read to just after the second. */
static struct timed run_batch(size_t k, long *faults, bool counted)
{
	struct batch b;
	struct window w;
	struct timed t;
	size_t failed = k;
	int err = 0;

	if (variant == V_MEMCPY) {
		if (!hot.raw)
			batch_prepare(&hot, 1);
		window_open(&w, counted);
		for (size_t i = 0; i < k; i++) {
			memcpy(hot.dst[0], hot.src[0], size);
			clobber(hot.dst[0]);
		}
		t = window_close(&w, faults);
		if (hot.dst[0][size - 1] != hot.src[0][size - 1])
			bench_fatal("failed to verify the copy");
		return t;
	}

	batch_prepare(&b, k);
	if (variant == V_MEMCPY_COLD) {
		window_open(&w, counted);
		for (size_t i = 0; i < k; i++) {
			memcpy(b.dst[i], b.src[0], size);
			clobber(b.dst[i]);
		}
		t = window_close(&w, faults);
		for (size_t i = 0; i < k; i++)
			check_pattern(b.dst[i], size, 0, "copy");
	} else {
		int flags = MREMAP_MAYMOVE | MREMAP_FIXED;
		size_t new_len = moved_len();

		if (variant == V_MREMAP_DONTUNMAP)
			flags |= MREMAP_DONTUNMAP;
		window_open(&w, counted);
		for (size_t i = 0; i < k; i++) {
			if (mremap(b.src[i], size, new_len, flags, b.dst[i]) != b.dst[i]) {
				err = errno;
				failed = i;
				break;
			}
			repeat_moves(b.dst[i], new_len);
		}
		t = window_close(&w, faults);
		if (failed < k) {
			errno = err;
			if (err == EINVAL && variant == V_MREMAP_DONTUNMAP)
				bench_unmet("failed to mremap with MREMAP_DONTUNMAP: %s (needs "
					    "Linux >= 5.7)",
					    strerror(err));
			bench_fatal_errno("failed to mremap %zu bytes to %zu bytes (op %zu of %zu)",
					  size, new_len, failed + 1, k);
		}
		/* Outside the timer: the data came along in pages of the size the variant
		 * claims, and the grown half is usable (the seed's "grant RW to new half, touch
		 * pages"). */
		uint64_t huge = moved_pages_verify(&b);
		if (huge > moved_huge_kib)
			moved_huge_kib = huge;
		for (size_t i = 0; i < k; i++) {
			check_pattern(b.dst[i], size, i, "moved region");
			if (new_len > size)
				touch_grown(b.dst[i] + size, new_len - size, i);
			if (variant == V_MREMAP_DONTUNMAP &&
			    (b.src[i][0] != 0 || b.src[i][size - 1] != 0))
				bench_fatal("failed to verify MREMAP_DONTUNMAP: the old range is "
					    "not empty");
		}
	}
	batch_release(&b);
	return t;
}

/*
 * One measured or counted sample: the time a batch had the CPU. Switched out inside it, a
 * short one is retaken (fresh set-up, its faults and counts dropped), up to OFFCPU_ATTEMPTS
 * in all; a long one, or the last attempt, is kept with its wait subtracted. Returns ns for
 * the whole batch.
 */
static double timed_sample(size_t batch, long *faults, bool counted)
{
	for (int attempt = 1;; attempt++) {
		long f = 0;
		struct timed t = run_batch(batch, &f, counted);

		if (t.offcpu == 0 || attempt == OFFCPU_ATTEMPTS ||
		    on_cpu_ns(t) >= OFFCPU_RETAKE_BELOW_NS) {
			*faults += f;
			if (t.offcpu && !counted) {
				offcpu_kept++;
				offcpu_subtracted_ns += (double)(t.wall_ns - on_cpu_ns(t));
			}
			return (double)on_cpu_ns(t);
		}
		if (counted)
			bench_counters_discard();
		else
			offcpu_retaken++;
	}
}

/* ---- main -------------------------------------------------------------------------------- */

/* Bytes one operation of a batch faults in: what a batch of k holds in memory at once. */
static size_t bytes_per_op(void)
{
	switch (variant) {
	case V_MEMCPY:
		return 0; /* the same two buffers for every operation */
	case V_MEMCPY_COLD:
	case V_MREMAP_DONTUNMAP:
		return size;
	default:
		/* The source and the whole grown half, though touch_grown writes only a few of its
		 * pages: the cap, and so every batch size, stays what it was. */
		return 2 * size;
	}
}

static void check_args(const struct bench_args *args)
{
	uint64_t s = bench_param_u64(args, "size");
	uint64_t o = bench_param_u64(args, "offset");

	if (s == 0 || s % page_size != 0)
		bench_usage_error("--param size=%s is not a positive multiple of the page size; use "
				  "a multiple of %zu, e.g. %zu, %zu",
				  bench_param(args, "size"), page_size, page_size, 16 * page_size);
	if (s > SIZE_MAX_BYTES)
		bench_usage_error("--param size=%s is larger than %zu bytes; use a smaller size",
				  bench_param(args, "size"), SIZE_MAX_BYTES);
	if (o % page_size != 0 || o >= PMD_BYTES)
		bench_usage_error("--param offset=%s must be a multiple of %zu below %zu (2 MiB), "
				  "e.g. 0 or %zu",
				  bench_param(args, "offset"), page_size, PMD_BYTES, page_size);
	if (variant == V_MREMAP_THP && (s < PMD_BYTES || s % PMD_BYTES != 0))
		bench_usage_error("--variant mremap-thp needs --param size to be a multiple of 2 MiB "
				  "(2097152), e.g. 2097152 or 16777216; got %s",
				  bench_param(args, "size"));
	if (variant == V_MREMAP_THP && o != 0)
		bench_usage_error("--variant mremap-thp needs --param offset=0: a huge page "
				  "starts on a 2 MiB boundary");
	size = (size_t)s;
	offset = (size_t)o;
}

/* How many operations one timed sample holds, and the figures that chose it. */
struct calibration {
	size_t batch;    /* operations per sample */
	size_t want;     /* what the rule asked for, before the memory cap */
	double floor_ns; /* the shortest a sample may last */
	double est_ns;   /* the calibration's estimate of one operation */
};

/* Calibration, never reported; it also warms code and caches. */
static struct calibration calibrate(void)
{
	struct calibration cal;
	long faults = 0;
	/* Time on the CPU throughout (on_cpu_ns): a preempted calibration would size batches by
	 * another task's time slice. */
	uint64_t one = on_cpu_ns(run_batch(1, &faults, false));
	size_t mem_cap = bytes_per_op() ? BATCH_MEMORY_BYTES / bytes_per_op() : BENCH_BATCH_MAX;
	size_t cap = variant == V_MEMCPY ? BENCH_BATCH_MAX : BATCH_MAX_SLOTS;

	if (mem_cap < cap)
		cap = mem_cap;
	if (cap < 1)
		cap = 1;
	if (variant == V_MEMCPY) {
		/* The hot copy repeats on the same buffers, which is what "hot" means: batch it
		 * to BENCH_BATCH_FACTOR timer reads, as every room does (bench.h). */
		size_t k1 = bench_batch_size((double)one);

		if (k1 > cap)
			k1 = cap;
		cal.est_ns = (double)on_cpu_ns(run_batch(k1, &faults, false)) / (double)k1;
		if ((double)one < cal.est_ns)
			cal.est_ns = (double)one;
		cal.floor_ns = BENCH_BATCH_FACTOR * bench_timer_overhead_ns();
		cal.want = bench_batch_size(cal.est_ns);
	} else {
		/* A move: alone unless even the cheapest of a few single moves is below the
		 * floor; then the fewest moves that clear it. */
		cal.floor_ns = MOVE_FLOOR_TIMER_READS * bench_timer_overhead_ns();
		cal.est_ns = (double)one;
		for (int i = 1; i < MOVE_CALIBRATIONS && cal.est_ns < 4.0 * cal.floor_ns; i++) {
			double again = (double)on_cpu_ns(run_batch(1, &faults, false));

			if (again < cal.est_ns)
				cal.est_ns = again;
		}
		cal.want = cal.est_ns >= cal.floor_ns
				   ? 1
				   : (size_t)ceil(cal.floor_ns / (cal.est_ns > 1.0 ? cal.est_ns : 1.0));
	}
	cal.batch = cal.want < cap ? cal.want : cap;
	return cal;
}

static void emit_meta(const struct bench_args *args, const struct calibration *cal)
{
	bench_meta_begin();
	bench_meta_str("variant", args->variant);
	bench_meta_num("size", (double)size);
	bench_meta_num("page_size", (double)page_size);
	bench_meta_num("batch", (double)cal->batch);
	bench_meta_bool("batch_capped", cal->batch < cal->want);
	bench_meta_num("batch_floor_ns", cal->floor_ns);
	bench_meta_str("batch_rule",
		       variant == V_MEMCPY
			       ? "hot copy repeated on the same buffers until a sample lasts "
				 "1000 timer reads"
			       : "one move per sample; a batch only when one move lasts under 50 "
				 "timer reads");
	bench_meta_num("calibration_ns_per_op", cal->est_ns);
	bench_meta_num("src_pmd_offset", (double)offset);
	/* How the calibration's set-ups, and so every later one, faulted their pages in. */
	bench_meta_str("fault_in", populate_write ? "MADV_POPULATE_WRITE, then a write per page"
						  : "a write per page");
	if (args->profile_repeat > 1)
		bench_meta_num("profile_repeat", (double)repeat);
	if (variant != V_MEMCPY && variant != V_MEMCPY_COLD) {
		size_t src_off[1], dst_off[1];

		layout(1, src_off, dst_off);
		bench_meta_num("new_size", (double)moved_len());
		bench_meta_num("dst_pmd_offset", (double)(dst_off[0] % PMD_BYTES));
		bench_meta_str("setup_order",
			       variant == V_MREMAP_AFTER_MUNMAP
				       ? "source faulted in, then hole punched (munmap), then the move"
				       : "hole punched, then source faulted in, then the move");
	}
	if (variant == V_MREMAP_THP) {
		bench_meta_str("thp", "verified");
		bench_meta_num("thp_huge_kib", (double)moved_huge_kib);
	} else {
		bench_meta_str("thp", "off");
	}
	if (variant != V_MEMCPY && variant != V_MEMCPY_COLD) {
		/* Checked after every move (moved_pages_verify), exit 3 otherwise; the calibration's
		 * moves came before this line. */
		bench_meta_num("moved_page_bytes",
			       (double)(variant == V_MREMAP_THP ? PMD_BYTES : page_size));
		bench_meta_num("moved_huge_kib", (double)moved_huge_kib);
	}
	bench_meta_str("offcpu_source", schedstat_fd >= 0
						? "/proc/thread-self/schedstat run_delay"
						: "getrusage ru_nivcsw (nothing subtracted)");
	bench_meta_str("offcpu_rule", "a sample the scheduler switched out is retaken if under "
				      "1 ms on the CPU, up to 4 attempts; a longer one or the "
				      "last is kept with its wait off the CPU subtracted");
	bench_meta_end();
}

/*
 * The warm-up, the measured samples and the counters of the faults they took, then the
 * counted samples (counters.h): each a sample "counted.ns_per_op" and its kernel counters
 * per operation. The measured samples' minor_faults_per_op (getrusage, outside the timer)
 * stays: it covers every measured sample, the counted ones only theirs.
 */
static void emit_samples(const struct bench_args *args, size_t batch)
{
	long faults = 0, counted_faults = 0;

	for (uint64_t i = 0; i < args->warmup; i++)
		run_batch(batch, &faults, false);
	faults = 0;
	for (uint64_t i = 0; i < bench_samples_total(args); i++) {
		bool counted = bench_sample_counted(args, i);
		if (counted && i == args->samples) {
			long ignored = 0;

			bench_counters_open_late(tracepoints);
			run_batch(batch, &ignored, true); /* the warm-up window: see above */
			bench_counters_discard();
		}
		double ns = timed_sample(batch, counted ? &counted_faults : &faults, counted);

		bench_emit_sample(bench_metric(counted, "ns_per_op"), ns / (double)batch);
		if (counted)
			bench_counters_emit((double)batch);
	}
	bench_emit_counter("minor_faults_per_op",
			   (double)faults / ((double)args->samples * (double)batch));
	/* Shows in the report's counters column which cases were batched, and by how much. */
	bench_emit_counter("ops_per_sample", (double)batch);
	/* How much the scheduler interrupted the measured samples (timed_sample): attempts
	 * retaken per sample, share of samples kept interrupted, wait subtracted per op. */
	bench_emit_counter("offcpu_retaken_per_sample",
			   (double)offcpu_retaken / (double)args->samples);
	bench_emit_counter("offcpu_kept_share", (double)offcpu_kept / (double)args->samples);
	bench_emit_counter("offcpu_subtracted_ns_per_op",
			   offcpu_subtracted_ns / ((double)args->samples * (double)batch));
}

int main(int argc, char **argv)
{
	struct bench_args args;

	bench_parse_args(argc, argv, &spec, &args);
	variant = (enum variant)args.variant_index;
	long ps = sysconf(_SC_PAGESIZE);
	if (ps <= 0)
		bench_fatal_errno("failed to read the page size");
	page_size = (size_t)ps;
	check_args(&args);

	offcpu_open();
	struct calibration cal = calibrate();
	/* After the calibration: it sizes batches by one operation, not by its repeats. */
	repeat = variant == V_MEMCPY || variant == V_MEMCPY_COLD ? 1 : args.profile_repeat;
	emit_meta(&args, &cal);
	emit_samples(&args, cal.batch);
	if (hot.raw)
		batch_release(&hot);
	return 0;
}
