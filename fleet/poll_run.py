"""One look at a host's `bakeoff run` (fleet/playbook.yml runs it every few seconds).

Why not Ansible's own async poll: it retries through lost connections until the run's whole
time limit (hours) and never notices a job whose processes are gone (a host that rebooted
with its sshd back). This look prints one JSON line:

  {"finished": bool, "died": bool, "rc": int|null, "msg": str, "stderr": str, "trials": N}

finished: the async job wrote its result (rc, the tail of stderr, Ansible's msg), or it is
gone (died: no process of the job is left and it wrote no result); trials: the lines of the
run's journal (trials.jsonl), the trials recorded so far, which the controller keeps in
fleet.json so that a host lost later is named with what it had finished.

Usage: python3 poll_run.py ASYNC_RESULTS_FILE RUN_DIR. Only the standard library: it runs
with the host's Python as well as the checkout's venv.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

_TAIL = 2000


def _job(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _alive(wrapper_id: str) -> bool:
    """Is any process of the job (Ansible's async_wrapper, argv[1] = the job's id) left?"""
    needle = wrapper_id.encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if needle in f.read().split(b"\0"):
                    return True
        except OSError:
            continue
    return False


def _trials(run_dir: str) -> int:
    try:
        with open(os.path.join(run_dir, "trials.jsonl"), "rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        pass
    try:  # a finished run keeps its trials in results.json and removes the journal
        with open(os.path.join(run_dir, "results.json"), encoding="utf-8") as f:
            return len(json.load(f).get("trials", []))
    except (OSError, ValueError, AttributeError):
        return 0


def look(results_file: str, run_dir: str) -> dict[str, Any]:
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
    rc = job.get("rc") if not running else None
    return {
        "finished": not running or died,
        "died": died,
        "rc": rc if isinstance(rc, int) else None,
        "msg": str(job.get("msg") or "") if not running else "",
        "stderr": str(job.get("stderr") or "")[-_TAIL:] if not running else "",
        "trials": _trials(run_dir),
    }


if __name__ == "__main__":
    print(json.dumps(look(sys.argv[1], sys.argv[2])))
