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
    assert figs["size=16 MiB mremap#1"] == bh.Figure(0.0165, 0.0125, 0.0187, ratio=True)
    assert figs["size=16 MiB mremap-thp#1"] == bh.Figure(0.5, 0.4, 0.6, ratio=True)
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


def test_every_kind_of_answer_figure_is_read(bh: ModuleType) -> None:
    """A cost whose CI follows it bare ("at 5 µs +235 ns (152–317 ns)"), a percentage, a
    cost not resolved from 0 (its point the middle of its interval)."""
    figs = bh.figures("lttng adds 247 ns per operation at 0 µs (lttng − baseline, paired by "
                      "round, 95% CI 216–278 ns); at 5 µs +235 ns (152–317 ns)")
    assert figs["5 µs lttng#1"] == bh.Figure(235.0, 152.0, 317.0)
    figs = bh.figures("RMS of poisson_total_error_pct: poisson at workload=mode1, mean=4 KiB "
                      "0.437 % (95% CI 0.191–1.00 %; 6 trials)")
    assert list(figs.values()) == [bh.Figure(0.437, 0.191, 1.0)]
    figs = bh.figures("At workload=inline-64, over none: poisson adds no cost resolved from 0 "
                      "(95% CI -0.0745 to +0.703 ns; 15 trials)")
    assert list(figs.values()) == [bh.Figure((0.703 - 0.0745) / 2, -0.0745, 0.703)]


def test_widths_name_each_answer_wider_narrower_or_the_same(bh: ModuleType, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[
                                                                 str]) -> None:
    old = _run(tmp_path, "old", "At size=16 MiB, mremap is 60.8× faster than memcpy (ratio "
               "0.0165, 95% CI 0.0125–0.0187; 12 + 12 trials).") / "report.md"
    same = _run(tmp_path, "same", "At size=16 MiB, mremap is 55× faster than memcpy (ratio "
                "0.0182, 95% CI 0.0140–0.0208; 12 + 12 trials).") / "report.md"
    wide = _run(tmp_path, "wide", "At size=16 MiB, mremap is 55× faster than memcpy (ratio "
                "0.0182, 95% CI 0.0120–0.0240; 12 + 12 trials).") / "report.md"
    assert bh.compare_widths(old, same) == 0  # log(0.0208/0.014) within 5% of log(0.0187/0.0125)
    assert "1 answer figures: 0 wider, 0 narrower, 1 the same" in capsys.readouterr().out
    assert bh.compare_widths(old, wide) == 1
    assert "1 wider" in capsys.readouterr().out
    assert bh.compare_widths(wide, old) == 0
    assert "1 narrower" in capsys.readouterr().out


@pytest.mark.slow(live=False)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for args in ([], [str(tmp_path)], [str(tmp_path), str(tmp_path)],
                 ["--widths", str(tmp_path / "no.md"), str(tmp_path / "none.md")]):
        res = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                             text=True, check=False)
        assert res.returncode == 2, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
