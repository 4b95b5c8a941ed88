"""A benchmark script as people write it, with no nsightwrap in it: its own ``do_bench_cuda``
(the recipe of the well-known blog post on timing CUDA kernels: an L2 flush by ``cache.zero_()``,
a dummy fp32 4096^3 matmul to fill the GPU queue, CUDA events around each call), then
``triton.testing.do_bench`` on the same three bf16 GEMM shapes.

    python examples/blog_do_bench.py [--repeats N] [--rep MS]
    nsightwrap profile examples/blog_do_bench.py      # the same script, cross-checked

Every number this script prints is one ``nsightwrap profile`` captures and cross-checks against
ncu and nsys (docs/capture.md); the script itself is not changed for it.
"""

from __future__ import annotations

import argparse
import statistics

import torch
import triton.testing

SHAPES = ((64, 4096, 4096), (2, 19456, 2560), (2048, 19456, 2560))  # M x N x K


def do_bench_cuda(f, n_warmup: int = 10, n_repeats: int = 20) -> list[float]:
    """Milliseconds per call of f, one sample per call (the blog's recipe)."""
    l2_size = 256 * 1024 * 1024
    cache = torch.empty(l2_size, dtype=torch.int8, device="cuda")
    a = torch.randn(4096, 4096, device="cuda")
    start_events = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeats)]
    end_events = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeats)]
    for _ in range(n_warmup):
        f()
    for i in range(n_repeats):
        cache.zero_()  # flush the L2
        torch.matmul(a, a)  # a dummy matmul keeps the GPU busy while the timed call is queued
        start_events[i].record()
        f()
        end_events[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(start_events, end_events, strict=True)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=20, help="samples per shape in do_bench_cuda")
    ap.add_argument("--rep", type=float, default=20, help="do_bench's rep (ms)")
    args = ap.parse_args()
    torch.manual_seed(0)
    cases = []
    for m, n, k in SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        cases.append((f"{m}x{n}x{k}", lambda x=x, w=w: torch.nn.functional.linear(x, w)))
    for name, f in cases:
        times = do_bench_cuda(f, n_repeats=args.repeats)
        print(f"do_bench_cuda {name}: median {statistics.median(times) * 1e3:.2f} us")
    for name, f in cases:
        ms = triton.testing.do_bench(f, rep=args.rep, return_mode="median")
        print(f"triton do_bench {name}: median {ms * 1e3:.2f} us")


if __name__ == "__main__":
    main()
