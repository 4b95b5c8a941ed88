"""What every part of the gap shares: the 1/8 ns quantum, the part order, number formatting."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nsightwrap.analysis.model import GapPart
from nsightwrap.core.units import ghz_text as ghz
from nsightwrap.core.units import us_text as us
from nsightwrap.timer.stats import median_or_none

#: Values are multiples of 1/QUANTUM ns: sums of such values are exact in binary floating point.
QUANTUM = 8.0
#: Part codes whose size the user's timing method can change.
ACTIONABLE = frozenset({"cache_state", "warm_up", "front_end", "launch_overhead", "non_kernel_work", "missed_work"})
#: The parts, in the order they are shown.
PART_ORDER = (
    "clock", "cache_state", "warm_up", "front_end", "launch_overhead", "gaps", "overlap", "non_kernel_work",
    "missed_work", "ncu_front_end",
)  # fmt: skip


def q(ns: float) -> float:
    """``ns`` rounded to a multiple of 1/QUANTUM ns."""
    return round(ns * QUANTUM) / QUANTUM


def med(values: Sequence[float] | np.ndarray) -> float | None:
    """Median of the finite values, None when there are none."""
    return median_or_none([float(v) for v in values if v is not None and math.isfinite(float(v))])


__all__ = ["ACTIONABLE", "PART_ORDER", "QUANTUM", "ghz", "med", "part", "q", "us"]


def part(code: str, ns: float, evidence: Mapping[str, Any], message: str, fix: str) -> GapPart:
    """A ``GapPart`` with its value and its ``*_ns`` evidence on the 1/8 ns grid."""
    ev = {
        k: (q(v) if isinstance(v, float) and k.endswith("_ns") and math.isfinite(v) else v)
        for k, v in evidence.items()
    }
    return GapPart(cause=code, ns=q(ns), evidence=ev, fix=fix, message=message, actionable=code in ACTIONABLE)
