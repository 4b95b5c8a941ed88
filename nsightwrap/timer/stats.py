"""Summary statistics of timing samples and the adaptive stopping rule (pure Python and numpy).

The timer hands raw samples here; nothing in this module knows about GPUs, so every decision
(when to stop, how noisy a benchmark is) can be tested with synthetic sample streams and a fake
clock.
"""

from __future__ import annotations

import enum
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from nsightwrap.core.errors import UsageError

#: Most samples taken between two checks of the stopping rule.
MAX_BATCH = 200

#: Scale of the median's confidence interval: median +- 1.57 * IQR / sqrt(n) is the ~95 %
#: interval of a boxplot notch (McGill, Tukey & Larsen 1978). It needs no normality and
#: ignores outliers, which GPU timings always have (a preemption, a clock step).
NOTCH_FACTOR = 1.57


@dataclass(frozen=True)
class Summary:
    """Summary of one benchmark's samples (same unit as the samples)."""

    n: int
    median: float
    min: float
    max: float
    mean: float
    stdev: float
    q1: float
    q3: float

    @property
    def iqr(self) -> float:
        """Interquartile range q3 - q1."""
        return self.q3 - self.q1

    @property
    def rel_iqr(self) -> float:
        """IQR / median: the spread of single samples, outliers ignored."""
        return self.iqr / self.median if self.median > 0 else math.nan

    @property
    def rel_ci(self) -> float:
        """Half-width of the median's ~95 % interval relative to the median (shrinks with n)."""
        return median_rel_ci(self.median, self.iqr, self.n)


def median_or_none(values: Sequence[float]) -> float | None:
    """Median of ``values``, None when empty (the one median of a list that may be empty)."""
    return float(statistics.median(values)) if len(values) else None


def summarize(samples: Sequence[float] | np.ndarray) -> Summary:
    """Median, min, max, mean, sample stdev and quartiles of ``samples``; NaN fields when empty."""
    a = np.asarray(samples, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, nan)
    q1, med, q3 = np.percentile(a, [25.0, 50.0, 75.0])
    stdev = float(a.std(ddof=1)) if a.size > 1 else 0.0
    return Summary(
        n=int(a.size),
        median=float(med),
        min=float(a.min()),
        max=float(a.max()),
        mean=float(a.mean()),
        stdev=stdev,
        q1=float(q1),
        q3=float(q3),
    )


def trimmed_mean(samples: Sequence[float] | np.ndarray, cut: float = 0.1) -> float:
    """Mean of ``samples`` less the lowest and highest ``cut`` of them (NaN when empty).

    For readings on a tick (CUDA events step in 32 ns ticks, docs/timer.md) of a time that does not move
    between readings, each reading is the tick below or above it at random, so their mean
    carries the part of a tick that their median loses; the cut keeps a rare slow reading out.
    """
    if not 0 <= cut < 0.5:
        raise ValueError(f"cut={cut} must be in [0, 0.5)")
    a = np.asarray(samples, dtype=float)
    a = np.sort(a[np.isfinite(a)])
    if a.size == 0:
        return math.nan
    k = int(cut * a.size)
    return float(a[k : a.size - k].mean())


def median_rel_ci(median: float, iqr: float, n: int) -> float:
    """Relative half-width of the notch interval of the median; inf when it cannot be judged."""
    if n < 2 or not median > 0:
        return math.inf
    return NOTCH_FACTOR * iqr / math.sqrt(n) / median


class StopReason(str, enum.Enum):
    """Why the sampling loop ended."""

    PRECISION = "precision"  # the median is known to the target relative precision
    BUDGET = "budget"  # the time budget ran out first
    MAX_SAMPLES = "max_samples"  # the sample cap was reached first
    THROTTLED = "throttled"  # every sample ran under the throttle threshold until the budget ran out


@dataclass(frozen=True)
class StopRule:
    """When to stop sampling.

    ``min_samples`` are always taken (unless ``max_samples`` is smaller). After that the loop
    stops as soon as the median's relative ~95 % half-width is at most ``rel_precision``, or
    ``budget_s`` seconds have passed since the measurement began, or ``max_samples`` is reached.
    Samples left out (a throttled SM clock) count against ``max_samples`` and the budget but not
    towards ``min_samples`` or the precision, so a GPU that throttles on every sample still ends.
    """

    min_samples: int = 10
    max_samples: int = 1000
    rel_precision: float = 0.005
    budget_s: float = 2.0

    def __post_init__(self) -> None:
        if self.min_samples < 1 or self.max_samples < 1:
            raise UsageError(f"min_samples={self.min_samples} and max_samples={self.max_samples} must be at least 1")
        if self.rel_precision < 0 or self.budget_s < 0:
            raise UsageError(f"rel_precision={self.rel_precision} and budget_s={self.budget_s} must not be negative")

    def decide(
        self, samples: Sequence[float] | np.ndarray, elapsed_s: float, taken: int | None = None
    ) -> StopReason | None:
        """The reason to stop now, or None to keep sampling.

        ``samples`` are the kept samples; ``taken`` counts every sample taken, those left out
        included (default: ``len(samples)``).
        """
        n = len(samples)
        total = n if taken is None else max(taken, n)
        if total >= self.max_samples:
            return StopReason.THROTTLED if n == 0 else StopReason.MAX_SAMPLES
        if elapsed_s >= self.budget_s and n == 0 and total > 0:
            return StopReason.THROTTLED
        if n < self.min_samples:
            # Not enough kept samples yet: only the budget ends the loop (after min_samples taken).
            return StopReason.BUDGET if elapsed_s >= self.budget_s and total >= self.min_samples else None
        s = summarize(samples)
        if s.rel_ci <= self.rel_precision:
            return StopReason.PRECISION
        if elapsed_s >= self.budget_s:
            return StopReason.BUDGET
        return None


@dataclass
class Stopper:
    """A StopRule applied against a clock (``time.perf_counter`` unless a test passes its own)."""

    rule: StopRule
    clock: Callable[[], float] = time.perf_counter
    _t0: float | None = field(default=None, init=False, repr=False)

    def start(self) -> None:
        """Start the budget clock."""
        self._t0 = self.clock()

    @property
    def elapsed_s(self) -> float:
        """Seconds since ``start()``."""
        if self._t0 is None:
            raise RuntimeError("Stopper.start() was not called")
        return self.clock() - self._t0

    def check(self, samples: Sequence[float] | np.ndarray, taken: int | None = None) -> StopReason | None:
        """The reason to stop now, or None (``taken``: every sample taken, see ``StopRule.decide``)."""
        return self.rule.decide(samples, self.elapsed_s, taken)

    def next_batch(self, n_done: int, per_sample_s: float, batch_s: float = 0.05) -> int:
        """How many samples to take before the next check: about ``batch_s`` of sampling,
        at least enough to reach ``min_samples``, never past ``max_samples``."""
        rule = self.rule
        room = rule.max_samples - n_done
        if room <= 0:
            return 0
        by_time = int(batch_s / per_sample_s) if per_sample_s > 0 else room
        want = max(1, by_time, rule.min_samples - n_done)
        return min(room, want, MAX_BATCH)


def split_by_clock(
    clocks: Sequence[float | None], threshold_hz: float | None
) -> tuple[list[int], list[int]]:
    """Indices of the samples kept and of those left out because their SM clock was under
    ``threshold_hz`` (a sample without a clock reading is kept: nothing says it throttled)."""
    kept: list[int] = []
    out: list[int] = []
    for i, c in enumerate(clocks):
        if threshold_hz and c is not None and math.isfinite(c) and c < threshold_hz:
            out.append(i)
        else:
            kept.append(i)
    return kept, out


#: Leading samples whose SM clock is more than this fraction under the clock the benchmark
#: settles at are still recovering from earlier work and are left out (``settling_prefix``).
SETTLE_TOLERANCE = 0.01


def settling_prefix(
    clocks: Sequence[float | None], tolerance: float | None = SETTLE_TOLERANCE
) -> tuple[int, float | None]:
    """How many leading samples ran while the SM clock was still coming back from earlier work,
    and the clock it came back to (Hz): the samples before the first one whose clock is within
    ``tolerance`` of the median clock of the later half, at most half of them.

    A bf16 GEMM timed right after some 60 ms of back-to-back calls ran its first samples
    at 1.49 GHz and its last at 1.59 GHz, and read 6% longer for it (docs/timer.md, "What ran
    before"): a median over the benchmark then depends on what the script did before it. ``(0,
    None)`` with the rule off (``tolerance`` None), without clocks or with too few of them."""
    n = len(clocks)
    later = [float(c) for c in clocks[n // 2 :] if c is not None and math.isfinite(c)]
    if tolerance is None or tolerance <= 0 or len(later) < 4:
        return 0, None
    steady = float(np.median(later))
    floor = (1.0 - tolerance) * steady
    for i, c in enumerate(clocks[: n // 2]):
        if c is not None and math.isfinite(c) and c >= floor:
            return i, steady
    return n // 2, steady
