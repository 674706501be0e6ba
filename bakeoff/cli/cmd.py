"""`bakeoff cmd 'COMMAND A' 'COMMAND B' ...`: compare commands as a benchmark built at run time.

Parse -> validate (every problem one line, exit 2, before anything runs) -> build the
benchmark (bakeoff/cmd/definition.py) -> the same start, measure, reports and comparison as
`bakeoff run` (bakeoff/app/runs.py) -> the hyperfine-style exports (bakeoff/cmd/export.py).
Flags follow hyperfine where it has one (-n, -r, -w, -s, -p, -c, -i, -P, -D, -L, -N,
--export-*); `--runs` is per trial here: each command runs trials x runs times in all.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from bakeoff.app.console import err_console, out_console
from bakeoff.app.request import RunRequest
from bakeoff.cli.options import Words, request_options
from bakeoff.cmd import definition as adhoc
from bakeoff.core.errors import UsageError

DEFAULT_TRIALS = 10
DEFAULT_RUNS = 10
DEFAULT_TIMEOUT_S = 600.0
_LIST_FLAGS = ("-L", "--parameter-list")
_LIST_SEP = "\x1f"  # between NAME and VALUES once -L's two arguments are folded into one
# Every RunRequest field is an option of `cmd` but those that choose rooms' cases; --samples
# is called --runs here (hyperfine's name).
WITHOUT = ("names", "profile", "variants", "params")


def fold_list_scans(argv: list[str]) -> list[str]:
    """`-L NAME A,B` (hyperfine's two-argument form, repeatable) as one argument typer can
    take: `--parameter-list NAME<US>A,B`. Left alone after `--`."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + argv[i:]
        if arg in _LIST_FLAGS:
            if i + 2 >= len(argv):
                raise UsageError(f"{arg} takes a name and values, e.g. {arg} n 1,2,4")
            out += ["--parameter-list", f"{argv[i + 1]}{_LIST_SEP}{argv[i + 2]}"]
            i += 3
            continue
        out.append(arg)
        i += 1
    return out


def _definition(commands: list[str], names: list[str], scan: tuple[str, str, str] | None,
                step: str | None, lists: list[str], shell: bool | None, shell_program: str,
                setup: str | None, prepare: str | None, cleanup_cmd: str | None,
                ignore_failure: bool, check_output: bool,
                instructions: int = 0) -> adhoc.Definition:
    if len(names) > len(commands):
        raise UsageError(f"{len(names)} --name for {len(commands)} command(s); give at most one "
                         "per command, in the same order")
    if step is not None and scan is None:
        raise UsageError("-D goes with -P NAME LOW HIGH; add the scan or drop -D")
    scans = []
    if scan is not None:
        scans.append(adhoc.range_scan(*scan, step))
    for item in lists:
        name, _, values = item.partition(_LIST_SEP)
        if not _:
            raise UsageError(f"--parameter-list {item!r}: give a name and values, e.g. -L n 1,2")
        scans.append(adhoc.list_scan(name, values))
    named = [*names, *commands[len(names):]]
    cmds = tuple(adhoc.Command(n, c) for n, c in zip(named, commands, strict=True))
    if shell is None:  # automatic: a shell for all as soon as one command needs it
        shell = any(adhoc.needs_shell(c) for c in commands)
    return adhoc.Definition(
        commands=cmds, scans=tuple(scans),
        shell=adhoc.shell_path(shell_program) if shell else None,
        setup=setup, prepare=prepare, cleanup=cleanup_cmd, ignore_failure=ignore_failure,
        check_output=check_output, instructions=instructions)


def _check_exports(paths: dict[str, Path | None]) -> None:
    for kind, path in paths.items():
        if path is None:
            continue
        if path.is_dir():
            raise UsageError(f"--export-{kind} {path}: is a directory; give a file name")
        if not path.parent.is_dir():
            raise UsageError(f"--export-{kind} {path}: {path.parent} is not a directory; "
                             "create it or choose another path")


@request_options(WITHOUT, words={
    "samples": Words(("--runs", "-r", "--samples"), f"Executions per trial (default {DEFAULT_RUNS})."),
    "trials": Words(help=f"Trials per command: fresh processes, interleaved (default "
                         f"{DEFAULT_TRIALS})."),
    "out": Words(help="Results directory (default: results/<time>-cmd)."),
    "seed": Words(help="Seed for the order and bootstrap."),
    "target_ci": Words(help="Add trials until every median's CI half-width is within PCT % of "
                            "it."),
    "target_ratio_ci": Words(help="Add trials until each command's ratio to the first has a CI "
                             "half-width within PCT % (the report's CI, paired by round): the "
                             "precision a verdict on a change of a few % needs; e.g. 4 for 10%."),
    "max_trials": Words(help="With --target-ci or --target-ratio-ci: at most this many trials "
                             "per command (default 50)."),
    "time_budget": Words(help="Stop starting trials once this many seconds are used."),
    "quiet": Words(help=""),
    "pin": Words(help="Pin the commands to the measured CPU."),
})
def cmd_cmd(
    request: RunRequest,
    commands: Annotated[list[str] | None, typer.Argument(
        help="Commands to compare; the first is the baseline. {NAME} takes a scan's values.")]
        = None,
    name: Annotated[list[str] | None, typer.Option(
        "--name", "-n", help="A name per command, in order (default: the command).")] = None,
    parameter_scan: Annotated[tuple[str, str, str] | None, typer.Option(
        "--parameter-scan", "-P", help="NAME LOW HIGH: {NAME} takes LOW, LOW+STEP, ..., HIGH.")]
        = None,
    parameter_step_size: Annotated[str | None, typer.Option(
        "--parameter-step-size", "-D", help="The step of -P (default 1).")] = None,
    parameter_list: Annotated[list[str] | None, typer.Option(
        "--parameter-list", "-L", help="NAME A,B,C: {NAME} takes each value (repeatable).")]
        = None,
    shell: Annotated[bool | None, typer.Option(
        "--shell/--no-shell", "-S/-N", help="Run commands through the shell, its start-up "
        "subtracted; default: only when a command uses shell syntax (a pipe, $, a glob...).")]
        = None,
    shell_program: Annotated[str, typer.Option(help="The shell.")] = adhoc.DEFAULT_SHELL,
    setup: Annotated[str | None, typer.Option(
        "--setup", "-s", help="Run once per trial, before its executions (untimed).")] = None,
    prepare: Annotated[str | None, typer.Option(
        "--prepare", "-p", help="Run before every execution (untimed).")] = None,
    cleanup_cmd: Annotated[str | None, typer.Option(
        "--cleanup", "-c", help="Run once per trial, after its executions (untimed).")] = None,
    ignore_failure: Annotated[bool, typer.Option(
        "--ignore-failure", "-i", help="Measure commands that exit non-zero.")] = False,
    check_output: Annotated[bool, typer.Option(
        "--check-output", help="Fail when the commands' outputs differ.")] = False,
    instructions: Annotated[int, typer.Option(
        "--instructions", help="Also count each command's user-space instructions under "
        "Valgrind's cachegrind, N executions per trial: metric `instructions`, which load does "
        "not move (no kernel work, no waits).")] = 0,
    warmup: Annotated[int, typer.Option(
        "--warmup", "-w", help="Discarded executions at the start of each trial.")] = 1,
    warmup_trials: Annotated[int, typer.Option(help="Discarded trials per command.")] = 1,
    timeout: Annotated[float, typer.Option(help="Seconds a trial may take.")] = DEFAULT_TIMEOUT_S,
    resume: Annotated[Path | None, typer.Option(
        help="Finish an interrupted `bakeoff cmd` run in DIR, from its results.json.")] = None,
    compare: Annotated[Path | None, typer.Option(
        help="Then compare this run with an earlier one in DIR (as bakeoff compare).")] = None,
    fail_on_regression: Annotated[float | None, typer.Option(
        help="With --compare: exit 1 when a command's whole CI is more than PCT % slower.")]
        = None,
    export_json: Annotated[Path | None, typer.Option(help="Also write the results as JSON.")]
        = None,
    export_markdown: Annotated[Path | None, typer.Option(
        help="Also write a markdown table.")] = None,
    export_csv: Annotated[Path | None, typer.Option(help="Also write the results as CSV.")]
        = None,
) -> None:
    """Compare commands (like hyperfine): trials interleaved, CIs, verdicts, reports."""
    from bakeoff.app import runs
    from bakeoff.cli.compare import cmd_compare
    from bakeoff.run import cleanup
    from bakeoff.store import results as store

    exports = {"json": export_json, "markdown": export_markdown, "csv": export_csv}
    _check_exports(exports)
    if fail_on_regression is not None and compare is None:
        raise UsageError("--fail-on-regression goes with --compare DIR (the run to compare to)")
    if compare is not None:
        store.load(compare)  # an unreadable DIR is refused before anything runs
    cleanup.mark_run()
    if resume is not None:
        given = [flag for flag, value in (
            ("COMMANDS", commands), ("--name", name), ("-P", parameter_scan),
            ("-L", parameter_list), ("--setup", setup), ("--prepare", prepare),
            ("--cleanup", cleanup_cmd)) if value is not None]
        given += request.refused_with_resume({"samples": "--runs"})
        if given:
            raise UsageError(f"--resume goes on as the run was started; drop {', '.join(given)}")
        run, run_dir = runs.resume(resume, request.quiet)
    else:
        defn = _definition(commands or [], name or [], parameter_scan, parameter_step_size,
                           parameter_list or [], shell, shell_program, setup, prepare,
                           cleanup_cmd, ignore_failure, check_output, instructions)
        adhoc.check(defn)
        for flag, count in (("--runs", request.samples), ("--trials", request.trials)):
            if count is not None and count < 1:
                raise UsageError(f"{flag} must be at least 1, e.g. {flag} 10")
        if instructions < 0:
            raise UsageError("--instructions is a count of 0 or more, e.g. --instructions 1")
        if instructions and shutil.which("valgrind") is None:
            raise UsageError("--instructions needs Valgrind's cachegrind: install valgrind "
                             "(apt-get install valgrind)")
        if warmup < 0 or warmup_trials < 0:
            raise UsageError("--warmup and --warmup-trials are counts of 0 or more, e.g. -w 1")
        if not timeout > 0:
            raise UsageError("--timeout is a number of seconds above 0, e.g. --timeout 600")
        bench = adhoc.benchmark(defn, request.trials or DEFAULT_TRIALS,
                                request.samples or DEFAULT_RUNS, warmup, warmup_trials, timeout)
        run, run_dir = runs.start(request.check(), [bench])
    mismatches = adhoc.output_mismatches(run)
    for problem in mismatches:
        if problem not in run.warnings:
            run.warnings.append(problem)
    if mismatches:
        store.save(run, run_dir)  # the warning is part of the record and its reports
    analysis = runs.report_run(run, run_dir, request.quiet, request)
    from bakeoff.cmd import export as adhoc_export

    for kind, path in exports.items():
        if path is not None:
            adhoc_export.write(kind, path, run, analysis)
            out_console.print(f"wrote {path}", highlight=False)
    failed = runs.say_failed(run)
    for problem in mismatches:
        err_console.print(Text("error: ", style="red") + Text(problem))
    if compare is not None:
        cmd_compare(compare, run_dir, request.threshold, fail_on_regression, "text", None, None,
                    False, None)
    if failed or mismatches:
        raise typer.Exit(1)


def argv_for_typer(argv: list[str]) -> list[str]:
    """sys.argv as typer must see it: `bakeoff cmd` with its -L folded."""
    return [*argv[:2], *fold_list_scans(argv[2:])] if argv[1:2] == ["cmd"] else argv

