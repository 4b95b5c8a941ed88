"""Reading a benchmark's ``gap`` back from the report JSON (written by ``dataclasses.asdict``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nsightwrap.analysis.model import Gap, GapPart


def gap_from_dict(d: Any) -> Gap | None:
    """``Gap`` from its JSON object (docs/report-json.md), None when absent."""
    if d is None:
        return None
    if not isinstance(d, Mapping):
        raise TypeError("field 'gap' must be an object")
    parts = []
    for p in d.get("parts") or ():
        if not isinstance(p, Mapping):
            raise TypeError("field 'gap.parts' must hold objects")
        parts.append(
            GapPart(
                cause=str(p["cause"]),
                ns=float(p["ns"]),
                evidence=dict(p.get("evidence") or {}),
                fix=str(p.get("fix") or ""),
                message=str(p.get("message") or ""),
                actionable=bool(p.get("actionable", False)),
            )
        )
    return Gap(
        total_ns=float(d["total_ns"]),
        parts=tuple(parts),
        residual_ns=float(d["residual_ns"]),
        timer_ns=None if d.get("timer_ns") is None else float(d["timer_ns"]),
        ncu_ns=None if d.get("ncu_ns") is None else float(d["ncu_ns"]),
        measurements=dict(d.get("measurements") or {}),
    )
