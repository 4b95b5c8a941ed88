"""Does what ran just before a method move its reading? (docs/timer-accuracy.md, "What ran
before").

    python3 -m studies.order_study --rounds 6 --json order-study.json
    python3 -m studies.order_study --tables-from order-study.json.gz   # no GPU needed

In benchmarks/timer_accuracy.py each kernel's ``nsightwrap.bench`` runs right after the previous
kernel's peers (the do_bench_cuda recipe's fp32 GEMMs, ``triton.testing.do_bench``'s back-to-back
calls) and the reference loop right after the timer's light sampling. This study reads each
kernel, in rounds, in four blocks in a rotating order: after a heavy phase (the do_bench_cuda
recipe on that kernel, ``heat``) or after an idle pause (``idle``), then ``nsightwrap.bench``
and the reference loop (``.ref/reference_loop.py``), timer first or reference first. Each
reading keeps the GPU temperature (NVML) at its start and, for the timer, its stamp clock.
Prints, per kernel, how far the timer reads from the reference loop in each block, and each
method's reading by what preceded it. Needs a GPU for a run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import do_bench_cuda, make_kernel, reference_loop
from studies.ncu_gap import load  # (a saved study, for --tables-from and the tests)

DEFAULT_KERNELS = ("softmax_4k", "layernorm_4k", "add_16m", "attention", "mm_square")
PRECONDITIONS = ("heat", "idle")
ORDERS = (("timer", "ref"), ("ref", "timer"))
#: The four blocks, each a precondition and an order of the two methods.
BLOCKS = tuple((p, o) for p in PRECONDITIONS for o in ORDERS)
#: nsightwrap.bench as benchmarks/timer_accuracy.py calls it.
BENCH_OPTS: dict[str, Any] = {"budget_s": 0.25, "min_samples": 20, "energy_s": 0.0}


def _temp_c(handle: Any) -> float | None:
    try:
        import pynvml

        return float(pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU))
    except Exception:  # no NVML: the reading stays, its temperature is unknown
        return None


def run(names: Sequence[str], rounds: int, idle_s: float) -> dict[str, Any]:
    """Every block of every kernel, ``rounds`` times; round ``r`` starts at block ``r % 4``."""
    import torch

    import nsightwrap as nw
    from nsightwrap.timer.gpu import gpu_state

    gpu = gpu_state()
    ref = reference_loop()
    if ref is None:
        raise SystemExit("order_study needs the reference loop at .ref/reference_loop.py")
    out: dict[str, Any] = {"gpu": gpu.device["name"], "uuid": gpu.device.get("uuid"), "idle_s": idle_s,
                           "bench_opts": BENCH_OPTS, "kernels": {}}  # fmt: skip
    for name in names:
        fn, _, _ = make_kernel(name)
        nw.bench(fn, name=name, **BENCH_OPTS)  # first call, autotuning and warm code for both methods
        rows: list[dict[str, Any]] = []
        for r in range(rounds):
            for b in range(len(BLOCKS)):
                pre, order = BLOCKS[(r + b) % len(BLOCKS)]
                if pre == "heat":
                    do_bench_cuda(fn, n=30)
                else:
                    torch.cuda.synchronize()
                    time.sleep(idle_s)
                row: dict[str, Any] = {"round": r, "pre": pre, "first": order[0]}
                for m in order:
                    row[f"{m}_temp_c"] = _temp_c(gpu.nvml)
                    if m == "timer":
                        res = nw.bench(fn, name=name, **BENCH_OPTS)
                        row["timer_ns"] = res.median_ns
                        row["timer_clock_hz"] = res.sm_clock_hz
                    else:
                        row["ref_ns"] = ref.ref_us(fn, n=100) * 1e3
                rows.append(row)
                print(f"{name} round {r} {pre} {'/'.join(order)}: timer {row['timer_ns'] / 1e3:.3f} "
                      f"ref {row['ref_ns'] / 1e3:.3f} us", file=sys.stderr)  # fmt: skip
        out["kernels"][name] = rows
        del fn
        torch.cuda.empty_cache()
    return out


def _mean(vals: Sequence[float]) -> float:
    return statistics.fmean(vals) if vals else float("nan")


def block_table(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per kernel and block: the mean over the rounds of the timer's reading against the
    reference loop's (%), with the standard error."""
    out = []
    for name, rows in doc["kernels"].items():
        for pre, order in BLOCKS:
            diffs = [100 * (x["timer_ns"] / x["ref_ns"] - 1) for x in rows if x["pre"] == pre and x["first"] == order[0]]
            sem = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else float("nan")
            out.append({"kernel": name, "pre": pre, "first": order[0], "n": len(diffs),
                        "timer_vs_ref_pct": _mean(diffs), "sem_pct": sem})  # fmt: skip
    return out


def position_table(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per kernel and method: its mean reading (ns) right after the heavy phase, right after the
    idle pause, and second (right after the other method), and its mean start temperature there."""
    out = []
    for name, rows in doc["kernels"].items():
        for m in ("timer", "ref"):
            cells: dict[str, Any] = {"kernel": name, "method": m}
            for slot, pick in (
                ("after heat", lambda x, m=m: x["first"] == m and x["pre"] == "heat"),
                ("after idle", lambda x, m=m: x["first"] == m and x["pre"] == "idle"),
                ("second", lambda x, m=m: x["first"] != m),
            ):
                sel = [x for x in rows if pick(x)]
                cells[f"{slot} ns"] = _mean([x[f"{m}_ns"] for x in sel])
                temps = [x[f"{m}_temp_c"] for x in sel if x.get(f"{m}_temp_c") is not None]
                cells[f"{slot} temp_c"] = _mean(temps)
            out.append(cells)
    return out


def render(doc: dict[str, Any]) -> str:
    lines = ["nsightwrap.bench against the reference loop, per block (mean over the rounds, %; "
             "in brackets the standard error):", "",
             "| kernel | " + " | ".join(f"{p}, {o[0]} first" for p, o in BLOCKS) + " |",
             "| --- " * (len(BLOCKS) + 1) + "|"]  # fmt: skip
    table = block_table(doc)
    for name in doc["kernels"]:
        cells = [f"{c['timer_vs_ref_pct']:+.2f} ({c['sem_pct']:.2f})" for c in table if c["kernel"] == name]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Each method's reading by what ran just before it (mean us; GPU temperature at its start, C):", "",
              "| kernel | method | after heat | after idle | second |", "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for c in position_table(doc):
        cells = [f"{c[f'{s} ns'] / 1e3:.3f} ({c[f'{s} temp_c']:.0f} C)" for s in ("after heat", "after idle", "second")]
        lines.append(f"| {c['kernel']} | {c['method']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--only", default="", help=f"comma-separated kernels (default {','.join(DEFAULT_KERNELS)})")
    ap.add_argument("--idle-s", type=float, default=0.5, help="the idle pause before an idle block (s)")
    ap.add_argument("--json", type=Path, help="write every reading here")
    ap.add_argument("--tables-from", type=Path, help="print the tables of a saved study and exit")
    args = ap.parse_args(argv)
    if args.tables_from:
        print(render(load(args.tables_from)), end="")
        return
    names = [n for n in args.only.split(",") if n] or list(DEFAULT_KERNELS)
    doc = run(names, args.rounds, args.idle_s)
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1))
    print(render(doc), end="")


if __name__ == "__main__":
    main()
