"""ncu parsers on the real H200 captures: .ncu-rep (ncu_report) and raw-page CSV exports."""

from __future__ import annotations

import csv
import gzip
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from nsightwrap.core.errors import InputNotFound, ReportParseError
from nsightwrap.core.units import ghz_text, parse_quantity, unit_factor, us_text
from nsightwrap.parsers.ncu import (
    KERNEL_COLUMNS,
    kernels_by_range,
    nvtx_paths,
    read_ncu,
    read_ncu_csv,
    read_ncu_devices,
    read_ncu_rep,
    short_name,
)

REF = Path(__file__).resolve().parent.parent / "fixtures" / "reference" / "h200-workload"

REP = REF / "workload.ncu-rep.gz"
RAW = REF / "workload_raw.csv"
RAW_BASE = REF / "workload_raw_base.csv"
BENCHES = ("mm_small", "mm_skinny", "mm_large")


@pytest.fixture(scope="module")
def rep() -> pd.DataFrame:
    return read_ncu_rep(REP)


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    return read_ncu_csv(RAW)


@pytest.fixture(scope="module")
def raw_base() -> pd.DataFrame:
    return read_ncu_csv(RAW_BASE)


def _csv_rows(path: Path) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The export read with the csv module alone: (units row, kernel rows)."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return rows[0], rows[1:]


# ---- units ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unit", "factor", "base"),
    [
        ("usecond", 1e3, "ns"), ("us", 1e3, "ns"), ("msecond", 1e6, "ns"), ("s", 1e9, "ns"),
        ("nsecond", 1.0, "ns"), ("Ghz", 1e9, "hz"), ("Mhz", 1e6, "hz"), ("KHz", 1e3, "hz"),
        ("cycle/second", 1.0, "hz"), ("cycle/nsecond", 1e9, "hz"), ("cycle/usecond", 1e6, "hz"),
        ("Kbyte", 1e3, "byte"), ("Mbyte", 1e6, "byte"), ("Gbyte", 1e9, "byte"),
        ("Kbyte/block", 1e3, "byte/block"), ("Gbyte/second", 1e9, "byte/second"),
        ("Tbyte/second", 1e12, "byte/second"), ("%", 1.0, "%"), ("Kinst", 1e3, "inst"),
        ("register/thread", 1.0, "register/thread"), ("SM", 1.0, "SM"), ("MiB", 2.0**20, "byte"),
    ],
)  # fmt: skip
def test_unit_factor(unit: str, factor: float, base: str) -> None:
    got_factor, got_base = unit_factor(unit)
    assert got_factor == pytest.approx(factor, rel=1e-12)
    assert got_base == base


def test_parse_quantity() -> None:
    assert parse_quantity("1980 MHz") == 1.98e9
    assert parse_quantity("3201", "MHz") == 3.201e9
    assert parse_quantity("1,980,000") == 1980000.0
    assert math.isnan(parse_quantity("[N/A]"))
    with pytest.raises(ValueError):
        parse_quantity("PolicySpread")


# ---- the .ncu-rep --------------------------------------------------------------------------


def test_rep_kernels_and_columns(rep: pd.DataFrame) -> None:
    assert len(rep) == 18
    assert list(rep.columns[: len(KERNEL_COLUMNS)]) == list(KERNEL_COLUMNS)
    assert rep["launch_id"].tolist() == list(range(18))
    fill = rep["kernel"].str.contains("FillFunctor")
    nvjet = rep["kernel_short"].str.startswith("nvjet_sm90_")
    assert fill.sum() == 9 and nvjet.sum() == 9
    assert set(rep.loc[fill, "kernel_short"]) == {"vectorized_elementwise_kernel"}
    assert rep["kernel"].iloc[0].startswith("void at::native::vectorized_elementwise_kernel<")
    # flush and matmul alternate: the flush runs before each measured call
    assert fill.tolist() == [True, False] * 9
    assert rep["grid"].iloc[0] == "61440,1,1" and rep["block"].iloc[0] == "128,1,1"
    assert rep["grid"].iloc[1] == "2,64,1" and rep["block"].iloc[1] == "384,1,1"
    assert set(rep["device"]) == {0} and set(rep["context"]) == {1} and set(rep["stream"]) == {7}
    # device attributes live in read_ncu_devices, not on every kernel row
    assert not any(c.startswith("device__attribute_") for c in rep.columns)
    # every other collected metric is there under its ncu name
    for metric in ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "launch__registers_per_thread",
                   "sm__inst_executed_pipe_tensor.sum", "profiler__replayer_passes"):  # fmt: skip
        assert metric in rep.columns
    assert rep["launch__func_cache_config"].iloc[0] == "CachePreferNone"
    assert rep["dram_throughput_pct"].isna().all()  # not collected in this capture


def test_rep_values_in_base_units(rep: pd.DataFrame) -> None:
    first = rep.iloc[1]  # mm_small iter0 matmul
    assert first["duration_ns"] == 13024.0
    assert first["sm_clock_hz"] == pytest.approx(1.782963619e9, rel=1e-9)
    assert first["dram_bytes_read"] == 34095360.0
    assert first["dram_bytes_write"] == 602624.0
    assert first["dram_bytes"] == 34095360.0 + 602624.0
    assert first["sm_throughput_pct"] == pytest.approx(17.10445, abs=1e-5)
    assert first["memory_throughput_pct"] == pytest.approx(55.52192, abs=1e-5)
    assert first["launch__shared_mem_per_block_dynamic"] == 213460.0  # bytes (213.46 Kbyte)
    # cycles / clock reproduces the duration: the clock is per kernel, as measured
    d = rep["sm__cycles_elapsed.max"] / rep["sm_clock_hz"] * 1e9
    assert ((d - rep["duration_ns"]).abs() / rep["duration_ns"]).max() < 0.03
    assert rep["sm_clock_hz"].between(1.3e9, 2.0e9).all()


def test_rep_nvtx_paths(rep: pd.DataFrame) -> None:
    fill = rep["kernel"].str.contains("FillFunctor")
    for b in BENCHES:
        in_bench = rep["nvtx_ranges"].map(lambda r, b=b: b in r)
        assert in_bench.sum() == 6
        mm = rep[in_bench & ~fill]
        # default domain: no prefix; the iteration range is named "<bench>/iter<i>" itself
        assert mm["nvtx_path"].tolist() == [f"{b}/{b}/iter{i}" for i in range(3)]
        assert mm["nvtx_ranges"].tolist() == [(b, f"{b}/{b}/iter{i}") for i in range(3)]
        assert rep.loc[in_bench & fill, "nvtx_path"].tolist() == [b] * 3


def test_rep_known_durations(rep: pd.DataFrame) -> None:
    mm = rep[rep["kernel_short"].str.startswith("nvjet")]
    bench = mm["nvtx_ranges"].map(lambda r: r[0])
    small = mm.loc[bench == "mm_small", "duration_ns"]
    large = mm.loc[bench == "mm_large", "duration_ns"]
    assert len(small) == len(large) == 3
    assert small.between(12_000, 14_000).all()
    assert large.between(270_000, 300_000).all()
    assert mm.loc[bench == "mm_skinny", "duration_ns"].between(25_000, 32_000).all()


def test_a_second_read_reuses_the_unpacked_copy() -> None:
    # The parse speed is benchmarks/analysis_speed.py's to measure; here: a .gz report is
    # unpacked once, and read again from the same copy with the same result.
    from nsightwrap.core.unpack import unpacked

    first = read_ncu_rep(REP)
    copy = unpacked(REP)
    made = copy.stat().st_mtime_ns
    again = read_ncu_rep(REP)
    assert unpacked(REP) == copy and copy.stat().st_mtime_ns == made
    pd.testing.assert_frame_equal(first, again)


def test_devices(rep: pd.DataFrame) -> None:
    for path in (REP, RAW, RAW_BASE):
        dev = read_ncu_devices(path)
        assert len(dev) == 1
        row = dev.iloc[0]
        assert row["device"] == 0
        assert row["device__attribute_display_name"] == "NVIDIA H200"
        assert row["device__attribute_multiprocessor_count"] == 132
        assert row["device__attribute_l2_cache_size"] == 62914560
        assert row["device__attribute_max_gpu_frequency_khz"] == 1980000


# ---- CSV exports against the report --------------------------------------------------------


def test_csv_same_frame_as_rep(rep: pd.DataFrame, raw: pd.DataFrame, raw_base: pd.DataFrame) -> None:
    for df in (raw, raw_base):
        assert list(df.columns) == list(rep.columns)
        for col in ("launch_id", "kernel_short", "grid", "block", "nvtx_path", "nvtx_ranges",
                    "device", "context", "stream"):  # fmt: skip
            assert df[col].tolist() == rep[col].tolist(), col
        # ncu's CLI demangles more tersely than ncu_report; the function is the same
        assert df["kernel"].str.contains("FillFunctor").sum() == 9
        assert df["duration_ns"].tolist() == rep["duration_ns"].tolist()
        assert df["dram_bytes"].tolist() == rep["dram_bytes"].tolist()
    # units as printed: six significant digits (1.782964 Ghz); base units: to the Hz
    pd.testing.assert_series_equal(raw["sm_clock_hz"], rep["sm_clock_hz"], rtol=1e-6)
    pd.testing.assert_series_equal(raw_base["sm_clock_hz"], rep["sm_clock_hz"], rtol=1e-10)
    for col in ("sm_throughput_pct", "memory_throughput_pct"):
        pd.testing.assert_series_equal(raw[col], rep[col], rtol=1e-6)
        pd.testing.assert_series_equal(raw_base[col], rep[col], atol=0.005, rtol=0)  # 2 decimals
    # every numeric metric agrees within printing precision: six decimals of the printed unit
    units, _ = _csv_rows(RAW)
    num = [c for c in rep.columns[len(KERNEL_COLUMNS) :] if pd.api.types.is_float_dtype(rep[c])]
    assert len(num) > 80
    for col in num:
        last_digit = unit_factor(units[col])[0] * 1e-6
        pd.testing.assert_series_equal(raw[col], rep[col], rtol=2e-6, atol=max(5e-3, last_digit),
                                       check_dtype=False)  # fmt: skip


def test_csv_values_checked_with_csv_module(raw: pd.DataFrame, raw_base: pd.DataFrame) -> None:
    units, rows = _csv_rows(RAW)
    assert units["gpu__time_duration.sum"] == "us"
    assert units["sm__cycles_elapsed.avg.per_second"] == "Ghz"
    assert units["dram__bytes_read.sum"] == "Mbyte"
    assert len(rows) == 18
    for row, (_, k) in zip(rows, raw.iterrows(), strict=True):
        assert k["duration_ns"] == pytest.approx(float(row["gpu__time_duration.sum"]) * 1e3, abs=0.5)
        assert k["sm_clock_hz"] == pytest.approx(float(row["sm__cycles_elapsed.avg.per_second"]) * 1e9)
        assert k["dram_bytes_read"] == pytest.approx(float(row["dram__bytes_read.sum"]) * 1e6, abs=1)
    base_units, base_rows = _csv_rows(RAW_BASE)
    assert base_units["gpu__time_duration.sum"] == "ns"
    assert base_units["sm__cycles_elapsed.avg.per_second"] == "hz"
    for row, (_, k) in zip(base_rows, raw_base.iterrows(), strict=True):
        assert k["duration_ns"] == float(row["gpu__time_duration.sum"].replace(",", ""))
        assert k["launch__grid_size"] == float(row["launch__grid_size"].replace(",", ""))


def test_read_ncu_dispatches_on_suffix(rep: pd.DataFrame) -> None:
    assert read_ncu(RAW)["duration_ns"].tolist() == rep["duration_ns"].tolist()
    assert read_ncu(REP)["nvtx_path"].tolist() == rep["nvtx_path"].tolist()


# ---- NVTX paths and names ------------------------------------------------------------------


def test_nvtx_paths_domains_and_preference() -> None:
    path, ranges = nvtx_paths(
        {"<default domain>": ["outer", "a", "b"], "nsightwrap": ["mm", "iter0"]},
        {"other": ["phase1"]},
    )
    assert path == "nsightwrap:mm/iter0"  # the nsightwrap domain wins over a deeper stack
    assert ranges == ("outer", "outer/a", "outer/a/b", "nsightwrap:mm", "nsightwrap:mm/iter0",
                      "other:phase1")  # fmt: skip
    assert nvtx_paths({"x": ["a"], "y": ["b", "c"]}, {})[0] == "y:b/c"  # else the deepest
    assert nvtx_paths({}, {"nsightwrap": ["s"], "d": ["t"]}) == ("nsightwrap:s", ("nsightwrap:s", "d:t"))
    assert nvtx_paths({}, {}) == (None, ())


def test_short_name() -> None:
    assert short_name("void at::vectorized_elementwise_kernel<4, at::FillFunctor<unsigned char>, "
                      "std::array<char *, 1>>(int, T2, T3)") == "vectorized_elementwise_kernel"  # fmt: skip
    assert short_name("nvjet_sm90_tst_64x32_64x16_1x2_h_bz_TNT") == "nvjet_sm90_tst_64x32_64x16_1x2_h_bz_TNT"
    assert short_name("void (anonymous namespace)::k<(int)1>(float *)") == "k"
    assert short_name("cutlass::Kernel2<cutlass::gemm::Foo<1, 2>>") == "Kernel2"


def test_kernels_by_range(rep: pd.DataFrame) -> None:
    by = kernels_by_range(rep)
    assert list(by.columns) == ["range", "kernels", "unique_kernels", "gpu_time_ns", "instances",
                                "first_launch_id"]  # fmt: skip
    assert len(by) == 12
    top = by.set_index("range")
    for b in BENCHES:
        assert top.loc[b, "kernels"] == 6 and top.loc[b, "unique_kernels"] == 2
        assert top.loc[b, "instances"] == 1
        in_b = rep["nvtx_ranges"].map(lambda r, b=b: b in r)
        assert top.loc[b, "gpu_time_ns"] == rep.loc[in_b, "duration_ns"].sum()
        for i in range(3):
            assert top.loc[f"{b}/{b}/iter{i}", "kernels"] == 1
    assert top.loc["mm_small/mm_small/iter0", "gpu_time_ns"] == 13024.0
    assert by["range"].iloc[0] == "mm_small" and by["first_launch_id"].is_monotonic_increasing


def test_kernels_by_range_counts_instances(rep: pd.DataFrame) -> None:
    # a range re-entered after launches outside it counts again
    k = rep.head(4).copy()
    k["nvtx_ranges"] = [("step",), (), ("step",), ("step",)]
    by = kernels_by_range(k).set_index("range")
    assert by.loc["step", "instances"] == 2 and by.loc["step", "kernels"] == 3


# ---- errors --------------------------------------------------------------------------------


def test_missing_files(tmp_path: Path) -> None:
    with pytest.raises(InputNotFound, match="no such Nsight Compute report"):
        read_ncu_rep(tmp_path / "nope.ncu-rep")
    with pytest.raises(InputNotFound):
        read_ncu_csv(tmp_path / "nope.csv")


def test_not_a_report(tmp_path: Path) -> None:
    bad = tmp_path / "x.ncu-rep"
    bad.write_text("hello\n")
    with pytest.raises(ReportParseError, match=r"x\.ncu-rep: not an Nsight Compute report"):
        read_ncu_rep(bad)
    with pytest.raises(ReportParseError, match="not an Nsight Compute report"):
        read_ncu_rep(RAW)


def test_truncated_report(tmp_path: Path) -> None:
    data = gzip.decompress(REP.read_bytes())
    for n in (100_000, 2_300_000, len(data) - 1):
        cut = tmp_path / f"cut{n}.ncu-rep"
        cut.write_bytes(data[:n])
        with pytest.raises(ReportParseError, match=f"cut{n}.ncu-rep: Nsight Compute report is truncated"):
            read_ncu_rep(cut)


def test_corrupt_report(tmp_path: Path) -> None:
    data = bytearray(gzip.decompress(REP.read_bytes()))
    bad = tmp_path / "flipped.ncu-rep"
    # bytes flipped inside the first kernel's result payload (it starts at 2183028 + header)
    flipped = bytearray(data)
    for i in range(2_190_000, 2_190_400, 7):
        flipped[i] ^= 0xFF
    bad.write_bytes(flipped)
    with pytest.raises(ReportParseError, match="flipped.ncu-rep: Nsight Compute report is corrupt"):
        read_ncu_rep(bad)
    # bytes flipped all over, block headers included
    everywhere = bytearray(data)
    for i in range(2000, len(everywhere), 997):
        everywhere[i] ^= 0xFF
    bad.write_bytes(everywhere)
    with pytest.raises(ReportParseError, match="truncated or corrupt"):
        read_ncu_rep(bad)
    # a damaged module payload (before any kernel) makes ncu_report drop every kernel
    early = bytearray(data)
    early[200] ^= 0xFF
    bad.write_bytes(early)
    with pytest.raises(ReportParseError, match="holds 18 profiled kernels, only 0"):
        read_ncu_rep(bad)


def test_report_without_kernels(tmp_path: Path) -> None:
    # The report as ncu has written it before the first kernel: the session block alone.
    empty = tmp_path / "empty.ncu-rep"
    empty.write_bytes(gzip.decompress(REP.read_bytes())[:145])
    with pytest.raises(
        ReportParseError, match=r"no kernels were profiled \(NVTX filters matched nothing\?\)"
    ):
        read_ncu_rep(empty)


def test_csv_errors(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ReportParseError, match="wrong.csv: not an ncu raw-page CSV"):
        read_ncu_csv(wrong)
    with pytest.raises(ReportParseError, match="this is a --page details export"):
        read_ncu_csv(REF / "workload_details.csv")
    with pytest.raises(ReportParseError, match="not a text file"):
        read_ncu_csv(REP)
    header_only = tmp_path / "header.csv"
    header_only.write_text("\n".join(RAW.read_text().splitlines()[:2]) + "\n")
    with pytest.raises(ReportParseError, match="no kernels were profiled"):
        read_ncu_csv(header_only)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ReportParseError, match="empty file"):
        read_ncu_csv(empty)


def test_csv_with_profiler_log_lines(tmp_path: Path, raw_base: pd.DataFrame) -> None:
    # `ncu --csv` without --import prints its ==PROF== lines into the same stream
    mixed = tmp_path / "mixed.csv"
    mixed.write_text("==PROF== Connected to process 1\n" + RAW_BASE.read_text() + "==PROF== Disconnected\n")
    assert read_ncu_csv(mixed)["duration_ns"].tolist() == raw_base["duration_ns"].tolist()


# ---- GPU: a fresh capture with the timer's domain and a start/end range ---------------------

_GPU_SCRIPT = """
import nvtx, torch
x = torch.randn(256, 256, device="cuda")
torch.cuda.synchronize()
h = nvtx.start_range("phase", domain="nsightwrap")
with nvtx.annotate("bench", domain="nsightwrap"):
    with nvtx.annotate("iter0", domain="nsightwrap"):
        y = x @ x
nvtx.end_range(h)
torch.cuda.synchronize()
"""


@pytest.mark.gpu
def test_gpu_capture_rep_and_csv_agree(tmp_path: Path) -> None:
    """ncu on this machine: the nsightwrap domain, nesting and start/end ranges in both readers."""
    ncu = shutil.which("ncu")
    if ncu is None:
        pytest.fail("ncu is not on PATH")
    script = tmp_path / "s.py"
    script.write_text(_GPU_SCRIPT)
    rep_path = tmp_path / "s.ncu-rep"
    subprocess.run([ncu, "--nvtx", "--clock-control", "none", "--metrics", "gpu__time_duration.sum",
                    "-o", str(rep_path.with_suffix("")), "-f", sys.executable, str(script)],
                   check=True, capture_output=True, env=os.environ.copy(), timeout=300)  # fmt: skip
    csv_path = tmp_path / "s.csv"
    with csv_path.open("w") as out:
        subprocess.run([ncu, "--import", str(rep_path), "--csv", "--page", "raw"], check=True,
                       stdout=out, timeout=120)  # fmt: skip
    a, b = read_ncu_rep(rep_path), read_ncu_csv(csv_path)
    gemm = a[a["nvtx_path"] == "nsightwrap:bench/iter0"]
    assert len(gemm) >= 1
    assert "nsightwrap:phase" in gemm["nvtx_ranges"].iloc[0]
    assert b["nvtx_path"].tolist() == a["nvtx_path"].tolist()
    assert b["nvtx_ranges"].tolist() == a["nvtx_ranges"].tolist()
    assert b["duration_ns"].tolist() == a["duration_ns"].tolist()
    # a filter that matches nothing: ncu either writes no report or one without kernels
    none_path = tmp_path / "none.ncu-rep"
    subprocess.run([ncu, "--nvtx", "--nvtx-include", "nsightwrap@nomatch/", "-o",
                    str(none_path.with_suffix("")), "-f", sys.executable, str(script)],
                   capture_output=True, timeout=300)  # fmt: skip
    if none_path.exists():
        with pytest.raises(ReportParseError, match="no kernels were profiled"):
            read_ncu_rep(none_path)


def test_the_analysis_speaks_in_us_and_ghz() -> None:
    assert us_text(17_310.0) == "17.31 us" and us_text(None) == "n/a"
    assert ghz_text(1.98e9) == "1.980 GHz" and ghz_text(1.98e9, 2, "?") == "1.98 GHz" and ghz_text(None, 2, "?") == "?"
