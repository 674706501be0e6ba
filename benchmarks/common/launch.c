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
 * With --parent-pid (the harness's pid) the launcher dies with the harness
 * (PR_SET_PDEATHSIG): a trial that wants to go down with the run sets PDEATHSIG itself,
 * and its parent is this launcher.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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

int main(int argc, char **argv)
{
	long report_fd = -1, cpu = -1, parent = -1;
	int i = 1;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--report-fd") && i + 1 < argc)
			report_fd = parse_long(argv[++i]);
		else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
			cpu = parse_long(argv[++i]);
		else if (!strcmp(argv[i], "--parent-pid") && i + 1 < argc)
			parent = parse_long(argv[++i]);
		else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else
			usage();
	}
	if (report_fd < 0 || i >= argc)
		usage();

	/* Die with the harness; if it is already gone, there is nobody to report to. */
	if (parent > 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != (pid_t)parent))
		return 1;
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);

	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "bakeoff-launch: failed to fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL); /* fork cleared PDEATHSIG: the trial chooses its own */
		close((int)report_fd);
		if (cpu >= 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET((int)cpu, &set);
			if (sched_setaffinity(0, sizeof(set), &set)) {
				fprintf(stderr, "bakeoff-launch: failed to pin to CPU %ld: %s\n", cpu,
					strerror(errno));
				_exit(127);
			}
		}
		execvp(argv[i], &argv[i]);
		fprintf(stderr, "cannot start %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}

	int status;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "bakeoff-launch: failed to wait: %s\n", strerror(errno));
			return 1;
		}
	}
	int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
	dprintf((int)report_fd,
		"{\"exit_code\":%d,\"user_s\":%ld.%06ld,\"sys_s\":%ld.%06ld,\"max_rss_kib\":%ld}\n",
		exit_code, (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
		(long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, ru.ru_maxrss);
	return 0;
}
