"""SM-clock normalization: carry ncu kernel durations to one reference SM clock.

ncu ``--clock-control none`` lets the GPU pick its clock, and the clock under ncu is not the
clock of the plain run (it drops under load, by up to 20% on an H200). Cycles do not depend on
the clock, so a kernel whose time follows the SM clock takes ``cycles / f`` at clock ``f``,
with ``cycles = duration * f_k`` (``f_k``: ``sm__cycles_elapsed.avg.per_second``). A kernel
bound by DRAM bandwidth does not speed up with the SM clock: its time is kept as measured.
The per-kernel choice is made from ncu's own throughput counters (docs/reconciliation.md).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from nsightwrap.analysis.model import ClockModel
from nsightwrap.core.errors import UsageError

#: A kernel is DRAM-bound when its memory throughput (% of peak) exceeds its SM throughput by
#: at least this many percentage points: e.g. a GEMV at 74% memory / 6% SM. Kernels with both
#: high (a large GEMM at 86% / 84%) saturate the SM first and follow its clock.
MEMORY_BOUND_MARGIN_PCT = 20.0

#: The ``--clock-ref`` keywords; anything else must be a frequency.
CLOCK_REF_KEYWORDS = ("plain", "boost", "base")

#: nvidia-smi's ``clocks_event_reasons`` bit for "GPU idle": samples with it set are taken
#: between kernels (the clock sits at its idle floor there) and say nothing about the work.
SMI_IDLE_BIT = 0x1


def classify(sm_pct: float | None, memory_pct: float | None, dram_pct: float | None = None) -> ClockModel:
    """Pick the clock model of one kernel from ncu's throughput counters (% of peak)."""
    mem_values = [v for v in (memory_pct, dram_pct) if v is not None and not math.isnan(v)]
    if sm_pct is None or math.isnan(sm_pct) or not mem_values:
        return ClockModel.ASSUMED_COMPUTE
    if max(mem_values) - sm_pct >= MEMORY_BOUND_MARGIN_PCT:
        return ClockModel.MEMORY
    return ClockModel.COMPUTE


def normalize_kernels(kernels: pd.DataFrame, ref_clock_hz: float | None) -> pd.DataFrame:
    """Add ``cycles``, ``clock_model`` and ``normalized_ns`` (time at ``ref_clock_hz``) to ncu rows.

    Needs the contract columns ``duration_ns``, ``sm_clock_hz``, ``sm_throughput_pct``,
    ``memory_throughput_pct`` (``dram_throughput_pct`` if present). Without a reference clock
    or a kernel clock, ``normalized_ns`` is the measured duration.
    """
    out = kernels.copy()
    dram = out["dram_throughput_pct"] if "dram_throughput_pct" in out else pd.Series(np.nan, index=out.index)
    models = [
        classify(number_or_none(s), number_or_none(m), number_or_none(d))
        for s, m, d in zip(out["sm_throughput_pct"], out["memory_throughput_pct"], dram, strict=True)
    ]
    out["clock_model"] = [m.value for m in models]
    dur = out["duration_ns"].astype(float)
    clk = out["sm_clock_hz"].astype(float)
    out["cycles"] = dur * clk / 1e9
    rescale = pd.Series([m is not ClockModel.MEMORY for m in models], index=out.index)
    if ref_clock_hz is None or not ref_clock_hz > 0:
        out["normalized_ns"] = dur
    else:
        scaled = out["cycles"] / ref_clock_hz * 1e9
        out["normalized_ns"] = dur.where(~rescale | scaled.isna(), scaled)
    return out


def plain_clock_from_samples(samples: pd.DataFrame) -> float | None:
    """Median SM clock of the nvidia-smi samples taken while the GPU was busy (not idle).

    Falls back to every sample when all were marked idle (or reasons were not recorded).
    """
    if samples.empty or "sm_clock_hz" not in samples:
        return None
    busy = samples
    if "clock_event_reasons" in samples:
        reasons = samples["clock_event_reasons"].map(_reason_bits)
        mask = reasons.map(lambda r: r is None or not (r & SMI_IDLE_BIT))
        if bool(mask.any()):
            busy = samples[mask.astype(bool)]
    value = busy["sm_clock_hz"].astype(float).median()
    return None if math.isnan(value) else float(value)


def parse_clock_ref(text: str) -> str | float:
    """Check a ``--clock-ref`` value: a keyword, or a frequency in Hz (``1.98e9``, ``1980MHz``)."""
    t = text.strip().lower()
    if t in CLOCK_REF_KEYWORDS:
        return t
    m = re.fullmatch(r"((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?)\s*(hz|khz|mhz|ghz)?", t)
    if not m:
        raise UsageError(
            f"--clock-ref {text!r} is neither plain, boost, base nor a frequency",
            hint="e.g. --clock-ref boost or --clock-ref 1.98e9 or --clock-ref 1980MHz",
        )
    scale = {"hz": 1.0, None: 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}[m.group(2)]
    hz = float(m.group(1)) * scale
    if hz < 1e6:
        raise UsageError(f"--clock-ref {text!r} is below 1 MHz", hint="give the clock in Hz, e.g. 1.98e9")
    return hz


def reference_clock(
    choice: str | float, *, plain_hz: float | None, boost_hz: float | None, base_hz: float | None
) -> tuple[float | None, str]:
    """The clock to normalize to and where it came from (``plain``, ``boost``, ``base``, ``given``)."""
    if isinstance(choice, float):
        return choice, "given"
    if choice in ("boost", "base"):
        hz = boost_hz if choice == "boost" else base_hz
        if hz is None:
            raise UsageError(
                f"--clock-ref {choice}: the run has no {choice} clock (env/nvidia-smi-q-x.xml is missing or lacks it)",
                hint="give the clock in Hz, e.g. --clock-ref 1.98e9, or use --clock-ref plain",
            )
        return hz, choice
    return plain_hz, "plain"


def number_or_none(v: object) -> float | None:
    """``v`` as a float, or None where it is missing, not a number or NaN (pandas' missing value)."""
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _reason_bits(v: object) -> int | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    try:
        return int(str(v).strip(), 0)
    except ValueError:
        return None
