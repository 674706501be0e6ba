/*
 * timed_exec - runs a program and reports what the whole process cost: wall time from fork
 * to reap, and its user and system CPU and peak RSS from wait4.
 *
 *   timed_exec [--cpu N] [--hold] -- PROGRAM [ARGS...]
 *
 * The program's stdout passes through; after it exits one more line follows:
 *
 *   {"type":"app_exit","wall_ns":...,"user_us":...,"sys_us":...,"max_rss_kib":...,"status":0,
 *    "self_cpu_us":...,"involuntary_switches":...}
 *
 * (self_cpu_us: the launcher's own CPU, so that a parent measuring itself plus its children,
 * as bpftrace under wait4, can take out everything that is not the tracer.)
 *
 * Why a launcher: every variant must measure the app the same way, and under bpftrace the
 * app is bpftrace's child (-c), out of the driver's reach. With --cpu the program runs on
 * that CPU whatever its parent's affinity (bpftrace runs elsewhere; its child would not).
 * With --hold the program is forked but held before exec: the launcher prints
 * {"type":"app_pid","pid":N} and waits for a line on stdin, so that a tracer can be told
 * which process to follow (LTTng's process tracker) before the program runs. The wall
 * clock starts when the child may exec: right after the fork, or at the release. SIGINT and SIGTERM are passed on to the program, and the program gets SIGTERM if this
 * launcher dies, so neither outlives the other.
 */
#include "bench.h"

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

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static long long tv_us(struct timeval tv)
{
	return (long long)tv.tv_sec * 1000000 + tv.tv_usec;
}

static int parse_cpu(const char *text)
{
	char *end;
	long cpu;

	errno = 0;
	cpu = strtol(text, &end, 10);
	if (errno || end == text || *end || cpu < 0 || cpu >= CPU_SETSIZE)
		bench_usage_error("--cpu %s is not a CPU number", text);
	return (int)cpu;
}

static void run_child(int cpu, char **argv, pid_t parent, int hold_fd)
{
	/* The launcher may die without forwarding (SIGKILL): take the program with it. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
		_exit(127);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0) {
			fprintf(stderr, "timed_exec: failed to pin to CPU %d: %s\n", cpu,
				strerror(errno));
			_exit(127);
		}
	}
	if (hold_fd >= 0) {
		char go;

		/* Released by a byte; EOF means the launcher gave up: do not run at all. */
		if (read(hold_fd, &go, 1) != 1)
			_exit(127);
		close(hold_fd);
	}
	execv(argv[0], argv);
	fprintf(stderr, "timed_exec: failed to execute %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int main(int argc, char **argv)
{
	int cpu = -1, i = 1;
	bool hold = false;

	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--cpu") == 0 && i + 1 < argc)
			cpu = parse_cpu(argv[++i]);
		else if (strcmp(argv[i], "--hold") == 0)
			hold = true;
		else
			bench_usage_error("unknown option '%s'; usage: timed_exec [--cpu N] [--hold] "
					  "-- PROGRAM [ARGS...]", argv[i]);
	}
	if (i >= argc || i + 1 >= argc)
		bench_usage_error("usage: timed_exec [--cpu N] [--hold] -- PROGRAM [ARGS...]");
	char **prog = argv + i + 1;

	/* Died with the launcher's parent (bpftrace), too: nothing left running. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	struct sigaction sa = { .sa_handler = forward_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	int hold_pipe[2] = { -1, -1 };
	if (hold && pipe(hold_pipe) != 0)
		bench_fatal_errno("failed to create the hold pipe");
	fflush(stdout);
	pid_t self = getpid();
	pid_t pid = fork();
	if (pid < 0)
		bench_fatal_errno("failed to fork");
	if (pid == 0) {
		if (hold)
			close(hold_pipe[1]);
		run_child(cpu, prog, self, hold ? hold_pipe[0] : -1);
	}
	child_pid = pid;
	/* From here (or from the release) to the reap: exec, loading, the run, the exit. */
	uint64_t t0 = bench_now_ns();
	if (hold) {
		char line[64];

		close(hold_pipe[0]);
		printf("{\"type\":\"app_pid\",\"pid\":%d}\n", (int)pid);
		fflush(stdout);
		/* EOF or an error: the child reads EOF too and exits without running. */
		bool go = fgets(line, sizeof(line), stdin) != NULL;
		t0 = bench_now_ns();
		if (go && write(hold_pipe[1], "g", 1) != 1)
			bench_fatal_errno("failed to release the program");
		close(hold_pipe[1]);
	}

	int status;
	struct rusage ru;
	pid_t got;
	while ((got = wait4(pid, &status, 0, &ru)) < 0 && errno == EINTR)
		;
	uint64_t t1 = bench_now_ns();
	if (got < 0)
		bench_fatal_errno("failed to wait for %s", prog[0]);

	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	struct rusage own;
	getrusage(RUSAGE_SELF, &own);
	printf("{\"type\":\"app_exit\",\"wall_ns\":%llu,\"user_us\":%lld,\"sys_us\":%lld,"
	       "\"max_rss_kib\":%ld,\"status\":%d,\"self_cpu_us\":%lld,\"involuntary_switches\":%ld}\n",
	       (unsigned long long)(t1 - t0), tv_us(ru.ru_utime), tv_us(ru.ru_stime), ru.ru_maxrss,
	       code, tv_us(own.ru_utime) + tv_us(own.ru_stime), ru.ru_nivcsw);
	fflush(stdout);
	return code;
}
