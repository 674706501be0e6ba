"""The results directory: results.json, samples.csv and the legacy CSVs, written safely.

results.json is rewritten after every trial by write-temp, fsync, rename, so a crash or a
full disk leaves either the previous complete file or the new one, never half of one.
samples.csv is appended row by row as trials finish.
"""

from __future__ import annotations

import csv
import json
import math
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bakeoff.errors import UsageError
from bakeoff.model import BenchmarkInfo, Case, RunRecord, RunSettings, Rusage, Skip, Trial

# Changelog of results.json:
#   1 — first version: run metadata, host facts, benchmark infos, cases, skips, trials.
#   2 — settings (threshold, target_ci, max_trials, time_budget_s, pin), stop_reason,
#       capped; benchmark infos gain crossover_ratios, fits, profile. Version 1 still loads.
SCHEMA_VERSION = 2

RESULTS_JSON = "results.json"
# A run writes results.json after every trial: refuse to start with less room than this.
MIN_FREE_BYTES = 64 * 1024**2
SAMPLES_CSV = "samples.csv"


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
    }


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
        "benchmarks": {name: vars(info) for name, info in run.benchmarks.items()},
        "cases": [c.to_json() for c in run.cases],
        "skips": [{"case": s.case.to_json(), "reason": s.reason} for s in run.skips],
        "trials": [_trial_to_json(t) for t in run.trials],
        "settings": vars(run.settings),
        "stop_reason": run.stop_reason,
        "capped": [c.to_json() for c in run.capped],
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
    )


def run_from_json(d: dict[str, Any]) -> RunRecord:
    version = d.get("schema_version")
    if not isinstance(version, int):
        raise ValueError("no schema_version")
    if version > SCHEMA_VERSION:
        raise ValueError(f"schema version {version} is newer than this bakeoff reads "
                         f"({SCHEMA_VERSION}); upgrade bakeoff")
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
        benchmarks={name: BenchmarkInfo(**info) for name, info in d["benchmarks"].items()},
        cases=[Case.from_json(c) for c in d["cases"]],
        skips=[Skip(Case.from_json(s["case"]), str(s["reason"])) for s in d["skips"]],
        trials=[_trial_from_json(t) for t in d["trials"]],
        settings=RunSettings(**d.get("settings", {})),
        stop_reason=d.get("stop_reason"),
        capped=[Case.from_json(c) for c in d.get("capped", [])],
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
    """Replace results.json whole. On a full disk the previous file stays as it was."""
    try:
        write_atomic(run_dir / RESULTS_JSON,
                     json.dumps(run_to_json(run), indent=1, allow_nan=False))
    except OSError as exc:
        raise UsageError(f"cannot write {run_dir / RESULTS_JSON} ({exc.strerror}); the file "
                         "keeps the trials saved before; free space, then bakeoff run "
                         f"--resume {run_dir}") from None


def load(run_dir: Path) -> RunRecord:
    """Load and validate a results directory; any problem is a UsageError naming the fix."""
    path = run_dir / RESULTS_JSON
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such results directory; give one written by bakeoff run")
    if not path.is_file():
        raise UsageError(f"{run_dir}: has no {RESULTS_JSON}; give a directory written by bakeoff run")
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
        if not isinstance(data, dict):
            raise ValueError("top level is not an object")
        return run_from_json(data)
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise UsageError(f"{path}: unreadable results ({what}); re-run bakeoff run to "
                         "produce it again") from None


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} in results")


class SamplesCsv:
    """samples.csv: tidy rows, one per sample, appended as each trial finishes."""

    def __init__(self, path: Path, param_names: list[str]) -> None:
        self.path = path
        self.param_names = param_names
        if not path.exists():
            with path.open("w", newline="") as f:
                csv.writer(f).writerow(
                    ["benchmark", "variant", *param_names, "trial", "metric", "value"])

    def append(self, trial: Trial) -> None:
        params = dict(trial.case.params)
        try:
            with self.path.open("a", newline="") as f:
                w = csv.writer(f)
                for metric, values in trial.samples.items():
                    for v in values:
                        w.writerow([trial.case.benchmark, trial.case.variant,
                                    *(params.get(p, "") for p in self.param_names),
                                    trial.index, metric, repr(v)])
        except OSError as exc:
            # results.json (saved first) has the trial; --resume rebuilds this file from it.
            raise UsageError(f"cannot write {self.path} ({exc.strerror}); results.json keeps "
                             f"every trial: free space, then bakeoff run --resume "
                             f"{self.path.parent}") from None


def rewrite_samples_csv(run: RunRecord, run_dir: Path, param_names: list[str]) -> SamplesCsv:
    """samples.csv anew from results.json: after a kill the two may differ by one trial."""
    (run_dir / SAMPLES_CSV).unlink(missing_ok=True)
    out = SamplesCsv(run_dir / SAMPLES_CSV, param_names)
    for t in run.trials:
        if t.ok:
            out.append(t)
    return out


def write_legacy_csvs(run: RunRecord, run_dir: Path) -> list[Path]:
    """CSV files in the format of the tools bakeoff replaced, one row per sample."""
    written = []
    for name, info in run.benchmarks.items():
        spec = info.legacy_csv
        if not spec:
            continue
        rows: list[list[Any]] = []
        for t in run.trials:
            if t.case.benchmark != name or not t.ok:
                continue
            # One row per sample of the first metric the columns ask for.
            metric = next(src.split(":", 1)[1] for src in spec["columns"].values()
                          if src.startswith("metric:"))
            for v in t.samples.get(metric, []):
                row: list[Any] = []
                for src in spec["columns"].values():
                    if src == "variant":
                        row.append(t.case.variant)
                    elif src.startswith("param:"):
                        row.append(t.case.param(src.split(":", 1)[1]))
                    else:
                        # The replaced tools wrote whole numbers; their parsers expect that.
                        row.append(round(v))
                rows.append(row)
        path = run_dir / spec["filename"]
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(list(spec["columns"].keys()))
            w.writerows(rows)
        written.append(path)
    return written
