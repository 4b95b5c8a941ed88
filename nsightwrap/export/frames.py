"""A tidy frame as text: a rich terminal table, CSV, JSON records or a Markdown table.

Values are printed, never computed: NaN and NA become empty cells / ``null``, numpy scalars become
plain numbers, tuples (lists of NVTX paths) are joined. Every text cell of a Markdown table is
escaped (kernel names hold ``|``, ``<``, ``>``, ``*``), and every cell of the terminal table has
its control and bidi characters shown escaped.

CSV, JSON and Markdown are written a chunk of rows at a time, so a frame of a million rows costs
the frame and one chunk, not a second copy of it as text or Python objects. The terminal table
holds at most ``max_rows`` rows (rich measures every cell before printing the first line, so a
million-row table is minutes and gigabytes before any output) and says what it left out.
"""

from __future__ import annotations

import datetime
import json
import math
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from nsightwrap.export.escape import csv_cell, md_cell, terminal_safe

FORMATS = ("table", "csv", "json", "md")
#: Rows per chunk written to CSV, JSON and Markdown.
CHUNK_ROWS = 50_000


def write_frame(
    frame: pd.DataFrame,
    fmt: str,
    *,
    title: str = "",
    table_columns: Sequence[str] = (),
    md_columns: Sequence[str] = (),
    max_rows: int | None = None,
    out: TextIO | None = None,
) -> None:
    """Print ``frame`` in ``fmt`` (one of FORMATS). CSV and JSON carry every column; the terminal
    table shows ``table_columns`` and Markdown ``md_columns`` (default: the table's; all if none).

    ``max_rows`` (None: every row) keeps the first that many rows; the table and Markdown then end
    with a line saying how many of how many rows are shown and how to get all of them (CSV and
    JSON stay bare data)."""
    stream = out if out is not None else sys.stdout
    shown = [c for c in (table_columns or frame.columns) if c in frame.columns]
    total = len(frame)
    if max_rows is not None and max_rows < total:
        frame = frame.iloc[:max_rows]
    left_out = total - len(frame)
    if fmt == "csv":
        for i, chunk in enumerate(_chunks(frame)):
            _csv_safe(_flat(chunk)).to_csv(stream, index=False, header=i == 0)
    elif fmt == "json":
        _write_json(frame, stream)
    elif fmt == "md":
        wanted = [c for c in md_columns if c in frame.columns] or shown
        write_markdown(frame, wanted, stream)
        if left_out:
            stream.write(f"\n_{count_line(len(frame), total)}_\n")
    elif fmt == "table":
        _rich_table(frame, title, shown, stream, count_line(len(frame), total) if left_out else "")
    else:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")


def count_line(shown: int, total: int) -> str:
    """What a cut table says under its rows: how many are shown, and the options that give all."""
    return f"{shown:,} of {total:,} rows shown; every row: --limit 0, or --format csv (or json) for a file"


def _chunks(frame: pd.DataFrame) -> Iterator[pd.DataFrame]:
    """``frame`` in slices of CHUNK_ROWS rows (views, not copies); an empty frame as itself once."""
    yield frame.iloc[:CHUNK_ROWS]
    for start in range(CHUNK_ROWS, len(frame), CHUNK_ROWS):
        yield frame.iloc[start : start + CHUNK_ROWS]


def _flat(frame: pd.DataFrame) -> pd.DataFrame:
    """Tuples (ncu's list of NVTX paths) as ``;``-joined text, for CSV."""
    out = frame
    for c in frame.columns:
        if frame[c].dtype != object:
            continue
        first = frame[c].dropna().head(1)
        # A column holds tuples throughout or not at all: its first value tells.
        if len(first) and isinstance(first.iloc[0], tuple | list):
            if out is frame:
                out = frame.copy()
            out[c] = frame[c].map(lambda v: ";".join(map(str, v)) if isinstance(v, tuple | list) else v)
    return out


def _csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells and column names as ``csv_cell`` makes them: kernel and NVTX names are the
    profiled program's, and reach a terminal (``cat ops.csv``) or a spreadsheet as they are."""
    text = [c for c in frame.columns if frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c].dtype)]
    out = frame.copy() if text else frame
    for c in text:
        out[c] = frame[c].map(csv_cell)
    return out.rename(columns=lambda c: csv_cell(c) if isinstance(c, str) else c)


def _write_json(frame: pd.DataFrame, stream: TextIO) -> None:
    """The bytes of ``json.dump(records(frame), stream, indent=1)``, one chunk of records at a time."""
    if frame.empty:
        stream.write("[]\n")
        return
    stream.write("[\n")
    for i, chunk in enumerate(_chunks(frame)):
        text = json.dumps(records(chunk), indent=1)
        if i:
            stream.write(",\n")
        stream.write(text[2:-2])  # the records without the list's own "[\n" and "\n]"
    stream.write("\n]\n")


def _plain(v: Any) -> Any:
    """A JSON-ready value: numpy scalars to Python, NaN/NA to None, tuples to lists."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, tuple | list | np.ndarray):
        return [_plain(x) for x in v]
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, datetime.datetime | datetime.timedelta | np.datetime64 | np.timedelta64):
        # nvidia-smi's sample times: ISO 8601 text (json cannot hold a Timestamp).
        return pd.Timestamp(v).isoformat() if isinstance(v, datetime.datetime | np.datetime64) else str(v)
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _plain_column(col: pd.Series) -> list[Any]:
    """``[_plain(v) for v in col]``, with numpy's own conversion for plain int, bool and float
    columns (a million-row frame has tens of millions of cells)."""
    kind = col.dtype.kind if isinstance(col.dtype, np.dtype) else "O"
    if kind in ("i", "u", "b"):
        return col.to_numpy().tolist()
    if kind == "f":
        return [None if v != v else v for v in col.to_numpy().tolist()]  # NaN is the one v != v
    return [_plain(v) for v in col]


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as JSON-ready dicts."""
    cols = list(frame.columns)
    values = [_plain_column(frame.iloc[:, i]) for i in range(len(cols))]
    if not cols:
        return [{} for _ in range(len(frame))]
    return [dict(zip(cols, row, strict=True)) for row in zip(*values, strict=True)]


def _cell(v: Any) -> str:
    if isinstance(v, datetime.datetime):
        return str(v)  # "2026-01-02 03:04:05.678", as pandas prints it
    v = _plain(v)
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.6g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, list):
        return "; ".join(map(str, v))
    return str(v)


def _numeric(frame: pd.DataFrame, col: str) -> bool:
    return bool(pd.api.types.is_numeric_dtype(frame[col]))


def write_markdown(frame: pd.DataFrame, columns: list[str], stream: TextIO) -> None:
    """``columns`` of ``frame`` as a Markdown table on ``stream``, every cell escaped; numbers
    right-aligned. Written a line at a time."""
    stream.write("| " + " | ".join(md_cell(c) for c in columns) + " |\n")
    stream.write("| " + " | ".join("---:" if _numeric(frame, c) else "---" for c in columns) + " |\n")
    # Columns picked per chunk: picking them from the whole frame first copies them all.
    for chunk in _chunks(frame):
        rows = chunk[columns].itertuples(index=False, name=None)
        stream.writelines("| " + " | ".join(md_cell(_cell(v)) for v in row) + " |\n" for row in rows)


def markdown_table(frame: pd.DataFrame, columns: list[str]) -> str:
    """``columns`` of ``frame`` as a Markdown table, every cell escaped; numbers right-aligned."""
    import io

    buf = io.StringIO()
    write_markdown(frame, columns, buf)
    return buf.getvalue()


def _rich_table(frame: pd.DataFrame, title: str, columns: list[str], stream: TextIO, note: str = "") -> None:
    table = Table(title=Text(terminal_safe(title)), title_justify="left")
    for c in columns:
        num = _numeric(frame, c)
        table.add_column(Text(terminal_safe(c)), justify="right" if num else "left", overflow="fold", no_wrap=num)
    for row in frame[columns].itertuples(index=False, name=None):
        # Text, never markup: kernel names hold "[" and "]"; and their control characters
        # (a screen clear, an OSC 8 link) shown escaped, never sent to the terminal.
        table.add_row(*(Text(terminal_safe(_cell(v))) for v in row))
    # A terminal folds wide cells to its width; a pipe or a file gets every row on one line (at
    # the table's natural width), so grep and diff see whole kernel names.
    tty = getattr(stream, "isatty", lambda: False)()
    console = Console(file=stream, highlight=False, width=None if tty else 100_000)
    console.print(table)
    if note:
        # Under the table, where the eye is when the rows stop; dim on a terminal only.
        console.print(Text(note, style="dim"))
