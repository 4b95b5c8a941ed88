"""The roofline arithmetic, checked against values computed by hand from the shipped H200 run's
ncu counters and timer sidecar, and where the roofs come from (run dir, cache, datasheet, none)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from test_device_file import sample_device

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import RoofPeak, Roofs
from nsightwrap.analysis.roofline import UNCOUNTED, find_roofs, kernel_bytes, kernel_flops, place
from nsightwrap.core.errors import UsageError
from nsightwrap.device.store import save_to_cache, write_device_file
from nsightwrap.export.jsonio import load_report_json, write_report_json
from nsightwrap.parsers.ncu import read_ncu_rep

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "fixtures" / "runs" / "h200-example"
#: The uuid of the GPU that run ran on (its nvidia-smi -q -x).
RUN_UUID = "GPU-b2908912-5b90-2eb5-b54b-e3985c245af4"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # never the user's device files


@pytest.fixture(scope="module")
def example() -> object:
    return analyze(RUN)


def _bench(result: object, name: str):  # type: ignore[no-untyped-def]
    return next(b for b in result.benchmarks if b.name == name)  # type: ignore[attr-defined]


def test_counters_of_single_kernels() -> None:
    k = read_ncu_rep(RUN / "ncu" / "report.ncu-rep.gz")
    add = k[k["nvtx_path"] == "nsightwrap:add_small/iter0"].iloc[0].to_dict()
    # 4096 FFMA thread instructions (the add of 4096 floats), 2 FLOPs each; no HFMA; no tensor work.
    assert kernel_flops(add) == (8192.0, {"fp32": 8192.0}, "")
    assert kernel_bytes(add) == 38400.0  # dram__bytes_read.sum + dram__bytes_write.sum
    mm = k[k["nvtx_path"] == "nsightwrap:mm_large/iter0"].iloc[0].to_dict()
    flops, kinds, note = kernel_flops(mm)
    # 6,246,400 tensor instructions and no tensor-op counter in this report: FLOPs unknown.
    assert flops is None and "6246400 tensor instructions" in note
    assert kernel_bytes(mm) == 337819648.0


def test_datasheet_roofline_of_a_compute_bound_gemm(example) -> None:  # type: ignore[no-untyped-def]
    assert example.roofs.source == "datasheet" and example.roofs.where == "NVIDIA H200 SXM datasheet"
    b = _bench(example, "mm_large")
    r = b.roofline
    flops, nbytes = 204010946560.0, 189792256.0  # given to nsightwrap.bench (2*M*N*K, 2*(MK+NK+MN))
    # ncu's median iteration (gpu__time_duration.sum of 283168, 283488 and 283808 ns) at ncu's clock:
    # sum of sm__cycles_elapsed.avg over the sum of the durations (1351022 cycles / 850464 ns).
    t = 283488.0
    f = (450162.893939 + 450655.484848 + 451203.606061) / (283168.0 + 283488.0 + 283808.0) * 1e9
    assert (r.flops, r.bytes, r.flops_source, r.bytes_source) == (flops, nbytes, "bench", "bench")
    assert (r.time_ns, r.time_source) == (t, "ncu") and r.clock_hz == pytest.approx(f, rel=1e-9)
    assert r.extra["timer_ns"] == b.timer.median_ns  # the timer's own rate is kept beside it
    roof = 989.4e12 * f / 1.83e9  # datasheet bf16 peak (at the 1.83 GHz of NVIDIA's tensor figures), at ncu's clock
    assert r.compute_roof == "bf16" and r.roof_flops_per_s == pytest.approx(roof, rel=1e-9)
    assert r.flops_per_s == pytest.approx(flops / (t * 1e-9), rel=1e-12)
    assert r.intensity == pytest.approx(1074.9, abs=0.05)
    assert r.ridge_intensity == pytest.approx(roof / 4.8e12, rel=1e-9)
    assert r.bound == "compute"
    assert r.roof_pct == pytest.approx(100 * (flops / (t * 1e-9)) / roof, rel=1e-9)
    assert r.roof_pct == pytest.approx(83.8, abs=0.1)


def test_memory_bound_gemv_and_a_memcpy(example) -> None:  # type: ignore[no-untyped-def]
    b = _bench(example, "mm_skinny")
    r = b.roofline
    assert r.bound == "memory"
    i = 199229440.0 / 99702784.0
    assert r.intensity == pytest.approx(i, rel=1e-12)
    attainable = i * 4.8e12  # below the ridge: the memory roof at this intensity
    assert r.roof_pct == pytest.approx(100 * r.flops_per_s / attainable, rel=1e-12)
    c = _bench(example, "copy_1g").roofline  # a cudaMemcpy: no kernel, no FLOPs, bytes given
    assert c.flops is None and c.intensity is None and c.bound is None and c.kernels == ()
    # No kernel for ncu to time: the timer's median is the time.
    assert c.time_source == "timer"
    assert c.bytes_per_s == pytest.approx(2147483648.0 / (_bench(example, "copy_1g").timer.median_ns * 1e-9))
    assert c.roof_pct == pytest.approx(100 * c.bytes_per_s / 4.8e12)


def test_bytes_from_ncu_when_bench_gave_none(example) -> None:  # type: ignore[no-untyped-def]
    r = _bench(example, "softmax_mlp").roofline
    # DRAM bytes per iteration: softmax + GEMM + GELU kernels, read + written (ncu counters):
    per_iter = [49218816 + 177888512 + 46543360, 49317120 + 177453824 + 46455552, 49202944 + 177378560 + 46452736]
    assert r.bytes_source == "ncu dram" and r.bytes == sorted(per_iter)[1] == 273226496
    assert r.flops_source == "bench" and r.flops == 137438953472.0
    assert [k.kernel_short for k in r.kernels] == [
        "cunn_SoftMaxForwardReg", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", "vectorized_elementwise_kernel",
    ]  # fmt: skip
    k0 = r.kernels[0]
    assert (k0.duration_ns, k0.bytes) == (54784.0, 49218816.0)
    assert k0.bytes_per_s == pytest.approx(49218816.0 / 54784e-9)
    # 655,360 tensor-pipe instructions and no tensor-op counters in this report: its FLOPs are not
    # known, so it is not placed (against the memory roof alone it would read as if it did none).
    assert k0.flops is None and k0.roof_pct is None and k0.bound is None
    assert (k0.status, k0.issue) == ("uncounted", UNCOUNTED)
    assert "tensor instructions ran" in r.roof_reason


def test_place_arithmetic_by_hand() -> None:
    roofs = Roofs("measured", "x", memory_bytes_per_s=4.0e12, peaks=(RoofPeak("bf16", 800e12, 1.6e9),))
    # 1 TFLOP and 1 GB in 2 ms at 2.0 GHz: 500 TFLOP/s, 0.5 TB/s, 1000 FLOP/B; the bf16 roof at
    # 2.0 GHz is 1000 TFLOP/s, the ridge 250 FLOP/B: compute-bound at 50 %.
    p = place(roofs, 1e12, 1e9, 2e6, 2.0e9, "bf16")
    assert p["flops_per_s"] == pytest.approx(5e14) and p["bytes_per_s"] == pytest.approx(5e11)
    assert p["intensity"] == 1000.0 and p["roof_flops_per_s"] == pytest.approx(1e15)
    assert p["ridge_intensity"] == pytest.approx(250.0) and p["bound"] == "compute"
    assert p["roof_pct"] == pytest.approx(50.0)
    # 10 GFLOP over 1 GB: 10 FLOP/B, under the ridge: attainable 40 TFLOP/s, achieved 5 TFLOP/s.
    q = place(roofs, 1e10, 1e9, 2e6, 2.0e9, "bf16")
    assert q["bound"] == "memory" and q["roof_pct"] == pytest.approx(12.5)
    # Without a clock the roof is taken as measured; without roofs nothing is judged.
    assert place(roofs, 1e12, 1e9, 2e6, None, "bf16")["roof_flops_per_s"] == 800e12
    none = place(Roofs("none", "why"), 1e12, 1e9, 2e6, 2e9, "bf16")
    assert none["bound"] is None and none["roof_pct"] is None and none["intensity"] == 1000.0


def test_roofs_come_from_the_run_then_the_cache_then_the_datasheet(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    # The cache, by the run's GPU uuid.
    cached = save_to_cache(sample_device(uuid=RUN_UUID))
    r = analyze(run)
    assert r.roofs.source == "measured" and r.roofs.where == str(cached) and r.roofs.note == ""
    b = _bench(r, "mm_large").roofline
    assert b.peak_source == "measured"
    assert b.roof_flops_per_s == pytest.approx(7.9e14 * b.clock_hz / 1.6e9)  # measured at 1.6 GHz
    assert b.roof_bytes_per_s == 4.3e12
    # The run directory's env/device.json wins over the cache; another H200 is said.
    local = write_device_file(sample_device(uuid="GPU-another"), run / "env" / "device.json")
    r = analyze(run)
    assert r.roofs.where == str(local) and "another NVIDIA H200" in r.roofs.note
    # A device file of another model is not used; the cache is next.
    write_device_file(sample_device(name="NVIDIA A100-SXM4-80GB", uuid=RUN_UUID), local)
    r = analyze(run)
    assert r.roofs.where == str(cached) and "measured on NVIDIA A100" in r.roofs.note
    # Given explicitly, the wrong model is an error, not a silent fallback.
    with pytest.raises(UsageError, match="measured on NVIDIA A100"):
        analyze(run, device_file=local)


def test_no_roof_known_says_so(tmp_path: Path) -> None:
    roofs = find_roofs(tmp_path, "NVIDIA A100-SXM4-80GB", "GPU-x")
    assert roofs.source == "none" and roofs.peaks == () and roofs.memory_bytes_per_s is None
    assert "no device file for NVIDIA A100-SXM4-80GB and no datasheet figures: run nsightwrap device" in roofs.where


def test_roofline_survives_the_report_json(example, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "r.json"
    write_report_json(example, p, detail=True)
    back = load_report_json(p)
    assert back.roofs == example.roofs
    for a, b in zip(example.benchmarks, back.benchmarks, strict=True):
        assert b.roofline == replace(a.roofline, extra=b.roofline.extra)
        assert b.roofline.kernels == a.roofline.kernels
