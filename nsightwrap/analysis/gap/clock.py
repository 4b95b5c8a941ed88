"""The ``clock`` part: ncu's kernels carried from their clocks to the clock the timed loop ran
at, kernel by kernel with its clock elasticity (measured by the base-clock ncu pass, else the
heuristic of the throughput counters, and the part says which)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nsightwrap.analysis.gap.common import ghz, med, part, q, us
from nsightwrap.analysis.gap.inputs import GapInputs, at_clock, by_iteration, elasticity
from nsightwrap.analysis.model import GapPart, NcuStats
from nsightwrap.core.contract import TRUSTED_CLOCK_SOURCES


def fix(facts: Mapping[str, Any]) -> str:
    """What to do about a clock difference: nothing in the timing; how the part was measured."""
    how = (
        "the clock sensitivity is a guess from ncu's throughput counters: run the base-clock ncu pass "
        "(nsightwrap profile runs it unless --no-clock-sweep) to measure it"
        if facts.get("heuristic")
        else "each kernel's clock sensitivity was measured"
    )
    src = str(facts.get("clock_source") or "")
    clk = (
        "; the loop's clock was read from the host, give --clock-ref HZ if you know it"
        if not any(s in src for s in TRUSTED_CLOCK_SOURCES)
        else ""
    )
    return f"not a timing error: compare at one clock (lock it with nvidia-smi -lgc); {how}{clk}"


@dataclass(frozen=True)
class Clock:
    """The clock ncu's kernels are carried to, ncu at that clock, the part and a note."""

    f_hz: float | None  # the clock the ncu kernels are carried to (None: ncu's own)
    n_x: float  # ncu's per-iteration median at that clock
    part: GapPart | None
    note: str | None
    #: Where the loop's clock was contradicted: the kernels' own durations per iteration in the
    #: loop (ns), which the verdict's ratio at ncu's own clock is then checked against.
    own_ns: float | None = None


def clock_part(
    inp: GapInputs,
    ncu: NcuStats,
    n: float,
    k_loop: float | None,
    matched: bool = False,
    check_plain: bool = True,
) -> Clock:
    """The clock part. The loop's clock is checked against the kernels' own durations in the
    loop (nsys, else the plain pass's CUPTI reading): a clock read from the host always, a clock
    measured on the GPU where the loop's cache state is ncu's (so only the clock can differ)."""
    ref = inp.ref_clock_hz
    if ref is None or not ncu.kernels:
        return Clock(None, n, None, None)
    per = by_iteration(ncu)
    at_ref = med([sum(at_clock(k, ref) for k in ks) for ks in per.values()]) or n
    trusted = any(s in inp.ref_clock_source for s in TRUSTED_CLOCK_SOURCES)
    note = None
    own, where = k_loop, "under nsys"
    if own is None and check_plain and inp.timer is not None and inp.timer.kernel_ns:
        own, where = inp.timer.kernel_ns, "in the plain pass (CUPTI)"
    given = "given" in inp.ref_clock_source or inp.ref_clock_source in ("boost", "base")
    check = own is not None and not given and (not trusted or matched)
    if check and own is not None and abs(own - n) < abs(own - at_ref):
        # The clock says the loop ran at `ref`, but the kernels' own durations match ncu at its
        # clocks better: that is not the clock these kernels ran at.
        note = (
            f"the reference clock {ghz(ref)} ({inp.ref_clock_source}) is contradicted by the kernels' own durations: "
            f"{where} they took {us(own)}, ncu {us(n)} at its {ghz(ncu.sm_clock_hz)} and {us(at_ref)} "
            f"carried to {ghz(ref)}; the decomposition keeps ncu's clocks (give --clock-ref HZ to override)"
        )
        return Clock(None, n, None, note, own_ns=own)
    rows = []
    heuristic = False
    for ks in per.values():
        for k in ks:
            e, src = elasticity(k)
            heuristic |= src != "measured"
            rows.append(
                {
                    "iteration": k.iteration,
                    "kernel": k.kernel_short,
                    "ncu_ns": q(k.duration_ns),
                    "ncu_clock_hz": k.sm_clock_hz,
                    "elasticity": round(e, 4),
                    "elasticity_source": src,
                    "at_loop_clock_ns": q(at_clock(k, ref)),
                }
            )
        break  # one iteration's kernels are enough to show the rule; the part is over all iterations
    srcs = {r["elasticity_source"] for r in rows}
    ev = {
        "ncu_ns": n,
        "ncu_sm_clock_hz": ncu.sm_clock_hz,
        "loop_clock_hz": ref,
        "loop_clock_source": inp.ref_clock_source,
        "ncu_at_loop_clock_ns": at_ref,
        "elasticity": "measured"
        if srcs == {"measured"}
        else ("heuristic" if "measured" not in srcs else "mixed"),
        "kernels": rows,
    }
    guess = " (clock sensitivity guessed from ncu's throughput counters)" if heuristic else ""
    msg = (
        f"ncu ran at {ghz(ncu.sm_clock_hz)}, the timed loop at {ghz(ref)} ({inp.ref_clock_source}): ncu's "
        f"{us(n)} become {us(at_ref)} at the loop's clock{guess}"
    )
    facts = {"heuristic": heuristic, "clock_source": inp.ref_clock_source}
    return Clock(ref, at_ref, part("clock", at_ref - n, ev, msg, fix(facts)), note)


def bounded(clk: Clock, k_loop: float, n: float) -> Clock:
    """The clock part limited by the kernels' own durations in the loop (same cache state)."""
    assert clk.part is not None
    ev = {
        **clk.part.evidence,
        "rescaled_ns": clk.n_x,
        "bound_by_nsys_kernel_ns": k_loop,
        "ncu_at_loop_clock_ns": k_loop,
    }
    msg = (
        f"{clk.part.message}; carried that far, ncu would be shorter than the same kernels' own durations in the "
        f"loop ({us(k_loop)} under nsys, same cache state), so the part stops there"
    )
    capped = GapPart(
        cause="clock", ns=q(k_loop - n), evidence=ev, fix=clk.part.fix, message=msg, actionable=False
    )
    return Clock(clk.f_hz, k_loop, capped, clk.note)
