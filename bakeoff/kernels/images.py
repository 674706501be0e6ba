"""A kernel spec made into an image on disk, with its modules and config beside it.

A `.deb` is unpacked (`dpkg-deb -x`) and a package name fetched with `apt-get download`
first; both land in a cache keyed by the image's SHA-256, `$XDG_CACHE_HOME/bakeoff/kernels/
<hash>/` (`boot/vmlinuz-R`, `boot/config-R`, `lib/modules/R/`: the layout virtme-ng finds
modules in), and a package's name and version point to it (`by-package/`), so a second run
downloads nothing. The download and the unpacking happen in a temporary directory in the
cache that is removed on every way out; only a complete tree is renamed into place.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bakeoff.core.errors import UsageError
from bakeoff.kernels.specs import KernelSpec


@dataclass(frozen=True)
class KernelImage:
    """A bootable kernel: the image, its config (None when none lies beside it), its hash."""

    spec: KernelSpec
    image: Path
    config: Path | None
    sha256: str
    package: str = ""  # "name version" when it came from apt


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bakeoff" / "kernels"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def config_beside(image: Path) -> Path | None:
    """The config of an image: `config-R` beside `vmlinuz-R` (a distribution's /boot, an
    unpacked .deb), or `.config` of the kernel tree an `arch/*/boot/bzImage` was built in."""
    m = re.match(r"(?:vmlinuz|bzImage|vmlinux)-(.+)", image.name)
    if m and (image.parent / f"config-{m.group(1)}").is_file():
        return image.parent / f"config-{m.group(1)}"
    if image.parent.name == "boot" and image.parent.parent.parent.name == "arch":
        tree = image.parent.parent.parent.parent / ".config"
        if tree.is_file():
            return tree
    return None


def _run(argv: list[str], what: str, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False,
                              timeout=600)
    except FileNotFoundError:
        raise UsageError(f"{what}: {argv[0]} is not installed; install apt and dpkg "
                         "(a Debian or Ubuntu host)") from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise UsageError(f"{what}: {' '.join(argv[:2])} failed ({tail})")
    return done.stdout


def _version_key(a: tuple[str, str], b: tuple[str, str]) -> int:
    """Debian version order (dpkg --compare-versions), then the shorter name (the plain
    flavour before -cloud-, -rt-)."""
    if a[1] != b[1]:
        newer = subprocess.run(["dpkg", "--compare-versions", a[1], "gt", b[1]],
                               check=False).returncode == 0
        return 1 if newer else -1
    return len(b[0]) - len(a[0])


def resolve_package(pattern: str) -> tuple[str, str]:
    """A package name or shell pattern → (name, candidate version): of the names apt knows
    that match, those it can install, the newest version; of equals the shortest name."""
    prefix = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
    names = _run(["apt-cache", "pkgnames", prefix], f"package {pattern}").split()
    matches = sorted(n for n in names if fnmatch.fnmatchcase(n, pattern))
    found = []
    for name in matches:
        policy = _run(["apt-cache", "policy", name], f"package {name}")
        m = re.search(r"Candidate: (\S+)", policy)
        if m and m.group(1) != "(none)":
            found.append((name, m.group(1)))
    if not found:
        raise UsageError(f"package {pattern}: apt knows no installable package of that name; "
                         "run apt-get update, or check the name with apt-cache search "
                         "linux-image")
    return max(found, key=functools.cmp_to_key(_version_key))


def _unpacked_image(tree: Path) -> Path:
    images = sorted((tree / "boot").glob("vmlinuz-*"))
    if len(images) != 1:
        raise UsageError(f"{tree.name}: the package holds {len(images)} kernel images in "
                         "/boot, not one; give the image's path instead")
    return images[0]


def _unpack(deb: Path, spec: KernelSpec, package: str) -> KernelImage:
    """deb → the cache, keyed by its image's hash; the temporary tree is removed always."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="unpack-", dir=root) as tmp:
        tree = Path(tmp) / "tree"
        _run(["dpkg-deb", "-x", str(deb), str(tree)], f"--kernel {spec.words()}")
        digest = sha256_of(_unpacked_image(tree))
        final = root / digest[:16]
        if not final.exists():
            tree.rename(final)
    image = _unpacked_image(final)
    return KernelImage(spec, image, config_beside(image), digest, package)


def _fetch(spec: KernelSpec) -> KernelImage:
    name, version = resolve_package(spec.value)
    root = cache_root()
    known = root / "by-package" / f"{name}_{version}"
    if known.is_symlink() and known.resolve().is_dir():
        image = _unpacked_image(known.resolve())
        return KernelImage(spec, image, config_beside(image), sha256_of(image),
                           f"{name} {version}")
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="download-", dir=root) as tmp:
        # apt's own sandbox user cannot write into root's cache: download as root.
        _run(["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root",
              f"{name}={version}"], f"--kernel {spec.words()}", cwd=Path(tmp))
        debs = list(Path(tmp).glob("*.deb"))
        if len(debs) != 1:
            raise UsageError(f"--kernel {spec.words()}: apt-get download gave {len(debs)} "
                             "files, not one .deb")
        got = _unpack(debs[0], spec, f"{name} {version}")
    known.parent.mkdir(parents=True, exist_ok=True)
    link = known.with_name(known.name + ".new")
    link.unlink(missing_ok=True)
    link.symlink_to(got.image.parent.parent)
    link.replace(known)
    return got


def resolve(spec: KernelSpec) -> KernelImage:
    """The spec's image: as given, unpacked from the .deb, or fetched from apt."""
    if spec.kind == "image":
        image = Path(spec.value)
        return KernelImage(spec, image, config_beside(image), sha256_of(image))
    if spec.kind == "deb":
        return _unpack(Path(spec.value), spec, "")
    if shutil.which("apt-get") is None:
        raise UsageError(f"--kernel {spec.words()}: fetching a package needs apt-get; give an "
                         "image path or a .deb instead")
    return _fetch(spec)
