"""In-process GPU timer: ``bench``, ``benchmark`` sweeps, ``BenchResult`` and ``Region``.

Imported inside the user's process, so it depends only on torch (imported lazily, on the first
measurement), nvtx, NVML, numpy and nsightwrap's own light modules (no pandas).

One sample is: [GPU sleep holding the queue] [L2 flush: write then read] start-event
``iter<i>``{fn} end-event. Everything is queued while the GPU sleeps, so the event window
holds the GPU work of ``fn`` and not the CPU's launch latency. Times are in ns, clocks in Hz.
"""


from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from nsightwrap.core import contract
from nsightwrap.core.errors import UsageError
from nsightwrap.core.shard import in_shard, skipped_method
from nsightwrap.timer.energy import energy_window
from nsightwrap.timer.gpu import DOMAIN, STATE, Gpu, capture_graph, enqueue_cost_s, gpu_state, warmup
from nsightwrap.timer.nvml import NvmlSampler, align, reason_names
from nsightwrap.timer.probe import probe_clock
from nsightwrap.timer.result import BenchResult, bench_name
from nsightwrap.timer.sidecar import sidecar_path, write_sidecar
from nsightwrap.timer.stats import MAX_BATCH, Stopper, StopReason, StopRule, summarize
from nsightwrap.timer.thermal import thermal_guard


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


def _register(result: BenchResult, gpu: Gpu | None) -> None:
    results: list[BenchResult] = STATE["results"]
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
    energy_s: float | None = None,
    thermal_margin_c: float | None = None,
    thermal_timeout_s: float | None = None,
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
    ``energy_s`` seconds of back-to-back calls after the samples give the energy per call
    (NVML energy counter; default 1 s or NSIGHTWRAP_ENERGY_S; 0 turns it off); ``thermal_margin_c`` first waits, up to
    ``thermal_timeout_s`` (60 s), until the GPU is that many degrees below its slowdown temperature
    (NSIGHTWRAP_THERMAL_MARGIN_C / _TIMEOUT_S set them for every benchmark of a run).
    """
    params = dict(params or {})
    base = name or getattr(fn, "__name__", "") or "bench"
    full = bench_name("bench" if base == "<lambda>" else base, params)
    _check_name(full)
    if not in_shard(full):  # another shard of `nsightwrap profile --shard` times it: touch no GPU
        return BenchResult.from_samples(
            full, [], params=params, method=skipped_method(current_pass()), flops=flops, bytes=bytes, timed=False
        )
    gpu = gpu_state()
    stage = current_pass()
    guard = thermal_guard(gpu.nvml, thermal_margin_c, thermal_timeout_s)  # outside the benchmark's range
    DOMAIN.push_range(message=full)
    try:
        if stage == contract.PASS_NCU:
            result = _profile_iterations(
                gpu, fn, full, params, flops, bytes, flush_l2, cuda_graph
            )
        else:
            rule = StopRule(min_samples, max_samples, rel_precision, budget_s)
            result = _measure(
                gpu, fn, full, params, flops, bytes, flush_l2, cuda_graph, graph_calls, hold_queue,
                subtract_overhead, rule, warmup_s, stage, energy_s,
            )  # fmt: skip
    finally:
        DOMAIN.pop_range()
    if guard is not None:
        result = replace(result, method={**result.method, "thermal_guard": guard})
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
    gpu: Gpu,
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
        DOMAIN.push_range(message=f"{contract.ITER_PREFIX}{i}")
        if api:
            torch.cuda.profiler.start()
        runner()
        if api:
            torch.cuda.profiler.stop()
        DOMAIN.pop_range()
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
    gpu: Gpu,
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
    energy_s: float | None = None,
) -> BenchResult:
    per_call_ns, warm_calls = warmup(gpu, fn, warmup_s)
    if flush_l2:
        gpu.flush()
    k = 1
    runner: Callable[[], Any] = fn
    if cuda_graph:
        k = _graph_calls(graph_calls, flush_l2, per_call_ns)
        runner = capture_graph(gpu, fn, k)

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
        # Under nsys the window's thousands of launches would only swell the trace.
        energy_window(gpu, runner, k, per_call_ns, sampler, 0.0 if stage == contract.PASS_NSYS else energy_s)
    probe_hz = probe_clock(gpu, runner, flush_l2, method, summarize(samples).median * k if samples else 0.0)
    return _finish(name, params, flops, nbytes, samples, windows, reason, rule, method, sampler, probe_hz)


def _sample_loop(
    gpu: Gpu,
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
        enqueue_s = enqueue_cost_s(gpu, runner, flush_l2, hold_probe_s)
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
            DOMAIN.push_range(message=f"{contract.ITER_PREFIX}{len(samples) + j}")
            runner()
            DOMAIN.pop_range()
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
        power=sampler.power_summary(windows),
    )
