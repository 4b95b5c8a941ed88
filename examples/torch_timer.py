"""A benchmark script that times bf16 GEMMs with ``torch.utils.benchmark.Timer``, unchanged for
nsightwrap: ``blocked_autorange`` per shape, ``timeit`` and ``adaptive_autorange`` on one.

    python examples/torch_timer.py [--min-run-time S]
    nsightwrap profile examples/torch_timer.py

The Timer synchronizes the GPU around each block of ``number`` runs and reads the host clock, so
its per-run median includes the launches; ``nsightwrap profile`` captures every Measurement and
cross-checks it against ncu and nsys (docs/capture.md).
"""

from __future__ import annotations

import argparse

import torch
from torch.utils.benchmark import Timer

SHAPES = ((64, 4096, 4096), (2, 19456, 2560), (2048, 19456, 2560))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-run-time", type=float, default=0.05, help="blocked_autorange's min_run_time (s)")
    args = ap.parse_args()
    torch.manual_seed(0)
    results = []
    for m, n, k in SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        t = Timer(
            stmt="torch.nn.functional.linear(x, w)", globals={"x": x, "w": w},
            label="linear", sub_label=f"{m}x{n}x{k}", description="bf16",
        )  # fmt: skip
        m_ = t.blocked_autorange(min_run_time=args.min_run_time)
        results.append(m_)
        print(m_)
    x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    t = Timer(stmt="torch.nn.functional.linear(x, w)", globals={"x": x, "w": w})
    print(t.timeit(200))
    print(t.adaptive_autorange(min_run_time=0.02, max_run_time=0.5))
    for r in results:
        print(f"{r.task_spec.sub_label}: {r.median * 1e6:.2f} us per run")


if __name__ == "__main__":
    main()
