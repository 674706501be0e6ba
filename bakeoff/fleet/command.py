"""`bakeoff fleet run`: check everything here, then drive the playbook over the inventory."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.text import Text

from bakeoff.app.request import RunRequest
from bakeoff.core.errors import UsageError
from bakeoff.declare import registry
from bakeoff.fleet import checkout, driver, kernel_index, record
from bakeoff.fleet.progress import Lines, LiveTable, Progress
from bakeoff.plan.cases import check_request
from bakeoff.run import interrupts


@dataclass
class FleetRequest:
    inventory: Path | None
    run: RunRequest  # what every host's `bakeoff run` is asked (its argv: run.host_argv())
    serial: bool
    forks: int
    host_timeout_s: int
    connect_timeout_s: int
    stall_after_s: int
    out: Path | None
    wheelhouse: bool
    resume: Path | None
    # `--kernel NAME=SPEC ... [--functional] [--blocks N]` as each host's `bakeoff run` is
    # given them (checked on the controller: bakeoff/kernels/specs.py host_words), or none.
    kernel_args: list[str] = field(default_factory=list)


def _progress(out: Console, rec: record.FleetRecord) -> Progress:
    return LiveTable(out, rec) if out.is_terminal else Lines(out)


def _absolute(req: FleetRequest) -> None:
    """ansible-playbook runs inside the fleet directory: every path handed on is absolute,
    and so is every command printed for later (it works from any directory)."""
    for name in ("inventory", "out", "resume"):
        path = getattr(req, name)
        if path is not None:
            setattr(req, name, path.expanduser().resolve())


def run_fleet(req: FleetRequest, out: Console, err: Console,
              report: Callable[[Path], None] | None = None,
              kernel_table: kernel_index.Table | None = None) -> int:
    """The fleet run; `report(fleet_dir)` writes the report across hosts at its end, or for
    a --kernel run `kernel_table` the table across hosts and kernels in its kernels.md."""
    if req.forks < 1:
        raise UsageError("--forks is a number of hosts of 1 or more, e.g. --forks 20")
    if req.host_timeout_s < 1 or req.connect_timeout_s < 1 or req.stall_after_s < 1:
        raise UsageError("--host-timeout, --connect-timeout and --stall-after are seconds "
                         "above 0")
    _absolute(req)
    if req.resume is not None and req.kernel_args:
        raise UsageError("--resume goes on as the fleet run was started; drop --kernel, "
                         "--functional and --blocks")
    if req.resume is not None:
        rec, fleet_dir, hosts = _resumed(req)
    else:
        rec, fleet_dir, hosts = _started(req)
    resume_cmd = f"bakeoff fleet run --resume {fleet_dir}"
    extra_vars = driver.prepare(rec, fleet_dir, req.wheelhouse,
                                lambda line: err.print(line, highlight=False))
    driver.begin_attempt(rec, hosts)
    record.save(rec, fleet_dir)
    progress = _progress(out, rec)
    closed = False
    try:
        driver.execute(rec, fleet_dir, hosts, extra_vars, progress, req.connect_timeout_s)
    except BaseException as exc:
        # Whatever the hosts sent back before the stop is kept; the rest is for --resume.
        going = [h.host for h in rec.hosts.values() if h.status not in record.FAULTS]
        driver.collect(rec, fleet_dir, hosts)
        for name in hosts:
            h = rec.hosts[name]
            if name in going and h.status != "complete":
                h.status, h.reason = "interrupted", _cut_short(h, fleet_dir, rec)
        progress.close(rec)  # the table's last state, then each host's in words
        closed = True
        for h in rec.hosts.values():
            err.print(Text(f"host {h.host}: ") + Text(_state(h), style=_state_style(h)),
                      soft_wrap=True, highlight=False)
        stopped_by = type(exc).__name__
        interrupts.tell(lambda: f"the fleet run stopped ({stopped_by}); every host's state "
                                f"is above; `{resume_cmd}` finishes it")
        raise
    else:
        driver.collect(rec, fleet_dir, hosts)
    finally:
        rec.finished_at = driver.now_iso()
        record.save(rec, fleet_dir)
        if not closed:
            progress.close(rec)
    out.print(f"wrote {fleet_dir / record.FLEET_JSON}", highlight=False)
    if driver.is_kernel_run(rec.run_args):
        # Each host's run has the kernel as its axis: one table across hosts and kernels
        # (what runs, skips and why), and each host's own kernels.md linked.
        index = kernel_index.write(rec, fleet_dir, kernel_table)
        out.print(index.read_text(), markup=False, highlight=False, soft_wrap=True)
        out.print(f"wrote {index}: what runs on each host and kernel", highlight=False,
                  soft_wrap=True)
    elif report is not None:
        try:
            report(fleet_dir)
        except UsageError as exc:  # no host sent anything back: there is nothing to report
            err.print(f"no report across hosts: {exc}", highlight=False, soft_wrap=True)
    failed = rec.failed()
    for h in failed:
        err.print(Text(f"host {h.host}: {h.status}", style="red") + Text(f": {h.reason}"),
                  soft_wrap=True)
    complete = [h for h in rec.hosts.values() if h.status == "complete"]
    for h in complete:  # what the run's options do with each host's complete run (--history)
        for line in req.run.when_done(rec.host_dir(fleet_dir, h.host)):
            out.print(f"host {h.host}: {line}", highlight=False, soft_wrap=True)
    out.print(f"{len(complete)} of {len(rec.hosts)} hosts complete; results in "
              f"{fleet_dir / record.HOSTS_DIR}"
              + (f"; `{resume_cmd}` finishes the rest" if failed else ""),
              highlight=False, soft_wrap=True)
    return 1 if failed else 0


def _cut_short(h: record.HostRecord, fleet_dir: Path, rec: record.FleetRecord) -> str:
    """What an interrupt stopped on a host, and what --resume will do with it."""
    if not h.phases:
        return "not started; --resume runs it from the start"
    last = list(h.phases)[-1]
    if last == "fetch":
        return ("stopped while fetching its results; --resume fetches them (its run "
                "is complete on the host or goes on from its recorded trials)")
    if not h.run_started:
        return (f"stopped in its {last} phase before its run started; --resume sets it "
                "up and runs it")
    counted = "at the stop" if h.stop == "stopped" else "at the last look"
    if h.stop == "left running":
        remote = f"<bakeoff_remote_dir>/{h.host}/results/{rec.remote_name}"
        return (f"left running on the host (the stop was skipped or did not reach it), "
                f"{h.trials_recorded} trial(s) recorded {counted}; `bakeoff fleet run "
                f"--resume {fleet_dir}` stops it first (SIGTERM: it saves its trials) and goes "
                f"on from them, or stop it there: pkill -TERM -f 'bakeoff run .*{remote}$'")
    return (f"stopped mid-run with {h.trials_recorded} trial(s) recorded {counted}; they "
            "stay on the host, and --resume goes on from them (bakeoff run --resume there): "
            "nothing is measured twice")


def _state(h: record.HostRecord) -> str:
    if h.status == "complete":
        return "finished (complete); --resume leaves it as it is"
    if h.status == "interrupted":
        return h.reason
    return f"{h.status} before the stop ({h.reason}); --resume tries it again"


def _state_style(h: record.HostRecord) -> str:
    return {"complete": "green", "interrupted": "yellow"}.get(h.status, "red")


def _started(req: FleetRequest) -> tuple[record.FleetRecord, Path, list[str]]:
    if req.inventory is None:
        raise UsageError("give the hosts with -i INVENTORY (docs/FLEET.md shows one)")
    run = req.run.check()
    benches = registry.select(list(run.names))
    # Bad input answers here, once, not on every host after its set-up.
    check_request(benches, run.profile, run.variants, run.params, run.trials, run.samples)
    hosts = driver.inventory_hosts(req.inventory)
    checkout.refuse_dirty(registry.REPO_ROOT)
    commit = checkout.head_commit(registry.REPO_ROOT)
    names = [b.name for b in benches] if run.names else []
    # The fleet run's name is its directory's: the hosts keep their results under it too.
    fleet_run = req.out.name if req.out else driver.fleet_name(names)
    fleet_dir = req.out or registry.REPO_ROOT / "results" / fleet_run
    if fleet_dir.exists() and any(fleet_dir.iterdir()):
        raise UsageError(f"{fleet_dir} is not empty; choose a new --out, or --resume it")
    (fleet_dir / record.HOSTS_DIR).mkdir(parents=True, exist_ok=True)
    # One seed for all hosts, chosen here when none is given: the same trial order everywhere.
    seed = run.seed if run.seed is not None else secrets.randbelow(2**31)
    rec = driver.new_record(fleet_run, commit, req.inventory, hosts,
                            [*run.host_argv(), *req.kernel_args], seed,
                            registry.room_dirs(names), req.serial, req.forks, req.host_timeout_s,
                            req.stall_after_s)
    return rec, fleet_dir, hosts


def _resumed(req: FleetRequest) -> tuple[record.FleetRecord, Path, list[str]]:
    assert req.resume is not None
    given = [*req.run.refused_with_resume(), *(["--out"] if req.out else [])]
    if given:
        raise UsageError(f"--resume goes on as the fleet run was started; drop {', '.join(given)}")
    rec = record.load(req.resume)
    if req.inventory is not None:
        rec.inventory = str(req.inventory.resolve())
    # The same commit as the first attempt: its archive is made from git, not the work tree.
    checkout.head_commit(registry.REPO_ROOT)
    hosts = [h.host for h in rec.failed()]
    if not hosts:
        raise UsageError(f"{req.resume}: every host is complete; nothing to resume "
                         f"(bakeoff report {req.resume} regenerates the report)")
    rec.serial, rec.forks = req.serial or rec.serial, req.forks
    rec.host_timeout_s, rec.stall_after_s = req.host_timeout_s, req.stall_after_s
    rec.cwd = os.getcwd()  # relative paths in the inventory: from where it is resumed
    rec.finished_at = None
    return rec, req.resume, hosts
