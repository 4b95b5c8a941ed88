"""Energy per call of three kernels of different character, with the thermal guard on.

    python examples/power_example.py [--budget S] [--margin C]
    nsightwrap profile examples/power_example.py

mm_large: a compute-bound bf16 GEMM (pJ/FLOP); mm_skinny: a memory-bound GEMV-like GEMM
(pJ/byte); add_large: an elementwise add over 256 MB (memory-bound, pJ/byte). Each benchmark
first waits until the GPU is ``--margin`` degrees below its slowdown temperature.
"""

from __future__ import annotations

import argparse

import torch

import nsightwrap as nw

BF16 = torch.bfloat16


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of timed samples per benchmark")
    ap.add_argument("--margin", type=float, default=20.0, help="thermal guard: degrees below slowdown")
    ap.add_argument("--energy", type=float, default=1.0, help="seconds of the energy window")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply mm_large's M (a known change)")
    a = ap.parse_args()
    opts = {"budget_s": a.budget, "energy_s": a.energy, "thermal_margin_c": a.margin, "thermal_timeout_s": 30.0}

    m, n, k = round(2048 * a.scale), 19456, 2560
    x, w = torch.randn(m, k, device="cuda", dtype=BF16), torch.randn(n, k, device="cuda", dtype=BF16)
    print(nw.bench(lambda: torch.nn.functional.linear(x, w), name="mm_large", flops=2 * m * n * k,
                   bytes=2 * (m * k + n * k + m * n), **opts))  # fmt: skip
    xs = torch.randn(2, k, device="cuda", dtype=BF16)
    print(nw.bench(lambda: torch.nn.functional.linear(xs, w), name="mm_skinny", flops=2 * 2 * n * k,
                   bytes=2 * (2 * k + n * k + 2 * n), **opts))  # fmt: skip
    p, q = torch.randn(64 * 2**20, device="cuda"), torch.randn(64 * 2**20, device="cuda")
    print(nw.bench(lambda: p + q, name="add_large", bytes=3 * 4 * 64 * 2**20, **opts))


if __name__ == "__main__":
    main()
