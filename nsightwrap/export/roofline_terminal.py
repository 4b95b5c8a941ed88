"""The roofline section of the terminal report: where the roofs come from, one row per benchmark."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nsightwrap.analysis.model import RunResult
from nsightwrap.export import roofline_text as t


def print_roofline(result: RunResult, console: Console) -> None:
    """Print the roofs' source and each benchmark's achieved rates, bound and % of roof."""
    if result.roofs is None:
        return
    console.print()
    console.print(Text("roofline: " + t.roofs_line(result.roofs), style="bold"))
    rows = t.bench_rows(result)
    if not rows:
        return
    # At less than the full width, the time, the roof and the work's source move out (the Markdown has them).
    keep = list(range(len(t.HEADERS))) if console.width >= 150 else [0, 2, 3, 4, 6, 7]
    tab = Table(show_edge=False, pad_edge=False)
    for i in keep:
        # The name folds when narrow; numbers never wrap.
        tab.add_column(t.HEADERS[i], justify="left" if i in (0, len(t.HEADERS) - 1) else "right",
                       no_wrap=i != 0, overflow="fold", min_width=9 if i == 0 else None)  # fmt: skip
    for r in rows:
        tab.add_row(*(Text(r[i]) for i in keep))
    console.print(tab)
    if len(keep) < len(t.HEADERS):
        console.print(Text("  rates at ncu's median kernel time (at the loop's measured clock where there is one) where ncu "
                 "profiled the benchmark, else the timer's; a point above its roof is 'inconsistent'"), style="dim")
    for who, why in t.reasons(result):
        console.print(Text(f"  {who}: {why}"), style="dim")
