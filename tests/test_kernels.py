"""`bakeoff run --kernel`'s machinery, booting nothing (docs/KERNELS.md).

Booting is `make test-kernels`' (minutes per kernel under the emulator). Here: the spec's
words and its refusals, the mode the machine allows (a timed run refused on this machine in
one line), the plans (one smallest case per variant; balanced ABBA blocks with the A/A
control), a .deb unpacked into the cache keyed by its image's hash, the guest's own side run
for real in a private mount namespace (results come back as files in WORK; what it writes to
/tmp does not reach the host's), a boot that wrote nothing said as an error, and the timed
analysis (the boot as the unit, the A/A control said first) on recorded per-boot results.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from bakeoff.core.errors import UsageError
from bakeoff.declare import registry
from bakeoff.declare.model import Case, RunRecord, Trial
from bakeoff.kernels import command, configs, functional, guest, images, inside, mode, plan, specs, timed
from bakeoff.store import results
from conftest import FIXTURES, assert_usage_error, run_bakeoff

ROOMS, BUILD = FIXTURES / "rooms", FIXTURES / "build"


# ---- the words ---------------------------------------------------------------------------


def test_a_spec_is_an_image_a_deb_or_a_package(tmp_path: Path) -> None:
    image = tmp_path / "vmlinuz-6.1.0-test"
    image.write_bytes(b"not really a kernel")
    deb = tmp_path / "k.deb"
    deb.write_bytes(b"")
    assert specs.parse(f"a={image}") == specs.KernelSpec("a", "image", str(image))
    assert specs.parse(f"b={deb}").kind == "deb"
    assert specs.parse("c=linux-image-6.1.0-*-amd64") == specs.KernelSpec(
        "c", "package", "linux-image-6.1.0-*-amd64")
    for bad, needle in [("noequals", "give NAME=SPEC"), ("=x", "give NAME=SPEC"),
                        (f"a={tmp_path}/missing.deb", "no such .deb"),
                        (f"a={tmp_path}/nope", "no such kernel image"),
                        ("a=Not A Package", "neither a file nor a Debian package")]:
        with pytest.raises(UsageError, match=needle):
            specs.parse(bad)
    with pytest.raises(UsageError, match="named twice"):
        specs.parse_all(["a=linux-image-x", "a=linux-image-y"])


@pytest.mark.slow  # starts `bakeoff run` (refused before it measures; the suite's lock all the same)
def test_bad_kernel_words_are_one_line_exit_2() -> None:
    assert_usage_error(run_bakeoff("run", "mremap-vs-memcpy", "--functional",
                                   "--kernel", "a"), "--kernel 'a'", "NAME=SPEC")
    assert_usage_error(run_bakeoff("run", "mremap-vs-memcpy", "--functional"),
                       "go with --kernel")


# ---- the mode ----------------------------------------------------------------------------


def _machine(tmp: Path, modules: list[str], dev_kvm: bool) -> mode.Accel:
    sys_module = tmp / "module"
    for m in modules:
        (sys_module / m).mkdir(parents=True)
    kvm = tmp / "kvm"
    if dev_kvm:
        kvm.touch()
    return mode.probe(sys_module, kvm)


def test_the_machine_chooses_the_mode_and_a_refusal_says_why(tmp_path: Path) -> None:
    intel = _machine(tmp_path / "i", ["kvm", "kvm_intel"], True)
    assert intel.hardware and mode.choose(False, intel) == "timed"
    pvm = _machine(tmp_path / "p", ["kvm", "kvm_pvm"], True)
    assert not pvm.hardware
    with pytest.raises(UsageError) as refused:
        mode.choose(False, pvm)
    assert "kvm_pvm" in str(refused.value) and "--functional" in str(refused.value)
    assert mode.choose(True, pvm) == "functional"  # the check runs anywhere
    bare = _machine(tmp_path / "n", [], False)
    assert bare.why == "no /dev/kvm" and not bare.hardware


@pytest.mark.slow
def test_a_timed_kernel_run_is_refused_here_in_one_line() -> None:
    """On this machine (kvm_pvm: guests under the emulator) the timed mode is refused before
    anything is fetched: the package names below need not exist."""
    here = mode.probe()
    res = run_bakeoff("run", "mremap-vs-memcpy", "--kernel", "a=linux-image-0.0-none",
                      "--kernel", "b=linux-image-0.1-none", timeout=120)
    if here.hardware:  # a workstation with KVM gets past the mode, to the package lookup
        assert "timed run needs hardware KVM" not in res.stderr
        return
    assert_usage_error(res, "a timed run needs hardware KVM", "add --functional")
    assert here.why in res.stderr


# ---- the plans ---------------------------------------------------------------------------


@pytest.mark.slow(live=False)
def test_the_functional_plan_is_every_mechanism_at_the_least_size() -> None:
    """Each room once: every value of each word param of its quick grid (a map kind, a
    content, a workload: each another mechanism) at the least of each numeric one; a variant
    the room itself says cannot apply there gets the least point where it does, in a
    further run. Planned on the kernel it runs on (inside.here(): here, the host's)."""
    benches = list(registry.discover().values())
    planned = plan.functional_runs(benches, inside.here())
    firsts = {r.room: r for r in planned if r.part == 0}
    assert set(firsts) == {b.name for b in benches}
    for bench in benches:
        run = firsts[bench.name]
        grid = bench.profiles[plan.FUNCTIONAL_PROFILE].params
        assert run.trials == 1 and run.variants == () and len(run.params) == len(grid)
        for word in run.params:
            name, _, value = word.partition("=")
            values = grid[name]
            if all(isinstance(v, int | float) for v in values):
                assert float(value) == min(values), (bench.name, word)
            else:
                assert value == ",".join(str(v) for v in values)
    assert "content=legacy,legacy-parse,ks,bpf-iter,bpf-iter-flush" in firsts[
        "cgroup-stat-read"].params
    [thp] = [r for r in planned if r.room == "mremap-vs-memcpy" and r.part == 1]
    assert thp.variants == ("mremap-thp",) and thp.dir_name == "mremap-vs-memcpy+1"
    assert int(thp.params[0].partition("=")[2]) % (2 << 20) == 0
    assert plan.RoomRun.from_json(thp.to_json()) == thp
    assert all(r.part == 0 for r in plan.functional_runs(benches))  # no context: one run


def test_timed_boots_come_in_balanced_abba_blocks_with_an_aa_control() -> None:
    order = plan.timed_order(["a", "b", "c"], blocks=6, seed=11)
    assert [b.index for b in order] == list(range(len(order)))
    blocks = [[b.label for b in order if b.block == k] for k in range(6)]
    for block in blocks:  # every kernel once, the first twice (A and its control A′)
        assert sorted(block) == sorted(["a", "a′", "b", "c"])
    for k in range(0, 6, 2):  # ABBA: each odd block the reverse of the one before
        assert blocks[k + 1] == blocks[k][::-1]
    # Balanced: over each pair of blocks every boot's mean place is the middle.
    for label in ("a", "a′", "b", "c"):
        places = [block.index(label) for block in blocks]
        assert sum(places) == 3 * (4 - 1)
    assert plan.timed_order(["a", "b", "c"], 6, 11) == order  # the seed fixes it
    assert any(plan.timed_order(["a", "b", "c"], 6, s) != order for s in range(12, 20))
    with pytest.raises(ValueError):
        plan.timed_order(["a"], 4, 1)


# ---- images and configs ------------------------------------------------------------------


def _deb(tmp: Path, release: str, image_bytes: bytes) -> Path:
    root = tmp / "pkg"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        "Package: linux-image-test\nVersion: 1\nArchitecture: amd64\nMaintainer: t <t@t>\n"
        "Description: test\n")
    (root / "boot").mkdir()
    (root / "boot" / f"vmlinuz-{release}").write_bytes(image_bytes)
    (root / "boot" / f"config-{release}").write_text(
        "CONFIG_BPF_SYSCALL=y\n# CONFIG_KASAN is not set\nCONFIG_HZ=250\n")
    (root / "lib" / "modules" / release).mkdir(parents=True)
    deb = tmp / "linux-image-test.deb"
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(root), str(deb)],
                   check=True, capture_output=True)
    return deb


@pytest.mark.slow(live=False)
def test_a_deb_is_unpacked_into_the_cache_keyed_by_its_image(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    deb = _deb(tmp_path, "9.9.9-test", b"kernel bytes")
    got = images.resolve(specs.parse(f"x={deb}"))
    digest = images.sha256_of(got.image)
    assert got.sha256 == digest
    assert got.image == images.cache_root() / digest[:16] / "boot" / "vmlinuz-9.9.9-test"
    assert got.config is not None and got.config.name == "config-9.9.9-test"
    assert (got.image.parent.parent / "lib" / "modules" / "9.9.9-test").is_dir()
    # The temporary tree is gone; a second unpack finds the same entry and adds none.
    again = images.resolve(specs.parse(f"y={deb}"))
    assert again.image == got.image
    assert sorted(p.name for p in images.cache_root().iterdir()) == [digest[:16]]


def test_the_config_options_that_differ_are_listed() -> None:
    a = configs.parse("CONFIG_HZ=250\nCONFIG_BPF_SYSCALL=y\n# CONFIG_KASAN is not set\n")
    b = configs.parse("CONFIG_HZ=1000\nCONFIG_BPF_SYSCALL=y\nCONFIG_KASAN=y\nCONFIG_NEW=m\n")
    differ = configs.differing({"a": a, "b": b})
    assert differ == {"CONFIG_HZ": {"a": "250", "b": "1000"},
                      "CONFIG_KASAN": {"a": "n", "b": "y"},
                      "CONFIG_NEW": {"a": "-", "b": "m"}}
    assert set(configs.watched(differ)) == {"CONFIG_HZ", "CONFIG_KASAN"}


# ---- the guest's side, for real, without a guest -----------------------------------------


def _inside(work: Path, private: bool, order_log: Path) -> subprocess.CompletedProcess[str]:
    """The guest's command as the guest runs it, in a mount namespace of its own (the guest
    has its own kernel; here, the tmpfs over /tmp must not reach the host's)."""
    order_run = plan.RoomRun("order", "quick", ("n=1",), 1)
    request = guest.request_json([order_run], seed=5, pin=False,
                                 env={"BAKEOFF_BENCHMARKS_DIR": str(ROOMS),
                                      "BAKEOFF_BUILD_DIR": str(BUILD),
                                      "ORDER_LOG": str(order_log)})
    request["private_tmp"] = private
    work.mkdir(parents=True)
    inside.write_json(work / inside.REQUEST, request)
    return subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable,
                           "-m", "bakeoff.kernels.inside", str(work)],
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow(live=False)
def test_results_come_back_as_files_and_the_guests_tmp_is_private(tmp_path: Path) -> None:
    """WORK lies under /tmp (pytest's tmp_path), so the tmpfs over /tmp hides it and it must
    be bound back in: the results reach the host, the room's writes to /tmp do not. The
    same command without the private /tmp writes the host's: the check can fail."""
    assert tmp_path.is_relative_to("/tmp")
    log = Path("/tmp") / f"bakeoff-kernels-test-{uuid.uuid4().hex}.log"
    work = tmp_path / "boot-00-a"
    done = _inside(work, private=True, order_log=log)
    assert done.returncode == 0, done.stderr
    assert not log.exists(), "the guest's /tmp reached the host's"
    result = guest.collect(plan.Boot(0, 0, "a"), work, 1.0)
    assert result.problem is None
    assert result.kernel["release"] == os.uname().release
    assert [(r["room"], r["status"]) for r in result.rooms] == [("order", "ran")]
    rows = functional.rows(result)
    assert {(r.variant, r.state) for r in rows} == {("a", "runs"), ("b", "runs"), ("c", "runs")}
    assert (work / "rooms" / "order" / results.RESULTS_JSON).is_file()
    record = {"mode": "functional", "seed": 5, "hardware_kvm": False,
              "kernels": {"a": {"spec": "x", "kind": "image", "image": "/k",
                                "image_sha256": "0" * 64, "package": "", "config": "",
                                "config_sha256": "", "release": result.kernel["release"],
                                "btf": result.kernel["btf"]}},
              "boots": [result.to_json()], "config_options_differing": 0,
              "watched_options_differing": {}}
    assert command._report(tmp_path, record, 0.02) == 0  # every variant runs: exit 0
    assert "| a | order | b | n=1 | runs |" in (tmp_path / "kernels.md").read_text()

    shared = _inside(tmp_path / "shared", private=False, order_log=log)
    try:
        assert shared.returncode == 0, shared.stderr
        assert log.exists()
    finally:
        log.unlink(missing_ok=True)


def test_a_boot_that_wrote_nothing_is_an_error_with_the_consoles_last_line(
        tmp_path: Path) -> None:
    work = tmp_path / "boot-01-b"
    work.mkdir()
    (work / guest.CONSOLE).write_text("booting\nKernel panic - not syncing: VFS\n")
    result = guest.collect(plan.Boot(1, 0, "b"), work, 3.0)
    assert result.problem is not None and "Kernel panic" in result.problem
    [row] = functional.rows(result)
    assert row.state == functional.ERROR and functional.errors([row]) == [row]


def test_the_guest_command_disables_kvm_in_one_thread_and_pins_only_as_asked() -> None:
    argv = guest.vng_argv(Path("/k/vmlinuz"), Path("/w"), hardware_kvm=False, pin=False)
    assert "--disable-kvm" in argv and "--pin" not in argv
    assert argv[argv.index("--rwdir") + 1] == "/w"
    # Under the emulator, one qemu thread for every vCPU (guest.EMULATOR_ACCEL says why).
    assert "--qemu-opts=-accel tcg,thread=single" in argv
    timed_argv = guest.vng_argv(Path("/k/vmlinuz"), Path("/w"), hardware_kvm=True, pin=True)
    assert "--disable-kvm" not in timed_argv and "--pin" in timed_argv
    assert not [a for a in timed_argv if a.startswith("--qemu-opts")]


def test_a_checkout_under_var_tmp_is_shown_to_the_guest_and_work_stays_writable() -> None:
    """virtme-ng's init hides /var/tmp under a tmpfs; a fleet host's default remote
    directory is there (/var/tmp/bakeoff-fleet): the first functional fleet run's guests
    said `.venv/bin/python: not found`. The checkout goes to the guest read-only, or
    read-write before WORK's mount where it holds WORK (vng mounts --rwdir before --rodir)."""
    repo = Path("/var/tmp/bakeoff-fleet/alpha/checkout-abc")
    beside = guest.vng_argv(Path("/k"), Path("/var/tmp/bakeoff-fleet/alpha/results/r/boot-00"),
                            False, False, repo)
    assert f"--rodir={repo}" in beside
    assert beside.index("--rwdir") < beside.index(f"--rodir={repo}")
    inside_it = guest.vng_argv(Path("/k"), repo / "results" / "r" / "boot-00", False, False, repo)
    assert inside_it.index(f"--rwdir={repo}") < inside_it.index("--rwdir")
    assert not [a for a in inside_it if a.startswith("--rodir")]
    # Elsewhere (this checkout, /tmp: inside.private_tmp binds it back) nothing is added.
    assert guest.hidden_dirs(Path("/work/x"), Path("/work/x/results/b")) == [] or \
        Path(sys.prefix).resolve().is_relative_to("/var/tmp")


# ---- the timed analysis on recorded per-boot results -------------------------------------


def _boot_record(bench_info: object, cases: list[Case], level: float, seed: int) -> RunRecord:
    """One boot's run of the room: 5 trials a case around `level` ns (1% trial noise)."""
    rng = np.random.default_rng(seed)
    trials = [Trial(case, i, i, "ok", "2026-11-29T00:00:00Z", 0.1, 0,
                    {"ns_per_op": list(level * np.exp(rng.normal(0, 0.01, 3)))}, {}, {}, None)
              for case in cases for i in range(5)]
    return RunRecord(results.SCHEMA_VERSION, f"boot-{seed}", "complete", "2026-11-29T00:00:00Z",
                     "2026-11-29T00:01:00Z", ["bakeoff"], "quick", seed, {"hostname": "guest"},
                     [], {"order": bench_info}, cases, [], trials)  # type: ignore[dict-item]


def _recorded_boots(out: Path, b_factor: float) -> None:
    """A timed run's directory as `run --kernel` leaves it: kernels.json, and per boot its
    room's results.json. Each boot moves every case by its own factor (3%, log-normal): the
    boot-to-boot spread that pooling trials across boots would hide."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BAKEOFF_BENCHMARKS_DIR", str(ROOMS))
        bench = registry.discover()["order"]
    cases = [Case("order", "a", (("n", 1),))]
    order = plan.timed_order(["a", "b"], blocks=4, seed=3)
    rng = np.random.default_rng(7)
    boots = []
    for b in order:
        level = 100.0 * (b_factor if b.kernel == "b" else 1.0) * math.exp(rng.normal(0, 0.03))
        work = out / f"boot-{b.index:02d}"
        run_dir = work / "rooms" / "order"
        run_dir.mkdir(parents=True)
        results.save(_boot_record(bench.info(), cases, level, 100 + b.index), run_dir)
        boots.append({"index": b.index, "block": b.block, "kernel": b.kernel,
                      "control": b.control, "dir": work.name, "seconds": 40.0,
                      "guest_kernel": {}, "problem": None,
                      "rooms": [{"room": "order", "dir": "rooms/order", "status": "ran"}]})
    kernel = {"spec": "x", "kind": "package", "image": "/k", "image_sha256": "0" * 64,
              "package": "", "config": "", "config_sha256": "", "release": "6.x", "btf": True}
    (out / timed.KERNELS_JSON).write_text(json.dumps({
        "mode": "timed", "seed": 3, "hardware_kvm": True, "boots": boots,
        "kernels": {"a": kernel, "b": kernel}, "config_options_differing": 0,
        "watched_options_differing": {}}))


def test_the_timed_analysis_takes_the_boot_as_its_unit_and_says_the_control_first(
        tmp_path: Path) -> None:
    _recorded_boots(tmp_path, b_factor=1.3)
    [room] = timed.analyze(tmp_path, threshold=0.02)
    assert room.boots == {"a": 4, "a′": 4, "b": 4}
    [control] = room.control.changes
    [change] = room.changes["b"].changes
    # Each boot is one observation: basis "runs" (bakeoff compare's), 4 a side.
    assert control.basis == change.basis == "runs"
    assert control.verdict not in ("faster", "slower") and room.control_called() == []
    assert control.ratio.ci_low < 1 < control.ratio.ci_high
    assert change.verdict == "slower" and change.ratio.ci_low > 1.1
    said = "\n".join(timed.lines([room], 0.02))
    assert said.index("A/A control") < said.index("b against a")
    # The run's report, from its directory alone: the same order, the verdicts kept.
    assert command.report_again(tmp_path) == 0  # what `bakeoff report DIR` does
    report = (tmp_path / "kernels.md").read_text()
    assert report.index("A/A control") < report.index("b against a") and "slower" in report
    assert command.load(tmp_path)["timed"][0]["changes"]["b"][0]["verdict"] == "slower"


def test_an_aa_control_that_calls_a_difference_is_said_before_any_verdict(
        tmp_path: Path) -> None:
    """Boots of one kernel that differ (here: the control's boots made 20% slower) are
    said as such, so the A/B verdicts below are read with it."""
    _recorded_boots(tmp_path, b_factor=1.0)
    plan_ = json.loads((tmp_path / timed.KERNELS_JSON).read_text())
    for b in plan_["boots"]:
        if b["control"]:
            run_dir = tmp_path / b["dir"] / "rooms" / "order"
            record = results.load(run_dir)
            for t in record.trials:
                t.samples = {m: [v * 1.2 for v in vs] for m, vs in t.samples.items()}
            (run_dir / results.RESULTS_JSON).unlink()
            (run_dir / "trials.jsonl").unlink(missing_ok=True)
            results.save(record, run_dir)
    [room] = timed.analyze(tmp_path, threshold=0.02)
    assert len(room.control_called()) == 1
    said = timed.lines([room], 0.02)
    warning = next(i for i, line in enumerate(said) if "calls 1 case(s) different" in line)
    assert warning < next(i for i, line in enumerate(said) if "b against a" in line)
