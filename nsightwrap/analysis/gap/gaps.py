"""The ``gaps`` and ``overlap`` parts: idle time between the benchmark's ops beyond their
dispatch (measured under nsys; ``slowdown`` brings it to the plain pass), and time saved by ops
running concurrently (ncu serializes kernels)."""

from __future__ import annotations

from nsightwrap.analysis.gap.cache_state import NcuFrontEnd
from nsightwrap.analysis.gap.common import med, part, us
from nsightwrap.analysis.gap.loop import Loop
from nsightwrap.analysis.model import GapPart

GAPS_FIX = "real cost of the call, not a timing error: fuse the kernels or capture the call in a CUDA graph"
GRAPH_GAPS_FIX = (
    "real cost of the call, not a timing error: the call already replays a CUDA graph, so the idle time is "
    "between the graph's own kernels; fuse them"
)
OVERLAP_FIX = "not a timing error: ncu serializes kernels; judge concurrent work by nsys busy time"


def measure_gaps(lp: Loop, f: NcuFrontEnd) -> GapPart | None:
    """Idle time between the ops of an iteration beyond what ncu counts (None: one op, no nsys)."""
    nsys, tl = lp.nsys, lp.tl
    if nsys is None or (tl is not None and tl.max_ops <= 1):
        return None
    gap = (tl.gap_ns / lp.calls) if tl is not None else (nsys.gap_median_ns or 0.0)
    host_gap = (tl.host_gap_ns / lp.calls) if tl is not None else 0.0
    if not (gap > 0 or f.rest_ns):
        return None
    ev = {"idle_between_ops_ns": gap, "host_wait_ns": host_gap, "ncu_front_end_ns": f.rest_ns or None,
          "ops_per_iteration": tl.max_ops if tl else None}  # fmt: skip
    msg = f"the ops of an iteration left {us(gap - host_gap)} idle between them" + (
        f", {us(f.rest_ns)} of it the dispatch ncu counts in its kernels' durations" if f.rest_ns else ""
    )
    graph = bool(lp.method.get("cuda_graph")) or lp.kind == "do_bench_cudagraph"
    return part("gaps", gap - host_gap - f.rest_ns, ev, msg, GRAPH_GAPS_FIX if graph else GAPS_FIX)


def measure_overlap(lp: Loop, n_x: float) -> GapPart | None:
    """Time saved by ops running concurrently on several streams (None: one stream)."""
    nsys = lp.nsys
    if nsys is None:
        return None
    if lp.overlapping:
        busy = lp.nsys_busy or 0.0
        nk = lp.nsys_nk or 0.0
        ev = {"nsys_busy_ns": busy, "nsys_op_sum_ns": lp.nsys_ops, "non_kernel_ns": nk,
              "ncu_serialized_ns": n_x, "streams": nsys.streams}  # fmt: skip
        msg = (
            f"ops ran concurrently on {nsys.streams} streams: the GPU was busy {us(busy)} with work that ncu "
            f"serializes into {us(n_x + nk)}"
        )
        return part("overlap", busy - nk - n_x, ev, msg, OVERLAP_FIX)
    if nsys.streams > 1:
        ovl = (
            (lp.nsys_busy or 0.0) - (lp.nsys_ops or 0.0)
            if lp.tl is not None
            else (med([b - o for b, o in zip(nsys.busy_ns, nsys.op_sum_ns, strict=True)]) or 0.0)
        )
        if ovl:
            ev = {"nsys_busy_ns": lp.nsys_busy, "nsys_op_sum_ns": lp.nsys_ops, "streams": nsys.streams}
            return part("overlap", ovl, ev, f"ops overlapped on {nsys.streams} streams by {us(-ovl)}", OVERLAP_FIX)
    return None
