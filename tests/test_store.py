"""results.json: the round trip, atomic writes, and clear errors for bad directories."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from bakeoff.core.errors import UsageError
from bakeoff.declare.model import BenchmarkInfo, Case, Contention, RunRecord, Rusage, Skip, Trial
from bakeoff.report import contention as report_contention
from bakeoff.run import contention as run_contention
from bakeoff.store import results as store


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


def test_keys_a_newer_bakeoff_adds_are_read_past(tmp_path: Path) -> None:
    """schema.py allows other keys within a version: a benchmark info or settings with one
    more key loads as before instead of making the whole results file unreadable."""
    run = make_run()
    store.save(run, tmp_path)
    doc = json.loads((tmp_path / store.RESULTS_JSON).read_text())
    doc["benchmarks"]["demo"]["cpus"] = 2
    doc["benchmarks"]["demo"]["future_field"] = {"anything": [1, 2]}
    doc["settings"]["future_setting"] = True
    (tmp_path / store.RESULTS_JSON).write_text(json.dumps(doc))
    back = store.load(tmp_path)
    assert back.benchmarks == run.benchmarks and back.settings == run.settings
    assert back.trials == run.trials


def _csv_of(run: RunRecord, run_dir: Path) -> store.SamplesCsv:
    out = store.SamplesCsv(run_dir / store.SAMPLES_CSV, ["size"])
    for t in run.trials:
        if t.ok:
            out.append(t.case, t.index, t.samples)
    return out


def test_legacy_csv_has_the_seed_columns(tmp_path: Path) -> None:
    run = make_run()
    _csv_of(run, tmp_path)
    (path,) = store.write_legacy_csvs(run, tmp_path)
    assert path.read_text().splitlines() == ["size,method,ns", "4096,a,100", "4096,a,102"]


def test_samples_csv_rows(tmp_path: Path) -> None:
    _csv_of(make_run(), tmp_path)
    assert (tmp_path / "samples.csv").read_text().splitlines() == [
        "benchmark,variant,size,trial,metric,value",
        "demo,a,4096,0,ns_per_op,100.0",
        "demo,a,4096,0,ns_per_op,101.5",
    ]


def _journaled(tmp_path: Path) -> RunRecord:
    """A run as a SIGKILL leaves it: results.json from the start, trials in the journal."""
    run = make_run()
    run.status = "running"
    trials, run.trials = run.trials, []
    store.save(run, tmp_path)
    for t in trials:
        store.append_trial(t, tmp_path)
    run.trials = trials
    return run


def test_journal_trials_load_with_the_record(tmp_path: Path) -> None:
    run = _journaled(tmp_path)
    assert json.loads((tmp_path / "results.json").read_text())["trials"] == []
    assert store.load(tmp_path) == run
    # A kill between results.json taking every trial and the journal's removal: each once.
    store.save(run, tmp_path)
    assert store.load(tmp_path) == run
    store.finish(run, tmp_path)
    assert not (tmp_path / store.TRIALS_JOURNAL).exists()
    assert store.load(tmp_path) == run


def test_torn_last_journal_line_is_dropped_and_a_torn_middle_is_an_error(tmp_path: Path) -> None:
    run = _journaled(tmp_path)
    journal = tmp_path / store.TRIALS_JOURNAL
    whole = journal.read_bytes()
    journal.write_bytes(whole + b'{"case": {"bench')  # killed mid-append
    assert store.load(tmp_path).trials == run.trials
    first, second = whole.split(b"\n")[:2]
    journal.write_bytes(first[:40] + b"\n" + second + b"\n")
    with pytest.raises(UsageError, match=r"trials\.jsonl line 1"):
        store.load(tmp_path)


def test_kept_quantiles_round_trip_with_their_count(tmp_path: Path) -> None:
    run = make_run()
    run.trials[0].samples["ns_per_op"] = [1.0, 2.0, 3.0]
    run.trials[0].sample_counts = {"ns_per_op": 5_000_000}
    store.save(run, tmp_path)
    back = store.load(tmp_path)
    assert back.trials[0].n_samples("ns_per_op") == 5_000_000
    assert back.trials[1].n_samples("ns_per_op") == 0
    assert make_run().trials[0].n_samples("ns_per_op") == 2


def test_resume_rewrite_drops_unrecorded_rows_and_regains_missing_ones(tmp_path: Path) -> None:
    run = make_run()
    csv_out = _csv_of(run, tmp_path)
    # A trial whose rows reached the CSV before the kill, but never the record.
    csv_out.append(Case("demo", "a", (("size", 4096),)), 1, {"ns_per_op": [555.0]})
    store.rewrite_samples_csv(run, tmp_path, ["size"])
    rows = (tmp_path / "samples.csv").read_text().splitlines()
    assert rows == ["benchmark,variant,size,trial,metric,value",
                    "demo,a,4096,0,ns_per_op,100.0", "demo,a,4096,0,ns_per_op,101.5"]
    # A schema-2 run saved the record first: rows missing from the CSV come back from it.
    (tmp_path / "samples.csv").write_text(rows[0] + "\n")
    store.rewrite_samples_csv(run, tmp_path, ["size"])
    assert (tmp_path / "samples.csv").read_text().splitlines() == rows
    assert not list(tmp_path.glob(".samples.csv.*"))


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d.pop("trials"), "'trials' is missing"),
        (lambda d: d.update(schema_version=99), "newer than this bakeoff reads"),
        (lambda d: d.pop("schema_version"), "no schema_version"),
        (lambda d: d["trials"][0]["samples"].update(ns_per_op=["x"]), "not a finite number"),
        (lambda d: d["trials"][0].update(sample_counts={"ns_per_op": -3}),
         "trials[0].sample_counts.ns_per_op: -3 is not an integer >= 1"),
        (lambda d: d["benchmarks"]["demo"].update(metrics=[]), "benchmarks.demo.metrics: is empty"),
        (lambda d: d["cases"][0]["params"].update(size=[4096]), "is not a text or a finite number"),
        (lambda d: d["benchmarks"]["demo"].update(baseline="zz"), "not one of its variants"),
        (lambda d: d.update(seed=-1), "seed: -1 is not an integer >= 0"),
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


def test_counted_samples_go_to_counted_csv_and_a_resume_keeps_them_apart(tmp_path: Path) -> None:
    run = make_run()
    counted = {"counted.ns_per_op": [130.0], "per_op.page_faults_minor": [1.0]}
    run.trials[0].samples.update(counted)
    csv_out = store.SamplesCsv(tmp_path / store.SAMPLES_CSV, ["size"])
    for t in run.trials:
        if t.ok:
            csv_out.append(t.case, t.index, t.samples)
    measured = (tmp_path / "samples.csv").read_text().splitlines()
    assert measured == ["benchmark,variant,size,trial,metric,value",
                        "demo,a,4096,0,ns_per_op,100.0", "demo,a,4096,0,ns_per_op,101.5"]
    both = ["benchmark,variant,size,trial,name,value",
            "demo,a,4096,0,counted.ns_per_op,130.0", "demo,a,4096,0,per_op.page_faults_minor,1.0"]
    assert (tmp_path / store.COUNTED_CSV).read_text().splitlines() == both
    # A kill left rows of an unrecorded trial in both files: the resume drops them; a
    # samples.csv from before counted.csv existed gives its counted rows to counted.csv.
    csv_out.append(Case("demo", "a", (("size", 4096),)), 1,
                   {"ns_per_op": [555.0], "counted.ns_per_op": [556.0]})
    (tmp_path / store.COUNTED_CSV).unlink()
    with (tmp_path / "samples.csv").open("a") as f:
        f.write("demo,a,4096,0,counted.ns_per_op,130.0\n")
    store.rewrite_samples_csv(run, tmp_path, ["size"])
    assert (tmp_path / "samples.csv").read_text().splitlines() == measured
    assert (tmp_path / store.COUNTED_CSV).read_text().splitlines() == both
    assert not list(tmp_path.glob(".*.csv.*"))


def test_a_run_without_counted_samples_has_no_counted_csv(tmp_path: Path) -> None:
    run = make_run()
    csv_out = _csv_of(run, tmp_path)
    store.rewrite_samples_csv(run, tmp_path, ["size"])
    assert csv_out.path.is_file() and not (tmp_path / store.COUNTED_CSV).exists()


def _contended(run: RunRecord) -> RunRecord:
    """make_run() with each trial's contention, and one attempt retaken for waiting."""
    strain = Contention(cpu_s=0.03, run_delay_s=0.05, steal_s=0.0, nivcsw=3, load=9.5, cpus=2)
    run.trials = [dataclasses.replace(t, contention=strain) for t in run.trials]
    first = run.trials[0]
    run.retaken = [dataclasses.replace(
        first, started_at="2026-01-01T00:00:00.500+00:00", samples={}, counters={}, meta={},
        retaken_because="its processes waited 50% of its wall time for a CPU (retaken above 25%)")]
    return run


def test_contention_and_retaken_trials_round_trip_and_journal(tmp_path: Path) -> None:
    run = _contended(make_run())
    for name in ("saved", "older"):
        (tmp_path / name).mkdir()
    store.save(run, tmp_path / "saved")
    assert store.load(tmp_path / "saved") == run
    # In the journal, a retaken attempt shares its trial's (case, index): both are kept,
    # each in its own list.
    journaled = tmp_path / "journal"
    journaled.mkdir()
    bare = dataclasses.replace(run, status="running", trials=[], retaken=[])
    store.save(bare, journaled)
    for t in [*run.retaken, *run.trials]:
        store.append_trial(t, journaled)
    back = store.load(journaled)
    assert back.trials == run.trials and back.retaken == run.retaken
    # A record from before contention was measured loads as before: none recorded.
    older = make_run()
    store.save(older, tmp_path / "older")
    loaded = store.load(tmp_path / "older")
    assert all(t.contention is None for t in loaded.trials) and loaded.retaken == []


def test_contention_sentence_and_retake_rule() -> None:
    strain = Contention(cpu_s=0.5, run_delay_s=0.4, steal_s=0.0, nivcsw=3, load=9.5, cpus=2)
    assert strain.wait_share(1.0) == pytest.approx(0.4)
    assert run_contention.retake_reason(strain, 1.0, 0.25) is not None
    assert run_contention.retake_reason(strain, 1.0, 0.5) is None
    assert run_contention.retake_reason(strain, 1.0, None) is None
    run = _contended(make_run())
    rc = report_contention.of_run(run)
    assert rc is not None and rc.retaken == 1 and rc.contended
    line = report_contention.sentence(rc)
    assert line.startswith("Contended: trial processes waited ") and "1 trial retaken" in line
    assert report_contention.of_run(make_run()) is None  # an older record: nothing to say
