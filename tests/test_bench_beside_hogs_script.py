"""scripts/bench-beside-hogs: the answers of a busy `make bench` against an idle one, read
from report.md, paired by question, case and variant (not by the order printed), and held
to the idle CI widened by ±15% unless the busy line says it was contended."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conftest import REPO

SCRIPT = REPO / "scripts" / "bench-beside-hogs"
Q = "- **How much faster is one mremap than memcpy?** "


@pytest.fixture(scope="module")
def bh() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("bench_beside_hogs", str(SCRIPT))
    spec = importlib.util.spec_from_loader("bench_beside_hogs", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_beside_hogs"] = module
    loader.exec_module(module)
    return module


def _run(tmp_path: Path, name: str, answer: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "report.md").write_text(f"# bakeoff results: x\n\n## Moves (mremap-vs-memcpy)\n\n"
                                 f"{Q}{answer}\n")
    return d


def test_figures_are_keyed_by_case_and_variant_in_any_order(bh: ModuleType) -> None:
    line = ("At size=16 MiB, mremap is 60.8× faster than memcpy (ratio 0.0165, 95% CI "
            "0.0125–0.0187; 12 + 12 trials); mremap-thp is 2.00× faster than memcpy (ratio "
            "0.500, 95% CI 0.400–0.600; 12 + 12 trials); lttng adds 1.91 µs per operation at "
            "0 µs (lttng − baseline, paired by round, 95% CI 1,700–2,120 ns)")
    figs = bh.figures(line)
    assert figs["size=16 MiB mremap#1"] == bh.Figure(0.0165, 0.0125, 0.0187)
    assert figs["size=16 MiB mremap-thp#1"] == bh.Figure(0.5, 0.4, 0.6)
    assert figs["size=16 MiB lttng#1"] == bh.Figure(1910.0, 1700.0, 2120.0)


def test_within_widened_outside_said_or_not(bh: ModuleType, tmp_path: Path) -> None:
    idle = _run(tmp_path, "idle", "At size=16 MiB, mremap is 60.8× faster than memcpy "
                "(ratio 0.0165, 95% CI 0.0125–0.0187; 12 + 12 trials).")
    near = _run(tmp_path, "near", "At size=16 MiB, mremap is 47× faster than memcpy "
                "(ratio 0.0212, 95% CI 0.0190–0.0230; 12 + 12 trials).")
    far = _run(tmp_path, "far", "At size=16 MiB, mremap is 40× faster than memcpy "
               "(ratio 0.0250, 95% CI 0.0200–0.0300; 12 + 12 trials).")
    said = _run(tmp_path, "said", "At size=16 MiB, mremap is 40× faster than memcpy "
                "(ratio 0.0250, 95% CI 0.0200–0.0300; 12 + 12 trials). † Contended: the "
                "trials of mremap waited for a CPU for at least 10% of their wall time.")
    assert bh.compare(idle, near) == 0  # 0.0212 <= 0.0187 * 1.15 = 0.0215
    assert bh.compare(idle, far) == 1
    assert bh.compare(idle, said) == 0


@pytest.mark.slow(live=False)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for args in ([], [str(tmp_path)], [str(tmp_path), str(tmp_path)]):
        res = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                             text=True, check=False)
        assert res.returncode == 2, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
