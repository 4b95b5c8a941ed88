"""NVML facts for ``nsightwrap device``: power draw during a measurement, and whether another
process is using the GPU (then every figure may be low)."""

from __future__ import annotations

import os
import threading
from typing import Any


class PowerSampler:
    """Background thread reading NVML's power draw (``nvmlDeviceGetPowerUsage``, mW) every
    ``interval_s``; ``mean_w`` / ``max_w`` after the ``with`` block, None without NVML."""

    def __init__(self, handle: Any, interval_s: float = 0.005) -> None:
        self._h = handle
        self._interval = interval_s
        self._w: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.source = "none"

    def _reader(self) -> Any:
        """Instantaneous power (``NVML_FI_DEV_POWER_INSTANT``, drivers 530+) where the driver has it:
        ``nvmlDeviceGetPowerUsage`` is a 1-second average on recent GPUs, which lags a measurement
        that lasts a second or less."""
        import pynvml

        fid = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", None)
        if fid is not None:
            try:
                v = pynvml.nvmlDeviceGetFieldValues(self._h, [fid])[0]
                if v.nvmlReturn == 0 and _field(v) > 0:
                    self.source = "nvml instant"
                    return lambda: _field(pynvml.nvmlDeviceGetFieldValues(self._h, [fid])[0]) / 1000.0
            except Exception:  # no field values on this driver: the averaged reading below
                pass
        self.source = "nvml average"
        return lambda: pynvml.nvmlDeviceGetPowerUsage(self._h) / 1000.0

    def _run(self) -> None:
        import pynvml

        try:
            read = self._reader()
        except Exception:  # no NVML power at all: the figures carry no power
            return
        while not self._stop.is_set():
            try:
                self._w.append(float(read()))
            except (pynvml.NVMLError, ArithmeticError, AttributeError, TypeError, ValueError):
                break
            self._stop.wait(self._interval)

    def __enter__(self) -> PowerSampler:
        if self._h is not None:
            self._thread = threading.Thread(target=self._run, name="nsightwrap-power", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    @property
    def mean_w(self) -> float | None:
        return sum(self._w) / len(self._w) if self._w else None

    @property
    def max_w(self) -> float | None:
        return max(self._w) if self._w else None


def _field(v: Any) -> float:
    """The number in an NVML field value, by its type (0 double, 1 uint, 2 ulong, 3 ulonglong, 4 slonglong)."""
    kind = int(getattr(v, "valueType", 1))
    attr = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal"}.get(kind, "uiVal")
    return float(getattr(v.value, attr))


def other_processes(handle: Any) -> list[tuple[int, int | None]]:
    """(pid, used GPU memory in bytes) of every compute process on the GPU but this one."""
    if handle is None:
        return []
    try:
        import pynvml

        procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:  # NVML without process queries (some VMs, old drivers): nothing to say
        return []
    me = os.getpid()
    out = []
    for p in procs:
        pid = int(getattr(p, "pid", -1))
        if pid == me:
            continue
        mem = getattr(p, "usedGpuMemory", None)
        out.append((pid, int(mem) if isinstance(mem, int) else None))
    return out


def utilization_pct(handle: Any) -> float | None:
    """NVML's GPU utilization (% of the last sample period with a kernel running), or None."""
    if handle is None:
        return None
    try:
        import pynvml

        return float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
    except Exception:
        return None


def nvml_text(handle: Any, what: str) -> str | None:
    """A few NVML strings and numbers for the device file: ``uuid``, ``driver``, ``power_limit_w``,
    ``max_mem_clock_hz`` (as text or a number), None where NVML cannot say."""
    if handle is None:
        return None
    try:
        import pynvml

        if what == "uuid":
            v = pynvml.nvmlDeviceGetUUID(handle)
        elif what == "driver":
            v = pynvml.nvmlSystemGetDriverVersion()
        elif what == "power_limit_w":
            v = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
        elif what == "max_mem_clock_hz":
            v = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM) * 1e6
        else:
            return None
    except Exception:
        return None
    return v.decode() if isinstance(v, bytes) else str(v)
