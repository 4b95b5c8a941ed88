"""The terminal report's energy and power table (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nsightwrap.analysis.model import RunResult
from nsightwrap.export import power_fmt as pf


def print_power(result: RunResult, console: Console) -> None:
    """Energy per call, power, temperature and throttling per benchmark; nothing without NVML figures."""
    benches = pf.with_power(result)
    if not benches:
        return
    t = Table(title=Text("energy and power (NVML)"), title_justify="left")
    t.add_column(pf.HEADERS[0], overflow="fold", min_width=9)
    for h in pf.HEADERS[1:]:
        t.add_column(h, justify="left" if h == "throttled by" else "right", overflow="fold")
    for b in benches:
        cells = pf.row(b)
        t.add_row(*(Text(c) for c in cells))  # Text, never markup: names hold "[" and "]"
    console.print()
    console.print(t)
    console.print(Text(pf.METHOD_NOTE), style="dim")
    for who, note in pf.notes(result):
        console.print(Text(f"note: {who}: {note}"), style="dim")
