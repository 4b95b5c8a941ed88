"""Reconciliation of a real run directory (fixtures/runs/h200-example: ``nsightwrap profile
examples/bench_example.py`` on an NVIDIA H200, plain + ncu + nsys passes, probe clocks).

Every figure the report states is checked against the raw capture, read here without the
reconcile code: timer medians from the sidecar with ``json``, ncu per-iteration sums from the
parser's rows grouped by their ``nsightwrap:<bench>/iter<i>`` range, and nsys per-iteration
figures by SQL straight on ``nsys/report.sqlite``.
"""

from __future__ import annotations

import io
import json
import re
import sqlite3
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from rich.console import Console

from nsightwrap.analysis.load import NSYS_ITERATIONS_ENV, analyze
from nsightwrap.analysis.model import BenchmarkResult, ClockModel, RunResult
from nsightwrap.cli import main
from nsightwrap.core.contract import expand_runs
from nsightwrap.core.unpack import unpacked
from nsightwrap.export.html import render_html
from nsightwrap.export.jsonio import load_report_json, report_to_dict, write_report_json
from nsightwrap.export.markdown import render_markdown
from nsightwrap.export.terminal import print_report
from nsightwrap.parsers.ncu import read_ncu_rep

RUN = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-example"

#: What the report must conclude for each benchmark, in the sidecar's order.
EXPECTED = {
    "mm_large": ("ok", []),
    "mm_skinny": ("ok", []),
    "mm_small": ("ok", []),
    # The timer holds the queue and subtracts the empty window; what is left is the per-window
    # event and dispatch cost beyond ncu's own front end (docs/reconciliation.md).
    "add_small": ("flagged", ["front_end"]),
    # ncu sees no kernel in a copy; nsys measures it, and it is the whole timing.
    "copy_1g": ("explained", ["non_kernel_work"]),
    "softmax_mlp": ("ok", []),
    "two_streams": ("ok", []),
}


@pytest.fixture(scope="module")
def result() -> RunResult:
    # Every nsys iteration, as the SQL below reads them (the cap: tests/test_nsys_iteration_cap.py).
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(NSYS_ITERATIONS_ENV, "0")
        return analyze(RUN)


@pytest.fixture(scope="module")
def sidecar() -> dict[str, dict[str, Any]]:
    (path,) = (RUN / "plain").glob("timer-*.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {b["name"]: b for b in doc["benchmarks"]}


@pytest.fixture(scope="module")
def ncu_rows() -> pd.DataFrame:
    return read_ncu_rep(RUN / "ncu" / "report.ncu-rep.gz")


@pytest.fixture(scope="module")
def db() -> sqlite3.Connection:
    # The shipped export is gzipped; the test's own SQL runs on the same unpacked copy.
    return sqlite3.connect(f"file:{unpacked(RUN / 'nsys' / 'report.sqlite.gz')}?mode=ro", uri=True)


def bench(result: RunResult, name: str) -> BenchmarkResult:
    return next(b for b in result.benchmarks if b.name == name)


# Ops launched (runtime API call started) inside each `iter<i>` push/pop range nested in the
# benchmark's range, on the benchmark's thread. One row per iteration with kind NULL (so an
# iteration without ops still counts), then one per op: (iteration start, kind, start, end, stream).
OPS_SQL = """
WITH bench AS (
  SELECT n.start, n.end, n.globalTid FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId
  WHERE n.eventType = 59 AND s.value = :bench
), iters AS (
  SELECT i.start, i.end FROM NVTX_EVENTS i JOIN StringIds s ON s.id = i.textId
  JOIN bench b ON i.globalTid = b.globalTid AND i.start >= b.start AND i.end <= b.end
  WHERE i.eventType = 59 AND s.value GLOB 'iter[0-9]*'
), ops AS (
  SELECT 'kernel' AS kind, start, end, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL
  UNION ALL SELECT 'memcpy', start, end, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY
  UNION ALL SELECT 'memset', start, end, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET
), launches AS (
  SELECT r.start AS t, o.kind, o.start, o.end, o.streamId FROM CUPTI_ACTIVITY_KIND_RUNTIME r
  JOIN bench b ON r.globalTid = b.globalTid AND r.start >= b.start AND r.start < b.end
  JOIN ops o ON o.correlationId = r.correlationId
), timeline AS (
  SELECT start AS t, start AS iter_start, end AS iter_end, NULL AS kind, NULL AS start, NULL AS end, NULL AS stream FROM iters
  UNION ALL SELECT t, NULL, NULL, kind, start, end, streamId FROM launches
), tagged AS (
  -- Iterations follow one another on the thread: the latest iteration begun before a launch
  -- holds it if the launch comes before that iteration's end.
  SELECT *, max(iter_start) OVER w AS it_start, max(iter_end) OVER w AS it_end FROM timeline
  WINDOW w AS (ORDER BY t, iter_start IS NULL ROWS UNBOUNDED PRECEDING)
)
SELECT it_start, kind, start, end, stream FROM tagged
WHERE kind IS NULL OR t < it_end
ORDER BY it_start, kind IS NOT NULL, start
"""


def nsys_iterations(db: sqlite3.Connection, name: str) -> list[list[tuple[str, int, int, int]]]:
    """Per iteration (in start order), its ops as (kind, start, end, stream)."""
    per: dict[int, list[tuple[str, int, int, int]]] = {}
    for iter_start, kind, start, end, stream in db.execute(OPS_SQL, {"bench": name}):
        ops = per.setdefault(iter_start, [])
        if kind is not None:
            ops.append((kind, start, end, stream))
    return [per[k] for k in sorted(per)]


def union_ns(ops: list[tuple[str, int, int, int]]) -> int:
    total, reach = 0, None
    for _, s, e, _ in sorted(ops, key=lambda o: o[1]):
        if reach is None or s > reach:
            total += e - s
            reach = e
        elif e > reach:
            total += e - reach
            reach = e
    return total


def ncu_iterations(rows: pd.DataFrame, name: str) -> dict[int, pd.DataFrame]:
    """ncu rows of benchmark ``name`` grouped by their ``nsightwrap:<name>/iter<i>`` range."""
    pat = re.compile(rf"nsightwrap:{re.escape(name)}/iter(\d+)")
    it = rows["nvtx_ranges"].map(lambda paths: next((int(m.group(1)) for p in paths if (m := pat.fullmatch(p))), None))
    return {int(i): g for i, g in rows[it.notna()].groupby(it[it.notna()])}


# ----------------------------------------------------------------------------- verdicts


def test_every_benchmark_verdict_and_causes(result: RunResult) -> None:
    assert [b.name for b in result.benchmarks] == list(EXPECTED)
    got = {b.name: (b.verdict.value, [c.code.value for c in b.causes]) for b in result.benchmarks}
    assert got == EXPECTED
    assert [b.name for b in result.flagged] == ["add_small"]
    assert result.timer_found and result.environment.gpu_name == "NVIDIA H200"


def test_timer_figures_come_from_the_sidecar(result: RunResult, sidecar: dict[str, dict[str, Any]]) -> None:
    for name, raw in sidecar.items():
        b = bench(result, name)
        assert b.timer is not None
        assert b.timer.median_ns == raw["median_ns"]
        assert b.timer.samples_ns == tuple(raw["samples_ns"]) and len(raw["samples_ns"]) == raw["n"]
        assert b.timer.median_ns == pytest.approx(statistics.median(raw["samples_ns"]), rel=1e-9)
        # The reference clock is the clock the sidecar measured for this very benchmark.
        assert b.ref_clock_hz == raw["sm_clock_hz"]
        assert b.ref_clock_source == f"plain ({raw['clock_source']})"
    assert sidecar["add_small"]["median_ns"] == pytest.approx(3136.0, abs=1)
    assert sidecar["copy_1g"]["median_ns"] == pytest.approx(500_992.0, abs=1)


def test_ncu_per_iteration_sums(result: RunResult, ncu_rows: pd.DataFrame) -> None:
    attributed = 0
    for name in EXPECTED:
        b = bench(result, name)
        assert b.ncu is not None
        iters = ncu_iterations(ncu_rows, name)
        attributed += sum(len(g) for g in iters.values())
        assert b.ncu.iterations_ns == tuple(float(iters[i]["duration_ns"].sum()) for i in sorted(iters))
        assert b.ncu.kernels_per_iteration == tuple(len(iters[i]) for i in sorted(iters))
        assert b.ncu.excluded_kernels == 0
    # The ncu filter profiled exactly the measured calls: 3 iterations of each kernel benchmark.
    assert attributed == len(ncu_rows) == 27
    assert bench(result, "softmax_mlp").ncu.kernels_per_iteration == (3, 3, 3)  # type: ignore[union-attr]
    assert bench(result, "two_streams").ncu.kernels_per_iteration == (2, 2, 2)  # type: ignore[union-attr]
    assert bench(result, "copy_1g").ncu.iterations_ns == ()  # type: ignore[union-attr]  # a memcpy: no kernel


def _rescaled(g: pd.DataFrame, ref_hz: float) -> float:
    """One iteration at ``ref_hz`` by the documented rule: DRAM-bound kernels (memory or DRAM %
    at least 20 points above SM %) kept as measured, the others by their cycles."""
    mem = g[["memory_throughput_pct", "dram_throughput_pct"]].max(axis=1)
    dram_bound = mem - g["sm_throughput_pct"] >= 20
    cycles = g["duration_ns"] * g["sm_clock_hz"] / ref_hz
    return float(g["duration_ns"].where(dram_bound, cycles).sum())


def test_ratios_recomputed_from_raw_data(
    result: RunResult, sidecar: dict[str, dict[str, Any]], ncu_rows: pd.DataFrame
) -> None:
    for name in EXPECTED:
        b = bench(result, name)
        iters = ncu_iterations(ncu_rows, name)
        if not iters:
            assert b.ratio is None
            continue
        ref = sidecar[name]["sm_clock_hz"]
        at_ref = statistics.median(_rescaled(g, ref) for g in iters.values())
        raw = statistics.median(float(g["duration_ns"].sum()) for g in iters.values())
        assert b.ncu is not None and b.ncu.normalized_ns == pytest.approx(at_ref, rel=1e-9)
        assert b.ratio_raw == pytest.approx(sidecar[name]["median_ns"] / raw, rel=1e-9)
        # The ratio is the verdict's: ncu at the reference clock where the decomposition's clock
        # part carried it there, at nsys's own durations where those bounded it, else at ncu's own
        # clocks (the gap's figures are rounded to 1/8 ns).
        assert b.gap is not None and b.ncu_at_ratio_ns is not None
        assert b.ratio == pytest.approx(sidecar[name]["median_ns"] / b.ncu_at_ratio_ns, rel=1e-9)
        clock = next((p for p in b.gap.parts if p.cause == "clock"), None)
        if clock is None:
            assert b.ratio_clock_hz is None and b.ncu_at_ratio_ns == pytest.approx(raw, rel=1e-6)
        elif "bound_by_nsys_kernel_ns" in clock.evidence:
            assert b.ncu_at_ratio_ns == pytest.approx(clock.evidence["bound_by_nsys_kernel_ns"], rel=1e-6)
        else:
            assert b.ratio_clock_hz == ref and b.ncu_at_ratio_ns == pytest.approx(at_ref, rel=1e-6)


def test_mm_large_normalized_with_the_probe_clock(result: RunResult, sidecar: dict[str, dict[str, Any]]) -> None:
    raw = sidecar["mm_large"]
    assert raw["clock_source"] == "probe"
    b = bench(result, "mm_large")
    assert b.ref_clock_hz == raw["sm_clock_hz"] == pytest.approx(1.6106e9, rel=1e-4)
    assert b.ref_clock_source == "plain (probe)"
    assert b.ncu is not None and b.ncu.sm_clock_hz == pytest.approx(1.5897e9, rel=1e-3)
    # A compute-bound GEMM: every kernel rescaled, so ncu at the probe clock is shorter than raw.
    assert {k.clock_model for k in b.ncu.kernels} == {ClockModel.COMPUTE}
    assert b.ncu.normalized_ns < b.ncu.median_ns
    assert b.ratio is not None and abs(b.ratio - 1) < 0.03
    assert b.ratio == pytest.approx(1.0046, abs=5e-4)


@pytest.mark.parametrize("name", ["mm_skinny", "mm_small"])
def test_memory_bound_kernels_are_not_rescaled(
    name: str, result: RunResult, sidecar: dict[str, dict[str, Any]], ncu_rows: pd.DataFrame
) -> None:
    b = bench(result, name)
    assert b.ncu is not None and b.ref_clock_hz is not None and b.ncu.sm_clock_hz is not None
    for g in ncu_iterations(ncu_rows, name).values():  # the counters say DRAM-bound
        assert ((g["memory_throughput_pct"] - g["sm_throughput_pct"]) > 35).all()
    assert all(k.clock_model is ClockModel.MEMORY for k in b.ncu.kernels)
    assert all(k.normalized_ns == k.duration_ns for k in b.ncu.kernels)
    assert b.ncu.normalized_ns == b.ncu.median_ns and b.ratio == b.ratio_raw
    # The clocks differ (ncu ran faster than the plain pass): a rescale would have moved them.
    assert abs(b.ncu.sm_clock_hz / b.ref_clock_hz - 1) > 0.09
    assert any("DRAM-bound" in n for n in b.notes)


def test_mm_skinny_would_be_flagged_if_rescaled(result: RunResult) -> None:
    b = bench(result, "mm_skinny")
    assert b.ncu is not None and b.timer is not None and b.ref_clock_hz is not None
    as_compute = statistics.median(b.ncu.iterations_cycles) / b.ref_clock_hz * 1e9
    assert b.timer.median_ns / as_compute == pytest.approx(0.777, abs=0.005)  # 22% off: flagged
    assert b.ratio == pytest.approx(1.014, abs=0.001)


# ----------------------------------------------------------------------------- nsys evidence


@pytest.mark.parametrize("name", list(EXPECTED))
def test_nsys_per_iteration_figures_from_sqlite(name: str, result: RunResult, db: sqlite3.Connection) -> None:
    iters = nsys_iterations(db, name)
    b = bench(result, name)
    assert b.nsys is not None and len(iters) == len(b.nsys.busy_ns) > 40

    def count(kind: str) -> tuple[int, ...]:
        return tuple(sum(o[0] == kind for o in ops) for ops in iters)

    assert b.nsys.kernels_per_iteration == count("kernel")
    assert b.nsys.memcpy_per_iteration == count("memcpy")
    assert b.nsys.memset_per_iteration == count("memset")
    assert b.nsys.iterations_ns == tuple(float(sum(e - s for k, s, e, _ in ops if k == "kernel")) for ops in iters)
    assert b.nsys.busy_ns == tuple(float(union_ns(ops)) for ops in iters)
    assert b.nsys.span_ns == tuple(float(max(o[2] for o in ops) - min(o[1] for o in ops)) for ops in iters)
    # cuBLAS's coop GEMMs (mm_large, softmax_mlp) clear a workspace with a memset each call.
    assert set(count("memset")) == ({1} if name in ("mm_large", "softmax_mlp") else {0})


def test_copy_1g_non_kernel_work_from_sqlite(result: RunResult, db: sqlite3.Connection) -> None:
    iters = nsys_iterations(db, "copy_1g")
    assert len(iters) == 52
    for ops in iters:
        assert [o[0] for o in ops] == ["memcpy"]  # one copy, no kernel, no memset
    copy_ns = [e - s for ops in iters for _, s, e, _ in ops]
    (nbytes,) = {r[0] for r in db.execute("SELECT bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY")}
    assert nbytes == 1 << 30
    b = bench(result, "copy_1g")
    assert b.nsys is not None
    assert b.nsys.busy_ns == tuple(float(v) for v in copy_ns)
    assert b.nsys.memcpy_per_iteration == (1,) * 52 and set(b.nsys.kernels_per_iteration) == {0}
    (cause,) = b.causes
    ev = cause.evidence
    assert ev["memcpy_per_iteration"] == 1 and ev["memset_per_iteration"] == 0
    assert ev["ncu_kernels_per_iteration"] == 0
    assert b.nsys.busy_median_ns == statistics.median(copy_ns) == 501_185.0
    # The decomposition's nsys figures: means over the middle half of the iterations.
    assert ev["non_kernel_ns"] == ev["part_ns"] == pytest.approx(501_185.0, rel=1e-3)
    assert re.search(r"1 memcpy and 0 memset per iteration took 501\.[12]\d us", cause.message)
    # The timer agrees with nsys busy time to 0.04%: only the profiler that saw no kernel is blind.
    assert b.timer.median_ns / b.nsys.busy_median_ns == pytest.approx(0.9996, abs=1e-4)  # type: ignore[union-attr]


def _stream_ends(db: sqlite3.Connection) -> dict[int, list[int]]:
    ends: dict[int, list[int]] = {}
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        for stream, end in db.execute(f"SELECT streamId, end FROM {table}"):
            ends.setdefault(stream, []).append(end)
    return {s: sorted(v) for s, v in ends.items()}


def test_add_small_front_end_from_sqlite(result: RunResult, db: sqlite3.Connection) -> None:
    import bisect

    iters = nsys_iterations(db, "add_small")
    assert len(iters) == 1000 and all([o[0] for o in ops] == ["kernel"] for ops in iters)
    busy = statistics.median(union_ns(ops) for ops in iters)
    # The lead-in of each window: from the end of the previous op on the same stream (the flush)
    # to the start of the measured kernel, read straight from the export.
    ends = _stream_ends(db)
    lead = []
    for ops in iters:
        (_, start, _, stream) = ops[0]
        on = ends[stream]
        lead.append(start - on[bisect.bisect_right(on, start) - 1])
    b = bench(result, "add_small")
    (cause,) = b.causes
    ev = cause.evidence
    assert cause.code.value == "front_end"
    # The decomposition's nsys figures are means over the middle half of the iterations by window
    # length (here, the lead-in orders the windows: one 1.3 us kernel each).
    mid = sorted(lead)[len(lead) // 4 : len(lead) - len(lead) // 4]
    assert ev["lead_in_ns"] == pytest.approx(statistics.fmean(mid), rel=0.01)
    assert ev["empty_window_subtracted_ns"] == pytest.approx(1280.0, abs=0.2)  # the timer's own measurement
    assert ev["host_wait_ns"] == 0.0  # the queue was held: never dry
    # ncu's front end beyond CUPTI, on this very kernel (the timer flushes clean, as ncu does).
    assert ev["ncu_front_end_ns"] == pytest.approx(b.ncu.normalized_ns - busy, abs=40)  # type: ignore[union-attr]
    # What the lead-in measured; the part stops at the room the plain window leaves beside the
    # add's busy time and ncu's front end (ev["bound"]), the rest is in the residual.
    assert ev["measured_ns"] == pytest.approx(ev["lead_in_ns"] - 1280.0 - ev["ncu_front_end_ns"], abs=0.3)  # type: ignore[operator]
    assert ev["part_ns"] <= ev["measured_ns"]  # type: ignore[operator]
    assert "nsightwrap.bench already holds the queue" in cause.fix  # nothing it already does is suggested
    assert "hold the queue back" not in cause.fix
    assert b.gap is not None and abs(b.gap.residual_ns) < 300
    assert b.ratio == pytest.approx(1.487, abs=0.001)


def test_two_streams_overlap_from_sqlite(result: RunResult, db: sqlite3.Connection) -> None:
    iters = nsys_iterations(db, "two_streams")
    assert len(iters) == 56
    op_sum = [sum(e - s for _, s, e, _ in ops) for ops in iters]
    busy = [union_ns(ops) for ops in iters]
    assert all(len({o[3] for o in ops}) == 2 for ops in iters)  # two streams in every iteration
    assert all(o > b for o, b in zip(op_sum, busy, strict=True))  # the kernels overlapped
    assert statistics.median(op_sum) / statistics.median(busy) == pytest.approx(1.263, abs=0.005)
    b = bench(result, "two_streams")
    assert b.nsys is not None
    assert b.nsys.op_sum_ns == tuple(float(v) for v in op_sum)
    assert b.nsys.busy_ns == tuple(float(v) for v in busy)
    assert b.nsys.streams == 2
    # Within tolerance, so not flagged, and yet the overlap is stated for this benchmark.
    assert b.ratio is not None and abs(b.ratio - 1) <= result.settings.tolerance
    assert b.causes == ()
    (note,) = b.notes
    assert note.startswith("ops overlapped on 2 stream(s): their durations sum to 230.16 us per iteration")
    assert "busy 182.21 us" in note and "judge by nsys busy time" in note
    others = [n for x in result.benchmarks if x.name != "two_streams" for n in x.notes]
    assert not any("overlapped" in n for n in others)


# ----------------------------------------------------------------------------- reports


def _terminal(result: RunResult, width: int) -> str:
    buf = io.StringIO()
    print_report(result, Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


@pytest.mark.parametrize("width", [80, 120, 160])
def test_terminal_fits_and_never_splits_a_number(result: RunResult, width: int) -> None:
    out = _terminal(result, width)
    lines = out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= width
    verdict = r"(ok|explained|flagged|unexplained)( \(noisy: IQR [\d.]+%\))?"
    rows = [line for line in lines if line.startswith("│") and re.search(rf"│ {verdict} +│", line)]
    assert len(rows) == 7  # one line per benchmark: nothing wrapped
    large = next(r for r in rows if "mm_large" in r)
    assert "281.09" in large and "1.00x" in large and "ok" in large
    assert "flagged" in next(r for r in rows if "add_small" in r).lower()
    # Every number of the table is whole: no row ends a cell with a dangling digit group.
    for r in rows:
        for cell in r.strip("│").split("│")[1:]:
            assert re.fullmatch(rf"\s*(-|[\d.]+( us| ns| ms| GHz|x|% \(\d+\))?|ncu's|{verdict})\s*", cell), cell
    assert "note: two_streams: ops overlapped on 2 stream(s)" in out
    assert "front_end:" in out  # the flagged benchmark's cause (copy_1g is explained)
    assert re.search(r"gap \+0\.99 us = front end \+ events \+1\.\d\d us", out)  # the decomposition's line
    if width == 80:
        assert "times in us, clocks in GHz" in out and "not shown at this width: spread (n), ncu raw" in out
    if width >= 120:
        # The spread outlives ncu's raw figures; the noisy mark stays beside the verdict at any width.
        assert "18.4% (1000)" in next(r for r in rows if "add_small" in r)
        assert ("not shown at this width: ncu raw" in out) is (width == 120)
    if width >= 160:
        assert "283.49" in large and "0.99x" in large  # every column (ncu raw and the raw ratio too)


def _table_blocks(md: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    prev = False
    for line in md.splitlines():
        is_row = line.startswith("|")
        if is_row and not prev:
            blocks.append([])
        if is_row:
            blocks[-1].append(line)
        prev = is_row
    return blocks


def test_markdown_tables_hold_their_shape(result: RunResult) -> None:
    md = render_markdown(result)
    blocks = _table_blocks(md)
    # summary, environment, one per benchmark with ncu kernels, one gap decomposition per benchmark
    from nsightwrap.export.markdown import roofline_markdown

    roofline = len(_table_blocks("\n".join(roofline_markdown(result))))
    assert len(blocks) == 1 + 1 + 6 + 7 + roofline
    unescaped = re.compile(r"(?<!\\)\|")
    for block in blocks:
        n = len(unescaped.findall(block[0]))
        for line in block:
            assert len(unescaped.findall(line)) == n, line
            assert "<" not in line and ">" not in line, line  # names escaped as entities
    # Full kernel names (template arguments, commas) are in the per-kernel tables, escaped.
    assert "vectorized\\_elementwise\\_kernel&lt;(int)4, at::native::CUDAFunctor\\_add&lt;float&gt;, " in md
    assert "cunn\\_SoftMaxForwardReg&lt;c10::BFloat16, float," in md
    assert "**two\\_streams**: ops overlapped on 2 stream(s)" in md
    assert md.index("## Notes") < md.index("## Per-kernel details")


def test_html_report_content(result: RunResult) -> None:
    page = render_html(result)
    from nsightwrap.export.html import roofline_html

    # a bar chart per benchmark, the clock trace, a waterfall per flagged benchmark, the roofline
    assert page.count("<svg") >= 8 + len(result.flagged) + "".join(roofline_html(result)).count("<svg")
    assert page.count("class='chart waterfall'") == len(result.flagged) == 1
    assert "vectorized_elementwise_kernel&lt;(int)4, at::<wbr>native::<wbr>CUDAFunctor_add&lt;float&gt;" in page
    assert "kernel<(int)" not in page
    assert "<b>two_streams</b>: ops overlapped on 2 stream(s)" in page
    assert page.count('<tr class="flagrow">') == 1
    assert "no data" in page  # copy_1g has no ncu bar, and says so


def test_json_round_trip_keeps_raw_samples(
    result: RunResult, sidecar: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "report.json"
    write_report_json(result, path, detail=True)
    doc = json.loads(path.read_text(encoding="utf-8"))
    # The default (summary) JSON keeps the samples compare reads, to 0.1 ns (far below any timer's
    # resolution) and in ascending order ([value, count] pairs); --detail keeps them exactly.
    summary = json.loads(write_report_json(result))
    for short, full in zip(summary["benchmarks"], doc["benchmarks"], strict=True):
        a, b = expand_runs(short["timer"]["sample_runs"]), sorted(full["timer"]["samples_ns"])
        assert short["timer"]["samples_ns"] is None and a is not None, full["name"]
        assert len(a) == len(b) and all(abs(x - y) <= 0.05 + 1e-9 for x, y in zip(a, b, strict=True)), full["name"]
    for entry in doc["benchmarks"]:
        assert entry["timer"]["samples_ns"] == sidecar[entry["name"]]["samples_ns"]
    copy = next(e for e in doc["benchmarks"] if e["name"] == "copy_1g")
    assert copy["causes"][0]["code"] == "non_kernel_work" and copy["ratio"] is None
    back = load_report_json(path)
    assert report_to_dict(back) == report_to_dict(result)
    assert bench(back, "two_streams").notes == bench(result, "two_streams").notes
    assert bench(back, "mm_large").timer.samples_ns == tuple(sidecar["mm_large"]["samples_ns"])  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- CLI


def _call(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out.out, out.err)


def test_strict_exits_1_on_this_run(capsys: pytest.CaptureFixture[str]) -> None:
    r = _call(capsys, "report", str(RUN), "--strict", "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert {b["name"]: b["verdict"] for b in doc["benchmarks"]} == {k: v[0] for k, v in EXPECTED.items()}


def test_tolerance_60_clears_add_small_and_copy_1g_stays_explained(capsys: pytest.CaptureFixture[str]) -> None:
    # --strict passes ok and explained: at 60% the front end of add_small is within the
    # tolerance, and copy_1g (a copy, which ncu cannot see) is explained at any tolerance.
    r = _call(capsys, "report", str(RUN), "--tolerance", "60", "--strict", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = {b["name"]: b for b in json.loads(r.stdout)["benchmarks"]}
    assert doc["add_small"]["verdict"] == "ok" and doc["add_small"]["ratio"] == pytest.approx(1.49, abs=0.01)
    assert doc["copy_1g"]["verdict"] == "explained"
    (cause,) = doc["copy_1g"]["causes"]
    assert re.search(r"1 memcpy and 0 memset per iteration took 501\.[12]\d us", cause["message"])
    assert not any(c["code"] == "launch_overhead" for b in doc.values() for c in b["causes"])
