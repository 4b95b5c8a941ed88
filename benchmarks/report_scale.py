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
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.analysis_speed import build_run, ncu_from_csv


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--benchmarks", type=int, default=1000, help="sweep points (default 1000)")
    ap.add_argument("--iters", type=int, default=30, help="nsys iterations kept per benchmark (default 30)")
    ap.add_argument("--repeat", type=int, default=1, help="timed renderings per step; the best is reported (default 1)")
    ap.add_argument("--keep", type=Path, default=None, help="build the run directory here and keep it")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nsightwrap-scale-") as tmp:
        run = args.keep if args.keep is not None else Path(tmp) / "run"
        if args.keep is not None and run.exists():
            raise SystemExit(f"{run} exists; give a new directory to --keep")
        t0 = time.perf_counter()
        held = build_run(run, args.benchmarks, args.iters)
        built_s = time.perf_counter() - t0
        rows = measure(run, args.repeat, Path(tmp))
    print(f"machine: {platform.processor() or platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, {os.cpu_count()} CPUs")  # fmt: skip
    print(f"run: {json.dumps(held)} (built in {built_s:.1f} s)")
    print()
    print("| step | seconds | output | note |\n| --- | ---: | ---: | --- |")
    for name, s, size, note in rows:
        out = "-" if not size else f"{size / 1e6:.2f} MB" if size >= 1e5 else f"{size / 1e3:.1f} KB"
        print(f"| {name} | {s:.2f} | {out} | {note} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
