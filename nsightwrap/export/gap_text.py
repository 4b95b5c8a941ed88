"""Text of a benchmark's gap decomposition, shared by the terminal, Markdown and HTML reports.

Pure formatting of ``BenchmarkResult.gap`` (analysis/gap/ computes it): signed times,
the part labels, one evidence item per measurement.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from nsightwrap.analysis.gap.verdict import PARTLY_SHARE
from nsightwrap.analysis.model import Gap, GapPart
from nsightwrap.export import reportfmt as f

#: How each part is named in reports.
LABELS = {
    "clock": "clock",
    "cache_state": "cache state",
    "warm_up": "warm-up (first use)",
    "front_end": "front end + events",
    "launch_overhead": "host stalls (launch-bound)",
    "gaps": "gaps between ops",
    "overlap": "overlap",
    "non_kernel_work": "non-kernel work",
    "missed_work": "work the timing missed",
    "ncu_front_end": "ncu's own front end",
    "profiler_overhead": "profiler overhead",
}


def signed_us(ns: float | None) -> str:
    """``+1.20 us``, ``-0.04 us``, ``0.00 us``; ``-`` when unknown."""
    if ns is None or not math.isfinite(ns):
        return "-"
    if abs(ns) < 5:  # below the 1/8-ns rounding and any timer's resolution
        return "0.00 us"
    return f"{ns / 1e3:+.2f} us" if abs(ns) < 1e6 else f"{ns / 1e6:+.3f} ms"


def label(part: GapPart) -> str:
    """The report name of a part."""
    return LABELS.get(part.cause, part.cause)


def share(ns: float, gap: Gap) -> str:
    """``ns`` as a share of the timing (``+38%``)."""
    t = gap.timer_ns
    return "-" if not t else f"{ns / t:+.0%}"


def residual_basis(gap: Gap) -> str:
    """What the residual was judged against, and whether it is within it (empty for reports
    written before the decomposition recorded it)."""
    a, what = gap.measurements.get("residual_allowance_ns"), gap.measurements.get("residual_judged_against")
    if not isinstance(a, (int, float)) or not isinstance(what, str):
        return ""
    side = "within" if abs(gap.residual_ns) <= a else "over"
    return f"{side} {what}, the larger of {PARTLY_SHARE:.0%} of the gap and the timing's noise"


def headline(gap: Gap) -> str:
    """``timer 3.14 us - ncu 2.14 us = +0.99 us``."""
    return f"timer {f.time_ns(gap.timer_ns)} - ncu {f.time_ns(gap.ncu_ns)} = {signed_us(gap.total_ns)}"


def compact(gap: Gap, *, limit: int = 4) -> str:
    """One line: the total, the largest parts, the residual (``= front end +1.20 us, ... | residual -0.18 us``)."""
    big = sorted((p for p in gap.parts if abs(p.ns) >= 5), key=lambda p: -abs(p.ns))
    shown = [f"{label(p)} {signed_us(p.ns)}" for p in big[:limit]]
    if len(big) > limit:
        rest = math.fsum(p.ns for p in big[limit:])
        shown.append(f"{len(big) - limit} more {signed_us(rest)}")
    body = ", ".join(shown) or "no measured part"
    return f"gap {signed_us(gap.total_ns)} = {body}; residual {signed_us(gap.residual_ns)}"


def evidence_items(evidence: Mapping[str, Any]) -> list[str]:
    """``key=value`` items of a part's evidence; per-kernel rows summarised as ``kernels=N``."""
    out = []
    for k, v in evidence.items():
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            out.append(f"{k}={len(v)} rows")
            continue
        out.append(f.evidence_item(k, v))
    return out


def kernel_rows(part: GapPart) -> list[Mapping[str, Any]]:
    """The per-kernel rows of a clock part's evidence (one iteration), if any."""
    rows = part.evidence.get("kernels")
    return [r for r in rows if isinstance(r, Mapping)] if isinstance(rows, (list, tuple)) else []
