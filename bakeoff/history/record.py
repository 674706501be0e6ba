"""A results directory put into the history: `record_run()` after a run (run, cmd, each fleet
host), `record_dirs()` for `bakeoff history add`.

What is recorded of a run: its identity (run id, start, machine), its labels (the run's own,
results.json settings "labels", and those given now: the latter win), and every ok trial's
values of every metric the benchmark declares, one series per benchmark, variant, params,
metric and machine. Counted samples (counted.*, per_op.*) are a disturbed copy of the same
measurement and are not recorded; failed trials have no values to record.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bakeoff.core.errors import UsageError
from bakeoff.declare.model import RunRecord
from bakeoff.history import fingerprint
from bakeoff.history.store import History, RunEntry, SeriesKey, TrialValues, open_history
from bakeoff.store import results as store

_LABEL_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def parse_labels(items: Iterable[str]) -> dict[str, str]:
    """--label KEY=VALUE, repeatable; a key given twice takes its last value."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not _LABEL_KEY.fullmatch(key):
            raise UsageError(f"--label {item!r}: give KEY=VALUE with a key of letters, digits, "
                             "'_', '.', '-' (e.g. --label commit=abc123)")
        out[key] = value
    return out


def _recorded_labels(settings: Any) -> dict[str, str]:
    """The run's own labels (RunSettings.labels, `--label` at run time): a mapping, or a list
    of KEY=VALUE; none in a record made before runs had labels."""
    labels = settings.get("labels") if isinstance(settings, Mapping) else None
    if isinstance(labels, Mapping):
        return {str(k): str(v) for k, v in labels.items()}
    if isinstance(labels, list):
        return parse_labels(str(x) for x in labels)
    return {}


def run_key(run: RunRecord, machine: fingerprint.Fingerprint) -> str:
    """The same run read twice (or from a copy of its directory) gives the same key: its id,
    its start to the millisecond and the machine it ran on."""
    text = json.dumps([run.run_id, run.started_at, machine.key, run.host.get("boot_id", "")])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def entry_of(run_dir: Path, labels: Mapping[str, str], recorded_at: str) -> RunEntry:
    """The history's record of one results directory (a UsageError when it is none)."""
    run = store.load(run_dir)
    if run.status == "running":
        raise UsageError(f"{run_dir}: the run has not finished (status running); record it once "
                         "it ends, or `bakeoff run --resume` it first")
    settings = store.load_json(run_dir).get("settings")
    all_labels = {**_recorded_labels(settings), **labels}
    machine = fingerprint.of_host(run.host, all_labels.get(fingerprint.FLEET_HOST_LABEL, ""))
    trials: list[TrialValues] = []
    for t in run.trials:
        if not t.ok:
            continue
        info = run.benchmarks.get(t.case.benchmark)
        if info is None:
            continue
        for order, m in enumerate(info.metrics):
            values = t.samples.get(m["name"])
            if not values:
                continue
            key = SeriesKey(t.case.benchmark, t.case.variant,
                            SeriesKey.canonical(dict(t.case.params)), m["name"], order,
                            str(m.get("unit", "")), bool(m.get("lower_is_better", True)),
                            info.baseline)
            trials.append(TrialValues(key, t.index, t.round, list(values), t.n_samples(m["name"])))
    if not trials:
        raise UsageError(f"{run_dir}: the run has no ok trial to record; give a run that "
                         "measured something")
    return RunEntry(
        run_key=run_key(run, machine), run_id=run.run_id, started_at=run.started_at,
        finished_at=run.finished_at, status=run.status, profile=run.profile, argv=run.argv,
        source=str(run_dir.resolve()), recorded_at=recorded_at, machine=machine,
        facts=run.host, labels=all_labels, trials=trials)


@dataclass(frozen=True)
class Recorded:
    run_dir: Path
    run_key: str
    added: bool  # False: the run was there already (its labels merged)
    series: int
    trials: int


def record_into(history: History, run_dir: Path, labels: Mapping[str, str]) -> Recorded:
    entry = entry_of(run_dir, labels, store.utc_now())
    added = history.add(entry)
    return Recorded(run_dir, entry.run_key, added, len({t.series for t in entry.trials}),
                    len(entry.trials))


def record_run(run_dir: Path, history_url: str | None,
               labels: Mapping[str, str] | None = None) -> Recorded:
    """Record a finished run in the history at `history_url` (None: the default file)."""
    with open_history(history_url) as history:
        return record_into(history, run_dir, labels or {})


def record_dirs(run_dirs: Iterable[Path], history_url: str | None,
                labels: Mapping[str, str]) -> list[Recorded]:
    """`bakeoff history add`: every directory checked first (a bad one records none), then
    each recorded in its own transaction."""
    dirs = list(run_dirs)
    for d in dirs:
        if not (d / store.RESULTS_JSON).is_file():
            hint = " (a fleet run: give its hosts/* directories)" if (d / "hosts").is_dir() else ""
            raise UsageError(f"{d}: no {store.RESULTS_JSON} here{hint}; give directories "
                             "written by bakeoff run or bakeoff cmd")
    with open_history(history_url) as history:
        return [record_into(history, d, labels) for d in dirs]
