"""bakeoff report --redact: a copy to share, with no host name, user name, home path or fleet
address of the original left in any file, and the original directory untouched.

The records are test_report.py's synthetic run (a fake room, no benchmark process), written
to disk with names planted where real runs carry them: the host facts, the command line
(--out under a home), a warning, a failed trial's stderr, samples.csv and an extra file.
None of these tests starts a benchmark (`bakeoff report` only reads and writes files), so
none is marked slow; each writes whole reports (plotly), a second or two.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_report import make_run

from bakeoff.analysis.across_hosts import analyze_hosts, to_json
from bakeoff.analysis.within_run import analyze
from bakeoff.cli import report as cli
from bakeoff.core.errors import UsageError
from bakeoff.fleet import record as fleet_record
from bakeoff.report import redact, write_reports
from bakeoff.store import results as store
from conftest import assert_usage_error, run_bakeoff

HOME = "/home/alice-k"
USER = "alice-k"


def _write_run(run_dir: Path, hostname: str, home: str = HOME) -> list[str]:
    """A run directory as bakeoff writes it, with the sensitive strings in; returns them."""
    user = home.rsplit("/", 1)[1]
    run = make_run()
    run.host = {**run.host, "hostname": hostname}
    run.argv = [*run.argv, "--out", f"{home}/runs/{hostname}"]
    run.warnings = [*run.warnings, f"results under {home}/runs, written by {user} on {hostname}"]
    failed = next(t for t in run.trials if t.status == "failed")
    failed.stderr_tail = f"{home}/bakeoff/build/fake: mremap: Cannot allocate memory"
    run_dir.mkdir(parents=True)
    store.save(run, run_dir)
    csv = store.rewrite_samples_csv(run, run_dir, ["size"])
    assert csv.path.is_file()
    (run_dir / "notes.txt").write_text(f"measured by {user} on {hostname}, {home}/notes\n")
    (run_dir / "perf.data").write_bytes(b"\xff\xfe" + hostname.encode())  # not text
    (run_dir / "raw").mkdir()
    (run_dir / "raw" / "log.txt").write_text(f"{hostname}\n")
    write_reports(run, analyze(run), run_dir)  # as `bakeoff run` leaves them
    return [hostname, user, home]


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


@pytest.mark.slow(live=False)
def test_no_original_survives_in_any_file_and_the_source_is_untouched(tmp_path: Path) -> None:
    src = tmp_path / "run"
    originals = _write_run(src, "bench-alpha.lab.example")
    assert _files_holding(src, originals)  # the names are really there to remove
    before = _digest(src)
    res = run_bakeoff("report", str(src), "--redact")
    assert res.returncode == 0, res.stderr
    out = tmp_path / "run-redacted"
    # The host (its name and short name are one host); alice-k and the accounts of this
    # machine; their homes. Said last, by count.
    last = res.stdout.strip().splitlines()[-1]
    assert re.match(r"redacted 1 host name, \d+ user names?, \d+ home paths in ", last), last
    assert _digest(src) == before, "--redact changed the source directory"
    names = {p.name for p in out.iterdir()}
    assert names >= {"results.json", "samples.csv", "report.html", "report.md", "details.md",
                     "notes.txt"}
    assert "perf.data" not in names and "raw" not in names
    assert "left out perf.data: not a text file" in res.stdout
    assert "left out raw/: a directory" in res.stdout
    # One line per file of the copy, and no original in anything said.
    wrote = sorted(ln.removeprefix("wrote ") for ln in res.stdout.splitlines()
                   if ln.startswith("wrote "))
    assert wrote == sorted(str(p) for p in out.rglob("*") if p.is_file())
    assert not [o for o in [*originals, "bench-alpha"] if o in res.stdout + res.stderr]
    # Byte for byte: not a name, not a home path, not the short host name, in no file.
    assert _files_holding(out, [*originals, "bench-alpha"]) == []
    md = (out / "report.md").read_text()
    assert "host-1" in md and "fake-move" in md  # the placeholder, and the room's own names
    assert "host-2" not in md  # the short name bench-alpha is the same host
    assert re.fullmatch(r"measured by user-\d on host-1, ~/notes\n", (out / "notes.txt").read_text())
    # The copy is a results directory: it loads, and bakeoff reports it again.
    run = store.load(out)
    assert run.host["hostname"] == "host-1"
    assert any(a.startswith("~/runs/") for a in run.argv), run.argv
    again = run_bakeoff("report", str(out), "--quiet")
    assert again.returncode == 0, again.stderr


@pytest.mark.slow(live=False)
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


def test_one_host_is_one_placeholder() -> None:
    """The inventory name, the recorded hostname and its short form are one machine: one
    host-N, counted once. Another host gets the next number."""
    r = redact.Redactor()
    r.add("host", "alpha")
    r.add("host", "beta")
    redact.add_hostname(r, "alpha-node.lab.example", same_as="alpha")
    redact.add_hostname(r, "gamma.lab")  # a run directory's host: a label of its own
    assert r.text("alpha alpha-node alpha-node.lab.example beta gamma gamma.lab") == (
        "host-1 host-1 host-1 host-2 host-3 host-3")
    for home in ("/root", "/home/al"):
        r.add("home", home)
    r.add("address", "198.18.7.2")
    assert r.counts() == {"host": 3, "user": 0, "address": 1, "home": 2}


def test_addresses_are_found_in_the_records_text() -> None:
    """IPv4 and IPv6 literals, wherever a record mentions them; versions, times, loopback
    and 0.0.0.0 are not addresses of a host."""
    r = redact.Redactor()
    redact.add_addresses(r, [
        "ssh: connect to host 198.18.7.9 port 22: No route to host; then 198.18.7.10.",
        "[fd00::5]:22 and 2001:db8:0:1::7, not ::1, 127.0.0.1 or 0.0.0.0",
        "python 3.11.2, kernel 6.18.0-test, at 2026-11-01T10:00:00Z, 10:00:00, 256.1.2.3",
    ])
    assert r.placeholders == {"198.18.7.9": "addr-1", "198.18.7.10": "addr-2",
                              "fd00::5": "addr-3", "2001:db8:0:1::7": "addr-4"}
    assert r.text("198.18.7.9, 198.18.7.99 and [fd00::5]:22") == (
        "addr-1, 198.18.7.99 and [addr-3]:22")


def _fleet_dir(tmp_path: Path, hosts: dict[str, str],
               unreachable: dict[str, str] | None = None) -> Path:
    """A fleet directory as bakeoff fleet run leaves it: fleet.json, each host's run, and the
    inventory it names (with each host's address). An unreachable host sent no run back:
    it is only in the inventory and in fleet.json's table, its address in the reason."""
    unreachable = unreachable or {}
    fleet = tmp_path / "fleet"
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n" + "".join(
        f"    {name}:\n      ansible_host: {addr}\n"
        for name, addr in {**hosts, **unreachable}.items()))
    records = {n: fleet_record.HostRecord(host=n, status="complete", reachable=True,
                                          reason=f"ssh {a} ok") for n, a in hosts.items()}
    records |= {n: fleet_record.HostRecord(
        host=n, status="unreachable", reachable=False,
        reason=f"ssh: connect to host {a} port 22: No route to host")
        for n, a in unreachable.items()}
    rec = fleet_record.FleetRecord(
        fleet_run="fleet", remote_name="fleet-1a2b", commit="0" * 40, inventory=str(inventory),
        run_args=["fake-move"], seed=1, rooms=["fake-move"], serial=False, forks=2,
        host_timeout_s=60, argv=["bakeoff", "fleet", "run", "-i", str(inventory)],
        started_at="2026-11-01T10:00:00Z", hosts=records)
    for name in hosts:
        _write_run(rec.host_dir(fleet, name), f"{name}.lab")
    fleet_record.save(rec, fleet)
    return fleet


@pytest.mark.slow(live=False)
def test_the_fleet_report_names_no_host_and_no_address(tmp_path: Path) -> None:
    """Three hosts: alpha and alpha2 (one name inside the other; alpha's address a DNS name
    only the inventory knows as an address), and gamma-box, unreachable, in the fleet's
    table only. Every name and address is gone from every file; each host is one
    placeholder of its own."""
    hosts = {"alpha": "alpha-mgmt.lab.example", "alpha2": "198.18.7.6"}
    unreachable = {"gamma-box": "198.18.7.9"}
    fleet = _fleet_dir(tmp_path, hosts, unreachable)
    before = _digest(fleet)
    res = run_bakeoff("report", str(fleet), "--redact")
    assert res.returncode == 0, res.stderr
    out = tmp_path / "fleet-redacted"
    # The whole fleet: its record and each host that sent results back, as host-N; the
    # unreachable host sent nothing (it has no directory).
    assert sorted(p.name for p in out.iterdir()) == [
        "details.md", "fleet.json", "hosts", "hosts.json", "report.html", "report.md"]
    assert sorted(p.name for p in (out / "hosts").iterdir()) == ["host-1", "host-2"]
    # perf.data (not text) and raw/ (a directory) of each host's run are left out, said so.
    for host in ("host-1", "host-2"):
        assert f"left out hosts/{host}/perf.data: not a text file" in res.stdout
        assert f"left out hosts/{host}/raw/: a directory" in res.stdout
    assert _digest(fleet) == before
    originals = [*hosts, *hosts.values(), *unreachable, *unreachable.values(), "alpha.lab",
                 "alpha2.lab", USER, HOME]
    assert _files_holding(out, originals) == []
    assert not [o for o in originals if o in res.stdout + res.stderr]
    # alice-k and this machine's accounts; fleet.json, the runs' argv and their homes.
    assert re.match(r"redacted 3 host names, \d+ user names?, 3 addresses, \d+ home paths in ",
                    res.stdout.strip().splitlines()[-1]), res.stdout
    data = json.loads((out / "hosts.json").read_text())
    assert data["hosts"] == ["host-1", "host-2"]  # distinct hosts, distinct placeholders
    md = (out / "report.md").read_text()
    # Each host's machine is itself (its hostname is its placeholder, not another host's).
    assert re.search(r"^\| host-1 \| host-1, Linux", md, re.M), md
    assert re.search(r"^\| host-2 \| host-2, Linux", md, re.M), md
    # The fleet's table: the unreachable host and every address, as placeholders.
    assert "| host-3 | unreachable | no |" in md
    assert "ssh addr-1 ok" in md and "ssh addr-2 ok" in md
    assert "connect to host addr-3 port 22" in md
    assert "fake-move" in md and "mremap" in md and "memcpy" in md  # the room's own names


@pytest.mark.slow(live=False)
def test_addresses_are_redacted_without_the_inventory(tmp_path: Path) -> None:
    """The inventory moved or gone (a fleet directory copied to another machine): the
    addresses in fleet.json are found there all the same."""
    fleet = _fleet_dir(tmp_path, {"alpha": "198.18.7.2"}, {"beta": "fd00::7"})
    (tmp_path / "hosts.yml").unlink()
    res = run_bakeoff("report", str(fleet), "--redact")
    assert res.returncode == 0, res.stderr
    out = tmp_path / "fleet-redacted"
    assert _files_holding(out, ["alpha", "beta", "198.18.7.2", "fd00::7"]) == []
    md = (out / "report.md").read_text()
    assert "ssh addr-1 ok" in md and "connect to host addr-2 port 22" in md


@pytest.mark.slow(live=False)
def test_plain_run_dirs_of_two_hosts(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _write_run(a, "alpha")
    _write_run(b, "alpha2")
    out = tmp_path / "shared"
    res = run_bakeoff("report", str(a), str(b), "--redact", "--out", str(out))
    assert res.returncode == 0, res.stderr
    shared = json.loads((out / "hosts.json").read_text())
    assert shared["hosts"] == ["host-1", "host-2"]
    assert _files_holding(out, ["alpha", USER, HOME]) == []
    # Each run is in the copy, redacted, and reports across hosts again to the same verdicts.
    copies = [out / "hosts" / "host-1", out / "hosts" / "host-2"]
    assert sorted((out / "hosts").iterdir()) == copies
    again = json.loads(to_json(analyze_hosts(copies)))
    assert again["hosts"] == shared["hosts"] and again["cases"] == shared["cases"]


@pytest.mark.slow(live=False)
def test_a_user_named_like_a_word_of_the_report(tmp_path: Path) -> None:
    """A user called fake: the word "fake" alone is replaced (fake exited with status 1 is
    user-1 exited…: a whole-token match), but the benchmark fake-move, its variants and
    every other word of the report are left as they were."""
    src = tmp_path / "run"
    originals = _write_run(src, "alpha2", home="/home/fake")
    res = run_bakeoff("report", str(src), "--redact")
    assert res.returncode == 0, res.stderr
    out = tmp_path / "run-redacted"
    assert _files_holding(out, ["alpha2", "/home/fake"]) == []
    run = store.load(out)
    assert list(run.benchmarks) == ["fake-move"]
    assert {c.variant for c in run.cases} == {c.variant for c in store.load(src).cases}
    md = (out / "details.md").read_text()  # the failures' text and every case are there
    for word in ("fake-move", "mremap", "memcpy", "Cannot allocate memory", "size=16 KiB"):
        assert word in md, word
    for name in ("report.md", "details.md"):
        text = (out / name).read_text()
        assert re.search(r"(?<![\w-])fake(?![\w-])", text) is None  # the word, whole, is gone
        assert len(text) > 0.9 * len((src / name).read_text())  # nothing else was eaten
    # (user-N: this machine's own accounts come first.)
    assert re.search(r"^user-\d exited with status 1: mremap: Cannot allocate memory$", md, re.M)
    assert originals[1] == "fake"


@pytest.mark.slow(live=False)
def test_a_host_named_like_a_field_of_the_record(tmp_path: Path) -> None:
    """host.example.com's short name is "host", a field of results.json: replacing it
    breaks the record, so nothing is kept, and the error does not quote the field."""
    src = tmp_path / "run"
    _write_run(src, "host.example.com")
    out = tmp_path / "copy"
    res = run_bakeoff("report", str(src), "--redact", "--out", str(out))
    assert_usage_error(res, "the redacted results.json does not load")
    assert "host.example.com" not in res.stderr and "'host'" not in res.stderr
    assert not out.exists()


@pytest.mark.slow(live=False)
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
    assert_usage_error(run_bakeoff("report", str(src), "--redact", "--out", str(src)),
                       "must not change", fix="give --out a directory elsewhere")
    empty = tmp_path / "not-a-run"
    empty.mkdir()
    assert_usage_error(run_bakeoff("report", str(empty), "--redact"), "results.json")
    assert not (tmp_path / "not-a-run-redacted").exists()


@pytest.mark.slow(live=False)
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
    with pytest.raises(UsageError, match=r"redaction left a host name in extra\.csv") as err:
        cli.cmd_report(run_dirs=[src], out=out, redact=True, quiet=True)
    assert "\n" not in str(err.value)
    assert not out.exists(), "a copy that failed its check was kept"
    assert _digest(src) == before
    # The same check passes once nothing writes around the redactor.
    monkeypatch.setattr(store, "write_legacy_csvs", real)
    cli.cmd_report(run_dirs=[src], out=out, redact=True, quiet=True)
    assert _files_holding(out, ["bench-alpha", USER, HOME]) == []


@pytest.mark.slow(live=False)
def test_an_interrupt_leaves_no_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C half way through the copy (here, while the CSVs are written): the copy is
    removed, an empty --out the user made is left as it was, the source is untouched."""
    src = tmp_path / "run"
    _write_run(src, "bench-alpha")
    before = _digest(src)

    def interrupted(run: Any, run_dir: Path) -> list[Path]:
        assert (run_dir / "report.md").is_file()  # half the copy is there
        raise KeyboardInterrupt

    monkeypatch.setattr(store, "write_legacy_csvs", interrupted)
    for out, made in ((tmp_path / "new", False), (tmp_path / "empty", True)):
        if made:
            out.mkdir()
        with pytest.raises(KeyboardInterrupt):
            cli.cmd_report(run_dirs=[src], out=out, redact=True, quiet=True)
        assert out.exists() == made and (not made or not any(out.iterdir()))
    assert _digest(src) == before
