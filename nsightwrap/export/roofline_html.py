"""The roofline section of the HTML report: a log-log chart with the roofs and every benchmark
(and its kernels) placed on it, then the table. Names go through ``escape.html``."""

from __future__ import annotations

import math

from nsightwrap.analysis.model import RunResult
from nsightwrap.export import reportfmt as f
from nsightwrap.export import roofline_text as t
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


def roofline_chart(result: RunResult) -> str | None:
    """The chart: roofs as measured (each compute roof at its own clock), benchmarks as circles,
    their ncu kernels as small squares."""
    roofs = result.roofs
    if roofs is None or roofs.source == "none":
        return None
    points = []
    for b in result.benchmarks:
        r = b.roofline
        if r is None:
            continue
        if _ok(r.intensity) and _ok(r.flops_per_s):
            points.append(ChartPoint(f.label(b), float(r.intensity or 0), float(r.flops_per_s or 0), "o"))
        for k in r.kernels:
            if _ok(k.intensity) and _ok(k.flops_per_s) and len(r.kernels) > 1:
                points.append(ChartPoint(f"{f.label(b)}: {k.kernel_short}", float(k.intensity or 0), float(k.flops_per_s or 0), "s"))
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
