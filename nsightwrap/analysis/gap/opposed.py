"""Parts that cancel: a part larger than the whole gap plus ``RESIDUAL_BOUND`` of the timing is
offset by measured parts of the other sign (a faster clock against a dirty flush, a warm L2
against the host's launch gaps). Each is real; the timing's closeness to ncu is their sum, and
the user is told so in one note instead of reading a small gap as "nothing happened"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from nsightwrap.analysis.gap.common import us
from nsightwrap.analysis.gap.verdict import RESIDUAL_BOUND
from nsightwrap.analysis.model import GapPart


class Opposed(NamedTuple):
    """The parts over the bound, the parts of the other sign that offset them, and the note."""

    over: tuple[str, ...]
    against: tuple[str, ...]
    note: str | None


def _name(cause: str) -> str:
    return cause.replace("_", " ")


def find(parts: Sequence[GapPart], total_ns: float, timer_ns: float, streams: int) -> Opposed:
    """The parts larger than ``|total| + RESIDUAL_BOUND * timer`` and what offsets them.

    Concurrent ops on several streams make ``overlap`` and ``gaps`` cancel by construction (ncu
    serializes what ran side by side): that pair is the one case not called out."""
    limit = abs(total_ns) + RESIDUAL_BOUND * timer_ns
    over = [p for p in parts if abs(p.ns) > limit and not (p.cause in ("overlap", "gaps") and streams > 1)]
    if not over:
        return Opposed((), (), None)
    lead = max(over, key=lambda p: abs(p.ns))
    sign = 1.0 if lead.ns > 0 else -1.0
    big = [p for p in over if p.ns * sign > 0]
    other = [p for p in parts if p.ns * sign < 0]
    offset = -sum(p.ns for p in other) * sign
    # Worth a word only where the parts hide at least the share of the timing the residual may
    # hold: a part a few ns over the bound against a part of a few ns is not a cancellation.
    if min(abs(sum(p.ns for p in big)), offset) < RESIDUAL_BOUND * timer_ns:
        return Opposed(tuple(p.cause for p in over), (), None)
    against = [p for p in other if abs(p.ns) >= 0.1 * offset]
    one = " and ".join(f"{_name(p.cause)} {us(p.ns)}" for p in big)
    them = ", ".join(f"{_name(p.cause)} {us(p.ns)}" for p in against)
    note = (
        f"parts of opposite sign: {one} against {them}; the gap ({us(total_ns)}) is what is left of them. "
        "Each is measured on its own, so a change to one moves the timing by its size"
    )
    return Opposed(tuple(p.cause for p in over), tuple(p.cause for p in against), note)
