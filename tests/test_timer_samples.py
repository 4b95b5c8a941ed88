"""The timer's per-sample machinery on CPU: stamp clocks, throttled samples and the stopping
rule, the CUPTI kernel-time attribution, reason codes, and the sidecar fields they fill."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from nsightwrap.core.errors import UsageError
from nsightwrap.parsers.sidecar import read_sidecar
from nsightwrap.timer import BenchResult, sidecar_path, write_sidecar
from nsightwrap.timer.kerneltime import DeviceOp, split_calls
from nsightwrap.timer.result import Reason
from nsightwrap.timer.stamps import STAMP_KERNEL, clocks_from_stamps
from nsightwrap.timer.stats import Stopper, StopReason, StopRule, settling_prefix, split_by_clock

DEVICE = {"name": "NVIDIA H200", "index": 0, "sm_count": 132, "l2_bytes": 62914560}


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# ------------------------------------------------------------------ stamps


def test_clock_from_globaltimer_and_clock64_pairs() -> None:
    # sample 0: 30 us between the stamps, 47 400 cycles -> 1.58 GHz; sample 1: SM 0 did not write
    # its second stamp (0); sample 2: a counter that went backwards; sample 3: 2 us at 1.98 GHz
    raw = [
        1_000_000, 5_000, 1_030_000, 52_400,
        2_000_000, 9_000, 0, 0,
        3_000_000, 9_000, 3_010_000, 8_000,
        4_000_000, 100, 4_002_000, 4_060,
    ]  # fmt: skip
    clocks, spans = clocks_from_stamps(np.array(raw, dtype=np.int64))
    assert clocks[0] == pytest.approx(1.58e9) and spans[0] == 30_000.0
    assert clocks[1] is None and spans[1] is None
    assert clocks[2] is None
    assert clocks[3] == pytest.approx(1.98e9) and spans[3] == 2_000.0


def test_samples_under_the_threshold_are_split_off() -> None:
    kept, out = split_by_clock([1.9e9, None, 1.2e9, 1.49e9, math.nan, 1.48e9], 0.75 * 1.98e9)
    assert kept == [0, 1, 3, 4] and out == [2, 5]  # 1.485 GHz: 1.49 stays, 1.48 goes
    assert split_by_clock([1.0e9, 1.2e9], None) == ([0, 1], [])  # threshold off: all kept


# ------------------------------------------------------------------ the clock settling


def test_first_samples_under_the_settled_clock_are_the_settling_prefix() -> None:
    # A GEMM timed right after back-to-back work: its clock comes back from 1.49 to 1.59 GHz.
    coming_back = [1.49e9, 1.52e9, None, 1.55e9, 1.58e9, 1.59e9, 1.55e9] + [1.59e9] * 13
    first, settled = settling_prefix(coming_back, 0.01)
    assert settled == pytest.approx(1.59e9)
    assert first == 4  # 1.58 GHz is within 1% of 1.59; a later dip (1.55, index 6) stays in
    # steady samples with the ordinary jitter: none left out
    assert settling_prefix([1.59e9, 1.585e9, 1.595e9, 1.59e9] * 5, 0.01)[0] == 0
    # a clock that falls as the GPU heats during the benchmark: the first samples are no outliers
    assert settling_prefix([1.98e9 - 5e6 * i for i in range(20)], 0.01)[0] == 0
    # at most half the samples; off, without clocks or with too few of them: nothing
    assert settling_prefix([1.0e9] * 10 + [1.5e9] * 4 + [1.6e9] * 6, 0.01)[0] == 10
    assert settling_prefix(coming_back, None) == (0, None)
    assert settling_prefix([None] * 20, 0.01) == (0, None)
    assert settling_prefix([1.4e9, 1.5e9, 1.6e9, 1.6e9, 1.6e9], 0.01) == (0, None)


class _ReadStamps:
    """The stamp buffer of a GPU run as ``Stamps.read`` returns it: a clock per sample."""

    def __init__(self, clocks: list[float | None]) -> None:
        self.clocks = clocks

    def read(self, n: int) -> tuple[list[float | None], list[float | None]]:
        return list(self.clocks[:n]), [30_000.0] * n


def test_settling_samples_are_left_out_of_the_statistics_and_kept_apart() -> None:
    from nsightwrap.timer.loop import MeasureSettings, _finish, _Loop, _Setup, _split
    from nsightwrap.timer.nvml import NvmlSampler

    clocks: list[float | None] = [1.49e9, 1.52e9, 1.55e9, 1.0e9] + [1.59e9] * 16
    # per call, ns: the duration follows the clock (a compute-bound kernel)
    per_call = [178_000.0 * 1.59e9 / c if c else 178_000.0 for c in clocks]
    loop = _Loop(raw_ns=[v + 1300.0 for v in per_call], per_call_ns=per_call,
                 windows=[(0.001 * i, 0.001 * i + 0.0002) for i in range(len(clocks))])  # fmt: skip
    _split(loop, _ReadStamps(clocks), 0.75 * 1.98e9, 0.01)
    assert loop.settling == [0, 1, 2] and loop.rejected == [3] and loop.kept == list(range(4, 20))
    rule = StopRule(min_samples=10, max_samples=1000, rel_precision=0.005, budget_s=1.0)
    settings = MeasureSettings("gemm", rule=rule, settle_tolerance=0.01)
    setup = _Setup(max_sm_clock_hz=1.98e9, throttle_threshold_hz=0.75 * 1.98e9)
    with NvmlSampler(None) as sampler:
        pass
    r = _finish(settings, setup, loop, sampler)
    assert r.n == 16 and r.median_ns == pytest.approx(178_000.0)  # the slow first samples are out
    assert r.throttled == 1 and r.method["settling_samples"] == 3
    assert r.method["settling_ns"] == pytest.approx(per_call[:3]) and r.method["settled_clock_hz"] == 1.59e9
    assert r.reasons[:2] == (Reason.THROTTLED_SAMPLES_LEFT_OUT.value, Reason.SETTLING_SAMPLES_LEFT_OUT.value)
    # the method record names the settings it was measured with, from the one settings object
    assert r.method["pass"] == "standalone" and r.method["settle_tolerance"] == 0.01
    assert r.method["throttle_threshold"] == 0.75 and r.method["budget_s"] == 1.0
    assert "first 3 left out (clock settling)" in str(r)
    # the rule off: every unthrottled sample counts, the slow ones raise the median
    _split(loop, _ReadStamps(clocks), 0.75 * 1.98e9, None)
    assert loop.settling == [] and len(loop.kept) == 19


# ------------------------------------------------------------------ stopping with throttled samples


def test_throttled_samples_count_against_the_cap_and_budget_only() -> None:
    rule = StopRule(min_samples=10, max_samples=50, rel_precision=0.01, budget_s=1.0)
    steady = [1000.0] * 10
    # 10 kept of 40 taken, precise: stops for precision
    assert rule.decide(steady, 0.1, taken=40) is StopReason.PRECISION
    # 5 kept of 40 taken: fewer than min_samples kept, keep going while the budget lasts
    assert rule.decide(steady[:5], 0.1, taken=40) is None
    assert rule.decide(steady[:5], 1.5, taken=40) is StopReason.BUDGET
    # nothing kept: the cap or the budget ends it as THROTTLED, never a hang
    assert rule.decide([], 0.1, taken=50) is StopReason.THROTTLED
    assert rule.decide([], 1.5, taken=12) is StopReason.THROTTLED
    assert rule.decide([], 0.1, taken=12) is None
    # min_samples is still taken before the budget counts
    assert rule.decide([], 1.5, taken=0) is None


def test_a_stopper_over_a_throttling_gpu_ends_at_its_budget() -> None:
    clock = FakeClock()
    st = Stopper(StopRule(min_samples=5, max_samples=10_000, rel_precision=0.001, budget_s=0.5), clock=clock)
    st.start()
    taken, reason = 0, None
    while reason is None:
        taken += st.next_batch(taken, 0.001)
        clock.now += 0.05  # every sample throttled: nothing is kept
        reason = st.check([], taken=taken)
    assert reason is StopReason.THROTTLED and 0.5 <= clock.now < 0.6


# ------------------------------------------------------------------ CUPTI kernel time


def _stamp(t: float) -> DeviceOp:
    return DeviceOp(STAMP_KERNEL, t, t + 2.0)


def test_kernels_between_each_calls_two_stamps_are_that_call() -> None:
    ops = [
        DeviceOp("spin_kernel", 0.0, 100.0),  # the hold and the flush come before the first stamp
        DeviceOp("vectorized_elementwise_kernel<FillFunctor>", 100.0, 130.0),
        DeviceOp("reduce_kernel", 130.0, 160.0),
        _stamp(160.0),
        DeviceOp("vectorized_elementwise_kernel<AddFunctor>", 170.0, 171.2),
        _stamp(190.0),
        DeviceOp("spin_kernel", 200.0, 300.0),
        _stamp(360.0),
        DeviceOp("gemm_kernel_a", 370.0, 380.0),
        DeviceOp("Memcpy DtoD (Device -> Device)", 380.0, 381.0),
        DeviceOp("gemm_kernel_b", 381.0, 385.5),
        _stamp(400.0),
    ]
    got = split_calls(list(reversed(ops)), 2)  # any order in: sorted by start time
    assert got is not None
    assert got.kernel_ns == pytest.approx((1200.0, 14_500.0))
    assert got.kernels == (1, 2) and got.copies == (0, 1)
    assert got.copy_ns == pytest.approx((0.0, 1000.0))  # the memcpy's own time, apart from the kernels
    assert split_calls(ops, 3) is None  # fewer stamps than calls: no attribution


# ------------------------------------------------------------------ result fields and sidecar


def _result(**kw: object) -> BenchResult:
    method = {"flush_l2": True, "hold_queue": True, "overhead_ns": 1300.0, "calls_per_sample": 1,
              "throttle_threshold_hz": 1.485e9}  # fmt: skip
    return BenchResult.from_samples(
        "add_4k", [2300.0, 2310.0, 2290.0, 2305.0], sm_clock_hz=1.9e9, clock_source="stamps",
        sample_clock_hz=(1.9e9, 1.91e9, None, 1.89e9), throttled=2, method=method,
        rejected_ns=(2600.0, 2650.0), rejected_clock_hz=(1.2e9, 1.3e9), kernel_ns=1220.0,
        kernel_samples_ns=(1210.0, 1220.0, 1230.0),
        reasons=(Reason.THROTTLED_SAMPLES_LEFT_OUT.value, Reason.PRECISION_NOT_REACHED.value), **kw,
    )  # fmt: skip


def test_result_text_shows_kernel_time_throttled_samples_and_reasons() -> None:
    text = str(_result())
    assert "kernel 1.22 us (CUPTI)" in text
    assert "2 samples left out (SM clock under 1.49 GHz)" in text
    assert text.endswith("[throttled_samples_left_out, precision_not_reached]")
    assert _result().median_ns == pytest.approx(2302.5)  # the left-out samples are not in it


def test_result_text_shows_the_calls_memset_beside_the_kernel_time() -> None:
    """A call that makes a memset (cuBLAS before its cooperative GEMMs) says so: the event window
    holds it and ncu never shows it."""
    r = _result()
    with_copy = replace(r, method={**r.method, "kernel_time": {"copies_per_call": 1.0, "copy_ns_per_call": 950.0}})
    assert "kernel 1.22 us + 1 memcpy/memset 950 ns (CUPTI)" in str(with_copy)
    older = replace(r, method={**r.method, "kernel_time": {"copies_per_call": 1.0}})  # count, no duration
    assert "kernel 1.22 us + 1 memcpy/memset (CUPTI)" in str(older)
    none = replace(r, method={**r.method, "kernel_time": {"copies_per_call": 0.0, "copy_ns_per_call": 0.0}})
    assert "kernel 1.22 us (CUPTI)" in str(none)


def test_sidecar_keeps_the_new_fields(tmp_path) -> None:
    r = _result()
    path = sidecar_path(tmp_path, pid=7)
    write_sidecar(path, [r], DEVICE, "2.11.0+cu130")
    doc = json.loads(path.read_text())
    b = doc["benchmarks"][0]
    assert b["rejected_ns"] == [2600.0, 2650.0] and b["rejected_clock_hz"] == [1.2e9, 1.3e9]
    assert b["kernel_ns"] == 1220.0 and b["kernel_samples_ns"] == [1210.0, 1220.0, 1230.0]
    assert b["sample_clock_hz"][2] is None and b["throttled"] == 2
    assert b["reasons"] == ["throttled_samples_left_out", "precision_not_reached"]
    assert read_sidecar(path).benchmarks == (r,)


def test_an_old_sidecar_entry_reads_with_defaults() -> None:
    d = _result().to_dict()
    for key in ("rejected_ns", "rejected_clock_hz", "kernel_ns", "kernel_samples_ns", "reasons"):
        del d[key]
    old = BenchResult.from_dict(d)
    assert old.kernel_ns is None and old.rejected_ns == () and old.reasons == ()


def test_analysis_reads_the_timer_fields(tmp_path) -> None:
    from nsightwrap.analysis.load import _spec

    entry = _result().to_dict()
    spec = _spec(entry, "test")
    assert spec.timer is not None
    t = spec.timer
    assert (t.kernel_ns, t.throttled, t.throttle_threshold_hz) == (1220.0, 2, 1.485e9)
    assert t.rejected_ns == (2600.0, 2650.0) and t.reasons[0] == "throttled_samples_left_out"
    assert (t.settling, t.settled_clock_hz) == (0, None)
    entry["method"] = {**entry["method"], "settling_samples": 3, "settled_clock_hz": 1.59e9}
    assert (_spec(entry, "test").timer.settling, _spec(entry, "test").timer.settled_clock_hz) == (3, 1.59e9)  # type: ignore[union-attr]
    # a version-1 entry: 'throttled' counted NVML-flagged samples that are still in samples_ns
    del entry["rejected_ns"]
    assert _spec(entry, "test").timer.throttled == 0  # type: ignore[union-attr]


def test_bad_throttle_threshold_is_a_usage_error() -> None:
    import nsightwrap as nw

    with pytest.raises(UsageError, match="throttle_threshold=1.5"):
        nw.bench(lambda: None, throttle_threshold=1.5)
    with pytest.raises(UsageError, match="settle_tolerance=-0.1"):
        nw.bench(lambda: None, settle_tolerance=-0.1)
