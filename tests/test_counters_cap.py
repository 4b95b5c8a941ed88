"""The ncu pass at a lower cap than the duration pass (``--ncu-counters-cap``,
``clocks.durations_first``), on the real H200 runs of fixtures/runs: their ncu reports are cut the
way ncu's ``--filter-mode per-launch-config --launch-count 1`` cuts them (the first launch of each
kernel at each grid/block shape), and the analysis on the cut report must give every benchmark
the same verdict, causes and ncu figures as on the full one."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nsightwrap.analysis.clocks import COUNTERS_SOURCES, DURATION_SOURCES, durations_first
from nsightwrap.analysis.load import analyze
from nsightwrap.core.rundir import RunLayout, read_manifest
from nsightwrap.parsers.ncu import read_ncu_rep

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"
#: The shipped runs with a duration pass, whose ncu and duration passes profiled the same kernels.
SWEPT = ("h200-sweep", "h200-mixed", "h200-clock-sweep")


def _first_per_config(frame: pd.DataFrame, cap: int = 1) -> pd.DataFrame:
    order = frame.sort_values("launch_id", kind="stable")
    key = order["kernel"].astype(str) + "|" + order["grid"].astype(str) + "|" + order["block"].astype(str)
    return order[key.groupby(key).cumcount() < cap].sort_index()


def _cut_counters(path: str | Path) -> pd.DataFrame:
    frame = read_ncu_rep(path)
    return _first_per_config(frame) if Path(path).parent.name == "ncu" else frame


@pytest.fixture(scope="module", params=SWEPT)
def run(request: pytest.FixtureRequest) -> tuple[Path, pd.DataFrame, pd.DataFrame]:
    d = RUNS / request.param
    layout = RunLayout(d)
    return d, read_ncu_rep(layout.ncu_report), read_ncu_rep(layout.ncu_duration_report)


def test_every_duration_pass_kernel_leads_with_its_own_duration(run: tuple[Path, pd.DataFrame, pd.DataFrame]) -> None:
    _, counters, light = run
    cut = _first_per_config(counters)
    assert len(cut) < len(light)  # the fixture exercises carrying
    got = durations_first(cut, light)
    assert got is not None
    out, carried = got
    assert len(out) == len(light)
    assert carried == len(light) - len(cut)
    # Durations, clocks and launch identities are the duration pass's own, row for row.
    assert out["duration_ns"].tolist() == pd.to_numeric(light["duration_ns"]).tolist()
    assert out["launch_id"].tolist() == light["launch_id"].tolist()
    assert out["nvtx_path"].tolist() == light["nvtx_path"].tolist()
    assert set(out["duration_source"]) == {DURATION_SOURCES[0]}
    assert (out["counters_source"] == COUNTERS_SOURCES[0]).sum() == len(cut)
    # Counters come from an ncu instance of the same kernel at the same shape.
    by_conf = {(str(r.kernel), str(r.grid), str(r.block)): r for r in cut.itertuples()}
    for r in out.itertuples():
        donor = by_conf[(str(r.kernel), str(r.grid), str(r.block))]
        assert r.sm_throughput_pct == donor.sm_throughput_pct
        assert r.counters_duration_ns == donor.duration_ns


def test_the_ncu_pass_leads_where_the_duration_pass_missed_a_kernel(run: tuple[Path, pd.DataFrame, pd.DataFrame]) -> None:
    _, counters, light = run
    assert durations_first(counters, light) is None  # the same kernels: nothing to carry
    assert durations_first(_first_per_config(counters), light.iloc[1:]) is None
    assert durations_first(_first_per_config(counters), None) is None


def test_cut_counters_give_the_full_runs_verdicts(run: tuple[Path, pd.DataFrame, pd.DataFrame]) -> None:
    d, _, _ = run
    full = analyze(d)
    # The run as a counters pass capped at 1 would have made it: its manifest counts what it profiled.
    manifest = read_manifest(d)
    cut_n = len(_cut_counters(RunLayout(d).ncu_report))
    for p in manifest["passes"]:
        if p.get("name") == "ncu":
            p["kernels_profiled"] = cut_n
    cut = analyze(d, read_ncu=_cut_counters, manifest=manifest)
    assert [b.name for b in cut.benchmarks] == [b.name for b in full.benchmarks]
    for a, b in zip(full.benchmarks, cut.benchmarks, strict=True):
        assert (b.verdict, [c.code for c in b.causes]) == (a.verdict, [c.code for c in a.causes]), b.name
        if a.ncu is None:
            assert b.ncu is None
            continue
        assert b.ncu is not None and a.ncu.median_ns is not None and b.ncu.median_ns is not None
        assert b.ncu.median_ns == pytest.approx(a.ncu.median_ns, rel=1e-9), b.name
        assert b.ncu.kernels_per_iteration == a.ncu.kernels_per_iteration
    assert any("--ncu-counters-cap" in n for n in cut.notes)
    assert not any("--ncu-counters-cap" in n for n in full.notes)


def _without_one_kernel(frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    # Every ncu-pass instance of one kernel name left out: the duration pass profiled it, the
    # ncu pass did not (another functor of a templated kernel whose base name and shape used the
    # cap up: each has its own full name).
    cut = _first_per_config(frame)
    name = str(cut["kernel"].value_counts().index[-1])
    return cut[cut["kernel"].astype(str) != name], name


def test_a_kernel_the_ncu_pass_never_profiled_keeps_its_own_duration(
    run: tuple[Path, pd.DataFrame, pd.DataFrame],
) -> None:
    _, counters, light = run
    cut, name = _without_one_kernel(counters)
    got = durations_first(cut, light)
    assert got is not None
    out, _ = got
    assert len(out) == len(light)  # none left out
    mine = out["kernel"].astype(str) == name
    assert mine.any()
    assert out.loc[mine, "duration_ns"].tolist() == pd.to_numeric(light.loc[mine.to_numpy(), "duration_ns"]).tolist()
    assert out.loc[mine, "counters_source"].isna().all()
    assert out.loc[mine, "sm_throughput_pct"].isna().all()  # no counters of another kernel
    assert out.loc[~mine, "counters_source"].notna().all()


def test_a_benchmark_whose_kernel_the_ncu_pass_never_profiled_keeps_an_ncu_figure(
    run: tuple[Path, pd.DataFrame, pd.DataFrame],
) -> None:
    d, counters, _ = run
    cut, name = _without_one_kernel(counters)
    manifest = read_manifest(d)
    for p in manifest["passes"]:
        if p.get("name") == "ncu":
            p["kernels_profiled"] = len(cut)

    def read(path: str | Path) -> pd.DataFrame:
        return cut if Path(path).parent.name == "ncu" else read_ncu_rep(path)

    full = analyze(d)
    got = analyze(d, read_ncu=read, manifest=manifest)
    for a, b in zip(full.benchmarks, got.benchmarks, strict=True):
        assert (a.ncu is None) == (b.ncu is None), b.name
        if a.ncu is not None and b.ncu is not None:
            assert b.ncu.median_ns == pytest.approx(a.ncu.median_ns, rel=1e-9), b.name
