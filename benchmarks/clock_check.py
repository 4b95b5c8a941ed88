"""Does ncu, carried to the SM clock nsightwrap measured for a loop, predict that loop's plain
per-call time? The check behind the reference clock (docs/reconciliation.md, "The reference
clock").

    python -m benchmarks.clock_check RUN_DIR [RUN_DIR ...]          # runs already profiled
    python -m benchmarks.clock_check --profile SCRIPT -o RUN_DIR      # profile first (GPU machine)

For every benchmark with a timing, an ncu figure and a clock measured on the GPU, prints the
plain pass's per-call time, the measured clock (mean and min..max over the benchmark's windows),
ncu's per-iteration sum at its own clock and carried to the measured clock, and the prediction's
error. Only compute-bound benchmarks of at least ``--min-us`` per call (500 us: there the
events' own cost and a flush's write-back are under 1% of the time) test the clock alone (a
memory-bound kernel barely follows it, and a short one carries other parts of the gap);
``--all`` shows the rest too. ``--json`` writes the rows.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import BenchmarkResult, ClockModel


@dataclass(frozen=True)
class Row:
    """One benchmark: its plain per-call time against ncu carried to its measured clock."""

    run: str
    benchmark: str
    plain_ns: float
    clock_hz: float
    clock_min_hz: float
    clock_max_hz: float
    clock_source: str
    ncu_raw_ns: float
    ncu_clock_hz: float | None
    ncu_at_clock_ns: float
    error: float  # ncu at the measured clock / plain - 1
    compute_bound: bool


def rows_of(run: Path) -> list[Row]:
    """The rows of one run directory (benchmarks without a GPU-measured reference clock skipped)."""
    out = []
    for b in analyze(run).benchmarks:
        row = _row(run.name, b)
        if row is not None:
            out.append(row)
    return out


def _row(run: str, b: BenchmarkResult) -> Row | None:
    if b.timer is None or b.ncu is None or b.clock is None or b.ref_clock_hz is None:
        return None
    if b.ncu.median_ns is None or b.ncu.normalized_ns is None or b.ref_clock_hz != b.clock.mean_hz:
        return None  # compared at ncu's own clock (the report says why): nothing to check here
    compute = bool(b.ncu.kernels) and all(k.clock_model is not ClockModel.MEMORY for k in b.ncu.kernels)
    return Row(
        run=run, benchmark=b.name, plain_ns=b.timer.median_ns, clock_hz=b.clock.mean_hz,
        clock_min_hz=b.clock.min_hz, clock_max_hz=b.clock.max_hz, clock_source=b.clock.source,
        ncu_raw_ns=b.ncu.median_ns, ncu_clock_hz=b.ncu.sm_clock_hz, ncu_at_clock_ns=b.ncu.normalized_ns,
        error=b.ncu.normalized_ns / b.timer.median_ns - 1, compute_bound=compute,
    )  # fmt: skip


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| run | benchmark | plain per call | measured clock (min..max) | ncu raw (its clock) | ncu at the measured clock |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        ncu_clk = f" ({r.ncu_clock_hz / 1e9:.3f} GHz)" if r.ncu_clock_hz else ""
        lines.append(
            f"| {r.run} | {r.benchmark.replace('|', chr(92) + '|')} | {r.plain_ns / 1e3:.1f} us | "
            f"{r.clock_hz / 1e9:.3f} GHz ({r.clock_min_hz / 1e9:.3f}..{r.clock_max_hz / 1e9:.3f}) | "
            f"{r.ncu_raw_ns / 1e3:.1f} us{ncu_clk} | {r.ncu_at_clock_ns / 1e3:.1f} us ({r.error:+.1%}) |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", type=Path, help="run directories of nsightwrap profile")
    ap.add_argument("--profile", metavar="SCRIPT", help="profile SCRIPT first (needs a GPU, ncu and nsys)")
    ap.add_argument("-o", "--output", type=Path, help="the run directory for --profile")
    ap.add_argument("--min-us", type=float, default=500.0, help="shortest plain per-call time checked [500]")
    ap.add_argument("--all", action="store_true", help="memory-bound and short benchmarks too")
    ap.add_argument("--json", type=Path, help="write the rows here")
    a = ap.parse_args(argv)
    runs = list(a.runs)
    if a.profile:
        if a.output is None:
            ap.error("--profile needs -o RUN_DIR")
        cmd = [sys.executable, "-m", "nsightwrap", "profile", "-q", "-o", str(a.output), a.profile]
        rc = subprocess.run(cmd, check=False).returncode
        if rc != 0:
            print(f"clock_check: nsightwrap profile exited {rc}; see {a.output}/logs", file=sys.stderr)
            return rc
        runs.append(a.output)
    if not runs:
        ap.error("give RUN_DIR(s) or --profile SCRIPT")
    rows = [r for run in runs for r in rows_of(run) if a.all or (r.compute_bound and r.plain_ns >= a.min_us * 1e3)]
    print(table(rows))
    if rows:
        worst = max(rows, key=lambda r: abs(r.error))
        print(f"\n{len(rows)} benchmark(s); largest error {worst.error:+.1%} ({worst.run}, {worst.benchmark})")
    if a.json:
        a.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
