"""A catalogue of bad input: every way a user can get an invocation or a results directory
wrong, each answered by exit status 2 and one line on stderr that names the problem and the
fix (`what: problem; fix`), never a traceback.

Results directories are copies of one real run's results.json, damaged one way each. The
heap sampler's bad environment is not bad input of bakeoff's: the preloaded library must fall
back, say so once, and leave its host program's output and exit status alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from bakeoff.declare import registry
from conftest import (
    assert_usage_error,
    build_dir,
    cgroup_without_memory,
    live_run_lock,
    run_bakeoff,
)

MREMAP = "mremap-vs-memcpy"
TRACING = "tracing-overhead"
BPF = "bpf-map-dump"
HEAP = "heap-sampling"
CGROUP = "cgroup-stat-read"
NINES = "9" * 400  # a float would make this infinity

# ---- the places the cases point at -------------------------------------------------------

Doc = dict[str, Any]


def _doc(edit: Callable[[Doc], object]) -> Callable[[str], str]:
    """A damage done to the parsed results.json, written back as JSON."""
    def damage(text: str) -> str:
        doc = json.loads(text)
        edit(doc)
        return json.dumps(doc, indent=1)  # allow_nan: NaN and Infinity are written as such
    return damage


def _first_sample(value: object) -> Callable[[Doc], object]:
    def edit(doc: Doc) -> None:
        samples = doc["trials"][0]["samples"]
        samples[next(iter(samples))][0] = value
    return edit


def _running(edit: Callable[[Doc], object]) -> Callable[[Doc], object]:
    """An interrupted run (so --resume reads on), damaged by edit."""
    def both(doc: Doc) -> None:
        doc["status"] = "interrupted"
        edit(doc)
    return both


def _rename_benchmark(doc: Doc) -> None:
    """A whole, consistent record of a benchmark this bakeoff no longer has."""
    doc["benchmarks"] = {"retired-room": next(iter(doc["benchmarks"].values()))}
    for case in [*doc["cases"], *(s["case"] for s in doc["skips"]),
                 *(t["case"] for t in doc["trials"])]:
        case["benchmark"] = "retired-room"


def _recorded_profile(**change: object) -> Callable[[Doc], object]:
    def edit(doc: Doc) -> None:
        next(iter(doc["benchmarks"].values()))["profile"].update(change)
    return edit


# Name -> how results.json is damaged.
DAMAGES: dict[str, Callable[[str], str]] = {
    "truncated": lambda text: text[: len(text) // 2],
    "empty": lambda text: "",
    "not-json": lambda text: "benchmark results, see the wiki\n",
    "json-list": lambda text: json.dumps([json.loads(text)]),
    "not-utf8": lambda text: "\udcff",  # written with surrogateescape: a lone 0xff byte
    "schema-99": _doc(lambda d: d.update(schema_version=99)),
    "nan-sample": _doc(_first_sample(float("nan"))),
    "infinity-sample": _doc(_first_sample(float("inf"))),
    "string-sample": _doc(_first_sample("fast")),
    "no-trials": _doc(lambda d: d.pop("trials")),
    "no-cases": _doc(lambda d: d.pop("cases")),
    "no-trial-case": _doc(lambda d: d["trials"][0].pop("case")),
    "string-wall-time": _doc(lambda d: d["trials"][0].update(wall_s="slow")),
    "no-metrics": _doc(lambda d: next(iter(d["benchmarks"].values())).update(metrics=[])),
    "list-param-value": _doc(lambda d: [t["case"]["params"].update(size=[4096])
                                        for t in d["trials"]]),
    "resume-unknown-benchmark": _doc(_running(_rename_benchmark)),
    "resume-bad-profile": _doc(_running(_recorded_profile(trials="many"))),
}


class Places:
    """Paths the cases name, made on first use: the real runs, the damaged copies."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # Subprocesses may cache bytecode (privately): the suite runs with
        # PYTHONDONTWRITEBYTECODE, and compiling typer and numpy anew costs every case 0.5 s.
        self.env = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(root / "pyc")}
        self._runs: dict[str, Path] = {}

    def real_run(self, name: str, *args: str) -> Path:
        if name not in self._runs:
            out = self.root / name
            res = run_bakeoff("run", *args, "--quiet", "--out", str(out), env=self.env)
            assert res.returncode == 0, res.stdout + res.stderr
            self._runs[name] = out
        return self._runs[name]

    @property
    def run(self) -> Path:
        """One small real run, complete: the source of every damaged copy."""
        return self.real_run("mremap", MREMAP, "--profile", "quick", "--variant", "memcpy",
                             "--param", "size=4096", "--trials", "2", "--samples", "2")

    @property
    def other_run(self) -> Path:
        """A real run of another benchmark: no case in common with self.run."""
        return self.real_run("heap", HEAP, "--profile", "quick", "--variant", "none",
                             "--param", "workload=micro-64", "--trials", "1", "--samples", "1")

    def damaged(self, name: str) -> Path:
        out = self.root / f"damaged-{name}"
        if not out.exists():
            out.mkdir()
            text = DAMAGES[name]((self.run / "results.json").read_text())
            (out / "results.json").write_bytes(text.encode("utf-8", "surrogateescape"))
        return out

    def resolve(self, arg: str) -> str:
        """'{run}', '{other}', '{damaged:NAME}', '{missing}', '{no-results}', '{file}',
        '{non-memory-cgroup}' in an argument -> a path."""
        return re.sub(r"\{([a-z-]+)(?::([a-z0-9-]+))?\}", lambda m: self._place(*m.groups()),
                      arg)

    def _place(self, key: str, name: str | None) -> str:
        if key == "run":
            return str(self.run)
        if key == "other":
            return str(self.other_run)
        if key == "damaged" and name is not None:
            return str(self.damaged(name))
        if key == "missing":
            return str(self.root / "no-such-directory")
        if key == "no-results":
            (self.root / "empty-dir").mkdir(exist_ok=True)
            return str(self.root / "empty-dir")
        if key == "file":
            (self.root / "a-file").write_text("keep me\n")
            return str(self.root / "a-file")
        if key == "non-memory-cgroup":
            return str(cgroup_without_memory())
        raise AssertionError(f"unknown place {key}:{name}")


@pytest.fixture(scope="module")
def places(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Places:
    return Places(tmp_path_factory.mktemp("bad-input"))


# ---- the catalogue: (id, argv, a fragment naming the problem, a fragment naming the fix) --

Case = tuple[str, tuple[str, ...], str, str]

NAMES: list[Case] = [
    ("unknown-benchmark", ("run", "mremap-vs-memmove"), "benchmark 'mremap-vs-memmove' not found",
     "see bakeoff list"),
    ("unknown-variant", ("run", MREMAP, "--variant", "mmove"),
     "--variant mmove: no selected benchmark has that variant", "see bakeoff list"),
    ("variant-of-another-benchmark", ("run", MREMAP, "--variant", "held"),
     "--variant held: no selected benchmark", "known: memcpy, memcpy-cold"),
    ("unknown-profile", ("run", MREMAP, "--profile", "huge"), "--profile 'huge' is unknown",
     "use one of quick, default, full"),
    ("unknown-param", ("run", MREMAP, "--param", "colour=red"),
     "--param colour: no selected benchmark has that param", "see bakeoff list"),
    ("param-of-another-benchmark", ("run", MREMAP, "--param", "entries=1000"),
     "--param entries: no selected", "(known: size)"),
]

PARAM_SYNTAX: list[Case] = [
    ("param-without-equals", ("run", MREMAP, "--param", "size"), "expected NAME=V1,V2",
     "e.g. --param size=4KiB,1MiB"),
    ("param-without-name", ("run", MREMAP, "--param", "=4096"), "expected NAME=V1,V2",
     "e.g. --param size="),
    ("param-empty-value", ("run", MREMAP, "--param", "size="), "empty value",
     "give e.g. size=V1,V2"),
    ("param-empty-item", ("run", MREMAP, "--param", "size=4KiB,,8KiB"), "empty value",
     "give e.g. size=V1,V2"),
    ("param-given-twice", ("run", MREMAP, "--param", "size=4KiB", "--param", "size=8KiB"),
     "--param size is given twice", "list all values once: --param size=V1,V2"),
    ("param-value-listed-twice", ("run", MREMAP, "--param", "size=4KiB,4096"),
     "a value is listed twice", "list each once"),
    ("size-not-a-number", ("run", MREMAP, "--param", "size=abc"), "'abc' is not a size",
     "use e.g. 4096, 4KiB"),
    ("size-bad-unit", ("run", MREMAP, "--param", "size=4Q"), "'4Q' is not a size",
     "use e.g. 4096, 4KiB"),
    ("size-1e999", ("run", MREMAP, "--param", "size=1e999"), "'1e999' is not a size",
     "use e.g. 4096"),
    ("size-nan", ("run", MREMAP, "--param", "size=nan"), "'nan' is not a size", "use e.g. 4096"),
    ("size-400-digits", ("run", MREMAP, "--param", f"size={NINES}"), "far too large a size",
     "use e.g. 4096"),
    ("size-fraction-of-a-byte", ("run", MREMAP, "--param", "size=1.5"),
     "'1.5' is not a whole number of bytes", "use e.g. 1536 or 1.5KiB"),
    ("size-negative", ("run", MREMAP, "--param", "size=-4096"), "'-4096' is not a size",
     "use e.g. 4096"),
    ("int-not-a-number", ("run", BPF, "--param", "entries=1e6"),
     "--param entries: '1e6' is not a whole number", "give e.g. 100"),
    ("int-nan", ("run", TRACING, "--param", "duration_us=nan"), "'nan' is not a whole number",
     "give e.g. 100"),
    ("float-nan", ("run", HEAP, "--param", "scale=nan"), "'nan' is not a finite number",
     "give e.g. 0.5"),
    ("float-1e999", ("run", HEAP, "--param", "scale=1e999"), "'1e999' is not a finite number",
     "give e.g. 0.5"),
    ("float-not-a-number", ("run", HEAP, "--param", "scale=half"), "'half' is not a number",
     "give e.g. 0.5"),
]

PARAM_CHECKS: list[Case] = [
    ("size-zero", ("run", MREMAP, "--param", "size=0"), "--param size=0",
     "positive multiple of the page size"),
    ("size-not-page-aligned", ("run", MREMAP, "--param", "size=4097"), "--param size=4097",
     "multiple of the page size 4096 (e.g. 4KiB"),
    ("size-beyond-memory", ("run", MREMAP, "--param", "size=1TiB"), "of free memory",
     "choose a smaller size"),
    ("calls-zero", ("run", TRACING, "--param", "calls=0"), "--param calls=0",
     "give 100 to 10,000,000 calls, or auto"),
    ("calls-minus-one", ("run", TRACING, "--param", "calls=-1"), "--param calls=-1",
     "give a number of calls (e.g. 10000)"),
    ("calls-superscript-digit", ("run", TRACING, "--param", "calls=\u00b2"),
     "--param calls=\u00b2", "give a number of calls"),
    ("calls-auto-over-zero", ("run", TRACING, "--param", "calls=auto/0"), "--param calls=auto/0",
     "auto/K (that count divided by K"),
    ("duration-negative", ("run", TRACING, "--param", "duration_us=-1"),
     "--param duration_us=-1", "must be from 0 to 1000000 µs"),
    ("trial-would-run-for-days", ("run", TRACING, "--param", "duration_us=1000000",
                                  "--param", "calls=10000000"),
     "busy-waits 10,000,000 s per trial", "lower calls or duration_us"),
    ("entries-zero", ("run", BPF, "--param", "entries=0"), "--param entries=0",
     "must be from 1 to 268435456 entries"),
    ("entries-minus-one", ("run", BPF, "--param", "entries=-1"), "--param entries=-1",
     "must be from 1 to 268435456 entries"),
    ("map-type-unknown", ("run", BPF, "--param", "map=lru"), "--param map=lru",
     "use one of hash, array"),
    ("cgroup-target-missing", ("run", CGROUP, "--param", "target=/sys/fs/cgroup/no-such-cg"),
     "does not exist", "give child, root, or a memory cgroup directory"),
    ("cgroup-target-not-a-cgroup", ("run", CGROUP, "--param", "target=/tmp"),
     "/tmp is not a cgroup", "give child, root, or a memory cgroup directory"),
    ("cgroup-target-not-memory", ("run", CGROUP, "--param", "target={non-memory-cgroup}"),
     "is not a memory cgroup", "give child, root, or a memory cgroup directory"),
    ("cgroup-target-relative", ("run", CGROUP, "--param", "target=memory/mine"),
     "--param target=memory/mine", "give child, root, or an absolute memory cgroup path"),
    ("cgroup-fields-zero", ("run", CGROUP, "--param", "fields=0"), "--param fields=0",
     "must be at least 1 (or all:"),
    ("cgroup-content-unknown", ("run", CGROUP, "--param", "content=xml"),
     "--param content=xml", "use one of legacy, legacy-parse"),
    ("cgroup-no-case-applies", ("run", CGROUP, "--param", "content=legacy", "--param",
                                "fields=3"),
     "nothing this machine can run (not applicable", "choose --param values that apply"),
    ("heap-mean-zero", ("run", HEAP, "--param", "mean=0"), "--param mean=0",
     "must be from 1 B to 1024 GiB"),
    ("heap-mean-2tib", ("run", HEAP, "--param", "mean=2TiB"), "--param mean=2TiB",
     "must be from 1 B to 1024 GiB"),
    ("heap-scale-negative", ("run", HEAP, "--param", "scale=-1"), "--param scale=-1",
     "must be > 0 and <= 100"),
]

OPTIONS: list[Case] = [
    ("trials-zero", ("run", MREMAP, "--trials", "0"), "--trials must be at least 1",
     "e.g. --trials 10"),
    ("trials-negative", ("run", MREMAP, "--trials", "-1"), "--trials must be at least 1",
     "e.g. --trials 10"),
    ("trials-beyond-any-run", ("run", MREMAP, "--trials", "9" * 23), "is too many",
     "give at most 10,000"),
    ("trials-fraction", ("run", MREMAP, "--trials", "1.5"), "Invalid value for '--trials'",
     "see bakeoff run --help"),
    ("samples-zero", ("run", MREMAP, "--samples", "0"), "--samples must be at least 1",
     "e.g. --samples 10"),
    ("samples-beyond-any-program", ("run", MREMAP, "--samples", "9" * 23), "is too many",
     "give at most 100,000,000"),
    ("max-trials-one", ("run", MREMAP, "--target-ci", "1", "--max-trials", "1"),
     "--max-trials must be at least 2", "e.g. --max-trials 40"),
    ("max-trials-negative", ("run", MREMAP, "--target-ci", "1", "--max-trials", "-5"),
     "--max-trials must be at least 2", "e.g. --max-trials 40"),
    ("max-trials-without-target", ("run", MREMAP, "--max-trials", "5"),
     "--max-trials goes with --target-ci", "for a fixed count use --trials"),
    ("time-budget-zero", ("run", MREMAP, "--time-budget", "0"), "--time-budget is a number",
     "e.g. --time-budget 300"),
    ("time-budget-nan", ("run", MREMAP, "--time-budget", "nan"), "--time-budget is a number",
     "e.g. --time-budget 300"),
    ("time-budget-infinite", ("run", MREMAP, "--time-budget", "inf"),
     "--time-budget is a number", "e.g. --time-budget 300"),
    ("target-ci-zero", ("run", MREMAP, "--target-ci", "0"), "--target-ci is a percentage",
     "e.g. --target-ci 1"),
    ("target-ci-negative", ("run", MREMAP, "--target-ci", "-1"), "--target-ci is a percentage",
     "e.g. --target-ci 1"),
    ("threshold-negative", ("run", MREMAP, "--threshold", "-1"), "--threshold is a percentage",
     "e.g. --threshold 2"),
    ("threshold-100", ("run", MREMAP, "--threshold", "100"), "from 0 to 100",
     "e.g. --threshold 2"),
    ("threshold-nan", ("run", MREMAP, "--threshold", "nan"), "--threshold is a percentage",
     "e.g. --threshold 2"),
    ("seed-not-a-number", ("run", MREMAP, "--seed", "lucky"), "Invalid value for '--seed'",
     "see bakeoff run --help"),
    ("seed-negative", ("run", MREMAP, "--seed", "-1"), "--seed -1",
     "a whole number of 0 or more, e.g. --seed 11"),
    ("out-is-a-file", ("run", MREMAP, "--out", "{file}"), "exists and is not a directory",
     "choose another path"),
    ("out-holds-a-run", ("run", MREMAP, "--out", "{run}"), "already holds a run",
     "choose an empty or new directory"),
    ("out-under-proc", ("run", MREMAP, "--out", "/proc/bakeoff-results"), "cannot write there",
     "choose a writable directory"),
    ("compare-format-unknown", ("compare", "{run}", "{run}", "--format", "xml"),
     "--format 'xml' is unknown", "use text or md"),
    ("compare-threshold-200", ("compare", "{run}", "{run}", "--threshold", "200"),
     "--threshold is a percentage", "e.g. --threshold 2"),
    ("compare-fail-on-regression-negative", ("compare", "{run}", "{run}",
                                             "--fail-on-regression", "-1"),
     "--fail-on-regression is a percentage", "e.g. 5"),
    ("compare-fail-on-regression-nan", ("compare", "{run}", "{run}",
                                        "--fail-on-regression", "nan"),
     "--fail-on-regression is a percentage", "e.g. 5"),
    ("compare-target-ratio-ci-without-rerun", ("compare", "{run}", "{run}",
                                               "--target-ratio-ci", "5"),
     "--target-ratio-ci goes with --rerun", "drop --target-ratio-ci"),
    ("compare-time-budget-without-rerun", ("compare", "{run}", "{run}", "--time-budget", "60"),
     "--time-budget goes with --rerun", "drop --time-budget"),
    ("compare-time-budget-zero", ("compare", "{run}", "{run}", "--rerun", "--time-budget",
                                  "0"), "--time-budget is a number of seconds",
     "e.g. --time-budget 120"),
    ("compare-metric-unknown", ("compare", "{run}", "{run}", "--metric", "bogus"),
     "--metric bogus: no benchmark of these runs measured it", "give one of"),
]

UNREADABLE = "unreadable results"
RERUN = "re-run bakeoff run"

RESULTS: list[Case] = [
    ("report-missing-dir", ("report", "{missing}"), "no such results directory",
     "give one written by bakeoff run"),
    ("compare-missing-dir", ("compare", "{run}", "{missing}"), "no such results directory",
     "give one written by bakeoff run"),
    ("resume-missing-dir", ("run", "--resume", "{missing}"), "no such results directory",
     "give one written by bakeoff run"),
    ("report-no-results-json", ("report", "{no-results}"), "has no results.json",
     "give a directory written by bakeoff run"),
    ("compare-no-results-json", ("compare", "{no-results}", "{run}"), "has no results.json",
     "give a directory written by bakeoff run"),
    ("resume-no-results-json", ("run", "--resume", "{no-results}"), "has no results.json",
     "give a directory written by bakeoff run"),
    ("report-truncated", ("report", "{damaged:truncated}"), UNREADABLE, RERUN),
    ("compare-truncated", ("compare", "{run}", "{damaged:truncated}"), UNREADABLE, RERUN),
    ("resume-truncated", ("run", "--resume", "{damaged:truncated}"), UNREADABLE, RERUN),
    ("report-empty-file", ("report", "{damaged:empty}"), UNREADABLE, RERUN),
    ("compare-not-json", ("compare", "{damaged:not-json}", "{run}"), UNREADABLE, RERUN),
    ("resume-json-not-an-object", ("run", "--resume", "{damaged:json-list}"),
     "top level is not an object", RERUN),
    ("report-not-utf8", ("report", "{damaged:not-utf8}"), UNREADABLE, RERUN),
    ("report-newer-schema", ("report", "{damaged:schema-99}"), "schema version 99 is newer",
     "upgrade bakeoff"),
    ("compare-newer-schema", ("compare", "{run}", "{damaged:schema-99}"),
     "schema version 99 is newer", "upgrade bakeoff"),
    ("resume-newer-schema", ("run", "--resume", "{damaged:schema-99}"),
     "schema version 99 is newer", "upgrade bakeoff"),
    ("report-nan-sample", ("report", "{damaged:nan-sample}"), "NaN", RERUN),
    ("compare-infinity-sample", ("compare", "{run}", "{damaged:infinity-sample}"), "Infinity",
     RERUN),
    ("resume-string-sample", ("run", "--resume", "{damaged:string-sample}"),
     "'fast' is not a finite number", RERUN),
    ("report-no-trials", ("report", "{damaged:no-trials}"), "'trials'", RERUN),
    ("resume-no-trials", ("run", "--resume", "{damaged:no-trials}"), "'trials'", RERUN),
    ("compare-no-cases", ("compare", "{damaged:no-cases}", "{run}"), "'cases'", RERUN),
    ("report-trial-without-case", ("report", "{damaged:no-trial-case}"), "'case'", RERUN),
    ("report-string-wall-time", ("report", "{damaged:string-wall-time}"), "slow", RERUN),
    ("report-no-metrics", ("report", "{damaged:no-metrics}"), "metric", RERUN),
    ("compare-list-as-param-value", ("compare", "{run}", "{damaged:list-param-value}"),
     "size", RERUN),
    ("resume-complete-run", ("run", "--resume", "{run}"), "this run is complete",
     "bakeoff report regenerates its reports"),
    ("resume-with-other-options", ("run", "--resume", "{run}", "--trials", "0"),
     "--resume goes on as the run was started", "drop --trials"),
    ("resume-unknown-benchmark", ("run", "--resume", "{damaged:resume-unknown-benchmark}"),
     "measured 'retired-room', which this bakeoff does not have",
     "resume it with the bakeoff that started it"),
    ("resume-damaged-profile", ("run", "--resume", "{damaged:resume-bad-profile}"),
     "has a bad 'trials'", "start a new run"),
    ("compare-different-benchmarks", ("compare", "{run}", "{other}"), "share no measured case",
     "compare runs of the same benchmarks and params"),
]


def _every_room() -> list[Case]:
    """What every discovered room must refuse alike, so a new room gets these for free: an
    unknown variant and param, a value its param's kind cannot parse, a spelled-out case
    that cannot apply (its variant and every value given)."""
    not_parsed = {"bytes": "is not a size", "int": "is not a whole number",
                  "float": "is not a number"}
    cases: list[Case] = []
    for name, bench in registry.discover().items():
        cases += [
            (f"{name}:unknown-variant", ("run", name, "--variant", "no-such-variant"),
             "--variant no-such-variant: no selected benchmark has that variant",
             "see bakeoff list"),
            (f"{name}:unknown-param", ("run", name, "--param", "no_such_param=1"),
             "--param no_such_param: no selected benchmark has that param", "see bakeoff list"),
        ]
        cases += [(f"{name}:{p.name}-not-parsed", ("run", name, "--param", f"{p.name}=twelve"),
                   f"--param {p.name}: 'twelve' {not_parsed[p.kind]}", "e.g.")
                  for p in bench.params if p.kind in not_parsed]
    return cases


EXPLICIT: list[Case] = [
    ("explicit-case-not-applicable", ("run", MREMAP, "--variant", "mremap-thp", "--param",
                                      "size=4KiB"),
     "--variant mremap-thp --param size=4096: not applicable",
     "ask for values that apply (see bakeoff list), or leave out --variant"),
    ("explicit-case-one-value-not-applicable", ("run", BPF, "--variant", "mmap", "--param",
                                                "map=hash,array", "--param", "entries=1000"),
     "--variant mmap --param map=hash --param entries=1000: not applicable",
     "ask for values that apply"),
]

CATALOGUE = NAMES + PARAM_SYNTAX + PARAM_CHECKS + OPTIONS + RESULTS + EXPLICIT + _every_room()
assert len({name for name, *_ in CATALOGUE}) == len(CATALOGUE), "case ids must be distinct"
assert len({args for _, args, *_ in CATALOGUE}) == len(CATALOGUE), "cases must be distinct"


Outcomes = dict[tuple[str, ...], "Future[subprocess.CompletedProcess[str]]"]


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest, places: Places) -> Outcomes:
    """Every selected case of the catalogue, run four at a time on first use: a hundred
    interpreters one after the other would take most of a minute on two busy cores. The
    places are made first, one at a time; each test then reads its own case's outcome. All
    under the suite lock (the places are real runs), and all done before the first test:
    this module's tests lock one at a time, and a hold from here to the module's end would
    keep a machine-wide module waiting that long."""
    wanted = [item.callspec.params["args"] for item in request.session.items
              if getattr(item, "originalname", "") == CATALOGUE_TEST
              and Path(item.path) == Path(__file__)]
    with live_run_lock("test_bad_input.py: outcomes"):
        argvs = {args: [places.resolve(a) for a in args] for args in wanted}
        with ThreadPoolExecutor(max_workers=4) as pool:  # leaving it waits for every run
            return {args: pool.submit(run_bakeoff, *argv, env=places.env, timeout=120)
                    for args, argv in argvs.items()}


CATALOGUE_TEST = "test_bad_input_names_the_problem_and_the_fix"


@pytest.mark.parametrize(("args", "problem", "fix"),
                         [pytest.param(args, problem, fix, id=name)
                          for name, args, problem, fix in CATALOGUE])
def test_bad_input_names_the_problem_and_the_fix(outcomes: Outcomes, args: tuple[str, ...],
                                                 problem: str, fix: str) -> None:
    assert_usage_error(outcomes[args].result(), problem, fix)


def test_refused_input_leaves_things_as_they_were(places: Places) -> None:
    """The refusals above change nothing: a file given as --out keeps its bytes, a complete
    run refused by --resume keeps its results.json, and no results directory is begun."""
    before = (places.run / "results.json").read_bytes()
    a_file = Path(places.resolve("{file}"))
    fresh = places.root / "never-made"
    for args in (("run", MREMAP, "--out", str(a_file)),
                 ("run", "--resume", str(places.run)),
                 ("run", MREMAP, "--param", "size=4097", "--out", str(fresh)),
                 ("run", MREMAP, "--time-budget", "nan", "--out", str(fresh))):
        assert run_bakeoff(*args, env=places.env).returncode == 2
    assert a_file.read_text() == "keep me\n"
    assert (places.run / "results.json").read_bytes() == before
    assert not fresh.exists()


# ---- the heap sampler under nonsense SAMPLER_* values -------------------------------------

SAMPLER = build_dir() / "heap_sampling" / "libbakeoff_sampler.so"
WORDS = "pear\napple\nfig\nbanana\n"
PYTHON_HOST = ("import sys; words = sorted(sys.stdin.read().split()); "
               "print(' '.join(w.upper() for w in words)); sys.exit(3)")

# (id, variable, value, what the warning quotes, the summary field and the fallback it keeps).
# test_heap_sampling.py already covers SCHEME=BOGUS, TIMING=yes, MEAN=-5 and MEAN=0x10.
NONSENSE: list[tuple[str, str, str, str, str, object]] = [
    ("mean-zero", "SAMPLER_POISSON_MEAN_BYTES", "0", "='0'", "mean_bytes", 4096),
    ("mean-huge", "SAMPLER_POISSON_MEAN_BYTES", str(2**40 + 1), f"='{2**40 + 1}'",
     "mean_bytes", 4096),
    ("mean-beyond-64-bits", "SAMPLER_POISSON_MEAN_BYTES", "9" * 25, "='9999", "mean_bytes",
     4096),
    ("mean-non-numeric", "SAMPLER_POISSON_MEAN_BYTES", "lots", "='lots'", "mean_bytes", 4096),
    ("mean-with-unit", "SAMPLER_POISSON_MEAN_BYTES", "4KiB", "='4KiB'", "mean_bytes", 4096),
    ("mean-empty", "SAMPLER_POISSON_MEAN_BYTES", "", "=''", "mean_bytes", 4096),
    ("scheme-empty", "SAMPLER_SCHEME", "", "=''", "scheme", "NONE"),
    ("scheme-lower-case", "SAMPLER_SCHEME", "poisson", "='poisson'", "scheme", "NONE"),
    ("scheme-unknown", "SAMPLER_SCHEME", "RESERVOIR", "='RESERVOIR'", "scheme", "NONE"),
    ("timing-negative", "SAMPLER_TIMING", "-1", "='-1'", "timing", 0),
    ("timing-two", "SAMPLER_TIMING", "2", "='2'", "timing", 0),
    ("timing-empty", "SAMPLER_TIMING", "", "=''", "timing", 0),
]


def _host(kind: str) -> list[str]:
    return ["sort"] if kind == "sort" else [sys.executable, "-S", "-c", PYTHON_HOST]


@pytest.fixture(scope="module")
def sampler(built: Path) -> Path:
    assert SAMPLER.exists(), f"{SAMPLER} is not built"
    return SAMPLER


def _run_host(kind: str, env: dict[str, str] | None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SAMPLER_")}
    return subprocess.run(_host(kind), input=WORDS, capture_output=True, text=True,
                          env={**base, **(env or {})}, timeout=60, check=False)


@pytest.mark.parametrize("host", ["sort", "python"])
@pytest.mark.parametrize(("var", "value", "quoted", "field", "fallback"),
                         [pytest.param(*row[1:], id=row[0]) for row in NONSENSE])
def test_sampler_falls_back_with_one_warning(sampler: Path, tmp_path: Path, host: str,
                                             var: str, value: str, quoted: str, field: str,
                                             fallback: object) -> None:
    plain = _run_host(host, None)
    summary = tmp_path / "summary.json"
    env = {"LD_PRELOAD": str(sampler), "SAMPLER_SCHEME": "POISSON",
           "SAMPLER_OUTPUT": str(summary), var: value}
    res = _run_host(host, env)
    # The host is untouched: same output, same exit status (sort 0, the Python host 3).
    assert (res.returncode, res.stdout) == (plain.returncode, plain.stdout), res.stderr
    assert plain.returncode == (0 if host == "sort" else 3)
    # Exactly one line on stderr: the warning, naming the variable, the value and the fallback.
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("libbakeoff_sampler: warning: "), lines[0]
    assert f"{var}{quoted}" in lines[0] and "using" in lines[0], lines[0]
    assert "Traceback" not in res.stderr
    # It did fall back, and went on sampling with the rest of its settings.
    kept = json.loads(summary.read_text())
    assert kept[field] == fallback, kept
    assert kept["allocations"] > 0


def test_sampler_output_that_is_a_directory_falls_back_to_stderr(sampler: Path,
                                                                 tmp_path: Path) -> None:
    plain = _run_host("python", None)
    res = _run_host("python", {"LD_PRELOAD": str(sampler), "SAMPLER_SCHEME": "COMBINED",
                               "SAMPLER_OUTPUT": str(tmp_path)})
    assert (res.returncode, res.stdout) == (plain.returncode, plain.stdout), res.stderr
    warnings = [line for line in res.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and str(tmp_path) in warnings[0], res.stderr
    assert "the summary goes to stderr" in warnings[0]
    rest = [line for line in res.stderr.splitlines() if line not in warnings]
    assert len(rest) == 1 and rest[0].startswith("libbakeoff_sampler: summary {"), res.stderr
    assert json.loads(rest[0].split(" ", 2)[2])["scheme"] == "COMBINED"
    assert not any(tmp_path.iterdir())
