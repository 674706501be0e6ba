"""Every measured figure in a METHOD.md or the README comes from a run you can open.

The convention (docs/runs/README.md):
- a committed run is docs/runs/<room>-<YYYYMMDD>-<cpu>.md, the report.md bakeoff wrote for it;
- measured figures appear only in sections whose heading starts with "Measured", and the first
  non-empty line of such a section is "Source: [<file name>](<relative link to the run>)";
- every number in such a section (the Source line aside) appears verbatim in the run it cites,
  thousands separators removed: figures are copied as bakeoff printed them, never derived;
- outside those sections no measured figure appears: no time, rate, ratio ("3.2x") or
  percentage, nor a size with decimals ("165.1 MiB"). A configuration value written as code
  (`--threshold 2`, `timeout_s=60`) is not a figure, nor is a confidence level ("95% CI").

The checker is run over the real documents and over temporary ones that break each rule, so
it is shown able to fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "docs" / "runs"

RUN_FILE_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*-\d{8}-[a-z0-9]+\.md$")
RUN_FILE_FIRST_LINE = "# bakeoff results: "
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```+|~~~+)")
SOURCE = re.compile(r"^Source: \[([^\]]+)\]\(([^)\s]+)\)\s*$")
LINK_TARGET = re.compile(r"\]\([^)]*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# A number as written: digits (maybe grouped by thousands) and a decimal part. Not digits
# glued to a word ("p95", "x86", "tp_2"), nor the tail of a version ("6.18.44" gives 6.18).
NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d)")
# What a measurement looks like when it is quoted: a time, a rate, a tick count, a ratio, a
# percentage, a size with decimals.
FIGURE = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?"
    r"(?:\s?(?:ns|µs|μs|us|ms|s|sec|ticks|cycles|[KMG]i?B/s|%)(?![\w/])"
    r"|(?:x|×)(?!\w)"
    r"|\.\d+\s?(?:KiB|MiB|GiB|kB|MB|GB)(?!\w))"
)
CONFIDENCE_LEVEL = re.compile(r"\b9[059] ?% (?:CI|confidence)")


@dataclass(frozen=True)
class Section:
    heading: str  # "" before the first heading
    lines: list[tuple[int, str]]  # (line number, text), code blocks left out


def sections(text: str) -> list[Section]:
    """The document split at its headings; fenced code blocks are dropped (commands, not
    quotes of a run), headings inside them are not headings."""
    out = [Section("", [])]
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        h = HEADING.match(line)
        if h:
            out.append(Section(h.group(2), [(number, h.group(2))]))
        else:
            out[-1].lines.append((number, line))
    return out


def is_measured(section: Section) -> bool:
    return section.heading.startswith("Measured")


def numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in NUMBER.findall(text)}


def _prose(line: str) -> str:
    """What a line says in words: link targets and code spans removed."""
    return CODE_SPAN.sub(" ", LINK_TARGET.sub("]", line))


def check_document(doc: Path, repo: Path = REPO) -> list[str]:
    """Every breach of the convention in one document, as 'file:line: what'."""
    problems: list[str] = []
    name = doc.relative_to(repo) if doc.is_relative_to(repo) else doc
    runs_dir = (repo / "docs" / "runs").resolve()
    for section in sections(doc.read_text()):
        if not is_measured(section):
            for number, line in section.lines:
                prose = CONFIDENCE_LEVEL.sub(" ", _prose(line))
                for fig in FIGURE.finditer(prose):
                    problems.append(f"{name}:{number}: measured figure {fig.group(0)!r} outside "
                                    "a 'Measured' section")
            continue
        heading_line, heading = section.lines[0]
        body = [(n, line) for n, line in section.lines[1:] if line.strip()]
        source = SOURCE.match(body[0][1]) if body else None
        if source is None:
            problems.append(f"{name}:{heading_line}: section {heading!r} does not start with "
                            "'Source: [<run file>](<link to docs/runs/...md>)'")
            continue
        label, link = source.groups()
        run = (doc.parent / link).resolve()
        if run.parent != runs_dir or not RUN_FILE_NAME.match(run.name):
            problems.append(f"{name}:{body[0][0]}: source {link!r} is not "
                            "docs/runs/<room>-<YYYYMMDD>-<cpu>.md")
            continue
        if label != run.name:
            problems.append(f"{name}:{body[0][0]}: source label {label!r} is not the file "
                            f"name {run.name!r}")
        if not run.is_file():
            problems.append(f"{name}:{body[0][0]}: source {link!r} does not exist")
            continue
        run_text = run.read_text()
        if not run_text.startswith(RUN_FILE_FIRST_LINE):
            problems.append(f"{name}:{body[0][0]}: {run.name} is not a bakeoff report "
                            f"(first line must start with {RUN_FILE_FIRST_LINE!r})")
            continue
        known = numbers(run_text)
        for number, line in [section.lines[0], *body[1:]]:
            for n in sorted(numbers(LINK_TARGET.sub("]", line)) - known):
                problems.append(f"{name}:{number}: {n} is not in {run.name}")
    return problems


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted(REPO.glob("benchmarks/*/METHOD.md"))]


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_document_quotes_only_figures_of_committed_runs(doc: Path) -> None:
    assert check_document(doc) == []


def test_every_committed_run_is_a_bakeoff_report_named_by_convention() -> None:
    runs = sorted(p for p in RUNS.glob("*.md") if p.name != "README.md")
    assert runs, "docs/runs holds no run"
    for run in runs:
        assert RUN_FILE_NAME.match(run.name), run.name
        text = run.read_text()
        assert text.startswith(RUN_FILE_FIRST_LINE), run.name
        # The machine it ran on: the host facts (a report before they moved to details.md),
        # or the machine line every report.md opens with.
        assert ("## Host facts" in text or "\nMachine: **" in text) and "CPU **" in text, run.name
    cited = {
        (doc.parent / m.group(2)).resolve()
        for doc in documents()
        for line in doc.read_text().splitlines()
        if (m := SOURCE.match(line))
    }
    # A run nobody cites is clutter; a cited run that is not here fails above.
    assert {r.resolve() for r in runs} <= cited, sorted(
        r.name for r in runs if r.resolve() not in cited)


# ---- the checker can fail ------------------------------------------------------------------

RUN = """# bakeoff results: 20261123-222719-demo

Machine: **vm**, Linux **6.18.44**, CPU **AMD EPYC 7B13**. All figures are from this run
(profile default, started 2026-11-23T22:27:19Z, status complete).

| variant | params | median |
|---|---:|---:|
| mremap | 16 MiB | 7.34 µs |
| memcpy | 16 MiB | 1,160 µs |

### Host facts
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "docs" / "runs").mkdir(parents=True)
    (tmp_path / "docs" / "runs" / "demo-20261123-epyc.md").write_text(RUN)
    (tmp_path / "benchmarks" / "demo").mkdir(parents=True)
    return tmp_path


def _doc(repo: Path, text: str) -> Path:
    doc = repo / "benchmarks" / "demo" / "METHOD.md"
    doc.write_text(text)
    return doc


GOOD = """# demo: method

The move is timed alone; `--threshold 2` is configuration, and so is a 95% CI.

```sh
bakeoff run demo   # 12.5 ms in a code block is a command's comment, not a quote
```

## Measured on AMD EPYC 7B13, 2026-11-23

Source: [demo-20261123-epyc.md](../../docs/runs/demo-20261123-epyc.md)

At 16 MiB: mremap 7.34 µs, memcpy 1,160 µs.
"""


def test_checker_accepts_a_document_that_keeps_the_convention(repo: Path) -> None:
    assert check_document(_doc(repo, GOOD), repo) == []


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        (GOOD + "\n## Why\n\nThe move is 160x faster.\n", "'160x' outside"),
        (GOOD.replace("The move is timed alone", "The move takes 2.5 µs"), "'2.5 µs' outside"),
        (GOOD + "\n## Notes\n\nA run peaks at 165.1 MiB.\n", "'165.1 MiB' outside"),
        (GOOD + "\n## Notes\n\nbatch sizes agree within 2%.\n", "'2%' outside"),
        (GOOD.replace("7.34 µs", "7.3 µs"), "7.3 is not in demo-20261123-epyc.md"),
        (GOOD.replace("memcpy 1,160 µs.", "so 158x."), "158 is not in"),
        (GOOD.replace("Source: [demo", "From: [demo"), "does not start with 'Source:"),
        (GOOD.replace("demo-20261123-epyc.md)", "demo-20261124-epyc.md)"), "does not exist"),
        (GOOD.replace("../../docs/runs/demo-20261123-epyc.md", "../../results/report.md"),
         "is not docs/runs/"),
        (GOOD.replace("[demo-20261123-epyc.md]", "[other.md]"), "source label 'other.md'"),
    ],
)
def test_checker_rejects_each_breach(repo: Path, text: str, complaint: str) -> None:
    problems = check_document(_doc(repo, text), repo)
    assert any(complaint in p for p in problems), problems


def test_checker_rejects_a_source_that_is_not_a_bakeoff_report(repo: Path) -> None:
    (repo / "docs" / "runs" / "demo-20261123-epyc.md").write_text("figures: 7.34 1160\n")
    problems = check_document(_doc(repo, GOOD), repo)
    assert any("is not a bakeoff report" in p for p in problems), problems
