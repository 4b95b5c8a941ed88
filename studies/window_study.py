"""What the commands around a timed window add to it, on long kernels as on short ones
(docs/timer.md, "What precedes the window").

    python3 -m studies.window_study --rounds 8 --json window-study.json

For each kernel of benchmarks/timer_accuracy.py, in rounds, with the variants interleaved in a
rotating order, one sample per synchronize, each variant's own empty window (the same commands,
nothing between the events) subtracted:

- ``timer``: nsightwrap's sample (``timer.gpu.window_ns``): flush, hold, stamp, window, stamp;
- ``no stamps``: the same without the two stamp kernels;
- ``twin before window``: flush, hold, then the same kernel on other inputs, then the window: the
  kernel's code, launch configuration and shared-memory carve-out are in place, its data is cold;
- ``twin before flush``: the twin first, then flush and hold, then the window;
- ``reference flush``: the reference loop's flush (zero one buffer, sum another) instead of the
  timer's, the timer's hold, no stamps;
- ``nsightwrap.bench``: the whole timer (0.5 s budget);
- ``reference loop`` (``.ref/reference_loop.py``, when it is there).

Prints the medians over the rounds (us) and writes every round to --json. Needs a GPU;
``--tables-from JSON`` prints the table of a saved run without one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import KERNELS, make_kernel, reference_loop, round_line

#: Each variant's commands before the start event (``twin``: the kernel on other inputs) and
#: whether the stamp kernel follows the end event.
VARIANTS: dict[str, tuple[tuple[str, ...], bool]] = {
    "timer": (("flush", "hold", "stamp"), True),
    "no stamps": (("flush", "hold"), False),
    "twin before window": (("flush", "hold", "twin"), False),
    "twin before flush": (("twin", "flush", "hold"), False),
    "reference flush": (("ref_flush", "hold"), False),
}
DEFAULT_KERNELS = ("mm_square", "attention", "softmax_4k", "layernorm_4k", "mm_skinny", "add_4k")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--samples", type=int, default=200, help="samples per variant and round")
    ap.add_argument(
        "--only", default="", help=f"comma-separated kernels (default {','.join(DEFAULT_KERNELS)})"
    )
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--tables-from", type=Path, metavar="JSON", help="print the table of a saved --json file (no GPU)"
    )
    args = ap.parse_args(argv)
    if args.tables_from:
        print(render(load(args.tables_from)))
        return

    import torch

    import nsightwrap as nw
    from nsightwrap.timer.gpu import enqueue_cost_s, gpu_state, window_ns
    from nsightwrap.timer.stamps import Stamps

    gpu = gpu_state()
    names = [n for n in args.only.split(",") if n] or list(DEFAULT_KERNELS)
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        raise SystemExit(f"unknown kernel(s): {', '.join(unknown)} (known: {', '.join(KERNELS)})")
    stamps, why = Stamps.load(torch, gpu.device["sm_count"], f"cuda:{gpu.index}", args.samples)
    if stamps is None:
        raise SystemExit(f"the stamp kernel is needed: {why}")
    ref = reference_loop()
    l2 = int(gpu.device["l2_bytes"])
    zbuf = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    rbuf = torch.ones(2 * l2 // 4, dtype=torch.float32, device="cuda")
    acc = torch.empty((), device="cuda")
    s, e = gpu.event(), gpu.event()
    out: dict[str, Any] = {"gpu": gpu.device["name"], "uuid": gpu.device.get("uuid"), "kernels": {}}

    def sample(steps: tuple[str, ...], stamp_after: bool, fn: Callable[[], Any] | None,
               twin: Callable[[], Any], hold: int, i: int) -> float:  # fmt: skip
        for step in steps:
            if step == "flush":
                gpu.flush()
            elif step == "ref_flush":
                zbuf.zero_()
                acc.copy_(rbuf.sum())
            elif step == "hold":
                torch.cuda._sleep(hold)
            elif step == "stamp":
                stamps.before(i)
            elif step == "twin":
                twin()
        s.record()
        if fn is not None:
            fn()
        e.record()
        if stamp_after:
            stamps.after(i)
        e.synchronize()
        return float(s.elapsed_time(e)) * 1e6

    for name in names:
        fn, _, _ = make_kernel(name)
        twin, _, _ = make_kernel(name)  # same kernel, other tensors
        for _ in range(20):
            fn()
            twin()
        torch.cuda.synchronize()
        enq = enqueue_cost_s(gpu, fn, True, 0.01, stamps)
        # The twin is queued inside the hold too: the hold covers two enqueues.
        hold = int((3.0 * enq + 20e-6) * gpu.max_sm_hz)
        rec: dict[str, Any] = {"enqueue_us": enq * 1e6, "hold_cycles": hold, "rounds": []}
        keys = list(VARIANTS)
        for r in range(args.rounds):
            order = keys[r % len(keys) :] + keys[: r % len(keys)]
            row: dict[str, Any] = {}
            for v in order:
                steps, after = VARIANTS[v]
                empty = statistics.median(
                    sample(steps, after, None, twin, hold, i % args.samples) for i in range(40)
                )
                raw = [sample(steps, after, fn, twin, hold, i % args.samples) for i in range(args.samples)]
                row[v] = {"median_ns": statistics.median(raw) - empty, "empty_ns": empty}
            # The timer's own sample function, as bench calls it (a check that "timer" is it).
            w = [window_ns(gpu, fn, s, e, hold_cycles=hold, flush=True, stamps=stamps, index=i, nvtx=False)
                 for i in range(args.samples)]  # fmt: skip
            empty = gpu.measure_empty_window(hold_cycles=hold, flush=True, stamps=stamps)
            row["window_ns"] = {"median_ns": statistics.median(w) - empty, "empty_ns": empty}
            res = nw.bench(fn, name=name, budget_s=0.5)
            row["nsightwrap.bench"] = {"median_ns": res.median_ns, "clock_hz": res.sm_clock_hz}
            if ref is not None:
                row["reference loop"] = {"median_ns": ref.ref_us(fn, n=100) * 1e3}
            rec["rounds"].append(row)
            print(round_line(name, r, row), file=sys.stderr)
        out["kernels"][name] = rec
        del fn, twin
        torch.cuda.empty_cache()
    print(render(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


def load(path: Path) -> dict[str, Any]:
    """A saved --json file (``.gz`` read as gzip)."""
    import gzip

    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    doc: dict[str, Any] = json.loads(raw)
    return doc


def render(out: dict[str, Any]) -> str:
    """The table of medians over the rounds (us), spread (max - min) in brackets."""
    cols: list[str] = []
    for rec in out["kernels"].values():
        for row in rec["rounds"]:
            cols += [c for c in row if c not in cols]
    lines = ["| kernel | " + " | ".join(f"{c} us" for c in cols) + " |", "| --- " * (len(cols) + 1) + "|"]
    for name, rec in out["kernels"].items():
        cells = []
        for c in cols:
            vals = [row[c]["median_ns"] for row in rec["rounds"] if c in row]
            cells.append(
                f"{statistics.median(vals) / 1e3:.3f} ({(max(vals) - min(vals)) / 1e3:.3f})" if vals else ""
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("(median over the rounds; in brackets max - min over the rounds; empty windows subtracted)")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
