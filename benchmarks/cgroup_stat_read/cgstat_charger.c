/*
 * cgstat_charger - the process that gives bakeoff's child cgroup something to count.
 *
 *   cgstat_charger CGROUP_DIR MIB
 *
 * Moves itself into CGROUP_DIR (writes its pid to cgroup.procs, v1 and v2 alike), then
 * charges MIB MiB of anonymous memory and MIB/4 MiB of shmem (a memfd) to it by writing
 * every page, prints "ready" on stdout, and sleeps until killed. It never touches memory
 * again, so the cgroup's counters stay still while they are read and compared. It dies with
 * its parent (PR_SET_PDEATHSIG) so that a killed harness leaves no charger behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "cgstat_charger: failed to %s: %s\n", what, strerror(errno));
	exit(1);
}

static void touch(char *p, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);

	for (size_t off = 0; off < len; off += (size_t)page)
		p[off] = 1;
}

int main(int argc, char **argv)
{
	char path[4096], pid[32];
	size_t mib, anon, shm;
	char *p;
	int fd, memfd;

	if (argc != 3 || (mib = strtoul(argv[2], NULL, 10)) == 0) {
		fprintf(stderr, "usage: cgstat_charger CGROUP_DIR MIB\n");
		return 2;
	}
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		die("set the parent-death signal");
	snprintf(path, sizeof(path), "%s/cgroup.procs", argv[1]);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (fd < 0 || write(fd, pid, strlen(pid)) < 0)
		die("join the cgroup");
	close(fd);

	anon = mib << 20;
	shm = anon / 4;
	p = mmap(NULL, anon, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("map anonymous memory");
	madvise(p, anon, MADV_NOHUGEPAGE); /* 4 KiB pages: counters move in small, exact steps */
	touch(p, anon);
	memfd = memfd_create("bakeoff-charge", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, (off_t)shm) != 0)
		die("create shmem");
	p = mmap(NULL, shm, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (p == MAP_FAILED)
		die("map shmem");
	touch(p, shm);

	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
