"""SM-clock normalization: compute-bound kernels follow the clock, DRAM-bound ones do not."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from nsightwrap.analysis.clocks import (
    classify,
    normalize_kernels,
    parse_clock_ref,
    plain_clock_from_samples,
    reference_clock,
)
from nsightwrap.analysis.model import ClockModel
from nsightwrap.core.errors import UsageError
from nsightwrap.parsers.ncu import read_ncu_rep
from nsightwrap.parsers.smi import read_smi_samples


def _rows(duration_ns: float, clock_hz: float, sm: float, mem: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "duration_ns": [duration_ns],
            "sm_clock_hz": [clock_hz],
            "sm_throughput_pct": [sm],
            "memory_throughput_pct": [mem],
            "dram_throughput_pct": [math.nan],
        }
    )


def test_compute_bound_kernel_is_rescaled_by_cycles() -> None:
    out = normalize_kernels(_rows(132_000.0, 1.5e9, sm=90.0, mem=40.0), 1.98e9)
    assert out["clock_model"].iloc[0] == "compute"
    assert out["cycles"].iloc[0] == pytest.approx(198_000.0)  # 132 us * 1.5 GHz
    assert out["normalized_ns"].iloc[0] == pytest.approx(100_000.0)  # 198000 cycles / 1.98 GHz


def test_memory_bound_kernel_is_not_rescaled() -> None:
    out = normalize_kernels(_rows(28_704.0, 1.825e9, sm=5.6, mem=73.9), 1.98e9)
    assert out["clock_model"].iloc[0] == "memory"
    assert out["normalized_ns"].iloc[0] == 28_704.0


def test_classify_thresholds_and_missing_counters() -> None:
    assert classify(84.0, 86.0) is ClockModel.COMPUTE  # large GEMM: both saturated
    assert classify(17.1, 55.5) is ClockModel.MEMORY  # 38 points apart
    assert classify(50.0, 65.0) is ClockModel.COMPUTE  # 15 points: below the margin
    assert classify(10.0, math.nan, 80.0) is ClockModel.MEMORY  # DRAM % alone is enough
    assert classify(math.nan, 50.0) is ClockModel.ASSUMED_COMPUTE


def test_reference_capture_models(ref_dir) -> None:
    k = read_ncu_rep(ref_dir / "workload.ncu-rep")
    out = normalize_kernels(k, 1.98e9)
    by_kernel = dict(zip(out["kernel_short"], out["clock_model"], strict=True))
    assert by_kernel["nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT"] == "compute"
    assert by_kernel["nvjet_sm90_tst_192x8_64x8_4x1_v_bz_TNT"] == "memory"
    large = out[out["kernel_short"].str.contains("320x128")]
    # 275.3 us at 1.640 GHz -> 228.0 us at 1.98 GHz
    assert large["normalized_ns"].iloc[0] == pytest.approx(275_296 * 1.639968e9 / 1.98e9, rel=1e-5)


def test_plain_clock_ignores_idle_samples(ref_dir) -> None:
    samples = read_smi_samples(ref_dir / "smi_samples.csv")
    # 100 of the 129 samples are idle at 345-405 MHz; the busy ones read 1980 MHz.
    assert samples["sm_clock_hz"].median() < 1e9
    assert plain_clock_from_samples(samples) == 1.98e9


def test_parse_clock_ref() -> None:
    assert parse_clock_ref("plain") == "plain"
    assert parse_clock_ref("BOOST") == "boost"
    assert parse_clock_ref("1980MHz") == pytest.approx(1.98e9)
    assert parse_clock_ref("1.5e9") == pytest.approx(1.5e9)
    assert parse_clock_ref("1.6 GHz") == pytest.approx(1.6e9)
    with pytest.raises(UsageError, match="neither plain"):
        parse_clock_ref("fast")
    with pytest.raises(UsageError, match="below 1 MHz"):
        parse_clock_ref("1980")
    assert reference_clock("boost", plain_hz=1.7e9, boost_hz=1.98e9, base_hz=1.6e9) == (1.98e9, "boost")
    assert reference_clock("base", plain_hz=1.7e9, boost_hz=1.98e9, base_hz=1.6e9) == (1.6e9, "base")
    assert reference_clock(1.5e9, plain_hz=1.7e9, boost_hz=None, base_hz=None) == (1.5e9, "given")


def test_clock_ref_forms_and_a_missing_boost_clock() -> None:
    from nsightwrap.analysis.clocks import parse_clock_ref, reference_clock
    from nsightwrap.core.errors import UsageError

    assert parse_clock_ref("1.98e+9") == 1.98e9
    assert parse_clock_ref("1980MHz") == 1.98e9
    assert parse_clock_ref(".5GHz") == 0.5e9
    for bad in ("", ".", "e9", "fast", "1980"):  # 1980 Hz is below 1 MHz: a unit was forgotten
        with pytest.raises(UsageError):
            parse_clock_ref(bad)
    assert reference_clock("boost", plain_hz=1.6e9, boost_hz=1.98e9, base_hz=None) == (1.98e9, "boost")
    with pytest.raises(UsageError, match="no base clock"):
        reference_clock("base", plain_hz=1.6e9, boost_hz=1.98e9, base_hz=None)
