"""ncu's per-iteration sums rebuilt from the nsys pass where ``--ncu-kernel-cap`` left launches
unprofiled (nsightwrap/analysis/ncusample.py), on the real H200 runs of fixtures/runs: their ncu
frames are cut the way ncu's ``--filter-mode per-launch-config --launch-count N`` cuts them (the
first N launches of each kernel at each grid/block shape, in launch order), and the rebuilt
sums must match the full ones."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from nsightwrap.analysis import load
from nsightwrap.analysis.captured import range_benchmarks
from nsightwrap.analysis.iterations import ncu_stats_all, nsys_iterations
from nsightwrap.analysis.model import NcuStats
from nsightwrap.analysis.ncusample import kernel_cap, ncu_stats_sampled
from nsightwrap.core.contract import SIDECAR_GLOB
from nsightwrap.core.rundir import RunLayout, read_manifest
from nsightwrap.parsers.sidecar import read_sidecar_doc

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


def _run(name: str) -> dict[str, Any]:
    """The analysis's own inputs for one shipped run: ncu kernels (with the clock sweep), specs,
    nsys iterations and each benchmark's reference clock."""
    d = RUNS / name
    layout, m, notes, crashes = RunLayout(d), read_manifest(d), [], []
    ncu = load._with_clock_sweep(load._read_ncu(layout, notes, crashes), layout, m, notes, crashes)
    nsys = load._read_nsys(layout, notes)
    docs = [read_sidecar_doc(p) for p in sorted(layout.pass_dir("plain").glob(SIDECAR_GLOB))]
    specs = load._merge_specs([load._spec(b, name) for doc in docs for b in doc["benchmarks"]])
    specs, ncu, nsys = range_benchmarks(specs, ncu, nsys, notes)
    found = nsys_iterations(nsys.ops, nsys.ranges, nsys.attribution, specs)
    env = load.environment(m, layout, None)
    _, refs = load.benchmark_clocks(specs, found, nsys, load._nsys_pass_timings(layout), "plain", env, m, None)
    return {"ncu": ncu, "specs": specs, "found": found, "refs": [hz for hz, _ in refs],
            "iters": m["settings"]["ncu_iters"]}  # fmt: skip


def _capped(ncu: pd.DataFrame, cap: int) -> pd.DataFrame:
    """What ncu would have profiled with ``--filter-mode per-launch-config --launch-count cap``."""
    ordered = ncu.sort_values("launch_id", kind="stable")
    key = ordered["kernel"].astype(str) + "|" + ordered["grid"].astype(str) + "|" + ordered["block"].astype(str)
    return ordered[ordered.groupby(key).cumcount() < cap]


def _spread(ncu: pd.DataFrame, st: NcuStats) -> float:
    """How far apart ncu's instances of one iteration's kernels are: the sum over its kernels of
    (slowest - fastest instance of that kernel at that shape in the run)."""
    key = ncu["kernel"].astype(str) + "|" + ncu["grid"].astype(str) + "|" + ncu["block"].astype(str)
    width = ncu.groupby(key)["duration_ns"].agg(lambda d: float(d.max() - d.min()))
    names = dict(zip(ncu["kernel"].astype(str), key, strict=True))
    per_iter = max(len([k for k in st.kernels if k.iteration == i]) for i in {k.iteration for k in st.kernels})
    return sum(width[names[k.kernel]] for k in st.kernels[:per_iter])


@pytest.fixture(scope="module")
def sweep() -> dict[str, Any]:
    return _run("h200-sweep")


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    return _run("h200-example")


@pytest.mark.parametrize("cap", [1, 2, 3])
@pytest.mark.parametrize("which", ["sweep", "example"])
def test_rebuilt_sums_match_the_full_ones(which: str, cap: int, request: pytest.FixtureRequest) -> None:
    r = request.getfixturevalue(which)
    full = ncu_stats_all(r["ncu"], r["specs"], r["refs"])
    cut = _capped(r["ncu"], cap)
    assert len(cut) < len(r["ncu"])  # the cap does drop launches of these runs
    got = ncu_stats_sampled(cut, r["specs"], r["refs"], r["found"], cap, r["iters"])
    for spec, f, s, notes, why in zip(r["specs"], full, got.stats, got.notes, got.no_ncu, strict=True):
        if not f.iterations_ns:
            continue
        if why is not None:
            # Only a benchmark whose kernel ncu profiled in other benchmarks alone, doing other work
            # there, loses its figure: do_bench #5 of h200-sweep (a larger K at do_bench #1's grid,
            # 1.9x in nsys) and two_streams of h200-example (a smaller GEMM at softmax_mlp's grid:
            # 93 us of its own in ncu against softmax_mlp's 177 us). Scaled by nsys's ratio, their
            # figures came within 10% of their own, but a scaled figure is no ncu measurement.
            assert spec.name in ("sweep.py:17 do_bench #5", "two_streams"), (spec.name, why)
            assert why.startswith("no ncu: the only ncu figure of ") and "from another size" in why
            assert "--ncu-kernel-cap 0 profiles every launch" in why and s.iterations_ns == ()
            continue
        assert s.kernels_per_iteration == f.kernels_per_iteration, spec.name
        scaled = any("scaled by that ratio" in n for n in notes)
        for a, b in zip(s.iterations_ns, f.iterations_ns, strict=True):
            if scaled:
                # The same kernel and shape doing other work elsewhere: carried in nsys's proportion.
                assert a == pytest.approx(b, rel=0.10), spec.name
            else:
                assert abs(a - b) <= _spread(r["ncu"], f) + 1e-6, (spec.name, a, b)
        if scaled:
            assert s.normalized_ns == pytest.approx(f.normalized_ns, rel=0.10), spec.name
        else:
            assert f.median_ns is not None and s.median_ns is not None
            assert abs(s.median_ns - f.median_ns) <= _spread(r["ncu"], f) + 1e-6, spec.name


def test_the_note_says_what_was_profiled_and_what_carried(sweep: dict[str, Any]) -> None:
    got = ncu_stats_sampled(_capped(sweep["ncu"], 1), sweep["specs"], sweep["refs"], sweep["found"], 1, sweep["iters"])
    by_name = {s.name: (n, p, c) for s, n, p, c in zip(sweep["specs"], got.notes, got.profiled, got.carried, strict=True)}
    notes, profiled, carried = by_name["sweep.py:17 do_bench #1"]
    assert (profiled, carried) == (1, 2)
    assert notes[0].startswith("ncu profiled 1 of 3 launches of this benchmark's kernels")
    assert "carried by the median ncu instance of the same kernel at the same shape" in notes[0]
    # do_bench #5 runs do_bench #1's kernel at its grid and block, on a larger K: ncu profiled none
    # of its own, and nsys says it takes ~1.9x as long. A figure of other work, scaled or not, is
    # not this benchmark's: no ncu figure, with the figures that say so and the option that fixes it.
    i = next(i for i, s in enumerate(sweep["specs"]) if s.name == "sweep.py:17 do_bench #5")
    notes, profiled, carried = by_name["sweep.py:17 do_bench #5"]
    assert (profiled, carried) == (0, 0) and got.stats[i].iterations_ns == ()
    why = got.no_ncu[i]
    assert why is not None and notes == (why,) and got.coverable[i]
    m = re.search(r"from another size \(([\d.]+) us against ([\d.]+) us under nsys\)", why)
    assert m is not None and float(m.group(2)) / float(m.group(1)) == pytest.approx(1.9, abs=0.15)
    assert "(--ncu-kernel-cap 1)" in why or "cap (" in why


def test_a_launch_ncu_never_profiled_has_no_figure_and_is_named(example: dict[str, Any]) -> None:
    ncu = example["ncu"]
    gone = ncu["kernel_short"].astype(str).str.contains("vectorized_elementwise") & (ncu["grid"] == "4,1,1")
    got = ncu_stats_sampled(_capped(ncu[~gone], 3), example["specs"], example["refs"], example["found"], 3,
                            example["iters"])  # fmt: skip
    i = next(i for i, s in enumerate(example["specs"]) if s.name == "add_small")
    assert got.stats[i].iterations_ns == () and got.missing[i] == 3
    # Nothing of it profiled while nsys saw its kernel: no ncu figure, named, never a verdict that
    # blames a filter the user did not write; a coverage pass can profile it.
    why = got.no_ncu[i]
    assert why is not None and why.startswith("no ncu: ncu profiled none of this benchmark's launches")
    assert "grid 4, block 128" in why and "--nvtx-include" not in why and got.coverable[i]
    own = ncu_stats_sampled(_capped(ncu[~gone], 3), example["specs"], example["refs"], example["found"], 3,
                            example["iters"], user_filter=True)  # fmt: skip
    assert "--nvtx-include filter" in (own.no_ncu[i] or "") and not own.coverable[i]


def test_no_cap_no_nsys_is_ncu_as_it_is(example: dict[str, Any]) -> None:
    full = ncu_stats_all(example["ncu"], example["specs"], example["refs"])
    for cap, found in ((0, example["found"]), (3, None)):
        got = ncu_stats_sampled(example["ncu"], example["specs"], example["refs"], found, cap, 3)
        assert list(got.stats) == full and not any(got.notes)
    # The uncut frame under a cap: nothing was left out, nothing is carried.
    got = ncu_stats_sampled(example["ncu"], example["specs"], example["refs"], example["found"], 3, 3)
    assert sum(got.carried) == 0


def test_kernel_cap_is_read_from_the_ncu_command() -> None:
    def m(*argv: str) -> dict[str, Any]:
        return {"passes": [{"name": "ncu", "commands": [{"argv": ["ncu", "--clock-control", "none", *argv, "t.py"]}]}]}

    assert kernel_cap(m("--filter-mode", "per-launch-config", "--launch-count", "3")) == 3
    assert kernel_cap(m("--filter-mode=per-launch-config", "-c", "5")) == 5
    assert kernel_cap(m("--launch-count", "3")) == 0  # a global count: not per launch configuration
    assert kernel_cap(m()) == 0 and kernel_cap({}) == 0
    assert kernel_cap(read_manifest(RUNS / "h200-sweep")) == 0  # shipped before the cap


def test_other_l2_treatment_is_not_taken_for_other_work(sweep: dict[str, Any]) -> None:
    # do_bench #5 as if its loop did not flush the L2 (do_bench #1's zeroes a buffer before each
    # call): nsys's 1.9x can then be cache state, which ncu's own flush removes; carried unscaled.
    from dataclasses import replace

    specs = list(sweep["specs"])
    i = next(i for i, s in enumerate(specs) if s.name == "sweep.py:17 do_bench #5")
    assert specs[i].timer is not None
    specs[i] = replace(specs[i], timer=replace(specs[i].timer, method={**specs[i].timer.method, "flush": "none"}))
    got = ncu_stats_sampled(_capped(sweep["ncu"], 1), specs, sweep["refs"], sweep["found"], 1, sweep["iters"])
    # ...but a warm L2 only makes nsys faster than ncu: nsys's 1.9x longer launches here are other
    # work all the same, and do_bench #1's figure is not this benchmark's.
    assert got.stats[i].iterations_ns == () and "from another size" in (got.no_ncu[i] or "")
    # Within the bound (nsys's launches here 1.19x do_bench #1's: the cache state can be that), the
    # figure is carried unscaled, with its note.
    j = next(i for i, s in enumerate(specs) if s.name == "sweep.py:17 do_bench #1")
    found = sweep["found"]
    ops = found.ops
    kern = ops["kind"].astype(str) == "kernel"
    same = ops.assign(duration_ns=ops["duration_ns"].where(~(kern & (ops["spec"] == i)), ops["duration_ns"] / 1.6))
    from dataclasses import replace as dc_replace

    got = ncu_stats_sampled(_capped(sweep["ncu"], 1), specs, sweep["refs"], dc_replace(found, ops=same), 1,
                            sweep["iters"])  # fmt: skip
    assert got.no_ncu[i] is None
    assert got.stats[i].iterations_ns == (got.stats[j].iterations_ns[0],) * 3  # do_bench #1's kernel as ncu timed it
    assert any("treats the L2 otherwise: carried unscaled" in n for n in got.notes[i])


def test_a_kernel_spelled_apart_by_ncu_and_nsys_still_matches(sweep: dict[str, Any]) -> None:
    # ncu's full names as another ncu version may spell them (return type, parameters): matched
    # on the function name and shape, as the reconciliation's kernel check does.
    cut = _capped(sweep["ncu"], 1)
    spelled = cut.assign(kernel=["void " + k + "(int)" for k in cut["kernel"].astype(str)])
    a = ncu_stats_sampled(cut, sweep["specs"], sweep["refs"], sweep["found"], 1, sweep["iters"])
    b = ncu_stats_sampled(spelled, sweep["specs"], sweep["refs"], sweep["found"], 1, sweep["iters"])
    assert [s.iterations_ns for s in b.stats] == [s.iterations_ns for s in a.stats]
    assert sum(b.missing) == 0 and b.carried == a.carried and sum(a.carried) > 0


def test_a_graph_node_kernel_the_cap_never_reached_leaves_the_benchmark_unchecked() -> None:
    """h200-mixed's graph window replays a multiply and an add; ncu's cap, which counts a graph's
    node kernels together, profiled 3 of the first window's 80 node launches. With those 3 taken
    out (as on a graph whose later nodes the cap never reaches), the window's node launches have
    no ncu figure: they are counted as starved, the note says why and how to check the benchmark,
    and no other benchmark is touched."""
    r = _run("h200-mixed")
    ncu: pd.DataFrame = r["ncu"]
    graph = next(i for i, s in enumerate(r["specs"]) if "mixed.py:39" in s.nvtx_path)
    inside = ncu["nvtx_ranges"].map(lambda p: any("mixed.py:39" in str(x) for x in p))
    assert int(inside.sum()) == 3
    got = ncu_stats_sampled(ncu[~inside], r["specs"], r["refs"], r["found"], 3, r["iters"])
    full = ncu_stats_sampled(ncu, r["specs"], r["refs"], r["found"], 3, r["iters"])
    assert full.starved[graph] == 0 and full.missing[graph] == 0
    assert got.starved[graph] == got.missing[graph] == 80 * r["iters"] and got.carried[graph] == 0
    assert any("nodes of a CUDA graph" in n and "--ncu-kernel-cap 0" in n for n in got.notes[graph])
    assert all(s == 0 for i, s in enumerate(got.starved) if i != graph)
    assert got.stats[:graph] == full.stats[:graph] and got.stats[graph + 1 :] == full.stats[graph + 1 :]
    # The reconciliation then has no ncu figure for that benchmark: "no ncu", with the note, not a
    # "missing kernels" verdict that would blame the user's timing.
    d = RUNS / "h200-mixed"
    layout, m = RunLayout(d), read_manifest(d)
    nsys = load._read_nsys(layout, [])
    _, refs = load.benchmark_clocks(r["specs"], r["found"], nsys, load._nsys_pass_timings(layout), "plain",
                                    load.environment(m, layout, None), m, None)  # fmt: skip
    out = load._reconcile_all(r["specs"], refs, ncu[~inside], r["found"], load._nsys_pass_timings(layout),
                              tolerance=0.1, ncu_cache_control="all", manifest=m)  # fmt: skip
    assert out[graph].ncu is None and out[graph].verdict.value == "no_ncu"
    assert any("nodes of a CUDA graph" in n for n in out[graph].notes)
    assert not any(c.code.value == "extra_or_missing_kernels" for c in out[graph].causes)


def test_another_config_in_the_ncu_pass_is_no_ncu_never_a_ratio(example: dict[str, Any]) -> None:
    # mm_small's GEMM as if the ncu pass had run another config of it (an autotuner's other
    # choice): grid 1x64x1 block 128 in ncu against nsys's grid 2x64x1 block 384.
    ncu = example["ncu"].copy()
    mine = ncu["nvtx_path"].astype(str).str.startswith("nsightwrap:mm_small/")
    ncu.loc[mine, "grid"], ncu.loc[mine, "block"] = "1,64,1", "128,1,1"
    got = ncu_stats_sampled(ncu, example["specs"], example["refs"], example["found"], 0, example["iters"])
    i = next(i for i, s in enumerate(example["specs"]) if s.name == "mm_small")
    why = got.no_ncu[i]
    assert why is not None and why.startswith("no ncu: the ncu pass ran another config of nvjet_sm90_tst_64x32")
    assert "(grid 1x64x1 block 128 against grid 2x64x1 block 384 under nsys)" in why
    assert not got.coverable[i] and got.notes[i] == (why,)
    assert all(w is None for j, w in enumerate(got.no_ncu) if j != i)  # the others untouched


def test_nsys_kernels_per_iteration_as_the_rows_give_them(sweep: dict[str, Any]) -> None:
    """The per-iteration kernel lists (made on demand from sorted rows) and the per-benchmark
    durations hold what the nsys kernel rows of each iteration give, and nothing else."""
    from nsightwrap.analysis.ncusample import _firsts, _nsys_kernels

    found = sweep["found"]
    nsys_k, _graph, _shapes, work = _nsys_kernels(found)
    k = found.ops[found.ops["kind"].astype(str) == "kernel"].drop_duplicates("op_id")
    it_of = dict(zip(found.iters["range_id"], found.iters["iteration"], strict=True))
    k = k.assign(it=k["range_id"].map(it_of)).dropna(subset=["spec", "it"])
    want = k.groupby(["spec", "it"]).size()
    assert len(nsys_k) == len(want) > 0
    for (b, it), n in want.items():
        assert (int(b), int(it)) in nsys_k
        assert len(nsys_k[(int(b), int(it))]) == n
        assert nsys_k.get((int(b), int(it))) is nsys_k[(int(b), int(it))]  # made once
    assert (0, 10**9) not in nsys_k and nsys_k.get((len(sweep["specs"]), 0)) is None
    assert list(nsys_k) == sorted(nsys_k)
    assert _firsts(nsys_k) == {int(b): int(g.min()) for b, g in k.groupby("spec")["it"]}
    # Every finite positive duration lands in its benchmark's lists.
    by_spec = k[k["duration_ns"] > 0].groupby("spec")["duration_ns"].sum()
    got: dict[int, float] = {}
    for (b, _key), durs in work.items():
        got[b] = got.get(b, 0.0) + sum(durs)
    assert got == pytest.approx({int(b): float(v) for b, v in by_spec.items()})
