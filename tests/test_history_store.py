"""The history store (bakeoff/history/): the same tests against an SQLite file and a real
PostgreSQL server (started here, tests/pg_server.py): recording real runs, reading back every
trial value, the same run twice as one record, labels, the machine fingerprint, and the
schema's migration from version 1 with its data intact."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from bakeoff.core.errors import UsageError
from bakeoff.history import changes_selftest, fingerprint, listing, schema
from bakeoff.history.record import parse_labels, record_dirs, record_run
from bakeoff.history.store import SeriesKey, open_history, parse_location
from conftest import assert_usage_error, run_bakeoff

# The fixtures history_url and postgres: each test on an SQLite file and on a PostgreSQL
# server of the module's own.
pytest_plugins = ["pg_server"]

RUNS = Path(__file__).resolve().parent / "fixtures" / "fleet_runs"  # two real recorded runs


def _copy(run: str, tmp_path: Path, name: str, **host: object) -> Path:
    """A copy of a recorded run, its host facts changed as given (another machine's run)."""
    dest = tmp_path / name
    shutil.copytree(RUNS / run, dest)
    data = json.loads((dest / "results.json").read_text())
    data["host"].update(host)
    (dest / "results.json").write_text(json.dumps(data))
    return dest


def _trial_values(run_dir: Path, variant: str, params: dict[str, object],
                  metric: str) -> list[list[float]]:
    data = json.loads((run_dir / "results.json").read_text())
    return [t["samples"][metric] for t in sorted(data["trials"], key=lambda t: t["index"])
            if t["status"] == "ok" and t["case"]["variant"] == variant
            and t["case"]["params"] == params]


def test_every_trial_value_reads_back(history_url: str) -> None:
    recorded = record_dirs([RUNS / "a", RUNS / "b"], history_url, {"commit": "abc123"})
    assert [r.added for r in recorded] == [True, True]
    with open_history(history_url) as h:
        assert h.version() == schema.CURRENT
        assert h.run_count() == 2
        series = h.series()
        data = json.loads((RUNS / "a" / "results.json").read_text())
        info = data["benchmarks"]["mremap-vs-memcpy"]
        cases = {(c["variant"], json.dumps(c["params"], sort_keys=True)) for c in data["cases"]}
        # a series per case and declared metric, at least (run b may add cases)
        assert len(series) >= len(cases) * len(info["metrics"]) > 0
        # a case both runs measured
        s = next(s for s in series if s.metric_order == 0 and s.params == {"size": 4096}
                 and s.variant == "memcpy")
        assert s.metric == info["metrics"][0]["name"]
        assert s.unit == info["metrics"][0]["unit"]
        runs = h.runs_of(s)
        assert [r.labels for r in runs] == [{"commit": "abc123"}] * 2
        assert runs[0].started_at < runs[1].started_at
        for run, run_dir in zip(runs, (RUNS / "a", RUNS / "b"), strict=True):
            assert run.trials == _trial_values(run_dir, s.variant, s.params, s.metric)


def test_the_same_run_twice_is_one_record(history_url: str) -> None:
    first = record_run(RUNS / "a", history_url, {"commit": "abc123", "ci": "1"})
    again = record_run(RUNS / "a", history_url, {"commit": "def456"})
    assert first.added and not again.added and first.run_key == again.run_key
    with open_history(history_url) as h:
        assert h.run_count() == 1
        assert h.labels_of(first.run_key) == {"ci": "1", "commit": "def456"}
        s = h.series()[0]
        assert len(h.runs_of(s)) == 1 and s.machine_name.startswith("vm/")
        assert h.runs_of(s)[0].trials == _trial_values(RUNS / "a", s.variant, s.params, s.metric)


def test_labels_recorded_by_the_run_and_given_now(history_url: str, tmp_path: Path) -> None:
    run = _copy("a", tmp_path, "labelled")
    data = json.loads((run / "results.json").read_text())
    data["settings"]["labels"] = {"commit": "from-run", "branch": "main"}
    (run / "results.json").write_text(json.dumps(data))
    rec = record_run(run, history_url, {"commit": "given"})
    with open_history(history_url) as h:
        assert h.labels_of(rec.run_key) == {"branch": "main", "commit": "given"}


def test_a_new_kernel_or_microcode_starts_new_series(history_url: str, tmp_path: Path) -> None:
    record_run(RUNS / "a", history_url)
    record_run(_copy("a", tmp_path, "renamed", hostname="renamed", machine_id="m1",
                     boot_id="boot2"), history_url)
    record_run(_copy("a", tmp_path, "rebooted", hostname="other-name", machine_id="m1",
                     boot_id="boot3", started_at="2026-11-27T00:00:00.000+00:00"), history_url)
    record_run(_copy("a", tmp_path, "newkernel", machine_id="m1", kernel="6.19.0"), history_url)
    with open_history(history_url) as h:
        assert h.run_count() == 4
        machines = h.machines()
        assert len(machines) == 3  # a's own; m1 (two boots, two names); m1 on a new kernel
        primary = [s for s in h.series() if s.metric_order == 0]
        per_machine = {s.machine: len(h.runs_of(s)) for s in primary}
        assert sorted(per_machine.values()) == [1, 1, 2]
        one = h.series(machine="other-name")
        assert one and all(len(h.runs_of(s)) == 2 for s in one if s.metric_order == 0)
        assert h.series(benchmark="no-such-bench") == []


def test_fingerprint_keeps_reboots_and_splits_the_ground() -> None:
    host = {"machine_id": "m1", "hostname": "h", "kernel": "6.18", "boot_id": "b1",
            "kernel_config": {"sha256": "c1"}, "kernel_cmdline_sha256": "k1",
            "cpu_model": "EPYC", "microcode": "0x1"}
    key = fingerprint.of_host(host).key
    assert fingerprint.of_host({**host, "boot_id": "b2", "hostname": "renamed"}).key == key
    for fact, other in (("kernel", "6.19"), ("kernel_config", {"sha256": "c2"}),
                        ("kernel_cmdline_sha256", "k2"), ("cpu_model", "Xeon"),
                        ("microcode", "0x2"), ("machine_id", "m2")):
        assert fingerprint.of_host({**host, fact: other}).key != key, fact
    # Without a machine id the hostname is the identity.
    bare = {**host, "machine_id": ""}
    assert fingerprint.of_host({**bare, "hostname": "x"}).key != fingerprint.of_host(bare).key


def _write_v1(history_url: str) -> None:
    """A version-1 history written by hand, as a bakeoff of that version left it."""
    with open_history(history_url, upto=1) as h:
        assert h.version() == 1
        with h.transaction() as cur:
            cur.execute(h.sql("INSERT INTO machines VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                        ("k1", "host", "m1", "6.18", "c1", "", "EPYC", "0x1", "{}"))
            cur.execute(h.sql(
                "INSERT INTO runs (run_key, run_id, machine, started_at, finished_at, status,"
                " profile, argv, source, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                ("rk1", "run1", "k1", "2026-11-01T00:00:00.000+00:00", None, "complete",
                 "quick", "[]", "/x", "2026-11-01T00:01:00.000+00:00"))
            cur.execute(h.sql("SELECT id FROM runs WHERE run_key = ?"), ("rk1",))
            run = cur.fetchone()[0]
            cur.execute(h.sql("INSERT INTO labels VALUES (?, ?, ?)"), (run, "commit", "abc"))
            cur.execute(h.sql(
                "INSERT INTO series (benchmark, variant, params, metric, metric_order, unit,"
                " lower_is_better, machine) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
                ("b", "v", SeriesKey.canonical({"size": 4096}), "ns", 0, "ns", 1, "k1"))
            cur.execute("SELECT id FROM series")
            series = cur.fetchone()[0]
            for i, samples in enumerate(([1.5, 2.5, 3.5], [2.0], [4.0, 5.0])):
                cur.execute(h.sql("INSERT INTO trials VALUES (?, ?, ?, ?, ?)"),
                            (run, series, i, i, json.dumps(samples)))


def test_migration_from_v1_keeps_the_data(history_url: str) -> None:
    _write_v1(history_url)
    with open_history(history_url) as h:  # migrates
        assert h.version() == schema.CURRENT == 3
        [s] = h.series()
        assert (s.benchmark, s.variant, s.params, s.metric, s.machine_name) == (
            "b", "v", {"size": 4096}, "ns", "host/k1")
        assert s.baseline is None  # v3's column: v1 and v2 never knew the baseline
        [run] = h.runs_of(s)
        assert run.labels == {"commit": "abc"}
        assert run.trials == [[1.5, 2.5, 3.5], [2.0], [4.0, 5.0]]
        assert run.rounds == [0, 1, 2]
        with h.transaction() as cur:  # v2's column, filled in from v1's values
            cur.execute("SELECT n_samples FROM trials ORDER BY trial_index")
            assert [r[0] for r in cur.fetchall()] == [3, 1, 2]
    # A database migrated takes new runs as a new one does, their baseline known.
    assert record_run(RUNS / "a", history_url).added
    with open_history(history_url) as h:
        assert {s.baseline for s in h.series() if s.benchmark == "mremap-vs-memcpy"} == {"memcpy"}


def test_a_series_of_unknown_baseline_is_absolute_until_a_run_tells(history_url: str) -> None:
    """A series migrated from v2 has no baseline (NULL, unknown): its variants are listed as
    their absolute levels; the next run of it recorded fills its baseline in."""
    record_run(RUNS / "a", history_url)
    with open_history(history_url) as h, h.transaction() as cur:
        cur.execute("UPDATE series SET baseline = NULL")  # as the v3 migration leaves them
    with open_history(history_url) as h:
        assert all(sh.relative_to is None for sh in listing.histories(h, metric=listing.ALL))
    record_run(RUNS / "b", history_url)
    with open_history(history_url) as h:
        in_b = {(s.variant, s.params["size"]) for s in h.series()
                if [r.run_id for r in h.runs_of(s)][-1:] == [_run_id(RUNS / "b")]}
        assert in_b
        for s in h.series():
            assert s.baseline == ("memcpy" if (s.variant, s.params["size"]) in in_b else None)
        found = listing.histories(h, metric=listing.ALL)
    assert {sh.relative_to for sh in found} == {"memcpy", None}
    for sh in found:
        if sh.relative_to is not None:
            assert (sh.series.variant, sh.series.params["size"]) in in_b
            assert sh.series.variant != "memcpy"


def _run_id(run_dir: Path) -> str:
    return str(json.loads((run_dir / "results.json").read_text())["run_id"])


def test_a_variant_is_listed_as_its_per_round_ratio_to_the_baseline(history_url: str) -> None:
    """Each run of a non-baseline variant is its trials over the baseline's trials of the same
    round in that run: the values the change-point self-test builds from the results
    directories (changes_selftest.series_from_runs(ratios=True)); the baseline stays absolute,
    each run its trials' medians."""
    record_dirs([RUNS / "a", RUNS / "b"], history_url, {})
    expected = {s.name: s for s in changes_selftest.series_from_runs(
        [RUNS / "a", RUNS / "b"], ratios=True)}
    with open_history(history_url) as h:
        found = listing.histories(h, metric=listing.PRIMARY)
        absolute = {sh.series.id: [tuple(float(np.median(t)) for t in r.trials)
                                   for r in h.runs_of(sh.series)]
                    for sh in found if sh.relative_to is None}
    ratios = [sh for sh in found if sh.relative_to is not None]
    assert ratios and all(sh.relative_to == "memcpy" != sh.series.variant for sh in ratios)
    for sh in ratios:
        s = sh.series
        inner = ",".join(f"{k}={v}" for k, v in s.params.items())
        want = expected[f"{s.benchmark}/{s.variant}[{inner}] {s.metric} / memcpy"]
        assert [r.trial_medians for r in sh.runs] == [r.values for r in want.runs]
        assert [r.run_id for r in sh.runs] == [r.run_id for r in want.runs]
        assert sh.unit_text == "ratio to memcpy" and sh.title.endswith(" / memcpy")
        assert listing.series_lines(sh)[0].startswith(f"{sh.title} (ratio to memcpy, ")
        assert all(r.ci_low <= r.median <= r.ci_high for r in sh.runs)
    assert {sh.series.variant for sh in found if sh.relative_to is None} == {"memcpy"}
    for sh in found:
        if sh.relative_to is None:
            assert sh.unit == sh.series.unit
            assert [r.trial_medians for r in sh.runs] == absolute[sh.series.id]


def test_a_newer_schema_is_refused(history_url: str) -> None:
    record_run(RUNS / "a", history_url)
    with open_history(history_url) as h, h.transaction() as cur:
        cur.execute(h.sql("UPDATE schema_version SET version = ?"), (schema.CURRENT + 1,))
    with pytest.raises(UsageError, match="upgrade bakeoff"):
        open_history(history_url)


def test_labels_and_locations_refused_in_one_line(tmp_path: Path) -> None:
    assert parse_labels(["commit=abc", "note=a=b", "commit=def"]) == {"commit": "def",
                                                                      "note": "a=b"}
    for bad in ("commit", "=x", "a b=c"):
        with pytest.raises(UsageError, match="KEY=VALUE"):
            parse_labels([bad])
    with pytest.raises(UsageError, match="not a history location"):
        parse_location("mysql://x/y")
    with pytest.raises(UsageError, match="is a directory"):
        parse_location(str(tmp_path))
    with pytest.raises(UsageError, match="does not exist"):
        parse_location(str(tmp_path / "no" / "h.sqlite"))
    assert parse_location(f"sqlite://{tmp_path}/h.sqlite").target == f"{tmp_path}/h.sqlite"
    loc = parse_location("postgresql://u:secret@db/h")
    assert loc.dialect == "postgresql" and "secret" not in loc.shown
    (tmp_path / "junk").write_text("not a database, not at all " * 100)
    with pytest.raises(UsageError, match=r"cannot be opened|not a bakeoff history"):
        open_history(str(tmp_path / "junk"))


@pytest.mark.slow(live=False)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    history = str(tmp_path / "h.sqlite")
    nowhere = tmp_path / "no-server"
    nowhere.mkdir()
    cases = [
        (("history", "--history", "mysql://db/h"), "not a history location", "postgresql://"),
        (("history", "add", str(tmp_path / "missing"), "--history", history),
         "no results.json", "give directories"),
        (("history", "add", str(RUNS / "a"), "--label", "commit", "--history", history),
         "--label 'commit'", "KEY=VALUE"),
        (("history", "--history", f"postgresql://bakeoff@/h?host={nowhere}"),
         "cannot reach the history server", "check the URL"),
        (("history", "--history", str(tmp_path / "none" / "h.sqlite")), "does not exist",
         "create it"),
        (("history", "page", "--history", history, "--out", str(tmp_path / "none" / "p.html")),
         "does not exist", "create it"),
        (("history", "page", "--history", history, "--out", str(tmp_path / "p.html")),
         "no series in", "history add"),
    ]
    # Each a bakeoff process (~2 s to start on this VM): started four at a time.
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda c: run_bakeoff(*c[0]), cases))
    for (_args, needle, fix), res in zip(cases, results, strict=True):
        assert_usage_error(res, needle, fix)
    assert not (tmp_path / "p.html").exists()


def test_two_writers_at_once_on_a_new_history(history_url: str, tmp_path: Path) -> None:
    """Two bakeoffs recording into one fresh history at once (a fleet's hosts, two CI jobs):
    the schema is made once, both runs are recorded."""
    other = _copy("a", tmp_path, "other", machine_id="m2")
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda d: record_run(d, history_url, {"job": d.name}),
                             [RUNS / "b", other]))
    assert [r.added for r in done] == [True, True]
    with open_history(history_url) as h:
        assert h.version() == schema.CURRENT and h.run_count() == 2
        assert {h.labels_of(r.run_key)["job"] for r in done} == {"b", "other"}
