"""The room API (bakeoff.room): rooms and the `bakeoff new` skeleton import it and nothing
else of the harness; its names resolve; Param's choices and ranges refuse with one line; the
dead-owner sweep removes a dead process's things only; the partner CPU comes from the run."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bakeoff.room as room
from bakeoff.core.errors import UsageError
from bakeoff.room import Param, owner_pids, partner_cpu, partner_cpus, sweep_dead_owners
from conftest import REPO

ALLOWED = frozenset({"bakeoff.room", "bakeoff.room.program"})
TEMPLATES = REPO / "bakeoff" / "declare" / "templates" / "room"


def _room_sources() -> list[Path]:
    """A room's code and the skeleton's; not a room's tests/ (tests check the harness's
    records of the room, as the harness's own tests do)."""
    found = [p for p in sorted((REPO / "benchmarks").rglob("*.py"))
             if "__pycache__" not in p.parts and "tests" not in p.relative_to(REPO).parts]
    found += sorted((REPO / "benchmarks").rglob("*.in"))
    return found + sorted(TEMPLATES.glob("*.py.tmpl"))


def _parse(path: Path) -> ast.Module:
    text = path.read_text()
    if path.suffix == ".tmpl":  # {{NAME}} placeholders: names, so that the text parses
        text = re.sub(r"\{\{(\w+)\}\}", r"\1", text)
    return ast.parse(text, filename=str(path))


def _harness_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module) of every import of a bakeoff module, at any depth (a function's too)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "bakeoff"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "bakeoff":
            out.append((node.lineno, node.module))
            if node.module == "bakeoff":  # `from bakeoff import room`: the package itself
                out += [(node.lineno, f"bakeoff.{a.name}") for a in node.names]
    return out


def test_rooms_and_the_skeleton_import_only_the_room_api() -> None:
    sources = _room_sources()
    assert any(p.suffix == ".tmpl" for p in sources), "the skeleton's spec is not checked"
    assert len([p for p in sources if p.name == "spec.py"]) >= 5, sources
    wrong = [f"{p.relative_to(REPO)}:{line}: {module}" for p in sources
             for line, module in _harness_imports(_parse(p))
             if module not in ALLOWED and module != "bakeoff"]
    assert not wrong, ("rooms may import only bakeoff.room (and bakeoff.room.program); add "
                       "what they need to the room API:\n" + "\n".join(wrong))


def test_every_name_a_room_imports_is_in_the_api() -> None:
    used = set()
    for path in _room_sources():
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.ImportFrom) and node.module == "bakeoff.room":
                used |= {a.name for a in node.names}
    assert used, "no room imports bakeoff.room"
    assert used <= set(room.__all__), sorted(used - set(room.__all__))


def test_the_api_resolves_every_name_it_lists() -> None:
    for name in room.__all__:
        assert getattr(room, name) is not None, name
    with pytest.raises(AttributeError, match="room API"):
        room.__getattr__("registry")


@pytest.mark.slow(live=False)
def test_a_trial_program_pays_only_for_program() -> None:
    """tracing-overhead's trial driver imports bakeoff.room.program under the system's
    python3: the API's package loads nothing of the declaration for it."""
    code = ("import sys; import bakeoff.room.program; "
            "print(sorted(m for m in sys.modules if m.startswith('bakeoff.')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, check=True)
    assert res.stdout.strip() == "['bakeoff.room', 'bakeoff.room.program']", res.stdout


# ---- Param: choices and ranges ---------------------------------------------------------------


def _refusal(param: Param, text: str) -> str:
    with pytest.raises(UsageError) as err:
        param.parse(text)
    message = str(err.value)
    assert "\n" not in message
    return message


def test_choices_refuse_anything_else_naming_them() -> None:
    p = Param("map", "str", "map type", choices=("hash", "array"))
    assert p.parse("array") == "array"
    assert _refusal(p, "lru") == "--param map=lru: use one of hash, array"


def test_ranges_are_inclusive_and_named_with_the_unit() -> None:
    p = Param("entries", "int", "entries", unit="entries", min=1, max=64)
    assert p.parse("1") == 1 and p.parse("64") == 64
    assert _refusal(p, "0") == "--param entries=0: must be from 1 to 64 entries"
    assert _refusal(p, "65") == "--param entries=65: must be from 1 to 64 entries"
    assert _refusal(Param("n", "int", "n", min=2), "1") == "--param n=1: must be at least 2"
    assert _refusal(Param("x", "float", "x", max=0.5), "0.75") == "--param x=0.75: must be at most 0.5"
    size = Param("size", "bytes", "bytes", unit="B", min=1, max=256 * 1024 * 1024)
    assert _refusal(size, "0") == "--param size=0: must be from 1 B to 256 MiB"


def test_check_runs_after_the_bounds() -> None:
    seen: list[object] = []

    def even(value: object) -> str | None:
        seen.append(value)
        return None if int(str(value)) % 2 == 0 else "give an even number"

    p = Param("n", "int", "n", min=0, max=10, check=even)
    assert "must be from 0 to 10" in _refusal(p, "11") and seen == []
    assert _refusal(p, "3").endswith("give an even number") and seen == [3]


def test_a_bound_on_a_string_or_an_empty_range_is_a_bug_of_the_spec() -> None:
    with pytest.raises(ValueError, match="numeric kind"):
        Param("s", "str", "s", min=1)
    with pytest.raises(ValueError, match="above max"):
        Param("n", "int", "n", min=5, max=4)


# ---- the dead-owner sweep ------------------------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_owner_pids_reads_one_or_two_pids_and_nothing_else() -> None:
    assert owner_pids("bakeoff-12-target") == (12,)
    assert owner_pids("bakeoff-12-34") == (12, 34)
    assert owner_pids("bakeoff-12") == (12,)
    assert owner_pids("bakeoff-12-34x") == (12,)
    assert owner_pids("bakeoff-x-12") == ()
    assert owner_pids("other-12-target") == ()


@pytest.mark.slow(live=False)
def test_sweep_removes_a_dead_owners_things_and_leaves_a_live_ones(tmp_path: Path) -> None:
    dead, live = _dead_pid(), os.getpid()
    for name in (f"bakeoff-{dead}-a", f"bakeoff-{live}-b", f"bakeoff-{live}-{dead}",
                 f"bakeoff-{dead}-stuck", "bakeoff-nopid"):
        (tmp_path / name).mkdir()

    def remove(path: Path) -> None:
        if path.name.endswith("stuck"):
            raise OSError(16, "Device or resource busy")
        path.rmdir()

    lines = sweep_dead_owners(sorted(tmp_path.iterdir()), remove, "directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"bakeoff-{live}-b", f"bakeoff-{live}-{dead}", f"bakeoff-{dead}-stuck",
         "bakeoff-nopid"])
    assert lines == [f"removed directory {tmp_path / f'bakeoff-{dead}-a'} (its process, "
                     f"{dead}, is gone)",
                     f"could not remove directory {tmp_path / f'bakeoff-{dead}-stuck'}: "
                     "Device or resource busy"]


@pytest.mark.slow(live=False)
def test_all_owners_dead_reads_the_directories_a_path_names() -> None:
    dead = _dead_pid()
    assert room.all_owners_dead(f"/tmp/bakeoff-{dead}-x/lib/lib.so:0x10")
    assert not room.all_owners_dead(f"/tmp/bakeoff-{dead}-x/a /tmp/bakeoff-{os.getpid()}-y/b")
    assert not room.all_owners_dead("/usr/lib/libc.so.6")


# ---- a partner's CPU --------------------------------------------------------------------------


def test_partner_cpu_comes_from_the_trials_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAKEOFF_TRIAL_CPUS", "3,1")
    assert room.measured_cpu() == 3 and partner_cpus() == (1,) and partner_cpu() == 1
    monkeypatch.setenv("BAKEOFF_TRIAL_CPUS", "")  # not pinned (--no-pin, one CPU)
    assert room.measured_cpu() is None and partner_cpus() == () and partner_cpu() is None
    assert room.pin_to(()) is None


@pytest.mark.slow(live=False)
def test_pin_to_places_a_real_process() -> None:
    cpu = sorted(os.sched_getaffinity(0))[-1]
    res = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                         preexec_fn=room.pin_to((cpu,)), capture_output=True, text=True,
                         check=True)
    assert res.stdout.strip() == f"[{cpu}]"


def test_partner_cpu_in_a_session_comes_from_the_run_context(tmp_path: Path) -> None:
    ctx = room.RunContext(build_dir=tmp_path, scratch_dir=tmp_path, capabilities={},
                          host=None, trial_cpus=(2, 0))  # the host is not read here
    assert room.measured_cpu(ctx) == 2 and partner_cpus(ctx) == (0,) and partner_cpu(ctx) == 0


PARTNER_C = r"""
#include "bench.h"
#include <sched.h>
#include <stdio.h>
int main(void)
{
	int cpu = bench_partner_cpu();
	bench_pin_cpu(0, cpu);
	printf("%d %d %d\n", bench_trial_cpu(0), cpu, cpu < 0 ? -1 : sched_getcpu());
	return 0;
}
"""


@pytest.mark.slow(live=False)
def test_bench_h_gives_a_c_program_its_partner_cpu(tmp_path: Path) -> None:
    """bench_partner_cpu() reads BAKEOFF_TRIAL_CPUS as partner_cpu() does, and
    bench_pin_cpu() puts the caller there; nothing placed when not pinned or malformed."""
    common = REPO / "benchmarks" / "common"
    (tmp_path / "p.c").write_text(PARTNER_C)
    subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
                    f"-I{common}", str(tmp_path / "p.c"), str(common / "bench.c"), "-lm", "-o",
                    str(tmp_path / "p")], check=True, capture_output=True)
    cpus = sorted(os.sched_getaffinity(0))
    measured, partner = cpus[0], cpus[-1]

    def run(value: str | None) -> str:
        env = {k: v for k, v in os.environ.items() if k != "BAKEOFF_TRIAL_CPUS"}
        if value is not None:
            env["BAKEOFF_TRIAL_CPUS"] = value
        return subprocess.run([str(tmp_path / "p")], env=env, capture_output=True, text=True,
                              check=True).stdout.strip()

    assert run(f"{measured},{partner}") == f"{measured} {partner} {partner}"
    assert run(f"{measured}") == f"{measured} -1 -1"  # cpus=1: no partner
    assert run("") == run(None) == run("x,1") == "-1 -1 -1"
