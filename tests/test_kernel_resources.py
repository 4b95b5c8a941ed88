"""A benchmark's ncu kernels must be the ones nsys timed in it, down to their resources: registers
per thread and static and dynamic shared memory per block (nsightwrap/analysis/autotuned.py,
``resource_mismatch``). The same function at the same grid and block built otherwise is another
kernel, and the benchmark gets no ncu figure, the reason naming the field and both values.

The runs are the real H200 runs under fixtures/; the mismatch is made by editing a copy of a run's
nsys export (an SQL UPDATE of its kernel table), as a kernel rebuilt between the passes would read."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

import pytest

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import BenchmarkResult, RunResult, Verdict
from nsightwrap.parsers.nsys import read_nsys

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RUN = FIXTURES / "runs" / "h200-example"
#: ``softmax_mlp`` of h200-example is the only benchmark that runs ``cunn_SoftMaxForwardReg``
#: (grid 4096, block 1024, 30 registers per thread, 128 bytes of dynamic shared memory).
BENCH, KERNEL = "softmax_mlp", "cunn_SoftMaxForwardReg"
#: Every shipped run with an ncu and an nsys pass of its own iterations.
SHIPPED = [
    FIXTURES / "runs" / n for n in ("h200-blog", "h200-example", "h200-mixed", "h200-nvtx", "h200-shards",
                                    "h200-sweep", "h200-timer", "h200-worker")
] + [FIXTURES / "captures" / "causes" / "run"]  # fmt: skip
REASON = "than nsys timed here, at the same grid and block"


def _edited(tmp_path: Path, sql: str) -> Path:
    """A copy of ``RUN`` whose nsys export had ``sql`` run on it."""
    dst = tmp_path / "run"
    shutil.copytree(RUN, dst, ignore=shutil.ignore_patterns("analysis"))
    gz = dst / "nsys" / "report.sqlite.gz"
    db = tmp_path / "report.sqlite"
    db.write_bytes(gzip.decompress(gz.read_bytes()))
    with sqlite3.connect(db) as con:
        assert con.execute(sql).rowcount != 0
    gz.write_bytes(gzip.compress(db.read_bytes()))
    return dst


def _kernel_rows(column: str, value: int) -> str:
    return (
        f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET {column} = {value} "
        f"WHERE shortName = (SELECT id FROM StringIds WHERE value = '{KERNEL}')"
    )


def _bench(result: RunResult, name: str = BENCH) -> BenchmarkResult:
    return next(b for b in result.benchmarks if b.name == name)


@pytest.fixture(scope="module")
def bare() -> RunResult:
    return analyze(RUN)


def test_the_nsys_export_reads_each_kernels_resources() -> None:
    ops = read_nsys(RUN / "nsys" / "report.sqlite.gz").ops
    k = ops[ops["short_name"] == KERNEL]
    assert len(k) and set(k["registers"]) == {30} and set(k["shared_dynamic_bytes"]) == {128}
    assert set(k["shared_static_bytes"]) == {0}
    gemm = ops[ops["short_name"] == "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT"]
    assert set(gemm["registers"]) == {168} and set(gemm["shared_dynamic_bytes"]) == {188636}
    assert ops.loc[ops["kind"] != "kernel", "registers"].isna().all()  # copies and memsets have none


def test_other_registers_under_nsys_is_no_ncu_naming_both(tmp_path: Path, bare: RunResult) -> None:
    assert _bench(bare).verdict is Verdict.OK and _bench(bare).ncu is not None
    result = analyze(_edited(tmp_path, _kernel_rows("registersPerThread", 40)))
    b = _bench(result)
    assert b.verdict is Verdict.NO_NCU and b.ncu is None and b.ratio is None
    why = b.notes[0]
    assert why.startswith(f"no ncu: the ncu pass ran another config of {KERNEL} {REASON}"), why
    assert "(registers per thread 30 vs 40 under nsys)" in why
    assert "a ratio between two different kernels would mean nothing" in why
    # The other benchmarks are untouched, and nsys's own figure of this one stays.
    assert b.nsys is not None
    assert {x.name: x.verdict for x in result.benchmarks if x.name != BENCH} == {
        x.name: x.verdict for x in bare.benchmarks if x.name != BENCH
    }


def test_other_dynamic_shared_memory_is_named_too(tmp_path: Path) -> None:
    b = _bench(analyze(_edited(tmp_path, _kernel_rows("dynamicSharedMemory", 256))))
    assert b.verdict is Verdict.NO_NCU
    assert "(dynamic shared memory per block (bytes) 128 vs 256 under nsys)" in b.notes[0], b.notes[0]


def test_an_export_without_the_columns_is_not_judged(tmp_path: Path, bare: RunResult) -> None:
    # An export whose kernel table does not record the resources (older nsys) compares nothing.
    b = _bench(analyze(_edited(tmp_path, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN registersPerThread")))
    assert (b.verdict, b.ratio) == (_bench(bare).verdict, _bench(bare).ratio)


@pytest.mark.parametrize("run", SHIPPED, ids=lambda p: p.parent.name if p.name == "run" else p.name)
def test_every_shipped_run_passes_the_check(run: Path) -> None:
    result = analyze(run)
    assert not [b.name for b in result.benchmarks if any(REASON in n for n in b.notes)]
