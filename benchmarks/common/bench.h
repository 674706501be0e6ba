/*
 * bench.h - the C side of bakeoff's program protocol, shared by every measured program.
 *
 * A measured program is a plain executable a person can also run by hand:
 *
 *     prog --variant V [--param NAME=VALUE]... [--samples N] [--warmup N]
 *
 * It prints one JSON object per line on stdout (see docs/ARCHITECTURE.md "The program protocol"):
 *
 *     {"type":"meta","timer":"clock_gettime(CLOCK_MONOTONIC_RAW)","timer_overhead_ns":18,...}
 *     {"type":"sample","metric":"ns_per_op","value":7084.0}
 *     {"type":"counter","name":"events_lost","value":0}
 *
 * and its diagnostics on stderr, one line each, prefixed with the program name. Exit status:
 * 0 success, 1 a failure while measuring (BENCH_EXIT_FATAL), 2 bad arguments
 * (BENCH_EXIT_USAGE), 3 a run-time requirement the machine did not meet, e.g. THP could not
 * back a mapping (BENCH_EXIT_UNMET). The harness keeps stderr of every failed trial.
 *
 * A program is written as:
 *
 *     static const struct bench_variant variants[] = {
 *             { "memcpy", "copy the bytes (baseline)" },
 *             { "mremap", "move the page tables" },
 *             { NULL, NULL },
 *     };
 *     static const struct bench_param params[] = {
 *             { "size", true, NULL, "bytes to move; a multiple of the page size" },
 *             { NULL, false, NULL, NULL },
 *     };
 *     static const struct bench_spec spec = { "one line on what it measures", variants, params };
 *
 *     struct bench_args args;
 *     bench_parse_args(argc, argv, &spec, &args);
 *     uint64_t size = bench_param_u64(&args, "size");
 *     ...
 *     bench_meta_begin();
 *     bench_meta_str("variant", args.variant);
 *     bench_meta_num("batch", (double)batch);
 *     bench_meta_end();
 *     for (...) bench_emit_sample("ns_per_op", ns);
 *     bench_emit_counter("minor_faults_per_op", faults);
 */
#ifndef BAKEOFF_BENCH_H
#define BAKEOFF_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_EXIT_FATAL 1
#define BENCH_EXIT_USAGE 2
#define BENCH_EXIT_UNMET 3

#define BENCH_TIMER_NAME "clock_gettime(CLOCK_MONOTONIC_RAW)"

/* ---- timing ------------------------------------------------------------------------------ */

/*
 * CLOCK_MONOTONIC_RAW in nanoseconds. It is served by the vDSO (no system call, tens of ns
 * here) and is not slewed by NTP. Never CPUID: it traps to the hypervisor in a VM (tens of µs).
 */
uint64_t bench_now_ns(void);

/*
 * The calling thread's run-queue wait so far in ns (run_delay: the second field of
 * /proc/thread-self/schedstat, opened by the caller as `fd`, read with pread so one open
 * serves every read). Fatal if it cannot be read or parsed.
 */
uint64_t bench_run_delay_ns(int fd);

/*
 * The cost of one bench_now_ns() call in ns: the median of 1001 differences between
 * back-to-back calls, measured on the first call and cached.
 */
double bench_timer_overhead_ns(void);

/*
 * Batches: how many operations to time between one pair of bench_now_ns() calls.
 *
 * A timed section is only as good as the timer around it: each reading costs about
 * bench_timer_overhead_ns() (tens of ns on the KVM machines, about the cost of the smallest
 * operations we time) and jitters by about as much. Timing a batch that lasts at least
 * BENCH_BATCH_FACTOR times that cost keeps the timer's share of each reported value below
 * 1/BENCH_BATCH_FACTOR (0.1 %), so a per-operation value (batch time / batch size) is a
 * measurement rather than timer noise. The timer cost is not subtracted: at this ratio it is
 * below the run-to-run noise, and subtracting a noisy estimate adds error.
 *
 * bench_batch_size(single_op_ns) returns ceil(BENCH_BATCH_FACTOR * overhead / single_op_ns),
 * at least 1 and at most BENCH_BATCH_MAX (so a mis-estimate of ~0 ns cannot make a sample run
 * for ever). single_op_ns is an estimate from an untimed-for-the-results calibration run of
 * the operation; a non-positive or non-finite estimate gets BENCH_BATCH_MAX. A program that
 * must prepare memory per operation caps the result further and records the final batch size
 * in meta ("batch").
 */
#define BENCH_BATCH_FACTOR 1000.0
#define BENCH_BATCH_MAX ((uint64_t)1 << 20)
uint64_t bench_batch_size(double single_op_ns);

/* ---- arguments --------------------------------------------------------------------------- */

struct bench_variant {
	const char *name; /* as given to --variant; NULL ends the table */
	const char *help; /* one line for --help */
};

struct bench_param {
	const char *name;          /* as given to --param NAME=VALUE; NULL ends the table */
	bool required;             /* missing -> usage error */
	const char *default_value; /* used when absent and not required; may be NULL */
	const char *help;          /* one line for --help */
};

struct bench_spec {
	const char *summary;                  /* one line for --help */
	const struct bench_variant *variants; /* terminated by { NULL, NULL } */
	const struct bench_param *params;     /* terminated by { NULL, ... }; may be NULL */
};

#define BENCH_MAX_PARAMS 16

struct bench_args {
	const struct bench_spec *spec;
	const char *variant;  /* one of spec->variants[].name */
	size_t variant_index; /* its index in spec->variants */
	uint64_t samples;     /* --samples, >= 1, default 10 */
	uint64_t warmup;      /* --warmup, >= 0, default 1 */
	/* --counted-samples, >= 0, default 0: samples taken after the measured ones, with kernel
	 * counters enabled in their timed window (counters.h); see bench_sample_counted(). */
	uint64_t counted_samples;
	/* --profile-repeat, >= 1, default 1: given only by `bakeoff profile` to a room that
	 * declares Benchmark.profile_repeat. The program repeats its timed operation this many
	 * times in each timed section, where repeating it is the same operation, so that the
	 * operation, not the set-up around it, fills the profile's samples. The samples it then
	 * prints are not measurements (a profile records none). A program that cannot repeat
	 * an operation ignores it for that variant and says so in meta "profile_repeat". */
	uint64_t profile_repeat;
	/* by index in spec->params: the value given, else the default (may be NULL) */
	const char *values[BENCH_MAX_PARAMS];
	bool given[BENCH_MAX_PARAMS];
};

/*
 * Parses argv into *args. --help prints usage to stdout and exits 0. Any bad argument prints
 * one line to stderr ("prog: error: ...", naming the flag and the fix) and exits 2. Accepted:
 * --variant V (required), --param NAME=VALUE (once per name), --samples N (default 10),
 * --warmup N (default 1), --counted-samples N (default 0), --profile-repeat N (default 1);
 * "--opt=value" works like
 * "--opt value".
 */
void bench_parse_args(int argc, char **argv, const struct bench_spec *spec,
		      struct bench_args *args);

/* The value of a declared param (given or default; NULL if neither). An undeclared name is a
 * bug in the program: exit 1. */
const char *bench_param(const struct bench_args *args, const char *name);
bool bench_param_given(const struct bench_args *args, const char *name);

/* The param as a number; garbage, overflow, or no value at all is a usage error (exit 2):
 * "prog: error: --param size=abc is not a whole number". Whole numbers are decimal digits
 * only (no sign, no suffix). */
uint64_t bench_param_u64(const struct bench_args *args, const char *name);
double bench_param_double(const struct bench_args *args, const char *name);

/* ---- output: JSON lines on stdout, each written whole and flushed ------------------------ */

/*
 * Meta line builder. bench_meta_begin() starts {"type":"meta","timer":...,
 * "timer_overhead_ns":...}; each bench_meta_* adds one key; bench_meta_end() prints the line.
 * A duplicate key, or a call out of order, is a bug in the program: exit 1. A program may
 * print several meta lines (the harness merges them); keys should then not repeat.
 */
void bench_meta_begin(void);
void bench_meta_str(const char *key, const char *value);
void bench_meta_num(const char *key, double value);
void bench_meta_bool(const char *key, bool value);
void bench_meta_end(void);

/* {"type":"meta","timer":...,"timer_overhead_ns":...} with no extra keys. */
void bench_emit_meta(void);

/*
 * {"type":"sample","metric":"ns_per_op","value":7084.0}. A sample value is always written as
 * a JSON number with a fraction or exponent (7084.0), so readers see a float.
 */
void bench_emit_sample(const char *metric, double value);

/* {"type":"counter","name":"events_lost","value":0}: written in the shortest form that reads
 * back as the same double (integers without ".0"). */
void bench_emit_counter(const char *name, double value);

/*
 * Numbers are written as integers when they are whole (below 2^53), else in the shortest %.Ng
 * (N <= 17) that reads back as the same double, so nothing is lost. NaN and infinities are
 * not measurements: emitting one prints an error naming the key and exits 1.
 */

/* ---- a process the trial depends on ------------------------------------------------------ */

/*
 * A helper a session keeps alive for the trials (a map loader, a cgroup's memory charger),
 * named by its PID in an environment variable. If it dies mid-trial the numbers no longer
 * describe the case asked for, so the trial must fail, naming it. A pidfd is readable once
 * the process has exited (zombie or reaped), so no exit is missed and no process that reused
 * the PID is taken for it.
 */
struct bench_watch {
	int fd; /* -1: nothing to watch (the variable is unset) */
	int pid;
	const char *what; /* e.g. "the map loader" */
};

/* Watch the PID in env_name; usage error if it is not a PID, fatal if it is gone already. */
struct bench_watch bench_watch_env(const char *env_name, const char *what);
/* Fatal if the watched process has exited: "<what> (pid N) exited during the trial: <why>".
 * One poll() with no wait: call it between timed sections, never inside one. */
void bench_watch_check(const struct bench_watch *w, const char *why);

/* ---- CPUs: where a partner goes ------------------------------------------------------------ */

/*
 * A benchmark that declares cpus=2 (or more) gets that many CPUs per trial, in
 * BAKEOFF_TRIAL_CPUS ("3,1"): the program already runs on the first (the measured CPU); a
 * partner (a ping-pong peer thread or process, a consumer) belongs on the second. Empty or
 * unset when the run is not pinned (one CPU, --no-pin, a program run by hand): then every
 * function here says -1 and nothing is placed.
 */
/* The index-th CPU of BAKEOFF_TRIAL_CPUS (0: the measured one), or -1 if it has none. */
int bench_trial_cpu(int index);
/* The partner's CPU, bench_trial_cpu(1): -1 when there is none. */
int bench_partner_cpu(void);
/* Pins the thread or process tid (0: the calling thread) to cpu with sched_setaffinity;
 * does nothing for cpu < 0; fatal (exit 1) if the kernel refuses. In the partner itself:
 * bench_pin_cpu(0, bench_partner_cpu()) after fork(), or first thing in its thread. */
void bench_pin_cpu(int tid, int cpu);

/* ---- errors: one line on stderr, "prog: ..." --------------------------------------------- */

/* A failure while measuring: exit 1. Use "failed to <step>" wording. */
void bench_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Same, with ": <strerror(errno)>" appended (errno as it was on entry). */
void bench_fatal_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Bad arguments: "prog: error: <message>", exit 2. Name the flag and the fix. */
void bench_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* A run-time requirement the machine did not meet: "prog: <message>", exit 3. */
void bench_unmet(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif /* BAKEOFF_BENCH_H */
