"""Text of a device file's figures, shared by its table, Markdown and HTML exporters (no computing:
the roofs and ridge points come from ``nsightwrap.device.roofs``)."""

from __future__ import annotations

import math

from nsightwrap.core.units import format_ns
from nsightwrap.device.result import BandwidthPoint, DeviceFile, LatencyPoint, Measurement
from nsightwrap.device.roofs import DeviceRoofs, measured_roofs

GROUP_TITLES = {
    "bandwidth": "Memory bandwidth",
    "latency": "Latency (pointer chase, one thread)",
    "launch": "Kernel launch",
    "compute": "Compute peaks (dense, random data)",
}


def rate(v: float | None, unit: str) -> str:
    """``4.31 TB/s``, ``792 TFLOP/s``, ``1.6 POP/s``; ``-`` when unknown."""
    if v is None or not math.isfinite(v):
        return "-"
    base = {"B/s": "B/s", "FLOP/s": "FLOP/s", "OP/s": "OP/s"}.get(unit, unit)
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {prefix}{base}"
    return f"{v:.3g} {base}"


def ns(v: float | None) -> str:
    """``17.2 ns``, ``4.31 us``; ``-`` when unknown (``core.units.format_ns``, 3 digits)."""
    return format_ns(v, 3)


def size(n: float | None) -> str:
    """``4 KiB``, ``1 GiB``."""
    if n is None:
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def clock(hz: float | None) -> str:
    return "-" if hz is None or not math.isfinite(hz) else f"{hz / 1e9:.2f} GHz"


def watts(w: float | None) -> str:
    return "-" if w is None or not math.isfinite(w) else f"{w:.0f} W"


def value(m: Measurement) -> str:
    """The figure of one measurement, with cycles for a latency."""
    if m.value is None:
        return "-"
    if m.unit == "ns":
        cyc = m.params.get("cycles")
        text = ns(m.value)
        return f"{text} ({cyc:.0f} cycles)" if isinstance(cyc, (int, float)) and math.isfinite(cyc) else text
    return rate(m.value, m.unit)


def status(m: Measurement | BandwidthPoint | LatencyPoint) -> str:
    """``ok``, or the status and why (``throttled: clock held down (sw_power_cap) ...``)."""
    if m.status == "ok":
        return "ok"
    return f"{m.status}: {m.message}" if m.message else m.status


def rows(dev: DeviceFile, group: str) -> list[list[str]]:
    """Rows of one group's table: ceiling, value, SM clock (source), power, samples, status."""
    out = []
    for m in dev.group(group):
        clk = clock(m.sm_clock_hz) + (f" ({m.clock_source})" if m.sm_clock_hz and m.clock_source not in ("none", "") else "")
        power = watts(m.power_mean_w) + (f" (max {watts(m.power_max_w)})" if m.power_max_w else "")
        out.append([m.label, value(m), clk, power, str(m.n) if m.n else "-", status(m)])
    return out


ROW_HEADERS = ["ceiling", "value", "SM clock", "power", "n", "status"]


def curve_rows(dev: DeviceFile) -> list[list[str]]:
    """Bandwidth against transfer size: bytes copied, time, bandwidth (read + write counted)."""
    return [[size(p.bytes), ns(p.median_ns), rate(p.bytes_per_s, "B/s"), status(p)] for p in dev.bandwidth_curve]


CURVE_HEADERS = ["copied", "time", "bandwidth (read + write)", "status"]


def latency_rows(dev: DeviceFile) -> list[list[str]]:
    """Latency against working set: ns, SM cycles, the clock they were counted at."""
    return [
        [size(p.working_set_bytes), ns(p.ns), "-" if p.cycles is None else f"{p.cycles:.0f}", clock(p.sm_clock_hz), status(p)]
        for p in dev.latency_curve
    ]


LATENCY_HEADERS = ["working set", "latency", "cycles", "SM clock", "status"]


def roofs_of(dev: DeviceFile) -> DeviceRoofs:
    return measured_roofs(dev)


def ridge_rows(roofs: DeviceRoofs) -> list[list[str]]:
    """Per compute roof: peak, its clock, and the ridge point against the memory roof."""
    out = []
    for p in roofs.peaks:
        ridge = p.flops_per_s / roofs.memory_bytes_per_s if roofs.memory_bytes_per_s else None
        unit = "OP/s" if p.name == "int8" else "FLOP/s"
        out.append([p.name, rate(p.flops_per_s, unit), clock(p.sm_clock_hz), "-" if ridge is None else f"{ridge:.0f}"])
    return out


RIDGE_HEADERS = ["roof", "peak", "at SM clock", "ridge (FLOP/byte)"]


def heading(dev: DeviceFile) -> str:
    g = dev.gpu
    return (
        f"{g.name} ({g.uuid or 'uuid unknown'}), {dev.mode} run, {dev.wall_s:.0f} s, {dev.created}; "
        f"driver {g.driver or '-'}, torch {dev.software.get('torch') or '-'}, triton {dev.software.get('triton') or '-'}"
    )
