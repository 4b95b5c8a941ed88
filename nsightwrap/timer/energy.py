"""Energy per call: a window of back-to-back calls after the timed samples, and the ``power``
record of a benchmark (sidecar field; docs/power.md).

Why a window of its own: the timed samples are spaced by L2 flushes (2x the L2 written and read)
and GPU sleeps that hold the queue, which dominate the energy of a short kernel; and NVML's
energy counter moves in steps (every ~100 ms where measured, docs/power.md), so a window must
hold several steps. The energy
window calls ``fn`` back to back (no flush, no sleep) for ``energy_s`` seconds (default 1 s,
``NSIGHTWRAP_ENERGY_S`` to change it, 0 to turn it off) between two CUDA events. Power is the
counter's whole steps inside the window (``traces.counter_power``); energy per call is that power
times the GPU time per call in the window, and each step gives one sample of it, which is what
``compare`` judges. The timed loop's own power, peak power and temperature are kept beside it
(``timed``).

Times here are host seconds (``time.perf_counter``), energies J, powers W, temperatures C.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from nsightwrap.timer.traces import (
    THROTTLE_MASK,
    ClockTrace,
    PowerTrace,
    counter_power,
    counter_resolution,
    counter_steps,
    energy_between,
    reason_names,
)

#: Default length of the energy window (s): about 8 whole steps of a counter that moves every
#: 100 ms (docs/power.md).
ENERGY_S = 1.0
#: Environment variable that sets the default (``0`` turns the window off).
ENV_ENERGY_S = "NSIGHTWRAP_ENERGY_S"


def default_energy_s() -> float:
    """``NSIGHTWRAP_ENERGY_S`` when set to a number, else ``ENERGY_S``."""
    raw = os.environ.get(ENV_ENERGY_S, "").strip()
    try:
        return max(0.0, float(raw)) if raw else ENERGY_S
    except ValueError:
        return ENERGY_S


def energy_window(
    gpu: Any,
    runner: Callable[[], Any],
    calls_per_run: int,
    per_call_ns: float,
    energy_s: float | None = None,
) -> dict[str, Any] | None:
    """Run ``runner`` back to back for about ``energy_s`` seconds (None: ``default_energy_s()``)
    while the sampler reads the energy counter; the window's host times (from CUDA events), its
    calls and GPU time per call, which ``power_record`` takes as ``windows["steady"]``. None when
    the window is off."""
    seconds = default_energy_s() if energy_s is None else energy_s
    if not seconds or seconds <= 0:
        return None
    torch = gpu.torch
    k = max(calls_per_run, 1)
    run_ns = max(float(per_call_ns) * k, 1.0)
    runs = max(1, int(round(seconds * 1e9 / run_ns)))
    start, end, ref = gpu.event(), gpu.event(), gpu.event()
    torch.cuda.synchronize()
    t_host = time.perf_counter()
    # The GPU is idle here, so the reference event runs at (almost) this host time; the window's
    # ends map to host time through it, as the timed samples' windows do.
    ref.record()
    start.record()
    for _ in range(runs):
        runner()
    end.record()
    end.synchronize()
    return {
        "bounds_s": [t_host + ref.elapsed_time(start) / 1e3, t_host + ref.elapsed_time(end) / 1e3],
        "calls": runs * k,
        "gpu_ns_per_call": float(start.elapsed_time(end)) * 1e6 / (runs * k),
        "requested_s": seconds,
    }


def _finite(a: np.ndarray) -> np.ndarray:
    return a[np.isfinite(a)]


def _opt(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else float(v)


def window_stats(power: PowerTrace, t0: float, t1: float) -> dict[str, Any]:
    """Power and temperature over the host-time window ``[t0, t1]``: mean power from the energy
    counter's whole steps (``mean_w``, None for a window under ~2 counter periods) and from the
    power readings (``sampled_mean_w``), peak power, start and peak temperature. Readings are
    taken one counter lag late (NVML reports each period about one period after it)."""
    duration = max(t1 - t0, 0.0)
    cp = counter_power(power, t0, t1)
    _, every = counter_resolution(power)
    lag = cp.lag_s if cp else (every or 0.0)
    t = power.time_s
    inside = (t >= t0 + lag) & (t <= t1 + lag)
    if not inside.any() and len(power):  # a window shorter than the reading interval
        inside = np.zeros(len(power), dtype=bool)
        inside[int(np.argmin(np.abs(t - (0.5 * (t0 + t1) + lag))))] = True
    w = _finite(power.power_w[inside])
    # Temperature is read every 50 ms and moves slowly: the readings from just before count too.
    c = _finite(power.temp_c[(t >= t0 - 0.06) & (t <= t1 + lag)])
    return {
        "duration_s": duration,
        "mean_w": cp.mean_w if cp else None,
        "step_w": list(cp.step_w) if cp else [],
        "covered_s": cp.covered_s if cp else 0.0,
        "sampled_mean_w": float(w.mean()) if w.size else None,
        "peak_w": float(w.max()) if w.size else None,
        "start_temp_c": float(c[0]) if c.size else None,
        "peak_temp_c": float(c.max()) if c.size else None,
        "readings": int(inside.sum()),
    }


def _reasons(clock: ClockTrace, t0: float, t1: float) -> tuple[str, ...]:
    if len(clock) == 0:
        return ()
    inside = (clock.time_s >= t0) & (clock.time_s <= t1)
    bits = int(np.bitwise_or.reduce(clock.reasons[inside].astype(np.int64))) if inside.any() else 0
    return reason_names(bits & THROTTLE_MASK)


def _local(perf_s: float) -> str:
    """A perf_counter time as local wall-clock time in nvidia-smi's timestamp form, so that the
    analysis can place a benchmark on the plain pass's nvidia-smi timeline."""
    wall = time.time() - time.perf_counter() + perf_s
    ms = int(round((wall % 1) * 1000)) % 1000
    return time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(int(wall))) + f".{ms:03d}"


def power_record(
    clock: ClockTrace,
    power: PowerTrace,
    timed_windows: Sequence[tuple[float, float]],
    windows: Mapping[str, Any],
) -> dict[str, Any] | None:
    """The ``power`` sidecar record of one benchmark, or None when NVML read no power at all."""
    if len(power) == 0 or (
        not np.isfinite(power.power_w).any() and not np.isfinite(power.energy_j).any()
    ):
        return None
    step, every = counter_resolution(power)
    has_counter = counter_steps(power)[0].size >= 3
    rec: dict[str, Any] = {
        "source": "nvml",
        "power_kind": power.power_kind,
        "energy_source": "counter" if has_counter else "power_integral",
        "counter_step_j": step,
        "counter_update_s": every,
        "counter_lag_s": every,
    }
    spans: list[tuple[float, float]] = []
    if timed_windows:
        t0, t1 = timed_windows[0][0], timed_windows[-1][1]
        w = window_stats(power, t0, t1)
        # Over the timed loop (flushes and queue holds included): energy only from whole steps.
        w["energy_j"] = w["mean_w"] * w["duration_s"] if w["mean_w"] is not None else None
        rec["timed"] = {**w, "samples": len(timed_windows)}
        spans.append((t0, t1))
    steady = windows.get("steady")
    if steady:
        a, b = steady["bounds_s"]
        calls, ns = int(steady["calls"]), float(steady["gpu_ns_per_call"])
        w = window_stats(power, a, b)
        if w["mean_w"] is None and not has_counter:  # no counter (pre-Volta): integrate power
            e = energy_between(power, a, b, lag_s=every or 0.0)
            w["mean_w"] = e / (b - a) if e is not None and b > a else None
        per_call = w["mean_w"] * ns * 1e-9 if w["mean_w"] is not None else None
        rec["steady"] = {
            **w,
            "calls": calls,
            "gpu_ns_per_call": ns,
            "requested_s": steady.get("requested_s"),
            "energy_per_call_j": per_call,
            "energy_j": per_call * calls if per_call is not None else None,
            # One sample per whole counter step inside the window: what compare's statistics judge.
            "energy_samples_j": [v * ns * 1e-9 for v in w["step_w"]],
        }
        if per_call is None:
            rec["steady"]["why_no_energy"] = (
                f"the {b - a:.2f} s window holds no whole step of the energy counter (one per "
                f"{(every or 0):.2f} s, reported one step late): make energy_s longer"
            )
        spans.append((a, b))
    if spans:
        lo, hi = min(x for x, _ in spans), max(y for _, y in spans)
        rec["throttle_reasons"] = list(_reasons(clock, lo, hi))
        rec["start_local"], rec["end_local"] = _local(lo), _local(hi)
    return rec
