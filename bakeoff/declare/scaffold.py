"""`bakeoff new ROOM`: a room skeleton that builds, passes the conformance test and runs.

The skeleton (bakeoff/declare/templates/room/) is a real if small benchmark, so that every file has
a working example to change rather than a blank to fill: a spec that is only a declaration,
a C program on bench.h, the two-line Makefile, a METHOD.md outline, a debian-packages list.
It is written to a temporary folder beside the rooms and renamed into place, so a failure
leaves no half room behind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from bakeoff.core.errors import UsageError
from bakeoff.declare import registry

TEMPLATES = Path(__file__).resolve().parent / "templates" / "room"
# A benchmark name as the command line, results and reports use it; its folder swaps - for _.
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
MAX_NAME = 40
RESERVED = frozenset({"common"})  # benchmarks/common holds bench.h and the build rules


def room_dir_name(name: str) -> str:
    return name.replace("-", "_")


def check_name(name: str) -> None:
    """One line naming the fix for a name that cannot be a room (exit 2)."""
    shown = name if len(name) <= MAX_NAME else name[:MAX_NAME - 3] + "..."
    if not NAME_RE.match(name) or len(name) > MAX_NAME:
        raise UsageError(f"'{shown}' cannot name a benchmark: use lower-case letters, digits "
                         f"and single hyphens, starting with a letter, at most {MAX_NAME} "
                         "characters (e.g. ipc-ping-pong)")
    if room_dir_name(name) in RESERVED:
        raise UsageError(f"'{name}' is the folder of the shared build rules; choose another name")


def _files(name: str, title: str) -> dict[str, str]:
    room = room_dir_name(name)
    program = f"{room}_bench"
    values = {"{{NAME}}": name, "{{TITLE}}": title, "{{TITLE_PY}}": json.dumps(title),
              "{{ROOM_DIR}}": room, "{{PROGRAM}}": program}
    targets = {"spec.py.tmpl": "spec.py", "program.c.tmpl": f"{program}.c",
               "Makefile.tmpl": "Makefile", "METHOD.md.tmpl": "METHOD.md",
               "debian-packages.tmpl": "debian-packages"}
    out = {}
    for template, target in targets.items():
        text = (TEMPLATES / template).read_text()
        for key, value in values.items():
            text = text.replace(key, value)
        out[target] = text
    return out


def new_room(name: str, title: str | None = None) -> Path:
    """Writes benchmarks/<room>/ (or under BAKEOFF_BENCHMARKS_DIR) and returns it."""
    check_name(name)
    title = " ".join((f"{name}: a new benchmark" if title is None else title).split())
    if not title:
        raise UsageError("--title is empty; give one line, e.g. --title 'Pipe vs socketpair'")
    rooms = registry.benchmarks_dir()
    if not rooms.is_dir():
        raise UsageError(f"{rooms} is not a folder of rooms; set BAKEOFF_BENCHMARKS_DIR to one "
                         "or run from the repository")
    target = rooms / room_dir_name(name)
    if target.exists():
        raise UsageError(f"{target} exists already; choose another name or remove it")
    if name in registry.load_rooms().benchmarks:  # a broken room does not stop a new one
        raise UsageError(f"a benchmark named '{name}' exists already; choose another name")
    staging = rooms / f".bakeoff-new-{os.getpid()}-{room_dir_name(name)}"
    try:
        staging.mkdir()
        for filename, text in _files(name, title).items():
            (staging / filename).write_text(text)
        staging.rename(target)
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror}; check the folder's "
                         "permissions and free space") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
