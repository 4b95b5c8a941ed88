"""Every matplotlib chart of the HTML views as inline SVG (no script, font or style fetched): a
benchmark's timings side by side, the plain pass's SM clock, a gap's waterfall, the energy timeline,
the log-log roofline and the device curves. Charts draw numbers they are given: roofs, ridge points
and achieved rates are computed by ``analysis.roofline`` and ``device.roofs``.

Names are data, not TeX (``text.parse_math`` off), and SVG text stays text (small, searchable).
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
    plt = _plt()
    # Horizontal bars, every source on its own row even when missing (labelled, not dropped),
    # with the value written at the bar's end: the numbers are read, not guessed from an axis.
    fig, ax = plt.subplots(figsize=(4.2, 1.9))
    rows = range(len(pairs))
    ax.barh(rows, [(v or 0.0) / 1e3 for v in values], color=[BAR_COLORS[k] for k, _ in pairs], height=0.7)
    for y, v in zip(rows, values, strict=True):
        text = "no data" if v is None else f.time_ns(v)
        ax.text((v or 0.0) / 1e3 + top * 0.02, y, text, va="center", fontsize=8, color="#333" if v is not None else "#999")
    ax.set_yticks(list(rows), [k for k, _ in pairs])
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.45)
    ax.set_xlabel("us, median per iteration")
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(
        f"{f.label(b)}: {f.verdict_text(b.verdict)}" + (f", ratio {f.ratio(b.ratio)} @ {f.ratio_clock(b)}" if b.ratio is not None else ""),
        fontsize=9,
        loc="left",
        color=f.verdict_color(b.verdict),
    )
    return _svg(fig)


def benchmark_spans(result: RunResult) -> list[tuple[BenchmarkResult, float, float]]:
    """Each benchmark's span on the plain pass's timeline (seconds from its first clock sample):
    from its timed samples' energy window, which carries the start and end; others have none."""
    return [
        (b, b.power.t_start_s, b.power.t_end_s)
        for b in result.benchmarks
        if b.power is not None and b.power.t_start_s is not None and b.power.t_end_s is not None
    ]


def _shade(axes: Sequence[Any], result: RunResult) -> None:
    """Shade every benchmark's span on ``axes`` and name it above the first (up to ``LABELLED_SPANS``)."""
    spans = benchmark_spans(result)
    for i, (b, t0, t1) in enumerate(spans):
        for ax in axes:
            ax.axvspan(t0, t1, color=_SHADES[i % len(_SHADES)], alpha=0.12, lw=0)
        if len(spans) <= LABELLED_SPANS:  # beyond, names would pile up (and cost a text each)
            axes[0].text(t0, 1.02, f.label(b), transform=axes[0].get_xaxis_transform(), fontsize=7,
                         rotation=30, va="bottom", ha="left")  # fmt: skip


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


def clock_chart(result: RunResult) -> str | None:
    """The SM clock of the plain pass against time (nvidia-smi samples), each benchmark's span
    shaded and named; None without any sample."""
    if not result.clock_trace:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 2.4))
    ax.plot([c.t_s for c in result.clock_trace], [c.sm_clock_hz / 1e9 for c in result.clock_trace], lw=1)
    _shade([ax], result)
    ax.set_xlabel("seconds into the plain pass")
    ax.set_ylabel("SM clock (GHz)")
    ax.set_title("SM clock during the plain pass (nvidia-smi samples)", fontsize=9, loc="left", pad=40 if benchmark_spans(result) else 6)
    ax.grid(alpha=0.3)
    return _svg(fig)


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
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 0.42 * len(rows) + 0.9))
    ys = list(range(len(rows)))
    ax.barh(
        ys, [r[2] for r in rows], left=[r[1] for r in rows], color=[WATERFALL_COLORS[r[3]] for r in rows], height=0.6
    )
    lo = min(0.0, *(min(r[1], r[1] + r[2]) for r in rows))
    hi = max(0.0, *(max(r[1], r[1] + r[2]) for r in rows))
    pad = (hi - lo) * 0.02 or 0.01
    for y, (_, start, length, _) in zip(ys, rows, strict=True):
        end = start + length
        ax.text(
            (max(start, end) + pad) if length >= 0 else (min(start, end) - pad),
            y,
            g.signed_us(length * 1e3),
            va="center",
            ha="left" if length >= 0 else "right",
            fontsize=8,
        )
    ax.axvline(0, color="#444", lw=0.8)
    ax.set_yticks(ys, [r[0] for r in rows])
    ax.invert_yaxis()
    span = hi - lo or 1.0
    ax.set_xlim(lo - 0.3 * span, hi + 0.3 * span)
    ax.set_xlabel("us per call (positive: the timing is longer than ncu)")
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(f"{f.label(b)}: {g.headline(gap)}", fontsize=9, loc="left")
    return _svg(fig)


def has_timeline(result: RunResult) -> bool:
    """Whether ``timeline_svg`` draws a chart (it needs power or temperature samples)."""
    trace = result.clock_trace
    return bool(trace) and any(c.power_w is not None or c.temperature_c is not None for c in trace)


def timeline_svg(result: RunResult) -> str | None:
    """SM clock, power and temperature against time in the plain pass, or None without samples."""
    trace = result.clock_trace
    if not has_timeline(result):
        return None
    plt = _plt()
    fig, axes = plt.subplots(3, 1, figsize=(9, 4.6), sharex=True)
    t = [c.t_s for c in trace]
    series = (
        ([c.sm_clock_hz / 1e9 for c in trace], "SM clock (GHz)", "#4c72b0"),
        ([c.power_w if c.power_w is not None else float("nan") for c in trace], "power (W)", "#c44e52"),
        ([c.temperature_c if c.temperature_c is not None else float("nan") for c in trace], "GPU temp (C)", "#dd8452"),
    )
    for ax, (ys, label, color) in zip(axes, series, strict=True):
        ax.plot(t, ys, lw=1, color=color)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    _shade(axes, result)
    # The caption promises shading only where some was drawn.
    shaded = "; shaded: each benchmark's timed samples and energy window" if benchmark_spans(result) else ""
    axes[-1].set_xlabel(f"seconds into the plain pass (nvidia-smi samples{shaded})")
    fig.tight_layout()
    return _svg(fig)


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


def roofline_svg(
    memory_bytes_per_s: float | None,
    roofs: Sequence[ChartRoof],
    points: Sequence[ChartPoint],
    title: str,
    l2_bytes_per_s: float | None = None,
) -> str | None:
    """A log-log roofline: per compute roof the line min(peak, intensity x memory roof), the L2
    roof dashed, every point at (intensity, achieved FLOP/s); roofs and points named in a legend
    beside the chart (inline labels of close roofs would overlap)."""
    pts = [p for p in points if p.intensity > 0 and p.flops_per_s > 0 and math.isfinite(p.intensity)]
    if not memory_bytes_per_s and not roofs:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    xs = [p.intensity for p in pts]
    peaks = [r.flops_per_s for r in roofs]
    ridges = [r.flops_per_s / memory_bytes_per_s for r in roofs] if memory_bytes_per_s else []
    lo = min([0.01, *(x / 3 for x in xs)])
    hi = max([1e4, *(x * 3 for x in xs), *(r * 10 for r in ridges)])
    ax.set_xscale("log")
    ax.set_yscale("log")
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    top = max([*peaks, *(p.flops_per_s for p in pts), 1.0])
    for r in roofs:
        color = ROOF_COLORS.get(r.name, "#555")
        ys = [min(r.flops_per_s, x * memory_bytes_per_s) for x in grid] if memory_bytes_per_s else [r.flops_per_s] * len(grid)
        ridge = f", ridge {r.flops_per_s / memory_bytes_per_s:.0f} FLOP/B" if memory_bytes_per_s else ""
        ax.plot(grid, ys, color=color, lw=1.4, label=f"{r.name} {_si(r.flops_per_s, 3)}{'OP' if r.name == 'int8' else 'FLOP'}/s{ridge}")
    if memory_bytes_per_s:
        ax.plot(grid, [x * memory_bytes_per_s for x in grid], color="#333", lw=0.8, ls=":",
                label=f"HBM {memory_bytes_per_s / 1e12:.3g} TB/s")  # fmt: skip
    if l2_bytes_per_s:
        ax.plot(grid, [min(top, x * l2_bytes_per_s) for x in grid], color="#999", lw=0.8, ls="--",
                label=f"L2 {l2_bytes_per_s / 1e12:.3g} TB/s")  # fmt: skip
    markers = "osD^vP*Xh"
    for i, p in enumerate(pts):
        color = POINT_COLORS[i % len(POINT_COLORS)]
        marker = p.marker if p.marker != "o" else markers[i // len(POINT_COLORS) % len(markers)]
        dot = ax.scatter([p.intensity], [p.flops_per_s], color=color, marker=marker, s=30 if p.marker == "o" else 14,
                         zorder=3, label=p.label, edgecolors="white", linewidths=0.4)  # fmt: skip
        dot.set_gid(POINT_ID.format(i))
    bottom = min([*(p.flops_per_s for p in pts), lo * (memory_bytes_per_s or 1e12)])
    ax.set_xlim(lo, hi)
    ax.set_ylim(max(bottom / 3, 1e6), top * 3)
    _plain_log_ticks(ax)
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(title, fontsize=9, loc="left")
    ax.grid(alpha=0.25, which="both")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    svg = _svg(fig)
    return _with_titles(svg, [p.title or p.label for p in pts])


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


def _with_titles(svg: str, titles: Sequence[str]) -> str:
    """``svg`` with a ``<title>`` first in each point's group: the browser shows it on hover (no
    script, nothing fetched). Names are escaped; matplotlib wrote the groups from ``set_gid``."""
    from nsightwrap.export.escape import html as esc

    def titled(m: re.Match[str]) -> str:
        i = int(m.group(1))
        return f'{m.group(0)[:-1]} class="nw-point"><title>{esc(titles[i])}</title>' if i < len(titles) else m.group(0)

    # One pass over the SVG, not one per point (a sweep's chart holds a thousand points).
    return re.sub(r'<g id="' + POINT_ID.format(r"(\d+)") + '">', titled, svg)


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
