"""What a run holds across its trials, so that a trial costs its calls and not a tracer's
start (issue 34): the LTTng session daemon and the run's recording session, one eBPF
tracer (bakeoff_tracer, loaded and attached) per wake-up policy, and bpftrace (its script
compiled and attached once; a trial takes its counts from the maps bpftrace prints on
SIGUSR1). The session's state
(spec.py): made when the run's trials start, torn down when they end, on success, failure,
Ctrl-C and SIGTERM alike.

Each is brought up on the first trial that needs it (prepare_trial), and again when it
died since, so a death fails the trial it hit, not every trial after it. A trial begins,
ends and reads its own part of them (tracers.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from bakeoff.room import HeldProcess
from bakeoff.room.program import Failure

from . import lttng
from .tracers import (
    Build,
    HeldBpftrace,
    HeldEbpf,
    bpftrace_attached,
    bpftrace_print,
    control_socket,
    ebpf_tracer_argv,
    held_bpftrace_argv,
)

ROOM = "tracing_overhead"
TRACER_START_S = 30.0
TRACER_STOP_GRACE_S = 5.0


@dataclass
class RunHold:
    """The run's tracers. `daemon` and `session`: set when the run has lttng cases."""

    build: Build
    scratch: Path
    cpus: tuple[int, ...]
    daemon: lttng.DaemonHold | None = None
    session: lttng.HeldSession | None = None
    ebpf: dict[str, HeldProcess] = field(default_factory=dict)
    bpftrace: HeldProcess | None = None

    def lttng_env(self) -> dict[str, str] | str:
        """Before an lttng trial: the daemon revived if it died, the run's session made if
        it is not there (first trial, or a revived daemon); its environment for the trial,
        or why the trial cannot run."""
        if self.daemon is None or self.session is None:
            return {}  # no daemon of ours to hold: the trial says what is missing
        self.daemon.revive()
        problem = self.session.ensure()
        return problem if problem is not None else self.session.env()

    def ebpf_env(self, mode: str) -> dict[str, str] | str:
        """Before an eBPF trial: the policy's tracer, started (or revived) on the partner
        CPUs with its probes on the run's own copy of the library; its environment for the
        trial, or why the trial cannot run."""
        home = self.scratch / f"ebpf-{mode}"
        library = home / self.build.plain_lib.name
        control = control_socket("run", mode)
        tracer = self.ebpf.get(mode)
        if tracer is None:
            home.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.build.plain_lib, library)
            tracer = HeldProcess(
                f"bakeoff_tracer-{mode}", ebpf_tracer_argv(self.build, library, mode, control),
                ready=lambda line: '"type":"ready"' in line, cpus=self.cpus,
                stderr=home / "tracer.stderr", start_timeout_s=TRACER_START_S,
                stop_grace_s=TRACER_STOP_GRACE_S)
            self.ebpf[mode] = tracer
        if not tracer.alive():
            problem = tracer.ensure()
            if problem is not None:
                return problem
        return HeldEbpf(control, tracer.pid, library).env()

    def bpftrace_env(self) -> dict[str, str] | str:
        """Before a bpftrace trial: the run's bpftrace, started (or revived) on the partner
        CPUs with its probes on the run's own copy of the library; its environment for the
        trial, or why the trial cannot run. No bpftrace installed: nothing held, and the
        trial says what is missing."""
        home = self.scratch / "bpftrace"
        library = home / self.build.plain_lib.name
        output = home / "bpftrace.json"
        if self.bpftrace is None:
            if shutil.which("bpftrace") is None:
                return {}
            home.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.build.plain_lib, library)
            self.bpftrace = HeldProcess(
                "bpftrace", held_bpftrace_argv(library, output),
                ready_probe=lambda: bpftrace_attached(output) > 0, cpus=self.cpus,
                stderr=home / "bpftrace.stderr", start_timeout_s=TRACER_START_S,
                stop_grace_s=TRACER_STOP_GRACE_S)
        if not self.bpftrace.alive():
            output.unlink(missing_ok=True)  # so readiness is this start's line
            problem = self.bpftrace.ensure() or self._bpftrace_counting(output, library)
            if problem is not None:
                self.bpftrace.stop()
                return problem
        return HeldBpftrace(self.bpftrace.pid, output, library).env()

    def _bpftrace_counting(self, output: Path, library: Path) -> str | None:
        """None once both of bpftrace's probes count a call of the traced function, made here
        from the run's copy of the library (a trial's counts are differences of prints, so
        these calls are in none). bpftrace prints its attached_probes line before the
        probes are attached: a trial begun on that line alone, under load, counted its
        exits and none of its entries (docs/RELIABILITY.md, "The whole suite")."""
        assert self.bpftrace is not None
        app = [str(self.build.app), "--duration-us", "0", "--calls", "1", "--samples", "1",
               "--warmup", "0", "--counted-samples", "0"]
        env = {**os.environ, "LD_LIBRARY_PATH": str(library.parent)}
        deadline = time.monotonic() + TRACER_START_S
        offset = 0
        while time.monotonic() < deadline:
            try:
                called = subprocess.run(app, env=env, capture_output=True,
                                        timeout=TRACER_START_S, check=False)
                printed = bpftrace_print(self.bpftrace.pid, output, offset, TRACER_START_S)
            except subprocess.TimeoutExpired:
                return f"the traced app did not end within {TRACER_START_S:g} s"
            except Failure as exc:
                return str(exc)
            if called.returncode != 0:
                return f"the traced app failed under bpftrace (status {called.returncode})"
            if printed is None:
                return "bpftrace exited while its probes were being checked"
            maps, offset = printed
            if maps["@entries"] > 0 and maps["@exits"] > 0:
                return None
            time.sleep(0.05)
        return f"bpftrace's probes counted no call within {TRACER_START_S:g} s"

    def close(self) -> None:
        """The eBPF tracers stopped (their probes and maps go with them) and the run's
        session destroyed; the daemon is the caller's (lttng.session_daemon)."""
        for tracer in self.ebpf.values():
            tracer.stop()
        if self.bpftrace is not None:
            self.bpftrace.stop()
        if self.session is not None:
            self.session.destroy()


def run_session_name() -> str:
    """bakeoff-<run pid>-<run pid>: the sweep of dead runs' sessions reads the owners from
    it, and the run's own clean-up destroys bakeoff-<run pid>-*."""
    return f"bakeoff-{os.getpid()}-{os.getpid()}"
