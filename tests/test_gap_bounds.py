"""Every part of the gap within its physical bound, on every shipped H200 run.

Each bound is computed here from the run's own files (the timer's device record for the L2 size,
NVIDIA's H200 datasheet for the DRAM bandwidth, ncu's DRAM bytes per kernel, nsys's busy time),
not read back from the part it bounds. docs/reconciliation.md, "Bounds".
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from nsightwrap.analysis.gap import PARTLY_SHARE, noise_floor_ns
from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import BenchmarkResult, RunResult, Verdict

ROOT = Path(__file__).resolve().parent.parent
CAUSES = ROOT / "fixtures" / "captures" / "causes" / "run"
SHIPPED = sorted({*(p.parent for p in (ROOT / "fixtures" / "runs").glob("*/manifest.json")), CAUSES})
#: The H200's L2 (the CUDA device properties every shipped sidecar recorded) and its datasheet
#: HBM bandwidth: no shipped run has a device file.
L2_BYTES = 62_914_560
DRAM_BYTES_PER_S = 4.8e12
#: The DRAM latency each kernel of ncu's clean replay waits at least once: an H200's HBM latency
#: as nsightwrap device measured it (fixtures/device/h200.json: 339.6 ns; the analysis takes 340).
DRAM_LATENCY_NS = 340.0
#: Values are on the 1/8 ns grid; a bound compared after rounding may be off by one step.
GRID = 0.25
HOST = ("warm_up", "front_end", "launch_overhead", "gaps")


@pytest.fixture(scope="module", params=SHIPPED, ids=lambda p: p.name)
def run(request: pytest.FixtureRequest) -> RunResult:
    return analyze(request.param)


def _gapped(result: RunResult) -> list[BenchmarkResult]:
    return [b for b in result.benchmarks if b.gap is not None and b.timer is not None and b.ncu is not None]


def _part(b: BenchmarkResult, cause: str) -> float | None:
    assert b.gap is not None
    found = [p.ns for p in b.gap.parts if p.cause == cause]
    return found[0] if found else None


def _dram_ns(b: BenchmarkResult) -> float | None:
    """ncu's DRAM traffic per iteration at the datasheet bandwidth (median over iterations)."""
    assert b.ncu is not None
    per: dict[int, float] = {}
    for k in b.ncu.kernels:
        if k.dram_bytes is None:
            return None
        per[k.iteration] = per.get(k.iteration, 0.0) + k.dram_bytes
    vals = sorted(per.values())
    return vals[len(vals) // 2] / DRAM_BYTES_PER_S * 1e9 if vals else None


def _warm_saving_ns(b: BenchmarkResult) -> float | None:
    """The most a warm L2 can save: the DRAM traffic at the bandwidth plus one DRAM latency per
    kernel with DRAM traffic (per iteration; the fewest over iterations)."""
    assert b.ncu is not None
    traffic = _dram_ns(b)
    if traffic is None:
        return None
    per: dict[int, int] = {}
    for k in b.ncu.kernels:
        per[k.iteration] = per.get(k.iteration, 0) + int((k.dram_bytes or 0.0) > 0)
    return traffic + max(per.values(), default=0) * DRAM_LATENCY_NS


def test_the_bounds_come_from_the_run(run: RunResult) -> None:
    for b in _gapped(run):
        assert b.gap is not None
        src = b.gap.measurements["device_limits"]
        assert "L2 size from the CUDA device properties the timer recorded" in src
        assert "datasheet (not measured on this GPU)" in src
        assert "DRAM latency from an H200's HBM latency as nsightwrap device measured it (not measured on this GPU)" in src


def test_cache_state_within_the_l2s_reach(run: RunResult) -> None:
    """Dirty: between 0 and writing back the dirty lines the kernels can evict (min(L2, ncu's DRAM
    bytes) at the DRAM bandwidth). Warm: between minus what ncu's DRAM traffic costs in its clean
    replay (the bytes at that bandwidth plus one DRAM latency per kernel) and 0."""
    seen = 0
    for b in _gapped(run):
        p = next((p for p in b.gap.parts if p.cause == "cache_state"), None)  # type: ignore[union-attr]
        if p is None:
            continue
        seen += 1
        state = p.evidence["loop_cache"]
        traffic = _dram_ns(b)
        write_back = min(L2_BYTES / DRAM_BYTES_PER_S * 1e9, traffic if traffic is not None else math.inf)
        if state == "dirty":
            assert -GRID <= p.ns <= write_back + GRID, (b.name, p.ns, write_back)
        elif state == "warm":
            save = _warm_saving_ns(b)
            assert traffic is not None and save is not None
            assert -save - GRID <= p.ns <= GRID, (b.name, p.ns, save)
        # Whatever the bound cut is named, and left in the residual.
        assert p.evidence["bound"] and p.evidence["measured_ns"] - p.ns == pytest.approx(
            p.evidence["beyond_bound_ns"], abs=GRID
        )
    if run.run_dir.endswith("h200-nvtx"):
        assert seen  # do_bench's zeroing flush


def test_no_negative_cache_state_after_a_dirty_flush(run: RunResult) -> None:
    for b in _gapped(run):
        for p in b.gap.parts:  # type: ignore[union-attr]
            if p.cause == "cache_state" and p.evidence["loop_cache"] == "dirty":
                assert p.ns >= 0, b.name


def test_host_parts_fit_the_window_beside_the_gpus_work(run: RunResult) -> None:
    """Each interval of the window is one part's: the host-side parts together hold no more than
    the plain window less nsys's busy time and ncu's front end the window shows (where nsys's
    busy time fits the plain window at all)."""
    for b in _gapped(run):
        g = b.gap
        assert g is not None and b.timer is not None
        m = g.measurements
        busy = m["nsys_busy_ns"]
        if busy is None:
            continue
        missed = _part(b, "missed_work") or 0.0
        window = b.timer.median_ns + m["empty_window_subtracted_ns"]
        if window < busy + missed:
            continue  # the nsys pass's kernels ran at another clock: its busy time bounds nothing
        host = math.fsum(p.ns for p in g.parts if p.cause in HOST)
        room = b.timer.median_ns - (busy + missed) - m["ncu_front_end_in_window_ns"]
        # No part is cut below its floor: 0, or minus the subtracted empty window for the front end.
        floors = math.fsum(-m["empty_window_subtracted_ns"] if p.cause == "front_end" else 0.0
                           for p in g.parts if p.cause in HOST)  # fmt: skip
        assert host <= max(room, floors) + 1.0, (b.name, host, room)


def test_front_end_within_the_empty_window(run: RunResult) -> None:
    for b in _gapped(run):
        fe, empty = _part(b, "front_end"), b.gap.measurements["empty_window_ns"]  # type: ignore[union-attr]
        if fe is not None and empty:
            assert fe <= empty + GRID, (b.name, fe, empty)


def test_ncus_own_front_end_is_measured_and_no_more_than_ncu_counted(run: RunResult) -> None:
    for b in _gapped(run):
        for p in b.gap.parts:  # type: ignore[union-attr]
            if p.cause == "ncu_front_end":
                assert p.ns < 0 and p.evidence["ncu_front_end_source"] != "none"
                assert -p.ns <= p.evidence["ncu_front_end_ns"] + GRID


def test_explained_means_the_residual_is_small(run: RunResult) -> None:
    """A residual over 10% of the gap and over the timing's noise (its IQR, at least the noise
    floor) is never ``explained``; the decomposition records which of the two it was held to."""
    for b in _gapped(run):
        g = b.gap
        assert g is not None and b.timer is not None
        iqr = b.timer.iqr_ns if b.timer.n >= 2 else 0.0
        allowed = max(PARTLY_SHARE * abs(g.total_ns), noise_floor_ns(g.timer_ns), iqr)
        assert g.measurements["residual_allowance_ns"] == pytest.approx(allowed, abs=GRID), b.name
        if b.verdict is Verdict.EXPLAINED:
            assert abs(g.residual_ns) <= allowed, b.name


def test_a_device_files_hbm_latency_bounds_the_warm_saving() -> None:
    """With the device file of `nsightwrap device`, the latency is its measured HBM latency
    (339.6 ns on the H200) and the bandwidth its best HBM measurement (4.57 TB/s)."""
    r = analyze(ROOT / "fixtures" / "runs" / "h200-mixed", device_file=ROOT / "fixtures" / "device" / "h200.json")
    b = next(b for b in r.benchmarks if b.name.startswith("mixed.py:39"))
    assert b.gap is not None
    assert "DRAM latency from the device file's HBM latency measurement" in b.gap.measurements["device_limits"]
    (p,) = [p for p in b.gap.parts if p.cause == "cache_state"]
    assert "plus one DRAM latency (340 ns) for each of its 80 kernel(s)" in p.evidence["bound"]
    assert p.evidence["bound_low_ns"] == pytest.approx(-(336.0e6 / 4.568e12 * 1e9 + 80 * 339.59), rel=2e-3)
    assert p.evidence["beyond_bound_ns"] == 0 and b.verdict is Verdict.EXPLAINED
