"""The residual of a gap is judged against the larger of 10% of the gap and the timing's noise
(its measured interquartile range, at least the noise floor): a gap within the timing's own noise
cannot be judged to 10% of itself, and the report says which held it (analysis/gap/verdict.py,
``residual_allowance``). A residual over it gets a note naming what the decomposition measured and
could not place. studies/verdict_table.py counts the residual both ways.

The runs are the real H200 runs under fixtures/."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsightwrap.analysis.gap import judge, residual_allowance
from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import BenchmarkResult, Gap, GapPart, RunResult, Verdict
from nsightwrap.export.jsonio import report_to_dict
from studies import verdict_table

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


def _gap(t: float, n: float, iqr: float | None, *parts: tuple[str, float]) -> Gap:
    ps = tuple(GapPart(cause=c, ns=v, evidence={}, fix="", message="") for c, v in parts)
    return Gap(total_ns=t - n, parts=ps, residual_ns=t - n - sum(v for _, v in parts), timer_ns=t, ncu_ns=n,
               measurements={"timer_iqr_ns": iqr})  # fmt: skip


def _bench(result: RunResult, name: str) -> BenchmarkResult:
    return next(b for b in result.benchmarks if b.name == name)


@pytest.fixture(scope="module")
def example() -> RunResult:
    return analyze(RUNS / "h200-example")


def test_the_allowance_is_the_larger_of_the_share_and_the_noise() -> None:
    # A 1.5 us gap on a 60 us timing whose IQR is 2 us: the noise decides, and is named.
    a, what = residual_allowance(1500.0, 60_000.0, 2000.0)
    assert a == 2000.0 and what.startswith("the timing's measured noise") and "2.00 us" in what
    # An IQR under the noise floor (2% of the timing, at least 0.2 us): the floor.
    a, what = residual_allowance(1500.0, 60_000.0, 300.0)
    assert a == 1200.0 and what.startswith("the noise floor (1.20 us")
    # One sample: no measured spread, and the floor says so.
    a, what = residual_allowance(1500.0, 60_000.0, None)
    assert a == 1200.0 and "not measured (one sample)" in what
    # A gap large against the noise: 10% of it.
    a, what = residual_allowance(50_000.0, 60_000.0, 2000.0)
    assert a == 5000.0 and what == "10% of the gap (5.00 us)"


def test_a_residual_within_the_timings_noise_is_explained_and_says_so() -> None:
    # 40 us against ncu's 30 us, 8.8 us of it a measured cache part: the residual 1.2 us is 12% of
    # the gap, 3% of the timing and over the floor (0.8 us), but within the timing's IQR of 2 us.
    v, why = judge(_gap(40_000.0, 30_000.0, 2000.0, ("cache_state", 8800.0)), 0.1)
    assert v is Verdict.EXPLAINED
    assert "is over 10% of the gap but within the timing's measured noise" in why and "2.00 us" in why
    # The same gap with a narrow timing: only part of it explained, and the reason names 10% of the gap.
    v, why = judge(_gap(40_000.0, 30_000.0, 100.0, ("cache_state", 8800.0)), 0.1)
    assert v is Verdict.PARTLY_EXPLAINED and "is over 10% of the gap (1.00 us)" in why
    # A residual within 10% of the gap is explained with no word on the noise.
    v, why = judge(_gap(40_000.0, 30_000.0, 2000.0, ("cache_state", 9200.0)), 0.1)
    assert v is Verdict.EXPLAINED and "noise" not in why


def test_each_decomposition_records_what_its_residual_was_judged_against(example: RunResult) -> None:
    # mm_small: a 0.83 us gap whose residual (0.23 us, 28% of it) is within the timing's IQR (0.83 us).
    m = _bench(example, "mm_small").gap.measurements  # type: ignore[union-attr]
    assert m["timer_iqr_ns"] == pytest.approx(832.0, abs=1.0)
    assert m["residual_allowance_ns"] == pytest.approx(832.0, abs=1.0)
    assert m["residual_judged_against"].startswith("the timing's measured noise")
    # softmax_mlp: the noise floor of a 253 us timing (5.06 us) is over 10% of its 2.6 us gap.
    m = _bench(example, "softmax_mlp").gap.measurements  # type: ignore[union-attr]
    assert m["residual_judged_against"].startswith("the noise floor (5.06 us")


def test_a_residual_beyond_the_noise_names_a_bound_cut_by_the_clock() -> None:
    # The dirty GEMM loop ran faster under nsys than ncu's durations, which no cache state does;
    # the loop's clock is contradicted, so the clock difference between the passes is not measured.
    b = _bench(analyze(RUNS / "h200-blog"), "blog_do_bench.py:36 do_bench_cuda #3")
    (note,) = [n for n in b.notes if n.startswith("the residual ")]
    assert note.startswith("the residual -5.66 us is over the noise floor (5.57 us")
    assert "-5.66 us of it is the cache_state measurement beyond its bound" in note
    assert "a clock difference between the nsys and ncu passes, which no part measures" in note


def test_a_residual_beyond_the_noise_names_a_longer_plain_window_and_one_sample() -> None:
    b = _bench(analyze(RUNS / "h200-timer"), "linear 2048x19456x2560 bf16")
    (note,) = [n for n in b.notes if n.startswith("the residual ")]
    assert "the timing's own spread was not measured (one sample)" in note
    assert "the plain pass's window was 13.38 us longer than nsys's (296.77 us against 283.39 us)" in note
    assert "a slower clock there is not measured" in note


def test_the_study_counts_the_residual_both_ways(example: RunResult) -> None:
    rs = verdict_table.rows(report_to_dict(example, detail=True), 0.1)
    c = verdict_table.counts(rs)
    # mm_skinny and mm_small: residuals over 10% of small gaps, within the timing's noise.
    assert c == {"decomposed": 7, "strict": 5, "noise_aware": 7, "out_of_bound": 0, "explained_over": 0}
    text = verdict_table.offenders({"h200-example": rs})
    assert "| h200-example | mm_small | ok |" in text and "mm_large" not in text
    assert "within the larger of 10% of the gap and the timing's noise on 7" in text


def test_the_study_finds_a_part_out_of_its_bound() -> None:
    over = {"cause": "cache_state", "ns": -500.0, "evidence": {"loop_cache": "dirty", "bound_low_ns": 0.0,
                                                                "bound_high_ns": 13107.25}}  # fmt: skip
    assert verdict_table.out_of_bound(over) == "cache_state -0.50 us under its bound +0.00 us"
    side = {"cache_state": 0, "cause": "cache_state", "ns": 300.0, "evidence": {"loop_cache": "warm"}}
    assert verdict_table.out_of_bound(side) == "cache_state +0.30 us against its warm loop's side"
    inside = {"cause": "front_end", "ns": 1387.5, "evidence": {"bound_high_ns": 1387.5}}
    assert verdict_table.out_of_bound(inside) is None
