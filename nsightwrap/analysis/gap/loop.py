"""One benchmark's figures per call, as every part reads them (``Loop``).

The timer's median and method, ncu's median, and the nsys figures per call: the timeline's means
where it exists (they add up window by window), else the medians of ``NsysStats``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from nsightwrap.analysis.gap.common import med
from nsightwrap.analysis.gap.inputs import GapInputs, cache_states, timing_kind
from nsightwrap.analysis.gap.timeline import Timeline
from nsightwrap.analysis.model import NcuStats, NsysStats, TimerStats
from nsightwrap.core.intervals import concurrent


@dataclass(frozen=True)
class Loop:
    """The per-call figures of one benchmark that the parts are differences of (ns)."""

    inp: GapInputs
    timer: TimerStats
    ncu: NcuStats
    nsys: NsysStats | None
    tl: Timeline | None
    t: float  # the timer's median per call
    n: float  # ncu's per-iteration median at its own clocks (0 where ncu profiled no kernel)
    kind: str  # the timing method
    method: dict[str, Any]
    calls: int  # calls per nsys iteration (what the timeline's figures are divided by)
    ov: float  # the empty window the method subtracted, per call
    empty_pc: float | None  # the empty window the method measured, per call
    k_loop: float | None  # the same kernels' own durations under nsys (CUPTI), per call
    nsys_busy: float | None
    nsys_nk: float | None  # memcpy + memset
    nsys_ops: float | None  # sum of op durations
    loop_state: str  # the loop's L2 state: clean, dirty, warm, unknown
    ncu_state: str
    flush: str | None
    single: bool  # one stream (or no nsys pass)
    overlapping: bool  # ops ran concurrently on several streams
    #: The GPU waited for the host in most iterations under nsys.
    dry: bool

    @property
    def has_kernels(self) -> bool:
        """ncu profiled at least one kernel of the benchmark."""
        return bool(self.ncu.kernels)


def overlapping(nsys: NsysStats | None) -> bool:
    """Ops ran concurrently: their durations sum to more than the busy time on several streams."""
    if nsys is None or not nsys.busy_median_ns or not nsys.op_sum_ns or nsys.streams < 2:
        return False
    return concurrent(med(nsys.op_sum_ns) or 0.0, nsys.busy_median_ns)


def loop_of(inp: GapInputs) -> Loop | None:
    """The ``Loop`` of one benchmark; None without a timer or an ncu figure."""
    timer, ncu, nsys, tl = inp.timer, inp.ncu, inp.nsys, inp.timeline
    if timer is None or ncu is None:
        return None
    m = dict(timer.method)
    kind = timing_kind(inp)
    k_timer = max(1, int(m.get("calls_per_sample") or 1))
    calls = max(1, inp.nsys_calls)
    empty = m.get("empty_window_ns")
    k_loop = nsys.median_ns if nsys is not None and nsys.median_ns and any(nsys.kernels_per_iteration) else None
    busy = nk = ops = None
    if nsys is not None:
        busy, nk, ops = nsys.busy_median_ns, med(nsys.non_kernel_ns), med(nsys.op_sum_ns)
    if tl is not None:
        if k_loop is not None:
            k_loop = tl.kernel_ns / calls
        busy, nk, ops = tl.busy_ns / calls, tl.non_kernel_ns / calls, tl.op_sum_ns / calls
    loop_state, ncu_state, flush = cache_states(m, kind, inp.ncu_cache_control)
    return Loop(
        inp=inp, timer=timer, ncu=ncu, nsys=nsys, tl=tl, t=float(timer.median_ns),
        n=float(ncu.median_ns) if ncu.median_ns is not None else 0.0, kind=kind, method=m, calls=calls,
        ov=float(m.get("overhead_ns") or 0.0) / k_timer,
        empty_pc=float(empty) / k_timer if isinstance(empty, (int, float)) and math.isfinite(empty) else None,
        k_loop=k_loop, nsys_busy=busy, nsys_nk=nk, nsys_ops=ops, loop_state=loop_state, ncu_state=ncu_state,
        flush=flush, single=nsys is None or nsys.streams <= 1, overlapping=overlapping(nsys),
        dry=tl is not None and tl.dry_share >= 0.5,
    )  # fmt: skip
