"""The decomposition of timer - ncu into measured parts, on real H200 captures.

Runs: fixtures/runs/h200-example (``nsightwrap profile examples/bench_example.py``: a copy, two
streams, a 4,096-element add under a held queue), fixtures/captures/causes/run (the benchmarks of
fixtures/captures/causes/capture.py: a zeroing-flush loop, a warm loop, warm graph replays, a
launch-bound loop, a side stream that outlives the end event, and clean references) and the
reference workload (tests/refrun.py: a hand-written event loop with a zero_() flush). Figures the
parts must reproduce are read here from the raw files (sidecar JSON, SQL on the nsys export).
"""

from __future__ import annotations

import io
import json
import math
import re
import shutil
import sqlite3
import statistics
from pathlib import Path

import pytest
from refrun import build_run_dir
from rich.console import Console

from nsightwrap.analysis.frames import GAP_COLUMNS, gaps_frame
from nsightwrap.analysis.gap import PLACE_SPREAD_NS, GapInputs, causes_from_gap, decompose, q
from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import BenchmarkResult, Gap, RunResult, Verdict
from nsightwrap.core.unpack import unpacked
from nsightwrap.export.charts import waterfall_svg
from nsightwrap.export.html import render_html
from nsightwrap.export.jsonio import report_from_dict, report_to_dict
from nsightwrap.export.markdown import render_markdown
from nsightwrap.export.terminal import print_report

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "fixtures" / "runs" / "h200-example"
CAUSES = ROOT / "fixtures" / "captures" / "causes" / "run"
#: Every shipped H200 run directory: the residual bound holds on each of their benchmarks.
SHIPPED = sorted({*(p.parent for p in (ROOT / "fixtures" / "runs").glob("*/manifest.json")), CAUSES})


@pytest.fixture(scope="module")
def example() -> RunResult:
    return analyze(EXAMPLE)


@pytest.fixture(scope="module")
def causes() -> RunResult:
    return analyze(CAUSES)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return analyze(build_run_dir(tmp_path_factory.mktemp("ref")))


def bench(result: RunResult, name: str) -> BenchmarkResult:
    return next(b for b in result.benchmarks if b.name == name)


def gap(result: RunResult, name: str) -> Gap:
    g = bench(result, name).gap
    assert g is not None
    return g


def part(g: Gap, cause: str) -> float:
    (p,) = [p for p in g.parts if p.cause == cause]
    return p.ns


def causes_run_sidecar(pass_name: str, name: str) -> dict:
    for path in (CAUSES / pass_name).glob("timer-*.json"):
        for b in json.loads(path.read_text())["benchmarks"]:
            if b["name"] == name:
                return b
    raise KeyError(name)


def db(run: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{unpacked(run / 'nsys' / 'report.sqlite.gz')}?mode=ro", uri=True)


# ----------------------------------------------------------------------------- the sum


def _has_nsys(run: Path) -> bool:
    m = json.loads((run / "manifest.json").read_text())
    if m.get("format") == "nsightwrap-merged":
        return all(_has_nsys(run / s["dir"]) for s in m["shards"])
    return any(p["name"] == "nsys" and p["status"] == "ok" for p in m.get("passes", []))


RUNS = sorted(p.parent for p in (ROOT / "fixtures" / "runs").glob("*/manifest.json"))
#: What no measurement explains may be this share of the timing (gap.RESIDUAL_BOUND).
BOUND = 0.05
#: Parts over |gap| + 5% of the timing, each offset by measured parts of the other sign (found
#: by printing the parts and the timeline figures; docs/reconciliation.md). The test fails on a
#: new one and on one of these once it is gone, so that the list only shrinks; every one but
#: add_small's (a few ns) carries the "parts of opposite sign" note (gap/opposed.py).
OPPOSED = {
    # A loop at a faster clock than ncu's (clock -5.22 us) with do_bench's dirty flush (+2.14)
    # and event cost (+3.45): the gap is +0.32 us of 91.5 us.
    ("h200-sweep", "sweep.py:17 do_bench #1", "clock"),
    # torch.utils.benchmark.Timer never flushes: the same kernels ran faster on a warm L2 than in
    # ncu's clean-L2 replay (cache_state), while the host launched them one by one with the GPU's
    # dispatch between them (gaps, launch_overhead). ncu counts little of that dispatch in its
    # durations: about 0.2 us over CUPTI's on a GEMV after a clean flush (studies/timer-accuracy-
    # log.md, "What ncu's reading depends on"), against 1.5-1.9 us of idle between queued kernels.
    ("h200-timer", "linear 2x19456x2560 bf16", "cache_state"),
    ("h200-timer", "linear 2x19456x2560 bf16", "gaps"),
    ("h200-timer", "torch_timer.py:41 Timer.timeit #1", "cache_state"),
    ("h200-timer", "torch_timer.py:41 Timer.timeit #1", "launch_overhead"),
    ("h200-timer", "torch_timer.py:42 Timer.adaptive_autorange #1", "cache_state"),
    ("h200-timer", "torch_timer.py:42 Timer.adaptive_autorange #1", "gaps"),
    # A sort of 16 Mi keys, timed without a flush: its kernels ran faster on a warm L2 than in ncu
    # (cache_state -158.82 us) while a memset, the host's launches and the gaps between the sort's
    # kernels added +156.75 us: a gap of -17.06 us of 1.70 ms.
    ("h200-mixed", "mixed.py:70 cuda_events #1", "cache_state"),
}
#: Over the bound by less than the residual's share: no note.
UNNOTED: set[tuple[str, str]] = set()


def _over_bound(run: Path, b: BenchmarkResult) -> set[tuple[str, str, str]]:
    g, t = b.gap, b.timer
    assert g is not None and t is not None
    streams = b.nsys.streams if b.nsys is not None else 1
    limit = abs(g.total_ns) + BOUND * t.median_ns
    return {
        (run.name, b.name, p.cause)
        for p in g.parts
        if abs(p.ns) > limit and not (p.cause in ("overlap", "gaps") and streams > 1)
    }


@pytest.mark.parametrize("run", SHIPPED, ids=lambda p: p.name)
def test_parts_add_up_exactly_and_the_residual_is_small(run: Path) -> None:
    result = analyze(run)
    with_gap = [b for b in result.benchmarks if b.gap is not None]
    assert with_gap, "every timed benchmark with an ncu figure has a decomposition"
    for b in with_gap:
        g = b.gap
        assert g is not None and b.timer is not None and b.ncu is not None
        # Exact in floating point, in any order of summation.
        assert g.total_ns == sum(p.ns for p in g.parts) + g.residual_ns
        assert g.total_ns == g.residual_ns + sum(p.ns for p in reversed(g.parts))
        assert g.total_ns == q(b.timer.median_ns - (b.ncu.median_ns or 0.0))
        assert all(p.ns * 8 == int(p.ns * 8) for p in g.parts)  # multiples of 1/8 ns
        # No part for the profiler itself, in the parts or the causes.
        assert not any(p.cause == "profiler_overhead" for p in g.parts)
        assert not any(c.code.value == "profiler_overhead" for c in b.causes)
        # What no measurement explains: at most 5% of the timing on every shipped run. On the
        # causes run, side_stream's 2.98 us window reads 0.18 us (6.1%) longer in the nsys pass's
        # own events than on its timeline's ops (same process, same iterations; 5% is 0.15 us,
        # under 5 ticks of the 32 ns event clock): there the bound is PLACE_SPREAD_NS.
        # Beyond that only where a part met its physical bound and what it cut was left in the
        # residual: then the verdict says no measurement explains it (no shipped benchmark now;
        # tests/test_reconcile_verdicts.py builds such gaps).
        slack = PLACE_SPREAD_NS if run == CAUSES else 0.0
        if abs(g.residual_ns) > max(BOUND * b.timer.median_ns, slack):
            assert b.verdict is Verdict.UNEXPLAINED, (b.name, g.residual_ns)
            assert any(p.evidence.get("beyond_bound_ns") for p in g.parts), b.name


def test_no_part_is_larger_than_the_gap() -> None:
    """No part over |gap| + 5% of the timing (overlap and gaps on several streams aside), but
    for the opposed parts listed in OPPOSED."""
    found: set[tuple[str, str, str]] = set()
    for run in [*RUNS, CAUSES]:
        for b in analyze(run).benchmarks:
            if b.gap is not None:
                found |= _over_bound(run, b)
    assert found - OPPOSED == set(), sorted(found - OPPOSED)
    assert OPPOSED - found == set(), "an opposed part is within the bound now: take it off OPPOSED"


def test_parts_of_opposite_sign_are_told_to_the_user() -> None:
    """Every benchmark with a part over the bound says which parts offset it, in its notes and
    its measurements (data the exporters show), and no other benchmark says so."""
    over = {(run, name) for run, name, _ in OPPOSED}
    told: set[tuple[str, str]] = set()
    for run in RUNS:
        for b in analyze(run).benchmarks:
            if b.gap is None:
                continue
            opp = b.gap.measurements.get("opposed_parts")
            notes = [n for n in b.notes if n.startswith("parts of opposite sign: ")]
            if (run.name, b.name) in over:
                assert opp is not None and set(opp["over"]) == {c for r, n, c in OPPOSED if (r, n) == (run.name, b.name)}
            if notes:
                told.add((run.name, b.name))
                assert len(notes) == 1 and opp is not None and opp["against"]
                for cause in [*opp["over"], *opp["against"]]:
                    assert cause.replace("_", " ") in notes[0]
                signs = {math.copysign(1, p.ns) for p in b.gap.parts if p.cause in opp["against"]}
                lead = max((p for p in b.gap.parts if p.cause in opp["over"]), key=lambda p: abs(p.ns))
                assert signs == {-math.copysign(1, lead.ns)}
    assert told == over - UNNOTED


def test_nsys_slow_down_is_one_note_and_scales_the_host_parts_only(causes: RunResult) -> None:
    for b in causes.benchmarks:
        assert b.gap is not None
        notes = [n for n in b.notes if re.match(r"nsys (slowed|sped up) this loop \d\.\d\dx", n)]
        assert len(notes) == 1, (b.name, notes)
        facts = b.gap.measurements["nsys_slowdown"]
        assert facts["nsys_window_ns"] == q(causes_run_sidecar("nsys", b.name)["median_ns"])
        scaled = [p for p in b.gap.parts if "scaled_to_plain_pass_by" in p.evidence]
        assert {p.cause for p in scaled} <= {"front_end", "launch_overhead", "gaps"}
        for p in scaled:
            want = p.evidence["measured_under_nsys_ns"] * p.evidence["scaled_to_plain_pass_by"]
            # A part cut at its bound keeps the scaled figure as what was measured.
            got = p.evidence.get("measured_ns", p.ns)
            assert got == pytest.approx(want, rel=1e-3, abs=0.5) and p.ns <= got + 0.125


def test_parts_come_in_order_and_name_their_measurements(causes: RunResult) -> None:
    order = ["clock", "cache_state", "front_end", "launch_overhead", "gaps", "overlap", "non_kernel_work",
             "missed_work", "ncu_front_end"]  # fmt: skip
    for b in causes.benchmarks:
        assert b.gap is not None
        seen = [p.cause for p in b.gap.parts]
        assert seen == sorted(seen, key=order.index)
        for p in b.gap.parts:
            assert p.evidence and p.message and p.fix is not None
        m = b.gap.measurements
        assert m["nsys_timeline"] is True and m["nsys_pass_timing_ns"] is not None


# ----------------------------------------------------------------------------- each cause


def test_zeroing_flush_is_dirty_l2_write_back(causes: RunResult) -> None:
    g = gap(causes, "gemv_zero_flush")
    (p,) = [p for p in g.parts if p.cause == "cache_state"]
    ev = p.evidence
    # ncu's own front-end time for this GEMV, measured on gemv_clean (same kernel, clean flush):
    # its ncu duration minus its CUPTI duration under nsys.
    clean = bench(causes, "gemv_clean")
    assert clean.ncu is not None and clean.nsys is not None
    assert ev["ncu_front_end_ns"] == q(clean.ncu.median_ns - clean.nsys.median_ns)  # type: ignore[operator]
    nsys = bench(causes, "gemv_zero_flush").nsys
    # The timeline's mean over the middle half of the iterations, close to the median.
    assert nsys is not None and ev["nsys_kernel_ns"] == pytest.approx(nsys.median_ns, rel=0.01)
    assert p.ns == pytest.approx(ev["nsys_kernel_ns"] - g.ncu_ns + ev["ncu_front_end_ns"], abs=0.25)  # type: ignore[operator]
    # 7.3 us of write-back on a 28 us GEMV (DEVICE.md measured 35.6 vs 28.4 us for the same shape).
    assert 6_000 < p.ns < 8_500
    assert ev["loop_flush"] == "zero" and p.actionable
    assert "write, then read" in p.fix  # the fix: flush clean


def test_zeroing_flush_of_the_reference_event_loop(reference: RunResult) -> None:
    for name, low, high in (("mm_small", 1_000, 2_000), ("mm_skinny", 4_500, 5_500)):
        g = gap(reference, name)
        assert low < part(g, "cache_state") < high


def test_warm_loop_is_faster_than_clean_ncu(causes: RunResult) -> None:
    g = gap(causes, "mm_warm")
    (p,) = [p for p in g.parts if p.cause == "cache_state"]
    assert p.evidence["loop_cache"] == "warm" and -3_000 < p.ns < -2_000  # the weights stay in L2
    assert "flush_l2=False" in p.fix and "keep flush_l2=True" in p.fix
    # A warm L2 is the loop's own choice (flush_l2=False), no error of the timing. The window's
    # lead-in under nsys held more than the plain window leaves beside the GEMM: the front end is
    # cut to it (toward minus the subtracted empty window), so the parts leave no residual.
    assert bench(causes, "mm_warm").verdict is Verdict.EXPLAINED
    assert bench(causes, "mm_warm").causes[0].code.value == "cache_state"
    assert bench(causes, "mm_clean").verdict is Verdict.OK  # the same GEMM, flushed: agrees


def test_warm_graph_replays(causes: RunResult) -> None:
    b = bench(causes, "mm_graph_warm")
    g = gap(causes, "mm_graph_warm")
    assert part(g, "cache_state") < -2_500
    # The nsys pass sized its graph at 7 calls (its warm-up ran slower), the plain pass at 8.
    assert causes_run_sidecar("nsys", "mm_graph_warm")["method"]["calls_per_sample"] == 7
    assert any("hold 7 calls each" in n and "timed 8 per sample" in n for n in b.notes)
    (cache,) = [p for p in g.parts if p.cause == "cache_state"]
    assert "cuda_graph=True without a flush" in cache.fix


def test_launch_bound_loop(causes: RunResult) -> None:
    b = bench(causes, "add_launch_bound")
    g = gap(causes, "add_launch_bound")
    host = part(g, "launch_overhead")
    assert host > 20_000  # the GPU sat idle waiting for the host in every window
    (lp,) = [p for p in g.parts if p.cause == "launch_overhead"]
    assert lp.evidence["queue_ran_dry_share"] == 1.0 and lp.evidence["hold_queue"] is False
    assert "keep hold_queue=True" in lp.fix
    # nsys slowed that host: the host-side parts measured under it are scaled by the plain pass's
    # host share of the window over the nsys pass's (the window less the GPU's work in it).
    plain = causes_run_sidecar("plain", "add_launch_bound")["median_ns"]
    under = causes_run_sidecar("nsys", "add_launch_bound")["median_ns"]
    assert under - plain > 15_000
    device = g.ncu_ns + sum(p.ns for p in g.parts if p.cause in ("clock", "cache_state"))  # type: ignore[operator]
    scale = (plain - device) / (under - device)
    assert lp.evidence["scaled_to_plain_pass_by"] == pytest.approx(scale, abs=1e-3)
    assert lp.evidence["measured_ns"] == pytest.approx(lp.evidence["measured_under_nsys_ns"] * scale, abs=1.0)
    # Scaled, the host-side parts held 0.52 us more than the plain window leaves beside the GPU's
    # busy time: they are cut to it, in proportion, and the part names the bound.
    assert lp.ns < lp.evidence["measured_ns"] and "busy time" in lp.evidence["bound"]
    (note,) = [n for n in b.notes if n.startswith("nsys slowed this loop")]
    assert f"{under / plain:.2f}x" in note and f"scaled by {scale:.2f}" in note
    assert b.verdict is Verdict.FLAGGED and b.causes[0].code.value == "launch_overhead"


def test_held_queue_is_never_told_to_hold_the_queue(example: RunResult, causes: RunResult) -> None:
    for result in (example, causes):
        for b in result.benchmarks:
            if b.timer is None or not b.timer.method.get("hold_queue") or b.gap is None:
                continue
            for p in b.gap.parts:
                assert "hold_queue=True" not in p.fix and "hold the queue" not in p.fix, (b.name, p.cause)


def test_copy_is_non_kernel_work(example: RunResult) -> None:
    g = gap(example, "copy_1g")
    from test_reconcile_h200_run import nsys_iterations

    copies = [e - s for ops in nsys_iterations(db(EXAMPLE), "copy_1g") for _, s, e, _ in ops]
    assert len(copies) == 52
    assert statistics.median(copies) == 501_185.0
    assert part(g, "non_kernel_work") == pytest.approx(statistics.median(copies), rel=1e-3)
    # ncu sees no kernel; nsys measures the copy that is the whole timing: explained.
    assert g.ncu_ns == 0.0 and bench(example, "copy_1g").verdict is Verdict.EXPLAINED
    assert [c.code.value for c in bench(example, "copy_1g").causes] == ["non_kernel_work"]


def test_two_streams_overlap_and_the_join(example: RunResult) -> None:
    b = bench(example, "two_streams")
    g = gap(example, "two_streams")
    assert b.nsys is not None
    ov = part(g, "overlap")
    # Busy time against ncu's serialized kernels at the loop's clock.
    clock = part(g, "clock")
    (op,) = [p for p in g.parts if p.cause == "overlap"]
    assert op.evidence["nsys_busy_ns"] == pytest.approx(b.nsys.busy_median_ns, rel=0.01)
    assert ov == pytest.approx(
        op.evidence["nsys_busy_ns"] - op.evidence["non_kernel_ns"] - (g.ncu_ns + clock), abs=0.25
    )  # type: ignore[operator]
    assert ov < 0
    # main.wait_stream(side) before the end event: the side GEMM is inside the window.
    assert not any(p.cause == "missed_work" for p in g.parts)
    assert b.verdict is Verdict.OK


def test_side_stream_outliving_the_end_event(causes: RunResult) -> None:
    b = bench(causes, "side_stream")
    g = gap(causes, "side_stream")
    (p,) = [p for p in g.parts if p.cause == "missed_work"]
    assert p.ns < -80_000 and p.actionable  # a ~90 us GEMM the timing never saw
    assert re.match(r"your timing misses 8\d\.\d\d us", p.message)
    assert "stream wait before the end event in 0%" in str(p.evidence["joined_by"])
    assert "wait_stream" in p.fix
    # From the export: per iteration, how far the last op ran past the timing stream's last op.
    assert b.nsys is not None and b.nsys.streams == 2
    assert b.verdict is Verdict.FLAGGED and b.causes[0].code.value == "missed_work"


def test_front_end_of_a_short_kernel_under_a_held_queue(example: RunResult) -> None:
    # The lead-in itself is checked against SQL in test_reconcile_h200_run; here, its place in the sum.
    g = gap(example, "add_small")
    (p,) = [p for p in g.parts if p.cause == "front_end"]
    ev = p.evidence
    want = ev["lead_in_ns"] - ev["host_wait_ns"] - ev["empty_window_subtracted_ns"] - ev["ncu_front_end_ns"]
    assert ev["measured_ns"] == pytest.approx(want, abs=0.25)  # each value rounded to 1/8 ns
    # The plain window (3.14 us + the 1.28 us the timer subtracted) less the add's busy time and
    # ncu's front end it shows leaves 1.03 us: the part stops there, the rest is in the residual.
    assert 1_000 < p.ns < ev["measured_ns"] and p.actionable and "busy time" in ev["bound"]


def test_clock_part_uses_the_measured_elasticity(causes: RunResult, example: RunResult) -> None:
    (p,) = [p for p in gap(causes, "side_stream").parts if p.cause == "clock"]
    assert p.evidence["elasticity"] == "measured"
    rows = p.evidence["kernels"]
    assert all(r["elasticity_source"] == "measured" for r in rows)
    b = bench(causes, "side_stream")
    assert b.ncu is not None and b.ref_clock_hz is not None
    expect = statistics.median(
        sum(k.duration_ns * (k.sm_clock_hz / b.ref_clock_hz) ** min(1.0, max(0.0, k.elasticity or 0.0))  # type: ignore[operator]
            for k in b.ncu.kernels if k.iteration == i)
        for i in {k.iteration for k in b.ncu.kernels}
    ) - b.ncu.median_ns  # fmt: skip
    assert p.ns == pytest.approx(expect, abs=0.2)
    # Without the base-clock pass the part says the sensitivity is a guess.
    (h,) = [p for p in gap(example, "mm_large").parts if p.cause == "clock"]
    assert h.evidence["elasticity"] == "heuristic" and "guess" in h.fix


def test_a_host_sampled_clock_contradicted_by_the_kernels_is_not_used(reference: RunResult) -> None:
    b = bench(reference, "mm_large")
    assert b.gap is not None and not any(p.cause == "clock" for p in b.gap.parts)
    assert b.verdict is Verdict.OK


# ----------------------------------------------------------------------------- verdict, method


def test_tolerance_still_decides(tmp_path: Path) -> None:
    loose = analyze(EXAMPLE, tolerance=0.6)
    assert bench(loose, "add_small").verdict is Verdict.OK  # front end 38% of the timing, residual 6%
    assert bench(loose, "copy_1g").verdict is Verdict.EXPLAINED  # a copy, which ncu cannot see, at any tolerance
    assert bench(analyze(EXAMPLE, tolerance=0.1), "add_small").verdict is Verdict.FLAGGED


def test_fixes_follow_the_method(example: RunResult) -> None:
    b = bench(example, "add_small")
    assert b.timer is not None and b.ncu is not None
    base = dict(
        timer=b.timer,
        ncu=b.ncu,
        nsys=b.nsys,
        ref_clock_hz=b.ref_clock_hz,
        ref_clock_source=b.ref_clock_source,
    )

    def fix(kind: str, method: dict, cause: str) -> str:
        from dataclasses import replace

        t = replace(b.timer, method=method)  # type: ignore[arg-type]
        g = decompose(GapInputs(**{**base, "timer": t}, source={"kind": kind}))  # type: ignore[arg-type]
        assert g is not None
        return next(p.fix for p in g.parts if p.cause == cause)

    dirty = {"flush": "zero", "calls_per_sample": 1}
    assert "do_bench zeroes its cache buffer" in fix("do_bench", dirty, "cache_state")
    assert "leaves dirty lines" in fix("cuda_events", dirty, "cache_state")
    assert "do_bench_cudagraph replays" in fix("do_bench_cudagraph", {"flush": "none"}, "cache_state")
    assert "torch.utils.benchmark.Timer never flushes" in fix(
        "torch_benchmark", {"flush": "none"}, "cache_state"
    )
    # Without nsys the front end is the measured empty window the method did not subtract.
    ev = {"flush": "write+read", "empty_window_ns": 1300.0, "overhead_ns": 0.0}
    assert "do_bench window pays the events' own cost" in fix("do_bench", ev, "front_end")


def test_a_small_unexplained_residual_points_at_where_the_buffers_lie() -> None:
    """A residual over the tolerance but within the place-to-place spread of a short kernel
    (docs/timer-accuracy.md, "Where the buffers lie") says so in its fix; a larger one does not."""
    from nsightwrap.analysis.model import CauseCode

    small = Gap(total_ns=180.0, parts=(), residual_ns=180.0, timer_ns=1500.0, ncu_ns=1320.0)
    (cause,) = causes_from_gap(small, 0.1)
    assert cause.code is CauseCode.UNEXPLAINED
    assert "where the buffers lie" in cause.fix and cause.fix.startswith("rerun to check it repeats")
    large = Gap(total_ns=PLACE_SPREAD_NS + 800.0, parts=(), residual_ns=PLACE_SPREAD_NS + 800.0, timer_ns=5000.0)
    (cause,) = causes_from_gap(large, 0.1)
    assert "where the buffers lie" not in cause.fix
    assert causes_from_gap(small, 0.2) == []  # within the tolerance: nothing to explain


def test_missing_measurements_leave_their_parts_out(tmp_path: Path) -> None:
    run = tmp_path / "no-nsys"
    shutil.copytree(EXAMPLE, run, ignore=shutil.ignore_patterns("nsys"))
    result = analyze(run)
    g = gap(result, "add_small")
    assert [p.cause for p in g.parts] == ["clock", "front_end"]  # the empty window, measured by the timer
    assert part(g, "front_end") == 0.0  # ... and subtracted by it
    assert g.measurements["nsys_timeline"] is False and g.measurements["nsys_kernel_ns"] is None
    # What nsys would have explained is now the residual: over 5% of the timing, unexplained.
    assert g.residual_ns == q(g.total_ns - part(g, "clock"))
    b = bench(result, "add_small")
    assert b.verdict is Verdict.UNEXPLAINED and b.causes[0].code.value == "unexplained"


# ----------------------------------------------------------------------------- outputs


def test_report_json_carries_the_gap_and_reads_it_back(causes: RunResult) -> None:
    doc = json.loads(json.dumps(report_to_dict(causes)))
    for d in doc["benchmarks"]:
        gd = d["gap"]
        assert set(gd) >= {"total_ns", "parts", "residual_ns"}
        assert all(set(p) >= {"cause", "ns", "evidence", "fix"} for p in gd["parts"])
        assert gd["total_ns"] == sum(p["ns"] for p in gd["parts"]) + gd["residual_ns"]
    back = report_from_dict(doc)
    assert [b.gap for b in back.benchmarks] == [b.gap for b in causes.benchmarks]


def test_waterfall_markdown_terminal_and_frame(causes: RunResult) -> None:
    flagged = causes.flagged
    partly = [b for b in causes.benchmarks if b.verdict is Verdict.PARTLY_EXPLAINED]
    page = render_html(causes)
    assert page.count("class='chart waterfall'") == len(flagged) + len(partly) > 0
    svg = waterfall_svg(bench(causes, "side_stream"))
    assert svg is not None and svg.startswith("<svg") and "work the timing missed" in svg
    md = render_markdown(causes)
    assert "## Where the gap comes from" in md
    assert (
        md.count("<details><summary>side\\_stream") == 0 and "<details><summary>side_stream (flagged)" in md
    )
    assert "| work the timing missed |" in md or "| **work the timing missed** |" in md
    buf = io.StringIO()
    print_report(causes, Console(file=buf, width=140, color_system=None))
    assert re.search(r"gap -90\.59 us = work the timing missed -8\d\.\d\d us", buf.getvalue())
    frame = gaps_frame(causes)
    assert list(frame.columns) == list(GAP_COLUMNS)
    sums = frame.groupby("benchmark")["ns"].sum()
    for b in causes.benchmarks:
        assert b.gap is not None and math.isclose(sums[b.name], b.gap.total_ns, abs_tol=1e-9)


def test_notebook_documents_the_gap_frame() -> None:
    from test_notebook import doc_columns

    assert doc_columns("Run.gaps()") == list(GAP_COLUMNS)


def test_timeline_windows_match_the_nsys_pass_timings(causes: RunResult) -> None:
    # Where a run has no nsys-pass timings, the slow-down is read off the windows of the nsys
    # timeline. On this run both exist: the timeline's windows agree with the nsys pass's own
    # event timings within 3% on every benchmark of a microsecond or more.
    from nsightwrap.analysis.gap import nsys_timelines
    from nsightwrap.analysis.iterations import nsys_iterations
    from nsightwrap.analysis.reconcile import BenchmarkSpec
    from nsightwrap.parsers.nsys import read_nsys

    rep = read_nsys(CAUSES / "nsys" / "report.sqlite.gz")
    specs = [BenchmarkSpec(b.name, b.nvtx_path, timer=b.timer) for b in causes.benchmarks]
    timelines = nsys_timelines(
        nsys_iterations(rep.ops, rep.ranges, rep.attribution, specs, rep.event_calls), specs
    )
    for b, tl in zip(causes.benchmarks, timelines, strict=True):
        assert tl is not None and b.timer is not None
        own = causes_run_sidecar("nsys", b.name)
        calls = own["method"]["calls_per_sample"]
        missed = any(p.cause == "missed_work" for p in (b.gap.parts if b.gap else ()))
        window = (tl.window_unjoined_ns if missed else tl.window_joined_ns) / calls
        window -= (own["method"].get("overhead_ns") or 0.0) / calls
        assert window == pytest.approx(own["median_ns"], rel=0.03, abs=250), b.name


def test_a_gpu_measured_clock_contradicted_by_the_cupti_reading(tmp_path: Path) -> None:
    # The real clock-sweep run, with mm_square's measured loop clock set to 1.36 GHz (what an
    # earlier on-GPU probe of the timer read on the H200 for this GEMM, while ncu measured 1.60).
    run = tmp_path / "run"
    shutil.copytree(ROOT / "fixtures" / "runs" / "h200-clock-sweep", run)
    (side,) = (run / "plain").glob("timer-*.json")
    doc = json.loads(side.read_text())
    for entry in doc["benchmarks"]:
        if entry["name"] == "mm_square":
            entry["sm_clock_hz"] = entry["method"]["stamp_clock_hz"] = 1.36e9
            entry["sample_clock_hz"] = [1.36e9 if c else c for c in entry["sample_clock_hz"]]
    side.write_text(json.dumps(doc))
    b = bench(analyze(run), "mm_square")
    assert b.timer is not None and b.timer.kernel_ns is not None and b.gap is not None and b.ncu is not None
    assert b.ncu.median_ns is not None
    # ncu at its 1.63 GHz is 172.6 us, carried to 1.36 GHz about 207 us; the plain pass's own CUPTI
    # reading of the kernel, 171.4 us, sides with ncu's clock, so no clock part is claimed.
    assert b.timer.kernel_ns < b.ncu.median_ns < 1.1 * b.timer.kernel_ns
    assert not any(p.cause == "clock" for p in b.gap.parts)
    assert any("contradicted" in n and "in the plain pass (CUPTI)" in n for n in b.notes)
    assert b.verdict is Verdict.OK
    assert abs(b.gap.residual_ns) < 0.05 * b.timer.median_ns


def test_a_graph_replay_is_never_told_to_use_a_graph(causes: RunResult) -> None:
    from nsightwrap.analysis.gap import launch_overhead

    g = gap(causes, "add_launch_bound")
    (lp,) = [p for p in g.parts if p.cause == "launch_overhead"]
    assert "cuda_graph=True" in lp.fix  # nsightwrap.bench without a graph: a graph is one way out
    # The same wait in a call that already replays a graph: more calls per replay, never a graph.
    for kind, method in (
        ("do_bench_cudagraph", {"flush": "none"}),
        ("cuda_events", {"cuda_graph": True}),
        ("nsightwrap_bench", {"cuda_graph": True, "hold_queue": False}),
    ):
        fix = launch_overhead.fix(kind, method, lp.ns)
        assert "CUDA graph (" not in fix and "cuda_graph=True" not in fix and "capture" not in fix, (kind, fix)


def test_without_nsys_the_plain_pass_cupti_reading_splits_the_window() -> None:
    # h200-clock-sweep has no nsys pass; nsightwrap.bench read a few calls with CUPTI.
    result = analyze(ROOT / "fixtures" / "runs" / "h200-clock-sweep")
    for name in ("add_4k", "add_16m", "mm_square"):
        b = bench(result, name)
        g = gap(result, name)
        assert b.timer is not None and b.timer.kernel_ns is not None and b.ncu is not None
        (p,) = [p for p in g.parts if p.cause == "front_end"]
        ev = p.evidence
        clock = sum(x.ns for x in g.parts if x.cause == "clock")
        assert ev["cupti_kernel_ns"] == q(b.timer.kernel_ns) and ev["measured"] == "plain pass (events, CUPTI)"
        assert ev["window_beyond_kernels_ns"] == pytest.approx(b.timer.median_ns - b.timer.kernel_ns - ev["copies_ns"], abs=0.25)
        assert ev["ncu_front_end_ns"] == pytest.approx(b.ncu.median_ns + clock - b.timer.kernel_ns, abs=0.25)  # type: ignore[operator]
        assert p.ns == pytest.approx(ev["window_beyond_kernels_ns"] - ev["ncu_front_end_ns"], abs=0.25)
    # The 4096-element add: 0.98 us of the 2.27 us window lies beyond its kernel after the
    # subtracted empty window, ncu 0.79 us beyond the same kernel: 0.18 us of front end.
    assert 150 < part(gap(result, "add_4k"), "front_end") < 220


def test_host_share_scaled_up_only_past_the_gpus_work() -> None:
    # The first timed window of h200-mixed: 159.48 ms plain, 149.37 ms under nsys, 0.18 ms of GPU
    # work: module loading and handle creation took longer in the plain pass, on the host.
    mixed = analyze(ROOT / "fixtures" / "runs" / "h200-mixed")
    g = gap(mixed, "mixed.py:16 cuda_events #1")
    facts = g.measurements["nsys_slowdown"]
    assert facts["slowdown"] < 0.95 and facts["host_scale"] > 1.05
    assert g.timer_ns is not None and abs(g.residual_ns) < 0.001 * g.timer_ns
    # A 297 us GEMM loop the plain pass timed 13 us longer than nsys's windows: less than the
    # GPU's work in it, so no host time is added and the difference stays in the residual.
    timer = analyze(ROOT / "fixtures" / "runs" / "h200-timer")
    b = bench(timer, "linear 2048x19456x2560 bf16")
    assert b.gap is not None and b.gap.measurements["nsys_slowdown"]["host_scale"] == 1.0
    assert not any("scaled_to_plain_pass_by" in p.evidence for p in b.gap.parts)
    assert 10_000 < b.gap.residual_ns < 0.05 * b.gap.timer_ns  # type: ignore[operator]
    assert any("longer by less than the GPU's work" in n for n in b.notes)
