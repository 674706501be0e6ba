"""`bakeoff report --redact`: a copy of a run, or of runs across hosts, for sharing.

Host names, user names, home paths and fleet addresses are replaced (bakeoff/report/redact.py
says how); every file of the copy is checked for each original before the copy is kept, and
a copy that fails the check, or is interrupted, is removed whole.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bakeoff.app.console import out_console
from bakeoff.app.runs import write_exports
from bakeoff.core import lazy
from bakeoff.core.errors import UsageError
from bakeoff.declare.model import RunRecord
from bakeoff.store import results as store


def out_dir(sources: list[Path], out: Path | None) -> Path:
    """Where a redacted copy goes: new or empty, and outside every source directory."""
    first = sources[0].resolve()
    target = (out if out is not None else first.with_name(f"{first.name}-redacted")).resolve()
    for src in (s.resolve() for s in sources):
        if target == src or src in target.parents:
            raise UsageError(f"--out {target} is inside {src}, which --redact must not change; "
                             f"give --out a directory elsewhere")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"{target} exists and is not empty; give --out a new directory for "
                         "the redacted copy")
    return target


@contextlib.contextmanager
def removed_unless_checked(target: Path) -> Iterator[None]:
    """The redacted copy is kept whole and checked, or not at all (a failure, a leak, a
    signal): half a copy could hold what the rest of it redacted."""
    existed = target.exists()
    try:
        yield
    except BaseException:
        # Held: a second Ctrl-C must not stop the removal half way (it arrives after).
        with lazy.signals_held():
            shutil.rmtree(target, ignore_errors=True)
            if existed:
                target.mkdir(exist_ok=True)
        raise


# The kinds of original as the messages name them, singular and plural.
_KIND_WORDS = {"host": ("host name", "host names"), "user": ("user name", "user names"),
               "address": ("address", "addresses"), "home": ("home path", "home paths")}


def check(redactor: Any, target: Path) -> None:
    """Every file of the copy read for every original (the redactor's own token rule);
    the error names the kind and the file, never the original."""
    from bakeoff.report import redact

    found = redact.leaks(redactor, target)
    if found:
        kinds = " and ".join(_KIND_WORDS[k][0] for k in sorted({kind for kind, _ in found}))
        files = ", ".join(sorted({str(p.relative_to(target)) for _, p in found}))
        raise UsageError(f"redaction left a {kinds} in {files}, in a form it does not rewrite; "
                         "nothing of the copy was kept: remove it from those files by hand "
                         "before sharing them")


def say(redactor: Any, target: Path, left_out: list[str]) -> None:
    """After the check: each file of the copy, what was left out, and last what was
    replaced, by count (the originals are never printed)."""
    for p in sorted(p for p in target.rglob("*") if p.is_file()):
        out_console.print(f"wrote {p}", highlight=False)
    for name in left_out:
        # bakeoff writes no sub-directory into a run's; one there is the user's own.
        why = ("a directory (only the run's own files are copied)" if name.endswith("/")
               else "not a text file, so not checked for names")
        out_console.print(f"left out {name}: {why}", highlight=False)
    said = ", ".join(f"{n} {_KIND_WORDS[k][n != 1]}" for k, n in redactor.counts().items() if n)
    out_console.print(f"redacted {said or 'nothing (no host, user or home path found)'} in "
                      f"{target}; kernel, CPU and the other host facts are kept",
                      highlight=False, soft_wrap=True)


def load(target: Path) -> RunRecord:
    """The copy's record, which must load: a host or user named like one of results.json's
    own fields (a host called "host") is replaced there too, and the record breaks. The
    store's message would quote that field, the original, so it is not passed on."""
    try:
        return store.load(target)
    except UsageError:
        raise UsageError("the redacted results.json does not load: a host or user name is also "
                         "one of its field names, so replacing it broke the record; nothing of "
                         "the copy was kept; share the reports with the names removed by "
                         "hand") from None


def export_run(run_dir: Path, out: Path | None) -> None:
    from bakeoff.report import redact

    store.load(run_dir)  # a directory that is not a run is refused before anything is made
    data = store.load_json(run_dir)
    redactor = redact.for_run(data)
    target = out_dir([run_dir], out)
    with removed_unless_checked(target):
        left_out = redact.copy_run(run_dir, target, data, redactor, store.write_atomic,
                                   skip=redact.REGENERATED)
        # The reports again, from the redacted record: tables and charts say what it says.
        write_exports(load(target), target)
        check(redactor, target)
    say(redactor, target, left_out)


def copy_hosts(analysis: Any, run_dirs: list[Path], target: Path,
                         redactor: Any) -> tuple[list[Path], list[str]]:
    """Every host's results, redacted, under target/hosts/<host-N>/, each with its own
    reports written again from its redacted record; for a fleet directory its fleet.json and
    other files too, so the copy is a fleet directory `bakeoff report` reads. Returns what
    to report across (the copy of the fleet, or of each run) and what was left out."""
    from bakeoff.fleet.record import HOSTS_DIR
    from bakeoff.report import redact

    left_out: list[str] = []
    if analysis.fleet is not None:
        fleet_dir = run_dirs[0]
        left_out += redact.copy_fleet_files(fleet_dir, target, redactor, store.write_atomic,
                                            HOSTS_DIR)
        src = fleet_dir / HOSTS_DIR
        for host_dir in sorted(p for p in src.iterdir() if p.is_dir()) if src.is_dir() else []:
            dest = target / HOSTS_DIR / redactor.text(host_dir.name)
            left_out += copy_run(host_dir, dest, redactor)
        return [target], left_out
    copies = []
    for h in analysis.hosts:
        # A label ("vm (20261126-…)" for two runs of one host) as a directory name.
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", redactor.text(h.label)).strip("-") or "host"
        dest, n = target / HOSTS_DIR / name, 1
        while dest.exists():  # two labels that read alike once made a directory name
            n += 1
            dest = target / HOSTS_DIR / f"{name}-{n}"
        left_out += copy_run(h.run_dir, dest, redactor)
        copies.append(dest)
    return copies, left_out


def copy_run(run_dir: Path, dest: Path, redactor: Any) -> list[str]:
    """One host's results directory, redacted, its reports written again from the redacted
    record; a host that sent back no record has its text files copied. Returns what was
    left out, as paths within the copy."""
    from bakeoff.report import redact

    where = dest.relative_to(dest.parent.parent)
    if not (run_dir / store.RESULTS_JSON).is_file():
        left = redact.copy_text_files(run_dir, dest, redactor, store.write_atomic, skip=())
    else:
        left = redact.copy_run(run_dir, dest, store.load_json(run_dir), redactor,
                               store.write_atomic, skip=redact.REGENERATED)
        write_exports(load(dest), dest)
    return [f"{where}/{redactor.text(name)}" for name in left]


def hosts_redactor(analysis: Any, fleet_dir: Path | None = None) -> Any:
    """Every host's label and recorded hostname, every host of the fleet (those that sent
    nothing back are in its table too), the addresses, the people."""
    import json

    from bakeoff.fleet.driver import inventory_addresses
    from bakeoff.fleet.record import HOSTS_DIR
    from bakeoff.report import redact

    redactor = redact.Redactor()
    for h in analysis.hosts:  # host-1, host-2… in the report's order of hosts
        redactor.add("host", h.label)
    if analysis.fleet is not None:
        for name in analysis.fleet.hosts:  # then the rest, in the fleet record's order
            redactor.add("host", name)
    for h in analysis.hosts:  # the machine's own name is the same host, the same host-N
        redact.add_hostname(redactor, h.run.host.get("hostname"), same_as=h.label)
    texts = [json.dumps(store.run_to_json(h.run)) for h in analysis.hosts]
    if analysis.fleet is not None:
        for address in inventory_addresses(Path(analysis.fleet.inventory)):
            redactor.add("address", address)
        texts.append(json.dumps(dataclasses.asdict(analysis.fleet)))
        # ansible.log, events.jsonl, playbook-vars.json: copied too, so searched too.
        if fleet_dir is not None:
            texts += redact.fleet_texts(fleet_dir)
            # A host's directory the record no longer names (a host renamed in the
            # inventory since) is copied too: its name is a host name as well.
            hosts_dir = fleet_dir / HOSTS_DIR
            for p in sorted(hosts_dir.iterdir()) if hosts_dir.is_dir() else []:
                redactor.add("host", p.name)
    redact.add_addresses(redactor, texts)  # and those of hosts the inventory no longer has
    redact.add_people(redactor, texts)
    return redactor
