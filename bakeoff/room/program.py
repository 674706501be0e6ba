"""The program side of the protocol in Python: what benchmarks/common/bench.h is to C.

A trial program written in Python reads like one on bench.h:

    SPEC = program.Spec("tracing_trial", "one line on what it measures",
                        variants={"baseline": "no tracing", ...},
                        params=(program.Param("duration_us", "busy-wait per call, µs"), ...))

    def main(argv):
        args = program.parse_args(SPEC, argv)      # --help: usage, exit 0; bad: one line, exit 2
        duration = args.whole("duration_us")
        out = program.Output()
        out.meta(variant=args.variant, ...)
        out.sample("per_call_ns", 1234.0)
        out.counter("events_lost", 0)

and ends with program.EXIT_* statuses; `program.Failure(message, status)` raised anywhere
ends the trial with one line on stderr ("prog: message"). Arguments, messages and exit
statuses are bench.c's, so the harness, the conformance checks and a person see one
protocol whatever the language (docs/ARCHITECTURE.md, "The program protocol").

Standard library only: a room's program may run outside bakeoff's environment.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NoReturn, TextIO

EXIT_OK = 0
EXIT_FATAL = 1  # a failure while measuring
EXIT_USAGE = 2  # bad arguments
EXIT_UNMET = 3  # a run-time requirement the machine did not meet

DEFAULT_SAMPLES, DEFAULT_WARMUP = 10, 1
_OPTIONS = ("variant", "param", "samples", "warmup", "counted-samples", "profile-repeat")


@dataclass(frozen=True)
class Param:
    """A --param NAME=VALUE the program takes (bench.h struct bench_param)."""

    name: str
    help: str
    required: bool = True
    default: str | None = None


@dataclass(frozen=True)
class Spec:
    """The program's table of variants and params (bench.h struct bench_spec)."""

    prog: str
    summary: str
    variants: Mapping[str, str]
    params: tuple[Param, ...] = ()

    def say(self, message: str) -> None:
        """One diagnostic line on stderr, 'prog: message', whitespace folded to one line."""
        print(f"{self.prog}: {' '.join(message.split())}", file=sys.stderr, flush=True)

    def usage_error(self, message: str) -> NoReturn:
        self.say(f"error: {message}")
        sys.exit(EXIT_USAGE)

    def usage(self) -> str:
        lines = [f"usage: {self.prog} --variant V [--param NAME=VALUE]... [--samples N] "
                 "[--warmup N] [--counted-samples N] [--profile-repeat N]", "", self.summary, "", "variants:"]
        lines += [f"  {name:22} {what}" for name, what in self.variants.items()]
        if self.params:
            lines.append("params (--param NAME=VALUE):")
            for p in self.params:
                note = (" (required)" if p.required
                        else f" (default {p.default})" if p.default is not None else "")
                lines.append(f"  {p.name:22} {p.help}{note}")
        lines += ["options:",
                  f"  {'--samples N':22} measured samples to print, N >= 1 (default "
                  f"{DEFAULT_SAMPLES})",
                  f"  {'--warmup N':22} samples to run first and not print, N >= 0 (default "
                  f"{DEFAULT_WARMUP})",
                  f"  {'--counted-samples N':22} samples after the measured ones with kernel "
                  "counters on, printed as counted.<metric> (default 0)",
                  f"  {'--profile-repeat N':22} under bakeoff profile: repeat the timed "
                  "operation N times in each timed section (default 1)",
                  f"  {'--help':22} print this text and exit", "",
                  "exit status: 0 ok, 1 failed while measuring, 2 bad arguments, 3 the "
                  "machine lacks a requirement"]
        return "\n".join(lines)


@dataclass(frozen=True)
class Args:
    spec: Spec
    variant: str
    samples: int
    warmup: int
    values: Mapping[str, str | None] = field(default_factory=dict)
    # After the measured samples, with kernel counters on (benchmarks/common/counters.h);
    # a program that counts nothing itself still prints their times as counted.<metric>.
    counted_samples: int = 0
    # bench.h's profile_repeat: under `bakeoff profile`, the timed operation repeated this
    # many times in each timed section (a program that cannot ignores it).
    profile_repeat: int = 1

    def param(self, name: str) -> str | None:
        """The value given, else the default (None if neither); an undeclared name is a
        bug in the program."""
        if name not in self.values:
            raise KeyError(f"bug: {self.spec.prog} declares no param {name!r}")
        return self.values[name]

    def whole(self, name: str) -> int:
        """The param as a whole number (decimal digits only); else a usage error."""
        value = self.param(name)
        if value is None or not _is_whole(value):
            self.spec.usage_error(f"--param {name}={value or ''} is not a whole number")
        return int(value)


def _is_whole(text: str) -> bool:
    # ASCII digits few enough for a u64, as bench.c's parse_u64: isdigit() alone takes '²'.
    return text.isascii() and text.isdigit() and len(text) <= 19


def _count(spec: Spec, option: str, value: str, least: int) -> int:
    if not _is_whole(value) or int(value) < least:
        spec.usage_error(f"--{option} {value} is not a whole number >= {least} "
                         f"(e.g. --{option} {10 if least else 1})")
    return int(value)


def parse_args(spec: Spec, argv: Sequence[str]) -> Args:
    """bench_parse_args: --variant V (required), --param NAME=VALUE (each declared name
    once), --samples N >= 1, --warmup N >= 0, --counted-samples N >= 0, --profile-repeat
    N >= 1; '--opt=value' works
    like '--opt value'.
    --help anywhere prints the usage and exits 0; anything wrong is one line, exit 2."""
    if any(a in ("-h", "--help") for a in argv):
        _print_usage(spec)
        sys.exit(EXIT_OK)
    variant: str | None = None
    given: dict[str, str] = {}
    counts: dict[str, int] = {}
    it = iter(argv)
    for arg in it:
        if not arg.startswith("--"):
            spec.usage_error(f"unexpected argument '{arg}' (see --help)")
        name, eq, inline = arg[2:].partition("=")
        if name not in _OPTIONS:
            spec.usage_error(f"unknown option '{arg}' (known: --variant, --param, --samples, "
                             "--warmup, --counted-samples, --profile-repeat, --help)")
        value = inline if eq else next(it, None)
        if value is None:
            spec.usage_error(f"--{name} needs a value (see --help)")
        if name == "variant":
            variant = _variant(spec, variant, value)
        elif name == "param":
            _param(spec, given, value)
        else:
            if name in counts:
                spec.usage_error(f"--{name} given twice (give it once)")
            counts[name] = _count(spec, name, value,
                                  1 if name in ("samples", "profile-repeat") else 0)
    if variant is None:
        spec.usage_error(f"missing --variant (one of: {', '.join(spec.variants)})")
    for p in spec.params:
        if p.name not in given and p.required:
            spec.usage_error(f"missing --param {p.name}=VALUE ({p.help})")
    values = {p.name: given.get(p.name, p.default) for p in spec.params}
    return Args(spec, variant, counts.get("samples", DEFAULT_SAMPLES),
                counts.get("warmup", DEFAULT_WARMUP), values, counts.get("counted-samples", 0),
                counts.get("profile-repeat", 1))


def _print_usage(spec: Spec) -> None:
    try:
        print(spec.usage(), flush=True)
    except BrokenPipeError:  # `prog --help | head`: what C's SIGPIPE would end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _variant(spec: Spec, current: str | None, value: str) -> str:
    if current is not None:
        spec.usage_error("--variant given twice (give it once)")
    if value not in spec.variants:
        spec.usage_error(f"unknown variant '{value}' (known: {', '.join(spec.variants)})")
    return value


def _param(spec: Spec, given: dict[str, str], text: str) -> None:
    name, eq, value = text.partition("=")
    if not eq or not name:
        first = spec.params[0].name if spec.params else "NAME"
        spec.usage_error(f"--param '{text}' is not NAME=VALUE (e.g. --param {first}=...)")
    if name not in {p.name for p in spec.params}:
        spec.usage_error(f"unknown param '{name}' in --param {text} (known: "
                         f"{', '.join(p.name for p in spec.params)})")
    if name in given:
        spec.usage_error(f"--param {name} given twice (give each param once)")
    given[name] = value


class Failure(Exception):
    """Ends the trial: one line on stderr and this exit status (EXIT_FATAL or EXIT_UNMET)."""

    def __init__(self, message: str, status: int = EXIT_FATAL) -> None:
        super().__init__(message)
        self.status = status


class Output:
    """The protocol's JSON lines on stdout, each written whole (bench_emit_*)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def _line(self, obj: Mapping[str, object]) -> None:
        self.stream.write(json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n")

    def meta(self, **facts: object) -> None:
        self._line({"type": "meta", **facts})

    def sample(self, metric: str, value: float) -> None:
        self._line({"type": "sample", "metric": metric, "value": _finite(metric, value)})

    def counter(self, name: str, value: float) -> None:
        self._line({"type": "counter", "name": name, "value": _finite(name, value)})

    def flush(self) -> None:
        self.stream.flush()


def _finite(name: str, value: float) -> float:
    # NaN and infinities are not measurements (bench.c exits 1 the same way).
    if not math.isfinite(value):
        raise Failure(f"bug: {name} is {value}, not a measurement")
    return value
