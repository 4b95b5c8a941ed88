"""Baseline vs current: per-benchmark verdicts that do not cry wolf.

Pure statistics on raw samples, no I/O. A benchmark is called SLOWER (or FASTER) only when all
of these hold: the Mann-Whitney U test rejects "same distribution" at ``alpha``, the bootstrap
confidence interval of the ratio of medians (current / baseline) excludes 1, the ratio is past
the minimum effect (``threshold``), the interval is narrow enough to mean something, and the
same holds in SM cycles (time x SM clock), so that a change of clock is not reported as a change
of code. Everything else is SAME or AMBIGUOUS, with a reason code and a one-line message.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

METRICS = ("timer", "ncu", "nsys")

#: Raw samples: any sequence of floats or a 1-D numpy array.
Values = Sequence[float] | np.ndarray


class Verdict(str, Enum):
    """What happened to one benchmark between baseline and current."""

    SAME = "SAME"
    FASTER = "FASTER"
    SLOWER = "SLOWER"
    AMBIGUOUS = "AMBIGUOUS"


class Reason(str, Enum):
    """Why a verdict was given; stable codes for CI scripts."""

    WITHIN_THRESHOLD = "within_threshold"  # SAME: the change is smaller than the threshold
    REGRESSION = "regression"  # SLOWER, in time and in cycles
    REGRESSION_CLOCK_UNKNOWN = "regression_clock_unknown"  # SLOWER, no SM clock to check against
    IMPROVEMENT = "improvement"  # FASTER, in time and in cycles
    IMPROVEMENT_CLOCK_UNKNOWN = "improvement_clock_unknown"
    CLOCK_ONLY = "clock_only"  # SAME: time moved, cycles did not; the SM clock changed
    CYCLES_DIFFER = "cycles_differ"  # SAME in time, but cycles moved past the threshold
    CLOCK_PARTIAL = "clock_partial"  # AMBIGUOUS: time moved, cycles moved less or unclearly
    TOO_FEW_SAMPLES = "too_few_samples"
    NOISY = "noisy"  # AMBIGUOUS: the confidence interval is wider than the threshold
    NOT_SIGNIFICANT = "not_significant"  # AMBIGUOUS: past the threshold but not significant


@dataclass(frozen=True)
class Settings:
    """Decision parameters. ``threshold`` is a fraction (0.05 = 5%)."""

    threshold: float = 0.05
    confidence: float = 0.95
    alpha: float = 0.01
    min_samples: int = 5
    resamples: int = 2000
    seed: int = 0


#: Named presets for ``--preset``; ``--threshold`` overrides the preset's threshold.
PRESETS: Mapping[str, Settings] = {
    "tight": Settings(threshold=0.02),
    "default": Settings(),
    "loose": Settings(threshold=0.10, alpha=0.001),
}


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
class Interval:
    """A point estimate with a confidence interval (ratios: current / baseline)."""

    estimate: float
    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low


@dataclass(frozen=True)
class MannWhitney:
    """Mann-Whitney U (of the first sample), normal approximation with tie and continuity correction."""

    u: float
    z: float
    p_value: float


@dataclass(frozen=True)
class Spread:
    """Robust summary of one side: median with [min, Q3] (ns)."""

    median: float
    minimum: float
    q3: float
    n: int


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
    #: Energy per call verdicts (``compare.energy.EnergyVerdict``), where both sides have energy.
    energy: tuple[Any, ...] = field(default=())
    #: Per matched benchmark key, each side's reconcile verdict (baseline, current), where
    #: either side carries one (report JSON and run directories do; sidecars do not).
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


# ---------------------------------------------------------------- statistics


def geomean(values: Sequence[float]) -> float | None:
    """Geometric mean of positive values, None for an empty list."""
    vals = [v for v in values if v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def _average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks 1..n with ties sharing their average rank, and the size of every tie group."""
    uniq, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)  # rank of the last member of each group
    avg = upper - (counts - 1) / 2.0
    return avg[inverse], counts


def mann_whitney_u(x: Values, y: Values) -> MannWhitney:
    """Two-sided Mann-Whitney U test of x against y.

    Normal approximation with the tie correction of the variance and a 0.5 continuity
    correction (what ``scipy.stats.mannwhitneyu(method="asymptotic")`` computes).
    """
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("mann_whitney_u needs two non-empty samples")
    ranks, ties = _average_ranks(np.concatenate([a, b]))
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2.0)
    n = n1 + n2
    mu = n1 * n2 / 2.0
    tie_term = float((ties**3 - ties).sum()) / (n * (n - 1)) if n > 1 else 0.0
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    if var <= 0:  # every value equal: no evidence of a difference
        return MannWhitney(u=u1, z=0.0, p_value=1.0)
    z = (abs(u1 - mu) - 0.5) / math.sqrt(var)
    z = max(z, 0.0)
    p = math.erfc(z / math.sqrt(2.0))
    return MannWhitney(u=u1, z=math.copysign(z, u1 - mu), p_value=min(1.0, p))


def bootstrap_median_ratio(
    base: Values,
    cur: Values,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Ratio of medians cur / base with a percentile bootstrap interval (fixed seed: reproducible)."""
    a = np.asarray(base, dtype=float)
    b = np.asarray(cur, dtype=float)
    rng = np.random.default_rng(seed)
    ma = np.median(a[rng.integers(0, len(a), size=(resamples, len(a)))], axis=1)
    mb = np.median(b[rng.integers(0, len(b), size=(resamples, len(b)))], axis=1)
    ratios = mb / ma
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    return Interval(float(np.median(b) / np.median(a)), float(low), float(high))


def spread(values: Values) -> Spread:
    """Median with [min, Q3] of one side's samples."""
    v = np.asarray(values, dtype=float)
    return Spread(float(np.median(v)), float(v.min()), float(np.percentile(v, 75)), len(v))


# ---------------------------------------------------------------- verdicts


def _pct(r: float) -> str:
    return f"{(r - 1.0) * 100.0:+.1f}%"


def _ci(iv: Interval) -> str:
    return f"{_pct(iv.estimate)} [{_pct(iv.low)}, {_pct(iv.high)}]"


def _ghz(hz: float | None) -> str:
    return "?" if hz is None else f"{hz / 1e9:.2f} GHz"


def _direction(iv: Interval, p: float, s: Settings) -> tuple[Verdict, Reason]:
    """Classify one ratio interval: SLOWER / FASTER / SAME, or AMBIGUOUS with its reason."""
    t = s.threshold
    r = iv.estimate
    if 1.0 - t <= r <= 1.0 + t:
        # A small change counts as SAME only when the data could have shown a large one.
        if iv.width <= t:
            return Verdict.SAME, Reason.WITHIN_THRESHOLD
        return Verdict.AMBIGUOUS, Reason.NOISY
    slower = r > 1.0
    excludes_one = iv.low > 1.0 if slower else iv.high < 1.0
    decisive = iv.low > 1.0 + t if slower else iv.high < 1.0 - t
    if p < s.alpha and excludes_one and (iv.width <= t or decisive):
        return (Verdict.SLOWER, Reason.REGRESSION) if slower else (Verdict.FASTER, Reason.IMPROVEMENT)
    if iv.width > t:
        return Verdict.AMBIGUOUS, Reason.NOISY
    return Verdict.AMBIGUOUS, Reason.NOT_SIGNIFICANT


def judge(base: Samples, cur: Samples, settings: Settings = Settings()) -> BenchVerdict:
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

    def boot(a: Sequence[float], b: Sequence[float]) -> Interval:
        return bootstrap_median_ratio(a, b, confidence=s.confidence, resamples=s.resamples, seed=s.seed)

    ratio = boot(base.values_ns, cur.values_ns)
    p = mann_whitney_u(cur.values_ns, base.values_ns).p_value
    cycles = None
    if base.cycles is not None and cur.cycles is not None:
        cycles = boot(base.cycles, cur.cycles)
    verdict, reason = _direction(ratio, p, s)
    thr = f"{s.threshold * 100:g}%"
    head = f"time {_ci(ratio)}, p={p:.2g}"
    clocks = f"SM clock {_ghz(base.clock_hz)} -> {_ghz(cur.clock_hz)}"
    if reason is Reason.WITHIN_THRESHOLD:
        if cycles is not None and base.cycles is not None and cur.cycles is not None:
            cyc_verdict, _ = _direction(cycles, mann_whitney_u(cur.cycles, base.cycles).p_value, s)
            if cyc_verdict in (Verdict.SLOWER, Verdict.FASTER):
                # Time is what users feel, so the verdict stays SAME; but a compute-bound kernel's
                # change can hide behind a clock change (a memory-bound one does not follow the clock).
                msg = (
                    f"{head}: within the {thr} threshold, but cycles {_ci(cycles)} at {clocks}: "
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
    cyc_verdict, _ = _direction(cycles, p_cyc, s)
    if cyc_verdict is verdict:
        msg = f"{word}: {head}; cycles {_ci(cycles)} at {clocks}"
        return result(verdict, reason, msg, ratio, p, cycles)
    # Share of the time change (in log terms) that the clock change accounts for.
    by_clock = math.log(ratio.estimate / cycles.estimate) / math.log(ratio.estimate)
    if cyc_verdict is Verdict.SAME and by_clock >= 0.5:
        msg = f"time {_ci(ratio)} but cycles {_ci(cycles)}: the {clocks} explains it, not the code"
        return result(Verdict.SAME, Reason.CLOCK_ONLY, msg, ratio, p, cycles)
    msg = f"time {_ci(ratio)} but cycles {_ci(cycles)} ({clocks}): part of the change follows the clock"
    return result(Verdict.AMBIGUOUS, Reason.CLOCK_PARTIAL, msg, ratio, p, cycles)


def compare(
    baseline: Side, current: Side, metric: str = "timer", settings: Settings = Settings()
) -> Comparison:
    """Verdicts for every benchmark on both sides (matched by name and params), in baseline order."""
    b, c = baseline.by_key(), current.by_key()
    verdicts = tuple(judge(b[k], c[k], settings) for k in b if k in c)
    from nsightwrap.compare.energy import energy_verdicts  # it builds on this module's statistics

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
