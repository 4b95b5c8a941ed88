"""How fast ``nsightwrap inspect --by range`` reads a large nsys export, and how much memory it takes.

    python -m benchmarks.inspect_speed [--kernels 1000000] [--keep big.sqlite] [--format csv]

Builds a large export from the real H200 capture (fixtures/reference/h200-workload/workload.sqlite)
by replicating every kernel, memcpy, memset, CUDA runtime call and NVTX row of it, shifted in time
by the capture's length and in correlation id by its largest id per copy, until there are about
``--kernels`` kernels. Then runs ``python -m nsightwrap inspect BIG --by range`` in a subprocess
and prints its wall time and peak resident memory (the child's ru_maxrss), and checks the output
(the per-range op counts are the fixture's times the number of copies).
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=1_000_000, help="about how many kernels (default 1e6)")
    ap.add_argument("--keep", type=Path, help="write the large export here and keep it")
    ap.add_argument("--format", default="csv", choices=["table", "csv", "json", "md"])
    ap.add_argument("--repeat", type=int, default=3, help="inspect runs to time (default 3; median shown)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        big = args.keep or Path(tmp) / "big.sqlite"
        t = time.perf_counter()
        copies = build(big, args.kernels)
        built = time.perf_counter() - t
        con = sqlite3.connect(big)
        counts = {
            t: con.execute(f"SELECT COUNT(*) FROM [{t}]").fetchone()[0] for t in TABLES if t != "NVTX_EVENTS"
        }
        (nvtx,) = con.execute("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 59").fetchone()
        con.close()
        size_mb = big.stat().st_size / 1e6
        print(f"built {big.name}: {copies} copies, {size_mb:.0f} MB, {built:.1f} s")
        for name, n in counts.items():
            print(f"  {name}: {n:,} rows")
        print(f"  NVTX push/pop ranges: {nvtx:,}")

        argv = [
            sys.executable,
            "-m",
            "nsightwrap",
            "inspect",
            str(big),
            "--by",
            "range",
            "--format",
            args.format,
        ]
        walls = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
            walls.append(time.perf_counter() - t)
            if proc.returncode != 0:
                sys.exit(f"inspect failed ({proc.returncode}): {proc.stderr.strip()}")
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak_mb = usage.ru_maxrss / 1024  # KiB on Linux: the largest child, i.e. one inspect run
        cpu = (usage.ru_utime + usage.ru_stime) / args.repeat
        if args.format == "csv":
            rows = {r["range"]: r for r in csv.DictReader(io.StringIO(proc.stdout))}
            # Every copy repeats the fixture: 20 mm_small matmuls + 20 flush fills per copy.
            assert int(rows["mm_small"]["kernels"]) == 40 * copies, rows["mm_small"]
            assert int(rows["mm_small"]["instances"]) == copies
            assert int(rows["copy_1g/copy_1g/iter0"]["memcpy"]) == copies
        print(
            f"inspect --by range --format {args.format}: wall {', '.join(f'{w:.2f}' for w in walls)} s "
            f"(median {statistics.median(walls):.2f} s), CPU {cpu:.2f} s per run, peak RSS {peak_mb:.0f} MiB"
        )


if __name__ == "__main__":
    main()
