"""Read one side of ``nsightwrap compare``: a run directory, a report JSON or a timer sidecar.

Every input ends as a ``compare.verdicts.Side``: per benchmark the raw samples of the chosen metric and,
where a clock is known, the same samples in SM cycles (time x clock: cycles do not depend on
the clock, so two runs at different clocks compare fairly in cycles).

- ``--metric timer`` on a run directory reads ``plain/timer-*.json`` directly: that is the data
  the report's ``timer`` block is made of, and it needs no profiler pass.
- ``--metric ncu|nsys`` on a run directory needs the analysis, passed in as ``report_of``.
- A file is a report JSON (``"format": "nsightwrap-report"``) or one timer sidecar.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from nsightwrap.analysis.merged import run_sidecars
from nsightwrap.analysis.model import FORMAT_VERSION, READABLE_VERSIONS
from nsightwrap.compare.energy import energy_samples
from nsightwrap.compare.verdicts import METRICS, Samples, Side
from nsightwrap.core.contract import (
    PASS_PLAIN,
    REPORT_FORMAT,
    SIDECAR_FORMAT,
    SIDECAR_GLOB,
    TRUSTED_CLOCK_SOURCES,
    expand_runs,
)
from nsightwrap.core.errors import FormatVersionError, InputNotFound, ReportParseError, UsageError
from nsightwrap.core.jsonfile import check_schema, read_json_object
from nsightwrap.parsers.sidecar import check_sidecar, read_sidecar_doc

#: Versions of the report JSON this reader understands (sidecars: nsightwrap.parsers.sidecar).
REPORT_VERSIONS = READABLE_VERSIONS


#: Turns a run directory into its report document (the analysis, then the report's JSON form).
#: Given by the caller (the CLI composes ``analysis`` and ``export``), so that this reader
#: imports nothing from ``export``.
ReportOf = Callable[[Path], Mapping[str, Any]]


def load_side(path: Path, metric: str = "timer", report_of: ReportOf | None = None) -> Side:
    """Read a run directory, report JSON or timer sidecar as one side of a comparison.

    ``report_of`` analyses a run directory for ``--metric ncu|nsys`` (see ``ReportOf``)."""
    if metric not in METRICS:
        raise UsageError(f"unknown metric {metric!r}", hint=f"use one of {', '.join(METRICS)}")
    if not path.exists():
        raise InputNotFound(
            f"{path}: no such file or directory", hint="give a run directory or a report JSON"
        )
    side = _load(path, metric, report_of)
    if not side.benchmarks:
        raise UsageError(
            f"{path}: no benchmark has {metric} timings",
            hint="compare another metric (--metric timer|ncu|nsys) or run the pass that records it",
        )
    return side


def _load(path: Path, metric: str, report_of: ReportOf | None) -> Side:
    if path.is_dir():
        return _load_run_dir(path, metric, report_of)
    doc = read_json_object(path, "comparison input")
    fmt = doc.get("format")
    if fmt == REPORT_FORMAT:
        _check_version(path, doc, REPORT_VERSIONS, "report JSON")
        # Field types as this version writes them (an older readable version only lacks fields).
        check_schema({**doc, "version": FORMAT_VERSION}, "report", f"report JSON {path}")
        return side_from_report(doc, label=str(path), metric=metric, where=str(path))
    if fmt == SIDECAR_FORMAT:
        _need_timer(path, metric)
        return _side_from_sidecars([(path, check_sidecar(path, doc))], label=str(path))
    raise ReportParseError(
        f"{path}: not an nsightwrap report (format {fmt!r})",
        hint=f"give a run directory, a '{REPORT_FORMAT}' JSON (nsightwrap report --format json) or a timer sidecar",
    )


# ---------------------------------------------------------------- run directories


def _load_run_dir(path: Path, metric: str, report_of: ReportOf | None) -> Side:
    sidecars = run_sidecars(path)  # a merged run's are in shards/<i>/plain/
    if metric == "timer":
        if not sidecars:
            raise InputNotFound(
                f"{path}: no timer sidecar ({PASS_PLAIN}/{SIDECAR_GLOB})",
                hint="run the benchmark with the plain pass (nsightwrap profile --passes plain ...)",
            )
        return _side_from_sidecars([(p, read_sidecar_doc(p)) for p in sidecars], label=str(path))
    if report_of is None:
        raise UsageError(
            f"{path}: comparing by {metric} needs the analysis of the run directory",
            hint="compare report JSONs (nsightwrap report RUN_DIR --format json) or use --metric timer",
        )
    doc = report_of(path)
    return side_from_report(doc, label=str(path), metric=metric, where=str(path))


# ---------------------------------------------------------------- timer sidecars


def _side_from_sidecars(docs: Sequence[tuple[Path, Mapping[str, Any]]], label: str) -> Side:
    # A script may write several sidecars (one per process); a benchmark seen in more than one
    # keeps all its samples.
    merged: dict[str, Samples] = {}
    gpus: set[str] = set()
    for path, doc in docs:
        device = doc.get("device")
        if isinstance(device, Mapping) and device.get("name"):
            gpus.add(str(device["name"]))
        uuid = device.get("uuid") if isinstance(device, Mapping) else None
        for i, entry in enumerate(_benchmarks(doc, path)):
            s = _timer_samples(entry, where=f"{path}: benchmark {i}")
            if isinstance(uuid, str) and uuid:
                s = replace(s, gpu_uuid=uuid)
            if s.key in merged:
                s = _merge(merged[s.key], s)
            merged[s.key] = s
    return Side(label=label, gpu=", ".join(sorted(gpus)) or None, benchmarks=tuple(merged.values()))


def _merge(a: Samples, b: Samples) -> Samples:
    cycles = a.cycles + b.cycles if a.cycles is not None and b.cycles is not None else None
    energy = (a.energy_j or ()) + (b.energy_j or ()) or None
    reasons = None if a.throttle_reasons is None and b.throttle_reasons is None else tuple(
        sorted(set(a.throttle_reasons or ()) | set(b.throttle_reasons or ()))
    )
    return replace(
        a,
        values_ns=a.values_ns + b.values_ns,
        cycles=cycles,
        clock_hz=_clock_of(a.values_ns + b.values_ns, cycles),
        energy_j=energy,
        power_w=a.power_w if b.power_w is None else b.power_w if a.power_w is None else max(a.power_w, b.power_w),
        throttle_reasons=reasons,
        gpu_uuid=a.gpu_uuid if a.gpu_uuid == b.gpu_uuid else None,
    )


def _timer_samples(entry: Mapping[str, Any], where: str) -> Samples:
    """Samples of one sidecar benchmark (or a report's ``timer`` block with name/params)."""
    name, params = _name_params(entry, where)
    where = f"{where} ({name!r})"
    if entry.get("samples_ns") is None and entry.get("sample_runs") is not None:  # the default report JSON's histogram
        runs = expand_runs(entry["sample_runs"])
        if runs is None:
            raise ReportParseError(f"{where}: field 'sample_runs' must be a list of [value, count] pairs")
        entry = {**entry, "samples_ns": runs}
    values = _numbers(entry, "samples_ns", where)
    clocks = _sample_clocks(entry, len(values), where)
    cycles = tuple(v * f / 1e9 for v, f in zip(values, clocks, strict=True)) if clocks else None
    power_w, reasons = _power_facts(entry)
    return Samples(
        name, params, values, cycles, _clock_of(values, cycles), energy_samples(entry.get("power")),
        power_w=power_w, throttle_reasons=reasons,
    )  # fmt: skip


def _power_facts(entry: Mapping[str, Any]) -> tuple[float | None, tuple[str, ...] | None]:
    """Mean power (W) over the energy window and the throttle reasons seen, from a sidecar
    benchmark's ``power`` record or a report's ``power`` block; (None, None) without one."""
    power = entry.get("power")
    if not isinstance(power, Mapping):
        return None, None
    steady = power.get("steady")
    mean = _finite(steady.get("mean_w") if isinstance(steady, Mapping) else power.get("mean_w"))
    # The power record's reasons cover the whole energy window; the timer's own, its samples.
    names = {str(r) for src in (power, entry) if isinstance(src.get("throttle_reasons"), list)
             for r in src["throttle_reasons"]}  # fmt: skip
    return (mean if mean is not None and mean > 0 else None), tuple(sorted(names))


def _finite(v: Any) -> float | None:
    """``v`` as a float where it is a finite number (not a bool), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def elasticity_of(entry: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """A report benchmark's clock elasticity: its ncu kernels' e (clamped to [0, 1]) weighted by
    their durations, ``measured`` where every kernel's was, else ``heuristic``; (None, None)
    where the report has no ncu kernels. A summary report JSON (version 3 without ``--detail``)
    has no kernel rows: its ``ncu.elasticity`` holds this figure, written from them."""
    ncu = entry.get("ncu")
    kernels = ncu.get("kernels") if isinstance(ncu, Mapping) else None
    if not isinstance(kernels, list):
        if isinstance(ncu, Mapping) and "elasticity" in ncu:
            e, src = _finite(ncu.get("elasticity")), ncu.get("elasticity_source")
            return (e, str(src)) if e is not None and src is not None else (None, None)
        return None, None
    total = weighted = 0.0
    measured = True
    for k in kernels:
        if not isinstance(k, Mapping):
            continue
        e, d = _finite(k.get("elasticity")), _finite(k.get("duration_ns"))
        if e is None or d is None or d <= 0:
            continue
        total += d
        weighted += d * min(max(e, 0.0), 1.0)
        measured = measured and k.get("elasticity_source") == "measured"
    if total <= 0:
        return None, None
    return weighted / total, ("measured" if measured else "heuristic")


def _sample_clocks(entry: Mapping[str, Any], n: int, where: str) -> tuple[float, ...] | None:
    """SM clock (Hz) of every sample: its own where recorded, else the benchmark's median clock."""
    median = _opt_positive(entry.get("sm_clock_hz"), "sm_clock_hz", where)
    per = entry.get("sample_clock_hz")
    if per is None and entry.get("sample_clock_runs") is not None:  # the default report JSON's runs
        per = expand_runs(entry["sample_clock_runs"])
        if per is None:
            raise ReportParseError(f"{where}: field 'sample_clock_runs' must be a list of [clock, count] pairs")
    if per is None:
        return (median,) * n if median is not None else None
    # A tuple: the stored analysis's document (its lists of rows read back as tuples).
    if not isinstance(per, (list, tuple)) or len(per) != n:
        raise ReportParseError(f"{where}: field 'sample_clock_hz' must be null or a list of {n} clocks")
    fast = _finite_positive(per)
    read: Sequence[float | None] = fast if fast is not None else [_opt_positive(f, "sample_clock_hz", where) for f in per]
    if any(hz is None for hz in read) and median is None:
        return None
    known = sorted(hz for hz in read if hz is not None)
    scale = 1.0
    if entry.get("clock_source") == "probe" and median is not None and known:
        # The per-sample clocks are NVML readings, which miss throttling that lasts only as long
        # as the kernel; the benchmark's clock was measured on the GPU while it ran. Keep NVML's
        # sample-to-sample variation, anchored at the measured level.
        scale = median / known[len(known) // 2]
    fill = median or 0.0  # only used where median is known (checked above)
    return tuple(hz * scale if hz is not None else fill for hz in read)


# ---------------------------------------------------------------- report JSON


def side_from_report(doc: Mapping[str, Any], *, label: str, metric: str, where: str) -> Side:
    """The ``metric`` samples of every benchmark of a report JSON document (already version-checked)."""
    env = doc.get("environment")
    gpu = env.get("gpu_name") if isinstance(env, Mapping) else None
    out: list[Samples] = []
    for i, entry in enumerate(_benchmarks(doc, Path(where))):
        at = f"{where}: benchmark {i}"
        name, params = _name_params(entry, at)
        block = entry.get(metric)
        if block is None:
            continue  # that source has no numbers for this benchmark: it is not compared
        if not isinstance(block, Mapping):
            raise ReportParseError(f"{at} ({name!r}): field {metric!r} must be an object or null")
        block = {**block, "name": entry["name"], "params": entry.get("params") or {}, "power": entry.get("power")}
        energy = energy_samples(entry.get("power"))
        power_w, reasons = _power_facts(entry)
        e, e_src = elasticity_of(entry)
        uuid = entry.get("gpu_uuid") if isinstance(entry.get("gpu_uuid"), str) else None
        facts: dict[str, Any] = {"power_w": power_w, "throttle_reasons": reasons, "elasticity": e,
                                 "elasticity_source": e_src, "gpu_uuid": uuid or None}  # fmt: skip
        verdict = entry.get("verdict")
        n_before = len(out)
        if metric == "timer":
            out.append(_timer_samples(_at_measured_clock(block, entry), at))
        elif metric == "ncu":
            values = _numbers(block, "iterations_ns", f"{at} ({name!r}) ncu", allow_zero=True)
            cycles = _numbers(block, "iterations_cycles", f"{at} ({name!r}) ncu", allow_zero=True)
            if len(cycles) != len(values):
                raise ReportParseError(
                    f"{at} ({name!r}): ncu iterations_ns and iterations_cycles differ in length"
                )
            # An iteration with no kernels (a memcpy-only range, a filter that matched nothing)
            # has nothing to compare: keep only measured iterations.
            kept = [(v, c) for v, c in zip(values, cycles, strict=True) if v > 0 and c > 0]
            if not kept:
                continue
            values, cycles = tuple(v for v, _ in kept), tuple(c for _, c in kept)
            out.append(Samples(name, params, values, cycles, _clock_of(values, cycles), energy))
        else:
            if "iterations_ns" not in block and doc.get("detail") is False:
                raise UsageError(
                    f"{where}: a report JSON written without --detail holds no nsys iterations",
                    hint="compare the run directories, or write the reports with "
                    "nsightwrap report RUN --format json --detail",
                )
            # nsys records no SM clock: its kernel sums cannot be checked against a clock change.
            values = _numbers(block, "iterations_ns", f"{at} ({name!r}) nsys", allow_zero=True)
            values = tuple(v for v in values if v > 0)
            if not values:
                continue
            out.append(Samples(name, params, values, energy_j=energy))
        if len(out) > n_before:
            out[-1] = replace(out[-1], **facts)
            if isinstance(verdict, str):
                out[-1] = replace(out[-1], reconcile=verdict)  # shown beside the compare verdict
    return Side(label=label, gpu=str(gpu) if gpu else None, benchmarks=tuple(out))


def _at_measured_clock(block: Mapping[str, Any], entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """A report's timer block with the benchmark's clock measured on the GPU (its reference clock,
    the one its ratio and verdict use) as the samples' clock, so that cycles are counted at the
    clock the loop ran at, not at a host (NVML) reading taken beside it. Per-sample host readings
    are kept for their variation, anchored at the measured level (as a probe's are)."""
    ref, src = entry.get("ref_clock_hz"), str(entry.get("ref_clock_source") or "")
    if not isinstance(ref, (int, float)) or isinstance(ref, bool) or not ref > 0:
        return block
    if not any(s in src for s in TRUSTED_CLOCK_SOURCES) or block.get("sm_clock_hz") == ref:
        return block
    own = str(block.get("clock_source") or "")
    if any(s in own for s in ("probe", "stamps")):
        return block  # the timer's own GPU-side clock, sample by sample
    return {**block, "sm_clock_hz": float(ref), "clock_source": "probe"}


# ---------------------------------------------------------------- field readers


def _check_version(path: Path, doc: Mapping[str, Any], known: tuple[int, ...], what: str) -> None:
    version = doc.get("version")
    if version not in known:
        raise FormatVersionError(
            f"{path}: {what} version {version!r} is not supported (this nsightwrap reads {known})",
            hint="upgrade nsightwrap or regenerate the file with this version",
        )


def _need_timer(path: Path, metric: str) -> None:
    if metric != "timer":
        raise UsageError(f"{path}: a timer sidecar has no {metric} timings", hint="use --metric timer")


def _benchmarks(doc: Mapping[str, Any], path: Path) -> list[Mapping[str, Any]]:
    benches = doc.get("benchmarks")
    if not isinstance(benches, list) or not all(isinstance(b, Mapping) for b in benches):
        raise ReportParseError(f"{path}: field 'benchmarks' must be a list of objects")
    return benches


def _name_params(entry: Mapping[str, Any], where: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ReportParseError(f"{where}: missing field 'name'")
    params = entry.get("params") or {}
    if not isinstance(params, Mapping):
        raise ReportParseError(f"{where} ({name!r}): field 'params' must be an object")
    return name, tuple(sorted((str(k), str(v)) for k, v in params.items()))


def _numbers(entry: Mapping[str, Any], key: str, where: str, *, allow_zero: bool = False) -> tuple[float, ...]:
    raw = entry.get(key)
    if not isinstance(raw, (list, tuple)):  # a tuple: the stored analysis's document
        raise ReportParseError(f"{where}: missing field {key!r} (a list of numbers)")
    fast = _finite_positive(raw, allow_zero=allow_zero)
    if fast is not None:
        return tuple(fast)
    out = []
    for v in raw:
        bad = isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
        if bad or v < 0 or (v == 0 and not allow_zero):
            raise ReportParseError(f"{where}: field {key!r} holds {v!r}; expected positive numbers")
        out.append(float(v))
    return tuple(out)


def _finite_positive(raw: Sequence[Any], *, allow_zero: bool = False) -> list[float] | None:
    """``raw`` as floats where every element is a finite positive int or float (zero too with
    ``allow_zero``), in C-level passes over a list of thousands of samples; None otherwise (the
    caller's loop then names the bad element) and for an empty list."""
    if not raw or not set(map(type, raw)) <= {float, int}:
        return None  # a bool, None or a string
    try:
        if not math.isfinite(math.fsum(raw)):
            return None  # NaN or an infinity
    except OverflowError:  # a sum past float's range, or an int past it
        return None
    low = min(raw)
    if low < 0 or (low == 0 and not allow_zero):
        return None
    return list(map(float, raw))


def _opt_positive(v: Any, key: str, where: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ReportParseError(f"{where}: field {key!r} holds {v!r}; expected a clock in Hz or null")
    return float(v)


def _clock_of(values: Sequence[float], cycles: Sequence[float] | None) -> float | None:
    """Median SM clock (Hz) over samples: cycles / time."""
    if not cycles:
        return None
    ratios = sorted(c / v * 1e9 for c, v in zip(cycles, values, strict=True))
    mid = len(ratios) // 2
    return ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2.0
