"""A sweep of GEMM shapes timed with ``nsightwrap.benchmark``: the kind of work that ``--shard``
and ``--gpus`` split across GPUs and nodes (docs/cluster.md).

    python examples/sweep_shapes.py [--quick] [--m 16,64,256]
    nsightwrap profile --shard 0/2 examples/sweep_shapes.py --quick
    nsightwrap profile --gpus all -o run examples/sweep_shapes.py

Benchmarks ``mm[M=...,N=...]``: bf16 ``linear`` (x @ w.T) with K = 4096, for every M and N.
Only the points of this process's shard are built and timed; the others are skipped unbuilt.
"""

from __future__ import annotations

import argparse

import torch

import nsightwrap as nw

BF16 = torch.bfloat16
K = 4096


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a short time budget per point")
    ap.add_argument("--m", default="16,64,256,1024,2048,4096", help="M values, comma separated")
    ap.add_argument("--n", default="4096", help="N values, comma separated")
    a = ap.parse_args()
    ms = [int(v) for v in a.m.split(",")]
    ns = [int(v) for v in a.n.split(",")]

    @nw.benchmark({"M": ms, "N": ns}, name="mm", flops=lambda M, N: 2 * M * N * K, budget_s=0.25 if a.quick else 1.0)
    def mm(M: int, N: int):  # noqa: N803 - the sweep's parameter names
        x = torch.randn(M, K, device="cuda", dtype=BF16)
        w = torch.randn(N, K, device="cuda", dtype=BF16)
        return lambda: torch.nn.functional.linear(x, w)

    for r in mm():
        print(r)


if __name__ == "__main__":
    main()
