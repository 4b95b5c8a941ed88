"""Why an event window reads a 2 us add longer than ncu does (docs/timer-accuracy.md, "The 2 us
add").

    python3 benchmarks/add_study.py --rounds 3 --json add-study.json > add-study.md
    python3 benchmarks/add_study.py --tables-from docs/add-study.json.gz   # the table again, no GPU

Elementwise adds of 512 to 1 Mi fp32 elements (``torch.add(a, b, out=o)``, one output buffer
per size, so its cache state is set up like the inputs') and an empty Triton kernel, each after
every set-up of ``CONDITIONS`` (all end in the timer's short hold), read three ways:

- the event window less the empty window taken with the same set-up, as ``nsightwrap.bench``
  reads it (median of ``--samples`` per round, rounds rotate the order of the set-ups);
- CUPTI's kernel time (``torch.profiler``) of 10 more calls with that set-up;
- ``gpu__time_duration.sum`` alone under ``ncu --clock-control none``, ``--ncu-iters`` iterations
  per set-up, at ``--cache-control none`` (the kernel sees the set-up's cache state, as the
  event window does) and at ``all`` (ncu's default: ncu flushes the caches before the kernel).

Needs a GPU, triton and ncu.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ncu_gap import Setups  # noqa: E402
from timer_accuracy import ROOT, ncu_refs, ncu_rows  # noqa: E402

from nsightwrap.core import contract  # noqa: E402

#: name -> elements of the add (0: the empty Triton kernel, one program, touches nothing).
KERNELS = {"null": 0, "add_512": 512, "add_4k": 4096, "add_64k": 65536, "add_1m": 2**20}
#: key -> what is queued before the window, after which the timer's short hold follows.
CONDITIONS = {
    "cold": "the timer's flush (2x L2, write then read): inputs and output cold",
    "warm": "no flush: inputs and output in L2 from the previous call (output dirty)",
    "out_dirty": "flush, then the output zeroed: output in L2 and dirty, inputs cold",
    "out_clean": "flush, then the output summed: output in L2 and clean, inputs cold",
    "in_warm": "flush, then the same add into another buffer: inputs in L2, output cold",
}
NCU_RUNS = {"none": "none", "all": "all"}  # key -> --cache-control


class Add:
    """One kernel of ``KERNELS`` with its buffers and the set-ups that touch them."""

    def __init__(self, torch: Any, name: str) -> None:
        n = KERNELS[name]
        self.torch = torch
        self.n = n
        m = max(n, 1)
        self.a, self.b = torch.randn(m, device="cuda"), torch.randn(m, device="cuda")
        self.out, self.other = torch.empty(m, device="cuda"), torch.empty(m, device="cuda")
        self.fn: Callable[[], Any]
        if n == 0:
            import triton
            import triton.language as tl

            @triton.jit
            def _empty(x_ptr):  # type: ignore[no-untyped-def]
                tl.program_id(0)

            self.fn = lambda: _empty[(1,)](self.out)
        else:
            self.fn = lambda: torch.add(self.a, self.b, out=self.out)

    def before(self, setups: Setups, cond: str) -> int:
        """Queue ``cond``'s set-up; returns the short hold in cycles."""
        if cond != "warm":
            setups.gpu.flush()
        if cond == "out_dirty":
            self.out.zero_()
        elif cond == "out_clean":
            self.out.sum()
        elif cond == "in_warm":
            self.torch.add(self.a, self.b, out=self.other)
        return setups.short_hold


def measure_plain(names: Sequence[str], rounds: int, samples: int) -> dict[str, Any]:
    """Event windows less empty and CUPTI kernel times per kernel, set-up and round."""
    import torch

    from nsightwrap.timer.gpu import gpu_state, window_ns
    from nsightwrap.timer.kerneltime import measure_kernel_time
    from nsightwrap.timer.stamps import Stamps

    gpu = gpu_state()
    stamps, why = Stamps.load(torch, gpu.device["sm_count"], f"cuda:{gpu.index}", samples)
    if stamps is None:
        raise SystemExit(f"the stamp kernel is needed to split CUPTI's calls: {why}")
    setups = Setups(gpu)
    s, e = gpu.event(), gpu.event()
    out: dict[str, Any] = {}
    conds = list(CONDITIONS)
    for name in names:
        k = Add(torch, name)
        for _ in range(20):
            k.fn()
        torch.cuda.synchronize()
        setups.size_hold(k.fn, stamps)
        rec: dict[str, Any] = {"short_hold_cycles": setups.short_hold, "rounds": []}

        def one(runner: Callable[[], Any] | None, cond: str, i: int | None, k: Add = k) -> float:
            hold = k.before(setups, cond)
            return window_ns(
                gpu, runner, s, e, hold_cycles=hold, flush=False, stamps=stamps, index=i, nvtx=False
            )

        for r in range(rounds):
            row: dict[str, Any] = {}
            for cond in conds[r % len(conds) :] + conds[: r % len(conds)]:
                empty = statistics.median(one(None, cond, None) for _ in range(max(10, samples // 3)))
                raw = [one(k.fn, cond, i) for i in range(samples)]

                def take(j: int, c: str = cond, k: Add = k) -> None:
                    one(k.fn, c, j)

                got, why_not = measure_kernel_time(torch, take)
                row[cond] = {
                    "events_ns": statistics.median(raw) - empty,
                    "empty_ns": empty,
                    "kernel_ns": statistics.median(got.kernel_ns) if got else None,
                    "kernel_why_not": why_not,
                }
            rec["rounds"].append(row)
            print(f"{name} round {r}: " + ", ".join(
                f"{c} {v['events_ns'] / 1e3:.2f}/{(v['kernel_ns'] or 0) / 1e3:.2f}" for c, v in row.items()),
                file=sys.stderr)  # fmt: skip
        out[name] = rec
    return {"gpu": gpu.device, "kernels": out}


def child_ncu(names: Sequence[str], iters: int) -> None:
    """Under ncu: per kernel and set-up, ``iters`` iterations, each in its own ``iter<i>`` range."""
    import torch

    from nsightwrap.timer.gpu import DOMAIN, gpu_state

    gpu = gpu_state()
    setups = Setups(gpu)
    setups.short_hold = int(50e-6 * gpu.max_sm_hz)  # nothing is timed here: a fixed hold will do
    for name in names:
        k = Add(torch, name)
        k.fn()
        torch.cuda.synchronize()
        for cond in CONDITIONS:
            DOMAIN.push_range(message=f"{name}.{cond}")
            for i in range(iters):
                torch.cuda._sleep(k.before(setups, cond))
                DOMAIN.push_range(message=f"{contract.ITER_PREFIX}{i}")
                k.fn()
                DOMAIN.pop_range()
            torch.cuda.synchronize()
            DOMAIN.pop_range()


def run_ncu(names: Sequence[str], workdir: Path, iters: int, key: str) -> list[dict[str, Any]]:
    """This script in child mode under ``ncu --clock-control none``, the duration alone."""
    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu is not on PATH")
    rep = workdir / f"add_study_{key}"
    argv = [
        ncu, "--clock-control", "none", "--cache-control", NCU_RUNS[key], *contract.ncu_iteration_filter(),
        "--metrics", "gpu__time_duration.sum", "-o", str(rep), "-f",
        sys.executable, str(Path(__file__).resolve()), "--child-ncu", "--only", ",".join(names),
        "--ncu-iters", str(iters),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in (contract.ENV_PASS, contract.ENV_RUN_DIR)}
    return ncu_rows(argv, env, rep, f"{key} (--cache-control {NCU_RUNS[key]})", timeout=400)


# ---------------------------------------------------------------------------------------------
# Tables (pure Python: tested on CPU over a recorded run)


def _med(vals: Sequence[float | None]) -> float | None:
    good = [v for v in vals if v is not None]
    return float(statistics.median(good)) if good else None


def study_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per kernel and set-up: medians over the rounds (ns) and each ncu run's median."""
    refs = {k: ncu_refs(doc.get(f"ncu_{k}") or []) for k in NCU_RUNS}
    rows = []
    for name, rec in doc["plain"]["kernels"].items():
        for cond in CONDITIONS:
            per = [r[cond] for r in rec["rounds"] if cond in r]
            if not per:
                continue
            row: dict[str, Any] = {
                "kernel": name,
                "condition": cond,
                "events_ns": _med([p["events_ns"] for p in per]),
                "empty_ns": _med([p["empty_ns"] for p in per]),
                "kernel_ns": _med([p["kernel_ns"] for p in per]),
            }
            for key in NCU_RUNS:
                ref = refs[key].get(f"{name}.{cond}")
                row[f"ncu_{key}_ns"] = ref.duration_ns if ref else None
            rows.append(row)
    return rows


def _us(v: float | None) -> str:
    return "" if v is None else f"{v / 1e3:.2f}"


def _diff(a: float | None, b: float | None) -> str:
    return "" if a is None or b is None else f"{(a - b) / 1e3:+.2f}"


def study_table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: per kernel and set-up, every reading in us and the event window less ncu."""
    lines = [
        "| kernel | set-up | events less empty us | CUPTI kernel us | ncu, cache none us | ncu, cache all us "
        "| events - ncu none us | events - ncu all us | ncu none - CUPTI us |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        ev, none, full = r["events_ns"], r.get("ncu_none_ns"), r.get("ncu_all_ns")
        lines.append(
            f"| {r['kernel']} | {r['condition']} | {_us(ev)} | {_us(r['kernel_ns'])} | {_us(none)} | {_us(full)} "
            f"| {_diff(ev, none)} | {_diff(ev, full)} | {_diff(none, r['kernel_ns'])} |"
        )
    return "\n".join(lines) + "\n"


def render(doc: dict[str, Any]) -> str:
    """The header, the set-ups and the table of a run."""
    head = [doc.get("header", ""), "", "Set-ups (each ends in the timer's short hold):", ""]
    head += [f"- `{k}`: {v}" for k, v in CONDITIONS.items()]
    return "\n".join(head) + "\n\n" + study_table(study_rows(doc))


def load(path: Path) -> dict[str, Any]:
    """A saved ``--json`` run (or its ``.gz``)."""
    raw = path.read_bytes()
    return dict(json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw))


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples", type=int, default=60, help="event samples per set-up and round")
    ap.add_argument("--ncu-iters", type=int, default=30, help="profiled iterations per set-up under ncu")
    ap.add_argument("--only", default=",".join(KERNELS), help=f"comma-separated, from: {', '.join(KERNELS)}")
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--tables-from", type=Path, metavar="JSON", help="print the table of a saved --json (no GPU)"
    )
    ap.add_argument("--child-ncu", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.tables_from:
        print(render(load(args.tables_from)), end="")
        return
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        raise SystemExit(f"unknown kernel(s) {', '.join(unknown)}; choose from {', '.join(KERNELS)}")
    if args.child_ncu:
        child_ncu(names, args.ncu_iters)
        return
    import torch

    doc: dict[str, Any] = {
        "header": f"2 us add study on {torch.cuda.get_device_name()} (torch {torch.__version__}), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.rounds} rounds of {args.samples} samples, "
        f"ncu {args.ncu_iters} iterations per set-up.",
        "command": " ".join(
            ["python3", "benchmarks/add_study.py", *(argv if argv is not None else sys.argv[1:])]
        ),
    }

    def keep() -> None:
        if args.json:
            args.json.write_text(json.dumps(doc, indent=1, default=str))

    doc["plain"] = measure_plain(names, args.rounds, args.samples)
    keep()
    with tempfile.TemporaryDirectory(dir=ROOT if os.access(ROOT, os.W_OK) else None) as tmp:
        for key in NCU_RUNS:
            doc[f"ncu_{key}"] = run_ncu(names, Path(tmp), args.ncu_iters, key)
            keep()
    print(render(doc), end="")


if __name__ == "__main__":
    main()
