"""``nsightwrap report RUN_DIR``: analyse a run directory and print or write the report."""

from __future__ import annotations

import io
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from nsightwrap.cli import OLD_FORMAT_HELP, app, err_console, piped_width, write_output
from nsightwrap.core.errors import EXIT_FINDINGS, EXIT_NATIVE_CRASH, InputNotFound, UsageError

if TYPE_CHECKING:
    from nsightwrap.analysis.model import BenchmarkResult, RunResult
    from nsightwrap.analysis.store import Analysis


class Format(str, Enum):
    table = "table"
    md = "md"
    json = "json"
    html = "html"


@app.command("report")
def report_command(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="A run directory made by nsightwrap profile.")],
    fmt: Annotated[Format, typer.Option("--format", metavar="table|md|json|html", help="Output: table, md, json or html.")] = Format.table,
    fmt_f: Annotated[Format | None, typer.Option("-f", hidden=True, help=OLD_FORMAT_HELP)] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout.")] = None,
    tolerance: Annotated[
        float, typer.Option("--tolerance", metavar="PCT", help="Largest timer/ncu disagreement that passes, in percent.")
    ] = 10.0,
    clock_ref: Annotated[
        str,
        typer.Option("--clock-ref", metavar="plain|boost|base|HZ", help="Clock to compare at: plain (measured in the plain pass), boost, base, or a frequency "
                     "(1.98e9, 1980MHz, 1.6GHz)."),
    ] = "plain",
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Exit 1 when any benchmark's verdict is not ok or explained "
                     "(flagged, unexplained, no_ncu, no_timer, no_data), or when no benchmark was measured. "
                     "Without it report exits 0 whatever the verdicts (compare, by contrast, exits 1 on a "
                     "regression unless --no-fail)."),
    ] = False,
    full: Annotated[
        bool,
        typer.Option("--full", help="With --format md: the whole report, even past GitHub's 65,536-character limit."),
    ] = False,
    device_file: Annotated[
        Path | None,
        typer.Option("--device-file", metavar="FILE", help="Roofs from this device file, as nsightwrap device writes it "
                     "(default: RUN_DIR/env/device.json, else the GPU's cached one, else the datasheet's)."),
    ] = None,
    detail: Annotated[
        bool,
        typer.Option("--detail", help="With --format json: every per-iteration and per-kernel row too "
                     "(default: per-benchmark summaries and the samples compare reads)."),
    ] = False,
    reanalyze: Annotated[
        bool,
        typer.Option("--reanalyze", help="Analyse the run again even where its stored analysis is current."),
    ] = False,
) -> None:
    """Reconcile the timer, ncu and nsys numbers of a run and explain every discrepancy.

    Examples:

      nsightwrap report RUN --format md -o report.md   # for a GitHub comment (cut to 65,536 characters)

      nsightwrap report RUN --format md --full -o report.md   # all of it in Markdown

      nsightwrap report RUN --format html -o report.html   # one self-contained HTML file with plots

      nsightwrap report RUN --format json -o run.json   # for nsightwrap compare and CI

      nsightwrap report RUN --format json --detail -o run.json   # every iteration and kernel row too

      nsightwrap report RUN --strict --tolerance 5   # fail a CI job on any flagged benchmark

      nsightwrap report RUN --clock-ref 1.6GHz   # compare at a clock of your choice

      nsightwrap report RUN --device-file FILE   # roofline against measured ceilings (nsightwrap device)

    The analysis is stored in the run directory (RUN_DIR/analysis/) and read back while the run's
    files and these options are unchanged; one line on stderr says which (--reanalyze: analyse
    again).

    Exit codes: 0 ok (whatever the verdicts, unless --strict), 1 --strict found a benchmark to
    look at, 2 bad input, 5 a report reader crashed. compare, by contrast, exits 1 on a
    regression by default.
    """
    fmt = fmt_f or fmt
    if not run_dir.is_dir():
        raise InputNotFound(f"{run_dir}: not a run directory", hint="give the directory nsightwrap profile wrote (-o)")
    if not 0 < tolerance < 1000:
        raise UsageError(f"--tolerance {tolerance} is out of range", hint="give a percentage, e.g. --tolerance 10")
    had = run_analysis(run_dir, tolerance=tolerance / 100.0, clock_ref=clock_ref, device_file=device_file,
                       reanalyze=reanalyze)  # fmt: skip
    err_console.print(had.line, highlight=False, markup=False)
    result = had.result
    if fmt is Format.table:
        from nsightwrap.export.terminal import print_report

        if output is None:
            # Piped output is not cut to 80 columns (the table has ten) unless COLUMNS says so.
            print_report(result, Console(highlight=False, width=piped_width(160)))
            text = None
        else:
            console = Console(record=True, width=160, file=io.StringIO(), highlight=False)
            print_report(result, console)
            text = console.export_text()
    elif fmt is Format.md:
        from nsightwrap.export.markdown import GITHUB_LIMIT, render_markdown

        text = render_markdown(result, limit=None if full else GITHUB_LIMIT)
    elif fmt is Format.json:
        from nsightwrap.export.jsonio import write_report_json

        text = write_report_json(result, detail=detail, doc=had.doc)
    else:
        from nsightwrap.export.html import render_html

        text = render_html(result)
    if text is not None:
        if output is None:
            typer.echo(text, nl=not text.endswith("\n"))
        else:
            write_output(output, text)
            err_console.print(f"report written to {output}", highlight=False, markup=False)
    for line in result.reader_crashes:  # the report above was made without those numbers
        err_console.print(f"error: {line}", highlight=False, markup=False)
    if result.reader_crashes:
        raise typer.Exit(EXIT_NATIVE_CRASH)
    if strict:
        failing = strict_failures(result.benchmarks)
        if not result.benchmarks:
            err_console.print(
                "error: --strict: the run holds no benchmark (nothing was measured)", highlight=False, markup=False
            )
            raise typer.Exit(EXIT_FINDINGS)
        if failing:
            shown = ", ".join(f"{_safe(b.name)} ({b.verdict.value})" for b in failing[:5])
            more = f" and {len(failing) - 5} more" if len(failing) > 5 else ""
            err_console.print(
                f"error: --strict: {len(failing)} of {len(result.benchmarks)} benchmarks not ok: {shown}{more}",
                highlight=False,
                markup=False,
            )
            raise typer.Exit(EXIT_FINDINGS)


def run_analysis(
    run_dir: Path,
    *,
    tolerance: float = 0.1,
    clock_ref: str = "plain",
    device_file: Path | None = None,
    reanalyze: bool = False,
) -> Analysis:
    """The analysis of ``run_dir``: stored, or computed and stored (analysis/store.py), with the
    native ncu reader in a child process (its crash costs the ncu numbers, not the report).
    ``tolerance`` is a fraction."""
    from nsightwrap.analysis.store import StoreKey, stored_analysis
    from nsightwrap.export.jsonio import report_from_dict, report_to_dict

    def fresh() -> RunResult:
        # Imported here: a stored analysis needs neither the parsers nor pandas' readers.
        from nsightwrap.analysis.load import analyze
        from nsightwrap.run.ncu_isolated import read_ncu_rep_isolated

        return analyze(run_dir, tolerance=tolerance, clock_ref=clock_ref, device_file=device_file,
                       read_ncu=read_ncu_rep_isolated)  # fmt: skip

    key = StoreKey.of(tolerance, clock_ref, device_file)
    return stored_analysis(run_dir, fresh, key=key, to_doc=report_to_dict, from_doc=report_from_dict,
                           reanalyze=reanalyze)  # fmt: skip


#: Verdicts --strict lets pass, by value so that new members of the enum fail until named here.
STRICT_PASS = frozenset({"ok", "explained"})


def strict_failures(benchmarks: Sequence[BenchmarkResult]) -> list[BenchmarkResult]:
    """The benchmarks ``--strict`` fails on: a verdict not in STRICT_PASS, or no figure at all."""
    return [
        b
        for b in benchmarks
        if str(getattr(b.verdict, "value", b.verdict)) not in STRICT_PASS
        or (b.timer is None and b.ncu is None and b.nsys is None)
    ]


def _safe(name: str) -> str:
    from nsightwrap.export.escape import terminal_safe

    return terminal_safe(name)
