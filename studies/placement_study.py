"""Does a 2 us add's duration depend on where its buffers lie in device memory?
(studies/timer-accuracy-log.md, "Where the buffers lie").

    python3 -m studies.placement_study --placements 16 --json placement-study.json > placement-study.md
    python3 -m studies.placement_study --tables-from studies/results/placement-study.json.gz   # no GPU

The add of ``--elements`` fp32 elements (``torch.add(a, b, out=o)``) is read at ``--placements``
places: each place is three slices (a, b, o) of one large pool, 2 MiB apart, at an offset of
its own. One more, ``alloc``, takes its buffers from ``torch.randn``/``torch.empty`` as
benchmarks/timer_accuracy.py does. Each place is read

- in ``--plain-runs`` processes of their own, by ``nsightwrap.bench`` (its median and its CUPTI
  kernel time), twice per process (the places in order, then in reverse);
- in ``--ncu-runs`` processes under ``ncu --clock-control none`` (duration alone), through the
  timer's ncu pass (flush, one call per ``iter<i>`` range, ``--ncu-iters`` iterations).

Physical pages differ between processes, so places are compared within a process: the spread
over places, against how well one place repeats within the process (its two readings).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, child_env, module_argv, ncu_refs, ncu_rows
from nsightwrap.core import contract
from studies.ncu_gap import load  # (a saved run, for --tables-from and the tests)

#: Bytes between two places in the pool, and the extra shift of each (so that places differ
#: in their offset within a 2 MiB page too); a place holds a, b and o 2 MiB apart.
PLACE_STRIDE = 6 * 2**20
PLACE_SHIFT = 20 * 2**10
ALLOC = "alloc"
#: The largest add: its three fp32 buffers must fit between the 2 MiB steps of a place.
MAX_ELEMENTS = 2**21 // 4


def place_names(n: int) -> list[str]:
    """The places' benchmark names: ``p00`` .. and ``alloc``."""
    return [f"p{i:02d}" for i in range(n)] + [ALLOC]


def _adder(torch: Any, a: Any, b: Any, o: Any) -> Callable[[], Any]:
    return lambda: torch.add(a, b, out=o)


def make_adds(n_places: int, elements: int) -> dict[str, Callable[[], Any]]:
    """One add per place, its buffers filled with random values."""
    import torch

    torch.manual_seed(0)
    nbytes = 4 * elements
    pool = torch.empty(
        n_places * (PLACE_STRIDE + PLACE_SHIFT) + PLACE_STRIDE, dtype=torch.uint8, device="cuda"
    )
    fns: dict[str, Callable[[], Any]] = {}
    for i, name in enumerate(place_names(n_places)[:-1]):
        off = i * (PLACE_STRIDE + PLACE_SHIFT)
        a, b, o = (pool[off + j * 2**21 : off + j * 2**21 + nbytes].view(torch.float32) for j in range(3))
        a.copy_(torch.randn(elements, device="cuda"))
        b.copy_(torch.randn(elements, device="cuda"))
        fns[name] = _adder(torch, a, b, o)
    fns[ALLOC] = _adder(
        torch,
        torch.randn(elements, device="cuda"),
        torch.randn(elements, device="cuda"),
        torch.empty(elements, device="cuda"),
    )
    return fns  # the slices keep the pool alive


def child_plain(n_places: int, elements: int, out: Path) -> None:
    """Each place through ``nsightwrap.bench``, in order and then in reverse; JSON to ``out``."""
    import nsightwrap as nw

    fns = make_adds(n_places, elements)
    names = place_names(n_places)
    readings: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for order in (names, names[::-1]):
        for name in order:
            res = nw.bench(fns[name], name=name, budget_s=0.25, min_samples=20, energy_s=0.0)
            readings[name].append({
                "median_ns": res.median_ns,
                "kernel_ns": res.kernel_ns,
                "empty_ns": res.method.get("empty_window_ns"),
                "clock_hz": res.sm_clock_hz,
                "n": res.n,
            })  # fmt: skip
            print(f"  {res}", file=sys.stderr)
    out.write_text(json.dumps(readings))


def child_ncu(n_places: int, elements: int) -> None:
    """Under ncu (NSIGHTWRAP_PASS=ncu set by the parent): the timer's profiled iterations per place."""
    import nsightwrap as nw

    fns = make_adds(n_places, elements)
    for name in place_names(n_places):
        nw.bench(fns[name], name=name)


def _child_argv(args: argparse.Namespace, *mode: str) -> list[str]:
    return [
        *module_argv("studies.placement_study"),
        "--placements", str(args.placements), "--elements", str(args.elements), *mode,
    ]  # fmt: skip


def run_plain(args: argparse.Namespace, work: Path, k: int) -> dict[str, Any]:
    out = work / f"plain{k}.json"
    env = child_env({key: v for key, v in os.environ.items() if key not in (contract.ENV_PASS, contract.ENV_RUN_DIR)})
    done = subprocess.run(_child_argv(args, "--child-plain", str(out)), env=env, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"plain child {k} failed ({done.returncode})")
    return dict(json.loads(out.read_text()))


def run_ncu(args: argparse.Namespace, work: Path, k: int) -> list[dict[str, Any]]:
    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu is not on PATH")
    rep = work / f"placement_ncu{k}"
    argv = [
        ncu, "--clock-control", "none", *contract.ncu_iteration_filter(),
        "--metrics", "gpu__time_duration.sum", "-o", str(rep), "-f", *_child_argv(args, "--child-ncu"),
    ]  # fmt: skip
    env = child_env({key: v for key, v in os.environ.items() if key != contract.ENV_RUN_DIR})
    env.update({contract.ENV_PASS: contract.PASS_NCU, contract.ENV_NCU_ITERS: str(args.ncu_iters)})
    return ncu_rows(argv, env, rep, f"run {k}", timeout=400)


# ---------------------------------------------------------------------------------------------
# Tables (pure Python: tested on CPU over a recorded run)


def _us(v: float | None) -> str:
    return "" if v is None else f"{v / 1e3:.3f}"


def process_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per process and reading: over the places (``alloc`` left out), the median, min
    and max (ns); for the plain readings also the median |difference| between a place's two
    readings in that process (how well one place repeats)."""
    rows: list[dict[str, Any]] = []
    for k, plain in enumerate(doc.get("plain") or []):
        for key, label in (("median_ns", "nsightwrap.bench"), ("kernel_ns", "CUPTI kernel")):
            per = {n: [r[key] for r in rs if r.get(key) is not None] for n, rs in plain.items() if n != ALLOC}
            vals = [statistics.median(v) for v in per.values() if v]
            repeat = [abs(v[0] - v[1]) for v in per.values() if len(v) >= 2]
            alloc = [r[key] for r in plain.get(ALLOC, []) if r.get(key) is not None]
            rows.append(_row(f"plain {k}", label, vals, repeat, statistics.median(alloc) if alloc else None))
    for k, rows_ncu in enumerate(doc.get("ncu") or []):
        refs = ncu_refs(rows_ncu)
        vals = [r.duration_ns for n, r in refs.items() if n != ALLOC]
        alloc_ref = refs.get(ALLOC)
        rows.append(_row(f"ncu {k}", "ncu duration", vals, [], alloc_ref.duration_ns if alloc_ref else None))
    return rows


def _row(
    proc: str, what: str, vals: Sequence[float], repeat: Sequence[float], alloc: float | None
) -> dict[str, Any]:
    return {
        "process": proc,
        "reading": what,
        "places": len(vals),
        "median_ns": statistics.median(vals) if vals else None,
        "min_ns": min(vals) if vals else None,
        "max_ns": max(vals) if vals else None,
        "repeat_ns": statistics.median(repeat) if repeat else None,
        "alloc_ns": alloc,
    }


def table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| process | reading | places | median us | min us | max us | max - min us | a place's two readings differ by (median) us | `alloc` us |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        span = None if r["min_ns"] is None else r["max_ns"] - r["min_ns"]
        lines.append(
            f"| {r['process']} | {r['reading']} | {r['places']} | {_us(r['median_ns'])} | {_us(r['min_ns'])} "
            f"| {_us(r['max_ns'])} | {_us(span)} | {_us(r['repeat_ns'])} | {_us(r['alloc_ns'])} |"
        )
    return "\n".join(lines) + "\n"


def place_table(doc: dict[str, Any]) -> str:
    """Per place: each plain process's two bench readings and CUPTI, each ncu run's median (us)."""
    plains = doc.get("plain") or []
    refs = [ncu_refs(r) for r in doc.get("ncu") or []]
    names = list(plains[0]) if plains else sorted(refs[0]) if refs else []
    head = (
        ["place"]
        + [f"plain {k} bench (two) / CUPTI" for k in range(len(plains))]
        + [f"ncu {k}" for k in range(len(refs))]
    )
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for n in names:
        cells = [n]
        for p in plains:
            rs = p.get(n, [])
            bench = " / ".join(_us(r["median_ns"]) for r in rs)
            cupti = [r["kernel_ns"] for r in rs if r.get("kernel_ns") is not None]
            cells.append(f"{bench} / {_us(statistics.median(cupti)) if cupti else ''}")
        for ref in refs:
            cells.append(_us(ref[n].duration_ns) if n in ref else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def place_correlations(doc: dict[str, Any]) -> dict[str, list[float]]:
    """Per reading (``bench``, ``cupti``, ``ncu``): the correlation of the places' values (``alloc``
    left out) between every two processes: whether a place reads alike in another process."""
    import numpy as np

    names = [n for n in (doc.get("plain") or [{}])[0] if n != ALLOC]
    per: dict[str, list[list[float]]] = {"bench": [], "cupti": [], "ncu": []}
    for plain in doc.get("plain") or []:
        per["bench"].append([statistics.median(r["median_ns"] for r in plain[n]) for n in names])
        per["cupti"].append([statistics.median(r["kernel_ns"] for r in plain[n]) for n in names])
    for rows in doc.get("ncu") or []:
        refs = ncu_refs(rows)
        per["ncu"].append([refs[n].duration_ns for n in names])
    out = {}
    for key, m in per.items():
        c = np.corrcoef(np.asarray(m)) if len(m) > 1 else np.ones((1, 1))
        out[key] = [float(c[i, j]) for i in range(len(m)) for j in range(i + 1, len(m))]
    return out


def render(doc: dict[str, Any]) -> str:
    corr = place_correlations(doc)
    line = "Correlation of the places' values between two processes: " + "; ".join(
        f"{k} {', '.join(f'{v:.2f}' for v in vs)}" for k, vs in corr.items()
    )
    return f"{doc.get('header', '')}\n\n{table(process_rows(doc))}\n{line}\n\n{place_table(doc)}"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--placements", type=int, default=16, help="places in the pool (plus `alloc`)")
    ap.add_argument("--elements", type=int, default=4096, help="fp32 elements of the add")
    ap.add_argument("--plain-runs", type=int, default=2, help="processes reading every place in-process")
    ap.add_argument("--ncu-runs", type=int, default=2, help="processes reading every place under ncu")
    ap.add_argument("--ncu-iters", type=int, default=30, help="profiled iterations per place under ncu")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--tables-from", type=Path, metavar="JSON", help="print a saved --json's tables (no GPU)")
    ap.add_argument("--child-plain", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--child-ncu", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.tables_from:
        print(render(load(args.tables_from)), end="")
        return
    if args.placements < 2:
        ap.error("--placements must be at least 2")
    if not 1 <= args.elements <= MAX_ELEMENTS:
        ap.error(f"--elements must be 1 to {MAX_ELEMENTS} (a place's buffers are 2 MiB apart)")
    if args.child_plain:
        child_plain(args.placements, args.elements, args.child_plain)
        return
    if args.child_ncu:
        child_ncu(args.placements, args.elements)
        return
    import torch

    doc: dict[str, Any] = {
        "header": f"Placement study on {torch.cuda.get_device_name()} (torch {torch.__version__}), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: an add of {args.elements} fp32 elements at "
        f"{args.placements} places and `alloc`; {args.plain_runs} plain processes (two readings per place), "
        f"{args.ncu_runs} ncu runs of {args.ncu_iters} iterations per place.",
        "command": " ".join(
            ["python3", "studies/placement_study.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "plain": [],
        "ncu": [],
    }

    def keep() -> None:
        if args.json:
            args.json.write_text(json.dumps(doc, indent=1, default=str))

    with tempfile.TemporaryDirectory(dir=ROOT if os.access(ROOT, os.W_OK) else None) as tmp:
        # Alternate plain and ncu processes, so that a drift of the GPU over the run shows in both.
        for k in range(max(args.plain_runs, args.ncu_runs)):
            if k < args.plain_runs:
                doc["plain"].append(run_plain(args, Path(tmp), k))
                keep()
            if k < args.ncu_runs:
                doc["ncu"].append(run_ncu(args, Path(tmp), k))
                keep()
    print(render(doc), end="")


if __name__ == "__main__":
    main()
