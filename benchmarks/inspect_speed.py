"""How fast ``nsightwrap inspect`` reads a large nsys export, and how much memory it takes.

    python -m benchmarks.inspect_speed [--kernels 1000000] [--keep big.sqlite] [--by range] [--format csv]
    python -m benchmarks.inspect_speed --by kernel --format table,csv --repeat 2

Builds a large export from the real H200 capture (fixtures/reference/h200-workload/workload.sqlite)
by replicating every kernel, memcpy, memset, CUDA runtime call and NVTX row of it, shifted in time
by the capture's length and in correlation id by its largest id per copy, until there are about
``--kernels`` kernels. Then runs ``python -m nsightwrap inspect BIG --by BY --format FMT`` in a
subprocess, its output into a file, for each format asked, and prints each run's wall time and
peak resident memory (that child's own ru_maxrss, from ``os.wait4``), and checks the output: per
range, the op counts are the fixture's times the number of copies; per kernel, csv has a row per
GPU op and the table the first 2,000 and a count line naming the rest.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "reference" / "h200-workload" / "workload.sqlite"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
# Tables whose rows are replicated, with their time columns (shifted) and id columns (offset).
TABLES = {
    KERNEL: ("start", "end"),
    "CUPTI_ACTIVITY_KIND_MEMCPY": ("start", "end"),
    "CUPTI_ACTIVITY_KIND_MEMSET": ("start", "end"),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("start", "end"),
    "NVTX_EVENTS": ("start", "end"),
}


def build(dst: Path, kernels: int) -> int:
    """Write a replicated export with about ``kernels`` kernels to ``dst``; the number of copies."""
    shutil.copy(FIXTURE, dst)
    con = sqlite3.connect(dst)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    (per_copy,) = con.execute(f"SELECT COUNT(*) FROM {KERNEL}").fetchone()
    copies = math.ceil(kernels / per_copy)
    t0, t1 = con.execute(
        "SELECT MIN(start), MAX(end) FROM (SELECT start, end FROM NVTX_EVENTS "
        "UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME "
        f"UNION ALL SELECT start, end FROM {KERNEL})"
    ).fetchone()
    shift = t1 - t0 + 1_000_000  # each copy starts 1 ms after the previous one ends
    (max_corr,) = con.execute("SELECT MAX(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
    corr_step = max_corr + 1
    con.execute("CREATE TEMP TABLE reps (i INTEGER)")
    con.executemany("INSERT INTO reps VALUES (?)", [(i,) for i in range(1, copies)])
    for table, times in TABLES.items():
        cols = [r[1] for r in con.execute(f"PRAGMA table_info([{table}])")]
        exprs = []
        for c in cols:
            if c in times:
                exprs.append(f"o.[{c}] + r.i * {shift}")
            elif c == "correlationId":
                exprs.append(f"o.[{c}] + r.i * {corr_step}")
            else:
                exprs.append(f"o.[{c}]")
        # Domain-create rows (type 75) are per process, not per copy.
        where = "WHERE o.eventType <> 75" if table == "NVTX_EVENTS" else ""
        con.execute(
            f"INSERT INTO [{table}] ({', '.join(f'[{c}]' for c in cols)}) "
            f"SELECT {', '.join(exprs)} FROM [{table}] o CROSS JOIN reps r {where}"
        )
    con.commit()
    con.execute("VACUUM")
    con.close()
    return copies


def run_inspect(argv: list[str], out: IO[bytes]) -> tuple[float, float, float]:
    """Run ``argv`` with stdout into ``out``: its wall seconds, CPU seconds and peak RSS in MiB."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"inspect failed ({proc.returncode}): {err.decode(errors='replace').strip()}")
    # ru_maxrss is KiB on Linux.
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def check(by: str, fmt: str, text: str, copies: int, ops: int) -> str:
    """Assert that the output is whole and right; a few words on what it held."""
    if by == "range" and fmt == "csv":
        rows = {r["range"]: r for r in csv.DictReader(io.StringIO(text))}
        # Every copy repeats the fixture: 20 mm_small matmuls + 20 flush fills per copy.
        assert int(rows["mm_small"]["kernels"]) == 40 * copies, rows["mm_small"]
        assert int(rows["mm_small"]["instances"]) == copies
        assert int(rows["copy_1g/copy_1g/iter0"]["memcpy"]) == copies
        return f"{len(rows)} ranges"
    if by == "kernel" and fmt == "csv":
        n = sum(1 for _ in csv.reader(io.StringIO(text))) - 1
        assert n == ops, (n, ops)
        return f"{n:,} rows"
    if by == "kernel" and fmt == "table":
        last = text.rstrip("\n").splitlines()[-1]
        assert last.startswith(f"2,000 of {ops:,} rows shown"), last
        return repr(last)
    if by == "kernel" and fmt == "json":
        # Counted by its layout (indent 1: a record opens with " {" on a line of its own):
        # json.loads of the whole file takes several GB in this process.
        n = sum(1 for ln in text.splitlines() if ln == " {")
        assert n == ops and text.startswith("[\n {") and text.endswith("}\n]\n"), (n, ops)
        return f"{n:,} records"
    return f"{len(text.splitlines()):,} lines"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=1_000_000, help="about how many kernels (default 1e6)")
    ap.add_argument("--keep", type=Path, help="write the large export here and keep it (reused if it exists)")
    ap.add_argument("--by", default="range", choices=["kernel", "range"])
    ap.add_argument("--format", default="csv", help="table, csv, json or md; several with commas (default csv)")
    ap.add_argument("--repeat", type=int, default=3, help="inspect runs to time per format (default 3; median shown)")
    args = ap.parse_args()
    formats = args.format.split(",")
    assert set(formats) <= {"table", "csv", "json", "md"}, formats

    with tempfile.TemporaryDirectory() as tmp:
        big = args.keep or Path(tmp) / "big.sqlite"
        t = time.perf_counter()
        if args.keep and args.keep.exists():
            con = sqlite3.connect(big)
            (per_copy,) = sqlite3.connect(FIXTURE).execute(f"SELECT COUNT(*) FROM {KERNEL}").fetchone()
            copies = con.execute(f"SELECT COUNT(*) FROM {KERNEL}").fetchone()[0] // per_copy
            con.close()
        else:
            copies = build(big, args.kernels)
        built = time.perf_counter() - t
        con = sqlite3.connect(big)
        counts = {
            t: con.execute(f"SELECT COUNT(*) FROM [{t}]").fetchone()[0] for t in TABLES if t != "NVTX_EVENTS"
        }
        (nvtx,) = con.execute("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 59").fetchone()
        con.close()
        ops = sum(n for t, n in counts.items() if t != "CUPTI_ACTIVITY_KIND_RUNTIME")
        size_mb = big.stat().st_size / 1e6
        print(f"built {big.name}: {copies} copies, {size_mb:.0f} MB, {built:.1f} s")
        for name, n in counts.items():
            print(f"  {name}: {n:,} rows")
        print(f"  NVTX push/pop ranges: {nvtx:,}")

        for fmt in formats:
            argv = [sys.executable, "-m", "nsightwrap", "inspect", str(big), "--by", args.by, "--format", fmt]
            runs = []
            out_path = Path(tmp) / f"out.{fmt}"
            for _ in range(args.repeat):
                with out_path.open("wb") as out:
                    runs.append(run_inspect(argv, out))
            held = check(args.by, fmt, out_path.read_text(), copies, ops)
            walls = [w for w, _, _ in runs]
            print(
                f"inspect --by {args.by} --format {fmt}: wall {', '.join(f'{w:.2f}' for w in walls)} s "
                f"(median {statistics.median(walls):.2f} s), CPU {statistics.median(c for _, c, _ in runs):.2f} s, "
                f"peak RSS {max(m for _, _, m in runs):.0f} MiB, output {out_path.stat().st_size / 1e6:.1f} MB: {held}"
            )


if __name__ == "__main__":
    main()
