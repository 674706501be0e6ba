"""One look at a host's `bakeoff run` (fleet/playbook.yml runs it every few seconds).

Why not Ansible's own async poll: it retries through lost connections until the run's whole
time limit (hours) and never notices a job whose processes are gone (a host that rebooted
with its sshd back) or frozen (stopped with SIGSTOP, hung in the kernel). This look prints
one JSON line:

  {"finished": bool, "died": bool, "stalled": bool, "stall": str, "rc": int|null,
   "msg": str, "stderr": str, "trials": N}

finished: the async job wrote its result (rc, the tail of stderr, Ansible's msg), or it is
gone (died: no process of the job is left and it wrote no result), or it stalled; trials: the
lines of the run's journal (trials.jsonl), the trials recorded so far, which the controller
keeps in fleet.json so that a host lost later is named with what it had finished.

stalled: the journal has not grown for longer than the stall bound, STALL_FACTOR times the
slowest trial the run recorded and at least STALL_AFTER_S seconds (before the first trial:
FIRST_TRIAL_FACTOR times STALL_AFTER_S from the job's start), while its trials go on (not
while it analyses and writes its reports). The run is then stopped here:
SIGCONT and SIGTERM to it and its children (a stopped process saves its trials once it runs
again), SIGKILL after TERM_WAIT_S; `stall` says what was seen and done.

Usage: python3 poll_run.py ASYNC_RESULTS_FILE RUN_DIR [STALL_AFTER_S], or python3
poll_run.py --trials RUN_DIR (the trials recorded, for fleet/stop.yml). Only the standard
library: it runs with the host's Python as well as the checkout's venv.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

_TAIL = 2000
STALL_FACTOR = 10
FIRST_TRIAL_FACTOR = 3
TERM_WAIT_S = 30


def _job(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _cmdline(pid: str) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def _alive(wrapper_id: str) -> bool:
    """Is any process of the job (Ansible's async_wrapper, argv[1] = the job's id) left?"""
    needle = wrapper_id.encode()
    return any(needle in _cmdline(pid) for pid in os.listdir("/proc") if pid.isdigit())


def _journal(run_dir: str) -> list[dict[str, Any]]:
    out = []
    try:
        with open(os.path.join(run_dir, "trials.jsonl"), "rb") as f:
            for line in f:
                try:
                    trial = json.loads(line)
                except ValueError:  # a torn last line
                    continue
                if isinstance(trial, dict):
                    out.append(trial)
    except OSError:
        pass
    return out


def _trials(run_dir: str, journal: list[dict[str, Any]]) -> int:
    if journal or os.path.exists(os.path.join(run_dir, "trials.jsonl")):
        return len(journal)
    try:  # a finished run keeps its trials in results.json and removes the journal
        with open(os.path.join(run_dir, "results.json"), encoding="utf-8") as f:
            return len(json.load(f).get("trials", []))
    except (OSError, ValueError, AttributeError):
        return 0


def _measuring(run_dir: str) -> bool:
    """Are the run's trials still going? Once they are done, bakeoff run writes results.json
    with its final status and removes the journal, then analyses and writes its reports:
    no trial is recorded then, and none is due (--host-timeout bounds that part)."""
    if os.path.exists(os.path.join(run_dir, "trials.jsonl")):
        return True
    try:
        with open(os.path.join(run_dir, "results.json"), encoding="utf-8") as f:
            return json.load(f).get("status") in (None, "running")
    except (OSError, ValueError, AttributeError):
        return True  # not written yet: the run is starting


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def stall_bound(journal: list[dict[str, Any]], stall_after_s: float) -> float:
    """Seconds without a new trial after which the run counts as stalled."""
    walls = [float(t.get("wall_s") or 0) for t in journal]
    if not walls:
        return FIRST_TRIAL_FACTOR * stall_after_s
    return max(stall_after_s, STALL_FACTOR * max(walls))


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(pid))
    return kids


def _tree(root: int) -> list[int]:
    kids, out, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += kids.get(pid, [])
    return out


def _runs(run_dir: str) -> list[int]:
    """This run's `bakeoff run` process: its command line ends with its --out (or --resume)
    directory."""
    want = run_dir.encode()
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            argv = [a for a in _cmdline(pid) if a]
            if len(argv) >= 3 and argv[-1] == want and b"run" in argv and \
                    any(a.endswith(b"bin/bakeoff") for a in argv[:2]):
                found.append(int(pid))
    return found


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            continue


def stop_run(run_dir: str) -> str:
    """SIGTERM (then SIGCONT: a stopped process must run to save its trials) to the run and
    its children; SIGKILL to what is left after TERM_WAIT_S. Says which it took."""
    roots = _runs(run_dir)
    if not roots:
        return "its process was gone"
    tree = [p for r in roots for p in _tree(r)]
    _signal(roots, signal.SIGTERM)
    _signal(tree, signal.SIGCONT)
    deadline = time.monotonic() + TERM_WAIT_S
    while time.monotonic() < deadline:
        if not _runs(run_dir):
            return "stopped with SIGTERM (it saved its trials)"
        time.sleep(0.5)
    _signal([p for r in _runs(run_dir) for p in _tree(r)], signal.SIGKILL)
    return f"killed with SIGKILL ({TERM_WAIT_S} s after SIGTERM it had not ended)"


def look(results_file: str, run_dir: str, stall_after_s: float | None = None) -> dict[str, Any]:
    # The job's file is "j<number>.<pid>"; its processes carry "j<number>" as argv[1].
    wrapper_id = os.path.basename(results_file).split(".", 1)[0]
    job = _job(results_file)
    # async_wrapper writes {"started": true, ...} at the start and the command's result,
    # without "started", at the end.
    running = not job or "started" in job
    died = False
    if running and not _alive(wrapper_id):
        job = _job(results_file)  # it may have finished between the two looks
        running = not job or "started" in job
        died = running
    journal = _journal(run_dir)
    stall = ""
    if running and not died and stall_after_s and _measuring(run_dir):
        # The last sign of progress: the journal's last write, or the job's start (a journal
        # an earlier attempt left is older than this run).
        since = max(t for t in (_mtime(os.path.join(run_dir, "trials.jsonl")),
                                _mtime(results_file), 0.0) if t is not None)
        quiet, bound = time.time() - since, stall_bound(journal, stall_after_s)
        if since and quiet > bound:
            what = (f"no trial recorded for {quiet:.0f} s, past its bound of {bound:.0f} s"
                    + (f" ({STALL_FACTOR}x its slowest trial, at least --stall-after "
                       f"{stall_after_s:g} s)" if journal else
                       f" (no trial yet: {FIRST_TRIAL_FACTOR}x --stall-after "
                       f"{stall_after_s:g} s from its start)"))
            stall = f"{what}; {stop_run(run_dir)}"
            journal = _journal(run_dir)  # what it saved on the way out
    rc = job.get("rc") if not running else None
    return {
        "finished": not running or died or bool(stall),
        "died": died,
        "stalled": bool(stall),
        "stall": stall,
        "rc": rc if isinstance(rc, int) else None,
        "msg": str(job.get("msg") or "") if not running else "",
        "stderr": str(job.get("stderr") or "")[-_TAIL:] if not running else "",
        "trials": _trials(run_dir, journal),
    }


if __name__ == "__main__":
    if sys.argv[1] == "--trials":  # fleet/stop.yml: what the journal holds once it stopped
        print(json.dumps({"trials": _trials(sys.argv[2], _journal(sys.argv[2]))}))
        sys.exit(0)
    stall_after = float(sys.argv[3]) if len(sys.argv) > 3 else None
    print(json.dumps(look(sys.argv[1], sys.argv[2], stall_after)))
