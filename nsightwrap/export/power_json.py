"""The report JSON's ``benchmarks[].power`` block read back into ``PowerStats`` (written by
``jsonio`` through ``dataclasses.asdict``; fields in docs/report-json.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from nsightwrap.analysis.model import PowerStats


def power_from_dict(d: Any) -> PowerStats | None:
    """``PowerStats`` from its JSON object (unknown keys ignored, lists made tuples), or None."""
    if not isinstance(d, Mapping):
        return None
    kw: dict[str, Any] = {}
    for f in fields(PowerStats):
        if f.name in d:
            v = d[f.name]
            kw[f.name] = tuple(v) if isinstance(v, list) else (dict(v) if isinstance(v, Mapping) else v)
    for need in ("energy_j", "energy_per_call_j", "mean_w", "peak_w", "peak_temp_c"):
        kw.setdefault(need, None)
    return PowerStats(**kw)
