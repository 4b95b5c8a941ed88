"""What ``nsightwrap device`` measured: frozen dataclasses and their JSON form (docs/device.md).

Plain data, no torch: the analysis and the exporters read these without a GPU. Units: bytes/s,
FLOP/s (integer ops per second for ``int8``), ns, Hz, bytes, watts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nsightwrap.core.errors import ReportParseError

#: The groups of measurements, in the order they are taken and shown.
GROUPS = ("bandwidth", "latency", "launch", "compute")

#: Status of one measurement. ``throttled``: measured, but the clock was held down by power or
#: heat while it ran (the figure is what this GPU sustains under that limit); ``busy``: another
#: process used the GPU, so the figure may be low; ``unsupported``: the GPU or this torch cannot
#: run it; ``skipped``: not asked for, or a dependency (triton) is missing; ``failed``: it raised.
STATUSES = ("ok", "throttled", "busy", "unsupported", "skipped", "failed")

#: Statuses whose value is a real measurement (usable as a roof).
MEASURED = frozenset({"ok", "throttled", "busy"})


def _opt(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


@dataclass(frozen=True)
class Measurement:
    """One ceiling: ``value`` in ``unit`` (``B/s``, ``FLOP/s``, ``OP/s``, ``ns``), with how it was
    measured: the timer's median per call, its sample count and relative ~95 % interval, the SM
    clock during it and where that came from, throttle reasons seen, and NVML power draw."""

    group: str
    name: str
    label: str
    value: float | None
    unit: str
    status: str = "ok"
    message: str = ""
    median_ns: float | None = None
    n: int = 0
    rel_ci: float | None = None
    sm_clock_hz: float | None = None
    clock_source: str = "none"
    throttle_reasons: tuple[str, ...] = ()
    power_mean_w: float | None = None
    power_max_w: float | None = None
    #: Work per call: bytes moved (bandwidth), FLOPs or integer ops (compute), loads (latency).
    work: float | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        """True when ``value`` is a measurement (ok, throttled or busy)."""
        return self.status in MEASURED and self.value is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``group`` and ``name`` are the keys it sits under)."""
        return {
            "label": self.label, "value": self.value, "unit": self.unit, "status": self.status,
            "message": self.message, "median_ns": self.median_ns, "n": self.n, "rel_ci": self.rel_ci,
            "sm_clock_hz": self.sm_clock_hz, "clock_source": self.clock_source,
            "throttle_reasons": list(self.throttle_reasons), "power_mean_w": self.power_mean_w,
            "power_max_w": self.power_max_w, "work": self.work, "params": dict(self.params),
        }  # fmt: skip

    @classmethod
    def from_dict(cls, group: str, name: str, d: Mapping[str, Any]) -> Measurement:
        """Inverse of ``to_dict``; a missing field is named in the error."""
        where = f"device file: measurement {group}.{name}"
        if not isinstance(d, Mapping):
            raise ReportParseError(f"{where} is not an object")
        for key in ("value", "unit", "status"):
            if key not in d:
                raise ReportParseError(f"{where} is missing field {key!r}")
        status = str(d["status"])
        if status not in STATUSES:
            raise ReportParseError(f"{where}: unknown status {status!r} (known: {', '.join(STATUSES)})")
        return cls(
            group=group, name=name, label=str(d.get("label") or name), value=_opt(d["value"]),
            unit=str(d["unit"]), status=status, message=str(d.get("message") or ""),
            median_ns=_opt(d.get("median_ns")), n=int(d.get("n") or 0), rel_ci=_opt(d.get("rel_ci")),
            sm_clock_hz=_opt(d.get("sm_clock_hz")), clock_source=str(d.get("clock_source") or "none"),
            throttle_reasons=tuple(str(r) for r in d.get("throttle_reasons") or ()),
            power_mean_w=_opt(d.get("power_mean_w")), power_max_w=_opt(d.get("power_max_w")),
            work=_opt(d.get("work")), params=dict(d.get("params") or {}),
        )  # fmt: skip


@dataclass(frozen=True)
class BandwidthPoint:
    """Copy bandwidth (read + write counted) at one transfer size, L2 flushed before each sample."""

    bytes: float  # bytes copied (the traffic is twice this)
    bytes_per_s: float | None
    median_ns: float | None
    status: str = "ok"
    message: str = ""


@dataclass(frozen=True)
class LatencyPoint:
    """Pointer-chase latency of one dependent load at one working-set size (one thread)."""

    working_set_bytes: float
    ns: float | None
    cycles: float | None
    sm_clock_hz: float | None
    status: str = "ok"
    message: str = ""


@dataclass(frozen=True)
class GpuId:
    """Which GPU was measured (``uuid`` in NVML's form, ``GPU-...``)."""

    name: str
    uuid: str | None
    index: int = 0
    sm_count: int | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None
    compute_capability: str | None = None
    driver: str | None = None
    max_sm_clock_hz: float | None = None
    max_mem_clock_hz: float | None = None
    power_limit_w: float | None = None


@dataclass(frozen=True)
class DeviceFile:
    """Everything one ``nsightwrap device`` run measured on one GPU."""

    gpu: GpuId
    mode: str  # "full" or "quick"
    created: str  # ISO 8601, UTC
    wall_s: float
    measurements: tuple[Measurement, ...]
    bandwidth_curve: tuple[BandwidthPoint, ...] = ()
    latency_curve: tuple[LatencyPoint, ...] = ()
    software: Mapping[str, str | None] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    nsightwrap_version: str = ""

    def get(self, group: str, name: str) -> Measurement | None:
        """The measurement ``group.name``, or None."""
        return next((m for m in self.measurements if m.group == group and m.name == name), None)

    def group(self, group: str) -> tuple[Measurement, ...]:
        """The measurements of one group, in the order taken."""
        return tuple(m for m in self.measurements if m.group == group)


def _dataclass_list(cls: Any, items: Any, where: str) -> tuple[Any, ...]:
    if items is None:
        return ()
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise ReportParseError(f"device file: {where} must be a list")
    out = []
    for i, d in enumerate(items):
        if not isinstance(d, Mapping):
            raise ReportParseError(f"device file: {where}[{i}] is not an object")
        try:
            out.append(cls(**{k: (_opt(v) if k not in ("status", "message") else str(v)) for k, v in d.items()
                              if k in cls.__dataclass_fields__}))  # fmt: skip
        except TypeError as exc:
            raise ReportParseError(f"device file: {where}[{i}] is incomplete ({exc})") from None
    return tuple(out)


def device_to_dict(dev: DeviceFile, fmt: str, version: int) -> dict[str, Any]:
    """The JSON document of ``dev`` (``format`` and ``version`` first)."""
    groups: dict[str, dict[str, Any]] = {g: {} for g in GROUPS}
    for m in dev.measurements:
        groups.setdefault(m.group, {})[m.name] = m.to_dict()
    g = dev.gpu
    return {
        "format": fmt,
        "version": version,
        "nsightwrap_version": dev.nsightwrap_version,
        "created": dev.created,
        "mode": dev.mode,
        "wall_s": dev.wall_s,
        "gpu": {k: getattr(g, k) for k in GpuId.__dataclass_fields__},
        "software": dict(dev.software),
        "warnings": list(dev.warnings),
        "measurements": groups,
        "bandwidth_curve": [
            {"bytes": p.bytes, "bytes_per_s": p.bytes_per_s, "median_ns": p.median_ns, "status": p.status,
             "message": p.message} for p in dev.bandwidth_curve
        ],  # fmt: skip
        "latency_curve": [
            {"working_set_bytes": p.working_set_bytes, "ns": p.ns, "cycles": p.cycles, "sm_clock_hz": p.sm_clock_hz,
             "status": p.status, "message": p.message} for p in dev.latency_curve
        ],  # fmt: skip
    }


def device_from_dict(doc: Mapping[str, Any]) -> DeviceFile:
    """Inverse of ``device_to_dict`` (the caller has checked ``format`` and ``version``)."""
    gpu = doc.get("gpu")
    if not isinstance(gpu, Mapping) or not gpu.get("name"):
        raise ReportParseError("device file is missing field 'gpu.name'")
    groups = doc.get("measurements")
    if not isinstance(groups, Mapping):
        raise ReportParseError("device file is missing field 'measurements'")
    ms: list[Measurement] = []
    for group, items in groups.items():
        if not isinstance(items, Mapping):
            raise ReportParseError(f"device file: measurements.{group} is not an object")
        ms += [Measurement.from_dict(str(group), str(name), d) for name, d in items.items()]
    ints = ("index", "sm_count", "l2_bytes", "memory_bytes")
    gpu_kw: dict[str, Any] = {}
    for k in GpuId.__dataclass_fields__:
        v = gpu.get(k)
        if k in ints:
            gpu_kw[k] = None if v is None else int(v)
        elif k in ("max_sm_clock_hz", "max_mem_clock_hz", "power_limit_w"):
            gpu_kw[k] = _opt(v)
        else:
            gpu_kw[k] = None if v is None else str(v)
    gpu_kw["index"] = gpu_kw["index"] or 0
    return DeviceFile(
        gpu=GpuId(**gpu_kw),
        mode=str(doc.get("mode") or "full"),
        created=str(doc.get("created") or ""),
        wall_s=float(_opt(doc.get("wall_s")) or 0.0),
        measurements=tuple(ms),
        bandwidth_curve=_dataclass_list(BandwidthPoint, doc.get("bandwidth_curve"), "bandwidth_curve"),
        latency_curve=_dataclass_list(LatencyPoint, doc.get("latency_curve"), "latency_curve"),
        software={str(k): (None if v is None else str(v)) for k, v in (doc.get("software") or {}).items()},
        warnings=tuple(str(w) for w in doc.get("warnings") or ()),
        nsightwrap_version=str(doc.get("nsightwrap_version") or ""),
    )
