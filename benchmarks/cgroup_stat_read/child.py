"""target=child: the cgroup bakeoff-<pid>-target under the memory controller, made on the
first trial that needs it, with a charger process keeping CHARGE_MIB charged to it, and
removed at the end of the run. The session's state (spec.py). The charger is a HeldProcess
(bakeoff.room): its own session, ready when it prints "ready", a start bounded in time and
ended by Ctrl-C, revived before the next trial if it died."""

from __future__ import annotations

import contextlib
import errno
import os
import time
from pathlib import Path

from bakeoff.room import HeldProcess, UsageError

from .controller import memory_controller

CHARGER = "cgroup_stat_read/cgstat_charger"
CHARGE_MIB = 64
# A bound on the charger's start, against a hung one (it only touches CHARGE_MIB MiB and a
# quarter of that again once), far above a real start even on a loaded machine.
CHARGER_START_TIMEOUT_S = 30.0
# The charger holds nothing to clean up (its memory is uncharged when it is gone): SIGTERM
# ends it at once, the grace is only for a stuck one.
CHARGER_STOP_GRACE_S = 2.0


def move_out(cgroup: Path) -> None:
    """Every process still in cgroup goes to its parent, so that rmdir can succeed."""
    with contextlib.suppress(OSError):
        for pid in (cgroup / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (cgroup.parent / "cgroup.procs").write_text(pid)


def rmdir_when_empty(cgroup: Path) -> None:
    for _ in range(50):  # a just-killed task leaves the cgroup a moment after it is reaped
        try:
            cgroup.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
            move_out(cgroup)
            time.sleep(0.02)
    cgroup.rmdir()


class ChildCgroup:
    """bakeoff-<pid>-target under the memory controller, with a charger process in it."""

    def __init__(self, build_dir: Path) -> None:
        self.build_dir = build_dir
        self.path: Path | None = None
        self.charger: HeldProcess | None = None
        self.enabled_memory_in: Path | None = None  # v2: a subtree_control we changed

    def ensure(self) -> tuple[Path, HeldProcess] | str:
        """The child cgroup and its live charger, or why there is none (the trial fails
        with it; the run goes on). Made on first use; a charger that died since (killed,
        OOM) is replaced, so that its death fails the trial it hit (cgstat watches the
        charger) and not, silently, every trial after it on an empty cgroup."""
        if self.path is None:
            self._create()
        assert self.path is not None and self.charger is not None
        problem = self.charger.ensure()
        if problem:
            return f"the memory charger for {self.path} did not start: {problem}"
        return self.path, self.charger

    def _create(self) -> None:
        controller = memory_controller()
        if controller is None:
            raise UsageError("target=child needs a memory controller; see bakeoff doctor")
        root, version = controller
        if version == "v2":
            self._enable_memory(root)
        path = root / f"bakeoff-{os.getpid()}-target"
        path.mkdir(mode=0o755)
        self.path = path
        self.charger = HeldProcess(
            "cgstat_charger", [str(self.build_dir / CHARGER), str(path), str(CHARGE_MIB)],
            ready="ready", start_timeout_s=CHARGER_START_TIMEOUT_S,
            stop_grace_s=CHARGER_STOP_GRACE_S)

    def _enable_memory(self, root: Path) -> None:
        control = root / "cgroup.subtree_control"
        if "memory" not in control.read_text().split():
            control.write_text("+memory")
            self.enabled_memory_in = control

    def remove(self) -> None:
        if self.charger is not None:
            self.charger.stop()
            self.charger = None
        if self.path is not None:
            move_out(self.path)
            rmdir_when_empty(self.path)
            self.path = None
        if self.enabled_memory_in is not None:
            with contextlib.suppress(OSError):  # fails when others use it now: leave it on
                self.enabled_memory_in.write_text("-memory")
            self.enabled_memory_in = None
