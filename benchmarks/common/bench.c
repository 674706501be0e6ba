/*
 * bench.c - timing, argument parsing and JSON-lines output for bakeoff's measured programs.
 * See bench.h for the contract; comments here say why, not what.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- errors ------------------------------------------------------------------------------ */

static const char *prog_name(void)
{
	/* glibc sets it from argv[0] before main; it names the program in every diagnostic. */
	return program_invocation_short_name;
}

/*
 * One diagnostic, one line, one write(2): the harness keeps stderr of failed trials, and a
 * message split over lines or interleaved with another writer is harder to read there.
 */
static void vsay(const char *prefix, const char *fmt, va_list ap, const char *suffix)
{
	char msg[1024];
	char line[1200];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	for (char *p = msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	int n = snprintf(line, sizeof(line), "%s: %s%s%s\n", prog_name(), prefix, msg,
			 suffix ? suffix : "");
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	fflush(stdout);
	ssize_t ignored = write(STDERR_FILENO, line, (size_t)n);
	(void)ignored;
}

void bench_fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("", fmt, ap, NULL);
	va_end(ap);
	exit(BENCH_EXIT_FATAL);
}

void bench_fatal_errno(const char *fmt, ...)
{
	int saved = errno;
	char suffix[256];
	va_list ap;

	snprintf(suffix, sizeof(suffix), ": %s", strerror(saved));
	va_start(ap, fmt);
	vsay("", fmt, ap, suffix);
	va_end(ap);
	exit(BENCH_EXIT_FATAL);
}

void bench_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("error: ", fmt, ap, NULL);
	va_end(ap);
	exit(BENCH_EXIT_USAGE);
}

void bench_unmet(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("", fmt, ap, NULL);
	va_end(ap);
	exit(BENCH_EXIT_UNMET);
}

/* ---- a growable string ------------------------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_reserve(struct sbuf *sb, size_t more)
{
	if (sb->len + more + 1 <= sb->cap)
		return;
	size_t cap = sb->cap ? sb->cap : 256;
	while (cap < sb->len + more + 1)
		cap *= 2;
	char *p = realloc(sb->p, cap);
	if (!p)
		bench_fatal_errno("failed to allocate an output buffer");
	sb->p = p;
	sb->cap = cap;
}

static void sb_putn(struct sbuf *sb, const char *s, size_t n)
{
	sb_reserve(sb, n);
	memcpy(sb->p + sb->len, s, n);
	sb->len += n;
	sb->p[sb->len] = '\0';
}

static void sb_puts(struct sbuf *sb, const char *s)
{
	sb_putn(sb, s, strlen(s));
}

static void sb_free(struct sbuf *sb)
{
	free(sb->p);
	*sb = (struct sbuf){ 0 };
}

/* Length of a valid UTF-8 sequence at s (1-4), or 0 if the bytes there are not one. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	unsigned int cp;

	if (c < 0x80)
		return 1;
	else if ((c & 0xe0) == 0xc0)
		n = 2, cp = c & 0x1f;
	else if ((c & 0xf0) == 0xe0)
		n = 3, cp = c & 0x0f;
	else if ((c & 0xf8) == 0xf0)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	static const unsigned int min_cp[] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* A JSON string. Bytes that are not UTF-8 (a param value could be anything) become U+FFFD,
 * so every line stays valid JSON whatever the user typed. */
static void sb_json_str(struct sbuf *sb, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	sb_putn(sb, "\"", 1);
	while (*p) {
		char esc[8];
		size_t n;

		switch (*p) {
		case '"':
			sb_puts(sb, "\\\"");
			p++;
			continue;
		case '\\':
			sb_puts(sb, "\\\\");
			p++;
			continue;
		case '\n':
			sb_puts(sb, "\\n");
			p++;
			continue;
		case '\t':
			sb_puts(sb, "\\t");
			p++;
			continue;
		case '\r':
			sb_puts(sb, "\\r");
			p++;
			continue;
		}
		if (*p < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			sb_puts(sb, esc);
			p++;
			continue;
		}
		n = utf8_len(p);
		if (n == 0) {
			sb_puts(sb, "\\ufffd");
			p++;
			continue;
		}
		sb_putn(sb, (const char *)p, n);
		p += n;
	}
	sb_putn(sb, "\"", 1);
}

/* Integers as integers; anything else as the shortest %.Ng (N <= 17) that reads back as the
 * same double: lossless, and 0.1 stays "0.1" rather than %.17g's "0.10000000000000001". */
static void sb_json_num(struct sbuf *sb, const char *key, double v, bool force_fraction)
{
	char out[40];

	if (!isfinite(v))
		bench_fatal("refusing to emit non-finite value %g for '%s': not a measurement", v,
			    key);
	if (v == trunc(v) && fabs(v) < 9007199254740992.0) { /* 2^53: exact as an integer */
		snprintf(out, sizeof(out), "%.0f", v); /* 10, not %.1g's "1e+01" */
	} else {
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(out, sizeof(out), "%.*g", prec, v);
			if (strtod(out, NULL) == v)
				break;
		}
	}
	if (force_fraction && strspn(out, "-0123456789") == strlen(out))
		strcat(out, ".0");
	sb_puts(sb, out);
}

static void emit_line(struct sbuf *sb)
{
	sb_putn(sb, "}\n", 2);
	if (fwrite(sb->p, 1, sb->len, stdout) != sb->len || fflush(stdout) != 0)
		bench_fatal_errno("failed to write to stdout");
}

/* ---- timing ------------------------------------------------------------------------------ */

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t bench_run_delay_ns(int fd)
{
	char buf[128];
	unsigned long long on_cpu, waited;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		bench_fatal_errno("failed to read /proc/thread-self/schedstat");
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &on_cpu, &waited) != 2)
		bench_fatal("failed to parse /proc/thread-self/schedstat: '%s'", buf);
	return waited;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

#define OVERHEAD_DIFFS 1001

double bench_timer_overhead_ns(void)
{
	static double cached = -1.0;
	uint64_t t[OVERHEAD_DIFFS + 1];
	uint64_t d[OVERHEAD_DIFFS];

	if (cached >= 0.0)
		return cached;
	/* Warm the vDSO page, its data page and this code before reading anything. */
	for (int i = 0; i < 100; i++)
		t[0] = bench_now_ns();
	for (int i = 0; i <= OVERHEAD_DIFFS; i++)
		t[i] = bench_now_ns();
	for (int i = 0; i < OVERHEAD_DIFFS; i++)
		d[i] = t[i + 1] - t[i];
	/* The median: an interrupt between two reads makes one difference huge, not the median. */
	qsort(d, OVERHEAD_DIFFS, sizeof(d[0]), cmp_u64);
	cached = (double)d[OVERHEAD_DIFFS / 2];
	return cached;
}

uint64_t bench_batch_size(double single_op_ns)
{
	if (!(single_op_ns > 0.0) || !isfinite(single_op_ns))
		return BENCH_BATCH_MAX;
	double want = ceil(BENCH_BATCH_FACTOR * bench_timer_overhead_ns() / single_op_ns);
	if (want < 1.0)
		return 1;
	if (want > (double)BENCH_BATCH_MAX)
		return BENCH_BATCH_MAX;
	return (uint64_t)want;
}

/* ---- output ------------------------------------------------------------------------------ */

#define META_MAX_KEYS 64

static struct {
	bool open;
	struct sbuf line;
	size_t nkeys;
	char *keys[META_MAX_KEYS];
} meta;

/* Remembers key so a duplicate is caught: a JSON object with a repeated key is ambiguous. */
static void meta_reserve_key(const char *key)
{
	if (!meta.open)
		bench_fatal("bug: meta key '%s' added outside bench_meta_begin/end", key);
	for (size_t i = 0; i < meta.nkeys; i++)
		if (strcmp(meta.keys[i], key) == 0)
			bench_fatal("bug: meta key '%s' given twice", key);
	if (meta.nkeys == META_MAX_KEYS)
		bench_fatal("bug: more than %d meta keys", META_MAX_KEYS);
	meta.keys[meta.nkeys] = strdup(key);
	if (!meta.keys[meta.nkeys])
		bench_fatal_errno("failed to allocate a meta key");
	meta.nkeys++;
}

static void meta_key(const char *key)
{
	meta_reserve_key(key);
	sb_putn(&meta.line, ",", 1);
	sb_json_str(&meta.line, key);
	sb_putn(&meta.line, ":", 1);
}

void bench_meta_begin(void)
{
	if (meta.open)
		bench_fatal("bug: bench_meta_begin called twice");
	meta.open = true;
	meta_reserve_key("type");
	sb_puts(&meta.line, "{\"type\":\"meta\"");
	bench_meta_str("timer", BENCH_TIMER_NAME);
	bench_meta_num("timer_overhead_ns", bench_timer_overhead_ns());
}

void bench_meta_str(const char *key, const char *value)
{
	meta_key(key);
	sb_json_str(&meta.line, value ? value : "");
}

void bench_meta_num(const char *key, double value)
{
	meta_key(key);
	sb_json_num(&meta.line, key, value, false);
}

void bench_meta_bool(const char *key, bool value)
{
	meta_key(key);
	sb_puts(&meta.line, value ? "true" : "false");
}

void bench_meta_end(void)
{
	if (!meta.open)
		bench_fatal("bug: bench_meta_end without bench_meta_begin");
	emit_line(&meta.line);
	sb_free(&meta.line);
	for (size_t i = 0; i < meta.nkeys; i++)
		free(meta.keys[i]);
	meta.nkeys = 0;
	meta.open = false;
}

void bench_emit_meta(void)
{
	bench_meta_begin();
	bench_meta_end();
}

static void emit_value(const char *type, const char *name_key, const char *name, double value,
		       bool force_fraction)
{
	struct sbuf sb = { 0 };

	sb_puts(&sb, "{\"type\":");
	sb_json_str(&sb, type);
	sb_putn(&sb, ",", 1);
	sb_json_str(&sb, name_key);
	sb_putn(&sb, ":", 1);
	sb_json_str(&sb, name);
	sb_puts(&sb, ",\"value\":");
	sb_json_num(&sb, name, value, force_fraction);
	emit_line(&sb);
	sb_free(&sb);
}

void bench_emit_sample(const char *metric, double value)
{
	emit_value("sample", "metric", metric, value, true);
}

void bench_emit_counter(const char *name, double value)
{
	emit_value("counter", "name", name, value, false);
}

/* ---- arguments --------------------------------------------------------------------------- */

static size_t count_params(const struct bench_spec *spec)
{
	size_t n = 0;

	while (spec->params && spec->params[n].name)
		n++;
	return n;
}

/* "a, b, c" for error messages that list the known names. */
static char *known_variants(const struct bench_spec *spec)
{
	struct sbuf sb = { 0 };

	for (size_t i = 0; spec->variants[i].name; i++) {
		if (i)
			sb_puts(&sb, ", ");
		sb_puts(&sb, spec->variants[i].name);
	}
	return sb.p ? sb.p : strdup("");
}

static char *known_params(const struct bench_spec *spec)
{
	struct sbuf sb = { 0 };
	size_t n = count_params(spec);

	for (size_t i = 0; i < n; i++) {
		if (i)
			sb_puts(&sb, ", ");
		sb_puts(&sb, spec->params[i].name);
	}
	return sb.p ? sb.p : strdup("none");
}

static void print_usage(const struct bench_spec *spec)
{
	size_t n = count_params(spec);

	printf("usage: %s --variant V [--param NAME=VALUE]... [--samples N] [--warmup N] "
	       "[--counted-samples N] [--profile-repeat N]\n\n",
	       prog_name());
	if (spec->summary)
		printf("%s\n\n", spec->summary);
	printf("variants:\n");
	for (size_t i = 0; spec->variants[i].name; i++)
		printf("  %-22s %s\n", spec->variants[i].name,
		       spec->variants[i].help ? spec->variants[i].help : "");
	if (n) {
		printf("params (--param NAME=VALUE):\n");
		for (size_t i = 0; i < n; i++) {
			const struct bench_param *p = &spec->params[i];
			char def[128];

			if (p->required)
				snprintf(def, sizeof(def), " (required)");
			else if (p->default_value)
				snprintf(def, sizeof(def), " (default %s)", p->default_value);
			else
				def[0] = '\0';
			printf("  %-22s %s%s\n", p->name, p->help ? p->help : "", def);
		}
	}
	printf("options:\n"
	       "  --samples N            measured samples to print, N >= 1 (default 10)\n"
	       "  --warmup N             samples to run first and not print, N >= 0 (default 1)\n"
	       "  --counted-samples N    samples after the measured ones with kernel counters on,\n"
	       "                         printed as counted.<metric> and per_op.<counter> (default 0)\n"
	       "  --profile-repeat N     under bakeoff profile: repeat the timed operation N times\n"
	       "                         in each timed section; samples are then not measurements\n"
	       "                         (default 1)\n"
	       "  --help                 print this text and exit\n\n"
	       "Output: JSON lines on stdout ({\"type\":\"meta\"|\"sample\"|\"counter\",...});\n"
	       "diagnostics on stderr. Exit 0 ok, 1 failed while measuring, 2 bad arguments,\n"
	       "3 a requirement the machine did not meet.\n");
	if (fflush(stdout) != 0)
		bench_fatal_errno("failed to write to stdout");
}

/* Decimal digits only: strtoull would accept " +12", "-1" (as 2^64-1) and "0x10". */
static bool parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static uint64_t option_count(const char *opt, const char *value, uint64_t min)
{
	uint64_t v;

	if (!parse_u64(value, &v) || v < min)
		bench_usage_error("--%s %s is not a whole number >= %llu (e.g. --%s %llu)", opt,
				  value, (unsigned long long)min, opt,
				  (unsigned long long)(min ? 10 : 1));
	return v;
}

static void set_param(const struct bench_spec *spec, struct bench_args *args, const char *text)
{
	const char *eq = strchr(text, '=');
	size_t n = count_params(spec);

	if (!eq || eq == text)
		bench_usage_error("--param '%s' is not NAME=VALUE (e.g. --param %s=...)", text,
				  n ? spec->params[0].name : "NAME");
	size_t name_len = (size_t)(eq - text);
	for (size_t i = 0; i < n; i++) {
		if (strlen(spec->params[i].name) != name_len ||
		    strncmp(spec->params[i].name, text, name_len) != 0)
			continue;
		if (args->given[i])
			bench_usage_error("--param %s given twice (give each param once)",
					  spec->params[i].name);
		args->given[i] = true;
		args->values[i] = eq + 1;
		return;
	}
	char *known = known_params(spec);
	bench_usage_error("unknown param '%.*s' in --param %s (known: %s)", (int)name_len, text,
			  text, known);
}

static void set_variant(const struct bench_spec *spec, struct bench_args *args, const char *v)
{
	if (args->variant)
		bench_usage_error("--variant given twice (give it once)");
	for (size_t i = 0; spec->variants[i].name; i++) {
		if (strcmp(spec->variants[i].name, v) == 0) {
			args->variant = spec->variants[i].name;
			args->variant_index = i;
			return;
		}
	}
	char *known = known_variants(spec);
	bench_usage_error("unknown variant '%s' (known: %s)", v, known);
}

void bench_parse_args(int argc, char **argv, const struct bench_spec *spec,
		      struct bench_args *args)
{
	size_t n = count_params(spec);
	bool samples_given = false, warmup_given = false, counted_given = false;
	bool repeat_given = false;

	if (!spec->variants || !spec->variants[0].name)
		bench_fatal("bug: the program declares no variants");
	if (n > BENCH_MAX_PARAMS)
		bench_fatal("bug: more than %d params declared", BENCH_MAX_PARAMS);

	*args = (struct bench_args){ .spec = spec, .samples = 10, .warmup = 1,
				     .profile_repeat = 1 };

	/* --help wins wherever it is, so "prog --variant x --help" helps instead of failing. */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			print_usage(spec);
			exit(0);
		}
	}

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *value;
		char name[32];

		if (strncmp(arg, "--", 2) != 0)
			bench_usage_error("unexpected argument '%s' (see --help)", arg);
		const char *eq = strchr(arg, '=');
		size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
		if (len >= sizeof(name))
			bench_usage_error("unknown option '%s' (see --help)", arg);
		memcpy(name, arg + 2, len);
		name[len] = '\0';
		if (strcmp(name, "variant") != 0 && strcmp(name, "param") != 0 &&
		    strcmp(name, "samples") != 0 && strcmp(name, "warmup") != 0 &&
		    strcmp(name, "counted-samples") != 0 && strcmp(name, "profile-repeat") != 0)
			bench_usage_error("unknown option '%s' (known: --variant, --param, "
					  "--samples, --warmup, --counted-samples, --profile-repeat, "
					  "--help)",
					  arg);
		if (eq) {
			value = eq + 1;
		} else if (i + 1 < argc) {
			value = argv[++i];
		} else {
			bench_usage_error("--%s needs a value (see --help)", name);
		}

		if (strcmp(name, "variant") == 0) {
			set_variant(spec, args, value);
		} else if (strcmp(name, "param") == 0) {
			set_param(spec, args, value);
		} else if (strcmp(name, "samples") == 0) {
			if (samples_given)
				bench_usage_error("--samples given twice (give it once)");
			samples_given = true;
			args->samples = option_count("samples", value, 1);
		} else if (strcmp(name, "counted-samples") == 0) {
			if (counted_given)
				bench_usage_error("--counted-samples given twice (give it once)");
			counted_given = true;
			args->counted_samples = option_count("counted-samples", value, 0);
		} else if (strcmp(name, "profile-repeat") == 0) {
			if (repeat_given)
				bench_usage_error("--profile-repeat given twice (give it once)");
			repeat_given = true;
			args->profile_repeat = option_count("profile-repeat", value, 1);
		} else {
			if (warmup_given)
				bench_usage_error("--warmup given twice (give it once)");
			warmup_given = true;
			args->warmup = option_count("warmup", value, 0);
		}
	}

	if (!args->variant) {
		char *known = known_variants(spec);
		bench_usage_error("missing --variant (one of: %s)", known);
	}
	for (size_t i = 0; i < n; i++) {
		if (args->given[i])
			continue;
		if (spec->params[i].required)
			bench_usage_error("missing --param %s=VALUE (%s)", spec->params[i].name,
					  spec->params[i].help ? spec->params[i].help
							       : "required");
		args->values[i] = spec->params[i].default_value;
	}
}

static size_t param_index(const struct bench_args *args, const char *name)
{
	size_t n = count_params(args->spec);

	for (size_t i = 0; i < n; i++)
		if (strcmp(args->spec->params[i].name, name) == 0)
			return i;
	bench_fatal("bug: param '%s' is not declared in the program's spec", name);
}

const char *bench_param(const struct bench_args *args, const char *name)
{
	return args->values[param_index(args, name)];
}

bool bench_param_given(const struct bench_args *args, const char *name)
{
	return args->given[param_index(args, name)];
}

static const char *param_value_or_die(const struct bench_args *args, const char *name)
{
	const char *v = bench_param(args, name);

	if (!v)
		bench_usage_error("missing --param %s=VALUE", name);
	return v;
}

uint64_t bench_param_u64(const struct bench_args *args, const char *name)
{
	const char *v = param_value_or_die(args, name);
	uint64_t out;

	if (!parse_u64(v, &out)) {
		if (*v && strspn(v, "0123456789") == strlen(v))
			bench_usage_error("--param %s=%s is too large (at most %llu)", name, v,
					  (unsigned long long)UINT64_MAX);
		bench_usage_error("--param %s=%s is not a whole number (use decimal digits, "
				  "e.g. %s=4096)",
				  name, v, name);
	}
	return out;
}

double bench_param_double(const struct bench_args *args, const char *name)
{
	const char *v = param_value_or_die(args, name);
	char *end;

	errno = 0;
	double out = strtod(v, &end);
	/* strtod skips leading blanks and takes "nan"/"inf"; neither is a value anyone meant. */
	if (!*v || *v == ' ' || *v == '\t' || *end || !isfinite(out) || errno == ERANGE)
		bench_usage_error("--param %s=%s is not a finite number (e.g. %s=1.5)", name, v,
				  name);
	return out;
}

/* ---- a process the trial depends on ------------------------------------------------------ */

struct bench_watch bench_watch_env(const char *env_name, const char *what)
{
	struct bench_watch w = { .fd = -1, .pid = 0, .what = what };
	const char *env = getenv(env_name);
	char *end;
	long v;

	if (!env || !*env)
		return w;
	v = strtol(env, &end, 10);
	if (*end || v <= 0)
		bench_usage_error("%s=%s is not a PID", env_name, env);
	w.pid = (int)v;
	w.fd = (int)syscall(SYS_pidfd_open, (pid_t)w.pid, 0);
	if (w.fd < 0 && errno == ESRCH)
		bench_fatal("%s (pid %d) exited before the trial started", what, w.pid);
	if (w.fd < 0)
		bench_fatal_errno("failed to watch %s (pid %d)", what, w.pid);
	return w;
}

void bench_watch_check(const struct bench_watch *w, const char *why)
{
	struct pollfd p = { .fd = w->fd, .events = POLLIN };

	if (w->fd >= 0 && poll(&p, 1, 0) > 0)
		bench_fatal("%s (pid %d) exited during the trial: %s", w->what, w->pid, why);
}

/* ---- CPUs -------------------------------------------------------------------------------- */

int bench_trial_cpu(int index)
{
	const char *p = getenv("BAKEOFF_TRIAL_CPUS");
	char *end;
	long cpu;

	if (!p || index < 0)
		return -1;
	for (int i = 0; *p; i++) {
		errno = 0;
		cpu = strtol(p, &end, 10);
		if (end == p || errno || cpu < 0 || cpu >= CPU_SETSIZE || (*end && *end != ','))
			return -1; /* set by hand and malformed: place nothing rather than wrongly */
		if (i == index)
			return (int)cpu;
		p = *end ? end + 1 : end;
	}
	return -1;
}

int bench_partner_cpu(void)
{
	return bench_trial_cpu(1);
}

void bench_pin_cpu(int tid, int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(tid, sizeof(set), &set) != 0)
		bench_fatal_errno("failed to pin %s to CPU %d", tid ? "the partner" : "this thread",
				  cpu);
}
