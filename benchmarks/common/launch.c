/*
 * bakeoff-launch - start one trial and report its own resource usage.
 *
 *     bakeoff-launch --report-fd FD [--cpu N] [--parent-pid PID] -- PROGRAM [ARGS...]
 *
 * Why it exists: Linux carries the peak RSS of the address space a process had before
 * execve() into its ru_maxrss, and a trial forked straight from the harness starts as a
 * copy of a ~40 MB Python process. Every trial would then "use" at least that much. This
 * launcher is small: it forks, the child (a copy of this small process) execs the trial,
 * and wait4() on that child gives the trial's own user and system CPU and peak RSS.
 *
 * The launcher ignores SIGINT and SIGTERM so that it outlives the trial and can report
 * (the harness signals the whole process group; the trial gets the signals with their
 * default actions restored). It writes one JSON line to FD and exits 0; the trial's exit
 * status is in that line. If exec fails, the child prints why and exits 127.
 *
 * The line also carries what contention the trial met (bakeoff/run/contention.py): its
 * involuntary and voluntary context switches (wait4's rusage, summed over the trial and the
 * descendants it reaped, as its CPU times are), and its run-queue wait, run_delay, the second
 * field of /proc/PID/schedstat, read from the trial's zombie (waitid WNOWAIT) just before it
 * is reaped. That wait is the trial process's own (its main thread's): the kernel sums
 * run_delay over a thread group or a process tree nowhere, so a trial that spawns measured
 * children reports theirs itself (meta children_run_delay_s, as bakeoff-cmd-exec does).
 *
 * With --parent-pid (the harness's pid) the launcher notices the harness's death
 * (PR_SET_PDEATHSIG, SIGHUP) and treats it as the harness's own stop: SIGTERM to the trial's
 * process group, so that the trial removes what it created (a tracing session, a temp
 * directory, a pinned BPF object) as on Ctrl-C; SIGKILL to the group after STOP_GRACE_S;
 * then it exits without a report (nobody is left to read it). A trial whose parent is this
 * launcher may also set PDEATHSIG itself: it then fires when the launcher goes.
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* As bakeoff/run/trial_process.py STOP_GRACE_S: how long a stopped trial has to clean up. */
#define STOP_GRACE_S 10

static volatile sig_atomic_t harness_gone;

static void on_harness_death(int sig)
{
	(void)sig;
	harness_gone = 1;
}

static void on_child(int sig)
{
	(void)sig; /* only wakes sigsuspend */
}

/* The trial's process group: the harness starts this launcher as a group leader. Run by
 * hand from a shell it may not be one; then only the trial itself. */
static void signal_trial(pid_t trial, int sig)
{
	if (getpgrp() == getpid())
		kill(0, sig);
	else
		kill(trial, sig);
}

static pid_t trial_pid;

static void on_grace_over(int sig)
{
	(void)sig;
	signal_trial(trial_pid, SIGKILL);
	_exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: bakeoff-launch --report-fd FD [--cpu N] [--parent-pid PID] -- "
			"PROGRAM [ARGS...]\n");
	exit(2);
}

static long parse_long(const char *text)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno || *end || end == text || v < 0)
		usage();
	return v;
}

struct options {
	long report_fd, cpu, parent; /* -1: not given */
	char **trial_argv;           /* PROGRAM [ARGS...] */
};

static struct options parse_options(int argc, char **argv)
{
	struct options o = { -1, -1, -1, NULL };
	int i = 1;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--report-fd") && i + 1 < argc)
			o.report_fd = parse_long(argv[++i]);
		else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
			o.cpu = parse_long(argv[++i]);
		else if (!strcmp(argv[i], "--parent-pid") && i + 1 < argc)
			o.parent = parse_long(argv[++i]);
		else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else
			usage();
	}
	if (o.report_fd < 0 || i >= argc)
		usage();
	o.trial_argv = &argv[i];
	return o;
}

/* Stop with the harness (see the top); if it is already gone, there is nobody to report
 * to: false. SIGHUP and SIGCHLD stay blocked except inside sigsuspend, so that neither can
 * slip in between a check and the wait; *trial_mask is the mask the trial inherits. */
static bool watch_harness_and_trial(long parent, sigset_t *trial_mask)
{
	sigset_t wake;
	sigemptyset(&wake);
	sigaddset(&wake, SIGHUP);
	sigaddset(&wake, SIGCHLD);
	sigprocmask(SIG_BLOCK, &wake, trial_mask);
	struct sigaction act = { .sa_handler = on_harness_death };
	sigemptyset(&act.sa_mask);
	sigaction(SIGHUP, &act, NULL);
	act.sa_handler = on_child;
	sigaction(SIGCHLD, &act, NULL);
	if (parent > 0 && (prctl(PR_SET_PDEATHSIG, SIGHUP) || getppid() != (pid_t)parent))
		return false;
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	return true;
}

/* In the child: the signals as a shell would give them, pinned, exec'd. Never returns. */
__attribute__((noreturn)) static void exec_trial(const struct options *o,
					    const sigset_t *trial_mask)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL); /* fork cleared PDEATHSIG: the trial chooses its own */
	signal(SIGHUP, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	sigprocmask(SIG_SETMASK, trial_mask, NULL);
	close((int)o->report_fd);
	if (o->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET((int)o->cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "bakeoff-launch: failed to pin to CPU %ld: %s\n", o->cpu,
				strerror(errno));
			_exit(127);
		}
	}
	execvp(o->trial_argv[0], o->trial_argv);
	fprintf(stderr, "cannot start %s: %s\n", o->trial_argv[0], strerror(errno));
	_exit(127);
}

/* The trial's run-queue wait in ns (schedstat's second field), read while it is a zombie;
 * -1 where the kernel has no schedstat (CONFIG_SCHED_INFO off). */
static long long zombie_run_delay_ns(pid_t pid)
{
	char path[64], buf[128];
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	unsigned long long run_ns, delay_ns;
	if (sscanf(buf, "%llu %llu", &run_ns, &delay_ns) != 2)
		return -1;
	return (long long)delay_ns;
}

/* Until the trial exits: its status and rusage; false if waiting failed. If the harness
 * dies meanwhile, the trial is stopped as the harness would: SIGTERM, SIGKILL after the
 * grace (the launcher ignores the first and goes with the second). */
static bool wait_for_trial(pid_t pid, const sigset_t *wait_mask, int *status, struct rusage *ru,
			   long long *run_delay_ns)
{
	bool stopping = false;
	for (;;) {
		siginfo_t info = { 0 };
		/* Exited but not yet reaped: its /proc entry still holds its schedstat. */
		if (!waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) && info.si_pid == pid)
			*run_delay_ns = zombie_run_delay_ns(pid);
		pid_t got = wait4(pid, status, WNOHANG, ru);
		if (got == pid)
			return true;
		if (got < 0 && errno != EINTR) {
			fprintf(stderr, "bakeoff-launch: failed to wait: %s\n", strerror(errno));
			return false;
		}
		if (harness_gone && !stopping) {
			stopping = true;
			signal(SIGALRM, on_grace_over);
			alarm(STOP_GRACE_S);
			signal_trial(pid, SIGTERM);
		}
		sigsuspend(wait_mask);
	}
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv);
	sigset_t trial_mask;
	if (!watch_harness_and_trial(o.parent, &trial_mask))
		return 1;

	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "bakeoff-launch: failed to fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0)
		exec_trial(&o, &trial_mask);
	trial_pid = pid;
	sigset_t wait_mask = trial_mask; /* SIGHUP, SIGCHLD and the grace's alarm let through */
	sigdelset(&wait_mask, SIGHUP);
	sigdelset(&wait_mask, SIGCHLD);
	sigdelset(&wait_mask, SIGALRM);

	int status;
	struct rusage ru;
	long long run_delay_ns = -1;
	if (!wait_for_trial(pid, &wait_mask, &status, &ru, &run_delay_ns))
		return 1;
	if (harness_gone) {
		/* The trial has cleaned up and exited; what it left in its group (a helper it
		 * spawned) goes too, as the harness would do. No report: nobody reads it. */
		alarm(0);
		signal_trial(pid, SIGKILL);
		return 1;
	}
	int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
	dprintf((int)o.report_fd,
		"{\"exit_code\":%d,\"user_s\":%ld.%06ld,\"sys_s\":%ld.%06ld,\"max_rss_kib\":%ld,"
		"\"nivcsw\":%ld,\"nvcsw\":%ld,\"run_delay_ns\":%lld}\n",
		exit_code, (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
		(long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, ru.ru_maxrss, ru.ru_nivcsw,
		ru.ru_nvcsw, run_delay_ns);
	return 0;
}
