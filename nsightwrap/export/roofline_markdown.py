"""The roofline section of the Markdown report: the roofs' source, a table per benchmark, and the
per-kernel placement folded in ``<details>``. Every name goes through ``escape``."""

from __future__ import annotations

from nsightwrap.analysis.model import RunResult
from nsightwrap.export import reportfmt as f
from nsightwrap.export import roofline_text as t
from nsightwrap.export.escape import html, md_cell


def _table(headers: list[str], rows: list[list[str]], left: tuple[int, ...]) -> list[str]:
    align = ["---" if i in left else "---:" for i in range(len(headers))]
    return ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |",
            *("| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows)]  # fmt: skip


def roofline_markdown(result: RunResult) -> list[str]:
    """Lines of the ``## Roofline`` section (none when the analysis made no roofline)."""
    if result.roofs is None:
        return []
    out = ["## Roofline", "", md_cell(t.roofs_line(result.roofs)), ""]
    rows = t.bench_rows(result)
    if rows:
        out += [*_table(t.HEADERS, rows, (0, len(t.HEADERS) - 1)), "", md_cell(t.EXPLAIN), ""]
        out += [f"- **{md_cell(who)}**: {md_cell(why)}" for who, why in t.reasons(result)]
        out.append("")
    for b in result.benchmarks:
        krows = t.kernel_rows(b)
        if krows:
            out += [f"<details><summary>{html(f.label(b))}: {len(krows)} kernel(s) on the roofline (ncu counters)</summary>",
                    "", *_table(t.KERNEL_HEADERS, krows, (1, 6, 7)), "", "</details>", ""]  # fmt: skip
    return out
