"""Bounds on the host-side parts, applied once they are brought to the plain pass.

- ``front_end`` holds no more than the empty window the method measured (two events with nothing
  between: all the event and dispatch cost a window can hold), where it was measured;
- the host-side parts together (``warm_up``, ``front_end``, ``launch_overhead``, ``gaps``) hold
  no more than the plain window less the GPU's work in it (nsys busy time, less the work the
  window missed) and less ncu's front end the window shows: each interval of the window belongs
  to one part, so they cannot add up to more (not applied where nsys's busy time alone exceeds
  the plain window: its kernels ran at another clock). Where a measurement under nsys puts them beyond it
  (nsys's window was longer than the plain one and was not scaled), they are cut in proportion.

What a bound cuts is left in the residual, never moved into another part; the cut part's
evidence names the bound (``bound``, ``measured_ns``).
"""

from __future__ import annotations

import math
from dataclasses import replace

from nsightwrap.analysis.gap.common import part as make_part
from nsightwrap.analysis.gap.common import q, us
from nsightwrap.analysis.gap.loop import Loop
from nsightwrap.analysis.gap.slowdown import HOST_PARTS
from nsightwrap.analysis.model import GapPart


def _cut(p: GapPart, ns: float, bound: str, limit: float) -> GapPart:
    ev = {**p.evidence, "measured_ns": p.ns, "bound": bound, "bound_high_ns": limit}
    msg = f"{p.message}; {us(p.ns)} is beyond {bound} ({us(limit)}): the part stops at {us(ns)}, the rest is left in the residual"
    return replace(make_part(p.cause, ns, ev, msg, p.fix), actionable=p.actionable)


def front_end(parts: list[GapPart], lp: Loop) -> list[GapPart]:
    """``parts`` with ``front_end`` no longer than the empty window the method measured."""
    if lp.empty_pc is None or lp.empty_pc <= 0:
        return parts
    lim = q(lp.empty_pc)
    return [_cut(p, lim, "the empty window the method measured", lim) if p.cause == "front_end" and p.ns > lim else p
            for p in parts]  # fmt: skip


def host_room(lp: Loop, parts: list[GapPart], shown_ncu_front_end_ns: float) -> float | None:
    """The plain window (the timing plus the empty window the method subtracted) less the GPU's
    busy time in it (nsys, less the work the window missed) and ncu's front end it shows; None
    without nsys. nsys's busy time is a measurement of its own, never derived from the parts it
    bounds."""
    busy = lp.nsys_busy
    if busy is None or lp.nsys is None:
        return None
    missed = math.fsum(p.ns for p in parts if p.cause == "missed_work")
    room = lp.t + lp.ov - (busy + min(0.0, missed))
    if room < 0:
        # nsys's GPU was busy longer than the whole plain window: its kernels ran at another
        # pace (clock) than the plain pass's, so its busy time bounds nothing here.
        return None
    return room - shown_ncu_front_end_ns


def host_parts(parts: list[GapPart], lp: Loop, shown_ncu_front_end_ns: float) -> list[GapPart]:
    """``parts`` with the host-side ones cut in proportion where together they exceed the room
    the plain window leaves beside the GPU's work (``host_room``; the parts are net of the
    subtracted empty window, so the room is too). No part is cut below its floor: 0, and for the
    front end minus the empty window the method subtracted (a window cannot hold less)."""
    room = host_room(lp, parts, shown_ncu_front_end_ns)
    if room is None:
        return parts
    room -= lp.ov
    host = [p for p in parts if p.cause in HOST_PARTS]
    floor = {id(p): floor_ns(p, lp) for p in host}
    slack = {id(p): p.ns - floor[id(p)] for p in host if p.ns - floor[id(p)] > 0}
    cuttable = math.fsum(slack.values())
    excess = math.fsum(p.ns for p in host) - room
    if excess <= 1.0 or cuttable <= 0:  # 1 ns: the 1/8-ns grid's rounding
        return parts
    keep = max(0.0, 1.0 - excess / cuttable)
    bound = "the plain window less the GPU's busy time in it (nsys) and ncu's front end it shows"
    out = []
    for p in parts:
        if id(p) in slack:
            ns = floor[id(p)] + slack[id(p)] * keep
            out.append(_cut(p, ns, bound, q(ns)))
        else:
            out.append(p)
    return out


def floor_ns(p: GapPart, lp: Loop) -> float:
    """The least a host-side part can be: the front end minus the subtracted empty window, else 0."""
    return -lp.ov if p.cause == "front_end" else 0.0
