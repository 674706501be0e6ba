"""`bakeoff run ROOM… --kernel NAME=SPEC…`: one run with the kernel as an axis.

The mode is chosen first (bakeoff/kernels/mode.py: a timed run where it would time an
emulator is refused before anything is fetched), then each kernel is found or fetched, the
boots run in the plan's order, each into its own directory of the run (`boot-NN-NAME/`), and
the host analyses what came back: the functional table, or the timed comparison. The run's
directory holds kernels.json (the kernels' facts, the order, each boot's outcome),
kernels.md (the report) and config-diff.txt (every config option that differs).
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bakeoff.app import runs
from bakeoff.app.console import err_console, out_console
from bakeoff.app.request import RunRequest
from bakeoff.core.errors import UsageError
from bakeoff.declare import registry
from bakeoff.kernels import configs, functional, guest, images, mode, plan, specs, timed
from bakeoff.store import results

# A functional boot under the emulator: a minute or more to boot, then every room's short
# run (its trials' limits stretched, guest.EMULATOR_TIMEOUT_FACTOR);
# a timed boot: the whole run as asked, so its bound is the run's (--time-budget) or an hour.
FUNCTIONAL_TIMEOUT_S = 3600.0
TIMED_TIMEOUT_S = 3600.0
# What the guest's bakeoff needs from this one's environment: where rooms and builds are.
PASSED_ON = ("BAKEOFF_BENCHMARKS_DIR", "BAKEOFF_BUILD_DIR")


@dataclass(frozen=True)
class KernelsRequest:
    kernels: tuple[str, ...]
    functional: bool
    blocks: int = plan.DEFAULT_BLOCKS


def _run_dir(request: RunRequest, names: list[str]) -> Path:
    target = results.prepare_run_dir(request.out, "kernels-" + "-".join(names),
                                     registry.REPO_ROOT / "results")
    if (target / timed.KERNELS_JSON).exists():
        raise UsageError(f"--out {target}: already holds a run; choose an empty or new directory")
    return target


def _facts(found: list[images.KernelImage]) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    parsed = {k.spec.name: configs.parse(k.config.read_text()) if k.config else {} for k in found}
    facts = {k.spec.name: {"spec": k.spec.value, "kind": k.spec.kind, "image": str(k.image),
                           "image_sha256": k.sha256, "package": k.package,
                           "config": str(k.config) if k.config else "",
                           "config_sha256": configs.digest(k.config)} for k in found}
    with_config = {n: c for n, c in parsed.items() if c}
    return facts, configs.differing(with_config) if len(with_config) > 1 else {}


def _say(line: str) -> None:
    err_console.print(line, markup=False, highlight=False, soft_wrap=True)


def run_kernels(request: RunRequest, asked: KernelsRequest) -> int:
    """The whole run; its exit status (1: a functional error, or a boot that came back
    empty)."""
    kernel_specs = specs.parse_all(list(asked.kernels))
    chosen = mode.choose(asked.functional, mode.probe())
    if chosen == "timed":
        specs.check_timed(kernel_specs, asked.blocks)
    request.check()
    benches = runs.benchmarks(request)
    guest.preflight()
    hardware = mode.probe().hardware
    found = [images.resolve(s) for s in kernel_specs]
    out = _run_dir(request, [s.name for s in kernel_specs])
    seed = request.seed if request.seed is not None else random.SystemRandom().randrange(2**31)
    names = [s.name for s in kernel_specs]
    room_runs: list[plan.RoomRun] | list[str]
    if chosen == "functional":
        # Planned in each guest, on its kernel (inside.functional_runs): a room's grid may be
        # read from the kernel it runs on.
        order, room_runs = plan.functional_order(names), [b.name for b in benches]
    else:
        order = plan.timed_order(names, asked.blocks, seed)
        room_runs = plan.timed_runs(benches, request.profile, request.params, request.trials)
    facts, differ = _facts(found)
    record: dict[str, Any] = {"mode": chosen, "seed": seed, "hardware_kvm": hardware,
                              "threshold": request.threshold / 100,
                              "kernels": facts, "rooms": [r if isinstance(r, str) else r.to_json()
                                        for r in room_runs],
                              "order": [b.label for b in order], "boots": [],
                              "config_options_differing": len(differ),
                              "watched_options_differing": configs.watched(differ)}
    (out / "config-diff.txt").write_text("".join(
        f"{o} " + " ".join(f"{k}={v}" for k, v in vals.items()) + "\n"
        for o, vals in differ.items()))
    env = {k: os.environ[k] for k in PASSED_ON if k in os.environ}
    image_of = {k.spec.name: k.image for k in found}
    _say(f"{chosen} run of {len(benches)} room(s) on {len(found)} kernel(s), "
         f"{len(order)} boot(s), under {'KVM' if hardware else 'the emulator (TCG)'}: {out}")
    for b in order:
        work = out / f"boot-{b.index:02d}-{b.kernel}{'-control' if b.control else ''}"
        result = guest.boot(b, image_of[b.kernel], work, room_runs, seed, hardware,
                            pin=chosen == "timed" and request.pin,
                            timeout_s=FUNCTIONAL_TIMEOUT_S if chosen == "functional"
                            else TIMED_TIMEOUT_S, env=env, repo=registry.REPO_ROOT)
        record["boots"].append(result.to_json())
        if result.kernel:
            facts[b.kernel].update(release=result.kernel.get("release"),
                                   btf=result.kernel.get("btf"))
        inside_write(out, record)
        _say(f"boot {b.index + 1}/{len(order)} {b.label}: "
             f"{result.kernel.get('release', '?')} in {result.seconds:.0f} s, "
             + (result.problem or ", ".join(f"{r['room']} {r['status']} ({r['seconds']:.0f} s)"
                                            for r in result.rooms)))
    return _report(out, record, request.threshold / 100)


def inside_write(out: Path, record: dict[str, Any]) -> None:
    from bakeoff.kernels.inside import write_json
    write_json(out / timed.KERNELS_JSON, record)


def fact_lines(record: dict[str, Any]) -> list[str]:
    lines = ["| kernel | release | BTF | config sha256 | image sha256 | from |", "|---|---|---|---|---|---|"]
    for name, f in record["kernels"].items():
        lines.append(f"| {name} | {f.get('release', '?')} | "
                     f"{'yes' if f.get('btf') else 'no' if 'btf' in f else '?'} | "
                     f"{f['config_sha256'][:16] or 'no config beside the image'} | "
                     f"{f['image_sha256'][:16]} | {f['package'] or f['spec']} |")
    watched = record["watched_options_differing"]
    lines += ["", f"Config options that differ: {record['config_options_differing']} "
              "(every one in config-diff.txt); those the rooms' mechanisms hang on:"]
    lines += [f"- {o}: " + ", ".join(f"{k}={v}" for k, v in vals.items())
              for o, vals in watched.items()] or ["- none"]
    return lines


def _report(out: Path, record: dict[str, Any], threshold: float) -> int:
    head = [f"# bakeoff kernels: {record['mode']} run", "",
            f"Boots: {len(record['boots'])}, under "
            f"{'KVM' if record['hardware_kvm'] else 'the emulator (TCG)'}; seed {record['seed']}.",
            "", *fact_lines(record), ""]
    boot_lines = ["| boot | kernel | release | booted in s | boot and runs, s | outcome |",
                  "|---|---|---|---|---|---|"]
    for b in record["boots"]:
        booted = b["guest_kernel"].get("uptime_s")
        boot_lines.append(f"| {b['index'] + 1} | {b['kernel']}{plan.CONTROL_SUFFIX if b['control'] else ''}"
                          f" | {b['guest_kernel'].get('release', '?')} | "
                          f"{'?' if booted is None else f'{booted:.1f}'} | {b['seconds']} | "
                          f"{b['problem'] or 'results back'} |")
    failed = any(b["problem"] for b in record["boots"])
    if record["mode"] == "functional":
        table = functional_table(out, record)
        body = ["## What runs on each kernel", "", *functional.lines(table)]
        errors = functional.errors(table)
        verdict = (f"{len(errors)} variant(s) in error" if errors
                   else "every variant runs or skips with its reason")
        failed = failed or bool(errors)
    else:
        analysis = timed.analyze(out, threshold)
        record["timed"] = timed.to_json(analysis)
        inside_write(out, record)
        body = ["## Timed, the boot as the unit", "", "```", *timed.lines(analysis, threshold),
                "```"]
        verdict = f"{len(analysis)} room(s) compared"
    text = "\n".join([*head, "## Boots", "", *boot_lines, "", *body, "",
                      f"Result: {verdict}.", ""])
    (out / "kernels.md").write_text(text)
    out_console.print(text, markup=False, highlight=False, soft_wrap=True)
    _say(f"results: {out}")
    return 1 if failed else 0


def functional_table(out: Path, record: dict[str, Any]) -> list[functional.Row]:
    """Every boot's rows (functional.rows), read from the run's files alone."""
    return [row for b in record["boots"] for row in functional.rows(_result(out, b))]


def _result(out: Path, b: dict[str, Any]) -> guest.BootResult:
    boot = plan.Boot(int(b["index"]), int(b["block"]), str(b["kernel"]), bool(b["control"]))
    result = guest.BootResult(boot, out / b["dir"], float(b["seconds"]), b["guest_kernel"],
                              b["rooms"], b["problem"])
    return result


def report_again(out: Path) -> int:
    """`bakeoff report DIR` of a kernel run: kernels.md from the run's files alone."""
    record = load(out)
    return _report(out, record, float(record.get("threshold", 0.02)))


def load(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / timed.KERNELS_JSON).read_text())
    return data
