"""The timer's CPU side: results, sidecar round trip, names, NVTX filter, clock alignment, errors."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nsightwrap as nw
from nsightwrap.core import contract
from nsightwrap.core.errors import (
    FormatVersionError,
    InputNotFound,
    NoCudaError,
    ReportParseError,
    UsageError,
)
from nsightwrap.parsers.sidecar import read_sidecar
from nsightwrap.timer import (
    BenchResult,
    bench_name,
    current_pass,
    sidecar_path,
    sweep_points,
    write_sidecar,
)
from nsightwrap.timer.traces import REASON_HW_THERMAL, REASON_SW_POWER_CAP, ClockTrace, align, reason_names

ROOT = Path(__file__).resolve().parent.parent
DEVICE = {"name": "NVIDIA H200", "index": 0, "sm_count": 132, "l2_bytes": 62914560}
METHOD = {
    "flush_l2": True,
    "hold_queue": True,
    "cuda_graph": False,
    "overhead_ns": 1300.0,
    "calls_per_sample": 1,
}


def _mm_large(ref_dir) -> BenchResult:
    ref = json.loads((ref_dir / "events.json").read_text())["benchmarks"]["mm_large"]
    samples = [t * 1e6 for t in ref["times_ms"]]
    return BenchResult.from_samples(
        "mm_large",
        samples,
        sm_clock_hz=1.58e9,
        clock_source="nvml",
        sample_clock_hz=tuple([1.58e9] * 19 + [None]),
        throttled=2,
        throttle_reasons=("sw_power_cap",),
        method=METHOD,
        flops=ref["flops"],
        bytes=ref["bytes"],
    )


def test_result_from_real_samples(ref_dir) -> None:
    r = _mm_large(ref_dir)
    assert r.n == 20
    assert r.median_ns == pytest.approx(273872.003, abs=1e-2)
    assert r.median_ms == pytest.approx(0.273872, abs=1e-6)
    assert r.samples_ms[0] == pytest.approx(0.37392, abs=1e-5)
    # 2*2048*19456*2560 flop in 273.9 us
    assert r.tflops == pytest.approx(2 * 2048 * 19456 * 2560 / 273872.003e-9 / 1e12, rel=1e-9)
    assert r.tflops == pytest.approx(744.9, abs=0.1)
    assert r.gbps == pytest.approx(r.bytes / 273872.003, rel=1e-9)
    assert r.nvtx_path == "nsightwrap:mm_large"


def test_result_str_is_readable(ref_dir) -> None:
    text = str(_mm_large(ref_dir))
    assert text.startswith("mm_large: median 273.9 us")
    assert "n=20" in text and "744.9 TFLOP/s" in text and "SM 1.58 GHz" in text
    assert "2 samples left out (SM clock), NVML: sw_power_cap" in text
    assert "L2 flushed; queue held; -1.3 us empty window" in text


def test_to_dict_follows_the_sidecar_contract(ref_dir) -> None:
    d = _mm_large(ref_dir).to_dict()
    for key in (
        "name", "params", "nvtx_path", "samples_ns", "median_ns", "min_ns", "mean_ns", "stdev_ns",
        "iqr_ns", "n", "sm_clock_hz", "clock_source", "sample_clock_hz", "throttled", "method",
        "flops", "bytes",
    ):  # fmt: skip
        assert key in d, key
    assert d["nvtx_path"] == "nsightwrap:mm_large"
    assert d["sample_clock_hz"][-1] is None
    assert d["method"]["overhead_ns"] == 1300.0
    json.dumps(d, allow_nan=False)  # strict JSON


def test_to_dict_is_strict_json_with_one_sample() -> None:
    r = BenchResult.from_samples("one", [5000.0], method={"rel_ci": math.inf, "stop_reason": "max_samples"})
    d = r.to_dict()
    assert d["method"]["rel_ci"] is None and d["stdev_ns"] == 0.0 and d["median_ns"] == 5000.0
    json.dumps(d, allow_nan=False)


def test_untimed_result_under_ncu() -> None:
    r = BenchResult.from_samples("mm", [], method={"pass": "ncu", "ncu_iterations": 3}, timed=False)
    assert math.isnan(r.median_ns) and r.n == 0 and r.tflops is None
    d = r.to_dict()
    assert d["median_ns"] is None and d["timed"] is False
    assert str(r) == "mm: not timed under the ncu pass (3 iterations for the profiler)"


def test_sidecar_round_trip_is_atomic(tmp_path, ref_dir) -> None:
    r1 = _mm_large(ref_dir)
    r2 = BenchResult.from_samples("mm[M=64]", [12000.0, 12500.0, 13000.0], params={"M": 64}, method=METHOD)
    path = sidecar_path(tmp_path, pid=4242)
    assert path == tmp_path / "plain" / "timer-4242.json"
    write_sidecar(path, [r1], DEVICE, "2.11.0+cu130")
    write_sidecar(path, [r1, r2], DEVICE, "2.11.0+cu130")  # rewritten after each benchmark
    assert sorted(p.name for p in path.parent.iterdir()) == ["timer-4242.json"]  # no temp left
    doc = json.loads(path.read_text())
    assert (doc["format"], doc["version"]) == ("nsightwrap-timer", 2)
    assert doc["device"]["l2_bytes"] == 62914560
    side = read_sidecar(path)
    assert side.torch_version == "2.11.0+cu130"
    assert side.benchmarks == (r1, r2)
    assert side.benchmarks[1].params == {"M": 64} and side.benchmarks[1].median_ns == 12500.0


def test_sidecar_errors(tmp_path, ref_dir) -> None:
    with pytest.raises(InputNotFound):
        read_sidecar(tmp_path / "nope.json")
    path = tmp_path / "t.json"
    path.write_text("{not json")
    with pytest.raises(ReportParseError, match="not valid JSON"):
        read_sidecar(path)
    path.write_text(json.dumps({"format": "nsightwrap-run", "version": 1}))
    with pytest.raises(ReportParseError, match="not a timer sidecar"):
        read_sidecar(path)
    write_sidecar(path, [_mm_large(ref_dir)], DEVICE, None)
    doc = json.loads(path.read_text())
    doc["version"] = 99
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatVersionError, match="version 99"):
        read_sidecar(path)
    doc["version"] = 1
    del doc["benchmarks"][0]["samples_ns"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ReportParseError, match="benchmark 'mm_large' is missing field 'samples_ns'"):
        read_sidecar(path)


def test_names_and_sweeps() -> None:
    assert bench_name("mm") == "mm"
    assert bench_name("mm", {"M": 64, "dtype": "bf16"}) == "mm[M=64,dtype=bf16]"
    assert sweep_points({"M": [2, 64], "N": [8]}) == [{"M": 2, "N": 8}, {"M": 64, "N": 8}]

    @nw.benchmark(params={"M": [2, 64, 2048]}, flops=lambda M: 2 * M)
    def mm(M: int):
        return lambda: None

    assert [n for n, _ in mm.points()] == ["mm[M=2]", "mm[M=64]", "mm[M=2048]"]


def test_bad_benchmark_name_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="without '/'"):
        nw.bench(lambda: None, name="a/b")


def test_ncu_iteration_filter() -> None:
    assert contract.ncu_iteration_filter() == ["--nvtx", "--nvtx-include", "regex:nsightwrap@.*/iter[0-9]+/"]
    assert contract.ncu_iteration_filter("mm[M=64]")[-1] == r"regex:nsightwrap@mm\[M=64\]/iter[0-9]+/"
    assert contract.ncu_iteration_filter("a.b")[-1] == r"regex:nsightwrap@a\.b/iter[0-9]+/"


def test_pass_from_environment(monkeypatch) -> None:
    monkeypatch.delenv(contract.ENV_PASS, raising=False)
    assert current_pass() is None
    monkeypatch.setenv(contract.ENV_PASS, "ncu")
    assert current_pass() == "ncu"
    monkeypatch.setenv(contract.ENV_PASS, "bogus")
    assert current_pass() is None


def test_clock_alignment_on_synthetic_trace() -> None:
    # readings every 1 ms: 1.98 GHz idle, then 1.60 GHz under power cap from t=10 ms
    t = np.arange(0.0, 0.030, 0.001)
    hz = np.where(t < 0.0095, 1.98e9, 1.60e9)
    rs = np.where(t < 0.0095, 0, REASON_SW_POWER_CAP)
    trace = ClockTrace(t, hz, rs)
    windows = [
        (0.0021, 0.0023),  # 200 us between readings: nearest (2 ms) is 0.1 ms away
        (0.0150, 0.0172),  # spans readings at 15, 16, 17 ms
        (0.0400, 0.0401),  # 10 ms after the last reading: no clock
    ]
    a = align(trace, windows)
    assert a.sample_clock_hz[0] == 1.98e9 and a.sample_clock_hz[1] == 1.60e9
    assert math.isnan(a.sample_clock_hz[2])
    assert a.throttled == (False, True, False)
    assert reason_names(a.reasons) == ("sw_power_cap",)
    assert a.median_hz == pytest.approx((1.98e9 + 1.60e9) / 2)
    assert reason_names(REASON_HW_THERMAL | 0x1) == ("hw_thermal",)  # 0x1 (idle) is no throttle
    empty = align(ClockTrace(np.array([]), np.array([]), np.array([])), windows)
    assert empty.median_hz is None and empty.throttled == (False, False, False)


def test_no_torch_is_one_clear_error() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import nsightwrap as nw\n"
        "from nsightwrap.core.errors import NoCudaError\n"
        "try:\n    nw.bench(lambda: None)\n"
        "except NoCudaError as e:\n    print('NoCudaError:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "NoCudaError: nsightwrap.bench needs torch with CUDA, and torch is not installed"
        "; install a CUDA build of torch"
    )
    assert NoCudaError.exit_code == 2


def test_import_does_not_import_torch() -> None:
    code = "import sys, nsightwrap as nw; nw.BenchResult; nw.Region('x'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def _accuracy_module():
    from bench_modules import load_benchmark

    return load_benchmark("timer_accuracy")


def _accuracy_plain(timer_ns: float, ref: float, nv: float, dbc: float, tri: float, naive: float,
                    clock: float, rounds: int = 3) -> dict:
    timer = {"median_ns": timer_ns, "sm_clock_hz": clock, "clock_source": "stamps", "kernel_ns": None,
             "throttled": 0, "n": 200, "method": {"overhead_ns": 1300.0, "calls_per_sample": 1}}
    recs = [{"timer": dict(timer, median_ns=timer_ns + 10.0 * (r - 1)), "ref_ns": ref, "do_bench_cuda_ns": [dbc] * 3,
             "triton_ns": tri, "naive_ns": [naive] * 3} for r in range(rounds)]
    return {"rounds": recs, "nvbench_ns": [nv] * rounds}


def test_accuracy_table_from_h200_figures() -> None:
    """H200 figures: a 2 us add and a compute-bound GEMM; ncu at none and at base give e."""
    acc = _accuracy_module()
    assert acc.parse_args(["--only", "add_4k,mm_square"]).names == ["add_4k", "mm_square"]
    none = [
        {"nvtx_path": f"nsightwrap:add_4k/iter{i}", "duration_ns": d, "sm_clock_hz": 1.94e9,
         "sm_throughput_pct": 2.0, "dram_throughput_pct": 1.0}
        for i, d in enumerate([2300.0, 2290.0, 2310.0])
    ] + [
        {"nvtx_path": f"nsightwrap:mm_square/iter{i}", "duration_ns": 178_000.0, "sm_clock_hz": 1.60e9,
         "sm_throughput_pct": 90.0, "dram_throughput_pct": 30.0}
        for i in range(3)
    ] + [{"nvtx_path": "nsightwrap:add_4k", "duration_ns": 39000.0, "sm_clock_hz": 1.9e9}]  # flush: ignored  # fmt: skip
    base = [
        {"nvtx_path": f"nsightwrap:add_4k/iter{i}", "duration_ns": 2400.0, "sm_clock_hz": 1.40e9} for i in range(3)
    ] + [
        {"nvtx_path": f"nsightwrap:mm_square/iter{i}", "duration_ns": 178_000.0 * 1.60 / 1.35, "sm_clock_hz": 1.35e9}
        for i in range(3)
    ]  # fmt: skip
    refs, base_refs = acc.ncu_refs(none), acc.ncu_refs(base)
    assert refs["add_4k"].iterations_ns == (2300.0, 2290.0, 2310.0)
    assert acc.elasticity(refs["mm_square"], base_refs["mm_square"]) == pytest.approx(1.0)
    e_add = acc.elasticity(refs["add_4k"], base_refs["add_4k"])
    assert e_add == pytest.approx(math.log(2400 / 2300) / math.log(1.94 / 1.40))  # 0.13
    kernels = {
        "add_4k": _accuracy_plain(2340.0, 2330.0, 3900.0, 4290.0, 4220.0, 15980.0, clock=1.90e9),
        "mm_square": _accuracy_plain(180_000.0, 181_000.0, 195_000.0, 184_000.0, 200_000.0, 181_000.0, clock=1.55e9),
    }
    plain = {
        "kernels": {k: {"rounds": v["rounds"]} for k, v in kernels.items()},
        "nvbench": {k: {"rounds_ns": v["nvbench_ns"], "clock_hz": [1.9e9] * 3} for k, v in kernels.items()},
    }
    add, mm = acc.build_rows(plain, refs, base_refs)
    assert add["ncu_ns"] == 2300.0 and add["timer_ns"] == 2340.0
    assert add["timer_err_pct"] == pytest.approx((2340 / 2300 - 1) * 100)  # +1.7
    assert add["target_pct"] == 5.0 and add["meets_target"] and add["near_reference"] and add["beats_peers"]
    assert add["timer_spread_pct"] == pytest.approx(20 / 2300 * 100)  # 2330, 2340, 2350 over the rounds
    # the GEMM follows the clock (e = 1): ncu at the timer's 1.55 GHz is 178 * 1.60 / 1.55 us
    assert mm["matched_ns"] == pytest.approx(178_000.0 * 1.60 / 1.55)
    assert mm["timer_matched_err_pct"] == pytest.approx((180_000 / (178_000 * 1.60 / 1.55) - 1) * 100)
    assert mm["target_pct"] == 3.0 and mm["meets_target"]
    table = acc.markdown_table([add, mm])
    assert "| add_4k | 2.30 | 2.34 (+1.7) | 3.64 (+58.3) | 2.33 (+1.3) | 3.90 (+69.6) |" in table
    assert table.splitlines()[2].endswith("| 5 % | yes |")
    assert "+0.13" in acc.clock_table([add, mm]) and "+1.00" in acc.clock_table([add, mm])
    assert acc.summary_lines([add, mm])[0].endswith(": 2 of 2")
    # the timer further from ncu than the reference loop by more than a point is reported
    slow = acc.build_rows({"kernels": {"add_4k": {"rounds": _accuracy_plain(2400.0, 2310.0, 3900.0, 4290.0, 4220.0, 15980.0, clock=1.9e9)["rounds"]}}}, refs)[0]
    assert not slow["near_reference"] and "behind the reference loop" in acc.markdown_table([slow])


def test_a_calls_memset_joins_ncus_kernels_in_the_reference() -> None:
    """cuBLAS makes a 4-byte memset before its cooperative GEMM kernel: the event windows hold it,
    ncu profiles kernels only. The reference is ncu's kernels plus the memset's CUPTI time (per
    call, median over the rounds); the clock carries the kernels alone; the verdicts against ncu's
    kernels alone are kept and printed beside."""
    acc = _accuracy_module()
    none = [{"nvtx_path": f"nsightwrap:mm_square/iter{i}", "duration_ns": 178_000.0, "sm_clock_hz": 1.58e9,
             "sm_throughput_pct": 90.0, "dram_throughput_pct": 30.0} for i in range(3)]  # fmt: skip
    base = [{"nvtx_path": f"nsightwrap:mm_square/iter{i}", "duration_ns": 178_000.0 * 1.58 / 1.27,
             "sm_clock_hz": 1.27e9} for i in range(3)]  # fmt: skip
    # the timer 178.94 us, do_bench 177.38 us: the old verdict (ncu's kernels alone) favours do_bench
    kern = _accuracy_plain(178_940.0, 178_660.0, 181_200.0, 176_420.0, 177_380.0, 182_260.0, clock=1.58e9)
    for i, rec in enumerate(kern["rounds"]):
        rec["timer"]["method"] = dict(rec["timer"]["method"], kernel_time={
            "copies_per_call": 1.0, "copy_ns_per_call": 900.0 + 50.0 * i})  # fmt: skip
    plain = {"kernels": {"mm_square": {"rounds": kern["rounds"]}},
             "nvbench": {"mm_square": {"rounds_ns": kern["nvbench_ns"], "clock_hz": [1.58e9] * 3}}}  # fmt: skip
    (mm,) = acc.build_rows(plain, acc.ncu_refs(none), acc.ncu_refs(base))
    assert mm["copies_per_call"] == 1.0 and mm["non_kernel_ns"] == 950.0
    assert mm["ncu_kernels_ns"] == 178_000.0 and mm["ncu_ns"] == 178_950.0
    assert mm["matched_ns"] == pytest.approx(178_000.0 + 950.0)  # same clock: nothing to carry
    assert mm["timer_err_pct"] == pytest.approx((178_940 / 178_950 - 1) * 100)
    assert mm["beats_peers"] and not mm["kernels_beats_peers"]
    assert mm["timer_kernels_err_pct"] == pytest.approx((178_940 / 178_000 - 1) * 100)
    table = acc.markdown_table([mm])
    assert "| mm_square | 178.95 (178.00 + 0.95 memcpy/memset) | 178.94 (-0.0) |" in table
    text = acc.render("Run.", plain, {}, [mm])
    assert "The calls of mm_square (1 per call, 0.95 us) made a memcpy/memset" in text
    kernels_only = text.split("Against ncu's kernels alone, as measured:", 1)[1]
    assert "triton do_bench: 0 of 1 (missed: mm_square)" in kernels_only.split("\n\n")[1]
    # CUPTI's side of the kernel-time table counts the memset too
    row = dict(mm, kernel_ns=176_580.0)
    assert "| mm_square | 176.58 + 0.95 memcpy/memset | +1.41 |" in acc.kernel_time_table([row])
    # a run that only counted the copies (no durations) keeps ncu's kernels as the reference
    for rec in kern["rounds"]:
        rec["timer"]["method"]["kernel_time"] = {"copies_per_call": 1.0}
    (old,) = acc.build_rows(plain, acc.ncu_refs(none), acc.ncu_refs(base))
    assert old["non_kernel_ns"] is None and old["ncu_ns"] == 178_000.0 and not old["beats_peers"]


def test_tables_are_made_again_from_a_saved_run(tmp_path) -> None:
    acc = _accuracy_module()
    none = [{"nvtx_path": f"nsightwrap:add_4k/iter{i}", "duration_ns": 2200.0, "sm_clock_hz": 1.94e9,
             "sm_throughput_pct": 2.0, "dram_throughput_pct": 1.0} for i in range(3)]  # fmt: skip
    base = [{"nvtx_path": f"nsightwrap:add_4k/iter{i}", "duration_ns": 2300.0, "sm_clock_hz": 1.47e9} for i in range(3)]
    plain = {"kernels": {"add_4k": {"rounds": _accuracy_plain(2370.0, 2300.0, 3710.0, 4400.0, 4260.0, 19440.0, clock=1.96e9)["rounds"]}},
             "nvbench": {"add_4k": {"rounds_ns": [3710.0] * 3, "clock_hz": [1.96e9] * 3}}, "reference_loop": True}  # fmt: skip
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"header": "Timer accuracy on an H200.", "plain": plain, "ncu_none": none,
                                "ncu_base": base, "queue_study": {"nothing_behind_ns": 3810.0, "batch_16_ns": 4540.0}}))  # fmt: skip
    text = acc.tables_from(path)
    assert text.startswith("Timer accuracy on an H200.")
    assert "| add_4k | 2.20 | 2.37 (+7.7) |" in text  # against ncu as measured
    assert text.count("within 3% (>= 10 us) / 5% (2-10 us) of ncu: 0 of 1 (missed: add_4k)") == 2
    assert "| 16 samples queued before one synchronize | 4.54 |" in text
    out = subprocess.run([sys.executable, "-m", "benchmarks.timer_accuracy", "--tables-from", str(path)],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert out.returncode == 0 and out.stdout == text


def _saved(path: Path) -> dict:
    import gzip

    return json.loads(gzip.decompress(path.read_bytes()))


def test_the_earlier_h200_run_gives_each_reading_over_cuptis_kernel_time() -> None:
    """benchmarks/results/timer-accuracy-run2.json.gz (an earlier H200 run, whose reference was ncu with five
    metrics, ten replay passes): the kernel-time table made again from its raw records agrees
    with the rows stored beside them, and shows what the doc says: on the bf16 GEMV that ncu
    reads more than a microsecond over the event window, on the short kernels both add about a
    microsecond to CUPTI's kernel time."""
    acc = _accuracy_module()
    path = ROOT / "benchmarks" / "results" / "timer-accuracy-run2.json.gz"
    text = acc.tables_from(path)
    stored = {r["kernel"]: r for r in _saved(path)["rows"]}
    table = text.split("Each reading over CUPTI's kernel time of the same calls (us):", 1)[1]
    for name in ("add_4k", "mm_skinny", "softmax_4k"):
        r = stored[name]
        k = r["kernel_ns"]
        cells = [f"{k / 1e3:.2f}", f"{(r['timer_ns'] - k) / 1e3:+.2f}", f"{(r['timer_raw_ns'] - k) / 1e3:+.2f}",
                 f"{(r['ref_ns'] - k) / 1e3:+.2f}", f"{(r['ncu_ns'] - k) / 1e3:+.2f}", f"{(r['ncu_ns'] - r['timer_ns']) / 1e3:+.2f}"]  # fmt: skip
        assert f"| {name} | " + " | ".join(cells) + " |" in table
    skinny = stored["mm_skinny"]
    assert skinny["ncu_ns"] - skinny["timer_ns"] > 1000
    for name in ("add_4k", "relu_1m", "axpy_triton_1m"):
        assert 900 < stored[name]["timer_ns"] - stored[name]["kernel_ns"] < 1300
        assert 900 < stored[name]["ncu_ns"] - stored[name]["kernel_ns"] < 1300


def test_the_reference_is_ncus_duration_alone_and_the_clock_its_two_metric_run() -> None:
    """With a duration-alone ncu run, its median is the reference; the SM clock and e come from
    the two-metric runs at none and base; the profile-metrics run (12 passes) is shown beside
    them, and gives the throughputs when e cannot be measured."""
    acc = _accuracy_module()

    def rows(durs, clock=None, **extra):
        return [{"nvtx_path": f"nsightwrap:mm_skinny/iter{i}", "duration_ns": d, "sm_clock_hz": clock, **extra}
                for i, d in enumerate(durs)]  # fmt: skip

    two = rows([30_000.0, 30_100.0, 29_900.0], 1.83e9, profiler__replayer_passes=1.0)
    alone = rows([29_500.0, 29_600.0, 29_400.0], profiler__replayer_passes=1.0)
    prof = rows([31_200.0] * 3, 1.83e9, profiler__replayer_passes=12.0, sm_throughput_pct=10.0,
                dram_throughput_pct=80.0, **{"profiler__replayer_bytes_mem_backed_up.sum": 8.5e9})  # fmt: skip
    refs, dur, profile = acc.ncu_refs(two), acc.ncu_refs(alone), acc.ncu_refs(prof)
    assert math.isnan(dur["mm_skinny"].clock_hz) and dur["mm_skinny"].passes == 1.0
    assert dur["mm_skinny"].backed_up_bytes == 0.0  # one pass: ncu backs nothing up
    assert profile["mm_skinny"].passes == 12.0 and profile["mm_skinny"].backed_up_bytes == 8.5e9
    plain = {"kernels": {"mm_skinny": {"rounds": _accuracy_plain(29_600.0, 29_500.0, 38_000.0, 35_800.0, 38_100.0,
                                                                 58_600.0, clock=1.86e9)["rounds"]}}}  # fmt: skip
    (row,) = acc.build_rows(plain, refs, None, profile, dur)
    assert row["ncu_ns"] == 29_500.0 and row["ncu_source"] == "duration alone"
    assert row["f_ncu_hz"] == pytest.approx(1.83e9) and row["ncu_clock_run_ns"] == 30_000.0
    assert row["timer_err_pct"] == pytest.approx((29_600 / 29_500 - 1) * 100)
    # no base run: e falls back to the bound the profile run's throughputs give (memory: e = 0)
    assert row["elasticity"] is None and row["matched_ns"] == pytest.approx(29_500.0)
    table = acc.replay_table([row])
    assert "| mm_skinny | 29.50 | 30.00 | 31.20 (12, 8.5) | 29.60 | +0.3 / -1.3 / -5.1 |" in table
    # without the duration-alone run the two-metric run is the reference, as in earlier runs
    (old,) = acc.build_rows(plain, refs, None, profile)
    assert old["ncu_ns"] == 30_000.0 and old["ncu_source"] == "duration and SM clock"


def test_the_00_04_h200_run_meets_the_first_two_targets() -> None:
    """benchmarks/results/timer-accuracy-0004.json.gz (reference: ncu with the duration alone, 30 iterations;
    its CUPTI reading counted the GEMM's memset but did not time it): the verdicts made again
    from its raw records are those stored beside them and those the doc states."""
    acc = _accuracy_module()
    path = ROOT / "benchmarks" / "results" / "timer-accuracy-0004.json.gz"
    doc = _saved(path)
    text = acc.tables_from(path)
    assert text.count("within 3% (>= 10 us) / 5% (2-10 us) of ncu: 9 of 9") == 2
    assert text.count("no more than 1 point further from ncu than the reference loop: 9 of 9") == 2
    assert text.count("do_bench_cuda recipe and triton do_bench: 8 of 9 (missed: mm_square)") == 2
    stored = {r["kernel"]: r for r in doc["rows"]}
    for row in acc.build_rows(doc["plain"], acc.ncu_refs(doc["ncu_none"]), acc.ncu_refs(doc["ncu_base"]),
                              acc.ncu_refs(doc["ncu_none_profile"]), acc.ncu_refs(doc["ncu_none_duration"])):  # fmt: skip
        assert row["ncu_ns"] == pytest.approx(stored[row["kernel"]]["ncu_ns"])
        assert row["meets_target"] == stored[row["kernel"]]["meets_target"]
        assert row["ncu_profile_passes"] == 12 and len(acc.ncu_refs(doc["ncu_none_duration"])[row["kernel"]].iterations_ns) == 30
    # the GEMV: ncu with the profile's metrics reads it over 5% longer than ncu with the duration alone
    gemv = stored["mm_skinny"]
    assert gemv["ncu_profile_ns"] / gemv["ncu_ns"] > 1.05
    # the short kernels: with the SM clock collected too, ncu reads them longer than alone
    for name in ("add_4k", "relu_1m", "axpy_triton_1m"):
        assert stored[name]["ncu_clock_run_ns"] > stored[name]["ncu_ns"]


def test_ncu_rows_runs_ncu_and_reads_its_report(monkeypatch, tmp_path) -> None:
    """The benchmarks' ncu runner, through the fake ncu (a real subprocess writing the real H200
    reference report): the report's kernels come back as JSON-ready rows; a failing run ends in
    one SystemExit that names the run and ncu's exit code."""
    import shutil

    from fake_tools.harness import use_fakes

    from nsightwrap.parsers.ncu import read_ncu_rep

    acc = _accuracy_module()
    use_fakes(monkeypatch, tmp_path)
    ncu = shutil.which("ncu")
    assert ncu is not None and "fake_tools" in ncu
    rep = tmp_path / "run"
    argv = [ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "-o", str(rep), "-f"]
    rows = acc.ncu_rows([*argv, sys.executable, "-c", "pass"], dict(os.environ), rep, "duration alone", timeout=60)
    want = read_ncu_rep(ROOT / "fixtures" / "reference" / "h200-workload" / "workload.ncu-rep.gz")
    assert len(rows) == len(want) > 0
    assert [r["duration_ns"] for r in rows] == pytest.approx(list(want["duration_ns"]))
    assert "nvtx_ranges" not in rows[0] and json.loads(json.dumps(rows)) == rows
    with pytest.raises(SystemExit, match=r"^ncu \(duration alone\) failed \(3\):"):
        acc.ncu_rows([*argv, sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ), rep, "duration alone", timeout=60)


def test_nvbench_json_summaries_are_read() -> None:
    acc = _accuracy_module()
    doc = {"benchmarks": [{"states": [
        {"axis_values": [{"name": "kernel", "type": "string", "value": "add_4k"}, {"name": "round", "value": 0}],
         "summaries": [{"tag": "nv/cold/time/gpu/mean", "data": [{"name": "value", "type": "float64", "value": "3.9e-06"}]},
                       {"tag": "nv/cold/sm_clock_rate/mean", "data": [{"name": "value", "value": "1.95e9"}]},
                       {"tag": "nv/cold/sample_size", "data": [{"name": "value", "value": "1000"}]}]},
        {"axis_values": [{"name": "kernel", "value": "add_4k"}], "is_skipped": True, "summaries": []},
    ]}]}  # fmt: skip
    got = acc.parse_nvbench_json(doc)
    assert got["add_4k"]["rounds_ns"] == [pytest.approx(3900.0)] and got["add_4k"]["clock_hz"] == [1.95e9]


def test_accuracy_script_help_runs_without_gpu() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.timer_accuracy", "--help"],
        capture_output=True, text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert out.returncode == 0 and "--ncu-iters" in out.stdout and "--ref-iters" in out.stdout


def test_the_reference_run_takes_its_own_iterations() -> None:
    """--ref-iters sets the iterations of the reference run (ncu's duration alone) apart from the
    other ncu runs; without it, the reference takes --ncu-iters; zero is a usage error."""
    ta = _accuracy_module()
    assert ta.parse_args(["--ncu-iters", "30"]).ref_iters == 30
    args = ta.parse_args(["--ncu-iters", "30", "--ref-iters", "100"])
    assert (args.ncu_iters, args.ref_iters) == (30, 100)
    with pytest.raises(SystemExit):
        ta.parse_args(["--ref-iters", "0"])


def test_study_round_line_prints_each_variants_median_in_us() -> None:
    from benchmarks.common import round_line

    row = {"timer": {"median_ns": 2304.0, "empty_ns": 1280.0}, "no stamps": {"median_ns": 2240.0}}
    assert round_line("add_4k", 3, row) == "add_4k round 3: timer 2.304, no stamps 2.240"


RECORDED_RUNS = ("timer-accuracy-5iters-a", "timer-accuracy-5iters-b", "timer-accuracy-0004",
                 "timer-accuracy-0318", "timer-accuracy-0331", "timer-accuracy-0421", "timer-accuracy-0427",
                 "timer-accuracy-0529", "timer-accuracy-0533", "timer-accuracy-0548", "timer-accuracy-0652-rotate",
                 "timer-accuracy-0703", "timer-accuracy-0712", "timer-accuracy")  # fmt: skip
#: Runs with the call's memset in the reference (five rounds each, eleven H200s): per run, the line
#: each target's summary gives as measured, at the timer's clock and against ncu's kernels alone
#: (one line where the three agree); the places each kernel was read on (``--places``); ncu's
#: iterations in the reference run; the order of the in-process methods (``--order``).
MEMSET_RUNS = {
    "timer-accuracy-0318": ("8 of 9 (missed: add_4k)", "9 of 9",
                            ("8 of 9 (missed: attention)", "8 of 9 (missed: mm_square)", "8 of 9 (missed: attention)"), 1, 30, "fixed"),
    "timer-accuracy-0331": ("8 of 9 (missed: add_4k)", "9 of 9", ("9 of 9", "9 of 9", "9 of 9"), 1, 30, "fixed"),
    "timer-accuracy-0421": ("9 of 9", "9 of 9", ("8 of 9 (missed: mm_square)", "8 of 9 (missed: mm_square)", "9 of 9"), 1, 100, "fixed"),
    "timer-accuracy-0427": ("8 of 9 (missed: add_4k)", "9 of 9",
                            ("7 of 9 (missed: attention, mm_square)", "8 of 9 (missed: attention)", "8 of 9 (missed: attention)"), 1, 100, "fixed"),
    "timer-accuracy-0529": ("9 of 9", "9 of 9",
                            ("8 of 9 (missed: attention)", "7 of 9 (missed: attention, mm_square)", "7 of 9 (missed: attention, mm_square)"), 5, 100, "fixed"),
    "timer-accuracy-0533": ("9 of 9", "9 of 9",
                            ("8 of 9 (missed: mm_square)", "8 of 9 (missed: mm_square)", "8 of 9 (missed: mm_square)"), 5, 100, "fixed"),
    "timer-accuracy-0548": ("9 of 9", "8 of 9 (missed: relu_1m)",
                            ("7 of 9 (missed: attention, mm_square)", "8 of 9 (missed: attention)", "7 of 9 (missed: attention, mm_square)"), 5, 100, "fixed"),
    "timer-accuracy-0652-rotate": ("9 of 9", "9 of 9",
                                   ("9 of 9", "8 of 9 (missed: attention)", "8 of 9 (missed: mm_square)"), 5, 100, "rotate"),
    "timer-accuracy-0703": ("9 of 9", "8 of 9 (missed: add_4k)",
                            ("7 of 9 (missed: attention, mm_square)", "8 of 9 (missed: attention)", "7 of 9 (missed: attention, mm_square)"), 5, 100, "fixed"),
    "timer-accuracy-0712": ("8 of 9 (missed: add_4k)", "9 of 9",
                            ("8 of 9 (missed: attention)", "8 of 9 (missed: attention)", "7 of 9 (missed: attention, mm_square)"), 5, 100, "fixed"),
    "timer-accuracy": (("9 of 9", "8 of 9 (missed: add_4k)", "9 of 9"), "9 of 9",
                       ("9 of 9", "8 of 9 (missed: attention)", "9 of 9"), 5, 100, "rotate"),
}  # fmt: skip


def test_the_runs_with_the_memset_in_the_reference() -> None:
    """The runs of MEMSET_RUNS: the rows made again from the raw records are those stored; only
    the square GEMM's calls made a memset, its CUPTI time is in the reference; each target's
    verdicts are those docs/timer-accuracy.md states; the reference's iterations are spread over
    the run's places (each round of the run on a place of its own); and the doc's tables are the
    latest run's."""
    acc = _accuracy_module()
    doc_text = (ROOT / "docs" / "timer-accuracy.md").read_text()
    texts = {}
    for name, (first, second, third, places, iters, order) in MEMSET_RUNS.items():
        path = ROOT / "benchmarks" / "results" / f"{name}.json.gz"
        saved, rows = acc._saved_rows(path)
        stored = {r["kernel"]: r for r in saved["rows"]}
        for row in rows:
            st = stored[row["kernel"]]
            assert row["ncu_ns"] == pytest.approx(st["ncu_ns"]) and row["timer_ns"] == pytest.approx(st["timer_ns"])
            for key in ("meets_target", "near_reference", "beats_peers", "matched_beats_peers", "kernels_beats_peers"):
                assert row[key] == st[key], (name, row["kernel"], key)
            if row["kernel"] == "mm_square":
                assert row["copies_per_call"] == 1 and 500 < row["non_kernel_ns"] < 1000
                assert row["ncu_ns"] == pytest.approx(row["ncu_kernels_ns"] + row["non_kernel_ns"])
            else:
                assert row["copies_per_call"] == 0 and row["non_kernel_ns"] is None
        assert int(saved["plain"].get("places") or 1) == places
        benches = acc.ncu_refs(saved["ncu_none_duration"])
        assert len(benches) == 9 * places  # one benchmark per kernel and place under ncu
        assert {len(r.iterations_ns) for r in benches.values()} == {iters // places}
        pooled = acc.pooled_refs(saved["ncu_none_duration"])
        assert sorted(pooled) == sorted(acc.KERNELS) and {len(r.iterations_ns) for r in pooled.values()} == {iters}
        assert saved["plain"].get("order", "fixed") == order
        for k, rounds in ((k, v["rounds"]) for k, v in saved["plain"]["kernels"].items()):
            assert [r.get("place", 0) for r in rounds] == [i % places for i in range(len(rounds))], (name, k)
            # rotated: each in-process method ran first once, right after the previous kernel's last
            firsts = [r.get("order", acc.PLAIN_METHODS)[0] for r in rounds]
            assert firsts == (list(acc.PLAIN_METHODS) if order == "rotate" else ["timer"] * len(rounds)), (name, k)
        texts[name] = text = acc.tables_from(path)
        for prefix, want in (("- within 3% (>= 10 us) / 5% (2-10 us) of ncu: ", first),
                             ("- no more than 1 point further from ncu than the reference loop: ", second),
                             ("- closer to ncu than nvbench cold, the do_bench_cuda recipe and triton do_bench: ", third)):  # fmt: skip
            got = tuple(ln[len(prefix):] for ln in text.splitlines() if ln.startswith(prefix))
            assert got == (want if isinstance(want, tuple) else (want,) * 3), (name, prefix)
    # the doc's tables are the latest run's, made again from its JSON
    body = texts["timer-accuracy"].split("\n", 1)[1]
    table = body.split("Clocks and clock elasticity", 1)[0].strip()
    assert table in doc_text


def test_places_pool_into_their_kernel() -> None:
    """ncu's benchmarks ``<kernel>.p<place>`` pool into ``<kernel>``: every place's iterations,
    in place order; a benchmark that is not a place stays as it is."""
    acc = _accuracy_module()

    def row(bench: str, it: int, ns: float) -> dict:
        return {"nvtx_path": f"nsightwrap:{bench}/iter{it}", "duration_ns": ns, "sm_clock_hz": 2e9,
                "sm_throughput_pct": 10.0, "dram_throughput_pct": 50.0}  # fmt: skip

    rows = [row("add_4k.p0", 0, 2200.0), row("add_4k.p0", 1, 2250.0), row("add_4k.p1", 0, 2400.0),
            row("add_4k.p1", 1, 2450.0), row("add_4k.p1", 2, 2500.0), row("mm_square", 0, 175e3),
            row("x.pp", 0, 1.0), row(".p3", 0, 2.0)]  # fmt: skip
    pooled = acc.pooled_refs(rows)
    assert sorted(pooled) == [".p3", "add_4k", "mm_square", "x.pp"]
    assert pooled["add_4k"].iterations_ns == (2200.0, 2250.0, 2400.0, 2450.0, 2500.0)
    assert pooled["add_4k"].duration_ns == 2400.0  # the median over both places, not of one
    assert pooled["add_4k"].dram_pct == 50.0 and pooled["add_4k"].bound == "memory"
    assert pooled["mm_square"].iterations_ns == (175e3,)


def test_the_runs_table_is_the_docs() -> None:
    """`--runs` over every run with ncu's duration alone as the reference prints the table that
    studies/timer-accuracy-log.md shows, and each row's counts are that run's own verdicts."""
    acc = _accuracy_module()
    paths = [ROOT / "benchmarks" / "results" / f"{n}.json.gz" for n in RECORDED_RUNS]
    table = acc.runs_table(paths)
    assert table in (ROOT / "studies" / "timer-accuracy-log.md").read_text()
    lines = {ln.split(" | ")[0].lstrip("| "): ln for ln in table.splitlines()[2:]}
    assert "| 3 | 1 | 30 | 9 of 9 / 9 of 9 / 8 of 9 (mm_square) |" in lines["timer-accuracy-0004.json.gz"]
    assert "| 3 | 1 | 5 | 8 of 9 (add_4k) / 8 of 9 (add_4k) / 8 of 9 (attention) |" in lines["timer-accuracy-5iters-a.json.gz"]
    assert "| 5 | 1 | 30 | 8 of 9 (add_4k) / 9 of 9 / 9 of 9 |" in lines["timer-accuracy-0331.json.gz"]
    assert "| 5 | 1 | 100 | 9 of 9 / 9 of 9 / 8 of 9 (mm_square) |" in lines["timer-accuracy-0421.json.gz"]
    assert "| 5 | 1 | 100 | 8 of 9 (add_4k) / 9 of 9 / 7 of 9 (attention, mm_square) |" in lines["timer-accuracy-0427.json.gz"]
    assert "| 5 | 5 | 100 | 9 of 9 / 9 of 9 / 8 of 9 (attention) |" in lines["timer-accuracy-0529.json.gz"]
    assert "| 5 | 5 | 100 | 9 of 9 / 9 of 9 / 8 of 9 (mm_square) |" in lines["timer-accuracy-0533.json.gz"]
    assert "| 5 | 5 | 100 | 9 of 9 / 8 of 9 (relu_1m) / 7 of 9 (attention, mm_square) |" in lines["timer-accuracy-0548.json.gz"]
    assert "| 5 | 5 | 100 | 8 of 9 (add_4k) / 9 of 9 / 8 of 9 (attention) |" in lines["timer-accuracy-0712.json.gz"]
    assert "| 5 | 5 | 100 | 9 of 9 / 9 of 9 / 9 of 9 |" in lines["timer-accuracy.json.gz"]
    out = subprocess.run([sys.executable, "-m", "benchmarks.timer_accuracy", "--runs", *map(str, paths)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == table
