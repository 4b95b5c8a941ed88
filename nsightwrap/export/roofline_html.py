"""The roofline section of the HTML report: a log-log chart with the roofs and every benchmark
(and its kernels) placed on it, then the table. Names go through ``escape.html``."""

from __future__ import annotations

import math

from nsightwrap.analysis.model import KernelRoofline, Roofline, RunResult
from nsightwrap.export import reportfmt as f
from nsightwrap.export import roofline_text as t
from nsightwrap.export.device_text import clock, rate
from nsightwrap.export.escape import html as esc
from nsightwrap.export.roofline_chart import ChartPoint, ChartRoof, roofline_svg


def _ok(v: float | None) -> bool:
    return v is not None and math.isfinite(v) and v > 0


def _table(headers: list[str], rows: list[list[str]], left: tuple[int, ...]) -> str:
    def cell(tag: str, i: int, v: str) -> str:
        return f'<{tag} class="l">{esc(v)}</{tag}>' if i in left else f"<{tag}>{esc(v)}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def _hover(name: str, r: Roofline | KernelRoofline) -> str:
    """A point's hover text: its name, then where it sits."""
    hz = r.clock_hz if isinstance(r, Roofline) else r.sm_clock_hz
    if r.bound == "memory":
        where = f"{t.pct_cell(r)} of the memory roof at this intensity (HBM {rate(r.roof_bytes_per_s, 'B/s')})"
    else:
        where = f"{t.pct_cell(r)} of {t.roof_cell(r)}" + (f" @ {clock(hz)}" if hz else "")
    unit = "OP/s" if r.compute_roof == "int8" else "FLOP/s"
    return f"{name}\n{rate(r.flops_per_s, unit)}, {t.intensity(r.intensity)} FLOP/byte, {where}"


def roofline_chart(result: RunResult) -> str | None:
    """The chart: roofs as measured (each compute roof at its own clock), benchmarks as circles,
    their ncu kernels as small squares, each naming itself on hover. A point above its roof or
    with uncounted FLOPs is not drawn (``roofline_text.not_drawn`` says why)."""
    roofs = result.roofs
    if roofs is None or roofs.source == "none":
        return None
    points = []
    for b in result.benchmarks:
        r = b.roofline
        if r is None:
            continue
        if r.status == "placed" and _ok(r.intensity) and _ok(r.flops_per_s):
            points.append(ChartPoint(f.label(b), float(r.intensity or 0), float(r.flops_per_s or 0), "o", _hover(f.label(b), r)))
        for k in r.kernels:
            if k.status == "placed" and _ok(k.intensity) and _ok(k.flops_per_s) and len(r.kernels) > 1:
                name = f"{f.label(b)}: {k.kernel_short}"
                points.append(ChartPoint(name, float(k.intensity or 0), float(k.flops_per_s or 0), "s", _hover(name, k)))
    title = f"{roofs.gpu_name or 'GPU'}: {roofs.source} roofs ({roofs.where})"
    return roofline_svg(roofs.memory_bytes_per_s, [ChartRoof(p.name, p.flops_per_s) for p in roofs.peaks], points,
                        title, l2_bytes_per_s=roofs.l2_bytes_per_s)  # fmt: skip


def roofline_html(result: RunResult) -> list[str]:
    """HTML parts of the roofline section (none when the analysis made no roofline)."""
    if result.roofs is None:
        return []
    parts = ["<h2>Roofline</h2>", f"<p>{esc(t.roofs_line(result.roofs))}</p>"]
    chart = roofline_chart(result)
    if chart:
        parts.append(f"<div class='chart'>{chart}</div>")
        left = t.not_drawn(result)
        if left:
            parts += ["<p>Not drawn:</p><ul class='notes'>", *(f"<li><b>{esc(w)}</b>: {esc(y)}</li>" for w, y in left), "</ul>"]
    rows = t.bench_rows(result)
    if rows:
        parts += [_table(t.HEADERS, rows, (0, len(t.HEADERS) - 1)), f"<p>{esc(t.EXPLAIN)}</p>"]
        reasons = t.reasons(result)
        if reasons:
            parts += ["<ul class='notes'>", *(f"<li><b>{esc(w)}</b>: {esc(y)}</li>" for w, y in reasons), "</ul>"]
    for b in result.benchmarks:
        krows = t.kernel_rows(b)
        if krows:
            parts += [f"<details><summary>{esc(f.label(b))}: {len(krows)} kernel(s) on the roofline (ncu counters)</summary>",
                      _table(t.KERNEL_HEADERS, krows, (1, 6, 7)), "</details>"]  # fmt: skip
    return parts
