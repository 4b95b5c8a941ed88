"""SM clock during a measurement: NVML sampled in a background thread, aligned to samples.

NVML read from the host after a synchronize reports the idle boost clock (1980 MHz on an H200)
even when the kernel just ran at 1.6 GHz: the clock drops under load and recovers at once. So
the clock is sampled WHILE the timed loop runs, and each timing sample takes the reading nearest
to its window on the host clock (``time.perf_counter``).

A second thread reads power, temperature and the total energy counter
(``nvmlDeviceGetTotalEnergyConsumption``, mJ since the driver loaded). Measured (docs/power.md,
driver 580) both the energy counter and the "instantaneous" power field
(``NVML_FI_DEV_POWER_INSTANT``) move in steps every ~100 ms, each step telling the energy of the
period that ended about one period earlier, and one energy read costs ~3.4 ms (a power read
~5 us): so power is read every 10 ms, energy every 20 ms, on their own thread, and
``counter_power`` takes whole counter steps inside a window (docs/power.md).
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
    """Background threads reading one GPU via NVML: the SM clock and clock event reasons every
    ``interval_s``; power and temperature every ``power_interval_s`` and the energy counter every
    ``energy_interval_s`` on a second thread (an energy read takes milliseconds).

    Use as a context manager; ``trace()`` and ``power_trace()`` return what was read. When NVML
    is missing or fails, ``available`` is False and the traces are empty (the timer then reports
    ``clock_source: none`` and no power). ``windows`` holds named host-time windows that other
    parts of the timer measured while the sampler ran (the energy window, ``timer.energy``).
    """

    def __init__(
        self,
        handle: Any,
        interval_s: float = 0.0005,
        power_interval_s: float = 0.01,
        energy_interval_s: float = 0.02,
    ) -> None:
        self._h = handle
        self._interval = interval_s
        self._power_interval = power_interval_s
        self._energy_interval = energy_interval_s
        self._t: list[float] = []
        self._hz: list[float] = []
        self._rs: list[int] = []
        self._pt: list[float] = []
        self._pw: list[float] = []
        self._tc: list[float] = []
        self._ej: list[float] = []
        self._power_kind = "none"
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.started_s: float | None = None
        self.windows: dict[str, Any] = {}

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

    def _run_power(self) -> None:
        import pynvml

        power = _PowerReader(pynvml, self._h)
        self._power_kind = power.kind
        next_energy = 0.0
        while not self._stop.is_set():
            t0 = time.perf_counter()
            w, c = power.power_temp()
            j = math.nan
            if t0 >= next_energy:
                j = power.energy()
                next_energy = t0 + self._energy_interval
            # One row per reading: the energy column is NaN where the counter was not read.
            self._pt.append(0.5 * (t0 + time.perf_counter()))
            self._pw.append(w)
            self._tc.append(c)
            self._ej.append(j)
            self._stop.wait(self._power_interval)

    def __enter__(self) -> NvmlSampler:
        self.started_s = time.perf_counter()
        if self._h is not None:
            for target, name in ((self._run, "nsightwrap-nvml"), (self._run_power, "nsightwrap-nvml-power")):
                t = threading.Thread(target=target, name=name, daemon=True)
                t.start()
                self._threads.append(t)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=1.0)

    def trace(self) -> ClockTrace:
        """Readings so far (call after leaving the context)."""
        return ClockTrace(
            np.asarray(self._t, dtype=float),
            np.asarray(self._hz, dtype=float),
            np.asarray(self._rs, dtype=np.int64),
        )

    def power_trace(self) -> PowerTrace:
        """Power, temperature and energy readings so far (call after leaving the context)."""
        n = min(len(self._pt), len(self._pw), len(self._tc), len(self._ej))
        return PowerTrace(
            np.asarray(self._pt[:n], dtype=float),
            np.asarray(self._pw[:n], dtype=float),
            np.asarray(self._tc[:n], dtype=float),
            np.asarray(self._ej[:n], dtype=float),
            self._power_kind,
        )

    def power_summary(self, timed_windows: Sequence[tuple[float, float]]) -> dict[str, Any] | None:
        """The ``power`` record of a benchmark (sidecar field, docs/power.md): the timed samples'
        window and, when the energy window ran, its energy per call. None without NVML."""
        from nsightwrap.timer.energy import power_record

        return power_record(self.trace(), self.power_trace(), timed_windows, self.windows)


class _PowerReader:
    """Reads (power W, temperature C, energy J) of one GPU; NaN for what the GPU does not report."""

    def __init__(self, pynvml: Any, handle: Any) -> None:
        self._nv = pynvml
        self._h = handle
        self._field = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", 186)
        self.kind = "none"
        self._energy = True
        self._temp = True
        self._last_temp = (math.nan, -1.0)
        # The instantaneous field first (a 1 s average hides a benchmark's power); else the
        # power usage call, which is the 1 s average on Ampere and newer.
        if self._instant() is not None:
            self.kind = "instant"
        else:
            try:
                pynvml.nvmlDeviceGetPowerUsage(handle)
                self.kind = "average"
            except Exception:  # no power reading on this GPU
                self.kind = "none"

    def _instant(self) -> float | None:
        try:
            v = self._nv.nvmlDeviceGetFieldValues(self._h, [self._field])[0]
        except Exception:  # old driver or bindings: no field values
            return None
        if getattr(v, "nvmlReturn", 1) != 0:
            return None
        return float(v.value.uiVal) / 1e3

    def power_temp(self) -> tuple[float, float]:
        """(power W, temperature C), NaN for what the GPU does not report."""
        nv = self._nv
        w = math.nan
        if self.kind == "instant":
            w = self._instant() or math.nan
        elif self.kind == "average":
            try:
                w = float(nv.nvmlDeviceGetPowerUsage(self._h)) / 1e3
            except Exception:  # a reading lost is a gap in the trace, not a failure
                w = math.nan
        # Temperature moves in whole degrees over seconds: one reading per 50 ms is plenty.
        c, at = self._last_temp
        now = time.perf_counter()
        if self._temp and now - at >= 0.05:
            try:
                c = float(nv.nvmlDeviceGetTemperature(self._h, nv.NVML_TEMPERATURE_GPU))
            except Exception:
                self._temp = False
                c = math.nan
            self._last_temp = (c, now)
        return w, c

    def energy(self) -> float:
        """The total energy counter in J, NaN where the GPU has none (pre-Volta)."""
        if not self._energy:
            return math.nan
        try:
            return float(self._nv.nvmlDeviceGetTotalEnergyConsumption(self._h)) / 1e3
        except Exception:  # no energy counter: power is integrated instead
            self._energy = False
            return math.nan


@dataclass(frozen=True)
class PowerTrace:
    """NVML power readings: host time (s, perf_counter), power (W), GPU temperature (C), the total
    energy counter (J; NaN where the GPU has none). ``power_kind``: ``instant``, ``average``
    (a 1 s running average) or ``none``."""

    time_s: np.ndarray
    power_w: np.ndarray
    temp_c: np.ndarray
    energy_j: np.ndarray
    power_kind: str = "instant"

    def __len__(self) -> int:
        return int(self.time_s.size)


def counter_steps(trace: PowerTrace) -> tuple[np.ndarray, np.ndarray]:
    """(time, energy) at the first reading of each new value of the energy counter, the first
    reading included: the counter moves in steps, so only its changes say when energy was counted."""
    ok = np.isfinite(trace.energy_j)
    t, e = trace.time_s[ok], trace.energy_j[ok]
    if t.size == 0:
        return t, e
    keep = np.concatenate([[True], np.diff(e) != 0])
    return t[keep], e[keep]


def counter_resolution(trace: PowerTrace) -> tuple[float | None, float | None]:
    """Median step (J) and median time between steps (s) of the energy counter, or None."""
    t, e = counter_steps(trace)
    if t.size < 3:
        return None, None
    return float(np.median(np.diff(e[1:]))), float(np.median(np.diff(t[1:])))


@dataclass(frozen=True)
class CounterPower:
    """Mean power over whole steps of the energy counter inside a window.

    ``step_w``: each step's energy over the counter's period (W), one per step; ``period_s``
    and ``lag_s``: the counter's update period and how late a step reports its period (taken
    equal to the period, as measured on an H200); ``covered_s``: the time the steps cover.
    """

    mean_w: float
    step_w: tuple[float, ...]
    period_s: float
    lag_s: float
    covered_s: float


def counter_power(trace: PowerTrace, t0: float, t1: float, lag_s: float | None = None) -> CounterPower | None:
    """Mean power over ``[t0, t1]`` (host time) from the energy counter's whole steps, or None
    when no step fits (a window shorter than about two periods).

    A step seen at ``tau`` holds the energy of ``[tau - lag - period, tau - lag]``; the steps
    used are those whose period lies inside the window. Power per step is the step's energy
    over the median period, not over the time between the readings that saw it: the counter
    updates on a fixed period, and the reading times jitter by the read interval.
    """
    t, e = counter_steps(trace)
    if t.size < 3:
        return None
    period = float(np.median(np.diff(t[1:])))
    if not period > 0:
        return None
    lag = period if lag_s is None else lag_s
    # A step is seen up to one read interval after it is published: its period may start that
    # much earlier. Keep only steps whose period surely lies inside the window.
    reads = trace.time_s[np.isfinite(trace.energy_j)]
    late = float(np.median(np.diff(reads))) if reads.size > 2 else 0.0
    tau, de = t[1:], np.diff(e)  # the first reading starts the first difference
    inside = (tau - late - lag - period >= t0) & (tau - lag <= t1)
    if not inside.any():
        return None
    steps = de[inside] / period
    return CounterPower(float(steps.mean()), tuple(float(v) for v in steps), period, lag, float(steps.size * period))


def energy_between(trace: PowerTrace, t0: float, t1: float, lag_s: float = 0.0) -> float | None:
    """Energy (J) between host times ``t0`` and ``t1``: the counter interpolated linearly
    between its steps, read ``lag_s`` later (the counter reports late); where it has none, the
    power readings integrated (trapezoids). None when the readings do not cover the window."""
    a, b = t0 + lag_s, t1 + lag_s
    t, e = counter_steps(trace)
    if t.size >= 2 and t[0] <= a and b <= t[-1]:
        return float(np.interp(b, t, e) - np.interp(a, t, e))
    ok = np.isfinite(trace.power_w)
    pt, pw = trace.time_s[ok], trace.power_w[ok]
    if pt.size < 2 or pt[0] > a or pt[-1] < b:
        return None
    grid = np.concatenate([[a], pt[(pt > a) & (pt < b)], [b]])
    y = np.interp(grid, pt, pw)
    return float(np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(grid)))


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
