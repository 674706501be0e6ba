"""The room API: what a room's spec and its Python code import, and nothing else of the
harness (tests/test_room_api.py fails on any other `bakeoff.` import under benchmarks/).

    from bakeoff.room import Benchmark, Variant, Param, Metric, Profile, HeldProcess, ...
    from bakeoff.room import program     # a trial program written in Python (program.py)

What a room may use (docs/ADDING-A-BENCHMARK.md explains each; section in brackets):

  the declaration [3]      Benchmark, Variant, Param (choices, min, max, check), Metric,
                           Profile, Question, Fit, LegacyCsv, LARGEST, SMALLEST, ParamValue
  hooks' arguments [4, 5]  Case, RunContext, TrialPlan, trial_argv
  errors [4]               UsageError (one line, exit 2), Interrupted
  units                    format_bytes, parse_bytes
  a held helper [7]        HeldProcess, HelperFailed, sweep_held, stop_group (held.py)
  a partner's CPU [6]      trial_cpus, measured_cpu, partner_cpus, partner_cpu, pin_to
                           (cpus.py; C programs: bench.h's bench_partner_cpu)
  what SIGKILL left [7]    sweep_dead_owners, left_by_dead_owner, owner_pids,
                           all_owners_dead (owners.py), sweep_scratch
  processes by PID         alive, live_name, stop_processes (SIGTERM, grace, SIGKILL)
  where builds go          build_dir (a room command run outside a run)
  a Python trial program   program: Spec, Param, parse_args, Output, Failure, EXIT_*

Names load on first use (PEP 562): a trial program that imports bakeoff.room.program, or
a room module run by the system's python3 (tracing-overhead's trial driver), pays only
for what it uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that owns it. The table above says what each is for.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("Benchmark", "Variant", "Param", "ParamValue", "Metric", "Profile",
                     "Question", "Fit", "LegacyCsv", "LARGEST", "SMALLEST", "Case",
                     "RunContext", "TrialPlan", "format_bytes", "parse_bytes"),
                    "bakeoff.declare.model"),
    "trial_argv": "bakeoff.run.protocol",
    "sweep_scratch": "bakeoff.run.cleanup",
    "UsageError": "bakeoff.core.errors",
    "Interrupted": "bakeoff.core.errors",
    "alive": "bakeoff.core.pids",
    "live_name": "bakeoff.core.pids",
    "build_dir": "bakeoff.declare.registry",
    **dict.fromkeys(("HeldProcess", "HelperFailed", "sweep_held", "stop_group"),
                    "bakeoff.room.held"),
    **dict.fromkeys(("sweep_dead_owners", "left_by_dead_owner", "owner_pids",
                     "all_owners_dead"), "bakeoff.room.owners"),
    **dict.fromkeys(("trial_cpus", "measured_cpu", "partner_cpus", "partner_cpu", "pin_to"),
                    "bakeoff.room.cpus"),
}
# Exported under another name than its module's: pids.stop is too short a name out here.
_RENAMED = {"stop_processes": ("bakeoff.core.pids", "stop")}

__all__ = [
    "LARGEST",
    "SMALLEST",
    "Benchmark",
    "Case",
    "Fit",
    "HeldProcess",
    "HelperFailed",
    "Interrupted",
    "LegacyCsv",
    "Metric",
    "Param",
    "ParamValue",
    "Profile",
    "Question",
    "RunContext",
    "TrialPlan",
    "UsageError",
    "Variant",
    "alive",
    "all_owners_dead",
    "build_dir",
    "format_bytes",
    "left_by_dead_owner",
    "live_name",
    "measured_cpu",
    "owner_pids",
    "parse_bytes",
    "partner_cpu",
    "partner_cpus",
    "pin_to",
    "program",
    "stop_group",
    "stop_processes",
    "sweep_dead_owners",
    "sweep_held",
    "sweep_scratch",
    "trial_argv",
    "trial_cpus",
]

if TYPE_CHECKING:
    from bakeoff.core.errors import Interrupted as Interrupted
    from bakeoff.core.errors import UsageError as UsageError
    from bakeoff.core.pids import alive as alive
    from bakeoff.core.pids import live_name as live_name
    from bakeoff.core.pids import stop as stop_processes
    from bakeoff.declare.model import LARGEST as LARGEST
    from bakeoff.declare.model import SMALLEST as SMALLEST
    from bakeoff.declare.model import Benchmark as Benchmark
    from bakeoff.declare.model import Case as Case
    from bakeoff.declare.model import Fit as Fit
    from bakeoff.declare.model import LegacyCsv as LegacyCsv
    from bakeoff.declare.model import Metric as Metric
    from bakeoff.declare.model import Param as Param
    from bakeoff.declare.model import ParamValue as ParamValue
    from bakeoff.declare.model import Profile as Profile
    from bakeoff.declare.model import Question as Question
    from bakeoff.declare.model import RunContext as RunContext
    from bakeoff.declare.model import TrialPlan as TrialPlan
    from bakeoff.declare.model import Variant as Variant
    from bakeoff.declare.model import format_bytes as format_bytes
    from bakeoff.declare.model import parse_bytes as parse_bytes
    from bakeoff.declare.registry import build_dir as build_dir
    from bakeoff.room import program as program
    from bakeoff.room.cpus import measured_cpu as measured_cpu
    from bakeoff.room.cpus import partner_cpu as partner_cpu
    from bakeoff.room.cpus import partner_cpus as partner_cpus
    from bakeoff.room.cpus import pin_to as pin_to
    from bakeoff.room.cpus import trial_cpus as trial_cpus
    from bakeoff.room.held import HeldProcess as HeldProcess
    from bakeoff.room.held import HelperFailed as HelperFailed
    from bakeoff.room.held import stop_group as stop_group
    from bakeoff.room.held import sweep_held as sweep_held
    from bakeoff.room.owners import all_owners_dead as all_owners_dead
    from bakeoff.room.owners import left_by_dead_owner as left_by_dead_owner
    from bakeoff.room.owners import owner_pids as owner_pids
    from bakeoff.room.owners import sweep_dead_owners as sweep_dead_owners
    from bakeoff.run.cleanup import sweep_scratch as sweep_scratch
    from bakeoff.run.protocol import trial_argv as trial_argv


def __getattr__(name: str) -> Any:
    if name == "program":
        return importlib.import_module("bakeoff.room.program")
    if name in _RENAMED:
        module, attr = _RENAMED[name]
    elif name in _EXPORTS:
        module, attr = _EXPORTS[name], name
    else:
        raise AttributeError(f"module 'bakeoff.room' has no attribute {name!r} (the room API "
                             f"is listed in its docstring)")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # once: the next use is a plain lookup
    return value


def __dir__() -> list[str]:
    return __all__
