"""The command line: list, run, report, compare, profile, doctor, new (and rooms' commands).

Each handler reads as a pipeline (parse -> validate -> run -> analyse -> export). Every
problem the user can fix surfaces as UsageError and is printed by main() as one line,
exit status 2, never a traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from bakeoff.cmd import definition as adhoc
from bakeoff.core import lazy
from bakeoff.core.errors import Interrupted, UsageError, one_line
from bakeoff.declare import registry
from bakeoff.declare.model import Benchmark, Profile, RunContext, RunRecord, RunSettings
from bakeoff.machine import host as hostmod
from bakeoff.plan.cases import MAX_TRIALS, PROFILES, check_request, plan_run, plans_from_record
from bakeoff.run import cleanup, interrupts
from bakeoff.store import results as store

app = typer.Typer(
    help="Head-to-head benchmarks of Linux systems mechanisms, with honest statistics.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)
# Piped into a log, rich would wrap tables at 80 columns; the case table needs more.
# markup=False: names, params, paths and error text come from outside, and '[...]' in them
# must print as it is, not be taken for rich markup. Colour is given with style= instead.
out_console = Console(width=None if Console().is_terminal else 160, markup=False)
err_console = Console(stderr=True, width=None if Console(stderr=True).is_terminal else 160,
                      markup=False)


def _context(build_dir: Path, scratch: Path, caps: dict[str, hostmod.Capability],
             facts: hostmod.HostFacts) -> RunContext:
    return RunContext(build_dir=build_dir, scratch_dir=scratch,
                      capabilities={k: c.available for k, c in caps.items()}, host=facts)


def _trials_label(p: Profile) -> str:
    """'10', or '5–10' under sequential allocation (5 each, up to 10 where the answer is open);
    "(the questions' up to 20)" where their cases get more (Profile.answer_trials), "3 where
    no question reads" where the others get fewer (Profile.other_trials)."""
    low = p.min_trials
    text = f"{low}–{p.trials}" if low is not None and low < p.trials else str(p.trials)
    notes = []
    if p.answer_trials is not None and p.answer_trials > p.trials:
        notes.append(f"the questions' up to {p.answer_trials}")
    if p.other_trials is not None:
        notes.append(f"{p.other_trials} where no question reads")
    return f"{text} trials" + (f" ({'; '.join(notes)})" if notes else "")


@app.command("list")
def cmd_list() -> None:
    """List benchmarks, their variants, params and profiles, and whether this machine can run each."""
    caps = hostmod.capabilities()
    for bench in registry.discover().values():
        out_console.print(Text(bench.name, style="bold") + Text(f" — {bench.title}"))
        out_console.print(f"  {bench.summary}", highlight=False)
        table = Table("variant", "runs here?", "what it is", box=None, pad_edge=False)
        for v in bench.variants:
            missing = [caps[r] for r in (*bench.requires, *v.requires) if not caps[r].available]
            ok = "yes" if not missing else "no: " + "; ".join(
                f"needs {c.name} ({c.detail}); fix: {c.fix}" for c in missing)
            name = f"{v.name} (baseline)" if v.baseline else v.name
            table.add_row(name, ok, v.description)
        out_console.print(table)
        params = Table("param", "unit", "quick", "default", "full", "meaning", box=None,
                       pad_edge=False)
        for p in bench.params:
            params.add_row(p.name, p.unit or p.kind,
                           *(", ".join(p.label(x) for x in bench.profiles[pr].params[p.name])
                             for pr in PROFILES), p.description)
        out_console.print(params)
        prof = ", ".join(f"{n}: {_trials_label(bench.profiles[n])} × "
                         f"{bench.profiles[n].samples} samples" for n in PROFILES)
        out_console.print(f"  profiles — {prof}\n", highlight=False)



@app.command("run")
def cmd_run(
    names: Annotated[list[str] | None, typer.Argument(help="Benchmarks to run (default: all).")] = None,
    profile: Annotated[str, typer.Option(help="quick | default | full")] = "default",
    variant: Annotated[list[str] | None, typer.Option(
        help="Only these variants (repeatable); the baseline always runs.")] = None,
    param: Annotated[list[str] | None, typer.Option(
        help="Sweep NAME over V1,V2,... instead of the profile's values (repeatable).")] = None,
    trials: Annotated[int | None, typer.Option(help="Measured trials per case.")] = None,
    samples: Annotated[int | None, typer.Option(help="Samples per trial.")] = None,
    out: Annotated[Path | None, typer.Option(
        help="Results directory (default: results/<time>-<names>).")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for the trial order and bootstrap.")] = None,
    threshold: Annotated[float, typer.Option(
        help="Smallest difference a verdict calls faster/slower, in %.")] = 2.0,
    target_ci: Annotated[float | None, typer.Option(
        help="Add rounds until every case's median CI half-width is within PCT % of it.")] = None,
    max_trials: Annotated[int | None, typer.Option(
        help="With --target-ci: at most this many trials per case (default 50).")] = None,
    time_budget: Annotated[float | None, typer.Option(
        help="Stop starting trials once this many seconds are used (one trial over, at most).")]
        = None,
    resume: Annotated[Path | None, typer.Option(
        help="Finish an interrupted run in DIR, without repeating its finished trials.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only failures and the result.")] = False,
    pin: Annotated[bool, typer.Option(help="Pin the measured program to its own CPU.")] = True,
) -> None:
    """Run benchmarks and write results.json, samples.csv, report.html, report.md and
    details.md."""
    cleanup.mark_run()
    if resume is not None:
        given = [flag for flag, value in (
            ("NAMES", names), ("--profile", profile != "default"), ("--variant", variant),
            ("--param", param), ("--trials", trials), ("--samples", samples), ("--out", out),
            ("--seed", seed), ("--threshold", threshold != 2.0), ("--target-ci", target_ci),
            ("--max-trials", max_trials), ("--time-budget", time_budget))
            if value is not None and value is not False]  # --trials 0 is given too
        if given:
            raise UsageError(f"--resume goes on as the run was started; drop {', '.join(given)}")
        run, run_dir = _resume(resume, quiet)
    else:
        check_seed(seed)
        settings = _settings(threshold, target_ci, max_trials, time_budget, pin)
        run, run_dir = _start(registry.select(names or []), profile, variant or [], param or [],
                              trials, samples, out, seed, settings, quiet)
    _report_run(run, run_dir, quiet)
    if _say_failed(run):
        raise typer.Exit(1)


def check_seed(seed: int | None) -> None:
    if seed is not None and seed < 0:
        raise UsageError(f"--seed {seed}: a seed is a whole number of 0 or more, e.g. --seed 11")


def _report_run(run: RunRecord, run_dir: Path, quiet: bool) -> Any:
    """The reports of a measured run; returns its analysis."""
    # Every trial is measured and saved; a signal from here on stops the reports, not the run.
    interrupts.tell(lambda: f"the run is complete ({len(run.trials)} trials saved in "
                    f"{run_dir}); `bakeoff report {run_dir}` writes the reports")
    interrupts.checkpoint("saved")
    analysis = _export(run, run_dir, quiet)
    interrupts.tell(lambda: f"the run is complete and its reports are written in {run_dir}")
    return analysis


def _say_failed(run: RunRecord) -> bool:
    failed = [t for t in run.trials if not t.ok]
    if failed:
        err_console.print(Text(f"{len(failed)} trial(s) failed", style="red")
                          + Text("; see the report"))
    return bool(failed)


def _settings(threshold: float, target_ci: float | None, max_trials: int | None,
              time_budget: float | None, pin: bool,
              target_ratio_ci: float | None = None) -> RunSettings:
    if not 0 <= threshold < 100:
        raise UsageError("--threshold is a percentage from 0 to 100, e.g. --threshold 2")
    if target_ci is not None and not 0 < target_ci < 100:
        raise UsageError("--target-ci is a percentage above 0, e.g. --target-ci 1")
    if target_ratio_ci is not None and not 0 < target_ratio_ci < 100:
        raise UsageError("--target-ratio-ci is a percentage above 0, e.g. --target-ratio-ci 4")
    if max_trials is not None and max_trials < 2:
        raise UsageError("--max-trials must be at least 2, e.g. --max-trials 40")
    if max_trials is not None and max_trials > MAX_TRIALS:
        raise UsageError(f"--max-trials {max_trials} is too many; give at most {MAX_TRIALS:,}, "
                         "e.g. --max-trials 40")
    if max_trials is not None and target_ci is None and target_ratio_ci is None:
        raise UsageError("--max-trials goes with --target-ci; for a fixed count use --trials")
    # `not x > 0` refuses NaN too; an infinite budget is no budget: leave the option out.
    if time_budget is not None and not (time_budget > 0 and math.isfinite(time_budget)):
        raise UsageError("--time-budget is a number of seconds above 0, e.g. --time-budget 300")
    return RunSettings(threshold=threshold / 100,
                       target_ci=None if target_ci is None else target_ci / 100,
                       max_trials=max_trials, time_budget_s=time_budget, pin=pin,
                       target_ratio_ci=None if target_ratio_ci is None
                       else target_ratio_ci / 100)


def _start(benches: list[Benchmark], profile: str, variants: list[str], params: list[str],
           trials: int | None, samples: int | None, out: Path | None, seed: int | None,
           settings: RunSettings, quiet: bool) -> tuple[RunRecord, Path]:
    build_dir = registry.build_dir()
    # Bad input answers at once: before the host is probed (a quarter second) and numpy loads.
    check_request(benches, profile, variants, params, trials, samples)
    with lazy.signals_held():
        from bakeoff.run.runner import RunOptions, measure, new_run

    caps = hostmod.capabilities()
    facts = hostmod.facts(build_dir)
    scratch = Path(tempfile.mkdtemp(prefix=f"bakeoff-{os.getpid()}-"))  # mode 0700
    try:
        ctx = _context(build_dir, scratch, caps, facts)
        plans = plan_run(benches, profile, variants, params, trials, samples, caps, ctx)
        if not any(p.cases for p in plans):
            skips = [s.reason for p in plans for s in p.skips]
            reasons = "; ".join(s.reason for p in plans for s in p.skips[:1])
            # Cases that apply nowhere want other params; cases this host lacks, the doctor.
            fix = ("choose --param values that apply (see bakeoff list)"
                   if skips and all(r.startswith("not applicable") for r in skips)
                   else "see bakeoff doctor")
            raise UsageError(f"nothing this machine can run ({reasons or 'no cases'}); {fix}")
        opts = RunOptions(out=out, results_root=registry.REPO_ROOT / "results",
                          build_dir=build_dir, seed=seed, quiet=quiet,
                          argv=["bakeoff", *sys.argv[1:]], profile=profile, settings=settings)
        run, run_dir = new_run(plans, opts, facts, err_console)
        # After new_run: a bad --out is refused (exit 2) before anything is swept.
        _sweep_dead_runs(quiet)
        measure(run, run_dir, plans, err_console, ctx, quiet, earlier_runs=opts.results_root)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return run, run_dir


def _resume(run_dir: Path, quiet: bool) -> tuple[RunRecord, Path]:
    run = store.load(run_dir)
    if run.status == "complete":
        raise UsageError(f"{run_dir}: this run is complete; nothing to resume "
                         "(bakeoff report regenerates its reports)")
    # A benchmark built at run time (bakeoff cmd) comes back from its recorded definition.
    plans = plans_from_record(run, {**registry.discover(), **adhoc.from_record(run)})
    with lazy.signals_held():
        from bakeoff.run.runner import measure  # numpy: only once the input is good

    _sweep_dead_runs(quiet)
    build_dir = registry.build_dir()
    caps = hostmod.capabilities()
    scratch = Path(tempfile.mkdtemp(prefix=f"bakeoff-{os.getpid()}-"))
    try:
        ctx = _context(build_dir, scratch, caps, hostmod.HostFacts.from_json(run.host))
        param_names = list(dict.fromkeys(p.name for pl in plans for p in pl.benchmark.params))
        store.rewrite_samples_csv(run, run_dir, param_names)
        run.status = "running"
        # One file again before going on: the journal then holds this session's trials only.
        run.schema_version = store.SCHEMA_VERSION
        store.finish(run, run_dir)
        measure(run, run_dir, plans, err_console, ctx, quiet,
                earlier_runs=registry.REPO_ROOT / "results")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return run, run_dir


def _sweep_dead_runs(quiet: bool) -> None:
    """Before measuring: what runs killed before they could clean up left (a cgroup, a
    tracing daemon, a temp directory), removed, one note each (bakeoff/run/cleanup.py)."""
    for line in cleanup.sweep(registry.discover().values()):
        if not quiet:
            err_console.print(Text("note: ", style="cyan") + Text(line), soft_wrap=True)


def _export(run: RunRecord, run_dir: Path, quiet: bool) -> Any:
    """The reports, the terminal summary; returns the analysis."""
    analysis, paths = _write_exports(run, run_dir)
    if not quiet:
        with lazy.signals_held():
            from bakeoff.report.terminal import print_summary
        interrupts.checkpoint("summary")
        print_summary(run, analysis, out_console)
    for p in [run_dir / store.RESULTS_JSON, run_dir / store.SAMPLES_CSV, *paths]:
        if p.exists():
            out_console.print(f"wrote {p}", highlight=False)
    return analysis


def _write_exports(run: RunRecord, run_dir: Path) -> tuple[Any, list[Path]]:
    """The analysis, and the reports and legacy CSVs it wrote into run_dir."""
    # Imported here, with interrupts held while they load (bakeoff/core/lazy.py says why).
    with lazy.signals_held():
        from bakeoff.analysis.within_run import analyze
        from bakeoff.report import write_reports

    interrupts.checkpoint("analysis")
    analysis = analyze(run, threshold=run.settings.threshold)
    paths = write_reports(run, analysis, run_dir)  # a checkpoint before each file
    interrupts.checkpoint("report:csv")
    paths += store.write_legacy_csvs(run, run_dir)
    return analysis, paths


@app.command("report")
def cmd_report(
    run_dirs: Annotated[list[Path], typer.Argument(
        help="A results directory; a fleet directory; or several hosts' results directories.")],
    out: Annotated[Path | None, typer.Option(
        help="Where the report across hosts goes (default: the fleet directory, or "
             "results/<time>-hosts); with --redact, where the redacted copy goes (default: "
             "DIR-redacted).")] = None,
    redact: Annotated[bool, typer.Option(
        "--redact", help="Write a copy for sharing: host names, user names, home paths and "
                         "fleet addresses replaced by host-1, user-1, ~, addr-1 (DIR is not "
                         "touched; every file is checked before it is kept; a fleet's copy "
                         "holds every host's results and reports again).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Regenerate a run's reports from results.json alone; or one report across hosts."""
    from bakeoff.fleet.record import is_fleet_dir

    if len(run_dirs) == 1 and not is_fleet_dir(run_dirs[0]):
        if redact:
            _export_redacted(run_dirs[0], out)
            return
        if out is not None:
            raise UsageError("--out is for a report across hosts or a redacted copy; a run's "
                             "reports go in its own directory")
        run = store.load(run_dirs[0])
        _export(run, run_dirs[0], quiet)
        return
    _export_hosts(run_dirs, out, redact)


def _redacted_out(sources: list[Path], out: Path | None) -> Path:
    """Where a redacted copy goes: new or empty, and outside every source directory."""
    first = sources[0].resolve()
    target = (out if out is not None else first.with_name(f"{first.name}-redacted")).resolve()
    for src in (s.resolve() for s in sources):
        if target == src or src in target.parents:
            raise UsageError(f"--out {target} is inside {src}, which --redact must not change; "
                             f"give --out a directory elsewhere")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"{target} exists and is not empty; give --out a new directory for "
                         "the redacted copy")
    return target


@contextlib.contextmanager
def _removed_unless_checked(target: Path) -> Iterator[None]:
    """The redacted copy is kept whole and checked, or not at all (a failure, a leak, a
    signal): half a copy could hold what the rest of it redacted."""
    existed = target.exists()
    try:
        yield
    except BaseException:
        # Held: a second Ctrl-C must not stop the removal half way (it arrives after).
        with lazy.signals_held():
            shutil.rmtree(target, ignore_errors=True)
            if existed:
                target.mkdir(exist_ok=True)
        raise


# The kinds of original as the messages name them, singular and plural.
_KIND_WORDS = {"host": ("host name", "host names"), "user": ("user name", "user names"),
               "address": ("address", "addresses"), "home": ("home path", "home paths")}


def _check_redacted(redactor: Any, target: Path) -> None:
    """Every file of the copy read for every original (the redactor's own token rule);
    the error names the kind and the file, never the original."""
    from bakeoff.report import redact

    found = redact.leaks(redactor, target)
    if found:
        kinds = " and ".join(_KIND_WORDS[k][0] for k in sorted({kind for kind, _ in found}))
        files = ", ".join(sorted({str(p.relative_to(target)) for _, p in found}))
        raise UsageError(f"redaction left a {kinds} in {files}, in a form it does not rewrite; "
                         "nothing of the copy was kept: remove it from those files by hand "
                         "before sharing them")


def _say_redacted(redactor: Any, target: Path, left_out: list[str]) -> None:
    """After the check: each file of the copy, what was left out, and last what was
    replaced, by count (the originals are never printed)."""
    for p in sorted(p for p in target.rglob("*") if p.is_file()):
        out_console.print(f"wrote {p}", highlight=False)
    for name in left_out:
        # bakeoff writes no sub-directory into a run's; one there is the user's own.
        why = ("a directory (only the run's own files are copied)" if name.endswith("/")
               else "not a text file, so not checked for names")
        out_console.print(f"left out {name}: {why}", highlight=False)
    said = ", ".join(f"{n} {_KIND_WORDS[k][n != 1]}" for k, n in redactor.counts().items() if n)
    out_console.print(f"redacted {said or 'nothing (no host, user or home path found)'} in "
                      f"{target}; kernel, CPU and the other host facts are kept",
                      highlight=False, soft_wrap=True)


def _load_redacted(target: Path) -> RunRecord:
    """The copy's record, which must load: a host or user named like one of results.json's
    own fields (a host called "host") is replaced there too, and the record breaks. The
    store's message would quote that field, the original, so it is not passed on."""
    try:
        return store.load(target)
    except UsageError:
        raise UsageError("the redacted results.json does not load: a host or user name is also "
                         "one of its field names, so replacing it broke the record; nothing of "
                         "the copy was kept; share the reports with the names removed by "
                         "hand") from None


def _export_redacted(run_dir: Path, out: Path | None) -> None:
    from bakeoff.report import redact

    store.load(run_dir)  # a directory that is not a run is refused before anything is made
    data = store.load_json(run_dir)
    redactor = redact.for_run(data)
    target = _redacted_out([run_dir], out)
    with _removed_unless_checked(target):
        left_out = redact.copy_run(run_dir, target, data, redactor, store.write_atomic,
                                   skip=redact.REGENERATED)
        # The reports again, from the redacted record: tables and charts say what it says.
        _write_exports(_load_redacted(target), target)
        _check_redacted(redactor, target)
    _say_redacted(redactor, target, left_out)


def _export_hosts(run_dirs: list[Path], out: Path | None, redact: bool = False) -> None:
    with lazy.signals_held():
        from bakeoff.analysis.across_hosts import analyze_hosts
        from bakeoff.report.across_hosts import terminal_lines, write_host_reports

    analysis = analyze_hosts(run_dirs)
    if redact:
        target = _redacted_out(run_dirs, out)
        redactor = _hosts_redactor(analysis, run_dirs[0] if analysis.fleet else None)
        with _removed_unless_checked(target):
            copies, left_out = _copy_hosts_redacted(analysis, run_dirs, target, redactor)
            # The report across hosts from the copies, as `bakeoff report` on the copy gives
            # it: the figures are the same (same records, same seeds), the names redacted.
            write_host_reports(analyze_hosts(copies), target, postprocess=redactor.hook)
            _check_redacted(redactor, target)
        _say_redacted(redactor, target, left_out)
        return
    if out is None:
        from datetime import UTC, datetime
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        out = run_dirs[0] if analysis.fleet else registry.REPO_ROOT / "results" / f"{stamp}-hosts"
    try:
        paths = write_host_reports(analysis, out)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {out}: {exc.strerror or exc} "
                         "(choose a writable --out)") from None
    for text, style in terminal_lines(analysis):
        out_console.print(Text(text, style=style), highlight=False, soft_wrap=True)
    for p in paths:
        out_console.print(f"wrote {p}", highlight=False)


def _copy_hosts_redacted(analysis: Any, run_dirs: list[Path], target: Path,
                         redactor: Any) -> tuple[list[Path], list[str]]:
    """Every host's results, redacted, under target/hosts/<host-N>/, each with its own
    reports written again from its redacted record; for a fleet directory its fleet.json and
    other files too, so the copy is a fleet directory `bakeoff report` reads. Returns what
    to report across (the copy of the fleet, or of each run) and what was left out."""
    from bakeoff.fleet.record import HOSTS_DIR
    from bakeoff.report import redact

    left_out: list[str] = []
    if analysis.fleet is not None:
        fleet_dir = run_dirs[0]
        left_out += redact.copy_fleet_files(fleet_dir, target, redactor, store.write_atomic,
                                            HOSTS_DIR)
        src = fleet_dir / HOSTS_DIR
        for host_dir in sorted(p for p in src.iterdir() if p.is_dir()) if src.is_dir() else []:
            dest = target / HOSTS_DIR / redactor.text(host_dir.name)
            left_out += _copy_run_redacted(host_dir, dest, redactor)
        return [target], left_out
    copies = []
    for h in analysis.hosts:
        # A label ("vm (20261126-…)" for two runs of one host) as a directory name.
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", redactor.text(h.label)).strip("-") or "host"
        dest, n = target / HOSTS_DIR / name, 1
        while dest.exists():  # two labels that read alike once made a directory name
            n += 1
            dest = target / HOSTS_DIR / f"{name}-{n}"
        left_out += _copy_run_redacted(h.run_dir, dest, redactor)
        copies.append(dest)
    return copies, left_out


def _copy_run_redacted(run_dir: Path, dest: Path, redactor: Any) -> list[str]:
    """One host's results directory, redacted, its reports written again from the redacted
    record; a host that sent back no record has its text files copied. Returns what was
    left out, as paths within the copy."""
    from bakeoff.report import redact

    where = dest.relative_to(dest.parent.parent)
    if not (run_dir / store.RESULTS_JSON).is_file():
        left = redact.copy_text_files(run_dir, dest, redactor, store.write_atomic, skip=())
    else:
        left = redact.copy_run(run_dir, dest, store.load_json(run_dir), redactor,
                               store.write_atomic, skip=redact.REGENERATED)
        _write_exports(_load_redacted(dest), dest)
    return [f"{where}/{redactor.text(name)}" for name in left]


def _hosts_redactor(analysis: Any, fleet_dir: Path | None = None) -> Any:
    """Every host's label and recorded hostname, every host of the fleet (those that sent
    nothing back are in its table too), the addresses, the people."""
    import json

    from bakeoff.fleet.driver import inventory_addresses
    from bakeoff.fleet.record import HOSTS_DIR
    from bakeoff.report import redact

    redactor = redact.Redactor()
    for h in analysis.hosts:  # host-1, host-2… in the report's order of hosts
        redactor.add("host", h.label)
    if analysis.fleet is not None:
        for name in analysis.fleet.hosts:  # then the rest, in the fleet record's order
            redactor.add("host", name)
    for h in analysis.hosts:  # the machine's own name is the same host, the same host-N
        redact.add_hostname(redactor, h.run.host.get("hostname"), same_as=h.label)
    texts = [json.dumps(store.run_to_json(h.run)) for h in analysis.hosts]
    if analysis.fleet is not None:
        for address in inventory_addresses(Path(analysis.fleet.inventory)):
            redactor.add("address", address)
        texts.append(json.dumps(dataclasses.asdict(analysis.fleet)))
        # ansible.log, events.jsonl, playbook-vars.json: copied too, so searched too.
        if fleet_dir is not None:
            texts += redact.fleet_texts(fleet_dir)
            # A host's directory the record no longer names (a host renamed in the
            # inventory since) is copied too: its name is a host name as well.
            hosts_dir = fleet_dir / HOSTS_DIR
            for p in sorted(hosts_dir.iterdir()) if hosts_dir.is_dir() else []:
                redactor.add("host", p.name)
    redact.add_addresses(redactor, texts)  # and those of hosts the inventory no longer has
    redact.add_people(redactor, texts)
    return redactor


@app.command("compare")
def cmd_compare(
    old: Annotated[Path, typer.Argument(help="Results directory before the change.")],
    new: Annotated[Path, typer.Argument(help="Results directory after the change.")],
    threshold: Annotated[float, typer.Option(
        help="Smallest difference a verdict calls faster/slower, in %.")] = 2.0,
    fail_on_regression: Annotated[float | None, typer.Option(
        help="Exit 1 when a case's whole CI is more than PCT % slower (never on a change "
             "that cannot be told from drift).")] = None,
    format: Annotated[str, typer.Option(help="text | md")] = "text",
    more_old: Annotated[list[Path] | None, typer.Option(
        "--old", help="Another run before the change (repeatable): with two or more runs a "
        "side, each run is one observation, so run-to-run drift is in the CI.")] = None,
    more_new: Annotated[list[Path] | None, typer.Option(
        "--new", help="Another run after the change (repeatable).")] = None,
    rerun: Annotated[bool, typer.Option(
        "--rerun", help="Two `bakeoff cmd` runs: measure their commands again, old and new "
        "interleaved in one run, and compare within it.")] = False,
    out: Annotated[Path | None, typer.Option(
        help="With --rerun: the rerun's results directory (default: results/<time>-cmd).")]
        = None,
    target_ratio_ci: Annotated[float | None, typer.Option(
        help="With --rerun: measure until each new/old ratio's CI half-width is within PCT % "
             "(default 3: a 10% change is then called, docs/STATISTICS.md).")] = None,
) -> None:
    """Compare runs case by case: ratio new/old with a CI that allows for run-to-run drift."""
    if format not in ("text", "md"):
        raise UsageError(f"--format '{format}' is unknown; use text or md")
    if not 0 <= threshold < 100:
        raise UsageError("--threshold is a percentage from 0 to 100, e.g. --threshold 2")
    if fail_on_regression is not None and not 0 <= fail_on_regression < math.inf:
        raise UsageError("--fail-on-regression is a percentage of 0 or more, e.g. 5")
    olds, news = [old, *(more_old or [])], [new, *(more_new or [])]
    if len({p.resolve() for p in olds}) < len(olds) or len({p.resolve() for p in news}) < len(news):
        raise UsageError("a run directory is given twice on one side; give each run once")
    if rerun and (more_old or more_new):
        raise UsageError("--rerun measures one old and one new run again; drop --old/--new")
    for given, name in ((out, "--out"), (target_ratio_ci, "--target-ratio-ci")):
        if given is not None and not rerun:
            raise UsageError(f"{name} goes with --rerun (the run it measures); add --rerun or "
                             f"drop {name}")
    before, after = [store.load(p) for p in olds], [store.load(p) for p in news]
    with lazy.signals_held():  # imported only when comparing (bakeoff/core/lazy.py says why)
        from bakeoff.analysis.across_runs import compare_runs
        from bakeoff.report.compare import print_comparison, render_comparison_markdown
        from bakeoff.stats import drift

    if rerun:
        again = _rerun(before[0], after[0], threshold, out, target_ratio_ci,
                       quiet=format == "md")
        cmp = compare_runs(*again, threshold / 100, interleaved=True)
    else:
        cmp = compare_runs(before, after, threshold / 100, drift.load_spread())
    if not cmp.changes:
        raise UsageError(f"{old} and {new} share no measured case; compare runs of the same "
                         "benchmarks and params")
    if format == "md":
        sys.stdout.write(render_comparison_markdown(cmp, threshold / 100))
    else:
        print_comparison(cmp, out_console, threshold / 100)
        _say_what_differs(cmp, threshold)
    if fail_on_regression is not None:
        _gate(cmp, fail_on_regression)


def _rerun(old: RunRecord, new: RunRecord, threshold: float, out: Path | None,
           target_ratio_ci: float | None, quiet: bool) -> tuple[RunRecord, RunRecord]:
    """`compare --rerun`: one `cmd` run of both runs' commands, split back into the sides."""
    from bakeoff.cmd import definition as adhoc
    from bakeoff.cmd import rerun

    target = rerun.TARGET_RATIO_CI_PCT if target_ratio_ci is None else target_ratio_ci

    defn, p = rerun.definition(old, new)
    adhoc.check(defn)
    # They come from results.json files: say what will run before it runs.
    for c in defn.commands:
        err_console.print(f"--rerun runs {c.name!r}: {c.command}", highlight=False,
                          soft_wrap=True)
    cleanup.mark_run()
    trials = max(int(str(p.get("trials", 10))), rerun.MIN_TRIALS)
    bench = adhoc.benchmark(defn, trials, int(str(p.get("samples", 10))),
                            int(str(p.get("warmup_samples", 1))),
                            int(str(p.get("warmup_trials", 1))),
                            float(str(p.get("timeout_s", 600))))
    settings = _settings(threshold, None, rerun.MAX_TRIALS, rerun.TIME_BUDGET_S, True, target)
    started = time.monotonic()
    run, run_dir = _start([bench], "default", [], [], None, None, out, None, settings, quiet)
    rounds = len({t.round for t in run.trials})
    err_console.print(
        f"--rerun measured {rounds} rounds of old and new in {time.monotonic() - started:.0f} s "
        f"(until each ratio's CI was within ±{target:g}%, at least {trials} "
        f"and at most {rerun.MAX_TRIALS} rounds, {rerun.TIME_BUDGET_S:g} s at most)",
        highlight=False)
    _report_run(run, run_dir, True)
    if _say_failed(run):
        raise typer.Exit(1)
    return rerun.split(run)


def _gate(cmp: Any, fail_on_regression: float) -> None:
    """--fail-on-regression: exit 1 on a regression told apart from drift; a change that
    cannot be told is named, with how to get a verdict, and does not fail."""
    fraction = fail_on_regression / 100
    worse = [c for c in cmp.changes if c.regressed_beyond(fraction)]
    for c in worse:
        err_console.print(
            f"regression: {c.case.key}: new/old = {c.ratio.ratio:.3f} "
            f"(95% CI {c.ratio.ci_low:.3f}–{c.ratio.ci_high:.3f}, {c.basis}), wholly beyond "
            f"{fail_on_regression:g}% slower", highlight=False)
    untold = [c for c in cmp.changes if not c.tellable and c.looks_beyond(fraction)]
    if untold:
        err_console.print(
            f"not failed: {len(untold)} case(s) read more than {fail_on_regression:g}% slower "
            "within one run a side (" + "; ".join(
                f"{c.case.key} {(c.ratio.ratio - 1) * 100:+.1f}%" for c in untold[:5])
            + ("; ..." if len(untold) > 5 else "") + "), which cannot be told from run-to-run "
            "drift; for a verdict run `bakeoff selftest` once on this host (it measures the "
            "drift), or give two or more runs a side (--old DIR --new DIR)",
            highlight=False, soft_wrap=True)
    if worse:
        raise typer.Exit(1)


@app.command("profile")
def cmd_profile(
    run_dir: Annotated[Path, typer.Argument(help="A results directory written by bakeoff run.")],
    case: Annotated[str, typer.Option(
        help="The case: 'variant=V,PARAM=VALUE,...' (params may be left out while one case "
             "still fits).")],
    benchmark: Annotated[str | None, typer.Option(
        help="The benchmark, when the run has several with such a case.")] = None,
    seconds: Annotated[float, typer.Option(
        help="Seconds of trials to sample per case (whole trials, lengthened to fill it).")]
        = 3.0,
    repeat: Annotated[int | None, typer.Option(
        help="Repeat the timed operation N times in each timed section (--profile-repeat; "
             "default: the room's profile_repeat; 1 profiles trials as measured).")] = None,
) -> None:
    """Where a case's time goes: the case and its baseline run again under perf record -g,
    through the room's own session and trial preparation; flame graphs (each, and the
    difference) go into the report. The run's trials are not touched."""
    cleanup.mark_run()
    if not (0 < seconds <= 600 and math.isfinite(seconds)):
        raise UsageError("--seconds is a number of seconds above 0 and up to 600, e.g. "
                         "--seconds 3")
    if repeat is not None and not 1 <= repeat <= 1_000_000:
        raise UsageError("--repeat is a whole number from 1 to 1000000, e.g. --repeat 1")
    run = store.load(run_dir)
    with lazy.signals_held():
        from bakeoff.perf.record import ProfileFailed, find_case, profile_case
        from bakeoff.plan.cases import plans_from_record as recorded_plans

    plan, found = find_case(recorded_plans(run, {**registry.discover(),
                                                 **adhoc.from_record(run)}), case, benchmark)
    _sweep_dead_runs(quiet=False)
    try:
        if repeat not in (None, 1) and plan.benchmark.profile_repeat == 1:
            raise UsageError(f"--repeat: {plan.benchmark.name}'s program does not repeat its "
                             "operation (its spec declares no profile_repeat); leave --repeat out")
        pair = profile_case(run, run_dir, plan, found, seconds, repeat)
    except ProfileFailed as exc:
        print(f"bakeoff: error: {one_line(str(exc))}", file=sys.stderr)
        raise typer.Exit(1) from None
    interrupts.tell(lambda: f"the profile is saved in {run_dir}/profiles; `bakeoff report "
                    f"{run_dir}` draws it")
    from bakeoff.perf import flamegraph
    from bakeoff.perf import store as profile_store

    for cp in (pair.case, pair.baseline):
        if cp is None:
            continue
        path = run_dir / profile_store.PROFILES_DIR / cp.file
        top = ", ".join(f"{frame} {share:.0%}" for frame, share in
                        flamegraph.top_frames(profile_store.load_folded(path), n=3))
        out_console.print(f"{cp.case.key}: {cp.samples} samples of {pair.event} in "
                          f"{cp.trials} trial(s), {cp.wall_s:.1f} s; most self time: {top}",
                          highlight=False, soft_wrap=True)
        note = profile_store.timed_share_note(cp)
        if note:
            out_console.print(f"{cp.case.key}: {note}", highlight=False, soft_wrap=True)
        out_console.print(f"wrote {path}", highlight=False)
    for p in _write_exports(run, run_dir)[1]:
        out_console.print(f"wrote {p}", highlight=False)


fleet_app = typer.Typer(help="Run a bakeoff on many hosts through Ansible (docs/FLEET.md).",
                        no_args_is_help=True)
app.add_typer(fleet_app, name="fleet")


@fleet_app.command("run")
def cmd_fleet_run(
    names: Annotated[list[str] | None, typer.Argument(help="Benchmarks to run (default: all).")] = None,
    inventory: Annotated[Path | None, typer.Option(
        "--inventory", "-i", help="Ansible inventory of the hosts.")] = None,
    profile: Annotated[str, typer.Option(help="quick | default | full")] = "default",
    variant: Annotated[list[str] | None, typer.Option(help="As for bakeoff run.")] = None,
    param: Annotated[list[str] | None, typer.Option(help="As for bakeoff run.")] = None,
    trials: Annotated[int | None, typer.Option(help="As for bakeoff run.")] = None,
    samples: Annotated[int | None, typer.Option(help="As for bakeoff run.")] = None,
    seed: Annotated[int | None, typer.Option(
        help="The seed every host runs with (default: one chosen here for all).")] = None,
    threshold: Annotated[float, typer.Option(help="As for bakeoff run.")] = 2.0,
    target_ci: Annotated[float | None, typer.Option(help="As for bakeoff run.")] = None,
    max_trials: Annotated[int | None, typer.Option(help="As for bakeoff run.")] = None,
    time_budget: Annotated[float | None, typer.Option(help="As for bakeoff run.")] = None,
    pin: Annotated[bool, typer.Option(help="As for bakeoff run.")] = True,
    serial: Annotated[bool, typer.Option(
        "--serial", help="One host at a time (hosts that share hardware).")] = False,
    forks: Annotated[int, typer.Option(help="Hosts worked on at once.")] = 20,
    host_timeout: Annotated[int, typer.Option(
        help="Seconds a host's bakeoff run may take.")] = 6 * 3600,
    connect_timeout: Annotated[int, typer.Option(help="SSH connect timeout, seconds.")] = 10,
    out: Annotated[Path | None, typer.Option(
        help="Fleet directory (default: results/<time>-fleet-<names>).")] = None,
    wheelhouse: Annotated[bool, typer.Option(
        help="Push wheels of the pinned Python deps (hosts need no PyPI).")] = True,
    resume: Annotated[Path | None, typer.Option(
        help="Finish only what a fleet run in DIR left undone.")] = None,
) -> None:
    """Push the committed checkout to every host, set it up, run, fetch; one record per host."""
    from bakeoff.fleet.command import FleetRequest, run_fleet

    settings = _settings(threshold, target_ci, max_trials, time_budget, pin)
    options: list[str] = []
    if threshold != 2.0:
        options += ["--threshold", f"{threshold:g}"]
    if settings.target_ci is not None:
        options += ["--target-ci", f"{target_ci:g}"]
    if max_trials is not None:
        options += ["--max-trials", str(max_trials)]
    if time_budget is not None:
        options += ["--time-budget", f"{time_budget:g}"]
    if not pin:
        options += ["--no-pin"]
    req = FleetRequest(
        inventory=inventory, names=names or [], profile=profile, variants=variant or [],
        params=param or [], trials=trials, samples=samples, seed=seed, run_options=options,
        serial=serial, forks=forks, host_timeout_s=host_timeout,
        connect_timeout_s=connect_timeout, out=out, wheelhouse=wheelhouse, resume=resume)
    # The report across hosts at the end, as `bakeoff run` writes its own.
    code = run_fleet(req, out_console, err_console,
                     report=lambda fleet_dir: _export_hosts([fleet_dir], None))
    if code:
        raise typer.Exit(code)


def _say_what_differs(cmp: Any, threshold: float) -> None:
    """The answer in two lines: which cases differ beyond the threshold, and, for runs from
    two hosts, which host facts differ (kernel, CPU, mitigations, ...)."""
    differ = [c for c in cmp.changes if c.verdict in ("faster", "slower")]
    untold = sum(1 for c in cmp.changes if not c.tellable)
    if untold:
        out_console.print(f"{untold} of {len(cmp.changes)} cases: can't tell a change from "
                          "run-to-run drift with one run a side (see CIs: above)",
                          highlight=False, soft_wrap=True)
    out_console.print(f"{len(differ)} of {len(cmp.changes)} cases differ beyond ±{threshold:g}%"
                      + (": " + "; ".join(f"{c.case.key} {(c.ratio.ratio - 1) * 100:+.1f}%"
                                          for c in differ) if differ else ""),
                      highlight=False, soft_wrap=True)
    from bakeoff.analysis.across_hosts import HostRun, fact_rows
    from bakeoff.report.facts import fact_text

    rows = [r for r in fact_rows([HostRun("old", Path(), cmp.old, None),  # type: ignore[arg-type]
                                  HostRun("new", Path(), cmp.new, None)])  # type: ignore[arg-type]
            if r.differs]
    if cmp.old.host.get("hostname") != cmp.new.host.get("hostname") or rows:
        shown = "; ".join(f"{r.fact}: {r.values['old']} → {r.values['new']}" for r in rows[:12])
        more = f" and {len(rows) - 12} more" if len(rows) > 12 else ""
        out_console.print(f"host facts that differ (old → new): {shown or 'none'}{more}"
                          + ("" if shown else f" ({fact_text(cmp.old.host.get('hostname'))} → "
                             f"{fact_text(cmp.new.host.get('hostname'))})"),
                          highlight=False, soft_wrap=True)


@app.command("doctor")
def cmd_doctor(
    clean: Annotated[bool, typer.Option(
        "--cleanup", help="Only remove what killed runs left behind (cgroups, tracing "
        "sessions and daemons, processes, temp directories) and say what.")] = False,
) -> None:
    """What this machine can run, its facts, and what will make numbers noisy."""
    if clean:
        removed = cleanup.sweep(registry.discover().values())
        for line in removed:
            out_console.print(line, highlight=False, soft_wrap=True)
        if not removed:
            out_console.print("nothing to clean up")
        return
    caps = hostmod.capabilities()
    table = Table("capability", "available", "detail", "fix")
    for c in caps.values():
        table.add_row(c.name, Text("yes", style="green") if c.available else Text("no", style="red"),
                      c.detail, c.fix if not c.available else "")
    out_console.print(table)
    facts = hostmod.facts(registry.build_dir())
    ft = Table("host fact", "value")
    for k, v in facts.to_json().items():
        ft.add_row(k, str(v))
    out_console.print(ft)
    for w in hostmod.noise_warnings(facts):
        out_console.print(Text("warning: ", style="yellow") + Text(w))


@app.command("new")
def cmd_new(
    name: Annotated[str, typer.Argument(help="The benchmark's name, e.g. ipc-ping-pong; its "
                                        "folder is benchmarks/ipc_ping_pong.")],
    title: Annotated[str | None, typer.Option(help="One line for the report's heading.")] = None,
) -> None:
    """Write a room skeleton that builds, runs and passes the conformance test as it is."""
    from bakeoff.declare import scaffold  # only this command needs it

    room = scaffold.new_room(name, title)
    out_console.print(f"wrote {room}/: {', '.join(sorted(p.name for p in room.iterdir()))}",
                      highlight=False, soft_wrap=True)
    out_console.print(f"next: make -C {room.parent} && bakeoff run {name} --profile quick; "
                      "docs/ADDING-A-BENCHMARK.md says what to change", highlight=False,
                      soft_wrap=True)


def _room_commands() -> dict[str, tuple[str, Callable[[list[str]], int]]]:
    """Subcommands rooms add (Benchmark.commands): name -> (benchmark, function)."""
    return {name: (bench.name, func) for bench in registry.discover().values()
            for name, func in bench.commands.items()}


def _list_room_commands(commands: dict[str, tuple[str, Callable[[list[str]], int]]]) -> None:
    """Show room commands in --help; running them bypasses typer (see main)."""
    for name, (bench, func) in commands.items():
        summary = " ".join((func.__doc__ or "").strip().splitlines()[:1])
        app.command(name, help=f"From {bench}: {summary}",
                    context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
            lambda: None)


def main() -> None:
    # Until a run latches them (bakeoff/run/interrupts.py), SIGINT and SIGTERM stop bakeoff at
    # once: 130 or 143, no traceback; recorded too, in case Python drops the exception.
    for signum in interrupts.HANDLED:
        signal.signal(signum, interrupts.raise_now)
    try:
        commands = _room_commands()
        if len(sys.argv) > 1 and sys.argv[1] in commands:
            # A room's command parses its own arguments, untouched ("--" included), so that
            # `bakeoff sample -- CMD --help` reaches CMD as typed.
            sys.exit(commands[sys.argv[1]][1](sys.argv[2:]))
        _list_room_commands(commands)
        code = app(args=adhoc_cli.argv_for_typer(sys.argv)[1:], prog_name="bakeoff",
                   standalone_mode=False)
    except typer.TyperException as exc:
        # Typer's own parse errors (unknown option, bad type); it vendors click, and this is
        # the public base class of its usage errors.
        ctx = getattr(exc, "ctx", None)
        cmd = ctx.command_path if ctx is not None else "bakeoff"
        _fail(f"{exc.format_message()} (see {cmd} --help)")
    except UsageError as exc:
        _fail(str(exc))
    except Interrupted as exc:
        interrupts.exit(0, exc.signum)
    except (KeyboardInterrupt, typer.Abort):
        interrupts.exit(0, signal.SIGINT)
    except typer.Exit as exc:
        interrupts.exit(exc.exit_code)
    interrupts.exit(code if isinstance(code, int) else 0)


def _fail(message: str) -> None:
    print(f"bakeoff: error: {one_line(message)}", file=sys.stderr)
    interrupts.exit(2)


# Last: `bakeoff cmd` registers itself on `app` and uses the helpers above.
from bakeoff.cli import bisect as bisect_cli  # noqa: E402
from bakeoff.cli import cmd as adhoc_cli  # noqa: E402
from bakeoff.cli import history as _history_cli  # noqa: E402, F401 (registers `bakeoff history`)
from bakeoff.cli import selftest as selftest_cli  # noqa: E402

app.command("selftest")(selftest_cli.cmd_selftest)
app.command("bisect")(bisect_cli.cmd_bisect)
