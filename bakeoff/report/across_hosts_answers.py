"""The declared questions across hosts: each host's answer (report/answers/, from its own
run) side by side, figure by figure, and whether the answer holds on every host.

An answer holds across hosts when every host's CI of a figure shares a common range (for a
statement such as "not reached in the measured range", when every host says the same). The
report across hosts opens with this section, before its findings.
"""

from __future__ import annotations

from dataclasses import dataclass

from bakeoff.analysis.across_hosts import HostsAnalysis
from bakeoff.report.answers import Answer, Figure, answers, figures_agree
from bakeoff.report.sections import Block, Paragraph, Section, strong, table

NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class QuestionAcross:
    benchmark: str
    ask: str
    # Per figure: what it is, each host's figure (None: not measured there), and whether it
    # holds on every host that measured it (two hosts at least).
    rows: list[tuple[str, dict[str, Figure | None], bool]]

    @property
    def holds(self) -> bool:
        return bool(self.rows) and all(ok for _, _, ok in self.rows)


def questions_across(a: HostsAnalysis) -> list[QuestionAcross]:
    """Every question the hosts' benchmarks declare (the first host that runs a benchmark
    names its questions), answered on each host."""
    per_host: dict[str, dict[str, dict[str, Answer | None]]] = {}
    order: dict[str, list[str]] = {}
    for h in a.hosts:
        for ba in h.analysis.benchmarks:
            for q, ans in answers(ba):
                per_host.setdefault(ba.info.name, {}).setdefault(h.label, {})[str(q["ask"])] = ans
                asks = order.setdefault(ba.info.name, [])
                if str(q["ask"]) not in asks:
                    asks.append(str(q["ask"]))
    out = []
    for bench, asks in order.items():
        for ask in asks:
            by_host = {host: ans.get(ask) for host, ans in per_host[bench].items()}
            labels: list[str] = []
            for ans in by_host.values():
                labels += [f.label for f in _figures(ans) if f.label not in labels]
            rows = []
            for label in labels:
                figs = {host: next((f for f in _figures(by_host.get(host))
                                    if f.label == label), None) for host in a.labels}
                measured = [f for f in figs.values() if f is not None]
                rows.append((label, figs, len(measured) >= 2 and figures_agree(measured)))
            out.append(QuestionAcross(bench, ask, rows))
    return out


def _figures(ans: Answer | None) -> tuple[Figure, ...]:
    return ans.figures if ans is not None else ()


def _verdict(q: QuestionAcross) -> str:
    if not q.rows:
        return "not answered on any host"
    differ = [label for label, _, ok in q.rows if not ok]
    if not differ:
        return "holds on every host: each figure's CIs share a range"
    return f"differs between hosts in {len(differ)} of {len(q.rows)} figures"


def questions_section(a: HostsAnalysis) -> list[Block]:
    """'Questions, per host': per question, a table of its figures by host; nothing when no
    benchmark declares one."""
    found = questions_across(a)
    if not found:
        return []
    blocks: list[Block] = []
    for q in found:
        blocks.append(Paragraph((strong(q.benchmark), f": {q.ask} {_verdict(q)}.")))
        if q.rows:
            blocks.append(table(["figure", *a.labels, "across hosts"], [
                [label, *(f.shown if f else NOT_MEASURED for f in figs.values()),
                 "holds" if ok else "differs"] for label, figs, ok in q.rows]))
    return [Section("Questions, per host", tuple(blocks), anchor="questions")]
