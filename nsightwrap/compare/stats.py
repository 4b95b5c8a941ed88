"""The statistics and the decision rule that every compare verdict is built on: Mann-Whitney U,
a bootstrap interval of the ratio of medians, and how one ratio interval becomes a verdict.

Pure statistics on raw samples, no I/O. The time verdicts (``compare.verdicts``) and the energy
verdicts (``compare.energy``) both judge through ``direction``, with the same ``Settings``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

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


def pct_change(r: float) -> str:
    """A ratio as a signed change: 1.031 -> ``+3.1%``."""
    return f"{(r - 1.0) * 100.0:+.1f}%"


def ci_text(iv: Interval) -> str:
    """A ratio and its interval as changes: ``+3.1% [+2.0%, +4.2%]``."""
    return f"{pct_change(iv.estimate)} [{pct_change(iv.low)}, {pct_change(iv.high)}]"


def direction(iv: Interval, p: float, s: Settings) -> tuple[Verdict, Reason]:
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
