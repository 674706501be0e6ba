/*
 * bakeoff_tracer - the eBPF tracer of the tracing-overhead benchmark: a uprobe and a
 * uretprobe on one function of one library, entry and exit records through a BPF ring
 * buffer into a trace file, with a chosen wake-up policy. Held: it loads and attaches once,
 * then serves one trial after another over a Unix socket, so that a trial costs its calls,
 * not a tracer's start.
 *
 *   bakeoff_tracer --library PATH --function NAME --mode MODE --control @NAME [--poll-us N]
 *
 * MODE: force     BPF_RB_FORCE_WAKEUP on every record; the consumer sleeps in poll (the
 *                 seed's tracer)
 *       adaptive  flags 0: the kernel wakes the consumer only when it had caught up
 *       batched   BPF_RB_NO_WAKEUP: no wake-ups at all; during a trial the consumer drains
 *                 every --poll-us microseconds (default 1000, the seed's 1 ms poll timeout)
 *       floor     the same probes with empty programs, nothing recorded: the uprobe floor
 *
 * Probes attach to every process that maps the library (pid -1), so they are in place
 * before any app starts. Once both are attached it listens on the Unix socket @NAME (Linux's
 * abstract namespace: no file, so no path too long for a socket and nothing left behind
 * whatever ends it) and prints
 *
 *   {"type":"ready","mode":...,"libbpf":...}    on stdout, nothing more there
 *
 * One trial is one connection, one command a line:
 *
 *   begin FILE   records left in the ring buffer (a killed trial's) are discarded, the
 *                counts zeroed, FILE created (O_EXCL); answer {"type":"begun"}
 *   end          the app has exited, so every record is committed: drained to the last,
 *                FILE closed; answer {"type":"tracer_done","events":N,...} with this
 *                trial's counts only (drops as the difference of the drop map)
 *
 * A connection closed without `end` (its trial died) abandons the trial. Between trials it
 * sleeps in poll on the socket: no timer runs, not even batched's. SIGINT or SIGTERM: it
 * detaches and exits 0. Probes, maps and the socket are file descriptors of this
 * process: if it dies, the kernel removes them.
 */
#include "bench.h"

#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <limits.h>
#include <linux/types.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "bakeoff_tracer.h"
#include "bakeoff_tracer.skel.h"

enum mode { MODE_FORCE, MODE_ADAPTIVE, MODE_BATCHED, MODE_FLOOR };

static const char *const mode_names[] = { "force", "adaptive", "batched", "floor" };

struct options {
	const char *library;
	const char *function;
	const char *control;
	enum mode mode;
	long poll_us;
};

/* One trial's consumer: out is NULL between trials (records found then are a killed
 * trial's, discarded uncounted). */
struct consumer {
	FILE *out;
	unsigned long long entries, exits, other;
	int write_errno;
};

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

static void usage(void)
{
	printf("usage: bakeoff_tracer --library PATH --function NAME "
	       "--mode force|adaptive|batched|floor --control @NAME [--poll-us N]\n");
	exit(0);
}

static enum mode parse_mode(const char *text)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (strcmp(text, mode_names[i]) == 0)
			return (enum mode)i;
	bench_usage_error("--mode %s is unknown; use force, adaptive, batched or floor", text);
}

static struct options parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "library", required_argument, NULL, 'l' },
		{ "function", required_argument, NULL, 'f' },
		{ "mode", required_argument, NULL, 'm' },
		{ "control", required_argument, NULL, 'c' },
		{ "poll-us", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct options o = { .mode = MODE_FORCE, .poll_us = 1000 };
	bool have_mode = false;
	char *end;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'l': o.library = optarg; break;
		case 'f': o.function = optarg; break;
		case 'c': o.control = optarg; break;
		case 'm': o.mode = parse_mode(optarg); have_mode = true; break;
		case 'p':
			errno = 0;
			o.poll_us = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || o.poll_us < 1 || o.poll_us > 1000000)
				bench_usage_error("--poll-us %s: give 1 to 1000000 microseconds",
						  optarg);
			break;
		case 'h': usage(); break;
		default: bench_usage_error("unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (!o.library || !o.function || !o.control || !have_mode)
		bench_usage_error("--library, --function, --mode and --control are required "
				  "(see --help)");
	if (o.control[0] != '@' || o.control[1] == '\0' ||
	    strlen(o.control) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		bench_usage_error("--control %s: give @NAME, an abstract socket name of at most "
				  "106 characters", o.control);
	return o;
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct consumer *c = ctx;
	const struct bakeoff_event *e = data;

	if (!c->out)
		return 0; /* between trials: a killed trial's record */
	if (size < sizeof(*e)) {
		c->other++;
		return 0;
	}
	if (e->kind == BAKEOFF_ENTRY)
		c->entries++;
	else if (e->kind == BAKEOFF_EXIT)
		c->exits++;
	else
		c->other++;
	if (fwrite(e, sizeof(*e), 1, c->out) != 1) {
		c->write_errno = errno ? errno : EIO;
		return -c->write_errno; /* stops this poll; the loop reports it */
	}
	return 0;
}

static unsigned long long sum_drops(struct bakeoff_tracer_bpf *skel)
{
	int ncpus = libbpf_num_possible_cpus();
	unsigned long long total = 0;
	__u32 zero = 0;

	if (ncpus <= 0)
		return 0;
	__u64 *values = calloc((size_t)ncpus, sizeof(__u64));
	if (!values)
		bench_fatal_errno("failed to allocate the drop counters");
	if (bpf_map__lookup_elem(skel->maps.bakeoff_drops, &zero, sizeof(zero), values,
				 sizeof(__u64) * (size_t)ncpus, 0) != 0)
		bench_fatal_errno("failed to read the drop counters");
	for (int i = 0; i < ncpus; i++)
		total += values[i];
	free(values);
	return total;
}

/* Open and load the skeleton: the floor loads only the empty programs. 0 or -errno. */
static int load_programs(struct bakeoff_tracer_bpf **skel_out, enum mode mode)
{
	struct bakeoff_tracer_bpf *skel = bakeoff_tracer_bpf__open();

	*skel_out = skel;
	if (!skel) {
		int err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to open BPF skeleton: %s\n", strerror(-err));
		return err;
	}
	/* Read-only config before load: the wake-up policy, and which programs exist at all. */
	skel->rodata->submit_flags = mode == MODE_FORCE	  ? BPF_RB_FORCE_WAKEUP
				     : mode == MODE_BATCHED ? BPF_RB_NO_WAKEUP
							    : 0;
	bool floor = mode == MODE_FLOOR;
	bpf_program__set_autoload(skel->progs.bakeoff_entry, !floor);
	bpf_program__set_autoload(skel->progs.bakeoff_exit, !floor);
	bpf_program__set_autoload(skel->progs.bakeoff_nop_in, floor);
	bpf_program__set_autoload(skel->progs.bakeoff_nop_out, floor);

	/* Load (libbpf 1.x raises RLIMIT_MEMLOCK only where the kernel still charges it;
	 * kernels >= 5.11 charge BPF memory to the memory cgroup instead). */
	int err = bakeoff_tracer_bpf__load(skel);
	if (err)
		fprintf(stderr, "bakeoff_tracer: failed to load BPF programs: %s\n", strerror(-err));
	return err;
}

/* Attach to the entry and return of the function, in every process mapping the library;
 * unless this is the floor, the ring buffer's consumer in *rb. 0 or -errno. */
static int attach_probes(struct bakeoff_tracer_bpf *skel, const struct options *o,
			 const char *library, struct consumer *c, struct ring_buffer **rb)
{
	bool floor = o->mode == MODE_FLOOR;
	struct bpf_program *on_entry = floor ? skel->progs.bakeoff_nop_in : skel->progs.bakeoff_entry;
	struct bpf_program *on_exit = floor ? skel->progs.bakeoff_nop_out : skel->progs.bakeoff_exit;
	LIBBPF_OPTS(bpf_uprobe_opts, entry_opts, .func_name = o->function, .retprobe = false);
	LIBBPF_OPTS(bpf_uprobe_opts, exit_opts, .func_name = o->function, .retprobe = true);
	struct bpf_link *entry_link = bpf_program__attach_uprobe_opts(on_entry, -1, library, 0,
								      &entry_opts);
	if (!entry_link) {
		int err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to attach uprobe to %s:%s: %s\n", library,
			o->function, strerror(errno));
		return err;
	}
	struct bpf_link *exit_link = bpf_program__attach_uprobe_opts(on_exit, -1, library, 0,
								     &exit_opts);
	if (!exit_link) {
		int err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to attach uretprobe to %s:%s: %s\n",
			library, o->function, strerror(errno));
		bpf_link__destroy(entry_link);
		return err;
	}
	/* The skeleton destroys the links with itself. */
	if (floor) {
		skel->links.bakeoff_nop_in = entry_link;
		skel->links.bakeoff_nop_out = exit_link;
		return 0;
	}
	skel->links.bakeoff_entry = entry_link;
	skel->links.bakeoff_exit = exit_link;
	*rb = ring_buffer__new(bpf_map__fd(skel->maps.bakeoff_events), handle_event, c, NULL);
	if (!*rb) {
		int err = -errno;
		fprintf(stderr, "bakeoff_tracer: failed to create ring buffer consumer: %s\n",
			strerror(errno));
		return err;
	}
	return 0;
}

/* ---- the control socket: one connection per trial ------------------------------------ */

struct server {
	const struct options *o;
	struct bakeoff_tracer_bpf *skel;
	struct ring_buffer *rb; /* NULL for the floor */
	int epfd;		/* force, adaptive: the ring buffer's fd (data 1) and the trial's (0) */
	struct consumer c;
	sigset_t waitmask;	/* what ppoll lets through: SIGINT and SIGTERM */
	char line[PATH_MAX + 16];
	size_t have;
};

/* @NAME: the abstract namespace, sun_path[0] = '\0' and the name after it, unterminated. */
static int listen_on(const char *name)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	size_t len = strlen(name + 1); /* parse_options checked it fits */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	memcpy(addr.sun_path + 1, name + 1, len);
	if (bind(fd, (struct sockaddr *)&addr,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) != 0 ||
	    listen(fd, 1) != 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Writes one answer line; false if the trial has gone. */
static bool answer(int conn, const char *text)
{
	size_t len = strlen(text), done = 0;

	while (done < len) {
		ssize_t n = send(conn, text + done, len - done, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}

/* Reads what the connection has; a complete command line into s->line (without '\n').
 * 1 a line, 0 not yet, -1 the trial closed the connection (or sent too much). */
static int read_command(struct server *s, int conn)
{
	char *nl;

	if (s->have < sizeof(s->line) - 1) {
		ssize_t n = recv(conn, s->line + s->have, sizeof(s->line) - 1 - s->have,
				 MSG_DONTWAIT);
		if (n == 0)
			return -1;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		s->have += (size_t)n;
	}
	s->line[s->have] = '\0';
	nl = strchr(s->line, '\n');
	if (!nl)
		return s->have >= sizeof(s->line) - 1 ? -1 : 0;
	*nl = '\0';
	return 1;
}

static void forget_command(struct server *s)
{
	size_t used = strlen(s->line) + 1;

	memmove(s->line, s->line + used, s->have - used);
	s->have -= used;
}

/* Waits for the next command of this connection, consuming records meanwhile the way the
 * mode does. 1 a command in s->line, -1 the connection closed or we are stopping, or
 * -errno from the ring buffer. wakeups counts the polls that found records. */
static int next_command(struct server *s, int conn, long long *wakeups)
{
	const struct options *o = s->o;
	struct timespec every = { .tv_sec = o->poll_us / 1000000,
				  .tv_nsec = (o->poll_us % 1000000) * 1000 };
	bool batched = s->rb && o->mode == MODE_BATCHED;
	struct pollfd fds[1] = { { .fd = conn, .events = POLLIN } };
	struct epoll_event ev[2];
	int r, n;

	while (!exiting) {
		r = read_command(s, conn);
		if (r != 0)
			return r;
		bool records = batched;
		if (s->epfd >= 0) {
			/* Records wake us, in epoll_wait on the ring buffer's fd as libbpf's
			 * ring_buffer__poll waits: the same wake-up path as a tracer of its own. */
			r = epoll_pwait(s->epfd, ev, 2, -1, &s->waitmask);
			for (int i = 0; i < r; i++)
				records |= ev[i].data.u32 == 1;
		} else {
			r = ppoll(fds, 1, batched ? &every : NULL, &s->waitmask);
		}
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r < 0)
			continue;
		if (records) {
			n = ring_buffer__consume(s->rb);
			if (n < 0)
				return n;
			if (n > 0)
				(*wakeups)++;
		}
	}
	return -1;
}

/* Every committed record into the trial's file (or discarded, between trials). */
static int drain(struct server *s)
{
	int n;

	if (!s->rb)
		return 0;
	while ((n = ring_buffer__consume(s->rb)) > 0)
		;
	return n;
}

/* One trial: begin FILE ... end. Returns 0, or -errno when the tracer itself failed (the
 * ring buffer, the drop map); a trial that went away, or a file that cannot be written,
 * is that trial's failure, answered or abandoned, and the tracer serves the next. */
static int serve(struct server *s, int conn)
{
	struct consumer *c = &s->c;
	static char outbuf[1 << 20];
	char reply[512], path[PATH_MAX];
	unsigned long long drops_before;
	long long wakeups = 0;
	struct stat st;
	int r;

	s->have = 0;
	if (s->epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };
		/* Leaves the set when main closes the connection. */
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, conn, &ev) != 0)
			return -errno;
	}
	if (next_command(s, conn, &wakeups) != 1 || strncmp(s->line, "begin ", 6) != 0 ||
	    strlen(s->line + 6) >= sizeof(path)) {
		answer(conn, "{\"type\":\"error\",\"message\":\"expected: begin FILE\"}\n");
		return 0;
	}
	strcpy(path, s->line + 6);
	forget_command(s);
	/* Whatever a killed trial left in the ring buffer is not this trial's. */
	r = drain(s);
	if (r < 0)
		return r;
	*c = (struct consumer){ 0 };
	drops_before = s->rb ? sum_drops(s->skel) : 0;
	c->out = fopen(path, "wx");
	if (!c->out) {
		snprintf(reply, sizeof(reply), "{\"type\":\"error\",\"message\":\"cannot create "
			 "the trace file: %s\"}\n", strerror(errno));
		answer(conn, reply);
		return 0;
	}
	setvbuf(c->out, outbuf, _IOFBF, sizeof(outbuf));
	wakeups = 0;
	if (!answer(conn, "{\"type\":\"begun\"}\n"))
		goto abandon;
	r = next_command(s, conn, &wakeups);
	if (r < -1)
		goto fail;
	if (r != 1 || strcmp(s->line, "end") != 0)
		goto abandon;
	r = drain(s);
	if (r < 0)
		goto fail;
	FILE *out = c->out;
	c->out = NULL;
	if (fclose(out) != 0 || stat(path, &st) != 0) {
		snprintf(reply, sizeof(reply), "{\"type\":\"error\",\"message\":\"failed to write "
			 "the trace file: %s\"}\n", strerror(errno));
		answer(conn, reply);
		return 0;
	}
	snprintf(reply, sizeof(reply),
		 "{\"type\":\"tracer_done\",\"mode\":\"%s\",\"events\":%llu,\"entries\":%llu,"
		 "\"exits\":%llu,\"malformed\":%llu,\"dropped\":%llu,\"trace_bytes\":%lld,"
		 "\"wakeups\":%lld}\n",
		 mode_names[s->o->mode], c->entries + c->exits, c->entries, c->exits, c->other,
		 s->rb ? sum_drops(s->skel) - drops_before : 0ULL, (long long)st.st_size, wakeups);
	answer(conn, reply);
	return 0;
fail:
	fprintf(stderr, "bakeoff_tracer: failed to consume the ring buffer: %s\n",
		strerror(c->write_errno ? c->write_errno : -r));
	snprintf(reply, sizeof(reply), "{\"type\":\"error\",\"message\":\"failed to consume the "
		 "ring buffer: %s\"}\n", strerror(c->write_errno ? c->write_errno : -r));
	answer(conn, reply);
	if (c->write_errno)
		r = 0; /* the trial's file, not the tracer: it serves the next */
abandon:
	if (c->out)
		fclose(c->out);
	c->out = NULL;
	return r < -1 ? r : 0;
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv);
	struct server s = { .o = &o, .epfd = -1 };
	char library[PATH_MAX];
	sigset_t stop;
	int err, listen_fd = -1;

	/* SIGINT and SIGTERM are blocked except inside ppoll: a stop is never missed between
	 * the check of the flag and the wait. */
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, &s.waitmask);
	sigdelset(&s.waitmask, SIGINT);
	sigdelset(&s.waitmask, SIGTERM);

	/* libbpf resolves func_name from the ELF file itself: it wants the real path. */
	if (!realpath(o.library, library))
		bench_fatal_errno("failed to resolve --library %s", o.library);
	err = load_programs(&s.skel, o.mode);
	if (!err)
		err = attach_probes(s.skel, &o, library, &s.c, &s.rb);
	if (!err && s.rb && (o.mode == MODE_FORCE || o.mode == MODE_ADAPTIVE)) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 1 };

		s.epfd = epoll_create1(EPOLL_CLOEXEC);
		if (s.epfd < 0 || epoll_ctl(s.epfd, EPOLL_CTL_ADD,
					    bpf_map__fd(s.skel->maps.bakeoff_events), &ev) != 0) {
			err = -errno;
			fprintf(stderr, "bakeoff_tracer: failed to make the epoll set: %s\n",
				strerror(-err));
		}
	}
	if (!err) {
		listen_fd = listen_on(o.control);
		if (listen_fd < 0) {
			err = listen_fd;
			fprintf(stderr, "bakeoff_tracer: failed to listen on %s: %s\n", o.control,
				strerror(-err));
		}
	}
	if (err)
		goto cleanup;

	printf("{\"type\":\"ready\",\"mode\":\"%s\",\"libbpf\":\"%u.%u\"}\n", mode_names[o.mode],
	       libbpf_major_version(), libbpf_minor_version());
	fflush(stdout);

	while (!exiting && !err) {
		struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };

		if (ppoll(&pfd, 1, NULL, &s.waitmask) <= 0)
			continue;
		int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			continue;
		err = serve(&s, conn);
		close(conn);
	}

cleanup:
	if (listen_fd >= 0)
		close(listen_fd);
	if (s.epfd >= 0)
		close(s.epfd);
	ring_buffer__free(s.rb);
	bakeoff_tracer_bpf__destroy(s.skel);
	return err ? BENCH_EXIT_FATAL : 0;
}
