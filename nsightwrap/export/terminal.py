"""Terminal report (rich): a count line, one row per benchmark (worst first), then the flagged and
unexplained ones with their causes.

The summary table fits the console: a number never wraps inside itself. When the full table
(units in every cell) is too wide, units move to the caption, and then the columns that matter
least to the verdict are left out, in ``DROP_ORDER``, and named under the table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from nsightwrap.analysis.model import BenchmarkResult, RunResult
from nsightwrap.export import reportfmt as f
from nsightwrap.export import shards
from nsightwrap.export.gap_terminal import print_gap_line
from nsightwrap.export.power_terminal import print_power
from nsightwrap.export.roofline_terminal import print_roofline

#: Columns left out, first to last, while the table is wider than the console. ncu's raw time
#: and clock only explain the normalization (the flagged section repeats the raw ratio).
DROP_ORDER = ("ncu raw", "ncu clock", "nsys kernels", "ref clock", "nsys busy")


@dataclass(frozen=True)
class _Column:
    name: str  # header of the full table
    compact: str  # header when units are in the caption (lines split by "\n")
    value: Callable[[BenchmarkResult], float | None]
    unit: str  # "time", "clock" or "" (ratio)


def _opt(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else v


_NUMERIC = (
    _Column("timer", "timer", lambda b: b.timer.median_ns if b.timer else None, "time"),
    _Column("ncu raw", "ncu\nraw", lambda b: b.ncu.median_ns if b.ncu else None, "time"),
    _Column("ncu @ref", "ncu\n@ref", lambda b: b.ncu.normalized_ns if b.ncu else None, "time"),
    _Column("nsys kernels", "nsys\nkernel", lambda b: b.nsys.median_ns if b.nsys else None, "time"),
    _Column("nsys busy", "nsys\nbusy", lambda b: b.nsys.busy_median_ns if b.nsys else None, "time"),
    _Column("ref clock", "ref\nclock", lambda b: b.ref_clock_hz, "clock"),
    _Column("ncu clock", "ncu\nclock", lambda b: b.ncu.sm_clock_hz if b.ncu else None, "clock"),
    _Column("ratio", "ratio", lambda b: b.ratio, ""),
)


def _cell(col: _Column, b: BenchmarkResult, compact: bool) -> str:
    v = _opt(col.value(b))
    if col.unit == "time":
        return ("-" if v is None else f"{v / 1e3:.2f}") if compact else f.time_ns(v)
    if col.unit == "clock":
        return ("-" if v is None else f"{v / 1e9:.3f}") if compact else f.clock_hz(v)
    return f.ratio(v)


def _layout(result: RunResult, width: int | None) -> tuple[bool, tuple[_Column, ...]]:
    """Whether units go to the caption, and which numeric columns fit in ``width``."""
    names = [f.label(b) for b in result.benchmarks]
    verdicts = [f.verdict_text(b.verdict) for b in result.benchmarks]
    # The name column may fold, but not below the longest word-free stretch a reader needs.
    name_w = min(max([len("benchmark"), *map(len, names)]), 24)
    verdict_w = max([len("verdict"), *map(len, verdicts)])

    def needed(cols: tuple[_Column, ...], compact: bool) -> int:
        widths = [name_w, verdict_w] + ([len("GPU-…00000000")] if shards.has_gpu_column(result) else [])
        for c in cols:
            head = c.compact if compact else c.name
            widths.append(max([*map(len, head.split("\n")), *(len(_cell(c, b, compact)) for b in result.benchmarks)]))
        # rich's default box: one border per column plus one, one space of padding either side.
        return sum(widths) + 3 * len(widths) + 1

    if width is None or needed(_NUMERIC, False) <= width:
        return False, _NUMERIC
    cols: tuple[_Column, ...] = _NUMERIC
    for name in ("", *DROP_ORDER):
        cols = tuple(c for c in cols if c.name != name)
        if needed(cols, True) <= width:
            break
    return True, cols


#: Rows the terminal table shows at most; a 1,000-benchmark run opens with its worst, not all.
MAX_ROWS = 50

def count_line(result: RunResult) -> Text:
    """``N benchmarks: a ok, b explained, ...``: the first line of the terminal report."""
    return Text(f.count_text(result.benchmarks), style="bold")


def summary_table(result: RunResult, width: int | None = None, max_rows: int | None = None) -> Table:
    """The per-benchmark table: timer, ncu raw and normalized, nsys, clocks, ratio, verdict.

    With ``width``, the table is laid out to fit it (units in the caption, fewer columns). With
    ``max_rows``, only the worst that many benchmarks are shown and the caption says how many not.
    """
    compact, cols = _layout(result, width)
    caption = []
    if compact:
        caption.append("times in us, clocks in GHz")
    left_out = [c.name for c in _NUMERIC if c not in cols]
    if left_out:
        caption.append(f"not shown at this width: {', '.join(left_out)} (see --format md)")
    rows = f.by_verdict(result.benchmarks)  # worst verdict first
    if max_rows is not None and len(rows) > max_rows:
        rows = f.worst_first(result.benchmarks)[:max_rows]
        caption.append(
            f"the worst {max_rows} of {len(result.benchmarks)} benchmarks shown; "
            f"{len(result.benchmarks) - max_rows} left out (all of them: --format md, json or html)"
        )
    t = Table(
        title=Text(f"nsightwrap report: {result.run_dir}"),
        title_justify="left",
        caption="; ".join(caption) or None,
        caption_justify="left",
    )
    # The benchmark name folds when the terminal is narrow; numbers and verdicts never wrap.
    t.add_column("benchmark", overflow="fold", min_width=9)
    gpu = shards.has_gpu_column(result)  # a merged run: the GPU each benchmark ran on
    if gpu:
        t.add_column("GPU", no_wrap=True)
    for c in cols:
        t.add_column(c.compact if compact else c.name, justify="right", no_wrap=True)
    t.add_column("verdict", no_wrap=True)
    for b in rows:
        t.add_row(
            Text(f.label(b)),  # Text, never markup: names hold "[" and "]"
            *([Text(shards.gpu_tag(b))] if gpu else []),
            *(_cell(c, b, compact) for c in cols),
            Text(f.verdict_text(b.verdict), style=f.verdict_style(b.verdict)),
        )
    return t


def _pack(items: list[str], width: int) -> list[str]:
    """``items`` joined by ", " into lines of at most ``width``; an item is never split."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + 2 + len(item) <= width:
            lines[-1] += ", " + item
        else:
            if lines:
                lines[-1] += ","
            lines.append(item)
    return lines


def _labelled(label: Text | str, text: Text, indent: int) -> Padding:
    """``label text`` where wrapped lines of ``text`` hang under its first word, not the label."""
    g = Table.grid(padding=(0, 1))
    g.add_column(no_wrap=True)
    g.add_column(overflow="fold")
    g.add_row(label, text)
    return Padding(g, (0, 0, 0, indent))


def print_report(result: RunResult, console: Console) -> None:
    """Print the count line, the summary table (worst first), the causes of every flagged and
    unexplained benchmark, and the notes."""
    console.print(count_line(result))
    console.print(summary_table(result, console.width, MAX_ROWS))
    s = result.settings
    console.print(
        Text(f"tolerance {s.tolerance:.0%}, reference clock: {s.clock_ref}; ratio = timer / ncu at the reference clock"),
        style="dim",
    )
    shards.print_shards(result, console)
    for b in f.to_look_at(result):
        console.print()
        console.print(Text.assemble((f.label(b), f.verdict_style(b.verdict)), f" ({f.verdict_text(b.verdict)})", f": ratio {f.ratio(b.ratio)} (raw {f.ratio(b.ratio_raw)})"))
        print_gap_line(b, console)
        for c in b.causes:
            console.print(_labelled(Text(f"{c.code.value}:", style="bold"), Text(c.message), 2))
            # Evidence items are packed whole, so "3.14 us" never splits across lines.
            ev = _pack([f.evidence_item(k, v) for k, v in c.evidence.items() if v is not None], console.width - 15)
            if ev:
                console.print(_labelled("evidence:", Text("\n".join(ev)), 4), style="dim")
            console.print(_labelled("fix:", Text(c.fix), 4))
    notes = [("run", n) for n in result.notes] + [(f.label(b), n) for b in result.benchmarks for n in b.notes]
    if notes:
        console.print()
        for who, n in notes:
            console.print(_labelled(f"note: {who}:", Text(n), 0), style="dim")
    print_roofline(result, console)
    print_power(result, console)
