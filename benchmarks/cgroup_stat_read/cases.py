"""Cases this machine or this kernel cannot run, and why (Benchmark.skip_case)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from bakeoff.room import Case, RunContext

from .controller import ALL_FIELDS, counter_fields, memory_controller

BPF_CONTENTS = ("bpf-iter", "bpf-iter-flush")


def _kallsyms_has(symbol: str) -> bool:
    with contextlib.suppress(OSError), open("/proc/kallsyms") as f:
        return any(line.rstrip().endswith(f" {symbol}") for line in f)
    return False


FLUSH_UNAVAILABLE = (
    "no memcg flush from BPF on this kernel: its rstat kfunc css_rstat_flush (6.16+) flushes "
    "the subsystem of the css it is given, and the verifier lets a program pass only a trusted "
    "css: &cgrp->self (base stats), not the memory css read from cgrp->subsys[] (METHOD.md)")


def _target_dir(case: Case) -> Path | None:
    target = str(case.param("target"))
    if target in ("child", "root"):
        controller = memory_controller()
        return controller[0] if controller else None  # a child has its parent's fields
    return Path(target)


def skip_case(case: Case, ctx: RunContext) -> str | None:
    content, fields = str(case.param("content")), int(case.param("fields"))
    if content == "legacy" and fields != ALL_FIELDS:
        return ("not applicable: legacy reads every field; fields selects for legacy-parse, ks "
                "and bpf-iter")
    if content in BPF_CONTENTS:
        if case.variant == "pread":
            return ("not applicable: an iterator fd has no offset to pread at; held "
                    "re-creates the iterator fd per query instead")
        if not ctx.capabilities.get("bpf", False):
            return "bpf-iter needs BPF (bpf() as root); fix: run as root, see bakeoff doctor"
        if content == "bpf-iter-flush" and not _kallsyms_has("cgroup_rstat_flush"):
            return FLUSH_UNAVAILABLE
    where = _target_dir(case)
    if where is None:
        return "no memory controller is mounted"
    if str(case.param("target")) == "child" and not os.access(where, os.W_OK):
        # The child is made with mkdir under the controller's root: only root may.
        return (f"target=child needs root: it creates a memory cgroup under {where}, which "
                f"uid {os.geteuid()} cannot write; fix: run as root, or --param target=root")
    if content == "ks" and not (where / "memory.stat.ks").exists():
        return ("this kernel has no memory.stat.ks (the out-of-tree patch that filters "
                "memory.stat in the kernel)")
    available = len(counter_fields(where))
    if fields > available:
        return f"{where}/memory.stat has {available} counter fields here; fields={fields} is more"
    return None
