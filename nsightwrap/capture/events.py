"""``torch.cuda.Event`` pairs: every timed window a script opens with ``start.record()`` and reads
with ``start.elapsed_time(end)``.

A window opens at the ``record()`` of a timing event (``enable_timing=True``) and closes at the
next one on the same thread; pairs are confirmed by ``elapsed_time(start, end)``, which also
teaches which record site closes which (so nested windows are right from the second call of a
site on). In the nsys and ncu passes each window is the NVTX range ``<name>/iter<k>`` of domain
``nsightwrap``: pushed right after ``start.record()`` returns and popped right before
``end.record()``, so the window holds nothing else of the layer (the bookkeeping runs before
the start record and after the end record). Under ncu only the first ``--ncu-iters`` windows
of each call get a range, so ncu profiles those and lets the rest run.

Windows opened from library code (triton's ``do_bench``) go to the capture of that call
(``Sink``); windows opened inside a library call that is not a user timing (the autotuner's
``do_bench``) are ignored. Which windows form one *call* of a site (one benchmark): those of one
invocation of the function that records them, split again after a batch of two or more windows
has been read in full (a function that times several things in turn); docs/capture.md.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from nsightwrap.capture import ranges
from nsightwrap.capture.state import Capture, Layer, guarded, site_of
from nsightwrap.capture.state import unpatched as state_unpatched

#: Sink-stack entry: while it is on top, this thread's windows are not timings.
SUPPRESS = object()


class Window:
    """One timed window: opened by a start record, closed by the next record, read once."""

    __slots__ = ("sink", "index", "pushed", "rsite", "end_rsite", "read_ms", "closed", "tid", "data")

    def __init__(self, sink: Any, index: int, rsite: tuple[str, int]) -> None:
        self.sink = sink
        self.index = index
        self.pushed = 0
        self.rsite = rsite
        self.end_rsite: tuple[str, int] | None = None
        self.read_ms: float | None = None
        self.closed = False
        self.tid = threading.get_ident()
        self.data: Any = None


class Sink:
    """Where windows go: the captured timing they belong to names and keeps them."""

    def open(self, frame: Any) -> tuple[Window | None, tuple[str, ...]]:
        raise NotImplementedError

    def read(self, w: Window, ms: float) -> None:
        raise NotImplementedError


def sinks(L: Layer) -> list[Any]:
    s = getattr(L.local, "sinks", None)
    if s is None:
        s = L.local.sinks = []
    return s


def _open_stack(L: Layer) -> list[Window]:
    s = getattr(L.local, "windows", None)
    if s is None:
        s = L.local.windows = []
    return s


class _Mark:
    """Tags a frame as seen (Python < 3.12): a frame object made for a new invocation starts with
    no ``f_trace``, even where it reuses an old frame's memory (and id). Called only if a tracer
    is set later; it then leaves that frame untraced, as a frame without a local tracer is."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        return None


class _Invocations:
    """Which invocation of a function a frame belongs to. Python 3.12+ counts calls of the
    functions that record events (``sys.monitoring`` PY_START, on those code objects only);
    before 3.12, a mark in the frame's ``f_trace`` where no tracer is running, else the frame
    object's id (a new invocation can reuse it: docs/capture.md)."""

    def __init__(self) -> None:
        self.tool: int | None = None
        self.counts: dict[Any, int] = {}
        self.marks = 0
        mon = getattr(sys, "monitoring", None)
        if mon is None:
            return
        try:
            for tid in (4, 3):  # 0 debuggers, 1 coverage, 2 profilers and 5 optimizers are taken
                if mon.get_tool(tid) is None:
                    mon.use_tool_id(tid, "nsightwrap")
                    self.tool = tid
                    break
            if self.tool is not None:
                mon.register_callback(self.tool, mon.events.PY_START, self._started)
        except Exception:  # noqa: BLE001
            self.tool = None

    def _started(self, code: Any, offset: int) -> None:
        self.counts[code] = self.counts.get(code, 1) + 1

    def of(self, frame: Any) -> tuple[int, int]:
        code = frame.f_code
        if code.co_name == "<module>":
            return (id(code), 0)
        if self.tool is None:
            if sys.gettrace() is None:
                # A debugger or coverage keeps its own tracer in f_trace: leave it alone.
                if frame.f_trace is None:
                    self.marks += 1
                    frame.f_trace = _Mark(self.marks)
                if isinstance(frame.f_trace, _Mark):
                    return (id(code), -frame.f_trace.n)
            return (id(code), id(frame))
        if code not in self.counts:
            self.counts[code] = 1
            try:
                mon = sys.monitoring  # type: ignore[attr-defined]
                mon.set_local_events(self.tool, code, mon.events.PY_START)
            except Exception:  # noqa: BLE001
                pass
        return (id(code), self.counts[code])


class _EventCall:
    """One call of an event site: its windows, in order."""

    def __init__(self, cap: Capture | None, invocation: tuple[int, int]) -> None:
        self.cap = cap
        self.invocation = invocation
        self.windows: list[Window] = []
        self.opened_since_read = 0
        self.last_batch = 0
        self.max_batch = 0
        #: Where its windows lie on the GPU's timeline (plain pass with its clock sampled).
        self.clock: Any = None

    def batch_done(self) -> bool:
        return self.last_batch >= 2 and all(w.read_ms is not None for w in self.windows)


class EventSites(Sink):
    """Windows opened by the user's own code: one captured timing per call of a record site."""

    def __init__(self, L: Layer) -> None:
        self.L = L
        self.current: dict[str, _EventCall] = {}
        self.invocations = _Invocations()

    def open(self, frame: Any) -> tuple[Window | None, tuple[str, ...]]:
        L = self.L
        site = site_of(frame)
        inv = self.invocations.of(frame)
        cur = self.current.get(site.key)
        if cur is None or cur.invocation != inv or cur.batch_done():
            what = site.function if site.function not in ("<module>", "<lambda>") else "cuda_events"
            cap = L.begin("cuda_events", site, what=what, api="torch.cuda.Event", frame=frame)
            if cap is not None:
                cap.method.update({
                    "timing": "cuda_events", "api": "torch.cuda.Event", "flush": "unknown",
                    "calls_per_sample": 1, "overhead_ns": 0.0, "cuda_graph": False,
                })  # fmt: skip
            cur = self.current[site.key] = _EventCall(cap, inv)
        w = Window(self, len(cur.windows), (frame.f_code.co_filename, frame.f_lineno))
        w.data = cur
        cur.windows.append(w)
        cur.opened_since_read += 1
        cap = cur.cap
        if cap is None or not L.ranges_on or (L.under_ncu and w.index >= L.ncu_iters):
            return w, ()
        return w, (cap.name, f"iter{w.index}")

    def read(self, w: Window, ms: float) -> None:
        cur: _EventCall = w.data
        if cur.opened_since_read:
            cur.last_batch = 0
            cur.opened_since_read = 0
        cur.last_batch += 1
        cur.max_batch = max(cur.max_batch, cur.last_batch)
        cap = cur.cap
        if cap is None or not self.L.records:
            return
        import statistics

        cap.samples_ns = [x.read_ms * 1e6 for x in cur.windows if x.read_ms is not None]
        cap.user_value_ns = statistics.median(cap.samples_ns)
        cap.method["windows"] = len(cur.windows)
        cap.method["windows_read"] = len(cap.samples_ns)
        # Timed windows queued before the synchronize that let them be read (the most seen).
        cap.method["queued_before_sync"] = cur.max_batch
        cap.details["value"] = "median of the event samples"
        import time

        cap.t_end = time.time()
        cap.status = "ok"
        self.L.add(cap)
        self.L.flush()


def _place(cur: _EventCall, start: Any, end: Any) -> None:
    """Place a window just read on the GPU's timeline (capture/gpuwindows.py): against the
    timing's anchor, made at its first read that finds the stream idle."""
    from nsightwrap.capture import gpuwindows

    if cur.cap is None:
        return
    if cur.clock is None:
        torch = sys.modules.get("torch")
        anchor = gpuwindows.idle_anchor(torch) if torch is not None else None
        if anchor is None:
            return
        cur.clock = gpuwindows.WindowList(anchor)
    cur.clock.add_pair(start, end)
    cur.cap.clock_windows = cur.clock.doc()


_SITES: EventSites | None = None
_LEARNED: dict[tuple[str, int], tuple[str, int]] = {}  # start record site -> end record site


def _sites(L: Layer) -> EventSites:
    global _SITES
    if _SITES is None:
        _SITES = EventSites(L)
    return _SITES


def _capturing(torch: Any) -> bool:
    try:
        return bool(torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001
        return False


#: Set once a read shows two windows of one thread overlapping (nested timing): from then on a
#: record checks its site against the learned start sites before it is taken for a close.
_NESTING = False


def _closing(L: Layer, stack: list[Window], rsite: tuple[str, int] | None) -> list[Window]:
    """The windows a record at ``rsite`` closes: the innermost open one, or the one this site
    is known to close (and every window opened inside it)."""
    at = len(stack) - 1
    if rsite is not None:
        for i in range(len(stack) - 1, -1, -1):
            if _LEARNED.get(stack[i].rsite) == rsite:
                at = i
                break
    closed = stack[at:]
    del stack[at:]
    for w in closed:
        w.closed = True
    return closed


def _nested_open(stack: list[Window], rsite: tuple[str, int]) -> bool:
    return rsite in _LEARNED and _LEARNED.get(stack[-1].rsite) != rsite


def open_window(L: Layer, frame: Any) -> tuple[Window, tuple[str, ...]] | None:
    """Open a window at this record, if it is a timing the layer keeps: the window and the
    range names to push after the record."""
    sk = sinks(L)
    top_sink = sk[-1] if sk else None
    if top_sink is SUPPRESS:
        return None
    internal = L.is_internal(frame)
    if internal and not isinstance(top_sink, Sink):
        return None  # library code timing for itself (torch internals, an autotuner)
    torch = sys.modules.get("torch")
    if torch is not None and _capturing(torch):
        return None  # recorded into a CUDA graph: the window is not a host-side range
    sink = top_sink if internal and isinstance(top_sink, Sink) else _sites(L)
    w, names = sink.open(frame)
    if w is None:
        return None
    _open_stack(L).append(w)
    L.windows_opened += 1
    return w, names


#: ``torch.cuda.Event``, once patched (``bare_events``).
_EVENT: Any = None


def bare_events() -> Any:
    """A block in which ``torch.cuda.Event`` is torch's own (``state.unpatched``; it yields
    whether it is). The plain pass's ``do_bench`` runs triton's loop in one: the hooks are Python
    code on every event a call creates and records (about 4 ms of host time per 100 ms call,
    measured: docs/capture.md), and with them in, a 2 us kernel's do_bench landed in
    a faster mode than triton's own ever reaches."""
    from contextlib import nullcontext

    return state_unpatched(_EVENT) if _EVENT is not None else nullcontext(False)


def patch_event(Event: Any) -> None:
    """Patch ``torch.cuda.Event`` (record, elapsed_time; timing flag kept per event).

    The plain pass's close path (the ``end.record()`` of a window) does a thread-local lookup
    and nothing else before the real record; the rest runs after it."""
    if getattr(Event, "_nsightwrap_patched", False):
        return
    from nsightwrap.capture import state

    o_new = Event.__new__
    o_record = Event.record
    o_elapsed = Event.elapsed_time

    def __new__(cls: Any, *args: Any, **kwargs: Any) -> Any:
        obj = o_new(cls, *args, **kwargs)
        try:
            obj._nw_timing = bool(kwargs.get("enable_timing", args[0] if args else False))
        except Exception:  # noqa: BLE001 - an event without a __dict__: never a captured window
            pass
        return obj

    def record(self: Any, *args: Any, **kwargs: Any) -> Any:
        L = state._LAYER
        if L is None or not getattr(self, "_nw_timing", False):
            return o_record(self, *args, **kwargs)
        stack = getattr(L.local, "windows", None)
        if stack and not (_NESTING and _nested_open(stack, _rsite(sys._getframe(1)))):
            # Closes a window: under a profiler pop its ranges first; in the plain pass record
            # at once and keep the books after.
            closed = None
            if L.ranges_on:
                with guarded("event record"):
                    closed = _closing(L, stack, _rsite(sys._getframe(1)) if _NESTING else None)
                    ranges.pop(sum(w.pushed for w in closed))
            r = o_record(self, *args, **kwargs)
            with guarded("event record"):
                rsite = _rsite(sys._getframe(1))
                self._nw_rsite = rsite
                if closed is None:
                    closed = _closing(L, stack, rsite if _NESTING else None)
                if closed:
                    closed[0].end_rsite = rsite
                    self._nw_closes = closed[0]
            return r
        opened = None
        with guarded("event record"):
            frame = sys._getframe(1)
            opened = open_window(L, frame)
            if opened is not None:
                self._nw_window = opened[0]
                self._nw_rsite = opened[0].rsite
        r = o_record(self, *args, **kwargs)
        if opened is not None and opened[1]:
            with guarded("event record"):
                opened[0].pushed = ranges.push(opened[1])
        return r

    def elapsed_time(self: Any, end_event: Any) -> Any:
        global _NESTING
        ms = o_elapsed(self, end_event)
        if state._LAYER is not None:
            with guarded("event elapsed_time"):
                w = getattr(self, "_nw_window", None)
                s_site, e_site = getattr(self, "_nw_rsite", None), getattr(end_event, "_nw_rsite", None)
                if s_site is not None and e_site is not None:
                    _LEARNED[s_site] = e_site  # the record site that closes windows opened at s_site
                if w is None or getattr(end_event, "_nw_closes", None) is not w:
                    _NESTING = True  # the pair read is not a window the records formed: they nest
                if w is not None and w.read_ms is None:
                    w.read_ms = float(ms)
                    w.sink.read(w, float(ms))
                    if state._LAYER.plain_clock and isinstance(w.data, _EventCall):
                        _place(w.data, self, end_event)
        return ms

    state.patch(Event, "__new__", staticmethod(__new__))
    state.patch(Event, "record", record)
    state.patch(Event, "elapsed_time", elapsed_time)
    for f, o in ((record, o_record), (elapsed_time, o_elapsed)):
        f.__doc__, f.__name__ = o.__doc__, o.__name__
        f.__qualname__ = getattr(o, "__qualname__", o.__name__)
    Event._nsightwrap_patched = True
    global _EVENT
    _EVENT = Event


def _rsite(frame: Any) -> tuple[str, int]:
    return (frame.f_code.co_filename, frame.f_lineno)
