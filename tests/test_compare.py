"""compare's statistics and verdicts on sample sets with known answers (no I/O)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from nsightwrap.compare.clock_cause import Cause
from nsightwrap.compare.stats import (
    PRESETS,
    Reason,
    Settings,
    Verdict,
    bootstrap_median_ratio,
    mann_whitney_u,
)
from nsightwrap.compare.verdicts import Samples, Side, compare, judge


def samples(values: np.ndarray | list[float], clock_hz: float | None = 1.9e9, name: str = "b") -> Samples:
    vals = tuple(float(v) for v in values)
    cycles = None if clock_hz is None else tuple(v * clock_hz / 1e9 for v in vals)
    return Samples(name, (), vals, cycles, clock_hz)


def noisy(median: float, rel: float, n: int = 40, seed: int = 0) -> np.ndarray:
    return median * (1.0 + rel * np.random.default_rng(seed).standard_normal(n))


# ---------------------------------------------------------------- Mann-Whitney U


def test_mann_whitney_matches_scipy_documented_value() -> None:
    # scipy.stats.mannwhitneyu docs: males vs females, method="asymptotic" -> U=17, p=0.11134688653314041
    r = mann_whitney_u([19, 22, 16, 29, 24], [20, 11, 17, 12])
    assert r.u == 17.0
    assert r.p_value == pytest.approx(0.11134688653314041, abs=1e-12)


def test_mann_whitney_tie_correction_by_hand() -> None:
    # x=[1,2,2,3], y=[2,3,3,4]: average ranks give R_x = 1+3+3+6 = 13, U_x = 13 - 10 = 3;
    # mu = 8; two tie groups of 3: var = 16/12 * (9 - 48/56); z = (|3-8| - 0.5) / sqrt(var).
    r = mann_whitney_u([1, 2, 2, 3], [2, 3, 3, 4])
    var = 16 / 12 * (9 - 48 / 56)
    assert r.u == 3.0
    assert r.z == pytest.approx(-4.5 / math.sqrt(var))
    assert r.p_value == pytest.approx(math.erfc(4.5 / math.sqrt(var) / math.sqrt(2)), rel=1e-12)
    assert r.p_value == pytest.approx(0.17203, abs=1e-5)


def test_mann_whitney_separated_and_equal_samples() -> None:
    assert mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]).p_value == pytest.approx(0.012185, abs=1e-6)
    assert mann_whitney_u([5, 5, 5], [5, 5, 5]).p_value == 1.0


# ---------------------------------------------------------------- bootstrap


def test_bootstrap_is_reproducible_and_brackets_the_ratio() -> None:
    base, cur = noisy(100, 0.01, seed=1), noisy(110, 0.01, seed=2)
    a = bootstrap_median_ratio(base, cur, seed=0)
    b = bootstrap_median_ratio(base, cur, seed=0)
    assert a == b
    assert a.estimate == pytest.approx(np.median(cur) / np.median(base))
    assert a.low < a.estimate < a.high
    assert 1.09 < a.low and a.high < 1.11


# ---------------------------------------------------------------- verdicts


def test_identical_distributions_are_same() -> None:
    v = judge(samples(noisy(285e3, 0.01, seed=1)), samples(noisy(285e3, 0.01, seed=2)))
    assert v.verdict is Verdict.SAME
    assert v.reason is Reason.WITHIN_THRESHOLD
    assert abs(v.ratio.estimate - 1) < 0.01  # type: ignore[union-attr]


def test_ten_percent_slower_is_slower_in_time_and_cycles() -> None:
    base = noisy(285e3, 0.01, seed=1)
    v = judge(samples(base), samples(noisy(285e3 * 1.10, 0.01, seed=2)))
    assert v.verdict is Verdict.SLOWER
    assert v.reason is Reason.REGRESSION
    assert v.ratio is not None and v.ratio.estimate == pytest.approx(1.10, abs=0.01)
    assert v.cycles_ratio is not None and v.cycles_ratio.low > 1.05
    assert v.p_value is not None and v.p_value < 1e-6


def test_slowdown_explained_by_a_thermal_clock_drop_is_not_a_regression() -> None:
    # Time +10% while the SM clock is 10% lower for heat: cycles are unchanged (1.1 * 0.9 = 0.99).
    base = replace(samples(noisy(285e3, 0.01, seed=1), 1.98e9), throttle_reasons=())
    cur = replace(samples(noisy(285e3 * 1.10, 0.01, seed=2), 1.98e9 * 0.9), throttle_reasons=("sw_thermal",))
    v = judge(base, cur)
    assert v.verdict is Verdict.SAME
    assert v.reason is Reason.CLOCK_ONLY
    assert "1.98 GHz -> 1.78 GHz" in v.message and "held down for heat (sw_thermal)" in v.message
    assert v.cycles_ratio is not None and abs(v.cycles_ratio.estimate - 0.99) < 0.01
    assert v.clock_cause is not None and v.clock_cause.cause is Cause.ENVIRONMENT


def test_a_clock_drop_nothing_attributes_follows_time() -> None:
    # The same +10% at a 10% lower clock, but no power record: whose clock change it was is
    # unknown, and the verdict follows time; the message still names the clock.
    v = judge(
        samples(noisy(285e3, 0.01, seed=1), 1.98e9), samples(noisy(285e3 * 1.10, 0.01, seed=2), 1.98e9 * 0.9)
    )
    assert (v.verdict, v.reason) == (Verdict.SLOWER, Reason.CLOCK_UNATTRIBUTED)
    assert "1.98 GHz -> 1.78 GHz" in v.message and "no energy per call recorded" in v.message
    assert v.elasticity_source == "assumed" and "e = 1 taken" in v.message


def test_a_memory_bound_benchmark_is_not_excused_by_a_lower_clock() -> None:
    # Elasticity 0 (its time does not follow the SM clock): +10% at a 10% lower, thermal clock
    # is +10% at the baseline's clock too, a regression; with e = 1 it would be clock_only.
    base = replace(samples(noisy(50e3, 0.005, seed=1), 1.98e9), throttle_reasons=(), elasticity=0.0,
                   elasticity_source="measured")  # fmt: skip
    cur = replace(samples(noisy(55e3, 0.005, seed=2), 1.98e9 * 0.9), throttle_reasons=("sw_thermal",))
    v = judge(base, cur)
    assert (v.verdict, v.reason) == (Verdict.SLOWER, Reason.REGRESSION), v.message
    assert v.elasticity == 0.0 and v.elasticity_source == "measured"
    assert v.carried_ratio is not None and v.carried_ratio.low > 1.05
    assert "clock elasticity 0.00, measured" in v.message
    compute = judge(replace(base, elasticity=1.0), replace(cur, elasticity=1.0))
    assert compute.reason is Reason.CLOCK_ONLY


def test_elasticity_carries_a_partly_clock_bound_benchmark() -> None:
    # e = 0.5: at a clock 0.9x, time ~ 0.9 ** -0.5 = 1.054; the current run is exactly that.
    base = replace(samples(noisy(100e3, 0.002, seed=1), 1.9e9), throttle_reasons=(), elasticity=0.5)
    cur = replace(samples(noisy(100e3 * 0.9**-0.5, 0.002, seed=2), 1.9e9 * 0.9), throttle_reasons=("hw_slowdown",),
                  elasticity=0.5)  # fmt: skip
    v = judge(base, cur, replace(PRESETS["default"], threshold=0.03))
    assert v.carried_ratio is not None and v.carried_ratio.estimate == pytest.approx(1.0, abs=0.005)
    assert (v.verdict, v.reason) == (Verdict.SAME, Reason.CLOCK_ONLY), v.message


def test_heavy_noise_is_ambiguous() -> None:
    v = judge(samples(noisy(100e3, 0.01, seed=1)), samples(noisy(108e3, 0.30, seed=2)))
    assert v.verdict is Verdict.AMBIGUOUS
    assert v.reason is Reason.NOISY
    assert v.ratio is not None and v.ratio.width > 0.05


def test_faster_is_faster() -> None:
    v = judge(samples(noisy(30e3, 0.01, seed=1)), samples(noisy(30e3 * 0.8, 0.01, seed=2)))
    assert v.verdict is Verdict.FASTER
    assert v.reason is Reason.IMPROVEMENT
    assert v.ratio is not None and v.ratio.estimate == pytest.approx(0.8, abs=0.01)


def test_too_few_samples_is_ambiguous() -> None:
    v = judge(samples([1.0, 1.0, 1.0, 1.0]), samples([2.0] * 10))
    assert (v.verdict, v.reason) == (Verdict.AMBIGUOUS, Reason.TOO_FEW_SAMPLES)
    assert "4 baseline and 10 current samples" in v.message
    assert v.ratio is None


def test_slower_without_clock_says_so() -> None:
    v = judge(samples(noisy(100e3, 0.01, seed=1), None), samples(noisy(120e3, 0.01, seed=2), None))
    assert (v.verdict, v.reason) == (Verdict.SLOWER, Reason.REGRESSION_CLOCK_UNKNOWN)
    assert "clock not recorded" in v.message


def test_cycles_moving_less_than_time_is_ambiguous() -> None:
    base_t = noisy(100e3, 0.005, seed=1)
    cur_t = noisy(112e3, 0.005, seed=2)
    base = Samples("b", (), tuple(base_t), tuple(base_t * 1.9), 1.9e9)
    # cycles +6% but too noisy to tell: part of the slowdown follows the clock.
    cur = Samples("b", (), tuple(cur_t), tuple(noisy(100e3 * 1.9 * 1.06, 0.08, seed=3)), 1.8e9)
    v = judge(replace(base, throttle_reasons=()), replace(cur, throttle_reasons=("hw_thermal",)))
    assert (v.verdict, v.reason) == (Verdict.AMBIGUOUS, Reason.CLOCK_PARTIAL)
    # Without a record of whose clock change it was, the verdict follows time.
    assert (judge(base, cur).verdict, judge(base, cur).reason) == (Verdict.SLOWER, Reason.CLOCK_UNATTRIBUTED)


def test_change_just_past_the_threshold_with_a_steady_clock_is_not_blamed_on_the_clock() -> None:
    base_t = noisy(100e3, 0.002, seed=1)
    cur_t = noisy(105.5e3, 0.002, seed=2)
    base = Samples("b", (), tuple(base_t), tuple(base_t * 1.9), 1.9e9)
    # clock 1% lower: cycles +4.5%, within the threshold, but the clock explains only ~1 point of 5.5
    cur = Samples("b", (), tuple(cur_t), tuple(cur_t * 1.9 * 1.045 / 1.055), 1.9e9 * 1.045 / 1.055)
    v = judge(replace(base, throttle_reasons=()), replace(cur, throttle_reasons=("sw_thermal",)))
    assert (v.verdict, v.reason) == (Verdict.AMBIGUOUS, Reason.CLOCK_PARTIAL)


def test_time_same_but_cycles_moved_is_same_with_its_own_reason() -> None:
    # +10% cycles hidden by a 10% higher clock (or a memory-bound kernel): time is unchanged.
    t = noisy(100e3, 0.002, seed=1)
    v = judge(samples(t, 1.8e9), samples(noisy(100e3, 0.002, seed=2), 1.98e9))
    assert (v.verdict, v.reason) == (Verdict.SAME, Reason.CYCLES_DIFFER)
    assert "at the baseline's clock +10.0%" in v.message and "1.80 GHz -> 1.98 GHz" in v.message


def test_small_significant_change_depends_on_the_threshold() -> None:
    base, cur = samples(noisy(100e3, 0.002, seed=1)), samples(noisy(103e3, 0.002, seed=2))
    assert judge(base, cur, PRESETS["default"]).verdict is Verdict.SAME
    assert judge(base, cur, PRESETS["tight"]).verdict is Verdict.SLOWER
    assert judge(base, cur, replace(Settings(), threshold=0.02)).reason is Reason.REGRESSION


def test_real_h200_samples_with_warmup_outliers(ref_dir: Path) -> None:
    # 20 naive CUDA-event samples per benchmark from the H200, warm-up outliers included
    # (mm_small: 260 us first sample against a 17 us median).
    doc = json.loads((ref_dir / "events.json").read_text())
    expect = {  # benchmark: (vs itself reversed, vs itself x1.10)
        "mm_small": (Verdict.AMBIGUOUS, Verdict.AMBIGUOUS),  # +-4.8% interval: too noisy for 5%
        "mm_skinny": (Verdict.AMBIGUOUS, Verdict.SLOWER),  # noisy, but +10% is past it: [+6.8%, +13.2%]
        "mm_large": (Verdict.SAME, Verdict.SLOWER),
        "copy_1g": (Verdict.SAME, Verdict.SLOWER),
    }
    for name, (aa, ab) in expect.items():
        ns = np.asarray(doc["benchmarks"][name]["times_ms"]) * 1e6
        same = judge(samples(ns, None), samples(ns[::-1], None))
        assert same.verdict is aa, (name, same.message)
        assert same.ratio is not None and same.ratio.estimate == 1.0
        slower = judge(samples(ns, None), samples(ns * 1.10, None))
        assert slower.verdict is ab, (name, slower.message)
    mm_small = np.asarray(doc["benchmarks"]["mm_small"]["times_ms"]) * 1e6
    assert judge(samples(mm_small), samples(mm_small[::-1])).reason is Reason.NOISY


# ---------------------------------------------------------------- whole comparisons


def test_compare_matches_by_name_and_params_and_lists_added_removed() -> None:
    def s(name: str, params: tuple[tuple[str, str], ...], scale: float, seed: int) -> Samples:
        v = tuple(noisy(50e3 * scale, 0.005, seed=seed))
        return Samples(name, params, v, tuple(x * 1.9 for x in v), 1.9e9)

    base = Side(
        "a",
        "NVIDIA H200",
        (s("mm", (("m", "64"), ("n", "8")), 1.0, 1), s("old", (), 1.0, 2), s("x", (), 1.0, 3)),
    )
    cur = Side(
        "b",
        "NVIDIA H200",
        (s("new", (), 1.0, 4), s("x", (), 1.21, 5), s("mm", (("n", "8"), ("m", "64")), 1.0, 6)),
    )
    c = compare(base, cur)
    assert [v.key for v in c.verdicts] == ["mm[m=64,n=8]", "x"]
    assert c.added == ("new",)
    assert c.removed == ("old",)
    assert [v.verdict for v in c.verdicts] == [Verdict.SAME, Verdict.SLOWER]
    assert c.counts() == {Verdict.SAME: 1, Verdict.FASTER: 0, Verdict.SLOWER: 1, Verdict.AMBIGUOUS: 0}
    ratios = [v.ratio.estimate for v in c.verdicts if v.ratio is not None]
    assert c.geomean_ratio == pytest.approx(math.sqrt(ratios[0] * ratios[1]))
    assert c.geomean_ratio == pytest.approx(1.1, abs=0.01)


def test_report_timings_are_compared_in_cycles_at_the_benchmarks_measured_clock() -> None:
    """A captured timing's cycles are counted at the clock measured on the GPU inside its kernels
    (the clock its ratio and verdict use), not at nvidia-smi's reading beside the loop: on the
    torchrun worker's sustained loop the GPC clock averaged 1.34 GHz, nvidia-smi said 1.50."""
    from nsightwrap.analysis.load import analyze
    from nsightwrap.compare.sides import side_from_report
    from nsightwrap.export.jsonio import report_to_dict

    run = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-worker"
    doc = report_to_dict(analyze(run))
    entry = {b["name"]: b for b in doc["benchmarks"]}["worker.py:21 timed #2"]
    assert entry["timer"]["sm_clock_hz"] == 1.5e9 and "nvidia-smi" in entry["timer"]["clock_source"]
    assert "nsys GPU metrics" in entry["ref_clock_source"]
    side = side_from_report(doc, label="base", metric="timer", where="report.json")
    got = {b.name: b for b in side.benchmarks}
    for name in ("worker.py:21 timed #1", "worker.py:21 timed #2"):
        ref = {b["name"]: b for b in doc["benchmarks"]}[name]["ref_clock_hz"]
        b = got[name]
        assert b.cycles is not None and b.clock_hz == pytest.approx(ref, rel=1e-9)
        assert b.cycles[0] == pytest.approx(b.values_ns[0] * ref / 1e9, rel=1e-9)
