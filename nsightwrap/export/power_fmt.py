"""Words and numbers of the energy and power sections, shared by the terminal, Markdown and HTML
reports (text only: the figures are ``analysis.power``'s)."""

from __future__ import annotations

import math

from nsightwrap.analysis.model import BenchmarkResult, PowerStats, RunResult
from nsightwrap.export import reportfmt as f

HEADERS = ("benchmark", "energy/call", "per unit", "mean W", "peak W", "peak C", "throttled by", "thermal wait")

#: One line on where the figures come from, under every power table.
METHOD_NOTE = (
    "energy/call: NVML's energy counter over a window of back-to-back calls after the timed samples "
    "(no L2 flush, no queue hold; mean W = energy / time there); peak W and C cover the timed samples too. "
    "A benchmark marked * had no such window: its energy is the timed loop's, flushes included."
)


def joules(j: float | None) -> str:
    """``1.234 mJ``, ``56.7 uJ``, ``2.10 J``; ``-`` when unknown."""
    if j is None or not math.isfinite(j):
        return "-"
    for unit, scale in (("J", 1.0), ("mJ", 1e-3), ("uJ", 1e-6), ("nJ", 1e-9)):
        if abs(j) >= scale:
            return f"{j / scale:.4g} {unit}"
    return f"{j * 1e12:.4g} pJ"


def _num(v: float | None, fmt: str, unit: str = "") -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:{fmt}}{unit}"


def per_unit(p: PowerStats) -> str:
    """``0.61 pJ/FLOP`` (compute work given), else ``3.2 pJ/B``; ``-`` without flops or bytes."""
    if p.pj_per_flop is not None:
        return f"{p.pj_per_flop:.3g} pJ/FLOP"
    if p.pj_per_byte is not None:
        return f"{p.pj_per_byte:.3g} pJ/B"
    return "-"


def row(b: BenchmarkResult) -> list[str]:
    """The cells of one benchmark's power row (text, unescaped)."""
    p = b.power
    assert p is not None
    guard = "-" if p.thermal_wait_s is None else f"{p.thermal_wait_s:.1f} s" + (" (timed out)" if p.thermal_timed_out else "")
    return [
        f.label(b),
        joules(p.energy_per_call_j) + ("*" if p.method != "steady" else ""),
        per_unit(p),
        _num(p.mean_w, ".0f"),
        _num(p.peak_w, ".0f"),
        _num(p.peak_temp_c, ".0f"),
        ", ".join(p.throttle_reasons) or "none",
        guard,
    ]


def with_power(result: RunResult) -> list[BenchmarkResult]:
    """The benchmarks that have power figures, in report order."""
    return [b for b in result.benchmarks if b.power is not None]
