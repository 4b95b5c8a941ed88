"""benchmarks/report_scale.py runs end to end on a small sweep of the shipped run and prints a row
per report format and compare step (the figures themselves are docs/analysis-speed.md's; no
timing is asserted here)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from bench_modules import load_benchmark

ROOT = Path(__file__).resolve().parent.parent


def test_slowed_lengthens_every_tenth_benchmark_only() -> None:
    rs = load_benchmark("report_scale")
    doc = {"benchmarks": [{"timer": {"samples_ns": [100.0, 200.0]}} for _ in range(11)] + [{"timer": None}]}
    out = rs._slowed(doc)
    for slowed in (out["benchmarks"][0], out["benchmarks"][10]):
        assert slowed["timer"]["samples_ns"] == pytest.approx([110.0, 220.0])
    assert out["benchmarks"][1]["timer"]["samples_ns"] == [100.0, 200.0] and out["benchmarks"][11]["timer"] is None
    assert doc["benchmarks"][0]["timer"]["samples_ns"] == [100.0, 200.0]  # the input is left as it was


def test_every_format_and_compare_step_gets_a_row() -> None:
    r = subprocess.run([sys.executable, "-m", "benchmarks.report_scale", "--benchmarks", "3", "--iters", "2"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| ([^|]+?) \| ([\d.]+) \|", r.stdout, re.M)}
    assert list(rows) == [
        "analyze (not a format)", "report -f table", "report -f md", "report -f md --full", "report -f json",
        "report -f html", "compare: read both sides", "compare: verdicts", "compare -f table", "compare -f md",
        "compare -f json", "compare -f junit",
        # whole commands in a child process: the first analyses and stores, the rest read it back
        "python start (python -c pass)", "python start and the imports of a report", "report (analyse and store)", "report -f table (stored)", "report -f md (stored)", "report -f json (stored)",
        "report -f json --detail (stored)", "report -f html (stored)", "compare RUN RUN --metric ncu (stored)",
    ]  # fmt: skip
    assert "| 3 benchmarks: " in r.stdout and "SLOWER |" in r.stdout  # the slowed benchmark is found
