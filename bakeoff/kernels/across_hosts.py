"""One table across hosts and kernels: what runs, what skips and why, per variant.

A fleet's `--kernel` run leaves on the controller each host's own run with the kernel as its
axis (`hosts/<host>/kernels.json` and its boots' files: docs/KERNELS.md, "On a fleet"). This
reads those files and nothing else into one table: a row per room, variant and params, a
column per kernel and host, each cell what that host's boots of that kernel recorded
(`functional.rows`: runs, skips with the reason, error with the message), "—" where none of
them had such a row. A row says whether the hosts differ on some kernel (the host is one
axis) and whether some host's kernels differ (the kernel is the other), and why, per cell.

A timed host's boots count too (its comparison stays in its own kernels.md): a variant is
in error on a kernel where any boot of it was, else runs where a boot ran it, else skips.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bakeoff.core.errors import UsageError
from bakeoff.kernels import command, functional

NONE = "—"
_RANK = {functional.ERROR: 0, functional.RUNS: 1, functional.SKIPS: 2}

RowKey = tuple[str, str, str]  # room, variant, params
Column = tuple[str, str]  # kernel, host


@dataclass(frozen=True)
class Cell:
    state: str  # functional.RUNS, SKIPS, ERROR
    why: str = ""


@dataclass
class Across:
    """Every host's kernel run, as one table."""

    hosts: list[str] = field(default_factory=list)  # those with a kernels.json, in order
    kernels: list[str] = field(default_factory=list)  # as the hosts named them, first seen first
    facts: dict[Column, dict[str, Any]] = field(default_factory=dict)  # kernels.json's, per host
    modes: dict[str, str] = field(default_factory=dict)  # host -> functional | timed
    cells: dict[RowKey, dict[Column, Cell]] = field(default_factory=dict)
    unread: dict[str, str] = field(default_factory=dict)  # host -> why its record was not read

    def columns(self) -> list[Column]:
        """Kernel first, then host: the hosts of one kernel side by side."""
        return [(k, h) for k in self.kernels for h in self.hosts]

    def hosts_differ(self, key: RowKey) -> list[str]:
        """The kernels on which two hosts recorded different states for this row."""
        row = self.cells[key]
        return [k for k in self.kernels
                if len({row[(k, h)].state for h in self.hosts if (k, h) in row}) > 1]

    def kernels_differ(self, key: RowKey) -> list[str]:
        """The hosts on which two kernels gave different states for this row."""
        row = self.cells[key]
        return [h for h in self.hosts
                if len({row[(k, h)].state for k in self.kernels if (k, h) in row}) > 1]


def merge(old: Cell | None, new: Cell) -> Cell:
    """Boots of one kernel on one host (a timed run's): the error first, then a run."""
    if old is None or _RANK[new.state] < _RANK[old.state]:
        return new
    return old


def gather(host_dirs: dict[str, Path]) -> Across:
    """Each host's run directory (its kernels.json and boots) → one table. A host whose
    directory holds no readable kernels.json is named in `unread`, with why."""
    out = Across()
    for host, run_dir in host_dirs.items():
        try:
            record = command.load(run_dir)
            rows = command.functional_table(run_dir, record)
        except FileNotFoundError:
            out.unread[host] = f"no kernels.json in {run_dir}"
            continue
        except (OSError, ValueError, KeyError, TypeError, UsageError) as exc:
            out.unread[host] = f"its kernels.json cannot be read ({type(exc).__name__}: {exc})"
            continue
        out.hosts.append(host)
        out.modes[host] = str(record.get("mode", "?"))
        for name, facts in record.get("kernels", {}).items():
            if name not in out.kernels:
                out.kernels.append(name)
            out.facts[(name, host)] = facts
        for r in rows:
            if r.kernel not in out.kernels:
                out.kernels.append(r.kernel)
            row = out.cells.setdefault((r.room, r.variant, r.params), {})
            row[(r.kernel, host)] = merge(row.get((r.kernel, host)), Cell(r.state, r.why))
    return out


def _cell(c: Cell | None) -> str:
    return NONE if c is None else c.state


def _why(across: Across, key: RowKey) -> str:
    """Each reason once, with where it was given: `everywhere` when every cell gave it."""
    row = across.cells[key]
    where: dict[tuple[str, str], list[Column]] = {}
    for col in across.columns():
        c = row.get(col)
        if c is not None and c.state != functional.RUNS:
            where.setdefault((c.state, c.why), []).append(col)
    parts = []
    for (state, why), cols in where.items():
        if len(cols) == len(across.columns()):
            place = "everywhere"
        else:  # per host, its kernels: "on beta (deb61, deb612)"
            per_host = {h: [k for k, h2 in cols if h2 == h] for h in across.hosts}
            place = "on " + ", ".join(f"{h} ({', '.join(ks)})" for h, ks in per_host.items() if ks)
        parts.append(f"{state} {place}: {why}")
    return "; ".join(parts).replace("|", "/")


def _facts_lines(across: Across) -> list[str]:
    lines = ["| host | kernel | mode | release | BTF | image sha256 | config sha256 | from |",
             "|---|---|---|---|---|---|---|---|"]
    for k, h in across.columns():
        f = across.facts.get((k, h))
        if f is None:
            lines.append(f"| {h} | {k} | {across.modes[h]} | {NONE} | {NONE} | {NONE} | "
                         f"{NONE} | not in its kernels.json |")
            continue
        btf = "yes" if f.get("btf") else "no" if "btf" in f else "?"
        lines.append(f"| {h} | {k} | {across.modes[h]} | {f.get('release', '?')} | {btf} | "
                     f"{str(f.get('image_sha256', ''))[:16]} | "
                     f"{str(f.get('config_sha256', ''))[:16] or 'no config'} | "
                     f"{f.get('package') or f.get('spec', '?')} |")
    for k in across.kernels:
        images = {str(across.facts[(k, h)].get("image_sha256", ""))[:16]
                  for h in across.hosts if (k, h) in across.facts}
        if len(images) > 1:
            lines += ["", f"Kernel {k} is not one image on every host "
                          f"({', '.join(sorted(images))}): its columns compare different kernels."]
    return lines


def lines(across: Across) -> list[str]:
    """The table in Markdown."""
    out = ["## What runs, across hosts and kernels", ""]
    if across.unread:
        out += [*(f"- {h}: not in the table: {why}" for h, why in across.unread.items()), ""]
    if not across.hosts:
        return [*out, "No host brought a kernel run back: nothing to set side by side.", ""]
    out += [*_facts_lines(across), ""]
    keys = sorted(across.cells)
    hosts_differ = [k for k in keys if across.hosts_differ(k)]
    kernels_differ = [k for k in keys if across.kernels_differ(k)]
    errors = sum(1 for k in keys for c in across.cells[k].values()
                 if c.state == functional.ERROR)
    same = sum(1 for k in keys if not across.hosts_differ(k) and not across.kernels_differ(k))
    out.append(f"{len(keys)} rows (room, variant, params) on {len(across.kernels)} kernel(s) "
               f"and {len(across.hosts)} host(s): {same} the same on every host and kernel, "
               f"{len(hosts_differ)} differ between hosts, {len(kernels_differ)} between "
               f"kernels; {errors} cell(s) in error. {NONE}: no such row in that host's boots "
               "of that kernel (a room may plan its check on the kernel it runs on).")
    if hosts_differ:
        out += ["", "Where the hosts differ:", ""]
        for key in hosts_differ:
            room, variant, params = key
            for k in across.hosts_differ(key):
                states = ", ".join(f"{_cell(across.cells[key].get((k, h)))} on {h}"
                                   for h in across.hosts)
                out.append(f"- {room} {variant} ({params or 'every case'}) on {k}: {states}")
    head = ["room", "variant", "params", *(f"{k} {h}" for k, h in across.columns()), "hosts",
            "kernels", "why"]
    out += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in keys:
        row = across.cells[key]
        cells = [_cell(row.get(col)) for col in across.columns()]
        out.append("| " + " | ".join([*key, *cells,
                                      "differ" if across.hosts_differ(key) else "same",
                                      "differ" if across.kernels_differ(key) else "same",
                                      _why(across, key)]) + " |")
    return [*out, ""]


def to_json(across: Across) -> dict[str, Any]:
    """The same table for scripts."""
    return {"hosts": across.hosts, "kernels": across.kernels, "unread": across.unread,
            "rows": [{"room": r, "variant": v, "params": p,
                      "cells": {f"{k} {h}": {"state": c.state, "why": c.why}
                                for (k, h), c in across.cells[(r, v, p)].items()},
                      "hosts_differ_on": across.hosts_differ((r, v, p)),
                      "kernels_differ_on": across.kernels_differ((r, v, p))}
                     for r, v, p in sorted(across.cells)]}


def report(host_dirs: dict[str, Path], json_path: Path) -> list[str]:
    """Each host's run directory → the table: written as JSON to json_path (for scripts),
    returned as Markdown (for the fleet's kernels.md)."""
    across = gather(host_dirs)
    json_path.write_text(json.dumps(to_json(across), indent=1) + "\n")
    return lines(across)
