"""Tidy DataFrames of a ``RunResult``: one row per benchmark, one row per profiled kernel.

For notebooks (``nsightwrap.load_run(path).to_frame()``) and anyone who wants the analysis as a
table. Each frame is one function here and one ``*_COLUMNS`` mapping (column -> what it holds);
docs/notebook.md lists the same columns and a test keeps the two equal. A column's name ends in
its unit: ``_ns`` nanoseconds, ``_hz`` hertz, ``_pct`` percent; ratios are plain floats (1.0 =
agreement). A number that is not known is NaN (``<NA>`` in integer columns), never 0.

Frames of further result blocks (the decomposition of each gap, roofline, power) belong here
too, each as its own function and ``*_COLUMNS``, with a ``Run`` method in ``nsightwrap.notebook``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from nsightwrap.analysis.model import BenchmarkResult, KernelTiming, RunResult

#: Columns of ``benchmarks_frame``, in order: name -> what it holds.
BENCHMARK_COLUMNS: dict[str, str] = {
    "name": "benchmark name; a sweep point carries its parameters (`mm[M=64]`)",
    "params": "the sweep point's parameters (dict; empty for a single benchmark)",
    "source": "what timed it: `nsightwrap_bench`, `do_bench`, `do_bench_cudagraph`, `torch_benchmark`, "
    "`cuda_events` or `nvtx_range`",
    "verdict": "`ok`, `flagged`, `no_timer`, `no_ncu` or `no_data`",
    "causes": "reason codes of a flagged benchmark, comma separated (docs/reconciliation.md)",
    "timer_median_ns": "median of the timer's samples, per call",
    "timer_min_ns": "fastest sample, per call",
    "timer_iqr_ns": "interquartile range of the samples",
    "timer_n": "number of samples",
    "timer_sm_clock_hz": "median SM clock during the timer's samples",
    "timer_clock_source": "where that clock came from: `nvml`, `probe` or `none`",
    "user_value_ns": "what the user's own timing code returned (captured timings only)",
    "ncu_median_ns": "median over the ncu iterations of the kernel-duration sum, at the clocks ncu saw",
    "ncu_ref_ns": "the same, brought to the reference clock (per kernel clock model)",
    "ncu_sm_clock_hz": "SM clock of the ncu kernels (total cycles / total duration)",
    "nsys_kernel_ns": "median over the nsys iterations of the kernel-duration sum",
    "nsys_busy_ns": "median GPU busy time per iteration (union of every op's interval)",
    "nsys_span_ns": "median first-start-to-last-end per iteration",
    "nsys_gap_ns": "median idle time inside an iteration (span - busy)",
    "ref_clock_hz": "the reference SM clock every duration is compared at",
    "ref_clock_source": "where the reference clock came from: `plain (nvml)`, `plain (probe)`, "
    "`plain (nvidia-smi samples)`, `boost`, `base`, `given` (`--clock-ref HZ`) or `none`",
    "ratio": "timer median / ncu at the clock the verdict used (ncu's own where no clock part carried it)",
    "ratio_raw": "timer median / ncu at the clocks ncu measured",
}

#: Columns of ``kernels_frame``, in order: name -> what it holds.
KERNEL_COLUMNS: dict[str, str] = {
    "benchmark": "the benchmark whose measured iteration launched the kernel",
    "iteration": "the measured iteration (0-based `iter<i>` range)",
    "kernel": "demangled kernel name",
    "kernel_short": "short name (no namespace, template arguments or parameters)",
    "duration_ns": "ncu's `gpu__time_duration.sum`",
    "sm_clock_hz": "SM clock while it ran (`sm__cycles_elapsed.avg.per_second`)",
    "cycles": "SM cycles elapsed (duration x clock)",
    "sm_throughput_pct": "SM throughput, % of peak",
    "memory_throughput_pct": "memory throughput, % of peak",
    "clock_model": "how its time follows the SM clock: `compute`, `memory` or `compute_assumed`",
    "normalized_ns": "its duration at the benchmark's reference clock",
    "elasticity": "measured clock elasticity e of duration ~ clock^-e (1: follows the clock, 0: does not)",
    "elasticity_source": "`measured` (ncu at two clocks) or `heuristic` (throughput counters)",
    "base_duration_ns": "its duration under `ncu --clock-control base`, where that pass ran",
    "base_sm_clock_hz": "SM clock under that pass",
    "duration_source": "where `duration_ns` comes from: `duration pass` (ncu with the duration and SM clock only) "
    "or `ncu pass` (the pass with every counter)",
    "counters_duration_ns": "its duration in the ncu pass with every counter (many replay passes), "
    "where `duration_ns` comes from the duration pass",
}

#: Columns of ``gaps_frame``, in order: name -> what it holds.
GAP_COLUMNS: dict[str, str] = {
    "benchmark": "the benchmark whose gap (timer - ncu at its own clocks) this row is a part of",
    "cause": "the part: `clock`, `cache_state`, `front_end`, `launch_overhead`, `gaps`, `overlap`, "
    "`non_kernel_work`, `missed_work`, or `residual` (what no measurement explains)",
    "ns": "its size, per call (positive: the timing is longer than ncu); a benchmark's rows sum to its gap",
    "actionable": "whether the timing method can change it (the verdict weighs these and the residual)",
    "fix": "what to do about it, in the terms of the method that timed the benchmark",
}

_INT_COLUMNS = {"timer_n", "iteration"}
_TEXT_COLUMNS = {"name", "source", "verdict", "causes", "timer_clock_source", "ref_clock_source", "benchmark",
                 "kernel", "kernel_short", "clock_model", "elasticity_source", "duration_source", "cause", "fix"}  # fmt: skip
_BOOL_COLUMNS = {"actionable"}
_OBJECT_COLUMNS = {"params"}


def _typed(rows: list[dict[str, Any]], columns: dict[str, str]) -> pd.DataFrame:
    """Rows as a frame with one dtype per column, whatever is missing: floats stay float (NaN),
    counts are nullable integers, names are strings."""
    frame = pd.DataFrame(rows, columns=list(columns))
    dtypes: dict[str, Any] = {}
    for c in columns:
        if c in _INT_COLUMNS:
            dtypes[c] = "Int64"
        elif c in _TEXT_COLUMNS:
            dtypes[c] = "string"
        elif c in _BOOL_COLUMNS:
            dtypes[c] = "boolean"
        elif c not in _OBJECT_COLUMNS:
            dtypes[c] = "float64"
    return frame.astype(dtypes)


def _benchmark_row(b: BenchmarkResult) -> dict[str, Any]:
    t, n, s = b.timer, b.ncu, b.nsys
    return {
        "name": b.name,
        "params": dict(b.params),
        "source": str(b.source.get("kind", "")),
        "verdict": b.verdict.value,
        "causes": ",".join(c.code.value for c in b.causes),
        "timer_median_ns": t.median_ns if t else None,
        "timer_min_ns": t.min_ns if t else None,
        "timer_iqr_ns": t.iqr_ns if t else None,
        "timer_n": t.n if t else None,
        "timer_sm_clock_hz": t.sm_clock_hz if t else None,
        "timer_clock_source": t.clock_source if t else None,
        "user_value_ns": b.user_value_ns,
        "ncu_median_ns": n.median_ns if n else None,
        "ncu_ref_ns": n.normalized_ns if n else None,
        "ncu_sm_clock_hz": n.sm_clock_hz if n else None,
        "nsys_kernel_ns": s.median_ns if s else None,
        "nsys_busy_ns": s.busy_median_ns if s else None,
        "nsys_span_ns": s.span_median_ns if s else None,
        "nsys_gap_ns": s.gap_median_ns if s else None,
        "ref_clock_hz": b.ref_clock_hz,
        "ref_clock_source": b.ref_clock_source,
        "ratio": b.ratio,
        "ratio_raw": b.ratio_raw,
    }


def benchmarks_frame(run: RunResult) -> pd.DataFrame:
    """One row per benchmark, in the run's order: the timer, ncu and nsys medians, the ratios and
    the verdict (columns: ``BENCHMARK_COLUMNS``)."""
    return _typed([_benchmark_row(b) for b in run.benchmarks], BENCHMARK_COLUMNS)


def _kernel_row(bench: str, k: KernelTiming) -> dict[str, Any]:
    return {
        "benchmark": bench,
        "iteration": k.iteration,
        "kernel": k.kernel,
        "kernel_short": k.kernel_short,
        "duration_ns": k.duration_ns,
        "sm_clock_hz": k.sm_clock_hz,
        "cycles": k.cycles,
        "sm_throughput_pct": k.sm_throughput_pct,
        "memory_throughput_pct": k.memory_throughput_pct,
        "clock_model": k.clock_model.value,
        "normalized_ns": k.normalized_ns,
        "elasticity": k.elasticity,
        "elasticity_source": k.elasticity_source,
        "base_duration_ns": k.base_duration_ns,
        "base_sm_clock_hz": k.base_sm_clock_hz,
        "duration_source": k.duration_source,
        "counters_duration_ns": k.counters_duration_ns,
    }


def kernels_frame(run: RunResult) -> pd.DataFrame:
    """One row per kernel ncu profiled inside a measured iteration, in launch order, with its clock
    model (columns: ``KERNEL_COLUMNS``)."""
    rows = [_kernel_row(b.name, k) for b in run.benchmarks if b.ncu is not None for k in b.ncu.kernels]
    return _typed(rows, KERNEL_COLUMNS)


def gaps_frame(run: RunResult) -> pd.DataFrame:
    """One row per measured part of each benchmark's gap, then its residual (columns:
    ``GAP_COLUMNS``); a benchmark's ``ns`` sum to its gap, timer - ncu at ncu's clocks."""
    rows: list[dict[str, Any]] = []
    for b in run.benchmarks:
        if b.gap is None:
            continue
        for p in b.gap.parts:
            rows.append({"benchmark": b.name, "cause": p.cause, "ns": p.ns, "actionable": p.actionable, "fix": p.fix})
        rows.append({"benchmark": b.name, "cause": "residual", "ns": b.gap.residual_ns, "actionable": False, "fix": ""})
    return _typed(rows, GAP_COLUMNS)
