"""nsys SQLite export parser on the real H200 capture, checked against SQL written independently."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from nsightwrap.core.errors import InputNotFound, ReportParseError
from nsightwrap.parsers.nsys import NsysReport, read_nsys, summarize_by_range

SQLITE = (
    Path(__file__).resolve().parent.parent / "fixtures" / "reference" / "h200-workload" / "workload.sqlite"
)
BENCHES = ("mm_small", "mm_skinny", "mm_large", "copy_1g", "softmax_mlp")
MAIN_TID = 281488281043737


@pytest.fixture(scope="module")
def rep() -> NsysReport:
    return read_nsys(SQLITE)


@pytest.fixture(scope="module")
def db() -> sqlite3.Connection:
    return sqlite3.connect(f"file:{SQLITE}?mode=ro", uri=True)


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "copy.sqlite"
    shutil.copy(SQLITE, dst)
    return dst


def test_ops_are_every_kernel_memcpy_memset(rep: NsysReport, db: sqlite3.Connection) -> None:
    counts = rep.ops["kind"].astype(str).value_counts().to_dict()
    assert counts == {"kernel": 234, "memset": 42, "memcpy": 21}
    for kind, table in (("kernel", "KERNEL"), ("memcpy", "MEMCPY"), ("memset", "MEMSET")):
        (total,) = db.execute(f"SELECT SUM(end - start) FROM CUPTI_ACTIVITY_KIND_{table}").fetchone()
        assert rep.ops.loc[rep.ops["kind"] == kind, "duration_ns"].sum() == total
    assert rep.ops["op_id"].tolist() == list(range(297))
    assert rep.ops["start_ns"].is_monotonic_increasing
    assert (rep.ops["duration_ns"] == rep.ops["end_ns"] - rep.ops["start_ns"]).all()


def test_kernel_names_and_launch_calls(rep: NsysReport, db: sqlite3.Connection) -> None:
    want = {
        (c, n, a)
        for c, n, a in db.execute(
            "SELECT k.correlationId, d.value, api.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds d ON d.id = k.demangledName "
            "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
            "JOIN StringIds api ON api.id = r.nameId"
        )
    }
    k = rep.ops[rep.ops["kind"] == "kernel"]
    got = {(int(c), n, a) for c, n, a in zip(k["correlation_id"], k["name"], k["launch_api"], strict=True)}
    # Same kernels, same names; API names lose their ABI suffix (cudaLaunchKernel_v7000).
    assert {(c, n) for c, n, _ in got} == {(c, n) for c, n, _ in want}
    assert {a for _, _, a in got} == {"cudaLaunchKernel", "cuLaunchKernelEx"}
    assert set(rep.ops["launch_tid"].unique()) == {MAIN_TID}
    assert set(rep.ops.loc[rep.ops["kind"] == "memcpy", "name"]) == {"[CUDA memcpy Device-to-Device]"}
    assert set(rep.ops.loc[rep.ops["kind"] == "memcpy", "bytes"]) == {1 << 30}
    mm = k[k["short_name"] == "nvjet_sm90_tst_64x32_64x16_1x2_h_bz_TNT"]
    assert set(mm["grid"]) == {"2,64,1"} and set(mm["block"]) == {"384,1,1"}


def test_ranges_names_paths_depths(rep: NsysReport) -> None:
    r = rep.ranges
    assert len(r) == 105
    assert set(r["kind"]) == {"pushpop"}
    assert r["domain"].isna().all()  # torch.cuda.nvtx writes to the default domain
    top = r[r["depth"] == 0]
    assert sorted(top["path"]) == sorted(BENCHES)
    inner = r[r["depth"] == 1]
    assert len(inner) == 100
    # The workload names its iteration ranges "<bench>/iter<i>" and nests them in "<bench>".
    want = {f"{b}/{b}/iter{i}" for b in BENCHES for i in range(20)}
    assert set(inner["path"]) == want
    assert (inner["path"] == inner["name"].str.split("/").str[0] + "/" + inner["name"]).all()


def test_per_range_counts_match_independent_sql(rep: NsysReport, db: sqlite3.Connection) -> None:
    # Per NVTX row: GPU ops whose launching runtime call started inside it on the same thread.
    sql = """
        SELECT n.text, o.kind, COUNT(*), SUM(o.dur)
        FROM NVTX_EVENTS n
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
          ON r.globalTid = n.globalTid AND r.start >= n.start AND r.start < n.end
        JOIN (SELECT correlationId AS c, 'kernel' AS kind, end - start AS dur FROM CUPTI_ACTIVITY_KIND_KERNEL
              UNION ALL SELECT correlationId, 'memcpy', end - start FROM CUPTI_ACTIVITY_KIND_MEMCPY
              UNION ALL SELECT correlationId, 'memset', end - start FROM CUPTI_ACTIVITY_KIND_MEMSET) o
          ON o.c = r.correlationId
        WHERE n.eventType = 59
        GROUP BY n.text, o.kind
    """
    want: dict[str, dict[str, int]] = {}
    for text, kind, n, dur in db.execute(sql):
        d = want.setdefault(text, {"kernel": 0, "memcpy": 0, "memset": 0, "gpu": 0})
        d[kind] += n
        d["gpu"] += dur
    path_of = dict(zip(rep.ranges["name"], rep.ranges["path"], strict=True))
    summary = summarize_by_range(rep).set_index("range")
    assert len(summary) == 105
    for text, d in want.items():
        row = summary.loc[path_of[text]]
        assert (row["kernels"], row["memcpy"], row["memset"], row["gpu_time_ns"]) == (
            d["kernel"],
            d["memcpy"],
            d["memset"],
            d["gpu"],
        ), text
        assert row["ops"] == d["kernel"] + d["memcpy"] + d["memset"]
    # A range with no ops at all would be missing from the SQL; here every range has ops.
    assert set(path_of[t] for t in want) == set(summary.index)


def test_span_and_busy_of_benchmark_range(rep: NsysReport, db: sqlite3.Connection) -> None:
    (start, end) = db.execute(
        "SELECT start, end FROM NVTX_EVENTS WHERE text = 'mm_small' AND eventType = 59"
    ).fetchone()
    first, last, total = db.execute(
        "SELECT MIN(k.start), MAX(k.end), SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
        "WHERE r.start >= ? AND r.start < ?",
        (start, end),
    ).fetchone()
    row = summarize_by_range(rep).set_index("range").loc["mm_small"]
    assert row["span_ns"] == last - first == 1621689
    # One stream, kernels one after another: busy time is the plain sum.
    assert row["busy_ns"] == row["gpu_time_ns"] == total == 1050780
    assert row["instances"] == 1


def test_timing_only_read_gives_the_same_summary(rep: NsysReport) -> None:
    lean = read_nsys(SQLITE, detail=False)
    assert lean.ops["name"].isna().all() and lean.ops["stream_id"].isna().all()
    assert lean.ops["start_ns"].tolist() == rep.ops["start_ns"].tolist()
    assert lean.attribution.equals(rep.attribution)
    assert summarize_by_range(lean).equals(summarize_by_range(rep))


def test_known_facts_of_the_workload(rep: NsysReport) -> None:
    s = summarize_by_range(rep).set_index("range")
    for i in range(20):
        copy = s.loc[f"copy_1g/copy_1g/iter{i}"]
        assert (copy["kernels"], copy["memcpy"]) == (0, 1)  # a tensor copy is a memcpy, not a kernel
    a = rep.attribution.merge(rep.ops, on="op_id").merge(
        rep.ranges[["range_id", "path", "depth"]], on="range_id"
    )
    iters = a[(a["depth"] == 1) & (a["kind"] == "kernel")]
    for b in ("mm_small", "mm_skinny", "mm_large"):
        mine = iters[iters["path"].str.startswith(f"{b}/")]
        assert len(mine) == 20 and mine.groupby("path").size().eq(1).all()
        assert mine["short_name"].str.startswith("nvjet_sm90").all()
    fill = rep.ops["name"].str.contains("FillFunctor")
    fill_ids = set(rep.ops.loc[fill, "op_id"])
    assert len(fill_ids) == 100
    in_bench = a[a["op_id"].isin(fill_ids)]
    # Flush kernels are inside their benchmark's range, never inside an iteration range.
    assert set(in_bench["depth"]) == {0}
    assert in_bench.groupby("path").size().to_dict() == {b: 20 for b in BENCHES}


def test_missing_and_wrong_files(tmp_path: Path) -> None:
    with pytest.raises(InputNotFound, match="does not exist"):
        read_nsys(tmp_path / "nope.sqlite")
    text = tmp_path / "notes.sqlite"
    text.write_text("kernel,duration\n")
    with pytest.raises(ReportParseError, match=r"notes\.sqlite is not an SQLite database"):
        read_nsys(text)
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(SQLITE.read_bytes()[:4096])
    with pytest.raises(ReportParseError, match=r"cut\.sqlite .*truncated or corrupt"):
        read_nsys(cut)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE people (name TEXT)")
    with pytest.raises(ReportParseError, match="not an nsys export"):
        read_nsys(other)


def test_report_without_nvtx(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM NVTX_EVENTS")
    rep = read_nsys(path)
    assert not rep.has_nvtx
    assert len(rep.ops) == 297
    assert rep.attribution.empty
    assert summarize_by_range(rep).empty


def test_older_schema_without_optional_tables_and_columns(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    with sqlite3.connect(path) as con:
        con.execute("DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET")
        con.execute("DROP TABLE ENUM_NSYS_EVENT_TYPE")
        con.execute("DROP TABLE ENUM_CUDA_MEMCPY_OPER")
        con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN demangledName")
        con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN graphNodeId")
        mangled = {
            v
            for (v,) in con.execute(
                "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.mangledName"
            )
        }
    rep = read_nsys(path)
    assert rep.ops["kind"].astype(str).value_counts().to_dict() == {"kernel": 234, "memcpy": 21}
    assert set(rep.ops.loc[rep.ops["kind"] == "kernel", "name"]) == mangled
    assert set(rep.ops.loc[rep.ops["kind"] == "memcpy", "name"]) == {"[CUDA memcpy kind 8]"}
    assert len(rep.ranges) == 105  # event types fall back to 59 / 60 / 75


def test_launch_calls_with_unknown_names_are_found_by_correlation_id(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE StringIds SET value = 'myOwnLaunch' WHERE value = 'cudaLaunchKernel_v7000'")
    rep = read_nsys(path)
    assert rep.ops["launch_tid"].notna().all()
    assert (rep.ops["launch_api"] == "myOwnLaunch").sum() == 150
    assert len(rep.attribution) == len(read_nsys(SQLITE).attribution)


def test_start_end_ranges_domains_and_graph_activity(tmp_path: Path) -> None:
    """Start/end ranges in a named domain, ended on another thread, and whole-graph activity.

    Added to a copy of the real capture: a domain-create row (type 75), a start/end range (type
    60) covering the mm_small benchmark, started on the main thread and ended on another, and a
    CUPTI_ACTIVITY_KIND_GRAPH_TRACE row launched by a cudaGraphLaunch call inside iter0.
    """
    path = _copy(tmp_path)
    with sqlite3.connect(path) as con:
        start, end = con.execute("SELECT start, end FROM NVTX_EVENTS WHERE text = 'mm_small'").fetchone()
        i0_start, i0_end = con.execute(
            "SELECT start, end FROM NVTX_EVENTS WHERE text = 'mm_small/iter0'"
        ).fetchone()
        worker = MAIN_TID + 1
        con.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (?, NULL, 75, 'scenario', ?, 7)",
            (start - 100, MAIN_TID),
        )
        con.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid, domainId) "
            "VALUES (?, ?, 60, 'whole_A', ?, ?, 7)",
            (start - 10, end + 10, MAIN_TID, worker),
        )
        con.execute("INSERT INTO StringIds (id, value) VALUES (990001, 'cudaGraphLaunch_v10000')")
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue) "
            "VALUES (?, ?, 1, ?, 990002, 990001, 0)",
            (i0_start + 1, i0_start + 2, worker),
        )
        con.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER, end INTEGER, deviceId INTEGER, "
            "contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, graphId INTEGER)"
        )
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (?, ?, 0, 1, 7, 990002, ?, 3)",
            (i0_end + 1000, i0_end + 6000, (MAIN_TID >> 24) << 24),
        )
    rep = read_nsys(path)
    se = rep.ranges[rep.ranges["kind"] == "startend"]
    assert se[["domain", "path", "depth"]].values.tolist() == [["scenario", "scenario:whole_A", 0]]
    assert int(se["end_global_tid"].iloc[0]) == worker
    graph = rep.ops[rep.ops["kind"] == "graph"]
    assert graph[["name", "duration_ns", "launch_api", "launch_tid"]].values.tolist() == [
        ["[CUDA graph 3]", 5000, "cudaGraphLaunch", worker]
    ]
    s = summarize_by_range(rep).set_index("range")
    # The start/end range holds the main thread's 40 kernels and the worker's graph launch.
    assert s.loc["scenario:whole_A", "ops"] == 41
    assert s.loc["scenario:whole_A", "kernels"] == 40
    assert s.loc["scenario:whole_A", "gpu_time_ns"] == s.loc["mm_small", "gpu_time_ns"] + 5000
    # Push/pop ranges are per thread: the worker's launch is not in mm_small/iter0.
    assert s.loc["mm_small/mm_small/iter0", "ops"] == 1


# --- scenario captures: start/end ranges in a domain, threads, streams, copies, CUDA graphs -----

SCEN = SQLITE.parent.parent.parent / "captures" / "scenarios"


@pytest.fixture(scope="module")
def scen() -> NsysReport:
    return read_nsys(SCEN / "scenarios.sqlite")


def _csv(name: str) -> list[dict[str, str]]:
    import csv

    with (SCEN / name).open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_scenario_ops_match_nsys_gpu_trace(scen: NsysReport) -> None:
    # `nsys stats --report cuda_gpu_trace`: one row per GPU op, written by nsys itself.
    trace = {
        (int(r["CorrId"]), int(r["Start (ns)"])): int(r["Duration (ns)"])
        for r in _csv("stats_cuda_gpu_trace.csv")
    }
    ours = {
        (int(c), int(s)): int(d)
        for c, s, d in zip(
            scen.ops["correlation_id"], scen.ops["start_ns"], scen.ops["duration_ns"], strict=True
        )
    }
    assert ours == trace
    assert scen.ops["launch_tid"].notna().all()


def test_scenario_ranges_match_nsys_projection(scen: NsysReport) -> None:
    # `nsys stats --report nvtx_gpu_proj_trace` projects push/pop ranges onto the GPU ops their
    # thread launched: its projected duration is our span (first op start to last op end).
    summary = summarize_by_range(scen).set_index("range")
    proj = [r for r in _csv("stats_nvtx_gpu_proj_trace.csv") if r["Style"] == "PushPop"]
    parent = {r["RangeId"]: r["Name"] for r in proj}
    checked = 0
    for r in proj:
        # nsys names a nested range by its own name; ours is the full path.
        path = r["Name"].lstrip(":")
        if r["ParentId"]:
            _, name = r["Name"].split(":", 1)
            path = f"{parent[r['ParentId']]}/{name}"
        row = summary.loc[path]
        assert row["span_ns"] == int(r["Projected Duration (ns)"]), path
        if "graph_replay" not in path:
            # nsys counts a graph launch as one op; we count the kernels of each traced node.
            assert row["ops"] == int(r["NumGPUOps"]), path
        checked += 1
    assert checked == 8


def test_scenario_threads_streams_copies_and_graph_nodes(scen: NsysReport) -> None:
    s = summarize_by_range(scen).set_index("range")
    copies = s.loc["nsightwrap:copies/iter0"]
    assert (copies["memcpy"], copies["memset"], copies["kernels"]) == (2, 1, 0)
    a = scen.attribution.merge(scen.ops, on="op_id").merge(scen.ranges[["range_id", "path"]], on="range_id")
    names = set(a.loc[a["path"] == "nsightwrap:copies/iter0", "name"])
    assert names == {"[CUDA memcpy Host-to-Device]", "[CUDA memcpy Device-to-Device]", "[CUDA memset]"}
    gemms = a[(a["path"] == "nsightwrap:two_streams/iter0") & (a["kind"] == "kernel")]
    assert len(gemms) == 2 and gemms["stream_id"].nunique() == 2
    graph = a[a["path"] == "nsightwrap:graph_replay/iter0"]
    assert len(graph) == 6 and graph["graph_node_id"].notna().all()
    assert set(graph["launch_api"]) == {"cudaGraphLaunch"} and graph["correlation_id"].nunique() == 2
    # The worker thread's kernels are in its own push/pop range, not in the main thread's.
    main_tid = int(scen.ranges.set_index("path").loc["nsightwrap:threaded", "global_tid"])
    worker = a[a["path"] == "worker_range"]
    assert len(worker) == 3 and (worker["launch_tid"] != main_tid).all()
    assert s.loc["nsightwrap:threaded", "ops"] == 1


def test_scenario_start_end_ranges_span_threads(scen: NsysReport) -> None:
    se = scen.ranges[scen.ranges["kind"] == "startend"].set_index("path")
    assert sorted(se.index) == ["scenario:startend_A", "scenario:startend_B"]
    assert set(se["domain"]) == {"scenario"} and set(se["depth"]) == {0}
    a_range = se.loc["scenario:startend_A"]
    assert a_range["end_global_tid"] != a_range["global_tid"]  # ended on the worker thread
    s = summarize_by_range(scen).set_index("range")
    # Start/end ranges take ops launched on any thread: main's cos, the worker's three ops.
    assert s.loc["scenario:startend_A", "ops"] == 4
    assert s.loc["scenario:startend_B", "ops"] == 4


def test_scenario_whole_graph_tracing(tmp_path: Path) -> None:
    rep = read_nsys(SCEN / "scenarios_graph.sqlite")
    graphs = rep.ops[rep.ops["kind"] == "graph"]
    assert graphs[["name", "launch_api"]].drop_duplicates().values.tolist() == [
        ["[CUDA graph 1]", "cudaGraphLaunch"]
    ]
    assert graphs["duration_ns"].tolist() == [7584, 6816]
    row = summarize_by_range(rep).set_index("range").loc["nsightwrap:graph_replay/iter0"]
    assert (row["ops"], row["graphs"], row["kernels"], row["gpu_time_ns"]) == (2, 2, 0, 7584 + 6816)
