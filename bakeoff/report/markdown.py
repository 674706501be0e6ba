"""report.md, the answer to paste into a pull request, an issue or a mailing-list thread
(findings and one compact table per benchmark), and details.md beside it (every metric's
full table, the counters, skipped cases, failed trials, host facts). GitHub-flavoured.

Text from the data is escaped so it stays text: a '|' cannot split a table cell, '<tag>'
cannot become HTML, '*' cannot start emphasis, and a newline cannot end a row.
"""

from __future__ import annotations

import re

from bakeoff.analysis.within_run import Analysis, BenchmarkAnalysis
from bakeoff.declare.model import RunRecord
from bakeoff.report.compact import GLYPHS, CompactTable, compact_table
from bakeoff.report.counted import (
    counter_words,
    counting_cost_line,
    counting_cost_table,
    per_op_tables,
)
from bakeoff.report.facts import flatten_facts, machine, run_rows
from bakeoff.report.findings import BenchmarkFindings, all_findings, tentative_count
from bakeoff.report.format import case_params_label
from bakeoff.report.precision import HEADERS, answer_rows
from bakeoff.report.tables import (
    case_columns,
    case_rows,
    counter_tables,
    failed_trials,
    failure_heading,
    failure_text,
)
from bakeoff.report.words import (
    better_phrase,
    crossover_sentence,
    fit_sentence,
    verdict_rule,
)
from bakeoff.stats.estimates import interval_note

_PUNCT = re.compile(r"([\\`*\[\]|<>~])")
# '_' emphasises only at a word edge in GFM; escaping it inside 'lookup_batch' would make
# the raw text (what a CI log shows) harder to read for nothing.
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
# Only where a list item or paragraph starts: '# x' (heading), '- x' / '+ x' (list), '1. x'.
_BLOCK_START = re.compile(r"^(\s*)(?:(#{1,6}|[+\-])|(\d{1,9})([.)]))(?=\s|$)")


def md_escape(text: str) -> str:
    """One line of inline markdown that renders as exactly `text`."""
    text = " ".join(text.splitlines())
    text = _PUNCT.sub(r"\\\1", text)
    text = _EDGE_UNDERSCORE.sub(r"\\_", text)
    text = _ENTITY.sub("&amp;", text)
    # A leading "# ", "- " or "1. " would make a list item or paragraph a heading or list.
    return _BLOCK_START.sub(_escape_block_start, text)


def _escape_block_start(m: re.Match[str]) -> str:
    if m.group(2):
        return f"{m.group(1)}\\{m.group(2)}"
    return f"{m.group(1)}{m.group(3)}\\{m.group(4)}"  # '1\. x': the dot makes the list


def _fenced(text: str) -> str:
    """A code block whose fence is longer than any backtick run inside, so text cannot end it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def md_table(headers: list[tuple[str, bool]], rows: list[list[str]]) -> list[str]:
    """headers: (text, numeric). Cells are escaped here."""
    lines = ["| " + " | ".join(md_escape(h) for h, _ in headers) + " |",
             "|" + "|".join("---:" if num else "---" for _, num in headers) + "|"]
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return lines


def _case_tables(ba: BenchmarkAnalysis) -> list[str]:
    out: list[str] = []
    for metric in ba.metrics:
        rows = case_rows(ba, metric)
        if not rows:
            continue
        cols = case_columns(ba, signed=ba.info.is_signed(metric))
        unit = str(ba.info.metric(metric)["unit"])
        better = better_phrase(ba, metric)
        body = [
            [r.cells[c.key] + (" (baseline)" if c.key == "variant" and r.is_baseline else "")
             for c in cols]
            for r in rows
        ]
        out += ["", f"### Cases: {md_escape(metric)} ({md_escape(unit)}, {md_escape(better)})", ""]
        out += md_table([(c.header, c.numeric) for c in cols], body)
    return out


def _counter_tables(ba: BenchmarkAnalysis) -> list[str]:
    tables = counter_tables(ba)
    if not tables:
        return []
    out = ["", f"### Counters ({len(tables)}): median over each case's successful trials"]
    for t in tables:
        out += ["", f"**{md_escape(t.name)}**", ""]
        out += md_table([("params", False), *((v, True) for v in t.variants)],
                      [[label, *cells] for label, cells in t.rows])
    return out


def _counted(ba: BenchmarkAnalysis, table: bool) -> list[str]:
    """What the counted samples say (report/counted.py): the cost of counting and, with
    table, every case's counters per operation. Nothing for a run without them."""
    cost = counting_cost_line(ba)
    out = ["", md_escape(cost[0].upper() + cost[1:]) + "."] if cost else []
    costs = counting_cost_table(ba) if table else None
    if costs is not None:
        out += ["", f"### Cost of counting: {md_escape(ba.info.primary_metric)} of the counted "
                "samples over the measured ones, per case", ""]
        out += md_table([(h, i >= 2) for i, h in enumerate(costs[0])], costs[1])
    tables = per_op_tables(ba) if table else []
    if tables:
        out += ["", f"### Counters per operation ({len(tables)}, from the counted samples): "
                f"median and 95% CI over trials, and the ratio to {md_escape(ba.info.baseline)} "
                "at the same params"]
        for t in tables:
            out += ["", f"#### {md_escape(counter_words(t.name))}", ""]
            out += md_table([(h, i >= 2) for i, h in enumerate(t.headers)], t.rows)
    return out


def _answers(ba: BenchmarkAnalysis) -> list[str]:
    """The precision of each figure the declared questions read (report/precision.py)."""
    rows = answer_rows(ba)
    if not rows:
        return []
    asks = [f"Q{i + 1}: {md_escape(str(q['ask']))}" for i, q in enumerate(ba.info.questions)]
    text_columns = ("question", "case", "against")
    table = md_table([(h, h not in text_columns) for h in HEADERS], rows)
    return ["", "### Answers' precision", "", "; ".join(asks), "", *table]


def _details_benchmark(run: RunRecord, ba: BenchmarkAnalysis) -> list[str]:
    info = ba.info
    metric = info.metric(info.primary_metric)
    better = better_phrase(ba, info.primary_metric)
    out = [
        "", f"## {md_escape(info.title)} ({md_escape(info.name)})", "", md_escape(info.summary), "",
        f"Baseline: **{md_escape(info.baseline)}**. "
        f"Primary metric: **{md_escape(metric['name'])}** "
        f"({md_escape(str(metric['unit']))}, {md_escape(better)}). "
        "Ratios are variant median / baseline median; CIs are 95% (trial-t: t over trials, "
        "ratios paired by round).",
        "", "### Crossovers", "",
    ]
    out += ([f"- {md_escape(crossover_sentence(ba, sc))}" for sc in ba.crossovers]
            or ["No crossover: along every swept param each variant stays on one side of the "
                "baseline."])
    if ba.fits:
        out += ["", "### Fitted lines", ""]
        out += [f"- {md_escape(fit_sentence(ba, sf))}" for sf in ba.fits]
    out += ["", md_escape(verdict_rule(ba.threshold))]
    out += _answers(ba)
    out += _case_tables(ba)
    out += _counter_tables(ba)
    out += _counted(ba, table=True)
    if ba.skips:
        out += ["", f"### Skipped cases ({len(ba.skips)})", ""]
        out += [f"- {md_escape(s.case.variant)}, {md_escape(case_params_label(info, s.case))}: "
                f"{md_escape(s.reason)}" for s in ba.skips]
    failed = failed_trials(run, ba)
    if failed:
        out += ["", f"### Failed trials ({len(failed)})"]
        for t in failed:
            out += ["", f"**{md_escape(failure_heading(ba, t))}**", "", _fenced(failure_text(t))]
    return out


def _machine_line(run: RunRecord) -> str:
    m = machine(run.host)
    return (f"Machine: **{md_escape(m.hostname)}**, Linux **{md_escape(m.kernel)}**, "
            f"CPU **{md_escape(m.cpu)}**. All figures are from this run (profile "
            f"{md_escape(run.profile)}, started {md_escape(run.started_at)}, status "
            f"{md_escape(run.status)}); they compare variants within it, not across machines.")


def _warnings(run: RunRecord, analysis: Analysis) -> list[str]:
    warnings = [*run.warnings, *analysis.warnings]
    if run.status != "complete":
        warnings.insert(0, f"this run is {run.status}: the figures cover only the trials "
                           "recorded before it stopped")
    out = ["", f"## Warnings ({len(warnings)})", ""]
    return out + ([f"- ⚠ {md_escape(w)}" for w in warnings] or ["No noise warnings for this run."])


def render_details(run: RunRecord, analysis: Analysis) -> str:
    """details.md: everything report.md leaves out."""
    out = [f"# bakeoff details: {md_escape(run.run_id)}", "",
           _machine_line(run) + " The findings and the compact tables are in report.md.",
           *_warnings(run, analysis)]
    for ba in analysis.benchmarks:
        out += _details_benchmark(run, ba)
    out += ["", "## Environment", "", "### Run", ""]
    out += md_table([("fact", False), ("value", False)], [list(r) for r in run_rows(run)])
    out += ["", "### Host facts", ""]
    out += md_table([("fact", False), ("value", False)], [list(r) for r in flatten_facts(run.host)])
    return "\n".join(out) + "\n"


# ---- report.md ---------------------------------------------------------------------------


def _top_findings(found: list[BenchmarkFindings]) -> list[str]:
    """The answers to each benchmark's declared questions (its largest contrast when it
    declares none), a line per benchmark."""
    out = ["", "## Findings", ""]
    for bf in found:
        said = " ".join(md_escape(f.headline_text) for f in bf.headline)
        out.append(f"- **{md_escape(bf.analysis.info.name)}**: {said}")
    total = sum(len(bf.every) for bf in found)
    unsure = sum(tentative_count(bf.every) for bf in found)
    settled = ("Every finding below is settled: enough trials, and no CI reaches a verdict's "
               "threshold. " if not unsure else
               f"{unsure} of the {total} findings below are tentative, each saying why; more "
               "trials (--trials 10) settle those held back by too few. ")
    out += ["", settled + "In the tables, a cell is a ratio of medians to the baseline with its "
            f"95% CI: {GLYPHS['faster']} better than the baseline beyond the verdict's threshold, "
            f"{GLYPHS['slower']} worse, {GLYPHS['equivalent']} equivalent (the whole CI within the "
            f"threshold), {GLYPHS['same']} no difference of that size shown (where the baseline "
            f"lacks the metric, a median with its CI). {interval_note()}."]
    return out


def _compact(table: CompactTable | None) -> list[str]:
    if table is None:
        return []
    headers = [(table.label_header, False), *((v, True) for v in table.variants),
               ("trials", True)]
    rows = [[r.label, *(c.text for c in r.cells), r.trials] for r in table.rows]
    return ["", *md_table(headers, rows)]


def _benchmark(bf: BenchmarkFindings) -> list[str]:
    ba = bf.analysis
    info = ba.info
    table = compact_table(ba)
    intro = md_escape(table.legend if table else f"Baseline {info.baseline}.")
    if table and table.constant:
        intro += f" Every case at {md_escape(table.constant)}."
    out = ["", f"## {md_escape(info.title)} ({md_escape(info.name)})", "", intro, ""]
    out += [f"- **{md_escape(f.question)}** {md_escape(f.text)}" for f in bf.answers]
    if bf.answers:  # the generic contrasts, under their own heading, after the answers
        out += ["", "### Other contrasts", ""]
    out += [f"- {md_escape(f.text)}" for f in bf.findings]
    return out + _compact(table) + _counted(ba, table=False)


def render_markdown(run: RunRecord, analysis: Analysis) -> str:
    """report.md: the findings first, one compact table per benchmark, then the warnings."""
    found = all_findings(analysis)
    out = [f"# bakeoff results: {md_escape(run.run_id)}", "", _machine_line(run)
           + " Every figure has its 95% CI (trial-t: t over trials) and its n; full tables, "
           "every metric and counter, skipped cases, failures and host facts are in "
           "details.md beside this file."]
    if run.status != "complete":
        out += ["", f"⚠ **This run is {md_escape(run.status)}**: the figures cover only the "
                "trials recorded before it stopped."]
    out += _top_findings(found)
    for bf in found:
        out += _benchmark(bf)
    out += _warnings(run, analysis)
    out += ["", md_escape(verdict_rule(analysis.benchmarks[0].threshold
                                       if analysis.benchmarks else 0.02))]
    return "\n".join(out) + "\n"
