"""The roofline of the shipped H200 runs, held against the measured H200 roofs
(fixtures/device/h200.json): captured GEMMs whose tensor FLOPs the run did not count are not
placed; the rates and the compute roof are at the loop's SM clock measured on the GPU; a point
above its roof is an inconsistency with its cause, never a figure above 100% or a dot on the chart."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import pytest
from lxml import etree

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import BenchmarkResult, RunResult
from nsightwrap.analysis.roofline import MAX_ROOF_PCT, UNCOUNTED
from nsightwrap.export import roofline_text
from nsightwrap.export.html import roofline_chart, roofline_html
from nsightwrap.export.jsonio import load_report_json, write_report_json

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "fixtures" / "runs"
H200 = ROOT / "fixtures" / "device" / "h200.json"
COUNTED = ROOT / "fixtures" / "device" / "roofline-run"  # captured with the tensor-op counters
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def shards() -> RunResult:
    return analyze(RUNS / "h200-shards", device_file=H200)


@functools.cache
def _analyzed(run: str) -> RunResult:
    """A shipped run held against the measured H200 roofs (given: no cache is read), once per module."""
    return analyze(RUNS / run, device_file=H200)


def _bench(result: RunResult, name: str) -> BenchmarkResult:
    return next(b for b in result.benchmarks if b.name == name)


def _peak(result: RunResult, name: str) -> tuple[float, float]:
    assert result.roofs is not None
    p = next(p for p in result.roofs.peaks if p.name == name)
    assert p.sm_clock_hz is not None
    return p.flops_per_s, p.sm_clock_hz


def _chart_titles(result: RunResult) -> list[str]:
    svg = roofline_chart(result)
    assert svg is not None
    root = etree.fromstring(svg.encode())
    titles = [g.find(f"{SVG}title") for g in root.iter(f"{SVG}g") if str(g.get("id", "")).startswith("nw-pt-")]
    assert all(t is not None for t in titles), "a point without its <title>"
    return [str(t.text) for t in titles if t is not None]


@pytest.mark.parametrize("run", ["h200-blog", "h200-sweep", "h200-timer"])
def test_captured_gemms_without_tensor_counters_are_not_placed(run: str) -> None:
    """These runs predate the tensor-op counters' default: ncu counted the GEMMs' tensor
    instructions but not their FLOPs. Against the memory roof alone a compute-bound GEMM read as
    26% of it; now it is left out and the report says how to count it."""
    result = _analyzed(run)
    gemms = [b for b in result.benchmarks if b.roofline is not None and b.roofline.time_source]
    assert gemms
    for b in gemms:
        r = b.roofline
        assert r is not None
        assert (r.status, r.issue, r.roof_reason) == ("uncounted", UNCOUNTED, UNCOUNTED), b.name
        assert r.roof_pct is None and r.bound is None and r.flops is None and r.compute_roof is None
        assert r.bytes_per_s and r.bytes_per_s > 0  # the DRAM traffic is still measured and shown
        assert r.kernels and all(k.status == "uncounted" and k.roof_pct is None for k in r.kernels if k.flops is None)
        assert roofline_text.bench_row(b)[7] == "not counted"  # type: ignore[index]
    # Not on the chart; the section lists each with the reason.
    assert _chart_titles(result) == []
    html = "".join(roofline_html(result))
    assert f"<p>Not drawn:</p><ul class='notes'><li><b>{', '.join(b.name for b in gemms)}</b>: {UNCOUNTED}</li></ul>" in html


def test_captured_gemm_flops_from_the_counters(tmp_path: Path) -> None:
    """A run captured with the tensor-op counters (now the default) whose timings carry no flops=,
    as a captured do_bench timing has none: the GEMMs' FLOPs come from ncu and each GEMM is
    placed compute-bound on its own measured roof."""
    run = tmp_path / "run"
    shutil.copytree(COUNTED, run)
    (sidecar,) = (run / "plain").glob("timer-*.json")
    doc = json.loads(sidecar.read_text())
    for e in doc["benchmarks"]:
        e.pop("flops", None)
        e.pop("bytes", None)
    sidecar.write_text(json.dumps(doc))
    result = analyze(run, device_file=H200)
    for name, roof in (("gemm_bf16", "bf16"), ("gemm_fp16", "fp16"), ("gemm_fp8", "fp8"), ("gemm_int8", "int8")):
        r = _bench(result, name).roofline
        assert r is not None and r.status == "placed", name
        assert (r.flops_source, r.compute_roof, r.bound) == ("ncu", roof, "compute"), name
        assert r.flops == pytest.approx(2 * 4096**3, rel=1e-2) and r.roof_reason.endswith("counted by ncu")
        assert 50 < (r.roof_pct or 0) <= MAX_ROOF_PCT, (name, r.roof_pct)
    assert len(_chart_titles(result)) >= 4


def test_rates_of_a_captured_timing_at_the_gpu_measured_clock() -> None:
    """do_bench in a sweep: ncu profiled the GEMM at its own clock; the nsys pass measured the
    loop's clock inside the GEMM's kernels. The rates are at the loop's clock (ncu's time carried
    there, the time the ratio is taken against), and the report says which clock."""
    result = _analyzed("h200-sweep")
    measured = [b for b in result.benchmarks if b.clock is not None and b.ref_clock_hz == b.clock.mean_hz]
    assert len(measured) == 5
    for b in measured:
        r = b.roofline
        assert r is not None and b.clock is not None and b.ncu is not None and b.ncu.normalized_ns
        assert (r.time_ns, r.time_source, r.clock_hz) == (b.ncu.normalized_ns, "ncu", b.clock.mean_hz)
        assert r.clock_source.startswith("the SM clock measured on the GPU: nsys GPU metrics")
        assert r.extra["ncu_raw_ns"] == b.ncu.median_ns and r.extra["ncu_clock_hz"] == b.ncu.sm_clock_hz
        assert r.bytes_per_s == pytest.approx(r.bytes / (b.ncu.normalized_ns * 1e-9))  # type: ignore[operator]
    # do_bench #2: nsys slowed its loop 2.9x, so its GPU-measured clock is not the plain pass's:
    # the rates stay at ncu's own clock, and the report says why.
    (b,) = [b for b in result.benchmarks if b not in measured]
    r = b.roofline
    assert r is not None and b.ncu is not None and b.clock is not None and b.clock.slowdown > 2  # type: ignore[operator]
    assert (r.time_ns, r.clock_hz) == (b.ncu.median_ns, b.ncu.sm_clock_hz)
    assert r.clock_source.startswith("ncu's own clock: nsys slowed this loop 2.90x")


def test_compute_roof_scaled_from_its_measured_clock_to_the_loops(shards: RunResult) -> None:
    """mm[M=256,N=4096]: the timer's stamps measured the loop at 1.94 GHz; the bf16 roof was
    measured at 1.58 GHz and is scaled to the loop's clock, and ncu's 16.8 us carried there."""
    b = _bench(shards, "mm[M=256,N=4096]")
    r = b.roofline
    assert r is not None and b.clock is not None and b.ncu is not None
    assert r.clock_hz == b.clock.mean_hz and r.clock_source.startswith("the SM clock measured on the GPU: timer stamps")
    peak, peak_hz = _peak(shards, "bf16")
    assert r.roof_clock_hz == peak_hz and abs(peak_hz / r.clock_hz - 1) > 0.1  # really another clock
    assert r.roof_flops_per_s == pytest.approx(peak * r.clock_hz / peak_hz, rel=1e-12)
    assert r.time_ns == b.ncu.normalized_ns and r.flops_per_s == pytest.approx(r.flops / (r.time_ns * 1e-9))  # type: ignore[operator]
    assert r.bound == "compute" and r.roof_pct == pytest.approx(100 * r.flops_per_s / r.roof_flops_per_s)  # type: ignore[operator]
    # Without a GPU-measured clock the rates are at ncu's own clock, said so.
    m2048 = _bench(shards, "mm[M=2048,N=4096]").roofline
    assert m2048 is not None and m2048.clock_source == "ncu's own clock"
    assert m2048.clock_hz == _bench(shards, "mm[M=2048,N=4096]").ncu.sm_clock_hz  # type: ignore[union-attr]


def test_a_gemm_above_its_roof_is_an_inconsistency_with_its_cause(shards: RunResult, tmp_path: Path) -> None:
    """mm[M=4096,N=4096] of the sharded sweep: cuda events 178.4 us, 137 GFLOP: 771 TFLOP/s, which
    the bf16 roof (787 TFLOP/s measured at 1.58 GHz) scaled to the 1.33 GHz of the timer's clock
    probe puts at 117%. The timer's own stamps read 1.65 GHz (94% there), and the events are
    shorter than the kernel CUPTI timed (207.8 us): the clock and the timing are wrong, not the GPU."""
    b = _bench(shards, "mm[M=4096,N=4096]")
    r = b.roofline
    assert r is not None and b.timer is not None and b.ncu is None and b.clock is None
    peak, peak_hz = _peak(shards, "bf16")
    rate = 2 * 4096 * 4096 * 4096 / (b.timer.median_ns * 1e-9)
    roof = peak * b.timer.sm_clock_hz / peak_hz  # type: ignore[operator]
    assert (r.time_source, r.clock_hz, r.clock_source) == ("timer", b.timer.sm_clock_hz, "the timer's clock probe")
    assert r.flops_per_s == pytest.approx(rate) and r.roof_flops_per_s == pytest.approx(roof)
    assert r.status == "inconsistent" and r.roof_pct is None
    assert r.over_roof_pct is not None and r.over_roof_pct > 110 and r.over_roof_pct == pytest.approx(100 * rate / roof)
    stamps = b.timer.method["stamp_clock_hz"]
    assert r.issue.startswith(f"at {100 * rate / roof:.0f}% of the bf16 roof: an inconsistency, not a rate; ")
    assert "the roof was measured at 1.58 GHz, the kernel ran at 1.33 GHz (the timer's clock probe)" in r.issue
    assert (f"the timer's stamps around its samples read {stamps / 1e9:.2f} GHz, at which it is "
            f"{100 * rate / (peak * stamps / peak_hz):.0f}% of the roof") in r.issue  # fmt: skip
    assert f"the timing (178.37 us) is shorter than its own kernels ({b.timer.kernel_ns / 1e3:.2f} us, CUPTI)" in r.issue  # type: ignore[operator]
    # Shown as an inconsistency with its cause, never as a figure above the roof, never drawn.
    row = roofline_text.bench_row(b)
    assert row is not None and row[7] == "inconsistent" and "117%" not in " ".join(row)
    assert any(r.issue in why for _, why in roofline_text.reasons(shards))
    assert not any(t.startswith("mm[M=4096,N=4096]") for t in _chart_titles(shards))
    assert ("mm[M=1024,N=4096], mm[M=4096,N=4096]", "above its roof: an inconsistency, not a rate (the cause is in "
            "the notes below)") in roofline_text.not_drawn(shards)  # fmt: skip
    assert any(t.startswith("mm[M=256,N=4096]\n") for t in _chart_titles(shards))
    # The JSON keeps it.
    p = tmp_path / "r.json"
    write_report_json(shards, p)
    back = _bench(load_report_json(p), "mm[M=4096,N=4096]").roofline
    assert back is not None and (back.status, back.issue, back.over_roof_pct) == (r.status, r.issue, r.over_roof_pct)


def test_a_work_count_larger_than_the_counters_is_named(tmp_path: Path) -> None:
    """gemm_bf16 given flops= twice its 2*M*N*K: at about 196% of its roof; ncu's tensor-op
    counters say half that, and the report says so. The same for add_fp32's bytes= against
    ncu's DRAM counters, against the memory roof."""
    run = tmp_path / "run"
    shutil.copytree(COUNTED, run)
    (sidecar,) = (run / "plain").glob("timer-*.json")
    doc = json.loads(sidecar.read_text())
    for e in doc["benchmarks"]:
        if e["name"] == "gemm_bf16":
            e["flops"] = 2 * e["flops"]
        if e["name"] == "add_fp32":  # memory-bound: bytes= twice what it moves
            e["bytes"] = 2 * e["bytes"]
    sidecar.write_text(json.dumps(doc))
    result = analyze(run, device_file=H200)
    add = _bench(result, "add_fp32").roofline
    assert add is not None and add.status == "inconsistent" and add.bound == "memory" and add.roof_pct is None
    assert add.issue.startswith(f"at {add.over_roof_pct:.0f}% of the memory roof: ")
    dram = add.extra["ncu_dram_bytes"]
    assert (f"the byte count (bytes={add.bytes:.4g} given to bench) is {100 * (add.bytes / dram - 1):.0f}% larger "  # type: ignore[operator]
            f"than ncu's DRAM counters say ({dram:.4g})") in add.issue  # fmt: skip
    r = _bench(result, "gemm_bf16").roofline
    assert r is not None and r.status == "inconsistent" and r.roof_pct is None and r.over_roof_pct > 150  # type: ignore[operator]
    ncu = r.extra["ncu_flops"]
    assert f"is {100 * (r.flops / ncu - 1):.0f}% larger than ncu's counters say ({ncu:.4g})" in r.issue  # type: ignore[operator]
    assert "the FLOP count (flops=2.749e+11 given to bench)" in r.issue


def test_each_point_names_its_benchmark_on_hover() -> None:
    """The shipped example run's chart: every benchmark drawn carries an SVG <title> (the browser's
    hover text) naming it, then its rate and % of roof; a hostile name is escaped, the SVG stays XML."""
    result = analyze(RUNS / "h200-example")
    drawn = [b for b in result.benchmarks if b.roofline is not None and b.roofline.status == "placed"
             and (b.roofline.intensity or 0) > 0 and (b.roofline.flops_per_s or 0) > 0]  # fmt: skip
    assert {b.name for b in drawn} >= {"mm_large", "mm_small", "softmax_mlp"}
    titles = _chart_titles(result)
    assert [t.split("\n")[0] for t in titles] == [b.name for b in drawn]
    large = next(t for t in titles if t.startswith("mm_large\n"))
    r = _bench(result, "mm_large").roofline
    assert r is not None and f"{r.roof_pct:.0f}% of bf16" in large
    # A name with markup, an entity, a quote and a terminal escape: text in the title, never markup.
    from dataclasses import replace

    evil = 'mm<script>alert("x")</script>&amp;\x1b[2J'
    hostile = replace(result, benchmarks=tuple(replace(b, name=evil) if b.name == "mm_large" else b for b in result.benchmarks))
    svg = roofline_chart(hostile)
    assert svg is not None and "<script>" not in svg and "\x1b" not in svg
    first = _chart_titles(hostile)[0]
    assert first.split("\n")[0] == 'mm<script>alert("x")</script>&amp;\\x1b[2J'
