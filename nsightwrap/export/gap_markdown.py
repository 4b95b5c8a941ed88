"""The gap decomposition in the Markdown report: one folded table per benchmark."""

from __future__ import annotations

from nsightwrap.analysis.model import BenchmarkResult, RunResult
from nsightwrap.export import gap_text as g
from nsightwrap.export import reportfmt as f
from nsightwrap.export.escape import html, md_cell


def _table(b: BenchmarkResult) -> list[str]:
    gap = b.gap
    assert gap is not None
    rows = [
        "| part | time | of the timing | measured from | fix |",
        "| --- | ---: | ---: | --- | --- |",
    ]
    for p in gap.parts:
        ev = ", ".join(md_cell(e) for e in g.evidence_items(p.evidence))
        what = md_cell(p.message) + (f" ({ev})" if ev else "")
        name = f"**{md_cell(g.label(p))}**" if p.actionable else md_cell(g.label(p))
        rows.append(f"| {name} | {g.signed_us(p.ns)} | {g.share(p.ns, gap)} | {what} | {md_cell(p.fix)} |")
    rows.append(
        f"| residual | {g.signed_us(gap.residual_ns)} | {g.share(gap.residual_ns, gap)} | no measurement | |"
    )
    rows.append(
        f"| **total** | **{g.signed_us(gap.total_ns)}** | {g.share(gap.total_ns, gap)} | {md_cell(g.headline(gap))} | |"
    )
    state = f.verdict_text(b.verdict)
    return [
        f"<details><summary>{html(f.label(b))} ({state}): {html(g.compact(gap))}</summary>",
        "",
        *rows,
        "",
        "Parts in bold are ones the timing method can change; the verdict weighs them and the residual.",
        "",
        "</details>",
        "",
    ]


def gap_markdown(result: RunResult) -> list[str]:
    """``## Where the gap comes from``: a folded table per benchmark with a decomposition."""
    with_gap = [b for b in result.benchmarks if b.gap is not None]
    if not with_gap:
        return []
    ordered = f.by_verdict(with_gap)  # worst verdict first
    out = [
        "## Where the gap comes from",
        "",
        "timer - ncu (ncu at its own clocks), split into parts measured in this run; they add up, residual included.",
        "",
    ]
    for b in ordered:
        out += _table(b)
    return out
