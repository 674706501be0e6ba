"""Runs fleet/playbook.yml with ansible-playbook and turns its events into the fleet record.

Why ansible-playbook as a subprocess with our own callback plugin, not ansible-runner: the
playbook is the interface (the same file runs by hand), the callback streams one JSON line per
task and host as it happens (phase times, exit status, reason), and no second package is
needed. Ansible does the parallel SSH, forks, serial batches, retries and timeouts.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bakeoff.core.errors import UsageError
from bakeoff.declare import registry
from bakeoff.fleet import checkout, wheelhouse
from bakeoff.fleet.progress import Progress
from bakeoff.fleet.record import (
    FAULTS,
    HOSTS_DIR,
    FleetRecord,
    HostRecord,
    apply_event,
    close_phases,
    dir_bytes,
    save,
)

PLAYBOOK = registry.REPO_ROOT / "fleet" / "playbook.yml"
STOP_PLAYBOOK = registry.REPO_ROOT / "fleet" / "stop.yml"
# An interrupted fleet run waits this long for the hosts' runs to stop and save their trials.
_STOP_TIMEOUT_S = 120
EVENTS = "events.jsonl"
ANSIBLE_LOG = "ansible.log"
# How often the controller looks for new events while the playbook runs.
_POLL_S = 0.2
# SSH keep-alives: a connection that answers none of 3 probes 3 s apart is dead (a host
# powered off, its link down), so a look at a host's run fails within about 9-12 s instead
# of TCP's minutes. With the connect timeout and the poll's 2 retries (fleet/playbook.yml),
# this bounds the time from a host's loss to its verdict (docs/FLEET.md gives it, measured).
SSH_ALIVE_INTERVAL_S = 3
SSH_ALIVE_COUNT = 3
# What an inventory host may be called: it names a directory (hosts/<host>/), an item of
# ansible-playbook's comma-separated --limit and a column of every report.
_HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*")
# The one command that installs the controller's tools (Makefile).
CONTROLLER_INSTALL = "make fleet-deps"


def ansible_tool(name: str) -> str:
    """ansible-playbook / ansible-inventory from this venv (the fleet extra), else PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise UsageError(f"{name} is not installed; `{CONTROLLER_INSTALL}` installs ansible-core "
                         "into .venv (the fleet extra of pyproject.toml; docs/FLEET.md)")
    return found


_PLUGIN_ERROR = re.compile(r"Failed to parse inventory with '(\w+)' plugin: (.+?)\n"
                           r"(?:.*?\nOrigin: (\S+))?", re.S)


def parse_error(inventory: Path, stderr: str) -> str:
    """Ansible's own reason an inventory did not parse, with the file, line and column where
    it gives them: the plugin for the file's kind first (YAML for .yml/.yaml/.json, else INI)."""
    found = []
    for m in _PLUGIN_ERROR.finditer(stderr):
        plugin, msg, origin = m.group(1), m.group(2).strip(), m.group(3) or ""
        if origin.startswith("<"):  # "<inventory plugin ...>": no place in the file
            origin = ""
        found.append((plugin, msg, origin))
    if not found:
        return ""
    yaml_like = inventory.suffix in (".yml", ".yaml", ".json")
    found.sort(key=lambda f: ((f[0] in ("auto", "yaml")) != yaml_like,
                              not re.search(r":\d+:\d+$", f[2])))
    plugin, msg, origin = found[0]
    return f"{msg} ({origin or inventory}, read as {'YAML' if yaml_like else 'INI'})"


def inventory_hosts(inventory: Path) -> list[str]:
    if not inventory.exists():
        raise UsageError(f"inventory {inventory} does not exist; give an Ansible inventory "
                         "file (docs/FLEET.md shows one)")
    res = subprocess.run([ansible_tool("ansible-inventory"), "-i", str(inventory), "--list"],
                         capture_output=True, text=True, check=False, timeout=120,
                         env={**os.environ, "ANSIBLE_NOCOLOR": "1"})
    unparsed = parse_error(inventory, res.stderr)
    if unparsed:
        raise UsageError(f"inventory {inventory} cannot be read: {unparsed}; fix it there "
                         f"(`ansible-inventory -i {inventory} --list` shows Ansible's whole "
                         "message)")
    try:
        groups: dict[str, Any] = json.loads(res.stdout)
    except ValueError:
        groups = {}
    hosts: list[str] = []
    for name, group in groups.items():
        if name != "_meta" and isinstance(group, dict):
            hosts += [h for h in group.get("hosts", []) if h not in hosts]
    if not hosts:
        why = (res.stderr.strip().splitlines() or ["no hosts in it"])[-1]
        raise UsageError(f"inventory {inventory} names no hosts ({why}); docs/FLEET.md shows "
                         "an inventory")
    for h in hosts:
        if not _HOST_NAME.fullmatch(h):
            raise UsageError(f"inventory host {h!r} cannot name a results directory and an "
                             "Ansible host; name it with letters, digits and . _ - : only "
                             f"(e.g. {re.sub(r'[^A-Za-z0-9_.:-]+', '-', h).strip('-.:') or 'host-1'}"
                             ") and give its address as ansible_host")
    return hosts


def inventory_addresses(inventory: Path) -> list[str]:
    """The ansible_host of every host in the inventory (for bakeoff report --redact), or
    none if the inventory is gone or unreadable: the report is redacted all the same."""
    if not inventory.is_file():
        return []
    try:
        res = subprocess.run([ansible_tool("ansible-inventory"), "-i", str(inventory), "--list"],
                             capture_output=True, text=True, check=False, timeout=120,
                             env={**os.environ, "ANSIBLE_NOCOLOR": "1"})
        hostvars = json.loads(res.stdout).get("_meta", {}).get("hostvars", {})
    except (OSError, ValueError, UsageError, subprocess.TimeoutExpired):
        return []
    return [str(v["ansible_host"]) for v in hostvars.values()
            if isinstance(v, dict) and v.get("ansible_host")]


# What a run with the kernel as an axis (`bakeoff run --kernel`) writes in its directory
# instead of results.json (bakeoff/kernels/command.py).
KERNELS_JSON = "kernels.json"


def is_kernel_run(run_args: list[str]) -> bool:
    """Does each host's `bakeoff run` boot kernels (--kernel)? Its results are kernels.json and
    kernels.md, and it records boots, not trials."""
    return "--kernel" in run_args


def stall_look_s(rec: FleetRecord) -> int:
    """fleet/poll_run.py's stall bound for each host's run. A kernel run records boots, not
    trials (a boot under the emulator takes minutes with no trial in the run's journal): the
    look is off (0) and --host-timeout bounds the run."""
    return 0 if is_kernel_run(rec.run_args) else rec.stall_after_s


def fleet_name(names: list[str]) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-fleet-{'-'.join(names) if names else 'all'}"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _extract(tgz: Path, dest: Path) -> None:
    with tarfile.open(tgz) as tar:
        # 'data': no absolute paths, links out of dest or device files from a host.
        tar.extractall(dest, filter="data")


def collect(rec: FleetRecord, fleet_dir: Path, hosts: list[str]) -> None:
    """Unpack what each host sent back into hosts/<host>/ and settle each host's status."""
    for name in hosts:
        h = rec.hosts[name]
        hdir = rec.host_dir(fleet_dir, name)
        tgz = hdir / "results.tgz"
        if tgz.exists():
            # The host's directory holds every trial of the run, earlier attempts' too.
            for old in hdir.iterdir():
                if old != tgz:
                    shutil.rmtree(old) if old.is_dir() else old.unlink()
            try:
                _extract(tgz, hdir)
            except (tarfile.TarError, OSError) as exc:
                h.status, h.reason = "failed", f"fetch: cannot unpack the results ({exc})"
            tgz.unlink()
        results = hdir / "results.json"
        kernels = hdir / KERNELS_JSON
        if kernels.exists() and not results.exists():
            h.run_status = _kernel_run_status(kernels)
            h.results_bytes = dir_bytes(hdir)
        elif results.exists():
            try:
                data = json.loads(results.read_text())
                if data.get("run_id") and data["run_id"] not in h.run_ids:
                    h.run_ids.append(str(data["run_id"]))
                h.run_status = str(data.get("status"))
            except ValueError:
                h.run_status = "unreadable"
            h.results_bytes = dir_bytes(hdir)
        if h.status in FAULTS:
            continue
        if not h.phases:
            h.status, h.reason = "not tried", "the playbook never reached this host (see ansible.log)"
        elif h.run_status == "complete" and h.exit_status in (0, None):
            h.status, h.reason = "complete", ""
        else:
            h.status = "failed"
            h.reason = h.reason or f"the run's record says {h.run_status or 'nothing'} (see ansible.log)"


def _kernel_run_status(path: Path) -> str:
    """A kernel run is complete when every boot of its order came back."""
    try:
        data = json.loads(path.read_text())
        return "complete" if len(data["boots"]) == len(data["order"]) else "partial"
    except (ValueError, KeyError, TypeError):
        return "unreadable"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """ansible-playbook stops its workers on SIGINT; SIGKILL if it does not within 20 s."""
    for sig, wait in ((signal.SIGINT, 10.0), (signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


def _close_ssh_masters(control_dir: Path) -> None:
    """ControlPersist keeps one ssh master per host for a minute: end them now, so a fleet
    run leaves no process behind."""
    for sock in control_dir.glob("*"):
        subprocess.run(["ssh", "-O", "exit", "-o", f"ControlPath={sock}", "bakeoff-fleet"],
                       capture_output=True, check=False, timeout=20)


def execute(rec: FleetRecord, fleet_dir: Path, hosts: list[str], extra_vars: dict[str, Any],
            progress: Progress, connect_timeout: int) -> None:
    """One ansible-playbook run over `hosts`; the record is saved as it goes."""
    events_path = fleet_dir / EVENTS
    vars_path = fleet_dir / "playbook-vars.json"
    vars_path.write_text(json.dumps(extra_vars, indent=2) + "\n")
    control_dir = Path(tempfile.mkdtemp(prefix=f"bakeoff-{os.getpid()}-fleet-"))
    argv = [ansible_tool("ansible-playbook"), "-i", rec.inventory, "-f", str(rec.forks),
            "-e", f"@{vars_path}", "--limit", ",".join(hosts), str(PLAYBOOK)]
    env = {
        **os.environ,
        "BAKEOFF_FLEET_EVENTS": str(events_path),
        "ANSIBLE_CALLBACK_PLUGINS": str(PLAYBOOK.parent / "callback_plugins"),
        "ANSIBLE_CALLBACKS_ENABLED": "bakeoff_events",
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(control_dir / "cp"),
        "ANSIBLE_LOCAL_TEMP": str(control_dir / "tmp"),
        "ANSIBLE_TIMEOUT": str(connect_timeout),
        # Ansible's own SSH arguments, and keep-alives: a lost host is found in seconds. No
        # compression (-C): what goes over is gzip and wheels, which it cannot shrink, and it
        # doubled the wheelhouse's push (docs/RELIABILITY.md).
        "ANSIBLE_SSH_ARGS": ("-o ControlMaster=auto -o ControlPersist=60s "
                             f"-o ServerAliveInterval={SSH_ALIVE_INTERVAL_S} "
                             f"-o ServerAliveCountMax={SSH_ALIVE_COUNT}"),
        # Debian has /usr/bin/python3 (the set-up installs it); interpreter discovery would
        # take whatever a login PATH finds first (a pyenv shim, say). Inventory may override.
        "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
        # A module sent down the SSH session's stdin: one SSH command per task instead of
        # four (temporary directory, copy, run, clean up), each of which runs the login
        # user's shell start-up on the host. Nothing here uses `become` (sudo's requiretty,
        # pipelining's one conflict); async tasks fall back to the copy by themselves.
        # docs/FLEET.md gives what it saves, measured; an inventory may set it off.
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
    }
    offset = events_path.stat().st_size if events_path.exists() else 0
    with open(fleet_dir / ANSIBLE_LOG, "ab") as log:
        log.write(f"\n# {now_iso()} {' '.join(argv)}\n".encode())
        log.flush()
        # In the caller's directory: relative paths in the inventory (a key file, a
        # known_hosts) are found there, as `ansible -i` finds them.
        cwd = rec.cwd or str(fleet_dir)
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, cwd=cwd)
        outcome = "ok"
        try:
            while True:
                done = proc.poll() is not None
                offset = _read_events(rec, events_path, offset, progress)
                if done:
                    break
                time.sleep(_POLL_S)
        except BaseException:
            outcome = "stopped"  # what was running was cut short, not finished
            _stop(proc)
            offset = _read_events(rec, events_path, offset, progress)  # up to the stop
            # The hosts' runs are async jobs: they would go on without us. Stop them (they
            # keep their finished trials for --resume); a second Ctrl-C skips this, and the
            # hosts whose runs had started are then said to be left running.
            started = [h for h in hosts if rec.hosts[h].run_started]
            for name in started:
                rec.hosts[name].stop = "left running"
            stop_events = control_dir / "stop-events.jsonl"
            stop = subprocess.run(
                [*argv[:-1], str(STOP_PLAYBOOK)], stdout=log, stderr=subprocess.STDOUT,
                env={**env, "BAKEOFF_FLEET_EVENTS": str(stop_events)},
                cwd=cwd, timeout=_STOP_TIMEOUT_S, check=False)
            log.write(f"# stop playbook exited {stop.returncode}\n".encode())
            _read_stop_events(rec, stop_events)
            raise
        finally:
            for host, phase in close_phases(rec, time.time(), outcome):
                progress.phase_ended(rec, host, phase)
            _close_ssh_masters(control_dir / "cp")
            shutil.rmtree(control_dir, ignore_errors=True)
            save(rec, fleet_dir)


def _read_stop_events(rec: FleetRecord, path: Path) -> None:
    """What fleet/stop.yml found on each host: the trials its journal holds once its run was
    stopped (the count at the fault, not at the controller's last look)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        host = rec.hosts.get(str(event.get("host")))
        if host is None or event.get("event") != "ok":
            continue
        if event.get("task") == "stop: trials recorded":
            try:
                host.trials_recorded = int(json.loads(event.get("stdout") or "")["trials"])
            except (ValueError, KeyError, TypeError):
                continue
            if host.run_started:
                host.stop = "stopped"


def _read_events(rec: FleetRecord, path: Path, offset: int, progress: Progress) -> int:
    if not path.exists():
        return offset
    with open(path, "rb") as f:
        f.seek(offset)
        chunk = f.read()
    # Only whole lines: the callback may be mid-write.
    whole = chunk[: chunk.rfind(b"\n") + 1]
    for line in whole.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "end":
            continue
        for host, phase in apply_event(rec, event):
            progress.phase_ended(rec, host, phase)
    if whole:
        progress.refresh(rec)
    return offset + len(whole)


def prepare(rec: FleetRecord, fleet_dir: Path, use_wheelhouse: bool,
            note: Callable[[str], None]) -> dict[str, Any]:
    """The archive of the commit and the wheelhouse; the playbook's extra vars."""
    cache = registry.build_dir() / "fleet"
    archive = checkout.archive(registry.REPO_ROOT, rec.commit, cache)
    rec.archive_bytes = archive.stat().st_size
    wheels = marker = ""
    # A --kernel run boots guests on each host: virtme-ng too (the `kernels` extra, `make
    # kernel-deps`; qemu and the rest are Debian packages every host gets with `make deps`).
    kernels = is_kernel_run(rec.run_args)
    if use_wheelhouse:
        note("gathering the wheels of the pinned Python dependencies (once per set of pins)")
        path = wheelhouse.build(registry.REPO_ROOT / "pyproject.toml", cache,
                                ("kernels",) if kernels else ())
        rec.wheelhouse_bytes = path.stat().st_size
        wheels, marker = str(path), wheelhouse.marker(path)
    return {
        "bakeoff_fleet_run": rec.remote_name,
        "bakeoff_archive": str(archive),
        "bakeoff_commit": rec.commit,
        "bakeoff_wheelhouse": wheels,
        "bakeoff_wheelhouse_marker": marker,
        "bakeoff_setup": ["deps", *(["kernel-deps"] if kernels else []), "build"],
        "bakeoff_rooms": " ".join(rec.rooms),
        "bakeoff_run_args": rec.run_args,
        "bakeoff_seed": rec.seed,
        "bakeoff_fetch_dir": str((fleet_dir / HOSTS_DIR).resolve()),
        "bakeoff_serial": 1 if rec.serial else 0,
        "bakeoff_run_timeout": rec.host_timeout_s,
        "bakeoff_stall_after": stall_look_s(rec),
    }


def new_record(fleet_run: str, commit: str, inventory: Path, hosts: list[str],
               run_args: list[str], seed: int, rooms: list[str], serial: bool,
               forks: int, host_timeout_s: int, stall_after_s: int = 180) -> FleetRecord:
    return FleetRecord(
        fleet_run=fleet_run, remote_name=f"{fleet_run}-{secrets.token_hex(4)}", commit=commit,
        inventory=str(inventory.resolve()),
        run_args=run_args, seed=seed, rooms=rooms, serial=serial, forks=forks,
        host_timeout_s=host_timeout_s, stall_after_s=stall_after_s, cwd=os.getcwd(),
        argv=["bakeoff", *sys.argv[1:]], started_at=now_iso(),
        hosts={h: HostRecord(host=h) for h in hosts})


def begin_attempt(rec: FleetRecord, hosts: list[str]) -> None:
    """A host tried again starts from a clean slate; its run IDs and results stay."""
    for name in hosts:
        old = rec.hosts[name]
        rec.hosts[name] = HostRecord(host=name, run_ids=old.run_ids, attempts=old.attempts + 1)
