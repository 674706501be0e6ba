"""`bakeoff selftest --of DIR`: the run-to-run drift of one `bakeoff cmd` run's own commands,
measured on this host and kept with that run (DIR/drift.json), dated.

The drift a comparison of one run a side must allow for depends on the command (its length,
what it waits on) and on the load at the time; one figure measured on another command and
applied to every later comparison (what bakeoff did before) was wrong by a factor of several
within minutes. So it is measured for the run it will be used with: DIR's commands, scans and
counts run again back to back, each run against the next (and DIR itself against the first
of them, when it was recorded on this host: the gap since it ran is drift too). `bakeoff
compare` then finds it beside DIR's results.json and prints which it used.
"""

from __future__ import annotations

import itertools
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from bakeoff.analysis.across_runs import compare_runs
from bakeoff.app import runs as app_runs
from bakeoff.app.request import RunRequest
from bakeoff.cmd import definition as adhoc
from bakeoff.core.errors import UsageError
from bakeoff.declare.model import RunRecord
from bakeoff.stats import drift, load_metrics
from bakeoff.store import results as store

# Metrics whose drift is kept beside the primary one's when the run recorded them: those
# that decide better than wall time on a busy machine (stats/load_metrics.py).
UNDER_LOAD = load_metrics.BETTER_UNDER_LOAD


def pair_terms(records: list[RunRecord], threshold: float, metric: str | None = None,
               ) -> tuple[list[float], list[float], list[str]]:
    """Per consecutive run pair: the root of its cases' mean squared log ratio, its cases'
    mean within-run variance (the pair is the unit: its cases share the runs' drift), and
    the case keys they came from. `metric`: of that metric (default: the primary one)."""
    diffs: list[float] = []
    within: list[float] = []
    keys: set[str] = set()
    for old, new in itertools.pairwise(records):
        cs = [c for c in compare_runs(old, new, threshold, metric=metric).changes
              if c.ratio.ratio > 0]
        ses = [drift.log_se_of_ci(c.ratio.ci_low, c.ratio.ci_high) for c in cs]
        if not cs or not all(math.isfinite(se) for se in ses):
            continue
        diffs.append(math.sqrt(sum(math.log(c.ratio.ratio) ** 2 for c in cs) / len(cs)))
        within.append(sum(se * se for se in ses) / len(ses))
        keys.update(c.case.key for c in cs)
    return diffs, within, sorted(keys)


def _cmd_benchmark(run: RunRecord, run_dir: Path) -> tuple[str, adhoc.Definition,
                                                            dict[str, object]]:
    recorded = [(name, info) for name, info in run.benchmarks.items()
                if info.definition is not None]
    if len(recorded) != 1 or len(run.benchmarks) != 1:
        raise UsageError(f"selftest --of {run_dir}: not a `bakeoff cmd` run; --of measures a "
                         "cmd run's commands again (for a room's run, compare two or more "
                         "runs a side with --old/--new)")
    name, info = recorded[0]
    return name, adhoc.Definition.from_json(info.definition or {}), dict(info.profile)


def measure(run_dir: Path, runs: int, threshold: float, say: Callable[[str], None],
            seed: int = 1) -> drift.Drift:
    """Run DIR's commands `runs` times back to back (in a temporary directory, removed on
    every exit), estimate the drift of its primary metric and record it with DIR."""
    first = store.load(run_dir)
    name, defn, counts = _cmd_benchmark(first, run_dir)
    adhoc.check(defn)
    metric = first.benchmarks[name].primary_metric
    tmp = Path(tempfile.mkdtemp(prefix="bakeoff-drift-"))
    try:
        here = drift.host_key(first.host)
        records: list[RunRecord] = []
        for i in range(runs):
            say(f"selftest --of: run {i + 1} of {runs}")
            bench = adhoc.benchmark(defn, int(str(counts.get("trials", 10))),
                                    int(str(counts.get("samples", 10))),
                                    int(str(counts.get("warmup_samples", 1))),
                                    int(str(counts.get("warmup_trials", 1))),
                                    float(str(counts.get("timeout_s", 600))))
            run, _ = app_runs.start(RunRequest(out=tmp / f"run-{i + 1}", quiet=True,
                                               seed=seed + i), [bench])
            if app_runs.say_failed(run):
                raise UsageError(f"selftest --of: run {i + 1} had failed trials; fix the "
                                 "command (see its report above), then measure again")
            records.append(run)
        now_here = drift.host_key(records[0].host)
        # DIR itself, first, when it ran here: the time since is part of what drifts.
        chain = [first, *records] if here and here == now_here else records
        diffs, within, keys = pair_terms(chain, threshold)
        if not diffs:
            raise UsageError(f"selftest --of {run_dir}: no run pair gave a ratio (every "
                             "median at 0?); nothing to record")
        how = (f"bakeoff selftest --of: {len(chain)} runs of its commands back to back"
               f"{' (the run itself first)' if len(chain) > runs else ''}, "
               f"{counts.get('trials', 10)} trials x {counts.get('samples', 10)} executions")
        found = drift.Drift(drift.estimate_sigma(diffs, within), len(diffs), now_here,
                            store.utc_now(), how, name, metric, tuple(keys))
        drift.save_drift(run_dir, found)
        # The same runs give the drift of the metrics a busy machine moves less, when the run
        # recorded them: `compare --metric M` of one run a side then has one too.
        recorded = {m["name"] for m in first.benchmarks[name].metrics}
        for other in (m for m in UNDER_LOAD if m != metric and m in recorded):
            d_other, w_other, k_other = pair_terms(chain, threshold, metric=other)
            if d_other:
                kept = drift.Drift(drift.estimate_sigma(d_other, w_other), len(d_other),
                                   now_here, store.utc_now(), how, name, other,
                                   tuple(k_other))
                drift.save_drift(run_dir, kept)
                say(f"selftest --of: drift of {name} {other}: {kept.words()}, kept too")
        return found
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
