"""What the decomposition of one benchmark reads (``GapInputs``), and the facts of its method:
the timing kind, the loop's L2 state against ncu's, ncu's kernels carried to another clock."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nsightwrap.analysis.clocks import ELASTICITY_RANGE, heuristic_elasticity
from nsightwrap.analysis.gap.limits import DeviceLimits
from nsightwrap.analysis.gap.timeline import Timeline
from nsightwrap.analysis.model import KernelTiming, NcuStats, NsysStats, TimerStats
from nsightwrap.analysis.window_facts import WindowFacts
from nsightwrap.core.contract import CLEAN_FLUSHES, DIRTY_FLUSHES


@dataclass(frozen=True)
class GapInputs:
    """What the decomposition of one benchmark reads: its three views and the run's facts."""

    timer: TimerStats | None
    ncu: NcuStats | None
    nsys: NsysStats | None  # per call (divided by the calls of a CUDA-graph sample, if it was)
    nsys_calls: int = 1  # what the nsys figures were divided by
    timeline: Timeline | None = None
    ref_clock_hz: float | None = None
    ref_clock_source: str = "none"
    ncu_cache_control: str = "all"
    source: Mapping[str, Any] = field(default_factory=lambda: {"kind": "nsightwrap_bench"})
    #: The nsys pass's own timing of the same benchmark (median per call), where it was kept.
    nsys_timer_ns: float | None = None
    #: The ncu and nsys kernel lists agree (same kernels, same count per iteration).
    kernels_agree: bool = True
    #: First uses and CUDA-graph replays inside the benchmark's windows (nsys pass).
    window: WindowFacts | None = None
    #: The GPU's L2 size and DRAM bandwidth, which bound the cache-state part.
    limits: DeviceLimits = field(default_factory=DeviceLimits)


def flush_kind(method: Mapping[str, Any]) -> str | None:
    """The timed loop's L2 flush: None (no flush) or its kind (``write+read``, ``zero``, ``yes``)."""
    kind = method.get("flush")
    if isinstance(kind, str) and kind:
        return None if kind.lower() in ("none", "off", "no", "false") else kind
    v = method.get("flush_l2")
    if v in (None, False, "none", "off", "no", "false", 0):
        return None
    return v if isinstance(v, str) and v not in ("true", "yes", "on") else "yes"


def cache_states(method: Mapping[str, Any], kind: str, ncu_cache_control: str) -> tuple[str, str, str | None]:
    """(the loop's L2 state, ncu's, the loop's flush): states ``clean``, ``dirty``, ``warm`` or
    ``unknown``. ncu flushes and invalidates every cache before each kernel unless run with
    ``--cache-control none``."""
    ncu_state = "warm" if ncu_cache_control == "none" else "clean"
    flush = flush_kind(method)
    if "flush" not in method and "flush_l2" not in method:
        # A captured timing without method facts: what the method is known to do.
        if kind == "do_bench":
            return "dirty", ncu_state, "zero"  # triton.testing.do_bench zeroes a 256 MB buffer
        if kind in ("do_bench_cudagraph", "torch_benchmark"):
            return "warm", ncu_state, None
        return "unknown", ncu_state, None
    graph_calls = int(method.get("calls_per_sample") or 1)
    if flush is None or (method.get("cuda_graph") and graph_calls > 1 and flush is None):
        return "warm", ncu_state, None
    if flush.lower() in DIRTY_FLUSHES:
        return "dirty", ncu_state, flush
    if flush.lower() in CLEAN_FLUSHES:
        return "clean", ncu_state, flush
    return "unknown", ncu_state, flush


def elasticity(k: KernelTiming) -> tuple[float, str]:
    """The elasticity carrying ``k`` to another clock, and where it came from."""
    if k.elasticity is not None and math.isfinite(k.elasticity):
        lo, hi = ELASTICITY_RANGE
        return min(hi, max(lo, k.elasticity)), k.elasticity_source
    return heuristic_elasticity(k.clock_model), "heuristic"


def at_clock(k: KernelTiming, f_hz: float | None) -> float:
    """ncu's duration of ``k`` carried from its clock to ``f_hz`` (as measured where None)."""
    if f_hz is None or not f_hz > 0 or not k.sm_clock_hz:
        return k.duration_ns
    e, _ = elasticity(k)
    return k.duration_ns * (k.sm_clock_hz / f_hz) ** e


def by_iteration(ncu: NcuStats) -> dict[int, list[KernelTiming]]:
    """ncu's kernels grouped by their iteration."""
    per: dict[int, list[KernelTiming]] = {}
    for k in ncu.kernels:
        per.setdefault(k.iteration, []).append(k)
    return per


def position_medians(ncu: NcuStats, f_hz: float | None) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """Median at-clock duration and short name of the k-th kernel, over iterations of the usual count."""
    per = by_iteration(ncu)
    if not per:
        return (), ()
    counts = [len(v) for v in per.values()]
    usual = max(set(counts), key=counts.count)
    rows = [v for v in per.values() if len(v) == usual]
    meds = tuple(float(statistics.median(at_clock(r[p], f_hz) for r in rows)) for p in range(usual))
    # The full name: short names (vectorized_elementwise_kernel) are shared by many different kernels.
    return meds, tuple(rows[0][p].kernel for p in range(usual))


def infer_kind(method: Mapping[str, Any]) -> str:
    """The timing method of a sidecar entry that names no ``source``: nsightwrap.bench writes its
    stopping rule into the method; anything else is taken for a hand-written event loop."""
    if "stop_reason" in method or "warmup_calls" in method or not method:
        return "nsightwrap_bench"
    return "cuda_events"


def timing_kind(inp: GapInputs) -> str:
    """The benchmark's timing method (``nsightwrap_bench``, ``do_bench``, ``cuda_events``, ...)."""
    return str(inp.source.get("kind") or "nsightwrap_bench")
