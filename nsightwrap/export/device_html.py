"""Self-contained HTML view of a device file: tables, the two curves and the roofline (inline SVG)."""

from __future__ import annotations

from nsightwrap.device.result import GROUPS, DeviceFile
from nsightwrap.export import device_text as t
from nsightwrap.export.escape import html as esc
from nsightwrap.export.roofline_chart import ChartRoof, curve_svg, roofline_svg

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:0.5em 0 1.5em 0;font-size:14px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right;vertical-align:top}
thead th{background:#f3f3f3} th.l,td.l{text-align:left} .warn{color:#a60}
.charts{display:flex;flex-wrap:wrap;gap:12px} .chart{display:inline-block;border:1px solid #ddd;padding:4px}
"""


def _table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    def cls(i: int) -> str:
        return ' class="l"' if i < left or i == len(headers) - 1 else ""

    head = "".join(f"<th{cls(i)}>{esc(h)}</th>" for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f"<td{cls(i)}>{esc(c)}</td>" for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_device_html(dev: DeviceFile) -> str:
    """The device file as one HTML document."""
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>nsightwrap device: {esc(dev.gpu.name)}</title><style>{_CSS}</style></head><body>",
        "<h1>nsightwrap device</h1>",
        f"<p>{esc(t.heading(dev))}</p>",
        *(f"<p class='warn'>warning: {esc(w)}</p>" for w in dev.warnings),
    ]
    for g in GROUPS:
        rows = t.rows(dev, g)
        if rows:
            parts += [f"<h2>{esc(t.GROUP_TITLES[g])}</h2>", _table(t.ROW_HEADERS, rows)]
    charts = []
    if dev.bandwidth_curve:
        parts += ["<h2>Copy bandwidth against transfer size</h2>", _table(t.CURVE_HEADERS, t.curve_rows(dev))]
        charts.append(curve_svg([p.bytes for p in dev.bandwidth_curve],
                                [p.bytes_per_s / 1e9 if p.bytes_per_s else 0.0 for p in dev.bandwidth_curve],
                                xlabel="bytes copied", ylabel="GB/s (read + write)",
                                title="copy bandwidth, L2 flushed before each sample"))  # fmt: skip
    if dev.latency_curve:
        parts += ["<h2>Pointer-chase latency against working set</h2>", _table(t.LATENCY_HEADERS, t.latency_rows(dev))]
        charts.append(curve_svg([p.working_set_bytes for p in dev.latency_curve],
                                [p.ns or 0.0 for p in dev.latency_curve], xlabel="working set",
                                ylabel="ns per dependent load", title="pointer-chase latency (one thread, random cycle)"))  # fmt: skip
    roofs = t.roofs_of(dev)
    if roofs.peaks or roofs.memory_bytes_per_s:
        parts += [f"<h2>Roofs: memory {esc(t.rate(roofs.memory_bytes_per_s, 'B/s'))} ({esc(roofs.memory_name or '-')})</h2>",
                  _table(t.RIDGE_HEADERS, t.ridge_rows(roofs))]  # fmt: skip
        charts.append(roofline_svg(roofs.memory_bytes_per_s, [ChartRoof(p.name, p.flops_per_s) for p in roofs.peaks], [],
                                   f"measured roofs of {dev.gpu.name} (each at the SM clock measured with it)",
                                   l2_bytes_per_s=roofs.l2_bytes_per_s))  # fmt: skip
    drawn = [c for c in charts if c]
    if drawn:
        parts += ["<h2>Charts</h2><div class='charts'>", *(f"<div class='chart'>{c}</div>" for c in drawn), "</div>"]
    parts.append("</body></html>")
    return "\n".join(parts)
