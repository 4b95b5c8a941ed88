"""A GEMM shape sweep as a user writes it, with no nsightwrap in it: 16 bf16 shapes timed with
``triton.testing.do_bench`` at one call site in a loop, then 4 timings with
``torch.utils.benchmark.Timer``. About 8-10 s plain on an H200 (most of it do_bench's repeats).

    python examples/gemm_sweep_plain.py
    nsightwrap profile examples/gemm_sweep_plain.py
"""

from __future__ import annotations

import torch
import torch.utils.benchmark as tb
import triton.testing

SHAPES = [(m, n, 4096) for m in (16, 64, 256, 1024) for n in (1024, 2048, 4096, 8192)]  # 16 shapes
REP_MS = 400  # do_bench's time budget per shape


def main() -> None:
    torch.manual_seed(0)
    dev = "cuda"
    results = []
    for m, n, k in SHAPES:
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        ms = triton.testing.do_bench(lambda a=a, b=b: torch.matmul(a, b), warmup=50, rep=REP_MS)
        tflops = 2 * m * n * k / (ms * 1e-3) / 1e12
        results.append((m, n, k, ms, tflops))
        print(f"mm M={m:5d} N={n:5d} K={k}: {ms * 1e3:9.2f} us {tflops:7.1f} TFLOP/s", flush=True)
    x = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    v = torch.randn(1 << 24, device=dev)
    for label, stmt in (
        ("linear", "torch.nn.functional.linear(x, w)"),
        ("gelu", "torch.nn.functional.gelu(x)"),
        ("softmax", "torch.softmax(x.float(), dim=-1)"),
        ("sum", "v.sum()"),
    ):
        t = tb.Timer(stmt=stmt, globals={"torch": torch, "x": x, "w": w, "v": v}, label=label)
        meas = t.blocked_autorange(min_run_time=1.0)
        print(f"{label}: {meas.median * 1e6:9.2f} us", flush=True)
    best = max(results, key=lambda r: r[4])
    print(f"best: M={best[0]} N={best[1]} {best[4]:.1f} TFLOP/s")


if __name__ == "__main__":
    main()
