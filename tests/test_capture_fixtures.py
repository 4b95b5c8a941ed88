"""The shipped H200 runs of three unmodified scripts (fixtures/runs/h200-{blog,timer,nvtx}, made
by ``nsightwrap profile`` of examples/blog_do_bench.py, torch_timer.py and own_nvtx.py): what the
capture layer recorded is what the script printed, its NVTX ranges hold exactly the timed
kernels (checked with SQL on the nsys export written here), ncu profiled exactly those (its rows
read here), and the analysis turns each into a benchmark with its source and the user's number.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import sqlite3
import statistics
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from nsightwrap.analysis.load import NSYS_ITERATIONS_ENV, analyze
from nsightwrap.analysis.model import RunResult, Verdict
from nsightwrap.parsers.ncu import read_ncu_rep

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


@cache
def _db(run: str, tmp: str) -> Path:
    out = Path(tmp) / f"{run}.sqlite"
    if not out.exists():
        with gzip.open(RUNS / run / "nsys" / "report.sqlite.gz", "rb") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return out


@pytest.fixture(scope="module")
def tmpdir_module(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("capture-fixtures"))


@cache
def _analysis(run: str) -> RunResult:
    # Every nsys iteration, as the SQL of these checks reads them (the cap: tests/test_nsys_iteration_cap.py).
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(NSYS_ITERATIONS_ENV, "0")
        return analyze(RUNS / run)


def _sidecar(run: str) -> dict[str, Any]:
    (p,) = sorted((RUNS / run / "plain").glob("timer-*-capture.json"))
    doc: dict[str, Any] = json.loads(p.read_text())
    return doc


_TEXT = "COALESCE(n.text, (SELECT value FROM StringIds WHERE id = n.textId))"


def _iterations(db: Path, bench: str) -> list[tuple[int, int, int]]:
    """(start, end, thread) of every push/pop range ``iter<k>`` nested in range ``bench``, in order."""
    q = f"""
        WITH r AS (SELECT n.start, n.end, n.globalTid, {_TEXT} AS name FROM NVTX_EVENTS n WHERE n.eventType = 59)
        SELECT i.start, i.end, i.globalTid FROM r p JOIN r i
          ON i.globalTid = p.globalTid AND i.start >= p.start AND i.end <= p.end AND i.name GLOB 'iter[0-9]*'
        WHERE p.name = ? ORDER BY i.start"""
    with sqlite3.connect(db) as con:
        return [(int(a), int(b), int(t)) for a, b, t in con.execute(q, (bench,))]


def _kernels_launched(db: Path, start: int, end: int, tid: int | None) -> list[tuple[str, int, int, int]]:
    """(name, duration, gpu start, gpu end) of kernels whose launch call ran in [start, end] (on
    thread ``tid``, or any thread of the process when None), in launch order."""
    thread = "AND r.globalTid = ?" if tid is not None else ""
    q = f"""
        SELECT (SELECT value FROM StringIds WHERE id = k.demangledName), k.end - k.start, k.start, k.end
        FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId
        WHERE r.start >= ? AND r.start <= ? {thread} ORDER BY r.start, k.start"""
    args = (start, end, tid) if tid is not None else (start, end)
    with sqlite3.connect(db) as con:
        return [(str(a), int(b), int(c), int(d)) for a, b, c, d in con.execute(q, args)]


def _printed(run: str, pattern: str) -> list[float]:
    return [float(m) for m in re.findall(pattern, (RUNS / run / "plain" / "stdout.log").read_text())]


# ----------------------------------------------------------------------------- blog's recipe + do_bench


def test_blog_run_captured_every_timing_the_script_printed() -> None:
    doc = _sidecar("h200-blog")
    names = [b["name"] for b in doc["benchmarks"]]
    assert names == [f"blog_do_bench.py:36 do_bench_cuda #{i}" for i in (1, 2, 3)] + [
        f"blog_do_bench.py:58 do_bench #{i}" for i in (1, 2, 3)
    ]
    assert doc["not_captured"] == [] and doc["capture_errors"] == []
    events = _printed("h200-blog", r"do_bench_cuda \S+: median ([\d.]+) us")
    triton = _printed("h200-blog", r"triton do_bench \S+: median ([\d.]+) us")
    for b, us in zip(doc["benchmarks"], events + triton, strict=True):
        assert round(b["user_value_ns"] / 1e3, 2) == us  # the script's own median, as it printed it
    for b in doc["benchmarks"][:3]:
        assert b["n"] == 10 and b["user_value_ns"] == statistics.median(b["samples_ns"])
    for b in doc["benchmarks"][3:]:
        m = b["method"]
        assert (m["flush"], m["flush_bytes"], m["estimate_window"], m["return_mode"]) == ("zero", 256 << 20, True, "median")
        assert m["queued_before_sync"] == m["repeats"] == b["n"]


def test_blog_event_windows_hold_the_timed_gemm_alone(tmpdir_module: str) -> None:
    db = _db("h200-blog", tmpdir_module)
    res = {b.name: b for b in _analysis("h200-blog").benchmarks}
    for i in (1, 2, 3):
        name = f"blog_do_bench.py:36 do_bench_cuda #{i}"
        its = _iterations(db, name)
        assert len(its) == 10
        sums = []
        held = 0
        for k, (start, end, tid) in enumerate(its):
            ks = _kernels_launched(db, start, end, tid)
            assert len(ks) == 1 and "sgemm" not in ks[0][0] and "Fill" not in ks[0][0]  # the bf16 GEMM only
            sums.append(float(ks[0][1]))
            # What ran before the window: the flush (a fill kernel) and the dummy fp32 matmul,
            # which was still running when the timed GEMM was queued.
            prev_end = its[k - 1][1] if k else start - 2_000_000_000
            before = _kernels_launched(db, prev_end + 1, start, tid)[-2:]
            assert "FillFunctor<signed char>" in before[0][0] and "f32f32" in before[1][0]
            held += before[1][3] > start  # the dummy matmul still ran when the window opened
        assert held >= 8  # (the first window of a call can find the queue already drained)
        b = res[name]
        assert b.nsys is not None and b.nsys.iterations_ns == tuple(sums)
        m = b.timer.method if b.timer else {}
        assert (m["flush"], m["hold_queue"], m["calls_per_sample"]) == ("zero", True, 1)
        assert b.source["kind"] == "cuda_events" and b.source["call"] == i and b.source["function"] == "do_bench_cuda"


def test_blog_do_bench_ranges_leave_the_estimate_and_the_flushes_out(tmpdir_module: str) -> None:
    db = _db("h200-blog", tmpdir_module)
    doc = {b["name"]: b for b in _sidecar("h200-blog")["benchmarks"]}
    for i in (1, 2, 3):
        name = f"blog_do_bench.py:58 do_bench #{i}"
        its = _iterations(db, name)
        # One iter<k> range per timed repeat. The nsys pass is a run of its own: triton chose its
        # repeat count from that run's estimate, a few less than the plain pass's under nsys.
        assert 0.5 * doc[name]["n"] < len(its) <= doc[name]["n"]
        res = {b.name: b for b in _analysis("h200-blog").benchmarks}[name]
        assert res.nsys is not None and len(res.nsys.iterations_ns) == len(its)
        for start, end, tid in its[:5]:
            (k,) = _kernels_launched(db, start, end, tid)
            assert "Fill" not in k[0]
    q = f"""SELECT n.start, n.end, n.globalTid FROM NVTX_EVENTS n WHERE {_TEXT} = 'estimate' ORDER BY n.start"""
    with sqlite3.connect(db) as con:
        est = con.execute(q).fetchall()
    assert len(est) == 3  # triton's runtime estimate of each call: 5 flushes + 5 calls, not a sample
    names = [k[0] for k in _kernels_launched(db, est[0][0], est[0][1], est[0][2])]
    assert len(names) == 10 and sum("FillFunctor<int>" in n for n in names) == 5


def test_blog_ncu_profiled_exactly_the_first_windows_and_repeats() -> None:
    k = read_ncu_rep(RUNS / "h200-blog" / "ncu" / "report.ncu-rep.gz")
    assert len(k) == 12  # 6 timings x --ncu-iters 2, and nothing else (no flush, no dummy matmul)
    per: dict[str, list[float]] = {}
    for paths, dur in zip(k["nvtx_ranges"], k["duration_ns"], strict=True):
        (it,) = [p for p in paths if re.fullmatch(r"nsightwrap:.*/iter\d", p)]
        per.setdefault(it.rsplit("/", 1)[0], []).append(float(dur))
    assert sorted(per) == sorted(f"nsightwrap:{b['name']}" for b in _sidecar("h200-blog")["benchmarks"])
    res = {b.nvtx_path: b for b in _analysis("h200-blog").benchmarks}
    for path, durs in per.items():
        n = res[path].ncu
        assert n is not None and n.iterations_ns == tuple(durs) and n.median_ns == statistics.median(durs)


def test_blog_verdicts_show_the_recipe_and_do_bench_gaps() -> None:
    res = {b.name: b for b in _analysis("h200-blog").benchmarks}
    small, large = res["blog_do_bench.py:36 do_bench_cuda #1"], res["blog_do_bench.py:36 do_bench_cuda #3"]
    assert small.verdict is Verdict.FLAGGED and small.ratio_raw == pytest.approx(16.224 / 12.91, rel=0.01)
    # The large GEMM agrees with ncu at ncu's own clock (1.60 GHz); the plain pass's sampled clock
    # (the reference: no clock was measured during the timing) reads 1.98 GHz.
    assert large.ratio_raw == pytest.approx(1.0, abs=0.02) and large.ref_clock_hz == 1.98e9
    db1 = res["blog_do_bench.py:58 do_bench #1"]
    assert db1.verdict is Verdict.FLAGGED and db1.user_value_ns == pytest.approx(18.11e3, abs=6)
    assert db1.timer is not None and db1.timer.sm_clock_hz is None  # the layer measures no clock
    assert any(n.startswith("captured: triton.testing.do_bench at blog_do_bench.py:58 (call 1)") for n in db1.notes)


# ----------------------------------------------------------------------------- torch.utils.benchmark


def test_timer_run_captured_every_measurement(tmpdir_module: str) -> None:
    doc = _sidecar("h200-timer")
    by = {b["name"]: b for b in doc["benchmarks"]}
    assert list(by) == ["linear 64x4096x4096 bf16", "linear 2x19456x2560 bf16", "linear 2048x19456x2560 bf16",
                        "torch_timer.py:41 Timer.timeit #1", "torch_timer.py:42 Timer.adaptive_autorange #1"]  # fmt: skip
    printed = _printed("h200-timer", r"\d+x\d+x\d+: ([\d.]+) us per run")
    for b, us in zip(list(by.values())[:3], printed, strict=True):
        assert round(b["user_value_ns"] / 1e3, 2) == us
        assert b["details"]["label"] == "linear" and b["details"]["description"] == "bf16"
    t = by["torch_timer.py:41 Timer.timeit #1"]
    assert t["method"]["number_per_run"] == 200 and t["n"] == 1
    db = _db("h200-timer", tmpdir_module)
    res = {r.name: r for r in _analysis("h200-timer").benchmarks}
    for name, b in by.items():
        its = _iterations(db, name)
        # One range per measured block (the nsys pass's own run: the Timer chose its count there).
        got = res[name].nsys
        assert its and got is not None and len(got.iterations_ns) == len(its)
        start, end, tid = its[0]
        assert len(_kernels_launched(db, start, end, tid)) == b["method"]["number_per_run"]


def test_timer_ncu_pass_ran_two_iterations_each() -> None:
    k = read_ncu_rep(RUNS / "h200-timer" / "ncu" / "report.ncu-rep.gz")
    its = [next(p for p in paths if re.fullmatch(r"nsightwrap:.*/iter\d", p)) for paths in k["nvtx_ranges"]]
    assert len(its) == 10 and len(set(its)) == 10 and {p[-5:] for p in its} == {"iter0", "iter1"}


# ----------------------------------------------------------------------------- the script's own NVTX ranges


def test_own_ranges_become_benchmarks_with_nsys_numbers(tmpdir_module: str) -> None:
    res = {b.name: b for b in _analysis("h200-nvtx").benchmarks}
    assert set(res) == {"own_nvtx.py:52 do_bench #1", "mydomain:myrange", "graph_replay", "step", "step/mm",
                        "step/softmax", "two_streams", "copies", "worker"}  # fmt: skip
    db = _db("h200-nvtx", tmpdir_module)
    q = f"SELECT n.start, n.end, n.globalTid, n.eventType FROM NVTX_EVENTS n WHERE {_TEXT} = ? ORDER BY n.start"
    with sqlite3.connect(db) as con:
        graph = con.execute(q, ("graph_replay",)).fetchall()
        mine = con.execute(q, ("myrange",)).fetchall()
        worker = con.execute(q, ("worker",)).fetchall()
    sums = [float(sum(k[1] for k in _kernels_launched(db, s, e, t))) for s, e, t, _ in graph]
    g = res["graph_replay"]
    assert len(graph) == 3 and g.nsys is not None and g.nsys.iterations_ns == tuple(sums)
    assert g.nsys.kernels_per_iteration == (3, 3, 3)  # the graph's three kernels, traced per node
    assert g.source == {"kind": "nvtx_range", "site": None, "call": None, "label": "graph_replay", "domain": None,
                        "range_kind": "pushpop", "instances": 3}  # fmt: skip
    (s, e, _, kind) = mine[0]
    assert kind == 60  # a start/end range: any thread of the process
    r = res["mydomain:myrange"]
    assert r.nsys is not None and r.nsys.iterations_ns == (float(sum(k[1] for k in _kernels_launched(db, s, e, None))),)
    assert r.ncu is None and r.verdict is Verdict.NO_TIMER  # it holds the captured do_bench
    w = res["worker"]
    assert w.nsys is not None and len(worker) == 3 and w.nsys.kernels_per_iteration == (1, 1, 1)
    assert res["copies"].nsys is not None and res["copies"].nsys.memcpy_per_iteration == (1, 1, 1)


def test_own_ranges_ncu_profiled_their_first_instances() -> None:
    k = read_ncu_rep(RUNS / "h200-nvtx" / "ncu" / "report.ncu-rep.gz")
    mirrored = [p for paths in k["nvtx_ranges"] for p in paths if re.fullmatch(r"nsightwrap_nvtx:[^/]+/iter\d", p)]
    assert sorted(set(mirrored)) == sorted(
        [f"nsightwrap_nvtx:{n}/iter{i}" for n in ("graph_replay", "step", "two_streams", "worker") for i in (0, 1)]
        + ["nsightwrap_nvtx:mydomain:myrange/iter0"]  # one instance only: ranges beyond --ncu-iters are not mirrored
    )
    res = {b.name: b for b in _analysis("h200-nvtx").benchmarks}
    durs = [float(d) for paths, d in zip(k["nvtx_ranges"], k["duration_ns"], strict=True)
            if "nsightwrap_nvtx:graph_replay/iter0" in paths]  # fmt: skip
    g = res["graph_replay"].ncu
    assert g is not None and len(durs) == 3 and g.iterations_ns[0] == sum(durs) and g.kernels_per_iteration == (3, 3)
    mm = res["step/mm"].ncu  # nested: its kernel is in "step" too
    assert mm is not None and mm.kernels_per_iteration == (1, 1) and "nvjet" in mm.kernel_names[0]
    st = res["step"].ncu
    assert st is not None and st.kernels_per_iteration == (3, 3)
