"""What NVML readings are, apart from how they are taken: the clock and power traces, the
throttle reason bits, and what is computed from a trace (the clock of each timing sample, the
energy counter's steps, the power and energy inside a window).

The sampler (``nsightwrap.timer.nvml``) fills these; the power record
(``nsightwrap.timer.energy``) and the timing loop read them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

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
    equal to the period, as measured, docs/power.md); ``covered_s``: the time the steps cover.
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
