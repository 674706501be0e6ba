"""results.json: the round trip, atomic writes, and clear errors for bad directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bakeoff import store
from bakeoff.errors import UsageError
from bakeoff.model import BenchmarkInfo, Case, RunRecord, Rusage, Skip, Trial


def make_run() -> RunRecord:
    info = BenchmarkInfo(
        name="demo", title="Demo", summary="s", baseline="a",
        variants=[{"name": "a", "description": ""}, {"name": "b", "description": ""}],
        params=[{"name": "size", "kind": "bytes", "unit": "B", "description": ""}],
        metrics=[{"name": "ns_per_op", "unit": "ns", "description": "", "lower_is_better": True}],
        legacy_csv={"filename": "result.csv",
                    "columns": {"size": "param:size", "method": "variant", "ns": "metric:ns_per_op"}},
    )
    case_a = Case("demo", "a", (("size", 4096),))
    case_b = Case("demo", "b", (("size", 4096),))
    trials = [
        Trial(case_a, 0, 0, "ok", "2026-01-01T00:00:00+00:00", 0.1, 0,
              {"ns_per_op": [100.0, 101.5]}, {"faults": 2.0}, {"batch": 4},
              Rusage(0.01, 0.02, 2048)),
        Trial(case_b, 0, 0, "failed", "2026-01-01T00:00:01+00:00", 0.2, 1, {}, {}, {},
              Rusage(0.0, 0.0, 1024), error="exit status 1: boom", stderr_tail="boom\n"),
    ]
    return RunRecord(
        schema_version=store.SCHEMA_VERSION, run_id="r1", status="complete",
        started_at="2026-01-01T00:00:00+00:00", finished_at="2026-01-01T00:00:02+00:00",
        argv=["bakeoff", "run"], profile="quick", seed=5, host={"hostname": "h", "cores": 2},
        warnings=["virtualised"], benchmarks={"demo": info}, cases=[case_a, case_b],
        skips=[Skip(Case("demo", "c", (("size", 4096),)), "needs thp")], trials=trials,
    )


def test_round_trip(tmp_path: Path) -> None:
    run = make_run()
    store.save(run, tmp_path)
    back = store.load(tmp_path)
    assert back == run
    assert not list(tmp_path.glob(".*.tmp"))  # the temp file was renamed, not left


def test_legacy_csv_has_the_seed_columns(tmp_path: Path) -> None:
    run = make_run()
    (path,) = store.write_legacy_csvs(run, tmp_path)
    assert path.read_text().splitlines() == ["size,method,ns", "4096,a,100", "4096,a,102"]


def test_samples_csv_rows(tmp_path: Path) -> None:
    run = make_run()
    out = store.SamplesCsv(tmp_path / "samples.csv", ["size"])
    out.append(run.trials[0])
    assert (tmp_path / "samples.csv").read_text().splitlines() == [
        "benchmark,variant,size,trial,metric,value",
        "demo,a,4096,0,ns_per_op,100.0",
        "demo,a,4096,0,ns_per_op,101.5",
    ]


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d.pop("trials"), "missing field 'trials'"),
        (lambda d: d.update(schema_version=99), "newer than this bakeoff reads"),
        (lambda d: d.pop("schema_version"), "no schema_version"),
        (lambda d: d["trials"][0]["samples"].update(ns_per_op=["x"]), "not a finite number"),
    ],
)
def test_bad_results_are_usage_errors(tmp_path: Path, mutate, needle: str) -> None:  # type: ignore[no-untyped-def]
    data = store.run_to_json(make_run())
    mutate(data)
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(UsageError) as err:
        store.load(tmp_path)
    assert needle in str(err.value)


def test_nan_truncated_and_missing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such results directory"):
        store.load(tmp_path / "nope")
    with pytest.raises(UsageError, match=r"has no results\.json"):
        store.load(tmp_path)
    text = json.dumps(store.run_to_json(make_run()))
    (tmp_path / "results.json").write_text(text[: len(text) // 2])
    with pytest.raises(UsageError, match="unreadable results"):
        store.load(tmp_path)
    (tmp_path / "results.json").write_text(text.replace("101.5", "NaN"))
    with pytest.raises(UsageError, match="NaN"):
        store.load(tmp_path)


def test_prepare_run_dir_refuses_unwritable_and_used(tmp_path: Path) -> None:
    used = tmp_path / "used"
    used.mkdir()
    (used / "results.json").write_text("{}")
    with pytest.raises(UsageError, match="already holds a run"):
        store.prepare_run_dir(used, "x", tmp_path)
    afile = tmp_path / "file"
    afile.write_text("")
    with pytest.raises(UsageError, match="not a directory"):
        store.prepare_run_dir(afile, "x", tmp_path)
    made = store.prepare_run_dir(None, "label", tmp_path / "results")
    assert made.parent == tmp_path / "results" and made.name.endswith("-label")
