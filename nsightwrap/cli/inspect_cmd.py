"""``nsightwrap inspect REPORT``: one report file as a table of its GPU ops or of its NVTX ranges."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, TextIO

import typer

from nsightwrap.cli import OLD_FORMAT_HELP, app, err_console, output_file


class By(str, Enum):
    kernel = "kernel"
    range = "range"


#: Rows of a terminal table when --limit is not given.
TABLE_ROWS = 2000


class Format(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"
    md = "md"


HELP = """Show what one report holds: its GPU kernels and copies, or its NVTX ranges.

The kind of file is read from its content: an Nsight Systems export (.sqlite) or report (.nsys-rep, exported with nsys on PATH), an Nsight Compute report (.ncu-rep) or its CSV export (ncu --csv --page raw), nvidia-smi -q -x XML or --query-gpu CSV, or a timer sidecar JSON.

A terminal table holds the first 2,000 rows (--limit N for another number, --limit 0 for all) and ends with a line saying how many it left out. --format csv, json and md write every row (unless --limit is given), a chunk of rows at a time: the formats for a report of a million ops.

--by kernel (default) lists every GPU op (kernel, memcpy, memset) with the innermost NVTX range its launch call ran in. --by range sums them per NVTX range path (domain:outer/inner) over all instances of the range: gpu_time_ns adds op durations, busy_ns is the time at least one op ran (overlap counted once), span_ns runs from the first op's start to the last op's end. An op belongs to a range when the CPU call that launched it started inside the range.

Examples:

  nsightwrap inspect run/nsys/report.sqlite --by range

  nsightwrap inspect run/nsys/report.nsys-rep --format csv -o ops.csv

  nsightwrap inspect run/nsys/report.sqlite --limit 50

  nsightwrap inspect run/ncu/report.ncu-rep --by range --format md

  nsightwrap inspect run/env/nvidia-smi-q-x.xml
"""


@app.command("inspect", help=HELP, no_args_is_help=True)
def inspect(
    report: Annotated[Path, typer.Argument(metavar="REPORT", help="The report file to read.")],
    by: Annotated[
        By, typer.Option("--by", metavar="kernel|range", help="One row per GPU op (kernel) or per NVTX range path (range).")
    ] = By.kernel,
    fmt: Annotated[
        Format, typer.Option("--format", metavar="table|csv|json|md", help="table (terminal), csv, json or md (Markdown).")
    ] = Format.table,
    fmt_f: Annotated[Format | None, typer.Option("-f", hidden=True, help=OLD_FORMAT_HELP)] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout: what --format gives, "
                     "the file replaced whole once it is complete."),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            metavar="N",
            min=0,
            help=f"At most N rows, the first N in order; 0 for all (default: {TABLE_ROWS:,} in the table, all in csv, json and md).",
        ),
    ] = None,
    nsys: Annotated[
        str | None,
        typer.Option(
            "--nsys", metavar="PATH", help="nsys executable to export a .nsys-rep with (default: NSIGHTWRAP_NSYS, PATH)."
        ),
    ] = None,
) -> None:
    # pandas and the parsers load here, not at start-up: `nsightwrap --help` stays quick.
    from nsightwrap.analysis.inspection import load_view
    from nsightwrap.export.frames import write_frame
    from nsightwrap.run.ncu_isolated import read_ncu_rep_isolated
    from nsightwrap.run.nsys_export import export_nsys_sqlite

    fmt = fmt_f or fmt
    # The tools are bound here: nsys exports a .nsys-rep, and the native ncu reader runs in a
    # child process, so that its crash becomes one line, not a dead inspect.
    view = load_view(
        report, by.value, export_nsys=lambda rep: export_nsys_sqlite(rep, nsys), read_ncu=read_ncu_rep_isolated
    )
    if limit is None:
        limit = TABLE_ROWS if fmt is Format.table else 0
    def write(out: TextIO | None) -> None:
        write_frame(
            view.frame,
            fmt.value,
            title=view.title,
            table_columns=view.table_columns,
            md_columns=view.md_columns,
            max_rows=limit or None,
            out=out,
        )

    if output is None:
        write(None)
        return
    with output_file(output) as f:  # streamed: a million-op CSV is never held as one string
        write(f)
    err_console.print(f"written to {output}", markup=False, highlight=False)
