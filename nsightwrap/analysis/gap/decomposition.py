"""``decompose``: one benchmark's gap in its measured parts, each from its own module."""

from __future__ import annotations

import math
from collections.abc import Mapping

from nsightwrap.analysis.gap import (
    cache_state,
    front_end,
    gaps,
    host_bound,
    launch_overhead,
    missed_work,
    ncu_front_end,
    non_kernel_work,
    opposed,
    slowdown,
    warm_up,
)
from nsightwrap.analysis.gap.clock import Clock, clock_part
from nsightwrap.analysis.gap.common import PART_ORDER, q, us
from nsightwrap.analysis.gap.inputs import GapInputs
from nsightwrap.analysis.gap.loop import loop_of
from nsightwrap.analysis.gap.verdict import residual_allowance
from nsightwrap.analysis.model import Gap, GapPart


def decompose(inp: GapInputs, offsets: Mapping[str, float] | None = None) -> Gap | None:
    """The gap of one benchmark in measured parts; None without a timer or an ncu figure.

    ``offsets``: ncu's front-end time per kernel measured on the run's other benchmarks
    (``front_end_offsets``)."""
    lp = loop_of(inp)
    if lp is None:
        return None
    parts: list[GapPart] = []
    notes: list[str] = []  # shown with the benchmark's notes
    details: list[str] = []  # kept with the decomposition only

    # The kernels' own durations say which clock they ran at only where nothing else differs:
    # the same cache state, one stream (concurrent kernels stretch each other).
    clk = (
        clock_part(inp, lp.ncu, lp.n, lp.k_loop if lp.single else None, lp.loop_state == lp.ncu_state and lp.single,
                   check_plain=lp.single)
        if lp.has_kernels
        else Clock(None, lp.n, None, None)
    )  # fmt: skip
    clk, cache, f, more = cache_state.measure(lp, clk, offsets)
    details += more
    if clk.note:
        notes.append(clk.note)
    missed, missed_any, more = missed_work.measure(lp)
    details += more
    # ncu's front end where the window shows it (its lead-in, its idle time between ops) is
    # taken out of the front-end and gaps parts; what the window never held is ncu's own part.
    sh = ncu_front_end.split(lp, f)
    measured = [
        clk.part,
        cache,
        front_end.measure(lp, sh.shown, clk.n_x),
        launch_overhead.measure(lp),
        gaps.measure_gaps(lp, sh.shown),
        gaps.measure_overlap(lp, clk.n_x),
        non_kernel_work.measure(lp),
        missed,
        ncu_front_end.measure(lp, f, sh),
    ]
    parts = warm_up.carve(warm_up.graph_aware([p for p in measured if p is not None], inp.window), lp)
    sd = slowdown.measure(lp, missed_any)
    parts, scaling, note = slowdown.to_plain_pass(parts, sd, lp)
    if note:
        notes.append(note)
    # Each part within its bound; what a bound cuts stays in the residual.
    shown_f = sh.shown.first_ns + sh.shown.rest_ns if lp.tl is not None else 0.0
    parts, shown_f = ncu_front_end.within_plain_window(parts, lp, f, sh, host_bound.host_room(lp, parts, 0.0))
    parts = host_bound.host_parts(host_bound.front_end(parts, lp), lp, shown_f)
    parts.sort(key=lambda p: PART_ORDER.index(p.cause))
    total = q(lp.t - lp.n)
    opp = opposed.find(parts, total, lp.t, nsys.streams if (nsys := lp.nsys) is not None else 1)
    if opp.note:
        notes.append(opp.note)
    residual = total - math.fsum(p.ns for p in parts)  # exact: every term is a multiple of 1/QUANTUM
    # The timing's own spread per call (the samples are per call, as ``lp.t`` is): a residual
    # within it cannot be told from noise, whatever share of a small gap it is.
    iqr = lp.timer.iqr_ns if lp.timer.n >= 2 and math.isfinite(lp.timer.iqr_ns) else None
    allowance, against = residual_allowance(total, lp.t, iqr)
    if abs(residual) > allowance:
        notes.append(residual_note(q(residual), against, parts, clk.own_ns is not None, scaling, lp.timer.n))
    ncu, tl, nsys = lp.ncu, lp.tl, lp.nsys
    measurements = {
        "timer_ns": lp.t,
        "timer_method": lp.kind,
        "ncu_ns": lp.n,
        "ncu_iterations": len(ncu.iterations_ns),
        "ref_clock_hz": inp.ref_clock_hz,
        "nsys_kernel_ns": lp.k_loop,
        "nsys_iterations": tl.iterations if tl is not None else (len(nsys.busy_ns) if nsys is not None else None),
        "nsys_timeline": tl is not None,
        "nsys_pass_timing_ns": inp.nsys_timer_ns,
        "nsys_slowdown": scaling or None,
        "empty_window_ns": lp.empty_pc,
        "empty_window_subtracted_ns": lp.ov,
        "nsys_busy_ns": lp.nsys_busy,
        "ncu_front_end_in_window_ns": shown_f,
        "device_limits": inp.limits.source,
        "cupti_kernel_ns": lp.timer.kernel_ns,
        # The loop's clock contradicted by its kernels' own durations (clock.py): those durations,
        # at the clock the loop really ran at, per iteration.
        "contradicted_own_ns": clk.own_ns,
        "elasticity": "measured" if ncu.kernels and all(k.elasticity_source == "measured" for k in ncu.kernels)
        else ("heuristic" if ncu.kernels else None),
        "opposed_parts": {"over": list(opp.over), "against": list(opp.against)} if opp.over else None,
        "timer_iqr_ns": iqr,
        # What the residual is judged against (verdict.residual_allowance) and which it is.
        "residual_allowance_ns": q(allowance),
        "residual_judged_against": against,
        "notes": notes,
        "details": details,
    }  # fmt: skip
    return Gap(total_ns=total, parts=tuple(parts), residual_ns=q(residual), timer_ns=lp.t, ncu_ns=lp.n,
               measurements=measurements)  # fmt: skip


#: A part's measurement beyond its bound by more than this (ns) is named in the residual's note.
_BEYOND_NS = 1.0


def residual_note(
    residual: float, against: str, parts: list[GapPart], contradicted: bool, scaling: Mapping[str, object] | None,
    samples: int,
) -> str:  # fmt: skip
    """Why a residual over what it is judged against may be there, from what the decomposition
    measured and could not place: a part's measurement its bound cut (what the bound cuts stays in
    the residual), a plain window longer than nsys's beyond the parts measured there, one sample."""
    why: list[str] = []
    for p in parts:
        beyond = p.evidence.get("beyond_bound_ns")
        if isinstance(beyond, (int, float)) and abs(beyond) > _BEYOND_NS:
            text = (
                f"{us(beyond)} of it is the {p.cause} measurement beyond its bound ({p.evidence.get('bound', 'stated')})"
            )
            if p.cause == "cache_state" and contradicted:
                text += (
                    ": no cache state moves these kernels that way, and with the loop's clock contradicted a clock "
                    "difference between the nsys and ncu passes, which no part measures, can"
                )
            why.append(text)
    plain, under, factor = (scaling.get(k) if scaling else None for k in ("plain_window_ns", "nsys_window_ns", "slowdown"))
    if isinstance(plain, (int, float)) and isinstance(under, (int, float)) and isinstance(factor, (int, float)):
        if plain - under > _BEYOND_NS and factor < 1.0:
            why.append(
                f"the plain pass's window was {us(plain - under)} longer than nsys's ({us(plain)} against {us(under)}), "
                "by less than the GPU's work in it, so the difference may be the GPU's and the host-side parts were kept "
                "as measured under nsys"
                + ("; the plain pass's clock was contradicted, so a slower clock there is not measured" if contradicted else "")
            )
    if samples < 2 and "one sample" not in against:
        why.append("the timing is one sample, so its own spread is not measured")
    return (
        f"the residual {us(residual)} is over {against}: " + ("; ".join(why) or "no measurement of this run places it")
    )
