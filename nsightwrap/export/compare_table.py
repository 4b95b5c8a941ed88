"""``nsightwrap compare --format table``: a rich table for the terminal."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from nsightwrap.compare.verdicts import Comparison, Reason, Verdict
from nsightwrap.export.compare_energy import energy_table
from nsightwrap.export.compare_text import fmt_change, fmt_spread, settings_line, summary
from nsightwrap.export.escape import terminal_safe

_STYLE = {
    Verdict.SAME: "green",
    Verdict.FASTER: "bold cyan",
    Verdict.SLOWER: "bold red",
    Verdict.AMBIGUOUS: "yellow",
}


def render_table(c: Comparison) -> Group:
    """The comparison as a renderable: header, one row per benchmark, summary."""
    table = Table(title=Text(terminal_safe(f"{c.baseline} -> {c.current}")), title_justify="left")
    for col in ("benchmark", "verdict", "baseline median [min, Q3]", "current median [min, Q3]"):
        table.add_column(col, overflow="fold")
    table.add_column("time change [CI]")
    table.add_column("cycles change [CI]")
    table.add_column("reason", overflow="fold")
    notes: list[RenderableType] = []
    for v in c.verdicts:
        table.add_row(
            # Text objects: benchmark names may hold '[...]', which rich would read as markup.
            Text(terminal_safe(v.key)),
            Text(v.verdict.value, style=_STYLE[v.verdict]),
            Text(fmt_spread(v, "baseline")),
            Text(fmt_spread(v, "current")),
            Text(fmt_change(v.ratio)),
            Text(fmt_change(v.cycles_ratio)),
            Text(v.reason.value),
        )
        if v.reason is not Reason.WITHIN_THRESHOLD:
            notes.append(Text.assemble((f"{v.verdict.value} ", _STYLE[v.verdict]), terminal_safe(f"{v.key}: {v.message}")))
    lines: list[RenderableType] = [table, *notes, Text(summary(c)), Text(settings_line(c), style="dim")]
    lines += energy_table(c)
    if c.added:
        lines.append(Text("added (only in current): " + ", ".join(map(terminal_safe, c.added))))
    if c.removed:
        lines.append(Text("removed (only in baseline): " + ", ".join(map(terminal_safe, c.removed))))
    return Group(*lines)
