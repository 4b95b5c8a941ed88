"""The verdict on one benchmark's timing from its gap, and the causes behind it.

- ``ok``: the timing and ncu at the measured clock agree within the tolerance, and the parts
  that are errors of the timing stay within it;
- ``explained``: outside the tolerance, all of it measured physical parts that are no error of
  the timing (``PHYSICAL``: the clock, the cache state the script's flush or lack of one left,
  copies inside the window, gaps between ops, overlap);
- ``flagged``: the parts that make the timing wrong for what it claims (``ERRORS``: launch-bound,
  work missed on another stream, the events' own cost, warm-up) sum over the tolerance, or ncu
  and nsys disagree about the kernels that ran;
- ``unexplained``: outside the tolerance with a residual over ``RESIDUAL_BOUND`` of the timing;
- ``partly_explained``: outside the tolerance, the residual within that but over what it is
  judged against (``residual_allowance``): the larger of ``PARTLY_SHARE`` of the gap and the
  timing's noise (its measured interquartile range, at least the noise floor ``noise_floor_ns``).
  The parts then explain only part of the gap, so it is never ``explained``. A gap within the
  timing's own noise cannot be judged to 10% of itself: the decomposition's measurements name
  which of the two the residual was held to (``residual_judged_against``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from nsightwrap.analysis.gap.common import us
from nsightwrap.analysis.model import Cause, CauseCode, Gap, GapPart, Verdict

#: Parts that make a timing wrong for what it claims (``warm_up``: a first use in the window).
ERRORS = frozenset({"launch_overhead", "missed_work", "front_end", "warm_up"})
#: Parts that are real time of the work or of a choice of the script, no error of the timing.
PHYSICAL = frozenset({"clock", "cache_state", "non_kernel_work", "overlap", "gaps", "ncu_front_end"})
#: What no measurement explains may be this share of the timing before the verdict is ``unexplained``.
RESIDUAL_BOUND = 0.05
#: A residual over this share of the gap (and over the noise floor) leaves it partly explained.
PARTLY_SHARE = 0.10
#: The noise floor of the residual: this much of any timing (``NOISE_SHARE``), at least
#: ``NOISE_FLOOR_NS``, is what two passes of one loop read apart with nothing changed (the
#: buffers' places in device memory alone move a 2 us add by up to 0.2 us, ``PLACE_SPREAD_NS``).
NOISE_FLOOR_NS = 200.0
NOISE_SHARE = 0.02
#: How far apart a kernel of a few us reads from one place of its buffers in device memory to
#: another: up to about 0.2 us on a 2 us add, in the timer, CUPTI and ncu alike
#: (docs/timer-accuracy.md, "Where the buffers lie"). ncu's pass is a process of its own, whose
#: buffers need not lie where the plain pass's did, so a residual this small may be no more than that.
PLACE_SPREAD_NS = 200.0

_CODE = {
    "clock": CauseCode.CLOCK,
    "cache_state": CauseCode.CACHE_STATE,
    "front_end": CauseCode.FRONT_END,
    "launch_overhead": CauseCode.LAUNCH_OVERHEAD,
    "gaps": CauseCode.GAPS,
    "overlap": CauseCode.OVERLAP,
    "non_kernel_work": CauseCode.NON_KERNEL_WORK,
    "missed_work": CauseCode.MISSED_WORK,
    "warm_up": CauseCode.WARM_UP,
    "ncu_front_end": CauseCode.NCU_FRONT_END,
}


def _error(p: GapPart) -> float:
    """How much of part ``p`` is an error of the timing (ns, >= 0). Missed work counts whole; the
    others where they lengthen the timing (a window with less lead-in than the dispatch ncu
    counts in its own durations is no error of the timing)."""
    if p.cause not in ERRORS:
        return 0.0
    return abs(p.ns) if p.cause == "missed_work" else max(0.0, p.ns)


def noise_floor_ns(timer_ns: float | None) -> float:
    """The residual that counts as noise for a timing of ``timer_ns``: 2% of it, at least 0.2 us."""
    return max(NOISE_FLOOR_NS, NOISE_SHARE * abs(timer_ns or 0.0))


def timing_noise(timer_ns: float | None, iqr_ns: float | None) -> tuple[float, str]:
    """The timing's noise (ns) and how the reasons name it: its measured interquartile range
    (``iqr_ns``: None where it was not measured, one sample), at least the noise floor, which is
    what two passes of one loop read apart with nothing changed (the residual sets one pass
    against others, so a narrow spread within the plain pass does not make it smaller)."""
    floor = noise_floor_ns(timer_ns)
    if iqr_ns is not None and math.isfinite(iqr_ns) and iqr_ns > floor:
        return iqr_ns, f"the timing's measured noise (the interquartile range of its samples, {us(iqr_ns)})"
    why = "" if iqr_ns is not None else "; the timing's own spread was not measured (one sample)"
    return floor, (
        f"the noise floor ({us(floor)}: {NOISE_SHARE:.0%} of the timing, at least {us(NOISE_FLOOR_NS)}, what two "
        f"passes of one loop read apart{why})"
    )


def residual_allowance(total_ns: float, timer_ns: float | None, iqr_ns: float | None) -> tuple[float, str]:
    """What a residual is judged against (ns), and which it is: ``PARTLY_SHARE`` of the gap, or
    the timing's noise (``timing_noise``) where that is larger (a gap within the noise)."""
    share = PARTLY_SHARE * abs(total_ns)
    noise, what = timing_noise(timer_ns, iqr_ns)
    if noise > share:
        return noise, what
    return share, f"{PARTLY_SHARE:.0%} of the gap ({us(share)})"


def allowance_of(gap: Gap) -> tuple[float, str]:
    """``residual_allowance`` of a decomposed gap (from its measurements where recorded)."""
    m = gap.measurements
    a, what = m.get("residual_allowance_ns"), m.get("residual_judged_against")
    if isinstance(a, (int, float)) and isinstance(what, str):
        return float(a), what
    iqr = m.get("timer_iqr_ns")
    return residual_allowance(gap.total_ns, gap.timer_ns, float(iqr) if isinstance(iqr, (int, float)) else None)


def partly(gap: Gap) -> bool:
    """The residual is over what it is judged against (``residual_allowance``)."""
    return abs(gap.residual_ns) > allowance_of(gap)[0]


def error_ns(gap: Gap) -> float:
    """The size of the parts that are errors of the timing, summed."""
    return math.fsum(_error(p) for p in gap.parts)


def ratio_at_clock(gap: Gap) -> float | None:
    """The timing over ncu carried to the clock the decomposition measured for the loop (ncu's
    own where it has no clock part): the ratio the parts explain. None where ncu saw no kernel."""
    n = (gap.ncu_ns or 0.0) + math.fsum(p.ns for p in gap.parts if p.cause == "clock")
    return (gap.timer_ns or 0.0) / n if n > 0 else None


def judge(gap: Gap, tolerance: float, *, kernels_agree: bool = True) -> tuple[Verdict, str]:
    """The verdict on a timing from its gap, and why in one line."""
    t = abs(gap.timer_ns or 0.0)
    limit = tolerance * t
    err = error_ns(gap)
    ratio = ratio_at_clock(gap)
    if not kernels_agree:
        return Verdict.FLAGGED, "ncu and nsys disagree about the kernels of an iteration"
    if err > limit:
        names = ", ".join(p.cause for p in _by_size(gap.parts) if _error(p) >= limit / 2) or "together"
        return Verdict.FLAGGED, f"parts that are errors of the timing ({names}) sum to {us(err)}, over {tolerance:.0%} of it"
    if ratio is not None and abs(ratio - 1) <= tolerance:
        return Verdict.OK, f"{ratio:.2f}x at the measured clock, within {tolerance:.0%}"
    if abs(gap.residual_ns) > RESIDUAL_BOUND * t:
        return (
            Verdict.UNEXPLAINED,
            f"the residual {us(gap.residual_ns)} is over {RESIDUAL_BOUND:.0%} of the timing: no measurement explains it",
        )
    names = ", ".join(c.code.value for c in causes_from_gap(gap, tolerance, Verdict.EXPLAINED))
    where = f"{ratio:.2f}x" if ratio is not None else "ncu saw no kernel"
    allowance, against = allowance_of(gap)
    if partly(gap):
        return Verdict.PARTLY_EXPLAINED, (
            f"{where}: measured parts that are no error of the timing explain part of it ({names or 'together'}); "
            f"the residual {us(gap.residual_ns)} of the gap {us(gap.total_ns)} is over {against}, what it is judged "
            f"against (the larger of {PARTLY_SHARE:.0%} of the gap and the timing's noise)"
        )
    said = f"{where}: measured parts that are no error of the timing explain it ({names or 'together'})"
    if abs(gap.residual_ns) > PARTLY_SHARE * abs(gap.total_ns):
        # Within the noise, not within 10% of the gap: say which held it.
        said += (
            f"; the residual {us(gap.residual_ns)} is over {PARTLY_SHARE:.0%} of the gap but within {against}, "
            "so the gap cannot be judged to that share"
        )
    return Verdict.EXPLAINED, said


def _by_size(parts: tuple[GapPart, ...]) -> list[GapPart]:
    return sorted(parts, key=lambda p: -abs(p.ns))


def _cause(p: GapPart) -> Cause:
    return Cause(_CODE[p.cause], p.message, {"part_ns": p.ns, **_flat(p.evidence)}, p.fix)


def residual_cause(gap: Gap) -> Cause:
    """``unexplained``: the residual, with what to look at."""
    fix = "rerun to check it repeats; look at the per-kernel table and the nsys timeline"
    if abs(gap.residual_ns) <= PLACE_SPREAD_NS:
        fix += (
            f"; a residual under {us(PLACE_SPREAD_NS)} can be where the buffers lie: a kernel of a few us reads "
            "that much apart from one place in device memory to another, and ncu's pass need not have used the same places"
        )
    return Cause(
        CauseCode.UNEXPLAINED,
        f"{us(gap.residual_ns)} of the gap is explained by no measurement of this run",
        {"residual_ns": gap.residual_ns, "total_ns": gap.total_ns, "timer_ns": gap.timer_ns},
        fix,
    )


def causes_from_gap(gap: Gap, tolerance: float, v: Verdict | None = None) -> list[Cause]:
    """The causes behind verdict ``v``, each part of at least half the tolerance of the timing,
    largest first: for ``flagged`` the error parts first, for ``explained`` the physical parts,
    for ``unexplained`` the residual first. Without ``v``: every such part, and the residual
    where it is over the tolerance."""
    t = abs(gap.timer_ns or 0.0)
    big = [p for p in _by_size(gap.parts) if p.ns and abs(p.ns) >= tolerance / 2 * t and p.cause in _CODE]
    if v is Verdict.FLAGGED:
        return [_cause(p) for p in big if _error(p)] + [_cause(p) for p in big if not _error(p)]
    if v is Verdict.PARTLY_EXPLAINED:
        return [*causes_from_gap(gap, tolerance, Verdict.EXPLAINED), residual_cause(gap)]
    if v is Verdict.EXPLAINED:
        phys = [_cause(p) for p in big if p.cause in PHYSICAL]
        if phys:
            return phys
        # No single part is large: the physical parts that lengthen (or shorten) the timing the
        # way the gap goes, each at least 1% of it, largest first.
        side = math.copysign(1.0, gap.total_ns)
        return [
            _cause(p)
            for p in _by_size(gap.parts)
            if p.cause in PHYSICAL and p.ns * side > 0 and abs(p.ns) >= 0.01 * t
        ]
    if v is Verdict.UNEXPLAINED:
        return [residual_cause(gap), *(_cause(p) for p in big)]
    if v is Verdict.OK:
        return []
    out = [_cause(p) for p in big]
    if abs(gap.residual_ns) > tolerance * t:
        out.append(residual_cause(gap))
    return out


def _flat(ev: Mapping[str, Any]) -> dict[str, float | int | str | None]:
    """Evidence for a ``Cause``: scalars only (lists of per-kernel rows stay in the gap)."""
    return {k: v for k, v in ev.items() if v is None or isinstance(v, (int, float, str))}
