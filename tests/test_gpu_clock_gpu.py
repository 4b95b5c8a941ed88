"""The SM clock of each benchmark sampled on the GPU (nsys GPU metrics inside its own kernels),
end to end on a GPU machine: an unmodified script timing a compute-bound GEMM with CUDA events in
a short and in a sustained loop, profiled with every pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """\
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    a @ a
torch.cuda.synchronize()
def loop(calls):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(calls):
        a @ a
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / calls
for calls in (20, 600):
    print(calls, f"{loop(calls) * 1e3:.1f} us per call")
"""


@pytest.mark.gpu
def test_the_clock_is_sampled_inside_each_benchmarks_kernels(tmp_path: Path) -> None:
    from nsightwrap.analysis.gpuclock import MIN_SAMPLES, SOURCE_NSYS
    from nsightwrap.analysis.load import analyze
    from nsightwrap.parsers.nsys import read_nsys

    script = tmp_path / "gemm_loops.py"
    script.write_text(SCRIPT)
    run = tmp_path / "run"
    cp = subprocess.run(
        [sys.executable, "-m", "nsightwrap", "profile", "-q", "--no-clock-sweep", "-o", str(run), str(script)],
        capture_output=True, text=True, timeout=500, cwd=tmp_path,
    )  # fmt: skip
    assert cp.returncode == 0, cp.stderr[-3000:]
    sq = next((run / "nsys").glob("report.sqlite*"))
    clock = read_nsys(sq).gpu_clock
    assert len(clock) > 1000, "the nsys pass sampled no GPC clock"
    assert 0.3e9 < clock["gpc_clock_hz"].min() <= clock["gpc_clock_hz"].max() <= 2.1e9
    r = analyze(run)
    loops = [b for b in r.benchmarks if b.timer is not None and b.ncu is not None]
    assert len(loops) == 2, [b.name for b in r.benchmarks]
    for b in loops:
        assert b.clock is not None and b.clock.source == SOURCE_NSYS, b.ref_clock_source
        assert b.clock.samples >= MIN_SAMPLES and b.clock.min_hz <= b.clock.mean_hz <= b.clock.max_hz
        assert b.ref_clock_hz == b.clock.mean_hz
        assert b.ncu is not None and b.ncu.normalized_ns is not None and b.timer is not None
        # ncu carried to the clock the loop ran at predicts the plain pass's per-call time.
        assert abs(b.ncu.normalized_ns / b.timer.median_ns - 1) < 0.03, (b.name, b.ncu.normalized_ns, b.timer.median_ns)
    short, sustained = loops
    # A sustained loop of a compute-bound GEMM never runs faster than a short one.
    assert sustained.clock is not None and short.clock is not None
    assert sustained.clock.mean_hz <= short.clock.mean_hz * 1.01
