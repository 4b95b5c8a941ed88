"""A tidy frame as text: a rich terminal table, CSV, JSON records or a Markdown table.

Values are printed, never computed: NaN and NA become empty cells / ``null``, numpy scalars become
plain numbers, tuples (lists of NVTX paths) are joined. Every text cell of a Markdown table is
escaped (kernel names hold ``|``, ``<``, ``>``, ``*``).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from nsightwrap.export.escape import md_cell

FORMATS = ("table", "csv", "json", "md")


def write_frame(
    frame: pd.DataFrame,
    fmt: str,
    *,
    title: str = "",
    table_columns: Sequence[str] = (),
    md_columns: Sequence[str] = (),
    out: TextIO | None = None,
) -> None:
    """Print ``frame`` in ``fmt`` (one of FORMATS). CSV and JSON carry every column; the terminal
    table shows ``table_columns`` and Markdown ``md_columns`` (default: the table's; all if none)."""
    stream = out if out is not None else sys.stdout
    shown = [c for c in (table_columns or frame.columns) if c in frame.columns]
    if fmt == "csv":
        _flat(frame).to_csv(stream, index=False)
    elif fmt == "json":
        json.dump(records(frame), stream, indent=1)
        stream.write("\n")
    elif fmt == "md":
        wanted = [c for c in md_columns if c in frame.columns] or shown
        stream.write(markdown_table(frame, wanted))
    elif fmt == "table":
        _rich_table(frame, title, shown, stream)
    else:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")


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


def _plain(v: Any) -> Any:
    """A JSON-ready value: numpy scalars to Python, NaN/NA to None, tuples to lists."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, tuple | list | np.ndarray):
        return [_plain(x) for x in v]
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as JSON-ready dicts."""
    cols = list(frame.columns)
    return [
        {c: _plain(v) for c, v in zip(cols, row, strict=True)}
        for row in frame.itertuples(index=False, name=None)
    ]


def _cell(v: Any) -> str:
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


def markdown_table(frame: pd.DataFrame, columns: list[str]) -> str:
    """``columns`` of ``frame`` as a Markdown table, every cell escaped; numbers right-aligned."""
    lines = ["| " + " | ".join(md_cell(c) for c in columns) + " |"]
    lines.append("| " + " | ".join("---:" if _numeric(frame, c) else "---" for c in columns) + " |")
    for row in frame[columns].itertuples(index=False, name=None):
        lines.append("| " + " | ".join(md_cell(_cell(v)) for v in row) + " |")
    return "\n".join(lines) + "\n"


def _rich_table(frame: pd.DataFrame, title: str, columns: list[str], stream: TextIO) -> None:
    table = Table(title=Text(title), title_justify="left")
    for c in columns:
        num = _numeric(frame, c)
        table.add_column(Text(c), justify="right" if num else "left", overflow="fold", no_wrap=num)
    for row in frame[columns].itertuples(index=False, name=None):
        # Text, never markup: kernel names hold "[" and "]".
        table.add_row(*(Text(_cell(v)) for v in row))
    # A terminal folds wide cells to its width; a pipe or a file gets every row on one line (at
    # the table's natural width), so grep and diff see whole kernel names.
    tty = getattr(stream, "isatty", lambda: False)()
    Console(file=stream, highlight=False, width=None if tty else 100_000).print(table)
