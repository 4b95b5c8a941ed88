"""``nsightwrap compare --format md``: Markdown for a pull-request comment."""

from __future__ import annotations

from nsightwrap.compare.verdicts import Comparison, Verdict
from nsightwrap.export.compare_energy import energy_markdown
from nsightwrap.export.compare_text import fmt_change, fmt_geomean, fmt_spread, settings_line, summary
from nsightwrap.export.escape import md_cell

_ICON = {
    Verdict.SAME: "SAME",
    Verdict.FASTER: "FASTER",
    Verdict.SLOWER: "**SLOWER**",
    Verdict.AMBIGUOUS: "_AMBIGUOUS_",
}


def to_markdown(c: Comparison) -> str:
    """The comparison as a Markdown document (a summary, a table, added and removed lists)."""
    slower = c.slower
    head = "regression" if len(slower) == 1 else "regressions"
    title = f"{len(slower)} {head}" if slower else "no regression"
    out = [
        f"### nsightwrap compare: {title}",
        "",
        f"Baseline {md_cell(c.baseline)} ({md_cell(c.baseline_gpu or 'GPU unknown')}), "
        f"current {md_cell(c.current)} ({md_cell(c.current_gpu or 'GPU unknown')}).",
        "",
        md_cell(summary(c)),
        "",
        "| benchmark | verdict | baseline median [min, Q3] | current median [min, Q3] | change [CI] | cycles [CI] | reason |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for v in c.verdicts:
        cells = [
            md_cell(v.key),
            _ICON[v.verdict],
            md_cell(fmt_spread(v, "baseline")),
            md_cell(fmt_spread(v, "current")),
            md_cell(fmt_change(v.ratio)),
            md_cell(fmt_change(v.cycles_ratio)),
            f"`{v.reason.value}` {md_cell(v.message)}",
        ]
        out.append("| " + " | ".join(cells) + " |")
    if c.added:
        out += ["", "Added (only in current): " + ", ".join(md_cell(k) for k in c.added)]
    if c.removed:
        out += ["", "Removed (only in baseline): " + ", ".join(md_cell(k) for k in c.removed)]
    out += [
        "",
        f"Geometric mean of the time ratios: {md_cell(fmt_geomean(c.geomean_ratio))}.",
        "",
        *energy_markdown(c),
        f"<sub>{md_cell(settings_line(c))}</sub>",
        "",
    ]
    return "\n".join(out)
