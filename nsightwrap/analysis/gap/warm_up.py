"""The ``warm_up`` part, and the fixes of a window that replays a CUDA graph.

A window that holds a kernel's or a library's first use in the process (module loads, cuBLAS's
handle and workspace, a JIT compile: ``analysis.window_facts``) pays a one-off cost that the
host-side parts read off the nsys timeline hold (mostly ``launch_overhead``: the GPU waits while
the host loads). That cost is taken out of them into ``warm_up`` (their sum, and so the residual,
unchanged); ``slowdown`` then brings it to the plain pass with the other host-side parts. A
window that replays a CUDA graph gets fixes that never say "use a CUDA graph".
"""

from __future__ import annotations

from dataclasses import replace

from nsightwrap.analysis.gap.common import part as make_part
from nsightwrap.analysis.gap.common import q, us
from nsightwrap.analysis.gap.loop import Loop
from nsightwrap.analysis.model import GapPart
from nsightwrap.analysis.window_facts import (
    WARM_UP_FIX,
    WARM_UP_FROM,
    WindowFacts,
    carve_warm_up,
    fix_for,
    warm_up_evidence,
    warm_up_part_ns,
)


def graph_aware(parts: list[GapPart], facts: WindowFacts | None) -> list[GapPart]:
    """``parts`` with the fixes of a CUDA-graph replay where the windows replay one."""
    out = []
    for p in parts:
        text = fix_for(p.cause, facts) if p.cause != "warm_up" else None
        out.append(replace(p, fix=text) if text and not p.fix.startswith("nothing to fix") else p)
    return out


def carve(parts: list[GapPart], lp: Loop) -> list[GapPart]:
    """``parts`` with a window's first-use cost moved from the host-side parts into ``warm_up``."""
    facts = lp.inp.window
    if facts is None or lp.tl is None:
        return parts
    ns = warm_up_part_ns(facts, calls=lp.calls)
    if not ns or ns <= 0:
        return parts
    size, rest = carve_warm_up({p.cause: p.ns for p in parts if p.cause in WARM_UP_FROM}, q(ns))
    size = q(size)
    if size <= 0:
        return parts
    out = []
    for p in parts:
        left = rest.get(p.cause)
        if left is None or left == p.ns:
            out.append(p)
            continue
        taken = p.ns - left
        ev = {**p.evidence, "first_use_taken_ns": taken}
        msg = f"{p.message}; {us(taken)} of it is a first use in the process (warm_up)"
        out.append(replace(make_part(p.cause, left, ev, msg, p.fix), actionable=p.actionable))
    names = facts.first_use_kernels
    what = []
    if names:
        what.append(f"the first launch in the process of {len(names)} kernel(s)")
    loads = [c for c in facts.first_use_calls if c.family == "module_load"]
    if loads:
        what.append(f"{sum(c.calls for c in loads)} module load(s) ({us(sum(c.host_ns for c in loads))})")
    others = [c.api for c in facts.first_use_calls if c.family != "module_load"]
    if others:
        what.append("setup calls (" + ", ".join(others[:4]) + (", ..." if len(others) > 4 else "") + ")")
    where = (
        "the window" if facts.windows == 1 else f"{len(facts.first_use_windows)} of its {facts.windows} windows"
    )
    msg = (
        f"{where} hold{'s' if facts.windows == 1 else ''} {', '.join(what) or 'a first use'}: {us(size)} per "
        "window of one-off cost (measured as "
        + ("the window less the same work warm" if facts.warm_ns is not None else "the GPU's idle time the first use made")
        + ")"
    )
    return [*out, make_part("warm_up", size, warm_up_evidence(facts), msg, WARM_UP_FIX)]
