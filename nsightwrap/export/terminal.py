"""Terminal report (rich): one row per benchmark, then the flagged ones with their causes."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nsightwrap.export import reportfmt as f
from nsightwrap.model import RunResult, Verdict

_STYLE = {Verdict.OK: "green", Verdict.FLAGGED: "bold red"}


def summary_table(result: RunResult) -> Table:
    """The per-benchmark table: timer, ncu raw and normalized, nsys, clocks, ratio, verdict."""
    t = Table(title=f"nsightwrap report: {escape(result.run_dir)}", title_justify="left")
    for col, just in (
        ("benchmark", "left"),
        ("timer", "right"),
        ("ncu raw", "right"),
        ("ncu @ref", "right"),
        ("nsys kernels", "right"),
        ("nsys busy", "right"),
        ("ref clock", "right"),
        ("ncu clock", "right"),
        ("ratio", "right"),
        ("verdict", "left"),
    ):
        # The benchmark name keeps room and folds when the terminal is narrow.
        # ratio and verdict never wrap: they are what the reader looks for.
        t.add_column(
            col,
            justify=just,  # type: ignore[arg-type]
            min_width=12 if col == "benchmark" else None,
            no_wrap=col in ("ratio", "verdict"),
            overflow="fold",
        )
    for b in result.benchmarks:
        style = _STYLE.get(b.verdict, "yellow")
        t.add_row(
            escape(f.label(b)),
            f.time_ns(b.timer.median_ns if b.timer else None),
            f.time_ns(b.ncu.median_ns if b.ncu else None),
            f.time_ns(b.ncu.normalized_ns if b.ncu else None),
            f.time_ns(b.nsys.median_ns if b.nsys else None),
            f.time_ns(b.nsys.busy_median_ns if b.nsys else None),
            f.clock_hz(b.ref_clock_hz),
            f.clock_hz(b.ncu.sm_clock_hz if b.ncu else None),
            f.ratio(b.ratio),
            f"[{style}]{f.VERDICT_TEXT[b.verdict]}[/]",
        )
    return t


def print_report(result: RunResult, console: Console) -> None:
    """Print the summary table, the causes of every flagged benchmark, and the notes."""
    console.print(summary_table(result))
    s = result.settings
    console.print(
        f"tolerance {s.tolerance:.0%}, reference clock: {escape(s.clock_ref)}; "
        "ratio = timer / ncu at the reference clock",
        style="dim",
    )
    for b in result.flagged:
        console.print()
        console.print(f"[bold red]{escape(f.label(b))}[/]: ratio {f.ratio(b.ratio)} (raw {f.ratio(b.ratio_raw)})")
        for c in b.causes:
            console.print(f"  [bold]{c.code.value}[/]: {escape(c.message)}")
            ev = ", ".join(f.evidence_item(k, v) for k, v in c.evidence.items() if v is not None)
            if ev:
                console.print(f"    evidence: {escape(ev)}", style="dim")
            console.print(f"    fix: {escape(c.fix)}")
    notes = [*result.notes, *(f"{b.name}: {n}" for b in result.benchmarks for n in b.notes)]
    if notes:
        console.print()
        for n in notes:
            console.print(f"note: {escape(n)}", style="dim")
