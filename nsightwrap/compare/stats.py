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
from functools import lru_cache

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
    CLOCK_ONLY = "clock_only"  # SAME: time moved, cycles did not; the environment moved the SM clock
    POWER_CAPPED = "power_capped"  # SLOWER/FASTER: the code's own power draw at the power cap moved the clock
    CLOCK_UNATTRIBUTED = "clock_unattributed"  # SLOWER/FASTER: the clock moved it, nothing shows whose it was
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


def _medians_of_resamples(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The median of each row of ``values[idx]``, as ``np.median(..., axis=1)`` gives it.

    ``np.median`` partitions at the middle (both middles for even n) and at the maximum (its NaN
    check) and averages through a reduction; partitioning at the middle alone and averaging the
    two middle values in one step gives the same floats for finite values, in less time.
    """
    rows = values[idx]
    n = rows.shape[1]
    if not np.isfinite(values).all():
        return np.asarray(np.median(rows, axis=1))  # NaN/inf: np.median's own handling
    mid = n // 2
    if n % 2:
        return np.partition(rows, mid, axis=1)[:, mid]
    # After partitioning at mid alone, the value below it is the largest of the left part.
    part = np.partition(rows, mid, axis=1)
    return (part[:, :mid].max(axis=1) + part[:, mid]) / 2.0


def bootstrap_median_ratio(
    base: Values,
    cur: Values,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Ratio of medians cur / base with a percentile bootstrap interval (fixed seed: reproducible).

    Each of ``resamples`` resamples draws n indices per side and takes the median. This is the
    reference the verdicts are judged by (``median_ratio`` calls it where the decision is close).
    """
    a = np.asarray(base, dtype=float)
    b = np.asarray(cur, dtype=float)
    rng = np.random.default_rng(seed)
    ma = _medians_of_resamples(a, rng.integers(0, len(a), size=(resamples, len(a))))
    mb = _medians_of_resamples(b, rng.integers(0, len(b), size=(resamples, len(b))))
    ratios = mb / ma
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    return Interval(float(np.median(b) / np.median(a)), float(low), float(high))


def resample_medians(values: Values, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of ``resamples`` bootstrap resamples of ``values``, drawn without the resamples.

    A resample is n positions of the sorted sample drawn uniformly with replacement; position
    ``floor(n * U)`` of a uniform U on (0, 1) is such a draw, and since floor is monotone the j-th
    smallest of the n positions is ``floor(n * U_(j))``, U_(j) the j-th smallest of n uniforms:
    Beta(j, n - j + 1). Given U_(j) = u, the other n - j uniforms are uniform on (u, 1), so
    U_(j+1) = u + (1 - u) * Beta(1, n - j). The median so drawn (the middle value, or the mean of
    the two middle ones, as ``np.median`` takes it) has exactly the distribution of the median of
    n indices drawn and partitioned, for one or two draws per resample in place of n.
    """
    v = np.sort(np.asarray(values, dtype=float))
    n = len(v)
    if n == 0:
        raise ValueError("the bootstrap needs a non-empty sample")
    m = (n + 1) // 2  # the (lower) middle, 1-based
    u = rng.beta(m, n - m + 1, size=resamples)
    lo = np.minimum((u * n).astype(np.int64), n - 1)
    if n % 2:
        return v[lo]
    u2 = u + (1.0 - u) * rng.beta(1, n - m, size=resamples)
    hi = np.minimum((u2 * n).astype(np.int64), n - 1)
    return (v[lo] + v[hi]) / 2.0


#: Direct draws of resample medians per side (``median_ratio``), per resample of the reference.
DIRECT_PER_RESAMPLE = 4
#: The chance, per interval bound, that ``median_ratio``'s direct draws put the reference
#: bootstrap's bound outside the range they check the decision over.
BAND_MISS = 1e-9


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


@lru_cache(maxsize=64)
def _band(direct: int, resamples: int, k: int) -> tuple[int, int] | None:
    """1-based order statistics (i_lo, i_hi) of ``direct`` draws that bracket the k-th smallest
    of ``resamples`` independent draws of the same distribution, each side missing with chance
    at most ``BAND_MISS``; None where no such i_lo exists (the reference then decides).

    With all draws written as G^-1 of uniforms, V_(i) > U_(k) exactly when fewer than i of the
    ``direct`` uniforms fall below U_(k) ~ Beta(k, resamples - k + 1): a beta-binomial count.
    """
    n, alpha, beta = direct, float(k), float(resamples - k + 1)
    lb = _log_beta(alpha, beta)
    log_comb = [math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) for j in range(n + 1)]
    pmf = [math.exp(log_comb[j] + _log_beta(j + alpha, n - j + beta) - lb) for j in range(n + 1)]
    below = 0.0  # P(count <= i - 1) = P(V_(i) > U_(k))
    i_lo = 0
    for i in range(1, n + 1):
        below += pmf[i - 1]
        if below > BAND_MISS:
            break
        i_lo = i
    above = 0.0  # P(count >= i) = P(V_(i) < U_(k)), summed from the top
    i_hi = n + 1
    for i in range(n, 0, -1):
        above += pmf[i]
        if above > BAND_MISS:
            break
        i_hi = i
    if i_lo < 1 or i_hi > n:
        return None
    return i_lo, i_hi


def _same_side(x0: float, x1: float, limits: Sequence[float], strict_above: bool) -> bool:
    """Whether every x in [x0, x1] compares alike with every limit (``x > c``, or ``x < c``)."""
    if strict_above:
        return all((x0 > c) == (x1 > c) for c in limits)
    return all((x0 < c) == (x1 < c) for c in limits)


def median_ratio(base: Values, cur: Values, s: Settings) -> Interval:
    """The ratio-of-medians interval the verdicts judge: ``bootstrap_median_ratio``'s decision, fast.

    The interval is the percentile interval of ``DIRECT_PER_RESAMPLE * resamples`` ratios of
    resample medians drawn directly (``resample_medians``: the same bootstrap distribution G).
    From the same draws come ranges that hold, but for a chance of ``BAND_MISS`` each, the low and
    the high bound that ``bootstrap_median_ratio`` (``resamples`` resamples) would give: its
    bound at sorted position k lies between its k-th and (k+1)-th smallest ratio, and ``_band``
    brackets those by order statistics of the direct draws. ``direction`` looks at the interval
    only through ``low > c`` and ``high < c`` (c = 1, 1 + t, 1 - t) and ``width <= t``; where
    each of these comes out the same at both ends of the ranges (width: at its smallest and
    largest), every interval in them gets the verdict of the direct one, so that of the
    reference. Elsewhere (a bound close to a limit), the reference is computed and returned.
    """
    a = np.asarray(base, dtype=float)
    b = np.asarray(cur, dtype=float)

    def reference() -> Interval:
        return bootstrap_median_ratio(a, b, confidence=s.confidence, resamples=s.resamples, seed=s.seed)

    if not (np.isfinite(a).all() and np.isfinite(b).all()) or s.resamples < 2:
        return reference()
    direct = DIRECT_PER_RESAMPLE * s.resamples
    # A stream of its own, apart from the reference's index draws (seeded: reproducible).
    rng = np.random.default_rng((s.seed, 1))
    ratios = np.sort(resample_medians(b, direct, rng) / resample_medians(a, direct, rng))
    tail = (1.0 - s.confidence) / 2.0 * 100.0
    low, high = (float(x) for x in np.percentile(ratios, [tail, 100.0 - tail]))
    # np.percentile's bound at position h = q (R - 1) lies between the sorted ratios at floor(h)
    # and floor(h) + 1 (0-based), i.e. the k-th and (k+1)-th smallest, k = floor(h) + 1.
    k_low = math.floor(tail / 100.0 * (s.resamples - 1)) + 1
    k_high = math.floor((100.0 - tail) / 100.0 * (s.resamples - 1)) + 1
    if k_high + 1 > s.resamples:
        return reference()
    low_below, low_above = _band(direct, s.resamples, k_low), _band(direct, s.resamples, k_low + 1)
    high_below, high_above = _band(direct, s.resamples, k_high), _band(direct, s.resamples, k_high + 1)
    if low_below is None or low_above is None or high_below is None or high_above is None:
        return reference()
    # The ranges, 1-based order statistics of the sorted direct ratios (and the direct bounds).
    l0, l1 = min(low, float(ratios[low_below[0] - 1])), max(low, float(ratios[low_above[1] - 1]))
    h0, h1 = min(high, float(ratios[high_below[0] - 1])), max(high, float(ratios[high_above[1] - 1]))
    t = s.threshold
    limits = (1.0, 1.0 + t, 1.0 - t)
    if (
        _same_side(l0, l1, limits, strict_above=True)
        and _same_side(h0, h1, limits, strict_above=False)
        and ((h1 - l0) <= t) == ((h0 - l1) <= t)
    ):
        return Interval(float(np.median(b) / np.median(a)), low, high)
    return reference()


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
    # median_ratio proves its fast interval decides as the reference bootstrap by checking the
    # comparisons made here of iv.low (> c), iv.high (< c) and iv.width (<= t), c in 1, 1 +- t:
    # a new use of the interval here must be added to that check.
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
