"""The cap on nsys iterations read per benchmark (parsers.nsys.IterationCap, NSIGHTWRAP_NSYS_ITERATIONS),
on the real H200 sweep capture: its do_bench calls ran 154, 3,276, 3,002, 198 and 1,136 iterations."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nsightwrap.analysis.iterations import nsys_iterations, nsys_stats_all
from nsightwrap.analysis.load import NSYS_ITERATIONS_ENV, analyze, nsys_iteration_cap
from nsightwrap.core.errors import UsageError
from nsightwrap.parsers.nsys import IterationCap, NsysReport, read_nsys

RUN = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-sweep"
SQLITE = RUN / "nsys" / "report.sqlite.gz"
CALLS = {1: 154, 2: 3276, 3: 3002, 4: 198, 5: 1136}
HEADS = {i: f"nsightwrap:sweep.py:17 do_bench #{i}/iter" for i in CALLS}
TIMER = "nsightwrap:sweep.py:21 Timer.blocked_autorange #1/iter"
ALL_HEADS = frozenset([*HEADS.values(), TIMER])


@pytest.fixture(scope="module")
def full() -> NsysReport:
    return read_nsys(SQLITE)


@pytest.fixture(scope="module")
def capped() -> NsysReport:
    return read_nsys(SQLITE, iterations=IterationCap(ALL_HEADS, 200))


@pytest.fixture(scope="module")
def small() -> NsysReport:
    """Eight iterations a loop: runs of one, each after its lead-in instance."""
    return read_nsys(SQLITE, iterations=IterationCap(ALL_HEADS, 8))


def _instances(rep: NsysReport, head: str) -> pd.DataFrame:
    r = rep.ranges[rep.ranges["path"].astype(str).str.startswith(head)]
    r = r[r["path"].astype(str).str[len(head) :].str.isdigit()]
    return r.assign(index=r["path"].astype(str).str[len(head) :].astype(int)).sort_values("index")


def _ops_of(rep: NsysReport, range_ids: pd.Series) -> set[tuple[int, int, str, int]]:
    """The ops launched inside the given ranges, by what identifies them in any read of the export."""
    ids = rep.attribution.loc[rep.attribution["range_id"].isin(range_ids), "op_id"]
    ops = rep.ops.set_index("op_id").loc[ids]
    return set(zip(ops["start_ns"], ops["end_ns"], ops["name"].astype(str), ops["correlation_id"], strict=True))


def test_loops_over_the_cap_are_cut_and_say_so(capped: NsysReport) -> None:
    # Runs of 200 // 64 = 3, as many as fit: 66 runs, 198 iterations analysed.
    assert capped.iterations_read == {HEADS[2]: (198, 3276, 66), HEADS[3]: (198, 3002, 66),
                                      HEADS[5]: (198, 1136, 66)}  # fmt: skip
    for i in (2, 3, 5):
        inst = _instances(capped, HEADS[i])
        # Each run after one lead-in instance (none before the first).
        assert len(inst) == 198 + 65
        lead = inst["range_id"].isin(list(capped.lead_in_ranges))
        assert int(lead.sum()) == 65
        analysed = inst.loc[~lead, "index"].to_numpy()
        firsts = IterationCap(ALL_HEADS, 200).layout(CALLS[i])
        assert analysed.tolist() == sorted((firsts[:, None] + np.arange(3)).ravel().tolist())
        assert analysed[0] == 0 and analysed[-1] == CALLS[i] - 1
        assert sorted(inst.loc[lead, "index"].tolist()) == (firsts[1:] - 1).tolist()


def test_loops_under_the_cap_read_as_before(full: NsysReport, capped: NsysReport) -> None:
    for head in (HEADS[1], HEADS[4], TIMER):
        a, b = _instances(full, head), _instances(capped, head)
        assert a["index"].tolist() == b["index"].tolist() and len(a) in (154, 198, 7)
        assert _ops_of(full, a["range_id"]) == _ops_of(capped, b["range_id"])


def test_kept_iterations_hold_every_op_and_left_out_ones_none(full: NsysReport, small: NsysReport) -> None:
    assert small.iterations_read[HEADS[5]] == (8, 1136, 8)
    a, b = _instances(full, HEADS[5]), _instances(small, HEADS[5])
    kept = b["index"].tolist()
    assert kept == [0, 161, 162, 323, 324, 485, 486, 647, 648, 809, 810, 971, 972, 1134, 1135]
    # The ops SQLite handed back for the kept instances (lead-ins too) are every op nsys launched there.
    assert _ops_of(small, b["range_id"]) == _ops_of(full, a.loc[a["index"].isin(kept), "range_id"])
    # Nothing of the instances left out, nor of what ran between them, is read.
    assert len(small.ops) < len(full.ops) / 3
    gone = _ops_of(full, a.loc[~a["index"].isin(kept), "range_id"])
    read = set(zip(small.ops["start_ns"], small.ops["end_ns"], small.ops["name"].astype(str),
                   small.ops["correlation_id"], strict=True))  # fmt: skip
    assert not gone & read
    # Every op read still finds its launch call.
    assert small.ops["launch_start_ns"].notna().all()


def test_iterations_found_leave_lead_ins_out(small: NsysReport, full: NsysReport) -> None:
    class Spec:
        def __init__(self, i: int) -> None:
            self.nvtx_path, self.iter_prefix = HEADS[i][: -len("/iter")], "iter"

    specs = [Spec(i) for i in (1, 5)]
    found = nsys_iterations(small.ops, small.ranges, small.attribution, specs, small.event_calls,
                            small.lead_in_ranges)  # fmt: skip
    stats = nsys_stats_all(found, 2)
    assert len(stats[0].iterations_ns) == 8  # 154 > 8: capped too
    assert len(stats[1].iterations_ns) == 8
    assert found.lead_in_ops is not None and set(found.lead_in_ops["spec"]) == {0, 1}
    whole = nsys_stats_all(nsys_iterations(full.ops, full.ranges, full.attribution, specs, full.event_calls), 2)
    picked = [0, 162, 324, 486, 648, 810, 972, 1135]
    assert list(stats[1].iterations_ns) == [whole[1].iterations_ns[i] for i in picked]


def test_no_cap_reads_the_same_frames(full: NsysReport) -> None:
    again = read_nsys(SQLITE, iterations=IterationCap(frozenset({"no such loop/iter"}), 8))
    assert again.iterations_read == {} and again.lead_in_ranges == frozenset()
    for a, b in ((full.ops, again.ops), (full.ranges, again.ranges), (full.attribution, again.attribution),
                 (full.event_calls, again.event_calls), (full.setup_calls, again.setup_calls)):  # fmt: skip
        pd.testing.assert_frame_equal(a, b)


def test_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NSYS_ITERATIONS_ENV, raising=False)
    assert nsys_iteration_cap() == 256
    monkeypatch.setenv(NSYS_ITERATIONS_ENV, "0")
    assert nsys_iteration_cap() is None
    monkeypatch.setenv(NSYS_ITERATIONS_ENV, "100")
    assert nsys_iteration_cap() == 100
    for bad in ("1", "-5", "many"):
        monkeypatch.setenv(NSYS_ITERATIONS_ENV, bad)
        with pytest.raises(UsageError, match=NSYS_ITERATIONS_ENV):
            nsys_iteration_cap()


def test_the_report_notes_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NSYS_ITERATIONS_ENV, "200")
    res = analyze(RUN)
    by = {b.name: b for b in res.benchmarks}
    note = "nsys iterations analysed: 198 of 1,136 (66 evenly spaced runs of 3 over the loop; "
    assert any(n.startswith(note) for n in by["sweep.py:17 do_bench #5"].notes)
    assert by["sweep.py:17 do_bench #5"].nsys is not None
    assert len(by["sweep.py:17 do_bench #5"].nsys.iterations_ns) == 198
    for name, n in (("sweep.py:17 do_bench #1", 154), ("sweep.py:17 do_bench #4", 198)):
        assert not any("nsys iterations analysed" in x for x in by[name].notes)
        assert len(by[name].nsys.iterations_ns) == n  # type: ignore[union-attr]


def test_a_second_process_reads_every_iteration(tmp_path: Path) -> None:
    # The skipped windows stand for correlation ids of one process: with a kernel of another
    # process in the export, nothing is capped, and that kernel keeps its process.
    db = _unpacked(tmp_path)
    with closing(sqlite3.connect(db)) as con, con:
        (pid,) = con.execute("SELECT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1").fetchone()
        other = pid + (1 << 24)  # the process part of a globalPid lies above bit 24
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = ? WHERE rowid = 1", (other,))
        (kernels,) = con.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    rep = read_nsys(db, iterations=IterationCap(ALL_HEADS, 8))
    assert rep.iterations_read == {}
    assert not rep.lead_in_ranges
    assert set(rep.ops["global_pid"].dropna().astype(int)) == {pid, other}
    assert int((rep.ops["kind"] == "kernel").sum()) == kernels


def _unpacked(tmp_path: Path) -> Path:
    db = tmp_path / "copy.sqlite"
    with gzip.open(SQLITE, "rb") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return db


def _sorted(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    return df.sort_values(by, kind="stable", ignore_index=True)


def test_rows_out_of_time_order_read_the_same(small: NsysReport, tmp_path: Path) -> None:
    # The skipped windows are left out by blocks of rowids whose sampled times (correlation ids)
    # they meet: with the runtime and kernel tables in shuffled row order no block follows time,
    # and what is read must still be exactly the calls and ops outside the windows.
    db = _unpacked(tmp_path)
    with closing(sqlite3.connect(db)) as con, con:
        for table in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL"):
            con.execute(f"CREATE TABLE shuffled AS SELECT * FROM {table} ORDER BY (rowid * 7919) % 10007, rowid")
            con.execute(f"DROP TABLE {table}")
            con.execute(f"ALTER TABLE shuffled RENAME TO {table}")
    again = read_nsys(db, iterations=IterationCap(ALL_HEADS, 8))
    assert again.iterations_read == small.iterations_read and again.lead_in_ranges == small.lead_in_ranges
    pd.testing.assert_frame_equal(again.ranges, small.ranges)
    key = ["start_ns", "end_ns", "correlation_id"]
    pd.testing.assert_frame_equal(_sorted(again.ops.drop(columns="op_id"), key),
                                  _sorted(small.ops.drop(columns="op_id"), key))  # fmt: skip
    for a, b in ((again.event_calls, small.event_calls), (again.setup_calls, small.setup_calls)):
        pd.testing.assert_frame_equal(_sorted(a, list(a.columns)), _sorted(b, list(b.columns)))
