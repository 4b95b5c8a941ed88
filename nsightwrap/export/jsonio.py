"""Report JSON (``"format": "nsightwrap-report"``): write, and read back with a version check.

The schema is in docs/report-json.md; ``analysis.model.FORMAT_VERSION`` carries its history. Every
number the other formats show is here, raw timer samples and per-kernel rows included. NaN is
written as null (JSON has no NaN).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from nsightwrap import __version__
from nsightwrap.analysis.model import (
    FORMAT_VERSION,
    READABLE_VERSIONS,
    BenchmarkResult,
    Cause,
    CauseCode,
    ClockModel,
    ClockSample,
    Environment,
    KernelTiming,
    MeasuredClock,
    NcuStats,
    NsysStats,
    RunResult,
    Settings,
    TimerStats,
    Verdict,
)
from nsightwrap.core.contract import REPORT_FORMAT
from nsightwrap.core.errors import FormatVersionError, ReportParseError
from nsightwrap.export.gap_json import gap_from_dict
from nsightwrap.export.power_json import power_from_dict
from nsightwrap.export.roofline_json import roofline_from_dict, roofs_from_dict
from nsightwrap.export.shards import shards_from_dict, variance_from_dict


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (CauseCode, ClockModel, Verdict)):
        return v.value
    if isinstance(v, Mapping):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def report_to_dict(result: RunResult) -> dict[str, Any]:
    """The report as a JSON-ready dict (``format``, ``version`` first)."""
    body = asdict(result)
    return _clean({"format": REPORT_FORMAT, "version": FORMAT_VERSION, "nsightwrap_version": __version__, **body})


def write_report_json(result: RunResult, path: Path | None = None) -> str:
    """Serialize ``result``; write it to ``path`` when given. Returns the text."""
    text = json.dumps(report_to_dict(result), indent=1, allow_nan=False) + "\n"
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def load_report_json(path: Path) -> RunResult:
    """Read a report JSON back; unknown versions raise FormatVersionError, bad files ReportParseError."""
    from nsightwrap.core.jsonfile import read_json_object

    doc = read_json_object(path, "report JSON")
    return report_from_dict(doc, where=str(path))


def report_from_dict(doc: Any, *, where: str = "report") -> RunResult:
    """Inverse of ``report_to_dict``; errors name the field that is wrong."""
    if not isinstance(doc, Mapping) or doc.get("format") != REPORT_FORMAT:
        fmt = doc.get("format") if isinstance(doc, Mapping) else None
        raise ReportParseError(f"{where}: not an nsightwrap report (format {fmt!r})")
    if doc.get("version") not in READABLE_VERSIONS:
        raise FormatVersionError(
            f"{where}: report version {doc.get('version')!r} is not supported "
            f"(this nsightwrap reads {', '.join(map(str, READABLE_VERSIONS))})",
            hint="upgrade nsightwrap or regenerate the report with this version",
        )
    try:
        return RunResult(
            run_dir=str(doc["run_dir"]),
            environment=_build(Environment, doc["environment"]),
            settings=_build(Settings, doc["settings"]),
            benchmarks=tuple(_bench(b) for b in doc["benchmarks"]),
            timer_found=bool(doc["timer_found"]),
            clock_trace=tuple(_build(ClockSample, c) for c in doc.get("clock_trace") or ()),
            notes=tuple(doc.get("notes") or ()),
            reader_crashes=tuple(doc.get("reader_crashes") or ()),
            roofs=roofs_from_dict(doc.get("roofs")),
            shards=shards_from_dict(doc),
            gpu_variance=variance_from_dict(doc),
        )
    except KeyError as exc:
        raise ReportParseError(f"{where}: missing field {exc.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise ReportParseError(f"{where}: malformed report ({exc})") from None


def _tuples(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_tuples(x) for x in v)
    return v


def _build(cls: Any, d: Mapping[str, Any]) -> Any:
    kw = {}
    for f in fields(cls):
        if f.name in d:
            v = d[f.name]
            kw[f.name] = dict(v) if isinstance(v, Mapping) else _tuples(v)
    return cls(**kw)


def _nan(v: Any) -> float:
    return math.nan if v is None else float(v)


def _bench(d: Mapping[str, Any]) -> BenchmarkResult:
    timer = None
    if d.get("timer") is not None:
        t = dict(d["timer"])
        if t.get("sample_clock_hz") is not None:
            t["sample_clock_hz"] = [_nan(v) for v in t["sample_clock_hz"]]
        timer = _build(TimerStats, t)
    ncu = None
    if d.get("ncu") is not None:
        n = dict(d["ncu"])
        n["kernels"] = [_kernel(k) for k in n.get("kernels") or ()]
        ncu = _build(NcuStats, n)
    nsys = _build(NsysStats, d["nsys"]) if d.get("nsys") is not None else None
    causes = tuple(
        Cause(code=CauseCode(c["code"]), message=c["message"], evidence=dict(c["evidence"]), fix=c["fix"])
        for c in d.get("causes") or ()
    )
    base = {k: d[k] for k in ("name", "nvtx_path", "iter_prefix", "ref_clock_hz", "ref_clock_source", "ratio", "ratio_raw")}
    return BenchmarkResult(
        **base,
        params=dict(d.get("params") or {}),
        timer=timer,
        ncu=ncu,
        nsys=nsys,
        verdict=Verdict(d["verdict"]),
        gpu_uuid=d.get("gpu_uuid"),
        shard=d.get("shard"),
        clock=MeasuredClock(**d["clock"]) if isinstance(d.get("clock"), dict) else None,
        launches_per_window=int(d.get("launches_per_window") or 1),
        causes=causes,
        notes=tuple(d.get("notes") or ()),
        roofline=roofline_from_dict(d.get("roofline")),
        power=power_from_dict(d.get("power")),
        gap=gap_from_dict(d.get("gap")),
        source=dict(d["source"]) if isinstance(d.get("source"), Mapping) else {"kind": "nsightwrap_bench"},
        user_value_ns=None if d.get("user_value_ns") is None else float(d["user_value_ns"]),
    )


def _kernel(d: Mapping[str, Any]) -> KernelTiming:
    k = _build(KernelTiming, d)
    return KernelTiming(**{**asdict(k), "clock_model": ClockModel(d["clock_model"])})
