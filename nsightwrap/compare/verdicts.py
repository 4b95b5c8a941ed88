"""Baseline vs current: per-benchmark verdicts that do not cry wolf.

Pure statistics on raw samples, no I/O (the statistics themselves: ``compare.stats``). A benchmark is called SLOWER (or FASTER) only when all
of these hold: the Mann-Whitney U test rejects "same distribution" at ``alpha``, the bootstrap
confidence interval of the ratio of medians (current / baseline) excludes 1, the ratio is past
the minimum effect (``threshold``), the interval is narrow enough to mean something, and the
same holds in SM cycles (time x SM clock), so that a change of clock is not reported as a change
of code. Everything else is SAME or AMBIGUOUS, with a reason code and a one-line message.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

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


def judge(base: Samples, cur: Samples, settings: Settings = DEFAULT_SETTINGS) -> BenchVerdict:
    """Verdict on one benchmark from its raw samples on both sides."""
    s = settings
    sb, sc = spread(base.values_ns), spread(cur.values_ns)

    def result(
        verdict: Verdict,
        reason: Reason,
        message: str,
        ratio: Interval | None = None,
        p: float | None = None,
        cycles: Interval | None = None,
    ) -> BenchVerdict:
        return BenchVerdict(
            cur.key, verdict, reason, message, sb, sc, ratio, p, cycles, base.clock_hz, cur.clock_hz
        )

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
    cycles = None
    if base.cycles is not None and cur.cycles is not None:
        cycles = median_ratio(base.cycles, cur.cycles, s)
    verdict, reason = direction(ratio, p, s)
    thr = f"{s.threshold * 100:g}%"
    head = f"time {ci_text(ratio)}, p={p:.2g}"
    clocks = f"SM clock {_ghz(base.clock_hz)} -> {_ghz(cur.clock_hz)}"
    if reason is Reason.WITHIN_THRESHOLD:
        if cycles is not None and base.cycles is not None and cur.cycles is not None:
            cyc_verdict, _ = direction(cycles, mann_whitney_u(cur.cycles, base.cycles).p_value, s)
            if cyc_verdict in (Verdict.SLOWER, Verdict.FASTER):
                # Time is what users feel, so the verdict stays SAME; but a compute-bound kernel's
                # change can hide behind a clock change (a memory-bound one does not follow the clock).
                msg = (
                    f"{head}: within the {thr} threshold, but cycles {ci_text(cycles)} at {clocks}: "
                    "a memory-bound kernel, or a change hidden by the clock; compare at a fixed clock"
                )
                return result(verdict, Reason.CYCLES_DIFFER, msg, ratio, p, cycles)
        return result(verdict, reason, f"{head}: within the {thr} threshold", ratio, p, cycles)
    if reason is Reason.NOISY:
        msg = f"{head}: the {s.confidence:.0%} interval is wider than the {thr} threshold; take more samples"
        return result(verdict, reason, msg, ratio, p, cycles)
    if reason is Reason.NOT_SIGNIFICANT:
        msg = f"{head}: past the {thr} threshold but not significant (alpha {s.alpha:g})"
        return result(verdict, reason, msg, ratio, p, cycles)

    # A decisive change in time: it must also hold in SM cycles, or it is a clock change.
    word = "slower" if verdict is Verdict.SLOWER else "faster"
    if base.cycles is None or cur.cycles is None or cycles is None:
        unknown = (
            Reason.REGRESSION_CLOCK_UNKNOWN if verdict is Verdict.SLOWER else Reason.IMPROVEMENT_CLOCK_UNKNOWN
        )
        msg = f"{word}: {head}; SM clock not recorded, so a clock change cannot be ruled out"
        return result(verdict, unknown, msg, ratio, p, None)
    p_cyc = mann_whitney_u(cur.cycles, base.cycles).p_value
    cyc_verdict, _ = direction(cycles, p_cyc, s)
    if cyc_verdict is verdict:
        msg = f"{word}: {head}; cycles {ci_text(cycles)} at {clocks}"
        return result(verdict, reason, msg, ratio, p, cycles)
    # Share of the time change (in log terms) that the clock change accounts for.
    by_clock = math.log(ratio.estimate / cycles.estimate) / math.log(ratio.estimate)
    if cyc_verdict is Verdict.SAME and by_clock >= 0.5:
        msg = f"time {ci_text(ratio)} but cycles {ci_text(cycles)}: the {clocks} explains it, not the code"
        return result(Verdict.SAME, Reason.CLOCK_ONLY, msg, ratio, p, cycles)
    msg = f"time {ci_text(ratio)} but cycles {ci_text(cycles)} ({clocks}): part of the change follows the clock"
    return result(Verdict.AMBIGUOUS, Reason.CLOCK_PARTIAL, msg, ratio, p, cycles)


def compare(
    baseline: Side, current: Side, metric: str = "timer", settings: Settings = DEFAULT_SETTINGS
) -> Comparison:
    """Verdicts for every benchmark on both sides (matched by name and params), in baseline order."""
    b, c = baseline.by_key(), current.by_key()
    verdicts = tuple(judge(b[k], c[k], settings) for k in b if k in c)
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
        energy=energy_verdicts(baseline, current, settings),
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
