"""Every chart of the HTML views as inline SVG (no script, font or style fetched): a benchmark's
timings side by side, the plain pass's SM clock, a gap's waterfall, the energy timeline, the
log-log roofline and the device curves. Charts draw numbers they are given: roofs, ridge points
and achieved rates are computed by ``analysis.roofline`` and ``device.roofs``.

The report's charts are written as SVG text by ``svgplot`` (under a millisecond a chart, no
plotting library imported); the device file's measured curves are drawn by matplotlib. SVG text
stays text (small, searchable) and names are escaped, never parsed as markup.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nsightwrap.analysis.model import BenchmarkResult, RunResult
from nsightwrap.export import gap_text as g
from nsightwrap.export import reportfmt as f
from nsightwrap.export.escape import html as esc
from nsightwrap.export.svgplot import (
    Bar,
    Canvas,
    Panel,
    Scale,
    Span,
    hbars,
    log_ticks,
    stacked_lines,
    text_width,
    x_axis,
    y_axis,
)

# One colour per source, the same in every chart even when a source is missing.
BAR_COLORS = {"timer": "#4c72b0", "ncu raw": "#dd8452", "ncu @clock": "#c44e52", "nsys kernels": "#55a868", "nsys busy": "#8172b3"}
#: Waterfall bars: the timing longer than ncu, shorter, the residual, the whole gap.
WATERFALL_COLORS = {"up": "#c44e52", "down": "#55a868", "residual": "#9a9a9a", "total": "#4c72b0"}
#: Benchmarks named above the energy timeline at most (their spans are shaded all the same).
LABELLED_SPANS = 24
_SHADES = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Names are data, not TeX: never parse "$...$"; keep SVG text as text (small, searchable).
    plt.rcParams.update({"text.parse_math": False, "svg.fonttype": "none", "font.size": 9})
    return plt


def _svg(fig: Any) -> str:
    # Saved, then closed: pyplot keeps every open figure alive.
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    _plt().close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def bar_chart(b: BenchmarkResult) -> str | None:
    """Timer, ncu and nsys medians of one benchmark side by side, titled with its verdict."""
    pairs = [
        ("timer", b.timer.median_ns if b.timer else None),
        ("ncu raw", b.ncu.median_ns if b.ncu else None),
        ("ncu @clock", b.ncu_at_ratio_ns),
        ("nsys kernels", b.nsys.median_ns if b.nsys else None),
        ("nsys busy", b.nsys.busy_median_ns if b.nsys else None),
    ]
    values = [v if v is not None and math.isfinite(v) else None for _, v in pairs]
    known = [v for v in values if v is not None]
    if not known:
        return None
    top = max(known) / 1e3 or 1.0
    # Horizontal bars, every source on its own row even when missing (labelled, not dropped),
    # with the value written at the bar's end: the numbers are read, not guessed from an axis.
    bars = [
        Bar(k, 0.0, None if v is None else v / 1e3, BAR_COLORS[k], "no data" if v is None else f.time_ns(v),
            "#333" if v is not None else "#999")  # fmt: skip
        for (k, _), v in zip(pairs, values, strict=True)
    ]
    title = f"{f.label(b)}: {f.verdict_text(b.verdict)}" + (f", ratio {f.ratio(b.ratio)} @ {f.ratio_clock(b)}" if b.ratio is not None else "")
    return hbars(bars, title=title, title_color=f.verdict_color(b.verdict), xlabel="us, median per iteration", lo=0.0, hi=top * 1.45)


def benchmark_spans(result: RunResult) -> list[tuple[BenchmarkResult, float, float]]:
    """Each benchmark's span on the plain pass's timeline (seconds from its first clock sample):
    from its timed samples' energy window, which carries the start and end; others have none."""
    return [
        (b, b.power.t_start_s, b.power.t_end_s)
        for b in result.benchmarks
        if b.power is not None and b.power.t_start_s is not None and b.power.t_end_s is not None
    ]


def timeline_caption(result: RunResult, *, power: bool) -> str:
    """What the plain pass's clock chart draws, where its samples come from, and which stretches
    belong to which benchmark (or that this run cannot tell)."""
    trace = result.clock_trace
    what = "SM clock, power and GPU temperature" if power else "SM clock"
    out = (
        f"The {what} of the plain pass (the script run without a profiler) against time: {len(trace)} "
        f"nvidia-smi samples over {trace[-1].t_s - trace[0].t_s:.1f} s, sampled from the host while the script ran "
        "(plain/smi_samples.csv). " if trace else f"The {what} of the plain pass: no nvidia-smi samples. "
    )
    spans = benchmark_spans(result)
    if spans:
        named = "shaded and named" if len(spans) <= LABELLED_SPANS else "shaded (too many to name)"
        out += (
            f"Each benchmark's timed samples are {named} ({len(spans)} of {len(result.benchmarks)} benchmarks; "
            "a benchmark's span comes from its energy window). Outside them the script was not timing "
            "(start-up, set-up, its own work between timings), where an idle GPU lowers its clock."
        )
    else:
        out += (
            "No benchmark's time span is known in this run (a span comes from the energy window that "
            "nsightwrap.bench records with NVML; this run has none), so the chart cannot tell which stretch "
            "belongs to which benchmark: an idle GPU (start-up, set-up, work between timings) lowers its "
            "clock. Each benchmark's own clock is in the summary's clock column."
        )
    return out


def _spans(result: RunResult) -> list[Span]:
    """Every benchmark's span, shaded, named up to ``LABELLED_SPANS`` (beyond, names would pile up)."""
    spans = benchmark_spans(result)
    named = len(spans) <= LABELLED_SPANS
    return [Span(t0, t1, _SHADES[i % len(_SHADES)], f.label(b) if named else None) for i, (b, t0, t1) in enumerate(spans)]


def clock_chart(result: RunResult) -> str | None:
    """The SM clock of the plain pass against time (nvidia-smi samples), each benchmark's span
    shaded and named; None without any sample."""
    if not result.clock_trace:
        return None
    trace = result.clock_trace
    return stacked_lines([c.t_s for c in trace], [Panel([c.sm_clock_hz / 1e9 for c in trace], "SM clock (GHz)", "#4c72b0")],
                         xlabel="seconds into the plain pass", title="SM clock during the plain pass (nvidia-smi samples)",
                         spans=_spans(result), panel_height=150.0)  # fmt: skip


def waterfall_svg(b: BenchmarkResult) -> str | None:
    """The waterfall of ``b``'s gap: each part from where the previous one ended, the residual,
    then the whole gap from zero; None without a decomposition."""
    gap = b.gap
    if gap is None:
        return None
    rows: list[tuple[str, float, float, str]] = []  # label, start (us), length (us), colour key
    at = 0.0
    for p in gap.parts:
        if abs(p.ns) < 5:
            continue  # a measured zero: listed in the table, no bar
        rows.append((g.label(p), at, p.ns / 1e3, "up" if p.ns > 0 else "down"))
        at += p.ns / 1e3
    rows.append(("residual", at, gap.residual_ns / 1e3, "residual"))
    rows.append(("timer - ncu", 0.0, gap.total_ns / 1e3, "total"))
    lo = min(0.0, *(min(r[1], r[1] + r[2]) for r in rows))
    hi = max(0.0, *(max(r[1], r[1] + r[2]) for r in rows))
    span = hi - lo or 1.0
    bars = [Bar(label, start, length, WATERFALL_COLORS[key], g.signed_us(length * 1e3)) for label, start, length, key in rows]
    return hbars(bars, title=f"{f.label(b)}: {g.headline(gap)}", title_color="#222", lo=lo - 0.3 * span, hi=hi + 0.3 * span,
                 xlabel="us per call (positive: the timing is longer than ncu)", plot_width=340.0, zero_line=True)  # fmt: skip


def has_timeline(result: RunResult) -> bool:
    """Whether ``timeline_svg`` draws a chart (it needs power or temperature samples)."""
    trace = result.clock_trace
    return bool(trace) and any(c.power_w is not None or c.temperature_c is not None for c in trace)


def timeline_svg(result: RunResult) -> str | None:
    """SM clock, power and temperature against time in the plain pass, or None without samples."""
    trace = result.clock_trace
    if not has_timeline(result):
        return None
    panels = [
        Panel([c.sm_clock_hz / 1e9 for c in trace], "SM clock (GHz)", "#4c72b0"),
        Panel([c.power_w if c.power_w is not None else math.nan for c in trace], "power (W)", "#c44e52"),
        Panel([c.temperature_c if c.temperature_c is not None else math.nan for c in trace], "GPU temp (C)", "#dd8452"),
    ]
    spans = _spans(result)
    # The caption promises shading only where some was drawn.
    shaded = "; shaded: each benchmark's timed samples and energy window" if spans else ""
    return stacked_lines([c.t_s for c in trace], panels, xlabel=f"seconds into the plain pass (nvidia-smi samples{shaded})",
                         spans=spans, width=680.0, panel_height=90.0)  # fmt: skip


# ------------------------------------------------------------------ the roofline and device curves

#: Colours of the compute roofs, the same in every chart.
ROOF_COLORS = {"bf16": "#c44e52", "fp16": "#dd8452", "tf32": "#8172b3", "fp8": "#937860", "int8": "#da8bc3", "fp32": "#4c72b0"}
POINT_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


@dataclass(frozen=True)
class ChartRoof:
    """A compute roof as drawn: name and FLOP/s (at the clock the chart is drawn for)."""

    name: str
    flops_per_s: float


@dataclass(frozen=True)
class ChartPoint:
    """One benchmark or kernel: label, FLOP per byte, achieved FLOP/s; ``marker`` o / s / ^;
    ``title``: what hovering the point shows (its label first; default the label alone)."""

    label: str
    intensity: float
    flops_per_s: float
    marker: str = "o"
    title: str = ""


#: The SVG group id of the n-th point drawn (``roofline_svg`` gives each its ``<title>``).
POINT_ID = "nw-pt-{}"


def _si(v: float, digits: int = 6) -> str:
    """``1T``, ``100G`` on ticks; ``792 T`` with ``digits=3`` in legends."""
    sep = " " if digits < 6 else ""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= scale:
            return f"{v / scale:.{digits}g}{sep}{prefix}"
    return f"{v:.{digits}g}{sep}"


def _plain_log_ticks(ax: Any, x: bool = True, y: bool = True) -> None:
    """Tick labels as text (``0.1``, ``10``, ``1T``): TeX is off, so the default would print markup."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if y and ax.get_yscale() == "log":  # 1, 2, 5 per decade: a curve within one decade still reads
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    if x:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    if y:
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _si(v)))
        ax.yaxis.set_minor_formatter(NullFormatter())


def _marker(c: Canvas, x: float, y: float, marker: str, color: str, size: float) -> str:
    """The SVG shape of one point: o circle, s square, D diamond, ^ / v triangles."""
    r = size / 2
    style = f'fill="{color}" stroke="white" stroke-width="0.5"'
    if marker == "s":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{size:.1f}" height="{size:.1f}" {style}/>'
    if marker in "D^v":
        pts = {"D": ((0, -r * 1.2), (r * 1.2, 0), (0, r * 1.2), (-r * 1.2, 0)),
               "^": ((0, -r * 1.2), (r * 1.1, r * 0.9), (-r * 1.1, r * 0.9)),
               "v": ((0, r * 1.2), (r * 1.1, -r * 0.9), (-r * 1.1, -r * 0.9))}[marker]  # fmt: skip
        return f'<polygon points="{" ".join(f"{x + dx:.1f},{y + dy:.1f}" for dx, dy in pts)}" {style}/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" {style}/>'


def roofline_svg(
    memory_bytes_per_s: float | None,
    roofs: Sequence[ChartRoof],
    points: Sequence[ChartPoint],
    title: str,
    l2_bytes_per_s: float | None = None,
) -> str | None:
    """A log-log roofline: per compute roof the line min(peak, intensity x memory roof), the L2
    roof dashed, every point at (intensity, achieved FLOP/s) in a group ``POINT_ID`` holding its
    ``<title>`` (the browser shows it on hover); roofs and points named in a legend beside the
    chart (inline labels of close roofs would overlap)."""
    pts = [p for p in points if p.intensity > 0 and p.flops_per_s > 0 and math.isfinite(p.intensity)]
    if not memory_bytes_per_s and not roofs:
        return None
    xs = [p.intensity for p in pts]
    peaks = [r.flops_per_s for r in roofs]
    ridges = [r.flops_per_s / memory_bytes_per_s for r in roofs] if memory_bytes_per_s else []
    lo = min([0.01, *(x / 3 for x in xs)])
    hi = max([1e4, *(x * 3 for x in xs), *(r * 10 for r in ridges)])
    top = max([*peaks, *(p.flops_per_s for p in pts), 1.0])
    bottom = min([*(p.flops_per_s for p in pts), lo * (memory_bytes_per_s or 1e12)])
    ylo, yhi = max(bottom / 3, 1e6), top * 3

    legend: list[tuple[str, str, str]] = []  # (label, colour, kind: a dash pattern, "-" or a marker)
    for r in roofs:
        ridge = f", ridge {r.flops_per_s / memory_bytes_per_s:.0f} FLOP/B" if memory_bytes_per_s else ""
        legend.append((f"{r.name} {_si(r.flops_per_s, 3)}{'OP' if r.name == 'int8' else 'FLOP'}/s{ridge}", ROOF_COLORS.get(r.name, "#555"), "-"))
    if memory_bytes_per_s:
        legend.append((f"HBM {memory_bytes_per_s / 1e12:.3g} TB/s", "#333", "1,2"))
    if l2_bytes_per_s:
        legend.append((f"L2 {l2_bytes_per_s / 1e12:.3g} TB/s", "#999", "4,2"))
    markers = "osD^v"
    styled = []
    for i, p in enumerate(pts):
        color = POINT_COLORS[i % len(POINT_COLORS)]
        marker = p.marker if p.marker != "o" else markers[i // len(POINT_COLORS) % len(markers)]
        styled.append((p, color, marker, 7.0 if p.marker == "o" else 5.0))
        legend.append((p.label, color, "marker:" + marker))

    left, top_px, plot_w, plot_h = 62.0, 24.0, 380.0, 280.0
    legend_x = left + plot_w + 14
    legend_w = max((text_width(label, 7) for label, _, _ in legend), default=0.0) + 26
    height = max(top_px + plot_h + 40, top_px + 11 * len(legend) + 10)
    c = Canvas(max(legend_x + legend_w, text_width(title, 9) + 12), height)
    c.text(4, 11, title, 9)
    sx = Scale(lo, hi, left, left + plot_w, log=True)
    sy = Scale(ylo, yhi, top_px + plot_h, top_px, log=True)
    x_axis(c, sx, log_ticks(lo, hi), top_px + plot_h, lambda v: f"{v:g}", "arithmetic intensity (FLOP per DRAM byte)", grid_to=top_px)
    y_axis(c, sy, log_ticks(ylo, yhi), left, _si, "FLOP/s", grid_to=left + plot_w)
    # Lines are drawn in data space and clipped to the axes (a roof runs off the top).
    c.raw(f'<defs><clipPath id="plot"><rect x="{left}" y="{top_px}" width="{plot_w}" height="{plot_h}"/></clipPath></defs>'
          '<g clip-path="url(#plot)">')  # fmt: skip

    def line(ys_of: Any, color: str, width: float, dash: str | None = None) -> None:
        # A roof is straight in log-log space but for its ridge: the ends and the ridge suffice.
        knees = sorted({lo, hi, *(x for x in ridges if lo < x < hi)})
        c.polyline([(sx(x), sy(max(ys_of(x), ylo / 10))) for x in knees], color, width, dash)

    for r in roofs:
        peak = r.flops_per_s
        color = ROOF_COLORS.get(r.name, "#555")
        if memory_bytes_per_s:
            bw = memory_bytes_per_s
            line(lambda x, peak=peak, bw=bw: min(peak, x * bw), color, 1.4)
        else:
            line(lambda x, peak=peak: peak, color, 1.4)
    if memory_bytes_per_s:
        bw = memory_bytes_per_s
        line(lambda x: x * bw, "#333", 0.8, "1,2")
    if l2_bytes_per_s:
        l2 = l2_bytes_per_s
        knees = sorted({lo, hi, *([top / l2] if lo < top / l2 < hi else [])})
        c.polyline([(sx(x), sy(min(top, x * l2))) for x in knees], "#999", 0.8, "4,2")
    c.raw("</g>")
    for i, (p, color, marker, size) in enumerate(styled):
        c.raw(f'<g id="{POINT_ID.format(i)}" class="nw-point"><title>{esc(p.title or p.label)}</title>'
              f"{_marker(c, sx(p.intensity), sy(p.flops_per_s), marker, color, size)}</g>")  # fmt: skip
    for j, (label, color, kind) in enumerate(legend):
        y = top_px + 4 + 11 * j
        if kind.startswith("marker:"):
            c.raw(_marker(c, legend_x + 9, y, kind.split(":", 1)[1], color, 6.0))
        else:
            c.line(legend_x, y, legend_x + 18, y, color, 1.4 if kind == "-" else 0.8, dash=None if kind == "-" else kind)
        c.text(legend_x + 24, y, label, 7)
    return c.svg()


_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^")]+)')
_SVG = re.compile(r"<svg\b.*?</svg>", re.S)


def unique_ids(doc: str) -> str:
    """``doc`` with every id inside each inline SVG prefixed by the SVG's number (``s3-figure_1``),
    references to them too: matplotlib numbers ids from 1 in every figure, so a page of several
    figures would repeat them (invalid HTML, and a clip path could come from the wrong figure)."""
    n = 0

    def one(m: re.Match[str]) -> str:
        nonlocal n
        n += 1
        pre = f"s{n}-"
        svg = _ID.sub(lambda i: f'id="{pre}{i.group(1)}"', m.group(0))
        return _REF.sub(lambda r: f"{r.group(1)}{pre}{r.group(2)}", svg)

    return _SVG.sub(one, doc)


def curve_svg(xs: Sequence[float], ys: Sequence[float], *, xlabel: str, ylabel: str, title: str,
              logy: bool = True, xfmt: str = "bytes") -> str | None:  # fmt: skip
    """A measured curve (bandwidth against size, latency against working set) on a log x axis."""
    pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if x > 0 and y is not None and y > 0 and math.isfinite(y)]
    if not pairs:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.2, 3.2))
    ax.plot([x for x, _ in pairs], [y for _, y in pairs], marker="o", ms=3, lw=1.2)
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    if xfmt == "bytes":
        ticks = [x for x, _ in pairs]
        ax.set_xticks(ticks, [_short_size(x) for x in ticks], rotation=45, fontsize=7)
        ax.minorticks_off()
    _plain_log_ticks(ax, x=xfmt != "bytes", y=logy)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9, loc="left")
    ax.grid(alpha=0.25, which="both")
    return _svg(fig)


def _short_size(n: float) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g}{unit}"
    return f"{n:g}"
