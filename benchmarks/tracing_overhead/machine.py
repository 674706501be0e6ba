"""What this machine can run: the tools and builds each variant needs (Benchmark.skip_case)."""

from __future__ import annotations

import shutil
from pathlib import Path

from bakeoff.room import Case, RunContext

ROOM = "tracing_overhead"


def _missing_tool(*tools: str) -> str | None:
    for tool in tools:
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {_PACKAGE_OF.get(tool, tool)})"
    return None


_PACKAGE_OF = {"lttng": "lttng-tools", "lttng-sessiond": "lttng-tools",
               "babeltrace2": "babeltrace2", "bpftrace": "bpftrace"}


def skip_case(case: Case, ctx: RunContext) -> str | None:
    built = ctx.build_dir / ROOM
    if case.variant == "lttng":
        if not (built / "libbakeoff_traced_lttng.so").exists():
            return ("the LTTng build of the library is missing: apt-get install "
                    "liblttng-ust-dev, then make")
        return _missing_tool("lttng", "lttng-sessiond", "babeltrace2")
    if case.variant.startswith("ebpf-"):
        if not Path("/sys/kernel/btf/vmlinux").exists():
            return "the kernel has no BTF (/sys/kernel/btf/vmlinux): CO-RE cannot load"
        if not (built / "bakeoff_tracer").exists():
            return "bakeoff_tracer is not built: run make"
    if case.variant == "bpftrace":
        return _missing_tool("bpftrace")
    return None
