// SPDX-License-Identifier: GPL-2.0
/*
 * indep_move - TEST-ONLY independent check of mremap-vs-memcpy's first answer: how much
 * faster one mremap is than a hot memcpy of the same buffer (METHOD.md, "The independent
 * check"). It shares no code with mremap_bench.c or bench.c, and handles time off the CPU
 * another way: each operation is timed by the thread's own CPU clock
 * (CLOCK_THREAD_CPUTIME_ID), which does not advance while another task has the CPU, where
 * mremap_bench subtracts the schedstat wait from a wall-clock reading.
 *
 *     indep_move SIZE_MIB ROUNDS
 *
 * Per round, in alternating order: one hot copy (src and dst written to once before the first
 * round, the same two buffers every round) and one move (a fresh 2 MiB-aligned source of
 * SIZE, every page written, THP off; a 2*SIZE hole released before the source is mapped,
 * a guard between them; mremap(src, SIZE, 2*SIZE, MAYMOVE|FIXED, hole), as realloc of a large block). After
 * the clock: the copy's last byte, and one byte per moved page, checked. Prints one JSON
 * object with every operation's ns.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MIB (1024UL * 1024)
#define PAGE 4096UL
#define MAX_ROUNDS 1000

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* len bytes at a 2 MiB boundary: over-map by 2 MiB and trim both ends. */
static char *map_aligned(size_t len)
{
	size_t pmd = 2 * MIB;
	char *raw = mmap(NULL, len + pmd, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		die("mmap");
	char *start = (char *)(((uintptr_t)raw + pmd - 1) & ~(pmd - 1));
	if (start > raw)
		munmap(raw, (size_t)(start - raw));
	munmap(start + len, (size_t)(raw + len + pmd - (start + len)));
	if (madvise(start, len, MADV_NOHUGEPAGE))
		die("madvise");
	return start;
}

static void write_pages(char *p, size_t len, char tag)
{
	for (size_t off = 0; off < len; off += PAGE)
		p[off] = (char)(tag + off / PAGE);
}

static double one_copy(char *dst, const char *src, size_t len)
{
	double t0 = cpu_ns();
	memcpy(dst, src, len);
	__asm__ volatile("" : : "r"(dst) : "memory");
	double t = cpu_ns() - t0;

	if (dst[len - 1] != src[len - 1]) {
		fprintf(stderr, "indep_move: the copy lost its last byte\n");
		exit(1);
	}
	return t;
}

/* One realloc-style move. The arena (address space only) holds the hole, a 2 MiB guard and
 * the source, so the source can never be placed inside the hole it moves to. */
static double one_move(size_t len)
{
	size_t guard = 2 * MIB, arena_len = 2 * len + guard + len;
	char *arena = map_aligned(arena_len);
	if (mprotect(arena, arena_len, PROT_NONE))
		die("mprotect");
	char *hole = arena, *src = arena + 2 * len + guard;
	munmap(hole, 2 * len); /* the free range the move goes to, released first */
	if (mmap(src, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		 0) != src)
		die("mmap the source");
	if (madvise(src, len, MADV_NOHUGEPAGE))
		die("madvise");
	write_pages(src, len, 7);

	double t0 = cpu_ns();
	char *moved = mremap(src, len, 2 * len, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	double t = cpu_ns() - t0;

	if (moved == MAP_FAILED)
		die("mremap");
	for (size_t off = 0; off < len; off += PAGE)
		if (moved[off] != (char)(7 + off / PAGE)) {
			fprintf(stderr, "indep_move: page %zu did not move\n", off / PAGE);
			exit(1);
		}
	munmap(arena, arena_len);
	return t;
}

int main(int argc, char **argv)
{
	if (argc != 3 || atoi(argv[1]) < 1 || atoi(argv[2]) < 1 || atoi(argv[2]) > MAX_ROUNDS) {
		fprintf(stderr, "usage: indep_move SIZE_MIB ROUNDS (ROUNDS 1..%d)\n", MAX_ROUNDS);
		return 2;
	}
	size_t len = (size_t)atoi(argv[1]) * MIB;
	int rounds = atoi(argv[2]);
	static double copy_ns[MAX_ROUNDS], move_ns[MAX_ROUNDS];

	char *src = map_aligned(len), *dst = map_aligned(len);
	write_pages(src, len, 1);
	write_pages(dst, len, 2);
	one_copy(dst, src, len); /* warm-up: the copy is hot by definition */
	one_move(len);

	for (int r = 0; r < rounds; r++) {
		if (r % 2) {
			copy_ns[r] = one_copy(dst, src, len);
			move_ns[r] = one_move(len);
		} else {
			move_ns[r] = one_move(len);
			copy_ns[r] = one_copy(dst, src, len);
		}
	}
	printf("{\"size_mib\": %zu, \"rounds\": %d, \"memcpy_ns\": [", len / MIB, rounds);
	for (int r = 0; r < rounds; r++)
		printf("%s%.0f", r ? ", " : "", copy_ns[r]);
	printf("], \"mremap_ns\": [");
	for (int r = 0; r < rounds; r++)
		printf("%s%.0f", r ? ", " : "", move_ns[r]);
	printf("]}\n");
	return 0;
}
