"""The gap decomposition in the terminal report: one compact line per benchmark."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from nsightwrap.analysis.model import BenchmarkResult
from nsightwrap.export import gap_text as g


def print_gap_line(b: BenchmarkResult, console: Console, indent: int = 2) -> None:
    """``gap +0.99 us = front end + events +1.20 us, clock -0.04 us; residual -0.18 us``."""
    if b.gap is None:
        return
    console.print(Text(" " * indent + g.compact(b.gap)), style="bold", soft_wrap=False, overflow="fold")
