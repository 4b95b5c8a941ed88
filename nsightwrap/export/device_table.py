"""Terminal view of a device file (rich): one table per group, the two curves, the roofs."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nsightwrap.device.result import GROUPS, DeviceFile
from nsightwrap.export import device_text as t


def _table(title: str, headers: list[str], rows: list[list[str]], left: int = 1) -> Table:
    tab = Table(title=Text(title), title_justify="left")
    for i, h in enumerate(headers):
        last = i == len(headers) - 1
        tab.add_column(h, justify="left" if i < left or last else "right", no_wrap=not last, overflow="fold")
    for r in rows:
        tab.add_row(*(Text(c) for c in r))  # Text, never markup
    return tab


def print_device(dev: DeviceFile, console: Console) -> None:
    """Print every measured ceiling, the curves and the roofs with their ridge points."""
    console.print(Text(f"nsightwrap device: {t.heading(dev)}", style="bold"))
    for w in dev.warnings:
        console.print(Text(f"warning: {w}", style="yellow"))
    for g in GROUPS:
        rows = t.rows(dev, g)
        if rows:
            console.print(_table(t.GROUP_TITLES[g], t.ROW_HEADERS, rows))
    if dev.bandwidth_curve:
        console.print(_table("Copy bandwidth against transfer size (L2 flushed)", t.CURVE_HEADERS, t.curve_rows(dev)))
    if dev.latency_curve:
        console.print(_table("Pointer-chase latency against working set", t.LATENCY_HEADERS, t.latency_rows(dev)))
    roofs = t.roofs_of(dev)
    if roofs.peaks or roofs.memory_bytes_per_s:
        console.print(_table(
            f"Roofs: memory {t.rate(roofs.memory_bytes_per_s, 'B/s')} ({roofs.memory_name or '-'})",
            t.RIDGE_HEADERS, t.ridge_rows(roofs),
        ))  # fmt: skip
