"""Reconciliation on the H200 reference captures and on constructed ncu rows with known clocks."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from refrun import build_run_dir

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import BenchmarkResult, CauseCode, RunResult, TimerStats, Verdict
from nsightwrap.analysis.reconcile import BenchmarkSpec, base_name, ncu_stats, nsys_stats, reconcile


@pytest.fixture(scope="module")
def ref_result(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return analyze(build_run_dir(tmp_path_factory.mktemp("ref")))


def _bench(result: RunResult, name: str) -> BenchmarkResult:
    return next(b for b in result.benchmarks if b.name == name)


def _codes(b: BenchmarkResult) -> set[CauseCode]:
    return {c.code for c in b.causes}


def test_reference_benchmarks_and_clock(ref_result: RunResult) -> None:
    assert [b.name for b in ref_result.benchmarks] == ["mm_small", "mm_skinny", "mm_large", "copy_1g", "softmax_mlp"]
    assert ref_result.timer_found
    for b in ref_result.benchmarks:
        # No clock in the sidecar: the busy nvidia-smi samples of the plain pass (1980 MHz).
        assert b.ref_clock_hz == 1.98e9
        assert b.ref_clock_source == "plain (nvidia-smi samples)"


def test_mm_small_front_end_and_cache_state(ref_result: RunResult) -> None:
    b = _bench(ref_result, "mm_small")
    assert b.verdict is Verdict.FLAGGED
    assert b.timer is not None and b.timer.median_ns == pytest.approx(17_312.0, abs=1)
    assert b.ncu is not None and b.ncu.iterations_ns == (13_024.0, 13_920.0, 12_992.0)
    assert b.ncu.excluded_kernels == 3  # the FillFunctor flushes sit outside mm_small/iter<i>
    assert b.ncu.normalized_ns == 13_024.0  # DRAM-bound (17% SM vs 55% memory): not rescaled
    assert b.ratio == pytest.approx(1.329, abs=0.002)
    # The events' own cost and the dirty-L2 write-back after the workload's zero_() flush; the
    # queue seldom ran dry (the host queues ahead of 13 us kernels), so no launch-bound part.
    assert _codes(b) == {CauseCode.FRONT_END, CauseCode.CACHE_STATE}
    cache = next(c for c in b.causes if c.code is CauseCode.CACHE_STATE)
    # nsys figures of the decomposition: means over the middle half of the iterations.
    assert cache.evidence["nsys_kernel_ns"] == pytest.approx(14_431.5, rel=0.01)
    assert cache.evidence["part_ns"] == pytest.approx(cache.evidence["nsys_kernel_ns"] - 13_024.0, abs=0.25)
    assert b.gap is not None and b.gap.total_ns == pytest.approx(17_312.0 - 13_024.0, abs=1)
    front = next(p for p in b.gap.parts if p.cause == "front_end")
    assert front.evidence["empty_window_subtracted_ns"] == 0.0  # the workload subtracts nothing
    assert 1_500 < front.ns < 3_500
    assert any("DRAM-bound" in n and "1.791 GHz" in n for n in b.notes)


def test_mm_skinny_is_memory_bound_with_dirty_flush(ref_result: RunResult) -> None:
    b = _bench(ref_result, "mm_skinny")
    # The workload's own zero_() flush leaves dirty lines: physical, no error of the timing.
    assert b.verdict is Verdict.EXPLAINED and b.causes[0].code is CauseCode.CACHE_STATE
    assert all(k.clock_model.value == "memory" for k in b.ncu.kernels)  # type: ignore[union-attr]
    assert CauseCode.CACHE_STATE in _codes(b)
    cache = next(c for c in b.causes if c.code is CauseCode.CACHE_STATE)
    assert cache.evidence["nsys_kernel_ns"] / cache.evidence["ncu_at_loop_clock_ns"] == pytest.approx(1.174, abs=0.01)


def test_mm_large_agrees_at_ncus_clock_and_the_sampled_clock_is_named(ref_result: RunResult) -> None:
    b = _bench(ref_result, "mm_large")
    # What the data says: ncu at its own 1.64 GHz matches the timer within 1%; rescaling it to
    # the 1.98 GHz nvidia-smi read between kernels opens a 20% gap. The sampled clock is wrong,
    # and the kernels' own durations under nsys (271.6 us) say so: the decomposition keeps
    # ncu's clocks, and the timing is judged trustworthy.
    assert b.ratio_raw == pytest.approx(0.995, abs=0.002)
    assert b.timer is not None and b.ncu is not None and b.ncu.normalized_ns is not None
    assert b.timer.median_ns / b.ncu.normalized_ns == pytest.approx(1.203, abs=0.003)  # at the sampled clock
    # The ratio is the one the verdict used: at ncu's own clocks, not the contradicted one.
    assert b.ratio == b.ratio_raw and b.ratio_clock_hz is None
    assert b.verdict is Verdict.OK
    assert b.gap is not None and not any(p.cause == "clock" for p in b.gap.parts)
    note = next(n for n in b.notes if "contradicted" in n)
    assert "1.980 GHz (plain (nvidia-smi samples))" in note and "1.636 GHz" in note
    assert abs(b.gap.residual_ns) < 0.05 * b.gap.timer_ns  # type: ignore[operator]


def test_mm_large_ok_at_the_clock_it_ran_at(tmp_path: Path) -> None:
    result = analyze(build_run_dir(tmp_path), clock_ref="1636MHz")
    b = _bench(result, "mm_large")
    assert b.verdict is Verdict.OK
    assert b.ratio == pytest.approx(0.995, abs=0.003)
    assert b.ref_clock_source == "given"


def test_copy_is_non_kernel_work(ref_result: RunResult) -> None:
    b = _bench(ref_result, "copy_1g")
    assert b.verdict is Verdict.EXPLAINED  # the copy nsys measured is the whole timing
    assert b.ncu is not None and b.ncu.iterations_ns == ()
    assert b.nsys is not None and set(b.nsys.memcpy_per_iteration) == {1} and set(b.nsys.kernels_per_iteration) == {0}
    assert _codes(b) == {CauseCode.NON_KERNEL_WORK}
    c = b.causes[0]
    assert c.evidence["non_kernel_ns"] == pytest.approx(506_494.0, rel=1e-3)
    assert "ncu saw no kernel" in c.message


def test_softmax_filter_matched_nothing(ref_result: RunResult) -> None:
    # The reference run's ncu pass ran the user's own filter (--nvtx-include regex:mm_.*/), which
    # leaves softmax_mlp out: no ncu figure, and the reason names that filter, the user's choice.
    b = _bench(ref_result, "softmax_mlp")
    assert b.verdict is Verdict.NO_NCU and b.causes == ()
    why = next(n for n in b.notes if n.startswith("no ncu: "))
    assert why.startswith("no ncu: ncu profiled none of this benchmark's launches in its iteration ranges")
    assert "nsys saw 3 per iteration" in why and "--nvtx-include filter" in why


def test_without_sidecar_benchmarks_come_from_nvtx(tmp_path: Path) -> None:
    result = analyze(build_run_dir(tmp_path, sidecar=False))
    assert not result.timer_found
    assert any("no in-process timings" in n for n in result.notes)
    names = {b.name: b for b in result.benchmarks}
    assert set(names) == {"mm_small", "mm_skinny", "mm_large", "copy_1g", "softmax_mlp"}
    assert names["mm_small"].iter_prefix == "mm_small/iter"
    assert names["mm_small"].verdict is Verdict.NO_TIMER
    # ncu profiled none of what nsys saw it run (the user's filter): no ncu figure, and why.
    assert names["softmax_mlp"].verdict is Verdict.NO_TIMER and names["softmax_mlp"].ncu is None
    assert any(n.startswith("no ncu: ") for n in names["softmax_mlp"].notes)


# ------------------------------------------------------------- constructed rows, known clocks


def _timer(median_ns: float, clock_hz: float) -> TimerStats:
    return TimerStats(
        samples_ns=(median_ns,) * 5, median_ns=median_ns, min_ns=median_ns, mean_ns=median_ns, stdev_ns=0.0,
        iqr_ns=0.0, n=5, sm_clock_hz=clock_hz, clock_source="nvml", sample_clock_hz=None,
        method={"flush_l2": True, "flush": "write+read", "calls_per_sample": 1},
    )  # fmt: skip


def _ncu_rows(duration_ns: float, clock_hz: float, sm: float, mem: float, iters: int = 3) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "launch_id": range(iters),
            "kernel": ["void gemm<float>(float*)"] * iters,
            "kernel_short": ["gemm"] * iters,
            "duration_ns": [duration_ns] * iters,
            "sm_clock_hz": [clock_hz] * iters,
            "sm_throughput_pct": [sm] * iters,
            "memory_throughput_pct": [mem] * iters,
            "dram_throughput_pct": [mem] * iters,
            "nvtx_path": [f"nsightwrap:gemm/iter{i}" for i in range(iters)],
            "nvtx_ranges": [("nsightwrap:gemm", f"nsightwrap:gemm/iter{i}") for i in range(iters)],
        }
    )


def test_clock_normalization_closes_a_known_gap() -> None:
    # 100 us at 1.98 GHz in the plain run; ncu saw the same 198000 cycles at 1.5 GHz = 132 us.
    spec = BenchmarkSpec("gemm", "nsightwrap:gemm", timer=_timer(100_000.0, 1.98e9))
    n = ncu_stats(_ncu_rows(132_000.0, 1.5e9, sm=92.0, mem=45.0), spec, 1.98e9)
    r = reconcile(spec, n, None, ref_clock_hz=1.98e9, ref_clock_source="plain (nvml)")
    assert n.iterations_cycles == pytest.approx((198_000.0,) * 3)
    assert r.ratio_raw == pytest.approx(100 / 132)
    assert r.ratio == pytest.approx(1.0)
    assert r.verdict is Verdict.OK
    assert any("closed the gap" in note for note in r.notes)


def test_settling_samples_left_out_are_a_note() -> None:
    from dataclasses import replace

    timer = replace(_timer(100_000.0, 1.98e9), settling=4, settled_clock_hz=1.59e9)
    spec = BenchmarkSpec("gemm", "nsightwrap:gemm", timer=timer)
    n = ncu_stats(_ncu_rows(132_000.0, 1.5e9, sm=92.0, mem=45.0), spec, 1.98e9)
    r = reconcile(spec, n, None, ref_clock_hz=1.98e9, ref_clock_source="plain (nvml)")
    assert any(note.startswith("the first 4 timer sample(s) ran while the SM clock came back") and "1.590 GHz" in note
               for note in r.notes)  # fmt: skip
    plain = reconcile(BenchmarkSpec("gemm", "nsightwrap:gemm", timer=_timer(100_000.0, 1.98e9)), n, None,
                      ref_clock_hz=1.98e9, ref_clock_source="plain (nvml)")  # fmt: skip
    assert not any("came back" in note for note in plain.notes)


def test_memory_bound_kernel_is_not_rescaled_and_stays_unexplained() -> None:
    # A DRAM-bound kernel: its 132 us do not shrink with the SM clock, so the gap stays.
    spec = BenchmarkSpec("gemm", "nsightwrap:gemm", timer=_timer(100_000.0, 1.98e9))
    n = ncu_stats(_ncu_rows(132_000.0, 1.5e9, sm=8.0, mem=88.0), spec, 1.98e9)
    r = reconcile(spec, n, None, ref_clock_hz=1.98e9, ref_clock_source="plain (nvml)")
    assert n.normalized_ns == 132_000.0
    assert r.ratio == pytest.approx(100 / 132)
    # No nsys pass: nothing measures the 32 us the timing is short of ncu, over 5% of it.
    assert r.verdict is Verdict.UNEXPLAINED
    assert CauseCode.CLOCK not in _codes(r)  # nothing was rescaled, so the clock explains nothing
    assert _codes(r) == {CauseCode.UNEXPLAINED}


def test_overlap_on_two_streams() -> None:
    spec = BenchmarkSpec("par", "nsightwrap:par", timer=_timer(10_000.0, 1.98e9))
    ops = pd.DataFrame(
        {
            "op_id": [0, 1],
            "kind": ["kernel", "kernel"],
            "name": ["a", "b"],
            "start_ns": [1_000, 1_000],
            "end_ns": [11_000, 11_000],
            "duration_ns": [10_000, 10_000],
            "stream_id": [7, 8],
        }
    )
    ranges = pd.DataFrame({"range_id": [0, 1], "path": ["nsightwrap:par", "nsightwrap:par/iter0"], "start_ns": [0, 0]})
    att = pd.DataFrame({"op_id": [0, 1, 0, 1], "range_id": [0, 0, 1, 1]})
    s = nsys_stats(ops, ranges, att, spec)
    assert s.busy_ns == (10_000.0,) and s.op_sum_ns == (20_000.0,) and s.streams == 2
    ncu = pd.concat([_ncu_rows(10_000.0, 1.98e9, 90, 10, 1)] * 2, ignore_index=True)
    ncu["launch_id"] = [0, 1]
    ncu["kernel_short"] = ["a", "b"]
    ncu["nvtx_ranges"] = [("nsightwrap:par", "nsightwrap:par/iter0")] * 2
    n = ncu_stats(ncu, spec, 1.98e9)
    r = reconcile(spec, n, s, ref_clock_hz=1.98e9, ref_clock_source="plain (nvml)")
    assert r.ratio == pytest.approx(0.5)  # ncu serializes: 20 us of kernels in a 10 us window
    # Not a timing error: the overlap explains the whole gap, measured.
    assert r.verdict is Verdict.EXPLAINED and [c.code for c in r.causes] == [CauseCode.OVERLAP]
    assert r.gap is not None and [(p.cause, p.ns) for p in r.gap.parts if p.ns] == [("overlap", -10_000.0)]
    assert r.gap.total_ns == -10_000.0 and r.gap.residual_ns == 0.0
    assert any("overlapped on 2 stream(s)" in note for note in r.notes)


def test_base_name_matches_ncu_and_nsys_spellings() -> None:
    assert base_name("void at::native::<unnamed>::cunn_SoftMaxForwardReg<c10::BFloat16, float>(T3 *)") == (
        "cunn_SoftMaxForwardReg"
    )
    assert base_name("nvjet_sm90_tst_64x32_64x16_1x2_h_bz_TNT") == "nvjet_sm90_tst_64x32_64x16_1x2_h_bz_TNT"


def test_sidecar_written_by_the_timer_is_read(tmp_path: Path) -> None:
    from nsightwrap.timer import BenchResult, write_sidecar

    run = build_run_dir(tmp_path, sidecar=False)
    timed = BenchResult.from_samples(
        "gemm", [10_000.0, 11_000.0, 12_000.0], sm_clock_hz=1.9e9, clock_source="nvml",
        method={"flush_l2": True, "flush": "write+read", "calls_per_sample": 1},
    )  # fmt: skip
    untimed = BenchResult.from_samples("other", [], method={"pass": "ncu"}, timed=False)
    write_sidecar(run / "plain" / "timer-1.json", [timed, untimed], {"name": "NVIDIA H200", "index": 0}, "2.11.0")
    result = analyze(run)
    assert result.timer_found and result.environment.torch == "2.11.0"
    g = _bench(result, "gemm")
    assert g.nvtx_path == "nsightwrap:gemm" and g.iter_prefix == "iter"
    assert g.timer is not None and g.timer.median_ns == 11_000.0 and g.ref_clock_hz == 1.9e9
    assert g.ref_clock_source == "plain (nvml)"
    assert _bench(result, "other").timer is None
