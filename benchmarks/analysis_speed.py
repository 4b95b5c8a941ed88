"""How long the analysis of a 1,000-benchmark run (a parameter sweep) takes, built from real captures.

    python -m benchmarks.analysis_speed [--benchmarks 1000] [--iters 30] [--target-iters N] [--repeat 3] [--keep DIR]

The run directory is made of the H200 run in fixtures/runs/h200-example, benchmark by benchmark:
sweep point ``j`` copies benchmark ``j mod 7`` of that run (mm_large, mm_skinny, mm_small,
add_small, copy_1g, softmax_mlp, two_streams) under the name ``sweep[j=<j>]``:

- ``plain/timer-1.json``: the benchmark's sidecar entry, renamed;
- ``nsys/report.sqlite``: a copy of the real export in which the benchmark's range, its first
  ``--iters`` iterations and every CUDA call and GPU op launched meanwhile are inserted again per
  sweep point, shifted in time (ops, NVTX, runtime rows; correlation ids kept unique).
  With ``--target-iters N`` (``REAL_DO_BENCH_ITERS``, 1,136, is a real ``do_bench`` call's) the
  kept iterations are laid down again one after the other until the sweep point holds ``N``
  (``_copies``): their ops, runtime calls and NVTX ranges shifted by whole periods, correlation ids
  unique per copy, iteration ranges renamed ``iter<i>`` on; the timer samples are repeated to ``N``;
- ``ncu/report.csv``: the benchmark's real ncu rows (every metric the analysis reads) in ncu's
  raw-page CSV, with the sweep point's NVTX path. A ``.ncu-rep`` cannot be written without ncu, so
  the ncu report is read from that CSV (``parsers.ncu.read_ncu_csv``) in place of the run
  directory's ``ncu/report.ncu-rep``: the one substitution.

It times ``nsightwrap.analysis.load.analyze`` on it (best of ``--repeat``) and the stages inside
(nsys parse, ncu CSV parse, the per-benchmark work), and prints the figures recorded in
docs/analysis-speed.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nsightwrap.core.unpack import unpacked

ROOT = Path(__file__).resolve().parent.parent

SOURCE = ROOT / "fixtures" / "runs" / "h200-example"
ACTIVITY = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
#: ncu metrics the analysis reads, and the unit printed for each in the CSV's second line.
NCU_METRICS = {
    "gpu__time_duration.sum": ("duration_ns", "nsecond"),
    "sm__cycles_elapsed.avg.per_second": ("sm_clock_hz", "hz"),
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("sm_throughput_pct", "%"),
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": ("memory_throughput_pct", "%"),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("dram_throughput_pct", "%"),
}
#: How much of the time before a benchmark's first iteration is kept: its first sample's queue
#: hold and flush are launched within it.
LEAD_NS = 300_000
#: Iterations of the median ``do_bench`` call in fixtures/runs/h200-sweep (its five calls ran 154,
#: 198, 1,136, 3,002 and 3,276; that call left 3,613 GPU ops and 19,736 CUDA runtime calls): the
#: real volume ``--target-iters`` builds a benchmark up to.
REAL_DO_BENCH_ITERS = 1136
PUSHPOP = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def _cols(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f"PRAGMA table_info([{table}])")]


def _template_windows(con: sqlite3.Connection, names: list[str], iters: int) -> dict[str, dict[str, Any]]:
    """Per benchmark of the source export: its range row and the time window of its first ``iters``
    iterations: from just before the first (its flush and queue hold are launched there; the
    warm-up before is left out) to the start of iteration ``iters``; and every iteration's start."""
    out = {}
    for name in names:
        (rowid, start, end, tid) = con.execute(
            "SELECT n.rowid, n.start, n.end, n.globalTid FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId "
            "WHERE n.eventType = 59 AND s.value = ?",
            (name,),
        ).fetchone()
        its = con.execute(
            "SELECT n.start, n.end FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId WHERE n.eventType = 59 "
            "AND n.globalTid = ? AND n.start > ? AND n.end <= ? AND s.value GLOB 'iter[0-9]*' ORDER BY n.start",
            (tid, start, end),
        ).fetchall()
        cut = its[iters][0] if len(its) > iters else end
        first = max(start, its[0][0] - LEAD_NS) if its else start
        out[name] = {
            "rowid": rowid,
            "start": first,
            "cut": cut,
            "tid": tid,
            "iterations": min(iters, len(its)),
            "its": [s for s, _ in its],
        }
    return out


def _copies(w: dict[str, Any], target: int | None) -> list[tuple[int, int, int, int]]:
    """The windows of the source export one sweep point is made of: (from, to, shift, iteration
    offset) each, source times in ns.

    Without ``target`` (or where the kept iterations reach it) one window, the first ``--iters``
    iterations. Otherwise the kept iterations ``[its[0], its[k])`` are laid down again one period
    ``its[k] - its[0]`` after the other (``k`` kept iterations a copy; iteration ``k``'s flush and
    queue hold, launched before ``its[k]``, become the next copy's first ones), the last copy cut
    where the sweep point holds ``target`` iterations; copy ``r``'s iteration ``i`` is renamed
    ``iter<i + r*k>``.
    """
    its, k = w["its"], w["iterations"]
    if target is None or target <= k or len(its) < 2:
        return [(w["start"], w["cut"], 0, 0)]
    k = min(k, len(its) - 1)  # a copy ends where the next kept iteration starts
    period = its[k] - its[0]
    out = []
    for r in range(-(-target // k)):
        m = min(k, target - r * k)
        out.append((w["start"] if r == 0 else its[0], its[m], r * period, r * k))
    return out


def _iteration_names(con: sqlite3.Connection, upto: int) -> None:
    """Temporary tables ``_itermap`` (a source ``iter<i>`` string id -> i) and ``_iterid`` (i -> the
    id of ``iter<i>``, added to StringIds where the export has none) for ``i < upto``."""
    con.execute("CREATE TEMP TABLE _itermap (src INTEGER PRIMARY KEY, idx INTEGER)")
    con.execute("CREATE TEMP TABLE _iterid (idx INTEGER PRIMARY KEY, sid INTEGER)")
    have = {v: i for i, v in con.execute("SELECT id, value FROM StringIds WHERE value GLOB 'iter[0-9]*'")}
    con.executemany("INSERT INTO _itermap VALUES (?, ?)",
                    [(i, int(v[4:])) for v, i in have.items() if v[4:].isdigit()])  # fmt: skip
    next_id = con.execute("SELECT MAX(id) FROM StringIds").fetchone()[0] + 1
    rows = []
    for idx in range(upto):
        name = f"iter{idx}"
        if name not in have:
            have[name] = next_id
            con.execute("INSERT INTO StringIds (id, value) VALUES (?, ?)", (next_id, name))
            next_id += 1
        rows.append((idx, have[name]))
    con.executemany("INSERT INTO _iterid VALUES (?, ?)", rows)


def build_nsys(dest: Path, names: list[str], n: int, iters: int, target: int | None = None) -> None:
    src = unpacked(SOURCE / "nsys" / "report.sqlite.gz")
    shutil.copyfile(src, dest)
    con = sqlite3.connect(dest)
    con.execute("ATTACH DATABASE ? AS src", (str(src),))
    win = _template_windows(con, names, iters)
    copies = {name: _copies(w, target) for name, w in win.items()}
    # Keep the process set-up (domain creation), drop every range, call and op: re-inserted below.
    con.execute("DELETE FROM NVTX_EVENTS WHERE eventType != 75")
    for t in (*ACTIVITY, "CUPTI_ACTIVITY_KIND_RUNTIME"):
        con.execute(f"DELETE FROM [{t}]")
    if target is not None:
        _iteration_names(con, target)
    span = max(cs[-1][1] + cs[-1][2] - cs[0][0] for cs in copies.values()) + 1_000_000
    per_point = max(len(cs) for cs in copies.values())
    corr = con.execute("SELECT MAX(correlationId) FROM src.CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0] + 1
    next_id = con.execute("SELECT MAX(id) FROM StringIds").fetchone()[0] + 1
    nvtx_cols, rt_cols = _cols(con, "NVTX_EVENTS"), _cols(con, "CUPTI_ACTIVITY_KIND_RUNTIME")
    act_cols = {t: _cols(con, t) for t in ACTIVITY}

    def shifted(cols: list[str], over: dict[str, str]) -> str:
        return ", ".join(over.get(c, f"[{c}]") for c in cols)

    for j in range(n):
        name = names[j % len(names)]
        w = win[name]
        cs = copies[name]
        d = 10_000_000_000 + j * span - w["start"]
        sid = next_id + j
        con.execute("INSERT INTO StringIds (id, value) VALUES (?, ?)", (sid, f"sweep[j={j}]"))
        # The benchmark's range: from the first copy's start to the last copy's end.
        con.execute(
            f"INSERT INTO NVTX_EVENTS ({', '.join(nvtx_cols)}) SELECT "
            + shifted(
                nvtx_cols,
                {"start": f"MAX(start, {w['start']}) + {d}", "textId": str(sid),
                 "end": f"MIN(end, {w['cut']}) + {d}" if len(cs) == 1 else str(cs[-1][1] + cs[-1][2] + d)},
            )  # fmt: skip
            + f" FROM src.NVTX_EVENTS WHERE rowid = {w['rowid']}"
        )
        for r, (lo, hi, shift, offset) in enumerate(cs):
            dd = d + shift
            c = (j * per_point + r) * corr
            times = {"start": f"start + {dd}", "end": f"end + {dd}"}
            text = {} if not offset else {
                "textId": "COALESCE((SELECT i.sid FROM _iterid i JOIN _itermap m ON i.idx = m.idx + "
                          f"{offset} WHERE m.src = textId), textId)"
            }  # fmt: skip
            con.execute(
                f"INSERT INTO NVTX_EVENTS ({', '.join(nvtx_cols)}) SELECT "
                + shifted(nvtx_cols, {"start": f"start + {dd}", "end": f"MIN(end, {hi}) + {dd}", **text})
                + f" FROM src.NVTX_EVENTS WHERE eventType IN (59, 60) AND globalTid = {w['tid']}"
                f" AND start >= {lo} AND start < {hi} AND rowid != {w['rowid']}"
            )
            con.execute(
                f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME ({', '.join(rt_cols)}) SELECT "
                + shifted(rt_cols, {**times, "correlationId": f"correlationId + {c}"})
                + f" FROM src.CUPTI_ACTIVITY_KIND_RUNTIME WHERE start >= {lo} AND start < {hi}"
            )
            for t, cols in act_cols.items():
                con.execute(
                    f"INSERT INTO [{t}] ({', '.join(cols)}) SELECT "
                    + shifted(cols, {**times, "correlationId": f"correlationId + {c}"})
                    + f" FROM src.[{t}] WHERE correlationId IN (SELECT correlationId FROM"
                    f" src.CUPTI_ACTIVITY_KIND_RUNTIME WHERE start >= {lo} AND start < {hi})"
                )
    con.commit()
    con.execute("DETACH DATABASE src")
    con.close()


def build_ncu(dest: Path, names: list[str], n: int) -> None:
    from nsightwrap.parsers.ncu import read_ncu_rep

    rows = read_ncu_rep(SOURCE / "ncu" / "report.ncu-rep.gz")
    by_bench: dict[str, list[tuple[int, Any]]] = {}
    for r in rows.itertuples(index=False):
        paths = [p for p in r.nvtx_ranges if p.startswith("nsightwrap:") and "/iter" in p]
        if paths:
            bench, _, it = paths[0].partition(":")[2].partition("/")
            by_bench.setdefault(bench, []).append((int(it.removeprefix("iter")), r))
    header = [
        "ID",
        PUSHPOP,
        "Kernel Name",
        "Context",
        "Stream",
        "Block Size",
        "Grid Size",
        "Device",
        *NCU_METRICS,
    ]
    units = ["", "", "", "", "", "", "", "", *(u for _, u in NCU_METRICS.values())]
    with dest.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh, quoting=csv.QUOTE_ALL)
        out.writerow(header)
        out.writerow(units)
        launch = 0
        for j in range(n):
            for it, r in by_bench.get(names[j % len(names)], []):
                cell = (
                    f'1  "nsightwrap:sweep[j={j}]:none:none:none:none:none:none"  '
                    f'"nsightwrap:iter{it}:none:none:none:none:none:none" '
                )
                dims = [f"({str(v).replace(',', ', ')})" if v else "" for v in (r.block, r.grid)]
                out.writerow(
                    [launch, cell, r.kernel, r.context, r.stream, *dims, r.device,
                     *(getattr(r, col) for col, _ in NCU_METRICS.values())]
                )  # fmt: skip
                launch += 1


def _repeated(e: dict[str, Any], target: int) -> dict[str, Any]:
    """A sidecar entry whose per-sample lists are repeated, in order, to ``target`` samples (the
    throttled count in proportion); its summary figures are left as measured."""
    e = dict(e)
    have = len(e["samples_ns"])
    if not have or have >= target:
        return e
    for key in ("samples_ns", "sample_clock_hz"):
        if isinstance(e.get(key), list) and len(e[key]) == have:
            e[key] = [e[key][i % have] for i in range(target)]
    e["n"] = target
    if isinstance(e.get("throttled"), int):
        e["throttled"] = round(e["throttled"] * target / have)
    return e


def build_sidecar(dest: Path, names: list[str], n: int, target: int | None = None) -> int:
    (path,) = (SOURCE / "plain").glob("timer-*.json")
    doc = json.loads(path.read_text())
    entries = {b["name"]: b for b in doc["benchmarks"]}
    if target is not None:
        entries = {k: _repeated(e, target) for k, e in entries.items()}
    out = []
    for j in range(n):
        e = dict(entries[names[j % len(names)]])
        e.update(name=f"sweep[j={j}]", nvtx_path=f"nsightwrap:sweep[j={j}]", params={})
        out.append(e)
    doc["benchmarks"] = out
    dest.write_text(json.dumps(doc), encoding="utf-8")
    return sum(len(e["samples_ns"]) for e in out)


def build_run(root: Path, n: int, iters: int, target: int | None = None) -> dict[str, Any]:
    """The sweep run directory under ``root``; what it holds. With ``target``, each sweep point's
    nsys iterations are repeated up to ``target`` (``_copies``) and its timer samples too."""
    (path,) = (SOURCE / "plain").glob("timer-*.json")
    names = [b["name"] for b in json.loads(path.read_text())["benchmarks"]]
    for sub in ("plain", "ncu", "nsys"):
        (root / sub).mkdir(parents=True)
    shutil.copy(SOURCE / "manifest.json", root / "manifest.json")
    shutil.copytree(SOURCE / "env", root / "env")
    samples = build_sidecar(root / "plain" / "timer-1.json", names, n, target)
    build_nsys(root / "nsys" / "report.sqlite", names, n, iters, target)
    build_ncu(root / "ncu" / "report.csv", names, n)
    con = sqlite3.connect(root / "nsys" / "report.sqlite")
    ops = sum(con.execute(f"SELECT COUNT(*) FROM [{t}]").fetchone()[0] for t in ACTIVITY)
    ranges = con.execute("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 59").fetchone()[0]
    calls = con.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
    con.close()
    kernels = sum(1 for _ in (root / "ncu" / "report.csv").open()) - 2
    return {
        "benchmarks": n,
        "timer_samples": samples,
        "nsys_ops": ops,
        "runtime_calls": calls,
        "nvtx_ranges": ranges,
        "ncu_kernels": kernels,
    }


@contextmanager
def ncu_from_csv(run: Path) -> Iterator[None]:
    """The analysis reads the sweep's ncu rows from ncu/report.csv (see the module docstring)."""
    import nsightwrap.analysis.load as load
    from nsightwrap.parsers.ncu import read_ncu_csv

    original = load._read_ncu
    load._read_ncu = lambda layout, notes, crashes=None, read=None, manifest=None: read_ncu_csv(run / "ncu" / "report.csv")  # type: ignore[assignment]
    try:
        yield
    finally:
        load._read_ncu = original  # type: ignore[assignment]


def measure(run: Path, repeat: int) -> dict[str, float]:
    from nsightwrap.analysis.load import analyze
    from nsightwrap.parsers.ncu import read_ncu_csv
    from nsightwrap.parsers.nsys import read_nsys

    def best(fn: Any) -> float:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    nsys_s = best(lambda: read_nsys(run / "nsys" / "report.sqlite"))
    ncu_s = best(lambda: read_ncu_csv(run / "ncu" / "report.csv"))
    with ncu_from_csv(run):
        total_s = best(lambda: analyze(run))
        result = analyze(run)
    flagged = len(result.flagged)
    return {"analyze_s": total_s, "nsys_parse_s": nsys_s, "ncu_csv_parse_s": ncu_s,
            "rest_s": total_s - nsys_s - ncu_s, "flagged": flagged,
            "gaps": sum(b.gap is not None for b in result.benchmarks)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--benchmarks", type=int, default=1000, help="sweep points (default 1000)")
    ap.add_argument("--iters", type=int, default=30, help="nsys iterations kept per benchmark (default 30)")
    ap.add_argument("--target-iters", type=int, default=None, metavar="N",
                    help=f"repeat each benchmark's kept iterations up to N per benchmark ({REAL_DO_BENCH_ITERS}: the "
                    "median do_bench call of fixtures/runs/h200-sweep)")  # fmt: skip
    ap.add_argument("--repeat", type=int, default=3, help="timed analyses; the best is reported (default 3)")
    ap.add_argument("--keep", type=Path, default=None, help="build the run directory here and keep it")
    args = ap.parse_args(argv)
    tmp = None
    if args.keep is None:
        tmp = tempfile.TemporaryDirectory(prefix="nsightwrap-speed-")
        run = Path(tmp.name) / "run"
    else:
        run = args.keep
        if run.exists():
            raise SystemExit(f"{run} exists; give a new directory to --keep")
    t0 = time.perf_counter()
    held = build_run(run, args.benchmarks, args.iters, args.target_iters)
    built_s = time.perf_counter() - t0
    figures = measure(run, args.repeat)
    per = figures["rest_s"] / max(1, args.benchmarks) * 1e3
    print(f"machine: {platform.processor() or platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, {__import__('os').cpu_count()} CPUs")  # fmt: skip
    print(f"run: {json.dumps(held)} (built in {built_s:.1f} s)")
    print(f"analyze: {figures['analyze_s']:.2f} s (best of {args.repeat}): nsys parse {figures['nsys_parse_s']:.2f} s, "
          f"ncu CSV parse {figures['ncu_csv_parse_s']:.2f} s, the rest {figures['rest_s']:.2f} s "
          f"({per:.2f} ms per benchmark); {figures['gaps']} decompositions, {figures['flagged']} flagged")  # fmt: skip
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
