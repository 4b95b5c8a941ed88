"""SM clock during a measurement: NVML sampled in a background thread, aligned to samples.

NVML read from the host after a synchronize reports the idle boost clock (the GPU's maximum)
even when the kernel just ran some 20% lower: the clock drops under load and recovers at once. So
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
from typing import Any

import numpy as np

from nsightwrap.timer.energy import power_record
from nsightwrap.timer.traces import ClockTrace, PowerTrace


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
