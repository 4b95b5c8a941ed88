"""Summary statistics and the adaptive stopping rule, on real H200 samples and synthetic streams."""

from __future__ import annotations

import json
import math

import pytest

from nsightwrap.core.errors import UsageError
from nsightwrap.core.jsonfile import finite_number
from nsightwrap.timer.stats import (
    Stopper,
    StopReason,
    StopRule,
    median_or_none,
    median_rel_ci,
    summarize,
    trimmed_mean,
)


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _ref_samples_ns(ref_dir, name: str) -> list[float]:
    doc = json.loads((ref_dir / "events.json").read_text())
    return [t * 1e6 for t in doc["benchmarks"][name]["times_ms"]]


def test_summary_of_real_h200_samples_matches_recorded_median(ref_dir) -> None:
    s = summarize(_ref_samples_ns(ref_dir, "mm_small"))
    assert s.n == 20
    # events.json recorded statistics.median of the same samples
    assert s.median == pytest.approx(17312.0005, abs=1e-3)
    assert s.min == pytest.approx(16640.0000, abs=1e-3)
    assert s.max == pytest.approx(260383.9934, abs=1e-3)
    assert s.iqr == pytest.approx(2543.9989, abs=1e-3)
    # one 260 us first sample: the mean is twice the median, the median does not care
    assert s.mean == pytest.approx(33283.1997, abs=1e-3)
    assert s.rel_iqr == pytest.approx(0.14695, abs=1e-4)


def test_summary_small_cases() -> None:
    s = summarize([3.0, 1.0, 2.0, 4.0])
    assert (s.n, s.median, s.min, s.max, s.mean) == (4, 2.5, 1.0, 4.0, 2.5)
    assert s.q1 == 1.75 and s.q3 == 3.25 and s.iqr == 1.5
    assert s.stdev == pytest.approx(math.sqrt(5 / 3))
    one = summarize([7.0])
    assert one.stdev == 0.0 and one.rel_ci == math.inf
    empty = summarize([])
    assert empty.n == 0 and math.isnan(empty.median)
    assert summarize([1.0, float("nan"), 3.0]).n == 2


def test_median_rel_ci_shrinks_with_sqrt_n() -> None:
    assert median_rel_ci(100.0, 10.0, 4) == pytest.approx(1.57 * 10 / 2 / 100)
    assert median_rel_ci(100.0, 10.0, 400) == pytest.approx(median_rel_ci(100.0, 10.0, 4) / 10)
    assert median_rel_ci(0.0, 1.0, 10) == math.inf


def test_rule_takes_min_samples_even_when_precise() -> None:
    rule = StopRule(min_samples=10, max_samples=100, rel_precision=0.01, budget_s=1.0)
    flat = [1000.0] * 9
    assert rule.decide(flat, elapsed_s=0.0) is None
    assert rule.decide(flat, elapsed_s=99.0) is None  # the budget does not cut below min_samples
    assert rule.decide([*flat, 1000.0], elapsed_s=0.0) is StopReason.PRECISION


def test_rule_stops_on_precision_for_real_compute_bound_stream(ref_dir) -> None:
    rule = StopRule(min_samples=5, max_samples=1000, rel_precision=0.01, budget_s=100.0)
    stream = _ref_samples_ns(ref_dir, "mm_large")
    stops = [n for n in range(1, len(stream) + 1) if rule.decide(stream[:n], 0.0) is not None]
    assert stops[0] == 5
    # ...but the noisy, launch-bound mm_small stream never reaches 1 % in 20 samples
    small = _ref_samples_ns(ref_dir, "mm_small")
    assert all(rule.decide(small[:n], 0.0) is None for n in range(1, 21))


def test_rule_budget_and_max() -> None:
    noisy = [1000.0, 2000.0, 1500.0, 3000.0, 1200.0] * 4  # rel_ci ~ 0.4: never precise enough
    rule = StopRule(min_samples=5, max_samples=20, rel_precision=0.001, budget_s=2.0)
    assert rule.decide(noisy[:10], elapsed_s=1.99) is None
    assert rule.decide(noisy[:10], elapsed_s=2.0) is StopReason.BUDGET
    assert rule.decide(noisy, elapsed_s=0.0) is StopReason.MAX_SAMPLES
    # max_samples wins over min_samples when smaller
    assert StopRule(min_samples=50, max_samples=3).decide([1.0, 2.0, 3.0], 0.0) is StopReason.MAX_SAMPLES


def test_rule_rejects_nonsense() -> None:
    with pytest.raises(UsageError):
        StopRule(min_samples=0)
    with pytest.raises(UsageError):
        StopRule(rel_precision=-1)


def test_stopper_with_fake_clock_drives_budget() -> None:
    clock = FakeClock()
    stopper = Stopper(
        StopRule(min_samples=3, max_samples=1000, rel_precision=1e-6, budget_s=0.5), clock=clock
    )
    with pytest.raises(RuntimeError):
        _ = stopper.elapsed_s
    stopper.start()
    samples: list[float] = []
    reasons = []
    for i in range(100):
        samples.append(1000.0 + (i % 7) * 10)  # deterministic jitter, never within 1e-6
        clock.now += 0.01  # each sample "takes" 10 ms
        reasons.append(stopper.check(samples))
        if reasons[-1] is not None:
            break
    assert reasons[-1] is StopReason.BUDGET
    assert len(samples) == 50
    assert stopper.elapsed_s == pytest.approx(0.5)


def test_next_batch_sizes() -> None:
    stopper = Stopper(StopRule(min_samples=10, max_samples=120), clock=FakeClock())
    assert stopper.next_batch(0, per_sample_s=0.1) == 10  # reach min_samples first
    assert stopper.next_batch(10, per_sample_s=0.001) == 50  # ~50 ms of work
    assert stopper.next_batch(10, per_sample_s=1e-6) == 110  # capped by max_samples
    assert stopper.next_batch(10, per_sample_s=1.0) == 1
    assert stopper.next_batch(120, per_sample_s=1.0) == 0


def test_trimmed_mean_keeps_the_part_of_a_tick_that_the_median_loses() -> None:
    # An empty event window of 1.28 us read on 32 ns ticks: 1.248 one reading in three, 1.280 one
    # in three, 1.312 one in three, and one slow reading. The median is one tick; the trimmed
    # mean moves with the share of each tick and ignores the slow one.
    reads = [1248.0] * 19 + [1280.0] * 20 + [1312.0] * 20 + [9000.0]
    assert summarize(reads).median == 1280.0
    assert trimmed_mean(reads) == pytest.approx(1280.0, abs=2.0)
    more_high = [1248.0] * 15 + [1280.0] * 14 + [1312.0] * 30 + [9000.0]
    assert summarize(more_high).median == 1312.0  # the median steps a whole tick
    assert 1285.0 < trimmed_mean(more_high) < 1300.0  # the trimmed mean moves part of one
    assert trimmed_mean(reads, cut=0.0) > 1400.0  # without the cut the slow reading weighs in
    assert math.isnan(trimmed_mean([]))
    with pytest.raises(ValueError):
        trimmed_mean(reads, cut=0.5)


def test_median_or_none_is_none_only_for_no_values() -> None:
    assert median_or_none([]) is None and median_or_none(()) is None
    assert median_or_none([3.0, 1.0, 2.0, 10.0]) == 2.5 and median_or_none([0.0]) == 0.0


def test_a_json_number_is_a_finite_float_or_none() -> None:
    assert finite_number(3) == 3.0 and isinstance(finite_number(3), float) and finite_number(-0.5) == -0.5
    for v in (None, True, "3", math.nan, math.inf, [1.0]):
        assert finite_number(v) is None, v
