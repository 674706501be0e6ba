"""The results directory: results.json, trials.jsonl, samples.csv and the legacy CSVs.

results.json is written whole when a run starts and when it stops (write-temp, fsync,
rename: a crash or a full disk leaves the previous complete file or the new one, never half
of one). In between, each finished trial is appended to the journal trials.jsonl as one
line and fsynced, so saving costs the same for the thousandth trial as for the first and a
SIGKILL loses at most the trial in flight. Loading merges the two; a torn last line (the
kill landed mid-write) is ignored. When the run stops, results.json takes every trial and
the journal is removed.

samples.csv has every measured sample (the record keeps quantiles of a trial with more
than stats.SKETCH_POINTS samples); counted.csv the counted samples (counted.<metric>,
per_op.<counter>), which are never a metric's values. A trial's rows are appended before its journal line, so
after a kill the CSV may hold rows of one unrecorded trial, which --resume drops.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bakeoff.core.errors import UsageError
from bakeoff.declare.model import (
    BenchmarkInfo,
    Case,
    Contention,
    RunRecord,
    RunSettings,
    Rusage,
    Skip,
    Trial,
    is_counted,
)
from bakeoff.store import schema

# Changelog of results.json:
#   1 — first version: run metadata, host facts, benchmark infos, cases, skips, trials.
#   2 — settings (threshold, target_ci, max_trials, time_budget_s, pin), stop_reason,
#       capped; benchmark infos gain crossover_ratios, fits, profile.
#   3 — trials gain sample_counts (metrics kept as quantiles); a running or killed run's
#       trials are in trials.jsonl beside it. Versions 1 and 2 still load.
#   4 — metrics may be "signed" (closer to zero is better: ranked by |value|); a reader that
#       ignored it would rank -50% above +1%, so older readers must refuse. 1-3 still load.
#       Within 4, a variant may carry "control": true (a check of the method, never named
#       a winner in findings); a reader that ignores it loses nothing else, so no new version.
#       Within 4, a benchmark info may carry "definition" (a benchmark built at run time by
#       `bakeoff cmd`, rebuilt from it by --resume); reports need nothing from it.
#       Within 4, a benchmark info may carry "questions" (Benchmark.questions) and a variant
#       "diagnostic": true; a reader that ignores them reports the generic findings only.
#       Within 4, a run may carry "timings" (where its time went: set-up, each benchmark's
#       parts, the time left it said); a reader that ignores it loses no figure.
#       Within 4, a metric may carry "subtracted" (what was taken off each value, floored at
#       0: cmd's shell start-up); a reader that ignores it shows the figures as before.
#       Within 4, a metric may carry "net": true (Metric.net: a difference to a reference
#       measured beside it, which may be 0 or below); a reader that ignores it puts a net
#       metric whose trial medians are all positive on log scale, as before.
#       Within 4, a trial may carry "contention" (Contention: CPU time, run-queue wait, steal,
#       involuntary switches, load) and the run "retaken", the trials measured again because
#       they waited too long for a CPU (each with "retaken_because"; in trials.jsonl as
#       lines with that key). A reader that ignores them analyses the same trials.
#       Within 4, a trial's contention may carry "trial_cpus" (the CPUs claimed for it,
#       which bound the wait other work can have caused); without it, the CPUs online.
SCHEMA_VERSION = 4

RESULTS_JSON = "results.json"
TRIALS_JOURNAL = "trials.jsonl"
# A run appends every trial to disk: refuse to start with less room than this.
MIN_FREE_BYTES = 64 * 1024**2
SAMPLES_CSV = "samples.csv"
COUNTED_CSV = "counted.csv"  # the counted samples; see SamplesCsv


def utc_stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def prepare_run_dir(out: Path | None, label: str, results_root: Path) -> Path:
    """Create the run's directory and prove it is writable before anything is measured."""
    target = out if out is not None else results_root / f"{utc_stamp()}-{label}"
    if target.exists() and not target.is_dir():
        raise UsageError(f"--out {target}: exists and is not a directory; choose another path")
    if target.is_dir() and (target / RESULTS_JSON).exists():
        raise UsageError(f"--out {target}: already holds a run; choose an empty or new directory")
    for part in (target, *target.parents):
        # mkdir would say only "File exists" for these.
        if part.is_symlink() and not part.exists():
            raise UsageError(f"--out {target}: {part} is a symbolic link to "
                             f"{os.readlink(part)}, which does not exist; choose another path")
        if part != target and part.exists() and not part.is_dir():
            raise UsageError(f"--out {target}: {part} is not a directory; choose another path")
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target, prefix=".write-test-"):
            pass
        free = shutil.disk_usage(target).free
    except OSError as exc:
        raise UsageError(
            f"--out {target}: cannot write there ({exc.strerror}); choose a writable directory"
        ) from None
    if free < MIN_FREE_BYTES:
        raise UsageError(f"--out {target}: only {free // 1024**2} MiB free; results need at "
                         f"least {MIN_FREE_BYTES // 1024**2} MiB: free space or choose another disk")
    return target


# ---- JSON form ------------------------------------------------------------------------


def _trial_to_json(t: Trial) -> dict[str, Any]:
    return {
        "case": t.case.to_json(),
        "index": t.index,
        "round": t.round,
        "status": t.status,
        "started_at": t.started_at,
        "wall_s": t.wall_s,
        "exit_code": t.exit_code,
        "samples": t.samples,
        "counters": t.counters,
        "meta": t.meta,
        "rusage": None if t.rusage is None else {
            "user_s": t.rusage.user_s, "sys_s": t.rusage.sys_s,
            "max_rss_kib": t.rusage.max_rss_kib},
        "error": t.error,
        "stderr_tail": t.stderr_tail,
        "sample_counts": t.sample_counts,
        **({} if t.contention is None else {"contention": dataclasses.asdict(t.contention)}),
        **({} if t.retaken_because is None else {"retaken_because": t.retaken_because}),
    }


def _info_to_json(info: BenchmarkInfo) -> dict[str, Any]:
    # A room's info has no definition: left out, so its results.json stays as older
    # readers know it.
    return {k: v for k, v in vars(info).items() if not (k == "definition" and v is None)}


def run_to_json(run: RunRecord) -> dict[str, Any]:
    return {
        "schema_version": run.schema_version,
        "run_id": run.run_id,
        "status": run.status,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "argv": run.argv,
        "profile": run.profile,
        "seed": run.seed,
        "host": run.host,
        "warnings": run.warnings,
        "benchmarks": {name: _info_to_json(info) for name, info in run.benchmarks.items()},
        "cases": [c.to_json() for c in run.cases],
        "skips": [{"case": s.case.to_json(), "reason": s.reason} for s in run.skips],
        "trials": [_trial_to_json(t) for t in run.trials],
        "settings": vars(run.settings),
        "stop_reason": run.stop_reason,
        "capped": [c.to_json() for c in run.capped],
        "timings": run.timings,
        "retaken": [_trial_to_json(t) for t in run.retaken],
    }


def _finite_numbers(values: Iterable[Any], where: str) -> list[float]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ValueError(f"{where}: {v!r} is not a finite number")
        out.append(float(v))
    return out


def _trial_from_json(d: dict[str, Any]) -> Trial:
    ru = d.get("rusage")
    return Trial(
        case=Case.from_json(d["case"]),
        index=int(d["index"]),
        round=int(d["round"]),
        status=d["status"],
        started_at=str(d["started_at"]),
        wall_s=float(d["wall_s"]),
        exit_code=d["exit_code"],
        samples={str(m): _finite_numbers(v, f"trial sample {m}") for m, v in d["samples"].items()},
        counters={str(k): _finite_numbers([v], f"counter {k}")[0] for k, v in d["counters"].items()},
        meta=dict(d["meta"]),
        rusage=None if ru is None else Rusage(float(ru["user_s"]), float(ru["sys_s"]),
                                              int(ru["max_rss_kib"])),
        error=d.get("error"),
        stderr_tail=str(d.get("stderr_tail", "")),
        sample_counts={str(m): _count(n, m) for m, n in d.get("sample_counts", {}).items()},
        contention=_contention_from_json(d.get("contention")),
        retaken_because=d.get("retaken_because"),
    )


def _contention_from_json(d: dict[str, Any] | None) -> Contention | None:
    if d is None:
        return None
    delay = d.get("run_delay_s")
    return Contention(cpu_s=float(d["cpu_s"]),
                      run_delay_s=None if delay is None else float(delay),
                      steal_s=float(d["steal_s"]), nivcsw=int(d["nivcsw"]),
                      load=float(d["load"]), cpus=int(d["cpus"]),
                      trial_cpus=int(d.get("trial_cpus", 0)))


def _count(value: Any, metric: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"sample count of {metric}: {value!r} is not a positive integer")
    return value


class NewerSchema(ValueError):
    pass


def _known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    """The keys of d that are fields of the dataclass cls. The schema lets a newer bakeoff
    of the same version add keys (schema.py: "other keys allowed"); an older one reads on
    without them instead of refusing the whole file."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def run_from_json(d: dict[str, Any]) -> RunRecord:
    version = d.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError("no schema_version")
    if version > SCHEMA_VERSION:
        raise NewerSchema(f"schema version {version} is newer than this bakeoff reads "
                          f"({SCHEMA_VERSION})")
    schema.check_run(d)
    return RunRecord(
        schema_version=version,
        run_id=str(d["run_id"]),
        status=d["status"],
        started_at=str(d["started_at"]),
        finished_at=d.get("finished_at"),
        argv=list(d["argv"]),
        profile=str(d["profile"]),
        seed=int(d["seed"]),
        host=dict(d["host"]),
        warnings=[str(w) for w in d["warnings"]],
        benchmarks={name: BenchmarkInfo(**_known(BenchmarkInfo, info))
                    for name, info in d["benchmarks"].items()},
        cases=[Case.from_json(c) for c in d["cases"]],
        skips=[Skip(Case.from_json(s["case"]), str(s["reason"])) for s in d["skips"]],
        trials=[_trial_from_json(t) for t in d["trials"]],
        settings=RunSettings(**_known(RunSettings, d.get("settings", {}))),
        stop_reason=d.get("stop_reason"),
        capped=[Case.from_json(c) for c in d.get("capped", [])],
        timings=dict(d.get("timings") or {}),
        retaken=[_trial_from_json(t) for t in d.get("retaken", [])],
    )


# ---- files ----------------------------------------------------------------------------


def write_atomic(path: Path, text: str) -> None:
    """Write via a temp file in the same directory, fsync, and rename it into place, so a
    reader (or a crash, or a full disk) never sees half a file and the older one survives."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # os.open with 0o666 lets the umask decide permissions, as a plain open() would
    # (mkstemp's 0600 would keep results from the colleagues they are written for).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def save(run: RunRecord, run_dir: Path) -> None:
    """Replace results.json whole, every trial in it. On a full disk the previous file
    stays as it was (and the journal keeps the trials since)."""
    try:
        write_atomic(run_dir / RESULTS_JSON,
                     json.dumps(run_to_json(run), indent=1, allow_nan=False))
    except OSError as exc:
        raise UsageError(f"cannot write {run_dir / RESULTS_JSON} ({exc.strerror}); the "
                         "trials measured so far are kept on disk; free space, then bakeoff "
                         f"run --resume {run_dir}") from None


def finish(run: RunRecord, run_dir: Path) -> None:
    """The run stopped: results.json takes every trial, the journal goes. A crash between
    the two is harmless: loading skips journal lines results.json already has."""
    save(run, run_dir)
    (run_dir / TRIALS_JOURNAL).unlink(missing_ok=True)


def append_trial(trial: Trial, run_dir: Path) -> None:
    """One line in the journal, fsynced before the next trial starts."""
    line = json.dumps(_trial_to_json(trial), allow_nan=False, separators=(",", ":")) + "\n"
    try:
        fd = os.open(run_dir / TRIALS_JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise UsageError(f"cannot write {run_dir / TRIALS_JOURNAL} ({exc.strerror}); the "
                         "trials before this one are kept; free space, then bakeoff run "
                         f"--resume {run_dir}") from None


def _journal_trials(path: Path) -> list[Any]:
    """The journal's trials. Only the last line may be torn (a kill mid-append), and then
    only if the file does not end with a newline: that line is dropped, nothing else."""
    if not path.is_file():
        return []
    raw = path.read_bytes()
    lines = raw.split(b"\n")[:-1]  # what follows the last newline is b"", or a torn line
    out = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line, parse_constant=_reject_constant))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{TRIALS_JOURNAL} line {lineno}: {exc}") from None
    return out


def load_json(run_dir: Path) -> dict[str, Any]:
    """results.json as a dict, with the journal's trials merged in (each (case, index)
    once). The plain-data form of load(), for tools that want the JSON."""
    data = json.loads((run_dir / RESULTS_JSON).read_text(encoding="utf-8"),
                      parse_constant=_reject_constant)
    if not isinstance(data, dict):
        raise ValueError("top level is not an object")
    trials = data.get("trials")
    if not isinstance(trials, list):
        return data  # the shape check names what is wrong
    retaken = data.setdefault("retaken", [])
    if not isinstance(retaken, list):
        return data
    seen = {_trial_key(t) for t in [*trials, *retaken]}
    for t in _journal_trials(run_dir / TRIALS_JOURNAL):
        if _trial_key(t) not in seen:
            seen.add(_trial_key(t))
            (retaken if "retaken_because" in t else trials).append(t)
    return data


def _trial_key(t: Any) -> str:
    if not isinstance(t, dict):
        raise ValueError(f"a trial is {type(t).__name__}, not an object")
    # A retaken attempt shares its trial's (case, index); when it started tells them apart.
    return json.dumps([t["case"], t["index"], t.get("retaken_because") and t.get("started_at")],
                      sort_keys=True)


def load(run_dir: Path) -> RunRecord:
    """Load and validate a results directory; any problem is a UsageError naming the fix."""
    path = run_dir / RESULTS_JSON
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such results directory; give one written by bakeoff run")
    if not path.is_file():
        raise UsageError(f"{run_dir}: has no {RESULTS_JSON}; give a directory written by bakeoff run")
    try:
        return run_from_json(load_json(run_dir))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror}); check its permissions") from None
    except NewerSchema as exc:
        raise UsageError(f"{path}: {exc}; upgrade bakeoff to read it") from None
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
        what = f"{exc} is missing" if isinstance(exc, KeyError) else str(exc)
        raise UsageError(f"{path}: unreadable results ({what}); re-run bakeoff run to "
                         "produce it again") from None


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} in results")


class SamplesCsv:
    """samples.csv: tidy rows, one per measured sample, appended as each trial finishes; and
    beside it counted.csv, the counted samples (counted.<metric>, per_op.<counter>) in the
    same shape, its column 'name' (not 'metric': they are not the metric's values). Only a
    run that took counted samples has counted.csv."""

    def __init__(self, path: Path, param_names: list[str]) -> None:
        self.path = path
        self.counted_path = path.with_name(path.name.replace(SAMPLES_CSV, COUNTED_CSV))
        self.param_names = param_names
        if not path.exists():
            with path.open("w", newline="") as f:
                csv.writer(f).writerow(self.header())

    def header(self, counted: bool = False) -> list[str]:
        return _header(self.param_names, counted)

    def row_key(self, case: Case, index: int) -> list[str]:
        """The columns before metric and value, as the CSV holds them (text)."""
        return _row_key(self.param_names, case, index)

    def append(self, case: Case, index: int, samples: Mapping[str, Iterable[float]]) -> None:
        key = self.row_key(case, index)
        path = self.path
        try:
            with path.open("a", newline="") as f:
                _write_rows(csv.writer(f), key, samples, counted=False)
            if any(is_counted(m) for m in samples):
                path = self.counted_path
                fresh = not path.exists()
                with path.open("a", newline="") as f:
                    w = csv.writer(f)
                    if fresh:
                        w.writerow(self.header(counted=True))
                    _write_rows(w, key, samples, counted=True)
        except OSError as exc:
            raise UsageError(f"cannot write {path} ({exc.strerror}); the trials before "
                             f"this one are kept: free space, then bakeoff run --resume "
                             f"{path.parent}") from None


def _header(param_names: list[str], counted: bool) -> list[str]:
    return ["benchmark", "variant", *param_names, "trial", "name" if counted else "metric",
            "value"]


def _row_key(param_names: list[str], case: Case, index: int) -> list[str]:
    params = dict(case.params)
    return [case.benchmark, case.variant, *(str(params.get(p, "")) for p in param_names),
            str(index)]


def _write_rows(w: Any, key: list[str], samples: Mapping[str, Iterable[float]],
                counted: bool) -> None:
    for metric, values in samples.items():
        if is_counted(metric) == counted:
            w.writerows([*key, metric, repr(v)] for v in values)


def rewrite_samples_csv(run: RunRecord, run_dir: Path, param_names: list[str]) -> SamplesCsv:
    """Before a resumed run goes on: samples.csv (and counted.csv) keep the rows of the
    recorded ok trials (dropping those of a trial a kill left unrecorded), and regain the
    rows of recorded trials they lack where the record has their every sample (runs of
    schema 2 saved the record first)."""
    recorded = {tuple(_row_key(param_names, t.case, t.index)): t for t in run.trials if t.ok}
    for counted in (False, True):
        target = run_dir / (COUNTED_CSV if counted else SAMPLES_CSV)
        if counted and not target.is_file() and not any(
                is_counted(m) for t in recorded.values() for m in t.samples):
            continue
        _rewrite(target, _header(param_names, counted), recorded, counted)
    return SamplesCsv(run_dir / SAMPLES_CSV, param_names)


def _rewrite(path: Path, header: list[str], recorded: Mapping[tuple[str, ...], Trial],
             counted: bool) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    present: set[tuple[str, ...]] = set()
    try:
        with tmp.open("w", newline="") as dst:
            w = csv.writer(dst)
            w.writerow(header)
            if path.is_file():
                with path.open(newline="") as src:
                    rows = csv.reader(src)
                    if next(rows, None) == header:
                        for row in rows:
                            key = tuple(row[:-2])
                            # A row of the other file's kind (a counted sample in a
                            # samples.csv written before counted.csv) moves to its own.
                            if len(row) == len(header) and key in recorded \
                                    and is_counted(row[-2]) == counted:
                                present.add(key)
                                w.writerow(row)
            for key, t in recorded.items():
                if key not in present and not t.sample_counts:
                    _write_rows(w, list(key), t.samples, counted)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot rewrite {path} ({exc.strerror}); free space or fix "
                         "permissions, then resume again") from None


def write_legacy_csvs(run: RunRecord, run_dir: Path) -> list[Path]:
    """CSV files in the format of the tools bakeoff replaced, one row per sample, streamed
    from samples.csv (which has every sample)."""
    written: list[Path] = []
    if not (run_dir / SAMPLES_CSV).is_file():
        return written  # a results directory copied without it: nothing to derive them from
    for name, info in run.benchmarks.items():
        spec = info.legacy_csv
        if not spec:
            continue
        # One row per sample of the first metric the columns ask for.
        metric = next(src.split(":", 1)[1] for src in spec["columns"].values()
                      if src.startswith("metric:"))
        path = run_dir / spec["filename"]
        with (run_dir / SAMPLES_CSV).open(newline="") as src, path.open("w", newline="") as dst:
            rows = csv.reader(src)
            col = {c: i for i, c in enumerate(next(rows, []))}
            w = csv.writer(dst)
            w.writerow(list(spec["columns"].keys()))
            for row in rows:
                if row[col["benchmark"]] != name or row[col["metric"]] != metric:
                    continue
                out: list[Any] = []
                for source in spec["columns"].values():
                    if source == "variant":
                        out.append(row[col["variant"]])
                    elif source.startswith("param:"):
                        out.append(row[col[source.split(":", 1)[1]]])
                    else:
                        # The replaced tools wrote whole numbers; their parsers expect that.
                        out.append(round(float(row[col["value"]])))
                w.writerow(out)
        written.append(path)
    return written
