"""The ``missed_work`` part: work launched inside the window on another stream that ended
after the end event (negative: the timing misses it)."""

from __future__ import annotations

from nsightwrap.analysis.gap.common import part, us
from nsightwrap.analysis.gap.loop import Loop
from nsightwrap.analysis.model import GapPart


def fix(bench: bool) -> str:
    """How to make the timing wait for the side streams."""
    if bench:
        return "join the side streams before fn returns (torch.cuda.current_stream().wait_stream(side))"
    return "join the side streams before recording the end event (torch.cuda.current_stream().wait_stream(side))"


def measure(lp: Loop) -> tuple[GapPart | None, bool, list[str]]:
    """The missed side work (None where none ran past the timing stream), whether the window
    missed it, and details kept with the decomposition."""
    tl, inp = lp.tl, lp.inp
    if tl is None or tl.side_tail_ns <= 0:
        return None, False, []
    t_pass = inp.nsys_timer_ns if inp.nsys_timer_ns is not None else lp.t
    joined = tl.window_joined_ns / lp.calls - lp.ov
    unjoined = tl.window_unjoined_ns / lp.calls - lp.ov
    if tl.joined_share is not None:
        # The export has the event calls: a stream wait between the last launch and the end
        # event's record means the side streams were joined back before the end event.
        missed = tl.joined_share < 0.5
        rule = f"a stream wait before the end event in {tl.joined_share:.0%} of the iterations"
    else:
        missed = abs(t_pass - unjoined) < abs(t_pass - joined)
        rule = "the timing is closer to the window that does not wait" if missed else "the timing is closer to the joined window"
    side = tl.side_tail_ns / lp.calls
    if not missed:
        return None, False, [
            f"work on other streams ran {us(side)} past the timing stream's last op and the timing waited for it (joined back)"
        ]
    ev = {"side_work_after_timing_stream_ns": side, "window_if_joined_ns": joined,
          "window_if_not_joined_ns": unjoined, "timing_ns": t_pass,
          "timing_from": "nsys pass" if inp.nsys_timer_ns is not None else "plain pass", "joined_by": rule}  # fmt: skip
    msg = (
        f"your timing misses {us(side)}: work launched inside the window on another stream ended after the "
        f"end event, and nothing joined it back ({rule})"
    )
    return part("missed_work", -side, ev, msg, fix(lp.kind == "nsightwrap_bench")), True, []
