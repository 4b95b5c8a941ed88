"""The timer on a real GPU: measurement, sidecar under the passes, NVTX ranges seen by ncu, and
agreement with ncu on a compute-bound GEMM at one SM clock. Needs an NVIDIA GPU, torch, and
(where named) ncu on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nsightwrap.core import contract

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent

# A script run in a child process; MODE picks the benchmark.
SCRIPT = textwrap.dedent(
    """
    import os, sys, torch
    import nsightwrap as nw
    M, N, K = (int(v) for v in os.environ["SHAPE"].split("x"))
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    r = nw.bench(lambda: torch.nn.functional.linear(x, w), name=os.environ["BENCH"],
                 flops=2 * M * N * K, min_samples=20, budget_s=1.0)
    print(r)
    """
)


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    for key in (
        contract.ENV_PASS,
        contract.ENV_RUN_DIR,
        contract.ENV_NCU_ITERS,
        contract.ENV_NCU_PROFILER_API,
    ):
        env.pop(key, None)
    env.update(extra)
    return env


def _run(argv: list[str], env: dict[str, str], timeout: int = 300) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{argv} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _ncu() -> str:
    exe = shutil.which("ncu")
    if exe is None:
        pytest.skip("ncu is not on PATH")
    return exe


def _ncu_kernels(tmp_path: Path, shape: str, bench: str, extra: list[str], env_extra: dict[str, str]):
    from nsightwrap.parsers.ncu import read_ncu_rep

    script = tmp_path / "bench_script.py"
    script.write_text(SCRIPT)
    rep = tmp_path / "prof"
    argv = [
        _ncu(), "--clock-control", "none", *extra,
        "--metrics", "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second",
        "-o", str(rep), "-f", sys.executable, str(script),
    ]  # fmt: skip
    env = _env(
        SHAPE=shape, BENCH=bench, **{contract.ENV_PASS: "ncu", contract.ENV_NCU_ITERS: "3"}, **env_extra
    )
    out = _run(argv, env)
    assert "not timed under the ncu pass (3 iterations" in out.stdout
    return read_ncu_rep(rep.with_suffix(".ncu-rep"))


def test_bench_measures_a_gemm() -> None:
    import torch

    import nsightwrap as nw

    x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    r = nw.bench(lambda: torch.nn.functional.linear(x, w), name="mm_small", flops=2 * 64 * 4096 * 4096)
    assert r.n >= 10 and len(r.samples_ns) == r.n
    assert 3_000 < r.median_ns < 100_000  # ~12 us on an H200
    assert r.min_ns <= r.median_ns <= max(r.samples_ns)
    assert r.method["hold_queue"] is True and r.method["flush_l2"] is True
    assert 100 < r.method["empty_window_ns"] < 10_000  # 1.3 us on the H200
    assert r.method["overhead_ns"] == r.method["empty_window_ns"]
    assert r.method["stop_reason"] in ("precision", "budget", "max_samples")
    assert r.clock_source == "nvml" and r.sm_clock_hz is not None
    assert 0.5e9 < r.sm_clock_hz < 2.5e9
    assert r.sample_clock_hz is not None and len(r.sample_clock_hz) == r.n
    assert r.tflops is not None and r.tflops > 10
    warm = nw.bench(lambda: torch.nn.functional.linear(x, w), name="mm_small_warm", flush_l2=False)
    assert warm.method["flush"] == "none" and warm.median_ns > 0
    graph = nw.bench(
        lambda: torch.nn.functional.linear(x, w), name="mm_small_graph", flush_l2=False, cuda_graph=True
    )
    assert graph.method["calls_per_sample"] >= 2
    # a graph of back-to-back calls on a warm L2 is not slower per call than the flushed timing
    assert graph.median_ns < r.median_ns * 1.1


def test_no_cuda_device_is_one_clear_error() -> None:
    code = (
        "import nsightwrap as nw\nfrom nsightwrap.core.errors import NoCudaError\n"
        "try:\n    nw.bench(lambda: None)\nexcept NoCudaError as e:\n    print('NoCudaError:', e)\n"
    )
    out = _run([sys.executable, "-c", code], _env(CUDA_VISIBLE_DEVICES=""))
    assert out.stdout.startswith("NoCudaError: nsightwrap.bench found no CUDA device")


def test_sidecar_only_in_the_plain_pass(tmp_path: Path) -> None:
    from nsightwrap.parsers.sidecar import read_sidecar

    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    for stage in ("plain", "nsys"):
        run_dir = tmp_path / stage
        env = _env(
            SHAPE="64x4096x4096",
            BENCH="mm_small",
            **{contract.ENV_PASS: stage, contract.ENV_RUN_DIR: str(run_dir)},
        )
        _run([sys.executable, str(script)], env)
        files = (
            sorted((run_dir / "plain").glob(contract.SIDECAR_GLOB)) if (run_dir / "plain").exists() else []
        )
        if stage == "plain":
            assert len(files) == 1
            side = read_sidecar(files[0])
            assert [b.name for b in side.benchmarks] == ["mm_small"]
            assert side.benchmarks[0].n >= 20 and side.device["l2_bytes"] > 0
        else:
            assert files == []


def test_ncu_profiles_exactly_the_iteration_ranges(tmp_path: Path) -> None:
    df = _ncu_kernels(tmp_path, "64x4096x4096", "mm[M=64]", contract.ncu_iteration_filter(), {})
    paths = sorted(set(df["nvtx_path"]))
    assert paths == [f"nsightwrap:mm[M=64]/iter{i}" for i in range(3)]
    # flush (fill, reduce) and the queue-holding sleep are outside iter<i>: not profiled
    names = " ".join(df["kernel"]).lower()
    assert "elementwise" not in names and "reduce" not in names and "sleep" not in names
    # the bench-specific filter catches the same kernels
    df2 = _ncu_kernels(tmp_path, "64x4096x4096", "mm[M=64]", contract.ncu_iteration_filter("mm[M=64]"), {})
    assert sorted(set(df2["nvtx_path"])) == paths and len(df2) == len(df)


def test_ncu_profiler_api_mode(tmp_path: Path) -> None:
    df = _ncu_kernels(
        tmp_path, "64x4096x4096", "mm_small", ["--nvtx", "--profile-from-start", "off"],
        {contract.ENV_NCU_PROFILER_API: "1"},
    )  # fmt: skip
    assert sorted(set(df["nvtx_path"])) == [f"nsightwrap:mm_small/iter{i}" for i in range(3)]


def test_median_within_3pct_of_ncu_at_the_timers_clock(tmp_path: Path) -> None:
    """Compute-bound bf16 GEMM 2048x19456x2560: cycles do not depend on the clock, so ncu's
    duration at the timer's clock is d * f_ncu / f_timer."""
    import torch

    import nsightwrap as nw

    M, N, K = 2048, 19456, 2560
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    r = nw.bench(lambda: torch.nn.functional.linear(x, w), name="mm_large", flops=2 * M * N * K)
    assert r.sm_clock_hz is not None and r.clock_source == "probe"  # a 280 us window: measured on the GPU
    df = _ncu_kernels(tmp_path, f"{M}x{N}x{K}", "mm_large", contract.ncu_iteration_filter("mm_large"), {})
    df = df.assign(cycles=df["duration_ns"] * df["sm_clock_hz"])
    per_iter = df.groupby("nvtx_path")["cycles"].sum() / r.sm_clock_hz
    assert len(per_iter) == 3
    ncu_at_timer_clock = float(per_iter.median())
    err = r.median_ns / ncu_at_timer_clock - 1
    print(
        f"timer {r.median_ns:.0f} ns at {r.sm_clock_hz / 1e9:.3f} GHz; ncu at that clock {ncu_at_timer_clock:.0f} ns; error {err:+.2%}"
    )
    assert abs(err) < 0.03
