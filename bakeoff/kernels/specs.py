"""`--kernel NAME=SPEC` parsed: a kernel image, a .deb, or a Debian package name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bakeoff.core.errors import UsageError

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


def parse(given: str) -> KernelSpec:
    """NAME=SPEC, refused in one line naming the fix."""
    name, eq, value = given.partition("=")
    if not eq or not _NAME.fullmatch(name) or not value:
        raise UsageError(f"--kernel {given!r}: give NAME=SPEC, NAME letters, digits, '.', '_' or "
                         f"'-' (SPEC an image, a .deb or a package name), e.g. {EXAMPLE}")
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


def parse_all(given: list[str]) -> list[KernelSpec]:
    """Every --kernel, names unique."""
    specs = [parse(g) for g in given]
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise UsageError(f"--kernel {s.name}: named twice; give each kernel its own name")
        seen.add(s.name)
    return specs
