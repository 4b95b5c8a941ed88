"""Baseline vs current: per-benchmark verdicts that do not cry wolf.

Pure statistics on raw samples, no I/O (the statistics themselves: ``compare.stats``). A benchmark is called SLOWER (or FASTER) only when all
of these hold: the Mann-Whitney U test rejects "same distribution" at ``alpha``, the bootstrap
confidence interval of the ratio of medians (current / baseline) excludes 1, the ratio is past
the minimum effect (``threshold``), and the interval is narrow enough to mean something.
The verdict follows time. Cycles (the time carried to the baseline's SM clock by the
benchmark's clock elasticity) explain a change; they excuse it (SAME ``clock_only``) only where
the clock change was the environment's (``compare.clock_cause``), never where the code's own
power draw at the power cap lowered its clock. Everything else is SAME or AMBIGUOUS, with a
reason code and a one-line message.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from nsightwrap.compare.clock_cause import Cause, ClockCause, clock_cause
from nsightwrap.compare.energy import EnergyVerdict, judge_energy
from nsightwrap.compare.stats import (
    Interval,
    Reason,
    Settings,
    Spread,
    Verdict,
    ci_text,
    direction,
    geomean,
    mann_whitney_u,
    median_ratio,
    spread,
)
from nsightwrap.core.units import ghz_text

METRICS = ("timer", "ncu", "nsys")

#: The default decision parameters (a frozen value, shared by every call that passes none).
DEFAULT_SETTINGS = Settings()


@dataclass(frozen=True)
class Samples:
    """One benchmark's raw values on one side of a comparison.

    ``values_ns``: every kept sample (time, ns). ``cycles``: the same samples in SM cycles
    (time x SM clock, or ncu's own cycle counts), or None when no clock was recorded.
    ``clock_hz``: the median SM clock during the samples, or None.
    """

    name: str
    params: tuple[tuple[str, str], ...]
    values_ns: tuple[float, ...]
    cycles: tuple[float, ...] | None = None
    clock_hz: float | None = None
    #: Energy per call (J) of each block of the timer's energy window, or None (compare.energy).
    energy_j: tuple[float, ...] | None = None
    #: The side's own reconcile verdict of this benchmark (a report's ``verdict``: ``ok``,
    #: ``explained``, ...), where the input carries one; shown beside the compare verdict.
    reconcile: str | None = None
    #: Clock elasticity e of the benchmark's time (duration ~ clock^-e; 1 follows the SM clock,
    #: 0 does not), clamped to [0, 1]: its kernels' e weighted by their ncu durations (a report
    #: JSON's ``ncu.kernels``), or None where the input has no ncu kernels.
    elasticity: float | None = None
    #: ``measured`` (every kernel's e from ncu at two clocks) or ``heuristic`` (ncu's counters).
    elasticity_source: str | None = None
    #: Mean power (W) over the timer's energy window, or None.
    power_w: float | None = None
    #: NVML throttle reasons seen while it ran (``sw_power_cap``, ``sw_thermal``, ...); None where
    #: no power record was taken, () where one was and the clock was not held down.
    throttle_reasons: tuple[str, ...] | None = None
    #: The GPU's UUID, where recorded.
    gpu_uuid: str | None = None

    @property
    def key(self) -> str:
        """Matching key: ``name`` or ``name[k=v,...]`` (params sorted by key)."""
        return bench_key(self.name, self.params)


def bench_key(name: str, params: Iterable[tuple[str, str]]) -> str:
    """The name a benchmark is matched and shown by, as the NVTX contract spells it."""
    items = sorted(params)
    if not items:
        return name
    # The timer names a sweep point `mm[M=64,N=8]` AND records its params: key on the base name
    # and the params sorted, so the key is the same whatever order the sweep declared them in.
    base = name.split("[", 1)[0] if name.endswith("]") else name
    return f"{base}[{','.join(f'{k}={v}' for k, v in items)}]"


@dataclass(frozen=True)
class Side:
    """One side of a comparison: where it came from, its GPU and its benchmarks."""

    label: str
    gpu: str | None
    benchmarks: tuple[Samples, ...]

    def by_key(self) -> dict[str, Samples]:
        return {b.key: b for b in self.benchmarks}


@dataclass(frozen=True)
class BenchVerdict:
    """The verdict on one benchmark present on both sides."""

    key: str
    verdict: Verdict
    reason: Reason
    message: str
    baseline: Spread
    current: Spread
    ratio: Interval | None
    p_value: float | None
    cycles_ratio: Interval | None
    baseline_clock_hz: float | None
    current_clock_hz: float | None
    #: The time ratio with the current side carried to the baseline's SM clock by its clock
    #: elasticity (``cycles_ratio`` where e is 1); None without clocks.
    carried_ratio: Interval | None = None
    #: The elasticity the current side was carried by, and its source (``measured``,
    #: ``heuristic``, or ``assumed``: no side recorded one, e = 1 taken).
    elasticity: float | None = None
    elasticity_source: str | None = None
    #: Whose the clock change was, where it moved the time (``compare.clock_cause``), else None.
    clock_cause: ClockCause | None = None


@dataclass(frozen=True)
class Comparison:
    """All verdicts of one comparison, plus benchmarks present on one side only."""

    baseline: str
    current: str
    metric: str
    settings: Settings
    baseline_gpu: str | None
    current_gpu: str | None
    verdicts: tuple[BenchVerdict, ...]
    added: tuple[str, ...] = field(default=())
    removed: tuple[str, ...] = field(default=())
    #: Energy per call verdicts, where both sides have energy.
    energy: tuple[EnergyVerdict, ...] = field(default=())
    #: Per matched benchmark key, each side's reconcile verdict (baseline, current), where
    #: either side carries one (report JSONs, and run directories compared by ncu or nsys, which are
    #: analysed, do; timer sidecars do not).
    reconcile: Mapping[str, tuple[str | None, str | None]] = field(default_factory=dict)

    @property
    def slower(self) -> tuple[BenchVerdict, ...]:
        return tuple(v for v in self.verdicts if v.verdict is Verdict.SLOWER)

    def counts(self) -> dict[Verdict, int]:
        """Number of benchmarks per verdict (every verdict present, zeros included)."""
        out = dict.fromkeys(Verdict, 0)
        for v in self.verdicts:
            out[v.verdict] += 1
        return out

    @property
    def geomean_ratio(self) -> float | None:
        """Geometric mean of the time ratios (current / baseline) of matched benchmarks."""
        return geomean([v.ratio.estimate for v in self.verdicts if v.ratio is not None])

    @property
    def geomean_cycles_ratio(self) -> float | None:
        """Geometric mean of the cycle ratios, over benchmarks with a clock on both sides."""
        return geomean([v.cycles_ratio.estimate for v in self.verdicts if v.cycles_ratio is not None])


# ---------------------------------------------------------------- verdicts


def _ghz(hz: float | None) -> str:
    return ghz_text(hz, 2, "?")


def _elasticities(base: Samples, cur: Samples) -> tuple[float, float, str]:
    """Each side's clock elasticity (a side without one takes the other's) and the current
    side's source; e = 1, source ``assumed``, where neither side recorded one."""
    e_cur = cur.elasticity if cur.elasticity is not None else base.elasticity
    e_base = base.elasticity if base.elasticity is not None else cur.elasticity
    if e_cur is None or e_base is None:
        return 1.0, 1.0, "assumed"
    src = cur.elasticity_source if cur.elasticity is not None else base.elasticity_source
    return e_base, e_cur, src or "heuristic"


def _carried(s: Samples, e: float, ref_hz: float) -> tuple[float, ...] | None:
    """Each sample's time carried to ``ref_hz`` by elasticity ``e``: t * (f / ref) ** e, with
    f each sample's own clock (cycles / time); e = 1 gives cycles / ref."""
    if s.cycles is None:
        return None
    return tuple(t * ((c * 1e9 / t) / ref_hz) ** e for t, c in zip(s.values_ns, s.cycles, strict=True))


def _e_text(e: float, source: str) -> str:
    if source == "assumed":
        return "no clock elasticity recorded, e = 1 taken"
    return f"clock elasticity {e:.2f}, {source}"


def judge(
    base: Samples, cur: Samples, settings: Settings = DEFAULT_SETTINGS, energy: EnergyVerdict | None = None
) -> BenchVerdict:
    """Verdict on one benchmark from its raw samples on both sides (``energy``: its energy
    verdict, which tells whose a change of clock was)."""
    s = settings
    sb, sc = spread(base.values_ns), spread(cur.values_ns)
    e_base, e_cur, e_src = _elasticities(base, cur)

    def result(
        verdict: Verdict,
        reason: Reason,
        message: str,
        ratio: Interval | None = None,
        p: float | None = None,
        cycles: Interval | None = None,
        carried: Interval | None = None,
        cause: ClockCause | None = None,
    ) -> BenchVerdict:
        return BenchVerdict(
            cur.key, verdict, reason, message, sb, sc, ratio, p, cycles, base.clock_hz, cur.clock_hz,
            carried, e_cur if carried is not None else None, e_src if carried is not None else None, cause,
        )  # fmt: skip

    n = min(sb.n, sc.n)
    if sb.n == 1 and sc.n == 1:
        # A timing that is one number (a captured Timer.timeit Measurement, a single window):
        # the ratio is shown, but one number per side has no spread to tell a change from noise.
        r = cur.values_ns[0] / base.values_ns[0] if base.values_ns[0] > 0 else None
        return result(
            Verdict.AMBIGUOUS,
            Reason.TOO_FEW_SAMPLES,
            "one number per side"
            + (f" (current / baseline = {r:.3f})" if r is not None else "")
            + ": no spread to judge a change by; time it with raw samples (do_bench return_mode='all', "
            "Timer.blocked_autorange, several event windows)",
        )
    if n < s.min_samples:
        return result(
            Verdict.AMBIGUOUS,
            Reason.TOO_FEW_SAMPLES,
            f"{sb.n} baseline and {sc.n} current samples; at least {s.min_samples} a side are needed",
        )

    ratio = median_ratio(base.values_ns, cur.values_ns, s)
    p = mann_whitney_u(cur.values_ns, base.values_ns).p_value
    cycles = carried = None
    carried_b = carried_c = None
    if base.cycles is not None and cur.cycles is not None and base.clock_hz:
        cycles = median_ratio(base.cycles, cur.cycles, s)
        carried_b, carried_c = _carried(base, e_base, base.clock_hz), _carried(cur, e_cur, base.clock_hz)
        if carried_b is not None and carried_c is not None:
            carried = median_ratio(carried_b, carried_c, s)
    verdict, reason = direction(ratio, p, s)
    thr = f"{s.threshold * 100:g}%"
    head = f"time {ci_text(ratio)}, p={p:.2g}"
    clocks = f"SM clock {_ghz(base.clock_hz)} -> {_ghz(cur.clock_hz)}"
    at_clock = f"at the baseline's clock {{}} ({_e_text(e_cur, e_src)})"
    if reason is Reason.WITHIN_THRESHOLD:
        if carried is not None and carried_b is not None and carried_c is not None:
            car_verdict, _ = direction(carried, mann_whitney_u(carried_c, carried_b).p_value, s)
            if car_verdict in (Verdict.SLOWER, Verdict.FASTER):
                # Time is what users feel, so the verdict stays SAME; but a change can hide behind
                # a clock change, or the elasticity can be off (a guess, or assumed).
                msg = (
                    f"{head}: within the {thr} threshold, but {at_clock.format(ci_text(carried))} at {clocks}: "
                    "a change hidden by the clock, or a time that follows the clock less than taken; "
                    "compare at a fixed clock"
                )
                return result(verdict, Reason.CYCLES_DIFFER, msg, ratio, p, cycles, carried)
        return result(verdict, reason, f"{head}: within the {thr} threshold", ratio, p, cycles, carried)
    if reason is Reason.NOISY:
        msg = f"{head}: the {s.confidence:.0%} interval is wider than the {thr} threshold; take more samples"
        return result(verdict, reason, msg, ratio, p, cycles, carried)
    if reason is Reason.NOT_SIGNIFICANT:
        msg = f"{head}: past the {thr} threshold but not significant (alpha {s.alpha:g})"
        return result(verdict, reason, msg, ratio, p, cycles, carried)

    # A decisive change in time. The verdict follows it; the clock can only explain it, and
    # excuse it only where the clock change was the environment's.
    word = "slower" if verdict is Verdict.SLOWER else "faster"
    if carried is None or carried_b is None or carried_c is None:
        unknown = (
            Reason.REGRESSION_CLOCK_UNKNOWN if verdict is Verdict.SLOWER else Reason.IMPROVEMENT_CLOCK_UNKNOWN
        )
        msg = f"{word}: {head}; SM clock not recorded, so a clock change cannot be ruled out"
        return result(verdict, unknown, msg, ratio, p, None)
    car_verdict, _ = direction(carried, mann_whitney_u(carried_c, carried_b).p_value, s)
    carried_text = at_clock.format(ci_text(carried))
    if car_verdict is verdict:
        msg = f"{word}: {head}; {carried_text}, {clocks}"
        return result(verdict, reason, msg, ratio, p, cycles, carried)
    # Share of the time change (in log terms) that the clock change accounts for.
    by_clock = math.log(ratio.estimate / carried.estimate) / math.log(ratio.estimate)
    explained = car_verdict is Verdict.SAME and by_clock >= 0.5
    cause = clock_cause(base, cur, energy, s)
    how = "explains it" if explained else "explains part of it"
    if cause.cause is Cause.ENVIRONMENT:
        if explained:
            msg = f"time {ci_text(ratio)} but {carried_text}: the {clocks} {how}, not the code: {cause.evidence}"
            return result(Verdict.SAME, Reason.CLOCK_ONLY, msg, ratio, p, cycles, carried, cause)
        msg = f"time {ci_text(ratio)} but {carried_text}: the {clocks} ({cause.evidence}) {how}"
        return result(Verdict.AMBIGUOUS, Reason.CLOCK_PARTIAL, msg, ratio, p, cycles, carried, cause)
    if cause.cause is Cause.CODE:
        msg = f"{word}: {head}; {carried_text}: the lower clock ({clocks}) is how, and it is the code's: {cause.evidence}"
        return result(verdict, Reason.POWER_CAPPED, msg, ratio, p, cycles, carried, cause)
    msg = (
        f"{word}: {head}; {carried_text}: the {clocks} {how}, but not whose it was ({cause.evidence}); "
        "the verdict follows time"
    )
    return result(verdict, Reason.CLOCK_UNATTRIBUTED, msg, ratio, p, cycles, carried, cause)


def compare(
    baseline: Side, current: Side, metric: str = "timer", settings: Settings = DEFAULT_SETTINGS
) -> Comparison:
    """Verdicts for every benchmark on both sides (matched by name and params), in baseline order."""
    b, c = baseline.by_key(), current.by_key()
    energy = energy_verdicts(baseline, current, settings)
    by_energy = {v.key: v for v in energy}
    verdicts = tuple(judge(b[k], c[k], settings, by_energy.get(k)) for k in b if k in c)
    return Comparison(
        baseline=baseline.label,
        current=current.label,
        metric=metric,
        settings=settings,
        baseline_gpu=baseline.gpu,
        current_gpu=current.gpu,
        verdicts=verdicts,
        added=tuple(k for k in c if k not in b),
        removed=tuple(k for k in b if k not in c),
        energy=energy,
        reconcile={k: (b[k].reconcile, c[k].reconcile) for k in b if k in c and (b[k].reconcile or c[k].reconcile)},
    )


def energy_verdicts(baseline: Side, current: Side, settings: Settings | None = None) -> tuple[EnergyVerdict, ...]:
    """Energy verdicts of the benchmarks with energy samples on both sides, in baseline order."""
    b, c = baseline.by_key(), current.by_key()
    out = []
    for k, sb in b.items():
        sc: Samples | None = c.get(k)
        if sc is not None and sb.energy_j and sc.energy_j:
            out.append(judge_energy(k, sb.energy_j, sc.energy_j, settings))
    return tuple(out)
