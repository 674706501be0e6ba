"""`bakeoff fleet run --kernel`: the kernels passed on to each host's `bakeoff run`, checked on
the controller before any host is touched; a host's kernel run settled from its kernels.json;
the fleet's kernels.md linking each host's table, and its table across hosts and kernels made
from recorded hosts' runs (a real functional fleet run's files, tests/fixtures/kernel_fleet/).

No host is started here: the refusal by each host of a timed run on this machine (no
hardware KVM), and bad words refused by the CLI in one line, are tested in
tests/test_fleet.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bakeoff.core.errors import UsageError
from bakeoff.fleet import driver, kernel_index
from bakeoff.fleet.record import HOSTS_DIR, FleetRecord, Phase, save
from bakeoff.kernels import across_hosts, command, specs
from bakeoff.kernels.plan import DEFAULT_BLOCKS

A61, B612 = "a=linux-image-6.1.0-*-amd64", "b=linux-image-6.12.*+bpo-amd64"


def test_the_kernels_go_to_each_host_as_run_would_take_them() -> None:
    assert specs.host_words([A61, B612], False, DEFAULT_BLOCKS) == [
        "--kernel", A61, "--kernel", B612]
    assert specs.host_words([A61], True, DEFAULT_BLOCKS) == ["--kernel", A61, "--functional"]
    assert specs.host_words([A61, B612], False, 6) == [
        "--kernel", A61, "--kernel", B612, "--blocks", "6"]
    # A path is the host's: passed as given (absolute), not looked for on the controller.
    assert specs.host_words(["c=/boot/vmlinuz-9.9-not-here", "d=~/k/linux.deb"], True,
                            DEFAULT_BLOCKS) == [
        "--kernel", "c=/boot/vmlinuz-9.9-not-here", "--kernel", "d=~/k/linux.deb",
        "--functional"]
    assert specs.host_words([], False, DEFAULT_BLOCKS) == []


@pytest.mark.parametrize(("given", "functional", "blocks", "needle"), [
    (["bad"], True, DEFAULT_BLOCKS, "give NAME=SPEC"),
    (["a=vmlinuz/rel"], True, DEFAULT_BLOCKS, "absolute path"),
    (["a=Not_A_Package"], True, DEFAULT_BLOCKS, "neither an absolute path"),
    ([A61, "a=linux-image-6.12"], True, DEFAULT_BLOCKS, "named twice"),
    ([A61], False, DEFAULT_BLOCKS, "a timed --kernel run compares kernels"),
    ([A61, B612], False, 1, "--blocks 2 or more"),
    ([], True, DEFAULT_BLOCKS, "go with --kernel"),
    ([], False, 3, "go with --kernel"),
])
def test_bad_kernel_words_are_refused_on_the_controller(
        given: list[str], functional: bool, blocks: int, needle: str) -> None:
    with pytest.raises(UsageError, match=needle.replace("-", r"\-")):
        specs.host_words(given, functional, blocks)


def _record(tmp_path: Path, run_args: list[str]) -> FleetRecord:
    inv = tmp_path / "inventory.yml"
    inv.write_text("all: {hosts: {alpha: {}, beta: {}}}\n")
    return driver.new_record("fleet-k", "0" * 40, inv, ["alpha", "beta"], run_args, 7,
                             ["mremap_vs_memcpy"], False, 2, 600, stall_after_s=180)


def test_a_kernel_run_has_no_stall_look_and_a_plain_run_keeps_it(tmp_path: Path) -> None:
    kernel_rec = _record(tmp_path, ["mremap-vs-memcpy", "--kernel", A61, "--functional"])
    plain_rec = _record(tmp_path, ["mremap-vs-memcpy", "--profile", "quick"])
    assert driver.is_kernel_run(kernel_rec.run_args) and not driver.is_kernel_run(
        plain_rec.run_args)
    assert driver.stall_look_s(kernel_rec) == 0
    assert driver.stall_look_s(plain_rec) == 180


def test_a_hosts_kernel_run_is_settled_from_kernels_json_and_indexed(tmp_path: Path) -> None:
    fleet_dir = tmp_path / "fleet"
    rec = _record(tmp_path, ["mremap-vs-memcpy", "--kernel", A61, "--functional"])
    alpha = fleet_dir / HOSTS_DIR / "alpha"
    alpha.mkdir(parents=True)
    (alpha / driver.KERNELS_JSON).write_text(json.dumps(
        {"mode": "functional", "order": ["a"], "boots": [{"kernel": "a"}]}))
    (alpha / kernel_index.KERNELS_MD).write_text("# bakeoff kernels: functional run\n")
    (fleet_dir / HOSTS_DIR / "beta").mkdir()
    for name, rc in (("alpha", 0), ("beta", 2)):
        h = rec.hosts[name]
        h.phases["run"] = Phase(started=1.0, ended=2.0)
        h.exit_status = rc
    refusal = ("bakeoff run exited 2: bakeoff: error: --kernel: a timed run needs hardware KVM "
               "and here /dev/kvm is kvm_pvm")
    rec.hosts["beta"].status, rec.hosts["beta"].reason = "failed", refusal
    driver.collect(rec, fleet_dir, ["alpha", "beta"])
    assert rec.hosts["alpha"].status == "complete" and rec.hosts["alpha"].run_status == "complete"
    assert rec.hosts["beta"].status == "failed" and rec.hosts["beta"].reason == refusal
    page = kernel_index.write(rec, fleet_dir).read_text()
    assert "| alpha | complete | [hosts/alpha/kernels.md](hosts/alpha/kernels.md) |" in page
    assert f"| beta | failed | none; {refusal} |" in page
    # Without a table given (the CLI gives bakeoff/kernels/across_hosts.py's): the index alone.
    assert "What runs, across hosts and kernels" not in page


def test_a_kernel_run_missing_boots_is_not_complete(tmp_path: Path) -> None:
    fleet_dir = tmp_path / "fleet"
    rec = _record(tmp_path, ["mremap-vs-memcpy", "--kernel", A61, "--kernel", B612])
    alpha = fleet_dir / HOSTS_DIR / "alpha"
    alpha.mkdir(parents=True)
    (alpha / driver.KERNELS_JSON).write_text(json.dumps(
        {"mode": "timed", "order": ["a", "b", "b", "a"], "boots": [{"kernel": "a"}]}))
    rec.hosts["alpha"].phases["run"] = Phase(started=1.0, ended=2.0)
    rec.hosts["alpha"].exit_status = 0
    driver.collect(rec, fleet_dir, ["alpha"])
    assert rec.hosts["alpha"].run_status == "partial"
    assert rec.hosts["alpha"].status == "failed"


def test_report_on_a_kernel_fleet_writes_its_index_again(tmp_path: Path) -> None:
    from bakeoff.cli.report import cmd_report

    fleet_dir = tmp_path / "fleet"
    rec = _record(tmp_path, ["mremap-vs-memcpy", "--kernel", A61, "--functional"])
    (fleet_dir / HOSTS_DIR).mkdir(parents=True)
    rec.hosts["alpha"].status, rec.hosts["alpha"].reason = "failed", "bakeoff run exited 2: x"
    save(rec, fleet_dir)
    cmd_report([fleet_dir], out=None, redact=False, quiet=True)
    page = (fleet_dir / kernel_index.KERNELS_MD).read_text()
    assert "| alpha | failed | none; bakeoff run exited 2: x |" in page
    assert not (fleet_dir / "report.md").exists()


def test_redact_refuses_a_kernel_run_in_one_line(tmp_path: Path) -> None:
    """A redacted copy covers results.json and the report across hosts, not kernels.md: a
    --kernel run, alone or across a fleet, is refused (exit 2 at the CLI), nothing written."""
    from bakeoff.cli.report import cmd_report

    fleet_dir = tmp_path / "fleet"
    rec = _record(tmp_path, ["mremap-vs-memcpy", "--kernel", A61, "--functional"])
    (fleet_dir / HOSTS_DIR).mkdir(parents=True)
    save(rec, fleet_dir)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "kernels.json").write_text("{}")
    for target in (fleet_dir, run_dir):
        with pytest.raises(UsageError, match="--redact: a --kernel run's tables"):
            cmd_report([target], out=None, redact=True, quiet=True)
    assert not list(tmp_path.glob("*-redacted"))


# ---- the table across hosts and kernels, on a real fleet run's files ------------------------

# A real functional fleet run (scripts/fleet-kernels-check --hosts 2, 2026-11-29; its output
# is docs/runs/fleet-kernels-20261129-epyc.txt): alpha, and beta whose root has no working
# `lttng` (a host without LTTng's tools), each booting Debian's 6.1 and 6.12 under the
# emulator, rooms mremap-vs-memcpy and tracing-overhead. Kept as fetched, less what the table
# does not read (the guests' consoles, samples.csv, counted.csv, config-diff.txt).
KERNEL_FLEET = Path(__file__).parent / "fixtures" / "kernel_fleet"
HOSTS, KERNELS = ["alpha", "beta"], ["deb61", "deb612"]


def _fleet_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "fleet"
    shutil.copytree(KERNEL_FLEET, dest)
    return dest


def test_a_kernel_fleet_is_one_table_of_hosts_and_kernels_and_shows_where_hosts_differ(
        tmp_path: Path) -> None:
    """`bakeoff report` of the fleet writes kernels.md again from the hosts' files: one table,
    a column per kernel and host; LTTng's variant runs on alpha and skips on beta (the
    capability named) on both kernels, and the table says the hosts differ there and only
    there; nothing is in error; each host's kernels are named by the release its guest
    reported."""
    from bakeoff.cli.report import cmd_report

    fleet = _fleet_copy(tmp_path)
    (fleet / kernel_index.KERNELS_MD).unlink(missing_ok=True)
    (fleet / kernel_index.TABLE_JSON).unlink(missing_ok=True)
    cmd_report([fleet], out=None, redact=False, quiet=True)
    page = (fleet / kernel_index.KERNELS_MD).read_text()
    table = json.loads((fleet / kernel_index.TABLE_JSON).read_text())
    assert table["hosts"] == HOSTS and table["kernels"] == KERNELS and not table["unread"]
    assert ("| room | variant | params | deb61 alpha | deb61 beta | deb612 alpha | deb612 beta "
            "| hosts | kernels | why |") in page
    for host in HOSTS:
        assert f"| {host} | deb61 | functional | 6.1.0-" in page, page
        assert f"| {host} | deb612 | functional | 6.12." in page, page
        assert f"[hosts/{host}/kernels.md](hosts/{host}/kernels.md)" in page
    rows = table["rows"]
    assert {r["room"] for r in rows} == {"mremap-vs-memcpy", "tracing-overhead"}
    assert not [r for r in rows for c in r["cells"].values() if c["state"] == "error"]
    lttng = [r for r in rows if r["variant"] == "lttng"]
    assert len(lttng) == 1, lttng
    cells = lttng[0]["cells"]
    for k in KERNELS:
        assert cells[f"{k} alpha"]["state"] == "runs", cells
        assert cells[f"{k} beta"]["state"] == "skips", cells
        assert "needs lttng" in cells[f"{k} beta"]["why"], cells
    assert lttng[0]["hosts_differ_on"] == KERNELS and lttng[0]["kernels_differ_on"] == []
    others = [r for r in rows if r is not lttng[0]]
    assert others and not [r for r in others if r["hosts_differ_on"]]
    line = next(ln for ln in page.splitlines() if ln.startswith("| tracing-overhead | lttng |"))
    assert "| runs | skips | runs | skips | differ | same |" in line, line
    assert "skips on beta (deb61, deb612): lttng needs lttng" in line, line
    assert "Where the hosts differ:" in page
    assert "tracing-overhead lttng (" in page and "runs on alpha, skips on beta" in page


def test_each_cell_is_what_that_hosts_boots_recorded(tmp_path: Path) -> None:
    """The table is a pivot of each host's own functional table, nothing added or lost: every
    row of every host's kernels.json boots is one cell, with its state and reason."""
    fleet = _fleet_copy(tmp_path)
    dirs = {h: fleet / HOSTS_DIR / h for h in HOSTS}
    across = across_hosts.gather(dirs)
    seen = 0
    for host, run_dir in dirs.items():
        for r in command.functional_table(run_dir, command.load(run_dir)):
            cell = across.cells[(r.room, r.variant, r.params)][(r.kernel, host)]
            assert (cell.state, cell.why) == (r.state, r.why)
            seen += 1
    assert seen == sum(len(row) for row in across.cells.values()) > 0


def test_a_host_without_a_kernel_run_is_named_and_left_out_of_the_table(
        tmp_path: Path) -> None:
    fleet = _fleet_copy(tmp_path)
    (fleet / HOSTS_DIR / "beta" / driver.KERNELS_JSON).unlink()
    across = across_hosts.gather({h: fleet / HOSTS_DIR / h for h in HOSTS})
    assert across.hosts == ["alpha"] and across.unread["beta"].startswith("no kernels.json in ")
    assert all(h == "alpha" for _, h in across.columns())
    page = "\n".join(across_hosts.lines(across))
    assert "- beta: not in the table: no kernels.json in " in page
    assert not [k for k in across.cells if across.hosts_differ(k)]
    empty = across_hosts.lines(across_hosts.gather({}))
    assert "No host brought a kernel run back: nothing to set side by side." in empty


def test_boots_of_one_kernel_on_one_host_give_the_error_first_then_a_run() -> None:
    """A timed host boots each kernel several times: one error among them is the cell."""
    runs, skips = across_hosts.Cell("runs"), across_hosts.Cell("skips", "needs x")
    error = across_hosts.Cell("error", "failed: exit status 1")
    assert across_hosts.merge(across_hosts.merge(runs, error), runs) == error
    assert across_hosts.merge(skips, runs) == runs
    assert across_hosts.merge(None, skips) == skips


def test_a_kernel_runs_hosts_get_virtme_ng_in_a_wheelhouse_of_its_own_name() -> None:
    """The hosts' set-up is `make deps kernel-deps build` for a --kernel run, from wheels that
    hold the `kernels` extra too; the archive's marker is named after it, so a host holding
    the plain wheels (its `.complete-…` of another name) unpacks these as well."""
    from bakeoff.declare import registry
    from bakeoff.fleet import wheelhouse

    pyproject = registry.REPO_ROOT / "pyproject.toml"
    plain, kernels = (wheelhouse.requirements(pyproject),
                      wheelhouse.requirements(pyproject, ("kernels",)))
    added = [r for r in kernels if r not in plain]
    assert added and all(r.startswith("virtme-ng") for r in added), added
    assert wheelhouse.marker(Path("/c/wheelhouse-0123abcd.tar")) == ".complete-0123abcd"
