// The program protocol (docs/ARCHITECTURE.md) on the Go side: arguments, JSON lines, exit statuses,
// matching benchmarks/common/bench.c so that the harness and a person see one interface.
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	exitFatal = 1 // a failure while measuring
	exitUsage = 2 // bad arguments
	exitUnmet = 3 // a machine requirement unmet
)

const timerName = "Go time.Now (vDSO clock_gettime(CLOCK_MONOTONIC))"

type variant struct{ name, help string }

type args struct {
	variant string
	params  map[string]string
	samples int
	warmup  int
	counted int // --counted-samples: dumps after the measured ones, with counters on
}

// say writes one diagnostic line to stderr, "dump-go: ...".
func say(format string, a ...any) {
	msg := strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " ")
	fmt.Fprintf(os.Stderr, "dump-go: %s\n", msg)
}

// stopHook runs before any exit: it stops a loader this program started.
var stopHook = func() {}

func fatal(format string, a ...any) {
	say(format, a...)
	stopHook()
	os.Exit(exitFatal)
}

func usageError(format string, a ...any) {
	say("error: "+format, a...)
	stopHook()
	os.Exit(exitUsage)
}

func unmet(format string, a ...any) {
	say(format, a...)
	stopHook()
	os.Exit(exitUnmet)
}

func names(vs []variant) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.name
	}
	return strings.Join(out, ", ")
}

func printHelp(summary string, vs []variant, params map[string]string) {
	fmt.Printf("usage: dump-go --variant V --param NAME=VALUE... [--samples N] [--warmup N] [--counted-samples N]\n%s\n\nvariants:\n", summary)
	for _, v := range vs {
		fmt.Printf("  %-12s %s\n", v.name, v.help)
	}
	fmt.Println("params:")
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("  %-12s %s\n", k, params[k])
	}
}

// parseArgs accepts what bench_parse_args accepts: --variant V, --param NAME=VALUE (once
// per name), --samples N (>= 1, default 10), --warmup N (>= 0, default 1),
// --counted-samples N (>= 0, default 0), "--opt=value".
func parseArgs(argv []string, summary string, vs []variant, params map[string]string) args {
	a := args{params: map[string]string{}, samples: 10, warmup: 1}
	seen := map[string]bool{}
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		if arg == "--help" || arg == "-h" {
			printHelp(summary, vs, params)
			os.Exit(0)
		}
		if !strings.HasPrefix(arg, "--") {
			usageError("unexpected argument '%s' (see --help)", arg)
		}
		name, value, hasValue := strings.Cut(arg[2:], "=")
		switch name {
		case "variant", "param", "samples", "warmup", "counted-samples":
		default:
			usageError("unknown option '%s' (known: --variant, --param, --samples, --warmup, --counted-samples, --help)", arg)
		}
		if !hasValue {
			if i+1 >= len(argv) {
				usageError("--%s needs a value (see --help)", name)
			}
			i++
			value = argv[i]
		}
		if name != "param" && seen[name] {
			usageError("--%s given twice (give it once)", name)
		}
		seen[name] = true
		switch name {
		case "variant":
			a.variant = value
		case "param":
			k, v, ok := strings.Cut(value, "=")
			if !ok || k == "" {
				usageError("--param '%s' is not NAME=VALUE (e.g. --param entries=...)", value)
			}
			if _, known := params[k]; !known {
				usageError("unknown param '%s' in --param %s (known: map, entries)", k, value)
			}
			if _, dup := a.params[k]; dup {
				usageError("--param %s given twice (give each param once)", k)
			}
			a.params[k] = v
		case "samples", "warmup", "counted-samples":
			lo := map[string]int{"samples": 1, "warmup": 0, "counted-samples": 0}[name]
			n, err := strconv.Atoi(value)
			if err != nil || n < lo || strings.ContainsAny(value, "+- ") {
				usageError("--%s %s is not a whole number >= %d (e.g. --%s %d)", name, value, lo, name, lo+2)
			}
			switch name {
			case "samples":
				a.samples = n
			case "warmup":
				a.warmup = n
			default:
				a.counted = n
			}
		}
	}
	if a.variant == "" {
		usageError("missing --variant (one of: %s)", names(vs))
	}
	known := false
	for _, v := range vs {
		known = known || v.name == a.variant
	}
	if !known {
		usageError("unknown variant '%s' (known: %s)", a.variant, names(vs))
	}
	for _, k := range []string{"map", "entries"} {
		if _, ok := a.params[k]; !ok {
			usageError("missing --param %s=VALUE (%s)", k, params[k])
		}
	}
	return a
}

// emit writes one JSON object as one line; stdout is unbuffered in Go, one write per line.
func emit(obj map[string]any) {
	for k, v := range obj {
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			fatal("refusing to emit non-finite value for '%s': not a measurement", k)
		}
	}
	line, err := json.Marshal(obj)
	if err != nil {
		fatal("failed to encode output: %v", err)
	}
	if _, err := os.Stdout.Write(append(line, '\n')); err != nil {
		fatal("failed to write to stdout: %v", err)
	}
}

func emitSample(metric string, value float64) {
	emit(map[string]any{"type": "sample", "metric": metric, "value": value})
}

func emitCounter(name string, value float64) {
	emit(map[string]any{"type": "counter", "name": name, "value": value})
}

// timerOverheadNs is the median of 1001 differences between back-to-back clock reads,
// as bench_timer_overhead_ns measures it for C.
func timerOverheadNs() float64 {
	const n = 1001
	var t [n + 1]time.Time
	for i := range t {
		t[i] = time.Now()
	}
	d := make([]float64, n)
	for i := 0; i < n; i++ {
		d[i] = float64(t[i+1].Sub(t[i]).Nanoseconds())
	}
	sort.Float64s(d)
	return d[n/2]
}
