// Kernel counters of the counted dumps (--counted-samples), as benchmarks/common/counters.c
// opens them for the C readers: perf events on this program's main thread, opened disabled,
// enabled only around a counted dump's timed section, printed per entry as per_op.<name>
// samples under the same names as the C reader's, so the two languages compare.
//
// Per thread, not per process: main() runs locked to the main thread (init), and every
// bpf() call of a dump is made by it, so the bpf() and read() counts are whole. What other
// Go runtime threads do meanwhile (the garbage collector's page faults, its context
// switches) is not counted, as the C reader's helpers are not.
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

type perfCounter struct {
	name          string
	fd            int
	total, before uint64
	onRawSyscalls bool // a syscalls:* tracepoint counted on raw_syscalls (addSyscall)
}

type counters struct {
	open   []perfCounter
	absent []string
}

type eventKind struct {
	name   string
	typ    uint32
	config uint64
}

var softwareEvents = []eventKind{
	{"task_clock_ns", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_TASK_CLOCK},
	{"context_switches", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CONTEXT_SWITCHES},
	{"cpu_migrations", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CPU_MIGRATIONS},
	{"page_faults_minor", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_PAGE_FAULTS_MIN},
	{"page_faults_major", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ},
}

var pmuEvents = []eventKind{
	{"cycles", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CPU_CYCLES},
	{"instructions", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_INSTRUCTIONS},
	{"branch_misses", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_BRANCH_MISSES},
	{"cache_misses", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CACHE_MISSES},
	{"dtlb_load_misses", unix.PERF_TYPE_HW_CACHE, unix.PERF_COUNT_HW_CACHE_DTLB |
		unix.PERF_COUNT_HW_CACHE_OP_READ<<8 | unix.PERF_COUNT_HW_CACHE_RESULT_MISS<<16},
}

// openError words an open failure as counters.c's open_error does.
func openError(err error) string {
	switch err {
	case unix.ENOENT, unix.EOPNOTSUPP, unix.ENODEV:
		return "not supported on this host (no PMU, or the event does not exist)"
	case unix.EACCES, unix.EPERM:
		return "not permitted (kernel.perf_event_paranoid, or not root)"
	}
	return err.Error()
}

func perfOpen(typ uint32, config uint64) (int, error) {
	attr := unix.PerfEventAttr{Type: typ, Config: config,
		Bits: unix.PerfBitDisabled | unix.PerfBitExcludeHv}
	attr.Size = uint32(binary.Size(attr))
	return unix.PerfEventOpen(&attr, 0 /* this thread */, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
}

func (c *counters) add(name string, typ uint32, config uint64) {
	fd, err := perfOpen(typ, config)
	if err != nil {
		c.absent = append(c.absent, name+": "+openError(err))
		return
	}
	c.open = append(c.open, perfCounter{name: name, fd: fd})
}

// syscallNrs: the system calls this reader might count, by name, numbered for the
// architecture it is built for. counters.c has every one the C headers know; a name not here
// gets its own tracepoint (addSyscall).
var syscallNrs = map[string]uintptr{
	"bpf": unix.SYS_BPF, "read": unix.SYS_READ, "write": unix.SYS_WRITE,
	"openat": unix.SYS_OPENAT, "close": unix.SYS_CLOSE, "ioctl": unix.SYS_IOCTL,
	"mmap": unix.SYS_MMAP, "munmap": unix.SYS_MUNMAP, "madvise": unix.SYS_MADVISE,
	"brk": unix.SYS_BRK, "futex": unix.SYS_FUTEX, "sched_yield": unix.SYS_SCHED_YIELD,
	"getppid": unix.SYS_GETPPID,
}

// addSyscall counts syscalls:<event> (sys_enter_NAME or sys_exit_NAME) on raw_syscalls'
// tracepoint of the same name with the filter "id == NR", as counters.c's add_syscall and
// for its reason: closing the last perf event on a tracepoint waits out RCU grace periods
// (~40 ms here), once per distinct tracepoint, so all the system calls share one. False
// (and nothing opened) for a name not in syscallNrs or a kernel that refuses the filter:
// then it gets its own tracepoint, as before.
func (c *counters) addSyscall(name, event string) bool {
	for _, raw := range []string{"sys_enter", "sys_exit"} {
		call, ok := strings.CutPrefix(event, raw+"_")
		nr, known := syscallNrs[call]
		if !ok || !known {
			continue
		}
		id, found := tracepointID("raw_syscalls", raw)
		if !found {
			return false
		}
		fd, err := perfOpen(unix.PERF_TYPE_TRACEPOINT, id)
		if err != nil {
			return false
		}
		if err := unix.IoctlSetString(fd, unix.PERF_EVENT_IOC_SET_FILTER,
			fmt.Sprintf("id == %d", nr)); err != nil {
			unix.Close(fd)
			return false
		}
		c.open = append(c.open, perfCounter{name: name, fd: fd, onRawSyscalls: true})
		return true
	}
	return false
}

func tracepointID(system, event string) (uint64, bool) {
	for _, root := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		text, err := os.ReadFile(fmt.Sprintf("%s/events/%s/%s/id", root, system, event))
		if err != nil {
			continue
		}
		if id, err := strconv.ParseUint(strings.TrimSpace(string(text)), 10, 64); err == nil {
			return id, true
		}
	}
	return 0, false
}

func (c *counters) addTracepoints(list string) {
	for _, spec := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		system, event, ok := strings.Cut(spec, ":")
		if !ok || system == "" || event == "" || strings.Contains(event, ":") {
			c.absent = append(c.absent, spec+": not a tracepoint; write it as subsystem:event, e.g. tlb:tlb_flush")
			continue
		}
		name := system + "." + event
		dup := false
		for _, o := range c.open {
			dup = dup || o.name == name
		}
		if dup {
			continue
		}
		// It exists (so the system call is traced): counted on raw_syscalls if it can be.
		if id, found := tracepointID(system, event); !found {
			c.absent = append(c.absent, spec+": no such tracepoint in tracefs (or tracefs is not mounted)")
		} else if system != "syscalls" || !c.addSyscall(name, event) {
			c.add(name, unix.PERF_TYPE_TRACEPOINT, id)
		}
	}
}

// openCounters: the software events, the PMU events (or why not), the tracepoints named,
// and those in BAKEOFF_TRACEPOINTS; BAKEOFF_COUNTERS=off opens none (counters.h).
func openCounters(tracepoints string) *counters {
	c := &counters{}
	if os.Getenv("BAKEOFF_COUNTERS") == "off" {
		c.absent = append(c.absent, "all: BAKEOFF_COUNTERS=off")
		return c
	}
	for _, e := range append(append([]eventKind{}, softwareEvents...), pmuEvents...) {
		c.add(e.name, e.typ, e.config)
	}
	c.addTracepoints(tracepoints)
	c.addTracepoints(os.Getenv("BAKEOFF_TRACEPOINTS"))
	return c
}

// meta adds "counters", "counters_on_raw_syscalls" and "counters_absent" to a meta line, as
// bench_counters_meta.
func (c *counters) meta(m map[string]any) {
	var names, onRaw []string
	for _, o := range c.open {
		names = append(names, o.name)
		if o.onRawSyscalls {
			onRaw = append(onRaw, o.name)
		}
	}
	m["counters"] = strings.Join(names, ",")
	m["counters_on_raw_syscalls"] = strings.Join(onRaw, ",")
	m["counters_absent"] = strings.Join(c.absent, "; ")
}

func (c *counters) ioctlAll(req uint) {
	for _, o := range c.open {
		if err := unix.IoctlSetInt(o.fd, req, 0); err != nil {
			fatal("failed to switch the counter %s: %v", o.name, err)
		}
	}
}

// start and stop sit outside the timer's readings: they add no time to the sample.
func (c *counters) start() { c.ioctlAll(unix.PERF_EVENT_IOC_ENABLE) }

func (c *counters) stop() {
	c.ioctlAll(unix.PERF_EVENT_IOC_DISABLE)
	buf := make([]byte, 8)
	for i := range c.open {
		if n, err := unix.Read(c.open[i].fd, buf); err != nil || n != 8 {
			fatal("failed to read the counter %s: %v", c.open[i].name, err)
		}
		c.open[i].total = binary.NativeEndian.Uint64(buf)
	}
}

// emit prints one per_op.<name> sample per counter: the count since the last emit / ops.
func (c *counters) emit(ops float64) {
	for i := range c.open {
		o := &c.open[i]
		emitSample("per_op."+o.name, float64(o.total-o.before)/ops)
		o.before = o.total
	}
}
