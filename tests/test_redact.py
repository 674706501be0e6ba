"""bakeoff report --redact: a copy to share, with no host name, user name, home path or fleet
address of the original left in any file, and the original directory untouched.

The records are test_report.py's synthetic run (a fake room, no benchmark process), written
to disk with names planted where real runs carry them: the host facts, the command line
(--out under a home), a warning, a failed trial's stderr, samples.csv and an extra file.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_report import make_run

from bakeoff import cli, redact, store
from bakeoff.analysis import analyze
from bakeoff.errors import UsageError
from bakeoff.fleet import record as fleet_record
from bakeoff.report import write_reports
from conftest import assert_usage_error, run_bakeoff

HOME = "/home/alice-k"
USER = "alice-k"


def _write_run(run_dir: Path, hostname: str) -> list[str]:
    """A run directory as bakeoff writes it, with the sensitive strings in; returns them."""
    run = make_run()
    run.host = {**run.host, "hostname": hostname}
    run.argv = [*run.argv, "--out", f"{HOME}/runs/{hostname}"]
    run.warnings = [*run.warnings, f"results under {HOME}/runs, written by {USER} on {hostname}"]
    failed = next(t for t in run.trials if t.status == "failed")
    failed.stderr_tail = f"{HOME}/bakeoff/build/fake: mremap: Cannot allocate memory"
    run_dir.mkdir(parents=True)
    store.save(run, run_dir)
    csv = store.rewrite_samples_csv(run, run_dir, ["size"])
    assert csv.path.is_file()
    (run_dir / "notes.txt").write_text(f"measured by {USER} on {hostname}, {HOME}/notes\n")
    (run_dir / "perf.data").write_bytes(b"\xff\xfe" + hostname.encode())  # not text
    (run_dir / "raw").mkdir()
    (run_dir / "raw" / "log.txt").write_text(f"{hostname}\n")
    write_reports(run, analyze(run), run_dir)  # as `bakeoff run` leaves them
    return [hostname, USER, HOME]


def _digest(tree: Path) -> dict[str, str]:
    return {str(p.relative_to(tree)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(tree.rglob("*")) if p.is_file()}


def _files_holding(tree: Path, originals: list[str]) -> list[str]:
    """Every (file, original) where the original's bytes appear, plotly.js aside (public
    code, not the run's: it holds 'alpha' and the like in its own identifiers)."""
    found = []
    for p in sorted(tree.rglob("*")):
        if p.is_file():
            text = redact.scanned_text(p)
            found += [f"{p.relative_to(tree)}: {o}" for o in originals if o in text]
    return found


@pytest.mark.slow  # writes whole reports (plotly) a few times: seconds each
def test_no_original_survives_in_any_file_and_the_source_is_untouched(tmp_path: Path) -> None:
    src = tmp_path / "run"
    originals = _write_run(src, "bench-alpha.lab.example")
    assert _files_holding(src, originals)  # the names are really there to remove
    before = _digest(src)
    res = run_bakeoff("report", str(src), "--redact")
    assert res.returncode == 0, res.stderr
    out = tmp_path / "run-redacted"
    # The host and its short name; alice-k and the accounts of this machine; their homes.
    assert re.search(r"^redacted 2 host names, \d+ user names?, \d+ home paths in ", res.stdout,
                     re.M), res.stdout
    assert _digest(src) == before, "--redact changed the source directory"
    names = {p.name for p in out.iterdir()}
    assert names >= {"results.json", "samples.csv", "report.html", "report.md", "notes.txt"}
    assert "perf.data" not in names and "raw" not in names
    assert "left out perf.data: not a text file" in res.stdout
    assert "left out raw/: not a text file" in res.stdout
    # Byte for byte: not a name, not a home path, not the short host name, in no file.
    assert _files_holding(out, [*originals, "bench-alpha"]) == []
    md = (out / "report.md").read_text()
    assert "host-1" in md and "fake-move" in md  # the placeholder, and the room's own names
    assert re.fullmatch(r"measured by user-\d on host-1, ~/notes\n", (out / "notes.txt").read_text())
    # The copy is a results directory: it loads, and bakeoff reports it again.
    run = store.load(out)
    assert run.host["hostname"] == "host-1"
    assert any(a.startswith("~/runs/") for a in run.argv), run.argv
    again = run_bakeoff("report", str(out), "--quiet")
    assert again.returncode == 0, again.stderr


@pytest.mark.slow  # writes whole reports (plotly) a few times: seconds each
def test_redacting_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    src = tmp_path / "run"
    _write_run(src, "bench-alpha")
    outs = [tmp_path / "one", tmp_path / "two"]
    for out in outs:
        res = run_bakeoff("report", str(src), "--redact", "--out", str(out))
        assert res.returncode == 0, res.stderr
    assert _digest(outs[0]) == _digest(outs[1])


def test_whole_tokens_only() -> None:
    """A host called vm is not the vm of kvm or of vm.max_map_count; alpha2 is not alpha;
    /root is a home, /srv/root and /rooted are not."""
    r = redact.Redactor()
    for kind, original in (("host", "vm"), ("host", "alpha"), ("host", "alpha2"),
                           ("home", "/root"), ("user", "bob")):
        r.add(kind, original)
    text = ("Machine: vm (kvm), sysctls.vm.max_map_count on vm. alpha2 beat alpha; "
            "/root/x and /root, not /srv/root or /rooted; bob's box, not bobcat")
    assert r.text(text) == (
        "Machine: host-1 (kvm), sysctls.vm.max_map_count on host-1. host-3 beat host-2; "
        "~/x and ~, not /srv/root or /rooted; user-1's box, not bobcat")
    assert r.survivors(r.text(text)) == []
    assert r.survivors(text) == ["home", "host", "user"]


def _fleet_dir(tmp_path: Path, hosts: dict[str, str]) -> Path:
    """A fleet directory as bakeoff fleet run leaves it: fleet.json, each host's run, and the
    inventory it names (with each host's address)."""
    fleet = tmp_path / "fleet"
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n" + "".join(
        f"    {name}:\n      ansible_host: {addr}\n" for name, addr in hosts.items()))
    rec = fleet_record.FleetRecord(
        fleet_run="fleet", remote_name="fleet-1a2b", commit="0" * 40, inventory=str(inventory),
        run_args=["fake-move"], seed=1, rooms=["fake-move"], serial=False, forks=2,
        host_timeout_s=60, argv=["bakeoff", "fleet", "run", "-i", str(inventory)],
        started_at="2026-11-01T10:00:00Z",
        hosts={n: fleet_record.HostRecord(host=n, status="complete", reachable=True,
                                          reason=f"ssh {a} ok") for n, a in hosts.items()})
    for name in hosts:
        _write_run(rec.host_dir(fleet, name), f"{name}.lab")
    fleet_record.save(rec, fleet)
    return fleet


@pytest.mark.slow  # writes whole reports (plotly) a few times: seconds each
def test_the_fleet_report_names_no_host_and_no_address(tmp_path: Path) -> None:
    hosts = {"alpha": "198.18.7.2", "alpha2": "198.18.7.6"}
    fleet = _fleet_dir(tmp_path, hosts)
    before = _digest(fleet)
    res = run_bakeoff("report", str(fleet), "--redact")
    assert res.returncode == 0, res.stderr
    out = tmp_path / "fleet-redacted"
    assert sorted(p.name for p in out.iterdir()) == ["hosts.json", "report.html", "report.md"]
    assert _digest(fleet) == before
    assert _files_holding(out, [*hosts, *hosts.values(), "alpha.lab", USER, HOME]) == []
    data = json.loads((out / "hosts.json").read_text())
    assert data["hosts"] == ["host-1", "host-2"]  # distinct hosts, distinct placeholders
    assert "addr-1" in (out / "report.md").read_text() or "addr-1" in (out / "report.html").read_text()
    assert "fake-move" in (out / "report.md").read_text()


@pytest.mark.slow  # writes whole reports (plotly) a few times: seconds each
def test_plain_run_dirs_of_two_hosts(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _write_run(a, "alpha")
    _write_run(b, "alpha2")
    out = tmp_path / "shared"
    res = run_bakeoff("report", str(a), str(b), "--redact", "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert json.loads((out / "hosts.json").read_text())["hosts"] == ["host-1", "host-2"]
    assert _files_holding(out, ["alpha", USER, HOME]) == []


@pytest.mark.slow  # writes whole reports (plotly) a few times: seconds each
def test_bad_input_writes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "run"
    _write_run(src, "bench-alpha")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    assert_usage_error(run_bakeoff("report", str(src), "--redact", "--out", str(busy)),
                       "not empty")
    assert [p.name for p in busy.iterdir()] == ["keep.txt"]
    assert_usage_error(run_bakeoff("report", str(src), "--redact", "--out", str(src / "x")),
                       "must not change")
    assert not (src / "x").exists()
    empty = tmp_path / "not-a-run"
    empty.mkdir()
    assert_usage_error(run_bakeoff("report", str(empty), "--redact"), "results.json")
    assert not (tmp_path / "not-a-run-redacted").exists()


@pytest.mark.slow  # writes whole reports (plotly) a few times: seconds each
def test_the_check_finds_what_a_writer_let_through(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Were a report writer ever to take a host name from somewhere other than the redacted
    record, the check would find it: here the CSV writer is made to add a file holding the
    original name. The command fails naming the file and the kind, and keeps no copy."""
    src = tmp_path / "run"
    _write_run(src, "bench-alpha")
    real = store.write_legacy_csvs

    def leaky(run: Any, run_dir: Path) -> list[Path]:
        (run_dir / "extra.csv").write_text("host,bench-alpha\n")
        return real(run, run_dir)

    monkeypatch.setattr(store, "write_legacy_csvs", leaky)
    before = _digest(src)
    out = tmp_path / "copy"
    with pytest.raises(UsageError, match=r"redaction left a host in extra\.csv") as err:
        cli.cmd_report(run_dirs=[src], out=out, redact=True, quiet=True)
    assert "\n" not in str(err.value)
    assert not out.exists(), "a copy that failed its check was kept"
    assert _digest(src) == before
    # The same check passes once nothing writes around the redactor.
    monkeypatch.setattr(store, "write_legacy_csvs", real)
    cli.cmd_report(run_dirs=[src], out=out, redact=True, quiet=True)
    assert _files_holding(out, ["bench-alpha", USER, HOME]) == []
