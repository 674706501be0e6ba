/*
 * cmd_exec.c - bakeoff-cmd-exec: the trial program of `bakeoff cmd` (bakeoff/cmd/definition.py).
 *
 *     bakeoff-cmd-exec [--samples K] [--warmup W] [--shell SH] [--setup CMD] [--prepare CMD]
 *                      [--cleanup CMD] [--ignore-failure] [--check-output] -- ARGV...
 *
 * One trial: --setup once, then W warm-up and K measured executions of ARGV, each preceded
 * by --prepare (not timed), then --cleanup. Each execution is posix_spawnp + wait4: the wall
 * time around them, and the child's user and system CPU time and peak RSS from wait4's
 * rusage, are one sample each of wall_time, user_time, sys_time (s) and peak_rss (KiB).
 * Warm-up executions are run and discarded. cpu_time (s) is user_time + sys_time.
 *
 * Contention (bakeoff/run/contention.py): each spawned process's run-queue wait, schedstat's
 * run_delay read from its zombie (waitid WNOWAIT) before wait4 reaps it, is summed over every
 * process this trial spawned (hooks, warm-ups, the shell's start-up included, as the trial's
 * wall time includes them) and printed last as the meta children_run_delay_s: bakeoff-launch
 * sees only this executor's own wait, and the commands are what waits.
 *
 * --instructions N: after the measured executions, N more run under Valgrind's cachegrind
 * (`valgrind --tool=cachegrind --cache-sim=no --trace-children=yes`), each one sample of
 * `instructions`: the user-space instructions the command's processes executed (cachegrind's
 * "I refs", summed over every process it followed). It counts no kernel work and no waiting,
 * so other work on the machine does not move it; under --shell the shell's own start-up
 * (`SH -c ''` counted the same way, once) is taken off.
 *
 * --shell SH says ARGV is `SH -c TEXT`. The shell's own start-up is then not part of the
 * command's cost: `SH -c ''` is timed once beside every execution (interleaved, so drift hits
 * both alike) and the median of those is subtracted from every execution's wall, user and
 * system time, as hyperfine does; a value below zero is reported as 0. Peak RSS is a maximum,
 * not a sum, so nothing is subtracted from it. The medians are the counters shell_wall_time,
 * shell_user_time, shell_sys_time.
 *
 * A command's stdin is /dev/null and its stdout is discarded (as hyperfine's default), or,
 * with --check-output, hashed (64-bit FNV-1a): executions that print different output fail
 * the trial, and the hash is the meta "output_hash" the harness compares across commands.
 * Its stderr is this program's, so the harness quotes a failing command's last line.
 * A non-zero exit fails the trial (exit 1) unless --ignore-failure, which counts the measured
 * ones in the counter failed_executions. --setup, --prepare and --cleanup run under
 * /bin/sh -c; one that fails fails the trial; --cleanup also runs after a failure once
 * --setup has succeeded, and when the harness stops the trial with SIGTERM (a timeout,
 * Ctrl-C): the command in flight exits, then --cleanup runs.
 */
#include "bench.h"
#include "counters.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_EXECUTIONS 1000000

struct options {
	uint64_t samples, warmup, counted;
	const char *shell, *setup, *prepare, *cleanup;
	bool ignore_failure, check_output;
	uint64_t instructions; /* --instructions: executions counted under cachegrind */
	char **argv;
};

struct execution {
	double wall_s, user_s, sys_s;
	long max_rss_kib;
	int status; /* as wait4 gives it */
	double run_delay_s; /* schedstat run_delay of the process, read before reaping it */
	uint64_t output_hash, output_bytes;
};

static const char *cleanup_command; /* set once --setup succeeded: run on every way out */
/* SIGTERM or SIGINT (the harness stopping the trial's process group: a timeout, Ctrl-C):
 * the command in flight gets it too; once it has exited, --cleanup runs and we exit. */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static void run_cleanup(void);
static void run_hook(const char *flag, const char *command);

static void usage(void)
{
	printf("usage: bakeoff-cmd-exec [--samples K] [--warmup W] [--counted-samples C]\n"
	       "                        [--shell SH] [--setup CMD] [--prepare CMD] [--cleanup CMD]\n"
	       "                        [--ignore-failure] [--check-output] [--instructions N]\n"
	       "                        -- ARGV...\n"
	       "Runs ARGV W+K times and prints wall, user, sys time and peak RSS of the last K\n"
	       "as bakeoff protocol samples (the trial program of `bakeoff cmd`); then C times\n"
	       "more with kernel counters on, inherited by the command's processes, printed as\n"
	       "counted.<metric> and per_op.<counter> (one operation = one execution); then N\n"
	       "times under Valgrind's cachegrind, printed as instructions (user space only).\n");
}

static uint64_t parse_count(const char *flag, const char *text, uint64_t least)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || end == text || *end || text[0] == '-' || v < least || v > MAX_EXECUTIONS)
		bench_usage_error("%s %s: give a whole number from %" PRIu64 " to %d", flag, text,
				  least, MAX_EXECUTIONS);
	return v;
}

static void parse(int argc, char **argv, struct options *o)
{
	enum { O_SAMPLES = 1, O_WARMUP, O_COUNTED, O_SHELL, O_SETUP, O_PREPARE, O_CLEANUP, O_IGNORE,
	       O_CHECK, O_INSTRUCTIONS, O_HELP };
	static const struct option longopts[] = {
		{ "samples", required_argument, NULL, O_SAMPLES },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "counted-samples", required_argument, NULL, O_COUNTED },
		{ "shell", required_argument, NULL, O_SHELL },
		{ "setup", required_argument, NULL, O_SETUP },
		{ "prepare", required_argument, NULL, O_PREPARE },
		{ "cleanup", required_argument, NULL, O_CLEANUP },
		{ "ignore-failure", no_argument, NULL, O_IGNORE },
		{ "check-output", no_argument, NULL, O_CHECK },
		{ "instructions", required_argument, NULL, O_INSTRUCTIONS },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	*o = (struct options){ .samples = 10, .warmup = 1 };
	int c;
	opterr = 0;
	/* '+': stop at the first non-option, so ARGV's own flags are never taken for ours. */
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (c) {
		case O_SAMPLES: o->samples = parse_count("--samples", optarg, 1); break;
		case O_WARMUP: o->warmup = parse_count("--warmup", optarg, 0); break;
		case O_COUNTED: o->counted = parse_count("--counted-samples", optarg, 0); break;
		case O_SHELL: o->shell = optarg; break;
		case O_SETUP: o->setup = optarg; break;
		case O_PREPARE: o->prepare = optarg; break;
		case O_CLEANUP: o->cleanup = optarg; break;
		case O_IGNORE: o->ignore_failure = true; break;
		case O_CHECK: o->check_output = true; break;
		case O_INSTRUCTIONS:
			o->instructions = parse_count("--instructions", optarg, 0);
			break;
		case O_HELP: usage(); exit(0);
		default:
			bench_usage_error("unknown or incomplete option '%s'; see --help",
					  argv[optind - 1]);
		}
	}
	if (optind >= argc)
		bench_usage_error("no command: give it after --, e.g. -- cat /proc/self/stat");
	o->argv = argv + optind;
}

static double seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	run_cleanup();
	bench_fatal("%s", msg);
}

/* Status as words: "exited with status 3", "was killed by signal 9"; the two statuses a shell
 * gives a program it could not start, with what they mean (its own message went to stderr). */
static const char *status_words(int status, char *buf, size_t len)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		snprintf(buf, len, "exited with status 127 (a program it names was not found)");
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
		snprintf(buf, len, "exited with status 126 (a program it names is not executable)");
	else if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else
		snprintf(buf, len, "was killed by signal %d", WTERMSIG(status));
	return buf;
}

static double children_run_delay_s; /* every spawned process's, summed (see the top) */

/* schedstat's run_delay of an exited, not yet reaped, process; 0 without schedstat. */
static double zombie_run_delay_s(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	FILE *f = fopen(path, "re");
	unsigned long long run_ns = 0, delay_ns = 0;
	if (f) {
		if (fscanf(f, "%llu %llu", &run_ns, &delay_ns) != 2)
			delay_ns = 0;
		fclose(f);
	}
	return (double)delay_ns / 1e9;
}

/*
 * Start (posix_spawnp), wait4; times the whole of it. glibc's posix_spawn is a fork and exec
 * done with clone(CLONE_VM | CLONE_VFORK): no page tables copied, so the executor adds the
 * least it can to what is measured (hyperfine's Rust std starts commands the same way; a
 * plain fork() here measured 60 to 80 µs more per execution of `cat` on the KVM machines).
 * stdout goes to /dev/null, or to a pipe that is read and hashed when hash is true.
 */
static struct execution execute(char *const argv[], bool hash)
{
	struct execution e = { 0 };
	int pipefd[2] = { -1, -1 };
	if (hash && pipe2(pipefd, O_CLOEXEC) < 0)
		fail("failed to create a pipe: %s", strerror(errno));
	posix_spawn_file_actions_t actions;
	if (posix_spawn_file_actions_init(&actions) ||
	    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0) ||
	    (hash ? posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO)
		  : posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null",
						     O_WRONLY, 0)))
		fail("failed to prepare the command's stdin and stdout");
	pid_t pid;
	uint64_t t0 = bench_now_ns();
	int err = posix_spawnp(&pid, argv[0], &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	if (err)
		fail("cannot run '%s': %s", argv[0], strerror(err));
	/* Drained inside the timed section (the command cannot finish with a full pipe), but
	 * only copied there: the hashing waits until the timer has stopped. */
	unsigned char *out = NULL;
	size_t out_len = 0, out_cap = 0;
	if (hash) {
		close(pipefd[1]);
		for (;;) {
			if (out_cap - out_len < 65536) {
				out_cap = out_cap ? 2 * out_cap : 65536;
				if (!(out = realloc(out, out_cap)))
					fail("out of memory for the command's output");
			}
			ssize_t n = read(pipefd[0], out + out_len, out_cap - out_len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			out_len += (size_t)n;
		}
		close(pipefd[0]);
	}
	siginfo_t exited;
	while (waitid(P_PID, (id_t)pid, &exited, WEXITED | WNOWAIT) < 0) {
		if (errno != EINTR)
			fail("failed to wait for '%s': %s", argv[0], strerror(errno));
	}
	e.run_delay_s = zombie_run_delay_s(pid);
	children_run_delay_s += e.run_delay_s;
	struct rusage ru;
	while (wait4(pid, &e.status, 0, &ru) < 0) {
		if (errno != EINTR)
			fail("failed to wait for '%s': %s", argv[0], strerror(errno));
	}
	e.wall_s = (double)(bench_now_ns() - t0) / 1e9;
	if (hash) {
		uint64_t h = 1469598103934665603ULL; /* FNV-1a offset basis */
		for (size_t i = 0; i < out_len; i++)
			h = (h ^ out[i]) * 1099511628211ULL;
		e.output_hash = h;
		e.output_bytes = out_len;
		free(out);
	}
	e.user_s = seconds(ru.ru_utime);
	e.sys_s = seconds(ru.ru_stime);
	e.max_rss_kib = ru.ru_maxrss;
	return e;
}

static bool succeeded(int status)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * Execution i (0-based, warm-ups included): --prepare, the command, and the checks every
 * execution gets (a signal to stop, the exit status, --check-output against the first's
 * hash). counted: with the kernel counters on around it.
 */
static struct execution execute_checked(const struct options *o, uint64_t i,
					uint64_t first_hash, bool counted)
{
	if (stop_signal)
		fail("stopped by signal %d after %" PRIu64 " executions", (int)stop_signal, i);
	if (o->prepare)
		run_hook("--prepare", o->prepare);
	if (counted)
		bench_counters_start();
	struct execution e = execute(o->argv, o->check_output);
	if (counted)
		bench_counters_stop();
	if (stop_signal)
		fail("stopped by signal %d after %" PRIu64 " executions", (int)stop_signal, i);
	char words[96];
	if (!succeeded(e.status) && !o->ignore_failure)
		fail("the command %s (--ignore-failure measures it anyway)",
		     status_words(e.status, words, sizeof(words)));
	if (o->check_output && i > 0 && e.output_hash != first_hash)
		fail("--check-output: execution %" PRIu64 " printed other output than the "
		     "first; the command's output varies from run to run", i + 1);
	return e;
}

static void run_hook(const char *flag, const char *command)
{
	char *argv[] = { "/bin/sh", "-c", (char *)command, NULL };
	struct execution e = execute(argv, false);
	char words[96];
	if (!WIFEXITED(e.status) || WEXITSTATUS(e.status) != 0)
		fail("%s '%s' %s", flag, command, status_words(e.status, words, sizeof(words)));
}

static void run_cleanup(void)
{
	const char *command = cleanup_command;
	cleanup_command = NULL; /* once, even if it fails */
	if (command)
		run_hook("--cleanup", command);
}

/*
 * The user-space instructions ARGV's processes execute, counted by cachegrind (see the top):
 * one execution under valgrind, each followed process writing its own out file into a
 * fresh directory, whose "summary:" lines (Ir) are summed. Valgrind's own messages go to
 * this program's stderr; the command's stdout to /dev/null.
 */
static double instructions_of(char *const argv[])
{
	const char *tmp = getenv("TMPDIR");
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/bakeoff-cachegrind.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		fail("failed to create a directory for cachegrind: %s", strerror(errno));
	char out_flag[320];
	snprintf(out_flag, sizeof(out_flag), "--cachegrind-out-file=%s/cg.%%p", dir);
	size_t n = 0;
	while (argv[n])
		n++;
	char **vg = calloc(n + 8, sizeof(*vg));
	if (!vg)
		fail("out of memory");
	size_t k = 0;
	vg[k++] = "valgrind";
	vg[k++] = "--tool=cachegrind";
	vg[k++] = "--cache-sim=no";
	vg[k++] = "--trace-children=yes";
	vg[k++] = "-q";
	vg[k++] = out_flag;
	for (size_t i = 0; i < n; i++)
		vg[k++] = argv[i];
	vg[k] = NULL;
	struct execution e = execute(vg, false);
	free(vg);
	char words[64];
	double total = 0;
	bool found = false;
	DIR *d = opendir(dir);
	struct dirent *ent;
	while (d && (ent = readdir(d))) {
		if (ent->d_name[0] == '.')
			continue;
		char path[512], line[256];
		snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
		FILE *f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f)) {
			unsigned long long ir;
			if (sscanf(line, "summary: %llu", &ir) == 1) {
				total += (double)ir;
				found = true;
			}
		}
		if (f)
			fclose(f);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
	if (!found)
		fail("cachegrind counted nothing: valgrind %s (is Debian's valgrind installed?)",
		     status_words(e.status, words, sizeof(words)));
	if (!succeeded(e.status) && !WIFEXITED(e.status))
		fail("the command under cachegrind %s", status_words(e.status, words, sizeof(words)));
	return total;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), compare_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double at_least_zero(double x)
{
	return x > 0 ? x : 0;
}

/* One execution's samples; the shell's start-up (medians, 0 without --shell) taken off. */
static void emit_execution(const struct execution *e, bool counted, double shell_wall,
			   double shell_user, double shell_sys)
{
	bench_emit_sample(bench_metric(counted, "wall_time"), at_least_zero(e->wall_s - shell_wall));
	bench_emit_sample(bench_metric(counted, "user_time"), at_least_zero(e->user_s - shell_user));
	bench_emit_sample(bench_metric(counted, "sys_time"), at_least_zero(e->sys_s - shell_sys));
	bench_emit_sample(bench_metric(counted, "cpu_time"),
			  at_least_zero(e->user_s + e->sys_s - shell_user - shell_sys));
	bench_emit_sample(bench_metric(counted, "peak_rss"), (double)e->max_rss_kib);
}

int main(int argc, char **argv)
{
	struct options o;
	parse(argc, argv, &o);
	uint64_t total = o.warmup + o.samples;
	struct execution *runs = calloc(total, sizeof(*runs));
	/* The shell's start-up, timed beside every execution: wall, user, sys. */
	double *shell[3] = { NULL, NULL, NULL };
	if (o.shell)
		for (int k = 0; k < 3; k++)
			shell[k] = calloc(total, sizeof(double));
	if (!runs || (o.shell && (!shell[0] || !shell[1] || !shell[2])))
		bench_fatal("failed to allocate %" PRIu64 " executions", total);
	char *empty_shell[] = { (char *)o.shell, "-c", "", NULL };

	struct sigaction sa = { .sa_handler = on_stop }; /* no SA_RESTART: wait4 sees EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (o.setup)
		run_hook("--setup", o.setup);
	cleanup_command = o.cleanup;

	/* Opened now, enabled only around the counted executions (after the measured ones). */
	bench_counters_open_children(NULL);
	uint64_t failed = 0;
	for (uint64_t i = 0; i < total; i++) {
		runs[i] = execute_checked(&o, i, runs[0].output_hash, false);
		if (!succeeded(runs[i].status) && i >= o.warmup)
			failed++;
		char words[96];
		if (o.shell) {
			struct execution s = execute(empty_shell, false);
			if (!WIFEXITED(s.status) || WEXITSTATUS(s.status) != 0)
				fail("the shell '%s -c \"\"' %s", o.shell,
				     status_words(s.status, words, sizeof(words)));
			shell[0][i] = s.wall_s;
			shell[1][i] = s.user_s;
			shell[2][i] = s.sys_s;
		}
	}
	double shell_wall = 0, shell_user = 0, shell_sys = 0;
	if (o.shell) {
		/* Warm-ups included: the shell's start-up is the same figure either way, and
		 * more executions make its median steadier. */
		shell_wall = median(shell[0], total);
		shell_user = median(shell[1], total);
		shell_sys = median(shell[2], total);
	}

	bench_meta_begin();
	bench_meta_str("executor", "posix_spawnp+wait4");
	bench_meta_str("shell", o.shell ? o.shell : "none");
	bench_meta_num("executions", (double)total);
	bench_meta_num("warmup_executions", (double)o.warmup);
	if (o.check_output) {
		char hex[17];
		snprintf(hex, sizeof(hex), "%016" PRIx64, runs[0].output_hash);
		bench_meta_str("output_hash", hex);
		bench_meta_num("output_bytes", (double)runs[0].output_bytes);
	}
	bench_counters_meta();
	bench_meta_end();
	for (uint64_t i = o.warmup; i < total; i++)
		emit_execution(&runs[i], false, shell_wall, shell_user, shell_sys);
	/* Counted executions: after the measured ones, so counting cannot move their times. */
	for (uint64_t c = 0; c < o.counted; c++) {
		struct execution e = execute_checked(&o, total + c, runs[0].output_hash, true);
		emit_execution(&e, true, shell_wall, shell_user, shell_sys);
		bench_counters_emit(1.0);
	}
	run_cleanup();
	if (o.shell) {
		bench_emit_counter("shell_wall_time", shell_wall);
		bench_emit_counter("shell_user_time", shell_user);
		bench_emit_counter("shell_sys_time", shell_sys);
	}
	if (o.ignore_failure)
		bench_emit_counter("failed_executions", (double)failed);
	if (o.instructions) {
		double shell_instructions = o.shell ? instructions_of(empty_shell) : 0;
		for (uint64_t k = 0; k < o.instructions; k++) {
			if (stop_signal)
				fail("stopped by signal %d", (int)stop_signal);
			bench_emit_sample("instructions",
					  at_least_zero(instructions_of(o.argv) - shell_instructions));
		}
	}
	/* A second meta line: the harness merges it into the first (bakeoff/run/protocol.py). */
	printf("{\"type\":\"meta\",\"children_run_delay_s\":%.9f}\n", children_run_delay_s);
	fflush(stdout);
	return 0;
}
