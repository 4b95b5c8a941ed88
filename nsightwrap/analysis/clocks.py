"""SM-clock normalization: carry ncu kernel durations to one reference SM clock.

ncu ``--clock-control none`` lets the GPU pick its clock, and the clock under ncu is not the
clock of the plain run (it drops under load, by up to 20% where measured). How a kernel's time moves
with the SM clock is its clock elasticity ``e``: duration ~ f**-e, so at clock ``f``

    t(f) = t_k * (f_k / f) ** e        (t_k, f_k: ncu's duration and ``sm__cycles_elapsed.avg.per_second``)

``e = 1``: the kernel's cycles are fixed and its time follows the SM clock (a large GEMM);
``e = 0``: it waits on DRAM and its time does not move (a large vector add). Measured, many
kernels lie between (flash attention 0.97, softmax 0.91, layer norm 0.62, 2-5 us kernels
0.16-0.37; docs/timer-accuracy.md).

``e`` is measured where ``nsightwrap profile`` ran its clock sweep: ncu twice more with each
kernel's duration and SM clock only, at ``--clock-control none`` (the duration pass) and at
``--clock-control base`` (which locks a lower clock). Each kernel is matched with its twins there
(benchmark, iteration, launch order, name: ``twins``); ``t_k`` and ``f_k`` come from the duration
pass (``attach_durations``: ncu's reading moves with what else it collects, and the ncu pass's
counters take 17 replay passes, 12 with --no-roofline-counters) and ``e = ln(t_base / t_k) / ln(f_k / f_base)``
(``measured_elasticity``). Elsewhere it is a guess from ncu's throughput counters: 1 for SM-bound
kernels, 0 for DRAM-bound ones (``classify``), marked ``heuristic`` (docs/reconciliation.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

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

#: The two ncu passes must run a kernel at clocks at least this far apart (relative) for its
#: elasticity to be measured: closer clocks make ln(f_k / f_base) tiny and ``e`` pure noise
#: (1% duration noise at a 3% clock step already moves e by 0.3).
MIN_CLOCK_STEP = 0.05
#: A measured elasticity is clamped to this range when durations are carried to another clock
#: (noise puts a GEMM at 1.03 or a DRAM-bound add at -0.02); the report keeps the raw value.
ELASTICITY_RANGE = (0.0, 1.0)
#: With a measured elasticity, kernels at or above this count as following the SM clock
#: (``ClockModel.COMPUTE``), those below as not (``ClockModel.MEMORY``).
FOLLOWS_CLOCK_E = 0.5

#: Columns the clock-sweep matching adds to an ncu kernels frame.
BASE_COLUMNS = ("base_duration_ns", "base_sm_clock_hz", "elasticity", "elasticity_source")
#: Where a kernel's ``duration_ns`` comes from: the duration pass (ncu with the duration and the
#: SM clock only, one replay pass) or, without it, the ncu pass itself (all its counters).
DURATION_SOURCES = ("duration pass", "ncu pass")


def classify(sm_pct: float | None, memory_pct: float | None, dram_pct: float | None = None) -> ClockModel:
    """Pick the clock model of one kernel from ncu's throughput counters (% of peak)."""
    mem_values = [v for v in (memory_pct, dram_pct) if v is not None and not math.isnan(v)]
    if sm_pct is None or math.isnan(sm_pct) or not mem_values:
        return ClockModel.ASSUMED_COMPUTE
    if max(mem_values) - sm_pct >= MEMORY_BOUND_MARGIN_PCT:
        return ClockModel.MEMORY
    return ClockModel.COMPUTE


def measured_elasticity(
    duration_ns: float | None, clock_hz: float | None, base_duration_ns: float | None, base_clock_hz: float | None
) -> float | None:
    """``e`` of duration ~ f**-e from one kernel at two clocks; None when the pairs cannot give it
    (a missing or non-positive value, or clocks closer than ``MIN_CLOCK_STEP``)."""
    vals = (duration_ns, clock_hz, base_duration_ns, base_clock_hz)
    if any(v is None or not math.isfinite(v) or v <= 0 for v in vals):
        return None
    assert duration_ns and clock_hz and base_duration_ns and base_clock_hz  # for mypy: checked above
    step = math.log(clock_hz / base_clock_hz)
    if abs(step) < math.log1p(MIN_CLOCK_STEP):
        return None
    return math.log(base_duration_ns / duration_ns) / step


def heuristic_elasticity(model: ClockModel) -> float:
    """Today's rule as an elasticity: 1 for kernels judged SM-bound (or unknown), 0 for DRAM-bound."""
    return 0.0 if model is ClockModel.MEMORY else 1.0


def clamp_elasticity(e: float) -> float:
    """``e`` within ``ELASTICITY_RANGE`` (what carrying a duration to another clock uses)."""
    lo, hi = ELASTICITY_RANGE
    return min(hi, max(lo, e))


def _launch_order(frame: pd.DataFrame) -> pd.Series:
    """Position of each kernel among the kernels of its NVTX range (benchmark and iteration), in
    launch order: the key that pairs a kernel with its twin of the other ncu pass."""
    path = frame["nvtx_path"].astype("string").fillna("") if "nvtx_path" in frame else pd.Series("", index=frame.index)
    order = frame["launch_id"] if "launch_id" in frame else pd.Series(range(len(frame)), index=frame.index)
    keyed = pd.DataFrame({"path": path, "order": pd.to_numeric(order, errors="coerce")}, index=frame.index)
    return keyed.sort_values(["path", "order"], kind="stable").groupby("path", sort=False).cumcount().reindex(frame.index)


def _keyed(frame: pd.DataFrame) -> pd.DataFrame:
    path = frame["nvtx_path"].astype("string").fillna("") if "nvtx_path" in frame else ""
    return pd.DataFrame(
        {"nw_path": path, "nw_pos": _launch_order(frame), "nw_kernel": frame["kernel"].astype(str)},
        index=frame.index,
    )


def twin_index(kernels: pd.DataFrame, other: pd.DataFrame) -> pd.Series:
    """Each kernel's twin in another ncu pass over the same ranges: the kernel of the same NVTX
    range (benchmark and iteration), at the same launch position, with the same name. Returns
    the twin's index label in ``other`` on ``kernels.index`` (None where a kernel has no twin)."""
    key_cols = ["nw_path", "nw_pos"]
    mine = _keyed(kernels)
    theirs = _keyed(other)
    theirs = theirs.assign(nw_other=pd.Series(list(theirs.index), index=theirs.index, dtype=object))
    merged = (
        mine.assign(nw_idx=mine.index)
        .merge(theirs.drop_duplicates(key_cols), on=key_cols, how="left", suffixes=("", "_b"))
        .set_index("nw_idx")
        .reindex(kernels.index)
    )
    same = merged["nw_kernel"] == merged["nw_kernel_b"]
    return pd.Series([v if ok else None for v, ok in zip(merged["nw_other"], same, strict=True)],
                     index=kernels.index, dtype=object)  # fmt: skip


def twins(kernels: pd.DataFrame, other: pd.DataFrame) -> pd.DataFrame:
    """The ``duration_ns`` and ``sm_clock_hz`` of each kernel's twin in ``other`` (``twin_index``),
    on ``kernels.index`` (NaN where a kernel has no twin)."""
    idx = twin_index(kernels, other)
    dur = pd.to_numeric(other["duration_ns"], errors="coerce")
    clk = pd.to_numeric(other["sm_clock_hz"], errors="coerce")
    return pd.DataFrame(
        {
            "duration_ns": [np.nan if i is None else dur.at[i] for i in idx],
            "sm_clock_hz": [np.nan if i is None else clk.at[i] for i in idx],
        },
        index=kernels.index,
    )


def attach_durations(kernels: pd.DataFrame, light: pd.DataFrame | None) -> tuple[pd.DataFrame, int]:
    """Take each ncu kernel's duration and SM clock from its twin of the duration pass (ncu at the
    same clock control with those two metrics only) and keep the ncu pass's own as
    ``counters_duration_ns`` / ``counters_sm_clock_hz``: the ncu pass's counters take many replay
    passes, which read some kernels several % long (docs/timer-accuracy.md). ``duration_source``
    says which pass each duration comes from (``DURATION_SOURCES``). A kernel without a twin keeps
    the ncu pass's values. Returns (frame, kernels taken from the duration pass)."""
    out = kernels.copy()
    out["counters_duration_ns"] = pd.to_numeric(out["duration_ns"], errors="coerce")
    out["counters_sm_clock_hz"] = pd.to_numeric(out["sm_clock_hz"], errors="coerce")
    out["duration_source"] = DURATION_SOURCES[1]
    if light is None or light.empty or out.empty:
        return out, 0
    tw = twins(out, light)
    got = tw["duration_ns"].notna() & (tw["duration_ns"] > 0)
    out.loc[got, "duration_ns"] = tw.loc[got, "duration_ns"]
    # Its own clock where the duration pass has one; a duration alone keeps the ncu pass's clock.
    clk = got & tw["sm_clock_hz"].notna() & (tw["sm_clock_hz"] > 0)
    out.loc[clk, "sm_clock_hz"] = tw.loc[clk, "sm_clock_hz"]
    out.loc[got, "duration_source"] = DURATION_SOURCES[0]
    return out, int(got.sum())


#: Where a kernel's counters come from when the duration pass leads (``durations_first``): its
#: twin in the ncu pass, or the ncu pass's instance of the same kernel at the same grid and block
#: (in the same benchmark where there is one).
COUNTERS_SOURCES = ("twin", "carried")


def _benchmark_of(frame: pd.DataFrame) -> list[str]:
    # The NVTX path without its iteration index: kernels of one benchmark share it.
    paths = frame["nvtx_path"].astype("string").fillna("") if "nvtx_path" in frame else [""] * len(frame)
    return [re.sub(r"\d+$", "", str(p)) for p in paths]


def _configs(frame: pd.DataFrame) -> list[tuple[str, str, str]]:
    # What ncu's per-launch-config filter tells apart: kernel name, grid and block.
    cols = [frame[c].astype(str) for c in ("kernel", "grid", "block")]
    return list(zip(*cols, strict=True))


def durations_first(kernels: pd.DataFrame, light: pd.DataFrame | None) -> tuple[pd.DataFrame, int] | None:
    """The duration pass's kernels, each with the ncu pass's counters, where the duration pass
    profiled every kernel the ncu pass did and more: the ncu pass ran at a lower cap
    (``--ncu-counters-cap``) because a kernel's counters (throughputs, bytes, instruction counts)
    are the same from one launch of one configuration to the next, while its duration is what
    the medians need several instances of. A kernel takes its counters from its twin in the ncu
    pass, else from the ncu pass's first instance of the same kernel at the same grid and block,
    in the same benchmark where there is one (``counters_source``: ``COUNTERS_SOURCES``); one
    without either keeps its duration and clock with no counters (``counters_source`` None). ``counters_duration_ns`` / ``counters_sm_clock_hz`` are that
    instance's. Returns (frame, kernels carried), or None where the ncu pass leads
    (``attach_durations``): no duration pass, or one that missed some of the ncu pass's kernels."""
    if light is None or light.empty or kernels.empty or len(light) <= len(kernels):
        return None
    if twin_index(kernels, light).isna().any():
        return None
    donor = twin_index(light, kernels)
    source = pd.Series(COUNTERS_SOURCES[0], index=light.index, dtype=object)
    conf_k = _configs(kernels)
    bench_k = _benchmark_of(kernels)
    first: dict[tuple[str, ...], object] = {}
    first_in: dict[tuple[str, ...], object] = {}
    order = (
        pd.to_numeric(kernels["launch_id"], errors="coerce") if "launch_id" in kernels
        else pd.Series(range(len(kernels)), index=kernels.index)
    )  # fmt: skip
    for pos in np.argsort(order.to_numpy(dtype=float), kind="stable"):
        idx = kernels.index[pos]
        first.setdefault(conf_k[pos], idx)
        first_in.setdefault((bench_k[pos], *conf_k[pos]), idx)
    conf_l = _configs(light)
    bench_l = _benchmark_of(light)
    donors: list[object] = list(donor)
    for pos, idx in enumerate(light.index):
        if donors[pos] is None:
            donors[pos] = first_in.get((bench_l[pos], *conf_l[pos]), first.get(conf_l[pos]))
            source.at[idx] = COUNTERS_SOURCES[1]
    keep = [d is not None for d in donors]
    rows = light.index[keep]
    out = kernels.loc[[d for d in donors if d is not None]].copy()
    out.index = rows
    # A kernel the ncu pass has no instance of (another functor of one templated kernel: the
    # name differs) keeps its own duration and clock, with no counters: its benchmark's ncu
    # figure is still its own work, where leaving it out would leave the benchmark `no ncu`.
    bare = light.index[[not k for k in keep]]
    if len(bare):
        out = out.reindex(light.index)  # their rows NaN: the duration pass's own columns fill them below
        source.loc[bare] = None
        rows = light.index
    out["counters_duration_ns"] = pd.to_numeric(out["duration_ns"], errors="coerce")
    out["counters_sm_clock_hz"] = pd.to_numeric(out["sm_clock_hz"], errors="coerce")
    own = light.loc[rows]
    # What the duration pass measured (duration, clock, launch identity, NVTX ranges) is the
    # kernel's own; the counters it did not collect come from the donor.
    for col in own.columns:
        if col not in out.columns:
            out[col] = own[col]
            continue
        out[col] = own[col].where(own[col].notna(), out[col])
    out["duration_source"] = DURATION_SOURCES[0]
    out["counters_source"] = source.loc[rows]
    return out.reset_index(drop=True), int((source.loc[rows] == COUNTERS_SOURCES[1]).sum())


def with_coverage(
    kernels: pd.DataFrame, cover: pd.DataFrame | None, column: str, asked: Sequence[str] = ()
) -> tuple[pd.DataFrame, int]:
    """The ncu kernels with every benchmark the coverage pass profiled taken from it: that
    benchmark's rows (capped, or missing) replaced by the coverage pass's own launches, each with
    the counters of the ncu pass's first instance of the same kernel at the same grid and block,
    in the same benchmark where there is one (``counters_source`` ``carried``; none: NaN), and
    ``column`` True. Launch ids follow the frame's, so that launch order stays the run's.
    Only the benchmarks the pass was run for count (``asked``: ``<range path>/<iteration prefix>``
    of each). Returns (frame, benchmarks replaced)."""
    if cover is None or cover.empty:
        return kernels, 0
    cover = cover[[b in set(asked) for b in _benchmark_of(cover)]]
    if cover.empty:
        return kernels, 0
    benches = set(_benchmark_of(cover))
    keep = kernels[[b not in benches for b in _benchmark_of(kernels)]] if not kernels.empty else kernels
    conf_k, bench_k = _configs(kernels), _benchmark_of(kernels)
    first: dict[tuple[str, ...], object] = {}
    first_in: dict[tuple[str, ...], object] = {}
    order = pd.to_numeric(kernels["launch_id"], errors="coerce") if "launch_id" in kernels else \
        pd.Series(range(len(kernels)), index=kernels.index, dtype=float)  # fmt: skip
    for pos in np.argsort(order.to_numpy(dtype=float), kind="stable"):
        idx = kernels.index[pos]
        first.setdefault(conf_k[pos], idx)
        first_in.setdefault((bench_k[pos], *conf_k[pos]), idx)
    rows: list[dict[str, Any]] = []
    top = order.max() if len(order) else np.nan
    base_id = int(top) + 1 if np.isfinite(top) else len(kernels)
    cover_ids = pd.to_numeric(cover["launch_id"], errors="coerce") if "launch_id" in cover else \
        pd.Series(range(len(cover)), index=cover.index, dtype=float)  # fmt: skip
    for pos, (idx, conf, bench) in enumerate(zip(cover.index, _configs(cover), _benchmark_of(cover), strict=True)):
        donor = first_in.get((bench, *conf), first.get(conf))
        row: dict[str, Any] = {str(k): v for k, v in kernels.loc[donor].items()} if donor is not None else {}  # type: ignore[call-overload]
        row["counters_duration_ns"] = number_or_none(row.get("duration_ns"))
        row["counters_sm_clock_hz"] = number_or_none(row.get("sm_clock_hz"))
        own = cover.loc[idx]
        for col, v in own.items():
            if not (isinstance(v, float) and math.isnan(v)) and v is not None:
                row[str(col)] = v
        cid = cover_ids.iloc[pos]
        row["launch_id"] = base_id + (int(cid) if np.isfinite(cid) else pos)
        row["duration_source"] = DURATION_SOURCES[0]
        if "counters_source" in kernels:  # the duration pass leads (``durations_first``)
            row["counters_source"] = COUNTERS_SOURCES[1] if donor is not None else None
        row[column] = True
        rows.append(row)
    added = pd.DataFrame(rows)
    out = pd.concat([keep.assign(**{column: False}), added], ignore_index=True)
    return out, len(benches)


def attach_base(kernels: pd.DataFrame, base: pd.DataFrame | None) -> tuple[pd.DataFrame, int]:
    """Add ``BASE_COLUMNS`` to the ncu kernels of the ``--clock-control none`` pass from those of
    the base-clock pass: each kernel is paired with its twin there (``twins``) and gets that
    kernel's duration and clock and the measured elasticity. A kernel without a twin, or whose
    two clocks are too close, keeps NaN (the heuristic applies). Returns (frame, kernels measured).
    """
    out = kernels.copy()
    for col in BASE_COLUMNS[:3]:
        out[col] = np.nan
    out["elasticity_source"] = "heuristic"
    if base is None or base.empty or out.empty:
        return out, 0
    tw = twins(out, base)
    measured = 0
    for idx in out.index:
        bd, bc = number_or_none(tw.at[idx, "duration_ns"]), number_or_none(tw.at[idx, "sm_clock_hz"])
        if bd is None and bc is None:
            continue
        out.at[idx, "base_duration_ns"] = np.nan if bd is None else bd
        out.at[idx, "base_sm_clock_hz"] = np.nan if bc is None else bc
        e = measured_elasticity(
            number_or_none(out.at[idx, "duration_ns"]), number_or_none(out.at[idx, "sm_clock_hz"]), bd, bc
        )
        if e is not None:
            out.at[idx, "elasticity"] = e
            out.at[idx, "elasticity_source"] = "measured"
            measured += 1
    return out, measured


def normalize_kernels(kernels: pd.DataFrame, ref_clock_hz: float | None) -> pd.DataFrame:
    """Add ``cycles``, ``clock_model``, ``elasticity``, ``elasticity_source`` and
    ``normalized_ns`` (time at ``ref_clock_hz``: ``t_k * (f_k / f) ** e``) to ncu rows.

    Needs the contract columns ``duration_ns``, ``sm_clock_hz``, ``sm_throughput_pct``,
    ``memory_throughput_pct`` (``dram_throughput_pct`` if present). A measured ``elasticity``
    (from ``attach_base``) is used, clamped to ``ELASTICITY_RANGE``; elsewhere the throughput
    counters decide (1 or 0, ``heuristic``). Without a reference clock or a kernel clock,
    ``normalized_ns`` is the measured duration.
    """
    out = kernels.copy()
    dram = out["dram_throughput_pct"] if "dram_throughput_pct" in out else pd.Series(np.nan, index=out.index)
    models = [
        classify(number_or_none(s), number_or_none(m), number_or_none(d))
        for s, m, d in zip(out["sm_throughput_pct"], out["memory_throughput_pct"], dram, strict=True)
    ]
    given = out["elasticity"] if "elasticity" in out else pd.Series(np.nan, index=out.index)
    elasticity: list[float] = []
    used: list[float] = []
    sources: list[str] = []
    for m, g in zip(models, given, strict=True):
        e = number_or_none(g)
        if e is None:
            elasticity.append(heuristic_elasticity(m))
            used.append(heuristic_elasticity(m))
            sources.append("heuristic")
        else:
            elasticity.append(e)
            used.append(clamp_elasticity(e))
            sources.append("measured")
    out["clock_model"] = [
        (ClockModel.COMPUTE if u >= FOLLOWS_CLOCK_E else ClockModel.MEMORY).value if src == "measured" else m.value
        for m, u, src in zip(models, used, sources, strict=True)
    ]
    out["elasticity"] = elasticity
    out["elasticity_source"] = sources
    dur = out["duration_ns"].astype(float)
    clk = out["sm_clock_hz"].astype(float)
    out["cycles"] = dur * clk / 1e9
    if ref_clock_hz is None or not ref_clock_hz > 0:
        out["normalized_ns"] = dur
    else:
        scaled = dur * (clk / ref_clock_hz) ** pd.Series(used, index=out.index)
        out["normalized_ns"] = dur.where(scaled.isna(), scaled)
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
