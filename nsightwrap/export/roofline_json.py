"""Reading the roofline blocks of a report JSON back (writing is ``dataclasses.asdict``):
``benchmarks[].roofline`` and the top-level ``roofs`` (docs/report-json.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from nsightwrap.analysis.model import KernelRoofline, Roofline, RoofPeak, Roofs


def _kw(cls: Any, d: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def roofline_from_dict(d: Any) -> Roofline | None:
    """A benchmark's ``roofline`` block, or None."""
    if not isinstance(d, Mapping):
        return None
    kw = _kw(Roofline, d)
    kw["extra"] = dict(kw.get("extra") or {})
    kw["kernels"] = tuple(
        KernelRoofline(**{**_kw(KernelRoofline, k), "flops_by_kind": dict(k.get("flops_by_kind") or {})})
        for k in d.get("kernels") or ()
        if isinstance(k, Mapping)
    )
    return Roofline(**kw)


def roofs_from_dict(d: Any) -> Roofs | None:
    """The report's ``roofs``, or None."""
    if not isinstance(d, Mapping):
        return None
    kw = _kw(Roofs, d)
    kw["peaks"] = tuple(RoofPeak(**_kw(RoofPeak, p)) for p in d.get("peaks") or () if isinstance(p, Mapping))
    return Roofs(**kw)
