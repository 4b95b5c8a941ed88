"""Each benchmark's SM clock, measured on the GPU inside its own kernels.

The nsys pass samples the GPU's counters (``--gpu-metrics-devices``, 20 kHz); its GPC clock is
the SM clock. A benchmark's clock is the mean of the samples taken while its own kernels (the
kernels launched inside its iteration ranges, fill kernels left out) ran: the flush kernels,
host gaps and idle time of the window run at other clocks (a memory-bound flush runs at the top
clock while a GEMM beside it runs 20% lower), so a mean over the whole window is not the
kernels' clock. ``min_hz``..``max_hz`` spans the per-window means.

NVML and nvidia-smi read the clock from the host; they read the top clock while a sustained
GEMM loop runs 25-35% lower, so they are never a benchmark's clock (docs/reconciliation.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from nsightwrap.analysis.iterations import NsysIterations
from nsightwrap.analysis.model import MeasuredClock

#: Fewest GPU-metrics samples overlapping a benchmark's kernels for their mean to stand for its
#: clock (a kernel of a few us shares each 50 us sample with the work around it).
MIN_SAMPLES = 3
#: The nsys pass may slow a loop this much (its timing over the plain pass's) and its clock still
#: be the plain pass's; a loop slowed more ran with the GPU idler than in the plain pass.
MAX_SLOWDOWN = 1.05
SOURCE_NSYS = "nsys GPU metrics (GPC clock inside the benchmark's kernels)"
SOURCE_STAMPS = "timer stamps (clock64 against globaltimer around each sample)"
_FILL = ("fill", "zero", "memset")


def sample_period_ns(clock: pd.DataFrame) -> float | None:
    """The median spacing of the samples of one GPU (ns)."""
    t = np.sort(clock["t_ns"].to_numpy(dtype=float))
    d = np.diff(t)
    d = d[d > 0]
    return float(np.median(d)) if len(d) else None


def one_gpu(clock: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(times ns, GPC clock Hz) of one GPU's samples, in time order. One GPU per capture is what the
    analysis handles; with several, the one sampled most (the others idle at their own clocks)."""
    gpus = clock["gpu"].dropna().unique()
    one = clock[clock["gpu"] == clock["gpu"].value_counts().idxmax()] if len(gpus) > 1 else clock
    one = one.sort_values("t_ns", kind="stable")
    return one["t_ns"].to_numpy(dtype=float), one["gpc_clock_hz"].to_numpy(dtype=float)


def kernel_clocks(found: NsysIterations, clock: pd.DataFrame | None, n_specs: int) -> list[MeasuredClock | None]:
    """Every benchmark's measured clock from the GPC samples (``NsysReport.gpu_clock``), or None
    where the capture has no samples or too few overlap the benchmark's kernels."""
    out: list[MeasuredClock | None] = [None] * n_specs
    if clock is None or clock.empty or found.ops.empty:
        return out
    t, hz = one_gpu(clock)
    ops = found.ops
    ops = ops[ops["kind"].astype(str) == "kernel"]
    names = ops["name"].astype(str).str.lower()
    ops = ops[~names.str.contains("|".join(_FILL), regex=True)]
    if ops.empty:
        return out
    start = pd.to_numeric(ops["start_ns"], errors="coerce").to_numpy(dtype=float)
    end = pd.to_numeric(ops["end_ns"], errors="coerce").to_numpy(dtype=float)
    spec = ops["spec"].to_numpy(dtype=float)
    rid = ops["range_id"].to_numpy()
    # The samples taken while a kernel ran: t in [start, end]. A sample reads the clock at its
    # time (a sample just after a GEMM reads the flush's clock, not the GEMM's), so a kernel
    # shorter than the period is caught by some calls only; thousands of calls still give many.
    lo = np.searchsorted(t, start, side="left")
    hi = np.searchsorted(t, end, side="right")
    per_spec: dict[int, dict[object, list[float]]] = {}
    counts: dict[int, int] = {}
    for i in np.flatnonzero((hi > lo) & np.isfinite(spec)):
        f = hz[int(lo[i]) : int(hi[i])]
        f = f[np.isfinite(f)]
        if not len(f):
            continue
        s = int(spec[i])
        acc = per_spec.setdefault(s, {}).setdefault(rid[i], [0.0, 0.0])
        acc[0] += float(f.sum())
        acc[1] += float(len(f))
        counts[s] = counts.get(s, 0) + len(f)
    for s, windows in per_spec.items():
        if counts.get(s, 0) < MIN_SAMPLES or not 0 <= s < n_specs:
            continue
        means = [a / b for a, b in windows.values() if b > 0]
        total_w = sum(b for _, b in windows.values())
        mean = sum(a for a, _ in windows.values()) / total_w
        out[s] = MeasuredClock(
            mean_hz=float(mean), min_hz=float(min(means)), max_hz=float(max(means)),
            windows=len(means), samples=counts[s], source=SOURCE_NSYS,
        )  # fmt: skip
    return out


def with_slowdown(clocks: Sequence[MeasuredClock | None], plain_ns: Sequence[float | None],
                  nsys_ns: Sequence[float | None]) -> list[MeasuredClock | None]:  # fmt: skip
    """Each clock with the nsys pass's slow-down of the same benchmark (its timing there over
    the plain pass's), where both passes timed it."""
    from dataclasses import replace

    out: list[MeasuredClock | None] = []
    for c, p, n in zip(clocks, plain_ns, nsys_ns, strict=True):
        if c is not None and p and n and p > 0:
            c = replace(c, slowdown=float(n / p))
        out.append(c)
    return out


def stamps_clock(sm_clock_hz: float | None, samples: Sequence[float | None] | None) -> MeasuredClock | None:
    """nsightwrap.bench's own clock, from its clock64/globaltimer stamps around each sample."""
    if sm_clock_hz is None or not sm_clock_hz > 0:
        return None
    vals = [float(v) for v in samples or () if v is not None and math.isfinite(v) and v > 0]
    return MeasuredClock(
        mean_hz=float(sm_clock_hz), min_hz=min(vals, default=float(sm_clock_hz)),
        max_hz=max(vals, default=float(sm_clock_hz)), windows=len(vals), samples=len(vals), source=SOURCE_STAMPS,
    )  # fmt: skip
