"""How long every report format and ``compare`` take on a 1,000-benchmark run, built from real captures.

    python -m benchmarks.report_scale [--benchmarks 1000] [--iters 30] [--repeat 1] [--keep DIR]

The run directory is ``benchmarks.analysis_speed``'s parameter sweep (each sweep point a copy of
one benchmark of fixtures/runs/h200-example: its sidecar entry, its nsys iterations inserted again
into the real export, its real ncu rows read from an ncu CSV; that module's docstring says how).
It is analysed once (``analysis.load.analyze``, timed apart), then each format is rendered from
the result as ``nsightwrap report`` renders it:

- ``table``: the terminal report at 160 columns (``report -f table -o FILE``);
- ``md``: the Markdown cut to GitHub's limit (the default), and ``md --full``;
- ``json``: the report JSON; ``html``: the self-contained HTML page;

and ``compare`` of two report JSONs of that run (the current one with every tenth benchmark's
timer samples 10% longer): reading both sides, the verdicts, then each compare format (table, md,
json, junit). Printed: seconds (best of ``--repeat``) and output size per step.

Then the stored analysis (analysis/store.py), each step in a child process of its own, whose
peak memory (``ru_maxrss``) is printed beside its time: Python's start alone and with the
imports of a report (what every step's process wall holds before it reads anything), the first
``report`` (analyse and store), then ``report`` in each format from the stored analysis (reading it, then rendering),
and ``compare RUN RUN --metric ncu`` (both sides read from the store); ``--first-only``: the
first ``report`` alone (the nsys iterations it analyses per benchmark: ``NSIGHTWRAP_NSYS_ITERATIONS``,
docs/nsys-parsing.md). ``--iters`` sets the
nsys volume per benchmark (the source run has up to about 200 iterations per benchmark);
``--target-iters 1136`` repeats them up to a real ``do_bench`` call's (``analysis_speed``'s
``REAL_DO_BENCH_ITERS``).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.analysis_speed import REAL_DO_BENCH_ITERS, build_run, ncu_from_csv


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """(the fastest of ``repeat`` calls in s, the last call's value)."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def _size(out: Any) -> int:
    return len(out.encode("utf-8")) if isinstance(out, str) else len(out) if isinstance(out, bytes) else 0


def _slowed(doc: dict[str, Any], every: int = 10, factor: float = 1.10) -> dict[str, Any]:
    """A copy of a report JSON document with every ``every``-th benchmark's timer samples longer."""
    doc = json.loads(json.dumps(doc))
    for i, b in enumerate(doc["benchmarks"]):
        if i % every == 0 and b.get("timer"):
            b["timer"]["samples_ns"] = [v * factor for v in b["timer"]["samples_ns"]]
    return doc


def measure(run: Path, repeat: int, work: Path) -> list[tuple[str, float, int, str]]:
    """Rows (step, seconds, bytes, note) for the analysis, every report format and compare."""
    from rich.console import Console

    from nsightwrap.analysis.load import analyze
    from nsightwrap.compare.sides import load_side
    from nsightwrap.compare.verdicts import compare
    from nsightwrap.export.html import render_html
    from nsightwrap.export.jsonio import compare_json, report_to_dict, write_report_json
    from nsightwrap.export.junit import compare_junit
    from nsightwrap.export.markdown import compare_markdown, render_markdown
    from nsightwrap.export.reportfmt import count_text
    from nsightwrap.export.terminal import compare_table, print_report

    rows: list[tuple[str, float, int, str]] = []
    with ncu_from_csv(run):
        s, result = _best(lambda: analyze(run), 1)
    rows.append(("analyze (not a format)", s, 0, count_text(result.benchmarks)))

    def table() -> str:
        console = Console(record=True, width=160, file=io.StringIO(), highlight=False)
        print_report(result, console)
        return console.export_text()

    for name, fn in (
        ("report -f table", table),
        ("report -f md", lambda: render_markdown(result)),
        ("report -f md --full", lambda: render_markdown(result, limit=None)),
        ("report -f json", lambda: write_report_json(result)),
        ("report -f html", lambda: render_html(result)),
    ):
        s, out = _best(fn, repeat)
        note = f"{out.count('<svg')} charts" if name.endswith("html") else ""
        rows.append((name, s, _size(out), note))

    base, cur = work / "baseline.json", work / "current.json"
    doc = report_to_dict(result)
    base.write_text(json.dumps(doc), encoding="utf-8")
    cur.write_text(json.dumps(_slowed(doc)), encoding="utf-8")
    s, sides = _best(lambda: (load_side(base), load_side(cur)), repeat)
    rows.append(("compare: read both sides", s, 0, ""))
    s, c = _best(lambda: compare(*sides), repeat)
    counts = ", ".join(f"{n} {v.value}" for v, n in c.counts().items() if n)
    rows.append(("compare: verdicts", s, 0, counts))

    def ctable() -> str:
        buf = io.StringIO()
        Console(file=buf, width=200, no_color=True, highlight=False).print(compare_table(c))
        return buf.getvalue()

    for name, fn in (
        ("compare -f table", ctable),
        ("compare -f md", lambda: compare_markdown(c)),
        ("compare -f json", lambda: compare_json(c)),
        ("compare -f junit", lambda: compare_junit(c)),
    ):
        s, out = _best(fn, repeat)
        rows.append((name, s, _size(out), ""))
    return rows


#: The child steps: (name, format or command).
STORED_STEPS = (("report (analyse and store)", "analyse"), ("report -f table (stored)", "table"),
                ("report -f md (stored)", "md"), ("report -f json (stored)", "json"),
                ("report -f json --detail (stored)", "json-detail"), ("report -f html (stored)", "html"),
                ("compare RUN RUN --metric ncu (stored)", "compare"))  # fmt: skip


#: The process starts measured before the steps: (name, the code run by ``python -c``).
STARTS = (("python start (python -c pass)", "pass"),
          ("python start and the imports of a report", "import nsightwrap.cli.report_cmd, nsightwrap.analysis.store, "
           "nsightwrap.export.jsonio, nsightwrap.export.terminal, nsightwrap.export.markdown, nsightwrap.export.html"))  # fmt: skip


def child(run: Path, step: str) -> dict[str, Any]:
    """One step in this (child) process: its seconds (reading the analysis, rendering), output
    size and the process's peak RSS."""
    import resource

    from rich.console import Console

    from benchmarks.analysis_speed import ncu_from_csv
    from nsightwrap.cli.report_cmd import run_analysis

    out: dict[str, Any] = {"step": step}
    with ncu_from_csv(run):
        t0 = time.perf_counter()
        had = run_analysis(run)
        if step == "compare":
            had2 = run_analysis(run)
        out["read_s"] = time.perf_counter() - t0
        out["line"] = had.line.split(";")[0]
    t0 = time.perf_counter()
    text: str | bytes = ""
    if step == "table":
        from nsightwrap.export.terminal import print_report

        console = Console(record=True, width=160, file=io.StringIO(), highlight=False)
        print_report(had.result, console)
        text = console.export_text()
    elif step == "md":
        from nsightwrap.export.markdown import render_markdown

        text = render_markdown(had.result)
    elif step in ("json", "json-detail"):
        from nsightwrap.export.jsonio import write_report_json

        text = write_report_json(had.result, detail=step == "json-detail", doc=had.doc)  # as report_cmd does
    elif step == "html":
        from nsightwrap.export.html import render_html

        text = render_html(had.result)
    elif step == "compare":
        from nsightwrap.compare.sides import side_from_report
        from nsightwrap.compare.verdicts import compare
        from nsightwrap.export.jsonio import compare_json, report_to_dict

        # As compare_cmd.report_of does: the stored analysis's document where there is one.
        a, b = (side_from_report(h.doc if h.doc is not None else report_to_dict(h.result), label="run", metric="ncu",
                                 where=str(run))
                for h in (had, had2))  # fmt: skip
        text = compare_json(compare(a, b, metric="ncu"))
    out["render_s"] = time.perf_counter() - t0
    out["bytes"] = _size(text)
    out["benchmarks"] = len(had.result.benchmarks)
    out["maxrss_mib"] = _peak_mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def _peak_mib(maxrss_mib: float) -> float:
    """This process's peak RSS in MiB: Linux's VmHWM where there is one, since ``ru_maxrss``
    keeps the parent's peak across fork and exec (every child would show the parent's)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return maxrss_mib


def stored_rows(run: Path, cache: Path, first_only: bool = False) -> list[dict[str, Any]]:
    """Every ``STORED_STEPS`` step in a child process of its own (the store on, its cache in
    ``cache``); ``first_only``: the first analysis alone."""
    import subprocess
    import sys

    env = {**os.environ, "NSIGHTWRAP_ANALYSIS_STORE": "on", "XDG_CACHE_HOME": str(cache)}
    rows = []
    # What every step's process wall holds before it reads anything: Python's start, then that
    # and the imports of a report (the exporters, the store, typer and rich).
    for name, code in () if first_only else STARTS:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
        wall = time.perf_counter() - t0
        rows.append({"name": name, "read_s": 0.0, "render_s": 0.0, "wall_s": wall, "bytes": 0, "benchmarks": 0,
                     "maxrss_mib": float("nan"), "line": "no run read"})  # fmt: skip
    for name, step in STORED_STEPS[:1] if first_only else STORED_STEPS:
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "benchmarks.report_scale", "--child", str(run), step],
                           capture_output=True, text=True, env=env, check=True)  # fmt: skip
        row = json.loads(p.stdout.strip().splitlines()[-1])
        rows.append({**row, "name": name, "wall_s": time.perf_counter() - t0})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--benchmarks", type=int, default=1000, help="sweep points (default 1000)")
    ap.add_argument("--iters", type=int, default=30, help="nsys iterations kept per benchmark (default 30)")
    ap.add_argument("--target-iters", type=int, default=None, metavar="N",
                    help=f"repeat each benchmark's kept iterations up to N per benchmark ({REAL_DO_BENCH_ITERS}: the "
                    "median do_bench call of fixtures/runs/h200-sweep, the real volume)")  # fmt: skip
    ap.add_argument("--repeat", type=int, default=1, help="timed renderings per step; the best is reported (default 1)")
    ap.add_argument("--keep", type=Path, default=None, help="build the run directory here and keep it")
    ap.add_argument("--reuse", type=Path, default=None, help="measure this run directory (made by --keep)")
    ap.add_argument("--stored-only", action="store_true", help="only the stored-analysis steps (child processes)")
    ap.add_argument("--first-only", action="store_true",
                    help="only the first analysis (analyse and store), in a child process")  # fmt: skip
    ap.add_argument("--child", nargs=2, metavar=("RUN", "STEP"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(Path(args.child[0]), args.child[1])))
        return 0
    if args.reuse is not None:
        shutil.rmtree(args.reuse / "analysis", ignore_errors=True)
        with tempfile.TemporaryDirectory(prefix="nsightwrap-scale-") as tmp:
            rows = [] if args.stored_only or args.first_only else measure(args.reuse, args.repeat, Path(tmp))
            _print(rows, stored_rows(args.reuse, Path(tmp) / "cache", args.first_only))
        return 0
    with tempfile.TemporaryDirectory(prefix="nsightwrap-scale-") as tmp:
        run = args.keep if args.keep is not None else Path(tmp) / "run"
        if args.keep is not None and run.exists():
            raise SystemExit(f"{run} exists; give a new directory to --keep")
        t0 = time.perf_counter()
        held = build_run(run, args.benchmarks, args.iters, args.target_iters)
        built_s = time.perf_counter() - t0
        print(f"run: {json.dumps(held)} (built in {built_s:.1f} s)")
        rows = [] if args.stored_only or args.first_only else measure(run, args.repeat, Path(tmp))
        _print(rows, stored_rows(run, Path(tmp) / "cache", args.first_only))
    return 0


def _out(size: int) -> str:
    return "-" if not size else f"{size / 1e6:.2f} MB" if size >= 1e5 else f"{size / 1e3:.1f} KB"


def _loadavg() -> str:
    """The 1, 5 and 15-minute load averages (Linux), or "-" where there are none."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "-"


def _print(rows: list[tuple[str, float, int, str]], stored: list[dict[str, Any]]) -> None:
    print(f"machine: {platform.processor() or platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M')}, "
          f"load average {_loadavg()}")  # fmt: skip
    print()
    if rows:
        print("| step | seconds | output | note |\n| --- | ---: | ---: | --- |")
        for name, s, size, note in rows:
            print(f"| {name} | {s:.2f} | {_out(size)} | {note} |")
        print()
    print("| step (a child process each) | analysis (s) | render (s) | process wall (s) | peak RSS | output | per benchmark |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in stored:
        per = f"{r['bytes'] / r['benchmarks'] / 1e3:.1f} KB" if r["bytes"] and r["benchmarks"] else "-"
        peak = "-" if r["maxrss_mib"] != r["maxrss_mib"] else f"{r['maxrss_mib']:.0f} MiB"  # NaN: not measured
        print(f"| {r['name']} | {r['read_s']:.2f} | {r['render_s']:.2f} | {r['wall_s']:.2f} | "
              f"{peak} | {_out(r['bytes'])} | {per} |")  # fmt: skip
        print(f"|   ({r['line']}) | | | | | | |")


if __name__ == "__main__":
    raise SystemExit(main())
