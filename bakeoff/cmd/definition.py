"""`bakeoff cmd`: a benchmark made at run time from command lines, on the room contract.

A `Definition` (the commands, scans, shell and hooks the user typed) becomes an ordinary
`Benchmark`: one variant per command (the first is the baseline), one param per scan, the
program `common/bakeoff-cmd-exec` (benchmarks/common/cmd_exec.c), which runs the command K
times per trial. The runner, statistics, store and reports are those of every room. The
definition is copied into results.json (`BenchmarkInfo.definition`), so `bakeoff report DIR`
and `--resume DIR` work from the results directory alone (`from_record`).

Shell: a command is split into argv without a shell, unless it uses shell syntax (a pipe, a
redirection, `$`, a glob, ...) or `--shell` is given; then every command of the run goes
through the same shell, whose own start-up bakeoff-cmd-exec measures and subtracts. Any line
`sh -c` takes is taken: before anything runs, the shell itself parses each line (`sh -n`),
and only the program a line certainly starts with must be found; the rest is the shell's to
run, and a name it cannot find fails the trial with its own message. A command whose work is
below the shell start-up's resolution (its figure cannot be told from 0 once the start-up is
taken off) is said to be, and no ratio is formed with it (Metric.subtracted).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from bakeoff.core.errors import UsageError
from bakeoff.declare.model import (
    LARGEST,
    SMALLEST,
    Benchmark,
    Case,
    Fit,
    Metric,
    Param,
    ParamKind,
    ParamValue,
    Profile,
    Question,
    RunContext,
    RunRecord,
    TrialPlan,
    Variant,
)

NAME = "cmd"
PROGRAM = "common/bakeoff-cmd-exec"
DEFAULT_SHELL = "sh"
MAX_SCAN_VALUES = 1000

# A `{NAME}` in a command is replaced by the scan's value; `{{NAME}}` is a literal `{NAME}`.
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}|\{(\w+)\}")
_SCAN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Characters after which a command means more than its words: operators, expansions, globs.
# Erring towards the shell only costs its start-up, which is subtracted.
_SHELL_SYNTAX = re.compile(r"[|&;<>()$`*?\[\]~{}\\\n]|^\s*\w+=")
_PLAIN_WORD = re.compile(r"^[A-Za-z0-9_./+@%:,-]+$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for",
                   "case", "esac", "in", "!", "{", "}", "time", "exec", "command"}


@dataclass(frozen=True)
class Command:
    name: str
    command: str


@dataclass(frozen=True)
class Scan:
    """A param swept: -P NAME LOW HIGH [-D STEP] or -L NAME A,B,C."""

    name: str
    kind: ParamKind
    values: tuple[ParamValue, ...]


@dataclass(frozen=True)
class Definition:
    """What `bakeoff cmd` was asked to compare; stored in results.json as it is."""

    commands: tuple[Command, ...]
    scans: tuple[Scan, ...] = ()
    shell: str | None = None  # the shell's path when commands run through it
    setup: str | None = None
    prepare: str | None = None
    cleanup: str | None = None
    ignore_failure: bool = False
    check_output: bool = False
    # --instructions N: N executions per trial counted under cachegrind (metric instructions)
    instructions: int = 0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["scans"] = [{**asdict(s), "values": list(s.values)} for s in self.scans]
        return d

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Definition:
        try:
            return Definition(
                commands=tuple(Command(str(c["name"]), str(c["command"]))
                               for c in d["commands"]),
                scans=tuple(Scan(str(s["name"]), s["kind"], tuple(s["values"]))
                            for s in d.get("scans", ())),
                shell=d.get("shell"), setup=d.get("setup"), prepare=d.get("prepare"),
                cleanup=d.get("cleanup"), ignore_failure=bool(d.get("ignore_failure")),
                check_output=bool(d.get("check_output")),
                instructions=int(d.get("instructions", 0)))
        except (KeyError, TypeError) as exc:
            raise UsageError(f"the run's recorded command definition is damaged ({exc}); "
                             "start a new run") from None


# ---- scans ------------------------------------------------------------------------------


def _decimal(flag: str, text: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise UsageError(f"{flag}: {text!r} is not a number; give e.g. {flag} n 1 10") from None
    if not value.is_finite():
        raise UsageError(f"{flag}: {text!r} is not a finite number; give e.g. {flag} n 1 10")
    return value


def _check_scan_name(flag: str, name: str) -> None:
    if not _SCAN_NAME.match(name):
        raise UsageError(f"{flag} {name!r}: a scan's name is a word of letters, digits and _, "
                         f"used as {{NAME}} in the commands, e.g. {flag} n ...")


def range_scan(name: str, low: str, high: str, step: str | None) -> Scan:
    """-P NAME LOW HIGH [-D STEP]: LOW, LOW+STEP, ... up to HIGH (STEP 1 by default)."""
    _check_scan_name("-P", name)
    lo, hi = _decimal("-P", low), _decimal("-P", high)
    st = _decimal("-D", step) if step is not None else Decimal(1)
    if st <= 0:
        raise UsageError(f"-D {step}: the step must be above 0, e.g. -D 1")
    if hi < lo:
        raise UsageError(f"-P {name} {low} {high}: the range is empty (LOW above HIGH); "
                         f"give e.g. -P {name} {high} {low}")
    count = int((hi - lo) / st) + 1
    if count > MAX_SCAN_VALUES:
        raise UsageError(f"-P {name} {low} {high}: {count} values is too many; give at most "
                         f"{MAX_SCAN_VALUES} (a larger -D)")
    values = [lo + i * st for i in range(count)]
    if all(v == v.to_integral_value() for v in values):
        return Scan(name, "int", tuple(int(v) for v in values))
    return Scan(name, "float", tuple(float(v) for v in values))


def list_scan(name: str, text: str) -> Scan:
    """-L NAME A,B,C: numbers become a numeric param, so crossovers and fits work along it."""
    _check_scan_name("-L", name)
    parts = [p.strip() for p in text.split(",")]
    if not parts or any(not p for p in parts):
        raise UsageError(f"-L {name} {text!r}: an empty value; give e.g. -L {name} a,b,c")
    if len(set(parts)) != len(parts):
        raise UsageError(f"-L {name}: a value is listed twice; list each once")
    if len(parts) > MAX_SCAN_VALUES:
        raise UsageError(f"-L {name}: {len(parts)} values is too many; give at most "
                         f"{MAX_SCAN_VALUES}")
    if all(re.fullmatch(r"-?[0-9]+", p) for p in parts):
        return Scan(name, "int", tuple(int(p) for p in parts))
    try:
        floats = [float(p) for p in parts]
    except ValueError:
        return Scan(name, "str", tuple(parts))
    return Scan(name, "float", tuple(floats))


# ---- commands ---------------------------------------------------------------------------


def needs_shell(command: str) -> bool:
    """Whether a command line uses shell syntax (a `{NAME}` placeholder is not syntax)."""
    return bool(_SHELL_SYNTAX.search(_PLACEHOLDER.sub("x", command)))


def substitute(text: str, params: Mapping[str, ParamValue]) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return "{" + m.group(1) + "}"
        name = m.group(2)
        return str(params[name]) if name in params else m.group(0)
    return _PLACEHOLDER.sub(one, text)


def _placeholders(text: str) -> set[str]:
    return {m.group(2) for m in _PLACEHOLDER.finditer(text) if m.group(2) is not None}


def _argv(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"command {text!r}: {exc}; close the quote") from None


def _shell_syntax_error(shell: str, text: str) -> str | None:
    """The shell's own word on a line it cannot parse (`SH -n -c`: parsed, nothing run);
    None when it parses."""
    proc = subprocess.run([shell, "-n", "-c", text], capture_output=True, text=True,
                          check=False, timeout=30, stdin=subprocess.DEVNULL)
    if proc.returncode == 0:
        return None
    return (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]


def _first_word(text: str) -> str | None:
    """The program a shell line certainly starts with: its first word, when that is a plain
    word (no quote, expansion, glob, operator or keyword) after any VAR=value assignments;
    None otherwise. Which programs the rest of the line runs is left to the shell (a line it
    parses may define functions, loop, or run words it builds): a name it does not find there
    fails the trial with the shell's own message."""
    lex = shlex.shlex(text, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    try:
        tokens = iter(lex)
        for token in tokens:
            if _ASSIGNMENT.match(token):
                continue
            if not _PLAIN_WORD.match(token) or token in _SHELL_KEYWORDS:
                return None
            after = next(tokens, "")
            return None if after.startswith("(") else token  # `f() {...}` defines f
    except ValueError:
        return None
    return None


def _missing_in_shell(shell: str, words: Sequence[str]) -> list[str]:
    """Of words, those the shell finds neither as a builtin nor on PATH."""
    if not words:
        return []
    script = 'for w; do command -v "$w" >/dev/null 2>&1 || printf "%s\\n" "$w"; done'
    out = subprocess.run([shell, "-c", script, "sh", *words], capture_output=True, text=True,
                         check=False, timeout=30)
    return out.stdout.splitlines()


def _on_path(word: str) -> bool:
    if "/" in word:
        path = Path(word)
        return path.is_file() and shutil.which(str(path)) is not None
    return shutil.which(word) is not None


def check(defn: Definition) -> None:
    """Every problem of the request, as one UsageError, before anything runs."""
    if not defn.commands:
        raise UsageError("no command given; e.g. bakeoff cmd 'cat /proc/self/stat' "
                         "'cat /proc/self/status'")
    scan_names = [s.name for s in defn.scans]
    if len(set(scan_names)) != len(scan_names):
        raise UsageError("a scan's name is given twice; give each -P/-L its own name")
    hooks = [("--setup", defn.setup), ("--prepare", defn.prepare), ("--cleanup", defn.cleanup)]
    for i, cmd in enumerate(defn.commands, 1):
        if not cmd.command.strip():
            raise UsageError(f"command {i} is empty; give a command line, e.g. 'sleep 0.1'")
        if not cmd.name.strip():
            raise UsageError(f"--name for command {i} is empty; give a name or leave it out")
    for flag, text in hooks:
        if text is not None and not text.strip():
            raise UsageError(f"{flag} is empty; give a command or leave the flag out")
    names = [c.name for c in defn.commands]
    for name in names:
        if names.count(name) > 1:
            raise UsageError(f"{name!r} is given twice; compare different commands, or give "
                             "each its own --name")
    for what, text in [*((c.name, c.command) for c in defn.commands), *hooks]:
        if text is None:
            continue
        unknown = sorted(_placeholders(text) - set(scan_names))
        if unknown:
            raise UsageError(f"{what}: {{{unknown[0]}}} names no scan; add -P {unknown[0]} LOW "
                             f"HIGH or -L {unknown[0]} A,B (a literal {{{unknown[0]}}} is "
                             f"written {{{{{unknown[0]}}}}})")
    unused = [s.name for s in defn.scans
              if not any(s.name in _placeholders(t) for _, t in
                         [*((c.name, c.command) for c in defn.commands), *hooks] if t)]
    if unused:
        raise UsageError(f"scan {unused[0]} is used by no command; put {{{unused[0]}}} in a "
                         "command or drop the scan")
    _check_found(defn)


def _check_found(defn: Definition) -> None:
    """What is certainly wrong before anything runs, with each scan value as it will run: a
    line the shell cannot parse, and a program that is not found where the line certainly
    runs it (without a shell, the command's own; through one, the first word of the line)."""
    combos = [dict(zip((s.name for s in defn.scans), values, strict=True))
              for values in itertools.product(*(s.values for s in defn.scans))]
    lines: dict[str, tuple[str, str]] = {}  # line -> (what it is, its shell)
    for cmd in defn.commands:
        for params in combos:
            text = substitute(cmd.command, params)
            if defn.shell is None:
                argv = _argv(text)
                if not _on_path(argv[0]):
                    raise UsageError(f"command {text!r}: {argv[0]!r} is not found on PATH "
                                     "(nor executable); check the spelling or give its path")
            else:
                lines.setdefault(text, ("command", defn.shell))
    for flag, hook in (("--setup", defn.setup), ("--prepare", defn.prepare),
                       ("--cleanup", defn.cleanup)):
        if hook:  # bakeoff-cmd-exec runs hooks under /bin/sh
            for params in combos:
                lines.setdefault(substitute(hook, params), (flag, "/bin/sh"))
    first: dict[str, tuple[str, str]] = {}  # word -> (line, what)
    for text, (what, shell) in lines.items():
        problem = _shell_syntax_error(shell, text)
        if problem:
            raise UsageError(f"{what} {text!r}: the shell cannot parse it ({problem}); fix "
                             "the line, e.g. close a quote or a bracket")
        word = _first_word(text)
        if word is not None:
            first.setdefault(word, (text, what))
    for shell in {shell for _, shell in lines.values()}:
        words = [w for w, (text, _) in first.items() if lines[text][1] == shell]
        missing = _missing_in_shell(shell, words)
        if missing:
            text, what = first[missing[0]]
            raise UsageError(f"{what} {text!r}: {missing[0]!r} is not found on PATH nor a "
                             "shell builtin; check the spelling or give its path")


def shell_path(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        raise UsageError(f"--shell-program {program!r} is not found on PATH; give e.g. sh or "
                         "bash")
    return found


# ---- the benchmark ----------------------------------------------------------------------

METRICS = (
    Metric("wall_time", "s", "wall-clock time of one execution, spawn to wait4"),
    Metric("user_time", "s", "user CPU time of one execution and its children (wait4)"),
    Metric("sys_time", "s", "system CPU time of one execution and its children (wait4)"),
    Metric("peak_rss", "KiB", "peak resident set of one execution or its largest child (wait4)"),
    Metric("cpu_time", "s", "user + system CPU time of one execution and its children (wait4): "
           "its work without the time it waited for a CPU"),
)
# The shell's start-up taken off (cpu_time is user + sys, each with it taken off).
SUBTRACTED = ("wall_time", "user_time", "sys_time", "cpu_time")
# --instructions: a count other work on the machine does not move (waits and kernel work are
# not in it), for gates, histories and bisects on a busy machine.
INSTRUCTIONS = Metric("instructions", "instructions",
                      "user-space instructions of one execution and its children, counted "
                      "under Valgrind's cachegrind (no kernel work, no waits; a separate "
                      "execution from the timed ones)")
SHELL_COUNTERS = (
    Metric("shell_wall_time", "s", "the shell's start-up, median per trial, subtracted"),
    Metric("shell_user_time", "s", "the shell's start-up user CPU, subtracted"),
    Metric("shell_sys_time", "s", "the shell's start-up system CPU, subtracted"),
)


def _summary(defn: Definition) -> str:
    text = ("Commands compared by `bakeoff cmd`: each trial is a fresh process running one "
            "command K times on the measured CPU (posix_spawn, wait4), commands interleaved in "
            "seeded order, warm-up executions discarded.")
    if defn.shell:
        text += (f" Commands run through `{defn.shell} -c`; the shell's start-up (`{defn.shell} "
                 "-c ''`, timed beside every execution) is subtracted from wall, user and sys "
                 "time by its median per trial (counters shell_*), as hyperfine does; a value "
                 "below 0 is shown as 0, and a command whose figure cannot then be told from 0 "
                 "is said to be below the shell start-up's resolution, with no ratio formed "
                 "with it; peak RSS includes the shell.")
    else:
        text += " Commands are executed directly, without a shell."
    if defn.instructions:
        text += (f" Then {defn.instructions} execution(s) per trial under Valgrind's cachegrind "
                 "give `instructions`: user-space instructions only, no kernel work and no "
                 "waiting, so load on the machine does not move it.")
    if defn.prepare:
        text += f" Before each execution, untimed: `{defn.prepare}`."
    if defn.setup or defn.cleanup:
        text += " Per trial, untimed:" + (f" setup `{defn.setup}`" if defn.setup else "") + (
            f" cleanup `{defn.cleanup}`" if defn.cleanup else "") + "."
    return text


def benchmark(defn: Definition, trials: int, runs: int, warmup: int, warmup_trials: int,
              timeout_s: float, primary: str | None = None) -> Benchmark:
    """primary: the metric listed first, which the run's allocation and targets read
    (`compare --rerun` deciding on instructions); wall time by default."""
    params = tuple(Param(s.name, s.kind, f"{{{s.name}}} in the commands") for s in defn.scans)
    # One counted execution per trial: bakeoff-cmd-exec counts the command's processes with
    # inherited kernel counters (benchmarks/common/counters.h) after its measured runs.
    counts = {"trials": trials, "samples": runs, "warmup_samples": warmup, "counted_samples": 1,
              "warmup_trials": warmup_trials, "timeout_s": timeout_s}
    values = {s.name: s.values for s in defn.scans}
    profiles = {name: Profile(name, values, **counts)  # type: ignore[arg-type]
                for name in ("quick", "default", "full")}
    counters: tuple[Metric, ...] = SHELL_COUNTERS if defn.shell else ()
    # Through a shell, wall, user and sys time are what is left once the shell's start-up is
    # taken off (floored at 0): a command below its resolution is said to be.
    metrics = tuple(dataclasses.replace(m, subtracted="the shell start-up")
                    if defn.shell and m.name in SUBTRACTED else m for m in METRICS)
    if defn.ignore_failure:
        counters += (Metric("failed_executions", "", "executions that exited non-zero"),)

    def plan(case: Case, profile: Profile, ctx: RunContext, state: object) -> TrialPlan:
        return trial_plan(defn, ctx.build_dir, case, profile)

    return Benchmark(
        name=NAME,
        title=" vs ".join(c.name for c in defn.commands),
        summary=_summary(defn),
        variants=tuple(Variant(c.name, c.command, baseline=(i == 0))
                       for i, c in enumerate(defn.commands)),
        params=params,
        metrics=_primary_first(metrics + ((INSTRUCTIONS,) if defn.instructions else ()),
                               primary),
        profiles=profiles,
        program=PROGRAM,
        fits=tuple(Fit("wall_time", s.name, f"wall time against the first command along "
                       f"{s.name}") for s in defn.scans if s.kind != "str"),
        counters=counters,
        # Counted over the command's whole process tree (one execution = one operation):
        # CPU time against the wall time, and what the kernel did for it.
        why_counters=("task_clock_ns", "context_switches", "page_faults_minor"),
        questions=_questions(defn),
        prepare_trial=plan,
        definition=defn.to_json(),
        timeout_ends_case=True,  # a command that hung once would hang again
    )


def _primary_first(metrics: tuple[Metric, ...], primary: str | None) -> tuple[Metric, ...]:
    chosen = [m for m in metrics if m.name == primary]
    return (*chosen, *(m for m in metrics if m.name != primary))


def _questions(defn: Definition) -> tuple[Question, ...]:
    """The question of `bakeoff cmd`: each command against the first, read at both ends of
    each numeric scan (every value of a listed one). None for a single command."""
    first = defn.commands[0].name
    if len(defn.commands) < 2:
        return ()
    ends = {s.name: (SMALLEST, LARGEST) for s in defn.scans if s.kind != "str"}
    return (Question(f"How much faster or slower than {first} is each other command?",
                     "ratio", against=first, metric="wall_time", at=ends),)


def trial_plan(defn: Definition, build_dir: Path, case: Case, profile: Profile) -> TrialPlan:
    """The one place the runner's per-trial hook is used: the executor's argv for a case."""
    params = dict(case.params)
    command = next(c for c in defn.commands if c.name == case.variant)
    text = substitute(command.command, params)
    argv = [str(build_dir / PROGRAM), "--samples", str(profile.samples),
            "--warmup", str(profile.warmup_samples),
            "--counted-samples", str(profile.counted_samples)]
    for flag, hook in (("--setup", defn.setup), ("--prepare", defn.prepare),
                       ("--cleanup", defn.cleanup)):
        if hook:
            argv += [flag, substitute(hook, params)]
    if defn.ignore_failure:
        argv.append("--ignore-failure")
    if defn.check_output:
        argv.append("--check-output")
    if defn.instructions:
        argv += ["--instructions", str(defn.instructions)]
    if defn.shell:
        argv += ["--shell", defn.shell, "--", defn.shell, "-c", text]
    else:
        argv += ["--", *_argv(text)]
    return TrialPlan(argv=argv)


def from_record(run: RunRecord) -> dict[str, Benchmark]:
    """The run's ad-hoc benchmarks, rebuilt from their recorded definitions (for --resume)."""
    out = {}
    for name, info in run.benchmarks.items():
        if info.definition is None:
            continue
        p = info.profile
        out[name] = benchmark(Definition.from_json(info.definition), int(p.get("trials", 1)),
                              int(p.get("samples", 1)), int(p.get("warmup_samples", 0)),
                              int(p.get("warmup_trials", 0)), float(p.get("timeout_s", 600)))
    return out


def output_mismatches(run: RunRecord) -> list[str]:
    """--check-output across commands: per set of params, commands whose output differs
    from the first command's (by the hash bakeoff-cmd-exec reports)."""
    problems = []
    for name, info in run.benchmarks.items():
        if not (info.definition or {}).get("check_output"):
            continue
        hashes: dict[tuple[tuple[str, ParamValue], ...], dict[str, set[str]]] = {}
        for t in run.trials:
            if t.case.benchmark == name and t.ok and "output_hash" in t.meta:
                hashes.setdefault(t.case.params, {}).setdefault(
                    t.case.variant, set()).add(str(t.meta["output_hash"]))
        for params, by_variant in hashes.items():
            where = "".join(f" at {k}={v}" for k, v in params)
            seen = {h for hs in by_variant.values() for h in hs}
            if len(seen) > 1:
                first = info.baseline
                others = [v for v, hs in by_variant.items() if hs != by_variant.get(first)]
                problems.append(f"--check-output: {', '.join(map(repr, others))} printed "
                                f"other output than {first!r}{where}")
    return problems
