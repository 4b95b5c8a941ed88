"""A script's own NVTX ranges as benchmarks, and ncu filters in ncu's real syntax, on the real
H200 nsys capture of fixtures/captures/scenarios (start/end ranges of domain ``scenario``, a
default-domain push/pop range on a worker thread, ``nsightwrap`` ranges), checked against SQL
on the export written here."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from nsightwrap.analysis.captured import _mirror_iterations, range_benchmarks
from nsightwrap.analysis.iterations import ncu_stats_all, nsys_iterations, nsys_stats_all
from nsightwrap.analysis.reconcile import BenchmarkSpec
from nsightwrap.core.contract import mirror_range_name, ncu_default_filter, ncu_nvtx_filter
from nsightwrap.parsers.nsys import read_nsys
from nsightwrap.run.profiling import nvtx_filters_seen

SCEN = Path(__file__).resolve().parent.parent / "fixtures" / "captures" / "scenarios"


def _sql_kernels_in(db: Path, text: str, *, same_thread: bool) -> list[int]:
    """Durations (ns) of the kernels launched inside NVTX range ``text``: by a runtime call that
    starts inside it, on the range's thread (push/pop) or any thread of the process (start/end)."""
    thread = "AND r.globalTid = n.globalTid" if same_thread else "AND r.globalTid / 16777216 = n.globalTid / 16777216"
    q = f"""
        SELECT k.end - k.start FROM NVTX_EVENTS n
        LEFT JOIN StringIds s ON s.id = n.textId
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.start >= n.start AND r.start <= n.end {thread}
        JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId
        WHERE COALESCE(n.text, s.value) = ? ORDER BY k.start"""
    with sqlite3.connect(db) as con:
        return [int(v) for (v,) in con.execute(q, (text,))]


def test_every_own_range_that_ran_gpu_work_is_a_benchmark() -> None:
    nsys = read_nsys(SCEN / "scenarios.sqlite")
    notes: list[str] = []
    covered = [BenchmarkSpec(name=n, nvtx_path=f"nsightwrap:{n}") for n in ("copies", "two_streams", "graph_replay", "threaded")]
    specs, _, view = range_benchmarks(covered, None, nsys, notes)
    new = specs[len(covered) :]
    assert [(s.name, s.source["domain"], s.source["range_kind"]) for s in new] == [
        ("scenario:startend_A", "scenario", "startend"),
        ("scenario:startend_B", "scenario", "startend"),
        ("worker_range", None, "pushpop"),
    ]
    found = nsys_iterations(view.ops, view.ranges, view.attribution, new)
    stats = dict(zip([s.name for s in new], nsys_stats_all(found, len(new)), strict=True))
    db = SCEN / "scenarios.sqlite"
    worker = _sql_kernels_in(db, "worker_range", same_thread=True)
    assert stats["worker_range"].iterations_ns == (float(sum(worker)),) and stats["worker_range"].kernels_per_iteration == (len(worker),)
    a = _sql_kernels_in(db, "startend_A", same_thread=False)
    assert stats["scenario:startend_A"].iterations_ns == (float(sum(a)),) and len(a) == 3
    # The synthetic iteration ranges are added, the script's own are left as they were.
    assert len(view.ranges) == len(nsys.ranges) + 3 and set(nsys.ranges["range_id"]) <= set(view.ranges["range_id"])


def test_filters_printed_for_what_nsys_saw_are_in_ncus_syntax() -> None:
    r = read_nsys(SCEN / "scenarios.sqlite").ranges
    shown = nvtx_filters_seen(r)
    assert "scenario@startend_A" in shown and "scenario@startend_A/" not in shown  # start/end: no "/"
    assert "worker_range/" in shown and not any("nan@" in s for s in shown)  # default domain: no domain
    assert "'regex:nsightwrap@copies/iter[0-9]+/'" in shown and "nsightwrap@copies/" in shown
    assert ncu_nvtx_filter(float("nan"), ["graph_replay"]) == "graph_replay/"  # type: ignore[arg-type]
    assert ncu_nvtx_filter("mydomain", ["outer", "inner"]) == "mydomain@outer/inner/"
    assert ncu_default_filter()[-1] == "regex:nsightwrap_nvtx@.*/iter[0-9]+/"


def test_mirrored_kernels_become_iterations_of_the_users_range() -> None:
    spec = BenchmarkSpec(name="step/mm", nvtx_path="step/mm")
    m, outer = mirror_range_name("step/mm"), mirror_range_name("step")
    assert m == "step > mm"
    kernels = pd.DataFrame({
        "launch_id": [0, 1, 2, 3], "kernel": ["gemm"] * 4, "kernel_short": ["gemm"] * 4,
        "duration_ns": [100.0, 110.0, 120.0, 130.0], "sm_clock_hz": [1.9e9] * 4,
        "sm_throughput_pct": [80.0] * 4, "memory_throughput_pct": [20.0] * 4, "dram_throughput_pct": [10.0] * 4,
        "nvtx_ranges": [
            ("step", "step/mm", f"nsightwrap_nvtx:{outer}", f"nsightwrap_nvtx:{outer}/iter0",
             f"nsightwrap_nvtx:{outer}/iter0/{m}", f"nsightwrap_nvtx:{outer}/iter0/{m}/iter0"),
            ("step", "step/mm", f"nsightwrap_nvtx:{outer}/iter1/{m}/iter1"),
            ("step", "step/mm"),  # a third instance: not mirrored, so not profiled in a real run
            ("other",),
        ],
    })  # fmt: skip
    notes: list[str] = []
    out, dropped = _mirror_iterations(kernels, [spec], notes)
    (st,) = ncu_stats_all(out, [spec], [None])
    assert st.iterations_ns == (100.0, 110.0) and st.kernels_per_iteration == (1, 1) and notes == [] and not dropped
    # A range holding a captured timing keeps no ncu figures (its call ran shortened there).
    # .at, not .loc: pandas 2.0 (the floor) reads a tuple given to .loc as one value per column.
    kernels.at[0, "nvtx_ranges"] = (*kernels.at[0, "nvtx_ranges"], "nsightwrap:bench.py:3 do_bench #1/iter0")
    out, dropped = _mirror_iterations(kernels, [spec], notes)
    (st,) = ncu_stats_all(out, [spec], [None])
    assert st.iterations_ns == () and dropped == {"step/mm"} and "step/mm: no ncu figures" in notes[0]


@pytest.mark.parametrize("path", ["mydomain:myrange", "graph_replay", "step/mm", "a b/c@d"])
def test_mirror_names_are_usable_in_ncu_filters(path: str) -> None:
    name = mirror_range_name(path)
    assert "/" not in name and "@" not in name and name.strip() == name
