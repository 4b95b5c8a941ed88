"""In-process GPU timer: ``bench``, ``benchmark`` sweeps, ``BenchResult`` and ``Region``.

Imported inside the user's process, so it depends only on torch (imported lazily, on the first
measurement), nvtx, NVML, numpy and nsightwrap's own light modules (no pandas).

One sample is: [GPU sleep holding the queue] [L2 flush: write then read] start-event
``iter<i>``{fn} end-event. Everything is queued while the GPU sleeps, so the event window
holds the GPU work of ``fn`` and not the CPU's launch latency. Times are in ns, clocks in Hz.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nvtx

from nsightwrap import contract
from nsightwrap.clockprobe import NvmlSampler, align, nvml_handle, reason_names
from nsightwrap.errors import NoCudaError, ReportParseError, UsageError
from nsightwrap.jsonfile import write_json_atomic
from nsightwrap.stats import MAX_BATCH, Stopper, StopReason, StopRule, summarize

_DOMAIN = nvtx.get_domain(contract.NVTX_DOMAIN)

# ---------------------------------------------------------------------------------------------
# Results


def _opt_float(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v)


def _json_safe(v: Any) -> Any:
    # Sidecars are strict JSON: NaN and inf (e.g. rel_ci of one sample) become null.
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    return v


def _fmt_time(ns: float) -> str:
    if not math.isfinite(ns):
        return "n/a"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.4g} {unit}"
    return f"{ns:.4g} ns"


@dataclass(frozen=True)
class BenchResult:
    """One benchmark's timing. ``samples_ns`` holds every measured sample, per call, after the
    subtraction named in ``method['overhead_ns']`` (raw event window =
    ``sample * method['calls_per_sample'] + method['overhead_ns']``)."""

    name: str
    params: Mapping[str, Any]
    samples_ns: tuple[float, ...]
    median_ns: float
    min_ns: float
    mean_ns: float
    stdev_ns: float
    iqr_ns: float
    n: int
    sm_clock_hz: float | None = None
    clock_source: str = "none"
    sample_clock_hz: tuple[float | None, ...] | None = None
    throttled: int = 0
    throttle_reasons: tuple[str, ...] = ()
    method: Mapping[str, Any] = field(default_factory=dict)
    flops: float | None = None
    bytes: float | None = None
    timed: bool = True

    @classmethod
    def from_samples(cls, name: str, samples_ns: Sequence[float], **kw: Any) -> BenchResult:
        """Build a result from raw per-call samples (ns), computing the summary fields."""
        s = summarize(samples_ns)
        return cls(
            name=name,
            params=dict(kw.pop("params", None) or {}),
            samples_ns=tuple(float(x) for x in samples_ns),
            median_ns=s.median,
            min_ns=s.min,
            mean_ns=s.mean,
            stdev_ns=s.stdev,
            iqr_ns=s.iqr,
            n=s.n,
            **kw,
        )

    # convenience views -----------------------------------------------------------------------
    @property
    def nvtx_path(self) -> str:
        """Path of the benchmark's range as the parsers write it (``nsightwrap:<name>``)."""
        return f"{contract.NVTX_DOMAIN}:{self.name}"

    @property
    def median_ms(self) -> float:
        return self.median_ns / 1e6

    @property
    def min_ms(self) -> float:
        return self.min_ns / 1e6

    @property
    def mean_ms(self) -> float:
        return self.mean_ns / 1e6

    @property
    def samples_ms(self) -> tuple[float, ...]:
        return tuple(x / 1e6 for x in self.samples_ns)

    @property
    def tflops(self) -> float | None:
        """Achieved TFLOP/s at the median, when ``flops`` was given."""
        if not self.flops or not self.median_ns > 0:
            return None
        return self.flops / self.median_ns / 1e3

    @property
    def gbps(self) -> float | None:
        """Achieved GB/s (1e9 bytes/s) at the median, when ``bytes`` was given."""
        if not self.bytes or not self.median_ns > 0:
            return None
        return self.bytes / self.median_ns

    # (de)serialization -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The sidecar entry of this benchmark (docs/contracts.md); NaN becomes null."""
        return {
            "name": self.name,
            "params": dict(self.params),
            "nvtx_path": self.nvtx_path,
            "timed": self.timed,
            "samples_ns": list(self.samples_ns),
            "median_ns": _opt_float(self.median_ns),
            "min_ns": _opt_float(self.min_ns),
            "mean_ns": _opt_float(self.mean_ns),
            "stdev_ns": _opt_float(self.stdev_ns),
            "iqr_ns": _opt_float(self.iqr_ns),
            "n": self.n,
            "sm_clock_hz": _opt_float(self.sm_clock_hz),
            "clock_source": self.clock_source,
            "sample_clock_hz": None
            if self.sample_clock_hz is None
            else [_opt_float(v) for v in self.sample_clock_hz],
            "throttled": self.throttled,
            "throttle_reasons": list(self.throttle_reasons),
            "method": _json_safe(dict(self.method)),
            "flops": self.flops,
            "bytes": self.bytes,
            "tflops": self.tflops,
            "gbps": self.gbps,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BenchResult:
        """Inverse of ``to_dict``; ReportParseError names a missing field."""
        name = d.get("name", "?")

        def need(key: str) -> Any:
            if key not in d:
                raise ReportParseError(f"timer sidecar: benchmark {name!r} is missing field {key!r}")
            return d[key]

        def num(key: str) -> float:
            v = need(key)
            return math.nan if v is None else float(v)

        scs = d.get("sample_clock_hz")
        return cls(
            name=str(need("name")),
            params=dict(need("params")),
            samples_ns=tuple(float(x) for x in need("samples_ns")),
            median_ns=num("median_ns"),
            min_ns=num("min_ns"),
            mean_ns=num("mean_ns"),
            stdev_ns=num("stdev_ns"),
            iqr_ns=num("iqr_ns"),
            n=int(need("n")),
            sm_clock_hz=_opt_float(d.get("sm_clock_hz")),
            clock_source=str(d.get("clock_source", "none")),
            sample_clock_hz=None if scs is None else tuple(_opt_float(v) for v in scs),
            throttled=int(d.get("throttled", 0)),
            throttle_reasons=tuple(d.get("throttle_reasons", ())),
            method=dict(need("method")),
            flops=d.get("flops"),
            bytes=d.get("bytes"),
            timed=bool(d.get("timed", True)),
        )

    def __str__(self) -> str:
        if not self.timed:
            return (
                f"{self.name}: not timed under the {self.method.get('pass')} pass "
                f"({self.method.get('ncu_iterations')} iterations for the profiler)"
            )
        head = (
            f"{self.name}: median {_fmt_time(self.median_ns)}  (min {_fmt_time(self.min_ns)}, "
            f"mean {_fmt_time(self.mean_ns)} ± {_fmt_time(self.stdev_ns)}, "
            f"IQR {_fmt_time(self.iqr_ns)}, n={self.n})"
        )
        extra = []
        if self.tflops is not None:
            extra.append(f"{self.tflops:.1f} TFLOP/s")
        if self.gbps is not None:
            extra.append(f"{self.gbps:.0f} GB/s")
        if self.sm_clock_hz:
            clk = f"SM {self.sm_clock_hz / 1e9:.2f} GHz"
            if self.throttled:
                clk += f", {self.throttled} samples throttled ({', '.join(self.throttle_reasons)})"
            extra.append(clk)
        m = self.method
        how = ["L2 flushed" if m.get("flush_l2") else "warm L2"]
        if m.get("hold_queue"):
            how.append("queue held")
        if m.get("cuda_graph"):
            how.append(f"CUDA graph x{m.get('calls_per_sample')}")
        if m.get("overhead_ns"):
            how.append(f"-{_fmt_time(m['overhead_ns'])} empty window")
        extra.append("; ".join(how))
        return head + "  " + "  ".join(extra)


# ---------------------------------------------------------------------------------------------
# Names, passes, sidecar


def bench_name(name: str, params: Mapping[str, Any] | None = None) -> str:
    """``name[k=v,k2=v2]`` for a parametrized benchmark, ``name`` otherwise."""
    if not params:
        return name
    return f"{name}[{','.join(f'{k}={v}' for k, v in params.items())}]"


def sweep_points(params: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the parameter values, in the order given (last key varies fastest)."""
    keys = list(params)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(params[k] for k in keys))]


def _check_name(name: str) -> None:
    # "/" separates nested ranges and "@" a domain in ncu's NVTX filters and in parsed paths.
    if not name or "/" in name or "@" in name:
        raise UsageError(
            f"benchmark name {name!r} is not usable", hint="use a non-empty name without '/' or '@'"
        )


def current_pass() -> str | None:
    """The ``nsightwrap profile`` pass this process runs under, or None when run on its own."""
    p = os.environ.get(contract.ENV_PASS)
    return p if p in contract.PASSES else None


def _ncu_iters() -> int:
    raw = os.environ.get(contract.ENV_NCU_ITERS, "3")
    try:
        return max(1, int(raw))
    except ValueError as exc:
        raise UsageError(
            f"{contract.ENV_NCU_ITERS}={raw!r} is not an integer", hint="set it to e.g. 3"
        ) from exc


def sidecar_path(run_dir: str | os.PathLike[str], pid: int | None = None) -> Path:
    """``<run dir>/plain/timer-<pid>.json``."""
    return Path(run_dir) / contract.PASS_PLAIN / f"timer-{os.getpid() if pid is None else pid}.json"


def write_sidecar(
    path: str | os.PathLike[str],
    results: Sequence[BenchResult],
    device: Mapping[str, Any],
    torch_version: str | None,
) -> None:
    """Write the sidecar atomically (temporary file in the same folder, then ``os.replace``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "format": contract.SIDECAR_FORMAT,
        "version": contract.SIDECAR_VERSION,
        "pid": os.getpid(),
        "device": dict(device),
        "torch_version": torch_version,
        "benchmarks": [r.to_dict() for r in results],
    }
    # NaN is refused: a timing that is not a number is a bug, and strict JSON readers reject it.
    write_json_atomic(path, doc, indent=1, allow_nan=False)


@dataclass(frozen=True)
class TimerSidecar:
    """A parsed timer sidecar."""

    pid: int
    device: Mapping[str, Any]
    torch_version: str | None
    benchmarks: tuple[BenchResult, ...]


def read_sidecar(path: str | os.PathLike[str]) -> TimerSidecar:
    """Read a sidecar written by ``write_sidecar``, refusing unknown formats and versions."""
    from nsightwrap.parsers.sidecar import read_sidecar_doc

    doc = read_sidecar_doc(path)
    return TimerSidecar(
        pid=int(doc.get("pid", 0)),
        device=dict(doc.get("device") or {}),
        torch_version=doc.get("torch_version"),
        benchmarks=tuple(BenchResult.from_dict(b) for b in doc.get("benchmarks", [])),
    )


# ---------------------------------------------------------------------------------------------
# GPU side (torch imported here only)


class _Gpu:
    """Per-process GPU state: torch, device facts, the flush buffer, NVML, the empty window."""

    def __init__(self) -> None:
        try:
            import torch
        except ImportError as exc:
            raise NoCudaError(
                "nsightwrap.bench needs torch with CUDA, and torch is not installed",
                hint="install a CUDA build of torch",
            ) from exc
        if not torch.cuda.is_available():
            raise NoCudaError(
                f"nsightwrap.bench found no CUDA device (torch {torch.__version__})",
                hint="run on a machine with an NVIDIA GPU and a CUDA build of torch",
            )
        self.torch = torch
        self.index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(self.index)
        self.device = {
            "name": props.name,
            "index": self.index,
            "sm_count": int(props.multi_processor_count),
            "l2_bytes": int(props.L2_cache_size),
        }
        uuid = str(getattr(props, "uuid", "") or "") or None
        self.device["uuid"] = uuid  # matches nvidia-smi's rows to this GPU
        pci = None
        if hasattr(props, "pci_bus_id"):
            pci = f"{getattr(props, 'pci_domain_id', 0):08x}:{props.pci_bus_id:02x}:{getattr(props, 'pci_device_id', 0):02x}.0"
        self.nvml, max_hz = nvml_handle(uuid, pci, self.index)
        # _sleep spins for a number of SM cycles: size it at the highest clock so it is never short.
        self.max_sm_hz = max_hz or 2.0e9
        # Twice the L2, as int32 so that the read pass is one fast reduction.
        self.flush_bytes = 2 * int(props.L2_cache_size)
        self._flush_buf = torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=f"cuda:{self.index}")
        self.empty_window_ns: float | None = None
        self.has_sleep = hasattr(torch.cuda, "_sleep")

    def flush(self) -> None:
        """Evict the L2 leaving CLEAN lines: write the buffer, then read it. A write-only flush
        (``zero_()``) leaves dirty lines whose write-back the next memory-bound kernel pays."""
        self._flush_buf.fill_(1)
        self._flush_buf.sum()

    def sleep_s(self, seconds: float) -> None:
        self.torch.cuda._sleep(int(seconds * self.max_sm_hz))

    def event(self) -> Any:
        return self.torch.cuda.Event(enable_timing=True)

    def measure_empty_window(self, reps: int = 50) -> float:
        """Median ns between two events with nothing between them, queue held (cached)."""
        if self.empty_window_ns is None:
            pairs = [(self.event(), self.event()) for _ in range(reps)]
            if self.has_sleep:  # hold the queue so the window holds no launch latency
                self.sleep_s(0.002)
            for s, e in pairs:
                s.record()
                e.record()
            self.torch.cuda.synchronize()
            self.empty_window_ns = float(summarize([s.elapsed_time(e) * 1e6 for s, e in pairs]).median)
        return self.empty_window_ns


_STATE: dict[str, Any] = {"gpu": None, "results": []}


def _gpu() -> _Gpu:
    if _STATE["gpu"] is None:
        _STATE["gpu"] = _Gpu()
    gpu: _Gpu = _STATE["gpu"]
    return gpu


def _warmup(gpu: _Gpu, fn: Callable[[], Any], warmup_s: float) -> tuple[float, int]:
    """Run fn until ``warmup_s`` of GPU time has passed; returns (GPU ns per call, calls made)."""
    torch = gpu.torch
    fn()  # first call: compilation, autotuning, allocations
    torch.cuda.synchronize()
    calls, total_ns, reps, per_call = 1, 0.0, 1, math.nan
    while True:
        s, e = gpu.event(), gpu.event()
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        el = s.elapsed_time(e) * 1e6
        per_call = el / reps
        calls += reps
        total_ns += el
        if total_ns >= warmup_s * 1e9 or calls >= 1000:
            return per_call, calls
        reps = min(reps * 2, 256)


def _capture_graph(gpu: _Gpu, fn: Callable[[], Any], k: int) -> Callable[[], Any]:
    torch = gpu.torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch asks before capture
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(k):
            fn()
    torch.cuda.synchronize()
    _STATE.setdefault("graphs", []).append(graph)  # keep its memory pool alive with the process
    return graph.replay


def _enqueue_cost_s(gpu: _Gpu, runner: Callable[[], Any], flush_l2: bool, hold_s: float) -> float:
    """Host seconds to queue one sample (flush, events, fn) while the GPU is busy sleeping."""
    worst = 0.0
    for _ in range(3):
        gpu.sleep_s(hold_s)
        t0 = time.perf_counter()
        if flush_l2:
            gpu.flush()
        s, e = gpu.event(), gpu.event()
        s.record()
        runner()
        e.record()
        worst = max(worst, time.perf_counter() - t0)
        gpu.torch.cuda.synchronize()
    return worst


def _register(result: BenchResult, gpu: _Gpu | None) -> None:
    results: list[BenchResult] = _STATE["results"]
    results.append(result)
    run_dir = os.environ.get(contract.ENV_RUN_DIR)
    if current_pass() == contract.PASS_PLAIN and run_dir and gpu is not None:
        # Rewritten after each benchmark so that a crash keeps what was measured.
        write_sidecar(sidecar_path(run_dir), results, gpu.device, gpu.torch.__version__)


def bench(
    fn: Callable[[], Any],
    *,
    name: str | None = None,
    params: Mapping[str, Any] | None = None,
    flops: float | None = None,
    bytes: float | None = None,  # noqa: A002 - the public keyword is ``bytes``
    flush_l2: bool = True,
    cuda_graph: bool = False,
    graph_calls: int | None = None,
    hold_queue: bool = True,
    subtract_overhead: bool = True,
    min_samples: int = 10,
    max_samples: int = 1000,
    rel_precision: float = 0.005,
    budget_s: float = 2.0,
    warmup_s: float = 0.025,
    verbose: bool = False,
) -> BenchResult:
    """Time ``fn()`` (GPU work queued on the current stream) with CUDA events.

    Warms up, then takes samples until the median is known to ``rel_precision`` (relative ~95 %
    half-width), ``budget_s`` passes or ``max_samples`` is reached (``min_samples`` always).
    ``flush_l2`` evicts the L2 (write, then read 2x its size) before each sample, outside the
    timed window; ``hold_queue`` queues each sample behind a GPU sleep so that launch latency is
    not timed; ``cuda_graph`` times replays of a graph of ``graph_calls`` calls (default 1 with
    a flush, else enough calls for ~20 us) and divides; ``subtract_overhead`` removes the cost
    of an empty event window when the queue is held or a graph is timed. Under ``nsightwrap
    profile`` the ncu pass runs 1 warm-up and NSIGHTWRAP_NCU_ITERS untimed iterations.
    """
    params = dict(params or {})
    base = name or getattr(fn, "__name__", "") or "bench"
    full = bench_name("bench" if base == "<lambda>" else base, params)
    _check_name(full)
    gpu = _gpu()
    stage = current_pass()
    _DOMAIN.push_range(message=full)
    try:
        if stage == contract.PASS_NCU:
            result = _profile_iterations(
                gpu, fn, full, params, flops, bytes, flush_l2, cuda_graph
            )
        else:
            rule = StopRule(min_samples, max_samples, rel_precision, budget_s)
            result = _measure(
                gpu, fn, full, params, flops, bytes, flush_l2, cuda_graph, graph_calls, hold_queue,
                subtract_overhead, rule, warmup_s, stage,
            )  # fmt: skip
    finally:
        _DOMAIN.pop_range()
    _register(result, gpu)
    if verbose:
        print(result)
    return result


def _graph_calls(graph_calls: int | None, flush_l2: bool, per_call_ns: float) -> int:
    if graph_calls is not None:
        if graph_calls < 1:
            raise UsageError(f"graph_calls={graph_calls} must be at least 1")
        return graph_calls
    if flush_l2:  # more calls per replay would run on a warm L2 after the first
        return 1
    # Enough calls for a replay of about 200 us, so the events' own cost (~1.3 us) and the
    # launch of the replay shrink to well under 1% per call. per_call_ns comes from an unheld
    # warm-up, so for tiny kernels it is launch-bound and the count errs on the small side.
    return int(min(100, max(2, math.ceil(200_000 / max(per_call_ns, 1.0)))))


def _profile_iterations(
    gpu: _Gpu,
    fn: Callable[[], Any],
    name: str,
    params: dict[str, Any],
    flops: float | None,
    nbytes: float | None,
    flush_l2: bool,
    cuda_graph: bool,
) -> BenchResult:
    """Under ncu every kernel is replayed and serialized, so nothing is timed here: 1 warm-up,
    then the measured iterations, each in its ``iter<i>`` range (flush outside it)."""
    torch = gpu.torch
    iters = _ncu_iters()
    api = os.environ.get(contract.ENV_NCU_PROFILER_API) == "1"
    fn()
    # One call per iteration even in graph mode: the reconciliation compares ncu's kernels per
    # call, and a graph of k calls would only multiply ncu's replays by k.
    k = 1
    runner: Callable[[], Any] = fn
    torch.cuda.synchronize()
    for i in range(iters):
        if flush_l2:
            gpu.flush()
        _DOMAIN.push_range(message=f"{contract.ITER_PREFIX}{i}")
        if api:
            torch.cuda.profiler.start()
        runner()
        if api:
            torch.cuda.profiler.stop()
        _DOMAIN.pop_range()
    torch.cuda.synchronize()
    method = {
        "pass": contract.PASS_NCU,
        "timing": "none",
        "ncu_iterations": iters,
        "ncu_profiler_api": api,
        "flush_l2": flush_l2,
        "cuda_graph": cuda_graph,
        "calls_per_sample": k,
        "hold_queue": False,
        "overhead_ns": 0.0,
    }
    return BenchResult.from_samples(
        name, [], params=params, method=method, flops=flops, bytes=nbytes, timed=False
    )


def _measure(
    gpu: _Gpu,
    fn: Callable[[], Any],
    name: str,
    params: dict[str, Any],
    flops: float | None,
    nbytes: float | None,
    flush_l2: bool,
    cuda_graph: bool,
    graph_calls: int | None,
    hold_queue: bool,
    subtract_overhead: bool,
    rule: StopRule,
    warmup_s: float,
    stage: str | None,
) -> BenchResult:
    per_call_ns, warm_calls = _warmup(gpu, fn, warmup_s)
    if flush_l2:
        gpu.flush()
    k = 1
    runner: Callable[[], Any] = fn
    if cuda_graph:
        k = _graph_calls(graph_calls, flush_l2, per_call_ns)
        runner = _capture_graph(gpu, fn, k)

    method: dict[str, Any] = {
        "pass": stage or "standalone",
        "timing": "cuda_events",
        "flush_l2": flush_l2,
        "flush": "write+read" if flush_l2 else "none",
        "flush_bytes": gpu.flush_bytes if flush_l2 else 0,
        "cuda_graph": cuda_graph,
        "calls_per_sample": k,
        "warmup_calls": warm_calls,
        "hold_queue": False,
        "sleep_cycles": 0,
    }
    # NVML runs from here on: its thread competes for the GIL, so the enqueue cost below is
    # measured with it running, as it will be during the timed loop.
    with NvmlSampler(gpu.nvml) as sampler:
        samples, windows, reason = _sample_loop(
            gpu, runner, flush_l2, cuda_graph, k, per_call_ns, hold_queue, subtract_overhead, rule, method
        )
    probe_hz = _probe_clock(gpu, runner, flush_l2, method, summarize(samples).median * k if samples else 0.0)
    return _finish(name, params, flops, nbytes, samples, windows, reason, rule, method, sampler, probe_hz)


#: Shortest measured window (ns) the on-GPU clock probe can time to about 1%.
PROBE_MIN_WINDOW_NS = 20_000.0
#: How long (s) the main stream waits before fn so that the probe's spin is resident first.
PROBE_LEAD_S = 2e-6


def _probe_clock(
    gpu: _Gpu, runner: Callable[[], Any], flush_l2: bool, method: dict[str, Any], window_ns: float, reps: int = 5
) -> float | None:
    """The SM clock WHILE fn runs, measured on the GPU; None where it cannot be measured.

    NVML reports a clock the host sees between readings and misses throttling that lasts only as
    long as the kernel (on an H200 it read 1.98 GHz while a GEMM ran at 1.61 GHz, by ncu). So, in
    a few extra iterations that are not timing samples, a one-thread spin of C SM cycles
    (``torch.cuda._sleep`` counts ``clock64``) runs on a side stream concurrently with fn, and
    C / (its event-timed duration - the empty-window cost) is the clock.

    The spin must be resident before fn's blocks fill the SMs (a kernel that fills every thread
    slot would otherwise delay its start and the clock would read low), so the main stream waits
    a short spin of its own (PROBE_LEAD_S) before fn. A rep counts only if the spin ended before fn did.
    """
    if not gpu.has_sleep or window_ns < PROBE_MIN_WINDOW_NS or not method.get("hold_queue"):
        method["clock_probe"] = "skipped: needs torch.cuda._sleep, a held queue and a window >= 20 us"
        return None
    torch = gpu.torch
    main = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    lead_cycles = int(PROBE_LEAD_S * gpu.max_sm_hz)
    cycles = lead_cycles + int(0.6 * window_ns * 1e-9 * gpu.max_sm_hz)
    empty_ns = gpu.measure_empty_window()
    clocks: list[float] = []
    rejected = 0
    for _ in range(reps):
        ready, ps, pe, s, e = (gpu.event() for _ in range(5))
        torch.cuda._sleep(method["sleep_cycles"])
        if flush_l2:
            gpu.flush()
        ready.record(main)
        side.wait_event(ready)
        with torch.cuda.stream(side):
            ps.record(side)
            torch.cuda._sleep(cycles)
            pe.record(side)
        torch.cuda._sleep(lead_cycles)
        s.record(main)
        runner()
        e.record(main)
        main.wait_stream(side)
        e.synchronize()
        pe.synchronize()
        spin_ns = ps.elapsed_time(pe) * 1e6 - empty_ns
        inside = s.elapsed_time(pe) < s.elapsed_time(e)
        if spin_ns > 0 and inside:
            clocks.append(cycles / (spin_ns * 1e-9))
        else:
            rejected += 1
    torch.cuda.synchronize()
    method["clock_probe"] = {"cycles": cycles, "reps": reps, "rejected": rejected, "clock_hz": clocks}
    if len(clocks) < max(2, reps // 2):
        return None
    return float(summarize(clocks).median)


def _sample_loop(
    gpu: _Gpu,
    runner: Callable[[], Any],
    flush_l2: bool,
    cuda_graph: bool,
    k: int,
    per_call_ns: float,
    hold_queue: bool,
    subtract_overhead: bool,
    rule: StopRule,
    method: dict[str, Any],
) -> tuple[list[float], list[tuple[float, float]], StopReason]:
    """Hold, flush, time; returns per-call samples (ns), their host-time windows, why it stopped."""
    torch = gpu.torch
    hold = hold_queue and gpu.has_sleep
    sleep_s = 0.0
    if hold_queue and not gpu.has_sleep:
        method["hold_queue_skipped"] = "torch.cuda._sleep is missing in this torch"
    if hold:
        hold_probe_s = 0.02
        enqueue_s = _enqueue_cost_s(gpu, runner, flush_l2, hold_probe_s)
        method["enqueue_ns"] = enqueue_s * 1e9
        if enqueue_s > 0.5 * hold_probe_s:
            # fn blocks the host (a synchronize, .item(), a host copy): the queue cannot be held.
            hold = False
            method["hold_queue_skipped"] = "fn blocks the host while queueing"
        else:
            # Long enough to cover queueing flush + events + fn behind it, with a margin.
            sleep_s = 1.5 * enqueue_s + 20e-6
            method["sleep_cycles"] = int(sleep_s * gpu.max_sm_hz)
    method["hold_queue"] = hold
    empty_ns = gpu.measure_empty_window()
    method["empty_window_ns"] = empty_ns
    overhead = empty_ns if subtract_overhead and (hold or cuda_graph) else 0.0
    method["overhead_ns"] = overhead

    events = [(gpu.event(), gpu.event()) for _ in range(MAX_BATCH)]
    ref = gpu.event()
    samples: list[float] = []
    windows: list[tuple[float, float]] = []
    stopper = Stopper(rule)
    per_sample_s = sleep_s + (per_call_ns * k) / 1e9 + (80e-6 if flush_l2 else 0.0)
    reason = None
    torch.cuda.synchronize()
    stopper.start()
    while reason is None:
        b = max(1, stopper.next_batch(len(samples), per_sample_s))
        t_batch = time.perf_counter()
        # The GPU is idle here, so the reference event runs at (almost) this host time: it
        # maps event times to host time, where the NVML readings live.
        ref.record()
        for j in range(b):
            s, e = events[j]
            if hold:
                torch.cuda._sleep(method["sleep_cycles"])
            if flush_l2:
                gpu.flush()
            s.record()
            _DOMAIN.push_range(message=f"{contract.ITER_PREFIX}{len(samples) + j}")
            runner()
            _DOMAIN.pop_range()
            e.record()
        events[b - 1][1].synchronize()
        for j in range(b):
            s, e = events[j]
            samples.append((s.elapsed_time(e) * 1e6 - overhead) / k)
            windows.append((t_batch + ref.elapsed_time(s) / 1e3, t_batch + ref.elapsed_time(e) / 1e3))
        per_sample_s = (time.perf_counter() - t_batch) / b
        reason = stopper.check(samples)
    return samples, windows, reason


def _finish(
    name: str,
    params: dict[str, Any],
    flops: float | None,
    nbytes: float | None,
    samples: list[float],
    windows: list[tuple[float, float]],
    reason: StopReason,
    rule: StopRule,
    method: dict[str, Any],
    sampler: NvmlSampler,
    probe_hz: float | None = None,
) -> BenchResult:
    method["stop_reason"] = reason.value
    method["rel_precision_target"] = rule.rel_precision
    method["budget_s"] = rule.budget_s
    method["rel_ci"] = summarize(samples).rel_ci
    trace = sampler.trace()
    clock = align(trace, windows)
    sm_hz = clock.median_hz
    source = "nvml" if sm_hz is not None else "none"
    method["nvml_clock_hz"] = sm_hz
    if probe_hz is not None:  # measured during fn on the GPU: better than NVML (see _probe_clock)
        sm_hz, source = probe_hz, "probe"
    return BenchResult.from_samples(
        name,
        samples,
        params=params,
        sm_clock_hz=sm_hz,
        clock_source=source,
        sample_clock_hz=tuple(None if not math.isfinite(v) else v for v in clock.sample_clock_hz)
        if sm_hz
        else None,
        throttled=sum(clock.throttled),
        throttle_reasons=reason_names(clock.reasons),
        method=method,
        flops=flops,
        bytes=nbytes,
    )


# ---------------------------------------------------------------------------------------------
# Sweeps and regions


class Sweep:
    """A benchmark over a grid of parameters; calling it runs every point (see ``benchmark``)."""

    def __init__(self, factory: Callable[..., Callable[[], Any]], name: str, params: Mapping[str, Sequence[Any]],
                 flops: Any, nbytes: Any, options: dict[str, Any]) -> None:  # fmt: skip
        self.factory = factory
        self.name = name
        self.params = dict(params)
        self._flops = flops
        self._bytes = nbytes
        self._options = options

    def points(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(benchmark name, parameters) of every point."""
        for p in sweep_points(self.params):
            yield bench_name(self.name, p), p

    def run(self) -> list[BenchResult]:
        """Build each point's callable with ``factory(**params)`` and ``bench`` it."""
        out = []
        for _, p in self.points():
            fn = self.factory(**p)
            flops = self._flops(**p) if callable(self._flops) else self._flops
            nbytes = self._bytes(**p) if callable(self._bytes) else self._bytes
            out.append(bench(fn, name=self.name, params=p, flops=flops, bytes=nbytes, **self._options))
        return out

    __call__ = run


def benchmark(
    params: Mapping[str, Sequence[Any]] | None = None,
    *,
    name: str | None = None,
    flops: float | Callable[..., float] | None = None,
    bytes: float | Callable[..., float] | None = None,  # noqa: A002 - the public keyword is ``bytes``
    **options: Any,
) -> Callable[[Callable[..., Callable[[], Any]]], Sweep]:
    """Decorate a factory ``f(**point) -> callable``; the result is a ``Sweep`` whose call runs one
    benchmark per point, named ``name[k=v,...]``. ``flops``/``bytes`` may be functions of the point;
    other options go to ``bench``."""

    def wrap(factory: Callable[..., Callable[[], Any]]) -> Sweep:
        return Sweep(factory, name or factory.__name__, params or {}, flops, bytes, options)

    return wrap


class Region:
    """A user-defined NVTX push/pop range in the ``nsightwrap`` domain (``with Region("setup"):``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> Region:
        _DOMAIN.push_range(message=self.name)
        return self

    def __exit__(self, *exc: object) -> None:
        _DOMAIN.pop_range()
