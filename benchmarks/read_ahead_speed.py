"""What reading the reports ahead saves ``nsightwrap profile`` between its passes, on real H200 runs.

    python -m benchmarks.read_ahead_speed [--runs h200-sweep h200-mixed h200-worker] [--repeat 5] [--json OUT]

Between the duration pass and the base pass, ``nsightwrap profile`` decides whether the base pass
can change an answer (``analysis.basepass.check_run``: three analyses of the run so far). The
time it takes is on the profile's critical path; on the H200 it was 4.6 s of a 74.5 s profile of
``examples/gemm_sweep_plain.py`` (docs/profile.md). Its analyses read the ncu pass's report, the
duration pass's and the nsys export; the first and the last are final passes before the duration
pass ends, so the profile reads them ahead (``ReadOnce.prefetch``, ``Profiler.read_ahead``).

For each shipped run with every pass, this times what the profile does from the duration pass's
end, the way the profile does it (the ncu reader in its child process, the nsys reader in this
one), on a copy of the run as it stood then (its manifest without the base pass):

- ``in series``: fresh readers; the check reads every report it needs, then analyses;
- ``read ahead``: the ncu pass's report and the nsys export read in the background beforehand
  (and finished, as they are when the duration pass has run for seconds); at the duration
  pass's end its report is handed to ``prefetch`` and the check runs.

Then the final analysis of the whole run (its base report new to the readers), in both. The two
modes alternate, ``--repeat`` times each; the medians are printed. A first analysis of every run
beforehand fills the unpack cache of the shipped ``.gz`` reports, so neither mode pays for it.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "fixtures" / "runs"
DEFAULT_RUNS = ("h200-sweep", "h200-mixed", "h200-worker")


def _readers() -> tuple[Any, Any]:
    from nsightwrap.cli.profile_cmd import _readers as cli_readers

    return cli_readers()


def once(run: Path, read_ahead: bool) -> dict[str, float | str]:
    """One profile's work from the duration pass's end: the base pass's check, then the final
    analysis; their seconds and the check's answer."""
    from nsightwrap.analysis.basepass import check_run
    from nsightwrap.analysis.load import analyze
    from nsightwrap.core.rundir import CLOCK_SWEEP_PASS, RunLayout, read_manifest

    layout = RunLayout(run)
    full = read_manifest(run)
    before = {**full, "passes": [p for p in full["passes"] if p["name"] != CLOCK_SWEEP_PASS]}
    read_ncu, read_nsys = _readers()
    if read_ahead:
        read_ncu.prefetch(layout.ncu_report)
        read_nsys.prefetch(layout.nsys_sqlite)
        read_ncu.settle(120.0)
        read_nsys.settle(120.0)
    t0 = time.perf_counter()
    if read_ahead:
        read_ncu.prefetch(layout.ncu_duration_report)
    runs, _why = check_run(run, before, read_ncu, CLOCK_SWEEP_PASS, read_nsys)
    t1 = time.perf_counter()
    if read_ahead:
        read_ncu.prefetch(layout.ncu_base_report)
    analyze(run, read_ncu=read_ncu, read_nsys=read_nsys)
    t2 = time.perf_counter()
    return {"check_s": t1 - t0, "final_s": t2 - t1, "base_pass": "needed" if runs else "not needed"}


def measure(names: list[str], repeat: int) -> dict[str, Any]:
    from nsightwrap.analysis.load import analyze

    rows = []
    with tempfile.TemporaryDirectory(prefix="nsightwrap-read-ahead-") as tmp:
        for name in names:
            run = Path(tmp) / name
            shutil.copytree(RUNS / name, run)
            analyze(run)  # the unpack cache, filled once for both modes
            got: dict[str, list[dict[str, Any]]] = {"in series": [], "read ahead": []}
            for _ in range(repeat):
                for mode in got:
                    got[mode].append(once(run, mode == "read ahead"))
            row: dict[str, Any] = {"run": name, "base_pass": got["in series"][0]["base_pass"]}
            for mode, xs in got.items():
                row[mode] = {k: round(statistics.median(float(x[k]) for x in xs), 3) for k in ("check_s", "final_s")}
                row[mode]["base_pass"] = sorted({str(x["base_pass"]) for x in xs})  # the same answer each time
            rows.append(row)
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
            "machine": platform.processor() or platform.machine(), "repeat": repeat, "rows": rows}  # fmt: skip


def table(res: dict[str, Any]) -> str:
    lines = [
        f"read ahead: the base pass's check and the final analysis, medians of {res['repeat']} ({res['date']})", "",
        "| run | base pass | check in series s | check read ahead s | saved | final analysis in series s | read ahead s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]  # fmt: skip
    for r in res["rows"]:
        a, b = r["in series"], r["read ahead"]
        lines.append(
            f"| {r['run']} | {r['base_pass']} | {a['check_s']:.2f} | {b['check_s']:.2f} | "
            f"{100 * (1 - b['check_s'] / a['check_s']):.0f}% | {a['final_s']:.2f} | {b['final_s']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", default=list(DEFAULT_RUNS), help="shipped runs (fixtures/runs/NAME) with every pass")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=Path, help="write the figures here too")
    a = ap.parse_args(argv)
    res = measure(a.runs, a.repeat)
    print(table(res))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
