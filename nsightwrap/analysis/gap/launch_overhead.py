"""The ``launch_overhead`` part: time the GPU waited for the host inside the window (the queue
ran dry: ops launched after the GPU went idle, an end event recorded after the GPU finished).
Measured on the nsys timeline; ``slowdown`` brings it to the plain pass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nsightwrap.analysis.gap.common import part, us
from nsightwrap.analysis.gap.loop import Loop
from nsightwrap.analysis.model import GapPart

#: Below this (ns per window) the GPU never waited for the host worth a word.
NOTHING_NS = 5.0


def fix(kind: str, method: Mapping[str, Any], ns: float) -> str:
    """How to keep the GPU from waiting for the host, in the terms of the method used."""
    bench = kind == "nsightwrap_bench"
    if abs(ns) < NOTHING_NS:
        return "nothing to fix: the GPU never waited for the host inside the window"
    graph = bool(method.get("cuda_graph"))
    if bench and not method.get("hold_queue"):
        why = f" ({method['hold_queue_skipped']})" if method.get("hold_queue_skipped") else ""
        return (
            "the queue was not held" + why + ": keep hold_queue=True (the default) so every sample is queued "
            "behind a GPU sleep" + ("" if graph else ", or cuda_graph=True")
        )
    if bench:
        return "fn makes the host wait inside the window (a synchronize, .item(), a host copy): move it out of fn"
    if kind == "do_bench_cudagraph" or graph:
        # The call already replays a CUDA graph: the wait is for the replay's launch itself.
        return (
            "the GPU finished before the next graph replay was launched: put more calls in each replay "
            "(do_bench_cudagraph's n_repeat, graph_calls=N), or queue the replays behind a GPU sleep"
        )
    if kind == "do_bench":
        return (
            "the GPU finished before the next launch arrived: do_bench cannot hold the queue; time the call in a "
            "CUDA graph (do_bench_cudagraph) or several calls per measurement"
        )
    if kind == "torch_benchmark":
        return "Timer measures host and GPU together: time more calls per run, or a CUDA graph of the call"
    return (
        "queue the work before the start event runs: record it behind a GPU sleep (torch.cuda._sleep), or time "
        "a CUDA graph of the call; record the end event right after the launch"
    )


def measure(lp: Loop) -> GapPart | None:
    """The GPU's wait for the host per window, as nsys measured it (None without a timeline)."""
    tl = lp.tl
    if tl is None:
        return None
    host = (tl.host_head_ns + tl.host_gap_ns + tl.tail_ns) / lp.calls
    ev = {
        "before_first_op_ns": tl.host_head_ns / lp.calls,
        "between_ops_ns": tl.host_gap_ns / lp.calls,
        "after_last_op_ns": tl.tail_ns / lp.calls,
        "queue_ran_dry_share": round(tl.dry_share, 4),
        "hold_queue": lp.method.get("hold_queue"),
    }
    msg = f"the GPU waited {us(host)} per window for the host (the queue ran dry in {tl.dry_share:.0%} of the iterations)" + (
        ": the end event was recorded after the GPU had finished" if tl.tail_ns > tl.host_head_ns + tl.host_gap_ns else ""
    )
    return part("launch_overhead", host, ev, msg, fix(lp.kind, lp.method, host))
