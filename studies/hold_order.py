"""Where the GPU sleep that holds the queue sits relative to the L2 flush, and what it does to
the event window (docs/timer.md, "The flush settles before the window").

    python3 -m studies.hold_order --rounds 6 --json hold-order.json

For each kernel of benchmarks/timer_accuracy.py, in rounds, with the variants interleaved in a
rotating order: nsightwrap's sample (``timer.gpu.window_ns``, stamps included) with the hold
before the flush (``hold, flush``), with the flush first (``flush, hold``), the flush first and a
1 ms hold (``flush, 1 ms hold``), and the reference loop (``.ref/reference_loop.py``, when it is
there). Each variant's empty window, taken the same way, is subtracted. Prints the medians over
the rounds (us) and writes every round's median and sample histogram to --json. Needs a GPU.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import KERNELS, make_kernel, reference_loop, round_line

VARIANTS = ("hold, flush", "flush, hold", "flush, 1 ms hold")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--samples", type=int, default=150, help="samples per variant and round")
    ap.add_argument("--only", default="", help="comma-separated kernels (default all)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    import torch

    from nsightwrap.timer.gpu import enqueue_cost_s, gpu_state, window_ns
    from nsightwrap.timer.stamps import Stamps

    gpu = gpu_state()
    names = [n for n in args.only.split(",") if n] or list(KERNELS)
    stamps, why = Stamps.load(torch, gpu.device["sm_count"], f"cuda:{gpu.index}", args.samples)
    ref = reference_loop()
    s, e = gpu.event(), gpu.event()
    out: dict[str, Any] = {"stamps": why or "ok", "gpu": gpu.device["name"], "kernels": {}}

    def take(runner: Callable[[], Any] | None, hold: int, first: bool, n: int) -> list[float]:
        vals = []
        for i in range(n):
            vals.append(
                window_ns(gpu, runner, s, e, hold_cycles=hold, flush=True, stamps=stamps, index=i % args.samples,
                          nvtx=False, flush_first=first)
            )  # fmt: skip
        return vals

    for name in names:
        fn, _, _ = make_kernel(name)
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        enq = enqueue_cost_s(gpu, fn, True, 0.01, stamps)
        hold_short = int((1.5 * enq + 20e-6) * gpu.max_sm_hz)
        hold_ms = int(1e-3 * gpu.max_sm_hz)
        setups = {
            "hold, flush": (hold_short, False),
            "flush, hold": (hold_short, True),
            "flush, 1 ms hold": (hold_ms, True),
        }
        rec: dict[str, Any] = {"enqueue_us": enq * 1e6, "rounds": []}
        for r in range(args.rounds):
            order = list(VARIANTS[r % 3 :] + VARIANTS[: r % 3])
            row: dict[str, Any] = {}
            for v in order:
                hold, first = setups[v]
                empty = statistics.median(take(None, hold, first, 40))
                raw = take(fn, hold, first, args.samples)
                per = [w - empty for w in raw]
                hist = collections.Counter(round(w) for w in raw)
                row[v] = {"median_ns": statistics.median(per), "empty_ns": empty,
                          "raw_hist": {str(k): c for k, c in sorted(hist.items())}}  # fmt: skip
            if ref is not None:
                row["reference loop"] = {"median_ns": ref.ref_us(fn, n=100) * 1e3}
            rec["rounds"].append(row)
            print(round_line(name, r, row), file=sys.stderr)
        out["kernels"][name] = rec
        del fn
        torch.cuda.empty_cache()

    cols = list(VARIANTS) + (["reference loop"] if ref is not None else [])
    print("| kernel | " + " | ".join(f"{c} us" for c in cols) + " |")
    print("| --- " * (len(cols) + 1) + "|")
    for name, rec in out["kernels"].items():
        cells = []
        for c in cols:
            vals = [row[c]["median_ns"] for row in rec["rounds"]]
            cells.append(f"{statistics.median(vals) / 1e3:.3f} ({(max(vals) - min(vals)) / 1e3:.3f})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("(median over the rounds; in brackets max - min over the rounds)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
