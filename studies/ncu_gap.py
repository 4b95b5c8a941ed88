"""What ncu's replay does to a kernel that the timer's sample does not (studies/timer-accuracy-log.md,
"What ncu's reading depends on").

    python3 -m studies.ncu_gap --rounds 3 --json ncu-gap.json > ncu-gap.md
    python3 -m studies.ncu_gap --tables-from studies/results/ncu-gap.json.gz   # the tables again, no GPU

For kernels of benchmarks/timer_accuracy.py, each set-up of ``CONDITIONS`` is queued before
the kernel, and the kernel is read in this process and under ncu:

- the event window less the empty window taken with the same set-up, as ``nsightwrap.bench``
  reads it (median of ``--samples`` samples per round);
- CUPTI's kernel time (``torch.profiler``) of 10 more calls with that set-up;
- ``gpu__time_duration.sum`` under ``ncu --clock-control none``, ``--ncu-iters`` iterations per
  set-up, in four ncu runs (``NCU_RUNS``): with the SM clock and DRAM reads (one replay pass) at
  ``--cache-control all`` (ncu's default) and at ``none``; with the metrics of ``nsightwrap
  profile``'s ncu pass (12 replay passes, device memory backed up around them); and alone.

Rounds rotate the order of the set-ups. Needs a GPU and ncu. The driver of such a study
(``Study``, ``study_main``) serves studies/add_study.py too.
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import KERNELS, ROOT, child_env, make_kernel, module_argv, ncu_refs, ncu_rows
from nsightwrap.core import contract
from nsightwrap.run.launch import DEFAULT_NCU_METRICS

#: key -> what is queued before the window (every set-up ends in the timer's short hold, so the
#: event window never holds the launch latency).
CONDITIONS = {
    "timer": "flush (2x L2, write then read), short hold: nsightwrap.bench's sample",
    "noflush": "no flush (L2 warm from the previous call), short hold",
    "flush8x": "a flush of 8x the L2 (4x the pages), short hold",
    "hold1ms": "flush, then a 1 ms hold (SMs spinning, memory quiet)",
    "idle1ms": "flush, synchronize, 1 ms with the GPU idle, short hold",
    "idle20ms": "flush, synchronize, 20 ms with the GPU idle, short hold",
    "copy2g": "flush, a 2 GiB device-to-device copy (as a replay's memory restore), short hold",
    "nohold": "flush, then the kernel at once (no hold: the event window holds the launch too)",
}
DEFAULT_KERNELS = ("add_4k", "relu_1m", "mm_skinny", "add_16m", "layernorm_4k")
ONE_PASS_METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "dram__bytes_read.sum")
#: The ncu runs: key -> (--cache-control, metrics). ``multi`` collects what ``nsightwrap
#: profile``'s ncu pass collects, which ncu replays in many passes.
NCU_RUNS = {
    "all": ("all", ONE_PASS_METRICS),
    "none": ("none", ONE_PASS_METRICS),
    "multi": ("all", DEFAULT_NCU_METRICS),
    "dur": ("all", ("gpu__time_duration.sum",)),
}


class Setups:
    """Queues each condition's set-up on the current stream (torch imported by the caller)."""

    def __init__(self, gpu: Any) -> None:
        torch = gpu.torch
        self.gpu = gpu
        self.big = torch.empty(8 * gpu.device["l2_bytes"] // 4, dtype=torch.int32, device=f"cuda:{gpu.index}")
        self.short_hold = 0
        self._copy: tuple[Any, Any] | None = None

    def size_hold(self, fn: Callable[[], Any], stamps: Any) -> None:
        from nsightwrap.timer.gpu import enqueue_cost_s

        enq = enqueue_cost_s(self.gpu, fn, True, 0.01, stamps)
        self.short_hold = int((1.5 * enq + 20e-6) * self.gpu.max_sm_hz)

    def before(self, cond: str) -> int:
        """Queue the set-up of ``cond`` up to its hold; returns the hold in cycles."""
        gpu, torch = self.gpu, self.gpu.torch
        if cond == "flush8x":
            self.big.fill_(1)
            self.big.sum()
        elif cond != "noflush":
            gpu.flush()
        if cond == "copy2g":
            if self._copy is None:
                dev = f"cuda:{gpu.index}"
                self._copy = (
                    torch.empty(2**30, dtype=torch.uint8, device=dev),
                    torch.ones(2**30, dtype=torch.uint8, device=dev),
                )
            for _ in range(2):
                self._copy[0].copy_(self._copy[1])
        if cond.startswith("idle"):
            torch.cuda.synchronize()
            time.sleep(float(cond[4:-2]) / 1e3)
        if cond == "hold1ms":
            return int(1e-3 * gpu.max_sm_hz)
        if cond == "nohold":
            return 0
        return self.short_hold


#: A study's kernel: ``prepare(setups, name)`` -> (the kernel's callable, ``before(cond)`` which
#: queues set-up ``cond`` and returns the hold in cycles that ends it).
Prepare = Callable[[Setups, str], tuple[Callable[[], Any], Callable[[str], int]]]


def _prepare(setups: Setups, name: str) -> tuple[Callable[[], Any], Callable[[str], int]]:
    """This study's kernels: those of benchmarks/timer_accuracy.py, set up by ``Setups.before``."""
    return make_kernel(name)[0], setups.before


@dataclass(frozen=True)
class Study:
    """A set-up study: each kernel after each set-up, read in this process (events less empty,
    CUPTI) and in one ncu run per ``ncu_runs`` entry (key -> (``--cache-control``, metrics))."""

    #: The study's module (``studies.<name>``): its child mode runs as ``python -m`` under ncu.
    module: str
    title: str
    kernels: Sequence[str]
    default_kernels: Sequence[str]
    conditions: Mapping[str, str]
    ncu_runs: Mapping[str, tuple[str, Sequence[str]]]
    prepare: Prepare
    render: Callable[[dict[str, Any]], str]
    samples: int = 40
    ncu_iters: int = 5


def measure_plain(study: Study, names: Sequence[str], rounds: int, samples: int) -> dict[str, Any]:
    """Event windows less empty and CUPTI kernel times per kernel, set-up and round (rounds rotate
    the order of the set-ups)."""
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
    conds = list(study.conditions)
    for name in names:
        fn, before = study.prepare(setups, name)
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        setups.size_hold(fn, stamps)
        rec: dict[str, Any] = {"short_hold_cycles": setups.short_hold, "rounds": []}

        def one(
            runner: Callable[[], Any] | None, cond: str, i: int | None, before: Callable[[str], int] = before
        ) -> float:
            return window_ns(
                gpu, runner, s, e, hold_cycles=before(cond), flush=False, stamps=stamps, index=i, nvtx=False
            )

        for r in range(rounds):
            row: dict[str, Any] = {}
            for cond in conds[r % len(conds) :] + conds[: r % len(conds)]:
                empty = statistics.median(one(None, cond, None) for _ in range(max(10, samples // 3)))
                raw = [one(fn, cond, i) for i in range(samples)]

                def take(j: int, c: str = cond, fn: Callable[[], Any] = fn) -> None:
                    one(fn, c, j)

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
        del fn, before
        torch.cuda.empty_cache()
    return {"gpu": gpu.device, "kernels": out}


def child_ncu(study: Study, names: Sequence[str], iters: int) -> None:
    """Under ncu: per kernel and set-up, ``iters`` iterations, each after its set-up and in its
    own ``iter<i>`` range (only those kernels are profiled)."""
    import torch

    from nsightwrap.timer.gpu import DOMAIN, gpu_state

    gpu = gpu_state()
    setups = Setups(gpu)
    setups.short_hold = int(50e-6 * gpu.max_sm_hz)  # nothing is timed here: a fixed hold will do
    for name in names:
        fn, before = study.prepare(setups, name)
        fn()
        torch.cuda.synchronize()
        for cond in study.conditions:
            DOMAIN.push_range(message=f"{name}.{cond}")
            for i in range(iters):
                hold = before(cond)
                if hold:
                    torch.cuda._sleep(hold)
                DOMAIN.push_range(message=f"{contract.ITER_PREFIX}{i}")
                fn()
                DOMAIN.pop_range()
            torch.cuda.synchronize()
            DOMAIN.pop_range()
        del fn, before


def run_ncu(study: Study, names: Sequence[str], workdir: Path, iters: int, key: str) -> list[dict[str, Any]]:
    """The study's script in child mode under ``ncu --clock-control none``, ncu run ``key``."""
    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu is not on PATH")
    cache, metrics = study.ncu_runs[key]
    rep = workdir / f"{study.module.rpartition('.')[2]}_{key}"
    argv = [
        ncu, "--clock-control", "none", "--cache-control", cache, *contract.ncu_iteration_filter(),
        "--metrics", ",".join(metrics), "-o", str(rep), "-f",
        *module_argv(study.module, "--child-ncu", "--only", ",".join(names)),
        "--ncu-iters", str(iters),
    ]  # fmt: skip
    env = child_env({k: v for k, v in os.environ.items() if k not in (contract.ENV_PASS, contract.ENV_RUN_DIR)})
    return ncu_rows(argv, env, rep, f"{key} (--cache-control {cache})", timeout=400)


def study_main(study: Study, doc: str | None, argv: Sequence[str] | None = None) -> None:
    """The command line of a study: ``--tables-from`` prints a saved run's table; otherwise the
    in-process readings, then every ncu run, the JSON rewritten after each stage."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples", type=int, default=study.samples, help="event samples per set-up and round")
    ap.add_argument(
        "--ncu-iters", type=int, default=study.ncu_iters, help="profiled iterations per set-up under ncu"
    )
    ap.add_argument(
        "--only",
        default=",".join(study.default_kernels),
        help=f"comma-separated, from: {', '.join(study.kernels)}",
    )
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--tables-from", type=Path, metavar="JSON", help="print the table of a saved --json (no GPU)"
    )
    ap.add_argument("--child-ncu", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.tables_from:
        print(study.render(load(args.tables_from)), end="")
        return
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in study.kernels]
    if unknown:
        raise SystemExit(f"unknown kernel(s) {', '.join(unknown)}; choose from {', '.join(study.kernels)}")
    if args.child_ncu:
        child_ncu(study, names, args.ncu_iters)
        return
    import torch

    out: dict[str, Any] = {
        "header": f"{study.title} on {torch.cuda.get_device_name()} (torch {torch.__version__}), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.rounds} rounds of {args.samples} samples, "
        f"ncu {args.ncu_iters} iterations per set-up.",
        "command": " ".join(
            ["python3", "-m", study.module, *(argv if argv is not None else sys.argv[1:])]
        ),
    }

    def keep() -> None:
        if args.json:
            args.json.write_text(json.dumps(out, indent=1, default=str))

    out["plain"] = measure_plain(study, names, args.rounds, args.samples)
    keep()
    with tempfile.TemporaryDirectory(dir=ROOT if os.access(ROOT, os.W_OK) else None) as tmp:
        for key in study.ncu_runs:
            out[f"ncu_{key}"] = run_ncu(study, names, Path(tmp), args.ncu_iters, key)
            keep()
    print(study.render(out), end="")


# ---------------------------------------------------------------------------------------------
# Tables (pure Python: tested on CPU over a recorded run)


def median_of(vals: Sequence[float | None]) -> float | None:
    """The median of the values that are not None; None when there are none."""
    good = [v for v in vals if v is not None]
    return float(statistics.median(good)) if good else None


def _rows_of(rows: Sequence[dict[str, Any]], bench: str) -> list[dict[str, Any]]:
    path = f"{contract.NVTX_DOMAIN}:{bench}/"
    return [r for r in rows if str(r.get("nvtx_path") or "").startswith(path)]


def _med_col(rows: Sequence[dict[str, Any]], col: str) -> float | None:
    return median_of([float(r[col]) for r in rows if r.get(col) is not None])


def plain_medians(doc: dict[str, Any], conditions: Iterable[str]) -> list[dict[str, Any]]:
    """One row per kernel and set-up of a saved study: the in-process readings' medians over the
    rounds (ns): ``events_ns``, ``empty_ns`` (absent in older runs: None), ``kernel_ns``."""
    rows = []
    for name, rec in doc["plain"]["kernels"].items():
        for cond in conditions:
            per = [r[cond] for r in rec["rounds"] if cond in r]
            if per:
                rows.append({
                    "kernel": name,
                    "condition": cond,
                    **{k: median_of([p.get(k) for p in per]) for k in ("events_ns", "empty_ns", "kernel_ns")},
                })  # fmt: skip
    return rows


def gap_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per kernel and condition: medians over the rounds (ns) and each ncu run's
    median duration (ns), DRAM bytes read (MB), replay passes and bytes backed up (GB)."""
    runs = [k for k in NCU_RUNS if doc.get(f"ncu_{k}")]
    refs = {k: ncu_refs(doc[f"ncu_{k}"]) for k in runs}
    rows = plain_medians(doc, CONDITIONS)
    for row in rows:
        bench = f"{row['kernel']}.{row['condition']}"
        for k in runs:
            ref = refs[k].get(bench)
            mine = _rows_of(doc[f"ncu_{k}"], bench)
            row[f"ncu_{k}_ns"] = ref.duration_ns if ref else None
            row[f"ncu_{k}_dram_mb"] = _none_div(_med_col(mine, "dram__bytes_read.sum"), 1e6)
            row[f"ncu_{k}_passes"] = _med_col(mine, "profiler__replayer_passes")
            row[f"ncu_{k}_backed_up_gb"] = _none_div(
                _med_col(mine, "profiler__replayer_bytes_mem_backed_up.sum"), 1e9
            )
    return rows


def _none_div(v: float | None, d: float) -> float | None:
    return None if v is None else v / d


def _us(v: float | None) -> str:
    return "" if v is None else f"{v / 1e3:.2f}"


def _num(v: float | None, fmt: str) -> str:
    return "" if v is None else format(v, fmt)


def gap_table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: per kernel and set-up, every reading in us, ncu's passes and DRAM reads. ncu's
    runs: the duration alone; the duration with the SM clock and DRAM reads (one pass, cache
    control all and none); the profile's metrics (many passes)."""
    lines = [
        "| kernel | set-up | events less empty us | CUPTI kernel us | ncu duration alone us | ncu 1 pass us "
        "| ncu 1 pass, cache none us | ncu profile metrics us (passes, GB backed up) "
        "| DRAM read MB (1 pass / cache none) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        multi = r.get("ncu_multi_ns")
        m = _us(multi)
        if multi is not None:
            m += (
                f" ({_num(r.get('ncu_multi_passes'), '.0f')}, {_num(r.get('ncu_multi_backed_up_gb'), '.1f')})"
            )
        lines.append(
            f"| {r['kernel']} | {r['condition']} | {_us(r['events_ns'])} | {_us(r['kernel_ns'])} "
            f"| {_us(r.get('ncu_dur_ns'))} | {_us(r.get('ncu_all_ns'))} | {_us(r.get('ncu_none_ns'))} | {m} "
            f"| {_num(r.get('ncu_all_dram_mb'), '.1f')} / {_num(r.get('ncu_none_dram_mb'), '.1f')} |"
        )
    return "\n".join(lines) + "\n"


def render(doc: dict[str, Any]) -> str:
    """The header, the set-ups and the table of a run."""
    head = [
        doc.get("header", ""),
        "",
        "Set-ups (each ends in the timer's short hold unless it says otherwise):",
        "",
    ]
    head += [f"- `{k}`: {v}" for k, v in CONDITIONS.items()]
    return "\n".join(head) + "\n\n" + gap_table(gap_rows(doc))


def load(path: Path) -> dict[str, Any]:
    """A saved ``--json`` run (or its ``.gz``)."""
    raw = path.read_bytes()
    return dict(json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw))


STUDY = Study(
    module="studies.ncu_gap",
    title="ncu gap study",
    kernels=tuple(KERNELS),
    default_kernels=DEFAULT_KERNELS,
    conditions=CONDITIONS,
    ncu_runs=NCU_RUNS,
    prepare=_prepare,
    render=render,
)


def main(argv: Sequence[str] | None = None) -> None:
    study_main(STUDY, __doc__, argv)


if __name__ == "__main__":
    main()
