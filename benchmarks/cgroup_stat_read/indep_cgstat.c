// SPDX-License-Identifier: GPL-2.0
/*
 * indep_cgstat - TEST-ONLY independent check of cgroup-stat-read's first answer: what a
 * query of a memory cgroup's statistics (memory.stat and memory.numa_stat in full, 3 fields
 * taken out: its first 3 lines) costs by `cat`, by reopening the files, and through held fds (METHOD.md, "The
 * independent check"). It shares no code with cgstat.c, memstat.c or bench.c.
 *
 *     indep_cgstat CGROUP_DIR ROUNDS QUERIES
 *
 * Per round, the ways' order rotating: QUERIES queries by reopen and by held (QUERIES / 50,
 * at least 3, by cat), each query timed alone with CLOCK_MONOTONIC; the round's figure per
 * way is the median query (a query that lost the CPU to another task is an outlier, not a
 * share of a mean). Prints one JSON object: every round's median per way, in µs.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUNDS 200
#define MAX_QUERIES 100000
#define BUF (64 * 1024)

extern char **environ;

enum way { CAT, REOPEN, HELD, NWAYS };
static const char *way_names[NWAYS] = { "cat", "reopen", "held" };

static char stat_path[4096], numa_path[4096];
static char buf[2][BUF];
static int held_fd[2];
static volatile uint64_t sink;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* The values of memory.stat's first 3 lines ("name value"), as a consumer taking 3 fields. */
static void take_fields(const char *text, ssize_t len)
{
	const char *line = text;

	for (int f = 0; f < 3; f++) {
		const char *space = memchr(line, ' ', (size_t)(text + len - line));
		const char *nl = space ? memchr(space, '\n', (size_t)(text + len - space)) : NULL;

		if (!nl) {
			fprintf(stderr, "indep_cgstat: memory.stat has fewer than 3 lines\n");
			exit(1);
		}
		sink += strtoull(space + 1, NULL, 10);
		line = nl + 1;
	}
}

static ssize_t read_all(int fd, char *into)
{
	ssize_t n = read(fd, into, BUF);

	if (n <= 0)
		die("read");
	return n;
}

static void query_reopen(void)
{
	const char *paths[2] = { stat_path, numa_path };
	ssize_t n[2];

	for (int i = 0; i < 2; i++) {
		int fd = open(paths[i], O_RDONLY);
		if (fd < 0)
			die("open");
		n[i] = read_all(fd, buf[i]);
		close(fd);
	}
	take_fields(buf[0], n[0]);
	sink += (uint64_t)n[1];
}

static void query_held(void)
{
	ssize_t n[2];

	for (int i = 0; i < 2; i++) {
		if (lseek(held_fd[i], 0, SEEK_SET) != 0)
			die("lseek");
		n[i] = read_all(held_fd[i], buf[i]);
	}
	take_fields(buf[0], n[0]);
	sink += (uint64_t)n[1];
}

/* cat of both files into a pipe, read to the end, as a script's $(cat ...) does. */
static void query_cat(void)
{
	int p[2];
	posix_spawn_file_actions_t fa;
	pid_t pid;
	char *argv[] = { "cat", stat_path, numa_path, NULL };
	ssize_t n, got = 0;

	if (pipe(p))
		die("pipe");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	if (posix_spawnp(&pid, "cat", &fa, NULL, argv, environ))
		die("spawn cat");
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	while ((n = read(p[0], buf[0] + got, (size_t)(BUF - got))) > 0)
		got += n;
	close(p[0]);
	if (waitpid(pid, NULL, 0) != pid)
		die("waitpid");
	take_fields(buf[0], got);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 4 || atoi(argv[2]) < 1 || atoi(argv[2]) > MAX_ROUNDS || atoi(argv[3]) < 1 ||
	    atoi(argv[3]) > MAX_QUERIES) {
		fprintf(stderr, "usage: indep_cgstat CGROUP_DIR ROUNDS(1..%d) QUERIES(1..%d)\n",
			MAX_ROUNDS, MAX_QUERIES);
		return 2;
	}
	snprintf(stat_path, sizeof(stat_path), "%s/memory.stat", argv[1]);
	snprintf(numa_path, sizeof(numa_path), "%s/memory.numa_stat", argv[1]);
	int rounds = atoi(argv[2]), queries = atoi(argv[3]);
	int cat_queries = queries / 50 < 3 ? 3 : queries / 50;
	static double med[NWAYS][MAX_ROUNDS];
	double *t = malloc(sizeof(double) * (size_t)queries);

	held_fd[0] = open(stat_path, O_RDONLY);
	held_fd[1] = open(numa_path, O_RDONLY);
	if (!t || held_fd[0] < 0 || held_fd[1] < 0)
		die("open the cgroup's files");
	query_cat(); /* warm-up, untimed: cat's binary in the page cache, the dentries */
	query_reopen();
	query_held();

	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < NWAYS; j++) {
			enum way w = (enum way)((j + r) % NWAYS);
			int n = w == CAT ? cat_queries : queries;

			for (int q = 0; q < n; q++) {
				double t0 = now_us();
				if (w == CAT)
					query_cat();
				else if (w == REOPEN)
					query_reopen();
				else
					query_held();
				t[q] = now_us() - t0;
			}
			qsort(t, (size_t)n, sizeof(double), by_value);
			med[w][r] = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
		}

	printf("{\"rounds\": %d, \"queries\": %d, \"cat_queries\": %d, \"us_per_query\": {",
	       rounds, queries, cat_queries);
	for (int w = 0; w < NWAYS; w++) {
		printf("%s\"%s\": [", w ? ", " : "", way_names[w]);
		for (int r = 0; r < rounds; r++)
			printf("%s%.4f", r ? ", " : "", med[w][r]);
		printf("]");
	}
	printf("}}\n");
	return 0;
}
