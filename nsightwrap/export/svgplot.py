"""Charts written as SVG text directly: axes (linear or log) with ticks, bars, lines, markers,
shaded spans and text. The report's charts are simple (bars, a few lines, a log-log roofline), and
drawing them through matplotlib cost about 0.25 s a chart and 1 s to import it; written here a
chart takes well under a millisecond and the page needs no plotting library.

Every string drawn goes through ``escape.html``; coordinates are pixels of the SVG's viewBox.
Text widths are estimated (``text_width``: the average glyph of a sans-serif font) to size
margins: the SVG never measures text, so a long name gets room from its length.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nsightwrap.export.escape import html as esc

FONT = "system-ui,-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif"
#: The average glyph width of ``FONT`` in em (digits and lower case), to size margins.
GLYPH_EM = 0.6


def text_width(s: str, size: float) -> float:
    """The estimated width in pixels of ``s`` at font size ``size``."""
    return len(s) * size * GLYPH_EM


def _n(v: float) -> str:
    """A coordinate, short: ``12.5``, ``40``."""
    s = f"{v:.1f}"
    return s[:-2] if s.endswith(".0") else s


@dataclass(frozen=True)
class Scale:
    """Data ``lo..hi`` onto pixels ``a..b`` (``b < a`` for a y axis), linear or log10."""

    lo: float
    hi: float
    a: float
    b: float
    log: bool = False

    def __call__(self, v: float) -> float:
        lo, hi = (math.log10(self.lo), math.log10(self.hi)) if self.log else (self.lo, self.hi)
        x = math.log10(v) if self.log else v
        span = hi - lo or 1.0
        return self.a + (x - lo) / span * (self.b - self.a)


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round ticks (1, 2 or 5 times a power of ten apart) within ``lo..hi``."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw * 0.999)
    first = math.ceil(lo / step - 1e-9)
    return [round(k * step, 12) for k in range(first, math.floor(hi / step + 1e-9) + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks of a log axis within ``lo..hi``: 1, 2 and 5 per decade over at most three decades,
    each decade up to ten, every other decade beyond."""
    d0, d1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    decades = d1 - d0
    subs = (1.0, 2.0, 5.0) if decades <= 3 else (1.0,)
    every = 1 if decades <= 10 else 2
    return [s * 10.0**d for d in range(d0, d1 + 1) if (d - d0) % every == 0 for s in subs if lo <= s * 10.0**d <= hi * (1 + 1e-9)]


class Canvas:
    """An SVG being written: shapes and text in pixel coordinates, then ``svg()``."""

    def __init__(self, width: float, height: float) -> None:
        self.width = width
        self.height = height
        self.parts: list[str] = []

    def rect(self, x: float, y: float, w: float, h: float, fill: str, opacity: float | None = None) -> None:
        if w < 0:
            x, w = x + w, -w
        op = f' fill-opacity="{opacity}"' if opacity is not None else ""
        self.parts.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" fill="{fill}"{op}/>')

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#444", width: float = 1.0,
             dash: str | None = None, opacity: float | None = None) -> None:  # fmt: skip
        extra = (f' stroke-dasharray="{dash}"' if dash else "") + (f' stroke-opacity="{opacity}"' if opacity is not None else "")
        self.parts.append(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" stroke="{stroke}" stroke-width="{width}"{extra}/>')

    def polyline(self, points: Sequence[tuple[float, float]], stroke: str, width: float = 1.0, dash: str | None = None) -> None:
        """A line through ``points``; a point with a non-finite coordinate breaks it (a gap)."""
        runs: list[list[tuple[float, float]]] = [[]]
        for x, y in points:
            if math.isfinite(x) and math.isfinite(y):
                runs[-1].append((x, y))
            elif runs[-1]:
                runs.append([])
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        for run in runs:
            if len(run) >= 2:
                pts = " ".join(f"{_n(x)},{_n(y)}" for x, y in run)
                self.parts.append(f'<polyline points="{pts}" fill="none" stroke="{stroke}" stroke-width="{width}"{extra}/>')

    def text(self, x: float, y: float, s: str, size: float = 10, *, anchor: str = "start", color: str = "#333",
             middle: bool = True, rotate: float | None = None, bold: bool = False) -> None:  # fmt: skip
        """``s`` at (x, y): ``anchor`` start / middle / end; ``middle``: y is the text's centre
        (else its baseline); ``rotate``: degrees, clockwise, about (x, y)."""
        attrs = f'x="{_n(x)}" y="{_n(y)}" font-size="{size:g}" fill="{color}"'
        if anchor != "start":
            attrs += f' text-anchor="{anchor}"'
        if middle:
            attrs += ' dominant-baseline="central"'
        if rotate is not None:
            attrs += f' transform="rotate({rotate:g} {_n(x)} {_n(y)})"'
        if bold:
            attrs += ' font-weight="bold"'
        self.parts.append(f"<text {attrs}>{esc(s)}</text>")

    def raw(self, s: str) -> None:
        self.parts.append(s)

    def svg(self) -> str:
        w, h = math.ceil(self.width), math.ceil(self.height)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'font-family="{FONT}" role="img">' + "".join(self.parts) + "</svg>"
        )


def x_axis(c: Canvas, sx: Scale, ticks: Sequence[float], y: float, fmt: Callable[[float], str], label: str,
           grid_to: float | None = None) -> None:  # fmt: skip
    """A bottom axis at pixel row ``y``: the line, tick marks and labels, the axis label; with
    ``grid_to`` a faint grid line from each tick up to that row."""
    c.line(min(sx.a, sx.b), y, max(sx.a, sx.b), y, "#444", 0.8)
    for t in ticks:
        x = sx(t)
        if grid_to is not None:
            c.line(x, grid_to, x, y, "#000", 0.5, opacity=0.15)
        c.line(x, y, x, y + 3, "#444", 0.8)
        c.text(x, y + 11, fmt(t), 8.5, anchor="middle", color="#444")
    if label:
        c.text((sx.a + sx.b) / 2, y + 26, label, 9, anchor="middle", color="#333")


def y_axis(c: Canvas, sy: Scale, ticks: Sequence[float], x: float, fmt: Callable[[float], str], label: str,
           grid_to: float | None = None) -> None:  # fmt: skip
    """A left axis at pixel column ``x``: the line, ticks and their labels, the label rotated;
    with ``grid_to`` a faint grid line from each tick right to that column."""
    c.line(x, min(sy.a, sy.b), x, max(sy.a, sy.b), "#444", 0.8)
    widest = 0.0
    for t in ticks:
        y = sy(t)
        if grid_to is not None:
            c.line(x, y, grid_to, y, "#000", 0.5, opacity=0.15)
        c.line(x - 3, y, x, y, "#444", 0.8)
        s = fmt(t)
        widest = max(widest, text_width(s, 8.5))
        c.text(x - 5, y, s, 8.5, anchor="end", color="#444")
    if label:
        c.text(x - widest - 14, (sy.a + sy.b) / 2, label, 9, anchor="middle", rotate=-90)


@dataclass(frozen=True)
class Bar:
    """One row of a horizontal bar chart: its label, where the bar starts and how long it is (data
    units), its colour, the text written at its end (``None``: none) and that text's colour."""

    label: str
    start: float
    length: float | None
    color: str
    note: str | None = None
    note_color: str = "#333"


def hbars(bars: Sequence[Bar], *, title: str, title_color: str, xlabel: str, lo: float, hi: float,
          plot_width: float = 260.0, row_height: float = 20.0, zero_line: bool = False) -> str:  # fmt: skip
    """Horizontal bars, one row each, top to bottom; the x axis from ``lo`` to ``hi``; the note
    of each bar written past its end (before it, for a bar that goes left)."""
    left = max(text_width(b.label, 9) for b in bars) + 14 if bars else 20
    top = 24.0
    height = top + row_height * len(bars)
    width = max(left + plot_width + 12, text_width(title, 9) + 12)
    c = Canvas(width, height + 40)
    c.text(4, 11, title, 9, color=title_color)
    sx = Scale(lo, hi, left, left + plot_width)
    pad = (hi - lo) * 0.02
    for i, b in enumerate(bars):
        y = top + row_height * i
        mid = y + row_height / 2
        c.text(left - 6, mid, b.label, 9, anchor="end")
        if b.length is not None:
            c.rect(sx(b.start), y + row_height * 0.15, sx(b.start + b.length) - sx(b.start), row_height * 0.7, b.color)
        if b.note is not None:
            end = b.start + (b.length or 0.0)
            back = (b.length or 0.0) < 0
            c.text(sx(end - pad if back else end + pad), mid, b.note, 8, anchor="end" if back else "start", color=b.note_color)
    if zero_line:
        c.line(sx(0.0), top, sx(0.0), height, "#444", 0.8)
    x_axis(c, sx, nice_ticks(lo, hi), height, lambda v: f"{v:g}", xlabel)
    return c.svg()


@dataclass(frozen=True)
class Panel:
    """One panel of ``stacked_lines``: its series (NaN: no sample), y label and colour."""

    ys: Sequence[float]
    label: str
    color: str


@dataclass(frozen=True)
class Span:
    """A shaded stretch of the shared x axis, named above the first panel where ``name`` is set."""

    t0: float
    t1: float
    color: str
    name: str | None = None


def stacked_lines(xs: Sequence[float], panels: Sequence[Panel], *, xlabel: str, title: str = "",
                  spans: Sequence[Span] = (), width: float = 640.0, panel_height: float = 110.0) -> str:  # fmt: skip
    """Panels of lines over one shared x axis (time), each with its own y axis; spans shaded
    across every panel and named (rotated) above the first."""
    named = [s for s in spans if s.name]
    head = (max(text_width(s.name or "", 7) for s in named) * 0.5 + 16 if named else 0.0) + (20.0 if title else 6.0)
    left, right, gap = 64.0, 16.0, 14.0
    height = head + len(panels) * (panel_height + gap) + 30
    c = Canvas(width, height)
    if title:
        c.text(4, 11, title, 9)
    lo, hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if hi <= lo:
        hi = lo + 1.0
    sx = Scale(lo, hi, left, width - right)
    for i, p in enumerate(panels):
        top = head + i * (panel_height + gap)
        bottom = top + panel_height
        finite = [y for y in p.ys if math.isfinite(y)]
        ylo, yhi = (min(finite), max(finite)) if finite else (0.0, 1.0)
        margin = (yhi - ylo) * 0.08 or (abs(yhi) * 0.05 or 1.0)
        sy = Scale(ylo - margin, yhi + margin, bottom, top)
        for s in spans:
            c.rect(sx(max(s.t0, lo)), top, sx(min(s.t1, hi)) - sx(max(s.t0, lo)), panel_height, s.color, 0.12)
        y_axis(c, sy, nice_ticks(ylo - margin, yhi + margin, 4), left, lambda v: f"{v:g}", p.label, grid_to=width - right)
        c.polyline([(sx(x), sy(y) if math.isfinite(y) else math.nan) for x, y in zip(xs, p.ys, strict=True)], p.color, 1.0)
        if i == 0:
            for s in named:
                c.text(sx(max(s.t0, lo)), top - 3, s.name or "", 7, middle=False, rotate=-30)
    x_axis(c, sx, nice_ticks(lo, hi), head + len(panels) * (panel_height + gap) - gap, lambda v: f"{v:g}", xlabel)
    return c.svg()
