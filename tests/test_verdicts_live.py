"""Three-state verdicts on real runs: A/A runs compared are never called and never fail the
gate; a command doing twice the work is called slower and fails it; the Questions block of a
comparison never says "differs" where its table calls no change.

Real `bakeoff cmd` and room runs (seconds to a minute each on a busy 2-vCPU VM); the
assertions are about the verdict rule, which holds at any load, never about timings.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bakeoff.analysis.across_runs import compare_runs
from bakeoff.report.compare import DIFFERS, HOLDS, QuestionChange, question_changes
from bakeoff.stats import verdicts
from bakeoff.store import results as store
from conftest import run_bakeoff

WORK = "awk 'BEGIN{{m={n};for(i=0;i<m;i++)s+=i}}'"
COUNTS = ("--trials", "3", "--runs", "3", "--warmup", "0", "--warmup-trials", "0")
COUNTS_LINE = re.compile(r"(\d+) cases: (\d+) faster, (\d+) slower, (\d+) equivalent, "
                         r"(\d+) inconclusive")


def _cmd(out: Path, n: int) -> Path:
    res = run_bakeoff("cmd", "-N", "-n", "work", WORK.format(n=n), *COUNTS, "--quiet",
                      "--out", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    return out


def _counts(stdout: str) -> tuple[int, int, int, int, int]:
    m = COUNTS_LINE.search(" ".join(stdout.split()))
    assert m is not None, stdout
    total, faster, slower, equivalent, inconclusive = (int(g) for g in m.groups())
    return total, faster, slower, equivalent, inconclusive


@pytest.fixture(scope="module")
def cmd_runs(built: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """Two runs of one command back to back (A, A'), and one of twice its work (B)."""
    root = tmp_path_factory.mktemp("verdicts")
    return (_cmd(root / "a", 300_000), _cmd(root / "a2", 300_000), _cmd(root / "b", 600_000))


def test_aa_runs_one_a_side_are_never_called_and_pass_the_gate(
        cmd_runs: tuple[Path, Path, Path]) -> None:
    """A/A, one run a side, no drift measured: inconclusive, gate exit 0, the fix named;
    never "same". The same of a 2x change: its within-run CI alone is not a verdict."""
    a, a2, b = cmd_runs
    for new in (a2, b):
        res = run_bakeoff("compare", str(a), str(new), "--fail-on-regression", "5")
        assert res.returncode == 0, res.stdout + res.stderr
        total, faster, slower, _, inconclusive = _counts(res.stdout)
        assert (total, faster, slower, inconclusive) == (1, 0, 0, 1), res.stdout
        said = " ".join(res.stdout.split())
        assert "--rerun" in said and "selftest --of" in said
        assert not re.search(r"\bsame\b", said.split("old:")[1].split("CIs:")[0]), said


def test_twice_the_work_measured_interleaved_is_called_and_fails_the_gate(
        cmd_runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """compare --rerun measures both commands again, interleaved (no drift model): 2x the
    work is called slower, by the same Holm rule the gate then fails on."""
    a, _, b = cmd_runs
    res = run_bakeoff("compare", str(a), str(b), "--rerun", "--target-ratio-ci", "10",
                      "--out", str(tmp_path / "rerun"), "--fail-on-regression", "5")
    assert res.returncode == 1, res.stdout + res.stderr
    assert _counts(res.stdout)[:3] == (1, 0, 1), res.stdout
    assert "regression: cmd/work[]" in res.stderr and "p Holm" in res.stderr


def test_the_gate_fails_only_what_the_table_calls_slower(
        cmd_runs: tuple[Path, Path, Path]) -> None:
    """In process, on the real runs: every case the gate would fail is one the table calls
    slower, whatever the percentage."""
    a, a2, b = (store.load(p) for p in cmd_runs)
    for old, new in ((a, a2), (a, b), (b, a), ([a, a2], [b, b])):
        cmp = compare_runs(old, new, 0.02)
        for c in cmp.changes:
            for pct in (0.0, 0.05, 0.5):
                assert not c.regressed_beyond(pct) or c.verdict == verdicts.SLOWER
            assert c.verdict in verdicts.VERDICTS
            assert (c.verdict == verdicts.INCONCLUSIVE) == bool(c.settle)


def test_a_question_differs_only_where_the_table_calls_a_change() -> None:
    q = QuestionChange("b", "ask?", [("x", "1", "2", False), ("y", "1", "1", True)])
    assert [q.state(ok) for *_, ok in q.rows] == [verdicts.INCONCLUSIVE, HOLDS]
    called = QuestionChange("b", "ask?", q.rows, table_calls=True)
    assert [called.state(ok) for *_, ok in called.rows] == [DIFFERS, HOLDS]


def test_questions_agree_with_the_table_on_recorded_room_runs(built: Path,
                                                              tmp_path: Path) -> None:
    """Two recorded runs of a room that declares questions (mremap-vs-memcpy, two sizes,
    3 trials): the Questions block above the table says "differs" nowhere the table calls no
    change of that benchmark, in the terminal and in Markdown."""
    runs = []
    for name in ("old", "new"):
        out = tmp_path / name
        res = run_bakeoff("run", "mremap-vs-memcpy", "--profile", "quick", "--trials", "3",
                          "--param", "size=64KiB,16MiB", "--quiet", "--out", str(out))
        assert res.returncode == 0, res.stdout + res.stderr
        runs.append(store.load(out))
    cmp = compare_runs(runs[0], runs[1], 0.02)
    changes = question_changes(cmp)
    assert changes, "mremap-vs-memcpy declares questions"
    table_calls = any(verdicts.is_called(c.verdict) for c in cmp.changes)
    for qc in changes:
        assert qc.table_calls == table_calls
        assert all(qc.state(ok) != DIFFERS or table_calls for *_, ok in qc.rows)
    # One run a side and no drift measured: the table calls nothing, deterministically.
    assert not table_calls
    res = run_bakeoff("compare", str(tmp_path / "old"), str(tmp_path / "new"),
                      "--fail-on-regression", "5")
    assert res.returncode == 0, res.stdout + res.stderr
    assert _counts(res.stdout)[1:3] == (0, 0)
    assert not any(ln.rstrip().endswith(": differs") for ln in res.stdout.splitlines())
    md = run_bakeoff("compare", str(tmp_path / "old"), str(tmp_path / "new"), "--format", "md")
    assert md.returncode == 0 and "**Questions**" in md.stdout, md.stdout + md.stderr
    assert "| differs |" not in md.stdout and "| slower |" not in md.stdout
