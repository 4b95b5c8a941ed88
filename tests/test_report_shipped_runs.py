"""Every shipped run (fixtures/runs/*) in every report format (table, Markdown, JSON, HTML), each
rendered once: the number on a row is the number its verdict used, every timing shows its spread
and sample count, the Markdown keeps the findings when it is cut, and the HTML's ids are unique,
its clock chart has a caption and no cause is printed twice."""

from __future__ import annotations

import collections
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nsightwrap.analysis.gap.verdict import ratio_at_clock
from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import BenchmarkResult, RunResult, Verdict
from nsightwrap.export import reportfmt as f
from nsightwrap.export.escape import html as esc
from nsightwrap.export.escape import md_cell
from nsightwrap.export.html import render_html
from nsightwrap.export.jsonio import gap_from_dict, write_report_json
from nsightwrap.export.markdown import GITHUB_LIMIT, render_markdown
from nsightwrap.export.terminal import report_plain

ROOT = Path(__file__).resolve().parent.parent
RUNS = sorted(p.name for p in (ROOT / "fixtures" / "runs").iterdir() if (p / "manifest.json").is_file())
JUDGED = (Verdict.OK, Verdict.EXPLAINED, Verdict.FLAGGED, Verdict.UNEXPLAINED)


@dataclass(frozen=True)
class Rendered:
    result: RunResult
    table: str
    md: str
    md_full: str
    doc: dict[str, Any]
    html: str


@pytest.fixture(scope="module")
def runs() -> dict[str, Rendered]:
    out = {}
    for run in RUNS:
        result = analyze(ROOT / "fixtures" / "runs" / run)
        out[run] = Rendered(
            result,
            report_plain(result, width=400),
            render_markdown(result),
            render_markdown(result, limit=None),
            json.loads(write_report_json(result)),
            render_html(result),
        )
    return out


def _table_cells(table: str, label: str) -> dict[str, str]:
    """The terminal table's row of ``label``, by header."""
    lines = table.splitlines()
    head = next(line for line in lines if line.startswith("┃ benchmark"))
    names = [c.strip() for c in head.strip("┃").split("┃")]
    row = next(line for line in lines if line.startswith("│") and line.split("│")[1].strip() == label)
    return dict(zip(names, (c.strip() for c in row.strip("│").split("│")), strict=True))


def _md_cells(md: str, label: str) -> dict[str, str]:
    lines = md.splitlines()
    head = next(line for line in lines if line.startswith("| benchmark |"))
    names = [c.strip() for c in head.strip("|").split(" | ")]
    row = next(line for line in lines if line.startswith(f"| {md_cell(label)} |") and "|" in line[2:])
    return dict(zip(names, (c.strip() for c in re.split(r"(?<!\\)\|", row.strip("|"))), strict=False))


def _html_cells(page: str, label: str) -> dict[str, str]:
    summary = page[page.index("<h2>Summary</h2>") :]
    head = re.findall(r"<th[^>]*>(.*?)</th>", summary[: summary.index("</thead>")])
    row = next(r for r in re.findall(r"<tr[^>]*>(.*?)</tr>", summary) if r.startswith(f'<td class="name">{esc(label)}</td>'))
    return dict(zip(head, re.findall(r"<td[^>]*>(.*?)</td>", row), strict=True))


def _judged(r: Rendered) -> list[BenchmarkResult]:
    return [b for b in r.result.benchmarks if b.verdict in JUDGED and b.gap is not None and b.ratio is not None]


@pytest.mark.parametrize("run", RUNS)
def test_the_ratio_on_every_row_is_the_one_its_verdict_used(runs: dict[str, Rendered], run: str) -> None:
    r = runs[run]
    tol = r.result.settings.tolerance
    by_name = {b["name"]: b for b in r.doc["benchmarks"]}
    for b in _judged(r):
        d = by_name[b.name]
        gap = gap_from_dict(d["gap"])
        assert gap is not None
        at = ratio_at_clock(gap)
        assert at is not None and d["ratio"] == pytest.approx(at, rel=1e-12), b.name
        assert d["ratio_raw"] == pytest.approx(d["timer"]["median_ns"] / d["ncu"]["median_ns"], rel=1e-12)
        assert d["ratio"] == pytest.approx(d["timer"]["median_ns"] / d["ncu_at_ratio_ns"], rel=1e-9)
        reason = gap.measurements["verdict_reason"]
        if b.verdict is Verdict.OK:
            assert abs(d["ratio"] - 1) <= tol and reason.startswith(f"{d['ratio']:.2f}x at the measured clock")
        elif b.verdict is Verdict.EXPLAINED:
            assert abs(d["ratio"] - 1) > tol and reason.startswith(f"{d['ratio']:.2f}x:")
        label = f.label(b)
        shown = f.ratio(d["ratio"])
        clock = "ncu's" if d["ratio_clock_hz"] is None else f.clock_hz(d["ratio_clock_hz"])
        for cells in (_table_cells(r.table, label), _md_cells(r.md, label), _html_cells(r.html, label)):
            assert cells["ratio @clock"] == shown and cells["ratio raw"] == f.ratio(d["ratio_raw"]), (b.name, cells)
            assert cells["clock"] == clock, (b.name, cells)


def test_a_contradicted_clock_shows_the_ratio_the_verdict_used(runs: dict[str, Rendered]) -> None:
    # do_bench_cuda #3 of the blog run: 1.22x at the host's 1.98 GHz, which the kernels' own
    # durations contradict; the verdict used 0.99x at ncu's own clocks, and so does every format.
    r = runs["h200-blog"]
    label = "blog_do_bench.py:36 do_bench_cuda #3"
    (d,) = (b for b in r.doc["benchmarks"] if b["name"] == label)
    assert d["verdict"] == "ok" and d["ratio_clock_hz"] is None and d["ratio"] == pytest.approx(0.99, abs=0.005)
    assert _table_cells(r.table, label)["ratio @clock"] == "0.99x" and "1.22x" not in _table_cells(r.table, label).values()
    assert _md_cells(r.md, label)["ratio @clock"] == "0.99x" and _html_cells(r.html, label)["ratio @clock"] == "0.99x"


@pytest.mark.parametrize("run", RUNS)
def test_every_timing_shows_its_spread_and_count_and_a_noisy_one_is_marked(runs: dict[str, Rendered], run: str) -> None:
    r = runs[run]
    tol = r.result.settings.tolerance
    by_name = {b["name"]: b for b in r.doc["benchmarks"]}
    for b in r.result.benchmarks:
        if b.timer is None:
            continue
        t = by_name[b.name]["timer"]
        assert {"stdev_ns", "iqr_ns", "n"} <= t.keys()
        spread = f"{t['iqr_ns'] / t['median_ns']:.1%} ({t['n']})" if t["n"] >= 2 else f"- ({t['n']})"
        label = f.label(b)
        cells = [_table_cells(r.table, label), _md_cells(r.md, label), _html_cells(r.html, label)]
        assert all(c["spread (n)"] == spread for c in cells), (b.name, spread, cells)
        noisy = t["n"] >= 2 and t["iqr_ns"] / t["median_ns"] > tol and b.verdict in JUDGED
        assert by_name[b.name]["noisy"] is noisy, b.name
        marks = [c["verdict"] for c in cells]
        assert all(("noisy: IQR" in m) is noisy for m in marks), (b.name, marks)
        assert any("samples spread widely" in n for n in b.notes) is noisy


def test_the_shipped_runs_hold_noisy_benchmarks(runs: dict[str, Rendered]) -> None:
    noisy = {b.name for r in runs.values() for b in r.result.benchmarks if b.noisy}
    assert {"add_small", "torch_timer.py:42 Timer.adaptive_autorange #1"} <= noisy


@pytest.mark.parametrize("run", RUNS)
def test_markdown_fits_and_keeps_every_flagged_and_unexplained_cause(runs: dict[str, Rendered], run: str) -> None:
    r = runs[run]
    assert len(r.md) <= GITHUB_LIMIT
    for b in f.to_look_at(r.result):
        for c in b.causes:
            assert f"- **{c.code.value}**: {md_cell(c.message)}" in r.md and f"  - fix: {md_cell(c.fix)}" in r.md
    cut = len(r.md_full) > GITHUB_LIMIT
    assert ("> Cut to fit GitHub's" in r.md) is cut
    if cut:
        assert "`nsightwrap report RUN --format md --full`" in r.md and "--format json" in r.md
    else:
        assert r.md == r.md_full


def test_the_mixed_run_is_cut_from_its_per_kernel_details_first(runs: dict[str, Rendered]) -> None:
    md = runs["h200-mixed"].md
    for heading in ("## Flagged benchmarks", "## Explained benchmarks", "## Notes", "## Where the gap comes from", "## Roofline"):
        assert heading in md, heading
    (note,) = (line for line in md.splitlines() if line.startswith("> Cut"))
    assert "left out the per-kernel details of 3 of 4 benchmarks." in note, note
    assert len(md) > 20_000  # the findings, not a 2,700-character stub


@pytest.mark.parametrize("run", RUNS)
def test_measured_on_the_gpu_means_one_thing(runs: dict[str, Rendered], run: str) -> None:
    r = runs[run]
    gpu = sum(1 for b in r.result.benchmarks if b.ratio is not None and f.ratio_clock_kind(b) == "gpu")
    for b in r.result.benchmarks:
        if f.ratio_clock_kind(b) == "gpu":
            assert any(s in b.ref_clock_source for s in ("nsys GPU metrics", "probe", "stamps"))
    if gpu:
        assert f"{gpu} at a clock measured on the GPU" in r.table
    assert "at the loop's SM clock measured on the GPU where there is one" not in r.md


@pytest.mark.parametrize("run", RUNS)
def test_html_ids_are_unique_the_clock_chart_has_a_caption_and_no_cause_repeats(runs: dict[str, Rendered], run: str) -> None:
    r = runs[run]
    ids = re.findall(r"""\bid=["']([^"']+)["']""", r.html)
    assert ids and [i for i, n in collections.Counter(ids).items() if n > 1] == []
    refs = set(re.findall(r"""(?:url\(#|href=["']#)([^"')]+)""", r.html))
    assert refs <= set(ids)  # every reference reaches its own figure's element
    if r.result.clock_trace:
        (cap,) = re.findall(r"<figcaption>(.*?)</figcaption>", r.html)
        assert "nvidia-smi samples" in cap and "plain pass" in cap
        spans = [b for b in r.result.benchmarks if b.power is not None and b.power.t_start_s is not None]
        if spans:
            assert f"({len(spans)} of {len(r.result.benchmarks)} benchmarks" in cap
            chart = r.html[r.html.index("<figure") : r.html.index("</figure>")]
            assert all(f">{esc(f.label(b))}<" in chart for b in spans)  # each span named on the chart
        else:
            assert "No benchmark&#x27;s time span is known in this run" in cap
    having: collections.Counter[str] = collections.Counter(m for b in r.result.benchmarks for m in {c.message for c in b.causes})
    for message, n in having.items():
        assert 1 <= r.html.count(esc(message)) <= n, message[:80]


def test_a_run_with_benchmark_spans_shades_them(runs: dict[str, Rendered]) -> None:
    r = runs["h200-clock-sweep"]
    spans = [b for b in r.result.benchmarks if b.power is not None and b.power.t_start_s is not None]
    assert len(spans) == 3
    assert math.isfinite(spans[0].power.t_start_s or math.nan)  # type: ignore[union-attr]
    (cap,) = re.findall(r"<figcaption>(.*?)</figcaption>", r.html)
    assert "shaded and named (3 of 3 benchmarks" in cap
