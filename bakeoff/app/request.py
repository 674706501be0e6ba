"""What a user asks of a run: one RunRequest, every run option one field that says all about it.

Each field carries an `Option` in its metadata: the words that give it on the command line
and their help (bakeoff/cli/options.py makes the typer options from them), the check of its
value, whether `--resume` refuses it, the words that pass it on to a fleet host's `bakeoff
run`, and what it records in the run's RunSettings. So a new run option is one field here
(and, if it changes how a run measures, the RunSettings field the runner reads); `run`,
`cmd`, `fleet run`, the resume checks, the fleet's argv and results.json follow from it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bakeoff.core.errors import UsageError
from bakeoff.declare.model import RunSettings
from bakeoff.plan.cases import MAX_TRIALS


@dataclass(frozen=True)
class Option:
    """How one RunRequest field is given, checked, resumed, passed on and recorded."""

    flags: tuple[str, ...]  # the command line's names; the first is the one messages use
    help: str = ""
    # The value's Python type as typer parses it (list[str] | None for a repeatable option).
    cli_type: Any = str
    argument: bool = False  # a positional argument (NAMES), not an option
    # The problem with a value, one line naming the fix, or None.
    check: Callable[[Any], str | None] | None = None
    # Given together with --resume: refused, since a resumed run goes on as it was started.
    resume_refuses: bool = True
    # The words that give a (non-default) value to `bakeoff run` on a fleet host; None: the
    # fleet does not pass it on (it has its own: --seed, --out, --quiet).
    to_host: Callable[[Any], list[str]] | None = None
    # The RunSettings field it records, and the value recorded from the option's value.
    setting: str | None = None
    recorded: Callable[[Any], Any] | None = None  # None: the value as it is
    # What a given value does once the run is complete and its reports are written, with the
    # run's directory (a fleet's: each complete host's); returns the line to say.
    when_done: Callable[[Any, Path], str] | None = None


def _opt(default: Any, option: Option) -> Any:
    return field(default=default, metadata={"option": option})


def _words(flag: str) -> Callable[[Any], list[str]]:
    """--flag VALUE, numbers in their shortest form (2, not 2.0)."""
    return lambda v: [flag, f"{v:g}" if isinstance(v, float) else str(v)]


def _each(flag: str) -> Callable[[Any], list[str]]:
    """--flag V once per value of a repeatable option."""
    return lambda values: [w for v in values for w in (flag, v)]


def _percent(flag: str, example: str, low_inclusive: bool = False) -> Callable[[Any], str | None]:
    def check(v: float | None) -> str | None:
        if v is None or (0 <= v < 100 if low_inclusive else 0 < v < 100):
            return None
        what = "from 0 to 100" if low_inclusive else "above 0"
        return f"{flag} is a percentage {what}, e.g. {flag} {example}"
    return check


def _same(v: Any) -> Any:
    return v


def _fraction(v: float | None) -> float | None:
    return None if v is None else v / 100


def _seed(v: int | None) -> str | None:
    if v is not None and v < 0:
        return f"--seed {v}: a seed is a whole number of 0 or more, e.g. --seed 11"
    return None


def _max_trials(v: int | None) -> str | None:
    if v is not None and v < 2:
        return "--max-trials must be at least 2, e.g. --max-trials 40"
    if v is not None and v > MAX_TRIALS:
        return f"--max-trials {v} is too many; give at most {MAX_TRIALS:,}, e.g. --max-trials 40"
    return None


def _time_budget(v: float | None) -> str | None:
    # `not x > 0` refuses NaN too; an infinite budget is no budget: leave the option out.
    if v is not None and not (v > 0 and math.isfinite(v)):
        return "--time-budget is a number of seconds above 0, e.g. --time-budget 300"
    return None


def _retake_above(v: float) -> str | None:
    if not (v > 0 and math.isfinite(v)):
        return "--retake-above is a percentage of wall time above 0, e.g. --retake-above 25"
    return None


def _retakes(v: int) -> str | None:
    if not 0 <= v <= 10:
        return "--retakes is a count from 0 to 10, e.g. --retakes 2 (0: never retake)"
    return None


_LABEL_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _labels(values: tuple[str, ...]) -> str | None:
    keys: set[str] = set()
    for item in values:
        key, eq, _ = item.partition("=")
        if not eq or not _LABEL_KEY.fullmatch(key):
            return (f"--label {item!r}: give KEY=VALUE, the key letters, digits, '.', '_' or "
                    "'-', e.g. --label kernel=6.18-rc2")
        if key in keys:
            return f"--label {key}: given twice; give each key once"
        keys.add(key)
    return None


def _label_map(values: tuple[str, ...]) -> dict[str, str]:
    return dict(item.partition("=")[::2] for item in values)


def _history(where: str | None) -> str | None:
    if where is not None and not where.strip():
        return ("--history names the history: a file, postgresql://USER@HOST/DB, or 'default' "
                "(docs/HISTORY.md), e.g. --history default")
    return None


def _record_history(where: str, run_dir: Path) -> str:
    from bakeoff.history.record import record_run  # only a run that records loads it

    done = record_run(run_dir, None if where == "default" else where)
    return (f"{'recorded' if done.added else 'already'} in the history: {done.trials} trials "
            f"of {done.series} series")


@dataclass(frozen=True)
class RunRequest:
    """Every option of a run, as given; `check()` refuses bad values before anything runs."""

    names: tuple[str, ...] = _opt((), Option(
        ("NAMES",), "Benchmarks to run (default: all).", list[str] | None, argument=True,
        to_host=list))
    profile: str = _opt("default", Option(
        ("--profile",), "quick | default | full", to_host=_words("--profile")))
    variants: tuple[str, ...] = _opt((), Option(
        ("--variant",), "Only these variants (repeatable); the baseline always runs.",
        list[str] | None, to_host=_each("--variant")))
    params: tuple[str, ...] = _opt((), Option(
        ("--param",), "Sweep NAME over V1,V2,... instead of the profile's values (repeatable).",
        list[str] | None, to_host=_each("--param")))
    trials: int | None = _opt(None, Option(
        ("--trials",), "Measured trials per case.", int | None, to_host=_words("--trials")))
    samples: int | None = _opt(None, Option(
        ("--samples",), "Samples per trial.", int | None, to_host=_words("--samples")))
    out: Path | None = _opt(None, Option(  # noqa: RUF009 (_opt is a field(), not a default)
        ("--out",), "Results directory (default: results/<time>-<names>).", Path | None))
    seed: int | None = _opt(None, Option(
        ("--seed",), "Seed for the trial order and bootstrap.", int | None, check=_seed))
    threshold: float = _opt(2.0, Option(
        ("--threshold",), "Smallest difference a verdict calls faster/slower, in %.", float,
        check=_percent("--threshold", "2", low_inclusive=True),
        to_host=_words("--threshold"), setting="threshold", recorded=lambda v: v / 100))
    target_ci: float | None = _opt(None, Option(
        ("--target-ci",),
        "Add rounds until every case's median CI half-width is within PCT % of it.",
        float | None, check=_percent("--target-ci", "1"), to_host=_words("--target-ci"),
        setting="target_ci", recorded=_fraction))
    target_ratio_ci: float | None = _opt(None, Option(
        ("--target-ratio-ci",),
        "Add trials until each variant's ratio to the baseline has a CI half-width within "
        "PCT %.", float | None, check=_percent("--target-ratio-ci", "4"),
        to_host=_words("--target-ratio-ci"), setting="target_ratio_ci", recorded=_fraction))
    max_trials: int | None = _opt(None, Option(
        ("--max-trials",), "With --target-ci: at most this many trials per case (default 50).",
        int | None, check=_max_trials, to_host=_words("--max-trials"), setting="max_trials"))
    time_budget: float | None = _opt(None, Option(
        ("--time-budget",),
        "Stop starting trials once this many seconds are used (one trial over, at most).",
        float | None, check=_time_budget, to_host=_words("--time-budget"),
        setting="time_budget_s"))
    retake_above: float = _opt(25.0, Option(
        ("--retake-above",), "Measure a trial again when other work kept its processes "
        "waiting for a CPU more than PCT % of its wall time (run-queue wait, schedstat).",
        float, check=_retake_above, to_host=_words("--retake-above"), setting="retake_wait",
        recorded=lambda v: v / 100))
    retakes: int = _opt(2, Option(
        ("--retakes",), "At most this many retakes per trial (0: never retake); the least "
        "contended attempt is kept.", int, check=_retakes, to_host=_words("--retakes"),
        setting="retakes"))
    quiet: bool = _opt(False, Option(
        ("--quiet", "-q"), "Print only failures and the result.", bool, resume_refuses=False))
    pin: bool = _opt(True, Option(
        ("--pin/--no-pin",), "Pin the measured program to its own CPU.", bool,
        resume_refuses=False, to_host=lambda v: [] if v else ["--no-pin"], setting="pin"))
    labels: tuple[str, ...] = _opt((), Option(
        ("--label",), "KEY=VALUE recorded with the run's settings in results.json "
        "(repeatable), e.g. --label kernel=6.18-rc2.", list[str] | None, check=_labels,
        to_host=_each("--label"), setting="labels", recorded=_label_map))
    history: str | None = _opt(None, Option(
        ("--history",), "When the run is complete, record it in this results history: a "
        "file (SQLite), postgresql://USER@HOST/DB, or 'default' (docs/HISTORY.md).",
        str | None, check=_history, resume_refuses=False, when_done=_record_history))

    # ---- what follows is derived from the fields above; no option is named below ----

    @staticmethod
    def options() -> dict[str, Option]:
        """Every field's Option, in the order of the fields."""
        return {f.name: f.metadata["option"] for f in dataclasses.fields(RunRequest)}

    @classmethod
    def from_words(cls, given: dict[str, Any]) -> RunRequest:
        """From typer's values: None for a repeatable option not given becomes ()."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {k: (tuple(v or ()) if isinstance(fields[k].default, tuple)
                                      else v) for k, v in given.items()}
        return cls(**values)

    def given(self) -> list[str]:
        """The fields given a value other than their default (`--trials 0` is given too)."""
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) != f.default]

    def check(self) -> RunRequest:
        """Each given value's own check, then what must go together; returns itself."""
        for name, option in self.options().items():
            problem = option.check(getattr(self, name)) if option.check else None
            if problem:
                raise UsageError(problem)
        if self.max_trials is not None and self.target_ci is None \
                and self.target_ratio_ci is None:
            raise UsageError("--max-trials goes with --target-ci; for a fixed count use --trials")
        return self

    def refused_with_resume(self, flag_of: dict[str, str] | None = None) -> list[str]:
        """The options given that --resume refuses, as the command names them."""
        flags = {n: o.flags[0].split("/")[0] for n, o in self.options().items()}
        flags.update(flag_of or {})
        options = self.options()
        return [flags[n] for n in self.given() if options[n].resume_refuses]

    def settings(self) -> RunSettings:
        """What the run records of how it was asked to measure (results.json's settings)."""
        return RunSettings(**{o.setting: (o.recorded or _same)(getattr(self, n))
                              for n, o in self.options().items() if o.setting})

    def when_done(self, run_dir: Path) -> list[str]:
        """What the options given do once the run in run_dir is complete; a line each."""
        options = self.options()
        return [hook(getattr(self, n), run_dir) for n in self.given()
                if (hook := options[n].when_done) is not None]

    def host_argv(self) -> list[str]:
        """The words of `bakeoff run` on each fleet host: every option given here that the
        fleet passes on, as its flag would give it."""
        given = set(self.given())
        return [w for n, o in self.options().items()
                if o.to_host is not None and (n in given or n == "profile")
                for w in o.to_host(getattr(self, n))]
