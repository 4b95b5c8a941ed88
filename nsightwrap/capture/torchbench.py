"""``torch.utils.benchmark.Timer``: ``timeit``, ``blocked_autorange`` and ``adaptive_autorange``,
captured.

A Timer measures blocks: ``number`` runs of ``stmt`` between two calls of its timer, which (on a
CUDA machine, by default) synchronizes the device and reads the host clock. The layer wraps the
Timer's inner ``timeit.Timer`` for the duration of the user's call to see every block (the
block-size estimate, timeit's warm-up block, the measured blocks); the ``Measurement`` returned
is the user's number. Under nsys ``blocked_autorange``'s and ``adaptive_autorange``'s run times are
capped at ``--nsys-loop-ms`` (100 ms by default), and each measured block is the range ``<name>/iter<k>`` (pushed
after the block's start time is read, popped before its end time is read), the others
``warm<k>``; a measured block holds ``number`` calls (``method.calls_per_sample``).

Under ncu the Timer's loops are not run: ``stmt`` runs once to warm up, then ``--ncu-iters``
times, each alone in ``iter<k>`` (setup outside), and the call returns the plain pass's
``Measurement`` again (a placeholder, never reported as a timing).
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
from typing import Any

from nsightwrap.capture import gpuwindows, ranges
from nsightwrap.capture.state import Capture, Layer, guarded, layer, over_cap, patch, site_of

METHODS = ("timeit", "blocked_autorange", "adaptive_autorange")


class _Ctx:
    """One captured Timer call: the blocks it timed."""

    def __init__(self, L: Layer, cap: Capture | None, method: str) -> None:
        self.L = L
        self.cap = cap
        self.method = method
        self.estimating = False
        self.blocks: list[tuple[str, int, float]] = []  # (phase, number, seconds)
        self.measured = 0
        self.warm = 0
        #: Measured blocks' host times (monotonic ns), where the plain pass samples its clock.
        self.spans: list[tuple[int, int]] | None = None
        self.anchor: Any = None

    def phase(self) -> str:
        if self.estimating:
            return "estimate"
        if self.method == "timeit" and not self.blocks:
            return "warmup"  # Timer.timeit runs a warm-up block first
        return "measure"


class _RangeTimer:
    """The block timer with a range between its two readings (nsys and ncu passes)."""

    def __init__(self, timer: Any, name: str) -> None:
        self.timer = timer
        self.name = name
        self.pushed = 0
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        if self.calls == 1:
            t = self.timer()
            self.pushed = ranges.push((self.name,))
            return t  # type: ignore[no-any-return]
        ranges.pop(self.pushed)
        self.pushed = 0
        return self.timer()  # type: ignore[no-any-return]


class _InnerProxy:
    """Stands for the Timer's ``timeit.Timer`` during a captured call: sees every block."""

    def __init__(self, inner: Any, ctx: _Ctx) -> None:
        self._inner = inner
        self._ctx = ctx

    def timeit(self, number: int = 1000000) -> float:
        ctx, inner = self._ctx, self._inner
        phase = ctx.phase()
        if phase == "measure" and ctx.cap is not None and not any(b[0] == "measure" for b in ctx.blocks):
            ctx.cap.t_start = time.time()  # the measured blocks start here
        swap = None
        if ctx.L.ranges_on and ctx.cap is not None and hasattr(inner, "timer"):
            if phase == "measure":
                label, ctx.measured = f"iter{ctx.measured}", ctx.measured + 1
            else:
                label, ctx.warm = f"warm{ctx.warm}", ctx.warm + 1
            swap = inner.timer
            inner.timer = _RangeTimer(swap, label)
        spans = ctx.spans if phase == "measure" else None
        t0 = time.monotonic_ns() if spans is not None else 0
        try:
            t = inner.timeit(number)
            if spans is not None:
                # The block's timer synchronized before and after: its host span holds its work.
                spans.append((t0, time.monotonic_ns()))
        finally:
            if swap is not None:
                rt = inner.timer
                inner.timer = swap
                if getattr(rt, "pushed", 0):
                    ranges.pop(rt.pushed)
        ctx.blocks.append((phase, int(number), float(t)))
        return t  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _task_label(timer: Any) -> str | None:
    ts = getattr(timer, "_task_spec", None)
    parts = [str(p) for p in (getattr(ts, k, None) for k in ("label", "sub_label", "description")) if p]
    return " ".join(parts) or None


def _task_details(timer: Any) -> dict[str, Any]:
    ts = getattr(timer, "_task_spec", None)
    keys = ("label", "sub_label", "description", "env", "num_threads", "stmt", "setup")
    return {k: getattr(ts, k, None) for k in keys}


def _make(orig: Any, method: str) -> Any:
    api = f"torch.utils.benchmark.Timer.{method}"

    @functools.wraps(orig)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        L = layer()
        if L is None:
            return orig(self, *args, **kwargs)
        frame = sys._getframe(1)
        if L.is_internal(frame) or getattr(self, "_nw_ctx", None) is not None:
            return orig(self, *args, **kwargs)  # torch's own use, or a call inside a captured one
        site = site_of(frame)
        lang = str(getattr(self, "_language", "")).lower()
        if "cpp" in lang or not hasattr(self, "_timer"):
            L.skip(site, "torch_benchmark", f"{api}: a C++ statement (language=cpp) is not captured; run as is")
            return orig(self, *args, **kwargs)
        cap = None
        with guarded("torch_benchmark"):
            cap = L.begin("torch_benchmark", site, what=f"Timer.{method}", api=api, label=_task_label(self), frame=frame)
        if cap is None:
            return orig(self, *args, **kwargs)
        if L.under_ncu:
            return _ncu_iterations(L, cap, self)
        with guarded("torch_benchmark"):
            args, kwargs = _shorten(orig, method, self, args, kwargs, L.loop_cap_ms, cap)
        ctx = _Ctx(L, cap, method)
        torch = sys.modules.get("torch") if L.plain_clock else None
        if torch is not None:
            with guarded("torch_benchmark anchor"):
                # The Timer synchronizes before its first block anyway (capture/gpuwindows.py).
                ctx.anchor = gpuwindows.make_anchor(torch)
                ctx.spans = [] if ctx.anchor is not None else None
        inner = self._timer
        self._timer = _InnerProxy(inner, ctx)
        self._nw_ctx = ctx
        pushed = 0
        if L.ranges_on:
            with guarded("torch_benchmark"):
                pushed = ranges.push((cap.name,))
        try:
            m = orig(self, *args, **kwargs)
        except BaseException as exc:
            with guarded("torch_benchmark"):
                L.skip(site, "torch_benchmark", f"{api} raised {type(exc).__name__}: {exc} (call {cap.name!r} not captured)")
            raise
        finally:
            self._timer = inner
            self._nw_ctx = None
            if pushed:
                ranges.pop(pushed)
        with guarded("torch_benchmark"):
            _finish(L, cap, self, ctx, m)
        return m

    return wrapper


#: The run-time arguments (seconds) of the autorange methods, capped under nsys.
_LOOP_ARGS = {"blocked_autorange": ("min_run_time",), "adaptive_autorange": ("min_run_time", "max_run_time")}


def _shorten(orig: Any, method: str, timer: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
             cap_ms: float | None, cap: Capture) -> tuple[tuple[Any, ...], dict[str, Any]]:  # fmt: skip
    """Under nsys, the call's run-time arguments capped at ``cap_ms`` (``timeit``'s ``number`` is
    the user's: how long it runs is not known before it runs). The cap and the asked values go in
    ``method.nsys_loop_ms``."""
    names = _LOOP_ARGS.get(method)
    if cap_ms is None or not names:
        return args, kwargs
    import inspect

    b = inspect.signature(orig).bind(timer, *args, **kwargs)
    b.apply_defaults()
    seconds = {n: b.arguments.get(n) for n in names}
    short = over_cap({n: v * 1e3 for n, v in seconds.items() if isinstance(v, (int, float))}, cap_ms)
    if not short:
        return args, kwargs
    for n, (_, run_ms) in short.items():
        b.arguments[n] = run_ms / 1e3
    cap.method["nsys_loop_ms"] = short
    return tuple(b.args[1:]), dict(b.kwargs)


def _finish(L: Layer, cap: Capture, timer: Any, ctx: _Ctx, m: Any) -> None:
    number = int(getattr(m, "number_per_run", 1) or 1)
    raw = [float(t) for t in getattr(m, "raw_times", [])]
    cap.samples_ns = [t / number * 1e9 for t in raw]
    med = getattr(m, "median", None)
    cap.user_value_ns = float(med) * 1e9 if med is not None else (statistics.median(cap.samples_ns) if raw else None)
    cap.returned = {"number_per_run": number, "raw_times_s": raw, "median_s": med,
                    "mean_s": getattr(m, "mean", None), "title": getattr(m, "title", None)}  # fmt: skip
    measured = [b for b in ctx.blocks if b[0] == "measure"]
    tfn = getattr(timer._timer, "timer", None)
    default_timer = getattr(sys.modules.get("torch.utils.benchmark.utils.timer"), "timer", None)
    cap.method.update({
        "timing": "host_clock_sync" if tfn is default_timer else "host_clock_custom",
        "api": cap.api, "flush_l2": False, "flush": "none", "flush_bytes": 0, "cuda_graph": False,
        "hold_queue": False, "overhead_ns": 0.0, "calls_per_sample": number,
        # A block's `number` runs are queued between two synchronizing timer calls.
        "queued_before_sync": number, "number_per_run": number, "blocks": len(raw),
        "estimate_blocks": sum(1 for b in ctx.blocks if b[0] != "measure"),
        "blocks_seen": len(measured),
    })  # fmt: skip
    cap.details.update(_task_details(timer))
    cap.details["value"] = "Measurement.median (per run)"
    if ctx.anchor is not None and ctx.spans:
        cap.clock_windows = gpuwindows.host_windows(ctx.anchor, ctx.spans)
    L.finish(cap)


def _ncu_iterations(L: Layer, cap: Capture, timer: Any) -> Any:
    """Under ncu: stmt once, then ``--ncu-iters`` times each in ``iter<k>``; the placeholder."""
    inner = timer._timer
    inner.timeit(1)  # warm-up (and setup), outside every range
    outer = ranges.push((cap.name,))
    try:
        if hasattr(inner, "timer"):
            swap = inner.timer
            try:
                for i in range(L.ncu_iters):
                    inner.timer = _RangeTimer(swap, f"iter{i}")
                    inner.timeit(1)
            finally:
                inner.timer = swap
        else:
            for _ in range(L.ncu_iters):
                inner.timeit(1)
    finally:
        ranges.pop(outer)
    return _placeholder(L, cap.name, timer)


def _placeholder(L: Layer, name: str, timer: Any) -> Any:
    from torch.utils.benchmark.utils.common import Measurement

    entry = L.plain_value(name)
    got = entry.get("returned") if isinstance(entry, dict) else None
    number, raw = 1, [float("nan")]
    if isinstance(got, dict) and got.get("raw_times_s"):
        number = int(got.get("number_per_run") or 1)
        raw = [float(t) for t in got["raw_times_s"]]
    return Measurement(number_per_run=number, raw_times=raw, task_spec=timer._task_spec)


def patch_timer(mod: Any) -> None:
    """Patch ``torch.utils.benchmark.utils.timer.Timer`` (module just imported)."""
    L = layer()
    Timer = getattr(mod, "Timer", None)
    if L is None or Timer is None or getattr(Timer, "_nsightwrap_patched", False):
        return
    for method in METHODS:
        orig = getattr(Timer, method, None)
        if callable(orig):
            patch(Timer, method, _make(orig, method))
    est = getattr(Timer, "_estimate_block_size", None)
    if callable(est):

        @functools.wraps(est)
        def _estimate_block_size(self: Any, *a: Any, **k: Any) -> Any:
            ctx = getattr(self, "_nw_ctx", None)
            if ctx is None:
                return est(self, *a, **k)
            ctx.estimating = True
            try:
                return est(self, *a, **k)
            finally:
                ctx.estimating = False

        patch(Timer, "_estimate_block_size", _estimate_block_size)
    Timer._nsightwrap_patched = True
