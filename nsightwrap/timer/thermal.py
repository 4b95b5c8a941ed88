"""The thermal guard: before a benchmark, wait until the GPU is a margin below its slowdown
temperature, so that every benchmark starts from the same thermal state.

A GPU near its slowdown temperature lowers its clocks in the middle of a measurement, and the
benchmark that happens to run after a hot one pays for it. ``bench(..., thermal_margin_c=10)``
waits (GPU idle, polling NVML every ``POLL_S``) until ``slowdown - temperature >= margin``, or
until ``thermal_timeout_s`` has passed; the result's ``method["thermal_guard"]`` says how long it
waited and whether it gave up.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import Any

from nsightwrap.core.errors import UsageError

#: Seconds between temperature readings while waiting.
POLL_S = 0.5


def slowdown_reader(handle: Any) -> tuple[Callable[[], float], float | None, str]:
    """``(read current temperature C, slowdown temperature C or None, where the limit came from)``.

    The slowdown threshold (``NVML_TEMPERATURE_THRESHOLD_SLOWDOWN``) is what the clocks react
    to; GPUs that do not report it give a margin to their limit instead
    (``nvmlDeviceGetMarginTemperature``), from which the limit is derived once.
    """
    import pynvml

    def temp() -> float:
        return float(pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU))

    try:
        limit = float(
            pynvml.nvmlDeviceGetTemperatureThreshold(handle, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
        )
        if limit > 0:
            return temp, limit, "slowdown_threshold"
    except Exception:  # not reported on this GPU: try the margin
        pass
    margin = getattr(pynvml, "nvmlDeviceGetMarginTemperature", None)
    if margin is not None:
        try:
            m = margin(handle)
            value = float(getattr(m, "margin", m))
            return temp, temp() + value, "margin_temperature"
        except Exception:  # neither is reported: the guard cannot work on this GPU
            pass
    return temp, None, "none"


def wait_until_cool(
    read_temp: Callable[[], float],
    slowdown_c: float | None,
    margin_c: float,
    timeout_s: float,
    *,
    source: str = "slowdown_threshold",
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Wait until ``read_temp() <= slowdown_c - margin_c`` or ``timeout_s`` has passed.

    Returns the guard record: ``margin_c``, ``slowdown_c``, ``target_c``, ``start_c``, ``end_c``,
    ``waited_s``, ``timed_out``, ``source`` and, when the guard could not work, ``skipped`` (why).
    """
    rec: dict[str, Any] = {"margin_c": float(margin_c), "slowdown_c": slowdown_c, "source": source}
    if slowdown_c is None or not math.isfinite(slowdown_c):
        return {**rec, "waited_s": 0.0, "timed_out": False, "skipped": "the GPU reports no slowdown temperature"}
    target = slowdown_c - margin_c
    start = clock()
    t = t0 = read_temp()
    while t > target and clock() - start < timeout_s:
        sleep(POLL_S)
        t = read_temp()
    return {
        **rec,
        "target_c": target,
        "start_c": t0,
        "end_c": t,
        "waited_s": round(clock() - start, 3),
        "timed_out": bool(t > target),
    }


#: Environment variables that turn the guard on for every benchmark of a run (``bench``'s own
#: ``thermal_margin_c=`` wins): ``NSIGHTWRAP_THERMAL_MARGIN_C=10 nsightwrap profile bench.py``.
ENV_MARGIN_C = "NSIGHTWRAP_THERMAL_MARGIN_C"
ENV_TIMEOUT_S = "NSIGHTWRAP_THERMAL_TIMEOUT_S"


def _env_float(name: str) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise UsageError(f"{name}={raw!r} is not a number", hint=f"e.g. {name}=10") from None


def thermal_guard(handle: Any, margin_c: float | None, timeout_s: float | None) -> dict[str, Any] | None:
    """The guard for one benchmark on the GPU behind NVML ``handle``; None when not asked for
    (neither ``margin_c`` nor ``NSIGHTWRAP_THERMAL_MARGIN_C``). ``timeout_s`` None: 60 s, or
    ``NSIGHTWRAP_THERMAL_TIMEOUT_S``."""
    if margin_c is None:
        margin_c = _env_float(ENV_MARGIN_C)
    if margin_c is None:
        return None
    if timeout_s is None:
        timeout_s = _env_float(ENV_TIMEOUT_S)
        timeout_s = 60.0 if timeout_s is None else timeout_s
    if not margin_c >= 0 or not timeout_s >= 0:
        raise UsageError(
            f"thermal_margin_c={margin_c} and thermal_timeout_s={timeout_s} must be 0 or more",
            hint="e.g. thermal_margin_c=10, thermal_timeout_s=60",
        )
    if handle is None:
        return {"margin_c": float(margin_c), "waited_s": 0.0, "timed_out": False, "skipped": "NVML is not available"}
    read, limit, source = slowdown_reader(handle)
    return wait_until_cool(read, limit, margin_c, timeout_s, source=source)
