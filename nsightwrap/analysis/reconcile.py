"""Per-benchmark reconciliation: timer vs ncu (at one SM clock) vs nsys, and the causes.

Pure functions on parsed data (contract frames in, frozen dataclasses out). A benchmark is an
NVTX range path plus the naming of its per-iteration ranges (``BenchmarkSpec``): kernels and
ops are tied to iteration ``i`` through the range ``<nvtx_path>/<iter_prefix><i>``.
docs/reconciliation.md explains the model, each cause and its thresholds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from nsightwrap.analysis.clocks import MEMORY_BOUND_MARGIN_PCT
from nsightwrap.analysis.gap import (
    GapInputs,
    Timeline,
    causes_from_gap,
    decompose,
    front_end_offsets,
    infer_kind,
    judge,
)
from nsightwrap.analysis.gap.inputs import at_clock, by_iteration
from nsightwrap.analysis.gap.limits import DeviceLimits
from nsightwrap.analysis.gap.verdict import ratio_at_clock
from nsightwrap.analysis.iterations import ITER_PATH, ncu_stats_all, nsys_iterations, nsys_stats_all
from nsightwrap.analysis.model import (
    BenchmarkResult,
    Cause,
    CauseCode,
    ClockModel,
    Gap,
    NcuStats,
    NsysStats,
    TimerStats,
    Verdict,
)
from nsightwrap.analysis.window_facts import WindowFacts
from nsightwrap.core.contract import ITER_PREFIX, kernel_time_copies
from nsightwrap.core.intervals import concurrent
from nsightwrap.core.units import ghz_text as _ghz
from nsightwrap.core.units import us_text as _us
from nsightwrap.timer.stats import median_or_none


@dataclass(frozen=True)
class BenchmarkSpec:
    """What identifies a benchmark in the profiles, and its in-process timings if any.

    ``nvtx_path`` is the benchmark range's full path (``nsightwrap:mm_small``); iteration ``i``
    is the range ``f"{nvtx_path}/{iter_prefix}{i}"`` (``nsightwrap:mm_small/iter0``; the
    reference workload names them ``mm_small/iter0`` inside ``mm_small``, so its prefix is
    ``mm_small/iter``).
    """

    name: str
    nvtx_path: str
    params: Mapping[str, Any] = field(default_factory=dict)
    iter_prefix: str = ITER_PREFIX
    timer: TimerStats | None = None
    #: Where the timing came from (``BenchmarkResult.source``); None: nsightwrap.bench.
    source: Mapping[str, Any] | None = None


def base_name(kernel: str) -> str:
    """Function name without return type, namespaces, template arguments or parameters.

    ncu's short name and nsys's demangled name of one kernel then compare equal.
    """
    kernel = kernel.replace("<unnamed>", "").replace("(anonymous namespace)", "")
    cut = next((i for i, ch in enumerate(kernel) if ch in "<("), len(kernel))
    head = kernel[:cut].strip().split(" ")[-1]
    return head.split("::")[-1]


# ----------------------------------------------------------------------------- ncu


def ncu_stats(kernels: pd.DataFrame, spec: BenchmarkSpec, ref_clock_hz: float | None) -> NcuStats:
    """ncu's per-iteration kernel sums for ``spec``, raw and normalized to ``ref_clock_hz``
    (``iterations.ncu_stats_all`` for one benchmark; the analysis does all at once)."""
    return ncu_stats_all(kernels, [spec], [ref_clock_hz])[0]


# ----------------------------------------------------------------------------- nsys


def nsys_stats(
    ops: pd.DataFrame, ranges: pd.DataFrame, attribution: pd.DataFrame, spec: BenchmarkSpec
) -> NsysStats:
    """nsys's per-iteration figures for ``spec``: one iteration per matching range instance
    (``iterations.nsys_stats_all`` for one benchmark; the analysis does all at once)."""
    return nsys_stats_all(nsys_iterations(ops, ranges, attribution, [spec]), 1)[0]


def per_call(nsys: NsysStats, calls: int) -> NsysStats:
    """``nsys`` with every per-iteration figure divided by ``calls`` (calls per iteration)."""

    def d(v: tuple[float, ...]) -> tuple[float, ...]:
        return tuple(x / calls for x in v)

    def c(v: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(x // calls for x in v)

    def m(v: float | None) -> float | None:
        return None if v is None else v / calls

    return NsysStats(
        iterations_ns=d(nsys.iterations_ns),
        busy_ns=d(nsys.busy_ns),
        span_ns=d(nsys.span_ns),
        op_sum_ns=d(nsys.op_sum_ns),
        non_kernel_ns=d(nsys.non_kernel_ns),
        kernels_per_iteration=c(nsys.kernels_per_iteration),
        memcpy_per_iteration=c(nsys.memcpy_per_iteration),
        memset_per_iteration=c(nsys.memset_per_iteration),
        streams=nsys.streams,
        kernel_names=nsys.kernel_names[: len(nsys.kernel_names) // calls],
        median_ns=m(nsys.median_ns),
        busy_median_ns=m(nsys.busy_median_ns),
        span_median_ns=m(nsys.span_median_ns),
        gap_median_ns=m(nsys.gap_median_ns),
    )


# ----------------------------------------------------------------------------- causes


def _mode(values: Sequence[int]) -> int | None:
    return Counter(values).most_common(1)[0][0] if values else None




def _verdict_ratio(gap: Gap) -> tuple[float, float | None, float] | None:
    """(ratio, the SM clock it is at, ncu's time per call at that clock) as the verdict took them:
    ncu plus the gap's ``clock`` part (``verdict.ratio_at_clock``). The clock is None where no
    clock part carried ncu's kernels anywhere (ncu's own clocks: no reference clock, or one the
    kernels' own durations contradicted). None where the gap has no ncu time."""
    at = ratio_at_clock(gap)
    if at is None or gap.ncu_ns is None:
        return None
    clock = next((p for p in gap.parts if p.cause == "clock"), None)
    hz = clock.evidence.get("loop_clock_hz") if clock is not None else None
    return at, (float(hz) if hz else None), gap.ncu_ns + (clock.ns if clock is not None else 0.0)


def _clock_unresolved(gap: Gap | None, timer: TimerStats | None, verdict: Verdict, tolerance: float) -> float | None:
    """The timing over its kernels at the clock the loop ran at, where the verdict's ratio is at
    ncu's own clocks (the loop's measured clock was contradicted by the kernels' own durations,
    gap/clock.py) and this ratio falls on the other side of the tolerance; else None.

    The kernels' own durations (nsys or CUPTI, per iteration) hold none of ncu's per-kernel front
    end, which ncu's figure does: the gap's ``ncu_front_end`` part (ncu's, as this run measured
    it) is added back, so that both ratios are against ncu's kind of figure."""
    if gap is None or timer is None or verdict in (Verdict.NO_NCU, Verdict.NO_DATA, Verdict.NO_TIMER):
        return None
    own = gap.measurements.get("contradicted_own_ns")
    if not isinstance(own, (int, float)) or own <= 0 or not gap.timer_ns:
        return None
    fe = -sum(p.ns for p in gap.parts if p.cause == "ncu_front_end")
    r = gap.timer_ns / (own + max(fe, 0.0))
    within = abs(r - 1.0) <= tolerance
    return r if within != (verdict is Verdict.OK) else None


def other_clock(
    b: BenchmarkResult, candidates: Sequence[tuple[float, str, str]], tolerance: float
) -> tuple[float, str] | None:
    """The ratio at another clock the loop may have run at, where it falls on the other side of
    the tolerance from the verdict, and a note saying so; None where every candidate agrees.

    ``candidates`` are clocks measured for this loop that the verdict did not use, as (Hz, where
    measured, why it was not used): the clock run's where the loop changed pace there, the nsys
    pass's where nsys slowed the loop. None of them, nor the clock the verdict used, is known to
    be the plain pass's: a verdict that changes between them cannot be trusted to the tolerance.
    ncu's kernels are carried to each with their clock elasticities (``gap.inputs.at_clock``);
    the timing is the one the verdict's ratio holds."""
    if b.clock_unresolved_ratio is not None or b.ratio is None or not b.ncu_at_ratio_ns or b.ncu is None:
        return None
    if b.verdict in (Verdict.NO_NCU, Verdict.NO_DATA, Verdict.NO_TIMER) or not b.ncu.kernels:
        return None
    t_ns = b.ratio * b.ncu_at_ratio_ns
    used = b.ratio_clock_hz
    per = list(by_iteration(b.ncu).values())
    for hz, source, why in candidates:
        if not hz > 0 or (used and abs(hz / used - 1.0) < 0.005):
            continue
        at = median_or_none([sum(at_clock(k, hz) for k in ks) for ks in per])
        if not at:
            continue
        r = t_ns / at
        if (abs(r - 1.0) <= tolerance) == (b.verdict is Verdict.OK):
            continue
        at_used = f"at {_ghz(used)}" if used else "at ncu's own clocks"
        return r, (
            f"the loop's clock in the plain pass is not known to {tolerance:.0%}: {why}; at that clock "
            f"({_ghz(hz)}, {source}) ncu's kernels take {_us(at)} per call and the timing reads {r:.2f}x, on the "
            f"other side of the {tolerance:.0%} tolerance from the {b.ratio:.2f}x {at_used} the verdict used: "
            f"the verdict cannot be trusted to {tolerance:.0%} (--clock-ref HZ with the clock you know settles it)"
        )
    return None


def disagreement(ncu: NcuStats | None, nsys: NsysStats | None) -> Cause | None:
    """``extra_or_missing_kernels`` when ncu and nsys disagree about the kernels of an iteration."""
    if ncu is None or nsys is None:
        return None
    n_ncu = _mode(ncu.kernels_per_iteration) or 0
    n_nsys = _mode(nsys.kernels_per_iteration) or 0
    ev: dict[str, float | int | str | None] = {
        "ncu_kernels_per_iteration": n_ncu,
        "nsys_kernels_per_iteration": n_nsys,
        "ncu_iterations": len(ncu.iterations_ns),
        "nsys_iterations": len(nsys.iterations_ns),
        "ncu_excluded_kernels": ncu.excluded_kernels,
    }
    if n_ncu == 0 and n_nsys > 0:
        return Cause(
            CauseCode.EXTRA_OR_MISSING_KERNELS,
            f"ncu profiled no kernel in the iteration ranges while nsys saw {n_nsys} per iteration",
            ev,
            "profile again with --ncu-kernel-cap 0 (every launch profiled); a run with --nvtx-include: check "
            "that filter against the range names nsys shows",
        )
    if n_ncu != n_nsys:
        return Cause(
            CauseCode.EXTRA_OR_MISSING_KERNELS,
            f"ncu counted {n_ncu} kernels per iteration, nsys {n_nsys}",
            ev,
            "make sure only the measured call runs inside the iteration range (no flush or warm-up kernels)",
        )
    a = sorted(base_name(n) for n in ncu.kernel_names)
    b = sorted(base_name(n) for n in nsys.kernel_names)
    if a != b:
        ev["ncu_kernels"] = ", ".join(a)
        ev["nsys_kernels"] = ", ".join(b)
        return Cause(
            CauseCode.EXTRA_OR_MISSING_KERNELS,
            "ncu and nsys ran different kernels in the iteration (different library choices?)",
            ev,
            "pin the algorithm (e.g. disable autotuning) so that every pass runs the same kernels",
        )
    return None


def overlap_ns(nsys: NsysStats | None) -> float | None:
    """Median per-iteration sum of op durations when ops ran concurrently (else None).

    Concurrent means the sum exceeds nsys busy time (the union of the intervals) by more than
    ``core.intervals.OVERLAP_SHARE`` (``intervals.concurrent``).
    """
    if nsys is None or not nsys.busy_median_ns or not nsys.op_sum_ns:
        return None
    op_sum = median_or_none(nsys.op_sum_ns) or 0.0
    return op_sum if concurrent(op_sum, nsys.busy_median_ns) else None


# ----------------------------------------------------------------------------- verdict


def reconcile(
    spec: BenchmarkSpec,
    ncu: NcuStats | None,
    nsys: NsysStats | None,
    *,
    ref_clock_hz: float | None,
    ref_clock_source: str,
    tolerance: float = 0.1,
    ncu_cache_control: str = "all",
    timeline: Timeline | None = None,
    nsys_timer_ns: float | None = None,
    front_end: Mapping[str, float] | None = None,
    window: WindowFacts | None = None,
    limits: DeviceLimits | None = None,
) -> BenchmarkResult:
    """Verdict, causes and the decomposition of the gap for one benchmark from its three views.

    ``timeline`` (the nsys iterations as the event window sees them), ``nsys_timer_ns`` (the
    nsys pass's own timing), ``front_end`` (ncu's front-end time per kernel, measured on the
    run's other benchmarks) and ``window`` (first uses and graph replays in its windows) refine
    the decomposition; without them its parts are fewer.
    """
    timer = spec.timer
    n_ncu = (_mode(ncu.kernels_per_iteration) or 0) if ncu else 0
    notes: list[str] = []
    nsys, calls, per_call_note = _per_call_view(timer, ncu, nsys)
    if per_call_note:
        notes.append(per_call_note)
    ratio = ratio_raw = ratio_clock_hz = ncu_at_ratio_ns = None
    if timer is not None and ncu is not None and n_ncu and ncu.normalized_ns and ncu.median_ns:
        ratio = timer.median_ns / ncu.normalized_ns
        ratio_raw = timer.median_ns / ncu.median_ns
        # At the reference clock until the verdict says which clock it used (below).
        ratio_clock_hz, ncu_at_ratio_ns = ref_clock_hz, ncu.normalized_ns
    if timer is not None and timer.kernel_ns is not None:
        # The three readings of one call side by side: CUDA events (window), CUPTI (kernels only), ncu.
        ncu_part = f", ncu {_us(ncu.median_ns)}" if ncu is not None and ncu.median_ns else ""
        copies = kernel_time_copies(timer.method)
        # A memcpy/memset of the call is in the event window and never in ncu's kernels.
        copy_part = (
            f" + {copies[0]:g} memcpy/memset" + (f" {_us(copies[1])}" if copies[1] is not None else "")
            if copies is not None
            else ""
        )
        notes.append(
            f"events {_us(timer.median_ns)}, kernel {_us(timer.kernel_ns)}{copy_part} (CUPTI){ncu_part} per call"
        )
    if timer is not None and timer.throttled:
        thr = f" under {_ghz(timer.throttle_threshold_hz)}" if timer.throttle_threshold_hz else ""
        notes.append(
            f"{timer.throttled} timer sample(s) ran with the SM clock{thr} and were left out of the statistics"
        )
    if timer is not None and timer.settling:
        at = f" (to {_ghz(timer.settled_clock_hz)})" if timer.settled_clock_hz else ""
        notes.append(
            f"the first {timer.settling} timer sample(s) ran while the SM clock came back from earlier work{at} "
            "and were left out of the statistics"
        )
    if ncu is not None and ncu.excluded_kernels:
        notes.append(
            f"ncu profiled {ncu.excluded_kernels} kernel(s) in the benchmark range outside the iteration "
            "ranges (flush or warm-up): left out of the sums"
        )
    if ncu is not None and ncu.kernels and all(k.clock_model is ClockModel.MEMORY for k in ncu.kernels):
        if all(k.elasticity_source == "measured" for k in ncu.kernels):
            notes.append(
                f"every kernel barely follows the SM clock (measured clock elasticity "
                f"{min(k.elasticity or 0.0 for k in ncu.kernels):.2f} to {max(k.elasticity or 0.0 for k in ncu.kernels):.2f}): "
                f"ncu's time at {_ghz(ncu.sm_clock_hz)} moves little with the clock"
            )
        else:
            notes.append(
                f"every kernel was judged DRAM-bound (memory % of peak at least {MEMORY_BOUND_MARGIN_PCT:.0f} points "
                f"above SM %): ncu's time at {_ghz(ncu.sm_clock_hz)} is kept as measured, not rescaled"
            )
    nsys_work = nsys is not None and any(b > 0 for b in nsys.busy_ns)
    dis = disagreement(ncu, nsys)
    gap = decompose(
        gap_inputs(
            spec, ncu, nsys, calls, timeline, ref_clock_hz=ref_clock_hz, ref_clock_source=ref_clock_source,
            ncu_cache_control=ncu_cache_control, nsys_timer_ns=nsys_timer_ns, kernels_agree=dis is None,
            window=window, limits=limits,
        ),
        front_end,
    )  # fmt: skip
    if gap is not None:
        notes.extend(str(n) for n in gap.measurements.get("notes") or ())
    if timer is None:
        verdict = Verdict.FLAGGED if dis else (Verdict.NO_TIMER if (ncu or nsys) else Verdict.NO_DATA)
    elif ncu is None:
        verdict = Verdict.NO_NCU
    elif gap is None or (ratio is None and not nsys_work and timer.median_ns <= 0):
        verdict = Verdict.NO_DATA
    else:
        # The verdict rests on the decomposition: the parts that are errors of the timing and the
        # residual, not the ratio alone (a throttled clock or a flush is no timing error).
        verdict, reason = judge(gap, tolerance, kernels_agree=dis is None)
        # Kept with the decomposition (read back with the report): why this verdict, in one line.
        gap = replace(gap, measurements={**gap.measurements, "verdict_reason": reason})
        # One ratio per benchmark: the one the verdict used, at the clock the decomposition
        # carried ncu's kernels to (none where it kept ncu's clocks, e.g. a contradicted one).
        if (judged := _verdict_ratio(gap)) is not None:
            ratio, ratio_clock_hz, ncu_at_ratio_ns = judged
        if verdict is Verdict.OK and ratio_raw is not None and ratio is not None and abs(ratio_raw - 1) > tolerance:
            notes.append(
                f"clock normalization closed the gap: {ratio_raw:.2f}x at ncu's clock, {ratio:.2f}x at "
                f"{_ghz(ratio_clock_hz)}"
            )
    unresolved = _clock_unresolved(gap, timer, verdict, tolerance)
    if unresolved is not None and gap is not None:
        own = gap.measurements["contradicted_own_ns"]
        notes.append(
            f"the ratio is at ncu's own clocks, which the loop did not run at (its measured clock was contradicted, "
            f"above); at the clock it ran at its kernels took {_us(own)} per call, which puts the timing at "
            f"{unresolved:.2f}x, on the other side of the {tolerance:.0%} tolerance: the verdict cannot be trusted "
            f"to {tolerance:.0%} (a clock sweep, or --clock-ref HZ with the clock you know, settles it)"
        )
    spread = timer.spread if timer is not None else None
    noisy = spread is not None and spread > tolerance and verdict not in (Verdict.NO_NCU, Verdict.NO_DATA)
    if noisy and timer is not None:
        notes.append(
            f"the timer's samples spread widely: their interquartile range is {spread:.1%} of the median "
            f"(n={timer.n}), over the {tolerance:.0%} tolerance, so the verdict cannot be trusted to {tolerance:.0%}"
        )
    op_sum = overlap_ns(nsys)
    if op_sum is not None and nsys is not None and verdict is not Verdict.FLAGGED:
        # Not a discrepancy (a flagged benchmark gets the `overlap` cause instead), but the nsys
        # kernel sum of this benchmark overstates its time, and a reader comparing it would be misled.
        agree = (
            f"; the timer agrees with ncu's serialized kernel sum (ratio {ratio:.2f}x), so running "
            "concurrently saved little time"
            if ratio is not None
            else ""
        )
        notes.append(
            f"ops overlapped on {nsys.streams} stream(s): their durations sum to {_us(op_sum)} per iteration "
            f"but the GPU was busy {_us(nsys.busy_median_ns)}; judge by nsys busy time, not its kernel sum{agree}"
        )
    causes: tuple[Cause, ...] = ()
    if timer is None:
        causes = (dis,) if dis and verdict is Verdict.FLAGGED else ()
    elif gap is not None and verdict in (
        Verdict.FLAGGED, Verdict.EXPLAINED, Verdict.PARTLY_EXPLAINED, Verdict.UNEXPLAINED
    ):  # fmt: skip
        found = [*([dis] if dis else []), *causes_from_gap(gap, tolerance, verdict)]
        causes = tuple(found) or (
            Cause(
                CauseCode.UNEXPLAINED,
                "no single part is large, but together they exceed the tolerance",
                {"ratio": ratio, "ratio_raw": ratio_raw, "timer_ns": timer.median_ns},
                "look at the decomposition of the gap and the per-kernel table",
            ),
        )
    launches = amortized_launches(ncu, nsys)
    if launches > 1 and timer is not None:
        notes.append(
            f"each window holds {launches} launches of one kernel: {_us(timer.median_ns / launches)} per launch "
            f"(window {_us(timer.median_ns)})"
        )
    return BenchmarkResult(
        launches_per_window=launches,
        name=spec.name,
        params=dict(spec.params),
        nvtx_path=spec.nvtx_path,
        iter_prefix=spec.iter_prefix,
        timer=timer,
        ncu=ncu,
        nsys=nsys,
        ref_clock_hz=ref_clock_hz,
        ref_clock_source=ref_clock_source,
        ratio=ratio,
        ratio_raw=ratio_raw,
        ratio_clock_hz=ratio_clock_hz,
        ncu_at_ratio_ns=ncu_at_ratio_ns,
        noisy=noisy,
        clock_unresolved_ratio=unresolved,
        verdict=verdict,
        causes=causes,
        notes=tuple(notes),
        source=dict(spec.source) if spec.source else {"kind": infer_kind(timer.method if timer else {})},
        gap=gap,
    )


def amortized_launches(ncu: NcuStats | None, nsys: NsysStats | None) -> int:
    """Launches per window of an amortized loop (N launches of one kernel in each window, as
    ``for _ in range(100): op()`` between two events), from the kernel names of an iteration
    (nsys, else ncu); 1 where a window holds one launch or several different kernels."""
    if nsys is not None and nsys.streams > 1:
        return 1  # kernels side by side on several streams, not one after another
    if ncu is not None and ncu.kernels:
        # ncu's full names: nsys's short ones (vectorized_elementwise_kernel) are shared by
        # different template instances (a multiply and an add of one graph replay).
        first = min(k.iteration for k in ncu.kernels)
        full = [k.kernel for k in ncu.kernels if k.iteration == first]
        n = len(nsys.kernel_names) if nsys is not None and nsys.kernel_names else len(full)
        return n if n > 1 and len(set(full)) == 1 else 1
    names = nsys.kernel_names if nsys is not None and nsys.kernel_names else ()
    if len(names) > 1 and len(set(names)) == 1:
        return len(names)
    return 1


def _per_call_view(
    timer: TimerStats | None, ncu: NcuStats | None, nsys: NsysStats | None
) -> tuple[NsysStats | None, int, str | None]:
    """nsys per call when a sample is a CUDA graph of several calls (one call under ncu)."""
    n_ncu = (_mode(ncu.kernels_per_iteration) or 0) if ncu else 0
    calls = int(timer.method.get("calls_per_sample") or 1) if timer else 1
    if calls > 1 and nsys is not None and n_ncu:
        n_nsys = _mode(nsys.kernels_per_iteration) or 0
        if n_nsys == calls * n_ncu:
            note = f"nsys iterations hold {calls} calls each (a CUDA graph or a block of calls): its figures are per call"
            return per_call(nsys, calls), calls, note
        if n_nsys > n_ncu and n_nsys % n_ncu == 0:
            # The timer sizes a graph from an unheld warm-up, which nsys slows down: the nsys pass
            # may capture fewer calls per sample than the plain pass did. Its kernels say how many.
            own = n_nsys // n_ncu
            note = (
                f"nsys iterations hold {own} calls each (CUDA graph; the plain pass timed {calls} per sample): "
                "its figures are per call"
            )
            return per_call(nsys, own), own, note
    return nsys, 1, None


def gap_inputs(
    spec: BenchmarkSpec,
    ncu: NcuStats | None,
    nsys: NsysStats | None,
    calls: int,
    timeline: Timeline | None,
    *,
    ref_clock_hz: float | None,
    ref_clock_source: str,
    ncu_cache_control: str,
    nsys_timer_ns: float | None,
    kernels_agree: bool,
    window: WindowFacts | None = None,
    limits: DeviceLimits | None = None,
) -> GapInputs:
    """What ``decompose`` reads for one benchmark (``nsys`` already per call)."""
    return GapInputs(
        timer=spec.timer, ncu=ncu, nsys=nsys, nsys_calls=calls, timeline=timeline, ref_clock_hz=ref_clock_hz,
        ref_clock_source=ref_clock_source, ncu_cache_control=ncu_cache_control,
        source=dict(spec.source) if spec.source else {"kind": infer_kind(spec.timer.method if spec.timer else {})},
        nsys_timer_ns=nsys_timer_ns, kernels_agree=kernels_agree, window=window, limits=limits or DeviceLimits(),
    )  # fmt: skip


def reconcile_all(
    specs: Sequence[BenchmarkSpec],
    ncu: Sequence[NcuStats | None],
    nsys: Sequence[NsysStats | None],
    timelines: Sequence[Timeline | None],
    refs: Sequence[tuple[float | None, str]],
    *,
    tolerance: float = 0.1,
    ncu_cache_control: str = "all",
    nsys_timers: Mapping[str, float] | None = None,
    windows: Sequence[WindowFacts | None] | None = None,
    limits: DeviceLimits | None = None,
) -> list[BenchmarkResult]:
    """``reconcile`` for every benchmark of a run, after measuring ncu's front-end time per
    kernel on the benchmarks whose cache state matches ncu's (``gap.front_end_offsets``)."""
    timers = nsys_timers or {}
    facts = list(windows) if windows is not None else [None] * len(specs)
    inputs = []
    for spec, n, s, tl, (hz, src), w in zip(specs, ncu, nsys, timelines, refs, facts, strict=True):
        view, calls, _ = _per_call_view(spec.timer, n, s)
        inputs.append(
            gap_inputs(
                spec, n, view, calls, tl, ref_clock_hz=hz, ref_clock_source=src, ncu_cache_control=ncu_cache_control,
                nsys_timer_ns=timers.get(spec.nvtx_path), kernels_agree=disagreement(n, view) is None, window=w,
                limits=limits,
            )
        )  # fmt: skip
    offsets = front_end_offsets(inputs)
    return [
        reconcile(
            spec, n, s, ref_clock_hz=hz, ref_clock_source=src, tolerance=tolerance,
            ncu_cache_control=ncu_cache_control, timeline=tl, nsys_timer_ns=timers.get(spec.nvtx_path),
            front_end=offsets, window=w, limits=limits,
        )  # fmt: skip
        for spec, n, s, tl, (hz, src), w in zip(specs, ncu, nsys, timelines, refs, facts, strict=True)
    ]


def specs_from_nvtx(top_paths: Iterable[str], all_paths: Iterable[str]) -> list[BenchmarkSpec]:
    """Benchmarks from a target's own top-level NVTX ranges (no timer sidecar).

    A top-level range path ``P`` is a benchmark when its children are named ``<prefix><digits>``
    with one common prefix: those are its iterations. Other top-level ranges are skipped.
    """
    paths = sorted(set(all_paths))
    specs = []
    for top in sorted(set(top_paths)):
        kids = [p[len(top) + 1 :] for p in paths if p.startswith(top + "/")]
        prefixes = {m.group(1) for k in kids if (m := ITER_PATH.fullmatch(k))}
        if len(prefixes) == 1:
            name = top.split(":", 1)[-1] if ":" in top else top
            specs.append(BenchmarkSpec(name=name, nvtx_path=top, iter_prefix=prefixes.pop()))
    return specs
