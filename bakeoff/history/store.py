"""The history database: an SQLite file (the default, in the user's state directory) or a
PostgreSQL server given by URL, one schema for both (schema.py).

`open_history(location)` opens it, builds or migrates the schema, and gives a `History`: `add()`
puts in one run (all of it, or nothing, in one transaction; the same run again is the same
record, its labels merged), `series()` and `runs_of()` read back. Every failure a user can fix
(a bad location, a server that does not answer, a file that is not a history) is a UsageError.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bakeoff.core.errors import UsageError
from bakeoff.history import schema
from bakeoff.history.fingerprint import Fingerprint
from bakeoff.stats import drift

DEFAULT_FILE = "history.sqlite"
ENV = "BAKEOFF_HISTORY"  # a location for every command, where --history is not given
PG_SCHEMES = ("postgresql://", "postgres://")
# Two processes migrating one PostgreSQL database at once: the second waits on this lock
# (SQLite's BEGIN IMMEDIATE does the same for a file).
_PG_MIGRATION_LOCK = 0x6261_6B65  # "bake"


@dataclass(frozen=True)
class Location:
    dialect: schema.Dialect
    target: str  # the file's path, or the server's URL
    shown: str  # for messages: the path, or the URL without its password


def default_location() -> str:
    return os.environ.get(ENV) or str(drift.state_dir() / DEFAULT_FILE)


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def parse_location(text: str | None) -> Location:
    """--history: a PostgreSQL URL, an sqlite:// URL or a file path; default: $BAKEOFF_HISTORY,
    else history.sqlite in the user's state directory (created)."""
    given = text is not None
    text = text if given else default_location()
    assert text is not None
    if text.startswith(PG_SCHEMES):
        return Location("postgresql", text, _without_password(text))
    if text.startswith("sqlite://"):
        text = text[len("sqlite://"):]
    elif "://" in text:
        raise UsageError(f"--history {text!r}: not a history location; give a file path, "
                         "sqlite:///PATH or postgresql://USER@HOST/DB")
    if not text.strip():
        raise UsageError("--history is empty; give a file path or postgresql://USER@HOST/DB")
    path = Path(text).expanduser()
    if path.is_dir():
        raise UsageError(f"--history {path} is a directory; give a file in it, e.g. "
                         f"{path / DEFAULT_FILE}")
    if not path.parent.is_dir():
        if given and text != os.environ.get(ENV):
            raise UsageError(f"--history {path}: directory {path.parent} does not exist; "
                             "create it or give another path")
        path.parent.mkdir(parents=True, exist_ok=True)
    return Location("sqlite", str(path), str(path))


@dataclass(frozen=True)
class SeriesKey:
    """What a series is, on one machine: benchmark, variant, params, metric."""

    benchmark: str
    variant: str
    params: str  # canonical JSON (keys sorted), so one params dict is one key
    metric: str
    metric_order: int  # the metric's place in the benchmark's declaration (0: primary)
    unit: str
    lower_is_better: bool
    baseline: str | None = None  # the benchmark's baseline variant (None: not known)

    @staticmethod
    def canonical(params: dict[str, Any]) -> str:
        return json.dumps(params, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class TrialValues:
    series: SeriesKey
    trial_index: int
    round: int
    samples: list[float]  # as results.json keeps them (quantiles for a very long trial)
    n_samples: int  # the samples measured


@dataclass(frozen=True)
class RunEntry:
    """One run as the history records it."""

    run_key: str  # what makes it the same run again (record.py)
    run_id: str
    started_at: str
    finished_at: str | None
    status: str
    profile: str
    argv: list[str]
    source: str  # the results directory it came from
    recorded_at: str
    machine: Fingerprint
    facts: dict[str, Any]  # the host facts of results.json, all of them
    labels: dict[str, str] = field(default_factory=dict)
    trials: list[TrialValues] = field(default_factory=list)


@dataclass(frozen=True)
class Series:
    id: int
    benchmark: str
    variant: str
    params: dict[str, Any]
    metric: str
    metric_order: int  # 0: the benchmark's primary metric
    unit: str
    lower_is_better: bool
    machine: str  # the fingerprint's key
    machine_name: str  # hostname/key prefix
    baseline: str | None = None  # the benchmark's baseline variant (None: not known)

    @property
    def is_baseline(self) -> bool:
        return self.baseline == self.variant

    @property
    def title(self) -> str:
        inner = ",".join(f"{k}={v}" for k, v in self.params.items())
        params = f"[{inner}]" if inner else ""
        return f"{self.benchmark}/{self.variant}{params} {self.metric} on {self.machine_name}"


@dataclass(frozen=True)
class SeriesRun:
    """One run's trials of one series."""

    run_key: str
    run_id: str
    started_at: str
    labels: dict[str, str]
    trials: list[list[float]]
    rounds: list[int] = field(default_factory=list)  # each trial's round, as trials


class History:
    """An open history database at the current schema version."""

    def __init__(self, location: Location, conn: Any) -> None:
        self.location = location
        self._conn = conn
        self._pg = location.dialect == "postgresql"

    # ---- plumbing ----------------------------------------------------------------------

    def sql(self, text: str) -> str:
        """`?` marks as this database's driver wants them."""
        return text.replace("?", "%s") if self._pg else text

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A cursor in one transaction (committed at the end, rolled back on any error); SQL
        written with `?` marks goes through sql() first."""
        cur = self._conn.cursor()
        try:
            if not self._pg:  # psycopg opens a transaction at the first statement itself
                cur.execute("BEGIN IMMEDIATE")  # the write lock now: no upgrade deadlock later
            yield cur
            self._conn.commit()
        except BaseException:
            self._conn.rollback()
            raise
        finally:
            cur.close()

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the schema ---------------------------------------------------------------------

    def version(self) -> int:
        cur = self._conn.cursor()
        try:
            return self._version_in(cur)
        finally:
            cur.close()
            if self._pg:
                self._conn.rollback()  # a read opened a transaction: end it

    def migrate(self, upto: int = schema.CURRENT) -> int:
        """Apply the migrations above the database's version, up to `upto`; the version."""
        with self.transaction() as cur:
            if self._pg:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_MIGRATION_LOCK,))
            have = self._version_in(cur)
            if have > schema.CURRENT:
                raise UsageError(f"history {self.location.shown} has schema version {have}; "
                                 f"this bakeoff knows up to {schema.CURRENT}: upgrade bakeoff")
            for m in schema.MIGRATIONS:
                if have < m.version <= upto:
                    for statement in schema.statements(m, self.location.dialect):
                        cur.execute(statement)
                    if m.fill is not None:
                        m.fill(cur, self.location.dialect)
                    cur.execute(self.sql("UPDATE schema_version SET version = ?"), (m.version,))
                    have = m.version
            return have

    def _version_in(self, cur: Any) -> int:
        if self._pg:
            cur.execute("SELECT to_regclass('schema_version') IS NOT NULL")
            exists = bool(cur.fetchone()[0])
        else:
            cur.execute("SELECT count(*) FROM sqlite_master WHERE name = 'schema_version'")
            exists = cur.fetchone()[0] > 0
        if not exists:
            return 0
        cur.execute("SELECT version FROM schema_version")
        row = cur.fetchone()
        return int(row[0]) if row else 0

    # ---- writing ------------------------------------------------------------------------

    def add(self, run: RunEntry) -> bool:
        """Record a run; False when it was there already (its labels then merged in, a label
        given again taking the new value)."""
        with self.transaction() as cur:
            cur.execute(self.sql("SELECT id FROM runs WHERE run_key = ?"), (run.run_key,))
            row = cur.fetchone()
            if row is not None:
                self._put_labels(cur, int(row[0]), run.labels)
                return False
            self._put_machine(cur, run.machine, run.facts)
            cur.execute(self.sql(
                "INSERT INTO runs (run_key, run_id, machine, started_at, finished_at, status,"
                " profile, argv, source, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " RETURNING id"),
                (run.run_key, run.run_id, run.machine.key, run.started_at, run.finished_at,
                 run.status, run.profile, json.dumps(run.argv), run.source, run.recorded_at))
            run_id = int(cur.fetchone()[0])
            self._put_labels(cur, run_id, run.labels)
            series_ids: dict[SeriesKey, int] = {}
            for t in run.trials:
                if t.series not in series_ids:
                    series_ids[t.series] = self._series_id(cur, t.series, run.machine.key)
                cur.execute(self.sql(
                    "INSERT INTO trials (run, series, trial_index, round, samples, n_samples)"
                    " VALUES (?, ?, ?, ?, ?, ?)"),
                    (run_id, series_ids[t.series], t.trial_index, t.round,
                     json.dumps(t.samples), t.n_samples))
            return True

    def _put_machine(self, cur: Any, m: Fingerprint, facts: dict[str, Any]) -> None:
        d = asdict(m)
        cur.execute(self.sql(
            "INSERT INTO machines (key, hostname, machine_id, kernel, kernel_config,"
            " kernel_cmdline, cpu_model, microcode, facts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            # A machine renamed goes by its latest name and facts (neither is in its key). A
            # fleet host goes by its inventory name (its facts keep the hostname).
            " ON CONFLICT (key) DO UPDATE SET hostname = excluded.hostname,"
            " facts = excluded.facts"),
            (m.key, m.shown_host, d["machine_id"], d["kernel"], d["kernel_config"],
             d["kernel_cmdline"], d["cpu_model"], d["microcode"], json.dumps(facts, default=str)))

    def _put_labels(self, cur: Any, run_id: int, labels: dict[str, str]) -> None:
        for k, v in labels.items():
            cur.execute(self.sql(
                "INSERT INTO labels (run, key, value) VALUES (?, ?, ?)"
                " ON CONFLICT (run, key) DO UPDATE SET value = excluded.value"), (run_id, k, v))

    def _series_id(self, cur: Any, s: SeriesKey, machine: str) -> int:
        where = ("benchmark = ? AND variant = ? AND params = ? AND metric = ? AND machine = ?")
        key = (s.benchmark, s.variant, s.params, s.metric, machine)
        cur.execute(self.sql(
            "INSERT INTO series (benchmark, variant, params, metric, metric_order, unit,"
            " lower_is_better, machine, baseline) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (benchmark, variant, params, metric, machine) DO UPDATE"
            # A series recorded before v3 learns its baseline from the next run recorded.
            " SET baseline = COALESCE(excluded.baseline, series.baseline)"),
            (*key[:4], s.metric_order, s.unit, int(s.lower_is_better), machine, s.baseline))
        cur.execute(self.sql(f"SELECT id FROM series WHERE {where}"), key)
        return int(cur.fetchone()[0])

    # ---- reading ------------------------------------------------------------------------

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self._conn.cursor()
        try:
            cur.execute(self.sql(sql), tuple(args))
            return [tuple(r) for r in cur.fetchall()]
        finally:
            cur.close()
            if self._pg:
                self._conn.rollback()

    def run_count(self) -> int:
        return int(self._rows("SELECT count(*) FROM runs")[0][0])

    def machines(self) -> dict[str, str]:
        """key -> name (hostname/key prefix)."""
        return {k: f"{h}/{k[:8]}" for k, h in self._rows("SELECT key, hostname FROM machines")}

    def series(self, benchmark: str | None = None, machine: str | None = None) -> list[Series]:
        """The series, optionally of one benchmark and of one machine (its hostname, its
        name as listed, or a prefix of its key)."""
        rows = self._rows(
            "SELECT s.id, s.benchmark, s.variant, s.params, s.metric, s.metric_order, s.unit,"
            " s.lower_is_better, s.machine, m.hostname, s.baseline FROM series s"
            " JOIN machines m ON m.key = s.machine"
            " ORDER BY m.hostname, s.machine, s.benchmark, s.metric_order, s.metric, s.params,"
            " s.variant")
        out = []
        for sid, bench, variant, params, metric, order, unit, lib, key, hostname, base in rows:
            name = f"{hostname}/{key[:8]}"
            if benchmark is not None and bench != benchmark:
                continue
            if machine is not None and machine not in (hostname, name) and \
                    not key.startswith(machine):
                continue
            out.append(Series(int(sid), bench, variant, json.loads(params), metric, int(order),
                              unit, bool(lib), key, name, base))
        return out

    def runs_of(self, series: Series) -> list[SeriesRun]:
        """The runs of a series in time order, each with its trials' values."""
        rows = self._rows(
            "SELECT r.id, r.run_key, r.run_id, r.started_at, t.round, t.samples"
            " FROM trials t JOIN runs r ON r.id = t.run WHERE t.series = ?"
            " ORDER BY r.started_at, r.id, t.trial_index", (series.id,))
        labels: dict[int, dict[str, str]] = {}
        for run, k, v in self._rows(
                "SELECT l.run, l.key, l.value FROM labels l WHERE l.run IN"
                " (SELECT DISTINCT run FROM trials WHERE series = ?) ORDER BY l.key",
                (series.id,)):
            labels.setdefault(int(run), {})[k] = v
        out: list[SeriesRun] = []
        for rid, run_key, run_id, started, round_, samples in rows:
            if not out or out[-1].run_key != run_key:
                out.append(SeriesRun(run_key, run_id, started, labels.get(int(rid), {}), []))
            out[-1].trials.append([float(x) for x in json.loads(samples)])
            out[-1].rounds.append(int(round_))
        return out

    def labels_of(self, run_key: str) -> dict[str, str]:
        return dict(self._rows("SELECT l.key, l.value FROM labels l JOIN runs r ON r.id = l.run"
                               " WHERE r.run_key = ? ORDER BY l.key", (run_key,)))


def _connect(location: Location) -> Any:
    if location.dialect == "sqlite":
        try:
            conn = sqlite3.connect(location.target, timeout=60, isolation_level=None)
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            raise UsageError(f"history {location.shown} cannot be opened as an SQLite "
                             f"database ({exc}); give another --history") from None
        return conn
    import psycopg  # only for a server: the SQLite default needs no libpq

    try:
        return psycopg.connect(location.target, connect_timeout=10)
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UsageError(f"cannot reach the history server {location.shown}: {first}; check "
                         "the URL and that the server is up") from None


def open_history(text: str | None, upto: int = schema.CURRENT) -> History:
    """The history at --history `text` (default_location() when None), its schema made or
    migrated to version `upto` (the current one but in the migration tests)."""
    location = parse_location(text)
    history = History(location, _connect(location))
    try:
        history.migrate(upto)
    except driver_errors(location) as exc:
        history.close()
        lines = str(exc).strip().splitlines()
        raise UsageError(f"history {location.shown} is not a bakeoff history (or is damaged): "
                         f"{lines[0] if lines else type(exc).__name__}; give another --history"
                         ) from None
    except BaseException:
        history.close()
        raise
    return history


def driver_errors(location: Location) -> tuple[type[Exception], ...]:
    """The database driver's errors: what a damaged or foreign database raises."""
    if location.dialect == "sqlite":
        return (sqlite3.Error,)
    import psycopg

    return (psycopg.Error,)
