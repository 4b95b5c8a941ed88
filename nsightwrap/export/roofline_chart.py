"""Log-log roofline charts and the device curves as inline SVG (matplotlib, no network, no script).

Every chart here draws numbers it is given: roofs, ridge points and achieved rates are computed
by ``analysis.roofline`` and ``device.roofs``.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Names are data, not TeX: never parse "$...$"; keep SVG text as text (small, searchable).
    plt.rcParams.update({"text.parse_math": False, "svg.fonttype": "none", "font.size": 9})
    return plt


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg") :]


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
    plt.close(fig)
    return _with_titles(svg, [p.title or p.label for p in pts])


def _with_titles(svg: str, titles: Sequence[str]) -> str:
    """``svg`` with a ``<title>`` first in each point's group: the browser shows it on hover (no
    script, nothing fetched). Names are escaped; matplotlib wrote the groups from ``set_gid``."""
    import re

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
    svg = _svg(fig)
    plt.close(fig)
    return svg


def _short_size(n: float) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g}{unit}"
    return f"{n:g}"
