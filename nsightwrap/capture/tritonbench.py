"""``triton.testing.do_bench`` and ``do_bench_cudagraph``, captured.

Plain and nsys passes: the user's call runs triton's own function, unchanged (under nsys with
``warmup`` and ``rep`` capped at ``--nsys-loop-ms``, 100 ms by default); the layer sees the
event windows it opens (``events.Sink``): the first is triton's runtime estimate (5 calls), the
rest are the timed repeats, all queued before one synchronize (do_bench, each after a zeroing
L2 flush) or one graph replay of ``n_repeat`` calls each (do_bench_cudagraph). Under nsys the
call is the range ``<name>`` with ``estimate`` and ``iter<k>`` inside.

ncu pass: triton's function is not run (its hundreds of repeats would each be replayed by ncu).
The layer calls ``fn`` once to warm up, then ``--ncu-iters`` times, each alone in ``iter<k>``
(do_bench's flush before it, outside the range), and returns what the same call returned in the
plain pass: a placeholder that is never reported as a timing.

Calls from triton itself (the autotuner's benchmarker) are not user timings: they run as they
are, and their event windows are ignored.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import statistics
import sys
from typing import Any

from nsightwrap.capture import gpuwindows, ranges
from nsightwrap.capture.events import SUPPRESS, Sink, Window, bare_events, sinks
from nsightwrap.capture.naming import param_value
from nsightwrap.capture.state import Capture, Layer, guarded, layer, over_cap, patch, site_of

RETURN_MODES = ("min", "max", "mean", "median", "all")


class _BenchWindows(Sink):
    """The event windows of one do_bench call: window 0 the estimate, then the repeats."""

    def __init__(self, cap: Capture, L: Layer) -> None:
        self.cap = cap
        self.L = L
        self.windows: list[Window] = []
        self.estimate_read_alone = False
        self.queued = 0  # repeats opened before the first of them was read
        self.first_read = False
        self.calls = 0  # calls of fn (do_bench_cudagraph: counted to know n_repeat)
        self.calls_at: dict[int, int] = {}

    def open(self, frame: Any) -> tuple[Window | None, tuple[str, ...]]:
        w = Window(self, len(self.windows), (frame.f_code.co_filename, frame.f_lineno))
        self.windows.append(w)
        if w.index == 1:  # the timed repeats start here (after compilation, warm-up, estimate)
            import time

            self.cap.t_start = time.time()
        self.calls_at[w.index] = self.calls
        if w.index > 0 and not self.first_read:
            self.queued += 1
        if not self.L.ranges_on:
            return w, ()
        return w, ("estimate",) if w.index == 0 else (f"iter{w.index - 1}",)

    def read(self, w: Window, ms: float) -> None:
        if w.index == 0 and len(self.windows) == 1:
            self.estimate_read_alone = True
        if w.index > 0:
            self.first_read = True

    def samples_ms(self) -> list[float]:
        timed = self.windows[1:] if self.estimate_read_alone and len(self.windows) > 1 else self.windows
        return [w.read_ms for w in timed if w.read_ms is not None]


def _bind(sig: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    b = sig.bind(*args, **kwargs)
    b.apply_defaults()
    p = dict(b.arguments)
    if "fn" in p and not callable(p["fn"]):
        raise TypeError("fn is not callable")
    mode = p.get("return_mode", "mean")
    if mode not in RETURN_MODES:
        raise ValueError(f"return_mode {mode!r} is not one of {', '.join(RETURN_MODES)}")
    q = p.get("quantiles")
    if q is not None:
        q = [float(x) for x in q]
        if not q or not all(0 <= x <= 1 for x in q):
            raise ValueError(f"quantiles {p.get('quantiles')!r} are not in [0, 1]")
        p["quantiles"] = q
    return p


def user_value_ms(ret: Any, mode: str, quantiles: list[float] | None) -> float | None:
    """The single number a do_bench result stands for: the value of ``return_mode``; of
    ``quantiles`` the one nearest the median; of ``all`` the median of the list."""
    try:
        if quantiles is not None:
            vals = [float(x) for x in (ret if isinstance(ret, (list, tuple)) else [ret])]
            best = min(range(len(quantiles)), key=lambda i: abs(quantiles[i] - 0.5))
            return vals[best] if best < len(vals) else vals[0]
        if mode == "all":
            vals = [float(x) for x in ret]
            return statistics.median(vals) if vals else None
        return float(ret)
    except (TypeError, ValueError, IndexError):
        return None


@functools.lru_cache(maxsize=1)
def _flush_facts_cached() -> tuple[tuple[str, Any], ...]:
    return tuple(_read_flush_facts().items())


def _flush_facts() -> dict[str, Any]:
    return dict(_flush_facts_cached())


def _read_flush_facts() -> dict[str, Any]:
    """What triton's clear_cache does on this driver (read from its source, not assumed)."""
    facts: dict[str, Any] = {"flush_l2": True, "flush": "unknown", "flush_bytes": None}
    try:
        from triton.runtime import driver  # already imported by the script

        drv = driver.active
        src = inspect.getsource(type(drv).clear_cache)
        facts["flush"] = "zero" if ".zero_()" in src else ("memset" if "memset" in src else "unknown")
        src = inspect.getsource(type(drv).get_empty_cache_for_benchmark)
        if "256 * 1024 * 1024" in src:
            facts["flush_bytes"] = 256 * 1024 * 1024
    except Exception:  # noqa: BLE001 - the facts stay unknown
        pass
    return facts


def make_wrapper(orig: Any, kind: str) -> Any:
    """The patched ``do_bench`` (kind ``do_bench``) or ``do_bench_cudagraph``."""
    sig = inspect.signature(orig)
    api = f"triton.testing.{orig.__name__}"

    @functools.wraps(orig)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        L = layer()
        if L is None:
            return orig(*args, **kwargs)
        frame = sys._getframe(1)
        if L.is_internal(frame):
            # The autotuner (or another library) benchmarking for itself: not a user timing.
            sk = sinks(L)
            sk.append(SUPPRESS)
            try:
                return orig(*args, **kwargs)
            finally:
                sk.pop()
        site = site_of(frame)
        try:
            p = _bind(sig, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - the user's call, as they wrote it, is run as is
            L.skip(site, kind, f"{api}: arguments not understood ({type(exc).__name__}: {exc}); run as is")
            return orig(*args, **kwargs)
        cap = None
        with guarded(kind):
            cap = L.begin(kind, site, what=kind, api=api, frame=frame)
        if cap is None:
            return orig(*args, **kwargs)
        if L.under_ncu:
            return _ncu_iterations(L, cap, p, kind)
        summarize = getattr(orig, "__globals__", {}).get("_summarize_statistics")
        if kind == "do_bench" and not L.ranges_on and callable(summarize):
            return _plain(L, cap, p, orig, summarize)
        return _measured(L, cap, p, kind, orig, args, kwargs)

    wrapper.__nsightwrap_original__ = orig  # type: ignore[attr-defined]
    return wrapper


#: The loop-length arguments of each kind, in ms, and their defaults.
_LOOP_ARGS = {"do_bench": (("warmup", 25.0), ("rep", 100.0)), "do_bench_cudagraph": (("rep", 20.0),)}


def shortened_loop(p: dict[str, Any], kind: str, cap_ms: float | None) -> dict[str, list[float]]:
    """Under nsys, the loop-length arguments (ms) that go over ``cap_ms``, each ``[asked, run]``;
    empty where nothing is shortened. The nsys pass's use of a loop is its iterations (kernels,
    gaps, clock), not its length (docs/capture.md, "Shorter loops under nsys")."""
    return over_cap({name: p.get(name, default) for name, default in _LOOP_ARGS.get(kind, ())}, cap_ms)


def _measured(L: Layer, cap: Capture, p: dict[str, Any], kind: str, orig: Any, args: Any, kwargs: Any) -> Any:
    sink = _BenchWindows(cap, L)
    fn = p["fn"]
    short = shortened_loop(p, kind, L.loop_cap_ms)
    if short:
        # The call made with every argument named (the user's, bound to triton's signature), the
        # loop's length capped: what it computes and returns is otherwise the user's call.
        args, kwargs = (), {**p, **{k: v[1] for k, v in short.items()}}
        cap.method["nsys_loop_ms"] = short
    if kind == "do_bench_cudagraph":
        # Count fn's calls: those made between the estimate and the first replay are the calls
        # captured in the graph (n_repeat).
        def counted(*a: Any, **k: Any) -> Any:
            sink.calls += 1
            return fn(*a, **k)

        args, kwargs = _with_fn(orig, args, kwargs, counted)
    pushed = 0
    if L.ranges_on:
        with guarded(kind):
            pushed = ranges.push((cap.name,))
    sk = sinks(L)
    sk.append(sink)
    try:
        ret = orig(*args, **kwargs)
    except BaseException as exc:
        with guarded(kind):
            L.skip(cap.site, kind, f"{cap.api} raised {type(exc).__name__}: {exc} (call {cap.name!r} not captured)")
        raise
    finally:
        sk.pop()
        if pushed:
            ranges.pop(pushed)
    with guarded(kind):
        _finish(L, cap, p, kind, sink, ret)
    return ret


def _plain(L: Layer, cap: Capture, p: dict[str, Any], orig: Any, summarize: Any) -> Any:
    """The plain pass's do_bench: triton's own loop with ``return_mode="all"``, then triton's own
    ``_summarize_statistics`` with the user's ``quantiles`` and ``return_mode``, so the user gets
    exactly what triton returns, and the layer keeps no books inside the timed loop: the loop runs
    with torch's own ``Event`` (``events.bare_events``), or, where another thread could be
    recording events meanwhile, with the layer's event hook on its suppressed path (an earlier
    hook that captured every repeat put a few microseconds of host work into each and changed how
    deep the queue ran)."""
    sk = sinks(L)
    sk.append(SUPPRESS)
    torch = sys.modules.get("torch") if L.plain_clock else None
    anchor = None
    if torch is not None:
        with guarded("do_bench anchor"):
            # do_bench synchronizes after its first call anyway: an anchor on the idle device
            # before it costs the timing nothing (capture/gpuwindows.py).
            anchor = gpuwindows.make_anchor(torch)
    collector = gpuwindows.EventCollector(torch) if anchor is not None else None
    try:
        with bare_events() as bare, (collector if collector is not None else contextlib.nullcontext()):
            times = orig(p["fn"], warmup=p.get("warmup", 25), rep=p.get("rep", 100),
                         grad_to_none=p.get("grad_to_none"), quantiles=None, return_mode="all")  # fmt: skip
    except BaseException as exc:
        with guarded("do_bench"):
            L.skip(cap.site, "do_bench", f"{cap.api} raised {type(exc).__name__}: {exc} (call {cap.name!r} not captured)")
        raise
    finally:
        sk.pop()
    ret = summarize(times, p.get("quantiles"), p.get("return_mode", "mean"))
    with guarded("do_bench"):
        import time

        # The repeats took about `rep` ms of GPU time, at the end of the call (after the
        # compilation, the estimate and the warm-up): the window the clock samples are read in.
        now = time.time()
        cap.t_start = max(cap.t_start, now - float(p.get("rep") or 100) / 1e3)
        sink = _BenchWindows(cap, L)
        sink.estimate_read_alone = _has_estimate(orig)
        sink.queued = len(times)
        cap.method["event_hooks"] = "out" if bare else "suppressed"  # in triton's loop (bare_events)
        if anchor is not None and collector is not None:
            cap.clock_windows = gpuwindows.gpu_windows(anchor, collector.timed_pairs(len(times)))
        _finish(L, cap, {**p}, "do_bench", sink, ret, raw_ms=[float(t) for t in times])
    return ret


@functools.lru_cache(maxsize=8)
def _has_estimate(orig: Any) -> bool:
    """Whether this triton's do_bench opens a runtime-estimate window first (read from its source)."""
    try:
        return "estimate_ms" in inspect.getsource(orig)
    except (OSError, TypeError):
        return False


def _with_fn(orig: Any, args: tuple[Any, ...], kwargs: dict[str, Any], fn: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if args:
        return (fn, *args[1:]), kwargs
    return args, {**kwargs, "fn": fn}


def _finish(L: Layer, cap: Capture, p: dict[str, Any], kind: str, sink: _BenchWindows, ret: Any,
            raw_ms: list[float] | None = None) -> None:  # fmt: skip
    mode, q = p.get("return_mode", "mean"), p.get("quantiles")
    raw = sink.samples_ms() if raw_ms is None else raw_ms
    calls = 1
    if kind == "do_bench_cudagraph":
        first = sink.calls_at.get(1)
        est_end = sink.calls_at.get(0, 0)
        # fn calls between the estimate window and the first replay: the graph's n_repeat (the
        # estimate window itself holds 5 calls, made after calls_at[0]).
        calls = max(1, (first - est_end - 5)) if first is not None else 1
    if raw_ms is not None:
        per_call = raw  # triton's own per-repeat values (return_mode="all")
    elif mode == "all" and q is None and isinstance(ret, (list, tuple)) and len(ret) == len(raw):
        per_call = [float(x) for x in ret]  # triton's own per-call values
    else:
        per_call = [x / calls for x in raw]
    cap.samples_ns = [x * 1e6 for x in per_call]
    v = user_value_ms(ret, mode, q)
    cap.user_value_ns = None if v is None else v * 1e6
    cap.returned = list(ret) if isinstance(ret, (list, tuple)) else ret
    m = cap.method
    m.update({
        "timing": "cuda_events", "api": cap.api, "return_mode": mode, "quantiles": q,
        "calls_per_sample": calls, "overhead_ns": 0.0, "hold_queue": False,
        "estimate_window": sink.estimate_read_alone, "repeats": len(raw),
        "grad_to_none": p.get("grad_to_none") is not None,
    })  # fmt: skip
    if kind == "do_bench":
        m.update(_flush_facts())
        # Every repeat is queued (flush, events, fn) before one synchronize.
        m.update({"warmup_ms": p.get("warmup"), "rep_ms": p.get("rep"), "queued_before_sync": sink.queued,
                  "cuda_graph": False})  # fmt: skip
    else:
        m.update({
            "flush_l2": False, "flush": "none", "flush_bytes": 0, "cuda_graph": True, "rep_ms": p.get("rep"),
            "graph_replays": len(raw), "n_repeat": calls, "queued_before_sync": 1,
        })  # fmt: skip
    cap.details["value"] = (
        f"quantile nearest the median of quantiles={q}" if q is not None
        else ("median of return_mode='all'" if mode == "all" else f"return_mode={mode!r}")
    )  # fmt: skip
    L.finish(cap)


def _ncu_iterations(L: Layer, cap: Capture, p: dict[str, Any], kind: str) -> Any:
    """Under ncu: warm-up, then ``--ncu-iters`` calls each in its own ``iter<k>`` range."""
    import torch

    fn = p["fn"]
    grads = p.get("grad_to_none")
    flush = None
    if kind == "do_bench":
        try:
            from triton.runtime import driver

            drv = driver.active
            cache = drv.get_empty_cache_for_benchmark()

            def flush() -> None:
                drv.clear_cache(cache)
        except Exception:  # noqa: BLE001 - an older triton: zero 256 MB as it does
            buf = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")

            def flush() -> None:
                buf.zero_()

    stream = torch.cuda.Stream() if kind == "do_bench_cudagraph" else None
    ctx = torch.cuda.stream(stream) if stream is not None else _Null()
    with ctx:
        fn()  # compilation, autotuning, allocations: outside every range
        torch.cuda.synchronize()
        outer = ranges.push((cap.name,))
        try:
            for i in range(L.ncu_iters):
                if grads is not None:
                    for x in grads:
                        x.grad = None
                if flush is not None:
                    flush()
                n = ranges.push((f"iter{i}",))
                try:
                    fn()
                finally:
                    ranges.pop(n)
        finally:
            ranges.pop(outer)
        torch.cuda.synchronize()
    return placeholder(L, cap.name, p)


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: Any) -> None:
        return None


def placeholder(L: Layer, name: str, p: dict[str, Any]) -> Any:
    """What the same call returned in the plain pass (NaN where there is none), in the shape the
    call returns: the script goes on as it did there. Never a timing of the ncu pass."""
    entry = L.plain_value(name)
    got = entry.get("returned") if isinstance(entry, dict) else None
    q, mode = p.get("quantiles"), p.get("return_mode", "mean")
    if q is not None:
        if isinstance(got, list) and len(got) == len(q):
            vals = [float("nan") if v is None else float(v) for v in got]
        elif len(q) == 1 and isinstance(got, (int, float)):
            vals = [float(got)]
        else:
            vals = [float("nan")] * len(q)
        return vals[0] if len(vals) == 1 else vals
    if mode == "all":
        return [float("nan") if v is None else float(v) for v in got] if isinstance(got, list) else []
    return float(got) if isinstance(got, (int, float)) else float("nan")


def patch_testing(mod: Any) -> None:
    """Patch ``triton.testing`` (just imported)."""
    L = layer()
    if L is None or getattr(mod, "_nsightwrap_patched", False):
        return
    L.add_internal(sys.modules.get("triton") or mod)
    for name, kind in (("do_bench", "do_bench"), ("do_bench_cudagraph", "do_bench_cudagraph")):
        orig = getattr(mod, name, None)
        if callable(orig):
            patch(mod, name, make_wrapper(orig, kind))
    mark = getattr(mod, "Mark", None)
    if isinstance(mark, type) and callable(vars(mark).get("_run")):
        patch(mark, "_run", _named_sweep(vars(mark)["_run"]))
    mod._nsightwrap_patched = True


def sweep_of(bench: Any, fn: Any) -> tuple[str, list[str]]:
    """A ``triton.testing.Benchmark``'s name (its ``plot_name``, else the function's) and the
    arguments it varies: ``line_arg``, then ``x_names`` (``args`` are the same at every point)."""
    base = str(getattr(bench, "plot_name", None) or getattr(fn, "__name__", None) or "perf_report")
    names = [str(getattr(bench, "line_arg", "") or "")] + [str(x) for x in (getattr(bench, "x_names", None) or ())]
    return base.replace("[", "(").replace("]", ")"), [n for n in dict.fromkeys(names) if n]


def _named_sweep(run: Any) -> Any:
    """``Mark._run`` (one Benchmark of a ``perf_report``): each call of the benchmark function is a
    sweep point, and the timings made inside it are named by it (naming.auto_names)."""

    @functools.wraps(run)
    def _run(self: Any, bench: Any, *args: Any, **kwargs: Any) -> Any:
        L = layer()
        fn = getattr(self, "fn", None)
        if L is None or not callable(fn):
            return run(self, bench, *args, **kwargs)
        try:
            base, varied = sweep_of(bench, fn)
        except Exception as exc:  # noqa: BLE001 - the sweep runs as without nsightwrap
            L.error("perf_report", exc)
            return run(self, bench, *args, **kwargs)

        def point(*a: Any, **k: Any) -> Any:
            params: dict[str, str] = {}
            with guarded("perf_report"):
                for name in varied:
                    v = param_value(k[name]) if name in k else None
                    if v is not None:
                        params[name] = v
            if not params:  # nothing to tell the points apart by: named as any other call
                return fn(*a, **k)
            with L.sweep_point(base, params):
                return fn(*a, **k)

        self.fn = point
        try:
            return run(self, bench, *args, **kwargs)
        finally:
            self.fn = fn

    return _run
