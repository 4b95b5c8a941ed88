"""What ``nsightwrap doctor`` needs from ``nvidia-smi -q -x``: the GPU state that makes timings
wrong (persistence, clocks and their settings, clock event reasons, temperature against the
slowdown limit, MIG, ECC, power limit, the processes on the GPU).

Temperatures in C, clocks in Hz, power in W. Drivers name the slowdown limit two ways: absolute
(``gpu_temp_slow_threshold``, e.g. ``87 C``) or, on newer ones, relative to the GPU's T.Limit
(``gpu_temp_tlimit`` is the current distance to T.Limit, ``gpu_temp_slow_tlimit_threshold`` the
distance at which slowdown starts, e.g. 50 C and -2 C: 52 C to go). Both are read.
"""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

# The XML is parsed and its values read as smi.py does (one reading of nvidia-smi's XML; this
# module keeps only what doctor needs of it).
from nsightwrap.parsers.smi import active_reasons, parse_smi_xml, text_at
from nsightwrap.parsers.smi import quantity_at as _qty


@dataclass(frozen=True)
class GpuProcess:
    """A process with a context on the GPU, as nvidia-smi lists it."""

    pid: int | None
    name: str | None
    kind: str | None  # C (compute), G (graphics), C+G
    used_memory_bytes: float | None


@dataclass(frozen=True)
class GpuState:
    """One GPU's state as ``nvidia-smi -q -x`` reports it (None where it reports N/A)."""

    index: int
    name: str
    uuid: str | None
    pci_bus_id: str | None
    driver_version: str | None
    cuda_version: str | None
    persistence_mode: str | None  # Enabled / Disabled
    performance_state: str | None  # P0 ...
    sm_clock_hz: float | None
    max_sm_clock_hz: float | None
    app_graphics_clock_hz: float | None
    default_app_graphics_clock_hz: float | None
    #: Clock event (throttle) reasons reported Active, as nvidia-smi names them
    #: (``gpu_idle``, ``sw_power_cap``, ``hw_thermal_slowdown``, ...).
    active_reasons: tuple[str, ...]
    temperature_c: float | None
    #: Degrees left before the clocks slow down for heat (absolute or T.Limit-relative form).
    slowdown_margin_c: float | None
    mig_mode: str | None  # Enabled / Disabled / N/A
    ecc_mode: str | None
    ecc_pending: str | None
    power_limit_w: float | None
    default_power_limit_w: float | None
    power_draw_w: float | None
    processes: tuple[GpuProcess, ...]


def _margin(gpu: etree._Element, temp: float | None) -> float | None:
    slow = _qty(gpu, "temperature/gpu_temp_slow_threshold")
    if slow is not None and temp is not None:
        return slow - temp
    to_tlimit = _qty(gpu, "temperature/gpu_temp_tlimit")
    slow_rel = _qty(gpu, "temperature/gpu_temp_slow_tlimit_threshold")
    if to_tlimit is not None and slow_rel is not None:
        return to_tlimit - slow_rel
    return None


def _processes(gpu: etree._Element) -> tuple[GpuProcess, ...]:
    out = []
    for p in gpu.findall("processes/process_info"):
        pid = text_at(p, "pid")
        out.append(
            GpuProcess(
                pid=int(pid) if pid and pid.isdigit() else None,
                name=text_at(p, "process_name"),
                kind=text_at(p, "type"),
                used_memory_bytes=_qty(p, "used_memory"),
            )
        )
    return tuple(out)


def _state(index: int, gpu: etree._Element, root: etree._Element) -> GpuState:
    temp = _qty(gpu, "temperature/gpu_temp")
    return GpuState(
        index=index,
        name=text_at(gpu, "product_name") or "unknown GPU",
        uuid=text_at(gpu, "uuid"),
        pci_bus_id=text_at(gpu, "pci/pci_bus_id") or gpu.get("id"),
        driver_version=text_at(root, "driver_version"),
        cuda_version=text_at(root, "cuda_version"),
        persistence_mode=text_at(gpu, "persistence_mode"),
        performance_state=text_at(gpu, "performance_state"),
        sm_clock_hz=_qty(gpu, "clocks/sm_clock", "clocks/graphics_clock"),
        max_sm_clock_hz=_qty(gpu, "max_clocks/sm_clock", "max_clocks/graphics_clock"),
        app_graphics_clock_hz=_qty(gpu, "applications_clocks/graphics_clock"),
        default_app_graphics_clock_hz=_qty(gpu, "default_applications_clocks/graphics_clock"),
        active_reasons=active_reasons(gpu),
        temperature_c=temp,
        slowdown_margin_c=_margin(gpu, temp),
        mig_mode=text_at(gpu, "mig_mode/current_mig"),
        ecc_mode=text_at(gpu, "ecc_mode/current_ecc"),
        ecc_pending=text_at(gpu, "ecc_mode/pending_ecc"),
        power_limit_w=_qty(gpu, "gpu_power_readings/current_power_limit", "power_readings/power_limit",
                           "power_readings/enforced_power_limit"),  # fmt: skip
        default_power_limit_w=_qty(gpu, "gpu_power_readings/default_power_limit",
                                   "power_readings/default_power_limit"),  # fmt: skip
        power_draw_w=_qty(gpu, "gpu_power_readings/instant_power_draw", "gpu_power_readings/average_power_draw",
                          "gpu_power_readings/power_draw", "power_readings/power_draw"),  # fmt: skip
        processes=_processes(gpu),
    )


def parse_gpu_states(xml: str | bytes, where: str = "nvidia-smi -q -x") -> list[GpuState]:
    """Every GPU of an ``nvidia-smi -q -x`` document, in nvidia-smi's index order."""
    root = parse_smi_xml(xml.encode() if isinstance(xml, str) else xml, where)
    return [_state(i, g, root) for i, g in enumerate(root.findall("gpu"))]
