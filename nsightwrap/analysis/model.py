"""Results of an analysis as plain data: frozen dataclasses that every exporter reads.

Units: time in ns, clocks in Hz, sizes in bytes, ratios as plain floats (1.0 = agree).
Exporters format these; they never compute new numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

#: Version of the report JSON (``"format": "nsightwrap-report"``). The reader refuses any
#: version outside ``READABLE_VERSIONS``. History (pyperf style: one line per change, newest last):
#:   1 (0.1.0): first version: environment, settings, benchmarks with timer / ncu / nsys
#:              blocks, per-kernel rows, ratio, verdict and causes, plain-pass clock trace.
#:   2 (0.2.0): per benchmark ``source`` and ``user_value_ns`` (timings captured from unmodified
#:              scripts), ``gap`` (the decomposition of timer - ncu), ``roofline``, ``power``;
#:              per kernel the measured clock elasticity and the base-clock ncu measurement.
#:   3: ``detail`` (top level): false by default, where the per-iteration and per-kernel rows
#:      (``clock_trace``, ``ncu.kernels``, nsys's per-iteration lists, ``roofline.kernels``, the
#:      clock part's ``evidence.kernels``) are left out and ``ncu.elasticity``,
#:      ``ncu.elasticity_source`` and ``nsys.iterations`` summarise them; true (``--detail``):
#:      every row, as version 2.
#:   4: without ``detail``, ``timer.samples_ns`` rounded to 0.1 ns and the per-sample clocks as
#:      ``timer.sample_clock_runs`` ([clock, count] pairs; ``sample_clock_hz`` null); with
#:      ``detail`` as version 3.
#:   5: without ``detail``, the timer's samples as a histogram: ``timer.sample_runs`` ([value,
#:      count] pairs in ascending order, ``samples_ns`` null) with ``sample_clock_runs`` in that
#:      order; with ``detail`` as version 4.
FORMAT_VERSION = 5
#: Report versions this nsightwrap reads (versions 2 to 5 only added, left out or packed fields).
READABLE_VERSIONS = (1, 2, 3, 4, 5)


class Verdict(str, Enum):
    """What the reconciliation says about one benchmark's in-process timing."""

    OK = "ok"  # timer and ncu (at the benchmark's measured clock) agree within the tolerance
    #: Outside the tolerance, and measured physical parts that are no error of the timing
    #: (a throttled clock, a dirty-L2 flush the script chose, copies inside the window) explain it.
    EXPLAINED = "explained"
    #: The timing is wrong for what it claims (launch-bound, warm-up inside the window, work on
    #: another stream missed, event cost), or the sources disagree about what ran.
    FLAGGED = "flagged"
    UNEXPLAINED = "unexplained"  # outside the tolerance with a residual over 5% of the timing
    #: Outside the tolerance, the residual within 5% of the timing but over 10% of the gap (and
    #: over the noise floor): measured parts explain only part of it.
    PARTLY_EXPLAINED = "partly_explained"
    NO_TIMER = "no_timer"  # no in-process timings: only the profilers' view is reported
    NO_NCU = "no_ncu"  # no ncu pass: nothing to check the timer against
    NO_DATA = "no_data"  # the benchmark appears nowhere with usable numbers


class CauseCode(str, Enum):
    """Reason codes of a flagged benchmark (docs/reconciliation.md explains each)."""

    CLOCK = "clock"
    LAUNCH_OVERHEAD = "launch_overhead"
    CACHE_STATE = "cache_state"
    NON_KERNEL_WORK = "non_kernel_work"
    OVERLAP = "overlap"
    EXTRA_OR_MISSING_KERNELS = "extra_or_missing_kernels"
    #: Read in reports of earlier versions only: no part or cause is the profiler's own any more
    #: (the parts measured under nsys are brought to the plain pass; analysis/gap/slowdown.py).
    PROFILER_OVERHEAD = "profiler_overhead"
    UNEXPLAINED = "unexplained"
    #: Parts of the gap's decomposition (``Gap``) that became causes in version 2.
    FRONT_END = "front_end"  # event and dispatch cost in every window beyond what ncu counts
    GAPS = "gaps"  # idle time between the benchmark's ops beyond their dispatch
    MISSED_WORK = "missed_work"  # work launched in the window that ended after the end event
    WARM_UP = "warm_up"  # a kernel's or library's first use in the process inside the window
    #: ncu's own per-kernel front end that the window never held (graph nodes ncu serializes).
    NCU_FRONT_END = "ncu_front_end"


class ClockModel(str, Enum):
    """How a kernel's duration is carried to another SM clock."""

    COMPUTE = "compute"  # time follows the SM clock: t(f) = cycles / f
    MEMORY = "memory"  # DRAM-bound: time does not follow the SM clock, kept as measured
    ASSUMED_COMPUTE = "compute_assumed"  # throughput counters missing: rescaled as compute


Evidence = Mapping[str, "float | int | str | None"]


def _ns(v: float | None) -> str:
    """A duration for a repr: ``17.31 us``; ``-`` when unknown (reprs stay one short line)."""
    if v is None or v != v:
        return "-"
    return f"{v / 1e6:.3f} ms" if abs(v) >= 1e6 else f"{v / 1e3:.2f} us" if abs(v) >= 1e3 else f"{v:.0f} ns"


def _hz(v: float | None) -> str:
    return "-" if v is None or v != v else f"{v / 1e9:.3f} GHz"


@dataclass(frozen=True)
class Cause:
    """One explanation of a discrepancy, with the numbers behind it and what to do."""

    code: CauseCode
    message: str
    evidence: Evidence
    fix: str


@dataclass(frozen=True)
class KernelTiming:
    """One kernel profiled by ncu inside a measured iteration, with its clock model."""

    iteration: int
    kernel: str
    kernel_short: str
    duration_ns: float
    sm_clock_hz: float | None
    cycles: float | None
    sm_throughput_pct: float | None
    memory_throughput_pct: float | None
    clock_model: ClockModel
    normalized_ns: float
    #: Clock elasticity e of duration ~ f**-e (1: follows the SM clock, 0: does not).
    elasticity: float | None = None
    #: ``measured`` (ncu at two clock settings) or ``heuristic`` (from throughput counters).
    elasticity_source: str = "heuristic"
    #: The same kernel under ``ncu --clock-control base`` (the clock-sweep pass), where it ran.
    base_duration_ns: float | None = None
    base_sm_clock_hz: float | None = None
    #: Where ``duration_ns`` and ``sm_clock_hz`` come from: ``duration pass`` (ncu with those two
    #: metrics only, one replay pass) or ``ncu pass`` (the pass with every counter).
    duration_source: str = "ncu pass"
    #: The ncu pass's own duration of this kernel (its counters take many replay passes), where
    #: ``duration_ns`` comes from the duration pass.
    counters_duration_ns: float | None = None
    #: DRAM bytes read and written by the kernel in ncu's pass (on ncu's clean L2), where counted.
    dram_bytes: float | None = None

    def __repr__(self) -> str:
        return f"KernelTiming({self.kernel_short!r}, iteration {self.iteration}, {_ns(self.duration_ns)})"


@dataclass(frozen=True)
class TimerStats:
    """The in-process timer's numbers for one benchmark (plain pass)."""

    samples_ns: tuple[float, ...]
    median_ns: float
    min_ns: float
    mean_ns: float
    stdev_ns: float
    iqr_ns: float
    n: int
    sm_clock_hz: float | None
    clock_source: str
    sample_clock_hz: tuple[float, ...] | None
    method: Mapping[str, Any]
    #: CUPTI kernel time of one call: median over a few extra, untimed calls of the sum of the
    #: call's kernel durations (ns; ``torch.profiler``), and the per-call values. None where the
    #: reading was off (under nsys or ncu, beside another profiler) or failed.
    kernel_ns: float | None = None
    kernel_samples_ns: tuple[float, ...] = ()
    #: Samples left out of the statistics because their SM clock was under the threshold.
    throttled: int = 0
    rejected_ns: tuple[float, ...] = ()
    rejected_clock_hz: tuple[float | None, ...] = ()
    #: The threshold (Hz; ``throttle_threshold`` x the maximum SM clock), None when off.
    throttle_threshold_hz: float | None = None
    #: First samples left out while the SM clock came back from earlier work, and the clock
    #: (Hz) the benchmark settled at.
    settling: int = 0
    settled_clock_hz: float | None = None
    #: Where ``sample_clock_hz`` came from: ``stamps`` (measured on the GPU), ``nvml`` or ``none``.
    sample_clock_source: str = "none"
    #: Reason codes of the timer (``nsightwrap.timer.result.Reason``).
    reasons: tuple[str, ...] = ()

    @property
    def spread(self) -> float | None:
        """The interquartile range over the median (0.05: the middle half of the samples spans 5%
        of the median); None with fewer than 2 samples, where there is no spread to measure."""
        if self.n < 2 or not self.median_ns or not math.isfinite(self.iqr_ns) or not math.isfinite(self.median_ns):
            return None
        return self.iqr_ns / abs(self.median_ns)

    def __repr__(self) -> str:
        return f"TimerStats(median {_ns(self.median_ns)}, n={self.n}, clock {_hz(self.sm_clock_hz)})"


@dataclass(frozen=True)
class NcuStats:
    """ncu's view of one benchmark: per measured iteration, the sum over its kernels."""

    iterations_ns: tuple[float, ...]
    iterations_cycles: tuple[float, ...]
    normalized_iterations_ns: tuple[float, ...]
    median_ns: float | None
    normalized_ns: float | None
    sm_clock_hz: float | None  # total cycles / total duration over the measured kernels
    kernels_per_iteration: tuple[int, ...]
    kernel_names: tuple[str, ...]  # short names of one iteration's kernels, in launch order
    excluded_kernels: int  # kernels in the benchmark range but outside every iteration range
    kernels: tuple[KernelTiming, ...]

    def __repr__(self) -> str:
        return (
            f"NcuStats(median {_ns(self.median_ns)}, at the reference clock {_ns(self.normalized_ns)}, "
            f"{len(self.iterations_ns)} iterations, {len(self.kernels)} kernels)"
        )


@dataclass(frozen=True)
class NsysStats:
    """nsys's view of one benchmark, per measured iteration (ops launched inside its range)."""

    iterations_ns: tuple[float, ...]  # kernel duration sum
    busy_ns: tuple[float, ...]  # union of every op's interval
    span_ns: tuple[float, ...]  # first start to last end
    op_sum_ns: tuple[float, ...]  # sum of every op's duration (> busy when ops overlap)
    non_kernel_ns: tuple[float, ...]  # memcpy + memset duration sum
    kernels_per_iteration: tuple[int, ...]
    memcpy_per_iteration: tuple[int, ...]
    memset_per_iteration: tuple[int, ...]
    streams: int
    kernel_names: tuple[str, ...]
    median_ns: float | None
    busy_median_ns: float | None
    span_median_ns: float | None
    gap_median_ns: float | None  # span - busy

    def __repr__(self) -> str:
        return (
            f"NsysStats(kernels {_ns(self.median_ns)}, busy {_ns(self.busy_median_ns)}, "
            f"{len(self.iterations_ns)} iterations, {self.streams} stream(s))"
        )


@dataclass(frozen=True)
class MeasuredClock:
    """The SM clock a benchmark's own kernels ran at, measured on the GPU.

    ``source`` names the measurement: ``nsys GPU metrics`` (GPC clock samples of the nsys pass
    weighted by their overlap with the benchmark's kernels, not the whole window: flushes and
    gaps run at other clocks) or ``timer stamps`` (clock64 against globaltimer around each
    sample of nsightwrap.bench). ``min_hz``/``max_hz`` are over its windows (iterations).
    """

    mean_hz: float
    min_hz: float
    max_hz: float
    windows: int
    samples: int
    source: str
    #: The nsys pass's timing of the same benchmark over the plain pass's (1.0: no slow-down).
    slowdown: float | None = None


@dataclass(frozen=True)
class BenchmarkResult:
    """Everything known about one benchmark, and the verdict."""

    name: str
    params: Mapping[str, Any]
    nvtx_path: str
    iter_prefix: str
    timer: TimerStats | None
    ncu: NcuStats | None
    nsys: NsysStats | None
    ref_clock_hz: float | None
    ref_clock_source: str
    #: Timer median / ncu at the clock the verdict used: ncu's kernels carried to the loop's clock
    #: where the gap's ``clock`` part did so (``ratio_clock_hz``), else ncu's own clocks.
    ratio: float | None
    ratio_raw: float | None  # timer median / ncu at the clocks ncu measured
    verdict: Verdict
    causes: tuple[Cause, ...]
    notes: tuple[str, ...] = ()
    #: Where the timing came from: ``kind`` (``nsightwrap_bench``, ``do_bench``,
    #: ``do_bench_cudagraph``, ``torch_benchmark``, ``cuda_events``, ``nvtx_range``), ``site``
    #: (``file:line``), ``call`` (the n-th call from that site), ``label``.
    source: Mapping[str, Any] = field(default_factory=lambda: {"kind": "nsightwrap_bench"})
    #: What the user's own code got back (do_bench's return value, Measurement.median, ...), ns.
    user_value_ns: float | None = None
    #: The decomposition of timer - ncu into measured parts (see ``Gap``).
    gap: Gap | None = None
    #: Achieved throughput against the measured roofs of this GPU.
    roofline: Roofline | None = None
    #: Energy, power and temperature during the timed samples.
    power: PowerStats | None = None
    #: In a run merged from shards: the UUID of the GPU this benchmark ran on, and its shard.
    gpu_uuid: str | None = None
    shard: int | None = None
    #: The SM clock measured on the GPU for this benchmark (its ratio is at ``mean_hz``); None:
    #: no GPU-side measurement, the ratio is at ncu's own clock (``ref_clock_source`` says why).
    clock: MeasuredClock | None = None
    #: Launches of one op per window when a window holds several (an amortized loop), else 1.
    launches_per_window: int = 1
    #: The SM clock ``ratio`` is at (the loop's clock the verdict carried ncu's kernels to; None:
    #: ncu's own clocks, as ``ratio_raw``) and ncu's time per call at that clock (ns).
    ratio_clock_hz: float | None = None
    ncu_at_ratio_ns: float | None = None
    #: The timer's samples spread wider than the tolerance (interquartile range over the median):
    #: the verdict cannot be trusted to that tolerance.
    noisy: bool = False
    #: Where the ratio is at ncu's own clock because the loop's measured clock was contradicted by
    #: its kernels' own durations, and the timing over those durations (at the clock the loop ran
    #: at) falls on the other side of the tolerance: that ratio. The verdict cannot be trusted to
    #: the tolerance; None otherwise.
    clock_unresolved_ratio: float | None = None

    def __repr__(self) -> str:
        ratio = "-" if self.ratio is None else f"{self.ratio:.3f}"
        return (
            f"BenchmarkResult({self.name!r}, {self.verdict.value}, ratio {ratio}, "
            f"timer {_ns(self.timer.median_ns if self.timer else None)}, "
            f"ncu {_ns(self.ncu.normalized_ns if self.ncu else None)}, {len(self.causes)} cause(s))"
        )


@dataclass(frozen=True)
class GapPart:
    """One measured part of a benchmark's gap (ns; positive: the timing is longer than ncu)."""

    cause: str
    ns: float
    evidence: Mapping[str, Any]
    fix: str
    message: str = ""
    #: Whether the part is something the user's timing method can change; clock, gaps and
    #: overlap are not. The verdict weighs the parts that are errors of the timing
    #: (analysis/gap/verdict.py).
    actionable: bool = False

    def __repr__(self) -> str:
        return f"GapPart({self.cause!r}, {_ns(self.ns)})"


@dataclass(frozen=True)
class Gap:
    """timer - ncu (ncu at its own clock) = sum of the parts + residual, exactly.

    Every value is rounded to 1/8 ns, so the sum is exact in binary floating point in any order
    (analysis/gap/; docs/reconciliation.md).
    """

    total_ns: float
    parts: tuple[GapPart, ...]
    residual_ns: float
    #: The two ends of the gap: the timer's median per call and ncu's per-iteration median.
    timer_ns: float | None = None
    ncu_ns: float | None = None
    #: Which measurements of the run existed for this benchmark (name -> what it was, or None
    #: where it was missing): a part whose measurement is missing is left out, never guessed.
    measurements: Mapping[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        parts = ", ".join(f"{p.cause} {_ns(p.ns)}" for p in self.parts)
        return f"Gap(total {_ns(self.total_ns)} = {parts or 'no parts'}, residual {_ns(self.residual_ns)})"


@dataclass(frozen=True)
class Roofline:
    """Achieved FLOP/s and bytes/s of one benchmark against the measured (or datasheet) roofs."""

    flops: float | None
    bytes: float | None
    flops_per_s: float | None
    bytes_per_s: float | None
    intensity: float | None  # FLOP per byte
    bound: str | None  # "memory" or "compute", from the ridge point
    roof_pct: float | None  # % of the roof that applies at this intensity
    peak_source: str  # "measured", "datasheet" or "none"
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: The time the rates come from (ns per call), whose (``timer`` or ``ncu``), at which SM clock.
    time_ns: float | None = None
    time_source: str = ""
    clock_hz: float | None = None
    #: Where the work came from: ``bench`` (flops=/bytes= given to the timer) or ``ncu`` counters.
    flops_source: str = ""
    bytes_source: str = ""
    #: The compute roof held against (``bf16``, ``fp32``, ...), why it was chosen, and the roofs
    #: at ``clock_hz``: compute scaled by clock / the roof's clock, memory as measured.
    compute_roof: str | None = None
    roof_reason: str = ""
    roof_flops_per_s: float | None = None
    roof_bytes_per_s: float | None = None
    ridge_intensity: float | None = None  # FLOP/byte where the two roofs meet, at clock_hz
    #: The same per profiled kernel of one measured iteration, from ncu counters.
    kernels: tuple[KernelRoofline, ...] = ()
    #: What ``clock_hz`` is (the GPU-measured clock of the loop, ncu's own, the timer's probe)
    #: and the clock the compute roof was measured at (it is scaled from there to ``clock_hz``).
    clock_source: str = ""
    roof_clock_hz: float | None = None
    #: ``placed`` (on the chart at ``roof_pct``), ``uncounted`` (tensor work whose FLOPs this
    #: run did not count: not placed), ``inconsistent`` (above 100% of its roof: ``over_roof_pct``
    #: and the cause in ``issue``; ``roof_pct`` is None, never drawn) or ``unplaced`` (no time or roof).
    status: str = "placed"
    issue: str = ""
    over_roof_pct: float | None = None

    def __repr__(self) -> str:
        pct = "-" if self.roof_pct is None else f"{self.roof_pct:.0f}%"
        return f"Roofline({self.bound or 'unknown'}-bound, {pct} of the roof, {len(self.kernels)} kernels)"


@dataclass(frozen=True)
class KernelRoofline:
    """One profiled kernel against the roofs: work from ncu counters, time and clock from ncu."""

    iteration: int
    kernel: str
    kernel_short: str
    duration_ns: float
    sm_clock_hz: float | None
    flops: float | None
    bytes: float | None
    flops_per_s: float | None
    bytes_per_s: float | None
    intensity: float | None
    bound: str | None
    roof_pct: float | None
    compute_roof: str | None
    roof_flops_per_s: float | None = None
    roof_bytes_per_s: float | None = None
    #: FLOPs by kind (``fp32``, ``fp16``, ``fp64``, ``tensor_bf16``, ...), as counted.
    flops_by_kind: Mapping[str, float] = field(default_factory=dict)
    #: As ``Roofline.status`` / ``issue`` / ``over_roof_pct``.
    status: str = "placed"
    issue: str = ""
    over_roof_pct: float | None = None


@dataclass(frozen=True)
class RoofPeak:
    """One compute roof: FLOP/s (OP/s for int8) at ``sm_clock_hz``."""

    name: str
    flops_per_s: float
    sm_clock_hz: float | None


@dataclass(frozen=True)
class Roofs:
    """The roofs a report holds benchmarks against, and where they come from.

    ``source``: ``measured`` (a device file of ``nsightwrap device``), ``datasheet`` (NVIDIA's
    published peaks, shipped with nsightwrap for H100/H200) or ``none``; ``where``: the device
    file's path, the datasheet, or why no roof is known."""

    source: str
    where: str
    gpu_name: str | None = None
    gpu_uuid: str | None = None
    memory_bytes_per_s: float | None = None
    memory_name: str = ""
    peaks: tuple[RoofPeak, ...] = ()
    l2_bytes_per_s: float | None = None
    mode: str = ""
    created: str = ""
    note: str = ""


@dataclass(frozen=True)
class PowerStats:
    """NVML energy, power and temperature of one benchmark (docs/power.md). J, W, C, s, ns.

    ``energy_j`` / ``energy_per_call_j`` / ``mean_w`` come from the energy window (``fn`` called
    back to back after the timed samples, ``method`` ``steady``), or, where it did not run, from
    the timed loop itself (``method`` ``timed_loop``: flushes and queue holds included).
    ``peak_w`` and ``peak_temp_c`` cover both; ``timed_*`` are the timed samples' own figures.
    """

    energy_j: float | None
    energy_per_call_j: float | None
    mean_w: float | None
    peak_w: float | None
    peak_temp_c: float | None
    throttle_reasons: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: Energy per call of each block of the energy window: the samples ``compare`` judges.
    energy_samples_j: tuple[float, ...] = ()
    pj_per_flop: float | None = None  # energy per call / flops, in pJ
    pj_per_byte: float | None = None  # energy per call / bytes, in pJ
    method: str = "steady"  # "steady" or "timed_loop"
    calls: int | None = None  # calls the energy figure covers
    window_s: float | None = None
    ns_per_call: float | None = None  # GPU time per call in that window (CUDA events)
    timed_energy_j: float | None = None
    timed_s: float | None = None
    timed_mean_w: float | None = None
    timed_peak_w: float | None = None
    start_temp_c: float | None = None
    counter_step_j: float | None = None  # the energy counter's median step and update interval
    counter_update_s: float | None = None
    power_kind: str = "instant"  # "instant" (NVML field) or "average" (a 1 s average)
    #: The thermal guard: seconds waited before the benchmark (None: no guard), and whether it gave up.
    thermal_wait_s: float | None = None
    thermal_timed_out: bool = False
    #: Where the benchmark sits on the plain pass's timeline (seconds from its first sample).
    t_start_s: float | None = None
    t_end_s: float | None = None


@dataclass(frozen=True)
class Environment:
    """Fingerprint of the machine and the run (manifest + nvidia-smi)."""

    gpu_name: str | None = None
    driver: str | None = None
    cuda: str | None = None
    torch: str | None = None
    ncu_version: str | None = None
    nsys_version: str | None = None
    persistence_mode: str | None = None
    sm_clock_max_hz: float | None = None
    sm_clock_base_hz: float | None = None  # default applications clock
    throttle_reasons: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    ncu_cache_control: str = "all"
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Settings:
    """The knobs the analysis ran with."""

    tolerance: float
    clock_ref: str


@dataclass(frozen=True)
class ClockSample:
    """One nvidia-smi sample of the plain pass (seconds from the first sample)."""

    t_s: float
    sm_clock_hz: float
    power_w: float | None = None
    temperature_c: float | None = None


@dataclass(frozen=True)
class RunResult:
    """The analysis of one run directory."""

    run_dir: str
    environment: Environment
    settings: Settings
    benchmarks: tuple[BenchmarkResult, ...]
    timer_found: bool  # False: benchmarks came from the target's own NVTX ranges
    clock_trace: tuple[ClockSample, ...] = ()
    notes: tuple[str, ...] = ()
    #: One line per report that a native reader crashed on (its numbers are missing above).
    reader_crashes: tuple[str, ...] = ()
    #: The roofs the benchmarks' ``roofline`` blocks are held against (None: not computed).
    roofs: Roofs | None = None
    #: A run merged from shards (``--gpus``, ``nsightwrap merge``): every shard, failed ones too.
    shards: tuple[ShardSummary, ...] = ()
    #: ``--replicate``: each benchmark's spread across GPUs and the GPUs found slower.
    gpu_variance: GpuVariance | None = None

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for b in self.benchmarks:
            counts[b.verdict.value] = counts.get(b.verdict.value, 0) + 1
        tally = ", ".join(f"{n} {v}" for v, n in counts.items())
        return f"RunResult({self.run_dir!r}: {len(self.benchmarks)} benchmarks" + (f": {tally})" if tally else ")")

    @property
    def flagged(self) -> tuple[BenchmarkResult, ...]:
        """Benchmarks whose verdict is FLAGGED."""
        return tuple(b for b in self.benchmarks if b.verdict is Verdict.FLAGGED)


@dataclass(frozen=True)
class ShardSummary:
    """One shard of a merged run: where it ran, how it ended, what its GPU looked like."""

    index: int
    status: str  # complete, failed, timeout, interrupted
    gpu_name: str | None
    gpu_uuid: str | None
    host: str | None
    benchmarks: int  # benchmarks of this shard in the report
    message: str | None = None  # why it failed
    dir: str | None = None  # relative to the merged run directory
    #: Seen on its GPU: the timer's median SM clock (Hz), the hottest sample (C), the power limit (W).
    sm_clock_hz: float | None = None
    temperature_c: float | None = None
    power_limit_w: float | None = None
    wall_s: float | None = None


@dataclass(frozen=True)
class GpuSpread:
    """One benchmark run on several GPUs: its median per GPU (ns, by UUID) and their spread."""

    benchmark: str
    medians_ns: Mapping[str, float]
    spread: float | None  # (slowest - fastest) / median of the GPUs' medians
    slowest: str | None
    fastest: str | None


@dataclass(frozen=True)
class SlowGpu:
    """A GPU slower than the others on most benchmarks (sign test), with what it was seen at."""

    gpu_uuid: str
    shard: int
    slower_in: int  # benchmarks where it was slower than the median of the other GPUs
    of: int
    median_ratio: float  # its time / the other GPUs' median time, median over benchmarks
    cycles_ratio: float | None  # the same in SM cycles (~1: the clock, not the GPU, is slower)
    p_value: float
    sm_clock_hz: float | None
    others_sm_clock_hz: float | None
    temperature_c: float | None
    power_limit_w: float | None
    message: str


@dataclass(frozen=True)
class GpuVariance:
    """GPU-to-GPU variance of a replicated run: the same benchmarks timed on every GPU."""

    metric: str  # "timer" (plain-pass medians) or "ncu" (where no timer ran)
    gpus: tuple[str, ...]
    spreads: tuple[GpuSpread, ...]
    slow: tuple[SlowGpu, ...]
    threshold: float  # smallest median excess that counts as slower (0.02 = 2%)
    alpha: float
    median_spread: float | None = None
    max_spread: float | None = None
    note: str = ""
