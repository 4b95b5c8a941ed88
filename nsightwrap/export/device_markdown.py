"""Markdown view of a device file: the same tables as the terminal, every cell escaped."""

from __future__ import annotations

from nsightwrap.device.result import GROUPS, DeviceFile
from nsightwrap.export import device_text as t
from nsightwrap.export.escape import md_cell


def _table(headers: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    align = ["---" if i < left or i == len(headers) - 1 else "---:" for i in range(len(headers))]
    out = ["| " + " | ".join(md_cell(h) for h in headers) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    return out


def render_device_markdown(dev: DeviceFile) -> str:
    """The device file as GitHub-flavoured Markdown."""
    out = ["# nsightwrap device", "", md_cell(t.heading(dev)), ""]
    if dev.warnings:
        out += [*(f"- **warning**: {md_cell(w)}" for w in dev.warnings), ""]
    for g in GROUPS:
        rows = t.rows(dev, g)
        if rows:
            out += [f"## {t.GROUP_TITLES[g]}", "", *_table(t.ROW_HEADERS, rows), ""]
    if dev.bandwidth_curve:
        out += ["## Copy bandwidth against transfer size (L2 flushed)", "", *_table(t.CURVE_HEADERS, t.curve_rows(dev)), ""]
    if dev.latency_curve:
        out += ["## Pointer-chase latency against working set", "", *_table(t.LATENCY_HEADERS, t.latency_rows(dev)), ""]
    roofs = t.roofs_of(dev)
    if roofs.peaks or roofs.memory_bytes_per_s:
        out += [f"## Roofs: memory {t.rate(roofs.memory_bytes_per_s, 'B/s')} ({md_cell(roofs.memory_name or '-')})", "",
                *_table(t.RIDGE_HEADERS, t.ridge_rows(roofs)), ""]  # fmt: skip
    return "\n".join(out)
