"""Redacted copies of results, for pasting into an issue or a mailing-list thread.

`bakeoff report DIR --redact` writes DIR's results and reports to another directory with the
host names, user names, home paths and fleet host addresses replaced by stable placeholders
(host-1, user-1, ~, addr-1), and checks that none of the originals is left in any file it
wrote before it says so. DIR itself is never touched.

One host is one placeholder: its inventory name, the hostname its run recorded and that
name's short form all become the same host-N, so a reader sees one machine, not three.

Addresses are each fleet host's ansible_host and every IPv4/IPv6 literal in the records (so
an ssh error in fleet.json is covered when the inventory has gone); loopback and 0.0.0.0
name no machine and are kept.

What is kept, on purpose: the kernel release, CPU model, microcode, mitigations and the rest
of the host facts are the finding's context (a reviewer needs them to judge the numbers); the
user name root names no one and is kept, its home /root is not. Originals shorter than two
characters are not replaced (one letter would eat every word that has it).

Replacement is by whole token: "vm" as a host name is replaced in "Machine: vm" but not in
"kvm" or in the sysctl "vm.max_map_count" (a name followed by a dot and a name character is
part of a longer dotted name). The same rule finds what survived, so the check reads exactly
what a reader would.
"""

from __future__ import annotations

import contextlib
import getpass
import ipaddress
import json
import os
import pwd
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("host", "user", "address", "home")
_PLACEHOLDER = {"host": "host-{}", "user": "user-{}", "address": "addr-{}", "home": "~"}

# A token is not preceded or followed by a name character, nor by a dot joined to one.
_NAME = r"[A-Za-z0-9_-]"
_BEFORE = rf"(?<!{_NAME})(?<!{_NAME}\.)"
_AFTER = rf"(?!{_NAME})(?!\.{_NAME})"
# A home path ends where the path component does: "/root" in "/root/x" and "/root", not in
# "/rooted"; and it starts a path, not in "/srv/root".
_HOME_BEFORE = r"(?<![A-Za-z0-9_./-])"
_HOME_AFTER = r"(?![A-Za-z0-9_.-])"
_HOME_IN_TEXT = re.compile(r"/home/([A-Za-z0-9_][A-Za-z0-9_.-]*)")
# Address literals as a fleet record writes them ("ssh: connect to host 198.18.7.9 port 22",
# "[fd00::5]:22"); ipaddress then decides, so "3.11.2" or the time "10:00:00" is none.
_IPV4_IN_TEXT = re.compile(r"(?<![\w.])(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?!\w|\.[0-9])")
_IPV6_IN_TEXT = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:.])")
# Accounts below this UID are the system's (root, daemon, nobody): they name no one.
_FIRST_PERSON_UID = 1000
MIN_LENGTH = 2


@dataclass
class Redactor:
    """Originals of each kind, each with its placeholder, replaced as whole tokens."""

    placeholders: dict[str, str] = field(default_factory=dict)  # original -> placeholder
    kinds: dict[str, str] = field(default_factory=dict)  # original -> kind

    def add(self, kind: str, original: str, same_as: str | None = None) -> None:
        """original, with the next placeholder of its kind; or, given same_as (another
        name of the same thing, already added), with that one's placeholder."""
        original = original.strip()
        if len(original) < MIN_LENGTH or original in self.kinds:
            return
        if same_as is not None and self.kinds.get(same_as) == kind:
            placeholder = self.placeholders[same_as]
        else:
            placeholder = _PLACEHOLDER[kind].format(self.counts()[kind] + 1)
        self.kinds[original] = kind
        self.placeholders[original] = placeholder

    def counts(self) -> dict[str, int]:
        """What was found, by kind: hosts, users and addresses by placeholder (a host's
        names are one host), home paths one by one (they all become ~)."""
        found: dict[str, set[str]] = {k: set() for k in KINDS}
        for original, kind in self.kinds.items():
            found[kind].add(original if kind == "home" else self.placeholders[original])
        return {k: len(v) for k, v in found.items()}

    def _pattern(self, homes: bool) -> re.Pattern[str] | None:
        # Longest first: "alpha2" before "alpha", "/home/al/x" never half-replaced.
        originals = sorted((o for o, k in self.kinds.items() if (k == "home") == homes),
                           key=lambda o: (-len(o), o))
        if not originals:
            return None
        alternatives = "|".join(re.escape(o) for o in originals)
        before, after = (_HOME_BEFORE, _HOME_AFTER) if homes else (_BEFORE, _AFTER)
        return re.compile(f"{before}(?:{alternatives}){after}")

    def text(self, text: str) -> str:
        for homes in (True, False):  # home paths first: they contain user names
            pattern = self._pattern(homes)
            if pattern is not None:
                text = pattern.sub(lambda m: self.placeholders[m.group(0)], text)
        return text

    def value(self, value: Any) -> Any:
        """A JSON value with every string (and every key) redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self.value(v) for k, v in value.items()}
        return value

    def hook(self, name: str, text: str) -> str:
        """For write_host_reports(postprocess=...): a file's text, redacted."""
        return redact_document(name, text, self.text)

    def survivors(self, text: str) -> list[str]:
        """The kinds of originals still in text (the same token rule as the replacement)."""
        found = []
        for original, kind in self.kinds.items():
            before, after = (_HOME_BEFORE, _HOME_AFTER) if kind == "home" else (_BEFORE, _AFTER)
            if re.search(f"{before}{re.escape(original)}{after}", text):
                found.append(kind)
        return sorted(set(found))


def _library_code() -> str:
    """The plotly.js bundle every report.html inlines: public code, not the run's data; a
    host named "alpha" must not be replaced in (or found in) its colour functions."""
    from bakeoff.report.html_page import plotly_script
    return plotly_script()


def redact_document(name: str, text: str, redact: Callable[[str], str]) -> str:
    if name.endswith(".html"):
        library = _library_code()
        if library in text:
            return library.join(redact(part) for part in text.split(library))
    return redact(text)


def scanned_text(path: Path) -> str:
    """What the leak check reads: the file's text, less the inlined plotly.js bundle."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    if path.suffix == ".html":
        text = text.replace(_library_code(), "")
    return text


def leaks(redactor: Redactor, out_dir: Path) -> list[tuple[str, Path]]:
    """(kind, file) for every original still in a file under out_dir."""
    found = []
    for path in sorted(p for p in out_dir.rglob("*") if p.is_file()):
        found += [(kind, path) for kind in redactor.survivors(scanned_text(path))]
    return found


# ---- what is sensitive in a record -----------------------------------------------------------


def _person(name: str) -> bool:
    try:
        return pwd.getpwnam(name).pw_uid >= _FIRST_PERSON_UID
    except KeyError:
        return True  # not an account here: a name from another machine's record


def add_people(redactor: Redactor, texts: Iterable[str]) -> None:
    """Home paths and user names: this machine's user (unless a system account), the homes
    of every account with a login here, and every /home/<name> the records mention."""
    names = [n for n in (os.environ.get("SUDO_USER"), _current_user()) if n]
    homes = ["/root", os.environ.get("HOME", "")]
    for entry in pwd.getpwall():
        if entry.pw_uid >= _FIRST_PERSON_UID and entry.pw_dir.startswith("/home/"):
            homes.append(entry.pw_dir)
            names.append(entry.pw_name)
    for text in texts:
        for m in _HOME_IN_TEXT.finditer(text):
            homes.append(m.group(0))
            names.append(m.group(1))
    for home in homes:
        if home and home != "/":
            redactor.add("home", home.rstrip("/"))
    for name in names:
        if _person(name):
            redactor.add("user", name)


def _current_user() -> str | None:
    """getpass's answer: $LOGNAME, $USER, … or, with none set (a service, a container), the
    account of this process's UID."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def add_hostname(redactor: Redactor, hostname: object, same_as: str | None = None) -> None:
    """A recorded hostname and its short form (in prompts and paths), both with same_as's
    placeholder when given (the host's inventory name or label), else a new one."""
    if isinstance(hostname, str) and hostname.strip():
        hostname = hostname.strip()
        redactor.add("host", hostname, same_as=same_as)
        redactor.add("host", hostname.split(".", 1)[0], same_as=same_as or hostname)


def _address(candidate: str) -> bool:
    """A real address that names a machine: loopback and 0.0.0.0 name none, and are kept."""
    try:
        ip = ipaddress.ip_address(candidate)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified)


def add_addresses(redactor: Redactor, texts: Iterable[str]) -> None:
    """Every IPv4 and IPv6 address the records mention (a fleet host's reason, an argv),
    text by text, IPv4 first (a fixed order: the same addr-N each time): found even when
    the inventory that lists them is gone."""
    for text in texts:
        for pattern in (_IPV4_IN_TEXT, _IPV6_IN_TEXT):
            for m in pattern.finditer(text):
                if _address(m.group(0)):
                    redactor.add("address", m.group(0))


def for_run(data: dict[str, Any]) -> Redactor:
    """The redactor for one run's results (results.json as loaded, journal merged)."""
    redactor = Redactor()
    host = data.get("host")
    add_hostname(redactor, host.get("hostname") if isinstance(host, dict) else None)
    texts = [json.dumps(data)]
    add_addresses(redactor, texts)
    add_people(redactor, texts)
    return redactor


# Files of a run directory the report step writes again from the redacted record.
REGENERATED = ("report.html", "report.md", "details.md")


def copy_run(run_dir: Path, out_dir: Path, data: dict[str, Any], redactor: Redactor,
             write: Callable[[Path, str], None], skip: Iterable[str]) -> list[str]:
    """results.json (from data, the loaded record) and every other text file of run_dir,
    redacted, into out_dir; returns the names of what was left out (sub-directories and
    files that are not text: nothing the check could read). Files named in skip are
    written by the caller."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write(out_dir / "results.json", json.dumps(redactor.value(data), indent=1, allow_nan=False))
    # The journal is merged into results.json.
    return copy_text_files(run_dir, out_dir, redactor, write,
                           skip=[*skip, "results.json", "trials.jsonl"])


def copy_text_files(src: Path, out_dir: Path, redactor: Redactor,
                    write: Callable[[Path, str], None], skip: Iterable[str]) -> list[str]:
    """Every text file at the top of src but those in skip, redacted, into out_dir; returns
    the names left out (sub-directories, files that are not text; dotfiles are temp files
    and not named)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    skipped = set(skip)
    left_out = []
    for path in sorted(src.iterdir()):
        name = path.name
        if name.startswith(".") or name in skipped:
            continue
        if not path.is_file():
            left_out.append(f"{name}/" if path.is_dir() else name)
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            left_out.append(name)
            continue
        write(out_dir / name, redactor.text(text))
    return left_out


# Files at the top of a fleet directory the report across hosts writes again.
FLEET_REGENERATED = ("report.html", "report.md", "details.md", "hosts.json")


def fleet_texts(fleet_dir: Path) -> list[str]:
    """The fleet's own text files (fleet.json, ansible.log, events.jsonl, the playbook's
    vars): searched for addresses and home paths before anything is replaced."""
    texts = []
    for path in sorted(p for p in fleet_dir.iterdir() if p.is_file()):
        if path.name not in FLEET_REGENERATED:
            with contextlib.suppress(UnicodeDecodeError):
                texts.append(path.read_text(encoding="utf-8"))
    return texts


def copy_fleet_files(fleet_dir: Path, out_dir: Path, redactor: Redactor,
                     write: Callable[[Path, str], None], hosts_dir: str) -> list[str]:
    """fleet.json (its host names as keys too) and the fleet's other text files, redacted;
    hosts_dir (the hosts' runs) is the caller's; returns the names left out."""
    out_dir.mkdir(parents=True, exist_ok=True)
    record = json.loads((fleet_dir / "fleet.json").read_text(encoding="utf-8"))
    write(out_dir / "fleet.json", json.dumps(redactor.value(record), indent=2) + "\n")
    return copy_text_files(fleet_dir, out_dir, redactor, write,
                           skip=[*FLEET_REGENERATED, "fleet.json", hosts_dir])
