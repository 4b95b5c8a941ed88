"""Tidy DataFrames of a ``RunResult``: one row per benchmark, one row per profiled kernel.

For notebooks (``nsightwrap.load_run(path).to_frame()``) and for anyone who wants the analysis as
a table. Times in ns, clocks in Hz, ratios as plain floats (1.0 = agreement).
"""

from __future__ import annotations

import pandas as pd

from nsightwrap.analysis.model import RunResult

#: Columns of ``benchmarks_frame``, in order.
BENCHMARK_COLUMNS = [
    "name", "verdict", "causes", "timer_median_ns", "timer_n", "timer_sm_clock_hz", "timer_clock_source",
    "ncu_median_ns", "ncu_ref_ns", "ncu_sm_clock_hz", "nsys_kernel_ns", "nsys_busy_ns", "nsys_span_ns",
    "ref_clock_hz", "ratio", "ratio_raw",
]  # fmt: skip

#: Columns of ``kernels_frame``, in order.
KERNEL_COLUMNS = [
    "benchmark", "iteration", "kernel", "kernel_short", "duration_ns", "sm_clock_hz", "cycles",
    "sm_throughput_pct", "memory_throughput_pct", "clock_model", "normalized_ns",
]  # fmt: skip


def benchmarks_frame(run: RunResult) -> pd.DataFrame:
    """One row per benchmark: the timer, ncu and nsys medians, the ratios and the verdict."""
    rows = []
    for b in run.benchmarks:
        t, n, s = b.timer, b.ncu, b.nsys
        rows.append(
            {
                "name": b.name,
                "verdict": b.verdict.value,
                "causes": ",".join(c.code.value for c in b.causes),
                "timer_median_ns": t.median_ns if t else None,
                "timer_n": t.n if t else None,
                "timer_sm_clock_hz": t.sm_clock_hz if t else None,
                "timer_clock_source": t.clock_source if t else None,
                "ncu_median_ns": n.median_ns if n else None,
                "ncu_ref_ns": n.normalized_ns if n else None,
                "ncu_sm_clock_hz": n.sm_clock_hz if n else None,
                "nsys_kernel_ns": s.median_ns if s else None,
                "nsys_busy_ns": s.busy_median_ns if s else None,
                "nsys_span_ns": s.span_median_ns if s else None,
                "ref_clock_hz": b.ref_clock_hz,
                "ratio": b.ratio,
                "ratio_raw": b.ratio_raw,
            }
        )
    return pd.DataFrame(rows, columns=BENCHMARK_COLUMNS)


def kernels_frame(run: RunResult) -> pd.DataFrame:
    """One row per kernel ncu profiled inside a measured iteration, with its clock model."""
    rows = [
        {
            "benchmark": b.name,
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
        }
        for b in run.benchmarks
        if b.ncu is not None
        for k in b.ncu.kernels
    ]
    return pd.DataFrame(rows, columns=KERNEL_COLUMNS)
