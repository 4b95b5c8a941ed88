"""Every JSON view, one per result kind: the report JSON (written, and read back with a version
check), the compare JSON, and a device file's document.

Report JSON (``"format": "nsightwrap-report"``): the schema is in docs/report-json.md;
``analysis.model.FORMAT_VERSION`` carries its history. Every number the other formats show is
here, raw timer samples and per-kernel rows included, and a ``summary`` of the verdicts. NaN is
written as null (JSON has no NaN). Compare JSON (``"format": "nsightwrap-compare"``):
docs/compare.md.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping
from dataclasses import asdict, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

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
    Gap,
    GapPart,
    GpuSpread,
    GpuVariance,
    KernelRoofline,
    KernelTiming,
    MeasuredClock,
    NcuStats,
    NsysStats,
    PowerStats,
    Roofline,
    RoofPeak,
    Roofs,
    RunResult,
    Settings,
    ShardSummary,
    SlowGpu,
    TimerStats,
    Verdict,
)
from nsightwrap.compare.energy import EnergyVerdict
from nsightwrap.compare.verdicts import BenchVerdict, Comparison, Interval, Spread
from nsightwrap.core.contract import REPORT_FORMAT, expand_runs, value_runs
from nsightwrap.core.errors import FormatVersionError, ReportParseError
from nsightwrap.device.result import DeviceFile
from nsightwrap.device.store import device_doc
from nsightwrap.export import reportfmt as f
from nsightwrap.export.registry import exporter

_ENUMS = (CauseCode, ClockModel, Verdict)
_SAME = frozenset({str, int, bool, type(None)})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _plain(v: Any) -> Any:
    """``v`` as JSON-ready data in one pass (what ``dataclasses.asdict`` then a clean-up of NaN
    and enums would give, at a third of the cost on a 1,000-benchmark run)."""
    kind = type(v)
    if kind is float:
        return v if math.isfinite(v) else None
    if kind in _SAME:  # most values: a look at the exact type before the isinstance checks below
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, _ENUMS):
        return v.value
    if isinstance(v, (str, int)) or v is None:
        return v
    names = _FIELDS.get(type(v))
    if names is None and is_dataclass(v) and not isinstance(v, type):
        names = _FIELDS.setdefault(type(v), tuple(fld.name for fld in fields(v)))
    if names is not None:
        return {n: _plain(getattr(v, n)) for n in names}
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        # Sample and iteration lists hold thousands of floats: one C-level check of their types
        # and of their sum (finite only where every element is) in place of a call per element.
        kinds = set(map(type, v))
        if kinds <= {float, int} and (float not in kinds or math.isfinite(math.fsum(v))):
            return list(v)
        return [_plain(x) for x in v]
    return v


def report_to_dict(result: RunResult, *, detail: bool = True) -> dict[str, Any]:
    """The report as a JSON-ready dict (``format``, ``version`` first, ``summary`` last).
    ``detail``: every per-iteration and per-kernel row (the whole result, as the stored analysis
    keeps it); else per-benchmark summaries and the samples ``compare`` reads (``summary_only``)."""
    if detail:
        body = _plain(result)
    else:
        # The rows the summary leaves out are not made JSON data first: nsys's per-iteration
        # lists (8 per benchmark, a thousand numbers each at a real do_bench volume) are counted.
        body = _plain(replace(result, clock_trace=(), benchmarks=tuple(
            replace(b, nsys=replace(b.nsys, **_NO_ROWS)) if b.nsys is not None else b
            for b in result.benchmarks)))  # fmt: skip
        for b, was in zip(body["benchmarks"], result.benchmarks, strict=True):
            if was.nsys is not None:
                b["nsys"]["iterations"] = len(was.nsys.iterations_ns)
    doc = {"format": REPORT_FORMAT, "version": FORMAT_VERSION, "nsightwrap_version": __version__,
           "detail": detail, **body}  # fmt: skip
    if not detail:
        doc = summary_only(doc)
    return {**doc, "summary": summary_dict(result)}


#: Per-iteration lists of the ``nsys`` block the summary leaves out (``nsys.iterations`` counts them).
NSYS_ROWS = ("iterations_ns", "busy_ns", "span_ns", "op_sum_ns", "non_kernel_ns", "kernels_per_iteration",
             "memcpy_per_iteration", "memset_per_iteration")  # fmt: skip
_NO_ROWS: dict[str, Any] = dict.fromkeys(NSYS_ROWS, ())


def summary_only(doc: dict[str, Any]) -> dict[str, Any]:
    """The report document without its per-iteration and per-kernel rows (the default report
    JSON, docs/report-json.md): ``clock_trace``, ``ncu.kernels`` (its clock elasticity kept as
    ``ncu.elasticity``), nsys's per-iteration lists (their count kept as ``nsys.iterations``),
    ``roofline.kernels`` and the clock part's per-kernel ``evidence.kernels``. Kept: every
    summary figure, and the samples ``compare`` reads (timer samples and their clocks, ncu's
    per-iteration sums, energy samples), the timer's samples rounded to 0.1 ns (``SAMPLE_NS_DIGITS``)
    as a histogram (``sample_runs``) with their clocks in its order (``sample_clock_runs``)."""
    from nsightwrap.compare.sides import elasticity_of

    out = {k: v for k, v in doc.items() if k != "clock_trace"}
    benches = []
    for b in doc.get("benchmarks") or ():
        b = dict(b)
        if isinstance(b.get("timer"), dict):
            b["timer"] = _packed_timer(b["timer"])
        if isinstance(b.get("ncu"), dict):
            e, src = elasticity_of(b)
            b["ncu"] = {**{k: v for k, v in b["ncu"].items() if k != "kernels"}, "elasticity": e,
                        "elasticity_source": src}  # fmt: skip
        if isinstance(b.get("nsys"), dict):
            nsys = b["nsys"]
            b["nsys"] = {**{k: v for k, v in nsys.items() if k not in NSYS_ROWS and k != "iterations"},
                         "iterations": nsys["iterations"] if "iterations" in nsys else len(nsys.get("iterations_ns") or ())}  # fmt: skip
        if isinstance(b.get("roofline"), dict):
            b["roofline"] = {k: v for k, v in b["roofline"].items() if k != "kernels"}
        gap = b.get("gap")
        if isinstance(gap, dict) and any(isinstance(p.get("evidence"), dict) and "kernels" in p["evidence"]
                                         for p in gap.get("parts") or ()):  # fmt: skip
            parts = [{**p, "evidence": {k: v for k, v in p["evidence"].items() if k != "kernels"}}
                     if isinstance(p.get("evidence"), dict) else p for p in gap["parts"]]  # fmt: skip
            b["gap"] = {**gap, "parts": parts}
        benches.append(b)
    out["benchmarks"] = benches
    return out


#: Decimals of a timer sample (ns) in the default report JSON: 0.1 ns, far below what a timer
#: resolves (CUDA events: about 0.5 us) and a relative 1e-4 of a 1 us sample; ``--detail`` and
#: the stored analysis keep every sample as measured.
SAMPLE_NS_DIGITS = 1


def _packed_timer(t: dict[str, Any]) -> dict[str, Any]:
    """A timer block with its samples as a histogram: ``sample_runs``, ``[value, count]`` pairs of
    the samples rounded to ``SAMPLE_NS_DIGITS`` in ascending order (``samples_ns`` null), and the
    per-sample clocks as ``[clock, count]`` runs in that same order. A timer's samples take a few
    hundred distinct values at most (the CUDA events of fixtures/runs/h200-sweep step by 32 ns:
    92 values in 3,262 samples), so the block no longer grows with the sample count; a list
    holding a null (NaN) keeps the version 4 form (rounded, in order)."""
    t = dict(t)
    samples = t.get("samples_ns")
    clocks = t.get("sample_clock_hz")
    # A tuple: the stored analysis's document (its lists of rows read back as tuples).
    if not isinstance(samples, (list, tuple)):
        return t
    if None in samples:
        t["samples_ns"] = [v if v is None else round(v, SAMPLE_NS_DIGITS) for v in samples]
        if isinstance(clocks, (list, tuple)) and clocks:
            t["sample_clock_hz"] = None
            t["sample_clock_runs"] = value_runs(clocks)
        return t
    t["samples_ns"] = None
    values = np.asarray(samples, dtype=np.float64)
    # A timer's samples repeat a few hundred distinct values: Python's round (correctly rounded,
    # which numpy's is not) runs once per distinct value.
    uniq, inverse = np.unique(values, return_inverse=True)
    rounded = np.array([round(v, SAMPLE_NS_DIGITS) for v in uniq.tolist()], dtype=np.float64)[inverse.reshape(-1)]
    if isinstance(clocks, (list, tuple)) and len(clocks) == len(samples):
        # Each sample keeps its own clock: sorted as (value, clock) pairs, a missing clock last.
        hz = np.array(clocks if None not in clocks else [math.nan if c is None else c for c in clocks], dtype=np.float64)
        order = np.lexsort((np.nan_to_num(hz), np.isnan(hz), rounded))
        t["sample_runs"] = _runs(rounded[order])
        t["sample_clock_hz"] = None
        t["sample_clock_runs"] = _runs(hz[order])
    else:
        t["sample_runs"] = _runs(np.sort(rounded))
    return t


def _runs(v: np.ndarray) -> list[list[Any]]:
    """``value_runs`` of a float array (NaN read as a missing value, null), in one numpy pass."""
    if not len(v):
        return []
    nan = np.isnan(v)
    # A run ends where the value changes; two NaNs are one missing value.
    change = (v[1:] != v[:-1]) & ~(nan[1:] & nan[:-1])
    starts = np.concatenate(([0], np.flatnonzero(change) + 1))
    counts = np.diff(np.append(starts, len(v))).tolist()
    values = v[starts].tolist()
    if nan.any():
        values = [None if math.isnan(x) else x for x in values]
    return list(map(list, zip(values, counts, strict=True)))


def timer_samples(t: Mapping[str, Any]) -> Any:
    """A timer block's samples: ``samples_ns``, else its ``sample_runs`` expanded (version 5's
    default report JSON: ascending order); None where neither is a list (of pairs)."""
    if t.get("samples_ns") is None and t.get("sample_runs") is not None:
        return expand_runs(t["sample_runs"])
    return t.get("samples_ns")


def summary_dict(result: RunResult) -> dict[str, Any]:
    """The report's ``summary``: benchmarks per verdict (keys as the ``verdict`` field spells them,
    worst first) and the count line the other formats print. Derived: the reader ignores it."""
    counts = f.verdict_counts(result.benchmarks)
    return {
        "benchmarks": len(result.benchmarks),
        "counts": {v.value: counts[v] for v in f.VERDICT_ORDER if v in counts},
        "text": f.count_text(result.benchmarks),
    }


@exporter("report", "json")
def write_report_json(result: RunResult, path: Path | None = None, *, detail: bool = False,
                      doc: Mapping[str, Any] | None = None) -> str:  # fmt: skip
    """Serialize ``result`` (per-benchmark summaries; ``detail``: every row too); write it to
    ``path`` when given. Returns the text. ``doc``: ``report_to_dict(result)`` where the caller
    has it already (the stored analysis's document, ``analysis.store.Analysis.doc``): written
    from it, the same text without making the result JSON data again."""
    # Compact: json's C encoder runs only without indent (an indented 1,000-benchmark report took
    # seconds in the pure-Python one); `jq .` or `python -m json.tool` indents it for reading.
    if doc is not None and doc.get("detail") is True:
        # The default report JSON is the document less its rows (``summary_only``), as
        # ``report_to_dict`` makes it from the result; its ``summary`` is already the last key.
        text = dumps_report(doc if detail else summary_only({**doc, "detail": False})) + "\n"
    else:
        text = dumps_report(report_to_dict(result, detail=detail)) + "\n"
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


#: A benchmark's list of at least this many floats is written by ``_float_list_text``.
_LIST_MIN = 64


def dumps_report(doc: Mapping[str, Any]) -> str:
    """``json.dumps(doc)``, compact, byte for byte, in less time where the per-benchmark lists of
    floats (timer samples and clocks, per-iteration rows) repeat their values: json writes every
    float with ``float.__repr__``, and a thousand samples of a timer hold a few hundred distinct
    values, so each distinct value's text is made once. A list of mostly distinct values is left
    to json."""
    benches = doc.get("benchmarks")
    if not isinstance(benches, list):
        return json.dumps(doc, separators=(",", ":"), allow_nan=False)
    mark = f"\x00{uuid.uuid4().hex}:"  # never in a report's own strings (json writes NUL as \u0000)
    texts: list[str] = []
    out = []
    for b in benches:
        if not isinstance(b, dict):
            out.append(b)
            continue
        b = dict(b)
        for block in ("timer", "ncu", "nsys"):
            sub = b.get(block)
            if not isinstance(sub, dict):
                continue
            sub = dict(sub)
            for k, v in sub.items():
                # A list of rows (a tuple, read back from the stored analysis) is written as json
                # writes a list.
                text = _float_list_text(v) if isinstance(v, (list, tuple)) and len(v) >= _LIST_MIN else None
                if text is not None:
                    sub[k] = f"{mark}{len(texts)}"
                    texts.append(text)
            b[block] = sub
        out.append(b)
    if not texts:
        return json.dumps(doc, separators=(",", ":"), allow_nan=False)
    small = json.dumps({**doc, "benchmarks": out}, separators=(",", ":"), allow_nan=False)
    quoted = json.dumps(mark)[:-1]  # the mark as json writes it, less its closing quote
    pieces = small.split(quoted)
    parts = [pieces[0]]
    for piece in pieces[1:]:
        i, rest = piece.split('"', 1)
        parts.append(texts[int(i)])
        parts.append(rest)
    return "".join(parts)


def _float_list_text(v: list[Any] | tuple[Any, ...]) -> str | None:
    """``json.dumps(v)`` of a list of finite floats of few distinct values (None: any other list)."""
    if set(map(type, v)) != {float}:
        return None
    a = np.asarray(v, dtype=np.float64)
    distinct, inverse = np.unique(a, return_inverse=True)
    if 2 * len(distinct) > len(a) or not np.isfinite(distinct).all():
        return None
    if distinct[0] <= 0.0 <= distinct[-1]:
        negative = np.signbit(a[a == 0.0])
        if negative.any() and not negative.all():
            return None  # 0.0 and -0.0 both: one distinct value, two texts
        if negative.any():
            distinct[distinct == 0.0] = -0.0
    text = np.array([float.__repr__(x) for x in distinct.tolist()], dtype=object)
    return "[" + ",".join(text[inverse.reshape(-1)].tolist()) + "]"


def load_report_json(path: Path) -> RunResult:
    """Read a report JSON back; unknown versions raise FormatVersionError, bad files ReportParseError."""
    from nsightwrap.core.jsonfile import check_schema, read_json_object

    doc = read_json_object(path, "report JSON")
    if doc.get("format") == REPORT_FORMAT and doc.get("version") in READABLE_VERSIONS:
        # Field types as this version writes them (an older readable version only lacks fields).
        check_schema({**doc, "version": FORMAT_VERSION}, "report", f"report JSON {path}")
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
        # One C-level look at the element types: a list of numbers (thousands of samples) is
        # made a tuple at once, only nested lists are walked.
        return tuple(_tuples(x) for x in v) if list in set(map(type, v)) else tuple(v)
    return v


def _build(cls: Any, d: Mapping[str, Any], **given: Any) -> Any:
    """``cls`` from the fields of ``d`` it has (lists made tuples, objects dicts), and ``given``."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS.setdefault(cls, tuple(fld.name for fld in fields(cls)))
    kw = {}
    for name in names:
        if name in d and name not in given:
            v = d[name]
            kw[name] = dict(v) if isinstance(v, Mapping) else _tuples(v)
    return cls(**kw, **given)


def _nan(v: Any) -> float:
    return math.nan if v is None else float(v)


def _bench(d: Mapping[str, Any]) -> BenchmarkResult:
    timer = None
    if d.get("timer") is not None:
        t = dict(d["timer"])
        if t.get("samples_ns") is None and t.get("sample_runs") is not None:
            t["samples_ns"] = timer_samples(t)
            if t["samples_ns"] is None:
                raise ValueError("field 'timer/sample_runs' must be a list of [value, count] pairs")
        if t.get("sample_clock_hz") is None and t.get("sample_clock_runs") is not None:
            t["sample_clock_hz"] = expand_runs(t["sample_clock_runs"])
            if t["sample_clock_hz"] is None:
                raise ValueError("field 'timer/sample_clock_runs' must be a list of [clock, count] pairs")
        clocks = t.get("sample_clock_hz")
        if clocks is not None and not isinstance(clocks, tuple):
            # NaN is written as null; a list without one is made floats at C speed. (A tuple is
            # the stored analysis's, floats as written.)
            t["sample_clock_hz"] = [_nan(v) for v in clocks] if None in clocks else list(map(float, clocks))
        timer = _build(TimerStats, t)
    ncu = None
    if d.get("ncu") is not None:
        n = dict(d["ncu"])
        n["kernels"] = [_kernel(k) for k in n.get("kernels") or ()]
        ncu = _build(NcuStats, n)
    nsys = None
    if d.get("nsys") is not None:
        # A summary (version 3 without --detail) has no per-iteration lists: empty rows.
        nsys = _build(NsysStats, {**{k: [] for k in NSYS_ROWS}, **d["nsys"]})
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
        ratio_clock_hz=None if d.get("ratio_clock_hz") is None else float(d["ratio_clock_hz"]),
        ncu_at_ratio_ns=None if d.get("ncu_at_ratio_ns") is None else float(d["ncu_at_ratio_ns"]),
        noisy=bool(d.get("noisy", False)),
        clock_unresolved_ratio=d.get("clock_unresolved_ratio"),
        causes=causes,
        notes=tuple(d.get("notes") or ()),
        roofline=roofline_from_dict(d.get("roofline")),
        power=power_from_dict(d.get("power")),
        gap=gap_from_dict(d.get("gap")),
        source=dict(d["source"]) if isinstance(d.get("source"), Mapping) else {"kind": "nsightwrap_bench"},
        user_value_ns=None if d.get("user_value_ns") is None else float(d["user_value_ns"]),
    )


def _kernel(d: Mapping[str, Any]) -> KernelTiming:
    return _build(KernelTiming, d, clock_model=ClockModel(d["clock_model"]))


# ------------------------------------------------------------------ report sections read back


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


def power_from_dict(d: Any) -> PowerStats | None:
    """``PowerStats`` from its JSON object (unknown keys ignored, lists made tuples), or None."""
    if not isinstance(d, Mapping):
        return None
    kw: dict[str, Any] = {}
    for fld in fields(PowerStats):
        if fld.name in d:
            v = d[fld.name]
            kw[fld.name] = tuple(v) if isinstance(v, list) else (dict(v) if isinstance(v, Mapping) else v)
    for need in ("energy_j", "energy_per_call_j", "mean_w", "peak_w", "peak_temp_c"):
        kw.setdefault(need, None)
    return PowerStats(**kw)


def shards_from_dict(doc: Mapping[str, Any]) -> tuple[ShardSummary, ...]:
    """The report JSON's ``shards`` list back as ShardSummary (empty when absent)."""
    return tuple(ShardSummary(**_known(ShardSummary, s)) for s in doc.get("shards") or ())


def variance_from_dict(doc: Mapping[str, Any]) -> GpuVariance | None:
    """The report JSON's ``gpu_variance`` back as GpuVariance (None when absent)."""
    v = doc.get("gpu_variance")
    if not isinstance(v, Mapping):
        return None
    kw = _known(GpuVariance, v)
    kw["gpus"] = tuple(kw.get("gpus") or ())
    kw["spreads"] = tuple(GpuSpread(**_known(GpuSpread, s)) for s in v.get("spreads") or ())
    kw["slow"] = tuple(SlowGpu(**_known(SlowGpu, s)) for s in v.get("slow") or ())
    return GpuVariance(**kw)


# The roofline blocks (``benchmarks[].roofline``, top-level ``roofs``) take their fields as written.
def _roofline_kw(cls: Any, d: Mapping[str, Any]) -> dict[str, Any]:
    names = {x.name for x in fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def roofline_from_dict(d: Any) -> Roofline | None:
    """A benchmark's ``roofline`` block, or None."""
    if not isinstance(d, Mapping):
        return None
    kw = _roofline_kw(Roofline, d)
    kw["extra"] = dict(kw.get("extra") or {})
    kw["kernels"] = tuple(
        KernelRoofline(**{**_roofline_kw(KernelRoofline, k), "flops_by_kind": dict(k.get("flops_by_kind") or {})})
        for k in d.get("kernels") or ()
        if isinstance(k, Mapping)
    )
    return Roofline(**kw)


def roofs_from_dict(d: Any) -> Roofs | None:
    """The report's ``roofs``, or None."""
    if not isinstance(d, Mapping):
        return None
    kw = _roofline_kw(Roofs, d)
    kw["peaks"] = tuple(RoofPeak(**_roofline_kw(RoofPeak, p)) for p in d.get("peaks") or () if isinstance(p, Mapping))
    return Roofs(**kw)


def _known(cls: Any, d: Mapping[str, Any]) -> dict[str, Any]:
    names = {x.name for x in fields(cls)}
    return {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in d.items() if k in names}


# ------------------------------------------------------------------ compare

COMPARE_FORMAT = "nsightwrap-compare"


#: Version of the compare JSON. History (newest last):
#:   1 (0.1.0): first version.
#:   2: ``energy[].verdict`` in energy's words (MORE / LESS, where 1 wrote SLOWER / FASTER);
#:      ``benchmarks[]`` adds ``carried_ratio``, ``elasticity``, ``elasticity_source``,
#:      ``clock_cause`` and ``clock_evidence``; reason ``power_capped``.
COMPARE_VERSION = 2


def _interval(iv: Interval | None) -> dict[str, float] | None:
    return None if iv is None else {"estimate": iv.estimate, "low": iv.low, "high": iv.high}


def _spread(s: Spread) -> dict[str, Any]:
    return {"median_ns": s.median, "min_ns": s.minimum, "q3_ns": s.q3, "n": s.n}


def _energy_spread(s: Spread) -> dict[str, Any]:
    return {"median_j": s.median, "min_j": s.minimum, "q3_j": s.q3, "n": s.n}


def _verdict(v: BenchVerdict, reconcile: tuple[str | None, str | None] | None) -> dict[str, Any]:
    extra = {} if reconcile is None else {"baseline_reconcile": reconcile[0], "current_reconcile": reconcile[1]}
    return {
        "benchmark": v.key,
        "verdict": v.verdict.value,
        "reason": v.reason.value,
        "message": v.message,
        "baseline": _spread(v.baseline),
        "current": _spread(v.current),
        "ratio": _interval(v.ratio),
        "p_value": v.p_value,
        "cycles_ratio": _interval(v.cycles_ratio),
        "baseline_clock_hz": v.baseline_clock_hz,
        "current_clock_hz": v.current_clock_hz,
        "carried_ratio": _interval(v.carried_ratio),
        "elasticity": v.elasticity,
        "elasticity_source": v.elasticity_source,
        "clock_cause": v.clock_cause.cause.value if v.clock_cause else None,
        "clock_evidence": v.clock_cause.evidence if v.clock_cause else None,
        **extra,
    }


def energy_json(c: Comparison) -> list[dict[str, Any]]:
    """The compare JSON's ``energy`` list (docs/compare.md)."""
    out = []
    for v in c.energy:
        assert isinstance(v, EnergyVerdict)
        out.append({"benchmark": v.key, "verdict": v.verdict.value, "reason": v.reason.value, "message": v.message,
                    "baseline": _energy_spread(v.baseline), "current": _energy_spread(v.current), "ratio": _interval(v.ratio),
                    "p_value": v.p_value})  # fmt: skip
    return out


def compare_dict(c: Comparison) -> dict[str, Any]:
    """The comparison as a JSON-ready dict (``"format": "nsightwrap-compare"``)."""
    return {
        "format": COMPARE_FORMAT,
        "version": COMPARE_VERSION,
        "baseline": {"path": c.baseline, "gpu": c.baseline_gpu},
        "current": {"path": c.current, "gpu": c.current_gpu},
        "metric": c.metric,
        "settings": asdict(c.settings),
        "summary": {
            "counts": {k.value: n for k, n in c.counts().items()},
            "geomean_ratio": c.geomean_ratio,
            "geomean_cycles_ratio": c.geomean_cycles_ratio,
            "slower": [v.key for v in c.slower],
        },
        "benchmarks": [_verdict(v, c.reconcile.get(v.key)) for v in c.verdicts],
        "added": list(c.added),
        "removed": list(c.removed),
        "energy": energy_json(c),
    }


@exporter("compare", "json")
def compare_json(c: Comparison) -> str:
    """The comparison as indented JSON text."""
    return json.dumps(compare_dict(c), indent=2) + "\n"


# ------------------------------------------------------------------ device file


@exporter("device", "json")
def render_device_json(dev: DeviceFile) -> str:
    """The device file as JSON text (the same document the cache holds)."""
    return json.dumps(device_doc(dev), indent=1, allow_nan=False) + "\n"
