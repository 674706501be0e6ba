"""The declared questions across hosts: each host's answer (report/answers/, from its own
run) side by side, figure by figure, and whether the answer holds on every host.

An answer holds across hosts when every host's CI of a figure shares a common range (for a
statement such as "not reached in the measured range", when every host says the same). Only
what two hosts or more measured is compared: a figure one host measured is "one host only",
and a figure some host could not settle ("not settled": a CI that spans the answer) neither
holds nor differs. The report across hosts opens with this section, before its findings.
"""

from __future__ import annotations

from dataclasses import dataclass

from bakeoff.analysis.across_hosts import HostsAnalysis
from bakeoff.report.answers import Answer, Figure, answers, figures_agree
from bakeoff.report.sections import Block, Paragraph, Section, strong, table

NOT_MEASURED = "not measured"
# What a figure is across hosts.
HOLDS, DIFFERS, ONE_HOST, NOT_SETTLED = "holds", "differs", "one host only", "not settled"


@dataclass(frozen=True)
class QuestionAcross:
    benchmark: str
    ask: str
    # Per figure: what it is, each host's figure (None: not measured there), and what it is
    # across hosts: HOLDS or DIFFERS (two hosts or more settled it), ONE_HOST, NOT_SETTLED.
    rows: list[tuple[str, dict[str, Figure | None], str]]

    @property
    def holds(self) -> bool:
        return bool(self.rows) and all(state == HOLDS for _, _, state in self.rows)


def _unsettled(f: Figure) -> bool:
    return "not settled" in f.shown


def across(measured: list[Figure]) -> str:
    """One figure across the hosts that measured it."""
    if len(measured) < 2:
        return ONE_HOST
    if any(_unsettled(f) for f in measured):
        return NOT_SETTLED
    return HOLDS if figures_agree(measured) else DIFFERS


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
                rows.append((label, figs, across(measured)))
            out.append(QuestionAcross(bench, ask, rows))
    return out


def _figures(ans: Answer | None) -> tuple[Figure, ...]:
    return ans.figures if ans is not None else ()


def _verdict(q: QuestionAcross, hosts: int) -> str:
    if not q.rows:
        return "not answered on any host"
    if hosts < 2:
        return "not compared: only one host measured it"
    count = {state: sum(1 for _, _, s in q.rows if s == state)
             for state in (HOLDS, DIFFERS, ONE_HOST, NOT_SETTLED)}
    if count[HOLDS] == len(q.rows):
        return "holds on every host: each figure's CIs share a range"
    said = []
    if count[DIFFERS]:
        said.append(f"differs between hosts in {count[DIFFERS]} of {len(q.rows)} figures")
    if count[HOLDS]:
        said.append(f"holds in {count[HOLDS]}")
    if count[NOT_SETTLED]:
        said.append(f"{count[NOT_SETTLED]} not settled on some host (neither holds nor "
                    "differs)")
    if count[ONE_HOST]:
        said.append(f"{count[ONE_HOST]} measured on one host only (not compared)")
    return "; ".join(said)


def questions_section(a: HostsAnalysis) -> list[Block]:
    """'Questions, per host': per question, a table of its figures by host; nothing when no
    benchmark declares one. With one host, nothing is compared, and the section says so."""
    found = questions_across(a)
    if not found:
        return []
    blocks: list[Block] = []
    for q in found:
        blocks.append(Paragraph((strong(q.benchmark), f": {q.ask} {_verdict(q, len(a.hosts))}.")))
        if q.rows:
            blocks.append(table(["figure", *a.labels, "across hosts"], [
                [label, *(f.shown if f else NOT_MEASURED for f in figs.values()), state]
                for label, figs, state in q.rows]))
    title = "Questions, per host" if len(a.hosts) >= 2 else \
        "Questions, on one host (nothing compared across hosts)"
    return [Section(title, tuple(blocks), anchor="questions")]
