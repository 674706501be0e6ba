"""A fleet left running overnight (issue 35), on sshd hosts in network namespaces.

One fleet run is shared by the tests that only read it (`overnight`): alpha and beta measure,
gamma's `bakeoff run` is frozen with SIGSTOP once it has recorded 2 trials, delta is root
without CAP_SYS_ADMIN (a container's root). The inventory names its key and known_hosts by
relative paths, and the run starts in the inventory's directory, as `ansible -i` is used.
All three measuring hosts share this machine's hostname and machine id, so the history tells
them apart by their inventory names only. A first test interrupts a push on fresh hosts.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from conftest import REPO, live_run_lock
from fleet_hosts import NamespaceFleet, NamespaceHost, namespace_fleet

pytestmark = pytest.mark.slow

STALL_AFTER_S = 20  # shortened: the default (180 s) is measured in docs/runs/
ARGS = ["mremap-vs-memcpy", "--profile", "quick", "--param", "size=4KiB", "--trials", "4",
        "--seed", "11"]


@pytest.fixture(scope="module")
def fleet(built: Path) -> Iterator[NamespaceFleet]:
    if subprocess.run(["git", "-C", str(REPO), "status", "--porcelain"], capture_output=True,
                      text=True, check=True).stdout.strip():
        pytest.fail("the checkout has uncommitted changes: a fleet pushes only what is "
                    "committed; commit before running the fleet tests")
    with namespace_fleet(["alpha", "beta", "gamma", "delta"], without_caps=("delta",)) as f:
        yield f
        assert f.payloads_left() == [], f.payloads_left()  # no killed module's code stays
    assert f.leftovers() == [], f.leftovers()


def _host(fleet: NamespaceFleet, name: str) -> NamespaceHost:
    return next(h for h in fleet.hosts if h.name == name)


def _bakeoff(cwd: Path, *args: str, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bakeoff", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, check=False,
                          env={**os.environ, "COLUMNS": "200"})


def _events(out: Path, name: str = "events.jsonl") -> list[dict]:
    return [json.loads(ln) for ln in (out / name).read_text().splitlines() if ln.strip()]


def _remote_run(host: NamespaceHost, out: Path) -> Path:
    try:
        name = json.loads((out / "fleet.json").read_text())["remote_name"]
    except (OSError, ValueError):
        name = "not-yet"
    return host.remote_dir / "results" / name


def _run_pids(host: NamespaceHost, run_dir: Path) -> list[int]:
    """The host's `bakeoff run` of this fleet run (its command line ends with its directory)."""
    found = []
    for pid in host.pids():
        try:
            argv = psutil.Process(pid).cmdline()
        except psutil.Error:
            continue
        if argv and argv[-1] == str(run_dir) and "run" in argv and \
                any(a.endswith("bin/bakeoff") for a in argv[:2]):
            found.append(pid)
    return found


def test_an_interrupted_push_leaves_no_temporary_files_and_says_not_started(
        fleet: NamespaceFleet, tmp_path: Path) -> None:
    """Ctrl-C while the wheels are copied to a fresh host: Ansible's temporary directory (a
    half-copied archive) is removed, and the host is named as stopped before its run."""
    alpha = _host(fleet, "alpha")
    inv = fleet.inventory(tmp_path / "inventory.yml", [alpha])
    out = tmp_path / "fleet"
    proc = subprocess.Popen([sys.executable, "-m", "bakeoff", "fleet", "run", "-i", str(inv),
                             "--out", str(out), *ARGS], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while True:
            assert time.monotonic() < deadline and proc.poll() is None, "never saw the push"
            events = _events(out) if (out / "events.jsonl").exists() else []
            if any(e["event"] == "start" and e["task"] == "push: wheelhouse" for e in events):
                break
            time.sleep(0.05)
        time.sleep(0.5)  # the copy under way
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == 130, err
    assert "host alpha: stopped in its push phase before its run started; --resume sets it " \
        "up and runs it" in err, err
    ansible_dir = alpha.remote_dir / ".ansible"
    left = sorted(str(p.relative_to(alpha.remote_dir)) for p in ansible_dir.rglob("*")) \
        if ansible_dir.exists() else []
    assert not [p for p in left if "tmp" in p], left


@dataclass
class Overnight:
    res: subprocess.CompletedProcess[str]
    out: Path
    cwd: Path
    history: Path
    frozen: dict[str, float] = field(default_factory=dict)  # when, last trial's write
    seen: list[dict] = field(default_factory=list)  # gamma's journal when frozen


def _trial_key(trial: dict) -> tuple[str, str]:
    return json.dumps(trial["case"], sort_keys=True), trial["started_at"]


def _freeze_when_measuring(host: NamespaceHost, out: Path, frozen: dict[str, float],
                           seen: list[dict]) -> threading.Thread:
    def watch() -> None:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            run_dir = _remote_run(host, out)
            journal = run_dir / "trials.jsonl"
            try:
                lines = journal.read_text().splitlines()
            except OSError:
                lines = []
            pids = _run_pids(host, run_dir)
            if len(lines) >= 2 and pids:
                for pid in pids:
                    psutil.Process(pid).send_signal(signal.SIGSTOP)
                frozen["at"] = time.time()
                frozen["last_trial"] = journal.stat().st_mtime
                seen.extend(json.loads(ln) for ln in journal.read_text().splitlines()
                            if ln.endswith("}"))
                return
            time.sleep(0.1)
    thread = threading.Thread(target=watch)
    thread.start()
    return thread


@pytest.fixture(scope="module")
def overnight(fleet: NamespaceFleet, tmp_path_factory: pytest.TempPathFactory) -> Overnight:
    cwd = tmp_path_factory.mktemp("overnight")
    fleet.inventory(cwd / "hosts.yml", fleet.hosts, relative=True)
    out = cwd / "fleet"
    frozen: dict[str, float] = {}
    seen: list[dict] = []
    with live_run_lock("test_fleet_overnight.py: overnight"):  # before the test's own lock
        watcher = _freeze_when_measuring(_host(fleet, "gamma"), out, frozen, seen)
        try:
            res = _bakeoff(cwd, "fleet", "run", "-i", "hosts.yml", "--out", "fleet",
                           "--stall-after", str(STALL_AFTER_S), "--history", "history.sqlite",
                           *ARGS)
        finally:
            watcher.join(timeout=60)
    return Overnight(res, out, cwd, cwd / "history.sqlite", frozen, seen)


def test_a_frozen_host_is_declared_stalled_and_the_others_are_reported(
        overnight: Overnight, fleet: NamespaceFleet) -> None:
    res, out = overnight.res, overnight.out
    assert overnight.frozen, "gamma was never seen measuring"
    assert res.returncode == 1, (res.stdout, res.stderr)
    rec = json.loads((out / "fleet.json").read_text())
    # The relative key and known_hosts of the inventory were found: every host answered.
    assert all(h["reachable"] is True for h in rec["hosts"].values()), rec["hosts"]
    for name in ("alpha", "beta"):
        assert rec["hosts"][name]["status"] == "complete", rec["hosts"][name]
    g = rec["hosts"]["gamma"]
    assert g["status"] == "stalled" and g["reason"].startswith("no trial recorded for"), g
    assert "stopped with SIGTERM (it saved its trials)" in g["reason"], g["reason"]
    assert g["phases"]["run"]["outcome"] == "stalled" and g["run_status"] == "interrupted", g
    # Declared within its bound (10x its slowest trial, at least --stall-after) of its last
    # trial, plus the look's interval and the stop.
    slowest = max(t["wall_s"] for t in overnight.seen)
    bound = max(STALL_AFTER_S, 10 * slowest)
    declared = next(e["t"] for e in _events(out) if e["host"] == "gamma" and
                    e["event"] == "ok" and e["task"] == "run: bakeoff run")
    waited = declared - overnight.frozen["last_trial"]
    print(f"gamma: last trial to stalled verdict {waited:.1f} s (bound {bound:.1f} s)")
    assert bound < waited < bound + 45, (waited, bound)
    # Said as it is: stalled, never "run ok"; one line naming it at the end.
    assert "gamma: run stalled (" in res.stdout and "gamma: run ok" not in res.stdout, res.stdout
    assert "host gamma: stalled: no trial recorded" in res.stderr, res.stderr
    # What it had recorded came back (among its trials, or among those it measured again for
    # waiting too long for a CPU: results.json's "retaken", which a busy machine makes);
    # nothing of it runs on.
    fetched = json.loads((out / "hosts" / "gamma" / "results.json").read_text())
    recorded = {_trial_key(t) for t in [*fetched["trials"], *fetched.get("retaken", [])]}
    assert {_trial_key(t) for t in overnight.seen} <= recorded, (overnight.seen, recorded)
    assert not _run_pids(_host(fleet, "gamma"), _remote_run(_host(fleet, "gamma"), out))
    # The merged report has the others' results.
    verdicts = json.loads((out / "hosts.json").read_text())
    assert {"alpha", "beta"} <= set(verdicts["hosts"]), verdicts["hosts"]
    md = (out / "report.md").read_text()
    assert "the run is running" not in md


def test_root_without_its_capabilities_is_refused_before_the_push(overnight: Overnight) -> None:
    d = json.loads((overnight.out / "fleet.json").read_text())["hosts"]["delta"]
    assert d["status"] == "failed" and d["reachable"] is True, d
    assert list(d["phases"]) == ["connect"], d["phases"]
    assert "root without CAP_SYS_ADMIN" in d["reason"], d["reason"]
    lines = [ln for ln in overnight.res.stderr.splitlines() if ln.startswith("host delta:")]
    assert len(lines) == 1 and "root without CAP_SYS_ADMIN" in lines[0], overnight.res.stderr


def _series_machines(history: Path) -> dict[str, set[str]]:
    with sqlite3.connect(history) as db:
        rows = db.execute("SELECT s.benchmark || s.variant || s.params || s.metric, m.hostname "
                          "FROM series s JOIN machines m ON m.key = s.machine").fetchall()
    out: dict[str, set[str]] = {}
    for key, host in rows:
        out.setdefault(key, set()).add(host)
    return out


def test_hosts_of_one_hostname_are_series_of_their_own_and_resume_finishes_the_stalled(
        overnight: Overnight, fleet: NamespaceFleet) -> None:
    """alpha and beta share this machine's hostname and machine id: two series each, named
    by the inventory. --resume finishes gamma (its stalled run goes on from its trials): a
    third."""
    runs = {n: json.loads((overnight.out / "hosts" / n / "results.json").read_text())
            for n in ("alpha", "beta")}
    assert runs["alpha"]["host"]["hostname"] == runs["beta"]["host"]["hostname"]
    assert {n: r["settings"]["labels"] for n, r in runs.items()} == \
        {n: {"fleet_host": n} for n in runs}
    assert set(map(frozenset, _series_machines(overnight.history).values())) == \
        {frozenset({"alpha", "beta"})}
    listed = _bakeoff(overnight.cwd, "history", "--history", "history.sqlite", "--machine",
                      "beta")
    assert listed.returncode == 0 and "beta/" in listed.stdout and "alpha/" not in \
        listed.stdout, listed.stdout

    again = _bakeoff(overnight.cwd, "fleet", "run", "--resume", "fleet", "--history",
                     "history.sqlite")
    assert again.returncode == 1, (again.stdout, again.stderr)  # delta is refused again
    rec = json.loads((overnight.out / "fleet.json").read_text())
    assert rec["hosts"]["gamma"]["status"] == "complete", rec["hosts"]["gamma"]
    series = _series_machines(overnight.history)
    assert series and all(hosts == {"alpha", "beta", "gamma"} for hosts in series.values()), series
