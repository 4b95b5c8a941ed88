"""ncu coverage on a real H100 run of an unmodified script (fixtures/captures/coverage/small-things:
studies/userscripts/small_things.py, 2026-12-07, NVIDIA H100 80GB HBM3; its README says how it was
made small): a CUDA graph of 20 in-place adds replayed under events, and a `Timer.timeit` of a
relu whose kernel's full name (its functor) no kernel of the capped ncu pass shares.

- The graph's adds share their base name and shape with a `do_bench` of `x + y` earlier in the
  script: ncu's per-launch-config cap (24, the duration pass) counted both together and stopped
  one node into the graph's second iteration. That iteration must not be summed as a whole one
  (1 of 20 kernels: a 29.7 us "ncu figure" and a ratio of 1.01 where ncu's own is 56 us).
- The coverage pass was asked for both and profiled none of their launches: the capped passes'
  carrying stays in place, and the relu keeps the duration pass's own launches."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kernel_tables import read_kernels, stand_in_reports

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import RunResult

RUN = Path(__file__).resolve().parent.parent / "fixtures" / "captures" / "coverage" / "small-things"
GRAPH = "small_things.py:41 cuda_events #1"
RELU = "relu 4M fp32"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    run = tmp_path_factory.mktemp("cov") / "run"
    shutil.copytree(RUN, run)
    stand_in_reports(run)
    return analyze(run, read_ncu=read_kernels)


def _bench(result: RunResult, name: str):  # type: ignore[no-untyped-def]
    return next(b for b in result.benchmarks if b.name == name)


def test_a_graph_iteration_the_cap_cut_is_completed_not_summed(result: RunResult) -> None:
    b = _bench(result, GRAPH)
    assert b.ncu is not None and b.verdict != "no_ncu"
    # Every ncu iteration holds the graph's 20 launches (profiled or carried), none a partial sum.
    assert list(b.ncu.kernels_per_iteration) == [20, 20, 20]
    assert min(b.ncu.iterations_ns) > 50_000  # 20 adds at ncu's ~2.8 us each
    assert b.ratio is not None and b.ratio < 0.7  # ncu's own costs per node, not a match
    parts = {p.cause: p.ns for p in b.gap.parts} if b.gap is not None else {}
    assert parts.get("ncu_front_end", 0.0) < -20_000  # named, measured: ncu's front end per node
    assert any("nodes of a CUDA graph" in n for n in b.notes)


def test_a_kernel_only_the_duration_pass_profiled_gives_its_benchmark_an_ncu_figure(result: RunResult) -> None:
    b = _bench(result, RELU)
    assert b.ncu is not None and b.verdict != "no_ncu"
    assert list(b.ncu.kernels_per_iteration) == [1, 1, 1]
    assert b.ncu.median_ns == pytest.approx(11584.0)  # the duration pass's own relu launches
    assert any("have no counters" in n for n in result.notes)


def test_no_benchmark_is_left_without_ncu(result: RunResult) -> None:
    assert [b.name for b in result.benchmarks if b.verdict == "no_ncu"] == []
