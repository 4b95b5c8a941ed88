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
    k = read_ncu_rep(ref_dir / "workload.ncu-rep.gz")
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


# ------------------------------------------------------------------ measured clock elasticity


def test_elasticity_from_two_clock_duration_pairs() -> None:
    from nsightwrap.analysis.clocks import measured_elasticity

    # a GEMM whose cycles are fixed: 1.6 -> 1.35 GHz takes it 178 -> 211 us: e = 1
    assert measured_elasticity(178_000.0, 1.60e9, 178_000.0 * 1.60 / 1.35, 1.35e9) == pytest.approx(1.0)
    # a DRAM-bound add barely moves: 44.6 -> 45.4 us over 1.975 -> 1.41 GHz: e ~ 0.05
    e = measured_elasticity(44_600.0, 1.975e9, 45_400.0, 1.41e9)
    assert e == pytest.approx(math.log(45_400 / 44_600) / math.log(1.975 / 1.41))
    assert 0.0 < e < 0.1
    # clocks 2% apart say nothing; missing or non-positive values give nothing
    assert measured_elasticity(100.0, 1.98e9, 101.0, 1.94e9) is None
    assert measured_elasticity(None, 1.98e9, 101.0, 1.4e9) is None
    assert measured_elasticity(100.0, 1.98e9, 0.0, 1.4e9) is None


def test_normalization_follows_the_measured_elasticity() -> None:
    rows = pd.DataFrame(
        {
            "duration_ns": [40_000.0, 40_000.0, 40_000.0, 40_000.0],
            "sm_clock_hz": [1.6e9] * 4,
            "sm_throughput_pct": [90.0, 5.0, 90.0, 5.0],
            "memory_throughput_pct": [30.0, 80.0, 30.0, 80.0],
            "elasticity": [0.8, 0.1, 1.07, math.nan],
        }
    )
    out = normalize_kernels(rows, 2.0e9)
    # t(f) = t_k * (f_k / f) ** e, e clamped to [0, 1]; the last kernel keeps the heuristic (DRAM: 0)
    assert out["normalized_ns"].tolist() == pytest.approx(
        [40_000 * 0.8**0.8, 40_000 * 0.8**0.1, 40_000 * 0.8, 40_000.0]
    )
    assert out["elasticity_source"].tolist() == ["measured", "measured", "measured", "heuristic"]
    assert out["elasticity"].tolist()[2] == pytest.approx(1.07)  # the raw value is kept
    assert out["clock_model"].tolist() == ["compute", "memory", "compute", "memory"]


def test_kernels_pair_with_their_twins_by_range_and_launch_order(ref_dir) -> None:
    """The real reference report against itself with the clock lowered by hand on one range only:
    kernels of that range get e, the rest (clocks unchanged, or no twin) keep the heuristic."""
    from nsightwrap.analysis.clocks import attach_base

    k = read_ncu_rep(ref_dir / "workload.ncu-rep.gz")
    base = k.copy()
    mine = base["nvtx_path"] == "mm_large/mm_large/iter1"
    base.loc[mine, "sm_clock_hz"] = base.loc[mine, "sm_clock_hz"] * 0.8
    base.loc[mine, "duration_ns"] = base.loc[mine, "duration_ns"] / 0.8
    base = base[base["nvtx_path"] != "mm_small/mm_small/iter2"]  # no twin for this one
    out, measured = attach_base(k, base)
    assert measured == int(mine.sum()) == 1
    row = out[k["nvtx_path"] == "mm_large/mm_large/iter1"].iloc[0]
    assert row["elasticity"] == pytest.approx(1.0) and row["elasticity_source"] == "measured"
    assert row["base_sm_clock_hz"] == pytest.approx(row["sm_clock_hz"] * 0.8)
    lonely = out[k["nvtx_path"] == "mm_small/mm_small/iter2"].iloc[0]
    assert math.isnan(lonely["base_duration_ns"]) and lonely["elasticity_source"] == "heuristic"
    same = out[k["nvtx_path"] == "mm_skinny/mm_skinny/iter0"].iloc[0]
    assert same["base_duration_ns"] == same["duration_ns"] and math.isnan(same["elasticity"])
    # a kernel of another name at the same position is no twin
    renamed = base.assign(kernel="other_kernel")
    assert attach_base(k, renamed)[1] == 0
    assert attach_base(k, None)[1] == 0


def test_durations_come_from_the_duration_pass_where_a_kernel_has_its_twin(ref_dir) -> None:
    """The duration pass (ncu with the duration and SM clock only) gives each kernel its duration
    and clock; the ncu pass's own stay beside them; a kernel without a twin keeps the ncu pass's."""
    from nsightwrap.analysis.clocks import DURATION_SOURCES, attach_durations

    k = read_ncu_rep(ref_dir / "workload.ncu-rep.gz")
    light = k[["nvtx_path", "launch_id", "kernel", "duration_ns", "sm_clock_hz"]].copy()
    light["duration_ns"] = light["duration_ns"] * 0.95  # as if the replay had read 5% long
    light["sm_clock_hz"] = light["sm_clock_hz"] * 1.01
    lonely = k["nvtx_path"] == "mm_small/mm_small/iter2"
    light = light[~lonely]
    out, taken = attach_durations(k, light)
    assert taken == int((~lonely).sum()) and taken > 0
    got = out[~lonely]
    assert (got["duration_source"] == DURATION_SOURCES[0]).all()
    assert got["duration_ns"].to_numpy() == pytest.approx(0.95 * k.loc[~lonely, "duration_ns"].to_numpy())
    assert got["sm_clock_hz"].to_numpy() == pytest.approx(1.01 * k.loc[~lonely, "sm_clock_hz"].to_numpy())
    assert got["counters_duration_ns"].to_numpy() == pytest.approx(k.loc[~lonely, "duration_ns"].to_numpy())
    kept = out[lonely]
    assert (kept["duration_source"] == DURATION_SOURCES[1]).all()
    assert kept["duration_ns"].tolist() == k.loc[lonely, "duration_ns"].tolist()
    # a kernel of another name at the same position is no twin; no pass, nothing taken
    assert attach_durations(k, light.assign(kernel="other_kernel"))[1] == 0
    none, n = attach_durations(k, None)
    assert n == 0 and none["duration_ns"].tolist() == k["duration_ns"].tolist()
    assert (none["duration_source"] == DURATION_SOURCES[1]).all()


# ------------------------------------------------------------------ the clock-sweep pass of profile


def test_base_pass_argv_keeps_the_filter_and_the_users_ncu_arguments() -> None:
    from pathlib import Path

    from nsightwrap.run.clocksweep import BASE_METRICS, base_argv, clock_trouble, duration_argv

    ncu = ["/x/ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "regex:nsightwrap@.*/iter[0-9]+/",
           "--set", "full", "--metrics", "a,b", "-o", "/r/ncu/report", "-f", "--cache-control", "none",
           "python3", "bench.py", "-o", "x"]  # fmt: skip
    got = base_argv(ncu, Path("/r/ncu-base/report"))
    assert got == [
        "/x/ncu", "--clock-control", "base", "--nvtx", "--nvtx-include", "regex:nsightwrap@.*/iter[0-9]+/",
        "--metrics", ",".join(BASE_METRICS), "-o", "/r/ncu-base/report", "-f", "--cache-control", "none",
        "python3", "bench.py", "-o", "x",  # the target's own "-o" is not ncu's
    ]  # fmt: skip
    # the duration pass: the same at --clock-control none
    assert duration_argv(ncu, Path("/r/ncu-duration/report")) == [
        *got[:2], "none", *got[3:9], "/r/ncu-duration/report", *got[10:]
    ]  # fmt: skip
    # the user chose the clock control in --ncu-args: no sweep
    assert base_argv([*ncu[:13], "--clock-control", "base", *ncu[13:]], Path("/r")) is None
    assert duration_argv([*ncu[:13], "--clock-control", "base", *ncu[13:]], Path("/r")) is None
    assert clock_trouble("==PROF== Connected\n==ERROR== Failed to lock clocks (permission)\n") == (
        "==ERROR== Failed to lock clocks (permission)"
    )
    assert clock_trouble("==WARNING== Note: Running with unmodified GPU clocks.") is None


def _profile(capsys, monkeypatch, tmp_path, *args, mode=""):
    from fake_tools.harness import TARGET, profile, use_fakes

    log = use_fakes(monkeypatch, tmp_path)
    if mode:
        monkeypatch.setenv("FAKE_TOOLS_MODE", mode)
    # Both sweep passes in every run: these tests are about what each does (by default each runs
    # only where it can move an answer: tests/test_profile_basepass.py).
    sweep = ("--duration-pass", "always", "--base-pass", "always")
    return profile(capsys, "-o", "run", "--passes", "plain,ncu", *sweep, *args, str(TARGET)), log


def test_profile_measures_elasticity_from_the_real_base_clock_report(tmp_path, monkeypatch, capsys) -> None:
    """The fake ncu writes the reference workload's real H200 reports: at --clock-control none and,
    for the sweep, with the duration and SM clock only at none (the duration pass) and at base.
    Every kernel takes its duration from the duration pass and gets its measured e."""
    from fake_tools.harness import manifest, passes, tool_calls

    from nsightwrap.analysis.load import analyze

    r, log = _profile(capsys, monkeypatch, tmp_path)
    assert r.code == 0, r.err
    m = manifest(tmp_path / "run")
    assert [p["name"] for p in m["passes"]] == ["plain", "ncu", "ncu-duration", "ncu-base"]
    for name in ("ncu-duration", "ncu-base"):
        sweep = passes(m)[name]
        assert sweep["status"] == "ok" and sweep["env"]["NSIGHTWRAP_PASS"] == "ncu"
        assert f"{name}/report.ncu-rep" in sweep["files"] and f"{name} pass: ok" in r.err
    assert m["settings"]["clock_sweep"] is True
    calls = [c for c in tool_calls(log) if c[0] == "ncu" and "--version" not in c]
    assert [c[2] for c in calls] == ["none", "none", "base"]
    metrics = [c[c.index("--metrics") + 1] for c in calls]
    assert metrics[1] == metrics[2] == "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second" != metrics[0]
    result = analyze(tmp_path / "run")
    kernels = [k for b in result.benchmarks if b.ncu for k in b.ncu.kernels]
    assert kernels and all(k.elasticity_source == "measured" for k in kernels)
    # each duration is the duration pass's reading of that kernel; the ncu pass's is kept beside it
    light = read_ncu_rep(tmp_path / "run" / "ncu-duration" / "report.ncu-rep")
    full = read_ncu_rep(tmp_path / "run" / "ncu" / "report.ncu-rep")
    assert all(k.duration_source == "duration pass" for k in kernels)
    assert {k.duration_ns for k in kernels} <= set(light["duration_ns"])
    assert {k.counters_duration_ns for k in kernels} <= set(full["duration_ns"])
    assert any(n.startswith("ncu durations from the duration pass") for n in result.notes)
    assert all(k.base_sm_clock_hz is not None and k.base_sm_clock_hz < k.sm_clock_hz for k in kernels)  # type: ignore[operator]
    by = {b.name: [k.elasticity for k in b.ncu.kernels] for b in result.benchmarks if b.ncu}
    assert all(e is not None and e > 0.8 for e in by["mm_large"])  # compute-bound GEMM follows the clock
    assert all(e is not None and e < 0.3 for e in by["mm_skinny"])  # the memory-bound GEMV barely does
    assert not any("clock-sweep" in n or "clock elasticit" in n for n in result.notes)


def test_no_clock_sweep_skips_the_pass_and_says_the_elasticities_are_guesses(tmp_path, monkeypatch, capsys) -> None:
    from fake_tools.harness import manifest, passes, tool_calls

    from nsightwrap.analysis.load import analyze

    r, log = _profile(capsys, monkeypatch, tmp_path, "--no-clock-sweep")
    assert r.code == 0, r.err
    for name in ("ncu-duration", "ncu-base"):
        p = passes(manifest(tmp_path / "run"))[name]
        assert (p["status"], p["message"]) == ("skipped", "--no-clock-sweep")
    assert sum(1 for c in tool_calls(log) if c[0] == "ncu" and "--version" not in c) == 1
    result = analyze(tmp_path / "run")
    assert any(n.startswith("no clock-sweep pass (--no-clock-sweep)") and "guess" in n for n in result.notes)
    assert any(n.startswith("no duration pass (--no-clock-sweep)") and "replay" in n for n in result.notes)
    kernels = [k for b in result.benchmarks if b.ncu for k in b.ncu.kernels]
    assert kernels and all(k.duration_source == "ncu pass" and k.counters_duration_ns is None for k in kernels)
    assert all(k.elasticity_source == "heuristic" for b in result.benchmarks if b.ncu for k in b.ncu.kernels)


def test_a_failing_clock_sweep_leaves_the_run_intact(tmp_path, monkeypatch, capsys) -> None:
    from fake_tools.harness import manifest, passes

    from nsightwrap.analysis.load import analyze

    r, _ = _profile(capsys, monkeypatch, tmp_path, mode="ncu-base-fail")
    assert r.code == 0, r.err  # a warning, never a failed run
    m = manifest(tmp_path / "run")
    assert m["status"] == "complete" and passes(m)["ncu"]["status"] == "ok"
    sweep = passes(m)["ncu-base"]
    assert sweep["status"] == "failed" and "could not lock the clock" in sweep["message"]
    assert "warning: clock-sweep pass (ncu --clock-control base): ncu could not lock the clock" in r.err
    assert "heuristic" in r.err
    result = analyze(tmp_path / "run")
    assert any(n.startswith("the clock-sweep pass failed") for n in result.notes)
    assert result.benchmarks and all(
        k.elasticity_source == "heuristic" for b in result.benchmarks if b.ncu for k in b.ncu.kernels
    )


def test_a_failing_duration_pass_leaves_the_run_and_the_base_pass_intact(tmp_path, monkeypatch, capsys) -> None:
    from fake_tools.harness import manifest, passes

    from nsightwrap.analysis.load import analyze

    r, _ = _profile(capsys, monkeypatch, tmp_path, mode="ncu-duration-fail")
    assert r.code == 0, r.err  # a warning, never a failed run
    m = manifest(tmp_path / "run")
    assert m["status"] == "complete" and passes(m)["ncu-base"]["status"] == "ok"
    light = passes(m)["ncu-duration"]
    assert light["status"] == "failed" and light["message"].startswith("ncu exited with code 9; see ")
    assert "to reproduce: " in light["message"] and "ncu-duration/stderr.log" in light["message"]
    assert "warning: duration pass (ncu, duration and SM clock only): ncu exited with code 9" in r.err
    result = analyze(tmp_path / "run")
    assert any(n.startswith("the duration pass failed: ncu exited with code 9") for n in result.notes)
    kernels = [k for b in result.benchmarks if b.ncu for k in b.ncu.kernels]
    assert kernels and all(k.duration_source == "ncu pass" for k in kernels)
    assert all(k.elasticity_source == "measured" for k in kernels)  # the base pass still measured e


def test_a_clock_that_did_not_move_is_told_apart_from_a_measurement(tmp_path, monkeypatch, capsys) -> None:
    from nsightwrap.analysis.load import analyze

    r, _ = _profile(capsys, monkeypatch, tmp_path, mode="ncu-base-nolock")
    assert r.code == 0, r.err
    result = analyze(tmp_path / "run")
    assert any("ncu could not lock the clock lower" in n for n in result.notes)
    assert all(k.elasticity_source == "heuristic" for b in result.benchmarks if b.ncu for k in b.ncu.kernels)


def test_real_h200_run_with_its_clock_sweep() -> None:
    """fixtures/runs/h200-clock-sweep: nsightwrap profile --passes plain,ncu on the H200, clock
    sweep included. Each kernel carries both ncu measurements and its measured e; the report
    shows e per kernel and the three readings of the timer side by side."""
    from pathlib import Path

    from nsightwrap.analysis.load import analyze
    from nsightwrap.export.jsonio import load_report_json, report_to_dict, write_report_json
    from nsightwrap.export.markdown import render_markdown

    run = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-clock-sweep"
    result = analyze(run)
    by = {b.name: b for b in result.benchmarks}
    assert set(by) == {"add_4k", "add_16m", "mm_square"}
    for b in by.values():
        assert b.ncu is not None and b.ncu.kernels
        for k in b.ncu.kernels:
            assert k.elasticity_source == "measured"
            assert k.base_duration_ns and k.base_sm_clock_hz and k.sm_clock_hz
            assert k.base_sm_clock_hz < 0.85 * k.sm_clock_hz  # base locked 1.28-1.49 GHz there
            # its duration and clock from the duration pass; the ncu pass's own reading beside it
            assert k.duration_source == "duration pass" and k.counters_duration_ns
    mm = by["mm_square"].ncu.kernels  # type: ignore[union-attr]
    assert all(0.9 < (k.elasticity or 0) < 1.1 for k in mm)
    assert all(abs(k.elasticity or 0) < 0.25 for k in by["add_16m"].ncu.kernels)  # type: ignore[union-attr]
    # normalization follows e: the GEMM's time moves with the clock, the large add's barely
    t = by["mm_square"].timer
    assert t is not None and t.kernel_ns is not None and t.sample_clock_source == "stamps"
    assert any(n.startswith("events ") and "(CUPTI), ncu " in n for n in by["add_4k"].notes)
    # cuBLAS's cooperative GEMM makes a memset in every call (this run's sidecar counts it): the
    # note says so beside CUPTI's kernel time; the add makes none
    kt = t.method["kernel_time"]
    assert kt["copies_per_call"] == 1 and 300 < kt["copy_ns_per_call"] < 2000
    copy_us = f"{kt['copy_ns_per_call'] / 1e3:.2f} us"
    assert any(n.startswith("events ") and f" + 1 memcpy/memset {copy_us} (CUPTI), ncu " in n for n in by["mm_square"].notes)
    assert not any("memcpy/memset" in n for n in by["add_4k"].notes)
    # with no nsys pass, the decomposition takes the memset's time from that CUPTI reading
    gap = by["mm_square"].gap
    assert gap is not None
    (nk,) = [p for p in gap.parts if p.cause == "non_kernel_work"]
    assert nk.ns == pytest.approx(kt["copy_ns_per_call"], abs=0.125) and "plain pass (CUPTI)" in nk.message
    assert not any(p.cause == "non_kernel_work" for p in by["add_4k"].gap.parts)  # type: ignore[union-attr]
    doc = report_to_dict(result)
    k0 = doc["benchmarks"][0]["ncu"]["kernels"][0]
    assert {"elasticity", "elasticity_source", "base_duration_ns", "base_sm_clock_hz", "duration_ns", "sm_clock_hz",
            "duration_source", "counters_duration_ns"} <= set(k0)  # fmt: skip
    assert k0["duration_source"] == "duration pass" and k0["counters_duration_ns"] != k0["duration_ns"]
    md = render_markdown(result)
    assert "| duration | with counters | SM clock |" in md and "| e | at base clock |" in md and " @ " in md
    assert any(n.startswith("ncu durations from the duration pass") for n in result.notes)
    back = _round_trip(result, write_report_json, load_report_json)
    assert back.benchmarks[0].ncu.kernels[0].elasticity == result.benchmarks[0].ncu.kernels[0].elasticity  # type: ignore[union-attr]
    assert back.benchmarks[0].ncu.kernels[0] == result.benchmarks[0].ncu.kernels[0]  # type: ignore[union-attr]


def _round_trip(result, write, load):  # type: ignore[no-untyped-def]
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.json"
        write(result, path, detail=True)
        return load(path)
