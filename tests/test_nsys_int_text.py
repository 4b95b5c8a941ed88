"""nsys's integer columns read as one text per column (parsers.nsys._int_matrix): the values are the
ones a row-by-row read gives, and a value that is not an integer falls back to that read."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nsightwrap.core.errors import ReportParseError
from nsightwrap.parsers.nsys import _NULL, _int_matrix, _matrix, read_nsys

SQLITE = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-example" / "nsys" / "report.sqlite.gz"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"


def _row_by_row(con: sqlite3.Connection, exprs: list[str], rest: str) -> np.ndarray:
    select = ", ".join(f"IFNULL({e}, {_NULL})" for e in exprs)
    return _matrix(con.execute(f"SELECT {select} {rest}").fetchall(), len(exprs), False)


@pytest.fixture()
def export(tmp_path: Path) -> Path:
    out = tmp_path / "report.sqlite"
    with gzip.open(SQLITE, "rb") as src, out.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def test_real_tables_read_as_row_by_row(export: Path) -> None:
    with closing(sqlite3.connect(export)) as con:
        for table, cols in ((KERNEL, ["start", "[end]", "correlationId", "streamId", "globalPid"]),
                            ("CUPTI_ACTIVITY_KIND_RUNTIME", ["nameId", "globalTid", "start", "[end]", "correlationId"])):  # fmt: skip
            fast = _int_matrix(con, cols, f"FROM {table} WHERE start IS NOT NULL")
            slow = _row_by_row(con, cols, f"FROM {table} WHERE start IS NOT NULL")
            assert fast is not None and fast.dtype == np.int64 and len(fast) > 100
            np.testing.assert_array_equal(fast, slow)


def test_nulls_extremes_and_what_is_not_an_integer(tmp_path: Path) -> None:
    with closing(sqlite3.connect(tmp_path / "t.sqlite")) as con:
        con.execute("CREATE TABLE t (a INTEGER, b INTEGER, c)")
        rows = [(1, None, -5), (2**63 - 1, -(2**63), 0), (None, 7, 12), (-1, 0, 281496401216765)]
        con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        fast = _int_matrix(con, ["a", "b", "c"], "FROM t")
        assert fast is not None
        np.testing.assert_array_equal(fast, _row_by_row(con, ["a", "b", "c"], "FROM t"))
        assert fast[0, 1] == _NULL and fast[1, 0] == 2**63 - 1 and fast[1, 1] == -(2**63)
        empty = _int_matrix(con, ["a", "b"], "FROM t WHERE a IS NULL AND b IS NULL")
        assert empty is not None and empty.shape == (0, 2)
        # Untyped column c keeps what it is given: a float, text with a comma, text, a blank.
        for odd in (2.5, 3.0, "1,2", "x", "", " 4", b"\x00"):
            con.execute("UPDATE t SET c = ? WHERE rowid = 1", (odd,))
            assert _int_matrix(con, ["a", "c"], "FROM t") is None, odd


def test_a_float_start_reads_as_before(export: Path) -> None:
    """A float where nsys writes an integer: the row-by-row read takes its integer part."""
    before = read_nsys(export).ops
    with closing(sqlite3.connect(export)) as con, con:
        con.execute(f"UPDATE {KERNEL} SET start = start + 0.25 WHERE rowid = (SELECT MIN(rowid) FROM {KERNEL})")
    after = read_nsys(export).ops
    pd.testing.assert_frame_equal(before, after)


def test_text_with_a_comma_is_still_an_error(export: Path) -> None:
    """Text a count of commas would shift ("7,8") is never split into two values."""
    with closing(sqlite3.connect(export)) as con, con:
        con.execute(f"UPDATE {KERNEL} SET streamId = '7,8' WHERE rowid = (SELECT MIN(rowid) FROM {KERNEL})")
    with pytest.raises(ReportParseError, match="a table holds a value nsys never writes"):
        read_nsys(export)


def test_range_text_inline_reads_as_through_string_ids(export: Path) -> None:
    """A range's text inline or through StringIds (textId) gives the same ranges; an id that
    StringIds lacks gives no text, as the SQL join does."""
    before = read_nsys(export).ranges
    with closing(sqlite3.connect(export)) as con, con:
        moved = con.execute(
            "UPDATE NVTX_EVENTS SET text = (SELECT value FROM StringIds WHERE id = textId), textId = NULL "
            "WHERE textId IS NOT NULL AND rowid % 2 = 0"
        ).rowcount
        assert moved > 10
    pd.testing.assert_frame_equal(read_nsys(export).ranges, before)
    with closing(sqlite3.connect(export)) as con, con:
        (gone,) = con.execute("SELECT textId FROM NVTX_EVENTS WHERE textId IS NOT NULL LIMIT 1").fetchone()
        con.execute("DELETE FROM StringIds WHERE id = ?", (gone,))
    after = read_nsys(export).ranges
    assert len(after) == len(before)
    assert (after["name"] == "").sum() > (before["name"] == "").sum()
