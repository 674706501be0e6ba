"""The run report's content, built once as sections: report.html, report.md and details.md
(report/html.py, report/markdown.py) are put together from these parts and rendered by the
exporters (report/exporters.py).

Per benchmark there are two parts: its lead (the answers, the findings, the compact table,
what counting cost), which report.md holds and report.html shows open, and its details
(every metric's table, counters, crossovers, skips, failures), which details.md holds and
report.html folds under the lead. Where the two formats say a thing differently (the top
findings: a brief line beside a chart in HTML, the whole sentence in report.md), both are
built here, side by side.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bakeoff.analysis.within_run import Analysis, BenchmarkAnalysis
from bakeoff.declare.model import Case, RunRecord
from bakeoff.machine.fact_rows import flatten_facts, machine
from bakeoff.report import contention
from bakeoff.report.charts import benchmark_charts
from bakeoff.report.colors import variant_colors
from bakeoff.report.compact import GLYPHS, CompactTable, compact_table
from bakeoff.report.counted import (
    counter_words,
    counting_cost_line,
    counting_cost_table,
    per_op_tables,
)
from bakeoff.report.facts import run_rows
from bakeoff.report.findings import (
    BenchmarkFindings,
    Finding,
    all_findings,
    more_trials_hint,
    tentative_count,
)
from bakeoff.report.findings_chart import findings_chart
from bakeoff.report.format import case_params_label
from bakeoff.report.precision import HEADERS, answer_rows
from bakeoff.report.sections import (
    Block,
    Cell,
    Column,
    Columns,
    Details,
    Figure,
    Item,
    Items,
    Only,
    Paragraph,
    Preformatted,
    Section,
    Span,
    Table,
    Text,
    code,
    strong,
)
from bakeoff.report.tables import (
    case_columns,
    case_rows,
    counter_tables,
    failed_trials,
    failure_heading,
    failure_text,
)
from bakeoff.report.words import better_phrase, crossover_sentence, fit_sentence, verdict_rule
from bakeoff.stats.estimates import interval_note

# A verdict's HTML class (colour) in a table cell.
VERDICT_CLASS = {"faster": "faster", "slower": "slower", "equivalent": "same",
                 "inconclusive": "inconclusive",
                 "—": "", "n/a": "na"}
_WHY = re.compile(r" (\[tentative: [^\]]*\])")
NO_CROSSOVER = ("No crossover: along every swept param each variant stays on one side of the "
                "baseline.")


def bench_anchor(index: int) -> str:
    return f"bench-{index}"


def finding_text(text: str) -> Text:
    """The sentence, its '[tentative: …]' set apart (quieter in HTML) so the figures stand out."""
    parts: list[str | Span] = []
    for i, piece in enumerate(_WHY.split(text)):
        if i % 2:
            parts += [" ", Span(piece, "why")]
        elif piece:
            parts.append(piece)
    return tuple(parts)


def _finding_item(f: Finding, contended: frozenset[Case] = frozenset()) -> Item:
    asked: Text = (strong(f.question), " ") if f.question else ()
    said = (*asked, *finding_text(f.text), *_contended_note(f, contended))
    return Item(said, style="tentative" if f.tentative else "")


def _contended_note(f: Finding, contended: frozenset[Case]) -> Text:
    """Where a finding's figures stand on contended trials, it says so in its own line: a
    reader who quotes the line quotes that too (report/contention.py)."""
    names = list(dict.fromkeys(r.case.variant for r in f.results if r.case in contended))
    if not names:
        return ()
    return (f" {contention.CONTENDED_MARK} Contended: the trials of {', '.join(names)} waited "
            f"for a CPU for at least {contention.CONTENDED_SHARE:.0%} of their wall time; "
            "the figure is partly other work's.",)


def findings_blocks(bf: BenchmarkFindings,
                    contended: frozenset[Case] = frozenset()) -> list[Block]:
    """The answers to the benchmark's questions, then the generic contrasts under their own
    heading (only the latter, unheaded, for a benchmark that declares no question); a
    finding that reads contended cases says so."""
    others = Items(tuple(_finding_item(f, contended) for f in bf.findings))
    if not bf.answers:
        return [others]
    out: list[Block] = [Items(tuple(_finding_item(f, contended) for f in bf.answers),
                              style="answers")]
    if bf.findings:
        out.append(Section("Other contrasts", (others,), level=3))
    return out


def compact_block(table: CompactTable | None, colors: dict[str, str]) -> list[Block]:
    """The compact table: each variant's column headed by its colour, as in the charts."""
    if table is None:
        return []
    columns = (Column(table.label_header),
               *(Column(v, True, swatch=colors.get(v, "#000")) for v in table.variants),
               Column("trials", True))
    rows = tuple((Cell(r.label), *(Cell(c.text, VERDICT_CLASS.get(c.verdict or "", ""))
                                   for c in r.cells), Cell(r.trials)) for r in table.rows)
    return [Table(columns, rows, style="compact")]


def _numeric_from(headers: Sequence[str], rows: Sequence[Sequence[str]], first: int) -> Table:
    """A table whose columns from `first` on are figures."""
    return Table(tuple(Column(h, i >= first) for i, h in enumerate(headers)),
                 tuple(tuple(Cell(c) for c in row) for row in rows))


def _cost_table(ba: BenchmarkAnalysis) -> Table | None:
    costs = counting_cost_table(ba)
    return _numeric_from(costs[0], costs[1], 2) if costs is not None else None


def _per_op_sections(ba: BenchmarkAnalysis) -> list[Block]:
    return [Section(counter_words(t.name), (_numeric_from(t.headers, t.rows, 2),), level=4)
            for t in per_op_tables(ba)]


def _per_op_title(ba: BenchmarkAnalysis, n: int) -> str:
    return (f"Counters per operation ({n}, from the counted samples): median and 95% CI over "
            f"trials, and the ratio to {ba.info.baseline} at the same params")


def _cost_title(ba: BenchmarkAnalysis, html: bool) -> str:
    per_case = ("Cost of counting per case: {} of the counted samples over the measured ones"
                if html else "Cost of counting: {} of the counted samples over the measured "
                "ones, per case")
    return per_case.format(ba.info.primary_metric)


def counted_lead(ba: BenchmarkAnalysis) -> list[Block]:
    """What the counted samples say (report/counted.py), in the lead: the cost of counting;
    report.html also the cost per case and the counters per operation, folded (details.md
    holds them in the open). Nothing for a run without them."""
    cost = counting_cost_line(ba)
    out: list[Block] = [Paragraph((cost[0].upper() + cost[1:] + ".",), "note")] if cost else []
    table = _cost_table(ba)
    folded: list[Block] = []
    if table is not None:
        folded.append(Details(_cost_title(ba, html=True), (table,)))
    per_op = _per_op_sections(ba)
    if per_op:
        folded.append(Details(_per_op_title(ba, len(per_op)), tuple(per_op)))
    return out + ([Only("html", tuple(folded))] if folded else [])


def _counted_details(ba: BenchmarkAnalysis) -> list[Block]:
    cost = counting_cost_line(ba)
    out: list[Block] = [Paragraph((cost[0].upper() + cost[1:] + ".",))] if cost else []
    table = _cost_table(ba)
    if table is not None:
        out.append(Section(_cost_title(ba, html=False), (table,), level=3))
    per_op = _per_op_sections(ba)
    if per_op:
        out.append(Section(_per_op_title(ba, len(per_op)), tuple(per_op), level=3))
    return out


def case_tables(ba: BenchmarkAnalysis, colors: dict[str, str]) -> list[Block]:
    out: list[Block] = []
    for metric in ba.metrics:
        rows = case_rows(ba, metric)
        if not rows:
            continue
        cols = case_columns(ba, signed=ba.info.is_signed(metric))
        unit = str(ba.info.metric(metric)["unit"])
        body = []
        for r in rows:
            cells = []
            for c in cols:
                if c.key == "variant":
                    cells.append(Cell(r.cells["variant"],
                                      swatch=colors.get(r.result.case.variant, "#000"),
                                      tag="baseline" if r.is_baseline else ""))
                elif c.key == "verdict":
                    cells.append(Cell(r.cells["verdict"], VERDICT_CLASS[r.verdict]))
                else:
                    cells.append(Cell(r.cells[c.key]))
            body.append(tuple(cells))
        table = Table(tuple(Column(c.header, c.numeric) for c in cols), tuple(body))
        title = f"Cases: {metric} ({unit}, {better_phrase(ba, metric)})"
        out.append(Section(title, (table,), level=3))
    return out


def _counter_tables(ba: BenchmarkAnalysis) -> list[Block]:
    tables = counter_tables(ba)
    if not tables:
        return []
    inner = tuple(
        Section(t.name, (Table((Column("params"), *(Column(v, True) for v in t.variants)),
                               tuple((Cell(label), *(Cell(c) for c in cells))
                                     for label, cells in t.rows)),), level=4)
        for t in tables)
    return [Section(f"Counters ({len(tables)}): median over each case's successful trials",
                    inner, level=3)]


def _answers_precision(ba: BenchmarkAnalysis) -> list[Block]:
    """The precision of each figure the declared questions read (report/precision.py)."""
    rows = answer_rows(ba)
    if not rows:
        return []
    asks = "; ".join(f"Q{i + 1}: {q['ask']}" for i, q in enumerate(ba.info.questions))
    text_columns = ("question", "case", "against")
    table = Table(tuple(Column(h, h not in text_columns) for h in HEADERS),
                  tuple(tuple(Cell(c) for c in row) for row in rows))
    return [Section("Answers' precision", (Paragraph((asks,)), table), level=3)]


def _skips_and_failures(run: RunRecord, ba: BenchmarkAnalysis) -> list[Block]:
    out: list[Block] = []
    if ba.skips:
        items = tuple(Item((strong(s.case.variant), f", {case_params_label(ba.info, s.case)}: "
                            f"{s.reason}")) for s in ba.skips)
        out.append(Section(f"Skipped cases ({len(ba.skips)})", (Items(items),), level=3))
    failed = failed_trials(run, ba)
    if failed:
        out.append(Section(f"Failed trials ({len(failed)})", tuple(
            Details(failure_heading(ba, t), (Preformatted(failure_text(t)),), style="", open=True)
            for t in failed), level=3))
    return out


def details_blocks(run: RunRecord, ba: BenchmarkAnalysis, colors: dict[str, str]) -> list[Block]:
    """Everything the lead leaves out: details.md's section, report.html's folded part."""
    info = ba.info
    metric = info.metric(info.primary_metric)
    described = f" — {metric['description']}" if metric.get("description") else ""
    variants = tuple(Item((name, *((" ", Span("(baseline)", "baseline-tag"))
                                   if name == info.baseline else ()),
                           f": {v.get('description', '')}"), swatch=colors.get(name, "#000"))
                     for v in info.variants for name in [str(v["name"])])
    crossovers: Block = (Items(tuple(Item((crossover_sentence(ba, sc),)) for sc in ba.crossovers))
                         if ba.crossovers else Paragraph((NO_CROSSOVER,), "muted"))
    out: list[Block] = [
        Paragraph((info.summary,)),
        Paragraph(("Baseline: ", strong(info.baseline), ". Primary metric: ",
                   strong(metric["name"]), f" ({metric['unit']}, "
                   f"{better_phrase(ba, info.primary_metric)}){described}. Ratios are variant "
                   "median / baseline median; CIs are 95% (trial-t: t over trials, ratios "
                   "paired by round).")),
        Items(variants),
        Paragraph((verdict_rule(ba.threshold),), "note"),
        Section("Crossovers", (crossovers,), level=3),
    ]
    if ba.fits:
        out.append(Section("Fitted lines", (Items(tuple(Item((fit_sentence(ba, sf),))
                                                        for sf in ba.fits)),), level=3))
    out += _answers_precision(ba)
    out += [Figure(c, info.name) for c in benchmark_charts(run, ba, colors)]
    out += case_tables(ba, colors)
    out += _counter_tables(ba)
    out.append(Only("md", tuple(_counted_details(ba))))
    out += _skips_and_failures(run, ba)
    return out


@dataclass(frozen=True)
class BenchmarkContent:
    info_name: str
    title: str
    anchor: str
    lead: tuple[Block, ...]
    details: tuple[Block, ...]

    def report_section(self) -> Section:
        """report.md's section of the benchmark, and report.html's with the details folded."""
        folded = Details(f"Details of {self.info_name}: every metric, its charts and full "
                         "tables, counters, skipped cases, failed trials", self.details)
        return Section(self.title, (*self.lead, Only("html", (folded,))), anchor=self.anchor,
                       aside=self.info_name)

    def details_section(self) -> Section:
        return Section(self.title, self.details, aside=self.info_name)


def benchmark_content(run: RunRecord, bf: BenchmarkFindings, index: int) -> BenchmarkContent:
    ba = bf.analysis
    info = ba.info
    colors = variant_colors(info)
    contended = contention.contended_cases(run, info.name)
    table = compact_table(ba, contended)
    intro = table.legend if table else f"Baseline {info.baseline}."
    if table and table.constant:
        intro += f" Every case at {table.constant}."
    headline = findings_chart(ba, colors)
    lead: list[Block] = [
        Columns(((Paragraph((intro,), "note"), *findings_blocks(bf, contended)),
                 (Figure(headline, info.name, heading=False),) if headline else ())),
        *compact_block(table, colors),
        *counted_lead(ba),
    ]
    return BenchmarkContent(info.name, info.title, bench_anchor(index), tuple(lead),
                            tuple(details_blocks(run, ba, colors)))


def _headline_text(bf: BenchmarkFindings) -> Text:
    parts: list[str | Span] = []
    for i, f in enumerate(bf.headline):
        parts += [" "] if i else []
        parts += finding_text(f.brief or f.headline_text)
    return tuple(parts)


def top_findings_html(found: list[BenchmarkFindings]) -> Section:
    """The brief answer of each benchmark, linked to its section (the why is there, beside
    its chart)."""
    items = tuple(Item((strong(bf.analysis.info.name), ": ", *_headline_text(bf)),
                       link=bench_anchor(i)) for i, bf in enumerate(found))
    total = sum(len(bf.every) for bf in found)
    unsure = sum(tentative_count(bf.every) for bf in found)
    note = (f"{unsure} of the {total} findings are tentative, each saying why in grey brackets"
            f"{more_trials_hint(found)}."
            if unsure else "Every finding is settled: enough trials, and no CI reaches a "
            "verdict's threshold.")
    return Section("Findings", (Items(items), Paragraph((
        f"{note} Every figure is a ratio to the baseline (of trial medians, paired by round) or "
        "a median, with its "
        "95% CI and its trials.",), "note")), anchor="findings")


def _headline_md(bf: BenchmarkFindings) -> str:
    return " ".join(f.headline_text for f in bf.headline)


def top_findings_md(found: list[BenchmarkFindings]) -> Section:
    """The whole answer of each benchmark, a line each, and how to read the tables."""
    items = tuple(Item((strong(bf.analysis.info.name), ": ", _headline_md(bf))) for bf in found)
    total = sum(len(bf.every) for bf in found)
    unsure = sum(tentative_count(bf.every) for bf in found)
    settled = ("Every finding below is settled: enough trials, and no CI reaches a verdict's "
               "threshold. " if not unsure else
               f"{unsure} of the {total} findings below are tentative, each saying why"
               f"{more_trials_hint(found)}. ")
    legend = (settled + "In the tables, a cell is a ratio to the baseline (of trial medians, "
              "paired by round) with its "
              f"95% CI: {GLYPHS['faster']} better than the baseline beyond the verdict's "
              f"threshold, {GLYPHS['slower']} worse, {GLYPHS['equivalent']} equivalent (the "
              f"whole CI within the threshold), {GLYPHS['inconclusive']} inconclusive: "
              "neither a difference of that size nor its absence shown (where the baseline "
              "lacks the metric, a median with its CI). "
              f"{interval_note()}.")
    return Section("Findings", (Items(items), Paragraph((legend,))))


def warnings_list(run: RunRecord, analysis: Analysis) -> list[str]:
    """The run's warnings, then the analysis's; one warning that several benchmarks gave
    alike ("heap-sampling: some cases have fewer than 5 trials …") is said once, naming them
    all, where the first of them stood: on a busy machine each room gives the same few, and
    five copies of each pushed the findings off report.md's page."""
    by_text: dict[str, list[str]] = {}
    order: list[str | tuple[str]] = []
    for w in [*run.warnings, *analysis.warnings]:
        name, sep, text = w.partition(": ")
        if not sep or name not in run.benchmarks:
            order.append(w)
            continue
        if text not in by_text:
            by_text[text] = []
            order.append((text,))
        if name not in by_text[text]:
            by_text[text].append(name)
    return [w if isinstance(w, str) else f"{_names(by_text[w[0]])}: {w[0]}" for w in order]


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def machine_text(run: RunRecord) -> Text:
    m = machine(run.host)
    return ("Machine: ", strong(m.hostname), ", Linux ", strong(m.kernel), ", CPU ",
            strong(m.cpu), f". All figures are from this run (profile {run.profile}, started "
            f"{run.started_at}, status {run.status}); they compare variants within it, not "
            "across machines.")


def contention_paragraph(run: RunRecord) -> list[Paragraph]:
    """The run's contention in one line (report/contention.py); none for an older record."""
    rc = contention.of_run(run)
    if rc is None:
        return []
    return [Paragraph((strong(contention.sentence(rc)),) if rc.contended
                      else (contention.sentence(rc),), "warnings" if rc.contended else "muted")]


def run_header_html(run: RunRecord) -> Paragraph:
    return Paragraph(("Run ", code(run.run_id), " on ", strong(machine(run.host).sentence()),
                      f"; profile {run.profile}, started {run.started_at}. Every figure below "
                      "is from this run."), "muted")


def environment(run: RunRecord) -> tuple[Block, ...]:
    def facts(rows: list[tuple[str, str]]) -> Table:
        return Table((Column("fact"), Column("value")),
                     tuple((Cell(k), Cell(v, "fact")) for k, v in rows))

    return (Section("Run", (facts(run_rows(run)),), level=3),
            Section("Host facts", (facts(flatten_facts(run.host)),), level=3))


@dataclass(frozen=True)
class RunContent:
    """A run report's content, built once for report.html, report.md and details.md."""

    run: RunRecord
    analysis: Analysis
    found: list[BenchmarkFindings]
    benchmarks: list[BenchmarkContent]


def run_content(run: RunRecord, analysis: Analysis) -> RunContent:
    found = all_findings(analysis)
    return RunContent(run, analysis, found,
                      [benchmark_content(run, bf, i) for i, bf in enumerate(found)])
