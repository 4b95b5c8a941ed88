"""Words and numbers of the energy and power sections, shared by the terminal, Markdown and HTML
reports (text only: the figures are ``analysis.power``'s)."""

from __future__ import annotations

import math

from nsightwrap.analysis.model import BenchmarkResult, RunResult
from nsightwrap.export import reportfmt as f

HEADERS = (
    "benchmark", "energy/call", "pJ/FLOP", "pJ/B", "mean W", "peak W", "peak C", "time/call in window",
    "throttled by", "thermal wait",
)  # fmt: skip

#: One line on where the figures come from, under every power table.
METHOD_NOTE = (
    "energy/call = mean power x time per call over a window of back-to-back calls after the timed samples "
    "(no L2 flush, no queue hold), mean power from whole steps of NVML's energy counter (100 ms on an H200); "
    "peak W and C cover the timed samples too. * no such window: the timed loop's energy, flushes included."
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


def pj(v: float | None) -> str:
    """``0.611``, ``80.7``, ``1,195``: picojoules without an exponent; ``-`` when unknown."""
    if v is None or not math.isfinite(v):
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def row(b: BenchmarkResult) -> list[str]:
    """The cells of one benchmark's power row (text, unescaped), in ``HEADERS`` order."""
    p = b.power
    assert p is not None
    guard = "-" if p.thermal_wait_s is None else f"{p.thermal_wait_s:.1f} s" + (" (timed out)" if p.thermal_timed_out else "")
    return [
        f.label(b),
        joules(p.energy_per_call_j) + ("*" if p.method != "steady" else ""),
        pj(p.pj_per_flop),
        pj(p.pj_per_byte),
        _num(p.mean_w, ".0f"),
        _num(p.peak_w, ".0f"),
        _num(p.peak_temp_c, ".0f"),
        f.time_ns(p.ns_per_call),
        ", ".join(p.throttle_reasons) or "none",
        guard,
    ]


def notes(result: RunResult) -> list[tuple[str, str]]:
    """(benchmark, note) where the figures need a word: a window call slower than the timed
    median (the GPU at its power cap), no energy figure, a thermal guard that gave up."""
    out = []
    for b in with_power(result):
        p = b.power
        assert p is not None
        t = b.timer.median_ns if b.timer else None
        if p.ns_per_call and t and p.ns_per_call > 1.1 * t:
            why = f": the GPU ran at its power cap ({', '.join(p.throttle_reasons)})" if "sw_power_cap" in p.throttle_reasons else ""
            out.append((f.label(b), f"back to back a call took {f.time_ns(p.ns_per_call)}, {p.ns_per_call / t - 1:.0%} over "
                        f"the timed median {f.time_ns(t)}{why}; energy per call is for that steady state"))  # fmt: skip
        if p.energy_per_call_j is None:
            out.append((f.label(b), "no energy per call: the energy window was off or shorter than the counter's steps"))
        if p.thermal_timed_out:
            out.append((f.label(b), f"the thermal guard gave up after {p.thermal_wait_s or 0:.0f} s: the GPU was still hot"))
    return out


def with_power(result: RunResult) -> list[BenchmarkResult]:
    """The benchmarks that have power figures, in report order."""
    return [b for b in result.benchmarks if b.power is not None]
