"""Where the plain pass's timed windows lie on the GPU's timeline, so that its SM clock can be read.

After the plain pass, its clock run (``contract.PASS_PLAIN_CLOCK``) runs the script again under
nsys with GPU-metrics sampling and no CUDA trace (docs/profile.md, "The plain pass's own clock"):
nsys records the GPC clock and the NVTX ranges, never a kernel. To find the clock samples
taken inside a timing's own windows, each timing gets an *anchor*: on an idle device an NVTX range
``nsightwrap-anchor <pid>.<k>`` is pushed, a timing event recorded, the device synchronized and
the range popped. With nothing queued, the anchor event ran inside that range, so its GPU time is
the range's middle, within half the range's length (a few us, against the 50 us between two
samples at 20 kHz). Each window's start and end events are then read against it
(``anchor.elapsed_time(event)``: signed, in ms, on the GPU's own timer) and host-timed windows
against the monotonic clock read beside it. Nothing runs inside a timed window: the anchor is made
before the timing (``do_bench``) or when its windows are read (event pairs), and only while the
stream is idle.
"""

from __future__ import annotations

import os
import time
from typing import Any

from nsightwrap.core import contract

#: Windows kept per timing, evenly spread: at 20 kHz a 2 us window holds a sample once in 25
#: windows, so 4,000 windows still give about 160 samples; a 1 ms window holds 20 each.
MAX_WINDOWS = 4000
ANCHOR_PREFIX = "nsightwrap-anchor "

_count = 0


def enabled(pass_name: str | None) -> bool:
    """Whether this process is the plain pass's clock run (the script under nsys sampling the
    GPU's clock, after the plain pass: ``contract.PASS_PLAIN_CLOCK``)."""
    return pass_name == contract.PASS_PLAIN_CLOCK


class Anchor:
    """An event recorded on an idle device inside an NVTX range (module docstring)."""

    __slots__ = ("event", "id", "host_ns")

    def __init__(self, event: Any, ident: str, host_ns: int) -> None:
        self.event = event
        self.id = ident
        self.host_ns = host_ns

    def gpu_ns(self, ev: Any) -> float | None:
        """``ev``'s time after the anchor on the GPU's timer (ns; negative before it)."""
        try:
            return float(self.event.elapsed_time(ev)) * 1e6
        except Exception:  # noqa: BLE001 - an event never recorded, or of another device
            return None


def make_anchor(torch: Any, sync: bool = True) -> Anchor | None:
    """A new anchor (``sync``: synchronize the device first; without it the caller knows it is
    idle). None where CUDA or NVTX is not there."""
    global _count
    from nsightwrap.capture import ranges

    try:
        if sync:
            torch.cuda.synchronize()
        _count += 1
        ident = f"{os.getpid()}.{_count}"
        ev = torch.cuda.Event(enable_timing=True)
        pushed = ranges.push((ANCHOR_PREFIX + ident,))
        if not pushed:
            return None
        try:
            host_ns = time.monotonic_ns()
            ev.record()
            torch.cuda.synchronize()
        finally:
            ranges.pop(pushed)
        return Anchor(ev, ident, host_ns)
    except Exception:  # noqa: BLE001 - the clock is a measurement aid: never break the script
        return None


def spread(n: int, cap: int = MAX_WINDOWS) -> range | list[int]:
    """Indices of at most ``cap`` of ``n`` windows, evenly spread."""
    if n <= cap:
        return range(n)
    step = n / cap
    return [int(i * step) for i in range(cap)]


def gpu_windows(anchor: Anchor, pairs: list[tuple[Any, Any]]) -> dict[str, Any] | None:
    """The sidecar's ``clock_windows`` for event pairs: each pair's start and end against the
    anchor (ns on the GPU's timer, rounded to 10 ns), at most ``MAX_WINDOWS`` of them."""
    out: list[list[float]] = []
    for i in spread(len(pairs)):
        s, e = pairs[i]
        a, b = anchor.gpu_ns(s), anchor.gpu_ns(e)
        if a is None or b is None or b < a:
            continue
        out.append([round(a, -1), round(b, -1)])
    if not out:
        return None
    return {"anchor": anchor.id, "timebase": "gpu", "windows": len(pairs), "rel_ns": out}


def host_windows(anchor: Anchor, spans_ns: list[tuple[int, int]]) -> dict[str, Any] | None:
    """``clock_windows`` for host-timed windows (monotonic ns), against the anchor's host time."""
    out = [[float(s - anchor.host_ns), float(e - anchor.host_ns)] for s, e in spans_ns if e > s]
    if not out:
        return None
    return {"anchor": anchor.id, "timebase": "host", "windows": len(out), "rel_ns": out[:MAX_WINDOWS]}


class EventCollector:
    """Collects every ``torch.cuda.Event`` made while it is entered (``torch.cuda.Event`` is
    looked up by callers at call time, as ``triton.testing.do_bench`` does). Events are made
    before a timed loop, so collecting them costs nothing inside it."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.events: list[Any] = []
        self._orig: Any = None

    def __enter__(self) -> EventCollector:
        cuda = self.torch.cuda
        self._orig = orig = cuda.Event
        events = self.events

        def collecting(*a: Any, **k: Any) -> Any:
            ev = orig(*a, **k)
            events.append(ev)
            return ev

        collecting.__wrapped__ = orig  # type: ignore[attr-defined]
        cuda.Event = collecting
        return self

    def __exit__(self, *exc: Any) -> None:
        self.torch.cuda.Event = self._orig

    def timed_pairs(self, n: int) -> list[tuple[Any, Any]]:
        """do_bench's ``n`` timed repeats: the last ``2n`` events made, ``n`` starts then ``n`` ends."""
        if n <= 0 or len(self.events) < 2 * n:
            return []
        ev = self.events[-2 * n :]
        return list(zip(ev[:n], ev[n:], strict=True))


class WindowList:
    """Windows of a timing read one by one (event pairs): every one kept until ``2 * cap``, then
    every other one, and so on, so that the kept ones stay evenly spread over the whole loop."""

    def __init__(self, anchor: Anchor, timebase: str = "gpu", cap: int = MAX_WINDOWS) -> None:
        self.anchor = anchor
        self.timebase = timebase
        self.cap = cap
        self.rel: list[list[float]] = []
        self.stride = 1
        self.seen = 0

    def add(self, a: float | None, b: float | None) -> None:
        if a is None or b is None or b < a:
            return
        if self.seen % self.stride == 0:
            self.rel.append([round(a, -1), round(b, -1)])
            if len(self.rel) >= 2 * self.cap:
                self.rel = self.rel[::2]
                self.stride *= 2
        self.seen += 1

    def add_pair(self, start: Any, end: Any) -> None:
        """An event pair read by the script: both events have completed."""
        if self.seen % self.stride == 0:
            self.add(self.anchor.gpu_ns(start), self.anchor.gpu_ns(end))
        else:
            self.seen += 1

    def doc(self) -> dict[str, Any] | None:
        if not self.rel:
            return None
        return {"anchor": self.anchor.id, "timebase": self.timebase, "windows": self.seen, "rel_ns": list(self.rel)}


def idle_anchor(torch: Any) -> Anchor | None:
    """An anchor made only where the current stream has nothing queued (the script just read
    its events): the device synchronize inside then waits for nothing the script timed."""
    try:
        if not torch.cuda.current_stream().query():
            return None
    except Exception:  # noqa: BLE001
        return None
    return make_anchor(torch)
