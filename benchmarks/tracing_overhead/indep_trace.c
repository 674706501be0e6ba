/* TEST-ONLY: an independent check of tracing-overhead's headline (METHOD.md, "The
 * independent check"), written apart from the room's code: only the seed and the room's
 * description of what it measures were read.
 *
 * What it measures: what a tracer adds to one call of a function that does no work, as
 * the difference between a traced and an untraced call measured in the same round. Each
 * way of calling has its own function (same body; `noipa`, so each is a real call of its
 * own symbol), so every tracer stays attached for the whole run and the rounds alternate
 * between the ways without attaching anything:
 *
 *   baseline      indep_untraced: nothing attached
 *   ebpf-floor    indep_traced_floor: uprobe + uretprobe, empty BPF programs
 *   ebpf-batched  indep_traced_batched: a 32-byte record per event into a 16 MiB ring
 *                 buffer, BPF_RB_NO_WAKEUP; the consumer drains on a 100 ms poll timeout
 *   ebpf-force    indep_traced_force: the same, BPF_RB_FORCE_WAKEUP (a wake-up per record)
 *   lttng         indep_traced_lttng (indep_trace_lttng.c, dlopen()ed once the session is
 *                 started): LTTng-UST entry and exit tracepoints, recorded by a real
 *                 session of lttng-sessiond (per-uid buffers, 8 x 1 MiB, vpid and vtid)
 *
 * A round runs each way (the order rotated each round): one untimed batch of CALLS calls,
 * then BATCHES timed batches (CLOCK_MONOTONIC_RAW around the batch, and the thread's
 * run-queue wait from /proc/thread-self/schedstat around that). The round's figure per way
 * is the median over its batches of (wall time - run-queue wait) / CALLS: what the calls
 * took on the CPU, traps, BPF programs and the interrupts they raised included, with the
 * time a neighbour had the CPU taken off (on a busy machine a preempted batch would
 * otherwise carry the neighbour's turn). The wall time alone is printed beside it, and the
 * wake-ups the app's thread made per call (sched:sched_waking counted on that thread: for
 * ebpf-force, how often a record found the consumer asleep; each such wake-up is a cost
 * of its own, so the figure is only comparable at a like rate). The app runs on one CPU,
 * the ring buffer's consumer thread on another.
 *
 * Every event is counted: the ring buffer's records by the consumer, LTTng's with
 * babeltrace2 at the end; a count that is not 2 per call fails the check (exit 1).
 * What it creates is removed however it ends (short of SIGKILL; then the next run
 * destroys sessions of dead indep_trace processes): the session and its trace directory,
 * the session daemon if it started one; the probes and maps go with its file descriptors.
 *
 *     indep_trace [ROUNDS [CALLS [BATCHES]]]      (root; default 10 1000 10)
 *
 * Prints one JSON object: per_call_ns (the headline's quantity), wall_per_call_ns and
 * wakeups_per_call (absent where the tracepoint cannot be counted), each per way, one figure
 * per round (medians over its batches); what a tracer adds is its round's figure less the
 * baseline's of the same round (tests/indep_checks.py). */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <linux/perf_event.h>

#include "indep_trace.skel.h"

typedef long (*traced_fn)(unsigned int);

/* The probed functions are written in assembly so that the instruction a uprobe replaces
 * is fixed: `push %rbp`, the first instruction of a function built with frame pointers,
 * which the kernel emulates. Where the first instruction must instead be single-stepped
 * out of line (`mov %edi,%eax`, `endbr64`: what gcc makes of an empty leaf function), a hit
 * takes a second trap, and in this VM the same empty uprobe measured many times dearer
 * (docs/notes/indep-checks-20261129-epyc.md): the probe site, not the tracer, would be the
 * figure. */
#if !defined(__x86_64__)
#error "indep_trace probes x86-64 functions written in assembly"
#endif
#define PROBED_FUNCTION(name)                                                      \
	long name(unsigned int duration_us);                                       \
	__asm__(".text\n.globl " #name "\n.type " #name ",@function\n.p2align 4\n" #name \
		":\n\tpush %rbp\n\tmov %rsp, %rbp\n\tmov %edi, %eax\n\tpop %rbp\n\tret\n" \
		".size " #name ", .-" #name "\n")
PROBED_FUNCTION(indep_untraced);
PROBED_FUNCTION(indep_traced_floor);
PROBED_FUNCTION(indep_traced_batched);
PROBED_FUNCTION(indep_traced_force);

enum way { BASELINE, FLOOR, BATCHED, FORCE, LTTNG, WAYS };
static const char *const way_name[WAYS] = {"baseline", "ebpf-floor", "ebpf-batched",
					   "ebpf-force", "lttng"};

static volatile sig_atomic_t interrupted;
static struct indep_trace_bpf *skel;
static struct ring_buffer *ring;
static pthread_t consumer;
static int consumer_running;
static volatile int consumer_stop;
static uint64_t records_seen; /* written by the consumer only */
static char session[64];
static int session_made;
static char trace_dir[PATH_MAX];
static pid_t own_daemon = -1;

static void on_signal(int sig) { interrupted = sig; }

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Runs argv, its stdout to out (NULL: /dev/null), stderr kept unless quiet; its status. */
static int run(const char *const argv[], char *out, size_t out_size, int quiet)
{
	int pipefd[2] = {-1, -1};
	pid_t pid;
	int status;
	size_t got = 0;

	if (out && pipe(pipefd) != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(out ? pipefd[1] : null, 1);
		if (quiet)
			dup2(null, 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (out) {
		ssize_t n;

		close(pipefd[1]);
		while ((n = read(pipefd[0], out + got, out_size - 1 - got)) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 || (got += (size_t)n) == out_size - 1)
				break;
		}
		out[got] = '\0';
		close(pipefd[0]);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* lttng -n (never spawn a daemon) -q with these arguments; its exit status. */
#define lttng(...) run((const char *[]){"lttng", "-n", "-q", __VA_ARGS__, NULL}, NULL, 0, 0)

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int daemon_answers(void)
{
	const char *argv[] = {"lttng", "-n", "list", NULL};

	return run(argv, NULL, 0, 1) == 0;
}

/* Sessions an indep_trace left when it was SIGKILLed: destroyed, their traces removed. */
static void sweep_dead_sessions(void)
{
	static char listing[1 << 16];
	const char *argv[] = {"lttng", "-n", "list", NULL};
	char *line, *save;

	if (run(argv, listing, sizeof(listing), 1) != 0)
		return;
	for (line = strtok_r(listing, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64], path[PATH_MAX];
		int owner;

		if (sscanf(line, " %*d) indep-trace-%d (%4095[^)])", &owner, path) != 2)
			continue;
		if (kill(owner, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(name, sizeof(name), "indep-trace-%d", owner);
		lttng("destroy", name);
		if (strstr(path, "/indep-trace-"))
			nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
}

static void cleanup(void)
{
	if (consumer_running) {
		consumer_stop = 1;
		pthread_join(consumer, NULL);
		consumer_running = 0;
	}
	ring_buffer__free(ring);
	ring = NULL;
	indep_trace_bpf__destroy(skel); /* detaches the probes, closes the maps */
	skel = NULL;
	if (session_made) {
		lttng("destroy", session);
		session_made = 0;
	}
	if (trace_dir[0]) {
		nftw(trace_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		trace_dir[0] = '\0';
	}
	if (own_daemon > 0) {
		int i;

		kill(-own_daemon, SIGTERM);
		for (i = 0; i < 100 && waitpid(own_daemon, NULL, WNOHANG) == 0; i++)
			usleep(50000);
		if (i == 100) {
			kill(-own_daemon, SIGKILL);
			waitpid(own_daemon, NULL, 0);
		}
		own_daemon = -1;
	}
}

static void fail(const char *what)
{
	fprintf(stderr, "indep_trace: %s\n", what);
	cleanup();
	exit(1);
}

static void check_interrupted(void)
{
	if (interrupted) {
		cleanup();
		signal(interrupted, SIG_DFL);
		raise(interrupted);
		exit(128 + interrupted);
	}
}

/* The session daemon: the running one, else one started here and stopped at the end. */
static void need_session_daemon(void)
{
	int i;

	if (daemon_answers())
		return;
	own_daemon = fork();
	if (own_daemon < 0)
		fail("cannot fork lttng-sessiond");
	if (own_daemon == 0) {
		int null = open("/dev/null", O_RDWR);

		setsid();
		dup2(null, 0), dup2(null, 1), dup2(null, 2);
		execlp("lttng-sessiond", "lttng-sessiond", "--no-kernel", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 300 && !daemon_answers(); i++) {
		if (waitpid(own_daemon, NULL, WNOHANG) == own_daemon) {
			own_daemon = -1;
			fail("lttng-sessiond exited at start (is lttng-tools installed?)");
		}
		check_interrupted();
		usleep(100000);
	}
	if (i == 300)
		fail("lttng-sessiond did not answer within 30 s");
}

static void start_session(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(session, sizeof(session), "indep-trace-%d", (int)getpid());
	snprintf(trace_dir, sizeof(trace_dir), "%s/indep-trace-%d-XXXXXX", tmp ? tmp : "/tmp",
		 (int)getpid());
	if (!mkdtemp(trace_dir)) {
		trace_dir[0] = '\0';
		fail("cannot make the trace directory (TMPDIR)");
	}
	if (lttng("create", session, "--output", trace_dir) != 0)
		fail("lttng create failed");
	session_made = 1;
	if (lttng("enable-channel", "-u", "-s", session, "--buffers-uid", "--subbuf-size=1M",
		  "--num-subbuf=8", "chan") != 0 ||
	    lttng("enable-event", "-u", "-s", session, "-c", "chan", "indep_trace:*") != 0 ||
	    lttng("add-context", "-u", "-s", session, "-c", "chan", "-t", "vpid", "-t", "vtid") != 0 ||
	    lttng("start", session) != 0)
		fail("setting up the LTTng session failed");
}

/* Events in the stopped session's trace, by babeltrace2's counter; -1 if unreadable. */
static long long recorded_events(long long *discarded)
{
	/* The counter prints a block every 10,000 messages as it goes; the last is the total. */
	static char out[1 << 20];
	const char *argv[] = {"babeltrace2", trace_dir, "--component=sink.utils.counter", NULL};
	char *line, *save;
	long long events = -1;

	*discarded = 0;
	if (run(argv, out, sizeof(out), 0) != 0)
		return -1;
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long long n;
		char what[64];

		if (sscanf(line, " %lld %63[^\n]", &n, what) != 2)
			continue;
		/* "2000 Event messages", "0 Discarded event messages", "0 Discarded packet
		 * messages": a lost event or packet is a discard */
		if (strcmp(what, "Event messages") == 0) /* a block's first line */
			events = n, *discarded = 0;
		else if (strncmp(what, "Discarded ", 10) == 0) /* events, then packets */
			*discarded += n;
	}
	return events;
}

static int count_record(void *ctx, void *data, size_t size)
{
	(void)ctx, (void)data;
	if (size == 32)
		__atomic_store_n(&records_seen, records_seen + 1, __ATOMIC_RELEASE);
	return 0;
}

static int cpu_of_mask(int highest, int other_than)
{
	cpu_set_t set;
	int cpu, found = -1;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && cpu != other_than) {
			found = cpu;
			if (!highest)
				break;
		}
	return found;
}

static void pin(pthread_t thread, int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(thread, sizeof(set), &set);
}

static int consumer_cpu;

/* How long the consumer sleeps in epoll before it drains the batched records: long, so it
 * sleeps until a forced record wakes it, as a forcing tracer's consumer does (the room's
 * waits with no timeout; libbpf users poll with a long one). With 1 ms it was often found
 * awake, and the app paid less per forced wake-up than a user pays (METHOD.md, "Measured:
 * ebpf-force against the check"). It also bounds how long the stop waits. */
#define CONSUMER_WAIT_MS 100

static void *consume(void *arg)
{
	(void)arg;
	pin(pthread_self(), consumer_cpu);
	/* Woken by a forced record, or after CONSUMER_WAIT_MS: then drain what came without a wake-up
	 * (ring_buffer__poll reads only the rings epoll called ready, and a record submitted
	 * with BPF_RB_NO_WAKEUP makes none ready). */
	while (!consumer_stop) {
		ring_buffer__poll(ring, CONSUMER_WAIT_MS);
		ring_buffer__consume(ring);
	}
	return NULL;
}

static void attach(struct bpf_program *prog, const char *exe, const char *func, int ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = func, .retprobe = ret);
	struct bpf_link *link = bpf_program__attach_uprobe_opts(prog, -1, exe, 0, &opts);
	char msg[256];

	if (!link) {
		snprintf(msg, sizeof(msg), "cannot attach %s to %s: %s", bpf_program__name(prog),
			 func, strerror(errno));
		fail(msg);
	}
	/* the skeleton owns its links: destroyed with it */
	if (ret)
		*(prog == skel->progs.floor_exit     ? &skel->links.floor_exit
		  : prog == skel->progs.batched_exit ? &skel->links.batched_exit
						     : &skel->links.force_exit) = link;
	else
		*(prog == skel->progs.floor_entry     ? &skel->links.floor_entry
		  : prog == skel->progs.batched_entry ? &skel->links.batched_entry
						      : &skel->links.force_entry) = link;
}

static void start_ebpf(const char *exe)
{
	skel = indep_trace_bpf__open_and_load();
	if (!skel)
		fail("cannot load the BPF programs (root? BTF?)");
	attach(skel->progs.floor_entry, exe, "indep_traced_floor", 0);
	attach(skel->progs.floor_exit, exe, "indep_traced_floor", 1);
	attach(skel->progs.batched_entry, exe, "indep_traced_batched", 0);
	attach(skel->progs.batched_exit, exe, "indep_traced_batched", 1);
	attach(skel->progs.force_entry, exe, "indep_traced_force", 0);
	attach(skel->progs.force_exit, exe, "indep_traced_force", 1);
	ring = ring_buffer__new(bpf_map__fd(skel->maps.records), count_record, NULL, NULL);
	if (!ring)
		fail("cannot open the ring buffer");
	if (pthread_create(&consumer, NULL, consume, NULL) != 0)
		fail("cannot start the consumer thread");
	consumer_running = 1;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* This thread's run-queue wait so far (ns): the second field of its schedstat. */

static int schedstat_fd = -1;

static double waited_ns(void)
{
	char buf[128] = "";
	unsigned long long run = 0, wait = 0;

	if (pread(schedstat_fd, buf, sizeof(buf) - 1, 0) > 0)
		sscanf(buf, "%llu %llu", &run, &wait);
	return (double)wait;
}

/* sched:sched_waking counted on this thread (the waker's context is where it fires): the
 * wake-ups its calls made. -1 where tracefs or perf events are not to be had. */
static int wakings_fd = -1;

static void open_wakings(void)
{
	struct perf_event_attr attr = {.size = sizeof(attr), .type = PERF_TYPE_TRACEPOINT,
				       .disabled = 0, .exclude_hv = 1};
	const char *ids[] = {"/sys/kernel/tracing/events/sched/sched_waking/id",
			     "/sys/kernel/debug/tracing/events/sched/sched_waking/id"};
	unsigned long long id = 0;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) && !id; i++) {
		FILE *f = fopen(ids[i], "r");

		if (f) {
			if (fscanf(f, "%llu", &id) != 1)
				id = 0;
			fclose(f);
		}
	}
	if (!id)
		return;
	attr.config = id;
	wakings_fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static double wakings(void)
{
	uint64_t n = 0;

	if (wakings_fd < 0 || read(wakings_fd, &n, sizeof(n)) != sizeof(n))
		return 0;
	return (double)n;
}

/* One batch, per call: its wall time, the part of it spent waiting for a CPU while
 * another task had it, and the wake-ups it made. */
struct batch {
	double wall, waited, wakeups;
};

static struct batch one_batch(traced_fn f, long calls)
{
	traced_fn volatile g = f;
	double w0 = waited_ns(), k0 = wakings();
	double t0 = now_ns(), t1;

	for (long i = 0; i < calls; i++)
		g(0);
	t1 = now_ns();
	return (struct batch){(t1 - t0) / (double)calls, (waited_ns() - w0) / (double)calls,
			      (wakings() - k0) / (double)calls};
}

static double median(double *x, int n)
{
	qsort(x, (size_t)n, sizeof(double), by_value);
	return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* One way's figures for one round, medians over its timed batches: the wall time per call
 * less the time the batch waited for a CPU (the headline: what the calls themselves took,
 * traps, BPF programs and interrupts they caused included, a neighbour's turn on the CPU
 * taken off as the kernel's schedstat counts it), and the wall time as it was. */
static void one_round(traced_fn f, long calls, int batches, double *out)
{
	double net[batches], wall[batches], woke[batches];

	one_batch(f, calls); /* untimed: caches and first hits */
	for (int b = 0; b < batches; b++) {
		struct batch x = one_batch(f, calls);

		net[b] = x.wall - x.waited;
		wall[b] = x.wall;
		woke[b] = x.wakeups;
		check_interrupted();
	}
	out[0] = median(net, batches);
	out[1] = median(wall, batches);
	out[2] = median(woke, batches);
}

/* Waits until the consumer has seen `expected` records (at most 10 s). */
static void drained(uint64_t expected)
{
	for (int i = 0; i < 10000; i++) {
		if (__atomic_load_n(&records_seen, __ATOMIC_ACQUIRE) >= expected)
			return;
		check_interrupted();
		usleep(1000);
	}
}

static long number(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi) {
		fprintf(stderr, "indep_trace: %s must be a number from %ld to %ld, not '%s' "
				"(usage: indep_trace [ROUNDS [CALLS [BATCHES]]])\n",
			what, lo, hi, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? number(argv[1], 2, 1000, "ROUNDS") : 10;
	long calls = argc > 2 ? number(argv[2], 10, 10000000, "CALLS") : 1000;
	int batches = argc > 3 ? (int)number(argv[3], 1, 1000, "BATCHES") : 10;
	traced_fn fn[WAYS] = {indep_untraced, indep_traced_floor, indep_traced_batched,
			      indep_traced_force, NULL};
	struct sigaction sa = {.sa_handler = on_signal};
	char exe[PATH_MAX], lib[PATH_MAX + 32];
	double *per_call[WAYS][3];
	uint64_t ebpf_calls = 0;
	long long lttng_calls = 0, events, discarded;
	void *handle;
	ssize_t n;
	int app_cpu;

	if (argc > 4) {
		fprintf(stderr, "indep_trace: usage: indep_trace [ROUNDS [CALLS [BATCHES]]]\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "indep_trace: needs root (uprobes, BPF, the LTTng root session "
				"daemon); run it with sudo\n");
		return 2;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		fail("cannot read /proc/self/exe");
	exe[n] = '\0';
	snprintf(lib, sizeof(lib), "%s/libindep_trace_lttng.so", dirname(strdup(exe)));

	app_cpu = cpu_of_mask(1, -1);
	consumer_cpu = cpu_of_mask(0, app_cpu);
	if (consumer_cpu < 0)
		consumer_cpu = app_cpu;
	pin(pthread_self(), app_cpu);
	schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY);
	open_wakings();
	if (schedstat_fd < 0)
		fail("cannot open /proc/thread-self/schedstat (CONFIG_SCHEDSTATS?)");

	need_session_daemon();
	sweep_dead_sessions();
	start_session();
	/* LTTng-UST's constructor waits this long (ms) for the session daemon to register the
	 * app, the session's events enabled in it; past its default (3 s) it goes on untraced,
	 * and a busy machine's freshly started daemon took longer (the first rounds' calls
	 * were then not recorded, a count the check below fails). */
	setenv("LTTNG_UST_REGISTER_TIMEOUT", "30000", 0);
	handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!handle || !(fn[LTTNG] = (traced_fn)dlsym(handle, "indep_traced_lttng")))
		fail("cannot load libindep_trace_lttng.so next to indep_trace (make)");
	start_ebpf(exe);
	check_interrupted();

	for (int w = 0; w < WAYS; w++)
		for (int k = 0; k < 3; k++)
			per_call[w][k] = calloc((size_t)rounds, sizeof(double));
	for (long r = 0; r < rounds; r++) {
		for (int k = 0; k < WAYS; k++) {
			int w = (int)((r + k) % WAYS);
			double figures[3];

			one_round(fn[w], calls, batches, figures);
			for (int f = 0; f < 3; f++)
				per_call[w][f][r] = figures[f];
			if (w == BATCHED || w == FORCE) {
				ebpf_calls += (uint64_t)(calls * (batches + 1));
				drained(2 * ebpf_calls);
			}
			if (w == LTTNG)
				lttng_calls += calls * (batches + 1);
		}
	}

	drained(2 * ebpf_calls);
	if (records_seen != 2 * ebpf_calls || skel->bss->lost != 0) {
		char msg[160];

		snprintf(msg, sizeof(msg), "the ring buffer had %llu records and %llu lost for "
			 "%llu traced calls (2 per call expected)", (unsigned long long)records_seen,
			 (unsigned long long)skel->bss->lost, (unsigned long long)ebpf_calls);
		fail(msg);
	}
	if (lttng("stop", session) != 0)
		fail("lttng stop failed");
	events = recorded_events(&discarded);
	if (events != 2 * lttng_calls || discarded != 0) {
		char msg[160];

		snprintf(msg, sizeof(msg), "LTTng recorded %lld events (%lld discarded) for %lld "
			 "traced calls (2 per call expected)", events, discarded, lttng_calls);
		fail(msg);
	}

	printf("{\"unit\": \"ns\", \"rounds\": %ld, \"calls\": %ld, \"batches\": %d, "
	       "\"app_cpu\": %d, \"consumer_cpu\": %d, \"ebpf_records\": %llu, "
	       "\"lttng_events\": %lld, ",
	       rounds, calls, batches, app_cpu, consumer_cpu, (unsigned long long)records_seen,
	       events);
	for (int k = 0; k < (wakings_fd >= 0 ? 3 : 2); k++) {
		static const char *const figure[3] = {"per_call_ns", "wall_per_call_ns",
						      "wakeups_per_call"};

		printf("%s\"%s\": {", k ? "}, " : "", figure[k]);
		for (int w = 0; w < WAYS; w++) {
			printf("%s\"%s\": [", w ? ", " : "", way_name[w]);
			for (long r = 0; r < rounds; r++)
				printf("%s%.4f", r ? ", " : "", per_call[w][k][r]);
			printf("]");
		}
	}
	printf("}}\n");
	cleanup();
	return 0;
}
