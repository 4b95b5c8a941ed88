"""The plain pass's own clock on a GPU machine (nsys on PATH): every GPU-bound timing of an
unmodified script gets a clock measured in the plain pass's clock run, and it agrees with the
clock the nsys pass measured inside the kernels of a loop nsys does not slow."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """\
import torch
import torch.utils.benchmark as benchmark
import triton.testing

a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
x = torch.randn(1024, device="cuda")
print("mm", triton.testing.do_bench(lambda: a @ a))
print("add", triton.testing.do_bench(lambda: x + x))
times = []
for _ in range(300):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    y = a @ a
    e.record()
    torch.cuda.synchronize()
    times.append(s.elapsed_time(e))
print("events", sorted(times)[150])
print(benchmark.Timer(stmt="a @ a", globals={"a": a}, label="mm timer").timeit(100))
"""


@pytest.mark.gpu
def test_every_loop_has_a_clock_measured_in_the_plain_pass(tmp_path: Path) -> None:
    if shutil.which("nsys") is None and not os.environ.get("NSIGHTWRAP_NSYS"):
        pytest.fail("nsys is not on PATH: the plain pass's clock needs it (scripts/gpu/env.sh puts it there)")
    script = tmp_path / "bench_loops.py"
    script.write_text(SCRIPT)
    run = tmp_path / "run"
    cp = subprocess.run(
        [sys.executable, "-m", "nsightwrap", "profile", "-o", str(run), "--no-clock-sweep", str(script)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    keep = os.environ.get("NSIGHTWRAP_GPU_TEST_KEEP")
    if keep:
        shutil.copytree(run, Path(keep) / "plain-clock", dirs_exist_ok=True)
    assert cp.returncode in (0, 1), cp.stderr[-3000:]
    m = json.loads((run / "manifest.json").read_text())
    plain = next(p for p in m["passes"] if p["name"] == "plain")
    # The plain pass bare, then its clock run under nsys (NVTX and GPU metrics only), then the export.
    bare, clock_run = plain["commands"][:2]
    assert bare["argv"] == [sys.executable, str(script)] and clock_run["argv"][2:4] == ["-t", "nvtx"]
    assert clock_run["env"]["NSIGHTWRAP_PASS"] == "plain-clock"
    assert (run / "plain-clock" / "clock.sqlite").is_file()
    rep = subprocess.run([sys.executable, "-m", "nsightwrap", "report", str(run), "--format", "json"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert rep.returncode in (0, 1), rep.stderr[-2000:]
    benches = json.loads(rep.stdout)["benchmarks"]
    captured = [b for b in benches if (b.get("source") or {}).get("kind") in ("do_bench", "cuda_events", "torch_benchmark")]
    assert len(captured) == 4, [b["name"] for b in benches]
    from nsightwrap.analysis.plainclock import SOURCE_PLAIN

    for b in captured:
        assert b["ref_clock_source"] == SOURCE_PLAIN, (b["name"], b["ref_clock_source"])
        assert 0.5e9 < b["ref_clock_hz"] < 2.2e9 and b["clock"]["samples"] >= 3
    # A 4096^3 GEMM loop nsys does not slow: the nsys pass's clock inside its kernels (the run
    # analysed without the plain pass's capture) is the plain pass's, within a few percent.
    from nsightwrap.analysis.load import analyze

    def mm_clock():
        r = next(b for b in analyze(run).benchmarks if (b.source or {}).get("kind") == "do_bench")
        return r.clock

    plain_clock = mm_clock()
    (run / "plain-clock" / "clock.sqlite").rename(run / "plain-clock" / "clock.hidden")
    nsys_clock = mm_clock()
    assert plain_clock is not None and plain_clock.source == SOURCE_PLAIN
    assert nsys_clock is not None and nsys_clock.source != SOURCE_PLAIN
    assert abs(plain_clock.mean_hz / nsys_clock.mean_hz - 1) < 0.05, (plain_clock, nsys_clock)
