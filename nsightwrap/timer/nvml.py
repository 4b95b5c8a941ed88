"""SM clock during a measurement: NVML sampled in a background thread, aligned to samples.

NVML read from the host after a synchronize reports the idle boost clock (1980 MHz on an H200)
even when the kernel just ran at 1.6 GHz: the clock drops under load and recovers at once. So
the clock is sampled WHILE the timed loop runs, and each timing sample takes the reading nearest
to its window on the host clock (``time.perf_counter``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# NVML clock event (throttle) reason bits (nvml.h, nvmlClocksEventReason*). Only these mean the
# clock was held down by power or heat; idle, application clocks and sync boost do not.
REASON_SW_POWER_CAP = 0x4
REASON_HW_SLOWDOWN = 0x8
REASON_SW_THERMAL = 0x20
REASON_HW_THERMAL = 0x40
REASON_HW_POWER_BRAKE = 0x80
THROTTLE_MASK = (
    REASON_SW_POWER_CAP | REASON_HW_SLOWDOWN | REASON_SW_THERMAL | REASON_HW_THERMAL | REASON_HW_POWER_BRAKE
)
REASON_NAMES = {
    REASON_SW_POWER_CAP: "sw_power_cap",
    REASON_HW_SLOWDOWN: "hw_slowdown",
    REASON_SW_THERMAL: "sw_thermal",
    REASON_HW_THERMAL: "hw_thermal",
    REASON_HW_POWER_BRAKE: "hw_power_brake",
}


def reason_names(mask: int) -> tuple[str, ...]:
    """Names of the throttle bits set in ``mask``."""
    return tuple(name for bit, name in REASON_NAMES.items() if mask & bit)


@dataclass(frozen=True)
class ClockTrace:
    """NVML readings: host time (s, perf_counter), SM clock (Hz), clock event reason bits."""

    time_s: np.ndarray
    sm_clock_hz: np.ndarray
    reasons: np.ndarray

    def __len__(self) -> int:
        return int(self.time_s.size)


@dataclass(frozen=True)
class AlignedClock:
    """The clock of each timing sample and which samples ran throttled."""

    sample_clock_hz: tuple[float, ...]  # NaN where no reading was close enough
    throttled: tuple[bool, ...]
    reasons: int  # OR of the throttle bits seen during the samples

    @property
    def median_hz(self) -> float | None:
        """Median clock over the samples that have one, or None."""
        vals = [v for v in self.sample_clock_hz if math.isfinite(v)]
        return float(np.median(vals)) if vals else None


def align(
    trace: ClockTrace, windows: Sequence[tuple[float, float]], max_gap_s: float = 0.005
) -> AlignedClock:
    """Give each host-time window ``(t0, t1)`` the median of the readings inside it, or else the
    nearest reading within ``max_gap_s`` of its midpoint (short kernels fall between readings)."""
    n = len(windows)
    if len(trace) == 0 or n == 0:
        return AlignedClock(tuple([math.nan] * n), tuple([False] * n), 0)
    t = trace.time_s
    order = np.argsort(t)
    t, hz, rs = t[order], trace.sm_clock_hz[order], trace.reasons[order].astype(np.int64)
    clocks: list[float] = []
    flags: list[bool] = []
    seen = 0
    for t0, t1 in windows:
        lo, hi = np.searchsorted(t, t0, "left"), np.searchsorted(t, t1, "right")
        if hi > lo:
            idx = np.arange(lo, hi)
        else:
            mid = 0.5 * (t0 + t1)
            j = int(np.searchsorted(t, mid))
            cands = [k for k in (j - 1, j) if 0 <= k < t.size]
            k = min(cands, key=lambda k: abs(t[k] - mid))
            idx = np.array([k]) if abs(t[k] - mid) <= max_gap_s else np.array([], dtype=int)
        if idx.size == 0:
            clocks.append(math.nan)
            flags.append(False)
            continue
        clocks.append(float(np.median(hz[idx])))
        bits = int(np.bitwise_or.reduce(rs[idx])) & THROTTLE_MASK
        flags.append(bits != 0)
        seen |= bits
    return AlignedClock(tuple(clocks), tuple(flags), seen)


class NvmlSampler:
    """Background thread reading the SM clock and clock event reasons of one GPU via NVML.

    Use as a context manager; ``trace()`` returns what was read. When NVML is missing or fails,
    ``available`` is False and the trace is empty (the timer then reports ``clock_source: none``).
    """

    def __init__(self, handle: Any, interval_s: float = 0.0005) -> None:
        self._h = handle
        self._interval = interval_s
        self._t: list[float] = []
        self._hz: list[float] = []
        self._rs: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        return self._h is not None

    def _run(self) -> None:
        import pynvml

        get_reasons = (
            getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
            or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        )
        while not self._stop.is_set():
            try:
                t0 = time.perf_counter()
                mhz = pynvml.nvmlDeviceGetClockInfo(self._h, pynvml.NVML_CLOCK_SM)
                reasons = int(get_reasons(self._h))
                t1 = time.perf_counter()
            except pynvml.NVMLError:
                break
            self._t.append(0.5 * (t0 + t1))
            self._hz.append(float(mhz) * 1e6)
            self._rs.append(reasons)
            self._stop.wait(self._interval)

    def __enter__(self) -> NvmlSampler:
        if self._h is not None:
            self._thread = threading.Thread(target=self._run, name="nsightwrap-nvml", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    def trace(self) -> ClockTrace:
        """Readings so far (call after leaving the context)."""
        return ClockTrace(
            np.asarray(self._t, dtype=float),
            np.asarray(self._hz, dtype=float),
            np.asarray(self._rs, dtype=np.int64),
        )


_nvml_state: dict[str, Any] = {}


def nvml_handle(uuid: str | None, pci_bus_id: str | None, index: int) -> tuple[Any, float | None]:
    """NVML handle of the torch device (matched by UUID, then PCI bus id, then index) and its
    maximum SM clock in Hz; ``(None, None)`` when NVML is unavailable."""
    try:
        import pynvml

        if not _nvml_state.get("init"):
            pynvml.nvmlInit()
            _nvml_state["init"] = True
    except Exception:  # no driver library, no permission: the timer still works without NVML
        return None, None
    handle = None
    tries: list[tuple[Any, Any]] = []
    if uuid:
        tries.append((pynvml.nvmlDeviceGetHandleByUUID, uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"))
    if pci_bus_id:
        tries.append((pynvml.nvmlDeviceGetHandleByPciBusId, pci_bus_id))
    tries.append((pynvml.nvmlDeviceGetHandleByIndex, index))
    for get, key in tries:
        try:
            handle = get(key)
            break
        except Exception:  # the next way of naming the device may work
            continue
    if handle is None:
        return None, None
    try:
        max_hz: float | None = float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)) * 1e6
    except Exception:
        max_hz = None
    return handle, max_hz
