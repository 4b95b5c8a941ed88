"""A verdict whose ratio is at ncu's own clocks because the loop's measured clock was contradicted
by its kernels' own durations: checked against those durations (the clock the loop ran at), and
marked where they put the timing on the other side of the tolerance (real H200 captures)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import Verdict
from nsightwrap.analysis.reconcile import _clock_unresolved
from nsightwrap.export import reportfmt as f
from nsightwrap.export.jsonio import load_report_json, write_report_json

BLOG = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-blog"


@pytest.fixture(scope="module")
def contradicted():
    run = analyze(BLOG)
    b = next(b for b in run.benchmarks if b.name == "blog_do_bench.py:36 do_bench_cuda #3")
    return run, b


def test_the_contradicted_clock_keeps_the_kernels_own_durations(contradicted) -> None:
    _, b = contradicted
    assert b.gap is not None and any("is contradicted by the kernels' own durations" in n for n in b.notes)
    own = b.gap.measurements["contradicted_own_ns"]
    assert own == pytest.approx(275_390, abs=20)  # "under nsys they took 275.39 us"
    # At 10% both readings agree (0.99x at ncu's clocks, ~1.01x over the kernels): no mark.
    assert b.verdict is Verdict.OK and b.clock_unresolved_ratio is None
    assert f.noisy_text(b) == ""


def test_a_verdict_across_the_tolerance_at_the_loops_clock_is_marked(contradicted) -> None:
    _, b = contradicted
    assert b.gap is not None and b.timer is not None
    r = b.gap.timer_ns / b.gap.measurements["contradicted_own_ns"]
    assert 1.005 < r < 1.02
    # ok at a tolerance the kernels' own durations exceed: marked with that ratio.
    assert _clock_unresolved(b.gap, b.timer, Verdict.OK, 0.005) == pytest.approx(r)
    # Not ok, and the kernels' own durations agree it is out: no mark; within: marked.
    assert _clock_unresolved(b.gap, b.timer, Verdict.FLAGGED, 0.005) is None
    assert _clock_unresolved(b.gap, b.timer, Verdict.FLAGGED, 0.05) == pytest.approx(r)
    assert _clock_unresolved(b.gap, b.timer, Verdict.NO_NCU, 0.005) is None


def test_the_mark_is_shown_and_kept(contradicted, tmp_path: Path) -> None:
    run, b = contradicted
    marked = replace(b, clock_unresolved_ratio=1.146)
    assert f.noisy_text(marked) == "clock unresolved: 1.15x at another measured clock"
    assert f.verdict_cell(marked) == "ok (clock unresolved: 1.15x at another measured clock)"
    out = replace(run, benchmarks=tuple(marked if x is b else x for x in run.benchmarks))
    path = tmp_path / "r.json"
    write_report_json(out, path)
    doc = json.loads(path.read_text())
    assert next(e for e in doc["benchmarks"] if e["name"] == b.name)["clock_unresolved_ratio"] == 1.146
    back = load_report_json(path)
    assert next(x for x in back.benchmarks if x.name == b.name).clock_unresolved_ratio == 1.146
