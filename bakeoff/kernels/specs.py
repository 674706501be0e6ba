"""`--kernel NAME=SPEC` parsed: a kernel image, a .deb, or a Debian package name."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bakeoff.core.errors import UsageError
from bakeoff.kernels.plan import DEFAULT_BLOCKS

SpecKind = Literal["image", "deb", "package"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
# A Debian package name (Debian policy 5.6.1), with the shell patterns `*?[]` allowed so
# `linux-image-6.1.0-*-amd64` names the newest of a series.
_PACKAGE = re.compile(r"[a-z0-9*?\[][a-z0-9+.*?\[\]-]+")

EXAMPLE = "--kernel a=linux-image-6.1.0-*-amd64 --kernel b=/boot/vmlinuz-6.12.0"


@dataclass(frozen=True)
class KernelSpec:
    """One kernel as the user named it."""

    name: str  # the axis value in reports ("a", "deb61")
    kind: SpecKind
    value: str  # the path (image, deb) or the package name or pattern

    def words(self) -> str:
        return f"{self.name}={self.value}"


def _name_value(given: str) -> tuple[str, str]:
    name, eq, value = given.partition("=")
    if not eq or not _NAME.fullmatch(name) or not value:
        raise UsageError(f"--kernel {given!r}: give NAME=SPEC, NAME letters, digits, '.', '_' or "
                         f"'-' (SPEC an image, a .deb or a package name), e.g. {EXAMPLE}")
    return name, value


def parse(given: str) -> KernelSpec:
    """NAME=SPEC, refused in one line naming the fix."""
    name, value = _name_value(given)
    path = Path(value).expanduser()
    if value.endswith(".deb"):
        if not path.is_file():
            raise UsageError(f"--kernel {name}={value}: no such .deb; give an existing file")
        return KernelSpec(name, "deb", str(path.resolve()))
    if "/" in value or path.exists():
        if not path.is_file():
            raise UsageError(f"--kernel {name}={value}: no such kernel image; give the path of "
                             "a vmlinuz or bzImage (modules in ../lib/modules/RELEASE beside it)")
        return KernelSpec(name, "image", str(path.resolve()))
    if not _PACKAGE.fullmatch(value):
        raise UsageError(f"--kernel {name}={value}: neither a file nor a Debian package name; "
                         f"e.g. {EXAMPLE}")
    return KernelSpec(name, "package", value)


def parse_for_hosts(given: str) -> KernelSpec:
    """NAME=SPEC as the fleet's controller checks it for its hosts: a path names a file on
    each host (a host without it refuses in one line), so it is not looked for here, only
    required to be absolute (a host's bakeoff runs in its checkout, not in this directory)."""
    name, value = _name_value(given)
    if "/" in value or value.endswith(".deb"):
        if not value.startswith(("/", "~/")):
            raise UsageError(f"--kernel {name}={value}: a file on the hosts is given by its "
                             "absolute path, e.g. --kernel b=/boot/vmlinuz-6.12.0")
        return KernelSpec(name, "deb" if value.endswith(".deb") else "image", value)
    if not _PACKAGE.fullmatch(value):
        raise UsageError(f"--kernel {name}={value}: neither an absolute path on the hosts nor "
                         f"a Debian package name; e.g. {EXAMPLE}")
    return KernelSpec(name, "package", value)


def parse_all(given: list[str],
              parse_one: Callable[[str], KernelSpec] = parse) -> list[KernelSpec]:
    """Every --kernel, names unique."""
    specs = [parse_one(g) for g in given]
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise UsageError(f"--kernel {s.name}: named twice; give each kernel its own name")
        seen.add(s.name)
    return specs


def check_timed(specs: list[KernelSpec], blocks: int) -> None:
    """A timed run compares kernels: at least two, in two blocks or more."""
    if len(specs) < 2 or blocks < 2:
        raise UsageError("a timed --kernel run compares kernels: give two --kernel or more and "
                         "--blocks 2 or more (or add --functional to check one kernel)")


def host_words(given: list[str], functional: bool, blocks: int) -> list[str]:
    """The fleet's --kernel, --functional and --blocks, checked here on the controller as
    `run` checks them (but for a path: see parse_for_hosts), as the words each host's `bakeoff
    run` is given. Each host chooses its mode itself: a timed run is refused by a host
    without hardware KVM, in one line (bakeoff/kernels/mode.py)."""
    if not given:
        if functional or blocks != DEFAULT_BLOCKS:
            raise UsageError("--functional and --blocks go with --kernel NAME=SPEC; e.g. "
                             "--kernel a=linux-image-6.1.0-*-amd64 --functional")
        return []
    specs = parse_all(given, parse_for_hosts)
    if not functional:
        check_timed(specs, blocks)
    return [*(w for s in specs for w in ("--kernel", s.words())),
            *(["--functional"] if functional else []),
            *(["--blocks", str(blocks)] if blocks != DEFAULT_BLOCKS else [])]
