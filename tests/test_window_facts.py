"""First uses and CUDA-graph replays in the windows of real H200 captures, checked against SQL
written independently on the same nsys exports.

Runs: fixtures/runs/h200-nvtx (``examples/own_nvtx.py``: its own NVTX ranges, 3 steps; the first
step's GEMM is cuBLAS's first use, the first softmax and the worker thread's ``sin`` load their
kernels lazily, the first ``two_streams`` allocates on two new streams, ``graph_replay`` replays
a CUDA graph, ``copies`` and the ``do_bench`` windows are warm), fixtures/runs/h200-blog (every
window warmed up by its loop) and fixtures/captures/causes/run (``mm_graph_warm``:
``nw.bench(cuda_graph=True)`` replays).
"""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

import pytest

from nsightwrap.analysis.captured import range_benchmarks
from nsightwrap.analysis.gap import nsys_timelines
from nsightwrap.analysis.iterations import nsys_iterations
from nsightwrap.analysis.reconcile import specs_from_nvtx
from nsightwrap.analysis.window_facts import (
    GRAPH_FIXES,
    GRAPH_REPLAYS_FIX,
    WARM_UP_FIX,
    WindowFacts,
    carve_warm_up,
    fix_for,
    warm_up_evidence,
    warm_up_part_ns,
    window_facts,
)
from nsightwrap.parsers.nsys import SETUP_CALL_COLUMNS, NsysReport, read_nsys

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "fixtures" / "runs"
CAUSES = ROOT / "fixtures" / "captures" / "causes" / "run"


def _sqlite(run: Path, tmp: Path) -> Path:
    out = tmp / f"{run.name}.sqlite"
    if not out.exists():
        with gzip.open(run / "nsys" / "report.sqlite.gz", "rb") as src, out.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    return out


def facts_of(rep: NsysReport) -> dict[str, WindowFacts]:
    """Every benchmark's facts: the layer's timing ranges (``<site> #k/iter<i>``) and, through
    ``range_benchmarks``, the script's own NVTX ranges, as ``nsightwrap report`` finds them."""
    pp = rep.ranges[rep.ranges["kind"] == "pushpop"]
    specs = specs_from_nvtx(pp.loc[pp["depth"] == 0, "path"], pp["path"])
    specs, _, view = range_benchmarks(specs, None, rep, [])
    found = nsys_iterations(view.ops, view.ranges, view.attribution, specs, view.event_calls)
    return {s.name: f for s, f in zip(specs, window_facts(found, len(specs), view.setup_calls), strict=True)}


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("window_facts")


@pytest.fixture(scope="module")
def nvtx_db(tmp: Path) -> Path:
    return _sqlite(RUNS / "h200-nvtx", tmp)


@pytest.fixture(scope="module")
def nvtx_rep(nvtx_db: Path) -> NsysReport:
    return read_nsys(nvtx_db)


@pytest.fixture(scope="module")
def nvtx(nvtx_rep: NsysReport) -> dict[str, WindowFacts]:
    return facts_of(nvtx_rep)


def _range(db: Path, text: str, k: int) -> tuple[int, int, int]:
    """(start, end, thread) of the k-th push/pop range named ``text``, by start."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        rows = con.execute(
            "SELECT e.start, e.end, e.globalTid FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId "
            "WHERE COALESCE(e.text, s.value) = ? AND e.eventType = 59 ORDER BY e.start",
            (text,),
        ).fetchall()
    return rows[k]


def _calls_in(db: Path, rng: tuple[int, int, int], api_like: str) -> tuple[int, int]:
    """(count, summed ns) of runtime calls named like ``api_like`` begun inside ``rng`` on its thread."""
    s, e, tid = rng
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        n, total = con.execute(
            "SELECT COUNT(*), COALESCE(SUM(r.end - r.start), 0) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
            "JOIN StringIds s ON s.id = r.nameId WHERE s.value LIKE ? AND r.globalTid = ? "
            "AND r.start >= ? AND r.start <= ?",
            (api_like, tid, s, e),
        ).fetchone()
    return int(n), int(total)


# ----------------------------------------------------------------------------- the parser


def test_setup_calls_are_read_with_their_family(nvtx_rep: NsysReport, nvtx_db: Path) -> None:
    calls = nvtx_rep.setup_calls
    assert list(calls.columns) == SETUP_CALL_COLUMNS
    with sqlite3.connect(f"file:{nvtx_db}?mode=ro", uri=True) as con:
        loads = con.execute(
            "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
            "WHERE s.value LIKE 'cuLibraryLoad%' OR s.value LIKE 'cuModuleLoad%'"
        ).fetchone()[0]
    fam = calls.groupby("family")["api"].agg(set).to_dict()
    assert (calls["family"] == "module_load").sum() == loads > 10
    assert fam["module_load"] == {"cuLibraryLoadData", "cuModuleLoadData"}  # ABI suffix stripped
    assert {"cudaMalloc", "cudaHostAlloc"} <= fam["allocation"]
    assert fam["graph_setup"] == {"cudaGraphInstantiateWithFlags"}
    # Launches, event records and syncs are work, not setup.
    assert not calls["api"].str.contains("Launch|EventRecord|Synchronize").any()
    assert calls.groupby("tid")["start_ns"].apply(lambda s: s.is_monotonic_increasing).all()
    assert read_nsys(nvtx_db, detail=False).setup_calls.empty


def test_an_export_without_the_runtime_table_still_parses(nvtx_rep: NsysReport, nvtx_db: Path, tmp: Path) -> None:
    path = tmp / "no-runtime.sqlite"
    shutil.copy(nvtx_db, path)
    with sqlite3.connect(path) as con:
        con.execute("DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME")
    rep = read_nsys(path)
    assert rep.setup_calls.empty and len(rep.ops) == len(nvtx_rep.ops) > 90
    # Without launch calls no op belongs to a range: no window, no first use, no graph.
    facts = facts_of(rep)
    assert all(not f.has_first_use and not f.is_graph_replay for f in facts.values())


# ----------------------------------------------------------------------------- first use


def test_first_gemm_is_cublas_first_use(nvtx: dict[str, WindowFacts], nvtx_db: Path) -> None:
    mm = nvtx["step/mm"]
    assert mm.windows == 3 and mm.first_use_windows == (0,) and mm.first_use_share == pytest.approx(1 / 3)
    assert len(mm.first_use_kernels) == 1 and mm.first_use_kernels[0].startswith("nvjet_")
    rng = _range(nvtx_db, "mm", 0)
    n, ns = _calls_in(nvtx_db, rng, "cuLibraryLoad%")
    loads = {c.api: c for c in mm.first_use_calls}["cuLibraryLoadData"]
    assert (loads.calls, loads.host_ns) == (n, float(ns)) and n >= 10
    # cuBLAS's handle: its entry points and workspace, all in the first window only.
    assert {"cuGetProcAddress", "cudaMalloc", "cuLibraryGetKernel"} <= {c.api for c in mm.first_use_calls}
    assert mm.first_use_host_ns[1:] == (0.0, 0.0) and mm.first_use_host_ns[0] >= ns
    # The GPU sat idle all along (nothing queued), so the window paid all of it; the window,
    # ~110 ms against ~0.1 ms warm, pays more than the traced calls (cuBLAS's own host work).
    assert mm.first_use_idle_ns[0] == pytest.approx(mm.first_use_host_ns[0], rel=1e-6)
    assert mm.window_ns[0] == pytest.approx(rng[1] - rng[0], rel=0.01)
    assert mm.warm_source == "other windows" and mm.warm_ns is not None and mm.warm_ns < 1e6
    assert mm.first_use_cost_ns[0] == pytest.approx(mm.window_ns[0] - mm.warm_ns)
    assert mm.first_use_cost_ns[0] > 2 * mm.first_use_idle_ns[0]


def test_lazily_loaded_kernels_and_a_new_streams_allocations(nvtx: dict[str, WindowFacts], nvtx_db: Path) -> None:
    soft, worker, two = nvtx["step/softmax"], nvtx["worker"], nvtx["two_streams"]
    for f, text in ((soft, "softmax"), (worker, "worker")):
        assert f.first_use_windows == (0,) and f.first_use_kernels
        n, ns = _calls_in(nvtx_db, _range(nvtx_db, text, 0), "cuLibraryLoad%")
        assert n >= 1 and {c.api: c.host_ns for c in f.first_use_calls}["cuLibraryLoadData"] == ns
    # The GEMM kernels ran before (step/mm): no first-use kernel, only the allocator's first
    # blocks on the two new streams.
    assert two.first_use_windows == (0,) and two.first_use_kernels == ()
    assert [c.family for c in two.first_use_calls] == ["allocation"]
    assert two.first_use_calls[0].calls == _calls_in(nvtx_db, _range(nvtx_db, "two_streams", 0), "cudaMalloc%")[0]


def test_first_use_kernels_have_no_earlier_launch(nvtx: dict[str, WindowFacts], nvtx_db: Path) -> None:
    with sqlite3.connect(f"file:{nvtx_db}?mode=ro", uri=True) as con:
        first = dict(
            con.execute(
                "SELECT s.value, MIN(k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value"
            ).fetchall()
        )
    s, e, _ = _range(nvtx_db, "step", 0)
    for name in nvtx["step"].first_use_kernels:
        assert s <= first[name]  # its first launch anywhere came after the window opened
    # Every kernel first launched in the process after the step range opened and before it
    # closed (with the GPU draining to ~1 ms later) is named.
    inside = {n for n, t in first.items() if s <= t <= e + 1_000_000}
    assert inside == set(nvtx["step"].first_use_kernels)


def test_the_wait_before_a_first_launch_is_the_window_less_a_warm_one(nvtx: dict[str, WindowFacts]) -> None:
    # Two measurements of one cost: the idle stretches a first use made in its window, and the
    # window less the benchmark's warm windows. They agree within 1% where a kernel is first used.
    for name in ("step", "step/mm", "step/softmax", "worker"):
        f = nvtx[name]
        assert f.warm_ns is not None and f.first_use_wait_ns[0] > 1e6, name
        assert f.first_use_wait_ns[0] == pytest.approx(f.window_ns[0] - f.warm_ns, rel=0.01), name
        assert f.first_use_wait_ns[1:] == (0.0, 0.0)


def test_warm_windows_are_neither(nvtx: dict[str, WindowFacts]) -> None:
    blog = facts_of(read_nsys(RUNS / "h200-blog" / "nsys" / "report.sqlite.gz"))
    warm = [nvtx["own_nvtx.py:52 do_bench #1"], nvtx["copies"], *blog.values()]
    assert len(blog) == 6 and all(f.windows >= 10 for f in blog.values())
    for f in warm:
        assert not f.has_first_use and not f.is_graph_replay and f.graph_windows == 0
        assert warm_up_part_ns(f) is None and set(f.first_use_cost_ns) == {0.0}
        for code in GRAPH_FIXES:
            assert fix_for(code, f) is None  # the decomposition keeps its own text


def test_warm_up_part_follows_the_statistic(nvtx: dict[str, WindowFacts]) -> None:
    mm = nvtx["step/mm"]
    # Three windows: the middle half is all of them (the nsys timeline's rule), so the mean.
    assert warm_up_part_ns(mm) == pytest.approx(sum(mm.first_use_cost_ns) / 3)
    assert warm_up_part_ns(mm, statistic="median") == 0.0  # one first use in three: the median misses it
    assert warm_up_part_ns(mm, calls=5) == pytest.approx(warm_up_part_ns(mm) / 5)  # type: ignore[operator]
    one = nvtx["mydomain:myrange"]  # a whole do_bench in one range: Triton's first compile and load
    assert one.windows == 1 and "add_kernel" in one.first_use_kernels
    assert {"cuModuleLoadData", "cuLibraryLoadData"} <= {c.api for c in one.first_use_calls}
    assert one.warm_source == "none"  # its kernels never ran again
    # Nothing to subtract: the GPU's wait for the first launches. Triton's compile is untraced
    # host work before its module load, 170x the traced calls.
    assert warm_up_part_ns(one) == one.first_use_wait_ns[0] == one.first_use_cost_ns[0]
    assert one.first_use_wait_ns[0] > 100 * one.first_use_idle_ns[0] > 1e8
    assert one.first_use_wait_ns[0] < one.window_ns[0]
    ev = warm_up_evidence(mm)
    assert ev["first_use_windows"] == 1 and ev["windows"] == 3 and ev["module_loads"] >= 10
    assert ev["module_load_ns"] == sum(c.host_ns for c in mm.first_use_calls if c.family == "module_load")
    with pytest.raises(ValueError, match="statistic"):
        warm_up_part_ns(mm, statistic="mean")
    assert fix_for("warm_up", mm) == WARM_UP_FIX and "before the start event" in WARM_UP_FIX


# ----------------------------------------------------------------------------- graph replays


def test_graph_replay_windows(nvtx: dict[str, WindowFacts], nvtx_db: Path) -> None:
    g = nvtx["graph_replay"]
    assert g.windows == 3 and g.graph_windows == 3 and g.is_graph_replay and not g.has_first_use
    launches = tuple(_calls_in(nvtx_db, _range(nvtx_db, "graph_replay", k), "cudaGraphLaunch%")[0] for k in range(3))
    assert g.graph_launches == launches == (1, 1, 1) and g.replays_per_window == 1.0
    for code in ("gaps", "launch_overhead", "front_end"):
        text = fix_for(code, g)
        assert text == GRAPH_FIXES[code] and "CUDA graph" not in text
    assert "back to back" in GRAPH_FIXES["launch_overhead"] and "between nodes" in GRAPH_FIXES["gaps"]
    assert fix_for("cache_state", g) is None
    # No other benchmark of the run launches a graph.
    assert [n for n, f in nvtx.items() if f.graph_windows] == ["graph_replay"]


def test_timer_graph_replays() -> None:
    causes = facts_of(read_nsys(CAUSES / "nsys" / "report.sqlite.gz"))
    graph = {n: f for n, f in causes.items() if f.graph_windows}
    assert list(graph) == ["mm_graph_warm"]
    g = graph["mm_graph_warm"]
    assert g.is_graph_replay and g.graph_windows == g.windows > 50 and set(g.graph_launches) == {1}
    assert not any(f.has_first_use for f in causes.values())  # nw.bench warms up


def test_the_host_parts_of_the_timeline_hold_the_warm_up(nvtx_rep: NsysReport) -> None:
    # The nsys timeline's host-side figures of each window (as the decomposition's parts read
    # them) hold what the first use cost: carving it leaves them what a warm window holds.
    pp = nvtx_rep.ranges[nvtx_rep.ranges["kind"] == "pushpop"]
    specs = specs_from_nvtx(pp.loc[pp["depth"] == 0, "path"], pp["path"])
    specs, _, view = range_benchmarks(specs, None, nvtx_rep, [])
    found = nsys_iterations(view.ops, view.ranges, view.attribution, specs, view.event_calls)
    facts = window_facts(found, len(specs), view.setup_calls)
    carved = 0
    for s, f, tl in zip(specs, facts, nsys_timelines(found, specs), strict=True):
        w = warm_up_part_ns(f)
        if tl is None or w is None:
            continue
        parts = {"launch_overhead": tl.host_head_ns + tl.host_gap_ns + tl.tail_ns,
                 "front_end": tl.head_ns - tl.host_head_ns, "gaps": tl.gap_ns - tl.host_gap_ns}  # fmt: skip
        size, rest = carve_warm_up(parts, w)
        assert size == pytest.approx(w, rel=1e-9), s.name  # all of it was there
        assert sum(rest.values()) + size == pytest.approx(sum(parts.values()), rel=1e-12)
        assert all(v >= 0 for v in rest.values())
        # What is left is no more than the warm windows' own figures could hold.
        assert sum(rest.values()) <= tl.window_joined_ns - w, s.name
        carved += 1
    assert carved == 6  # mydomain, step, step/mm, step/softmax, two_streams, worker
    size, rest = carve_warm_up({"launch_overhead": 10.0, "front_end": 5.0}, 40.0)
    assert size == 15.0 and rest == {"launch_overhead": 0.0, "front_end": 0.0}  # never more than was there


def test_whole_graph_tracing_is_a_replay_too() -> None:
    # nsys --cuda-graph-trace=graph: one op per graph launch, no kernels of the graph.
    db = ROOT / "fixtures" / "captures" / "scenarios" / "scenarios_graph.sqlite"
    g = facts_of(read_nsys(db))["graph_replay"]
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        (graphs,) = con.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchone()
    assert g.windows == g.graph_windows == 1 and g.graph_launches == (graphs,) == (2,)
    assert g.is_graph_replay and fix_for("launch_overhead", g) == GRAPH_REPLAYS_FIX.format(n="2")


# ----------------------------------------------------------------------------- h200-mixed
# fixtures/captures/verdicts/mixed.py, unmodified, under `nsightwrap profile`: a first call of
# linear in an event window, 5 graph replays per window, 50 amortized adds per window, a sort.

MIXED = RUNS / "h200-mixed"
FIRST, GRAPH, ADDS, SORT = (f"mixed.py:{line} cuda_events #1" for line in (16, 39, 55, 70))


@pytest.fixture(scope="module")
def mixed_db(tmp: Path) -> Path:
    return _sqlite(MIXED, tmp)


@pytest.fixture(scope="module")
def mixed(mixed_db: Path) -> dict[str, WindowFacts]:
    return facts_of(read_nsys(mixed_db))


def _iter_range(db: Path, name: str, k: int) -> tuple[int, int, int]:
    """(start, end, thread) of iteration ``k`` of the capture layer's window ``name``: the
    ``iter<k>`` push/pop range nested in an instance of the range ``name`` on the same thread."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        rows = con.execute(
            "WITH r AS (SELECT e.start, e.end, e.globalTid AS tid, COALESCE(e.text, s.value) AS name "
            "FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId WHERE e.eventType = 59) "
            "SELECT i.start, i.end, i.tid FROM r i JOIN r p ON p.tid = i.tid AND p.start <= i.start "
            "AND i.end <= p.end WHERE p.name = ? AND i.name = ? ORDER BY i.start",
            (name, f"iter{k}"),
        ).fetchall()
    assert len(rows) == 1, rows
    return rows[0]


def test_mixed_benchmarks_are_the_four_timings(mixed: dict[str, WindowFacts]) -> None:
    # CCCL's own NVTX range inside torch.sort is a library's, not a benchmark.
    assert sorted(mixed) == sorted([FIRST, GRAPH, ADDS, SORT])
    assert [mixed[n].windows for n in (FIRST, GRAPH, ADDS, SORT)] == [1, 10, 20, 10]


def test_mixed_first_linear_is_a_first_use(mixed: dict[str, WindowFacts], mixed_db: Path) -> None:
    f = mixed[FIRST]
    assert f.has_first_use and f.first_use_windows == (0,) and f.first_use_share == 1.0
    rng = _iter_range(mixed_db, FIRST, 0)
    with sqlite3.connect(f"file:{mixed_db}?mode=ro", uri=True) as con:
        ops = con.execute(
            "SELECT s.value, k.start, k.end, (SELECT MIN(k2.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k2 "
            "WHERE k2.demangledName = k.demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.demangledName JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
            "ON r.correlationId = k.correlationId WHERE r.start >= ? AND r.start <= ?",
            (rng[0], rng[1]),
        ).fetchall()
        (memset_ns,) = con.execute(
            "SELECT COALESCE(SUM(m.end - m.start), 0) FROM CUPTI_ACTIVITY_KIND_MEMSET m JOIN "
            "CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = m.correlationId WHERE r.start >= ? AND r.start <= ?",
            (rng[0], rng[1]),
        ).fetchone()
    # One GEMM kernel, launched here for the first time in the process (cuBLAS's first use).
    assert len(ops) == 1 and ops[0][1] == ops[0][3] and f.first_use_kernels == (ops[0][0],)
    n, ns = _calls_in(mixed_db, rng, "cuLibraryLoad%")
    loads = {c.api: c for c in f.first_use_calls}["cuLibraryLoadData"]
    assert (loads.calls, loads.host_ns) == (n, float(ns)) and n >= 10
    assert {"cudaMalloc", "cuGetProcAddress"} <= {c.api for c in f.first_use_calls}
    # linear is never called again: no warm reference, so the cost is the GPU's wait for the
    # host inside the window: all of it but the GPU's own work (cuBLAS's workspace memset and
    # the GEMM), of which the traced setup calls are only a third.
    assert f.warm_source == "none" and f.warm_ns is None
    gpu = (ops[0][2] - ops[0][1]) + memset_ns
    # Less the few us of the window that are no first use (its start event, the launch): 13 us.
    assert f.window_ns[0] - gpu - 50_000 <= f.first_use_cost_ns[0] <= f.window_ns[0] - gpu
    assert f.first_use_host_ns[0] < 0.5 * f.first_use_cost_ns[0]
    assert warm_up_part_ns(f) == f.first_use_cost_ns[0] > 5e7  # tens of ms
    assert fix_for("warm_up", f) == WARM_UP_FIX and not f.is_graph_replay


def test_mixed_graph_replays(mixed: dict[str, WindowFacts], mixed_db: Path) -> None:
    g = mixed[GRAPH]
    assert g.is_graph_replay and g.graph_windows == g.windows == 10 and not g.has_first_use
    launches = tuple(_calls_in(mixed_db, _iter_range(mixed_db, GRAPH, k), "cudaGraphLaunch%")[0] for k in range(10))
    assert g.graph_launches == launches == (5,) * 10 and g.replays_per_window == 5.0
    assert fix_for("launch_overhead", g) == GRAPH_REPLAYS_FIX.format(n="5")
    assert fix_for("gaps", g) == GRAPH_FIXES["gaps"] and fix_for("front_end", g) == GRAPH_FIXES["front_end"]
    assert all("CUDA graph" not in (fix_for(c, g) or "") for c in ("gaps", "launch_overhead", "front_end"))


def test_mixed_amortized_adds_and_sort_are_neither(mixed: dict[str, WindowFacts]) -> None:
    for name in (ADDS, SORT):
        f = mixed[name]
        assert not f.has_first_use and not f.is_graph_replay and f.graph_windows == 0, name
        assert warm_up_part_ns(f) is None and fix_for("launch_overhead", f) is None
