"""The report's charts written as SVG text (export/svgplot.py): well-formed XML, names escaped,
round ticks, a missing sample as a gap in the line, bars where their values put them."""

from __future__ import annotations

import math

from lxml import etree

from nsightwrap.export.charts import ChartPoint, ChartRoof, roofline_svg
from nsightwrap.export.svgplot import Bar, Panel, Span, hbars, log_ticks, nice_ticks, stacked_lines

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "gemm<T, U>|a&b \"q\" 'x'"


def _parse(svg: str) -> etree._Element:
    root = etree.fromstring(svg.encode())
    assert root.tag == f"{SVG}svg" and float(root.get("width")) > 200 and float(root.get("height")) > 100
    return root


def test_nice_ticks_are_round_and_inside() -> None:
    assert nice_ticks(0, 4.35) == [0, 1, 2, 3, 4]
    assert nice_ticks(0, 435) == [0, 100, 200, 300, 400]
    assert nice_ticks(-0.7, 1.3) == [-0.5, 0, 0.5, 1.0]
    assert nice_ticks(1.0, 1.0) == [1.0]
    assert log_ticks(0.01, 1e4) == [0.01, 0.1, 1, 10, 100, 1000, 10000]
    assert log_ticks(1.5, 60) == [2, 5, 10, 20, 50]  # within three decades: 1, 2, 5 per decade
    assert log_ticks(1e6, 1e18)[:3] == [1e6, 1e8, 1e10]  # beyond ten decades: every other one


def test_bars_escape_names_and_sit_where_their_values_put_them() -> None:
    svg = hbars([Bar("timer", 0.0, 3.0, "#4c72b0", "3.00 us"), Bar("ncu raw", 0.0, None, "#dd8452", "no data", "#999")],
                title=f"{HOSTILE}: flagged", title_color="#b00", xlabel="us", lo=0.0, hi=6.0)  # fmt: skip
    root = _parse(svg)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert f"{HOSTILE}: flagged" in texts and "no data" in texts and "3.00 us" in texts
    assert "<T, U>" not in svg  # escaped in the markup, whole in the text
    (bar,) = root.iter(f"{SVG}rect")  # the missing value has no bar
    axis = [t for t in root.iter(f"{SVG}text") if t.text in ("0", "6")]
    x0, x6 = (float(t.get("x")) for t in axis)
    assert float(bar.get("x")) == x0 and math.isclose(float(bar.get("width")), (x6 - x0) / 2, abs_tol=0.2)


def test_a_missing_sample_breaks_the_line_and_spans_are_named() -> None:
    svg = stacked_lines([0.0, 1.0, 2.0, 3.0, 4.0], [Panel([1.0, 2.0, math.nan, 2.0, 1.0], "power (W)", "#c44e52")],
                        xlabel="s", spans=[Span(0.5, 1.5, "#4c72b0", HOSTILE)])  # fmt: skip
    root = _parse(svg)
    lines = list(root.iter(f"{SVG}polyline"))
    assert [len(p.get("points").split()) for p in lines] == [2, 2]
    assert HOSTILE in [t.text for t in root.iter(f"{SVG}text")]


def test_roofline_points_carry_their_titles() -> None:
    points = [ChartPoint(HOSTILE, 100.0, 5e14), ChartPoint("k", 2.0, 1e12, "s", "k\nhover")]
    svg = roofline_svg(4.8e12, [ChartRoof("bf16", 989e12)], points, "H200", l2_bytes_per_s=12e12)
    assert svg is not None
    root = _parse(svg)
    groups = [g for g in root.iter(f"{SVG}g") if g.get("class") == "nw-point"]
    assert [g.get("id") for g in groups] == ["nw-pt-0", "nw-pt-1"]
    assert [g.find(f"{SVG}title").text for g in groups] == [HOSTILE, "k\nhover"]
    assert groups[1].find(f"{SVG}rect") is not None  # a kernel is a square
    assert roofline_svg(None, [], points, "none") is None
