"""nsys's slow-down of a loop, and the host-side parts measured under it brought to the plain pass.

nsys traces every CUDA API call, which slows the host's launches; the GPU's own work is not
slowed. Where the queue ran dry under nsys (the GPU waited for the host in most iterations),
that slow-down stretches every window, and the parts read off the nsys timeline that are host
time (``front_end``, ``launch_overhead``, ``gaps``) hold it. The slow-down is measured on the same
windows: the nsys pass's own timing of the loop against the plain pass's (``nsys/timer-*.json``),
else the windows on the nsys timeline (event records and ops). Only the host-side share of the
window is scaled, never the kernels' durations: the host-side share of a window is the window
less the GPU's work in it (ncu's kernels and the device-side parts), and the parts are scaled by
the plain pass's host share over the nsys pass's, ``(T - D) / (T_nsys - D)``; above 1 only where
the plain window is longer by more than ``D`` (host work that took longer in the plain pass, as
a first use can), since a GPU-side difference between the passes could be all of a smaller one. Where the
queue never ran dry, the windows were queued ahead of the GPU and nsys's host slow-down did not
stretch them: the parts are kept as measured and the note says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from nsightwrap.analysis.gap.common import part as make_part
from nsightwrap.analysis.gap.common import q, us
from nsightwrap.analysis.gap.loop import Loop
from nsightwrap.analysis.model import GapPart

#: Parts read off the nsys timeline that are host-side time, which nsys's tracing stretches.
HOST_PARTS = frozenset({"front_end", "launch_overhead", "gaps"})


@dataclass(frozen=True)
class Slowdown:
    """The same windows under nsys and in the plain pass (ns per call)."""

    nsys_ns: float
    plain_ns: float
    source: str  # what the nsys figure is: the nsys pass's timings, or its timeline's windows

    @property
    def factor(self) -> float:
        """nsys over plain: 1.23 means nsys slowed the loop by 23%."""
        return self.nsys_ns / self.plain_ns if self.plain_ns > 0 else math.nan

    @property
    def excess_ns(self) -> float:
        """How much longer each window lasted under nsys."""
        return self.nsys_ns - self.plain_ns


def measure(lp: Loop, missed_work: bool) -> Slowdown | None:
    """The slow-down of this benchmark's windows under nsys; None where nothing measured it."""
    tl, inp, t = lp.tl, lp.inp, lp.t
    if tl is None:
        return None
    if inp.nsys_timer_ns is not None:
        return Slowdown(float(inp.nsys_timer_ns), t, "the nsys pass's own timings of the loop")
    # A host clock read around a synchronized block (torch.utils.benchmark): the window is the
    # iteration range itself, which the capture layer opens and closes at those reads.
    host_timed = str(lp.method.get("timing") or "").startswith("host") or lp.kind == "torch_benchmark"
    if lp.dry and (tl.event_call_share >= 0.5 or host_timed):
        # No timings of the nsys pass, but its timeline gives the windows themselves (event
        # records and GPU ops, within 3% of the nsys pass's own event timings on the shipped
        # captures). Only where the queue ran dry: with a held queue the GPU-side windows are
        # the plain run's, and the timeline says nothing about a slow-down.
        window = (tl.window_unjoined_ns if missed_work else tl.window_joined_ns) / lp.calls - lp.ov
        src = (
            "the nsys timeline's windows (the iteration range's host times, ops)"
            if host_timed and tl.event_call_share < 0.5
            else "the nsys timeline's windows (event records, ops)"
        )
        return Slowdown(window, t, src)
    return None


def to_plain_pass(parts: list[GapPart], sd: Slowdown | None, lp: Loop) -> tuple[list[GapPart], dict[str, object], str | None]:
    """``parts`` with the host-side ones measured under nsys brought to the plain pass, the
    figures of the scaling (for the measurements) and the one note about it."""
    if sd is None:
        return parts, {}, None
    host = [p for p in parts if p.cause in HOST_PARTS]
    host_ns = math.fsum(p.ns for p in host)
    facts: dict[str, object] = {
        "nsys_window_ns": q(sd.nsys_ns), "plain_window_ns": q(sd.plain_ns), "slowdown": round(sd.factor, 4),
        "slowdown_from": sd.source, "host_parts_under_nsys_ns": q(host_ns), "host_scale": 1.0,
    }  # fmt: skip
    names = ", ".join(p.cause for p in host) or "none"
    head = f"nsys {'slowed' if sd.factor >= 1 else 'sped up'} this loop {sd.factor:.2f}x ({us(sd.nsys_ns)} per call against {us(sd.plain_ns)}, from {sd.source})"
    if not host:
        return parts, facts, f"{head}: no host-side part was measured under it"
    if not lp.dry:
        return parts, facts, (
            f"{head}, but the queue never ran dry under it: the windows were queued ahead of the GPU, so the host "
            "slow-down did not stretch them and the parts measured under nsys are kept as measured"
        )
    # nsys does not slow the GPU's work: the windows' host-side share is what is left of each
    # window beside it (ncu's kernels and the parts of the device's time), under nsys and plain.
    device = lp.n + math.fsum(p.ns for p in parts if p.cause not in HOST_PARTS)
    host_nsys, host_plain = sd.nsys_ns - device, sd.plain_ns - device
    if host_nsys <= 0:
        return parts, facts, f"{head}: the GPU's own work fills the window under nsys, so the parts measured under it are kept as measured"
    scale = max(0.0, host_plain / host_nsys)
    if scale > 1 and sd.plain_ns - sd.nsys_ns <= device:
        # The plain window is longer, by less than the GPU's work in it: a GPU-side difference
        # between the passes (clock, placement) can be all of it, so no host time is added. Only
        # where the GPU cannot account for it (a first use: module load, handle creation, in a
        # window the host fills) is the host share scaled up.
        return parts, facts, (
            f"{head}: the plain window is longer by less than the GPU's work in it ({us(device)}), so the "
            "parts measured under nsys are kept as measured"
        )
    facts.update(host_share_under_nsys_ns=q(host_nsys), host_share_plain_ns=q(host_plain), host_scale=round(scale, 4))
    out = []
    for p in parts:
        if p.cause not in HOST_PARTS:
            out.append(p)
            continue
        ev = {**p.evidence, "measured_under_nsys_ns": p.ns, "scaled_to_plain_pass_by": round(scale, 4)}
        msg = f"{p.message}; under nsys, brought to the plain pass (x{scale:.2f}): {us(p.ns * scale)}"
        out.append(replace(make_part(p.cause, p.ns * scale, ev, msg, p.fix), actionable=p.actionable))
    note = (
        f"{head}: the window's host-side share, {us(host_nsys)} under nsys beside {us(device)} of GPU work, is "
        f"{us(max(0.0, host_plain))} in the plain pass, so the host-side parts measured under it ({names}: {us(host_ns)}) "
        f"are scaled by {scale:.2f} to {us(host_ns * scale)}"
    )
    return out, facts, note
