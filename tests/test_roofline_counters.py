"""The roofline counters on a real H200 capture (fixtures/device/roofline-run: plain + ncu of
fixtures/device/roofline_bench.py with the tensor-op and FP32 instruction counters): the FLOPs ncu
counts are the FLOPs the benchmarks did, and the report holds each against its own roof."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.roofline import kernel_flops
from nsightwrap.parsers.ncu import read_ncu_rep

RUN = Path(__file__).resolve().parent.parent / "fixtures" / "device" / "roofline-run"
#: The ceilings nsightwrap device measured on an H200 the same day (another H200 than the capture's).
H200 = RUN.parent / "h200.json"
#: Work given to nsightwrap.bench in roofline_bench.py: 2*M*N*K.
GEMM_FLOPS = {"gemm_bf16": 2 * 4096**3, "gemm_fp16": 2 * 4096**3, "gemm_tf32": 2 * 2048**3,
              "gemm_fp8": 2 * 4096**3, "gemm_int8": 2 * 4096**3}  # fmt: skip
GEMM_ROOF = {"gemm_bf16": "bf16", "gemm_fp16": "fp16", "gemm_tf32": "tf32", "gemm_fp8": "fp8", "gemm_int8": "int8"}


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def kernels():  # type: ignore[no-untyped-def]
    return read_ncu_rep(RUN / "ncu" / "report.ncu-rep.gz")


@pytest.fixture(scope="module")
def result():  # type: ignore[no-untyped-def]
    return analyze(RUN, device_file=H200)


def _row(kernels, bench: str):  # type: ignore[no-untyped-def]
    rows = kernels[kernels["nvtx_path"] == f"nsightwrap:{bench}/iter0"]
    assert len(rows) == 1, bench
    return rows.iloc[0].to_dict()


@pytest.mark.parametrize("bench", sorted(GEMM_FLOPS))
def test_tensor_ops_counted_are_the_gemm_flops(kernels, bench: str) -> None:  # type: ignore[no-untyped-def]
    flops, kinds, note = kernel_flops(_row(kernels, bench))
    assert note == ""
    # One op of sm__ops_path_tensor_src_* is one FLOP: the count is 2*M*N*K exactly.
    assert kinds[f"tensor_{GEMM_ROOF[bench]}"] == GEMM_FLOPS[bench]
    # Plus the epilogue's SIMT FLOPs (fp8: its scaling, 0.4 %); the tensor count alone is exact.
    assert flops == pytest.approx(GEMM_FLOPS[bench], rel=1e-2) and flops >= GEMM_FLOPS[bench]


def test_fma_kernel_flops_from_the_instruction_counters(kernels) -> None:  # type: ignore[no-untyped-def]
    row = _row(kernels, "fma_fp32")
    flops, kinds, _ = kernel_flops(row)
    ffma = row["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"]
    fadd = row["sm__sass_thread_inst_executed_op_fadd_pred_on.sum"]
    fmul = row["sm__sass_thread_inst_executed_op_fmul_pred_on.sum"]
    assert kinds["fp32"] == 2 * ffma + fadd + fmul and flops == sum(kinds.values())
    # 8 chains x 1024 elements x 264 programs x 1024 trips x 2 FLOPs, given to bench:
    assert 2 * ffma == pytest.approx(2 * 8 * 1024 * 264 * 1024, rel=2e-3)


def test_every_gemm_held_against_its_own_measured_roof(result) -> None:  # type: ignore[no-untyped-def]
    assert result.roofs.source == "measured" and result.roofs.where == str(H200)
    for b in result.benchmarks:
        r = b.roofline
        if b.name in GEMM_ROOF:
            assert r.compute_roof == GEMM_ROOF[b.name], b.name
            assert r.roof_reason.endswith("counted by ncu")
            assert r.bound == "compute" and 50 < r.roof_pct <= 101, (b.name, r.roof_pct)
            assert r.extra["ncu_flops"] == pytest.approx(GEMM_FLOPS[b.name], rel=1e-2)
    add = next(b for b in result.benchmarks if b.name == "add_fp32").roofline
    assert add.bound == "memory" and add.flops_source == "ncu" and add.bytes_source == "bench"
    assert 80 < add.roof_pct <= 101
    soft = next(b for b in result.benchmarks if b.name == "softmax_bf16").roofline
    assert (soft.flops_source, soft.bytes_source) == ("ncu", "ncu dram") and soft.bound == "memory"
