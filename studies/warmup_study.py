"""What the timer's warm-up does to the SM clock of the samples after it (docs/timer.md, "Warm-up").

    python3 -m studies.warmup_study --rounds 4 --json warmup-study.json

For power-hungry kernels of benchmarks/timer_accuracy.py (by default the square GEMM, flash
attention and softmax), in rounds: ``nsightwrap.bench`` with several ``warmup_s`` values, each
followed by the reference loop (``.ref/reference_loop.py``, when it is there). Prints, per kernel
and warm-up, the median over the rounds of the timer's median (us), its measured SM clock (GHz),
the clock of the first and the last sixth of its samples, and the reference loop's median.
Needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import make_kernel, reference_loop


def _sixths(clocks: Sequence[float | None]) -> tuple[float, float]:
    c = [float(v) for v in clocks if v]
    q = max(1, len(c) // 6)
    return statistics.median(c[:q]), statistics.median(c[-q:])


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--only", default="mm_square,attention,softmax_4k")
    ap.add_argument("--warmups", default="0.025,0.005,0.001,0", help="warmup_s values, comma-separated")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    import nsightwrap as nw

    ref = reference_loop()
    warmups = [float(w) for w in args.warmups.split(",")]
    out: dict[str, Any] = {}
    for name in args.only.split(","):
        fn, _, _ = make_kernel(name)
        fn()
        rows: dict[str, list[dict[str, float]]] = {str(w): [] for w in warmups}
        for r in range(args.rounds):
            for w in warmups[r % len(warmups) :] + warmups[: r % len(warmups)]:
                res = nw.bench(fn, name=name, warmup_s=w, budget_s=0.25, min_samples=20, energy_s=0.0)
                first, last = _sixths(res.sample_clock_hz or ())
                row = {
                    "timer_ns": float(res.median_ns), "clock_hz": float(res.sm_clock_hz or 0.0),
                    "first_clock_hz": first, "last_clock_hz": last,
                    "warmup_calls": float(res.method["warmup_calls"]), "samples": float(len(res.samples_ns)),
                    "ref_ns": ref.ref_us(fn, n=100) * 1e3 if ref is not None else float("nan"),
                }  # fmt: skip
                rows[str(w)].append(row)
                print(f"{name} warmup_s={w} round {r}: " + ", ".join(f"{k} {v:.4g}" for k, v in row.items()),
                      file=sys.stderr)  # fmt: skip
        out[name] = rows
    print("| kernel | warmup_s | timer us | clock GHz | first sixth GHz | last sixth GHz | reference loop us |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, rows in out.items():
        for wk, recs in rows.items():

            def med(k: str, recs: list[dict[str, float]] = recs) -> float:
                return statistics.median(x[k] for x in recs)

            print(f"| {name} | {wk} | {med('timer_ns') / 1e3:.2f} | {med('clock_hz') / 1e9:.3f} | "
                  f"{med('first_clock_hz') / 1e9:.3f} | {med('last_clock_hz') / 1e9:.3f} | {med('ref_ns') / 1e3:.2f} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
