"""`bakeoff fleet run --kernel`: the kernels passed on to each host's `bakeoff run`, checked on
the controller before any host is touched; a host's kernel run settled from its kernels.json;
the fleet's kernels.md linking each host's table (no report across hosts for it yet).

No host is started here: the refusal by each host of a timed run on this machine (no
hardware KVM), and bad words refused by the CLI in one line, are tested in
tests/test_fleet.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bakeoff.core.errors import UsageError
from bakeoff.fleet import driver, kernel_index
from bakeoff.fleet.record import HOSTS_DIR, FleetRecord, Phase, save
from bakeoff.kernels import specs
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
    assert "No report across hosts yet" in page and "second axis" in page


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
