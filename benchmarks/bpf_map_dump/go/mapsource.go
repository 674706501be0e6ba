// Where the map comes from: the benchmark session's loader (its ID in BAKEOFF_DUMP_MAP_ID),
// or, run by hand, a dump_loader this program starts and stops (as dump_reader.c does).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

const (
	envParentPID = "BAKEOFF_DUMP_PARENT_PID"
	envMapID     = "BAKEOFF_DUMP_MAP_ID"
	envFill      = "BAKEOFF_DUMP_FILL"
	envLoaderPID = "BAKEOFF_DUMP_LOADER_PID"
	mapName      = "bakeoff_dump"
)

type counter struct {
	name  string
	value float64
}

type mapSource struct {
	id        uint32
	ownLoader bool
	relayed   []counter // the loader's fill counters, reported as ours
	loader    *exec.Cmd
}

func findMap(kind string, entries uint32) *mapSource {
	if id := os.Getenv(envMapID); id != "" {
		v, err := strconv.ParseUint(id, 10, 32)
		if err != nil || v == 0 {
			usageError("%s=%s is not a map ID; unset it to start a loader", envMapID, id)
		}
		return &mapSource{id: uint32(v), relayed: fillFromEnv()}
	}
	return startOwnLoader(kind, entries)
}

// BAKEOFF_DUMP_FILL="fill_elem_ns_per_entry=627.3,fill_batch_ns_per_entry=526.7,..."
func fillFromEnv() []counter {
	var out []counter
	for _, item := range strings.Split(os.Getenv(envFill), ",") {
		name, value, ok := strings.Cut(item, "=")
		if v, err := strconv.ParseFloat(value, 64); ok && err == nil {
			out = append(out, counter{name, v})
		}
	}
	return out
}

// startOwnLoader runs dump_loader (next to this program) and reads its protocol lines until
// the map_id counter. The loader dies with this process (Pdeathsig; main is locked to the
// main thread, whose exit is the process's), and stopHook stops it on every exit path.
func startOwnLoader(kind string, entries uint32) *mapSource {
	self, err := os.Executable()
	if err != nil {
		fatal("failed to find this program's path: %v", err)
	}
	cmd := exec.Command(filepath.Join(filepath.Dir(self), "dump_loader"), "--variant", "hold",
		"--param", "map="+kind, "--param", fmt.Sprintf("entries=%d", entries),
		"--samples", "1", "--warmup", "0")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", envParentPID, os.Getpid()))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fatal("failed to create a pipe for the loader: %v", err)
	}
	if err := cmd.Start(); err != nil {
		fatal("failed to start the loader: %v", err)
	}
	src := &mapSource{ownLoader: true, loader: cmd}
	stopHook = src.stop
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		var line struct {
			Type  string  `json:"type"`
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		}
		if json.Unmarshal(lines.Bytes(), &line) != nil || line.Type != "counter" {
			continue
		}
		if line.Name == "map_id" {
			src.id = uint32(line.Value)
			return src
		}
		src.relayed = append(src.relayed, counter{line.Name, line.Value})
	}
	err = cmd.Wait()
	stopHook = func() {}
	fatal("the loader exited (%v) before announcing its map; its error is above", err)
	return nil
}

func (s *mapSource) stop() {
	if s.loader == nil || s.loader.Process == nil {
		return
	}
	_ = s.loader.Process.Signal(syscall.SIGTERM)
	_ = s.loader.Wait()
	s.loader = nil
}

// loaderWatch is bench.h's bench_watch_env for the map loader: a pidfd on the session's loader, so that a
// reader whose loader dies mid-trial fails the trial (its own fd keeps the map readable).
type loaderWatch struct {
	pid int
	fd  int // -1: nothing to watch (no session loader, or our own)
}

func watchLoader(src *mapSource) loaderWatch {
	env := os.Getenv(envLoaderPID)
	if src.ownLoader || env == "" {
		return loaderWatch{fd: -1}
	}
	pid, err := strconv.Atoi(env)
	if err != nil || pid <= 0 {
		usageError("%s=%s is not a PID", envLoaderPID, env)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		fatal("the map loader (pid %d) exited before the trial started", pid)
	}
	if err != nil {
		fatal("failed to watch the map loader (pid %d): %v", pid, err)
	}
	return loaderWatch{pid: pid, fd: fd}
}

// check fails the trial if the loader has exited (one poll, no wait; not timed).
func (w loaderWatch) check() {
	if w.fd < 0 {
		return
	}
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
	if n, _ := unix.Poll(fds, 0); n > 0 {
		fatal("the map loader (pid %d) exited during the trial: its map was still read "+
			"through this reader's fd, but the trial does not count; the session starts a "+
			"new loader for the next trial", w.pid)
	}
}

// openMap opens the map by ID and checks it is still the loader's: name, type, shape, flags.
func openMap(src *mapSource, kind string, entries uint32) *ebpf.Map {
	m, err := ebpf.NewMapFromID(ebpf.MapID(src.id))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			fatal("failed to open map %d by ID (did its loader exit?): %v", src.id, err)
		}
		fatal("failed to open map %d by ID: %v", src.id, err)
	}
	info, err := m.Info()
	if err != nil {
		fatal("failed to read the info of map %d: %v", src.id, err)
	}
	want := ebpf.Hash
	if kind == "array" {
		want = ebpf.Array
	}
	mmapable := info.Flags&uint32(1<<10) != 0 // BPF_F_MMAPABLE
	if info.Name != mapName || info.Type != want || info.KeySize != 4 || info.ValueSize != 4 ||
		info.MaxEntries != entries || (kind == "array" && !mmapable) {
		fatal("map %d is '%s' (%v, %d entries, flags %#x), not the %s map '%s' of %d entries this trial needs",
			src.id, info.Name, info.Type, info.MaxEntries, info.Flags, kind, mapName, entries)
	}
	return m
}
