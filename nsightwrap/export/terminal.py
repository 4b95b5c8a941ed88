"""Every terminal view (rich), one per result kind: the run report, a comparison, a device file.

Run report: a count line, one row per benchmark (worst first), then the flagged and unexplained
ones with their causes and gap line, the notes, the shards of a merged run, the roofline and the
energy tables. The summary table fits the console: a number never wraps inside itself. When the
full table (units in every cell) is too wide, units move to the caption, and then the columns that
matter least to the verdict are left out, in ``DROP_ORDER``, and named under the table.

Names are printed as ``Text`` (never markup: they hold ``[`` and ``]``) after ``terminal_safe``.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from nsightwrap.analysis.model import BenchmarkResult, RunResult
from nsightwrap.analysis.model import Verdict as Reconcile
from nsightwrap.compare.energy import Energy
from nsightwrap.compare.verdicts import Comparison, Reason, Spread, Verdict
from nsightwrap.device.result import GROUPS, DeviceFile
from nsightwrap.export import device_text as t
from nsightwrap.export import gap_text as g
from nsightwrap.export import power_fmt as pf
from nsightwrap.export import reportfmt as f
from nsightwrap.export import roofline_text as rt
from nsightwrap.export.compare_text import (
    energy_summary,
    fmt_change,
    fmt_energy,
    fmt_spread,
    reconcile_pair,
    settings_line,
    summary,
)
from nsightwrap.export.escape import terminal_safe
from nsightwrap.export.registry import exporter

#: Columns left out, first to last, while the table is wider than the console. The raw ratio,
#: ncu's raw time and clock only explain the clock the verdict used; the spread goes before the
#: clock the ratio is at (a noisy benchmark keeps its mark beside the verdict).
DROP_ORDER = ("ratio raw", "ncu raw", "ncu clock", "nsys kernels", "spread (n)", "clock", "nsys busy")


@dataclass(frozen=True)
class _Column:
    name: str  # header of the full table
    compact: str  # header when units are in the caption (lines split by "\n")
    value: Callable[[BenchmarkResult], float | None]
    unit: str  # "time", "clock", "" (ratio) or "text" (``text`` gives the cell)
    text: Callable[[BenchmarkResult], str] | None = None


def _opt(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else v


def _none(b: BenchmarkResult) -> float | None:
    return None


_NUMERIC = (
    _Column("timer", "timer", lambda b: b.timer.median_ns if b.timer else None, "time"),
    _Column("spread (n)", "spread\n(n)", _none, "text", f.spread),
    _Column("ncu raw", "ncu\nraw", lambda b: b.ncu.median_ns if b.ncu else None, "time"),
    _Column("ncu @clock", "ncu\n@clock", lambda b: b.ncu_at_ratio_ns, "time"),
    _Column("nsys kernels", "nsys\nkernel", lambda b: b.nsys.median_ns if b.nsys else None, "time"),
    _Column("nsys busy", "nsys\nbusy", lambda b: b.nsys.busy_median_ns if b.nsys else None, "time"),
    _Column("clock", "clock", lambda b: b.ratio_clock_hz, "clock", f.ratio_clock),
    _Column("ncu clock", "ncu\nclock", lambda b: b.ncu.sm_clock_hz if b.ncu else None, "clock"),
    _Column("ratio @clock", "ratio\n@clock", lambda b: b.ratio, ""),
    _Column("ratio raw", "ratio\nraw", lambda b: b.ratio_raw, ""),
)


def _cell(col: _Column, b: BenchmarkResult, compact: bool) -> str:
    v = _opt(col.value(b))
    if col.unit == "text" or (col.text is not None and v is None):
        return col.text(b) if col.text is not None else "-"
    if col.unit == "time":
        return ("-" if v is None else f"{v / 1e3:.2f}") if compact else f.time_ns(v)
    if col.unit == "clock":
        return ("-" if v is None else f"{v / 1e9:.3f}") if compact else f.clock_hz(v)
    return f.ratio(v)


def _layout(result: RunResult, width: int | None) -> tuple[bool, tuple[_Column, ...]]:
    """Whether units go to the caption, and which numeric columns fit in ``width``."""
    names = [f.label(b) for b in result.benchmarks]
    verdicts = [f.verdict_cell(b) for b in result.benchmarks]
    # The name column may fold, but not below the longest word-free stretch a reader needs.
    name_w = min(max([len("benchmark"), *map(len, names)]), 24)
    verdict_w = max([len("verdict"), *map(len, verdicts)])

    def needed(cols: tuple[_Column, ...], compact: bool) -> int:
        widths = [name_w, verdict_w] + ([len("GPU-…00000000")] if f.has_gpu_column(result) else [])
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
    """The per-benchmark table: timer and its spread, ncu raw and at the verdict's clock, nsys,
    clocks, the verdict's ratio and the raw one, verdict.

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
    gpu = f.has_gpu_column(result)  # a merged run: the GPU each benchmark ran on
    if gpu:
        t.add_column("GPU", no_wrap=True)
    for c in cols:
        t.add_column(c.compact if compact else c.name, justify="right", no_wrap=True)
    t.add_column("verdict", no_wrap=True)
    for b in rows:
        t.add_row(
            Text(f.label(b)),  # Text, never markup: names hold "[" and "]"
            *([Text(f.gpu_tag(b))] if gpu else []),
            *(_cell(c, b, compact) for c in cols),
            Text.assemble((f.verdict_text(b.verdict), f.verdict_style(b.verdict)), _noisy_mark(b)),
        )
    return t


def _noisy_mark(b: BenchmarkResult) -> tuple[str, str]:
    """`` (noisy: IQR 18.4%)`` in yellow beside the verdict, or nothing."""
    mark = f.noisy_text(b)
    return (f" ({mark})", "yellow") if mark else ("", "")


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


#: Flagged and unexplained benchmarks whose causes the terminal report prints at most (the worst).
MAX_DETAILS = 20


def print_report(
    result: RunResult, console: Console, *, max_rows: int = MAX_ROWS, max_details: int = MAX_DETAILS
) -> None:
    """Print the count line, the summary table (worst first, at most ``max_rows``), the causes of
    the worst ``max_details`` flagged and unexplained benchmarks, and the notes (of the benchmarks
    shown); a line says what was left out."""
    console.print(count_line(result))
    console.print(summary_table(result, console.width, max_rows))
    s = result.settings
    console.print(
        Text(f"tolerance {s.tolerance:.0%}; {f.clock_text(result)}"),
        style="dim",
    )
    print_shards(result, console)
    look = f.to_look_at(result)
    shown = look if len(look) <= max_details else f.worst_first(look)[:max_details]
    for b in shown:
        console.print()
        console.print(Text.assemble((f.label(b), f.verdict_style(b.verdict)), f" ({f.verdict_text(b.verdict)})", f": {f.ratio_line(b)}"))
        print_gap_line(b, console)
        for c in b.causes:
            console.print(_labelled(Text(f"{c.code.value}:", style="bold"), Text(c.message), 2))
            # Evidence items are packed whole, so "3.14 us" never splits across lines.
            ev = _pack([f.evidence_item(k, v) for k, v in c.evidence.items() if v is not None], console.width - 15)
            if ev:
                console.print(_labelled("evidence:", Text("\n".join(ev)), 4), style="dim")
            console.print(_labelled("fix:", Text(c.fix), 4))
    if len(shown) < len(look):
        console.print()
        console.print(Text(f"the causes of the worst {len(shown)} of {len(look)} flagged or unexplained benchmarks shown; "
                           f"all of them: --format md --full, json or html"), style="bold")  # fmt: skip
    # Notes of the benchmarks in the table (a 1,000-benchmark run's table shows its worst only).
    in_table = list(result.benchmarks) if len(result.benchmarks) <= max_rows else f.worst_first(result.benchmarks)[:max_rows]
    notes = [("run", n) for n in result.notes] + [(f.label(b), n) for b in in_table for n in b.notes]
    if notes:
        console.print()
        for who, n in notes:
            console.print(_labelled(f"note: {who}:", Text(n), 0), style="dim")
    left = sum(len(b.notes) for b in result.benchmarks) - sum(len(b.notes) for b in in_table)
    if left:
        console.print(Text(f"{left} notes of the benchmarks not in the table left out (--format md --full has them)"), style="dim")
    print_roofline(result, console, in_table if len(in_table) < len(result.benchmarks) else None)
    print_power(result, console, in_table if len(in_table) < len(result.benchmarks) else None)


# ------------------------------------------------------------------ roofline, gap, energy, shards


def print_roofline(result: RunResult, console: Console, only: list[BenchmarkResult] | None = None) -> None:
    """Print the roofs' source and each benchmark's achieved rates, bound and % of roof; ``only``:
    those of these benchmarks (the summary table's worst of a large run), and a line saying so."""
    if result.roofs is None:
        return
    console.print()
    console.print(Text("roofline: " + rt.roofs_line(result.roofs), style="bold"))
    rows = rt.bench_rows(result) if only is None else [row for b in only if (row := rt.bench_row(b)) is not None]
    # A table of every benchmark of a large run takes seconds to lay out and is not read in a
    # terminal; the formats for reading it all have every row.
    left = 0 if only is None else len(rt.bench_rows(result)) - len(rows)
    left_line = Text(f"  the roofline of the {len(rows)} benchmarks of the table above shown, {left} left out "
                     "(--format md --full, json or html have them)", style="dim")  # fmt: skip
    if not rows:
        if left:
            console.print(left_line)
        return
    # At less than the full width, the time, the roof and the work's source move out (the Markdown has them).
    keep = list(range(len(rt.HEADERS))) if console.width >= 150 else [0, 2, 3, 4, 6, 7]
    tab = Table(show_edge=False, pad_edge=False)
    for i in keep:
        # The name folds when narrow; numbers never wrap.
        tab.add_column(rt.HEADERS[i], justify="left" if i in (0, len(rt.HEADERS) - 1) else "right",
                       no_wrap=i != 0, overflow="fold", min_width=9 if i == 0 else None)  # fmt: skip
    for r in rows:
        tab.add_row(*(Text(r[i]) for i in keep))
    console.print(tab)
    if left:
        console.print(left_line)
    if len(keep) < len(rt.HEADERS):
        console.print(Text("  rates at ncu's median kernel time (at the loop's clock from nsys GPU metrics or timer stamps where there is one) where ncu "
                 "profiled the benchmark, else the timer's; a point above its roof is 'inconsistent'"), style="dim")
    for who, why in rt.reasons(result):
        console.print(Text(f"  {who}: {why}"), style="dim")


def print_gap_line(b: BenchmarkResult, console: Console, indent: int = 2) -> None:
    """``gap +0.99 us = front end + events +1.20 us, clock -0.04 us; residual -0.18 us``."""
    if b.gap is None:
        return
    console.print(Text(" " * indent + g.compact(b.gap)), style="bold", soft_wrap=False, overflow="fold")


def print_power(result: RunResult, console: Console, only: list[BenchmarkResult] | None = None) -> None:
    """Energy per call, power, temperature and throttling per benchmark; nothing without NVML
    figures. ``only``: those of these benchmarks (as ``print_roofline``)."""
    every = pf.with_power(result)
    benches = every if only is None else [b for b in only if b.power is not None]
    left_line = Text(f"the energy of the {len(benches)} benchmarks of the table above shown, {len(every) - len(benches)} "
                     "left out (--format md --full, json or html have them)", style="dim")  # fmt: skip
    if not benches:
        if every:
            console.print()
            console.print(left_line)
        return
    t = Table(title=Text("energy and power (NVML)"), title_justify="left")
    t.add_column(pf.HEADERS[0], overflow="fold", min_width=9)
    for h in pf.HEADERS[1:]:
        t.add_column(h, justify="left" if h == "throttled by" else "right", overflow="fold")
    for b in benches:
        cells = pf.row(b)
        t.add_row(*(Text(c) for c in cells))  # Text, never markup: names hold "[" and "]"
    console.print()
    console.print(t)
    if len(benches) < len(every):
        console.print(left_line)
    console.print(Text(pf.METHOD_NOTE), style="dim")
    for who, note in pf.notes(result):
        console.print(Text(f"note: {who}: {note}"), style="dim")


def print_shards(result: RunResult, console: Console) -> None:
    """The shards table and, for a replicated run, the GPU-to-GPU variance."""
    if not result.shards:
        return
    t = Table(title=Text(f"shards ({len(result.shards)})"), title_justify="left")
    for h in f.SHARD_HEADERS:
        t.add_column(h, no_wrap=h not in ("GPU", "host"), overflow="fold")
    for s in result.shards:
        style = "green" if s.status == "complete" else "bold red"
        cells = f.shard_cells(s)
        t.add_row(cells[0], Text(cells[1], style=style), *(Text(c) for c in cells[2:]))
    console.print()
    console.print(t)
    for s in result.shards:
        if s.message:
            console.print(Text.assemble((f"shard {s.index}: ", "bold red"), s.message))
    v = result.gpu_variance
    if v is None:
        return
    console.print()
    vt = Table(title=Text("GPU-to-GPU variance"), caption=f.variance_line(v), title_justify="left", caption_justify="left")
    for h in ("benchmark", "fastest", "slowest", "spread", "slowest GPU"):
        vt.add_column(h, justify="left" if h in ("benchmark", "slowest GPU") else "right", no_wrap=h != "benchmark")
    for sp in f.spread_rows(v, f.TOP_SPREADS):
        med = sp.medians_ns
        vt.add_row(
            Text(sp.benchmark), f.time_ns(med.get(sp.fastest or "")), f.time_ns(med.get(sp.slowest or "")),
            f.percent(sp.spread), Text(f.short_uuid(sp.slowest or "-")),
        )  # fmt: skip
    console.print(vt)
    for line in f.slow_lines(v):
        console.print(Text(line, style="bold red" if v.slow else "green"))


# ------------------------------------------------------------------ compare

#: Styles of the compare verdicts (time; energy uses the same: more energy is the regression).
_COMPARE_STYLE = {
    Verdict.SAME: "green",
    Verdict.FASTER: "bold cyan",
    Verdict.SLOWER: "bold red",
    Verdict.AMBIGUOUS: "yellow",
}
#: Energy's words in the time verdicts' styles: more energy is the regression.
_ENERGY_STYLE = {Energy.SAME: "green", Energy.LESS: "bold cyan", Energy.MORE: "bold red", Energy.AMBIGUOUS: "yellow"}


def compare_table(c: Comparison) -> Group:
    """The comparison as a renderable: header, one row per benchmark, summary."""
    table = Table(title=Text(terminal_safe(f"{c.baseline} -> {c.current}")), title_justify="left")
    for col in ("benchmark", "verdict", "baseline median [min, Q3]", "current median [min, Q3]"):
        table.add_column(col, overflow="fold")
    table.add_column("time change [CI]")
    table.add_column("cycles change [CI]")
    table.add_column("reason", overflow="fold")
    if c.reconcile:  # each side's own reconcile verdict, in the report's words
        table.add_column("reconcile (baseline -> current)", no_wrap=True)
    notes: list[RenderableType] = []
    for v in c.verdicts:
        table.add_row(
            # Text objects: benchmark names may hold '[...]', which rich would read as markup.
            Text(terminal_safe(v.key)),
            Text(v.verdict.value, style=_COMPARE_STYLE[v.verdict]),
            Text(fmt_spread(v, "baseline")),
            Text(fmt_spread(v, "current")),
            Text(fmt_change(v.ratio)),
            Text(fmt_change(v.cycles_ratio)),
            Text(v.reason.value),
            *([_reconcile_cell(c, v.key)] if c.reconcile else []),
        )
        if v.reason is not Reason.WITHIN_THRESHOLD:
            notes.append(Text.assemble((f"{v.verdict.value} ", _COMPARE_STYLE[v.verdict]), terminal_safe(f"{v.key}: {v.message}")))
    lines: list[RenderableType] = [table, *notes, Text(summary(c)), Text(settings_line(c), style="dim")]
    lines += energy_table(c)
    if c.added:
        lines.append(Text("added (only in current): " + ", ".join(map(terminal_safe, c.added))))
    if c.removed:
        lines.append(Text("removed (only in baseline): " + ", ".join(map(terminal_safe, c.removed))))
    return Group(*lines)


def _reconcile_cell(c: Comparison, key: str) -> Text:
    """``ok -> flagged``, each word in its verdict's style."""
    words = reconcile_pair(c, key)
    styles = [f.verdict_style(Reconcile(v)) if v in _RECONCILE_VALUES else "dim" for v in c.reconcile.get(key, (None, None))]
    return Text.assemble((words[0], styles[0]), " -> ", (words[1], styles[1]))


_RECONCILE_VALUES = {v.value for v in Reconcile}


def energy_table(c: Comparison) -> list[Any]:
    """Renderables for the terminal table (a title-led table and its summary), or []."""
    if not c.energy:
        return []
    tab = Table(title=Text("energy per call (NVML energy counter, one sample per block of the energy window)"),
                title_justify="left")  # fmt: skip
    for col in ("benchmark", "energy", "baseline median [min, Q3]", "current median [min, Q3]", "change [CI]", "reason"):
        tab.add_column(col, overflow="fold")
    for v in c.energy:
        tab.add_row(Text(terminal_safe(v.key)), Text(v.verdict.value, style=_ENERGY_STYLE[v.verdict]), Text(fmt_energy(v.baseline)),
                    Text(fmt_energy(v.current)), Text(fmt_change(v.ratio)), Text(v.reason.value))  # fmt: skip
    notes = [Text.assemble((f"{v.verdict.value} ", _ENERGY_STYLE[v.verdict]), terminal_safe(f"{v.key}: {v.message}"))
             for v in c.energy if v.verdict is not Energy.SAME]  # fmt: skip
    return [tab, *notes, Text(energy_summary(c))]


def _columns(rows: list[list[str]]) -> list[str]:
    """Rows of cells as lines, each column padded to its widest cell (two spaces between)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _median(s: Spread) -> str:
    scale, unit = (1e6, "ms") if s.median >= 1e6 else (1e3, "us") if s.median >= 1e3 else (1.0, "ns")
    return f"{s.median / scale:.{0 if scale == 1.0 else 2}f} {unit}"


def compare_lines(c: Comparison) -> str:
    """The comparison in its compact form, one line per benchmark, each line as long as it needs:
    what a CI log (stdout not a terminal) gets, where a table squeezed to 80 columns folds words."""
    head = ["verdict", "benchmark", "time change [CI]", "cycles change [CI]", "median (baseline -> current)", "reason"]
    rows = [head + (["reconcile (baseline -> current)"] if c.reconcile else [])]
    for v in c.verdicts:
        row = [v.verdict.value, terminal_safe(v.key), fmt_change(v.ratio), fmt_change(v.cycles_ratio),
               f"{_median(v.baseline)} -> {_median(v.current)} (n={v.baseline.n}, {v.current.n})", v.reason.value]  # fmt: skip
        rows.append(row + ([" -> ".join(reconcile_pair(c, v.key))] if c.reconcile else []))
    out = [terminal_safe(f"{c.baseline} -> {c.current}")]
    out += _columns(rows) if c.verdicts else []
    out += [terminal_safe(f"{v.verdict.value} {v.key}: {v.message}") for v in c.verdicts if v.reason is not Reason.WITHIN_THRESHOLD]
    out += [summary(c), settings_line(c)]
    if c.energy:
        erows = [["energy", "benchmark", "change [CI]", "median per call (baseline -> current)", "reason"]]
        erows += [[v.verdict.value, terminal_safe(v.key), fmt_change(v.ratio), f"{fmt_energy(v.baseline)} -> {fmt_energy(v.current)}",
                   v.reason.value] for v in c.energy]  # fmt: skip
        out += ["energy per call (NVML energy counter, one sample per block of the energy window)", *_columns(erows)]
        out += [terminal_safe(f"{v.verdict.value} {v.key}: {v.message}") for v in c.energy if v.verdict is not Energy.SAME]
        out.append(energy_summary(c))
    if c.added:
        out.append("added (only in current): " + ", ".join(map(terminal_safe, c.added)))
    if c.removed:
        out.append("removed (only in baseline): " + ", ".join(map(terminal_safe, c.removed)))
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ device file

def _device_table(title: str, headers: list[str], rows: list[list[str]], left: int = 1) -> Table:
    tab = Table(title=Text(title), title_justify="left")
    for i, h in enumerate(headers):
        last = i == len(headers) - 1
        tab.add_column(h, justify="left" if i < left or last else "right", no_wrap=not last, overflow="fold")
    for r in rows:
        tab.add_row(*(Text(c) for c in r))  # Text, never markup
    return tab


def print_device(dev: DeviceFile, console: Console) -> None:
    """Print every measured ceiling, the curves and the roofs with their ridge points."""
    console.print(Text(f"nsightwrap device: {t.heading(dev)}", style="bold"))
    for w in dev.warnings:
        console.print(Text(f"warning: {w}", style="yellow"))
    for grp in GROUPS:
        rows = t.rows(dev, grp)
        if rows:
            console.print(_device_table(t.GROUP_TITLES[grp], t.ROW_HEADERS, rows))
    if dev.bandwidth_curve:
        console.print(_device_table("Copy bandwidth against transfer size (L2 flushed)", t.CURVE_HEADERS, t.curve_rows(dev)))
    if dev.latency_curve:
        console.print(_device_table("Pointer-chase latency against working set", t.LATENCY_HEADERS, t.latency_rows(dev)))
    roofs = t.roofs_of(dev)
    if roofs.peaks or roofs.memory_bytes_per_s:
        console.print(_device_table(
            f"Roofs: memory {t.rate(roofs.memory_bytes_per_s, 'B/s')} ({roofs.memory_name or '-'})",
            t.RIDGE_HEADERS, t.ridge_rows(roofs),
        ))  # fmt: skip


# ------------------------------------------------------------------ the protocol


def _text(print_to: Callable[[Console], None], width: int) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), highlight=False)
    print_to(console)
    return console.export_text()


@exporter("report", "terminal")
def report_plain(result: RunResult, width: int = 160) -> str:
    """The terminal report as plain text at ``width`` columns (``report -f table -o FILE``)."""
    return _text(lambda c: print_report(result, c), width)


@exporter("compare", "terminal")
def compare_plain(c: Comparison, width: int = 200) -> str:
    """The compare table as plain text (``compare -f table -o FILE``)."""
    return _text(lambda con: con.print(compare_table(c)), width)


@exporter("device", "terminal")
def device_plain(dev: DeviceFile, width: int = 160) -> str:
    """The device tables as plain text."""
    return _text(lambda c: print_device(dev, c), width)
