"""Whose clock change is it: the code's or the environment's.

A benchmark whose time moved while its cycles (its time carried to the baseline's SM clock) did
not moved because the SM clock moved. That excuses the code only when the clock change was not
the code's doing. The GPU lowers its clock when the code draws more power than its cap allows:
new code that takes more energy per call at the power cap (``sw_power_cap``) slows itself down,
and that is a regression, with the clock as its mechanism. The clock change is the
environment's when the side with the lower clock drew the same or less energy per call (another
tenant, a lowered power limit, a hotter GPU), was held down for heat (a thermal or hardware
slowdown reason), or ran on another GPU. Without a power record neither can be shown.

Pure functions on the ``Samples`` of both sides and the benchmark's energy verdict; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from nsightwrap.compare.energy import Energy, EnergyVerdict
from nsightwrap.compare.stats import Settings, pct_change


class Samples(Protocol):
    """What the clock's cause is read from on each side (``compare.verdicts.Samples`` has it)."""

    @property
    def clock_hz(self) -> float | None: ...

    @property
    def power_w(self) -> float | None: ...

    @property
    def throttle_reasons(self) -> tuple[str, ...] | None: ...

    @property
    def gpu_uuid(self) -> str | None: ...

#: NVML clock event reasons (the timer's short names and nvidia-smi's long ones) that mean the
#: GPU held its clock down to stay under its power limit.
POWER_REASONS = frozenset({"sw_power_cap", "hw_power_brake", "hw_power_brake_slowdown"})
#: Reasons that come from outside the code's own power draw: heat, or the board's slowdown signal.
THERMAL_REASONS = frozenset(
    {"sw_thermal", "hw_thermal", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown"}
)


class Cause(str, Enum):
    """Who moved the SM clock between the two sides."""

    CODE = "code"  # the side with the lower clock drew more power into a power cap
    ENVIRONMENT = "environment"  # heat, another tenant, a lower power limit, another GPU
    UNKNOWN = "unknown"  # nothing recorded tells the two apart


@dataclass(frozen=True)
class ClockCause:
    """The cause of a clock change and the evidence it rests on (one clause, for messages)."""

    cause: Cause
    evidence: str


def clock_cause(
    base: Samples, cur: Samples, energy: EnergyVerdict | None, settings: Settings
) -> ClockCause:
    """Whose is the change of SM clock between ``base`` and ``cur`` (both clocks known)?"""
    if base.gpu_uuid and cur.gpu_uuid and base.gpu_uuid.lower() != cur.gpu_uuid.lower():
        return ClockCause(Cause.ENVIRONMENT, f"another GPU ({base.gpu_uuid} -> {cur.gpu_uuid})")
    cur_lower = (cur.clock_hz or 0.0) < (base.clock_hz or 0.0)
    low, high = (cur, base) if cur_lower else (base, cur)
    low_side = "current" if cur_lower else "baseline"
    # Energy per call of the lower-clock side against the other's: MORE on that side is the
    # current side's MORE when the current clock is the lower one, LESS when it is the baseline's.
    low_more = energy is not None and energy.verdict is (Energy.MORE if cur_lower else Energy.LESS)
    low_not_more = energy is not None and energy.verdict in (
        (Energy.SAME, Energy.LESS) if cur_lower else (Energy.SAME, Energy.MORE)
    )
    power_up = (
        low.power_w is not None and high.power_w is not None and low.power_w > high.power_w * (1 + settings.threshold)
    )
    reasons = set(low.throttle_reasons or ())
    # The energy change is always current against baseline, whichever side had the lower clock.
    change = f" {pct_change(energy.ratio.estimate)}" if energy is not None and energy.ratio else ""
    capped = sorted(reasons & POWER_REASONS)
    if capped and (low_more or power_up):
        drew = f"energy per call{change}" if low_more else f"mean power {_w(base.power_w)} -> {_w(cur.power_w)}"
        return ClockCause(
            Cause.CODE,
            f"the {low_side} run was at its power cap ({', '.join(capped)}) with {drew}",
        )
    if low_more or power_up:
        return ClockCause(
            Cause.UNKNOWN, f"the {low_side} run drew more power (energy per call{change}) but no power cap was recorded"
        )
    hot = sorted(reasons & THERMAL_REASONS)
    if hot:
        return ClockCause(Cause.ENVIRONMENT, f"the {low_side} run was held down for heat ({', '.join(hot)})")
    if low_not_more:
        return ClockCause(
            Cause.ENVIRONMENT,
            f"energy per call{change} ({energy.verdict.value if energy else '?'}): the {low_side} run drew no more "
            "power, so its own draw did not lower its clock",
        )
    if energy is None:
        return ClockCause(Cause.UNKNOWN, "no energy per call recorded on both sides")
    return ClockCause(Cause.UNKNOWN, f"energy per call {energy.verdict.value} ({energy.reason.value})")


def _w(w: float | None) -> str:
    return "?" if w is None else f"{w:.0f} W"
