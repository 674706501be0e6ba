"""A throwaway PostgreSQL server for the history tests: initdb and pg_ctl (Debian's
postgresql package, in debian-packages) in a temp directory, reached on a unix socket in that
directory only (no TCP port), stopped and removed afterwards."""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import IN_CI


def bindir() -> Path | None:
    """The newest installed server's binaries (Debian keeps them out of PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parent.parent.name))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class PgServer:
    def __init__(self, root: Path, bins: Path, as_user: list[str]) -> None:
        self.root, self._bins, self._as_user = root, bins, as_user
        self._databases = itertools.count(1)

    def _run(self, *argv: str) -> None:
        res = subprocess.run([*self._as_user, *argv], capture_output=True, text=True,
                             timeout=120, check=False, stdin=subprocess.DEVNULL)
        if res.returncode != 0:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise RuntimeError(f"{argv[0]} failed: {res.stderr.strip()} {log[-1500:]}")

    def start(self) -> None:
        data = str(self.root / "data")
        self._run(str(self._bins / "initdb"), "-D", data, "-A", "trust", "-U", "bakeoff",
                  "-E", "UTF8", "--no-sync")
        self._run(str(self._bins / "pg_ctl"), "-D", data, "-l", str(self.root / "log"), "-w",
                  "-t", "60", "-o", f"-k {self.root} -c listen_addresses='' -c fsync=off",
                  "start")

    def stop(self) -> None:
        self._run(str(self._bins / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate",
                  "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://bakeoff@/{database}?host={self.root}"

    def new_database(self) -> str:
        """A fresh empty database's URL: each test its own history."""
        import psycopg

        name = f"history_{os.getpid()}_{next(self._databases)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@contextmanager
def pg_server() -> Iterator[PgServer]:
    """A running server; RuntimeError when none can be started (the caller skips or fails)."""
    bins = bindir()
    if bins is None:
        raise RuntimeError("PostgreSQL's server is not installed (apt-get install postgresql; "
                           "make test installs it: debian-packages)")
    root = Path(tempfile.mkdtemp(prefix="bakeoff-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: the server runs as the postgres user
        pw = pwd.getpwnam("postgres")
        os.chown(root, pw.pw_uid, pw.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    server = PgServer(root, bins, as_user)
    started = False
    try:
        server.start()
        started = True
        yield server
    finally:
        if started:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


# Fixtures for a module whose tests run on both backends: `from pg_server import history_url,
# postgres`. The server is the module's (started once, removed at its end).
@pytest.fixture(scope="module")
def postgres() -> Iterator[PgServer]:
    try:
        with pg_server() as server:
            yield server
    except RuntimeError as exc:
        if IN_CI:
            pytest.fail(f"no PostgreSQL server for the history tests: {exc}")
        pytest.skip(f"no PostgreSQL server: {exc}")


# PostgreSQL's side starts a server (runuser, initdb): out of the fast tier.
@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow(live=False))])
def history_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty history of each kind."""
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    server: PgServer = request.getfixturevalue("postgres")
    return server.new_database()
