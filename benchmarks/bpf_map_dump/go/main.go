// dump-go - reads a whole BPF map with cilium/ebpf, as the seed did, and proves it read
// every entry exactly once with the right value.
//
//	dump-go --variant go-iterate|go-batch --param map=hash|array --param entries=N \
//	        [--samples S] [--warmup W] [--counted-samples C]
//
// go-iterate is the seed's normal/main.go (Map.Iterate, MapIterator.Next(&k, &v): one
// BPF_MAP_GET_NEXT_KEY and one BPF_MAP_LOOKUP_ELEM per entry); go-batch is its
// batch/main.go (Map.BatchLookup, 4096-entry chunks) with the cursor advanced, which the
// seed's loop never did. Each sample is one full dump into []uint32 keys and values; the
// check after it (not timed) is the same as dump_reader.c's. The Go runtime's memory
// statistics are taken around every measured dump (not timed) and reported as counters:
// Alloc, HeapAlloc, TotalAlloc, Sys, NumGC before the first and after the last, as the
// seed printed them, and per-entry allocation figures. After the measured dumps,
// --counted-samples C more with kernel counters on around each timed dump (counters.go):
// counted.<metric> and per_op.<counter> per entry, as dump_reader.c prints them.
package main

import (
	"errors"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

const (
	batchChunk = 4096 // the seed's chunk
	// As dump_reader.c's READER_TRACEPOINTS: the bpf() calls the variants differ in.
	readerTracepoints = "syscalls:sys_enter_bpf,syscalls:sys_enter_read"
	bufferSlack       = 2 * 65536
	maxEntries        = 1 << 28 // as dump.h: the kernel's hash bucket limit
)

var variants = []variant{
	{"go-iterate", "cilium/ebpf Map.Iterate: NextKey + Lookup per entry (the seed's normal/main.go)"},
	{"go-batch", "cilium/ebpf Map.BatchLookup, 4096 entries per call, cursor advanced"},
}

var params = map[string]string{
	"map":     "map type: hash or array",
	"entries": "number of entries in the map (1 to 2^28)",
}

func init() {
	// The loader we may start has Pdeathsig set, which fires when the *thread* that
	// started it exits. Keeping main on the main thread makes that the process's exit.
	runtime.LockOSThread()
}

type dump struct {
	count, syscalls, enospcRetries int
}

func dumpIterate(m *ebpf.Map, keys, vals []uint32) dump {
	var k, v uint32
	n := 0
	it := m.Iterate()
	for it.Next(&k, &v) {
		if n == len(keys) {
			tooMany(n)
		}
		keys[n], vals[n] = k, v
		n++
	}
	if err := it.Err(); err != nil {
		fatal("iteration failed after %d entries: %v", n, err)
	}
	// MapIterator.Next makes one NextKey and one Lookup per entry, and one last NextKey
	// that finds no more keys (cilium/ebpf map.go); nothing deletes concurrently here, so
	// its retry path never runs.
	return dump{count: n, syscalls: 2*n + 1}
}

// dumpBatch advances the cursor (MapBatchCursor) on every call. Hash maps return whole
// buckets: when the next bucket does not fit the chunk, the kernel copies nothing and fails
// with ENOSPC, and we retry from the same cursor with a doubled chunk (as dump_reader.c).
func dumpBatch(m *ebpf.Map, keys, vals []uint32) dump {
	var cursor ebpf.MapBatchCursor
	n, calls, retries, want := 0, 0, 0, batchChunk
	for {
		end := min(n+want, len(keys))
		if end == n {
			tooMany(n)
		}
		got, err := m.BatchLookup(&cursor, keys[n:end], vals[n:end], nil)
		calls++ // one BPF_MAP_LOOKUP_BATCH per call (cilium/ebpf batchLookupCmd)
		if errors.Is(err, unix.ENOSPC) {
			if got != 0 || end-n >= len(keys)-n {
				fatal("ENOSPC with %d entries copied: a bucket larger than the buffer", got)
			}
			retries++
			want *= 2
			continue
		}
		n += got
		if errors.Is(err, ebpf.ErrKeyNotExist) { // the end; this call may still have copied some
			break
		}
		if err != nil {
			fatal("batch lookup failed after %d entries: %v", n, err)
		}
		want = batchChunk
	}
	return dump{count: n, syscalls: calls, enospcRetries: retries}
}

func tooMany(n int) {
	fatal("the map yielded more than %d entries: more than it was filled with", n)
}

func parseEntries(text string) uint32 {
	n, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		usageError("--param entries=%s is not a whole number (use decimal digits, e.g. entries=1000000)", text)
	}
	if n < 1 || n > maxEntries {
		usageError("--param entries=%d is out of range; use 1 to %d (2^28, the kernel's hash bucket limit)", n, maxEntries)
	}
	return uint32(n)
}

// dieWithParent: as dump.h's dump_die_with_parent.
func dieWithParent() {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		fatal("failed to set PR_SET_PDEATHSIG: %v", err)
	}
	if want := os.Getenv(envParentPID); want != "" && want != strconv.Itoa(os.Getppid()) {
		fatal("parent %s exited before this process started; exiting", want)
	}
}

func catchStopSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-ch
		stopHook()
		os.Exit(128 + int(sig.(syscall.Signal)))
	}()
}

func ciliumVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/cilium/ebpf" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

// peakRSSKiB is VmHWM from /proc/self/status, as dump_reader.c reads it: getrusage's
// ru_maxrss carries the pre-exec image's peak (the forking harness's) across exec.
func peakRSSKiB() float64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kib
		}
	}
	return 0
}

func poison(keys, vals []uint32) {
	for i := range keys {
		keys[i], vals[i] = 0xffffffff, 0xffffffff
	}
}

// memWatch accumulates the Go runtime's allocation statistics over the measured dumps.
type memWatch struct {
	first, last     runtime.MemStats
	started         bool
	allocBytes, gcs uint64
	mallocs, dumps  uint64
	before          runtime.MemStats
}

func (w *memWatch) beforeDump() {
	runtime.ReadMemStats(&w.before)
	if !w.started {
		w.first, w.started = w.before, true
	}
}

func (w *memWatch) afterDump() {
	runtime.ReadMemStats(&w.last)
	w.allocBytes += w.last.TotalAlloc - w.before.TotalAlloc
	w.mallocs += w.last.Mallocs - w.before.Mallocs
	w.gcs += uint64(w.last.NumGC - w.before.NumGC)
	w.dumps++
}

func (w *memWatch) emit(entries uint32) {
	for _, s := range []struct {
		name string
		ms   *runtime.MemStats
	}{{"before", &w.first}, {"after", &w.last}} {
		emitCounter("go_alloc_"+s.name, float64(s.ms.Alloc))
		emitCounter("go_heap_alloc_"+s.name, float64(s.ms.HeapAlloc))
		emitCounter("go_total_alloc_"+s.name, float64(s.ms.TotalAlloc))
		emitCounter("go_sys_"+s.name, float64(s.ms.Sys))
		emitCounter("go_num_gc_"+s.name, float64(s.ms.NumGC))
	}
	perEntry := float64(w.dumps) * float64(entries)
	emitCounter("go_alloc_bytes_per_entry", float64(w.allocBytes)/perEntry)
	emitCounter("go_mallocs_per_entry", float64(w.mallocs)/perEntry)
	emitCounter("go_gc_per_dump", float64(w.gcs)/float64(w.dumps))
}

func main() {
	a := parseArgs(os.Args[1:], "read a whole BPF map (u32 -> u32) with cilium/ebpf, verifying every entry", variants, params)
	kind := a.params["map"]
	if kind != "hash" && kind != "array" {
		usageError("--param map=%s is not a map type; use map=hash or map=array", kind)
	}
	entries := parseEntries(a.params["entries"])
	dieWithParent()
	catchStopSignals()

	src := findMap(kind, entries)
	loader := watchLoader(src)
	m := openMap(src, kind, entries)
	size := int(entries) + bufferSlack
	keys, vals := make([]uint32, size), make([]uint32, size)
	bitmap := make([]uint64, (int(entries)+63)/64)

	meta := map[string]any{
		"type": "meta", "timer": timerName, "timer_overhead_ns": timerOverheadNs(),
		"variant": a.variant, "map": kind, "entries": entries, "map_id": src.id,
		"map_source": map[bool]string{true: "own loader", false: "session loader"}[src.ownLoader],
		"go_version": runtime.Version(), "cilium_ebpf": ciliumVersion(),
	}
	if a.variant == "go-batch" {
		meta["batch"] = batchChunk
	}
	emit(meta)
	// Opened at the first counted dump, not before: open events slow what runs beside them
	// (benchmarks/common/counters.h); then a meta line of their own, as
	// bench_counters_open_late.
	var ctr *counters

	var watch memWatch
	var checksum uint64
	retries := 0
	checkNs, checks := 0.0, 0
	for i := 0; i < a.warmup+a.samples+a.counted; i++ {
		poison(keys, vals)
		measured := i >= a.warmup && i < a.warmup+a.samples
		counted := i >= a.warmup+a.samples
		if measured {
			watch.beforeDump()
		}
		if counted && ctr == nil {
			ctr = openCounters(readerTracepoints)
			late := map[string]any{"type": "meta"}
			ctr.meta(late)
			emit(late)
		}
		if counted {
			ctr.start()
		}
		t0 := time.Now()
		var d dump
		if a.variant == "go-iterate" {
			d = dumpIterate(m, keys, vals)
		} else {
			d = dumpBatch(m, keys, vals)
		}
		ns := float64(time.Since(t0).Nanoseconds())
		if counted {
			ctr.stop()
		}
		if measured {
			watch.afterDump()
		}
		c0 := time.Now()
		v := verify(keys[:d.count], vals[:d.count], entries, bitmap)
		checkNs += float64(time.Since(c0).Nanoseconds())
		checks++
		requireComplete(a.variant, d.count, entries, v)
		loader.check()
		if i == 0 {
			checksum = v.checksum
		} else if v.checksum != checksum {
			fatal("dump %d has checksum %d, the first had %d", i, v.checksum, checksum)
		}
		// The process's first dump, warm-up or not: what a one-shot reader pays (METHOD.md,
		// "The first dump").
		if i == 0 {
			emitSample("first_ns_per_entry", ns/float64(entries))
		}
		if !measured && !counted {
			continue
		}
		prefix := ""
		if counted {
			prefix = "counted."
		} else {
			retries += d.enospcRetries
		}
		emitSample(prefix+"ns_per_entry", ns/float64(entries))
		emitSample(prefix+"s_per_dump", ns/1e9)
		emitSample(prefix+"entries_per_s", float64(entries)/(ns/1e9))
		emitSample(prefix+"syscalls_per_dump", float64(d.syscalls))
		if counted { // per entry, as ns_per_entry
			ctr.emit(float64(entries))
		}
	}

	emitCounter("entries_verified", float64(entries))
	emitCounter("checksum", float64(checksum))
	emitCounter("enospc_retries", float64(retries))
	emitCounter("check_ns_per_entry", checkNs/float64(checks)/float64(entries))
	emitCounter("reader_peak_rss_kib", peakRSSKiB())
	watch.emit(entries)
	for _, c := range src.relayed {
		emitCounter(c.name, c.value)
	}
	_ = m.Close()
	src.stop()
}
