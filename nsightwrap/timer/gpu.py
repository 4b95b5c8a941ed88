"""The GPU side of the timer, per process: torch (imported here only), the flush buffer, events,
the GPU sleep that holds the queue, one timing sample (``window_ns``), the empty-window cost,
warm-up and CUDA-graph capture."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import nvtx

from nsightwrap.core import contract
from nsightwrap.core.errors import NoCudaError
from nsightwrap.timer.nvml import nvml_handle
from nsightwrap.timer.stats import trimmed_mean

#: The empty window's estimate: a trimmed mean of this many readings, less this fraction at
#: each end (``Gpu.measure_empty_window`` says why not a median).
EMPTY_REPS = 60
EMPTY_CUT = 0.1
EMPTY_ESTIMATE = f"{EMPTY_CUT:.0%} trimmed mean of {EMPTY_REPS}"

#: The timer's NVTX domain: benchmark ranges and ``iter<i>`` ranges inside them.
DOMAIN = nvtx.get_domain(contract.NVTX_DOMAIN)


class Gpu:
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
        self._empty: dict[tuple[bool, bool, bool], float] = {}
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

    def measure_empty_window(
        self, *, hold_cycles: int = 0, flush: bool = False, stamps: Any = None, reps: int = EMPTY_REPS
    ) -> float:
        """Ns between two events with nothing between them, taken exactly as a timing sample is
        (same flush, hold and stamps before the start event, one sample per synchronize, nothing
        queued behind the end event); cached per set-up.

        The estimate is a trimmed mean (``EMPTY_ESTIMATE``), not a median: the window's readings
        step in the event clock's 32 ns ticks, and where they mix two ticks the median takes one
        of them whole while the mean keeps the share of each (the window read 1.248 to 1.317 us,
        differing from process to process; docs/timer-accuracy.md, "Where the buffers lie")."""
        key = (hold_cycles > 0, flush, stamps is not None)
        cache = self._empty
        if key not in cache:
            s, e = self.event(), self.event()
            out = []
            for _ in range(reps):
                window_ns(self, None, s, e, hold_cycles=hold_cycles, flush=flush, stamps=stamps)
                out.append(s.elapsed_time(e) * 1e6)
            cache[key] = trimmed_mean(out, EMPTY_CUT)
        self.empty_window_ns = cache[key]
        return cache[key]


def window_ns(
    gpu: Gpu,
    runner: Callable[[], Any] | None,
    s: Any,
    e: Any,
    *,
    hold_cycles: int,
    flush: bool,
    stamps: Any = None,
    index: int | None = None,
    nvtx: bool = True,
    flush_first: bool = True,
) -> float:
    """Take one sample: [flush] [hold] [stamp] start ``iter<index>``{runner} end [stamp],
    synchronize; returns the event window in ns (``runner`` None: an empty window; ``nvtx``
    False: no ``iter`` range, for calls that are not timing samples; ``flush_first`` False puts
    the hold before the flush, the order studies/hold_order.py compares).

    The flush runs first and the GPU then sleeps (the hold) before the window, as ncu's replay
    leaves the GPU quiet after its own flush: with the flush right before the window, the timer
    read a 2 us add 0.16 us longer and a bf16 GEMM and flash attention 2-3% shorter than with the
    hold between them, and than ncu and the reference loop (docs/timer.md).

    The synchronize before the next sample is queued is what keeps the window honest: queuing
    many samples before one synchronize lengthened every window by up to ~0.8 us,
    while one stamp kernel behind the end event changed nothing there (docs/timer.md). The
    stamps sit right around the window, so their clock is the clock while fn ran.
    """
    torch = gpu.torch
    if flush and flush_first:
        gpu.flush()
    if hold_cycles > 0:
        torch.cuda._sleep(hold_cycles)
    if flush and not flush_first:
        gpu.flush()
    slot = 0
    if stamps is not None:
        slot = stamps.capacity if index is None else index  # empty windows use the spare slot
        stamps.before(slot)
    s.record()
    if runner is not None and nvtx:
        DOMAIN.push_range(message=f"{contract.ITER_PREFIX}{index}")
        runner()
        DOMAIN.pop_range()
    elif runner is not None:
        runner()
    e.record()
    if stamps is not None:
        stamps.after(slot)
    e.synchronize()
    return float(s.elapsed_time(e)) * 1e6


#: Per-process state: the GPU, the results of this process (for the sidecar), live CUDA graphs.
STATE: dict[str, Any] = {"gpu": None, "results": []}


def gpu_state() -> Gpu:
    """This process's ``Gpu``, created on first use."""
    if STATE["gpu"] is None:
        STATE["gpu"] = Gpu()
    gpu: Gpu = STATE["gpu"]
    return gpu


def warmup(gpu: Gpu, fn: Callable[[], Any], warmup_s: float) -> tuple[float, int]:
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


def capture_graph(gpu: Gpu, fn: Callable[[], Any], k: int) -> Callable[[], Any]:
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
    STATE.setdefault("graphs", []).append(graph)  # keep its memory pool alive with the process
    return graph.replay


def enqueue_cost_s(
    gpu: Gpu,
    runner: Callable[[], Any],
    flush_l2: bool,
    hold_s: float,
    stamps: Any = None,
    parts: dict[str, float] | None = None,
    reps: int = 4,
) -> float:
    """Host seconds to queue one sample (flush, stamp, start event, fn, end event, stamp) while
    the GPU is busy sleeping: the second slowest of ``reps`` tries, so that one slow try (a GIL
    hand-off, an NVML call in the sampler thread) does not set the hold for every sample. The
    events are made beforehand, as the sample loop makes its pair once. ``parts`` receives the
    median seconds of each step (``flush``, ``stamps``, ``fn`` with its events)."""
    s, e = gpu.event(), gpu.event()
    totals: list[float] = []
    steps: dict[str, list[float]] = {"flush": [], "stamps": [], "fn": []}
    for _ in range(reps):
        gpu.sleep_s(hold_s)
        t0 = time.perf_counter()
        if flush_l2:
            gpu.flush()
        t1 = time.perf_counter()
        if stamps is not None:
            stamps.before(stamps.capacity)
        t2 = time.perf_counter()
        s.record()
        runner()
        e.record()
        t3 = time.perf_counter()
        if stamps is not None:
            stamps.after(stamps.capacity)
        t4 = time.perf_counter()
        totals.append(t4 - t0)
        steps["flush"].append(t1 - t0)
        steps["stamps"].append((t2 - t1) + (t4 - t3))
        steps["fn"].append(t3 - t2)
        gpu.torch.cuda.synchronize()
    if parts is not None:
        parts.update({k: sorted(v)[len(v) // 2] for k, v in steps.items()})
    totals.sort()
    return totals[-2] if len(totals) > 1 else totals[0]
