"""The gap between a timing and ncu, in measured parts that add up exactly.

For one benchmark, ``total = T - N``: ``T`` the timer's median per call (nsightwrap.bench or a
timing captured from the user's script), ``N`` ncu's per-iteration kernel sum at the clocks ncu
ran at. The parts, in order, each a difference of two measurements of this run:

- ``clock``: ncu's kernels carried from their clocks to the clock the timed loop ran at,
  kernel by kernel with its clock elasticity (measured by the base-clock ncu pass, else the
  heuristic of the throughput counters, and the part says which);
- ``cache_state``: the same kernels in the user's loop (nsys, after the user's flush or none)
  against ncu's clean-cache durations, where the two cache states differ by method;
- ``front_end``: what every event window holds before its first op starts beyond the dispatch
  ncu counts in its own durations (nsys lead-in on the timing stream, less the empty-window
  cost the method already subtracts); without nsys, the measured empty window not subtracted;
- ``launch_overhead``: time the GPU waited for the host inside the window (the queue ran dry:
  ops launched after the GPU went idle, an end event recorded after the GPU finished);
- ``gaps`` and ``overlap``: idle time between the benchmark's ops beyond their dispatch, and
  time saved by ops running concurrently (ncu serializes kernels);
- ``non_kernel_work``: memcpy and memset, which ncu cannot see;
- ``missed_work``: work launched inside the window on another stream that ended after the end
  event (negative: the timing misses it);
- ``profiler_overhead``: the nsys pass's own timing of the loop against the plain pass's, which
  brings the nsys-measured parts back to the plain run;
- the residual: what no measurement explains, always shown.

A part whose measurement is missing is left out (never guessed as 0), and the residual carries
its share. Every value is rounded to 1/8 ns, so ``total_ns == sum(parts) + residual_ns`` holds
exactly in floating point, in any order. docs/reconciliation.md explains each part with a worked
example from an H200 run.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nsightwrap.analysis.clocks import ELASTICITY_RANGE, heuristic_elasticity
from nsightwrap.analysis.iterations import NsysIterations
from nsightwrap.analysis.model import (
    Cause,
    CauseCode,
    Gap,
    GapPart,
    KernelTiming,
    NcuStats,
    NsysStats,
    TimerStats,
)
from nsightwrap.core import intervals
from nsightwrap.core.contract import kernel_time_copies

#: Values are multiples of 1/QUANTUM ns: sums of such values are exact in binary floating point.
QUANTUM = 8.0
#: Sum of op durations above busy time by this share means ops ran concurrently.
OVERLAP_SHARE = 0.02
#: Flush kinds that leave dirty lines in the L2 (the next kernel pays their write-back).
DIRTY_FLUSHES = frozenset({"zero", "zero_", "memset", "fill", "dirty"})
#: Flush kinds that leave the L2 clean, as ncu's cache control does.
CLEAN_FLUSHES = frozenset({"write+read", "clean", "write_read"})
#: Reference-clock sources measured on the GPU during the work, or given by the user: trusted
#: as the clock of the timed loop. Others (NVML, nvidia-smi samples) are read from the host and
#: can miss the clock under load, so the kernels' own durations under nsys check them.
TRUSTED_CLOCK_SOURCES = ("probe", "stamps", "given", "boost", "base")
#: Part codes whose size the user's timing method can change: the verdict weighs them.
ACTIONABLE = frozenset({"cache_state", "front_end", "launch_overhead", "non_kernel_work", "missed_work"})
#: The parts, in the order they are shown.
PART_ORDER = (
    "clock", "cache_state", "front_end", "launch_overhead", "gaps", "overlap", "non_kernel_work",
    "missed_work", "profiler_overhead",
)  # fmt: skip


def q(ns: float) -> float:
    """``ns`` rounded to a multiple of 1/QUANTUM ns."""
    return round(ns * QUANTUM) / QUANTUM


def _us(ns: float | None) -> str:
    return "n/a" if ns is None else f"{ns / 1e3:.2f} us"


def _ghz(hz: float | None) -> str:
    return "n/a" if hz is None else f"{hz / 1e9:.3f} GHz"


def _med(values: Sequence[float] | np.ndarray) -> float | None:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return float(statistics.median(vals)) if vals else None


# ----------------------------------------------------------------------------- nsys timelines


@dataclass(frozen=True)
class Timeline:
    """One benchmark's nsys iterations as the event window sees them (ns per iteration).

    The additive figures are means over the middle half of the iterations ranked by window
    length (an interquartile mean): robust to an odd stalled iteration, and, taken over the same
    iterations, they add up the way one window does (medians of parts do not add up to the
    median window).

    The window of an iteration starts when its start event can run: when the timing stream's
    previous op ended, or when the host opened the iteration range if the GPU was idle by then.
    It ends at the last op of the timing stream (or of any stream, when the work was joined
    back), or when the host closed the range if that came later.
    """

    iterations: int
    timing_stream: int | None
    timing_stream_rule: str
    head_ns: float  # window start to the first op's start
    host_head_ns: float  # of it, the GPU idle before the host began the first launch
    gap_ns: float  # idle time between the iteration's ops (span - busy)
    host_gap_ns: float  # of it, idle before ops whose launch began after the GPU went idle
    tail_ns: float  # the host closed the range after the GPU had finished
    dry_share: float  # share of iterations where the GPU waited for the host at all
    side_tail_ns: float  # work on other streams past the timing stream's end (and the range's)
    window_joined_ns: float  # the window if the end event waited for every stream
    window_unjoined_ns: float  # the window if it waited for the timing stream only
    max_ops: int
    kernel_ns: float = 0.0  # kernel durations (CUPTI)
    non_kernel_ns: float = 0.0  # memcpy + memset durations
    busy_ns: float = 0.0  # union of every op's interval
    op_sum_ns: float = 0.0  # sum of every op's duration
    span_ns: float = 0.0  # first op start to last op end
    #: Share of iterations where the host made a stream wait on an event between the iteration's
    #: last launch and its end-event record (the side streams were joined back); None without
    #: event calls in the export.
    joined_share: float | None = None
    #: Share of iterations whose start and end event records were found in the export.
    event_call_share: float = 0.0
    #: Median duration of the k-th kernel of an iteration (start order), where every iteration
    #: has the same kernels; with its name.
    kernel_position_ns: tuple[float, ...] = ()
    kernel_position_names: tuple[str, ...] = ()


def _stream_keys(frame: pd.DataFrame) -> np.ndarray:
    """One int64 per (process, context, stream): stream ids are unique per context only."""
    n = len(frame)

    def col(name: str) -> np.ndarray:
        if name not in frame:
            return np.zeros(n, dtype=np.int64)
        return pd.to_numeric(frame[name], errors="coerce").fillna(0).to_numpy(dtype=np.int64)

    pid_codes, _ = pd.factorize(col("global_pid"))
    return (
        (pid_codes.astype(np.int64) << 40)
        | ((col("context_id") & 0xFFFFF) << 20)
        | (col("stream_id") & 0xFFFFF)
    )


def _timing_streams(found: NsysIterations, specs: Sequence[Any]) -> dict[int, tuple[int, str]]:
    """Per benchmark, the stream its events were recorded on: the stream of most of the ops in
    the benchmark's range outside its iterations (flush, queue hold, warm-up: all queued where
    the events are); else the stream of the op launched last in each iteration."""
    out: dict[int, tuple[int, str]] = {}
    ranges, att, ops = found.ranges, found.attribution, found.all_ops
    if not ranges.empty and not att.empty:
        paths = {s.nvtx_path: i for i, s in enumerate(specs)}
        bench = ranges.loc[ranges["path"].astype(str).isin(paths.keys()), ["range_id", "path"]]
        if not bench.empty:
            pairs = att.merge(bench, on="range_id")[["op_id", "path"]]
            pairs["spec"] = pairs["path"].astype(str).map(paths)
            inside = found.ops[["op_id", "spec"]].drop_duplicates()
            pairs = pairs.merge(inside.assign(_in=True), on=["op_id", "spec"], how="left")
            outside = pairs[pairs["_in"].isna()][["op_id", "spec"]]
            if len(outside):
                keyed = pd.DataFrame({"op_id": ops["op_id"].to_numpy(), "key": _stream_keys(ops)})
                outside = outside.merge(keyed, on="op_id")
                counts = outside.groupby(["spec", "key"]).size().reset_index(name="n")
                counts = counts.sort_values(["spec", "n"], ascending=[True, False], kind="stable")
                for spec, key in counts.drop_duplicates("spec")[["spec", "key"]].itertuples(index=False):
                    out[int(spec)] = (int(key), "most ops of the benchmark range outside its iterations")
    per = found.ops
    if len(per) and "launch_start_ns" in per:
        k = per.assign(_key=_stream_keys(per), _launch=pd.to_numeric(per["launch_start_ns"], errors="coerce"))
        last = k.sort_values(["range_id", "_launch"], kind="stable").drop_duplicates("range_id", keep="last")
        modal = last.groupby("spec")["_key"].agg(lambda s: s.value_counts().index[0])
        for spec, key in zip(modal.index.tolist(), modal.tolist(), strict=True):
            out.setdefault(int(spec), (int(key), "the stream of the op launched last in each iteration"))
    return out


def nsys_timelines(found: NsysIterations, specs: Sequence[Any]) -> list[Timeline | None]:
    """The ``Timeline`` of every benchmark (None where nsys saw no iteration with ops)."""
    n_specs = len(specs)
    per, iters = found.ops, found.iters
    if per.empty or iters.empty:
        return [None] * n_specs
    streams = _timing_streams(found, specs)
    p = per[["range_id", "spec", "kind", "start_ns", "end_ns", "duration_ns"]].copy()
    p["key"] = _stream_keys(per)
    launch = pd.to_numeric(per["launch_start_ns"], errors="coerce") if "launch_start_ns" in per else np.nan
    p["launch"] = np.asarray(launch, dtype=float) if not np.isscalar(launch) else np.nan
    p["start_ns"] = p["start_ns"].astype(np.int64)
    p["end_ns"] = p["end_ns"].astype(np.int64)
    p = p.sort_values(["range_id", "start_ns", "end_ns"], kind="stable", ignore_index=True)
    sigma = p["spec"].map({s: k for s, (k, _) in streams.items()})
    p["on_sigma"] = (p["key"] == sigma).to_numpy()
    g = p.groupby("range_id", sort=False)
    # Idle time before each op on the union timeline, and how much of it the host caused: the
    # op's launch call began after everything before it had finished.
    reach = g["end_ns"].cummax()
    prev_reach = reach.groupby(p["range_id"], sort=False).shift(1)
    gap = (p["start_ns"] - prev_reach).clip(lower=0)
    host_gap = np.minimum((p["launch"] - prev_reach).clip(lower=0), gap)
    first = g.head(1).set_index("range_id")
    it = pd.DataFrame(
        {
            "first_start": first["start_ns"].astype(float),
            "first_launch": first["launch"].astype(float),
            "last_end": g["end_ns"].max().astype(float),
            "gap": gap.groupby(p["range_id"], sort=False).sum(min_count=1).fillna(0.0),
            "host_gap": pd.Series(host_gap).groupby(p["range_id"], sort=False).sum(min_count=1).fillna(0.0),
            "n_ops": g.size(),
        }
    )
    sig_end = p[p["on_sigma"]].groupby("range_id", sort=False)["end_ns"].max().astype(float)
    it["sigma_end"] = sig_end.reindex(it.index)
    it["last_launch"] = g["launch"].max().astype(float)
    meta = iters.set_index("range_id")[["spec", "start_ns", "end_ns", "tid"]].reindex(it.index)
    it["spec"] = meta["spec"].to_numpy()
    it["r0"] = meta["start_ns"].to_numpy(dtype=float)
    it["r1"] = meta["end_ns"].to_numpy(dtype=float)
    it["tid"] = meta["tid"].to_numpy(dtype=float)
    it["sigma"] = it["spec"].map({s: k for s, (k, _) in streams.items()})
    it["prev_end"] = _previous_end(found.all_ops, it)
    rec_s, rec_e, waited = _event_calls_around(found.event_calls, it)
    # The window opens when the start event can run: once its record call has submitted it (the
    # iteration range's start where the export has no event calls) and the stream's previous op
    # has ended. It closes at the last op it waits for, or when the end event was submitted.
    opened = np.where(np.isfinite(rec_s), rec_s, it["r0"].to_numpy())
    closed = np.where(np.isfinite(rec_e), rec_e, it["r1"].to_numpy())
    idle_start = np.fmax(it["prev_end"].to_numpy(), opened)
    it["head"] = np.maximum(it["first_start"].to_numpy() - idle_start, 0.0)
    it["host_head"] = np.minimum(
        np.maximum(it["first_launch"].to_numpy() - idle_start, 0.0), it["head"].to_numpy()
    )
    it["host_head"] = it["host_head"].fillna(0.0)
    r1 = np.nan_to_num(closed, nan=-np.inf, posinf=-np.inf)
    last_all = it["last_end"].to_numpy()
    sigma_end = np.where(np.isfinite(it["sigma_end"].to_numpy()), it["sigma_end"].to_numpy(), idle_start)
    end_u = np.maximum(sigma_end, r1)
    it["tail"] = np.maximum(r1 - last_all, 0.0)
    it["side_tail"] = np.maximum(last_all - end_u, 0.0)
    it["w_joined"] = np.maximum(last_all, r1) - idle_start
    it["w_unjoined"] = end_u - idle_start
    it["waited"] = waited
    it["event_calls"] = np.isfinite(rec_s) & np.isfinite(rec_e)
    it["dry"] = (it["host_head"] > 0) | (it["host_gap"] > 0) | (it["tail"] > 0)
    dur = pd.Series(p["duration_ns"].to_numpy(dtype=float))
    is_kernel = (p["kind"].astype(str) == "kernel").to_numpy()
    by = p["range_id"]
    it["k_sum"] = dur.where(is_kernel, 0.0).groupby(by, sort=False).sum()
    it["nk_sum"] = dur.where(~is_kernel, 0.0).groupby(by, sort=False).sum()
    it["op_sum"] = dur.groupby(by, sort=False).sum()
    it["busy"] = intervals.union_by_group(p, "range_id").reindex(it.index).astype(float)
    it["span"] = it["last_end"] - it["first_start"]
    # Every additive figure is a mean over the same iterations, the middle half by window length:
    # robust to the odd stalled iteration, and the figures of one window add up (medians do not).
    rank = it.groupby("spec")["w_joined"].rank(method="first")
    size = it.groupby("spec")["w_joined"].transform("size")
    cut = np.floor(size / 4)
    mid = it[(rank > cut) & (rank <= size - cut)]
    additive = ["head", "host_head", "gap", "host_gap", "tail", "side_tail", "w_joined", "w_unjoined",
                "k_sum", "nk_sum", "op_sum", "busy", "span"]  # fmt: skip
    med = (
        mid.groupby("spec")[additive]
        .mean()
        .join(
            it.groupby("spec").agg(
                iterations=("head", "size"),
                dry=("dry", "mean"),
                max_ops=("n_ops", "max"),
                waited=("waited", "mean"),
                event_calls=("event_calls", "mean"),
            )  # fmt: skip
        )
    )
    positions = _kernel_positions(p)
    out: list[Timeline | None] = []
    for i in range(n_specs):
        if i not in med.index:
            out.append(None)
            continue
        m = {str(k): v for k, v in med.loc[i].to_dict().items()}
        key, rule = streams.get(i, (None, "none"))
        ns, names = positions.get(i, ((), ()))
        out.append(
            Timeline(
                iterations=int(m["iterations"]),
                timing_stream=None if key is None else int(key) & 0xFFFFF,
                timing_stream_rule=rule,
                head_ns=float(m["head"]),
                host_head_ns=float(m["host_head"]),
                gap_ns=float(m["gap"]),
                host_gap_ns=float(m["host_gap"]),
                tail_ns=float(m["tail"]),
                dry_share=float(m["dry"]),
                side_tail_ns=float(m["side_tail"]),
                window_joined_ns=float(m["w_joined"]),
                window_unjoined_ns=float(m["w_unjoined"]),
                max_ops=int(m["max_ops"]),
                kernel_ns=float(m["k_sum"]),
                non_kernel_ns=float(m["nk_sum"]),
                busy_ns=float(m["busy"]),
                op_sum_ns=float(m["op_sum"]),
                span_ns=float(m["span"]),
                joined_share=None if not math.isfinite(float(m["waited"])) else float(m["waited"]),
                event_call_share=float(m["event_calls"]),
                kernel_position_ns=ns,
                kernel_position_names=names,
            )
        )
    return out


def _event_calls_around(
    calls: pd.DataFrame | None, it: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per iteration, on its thread: the end of the last event record before its first launch
    (the start event), the end of the first event record after its last launch (the end event),
    and whether a stream wait came between its last launch and that record (1.0 / 0.0; NaN where
    unknown). A record the host follows at once with a stream wait is a join
    (``Stream.wait_stream`` records an event and waits on it), not a timing event: skipped."""
    n = len(it)
    rec_s, rec_e, waited = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    if calls is None or calls.empty:
        return rec_s, rec_e, waited
    tid = it["tid"].to_numpy(dtype=float)
    first = it["first_launch"].to_numpy(dtype=float)
    last = it["last_launch"].to_numpy(dtype=float)
    c = calls.sort_values(["tid", "start_ns"], kind="stable")
    ctid = c["tid"].to_numpy(dtype=np.int64)
    kind = c["call"].astype(str).to_numpy()
    cstart = c["start_ns"].to_numpy(dtype=np.int64)
    cend = c["end_ns"].to_numpy(dtype=np.int64)
    nxt_wait = np.zeros(len(c), dtype=bool)
    nxt_wait[:-1] = (kind[1:] == "wait") & (ctid[1:] == ctid[:-1])
    timing = (kind == "record") & ~nxt_wait
    for t in pd.unique(tid[np.isfinite(tid)]):
        on = ctid == int(t)
        rs, re_ = cstart[on & timing], cend[on & timing]
        waits = cstart[on & (kind == "wait")]
        rows = np.flatnonzero((tid == t) & np.isfinite(first) & np.isfinite(last))
        if rows.size == 0 or rs.size == 0:
            continue
        i = np.searchsorted(rs, first[rows], side="right") - 1
        ok = i >= 0
        rec_s[rows[ok]] = re_[i[ok]]
        j = np.searchsorted(rs, last[rows], side="left")
        ok = j < rs.size
        rec_e[rows[ok]] = re_[j[ok]]
        between = np.searchsorted(waits, rs[j[ok]], side="left") - np.searchsorted(
            waits, last[rows][ok], side="right"
        )
        waited[rows[ok]] = (between > 0).astype(float)
    return rec_s, rec_e, waited


def _previous_end(all_ops: pd.DataFrame, it: pd.DataFrame) -> np.ndarray:
    """Per iteration, the end of the last op on its timing stream that ended by the iteration's
    first op's start (ops on one stream run one after another); NaN where there is none."""
    out = np.full(len(it), np.nan)
    keys = _stream_keys(all_ops)
    ends = all_ops["end_ns"].to_numpy(dtype=np.int64)
    sigma = it["sigma"].to_numpy(dtype=float)
    first = it["first_start"].to_numpy()
    for key in pd.unique(sigma[np.isfinite(sigma)]):
        on = np.sort(ends[keys == int(key)])
        rows = np.flatnonzero(sigma == key)
        pos = np.searchsorted(on, first[rows], side="right") - 1
        ok = pos >= 0
        out[rows[ok]] = on[pos[ok]]
    return out


def _kernel_positions(p: pd.DataFrame) -> dict[int, tuple[tuple[float, ...], tuple[str, ...]]]:
    """Per benchmark: median duration of its k-th kernel, over iterations of the usual count."""
    k = p[p["kind"].astype(str) == "kernel"]
    if k.empty:
        return {}
    k = k.assign(pos=k.groupby("range_id", sort=False).cumcount())
    count = k.groupby("range_id", sort=False)["pos"].transform("size")
    modal = count.groupby(k["spec"]).agg(lambda s: s.value_counts().index[0])
    k = k[count.to_numpy() == k["spec"].map(modal).to_numpy()]
    med = k.groupby(["spec", "pos"])["duration_ns"].median()
    out: dict[int, tuple[tuple[float, ...], tuple[str, ...]]] = {}
    for spec, grp in med.groupby(level=0):
        out[int(spec)] = (tuple(float(v) for v in grp.to_numpy()), ())
    return out


# ----------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class GapInputs:
    """What the decomposition of one benchmark reads: its three views and the run's facts."""

    timer: TimerStats | None
    ncu: NcuStats | None
    nsys: NsysStats | None  # per call (divided by the calls of a CUDA-graph sample, if it was)
    nsys_calls: int = 1  # what the nsys figures were divided by
    timeline: Timeline | None = None
    ref_clock_hz: float | None = None
    ref_clock_source: str = "none"
    ncu_cache_control: str = "all"
    source: Mapping[str, Any] = field(default_factory=lambda: {"kind": "nsightwrap_bench"})
    #: The nsys pass's own timing of the same benchmark (median per call), where it was kept.
    nsys_timer_ns: float | None = None
    #: The ncu and nsys kernel lists agree (same kernels, same count per iteration).
    kernels_agree: bool = True


def flush_kind(method: Mapping[str, Any]) -> str | None:
    """The timed loop's L2 flush: None (no flush) or its kind (``write+read``, ``zero``, ``yes``)."""
    kind = method.get("flush")
    if isinstance(kind, str) and kind:
        return None if kind.lower() in ("none", "off", "no", "false") else kind
    v = method.get("flush_l2")
    if v in (None, False, "none", "off", "no", "false", 0):
        return None
    return v if isinstance(v, str) and v not in ("true", "yes", "on") else "yes"


def cache_states(method: Mapping[str, Any], kind: str, ncu_cache_control: str) -> tuple[str, str, str | None]:
    """(the loop's L2 state, ncu's, the loop's flush): states ``clean``, ``dirty``, ``warm`` or
    ``unknown``. ncu flushes and invalidates every cache before each kernel unless run with
    ``--cache-control none``."""
    ncu_state = "warm" if ncu_cache_control == "none" else "clean"
    flush = flush_kind(method)
    if "flush" not in method and "flush_l2" not in method:
        # A captured timing without method facts: what the method is known to do.
        if kind == "do_bench":
            return "dirty", ncu_state, "zero"  # triton.testing.do_bench zeroes a 256 MB buffer
        if kind in ("do_bench_cudagraph", "torch_benchmark"):
            return "warm", ncu_state, None
        return "unknown", ncu_state, None
    graph_calls = int(method.get("calls_per_sample") or 1)
    if flush is None or (method.get("cuda_graph") and graph_calls > 1 and flush is None):
        return "warm", ncu_state, None
    if flush.lower() in DIRTY_FLUSHES:
        return "dirty", ncu_state, flush
    if flush.lower() in CLEAN_FLUSHES:
        return "clean", ncu_state, flush
    return "unknown", ncu_state, flush


def _e(k: KernelTiming) -> tuple[float, str]:
    """The elasticity carrying ``k`` to another clock, and where it came from."""
    if k.elasticity is not None and math.isfinite(k.elasticity):
        lo, hi = ELASTICITY_RANGE
        return min(hi, max(lo, k.elasticity)), k.elasticity_source
    return heuristic_elasticity(k.clock_model), "heuristic"


def _at_clock(k: KernelTiming, f_hz: float | None) -> float:
    if f_hz is None or not f_hz > 0 or not k.sm_clock_hz:
        return k.duration_ns
    e, _ = _e(k)
    return k.duration_ns * (k.sm_clock_hz / f_hz) ** e


def _iterations(ncu: NcuStats) -> dict[int, list[KernelTiming]]:
    per: dict[int, list[KernelTiming]] = {}
    for k in ncu.kernels:
        per.setdefault(k.iteration, []).append(k)
    return per


def _position_medians(ncu: NcuStats, f_hz: float | None) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """Median at-clock duration and short name of the k-th kernel, over iterations of the usual count."""
    per = _iterations(ncu)
    if not per:
        return (), ()
    counts = [len(v) for v in per.values()]
    usual = max(set(counts), key=counts.count)
    rows = [v for v in per.values() if len(v) == usual]
    meds = tuple(float(statistics.median(_at_clock(r[p], f_hz) for r in rows)) for p in range(usual))
    # The full name: short names (vectorized_elementwise_kernel) are shared by many different kernels.
    return meds, tuple(rows[0][p].kernel for p in range(usual))


# ----------------------------------------------------------------------------- fixes


def infer_kind(method: Mapping[str, Any]) -> str:
    """The timing method of a sidecar entry that names no ``source``: nsightwrap.bench writes its
    stopping rule into the method; anything else is taken for a hand-written event loop."""
    if "stop_reason" in method or "warmup_calls" in method or not method:
        return "nsightwrap_bench"
    return "cuda_events"


def _kind(inp: GapInputs) -> str:
    return str(inp.source.get("kind") or "nsightwrap_bench")


def _fix(code: str, inp: GapInputs, facts: Mapping[str, Any]) -> str:
    """What to do about one part, in the terms of the method the benchmark was timed with."""
    kind = _kind(inp)
    m = inp.timer.method if inp.timer else {}
    bench = kind == "nsightwrap_bench"
    if code == "clock":
        how = (
            "the clock sensitivity is a guess from ncu's throughput counters: run the base-clock ncu pass "
            "(nsightwrap profile runs it unless --no-clock-sweep) to measure it"
            if facts.get("heuristic")
            else "each kernel's clock sensitivity was measured"
        )
        src = str(facts.get("clock_source") or "")
        clk = (
            "; the loop's clock was read from the host, give --clock-ref HZ if you know it"
            if not any(s in src for s in TRUSTED_CLOCK_SOURCES)
            else ""
        )
        return f"not a timing error: compare at one clock (lock it with nvidia-smi -lgc); {how}{clk}"
    if code == "cache_state":
        state = facts.get("loop_state")
        if facts.get("ncu_state") == "warm":
            return (
                "ncu ran with --cache-control none (a warm L2) while the loop flushes: drop that ncu argument"
            )
        if state == "dirty":
            if kind == "do_bench":
                return (
                    "do_bench zeroes its cache buffer, which leaves dirty lines: flush clean instead (write, then "
                    "read a buffer of twice the L2, e.g. cache.fill_(1); cache.sum()), or time with nsightwrap.bench"
                )
            return (
                f"your flush ({facts.get('flush')}) leaves dirty lines that the next kernel writes back: write, then "
                "read a buffer of twice the L2 (cache.fill_(1); cache.sum()) before each sample"
            )
        if state == "warm":
            if kind == "do_bench_cudagraph":
                return (
                    "do_bench_cudagraph replays the call back to back, so every replay after the first runs on a "
                    "warm L2: compare with ncu --cache-control none (nsightwrap profile --ncu-args "
                    "'--cache-control none'), or time cold with do_bench plus a clean flush or nsightwrap.bench"
                )
            if bench and m.get("cuda_graph"):
                return (
                    "cuda_graph=True without a flush replays the calls on a warm L2: keep flush_l2=True (one call "
                    "per replay) for cold numbers, or compare warm with --ncu-args '--cache-control none'"
                )
            if bench:
                return (
                    "flush_l2=False times a warm L2 while ncu flushes before every kernel: keep flush_l2=True "
                    "(the default) for cold numbers, or compare warm with --ncu-args '--cache-control none'"
                )
            if kind == "torch_benchmark":
                return (
                    "torch.utils.benchmark.Timer never flushes the L2: compare with --ncu-args "
                    "'--cache-control none', or time cold with nsightwrap.bench"
                )
            return (
                "the loop does not flush the L2 while ncu does: flush before each sample (write, then read twice "
                "the L2), or compare with --ncu-args '--cache-control none'"
            )
        return "flush the same way ncu does: write, then read a buffer of twice the L2 before each sample"
    if code == "front_end":
        if facts.get("dry"):
            return _fix("launch_overhead", inp, {"ns": math.inf})
        if bench and m.get("hold_queue") and float(m.get("overhead_ns") or 0) > 0:
            return (
                "nsightwrap.bench already holds the queue and subtracts the empty-window cost; what is left is paid "
                "once per window: time several calls per window (cuda_graph=True, graph_calls=N; the L2 is then "
                "warm after the first call) to spread it"
            )
        if bench:
            return "keep hold_queue=True and subtract_overhead=True (the defaults): the timer then removes it"
        if kind == "do_bench":
            return (
                "every do_bench window pays the events' own cost: subtract an empty window (two events with "
                "nothing between, measured the same way), or time a CUDA graph of many calls (do_bench_cudagraph)"
            )
        return (
            "subtract the cost of an empty window (start and end events with nothing between, measured the same "
            "way) from each sample, or time many calls per window"
        )
    if code == "launch_overhead":
        if abs(float(facts.get("ns") or 0.0)) < 5:
            return "nothing to fix: the GPU never waited for the host inside the window"
        if bench and not m.get("hold_queue"):
            why = f" ({m['hold_queue_skipped']})" if m.get("hold_queue_skipped") else ""
            return (
                "the queue was not held"
                + why
                + ": keep hold_queue=True (the default) so every sample is queued "
                "behind a GPU sleep, or cuda_graph=True"
            )
        if bench:
            return "fn makes the host wait inside the window (a synchronize, .item(), a host copy): move it out of fn"
        if kind in ("do_bench", "do_bench_cudagraph"):
            return (
                "the GPU finished before the next launch arrived: do_bench cannot hold the queue; time the call in a "
                "CUDA graph (do_bench_cudagraph) or several calls per measurement"
            )
        if kind == "torch_benchmark":
            return (
                "Timer measures host and GPU together: time more calls per run, or a CUDA graph of the call"
            )
        return (
            "queue the work before the start event runs: record it behind a GPU sleep (torch.cuda._sleep), or time "
            "a CUDA graph of the call; record the end event right after the launch"
        )
    if code == "gaps":
        return (
            "real cost of the call, not a timing error: fuse the kernels or capture the call in a CUDA graph"
        )
    if code == "overlap":
        return "not a timing error: ncu serializes kernels; judge concurrent work by nsys busy time"
    if code == "non_kernel_work":
        return "ncu profiles kernels only: judge this work by nsys busy time, or keep copies out of the measured range"
    if code == "missed_work":
        if bench:
            return "join the side streams before fn returns (torch.cuda.current_stream().wait_stream(side))"
        return "join the side streams before recording the end event (torch.cuda.current_stream().wait_stream(side))"
    if code == "profiler_overhead":
        return "nothing to fix in the timing: nsys slows the loop; this part takes its share back out"
    return ""


# ----------------------------------------------------------------------------- decomposition


def _part(code: str, ns: float, evidence: Mapping[str, Any], message: str, inp: GapInputs,
          facts: Mapping[str, Any] | None = None) -> GapPart:  # fmt: skip
    ev = {
        k: (q(v) if isinstance(v, float) and k.endswith("_ns") and math.isfinite(v) else v)
        for k, v in evidence.items()
    }
    return GapPart(
        cause=code, ns=q(ns), evidence=ev, fix=_fix(code, inp, facts or {}), message=message,
        actionable=code in ACTIONABLE,
    )  # fmt: skip


@dataclass(frozen=True)
class _Clock:
    f_hz: float | None  # the clock the ncu kernels are carried to (None: ncu's own)
    n_x: float  # ncu's per-iteration median at that clock
    part: GapPart | None
    note: str | None


def _clock(
    inp: GapInputs,
    ncu: NcuStats,
    n: float,
    k_loop: float | None,
    matched: bool = False,
    check_plain: bool = True,
) -> _Clock:
    """The clock part. The loop's clock is checked against the kernels' own durations in the
    loop (nsys, else the plain pass's CUPTI reading): a clock read from the host always, a clock
    measured on the GPU where the loop's cache state is ncu's (so only the clock can differ)."""
    ref = inp.ref_clock_hz
    if ref is None or not ncu.kernels:
        return _Clock(None, n, None, None)
    per = _iterations(ncu)
    at_ref = _med([sum(_at_clock(k, ref) for k in ks) for ks in per.values()]) or n
    trusted = any(s in inp.ref_clock_source for s in TRUSTED_CLOCK_SOURCES)
    note = None
    own, where = k_loop, "under nsys"
    if own is None and check_plain and inp.timer is not None and inp.timer.kernel_ns:
        own, where = inp.timer.kernel_ns, "in the plain pass (CUPTI)"
    given = "given" in inp.ref_clock_source or inp.ref_clock_source in ("boost", "base")
    check = own is not None and not given and (not trusted or matched)
    if check and own is not None and abs(own - n) < abs(own - at_ref):
        # The clock says the loop ran at `ref`, but the kernels' own durations match ncu at its
        # clocks better: that is not the clock these kernels ran at.
        note = (
            f"the reference clock {_ghz(ref)} ({inp.ref_clock_source}) is contradicted by the kernels' own durations: "
            f"{where} they took {_us(own)}, ncu {_us(n)} at its {_ghz(ncu.sm_clock_hz)} and {_us(at_ref)} "
            f"carried to {_ghz(ref)}; the decomposition keeps ncu's clocks (give --clock-ref HZ to override)"
        )
        return _Clock(None, n, None, note)
    rows = []
    heuristic = False
    for ks in per.values():
        for k in ks:
            e, src = _e(k)
            heuristic |= src != "measured"
            rows.append(
                {
                    "iteration": k.iteration,
                    "kernel": k.kernel_short,
                    "ncu_ns": q(k.duration_ns),
                    "ncu_clock_hz": k.sm_clock_hz,
                    "elasticity": round(e, 4),
                    "elasticity_source": src,
                    "at_loop_clock_ns": q(_at_clock(k, ref)),
                }
            )
        break  # one iteration's kernels are enough to show the rule; the part is over all iterations
    srcs = {r["elasticity_source"] for r in rows}
    ev = {
        "ncu_ns": n,
        "ncu_sm_clock_hz": ncu.sm_clock_hz,
        "loop_clock_hz": ref,
        "loop_clock_source": inp.ref_clock_source,
        "ncu_at_loop_clock_ns": at_ref,
        "elasticity": "measured"
        if srcs == {"measured"}
        else ("heuristic" if "measured" not in srcs else "mixed"),
        "kernels": rows,
    }
    guess = " (clock sensitivity guessed from ncu's throughput counters)" if heuristic else ""
    msg = (
        f"ncu ran at {_ghz(ncu.sm_clock_hz)}, the timed loop at {_ghz(ref)} ({inp.ref_clock_source}): ncu's "
        f"{_us(n)} become {_us(at_ref)} at the loop's clock{guess}"
    )
    part = _part(
        "clock", at_ref - n, ev, msg, inp, {"heuristic": heuristic, "clock_source": inp.ref_clock_source}
    )
    return _Clock(ref, at_ref, part, note)


def _bounded(clk: _Clock, k_loop: float, n: float, inp: GapInputs) -> _Clock:
    """The clock part limited by the kernels' own durations in the loop (same cache state)."""
    assert clk.part is not None
    ev = {
        **clk.part.evidence,
        "rescaled_ns": clk.n_x,
        "bound_by_nsys_kernel_ns": k_loop,
        "ncu_at_loop_clock_ns": k_loop,
    }
    msg = (
        f"{clk.part.message}; carried that far, ncu would be shorter than the same kernels' own durations in the "
        f"loop ({_us(k_loop)} under nsys, same cache state), so the part stops there"
    )
    part = GapPart(
        cause="clock", ns=q(k_loop - n), evidence=ev, fix=clk.part.fix, message=msg, actionable=False
    )
    return _Clock(clk.f_hz, k_loop, part, clk.note)


def front_end_offsets(inputs: Sequence[GapInputs]) -> dict[str, float]:
    """ncu's front-end time beyond CUPTI's kernel duration, per kernel (by base name), measured
    on the benchmarks whose loop left the L2 in ncu's state (so only the front end differs):
    ncu's duration at the loop's clock minus the same kernel's nsys duration."""

    found: dict[str, list[float]] = {}
    for inp in inputs:
        if inp.timer is None or inp.ncu is None or inp.timeline is None or not inp.kernels_agree:
            continue
        loop, ncu_state, _ = cache_states(inp.timer.method, _kind(inp), inp.ncu_cache_control)
        if loop != ncu_state or inp.nsys is None or inp.nsys.streams != 1:
            continue  # kernels paired by their order need one stream
        # At ncu's own clocks: a property of the launch, not carried through the clock model.
        ncu_pos, names = _position_medians(inp.ncu, None)
        nsys_pos = [v / inp.nsys_calls for v in inp.timeline.kernel_position_ns]
        if len(ncu_pos) != len(nsys_pos):
            continue
        for name, a, b in zip(names, ncu_pos, nsys_pos, strict=True):
            found.setdefault(name, []).append(a - b)
    return {k: float(statistics.median(v)) for k, v in found.items()}


def _overlapping(nsys: NsysStats | None) -> bool:
    if nsys is None or not nsys.busy_median_ns or not nsys.op_sum_ns or nsys.streams < 2:
        return False
    return (_med(nsys.op_sum_ns) or 0.0) > nsys.busy_median_ns * (1 + OVERLAP_SHARE)


def decompose(inp: GapInputs, offsets: Mapping[str, float] | None = None) -> Gap | None:
    """The gap of one benchmark in measured parts; None without a timer or an ncu figure."""

    timer, ncu, nsys, tl = inp.timer, inp.ncu, inp.nsys, inp.timeline
    if timer is None or ncu is None:
        return None
    t = float(timer.median_ns)
    n = float(ncu.median_ns) if ncu.median_ns is not None else 0.0  # ncu profiled no kernel: 0
    total = q(t - n)
    m = timer.method
    kind = _kind(inp)
    k_timer = max(1, int(m.get("calls_per_sample") or 1))
    calls = max(1, inp.nsys_calls)
    ov = float(m.get("overhead_ns") or 0.0) / k_timer  # the empty window the method subtracted, per call
    empty = m.get("empty_window_ns")
    empty_pc = float(empty) / k_timer if isinstance(empty, (int, float)) and math.isfinite(empty) else None
    has_kernels = bool(ncu.kernels)
    k_loop = (
        nsys.median_ns if nsys is not None and nsys.median_ns and any(nsys.kernels_per_iteration) else None
    )
    # nsys figures per call: the timeline's means where it exists (they add up window by window),
    # else the medians of NsysStats.
    nsys_busy = nsys_nk = nsys_ops = None
    if nsys is not None:
        nsys_busy, nsys_nk, nsys_ops = nsys.busy_median_ns, _med(nsys.non_kernel_ns), _med(nsys.op_sum_ns)
    if tl is not None:
        if k_loop is not None:
            k_loop = tl.kernel_ns / calls
        nsys_busy, nsys_nk, nsys_ops = tl.busy_ns / calls, tl.non_kernel_ns / calls, tl.op_sum_ns / calls
    parts: list[GapPart] = []
    notes: list[str] = []  # shown with the benchmark's notes
    details: list[str] = []  # kept with the decomposition only

    # 1. clock
    loop_state, ncu_state, flush = cache_states(m, kind, inp.ncu_cache_control)
    # The kernels' own durations say which clock they ran at only where nothing else differs:
    # the same cache state, one stream (concurrent kernels stretch each other).
    single = nsys is None or nsys.streams <= 1
    k_own = k_loop if single else None
    clk = (
        _clock(inp, ncu, n, k_own, loop_state == ncu_state and single, check_plain=single)
        if has_kernels
        else _Clock(None, n, None, None)
    )
    if clk.part is not None:
        parts.append(clk.part)
    if clk.note:
        notes.append(clk.note)
    n_x = clk.n_x

    # 2. cache state, and ncu's front-end time beyond CUPTI (F), first kernel and the rest
    overlap_mode = _overlapping(nsys)
    f_first = f_rest = 0.0
    f_source = "none"
    if has_kernels and k_loop is not None and not overlap_mode and inp.kernels_agree and nsys is not None:
        ncu_pos, names = _position_medians(ncu, clk.f_hz)
        nsys_pos = [v / calls for v in (tl.kernel_position_ns if tl else ())]
        paired = len(ncu_pos) == len(nsys_pos) > 0
        if loop_state == ncu_state:
            if clk.part is not None and n_x < k_loop:
                # Same cache state: ncu at the loop's clock cannot be shorter than the same kernels'
                # own (CUPTI) durations in the loop, since ncu also counts its front end. The clock
                # rescale overshot; the nsys kernels bound it.
                clk = _bounded(clk, k_loop, n, inp)
                parts[-1] = clk.part  # type: ignore[assignment]
                n_x = clk.n_x
            f_total = n_x - k_loop
            # ncu's front-end time of each kernel, in proportion to its excess over CUPTI's duration.
            w = (
                [max(0.0, a - b) for a, b in zip(ncu_pos, nsys_pos, strict=True)]
                if paired and nsys.streams == 1
                else []
            )
            share0 = w[0] / sum(w) if w and sum(w) > 0 else 1.0
            f_first, f_rest = f_total * share0, f_total * (1 - share0)
            f_source = "this benchmark (same cache state as ncu)"
        else:
            look = [(offsets or {}).get(nm) for nm in names]
            if look and all(v is not None for v in look):
                vals = [float(v) for v in look if v is not None]
                f_first, f_rest = vals[0], sum(vals[1:])
                f_source = "the same kernels in benchmarks of this run with ncu's cache state"
            ev = {
                "loop_cache": loop_state,
                "loop_flush": flush or "none",
                "ncu_cache_control": inp.ncu_cache_control,
                "nsys_kernel_ns": k_loop,
                "ncu_at_loop_clock_ns": n_x,
                "ncu_front_end_ns": (f_first + f_rest) if f_source != "none" else None,
                "ncu_front_end_source": f_source,
            }
            size = k_loop + f_first + f_rest - n_x
            what = {
                "dirty": f"after the loop's '{flush}' flush (dirty lines in the L2)",
                "warm": "on a warm L2 (no flush between calls)",
                "unknown": f"after the loop's flush ({flush or 'kind not recorded'})",
                "clean": "after a clean flush",
            }[loop_state]
            sep = (
                f", less ncu's own front-end time {_us(f_first + f_rest)}"
                if f_source != "none"
                else " (ncu's front-end time for these kernels was not measured in this run: it is inside this part)"
            )
            msg = (
                f"the same kernels took {_us(k_loop)} under nsys {what} against {_us(n_x)} in ncu, which runs each "
                f"kernel on a {'clean' if ncu_state == 'clean' else 'warm'} L2{sep}"
            )
            parts.append(_part("cache_state", size, ev, msg, inp, {"loop_state": loop_state, "ncu_state": ncu_state,
                                                                    "flush": flush}))  # fmt: skip
    elif overlap_mode and loop_state != ncu_state:
        details.append("ops ran concurrently: the cache state's share cannot be told from the overlap's")

    dry = tl is not None and tl.dry_share >= 0.5
    # 3. front end and event cost
    if tl is not None:
        head = tl.head_ns / calls
        host_head = tl.host_head_ns / calls
        ev = {
            "lead_in_ns": head,
            "host_wait_ns": host_head,
            "empty_window_ns": empty_pc,
            "empty_window_subtracted_ns": ov,
            "ncu_front_end_ns": f_first if f_source != "none" else None,
            "ncu_front_end_source": f_source,
            "timing_stream": tl.timing_stream,
            "timing_stream_rule": tl.timing_stream_rule,
            "queue_ran_dry_share": round(tl.dry_share, 4),
        }
        size = head - host_head - ov - f_first
        msg = (
            f"each window holds {_us(head - host_head)} of event and dispatch time before its first op starts"
            + (f", {_us(ov)} of it subtracted by the timer as the empty-window cost" if ov else "")
            + (
                f", {_us(f_first)} of it counted by ncu too (its front-end time)"
                if f_source != "none" and f_first
                else ""
            )
            + (": the queue ran dry, so this includes the launch call itself" if dry else "")
        )
        parts.append(_part("front_end", size, ev, msg, inp, {"dry": dry}))
    elif empty_pc is not None:
        ev = {"empty_window_ns": empty_pc, "empty_window_subtracted_ns": ov}
        msg = f"an empty event window measured {_us(empty_pc)}" + (
            f", {_us(ov)} of it subtracted by the timer" if ov else ", and the method does not subtract it"
        )
        parts.append(_part("front_end", empty_pc - ov, ev, msg, inp, {"dry": False}))

    # 4. host stalls: the GPU waited for the host inside the window
    if tl is not None:
        host = (tl.host_head_ns + tl.host_gap_ns + tl.tail_ns) / calls
        ev = {
            "before_first_op_ns": tl.host_head_ns / calls,
            "between_ops_ns": tl.host_gap_ns / calls,
            "after_last_op_ns": tl.tail_ns / calls,
            "queue_ran_dry_share": round(tl.dry_share, 4),
            "hold_queue": m.get("hold_queue"),
        }
        msg = (
            f"the GPU waited {_us(host)} per window for the host (the queue ran dry in {tl.dry_share:.0%} of the "
            "iterations)"
            + (
                ": the end event was recorded after the GPU had finished"
                if tl.tail_ns > tl.host_head_ns + tl.host_gap_ns
                else ""
            )
        )
        parts.append(_part("launch_overhead", host, ev, msg, inp, {"ns": host}))

    # 5. gaps between ops, and overlap
    if nsys is not None and (tl is None or tl.max_ops > 1):
        gap = (tl.gap_ns / calls) if tl is not None else (nsys.gap_median_ns or 0.0)
        host_gap = (tl.host_gap_ns / calls) if tl is not None else 0.0
        if gap > 0 or f_rest:
            ev = {"idle_between_ops_ns": gap, "host_wait_ns": host_gap, "ncu_front_end_ns": f_rest or None,
                  "ops_per_iteration": tl.max_ops if tl else None}  # fmt: skip
            msg = f"the ops of an iteration left {_us(gap - host_gap)} idle between them" + (
                f", {_us(f_rest)} of it the dispatch ncu counts in its kernels' durations" if f_rest else ""
            )
            parts.append(_part("gaps", gap - host_gap - f_rest, ev, msg, inp))
    if nsys is not None and overlap_mode:
        busy = nsys_busy or 0.0
        nk = nsys_nk or 0.0
        ev = {"nsys_busy_ns": busy, "nsys_op_sum_ns": nsys_ops, "non_kernel_ns": nk,
              "ncu_serialized_ns": n_x, "streams": nsys.streams}  # fmt: skip
        msg = (
            f"ops ran concurrently on {nsys.streams} streams: the GPU was busy {_us(busy)} with work that ncu "
            f"serializes into {_us(n_x + nk)}"
        )
        parts.append(_part("overlap", busy - nk - n_x, ev, msg, inp))
    elif nsys is not None and nsys.streams > 1:
        ovl = (
            (nsys_busy or 0.0) - (nsys_ops or 0.0)
            if tl is not None
            else (_med([b - o for b, o in zip(nsys.busy_ns, nsys.op_sum_ns, strict=True)]) or 0.0)
        )
        if ovl:
            ev = {
                "nsys_busy_ns": nsys_busy,
                "nsys_op_sum_ns": nsys_ops,
                "streams": nsys.streams,
            }
            parts.append(
                _part("overlap", ovl, ev, f"ops overlapped on {nsys.streams} streams by {_us(-ovl)}", inp)
            )

    # 6. non-kernel work
    if nsys is not None and any(v > 0 for v in nsys.non_kernel_ns):
        nk = nsys_nk or 0.0
        copies = max(set(nsys.memcpy_per_iteration), key=nsys.memcpy_per_iteration.count)
        sets = max(set(nsys.memset_per_iteration), key=nsys.memset_per_iteration.count)
        ev = {"non_kernel_ns": nk, "memcpy_per_iteration": copies, "memset_per_iteration": sets,
              "ncu_kernels_per_iteration": max(ncu.kernels_per_iteration, default=0)}  # fmt: skip
        msg = f"{copies} memcpy and {sets} memset per iteration took {_us(nk)}, which ncu cannot see" + (
            " (ncu saw no kernel at all)" if not has_kernels else ""
        )
        parts.append(_part("non_kernel_work", nk, ev, msg, inp))
    elif nsys is None and (cupti := kernel_time_copies(m)) is not None and cupti[1]:
        # No nsys pass: the timer's own CUPTI reading of a few calls counted the copies apart from
        # the kernels (cuBLAS's 4-byte memset before a cooperative GEMM kernel, for instance).
        n_copies, copy_ns = cupti[0], float(cupti[1])
        ev = {"non_kernel_ns": copy_ns, "copies_per_call": n_copies, "measured": "plain pass (CUPTI)",
              "ncu_kernels_per_iteration": max(ncu.kernels_per_iteration, default=0)}  # fmt: skip
        msg = f"{n_copies:g} memcpy/memset per call took {_us(copy_ns)} in the plain pass (CUPTI), which ncu cannot see"
        parts.append(_part("non_kernel_work", copy_ns, ev, msg, inp))

    # 7. work the timing missed
    t_pass = inp.nsys_timer_ns if inp.nsys_timer_ns is not None else t
    missed_work = False
    # A host clock read around a synchronized block (torch.utils.benchmark): the window is the
    # iteration range itself, which the capture layer opens and closes at those reads.
    host_timed = str(m.get("timing") or "").startswith("host") or kind == "torch_benchmark"
    if tl is not None and tl.side_tail_ns > 0:
        joined = tl.window_joined_ns / calls - ov
        unjoined = tl.window_unjoined_ns / calls - ov
        if tl.joined_share is not None:
            # The export has the event calls: a stream wait between the last launch and the end
            # event's record means the side streams were joined back before the end event.
            missed = tl.joined_share < 0.5
            rule = f"a stream wait before the end event in {tl.joined_share:.0%} of the iterations"
        else:
            missed = abs(t_pass - unjoined) < abs(t_pass - joined)
            rule = (
                "the timing is closer to the window that does not wait"
                if missed
                else "the timing is closer to the joined window"
            )
        ev = {"side_work_after_timing_stream_ns": tl.side_tail_ns / calls, "window_if_joined_ns": joined,
              "window_if_not_joined_ns": unjoined, "timing_ns": t_pass,
              "timing_from": "nsys pass" if inp.nsys_timer_ns is not None else "plain pass", "joined_by": rule}  # fmt: skip
        missed_work = missed
        if missed:
            size = tl.side_tail_ns / calls
            msg = (
                f"your timing misses {_us(size)}: work launched inside the window on another stream ended after the "
                f"end event, and nothing joined it back ({rule})"
            )
            parts.append(_part("missed_work", -size, ev, msg, inp))
        else:
            details.append(
                f"work on other streams ran {_us(tl.side_tail_ns / calls)} past the timing stream's last op and the "
                "timing waited for it (joined back)"
            )

    # 8. profiler overhead
    if inp.nsys_timer_ns is not None and tl is not None:
        ev = {"plain_timing_ns": t, "nsys_pass_timing_ns": inp.nsys_timer_ns}
        msg = (
            f"the same loop took {_us(inp.nsys_timer_ns)} per call under nsys against {_us(t)} in the plain pass: "
            "the parts measured under nsys are that much longer"
        )
        parts.append(_part("profiler_overhead", t - inp.nsys_timer_ns, ev, msg, inp))
    elif tl is not None and tl.dry_share >= 0.5 and (tl.event_call_share >= 0.5 or host_timed):
        # No timings of the nsys pass, but its timeline gives the windows themselves (event
        # records and GPU ops; on the H200 captures within 3% of the nsys pass's own event
        # timings). Only where the queue ran dry: nsys slows the host's launches, which then
        # stretch every window; with a held queue the GPU-side windows match the plain run.
        window = (tl.window_unjoined_ns if missed_work else tl.window_joined_ns) / calls - ov
        if window > t:
            src = (
                "nsys timeline (the iteration range's host times, ops)"
                if host_timed and tl.event_call_share < 0.5
                else ("nsys timeline (event records, ops)")
            )
            ev = {"plain_timing_ns": t, "nsys_window_ns": window, "window_from": src,
                  "queue_ran_dry_share": round(tl.dry_share, 4)}  # fmt: skip
            msg = (
                f"under nsys the same windows lasted {_us(window)} per call (its timeline: event records and GPU ops) "
                f"against {_us(t)} in the plain pass: nsys slowed the host's launches, and the parts measured "
                "under nsys are that much longer"
            )
            parts.append(_part("profiler_overhead", t - window, ev, msg, inp))

    parts.sort(key=lambda p: PART_ORDER.index(p.cause))
    residual = total - math.fsum(p.ns for p in parts)  # exact: every term is a multiple of 1/QUANTUM
    measurements = {
        "timer_ns": t,
        "timer_method": kind,
        "ncu_ns": n,
        "ncu_iterations": len(ncu.iterations_ns),
        "ref_clock_hz": inp.ref_clock_hz,
        "nsys_kernel_ns": k_loop,
        "nsys_iterations": tl.iterations if tl is not None else (len(nsys.busy_ns) if nsys is not None else None),
        "nsys_timeline": tl is not None,
        "nsys_pass_timing_ns": inp.nsys_timer_ns,
        "empty_window_ns": empty_pc,
        "cupti_kernel_ns": timer.kernel_ns,
        "elasticity": "measured" if ncu.kernels and all(k.elasticity_source == "measured" for k in ncu.kernels)
        else ("heuristic" if ncu.kernels else None),
        "notes": notes,
        "details": details,
    }  # fmt: skip
    return Gap(
        total_ns=total,
        parts=tuple(parts),
        residual_ns=q(residual),
        timer_ns=t,
        ncu_ns=n,
        measurements=measurements,
    )


# ----------------------------------------------------------------------------- verdict


_CODE = {
    "clock": CauseCode.CLOCK,
    "cache_state": CauseCode.CACHE_STATE,
    "front_end": CauseCode.FRONT_END,
    "launch_overhead": CauseCode.LAUNCH_OVERHEAD,
    "gaps": CauseCode.GAPS,
    "overlap": CauseCode.OVERLAP,
    "non_kernel_work": CauseCode.NON_KERNEL_WORK,
    "missed_work": CauseCode.MISSED_WORK,
    "profiler_overhead": CauseCode.PROFILER_OVERHEAD,
}


def judge(gap: Gap, tolerance: float) -> tuple[bool, str]:
    """Whether the gap flags the timing, and why: the residual (what no measurement explains) or
    the parts the user's method can change exceed ``tolerance`` of the timing."""
    t = abs(gap.timer_ns or 0.0)
    limit = tolerance * t
    act = math.fsum(abs(p.ns) for p in gap.parts if p.actionable)
    if abs(gap.residual_ns) > limit:
        return True, f"the residual {_us(gap.residual_ns)} is over {tolerance:.0%} of the timing"
    if act > limit:
        return (
            True,
            f"parts your timing method can change sum to {_us(act)}, over {tolerance:.0%} of the timing",
        )
    return False, f"residual {_us(gap.residual_ns)} and actionable parts {_us(act)} within {tolerance:.0%}"


#: How far apart a kernel of a few us reads from one place of its buffers in device memory to
#: another: up to about 0.2 us on a 2 us add on an H200, in the timer, CUPTI and ncu alike
#: (docs/timer-accuracy.md, "Where the buffers lie"). ncu's pass is a process of its own, whose
#: buffers need not lie where the plain pass's did, so a residual this small may be no more than that.
PLACE_SPREAD_NS = 200.0


def causes_from_gap(gap: Gap, tolerance: float) -> list[Cause]:
    """One cause per part of at least half the tolerance of the timing, largest first, and
    ``unexplained`` when the residual is over the tolerance."""
    t = abs(gap.timer_ns or 0.0)
    big = sorted((p for p in gap.parts if abs(p.ns) >= tolerance / 2 * t and p.ns), key=lambda p: -abs(p.ns))
    out = [
        Cause(_CODE[p.cause], p.message, {"part_ns": p.ns, **_flat(p.evidence)}, p.fix)
        for p in big
        if p.cause in _CODE
    ]
    if abs(gap.residual_ns) > tolerance * t:
        fix = "rerun to check it repeats; look at the per-kernel table and the nsys timeline"
        if abs(gap.residual_ns) <= PLACE_SPREAD_NS:
            fix += (
                f"; a residual under {_us(PLACE_SPREAD_NS)} can be where the buffers lie: a kernel of a few us reads "
                "that much apart from one place in device memory to another, and ncu's pass need not have used the same places"
            )
        out.append(
            Cause(
                CauseCode.UNEXPLAINED,
                f"{_us(gap.residual_ns)} of the gap is explained by no measurement of this run",
                {"residual_ns": gap.residual_ns, "total_ns": gap.total_ns, "timer_ns": gap.timer_ns},
                fix,
            )
        )
    return out


def _flat(ev: Mapping[str, Any]) -> dict[str, float | int | str | None]:
    """Evidence for a ``Cause``: scalars only (lists of per-kernel rows stay in the gap)."""
    return {k: v for k, v in ev.items() if v is None or isinstance(v, (int, float, str))}
