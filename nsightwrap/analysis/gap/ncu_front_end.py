"""The ``ncu_front_end`` part: ncu's own per-kernel front end that the timed window never held.

ncu's ``gpu__time_duration`` of a kernel holds a front end that CUPTI's duration does not (1.0-
1.4 us on a short kernel); an event window holds it too, in its lead-in before the first kernel
and in the idle time between kernels, where the front-end and gaps parts take it out. Where the
window shows less idle time than ncu counts, as in a CUDA graph, whose nodes the GPU dispatches
back to back while ncu serializes them and pays its front end per node, the rest is ncu's alone:
this part (negative: ncu is longer by it). It is measured (``cache_state.NcuFrontEnd``: this
benchmark, the same kernels, or the run's shortest kernels) and is no error of the timing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from nsightwrap.analysis.gap.cache_state import NcuFrontEnd
from nsightwrap.analysis.gap.common import part, q, us
from nsightwrap.analysis.gap.loop import Loop
from nsightwrap.analysis.model import GapPart

FIX = (
    "not a timing error: ncu adds its own front end to every kernel it profiles; the timing holds only what "
    "its window shows of it"
)


@dataclass(frozen=True)
class Shares:
    """ncu's front end as the window shows it: before the first op, between ops, and not at all."""

    shown: NcuFrontEnd  # what the front-end and gaps parts take out of what they read
    unshown_ns: float


def split(lp: Loop, f: NcuFrontEnd) -> Shares:
    """How much of ncu's front end the window's lead-in and its idle time between ops can hold
    (on the nsys timeline, beside the host's share); the rest the window never held."""
    tl = lp.tl
    if tl is None or not f.measured:
        return Shares(f, 0.0)
    head = max(0.0, (tl.head_ns - tl.host_head_ns) / lp.calls)
    idle = max(0.0, (tl.gap_ns - tl.host_gap_ns) / lp.calls) if tl.max_ops > 1 else 0.0
    first = q(min(max(0.0, f.first_ns), head))
    rest = q(min(max(0.0, f.rest_ns), idle))
    unshown = q(max(0.0, f.first_ns) + max(0.0, f.rest_ns) - first - rest)
    return Shares(NcuFrontEnd(first, rest, f.source), unshown)


def measure(lp: Loop, f: NcuFrontEnd, sh: Shares) -> GapPart | None:
    """The front end ncu counted that the window never held (None where there is none)."""
    if sh.unshown_ns <= 0:
        return None
    tl = lp.tl
    assert tl is not None
    kernels = max(lp.ncu.kernels_per_iteration, default=0)
    ev = {
        "ncu_front_end_ns": f.first_ns + f.rest_ns,
        "ncu_front_end_source": f.source,
        "in_lead_in_ns": sh.shown.first_ns,
        "in_idle_between_ops_ns": sh.shown.rest_ns,
        "kernels_per_iteration": kernels,
        "graph_replay": bool(lp.method.get("cuda_graph")) or lp.kind == "do_bench_cudagraph",
    }
    msg = (
        f"ncu counts {us(f.first_ns + f.rest_ns)} of front end over {kernels} kernel(s) per call (measured: {f.source}); "
        f"the window shows {us(sh.shown.first_ns + sh.shown.rest_ns)} of idle time where it could run, so "
        f"{us(sh.unshown_ns)} is ncu's own" + (
            " (ncu serializes the graph's nodes and pays its front end per node)" if ev["graph_replay"] else ""
        )
    )
    return part("ncu_front_end", -sh.unshown_ns, ev, msg, FIX)


def within_plain_window(
    parts: list[GapPart], lp: Loop, f: NcuFrontEnd, sh: Shares, room_ns: float | None
) -> tuple[list[GapPart], float]:
    """``parts`` and the front end the window shows, where the plain window holds less idle time
    beside the GPU's busy time (``room_ns``) than the nsys timeline showed: the rest is ncu's own
    too (the nsys pass stretched the window where the plain pass's kernels ran back to back)."""
    shown = sh.shown.first_ns + sh.shown.rest_ns
    if lp.tl is None or room_ns is None or shown <= room_ns:
        return parts, shown
    kept = q(room_ns)
    more = Shares(NcuFrontEnd(min(sh.shown.first_ns, kept), max(0.0, kept - sh.shown.first_ns), f.source),
                  q(sh.unshown_ns + shown - kept))  # fmt: skip
    new = measure(lp, f, more)
    assert new is not None
    new = replace(
        new,
        evidence={**new.evidence, "plain_window_room_ns": kept, "shown_under_nsys_ns": shown},
        message=f"{new.message}; the plain window holds {us(kept)} beside the GPU's busy time, less than the "
        f"{us(shown)} the nsys timeline showed",
    )
    return [p for p in parts if p.cause != "ncu_front_end"] + [new], kept
