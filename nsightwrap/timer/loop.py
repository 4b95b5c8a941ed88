"""In-process GPU timer: ``bench``, ``benchmark`` sweeps, ``BenchResult`` and ``Region``.

Imported inside the user's process, so it depends only on torch (imported lazily, on the first
measurement), nvtx, NVML, numpy and nsightwrap's own light modules (no pandas).

One sample is: [L2 flush: write then read] [GPU sleep holding the queue] [stamp] start-event
``iter<i>``{fn} end-event, [stamp], synchronize. The sample is queued while the GPU sleeps, so
the event window holds the GPU work of ``fn`` and not the CPU's launch latency; it is the only
sample queued, so nothing waits behind its end event (docs/timer.md says why that matters); the
two stamps give its SM clock. Times are in ns, clocks in Hz.
"""


from __future__ import annotations

import atexit
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from nsightwrap.core import contract
from nsightwrap.core.errors import UsageError
from nsightwrap.core.shard import in_shard, skipped_method
from nsightwrap.core.spacing import RewriteSpacing
from nsightwrap.timer.energy import energy_window
from nsightwrap.timer.gpu import (
    DOMAIN,
    EMPTY_ESTIMATE,
    STATE,
    Gpu,
    capture_graph,
    enqueue_cost_s,
    gpu_state,
    warmup,
    window_ns,
)
from nsightwrap.timer.kerneltime import (
    KERNEL_TIME_CALLS,
    KernelCalls,
    measure_kernel_time,
    profiler_busy,
)
from nsightwrap.timer.nvml import NvmlSampler
from nsightwrap.timer.result import BenchResult, Reason, bench_name
from nsightwrap.timer.sidecar import sidecar_path, write_sidecar
from nsightwrap.timer.stamps import Stamps, finite
from nsightwrap.timer.stats import (
    SETTLE_TOLERANCE,
    Stopper,
    StopReason,
    StopRule,
    median_or_none,
    settling_prefix,
    split_by_clock,
    summarize,
)
from nsightwrap.timer.thermal import thermal_guard
from nsightwrap.timer.traces import align, reason_names

#: Default throttle threshold: a sample whose SM clock is under this fraction of the GPU's
#: maximum SM clock is left out of the statistics (nvbench's default, 0.75).
DEFAULT_THROTTLE_THRESHOLD = 0.75
#: Host pause after a batch with throttled samples, and its cap as it grows (seconds).
THROTTLE_PAUSE_S = 0.05
THROTTLE_PAUSE_MAX_S = 0.5


@dataclass(frozen=True)
class MeasureSettings:
    """How one benchmark is measured: ``bench``'s arguments, checked, and the pass it runs under.

    The sample loop, the kernel-time calls and the energy window read only this; the sidecar's
    ``method`` record is built from it (``_method``) with what the measurement found.
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    flops: float | None = None
    nbytes: float | None = None
    flush_l2: bool = True
    cuda_graph: bool = False
    graph_calls: int | None = None
    hold_queue: bool = True
    subtract_overhead: bool = True
    rule: StopRule = field(default_factory=StopRule)
    warmup_s: float = 0.005
    stage: str | None = None
    energy_s: float | None = None
    throttle_threshold: float | None = DEFAULT_THROTTLE_THRESHOLD
    kernel_time: bool | None = None
    settle_tolerance: float | None = SETTLE_TOLERANCE


@dataclass(frozen=True)
class _Setup:
    """What was fixed before the first sample: calls per sample, the warm-up, the GPU's facts."""

    calls_per_sample: int = 1
    warmup_calls: int = 0
    per_call_ns: float = 0.0  # from the warm-up
    flush_bytes: int = 0
    max_sm_clock_hz: float | None = None
    throttle_threshold_hz: float | None = None
    stamps: str | None = "ok"  # or why the stamp kernel is missing


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


#: The sidecar is rewritten whole and grows with every benchmark: spaced rewrites, and a last
#: one at exit (``_write_sidecar``).
_SPACING = RewriteSpacing()


def _register(result: BenchResult, gpu: Gpu | None) -> None:
    results: list[BenchResult] = STATE["results"]
    results.append(result)
    run_dir = os.environ.get(contract.ENV_RUN_DIR)
    if current_pass() == contract.PASS_PLAIN and run_dir and gpu is not None:
        if STATE.get("sidecar") is None:
            atexit.register(_write_sidecar_at_exit)
        STATE["sidecar"] = (sidecar_path(run_dir), gpu.device, gpu.torch.__version__)
        STATE["sidecar_dirty"] = True
        _write_sidecar()


def _write_sidecar(*, force: bool = False) -> None:
    """Rewrite this process's sidecar with every result so far, when ``_SPACING`` says it is due
    (always when ``force``, as at exit): a script that raises keeps every benchmark, one killed
    outright those up to the last rewrite."""
    target = STATE.get("sidecar")
    if target is None or not STATE.get("sidecar_dirty") or not (force or _SPACING.due()):
        return
    t0 = time.monotonic()
    path, device, torch_version = target
    write_sidecar(path, STATE["results"], device, torch_version)
    STATE["sidecar_dirty"] = False
    _SPACING.wrote(t0)


def _write_sidecar_at_exit() -> None:
    # A traceback from an exit handler would be printed after the user's own output: one line.
    try:
        _write_sidecar(force=True)
    except OSError as exc:
        print(f"nsightwrap: could not write the timer sidecar ({exc}); check the run directory", file=sys.stderr)


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
    warmup_s: float = 0.005,
    verbose: bool = False,
    energy_s: float | None = None,
    thermal_margin_c: float | None = None,
    thermal_timeout_s: float | None = None,
    throttle_threshold: float | None = DEFAULT_THROTTLE_THRESHOLD,
    kernel_time: bool | None = None,
    settle_tolerance: float | None = SETTLE_TOLERANCE,
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
    Each sample's SM clock is measured on the GPU; samples under ``throttle_threshold`` times
    the maximum SM clock are left out of the statistics (None keeps them all), and so are the
    first samples while the clock is still more than ``settle_tolerance`` under the clock the
    benchmark settles at, coming back from earlier work (None keeps them).
    ``kernel_time`` adds the CUPTI kernel time of a few extra calls (``kernel_ns``); by default
    it is on except under the nsys and ncu passes and beside another profiler.
    """
    if throttle_threshold is not None and not 0 <= throttle_threshold < 1:
        raise UsageError(
            f"throttle_threshold={throttle_threshold} must be a fraction of the maximum SM clock below 1",
            hint="e.g. throttle_threshold=0.75 (nvbench's default), or None to keep every sample",
        )
    if settle_tolerance is not None and not 0 <= settle_tolerance < 1:
        raise UsageError(
            f"settle_tolerance={settle_tolerance} must be a fraction of the settled SM clock below 1",
            hint=f"e.g. settle_tolerance={SETTLE_TOLERANCE}, or None to keep the first samples",
        )
    params = dict(params or {})
    base = name or getattr(fn, "__name__", "") or "bench"
    full = bench_name("bench" if base == "<lambda>" else base, params)
    _check_name(full)
    if not in_shard(full):  # another shard of `nsightwrap profile --shard` times it: touch no GPU
        return BenchResult.from_samples(
            full, [], params=params, method=skipped_method(current_pass()), flops=flops, bytes=bytes, timed=False
        )
    settings = MeasureSettings(
        name=full, params=params, flops=flops, nbytes=bytes, flush_l2=flush_l2, cuda_graph=cuda_graph,
        graph_calls=graph_calls, hold_queue=hold_queue, subtract_overhead=subtract_overhead,
        rule=StopRule(min_samples, max_samples, rel_precision, budget_s), warmup_s=warmup_s,
        stage=current_pass(), energy_s=energy_s, throttle_threshold=throttle_threshold,
        kernel_time=kernel_time, settle_tolerance=settle_tolerance,
    )  # fmt: skip
    gpu = gpu_state()
    guard = thermal_guard(gpu.nvml, thermal_margin_c, thermal_timeout_s)  # outside the benchmark's range
    DOMAIN.push_range(message=full)
    try:
        if settings.stage == contract.PASS_NCU:
            result = _profile_iterations(gpu, fn, settings)
        else:
            result = _measure(gpu, fn, settings)
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


def _profile_iterations(gpu: Gpu, fn: Callable[[], Any], s: MeasureSettings) -> BenchResult:
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
        if s.flush_l2:
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
        "flush_l2": s.flush_l2,
        "cuda_graph": s.cuda_graph,
        "calls_per_sample": k,
        "hold_queue": False,
        "overhead_ns": 0.0,
    }
    return BenchResult.from_samples(
        s.name, [], params=dict(s.params), method=method, flops=s.flops, bytes=s.nbytes, timed=False
    )


def _measure(gpu: Gpu, fn: Callable[[], Any], s: MeasureSettings) -> BenchResult:
    per_call_ns, warm_calls = warmup(gpu, fn, s.warmup_s)
    if s.flush_l2:
        gpu.flush()
    k = 1
    runner: Callable[[], Any] = fn
    if s.cuda_graph:
        k = _graph_calls(s.graph_calls, s.flush_l2, per_call_ns)
        runner = capture_graph(gpu, fn, k)
    stamps, why = Stamps.load(
        gpu.torch, gpu.device["sm_count"], f"cuda:{gpu.index}", max(s.rule.max_samples, KERNEL_TIME_CALLS)
    )
    setup = _Setup(
        calls_per_sample=k, warmup_calls=warm_calls, per_call_ns=per_call_ns,
        flush_bytes=gpu.flush_bytes if s.flush_l2 else 0, max_sm_clock_hz=gpu.max_sm_hz,
        throttle_threshold_hz=_threshold_hz(gpu, s.throttle_threshold), stamps="ok" if stamps is not None else why,
    )  # fmt: skip
    # NVML runs from here on: its thread competes for the GIL, so the enqueue cost below is
    # measured with it running, as it will be during the timed loop.
    with NvmlSampler(gpu.nvml) as sampler:
        loop = _sample_loop(gpu, runner, s, setup, stamps)
        # Right after the samples, before the energy window heats the GPU: the same conditions.
        kernel, kernel_status = _kernel_time(gpu, runner, s, setup, loop, stamps)
        # Under nsys the window's thousands of launches would only swell the trace.
        if sampler.available:  # without NVML no counter reads the window: skip it
            energy_s = 0.0 if s.stage == contract.PASS_NSYS else s.energy_s
            steady = energy_window(gpu, runner, k, per_call_ns, energy_s)
            if steady is not None:
                sampler.windows["steady"] = steady
    return _finish(s, setup, loop, sampler, kernel, kernel_status)


def _threshold_hz(gpu: Gpu, fraction: float | None) -> float | None:
    """The SM clock under which a sample counts as throttled (a fraction of the GPU's maximum)."""
    if fraction is None or fraction <= 0:
        return None
    return fraction * gpu.max_sm_hz


@dataclass
class _Loop:
    """What the sample loop took: every window, per call, with its SM clock and host time."""

    raw_ns: list[float] = field(default_factory=list)  # event windows, nothing subtracted
    per_call_ns: list[float] = field(default_factory=list)  # (window - overhead) / calls per sample
    windows: list[tuple[float, float]] = field(default_factory=list)  # host time (s) of each window
    clocks: list[float | None] = field(default_factory=list)  # SM clock from the stamps, Hz
    spans_ns: list[float | None] = field(default_factory=list)  # globaltimer between the stamps
    kept: list[int] = field(default_factory=list)
    rejected: list[int] = field(default_factory=list)  # throttled
    settling: list[int] = field(default_factory=list)  # first samples, clock still coming back
    settled_clock_hz: float | None = None
    reason: StopReason = StopReason.PRECISION
    pauses_s: float = 0.0
    elapsed_s: float = 0.0
    # How the queue was held and what an empty window costs (set before the first sample).
    hold: bool = False
    sleep_cycles: int = 0
    enqueue_ns: float | None = None  # measured only when the queue was to be held
    enqueue_parts_ns: dict[str, float] = field(default_factory=dict)
    hold_skipped: str | None = None  # why the queue was not held although asked
    fn_blocks_host: bool = False
    empty_window_ns: float = 0.0
    overhead_ns: float = 0.0

    def kept_samples(self) -> list[float]:
        return [self.per_call_ns[i] for i in self.kept]


def _sample_loop(
    gpu: Gpu, runner: Callable[[], Any], st: MeasureSettings, setup: _Setup, stamps: Stamps | None
) -> _Loop:
    """Hold, flush, stamp, time, synchronize: one sample at a time (see ``gpu.window_ns``).

    Every few samples (``Stopper.next_batch``) the stamps are read, samples under the throttle
    threshold and the first samples while the clock settles are set aside, and the stopping rule
    looks at the rest. After a throttled batch the
    host pauses (``THROTTLE_PAUSE_S``, growing) so that the GPU can recover, as nvbench does.
    """
    torch = gpu.torch
    flush_l2, k, rule = st.flush_l2, setup.calls_per_sample, st.rule
    threshold_hz, settle_tolerance = setup.throttle_threshold_hz, st.settle_tolerance
    loop = _Loop()
    hold = st.hold_queue and gpu.has_sleep
    sleep_s = 0.0
    if st.hold_queue and not gpu.has_sleep:
        loop.hold_skipped = "torch.cuda._sleep is missing in this torch"
    if hold:
        hold_probe_s = 0.01
        parts: dict[str, float] = {}
        enqueue_s = enqueue_cost_s(gpu, runner, flush_l2, hold_probe_s, stamps, parts)
        loop.enqueue_ns = enqueue_s * 1e9
        loop.enqueue_parts_ns = {name: v * 1e9 for name, v in parts.items()}
        if enqueue_s > 0.5 * hold_probe_s:
            # fn blocks the host (a synchronize, .item(), a host copy): the queue cannot be held.
            hold = False
            loop.hold_skipped = "fn blocks the host while queueing"
            loop.fn_blocks_host = True
        else:
            # Long enough to cover queueing flush + stamp + events + fn behind it, with a margin.
            sleep_s = 1.5 * enqueue_s + 20e-6
            loop.sleep_cycles = int(sleep_s * gpu.max_sm_hz)
    loop.hold = hold
    hold_cycles = loop.sleep_cycles if hold else 0
    loop.empty_window_ns = gpu.measure_empty_window(hold_cycles=hold_cycles, flush=flush_l2, stamps=stamps)
    overhead = loop.empty_window_ns if st.subtract_overhead and (hold or st.cuda_graph) else 0.0
    loop.overhead_ns = overhead

    s, e = gpu.event(), gpu.event()  # one pair: each sample is synchronized before the next
    stopper = Stopper(rule)
    per_sample_s = sleep_s + (setup.per_call_ns * k) / 1e9 + (80e-6 if flush_l2 else 0.0) + 40e-6
    pause = THROTTLE_PAUSE_S
    reason: StopReason | None = None
    torch.cuda.synchronize()
    stopper.start()
    next_check = stopper.next_batch(0, per_sample_s)
    checked = 0
    while reason is None:
        i = len(loop.raw_ns)
        w = window_ns(gpu, runner, s, e, hold_cycles=hold_cycles, flush=flush_l2, stamps=stamps, index=i)
        t_end = time.perf_counter()
        loop.raw_ns.append(w)
        loop.per_call_ns.append((w - overhead) / k)
        loop.windows.append((t_end - w * 1e-9, t_end))
        if len(loop.raw_ns) < next_check:
            continue
        _split(loop, stamps, threshold_hz, settle_tolerance)
        reason = stopper.check(loop.kept_samples(), taken=len(loop.raw_ns))
        fresh = [j for j in loop.rejected if j >= checked]
        checked = len(loop.raw_ns)
        if reason is None and fresh:
            # Throttled: give the GPU a moment to recover (counts against the budget).
            time.sleep(pause)
            loop.pauses_s += pause
            pause = min(pause * 1.5, THROTTLE_PAUSE_MAX_S)
            reason = stopper.check(loop.kept_samples(), taken=len(loop.raw_ns))
        elif not fresh:
            pause = THROTTLE_PAUSE_S
        per_sample_s = max(stopper.elapsed_s - loop.pauses_s, 1e-6) / len(loop.raw_ns)
        next_check = len(loop.raw_ns) + stopper.next_batch(len(loop.raw_ns), per_sample_s)
    _split(loop, stamps, threshold_hz, settle_tolerance)
    loop.reason = reason
    loop.elapsed_s = stopper.elapsed_s
    return loop


def _split(
    loop: _Loop, stamps: Stamps | None, threshold_hz: float | None, settle_tolerance: float | None = None
) -> None:
    """Read the stamps taken so far and split the samples into kept, throttled and settling (the
    first ones, while the clock comes back from earlier work: ``stats.settling_prefix``)."""
    n = len(loop.raw_ns)
    if stamps is not None:
        loop.clocks, loop.spans_ns = stamps.read(n)
    else:
        loop.clocks, loop.spans_ns = [None] * n, [None] * n
    kept, loop.rejected = split_by_clock(loop.clocks, threshold_hz)
    first, loop.settled_clock_hz = settling_prefix(loop.clocks, settle_tolerance)
    loop.settling = [i for i in kept if i < first]
    loop.kept = [i for i in kept if i >= first]


def _kernel_time(
    gpu: Gpu, runner: Callable[[], Any], st: MeasureSettings, setup: _Setup, loop: _Loop, stamps: Stamps | None
) -> tuple[KernelCalls | None, str | dict[str, Any]]:
    """The CUPTI kernel time of a few extra calls (``timer.kerneltime``), where it is safe, and
    the ``kernel_time`` method entry: its facts, or why it is off."""
    why = None
    if st.kernel_time is False:
        why = "off (kernel_time=False)"
    elif st.stage in (contract.PASS_NSYS, contract.PASS_NCU):
        why = f"off under the {st.stage} pass (one CUPTI subscriber per process)"
    elif profiler_busy(gpu.torch):
        why = "off: another profiler is active in this process"
    elif stamps is None:
        why = "off: needs the stamp kernel to tell the call's kernels apart"
    if why is not None:
        return None, why
    hold_cycles = loop.sleep_cycles if loop.hold else 0
    s, e = gpu.event(), gpu.event()
    k = setup.calls_per_sample

    def take(j: int) -> None:
        window_ns(gpu, runner, s, e, hold_cycles=hold_cycles, flush=st.flush_l2, stamps=stamps, index=j, nvtx=False)

    got, why_not = measure_kernel_time(gpu.torch, take)
    if got is None:
        return None, why_not or "unavailable"
    copy_ns = tuple(v / k for v in got.copy_ns)
    status = {
        "source": "cupti (torch.profiler)",
        "calls": len(got.kernel_ns),
        "kernels_per_call": median_or_none([float(n) for n in got.kernels]),
        "copies_per_call": median_or_none([float(n) for n in got.copies]),
        # ns per call of fn (a graph replay divided by its calls, as kernel_ns is)
        "copy_ns_per_call": median_or_none(copy_ns),
    }
    return KernelCalls(tuple(v / k for v in got.kernel_ns), got.kernels, got.copies, copy_ns), status


def _method(
    st: MeasureSettings, setup: _Setup, loop: _Loop, kernel_status: str | dict[str, Any] | None
) -> dict[str, Any]:
    """The ``method`` record of a timed benchmark (sidecar field, docs/timer.md), in one place:
    the settings, what was fixed before the first sample, and how the queue was held. ``_finish``
    adds what the samples showed."""
    method: dict[str, Any] = {
        "pass": st.stage or "standalone",
        "timing": "cuda_events",
        "samples_per_sync": 1,
        "flush_l2": st.flush_l2,
        "flush": "write+read" if st.flush_l2 else "none",
        "flush_bytes": setup.flush_bytes,
        "cuda_graph": st.cuda_graph,
        "calls_per_sample": setup.calls_per_sample,
        "warmup_calls": setup.warmup_calls,
        "hold_queue": loop.hold,
        "sleep_cycles": loop.sleep_cycles,
        "throttle_threshold": st.throttle_threshold,
        "throttle_threshold_hz": setup.throttle_threshold_hz,
        "max_sm_clock_hz": setup.max_sm_clock_hz,
        "settle_tolerance": st.settle_tolerance,
        "stamps": setup.stamps,
    }
    if loop.enqueue_ns is not None:
        method["enqueue_ns"] = loop.enqueue_ns
        method["enqueue_parts_ns"] = dict(loop.enqueue_parts_ns)
    if loop.hold_skipped is not None:
        method["hold_queue_skipped"] = loop.hold_skipped
    if loop.fn_blocks_host:
        method["fn_blocks_host"] = True
    method["empty_window_ns"] = loop.empty_window_ns
    method["empty_window_estimate"] = EMPTY_ESTIMATE
    method["overhead_ns"] = loop.overhead_ns
    if kernel_status is not None:
        method["kernel_time"] = kernel_status
    return method


def _finish(
    st: MeasureSettings,
    setup: _Setup,
    loop: _Loop,
    sampler: NvmlSampler,
    kernel: KernelCalls | None = None,
    kernel_status: str | dict[str, Any] | None = None,
) -> BenchResult:
    rule = st.rule
    method = _method(st, setup, loop, kernel_status)
    reasons: list[Reason] = []
    kept, rejected = list(loop.kept), list(loop.rejected)
    if not kept:  # every sample throttled: report them all rather than nothing, and say so
        kept, rejected = list(range(len(loop.raw_ns))), []
        reasons.append(Reason.EVERY_SAMPLE_THROTTLED)
        if loop.reason is not StopReason.THROTTLED:
            loop.reason = StopReason.THROTTLED
    elif rejected:
        reasons.append(Reason.THROTTLED_SAMPLES_LEFT_OUT)
    in_stats = set(kept)  # every sample throttled: the settling ones are among them
    settling = [i for i in loop.settling if i not in in_stats]
    if settling:
        reasons.append(Reason.SETTLING_SAMPLES_LEFT_OUT)
    # Left out, not lost: the settling samples and the clock the benchmark settled at.
    method["settling_samples"] = len(settling)
    method["settling_ns"] = [loop.per_call_ns[i] for i in settling]
    method["settled_clock_hz"] = loop.settled_clock_hz
    samples = [loop.per_call_ns[i] for i in kept]
    stats = summarize(samples)
    method["stop_reason"] = loop.reason.value
    method["rel_precision_target"] = rule.rel_precision
    method["budget_s"] = rule.budget_s
    method["rel_ci"] = stats.rel_ci
    method["samples_taken"] = len(loop.raw_ns)
    method["throttle_pauses_s"] = loop.pauses_s
    method["samples_per_s"] = len(loop.raw_ns) / loop.elapsed_s if loop.elapsed_s > 0 else None
    if loop.reason in (StopReason.BUDGET, StopReason.MAX_SAMPLES) and not stats.rel_ci <= rule.rel_precision:
        reasons.append(Reason.PRECISION_NOT_REACHED)
    if loop.fn_blocks_host:
        reasons.append(Reason.FN_BLOCKS_HOST)

    trace = sampler.trace()
    nvml = align(trace, [loop.windows[i] for i in kept])
    method["nvml_clock_hz"] = nvml.median_hz
    stamp_clocks = [loop.clocks[i] if i < len(loop.clocks) else None for i in kept]
    measured = [float(c) for c in stamp_clocks if c is not None and finite(c)]
    spans = [float(v) for v in loop.spans_ns if v is not None and finite(v)]
    method["stamp_clock_hz"] = float(summarize(measured).median) if measured else None
    method["stamp_interval_ns"] = float(summarize(spans).median) if spans else None
    method["sample_clocks_measured"] = len(measured)
    if measured:
        # Per sample: the clock measured on the GPU; NVML's reading only where the stamps are missing.
        per_sample: tuple[float | None, ...] | None = tuple(
            c if finite(c) else (v if math.isfinite(v) else None)
            for c, v in zip(stamp_clocks, nvml.sample_clock_hz, strict=True)
        )
        method["sample_clock_source"] = "stamps"
    elif nvml.median_hz is not None:
        per_sample = tuple(v if math.isfinite(v) else None for v in nvml.sample_clock_hz)
        method["sample_clock_source"] = "nvml"
        reasons.append(Reason.NO_GPU_CLOCK)
    else:
        per_sample = None
        method["sample_clock_source"] = "none"
        reasons.append(Reason.NO_GPU_CLOCK)
    # The benchmark's clock: the median of the stamps' clocks (measured on the GPU around fn),
    # else NVML's.
    if measured:
        sm_hz, source = method["stamp_clock_hz"], "stamps"
    elif nvml.median_hz is not None:
        sm_hz, source = nvml.median_hz, "nvml"
    else:
        sm_hz, source = None, "none"
    return BenchResult.from_samples(
        st.name,
        samples,
        params=dict(st.params),
        sm_clock_hz=sm_hz,
        clock_source=source,
        sample_clock_hz=per_sample,
        throttled=len(rejected),
        throttle_reasons=reason_names(nvml.reasons),
        method=method,
        flops=st.flops,
        bytes=st.nbytes,
        power=sampler.power_summary(loop.windows),
        rejected_ns=tuple(loop.per_call_ns[i] for i in rejected),
        rejected_clock_hz=tuple(loop.clocks[i] for i in rejected),
        kernel_ns=median_or_none(kernel.kernel_ns) if kernel else None,
        kernel_samples_ns=kernel.kernel_ns if kernel else (),
        reasons=tuple(r.value for r in reasons),
    )
