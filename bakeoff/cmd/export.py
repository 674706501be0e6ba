"""`bakeoff cmd --export-json/--export-markdown/--export-csv`: a run's commands in the shapes
a hyperfine user's scripts read, with bakeoff's figures added (n, trials, the median's 95%
CI, the ratio to the first command with its CI and verdict).

Times are in seconds, as hyperfine's JSON and CSV have them; the markdown table scales them
to one unit. Everything comes from the analysis of the recorded run, so an export says what
report.md says.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bakeoff.analysis.within_run import Analysis, CaseResult
from bakeoff.declare.model import ParamValue, RunRecord
from bakeoff.report.format import fmt_number, scale_for
from bakeoff.report.writer import write_outputs


@dataclass(frozen=True)
class Row:
    """One command at one set of params."""

    command: str  # its name (the command line itself unless --name gave one)
    command_line: str
    parameters: dict[str, ParamValue]
    wall: CaseResult
    user: CaseResult | None
    sys: CaseResult | None
    rss: CaseResult | None
    times: list[float]


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def rows(run: RunRecord, analysis: Analysis) -> list[Row]:
    out = []
    for ba in analysis.benchmarks:
        if ba.info.definition is None:
            continue
        lines = {c["name"]: c["command"] for c in ba.info.definition["commands"]}
        by_case: dict[Any, dict[str, CaseResult]] = {}
        for r in ba.results:
            by_case.setdefault(r.case, {})[r.metric] = r
        for case, metrics in by_case.items():
            wall = metrics.get("wall_time")
            if wall is None or wall.summary is None:
                continue
            times = [v for t in run.trials_of(case) if t.ok for v in t.samples.get("wall_time", [])]
            out.append(Row(case.variant, lines.get(case.variant, case.variant), dict(case.params),
                           wall, metrics.get("user_time"), metrics.get("sys_time"),
                           metrics.get("peak_rss"), times))
    return out


def _mean(r: CaseResult | None) -> float | None:
    return None if r is None or r.summary is None else r.summary.mean


def _relative(r: Row) -> tuple[float, float | None, float | None, str]:
    ratio = r.wall.vs_baseline
    if ratio is None:
        return 1.0, None, None, "baseline"
    return ratio.ratio, _finite(ratio.ci_low), _finite(ratio.ci_high), str(r.wall.verdict)


def to_json(run: RunRecord, analysis: Analysis) -> str:
    results = []
    for r in rows(run, analysis):
        s = r.wall.summary
        assert s is not None
        rel, lo, hi, verdict = _relative(r)
        results.append({
            "command": r.command, "command_line": r.command_line,
            "mean": s.mean, "stddev": s.stddev, "median": s.median,
            "median_ci_low": s.ci_low, "median_ci_high": s.ci_high,
            "user": _mean(r.user), "system": _mean(r.sys), "peak_rss_kib": _mean(r.rss),
            "min": s.min, "max": s.max, "n": s.n, "trials": s.n_trials,
            "relative": rel, "relative_ci_low": lo, "relative_ci_high": hi, "verdict": verdict,
            "times": r.times, "parameters": {k: str(v) for k, v in r.parameters.items()},
        })
    doc = {"unit": "s", "run_id": run.run_id, "seed": run.seed, "results": results}
    return json.dumps(doc, indent=2) + "\n"


def to_csv(run: RunRecord, analysis: Analysis) -> str:
    rs = rows(run, analysis)
    params = list(dict.fromkeys(k for r in rs for k in r.parameters))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["command", "mean", "stddev", "median", "user", "system", "min", "max",
                "median_ci_low", "median_ci_high", "n", "trials", "relative",
                "relative_ci_low", "relative_ci_high", *(f"parameter_{p}" for p in params)])
    for r in rs:
        s = r.wall.summary
        assert s is not None
        rel, lo, hi, _ = _relative(r)
        w.writerow([r.command, s.mean, s.stddev, s.median, _mean(r.user), _mean(r.sys), s.min,
                    s.max, s.ci_low, s.ci_high, s.n, s.n_trials, rel,
                    "" if lo is None else lo, "" if hi is None else hi,
                    *(r.parameters.get(p, "") for p in params)])
    return buf.getvalue()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "\\`").replace("\n", " ")


def to_markdown(run: RunRecord, analysis: Analysis) -> str:
    rs = rows(run, analysis)
    if not rs:
        return "No command has a measured result.\n"
    divisor, unit = scale_for(min(r.wall.summary.median for r in rs if r.wall.summary), "s")
    params = list(dict.fromkeys(k for r in rs for k in r.parameters))
    head = ["Command", *params, f"Median [{unit}] (95% CI)", f"Mean ± σ [{unit}]",
            f"Min [{unit}]", f"Max [{unit}]", "Relative (95% CI)", "n (trials)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join([":---"] * (1 + len(params))
                                                         + ["---:"] * 6) + "|"]
    for r in rs:
        s = r.wall.summary
        assert s is not None
        rel, lo, hi, verdict = _relative(r)

        def t(x: float) -> str:
            return fmt_number(x / divisor)

        relative = ("1 (baseline)" if lo is None and verdict == "baseline" else
                    f"{rel:.3f} ({lo:.3f}–{hi:.3f}) {verdict}" if lo is not None and hi is not None
                    else f"{rel:.3f}")
        lines.append("| " + " | ".join([
            f"`{_cell(r.command)}`", *(_cell(str(r.parameters.get(p, ""))) for p in params),
            f"{t(s.median)} ({t(s.ci_low)}–{t(s.ci_high)})", f"{t(s.mean)} ± {t(s.stddev)}",
            t(s.min), t(s.max), relative, f"{s.n} ({s.n_trials})"]) + " |")
    return "\n".join(lines) + "\n"


EXPORTERS = {"json": to_json, "markdown": to_markdown, "csv": to_csv}


def write(kind: str, path: Path, run: RunRecord, analysis: Analysis) -> None:
    write_outputs(path.parent, [(path.name, EXPORTERS[kind](run, analysis))])
