"""Energy per call, baseline vs current: a verdict of its own beside the time verdict.

The samples are the timer's energy per call of each block of its energy window (``power``
records; docs/power.md), and the statistics are those of the time verdicts
(``compare.stats``): Mann-Whitney U at ``alpha``, a bootstrap interval of the ratio of
medians against ``threshold``. There is no cycles check: energy does not scale out with the
clock the way time does (a lower clock usually costs less energy per call), so a clock change is
named in the message, not subtracted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from nsightwrap.compare.stats import (
    Interval,
    Reason,
    Settings,
    Spread,
    Verdict,
    ci_text,
    direction,
    mann_whitney_u,
    median_ratio,
    spread,
)


class Energy(str, Enum):
    """What happened to one benchmark's energy per call: its own words in every format (more
    energy is the regression, so these are not the time verdict's SLOWER / FASTER)."""

    SAME = "SAME"
    LESS = "LESS"
    MORE = "MORE"
    AMBIGUOUS = "AMBIGUOUS"


#: The time statistics' direction in energy's words.
_ENERGY_OF = {Verdict.SAME: Energy.SAME, Verdict.FASTER: Energy.LESS, Verdict.SLOWER: Energy.MORE,
              Verdict.AMBIGUOUS: Energy.AMBIGUOUS}  # fmt: skip

@dataclass(frozen=True)
class EnergyVerdict:
    """The energy verdict on one benchmark: spreads in J per call, ratio current / baseline."""

    key: str
    verdict: Energy
    reason: Reason
    message: str
    baseline: Spread
    current: Spread
    ratio: Interval | None
    p_value: float | None


def energy_samples(power: Any) -> tuple[float, ...] | None:
    """Energy per call per block (J) from a sidecar ``power`` record or a report's ``power``
    block; None when there are none."""
    if not isinstance(power, Mapping):
        return None
    raw = power.get("energy_samples_j")
    if raw is None and isinstance(power.get("steady"), Mapping):
        raw = power["steady"].get("energy_samples_j")
    if not isinstance(raw, list | tuple):
        return None
    vals = tuple(float(v) for v in raw if isinstance(v, int | float) and not isinstance(v, bool) and v > 0)
    return vals or None


def judge_energy(
    key: str, base: Sequence[float], cur: Sequence[float], settings: Settings | None = None
) -> EnergyVerdict:
    """MORE energy per call, LESS, SAME or AMBIGUOUS, with a reason code."""
    s = settings or Settings()
    sb, sc = spread(base), spread(cur)
    if min(sb.n, sc.n) < s.min_samples:
        msg = f"{sb.n} baseline and {sc.n} current energy samples; at least {s.min_samples} a side are needed"
        return EnergyVerdict(key, Energy.AMBIGUOUS, Reason.TOO_FEW_SAMPLES, msg, sb, sc, None, None)
    ratio = median_ratio(base, cur, s)
    p = mann_whitney_u(cur, base).p_value
    verdict, reason = direction(ratio, p, s)
    thr = f"{s.threshold * 100:g}%"
    head = f"energy/call {ci_text(ratio)}, p={p:.2g}"
    if verdict is Verdict.SLOWER:
        msg = f"more energy per call: {head}"
    elif verdict is Verdict.FASTER:
        msg = f"less energy per call: {head}"
    elif reason is Reason.WITHIN_THRESHOLD:
        msg = f"{head}: within the {thr} threshold"
    elif reason is Reason.NOISY:
        msg = f"{head}: the {s.confidence:.0%} interval is wider than the {thr} threshold"
    else:
        msg = f"{head}: past the {thr} threshold but not significant (alpha {s.alpha:g})"
    return EnergyVerdict(key, _ENERGY_OF[verdict], reason, msg, sb, sc, ratio, p)
