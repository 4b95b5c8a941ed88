"""The Markdown report's energy and power section."""

from __future__ import annotations

from nsightwrap.analysis.model import RunResult
from nsightwrap.export import power_fmt as pf
from nsightwrap.export.escape import md_cell


def power_markdown(result: RunResult) -> list[str]:
    """``## Energy and power`` with one row per benchmark that has NVML figures (else nothing)."""
    benches = pf.with_power(result)
    if not benches:
        return []
    head = "| " + " | ".join(pf.HEADERS) + " |"
    align = "| --- | " + " | ".join("---" if h == "throttled by" else "---:" for h in pf.HEADERS[1:]) + " |"
    rows = ["| " + " | ".join(md_cell(c) for c in pf.row(b)) + " |" for b in benches]
    notes = [f"- **{md_cell(who)}**: {md_cell(n)}" for who, n in pf.notes(result)]
    return ["## Energy and power", "", head, align, *rows, "", md_cell(pf.METHOD_NOTE), "", *notes, *([""] if notes else [])]
