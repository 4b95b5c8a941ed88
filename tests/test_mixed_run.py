"""The shipped run of an unmodified script with the timings users make without thinking twice
(fixtures/runs/h200-mixed, fixtures/captures/verdicts/mixed.py): a first call, CUDA-graph replays,
an amortized loop of 50 small adds per window, and a sort whose library opens its own NVTX range."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import RunResult

RUN = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-mixed"


@pytest.fixture(scope="module")
def mixed() -> RunResult:
    return analyze(RUN)


def _b(r: RunResult, line: int):  # type: ignore[no-untyped-def]
    return next(b for b in r.benchmarks if b.name.startswith(f"mixed.py:{line} "))


def test_the_four_timings_are_the_benchmarks_and_the_librarys_range_is_not(mixed: RunResult) -> None:
    assert sorted(int(b.name.split(":")[1].split()[0]) for b in mixed.benchmarks) == [16, 39, 55, 70]
    assert not any("CCCL" in b.name or "cub::" in b.name for b in mixed.benchmarks)
    assert any("CCCL:cub::DeviceRadixSort" in n for n in mixed.notes)


def test_the_amortized_window_shows_its_per_launch_figure(mixed: RunResult) -> None:
    add = _b(mixed, 55)
    assert add.launches_per_window == 50 and add.timer is not None
    assert any(f"{add.timer.median_ns / 50 / 1e3:.2f} us per launch" in n for n in add.notes)


def test_graph_replays_of_different_kernels_are_not_an_amortized_window(mixed: RunResult) -> None:
    # 5 replays x 8 steps of a multiply and an add: one short name (vectorized_elementwise_kernel)
    # for two different kernels, so no "N launches of one kernel".
    graph = _b(mixed, 39)
    assert graph.nsys is not None and len(graph.nsys.kernel_names) == 80
    assert graph.launches_per_window == 1


def test_the_first_call_is_a_warm_up_not_launch_overhead(mixed: RunResult) -> None:
    first = _b(mixed, 16)
    assert first.gap is not None and first.causes and first.causes[0].code.value == "warm_up"
    parts = {p.cause: p for p in first.gap.parts}
    warm = parts["warm_up"]
    # cuBLAS's library loads inside the window (15 cuLibraryLoadData calls under nsys).
    assert warm.evidence["module_loads"] >= 10 and warm.fix.startswith("warm up before timing")
    # Most of the 159 ms window is the one-off cost; what stays launch overhead is smaller.
    assert warm.ns > 0.8 * first.gap.total_ns > parts["launch_overhead"].ns
    assert abs(first.gap.residual_ns) < 0.05 * first.gap.timer_ns


def test_graph_replays_get_fixes_that_never_say_use_a_graph(mixed: RunResult) -> None:
    graph = _b(mixed, 39)
    assert graph.gap is not None
    host = [p for p in graph.gap.parts if p.cause in ("front_end", "launch_overhead", "gaps")]
    assert host and all("CUDA graph" not in p.fix and "do_bench_cudagraph" not in p.fix for p in host)
    assert any("5 replays per window" in p.fix for p in host)
    # Outside the tolerance because ncu serializes the 80 small kernels, paying its front end on
    # each (1.09 us, measured on the run's shortest kernels), and runs each on a clean L2, while
    # the replays run warm. The warm L2 saved 1.08 us per kernel: more than its 4.2 MB of DRAM
    # bytes take at the peak bandwidth (0.87 us), within that plus the one DRAM latency (0.34 us)
    # each kernel of ncu's clean replay waits before its first bytes arrive.
    assert graph.verdict.value == "explained"
    assert [c.code.value for c in graph.causes] == ["cache_state", "ncu_front_end"]
    (cache,) = [p for p in graph.gap.parts if p.cause == "cache_state"]
    ev = cache.evidence
    assert ev["beyond_bound_ns"] == 0 and ev["measured_ns"] == cache.ns == pytest.approx(-86783.6, abs=0.5)
    assert ev["bound_low_ns"] == pytest.approx(-(336.0e6 / 4.8e12 * 1e9 + 80 * 340.0), rel=1e-3)
    assert "plus one DRAM latency (340 ns) for each of its 80 kernel(s) with DRAM traffic" in ev["bound"]
    # The bound is still a bound: the same part at the bytes' time alone would have been cut.
    assert -ev["measured_ns"] > 336.0e6 / 4.8e12 * 1e9


def test_graph_node_launches_the_cap_left_out_are_carried(mixed: RunResult) -> None:
    # ncu's per-launch-config filter (--launch-count 3) counted the graph's node kernels together:
    # it profiled 3 of the first window's 80 node launches (two of the multiply, one of the add)
    # and none of the later windows. Each window is rebuilt from nsys's 80 launches, every one
    # carried by the median ncu instance of its kernel, so no launch goes missing.
    graph = _b(mixed, 39)
    assert graph.ncu is not None and graph.ncu.kernels_per_iteration
    assert set(graph.ncu.kernels_per_iteration) == {80}
    assert not any(c.code.value == "extra_or_missing_kernels" for c in graph.causes)
    assert any("ncu profiled 3 of 240 launches" in n and "237 of them nodes of a CUDA graph" in n for n in graph.notes)
