"""The GPU side of the timer, per process: torch (imported here only), the flush buffer, events,
the GPU sleep that holds the queue, the empty-window cost, warm-up and CUDA-graph capture."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import nvtx

from nsightwrap.core import contract
from nsightwrap.core.errors import NoCudaError
from nsightwrap.timer.nvml import nvml_handle
from nsightwrap.timer.stats import summarize

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


def enqueue_cost_s(gpu: Gpu, runner: Callable[[], Any], flush_l2: bool, hold_s: float) -> float:
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
