"""Each benchmark's SM clock measured on the GPU (nsys GPU metrics inside its own kernels), on
real H200 runs of unmodified scripts: a torchrun worker timing a GEMM with events in a short and
a sustained loop, and a shape sweep at one do_bench call site (fixtures/runs/h200-worker,
h200-sweep)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsightwrap.analysis.gpuclock import SOURCE_NSYS
from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import RunResult
from nsightwrap.parsers.nsys import read_nsys

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


@pytest.fixture(scope="module")
def worker() -> RunResult:
    return analyze(RUNS / "h200-worker")


@pytest.fixture(scope="module")
def sweep() -> RunResult:
    return analyze(RUNS / "h200-sweep")


def test_the_gpc_clock_is_read_in_hz() -> None:
    clock = read_nsys(RUNS / "h200-worker" / "nsys" / "report.sqlite.gz").gpu_clock
    assert len(clock) > 100_000
    hz = clock["gpc_clock_hz"]
    # nsys 2025.x stores Hz under a "[MHz]" name: an H200 idles at ~0.35 GHz and tops at 1.98 GHz.
    assert 0.3e9 < hz.min() < hz.max() <= 2.0e9
    assert clock["t_ns"].is_monotonic_increasing


def test_the_sustained_loop_ran_slower_clocks_and_ncu_carried_there_predicts_it(worker: RunResult) -> None:
    short, sustained = worker.benchmarks
    assert short.name.endswith("#1") and sustained.name.endswith("#2")
    for b in (short, sustained):
        assert b.clock is not None and b.clock.source == SOURCE_NSYS
        assert b.ref_clock_source == SOURCE_NSYS and b.ref_clock_hz == b.clock.mean_hz
        assert b.clock.min_hz <= b.clock.mean_hz <= b.clock.max_hz
        assert b.clock.slowdown is not None and abs(b.clock.slowdown - 1) < 0.05
    assert short.clock is not None and sustained.clock is not None
    # 20 calls at about ncu's clock; 1500 calls throttled well below it.
    assert abs(short.clock.mean_hz / short.ncu.sm_clock_hz - 1) < 0.03  # type: ignore[union-attr]
    assert sustained.clock.mean_hz < 0.9 * short.clock.mean_hz
    for b in (short, sustained):
        assert b.ncu is not None and b.timer is not None and b.ncu.normalized_ns is not None
        # ncu carried to the measured clock predicts the plain pass's per-call time within 2%.
        assert abs(b.ncu.normalized_ns / b.timer.median_ns - 1) < 0.02, b.name
    # At ncu's own clock the sustained loop reads 1.17x: a right number at the wrong clock.
    assert sustained.ratio_raw is not None and sustained.ratio_raw > 1.1
    assert sustained.ratio is not None and abs(sustained.ratio - 1) < 0.02


def test_a_loop_nsys_slowed_is_compared_at_ncus_clock_and_says_why(sweep: RunResult) -> None:
    b = next(b for b in sweep.benchmarks if b.name == "sweep.py:17 do_bench #2")
    assert b.ref_clock_hz is None and b.ref_clock_source.startswith("ncu's own clock: nsys slowed this loop")
    assert b.clock is not None and b.clock.slowdown is not None and b.clock.slowdown > 2
    assert b.ratio == b.ratio_raw


def test_the_sweeps_big_gemms_are_carried_to_their_own_clock(sweep: RunResult) -> None:
    big = [b for b in sweep.benchmarks if b.ncu is not None and b.ncu.median_ns and b.ncu.median_ns > 1e6]
    assert len(big) == 2  # the 8192^3 GEMM under do_bench and under torch.utils.benchmark
    for b in big:
        assert b.clock is not None and b.clock.source == SOURCE_NSYS and b.clock.mean_hz < 1.45e9
        assert b.ncu is not None and b.timer is not None and b.ncu.normalized_ns is not None
        assert abs(b.ncu.normalized_ns / b.timer.median_ns - 1) < 0.02, b.name


def test_a_run_without_gpu_metrics_keeps_the_host_clock_named_as_such() -> None:
    r = analyze(RUNS / "h200-blog")
    assert all(b.clock is None for b in r.benchmarks)
    assert all(b.ref_clock_source.startswith("plain (") for b in r.benchmarks if b.ref_clock_hz)


def test_the_measured_clock_survives_the_report_json(worker: RunResult) -> None:
    from nsightwrap.export.jsonio import report_from_dict, report_to_dict

    back = report_from_dict(report_to_dict(worker))
    assert [b.clock for b in back.benchmarks] == [b.clock for b in worker.benchmarks]
    assert all(b.launches_per_window == 1 for b in back.benchmarks)
