"""Wheels of the pinned Python dependencies, built once on the controller and pushed.

Many measurement hosts have no route to PyPI (lab networks, the test's network namespaces).
The host's set-up is the README's `make deps`, with PIP_NO_INDEX and PIP_FIND_LINKS pointing
at these wheels (the Makefile hands them to uv as --no-index --find-links). The wheels are
for the controller's Python and architecture; hosts that differ set bakeoff_wheelhouse off
and need an index (docs/FLEET.md).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

from bakeoff.core.errors import UsageError


def requirements(pyproject: Path, extras: tuple[str, ...] = ()) -> list[str]:
    """What the host's `make deps` installs: the installer (uv), the runtime dependencies and
    the build backend of `uv pip install -e .`; and those of `extras` (`kernels`: what
    `make kernel-deps` adds for a --kernel run, virtme-ng)."""
    data = tomllib.loads(pyproject.read_text())
    optional = data["project"].get("optional-dependencies", {})
    return [data["tool"]["bakeoff"]["installer"], *data["project"]["dependencies"],
            *data["build-system"]["requires"], *(r for e in extras for r in optional[e])]


def marker(archive: Path) -> str:
    """The file the archive's unpacking leaves last in the host's wheelhouse: named after the
    archive, so a host that holds an earlier set of wheels (another pin, no extras) unpacks
    this one too instead of taking the folder as done."""
    return f".complete-{archive.stem.removeprefix('wheelhouse-')}"


def build(pyproject: Path, cache: Path, extras: tuple[str, ...] = ()) -> Path:
    """One tar of wheels for requirements(pyproject, extras), reused while they stay the same.

    One file, not a directory: Ansible copies a directory file by file (tens of seconds for
    the thirty wheels), one archive in one transfer."""
    reqs = requirements(pyproject, extras)
    key = hashlib.sha256("\n".join([*reqs, sys.version, platform.machine()]).encode()).hexdigest()
    out = cache / f"wheelhouse-{key[:16]}.tar"
    if out.exists():
        return out
    # Names of this process's own: two fleet runs at once on one controller each gather the
    # wheels (one wasted download) rather than one removing the other's half-filled folder.
    tmp = cache / f".wheelhouse-{key[:16]}-{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    res = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
         "--only-binary=:all:", "--dest", str(tmp), *reqs],
        capture_output=True, text=True, check=False, timeout=900)
    if res.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        last = (res.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise UsageError(f"cannot gather the wheels the hosts install from ({last}); the "
                         "controller needs PyPI (or a pip cache) once, or give --no-wheelhouse "
                         "when every host reaches PyPI")
    (tmp / marker(out)).touch()  # the host's unarchive is skipped once this is there
    part = tmp.with_suffix(".part")
    try:
        with tarfile.open(part, "w") as tar:  # wheels are compressed already
            for wheel in sorted(tmp.iterdir()):
                tar.add(wheel, arcname=wheel.name)
        part.rename(out)  # atomic: whoever renames last, out is one whole archive
    finally:
        part.unlink(missing_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return out
