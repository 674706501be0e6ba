"""target=child: the cgroup bakeoff-<pid>-target under the memory controller, made on the
first trial that needs it, with a charger process keeping CHARGE_MIB charged to it, and
removed at the end of the run. The session's state (spec.py)."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import time
from pathlib import Path

from bakeoff.core.errors import UsageError

from .controller import memory_controller

CHARGER = "cgroup_stat_read/cgstat_charger"
CHARGE_MIB = 64


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


class ChargerFailed(Exception):
    pass


class ChildCgroup:
    """bakeoff-<pid>-target under the memory controller, with a charger process in it."""

    def __init__(self, build_dir: Path) -> None:
        self.build_dir = build_dir
        self.path: Path | None = None
        self.charger: subprocess.Popen[bytes] | None = None
        self.enabled_memory_in: Path | None = None  # v2: a subtree_control we changed

    def ensure(self) -> tuple[Path, int]:
        """The child cgroup and the PID of the live charger in it. Made on first use; a
        charger that died since (killed, OOM) is replaced, so that its death fails the trial
        it hit (cgstat watches the charger) and not, silently, every trial after it on an
        empty cgroup."""
        if self.path is None:
            self._create()
        elif self.charger is None or self.charger.poll() is not None:
            self._stop_charger()
            self._start_charger()
        assert self.path is not None and self.charger is not None
        return self.path, self.charger.pid

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
        self._start_charger()

    def _start_charger(self) -> None:
        """Raises ChargerFailed (the trial fails with it, the run goes on)."""
        assert self.path is not None
        charger = self.build_dir / CHARGER
        # Its own session: a Ctrl-C at the terminal reaches the harness, which removes it.
        self.charger = subprocess.Popen([str(charger), str(self.path), str(CHARGE_MIB)],
                                        stdout=subprocess.PIPE, start_new_session=True)
        assert self.charger.stdout is not None
        line = self.charger.stdout.readline()
        if line.strip() != b"ready":
            self._stop_charger()
            raise ChargerFailed(f"the memory charger for {self.path} did not start")

    def _stop_charger(self) -> None:
        if self.charger is not None:
            # SIGKILL at once: the charger holds nothing to clean up, and its memory is
            # uncharged when it is gone.
            with contextlib.suppress(ProcessLookupError):
                self.charger.kill()
            self.charger.wait()
            if self.charger.stdout:
                self.charger.stdout.close()
            self.charger = None

    def _enable_memory(self, root: Path) -> None:
        control = root / "cgroup.subtree_control"
        if "memory" not in control.read_text().split():
            control.write_text("+memory")
            self.enabled_memory_in = control

    def remove(self) -> None:
        self._stop_charger()
        if self.path is not None:
            move_out(self.path)
            rmdir_when_empty(self.path)
            self.path = None
        if self.enabled_memory_in is not None:
            with contextlib.suppress(OSError):  # fails when others use it now: leave it on
                self.enabled_memory_in.write_text("-memory")
            self.enabled_memory_in = None
