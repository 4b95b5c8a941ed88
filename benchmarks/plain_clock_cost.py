"""What sampling the clock does to the script's own timings, against a control.

    python -m benchmarks.plain_clock_cost [--rounds 3] [--json OUT.json] [SCRIPT]     # GPU, nsys on PATH
    python -m benchmarks.plain_clock_cost --tables-from benchmarks/results/plain-clock-cost-....json.gz

Runs ``nsightwrap profile --passes plain`` on SCRIPT (default: benchmarks/workloads/launch_bound.py,
launch-bound do_bench, event and Timer loops) ``--rounds`` times each way, interleaved: with
``--no-plain-clock`` (the plain pass alone) and by default (the plain pass, then its clock run
under nsys sampling the GPU's clock, no CUDA trace). Every timing's median comes from the
sidecars: every run's plain pass is bare, and the sampled timings are the clock runs'
(``plain-clock/``). The table sets the sampled timings against the median of the bare ones, so
the bare runs' own spread is the control: an effect smaller than it is not shown to be one. It
also gives each timing's clock as the clock runs measured it (analysis/plainclock.py; the
analysis keeps it only for loops within ``MAX_MOVE`` of their plain-pass median) and the wall
time of each run. Data recorded while the plain pass itself ran sampled reads as it was made.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SCRIPT = REPO / "benchmarks" / "workloads" / "launch_bound.py"
MODES = ("bare", "clock")


def _medians(run: Path, folder: str = "plain") -> dict[str, float]:
    out: dict[str, float] = {}
    for p in sorted((run / folder).glob("timer-*.json")):
        doc = json.loads(p.read_text())
        for e in doc.get("benchmarks") or ():
            if e.get("median_ns"):
                out[str(e["name"])] = float(e["median_ns"])
    return out


def _clocks(run: Path) -> dict[str, float | None]:
    from nsightwrap.analysis.plainclock import plain_pass_clocks
    from nsightwrap.core.rundir import RunLayout
    from nsightwrap.parsers.nsys import read_nsys

    layout = RunLayout(run)
    if not layout.plain_clock_sqlite.is_file():
        return {}
    docs = [(p, json.loads(p.read_text())) for p in sorted(layout.clock_windows_dir.glob("timer-*.json"))]
    names = [(str(e["name"]), str(e["nvtx_path"]), str(e.get("iter_prefix") or "iter")) for _, d in docs for e in d["benchmarks"]]
    got = plain_pass_clocks([(p, i) for _, p, i in names], docs, read_nsys(layout.plain_clock_sqlite, detail=False))
    return {n: (c.mean_hz if c else None) for (n, _, _), c in zip(names, got, strict=True)}


def _run(script: Path, mode: str, out: Path) -> dict[str, Any]:
    argv = [sys.executable, "-m", "nsightwrap", "profile", "-q", "--passes", "plain", "--no-analyze", "-o", str(out)]
    if mode == "bare":
        argv.append("--no-plain-clock")
    t0 = time.monotonic()
    p = subprocess.run([*argv, str(script)], capture_output=True, text=True)
    rec: dict[str, Any] = {"mode": mode, "rc": p.returncode, "wall_s": time.monotonic() - t0, "medians_ns": _medians(out)}
    if mode == "clock":
        # The plain pass ran bare; its clock run (plain-clock/) ran the script under the sampling.
        rec["clock_run_medians_ns"] = _medians(out, "plain-clock")
        rec["clock_hz"] = _clocks(out)
        sq = out / "plain-clock" / "clock.sqlite"
        rep = out / "plain-clock" / "clock.nsys-rep"
        rec["clock_files_mb"] = {f.name: f.stat().st_size / 1e6 for f in (sq, rep) if f.is_file()}
    if p.returncode:
        rec["stderr"] = p.stderr[-1500:]
    return rec


def _range(xs: list[float], ref: float) -> str:
    return f"{min(xs) / ref:.3f}..{max(xs) / ref:.3f}" if xs else "-"


def tables(data: dict[str, Any]) -> str:
    runs = data["runs"]
    # Every run's plain pass is bare; the sampled timings are the clock run's (in data recorded
    # before the plain pass had a clock run, the sampled runs' plain pass itself).
    new = any("clock_run_medians_ns" in r for r in runs)
    bare = [r for r in runs if (new or r["mode"] == "bare") and r["medians_ns"]]
    clock = [{**r, "medians_ns": r.get("clock_run_medians_ns", r["medians_ns"])} for r in runs if r["mode"] == "clock"]
    clock = [r for r in clock if r["medians_ns"]]
    lines = [f"# the script's timings with and without the clock sampled ({data['gpu']}, {data['date']})", "",
             f"script: `{data['script']}`; {len(bare)} bare and {len(clock)} sampled runs, interleaved", ""]  # fmt: skip
    lines += ["| run | mode | rc | wall s | clock files MB |", "| --- | --- | ---: | ---: | --- |"]
    for i, r in enumerate(runs):
        files = ", ".join(f"{k} {v:.1f}" for k, v in (r.get("clock_files_mb") or {}).items())
        lines.append(f"| {i} | {r['mode']} | {r['rc']} | {r['wall_s']:.1f} | {files or '-'} |")
    if not bare:
        return "\n".join(lines)
    lines += ["", "Each run's median over the median of the bare runs (min..max over runs); the sampled runs' clock.", "",
              "| timing | bare us | bare runs (control) | sampled runs | sampled median / bare median | clock GHz |",
              "| --- | ---: | --- | --- | ---: | ---: |"]  # fmt: skip
    shifts = []
    for name in bare[0]["medians_ns"]:
        b = [r["medians_ns"][name] for r in bare if name in r["medians_ns"]]
        c = [r["medians_ns"][name] for r in clock if name in r["medians_ns"]]
        ref = statistics.median(b)
        hz = [r["clock_hz"].get(name) for r in clock if (r.get("clock_hz") or {}).get(name)]
        sh = statistics.median(c) / ref if c else None
        if sh:
            shifts.append(sh)
        ghz = f"{statistics.median(hz) / 1e9:.3f}" if hz else "-"
        lines.append(f"| {name} | {ref / 1e3:.2f} | {_range(b, ref)} | {_range(c, ref)} | "
                     f"{f'{sh:.3f}' if sh else '-'} | {ghz} |")  # fmt: skip
    if shifts:
        lines += ["", f"sampled/bare over all timings: median {statistics.median(shifts):.3f}, "
                      f"{min(shifts):.3f}..{max(shifts):.3f}"]  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("script", nargs="?", type=Path, default=DEFAULT_SCRIPT)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--tables-from", type=Path)
    a = ap.parse_args(argv)
    if a.tables_from:
        op = gzip.open if a.tables_from.suffix == ".gz" else open
        with op(a.tables_from, "rt") as f:
            print(tables(json.load(f)))
        return 0
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,uuid", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()  # fmt: skip
    runs = []
    with tempfile.TemporaryDirectory() as td:
        for i in range(a.rounds):
            for mode in MODES if i % 2 == 0 else MODES[::-1]:
                r = _run(a.script, mode, Path(td) / f"{mode}{i}")
                print(f"round {i} {mode}: rc={r['rc']} {r['wall_s']:.1f}s", file=sys.stderr, flush=True)
                runs.append(r)
    data = {"gpu": gpu, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "script": str(a.script.relative_to(REPO) if a.script.is_relative_to(REPO) else a.script),
            "command": " ".join(["python -m benchmarks.plain_clock_cost", *(argv or sys.argv[1:])]), "runs": runs}  # fmt: skip
    if a.json:
        a.json.write_text(json.dumps(data))
    print(tables(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
