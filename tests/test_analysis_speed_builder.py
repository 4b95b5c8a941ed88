"""benchmarks/analysis_speed.py's sweep builder repeats a benchmark's iterations up to a target
count (real ``do_bench`` volume) with consistent ids and times; the analysis finds them all."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from bench_modules import load_benchmark

ITERS, TARGET = 5, 23


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    spd = load_benchmark("analysis_speed")
    root = tmp_path_factory.mktemp("sweep")
    spd.build_run(root / "plain", 2, ITERS)
    spd.build_run(root / "repeated", 2, ITERS, TARGET)
    return root / "plain", root / "repeated"


def _iterations(db: Path) -> dict[str, list[tuple[str, int, int]]]:
    """Per sweep point, its iteration ranges (name, start, end) nested in its range, by start."""
    con = sqlite3.connect(db)
    q = ("SELECT n.start, n.end, s.value FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId "
         "WHERE n.eventType = 59 ORDER BY n.start")  # fmt: skip
    rows = con.execute(q).fetchall()
    con.close()
    out: dict[str, list[tuple[str, int, int]]] = {}
    for start, end, name in rows:
        if name.startswith("sweep"):
            out[name] = []
            bench = (name, start, end)
        else:
            assert bench[1] <= start and end <= bench[2], (name, bench)  # nested in its benchmark
            out[bench[0]].append((name, start, end))
    return out


def test_repeated_iterations_are_counted_named_and_ordered(runs: tuple[Path, Path]) -> None:
    plain, repeated = (_iterations(r / "nsys" / "report.sqlite") for r in runs)
    assert [len(v) for v in plain.values()] == [ITERS, ITERS]
    assert [len(v) for v in repeated.values()] == [TARGET, TARGET]
    for its in repeated.values():
        assert [n for n, _, _ in its] == [f"iter{i}" for i in range(TARGET)]
        # one after the other, never overlapping; each copy is the first's shifted by whole periods
        assert all(a[2] <= b[1] for a, b in zip(its, its[1:], strict=False))
        lengths = [e - s for _, s, e in its]
        assert lengths[ITERS : 2 * ITERS] == lengths[:ITERS]


def test_repeated_ids_are_unique_and_ops_keep_their_launches(runs: tuple[Path, Path]) -> None:
    plain, repeated = (sqlite3.connect(r / "nsys" / "report.sqlite") for r in runs)
    for con in (plain, repeated):
        n, distinct = con.execute("SELECT COUNT(*), COUNT(DISTINCT correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
        assert n == distinct
        for t in ("KERNEL", "MEMCPY", "MEMSET"):
            orphans = con.execute(
                f"SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_{t} WHERE correlationId NOT IN "
                "(SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME)"
            ).fetchone()[0]
            assert orphans == 0
        strings = con.execute("SELECT COUNT(*), COUNT(DISTINCT id) FROM StringIds").fetchone()
        assert strings[0] == strings[1]
    kernels = [c.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0] for c in (plain, repeated)]
    assert kernels[1] > 4 * kernels[0]  # 23 iterations where 5 were
    # a launch precedes its kernel in every copy, as in the capture
    late = repeated.execute(
        "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
        "USING (correlationId) WHERE k.start < r.start"
    ).fetchone()[0]
    assert late == 0


def test_repeated_sidecar_and_analysis(runs: tuple[Path, Path]) -> None:
    spd = load_benchmark("analysis_speed")
    from nsightwrap.analysis.load import analyze

    repeated = runs[1]
    doc = json.loads((repeated / "plain" / "timer-1.json").read_text())
    # the sweep's two source benchmarks hold 46 and 206 samples: the first is repeated to the target
    counts = [(len(b["samples_ns"]), len(b["sample_clock_hz"]), b["n"]) for b in doc["benchmarks"]]
    assert counts == [(46, 46, 46), (206, 206, 206)]
    e = spd._repeated({"samples_ns": [1.0, 2.0], "sample_clock_hz": [5.0, 6.0], "n": 2, "throttled": 1}, 5)
    assert e == {"samples_ns": [1.0, 2.0, 1.0, 2.0, 1.0], "sample_clock_hz": [5.0, 6.0, 5.0, 6.0, 5.0], "n": 5,
                 "throttled": 2}  # fmt: skip
    with spd.ncu_from_csv(repeated):
        result = analyze(repeated)
    assert [len(b.nsys.iterations_ns) for b in result.benchmarks] == [TARGET, TARGET]


def test_copies_cut_at_the_target() -> None:
    spd = load_benchmark("analysis_speed")
    w = {"start": 50, "cut": 400, "its": [100, 200, 300, 400, 500], "iterations": 3}
    assert spd._copies(w, None) == [(50, 400, 0, 0)]
    assert spd._copies(w, 3) == [(50, 400, 0, 0)]
    # period its[3] - its[0] = 300; copies of 3, 3 and 1 iterations
    assert spd._copies(w, 7) == [(50, 400, 0, 0), (100, 400, 300, 3), (100, 200, 600, 6)]
