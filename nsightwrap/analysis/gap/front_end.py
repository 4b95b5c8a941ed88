"""The ``front_end`` part: what every event window holds before its first op starts beyond the
dispatch ncu counts in its own durations (nsys lead-in on the timing stream, less the
empty-window cost the method already subtracts); without nsys, the window beyond its kernels as
the plain pass's own CUPTI reading splits it, less ncu's front end, else the measured empty
window not subtracted. Measured under nsys where it ran; ``slowdown`` brings it to the plain pass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nsightwrap.analysis.gap import launch_overhead
from nsightwrap.analysis.gap.cache_state import NcuFrontEnd
from nsightwrap.analysis.gap.common import part, us
from nsightwrap.analysis.gap.loop import Loop
from nsightwrap.analysis.model import GapPart
from nsightwrap.core.contract import kernel_time_copies


def fix(kind: str, method: Mapping[str, Any], dry: bool) -> str:
    """How to keep the events' own cost out of the timing, in the terms of the method used."""
    bench = kind == "nsightwrap_bench"
    if dry:
        return launch_overhead.fix(kind, method, float("inf"))
    if bench and method.get("hold_queue") and float(method.get("overhead_ns") or 0) > 0:
        return (
            "nsightwrap.bench already holds the queue and subtracts the empty-window cost; what is left is paid "
            "once per window: time several calls per window (cuda_graph=True, graph_calls=N; the L2 is then "
            "warm after the first call) to spread it"
        )
    if bench:
        return "keep hold_queue=True and subtract_overhead=True (the defaults): the timer then removes it"
    if kind == "do_bench":
        return (
            "every do_bench window pays the events' own cost: subtract an empty window (two events with "
            "nothing between, measured the same way), or time a CUDA graph of many calls (do_bench_cudagraph)"
        )
    return (
        "subtract the cost of an empty window (start and end events with nothing between, measured the same "
        "way) from each sample, or time many calls per window"
    )


def measure(lp: Loop, f: NcuFrontEnd, n_x: float) -> GapPart | None:
    """The lead-in of every window beyond ncu's front end (None where nothing measured it).
    ``n_x``: ncu's kernels at the loop's clock."""
    tl, ov = lp.tl, lp.ov
    if tl is not None:
        head = tl.head_ns / lp.calls
        host_head = tl.host_head_ns / lp.calls
        ev = {
            "lead_in_ns": head,
            "host_wait_ns": host_head,
            "empty_window_ns": lp.empty_pc,
            "empty_window_subtracted_ns": ov,
            "ncu_front_end_ns": f.first_ns if f.measured else None,
            "ncu_front_end_source": f.source,
            "timing_stream": tl.timing_stream,
            "timing_stream_rule": tl.timing_stream_rule,
            "queue_ran_dry_share": round(tl.dry_share, 4),
        }
        msg = (
            f"each window holds {us(head - host_head)} of event and dispatch time before its first op starts"
            + (f", {us(ov)} of it subtracted by the timer as the empty-window cost" if ov else "")
            + (f", {us(f.first_ns)} of it counted by ncu too (its front-end time)" if f.measured and f.first_ns else "")
            + (": the queue ran dry, so this includes the launch call itself" if lp.dry else "")
        )
        return part("front_end", head - host_head - ov - f.first_ns, ev, msg, fix(lp.kind, lp.method, lp.dry))
    k = lp.timer.kernel_ns
    kt = lp.method.get("kernel_time")
    per_call = kt.get("kernels_per_call") if isinstance(kt, dict) else None
    # The CUPTI reading must count the kernels ncu profiled (same launches per call).
    same = per_call is None or float(per_call) == max(lp.ncu.kernels_per_iteration, default=0)
    if lp.nsys is None and k is not None and lp.has_kernels and lp.loop_state == lp.ncu_state and same:
        # No nsys pass, but the plain pass's own CUPTI reading of a few calls splits the window:
        # what it holds beyond its kernels and copies, less what ncu holds beyond the same
        # kernels' CUPTI durations (its front end; the same cache state, so nothing else differs).
        copies = kernel_time_copies(lp.method)
        copy_ns = float(copies[1]) if copies is not None and copies[1] else 0.0
        beyond = lp.t - k - copy_ns
        ncu_fe = n_x - k
        ev = {"window_beyond_kernels_ns": beyond, "cupti_kernel_ns": k, "copies_ns": copy_ns,
              "ncu_front_end_ns": ncu_fe, "ncu_front_end_source": "ncu against the plain pass's CUPTI (same cache state)",
              "empty_window_ns": lp.empty_pc, "empty_window_subtracted_ns": ov, "measured": "plain pass (events, CUPTI)"}  # fmt: skip
        msg = (
            f"each window holds {us(beyond)} beyond its kernels in the plain pass (events against CUPTI"
            + (f", after the {us(ov)} empty-window cost the timer subtracts" if ov else "")
            + f"), ncu {us(ncu_fe)} beyond the same kernels (its front end)"
        )
        return part("front_end", beyond - ncu_fe, ev, msg, fix(lp.kind, lp.method, False))
    if lp.empty_pc is not None:
        ev = {"empty_window_ns": lp.empty_pc, "empty_window_subtracted_ns": ov}
        msg = f"an empty event window measured {us(lp.empty_pc)}" + (
            f", {us(ov)} of it subtracted by the timer" if ov else ", and the method does not subtract it"
        )
        return part("front_end", lp.empty_pc - ov, ev, msg, fix(lp.kind, lp.method, False))
    return None
