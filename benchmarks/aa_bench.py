"""A/A benchmark for ``nsightwrap compare``: four kernels of different character, one knob.

    python benchmarks/aa_bench.py [--scale S]

Benchmarks (bf16 unless said): ``gemm_large`` 2048x19456x2560 (compute-bound), ``gemm_skinny``
2x19456x2560 (memory-bound GEMV), ``mm_small`` 64x4096x4096 (short), ``add`` elementwise sum of
two 32 Mi-element tensors (memory-bound). ``--scale S`` multiplies the GEMMs' M (gemm_large) or
N (gemm_skinny, mm_small) by S to inject a slowdown (1.10 = 10% more work); ``add`` is never
scaled and stays a control. Names do not change with the scale, so runs match in a comparison.

Under ``nsightwrap profile`` (or with NSIGHTWRAP_RUN_DIR and NSIGHTWRAP_PASS=plain set) the
timings land in ``$NSIGHTWRAP_RUN_DIR/plain/timer-<pid>.json``. About 1 s a benchmark.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

import nsightwrap as nw

#: Enough samples for a robust interval, a short budget so the script stays quick.
OPTIONS = dict(min_samples=30, max_samples=400, budget_s=1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--scale", type=float, default=1.0, help="multiply the GEMMs' M or N by this (default 1.0)"
    )
    args = ap.parse_args()

    def scaled(n: int) -> int:
        return max(1, round(n * args.scale))

    torch.manual_seed(0)
    dev, dt = "cuda", torch.bfloat16
    K = 2560

    m = scaled(2048)
    a = torch.randn(m, K, device=dev, dtype=dt)
    w = torch.randn(19456, K, device=dev, dtype=dt)
    nw.bench(
        lambda: F.linear(a, w),
        name="gemm_large",
        flops=2 * m * 19456 * K,
        bytes=2 * (m * K + 19456 * K + m * 19456),
        **OPTIONS,
    )

    n = scaled(19456)
    x = torch.randn(2, K, device=dev, dtype=dt)
    ws = torch.randn(n, K, device=dev, dtype=dt)
    nw.bench(
        lambda: F.linear(x, ws),
        name="gemm_skinny",
        flops=2 * 2 * n * K,
        bytes=2 * (2 * K + n * K + 2 * n),
        **OPTIONS,
    )

    n2 = scaled(4096)
    h = torch.randn(64, 4096, device=dev, dtype=dt)
    w2 = torch.randn(n2, 4096, device=dev, dtype=dt)
    nw.bench(
        lambda: F.linear(h, w2),
        name="mm_small",
        flops=2 * 64 * n2 * 4096,
        bytes=2 * (64 * 4096 + n2 * 4096 + 64 * n2),
        **OPTIONS,
    )

    numel = 32 * 1024 * 1024
    p = torch.randn(numel, device=dev, dtype=dt)
    q = torch.randn(numel, device=dev, dtype=dt)
    out = torch.empty_like(p)
    nw.bench(lambda: torch.add(p, q, out=out), name="add", flops=numel, bytes=3 * 2 * numel, **OPTIONS)


if __name__ == "__main__":
    main()
