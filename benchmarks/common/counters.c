/*
 * counters.c - perf events a measured program opens on itself; see counters.h for the use.
 */
#include "counters.h"

#include "bench.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_COUNTERS 32
#define NAME_LEN 96

struct counter {
	char name[NAME_LEN];
	int fd;
	uint64_t total; /* as of the last read: counts only ever grow while enabled */
	uint64_t emitted; /* total at the previous bench_counters_emit() */
	bool on_raw_syscalls; /* a syscalls:* tracepoint counted on raw_syscalls (add_syscall()) */
};

struct event_kind {
	const char *name;
	uint32_t type;
	uint64_t config;
};

static const struct event_kind software_events[] = {
	{ "task_clock_ns", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "context_switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu_migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "page_faults_minor", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "page_faults_major", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
};

#define DTLB_LOAD_MISS                                                                     \
	(PERF_COUNT_HW_CACHE_DTLB | (PERF_COUNT_HW_CACHE_OP_READ << 8) |                   \
	 (PERF_COUNT_HW_CACHE_RESULT_MISS << 16))

static const struct event_kind pmu_events[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "branch_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "cache_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "dtlb_load_misses", PERF_TYPE_HW_CACHE, DTLB_LOAD_MISS },
};

static struct counter counters[MAX_COUNTERS];
static int n_counters;
static bool opened;
static bool inherit; /* bench_counters_open_children(): the processes the program starts too */
static char absent[1024]; /* "cycles: not supported; ..." */

static void note_absent(const char *name, const char *why)
{
	size_t len = strlen(absent);
	snprintf(absent + len, sizeof(absent) - len, "%s%s: %s", len ? "; " : "", name, why);
}

static int perf_open(uint32_t type, uint64_t config)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.config = config;
	/* Opened disabled; enabled only by bench_counters_start(), i.e. in the measured window. */
	attr.disabled = 1;
	attr.exclude_hv = 1;
	/* The program itself, not the helpers it starts (their work is not the operation's),
	 * unless it measures the processes it starts (bench_counters_open_children()). */
	attr.inherit = inherit;
	return (int)syscall(SYS_perf_event_open, &attr, 0 /* this task */, -1 /* any CPU */,
			    -1 /* no group */, PERF_FLAG_FD_CLOEXEC);
}

static const char *open_error(int err)
{
	switch (err) {
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		return "not supported on this host (no PMU, or the event does not exist)";
	case EACCES:
	case EPERM:
		return "not permitted (kernel.perf_event_paranoid, or not root)";
	case EMFILE:
		return "too many open files";
	default:
		return strerror(err);
	}
}

static void keep(const char *name, int fd, bool on_raw_syscalls)
{
	struct counter *c = &counters[n_counters++];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->fd = fd;
	c->total = c->emitted = 0;
	c->on_raw_syscalls = on_raw_syscalls;
}

static void add(const char *name, uint32_t type, uint64_t config)
{
	if (n_counters == MAX_COUNTERS) {
		note_absent(name, "more than 32 counters asked for");
		return;
	}
	int fd = perf_open(type, config);
	if (fd < 0) {
		note_absent(name, open_error(errno));
		return;
	}
	keep(name, fd, false);
}

/* The tracepoint's id from tracefs, or -1. */
static long find_tracepoint(const char *sys, const char *event)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[512];

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/%s/%s/id", roots[i], sys, event);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		long id = -1;
		if (fscanf(f, "%ld", &id) != 1)
			id = -1;
		fclose(f);
		if (id >= 0)
			return id;
	}
	return -1;
}

/*
 * System calls on one tracepoint. When the program exits, closing the last perf event on a
 * tracepoint unregisters it and waits out RCU grace periods (tracepoint_synchronize_unregister(),
 * under the kernel's event_mutex): ~40 ms here per distinct tracepoint, one after another, so
 * six counted system calls cost a trial ~240 ms. So "syscalls:sys_enter_NAME" is counted as
 * raw_syscalls:sys_enter with the filter "id == <NAME's number>" (sys_exit_NAME likewise):
 * both fire from the same hook at every system call, so the counts are the same, and one
 * tracepoint, one grace period, serves all of them. (While counting, each system call passes
 * every such event's filter: ~17 ns per event here, in the counted windows only.) A name not
 * in the table (a call newer than the build's headers: uretprobe on Debian 12's) or a kernel
 * that refuses the filter gets its own tracepoint as before: slower at exit, never a wrong
 * count. So do the events a program's children inherit (bench_counters_open_children()): a
 * 32-bit child's raw ids are another table's. And the table is used only where sys_enter_NAME
 * is always the call __NR_NAME when both exist, x86-64 and asm-generic's 64-bit table: 32-bit
 * tables have aliases (i386's __NR_getuid is getuid16, __NR_stat newstat, __NR_umount
 * oldumount).
 */
static const struct {
	const char *name;
	long nr;
} syscall_nrs[] = {
#if defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__) || defined(__riscv) ||     \
			  defined(__loongarch__))
#include "syscall_nrs.h" /* { "read", __NR_read }, ...: made by common.mk */
#endif
	{ NULL, 0 },
};

/* syscalls:<event> opened as a filtered raw_syscalls event; false if it cannot be. */
static bool add_syscall(const char *name, const char *event)
{
	static const char *const raws[] = { "sys_enter", "sys_exit" };

	if (inherit)
		return false;
	for (size_t r = 0; r < sizeof(raws) / sizeof(raws[0]); r++) {
		size_t len = strlen(raws[r]);
		if (strncmp(event, raws[r], len) != 0 || event[len] != '_')
			continue;
		for (size_t i = 0; syscall_nrs[i].name; i++) {
			if (strcmp(syscall_nrs[i].name, event + len + 1) != 0)
				continue;
			long id = find_tracepoint("raw_syscalls", raws[r]);
			int fd = id < 0 ? -1 : perf_open(PERF_TYPE_TRACEPOINT, (uint64_t)id);
			if (fd < 0)
				return false;
			char filter[32];
			snprintf(filter, sizeof(filter), "id == %ld", syscall_nrs[i].nr);
			if (ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) != 0) {
				close(fd);
				return false;
			}
			keep(name, fd, true);
			return true;
		}
	}
	return false;
}

static void add_tracepoint(const char *spec)
{
	/* 47 + '.' + 47 characters fit a counter's name */
	char sys[NAME_LEN / 2], event[NAME_LEN / 2], name[NAME_LEN];
	const char *colon = strchr(spec, ':');

	if (!colon || colon == spec || !colon[1] || strchr(colon + 1, ':') ||
	    (size_t)(colon - spec) >= sizeof(sys) || strlen(colon + 1) >= sizeof(event)) {
		note_absent(spec, "not a tracepoint; write it as subsystem:event, e.g. tlb:tlb_flush");
		return;
	}
	snprintf(sys, sizeof(sys), "%.*s", (int)(colon - spec), spec);
	snprintf(event, sizeof(event), "%s", colon + 1);
	snprintf(name, sizeof(name), "%s.%s", sys, event);
	for (int i = 0; i < n_counters; i++)
		if (strcmp(counters[i].name, name) == 0)
			return; /* named twice (by the program and in the environment) */
	long id = find_tracepoint(sys, event);
	if (id < 0) {
		note_absent(spec, "no such tracepoint in tracefs (or tracefs is not mounted)");
		return;
	}
	/* It exists (so the system call is traced): counted on raw_syscalls if it can be. */
	if (strcmp(sys, "syscalls") == 0 && n_counters < MAX_COUNTERS && add_syscall(name, event))
		return;
	add(name, PERF_TYPE_TRACEPOINT, (uint64_t)id);
}

static void add_tracepoints(const char *list)
{
	char *copy = strdup(list ? list : "");

	if (!copy)
		bench_fatal_errno("failed to copy the tracepoint list");
	char *save = NULL;
	for (char *tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
		add_tracepoint(tok);
	free(copy);
}

void bench_counters_open(const char *tracepoints)
{
	if (opened)
		bench_fatal("bench_counters_open() called twice");
	opened = true;
	/* Off: the same program without counting, so the cost of counting can be measured. */
	const char *switch_ = getenv("BAKEOFF_COUNTERS");
	if (switch_ && strcmp(switch_, "off") == 0) {
		note_absent("all", "BAKEOFF_COUNTERS=off");
		return;
	}
	for (size_t i = 0; i < sizeof(software_events) / sizeof(software_events[0]); i++)
		add(software_events[i].name, software_events[i].type, software_events[i].config);
	/*
	 * BAKEOFF_PMU_STANDIN=1 opens the PMU events as the software cpu-clock event instead: on a
	 * host without a PMU (a VM) it is the only way the code that handles present PMU events
	 * runs at all, and the tests use it. The meta line says so, so it cannot pass for cycles.
	 */
	const char *standin = getenv("BAKEOFF_PMU_STANDIN");
	bool use_standin = standin && strcmp(standin, "1") == 0;
	for (size_t i = 0; i < sizeof(pmu_events) / sizeof(pmu_events[0]); i++) {
		if (use_standin)
			add(pmu_events[i].name, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
		else
			add(pmu_events[i].name, pmu_events[i].type, pmu_events[i].config);
	}
	if (use_standin)
		note_absent("pmu", "stand-in: BAKEOFF_PMU_STANDIN=1 counts cpu-clock in place of "
				   "every PMU event");
	add_tracepoints(tracepoints);
	add_tracepoints(getenv("BAKEOFF_TRACEPOINTS"));
}

void bench_counters_open_children(const char *tracepoints)
{
	inherit = true;
	bench_counters_open(tracepoints);
}

void bench_counters_open_late(const char *tracepoints)
{
	bench_counters_open(tracepoints);
	bench_meta_begin();
	bench_counters_meta();
	bench_meta_end();
}

bool bench_counters_opened(void)
{
	return opened;
}

int bench_counters_open_count(void)
{
	return n_counters;
}

void bench_counters_start(void)
{
	if (n_counters)
		prctl(PR_TASK_PERF_EVENTS_ENABLE, 0, 0, 0, 0);
}

void bench_counters_stop(void)
{
	if (!n_counters)
		return;
	prctl(PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0);
	for (int i = 0; i < n_counters; i++) {
		uint64_t value;
		if (read(counters[i].fd, &value, sizeof(value)) == (ssize_t)sizeof(value))
			counters[i].total = value;
		else
			bench_fatal_errno("failed to read the counter %s", counters[i].name);
	}
}

void bench_counters_emit(double ops)
{
	char metric[NAME_LEN + sizeof("per_op.")];

	if (!(ops > 0))
		bench_fatal("bench_counters_emit: ops must be positive, got %g", ops);
	for (int i = 0; i < n_counters; i++) {
		struct counter *c = &counters[i];
		snprintf(metric, sizeof(metric), "per_op.%.*s", NAME_LEN - 1, c->name);
		bench_emit_sample(metric, (double)(c->total - c->emitted) / ops);
		c->emitted = c->total;
	}
}

void bench_counters_discard(void)
{
	for (int i = 0; i < n_counters; i++)
		counters[i].emitted = counters[i].total;
}

/* The counters' names, comma-separated: all of them, or those counted on raw_syscalls. */
static void meta_names(const char *key, bool only_on_raw_syscalls)
{
	char names[MAX_COUNTERS * NAME_LEN] = "";
	size_t len = 0;

	for (int i = 0; i < n_counters; i++) {
		if (only_on_raw_syscalls && !counters[i].on_raw_syscalls)
			continue;
		if (len)
			names[len++] = ',';
		size_t n = strlen(counters[i].name); /* < NAME_LEN: fits, MAX_COUNTERS at most */
		memcpy(names + len, counters[i].name, n + 1);
		len += n;
	}
	bench_meta_str(key, names);
}

void bench_counters_meta(void)
{
	meta_names("counters", false);
	meta_names("counters_on_raw_syscalls", true);
	bench_meta_str("counters_absent", absent);
}

uint64_t bench_samples_total(const struct bench_args *args)
{
	return args->samples + args->counted_samples;
}

bool bench_sample_counted(const struct bench_args *args, uint64_t i)
{
	return i >= args->samples;
}

const char *bench_metric(bool counted, const char *metric)
{
	static char name[NAME_LEN + sizeof("counted.")];

	if (!counted)
		return metric;
	snprintf(name, sizeof(name), "counted.%s", metric);
	return name;
}
