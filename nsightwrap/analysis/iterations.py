"""Every benchmark's iterations found at once: ncu kernels and nsys ops per iteration range.

A run of a parameter sweep holds a thousand benchmarks; matching each benchmark's iteration
ranges against every kernel and op, benchmark by benchmark, cost 30-60 ms of pandas work each.
Here each range path and each kernel's NVTX paths are parsed once, for all benchmarks together
(``<nvtx_path>/<iter_prefix><i>`` is looked up in a dict), ops are joined to their iterations
once, and every per-iteration figure is one grouped, vectorized computation. ``reconcile``'s
``ncu_stats`` and ``nsys_stats`` are these functions applied to one benchmark.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from nsightwrap.analysis.clocks import DURATION_SOURCES, ELASTICITY_RANGE, normalize_kernels, number_or_none
from nsightwrap.analysis.model import ClockModel, KernelTiming, NcuStats, NsysStats
from nsightwrap.core import intervals
from nsightwrap.timer.stats import median_or_none


class RangeSpec(Protocol):
    """What a benchmark's iterations are found by (``reconcile.BenchmarkSpec`` has it): its range
    path and the prefix of its iteration ranges. A protocol, so that the lower stage need not
    import ``reconcile``."""

    @property
    def nvtx_path(self) -> str: ...

    @property
    def iter_prefix(self) -> str: ...


#: A range path ending in digits: group 1 is ``<nvtx_path>/<iter_prefix>``, group 2 the index
#: (also splits a child range name into its prefix and index: ``reconcile.specs_from_nvtx``).
ITER_PATH = re.compile(r"(.*?)(\d+)")

#: ncu columns the statistics use: the parsed frame also holds every collected metric, and
#: copying hundreds of columns per benchmark dominated the analysis.
NCU_COLUMNS = (
    "launch_id", "kernel", "kernel_short", "duration_ns", "sm_clock_hz", "sm_throughput_pct",
    "memory_throughput_pct", "dram_throughput_pct", "nvtx_ranges",
    "base_duration_ns", "base_sm_clock_hz", "elasticity",  # the clock-sweep pass (clocks.attach_base)
    "duration_source", "counters_duration_ns",  # the duration pass (clocks.attach_durations)
    "dram_bytes",  # DRAM traffic: what a warm L2 can save at most (analysis/gap/limits.py)
)  # fmt: skip

_OP_COLUMNS = ["op_id", "kind", "name", "start_ns", "end_ns", "duration_ns", "stream_id"]
#: Op columns the gap decomposition also needs, where the export has them.
_OP_EXTRA = ["short_name", "launch_start_ns", "context_id", "global_pid"]


def _paths(v: object) -> tuple[str, ...]:
    if isinstance(v, str):
        return (v,)
    if isinstance(v, Iterable):
        return tuple(str(p) for p in v)
    return ()


def _heads(specs: Sequence[RangeSpec]) -> dict[str, int]:
    """``<nvtx_path>/<iter_prefix>`` -> index of the benchmark."""
    return {f"{s.nvtx_path}/{s.iter_prefix}": i for i, s in enumerate(specs)}


# ----------------------------------------------------------------------------- ncu


def _empty_ncu() -> NcuStats:
    return NcuStats((), (), (), None, None, None, (), (), 0, ())


def ncu_stats_all(
    kernels: pd.DataFrame, specs: Sequence[RangeSpec], ref_clocks_hz: Sequence[float | None]
) -> list[NcuStats]:
    """ncu's per-iteration kernel sums for every benchmark, raw and at its reference clock.

    A kernel belongs to iteration ``i`` of the benchmark whose ``<nvtx_path>/<iter_prefix><i>``
    is among its NVTX paths; kernels inside a benchmark's range but outside its iteration ranges
    (flushes, warm-up) are counted as ``excluded_kernels``.
    """
    if not specs:
        return []
    heads = _heads(specs)
    benches = {s.nvtx_path: i for i, s in enumerate(specs)}
    n = len(kernels)
    spec_of = np.full(n, -1, dtype=np.int64)
    iter_of = np.full(n, -1, dtype=np.int64)
    excluded = np.zeros(len(specs), dtype=np.int64)
    for row, ranges in enumerate(kernels["nvtx_ranges"] if n else []):
        inside: set[int] = set()
        for p in _paths(ranges):
            m = ITER_PATH.fullmatch(p)
            if spec_of[row] < 0 and m and (i := heads.get(m.group(1))) is not None:
                spec_of[row], iter_of[row] = i, int(m.group(2))
            q = p  # the path and each enclosing range: which benchmark ranges hold the kernel
            while True:
                if (b := benches.get(q)) is not None:
                    inside.add(b)
                cut = q.rfind("/")
                if cut < 0:
                    break
                q = q[:cut]
        for b in inside:
            if b != spec_of[row]:
                excluded[b] += 1
    keep = [c for c in NCU_COLUMNS if c in kernels]
    frame = kernels[keep].reset_index(drop=True)
    frame = frame.assign(nw_spec=spec_of, nw_iter=iter_of)
    measured = frame[frame["nw_spec"] >= 0]
    if "launch_id" in measured:
        measured = measured.sort_values("launch_id", kind="stable")
    if measured.empty:
        return [replace_excluded(_empty_ncu(), int(excluded[i])) for i in range(len(specs))]
    # One call for every kernel (clock model, elasticity, cycles), then each kernel carried to
    # its own benchmark's reference clock with the same rule as clocks.normalize_kernels:
    # t(f) = t_k * (f_k / f) ** e, e clamped to ELASTICITY_RANGE.
    norm = normalize_kernels(measured, None)
    ref = np.array([np.nan if r is None or not r > 0 else float(r) for r in ref_clocks_hz], dtype=float)
    f_ref = ref[norm["nw_spec"].to_numpy()]
    dur = norm["duration_ns"].to_numpy(dtype=float)
    clk = pd.to_numeric(norm["sm_clock_hz"], errors="coerce").to_numpy(dtype=float)
    e = np.clip(norm["elasticity"].to_numpy(dtype=float), *ELASTICITY_RANGE)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = dur * (clk / f_ref) ** e
    norm = norm.assign(normalized_ns=np.where(np.isfinite(scaled), scaled, dur))
    per_spec: dict[int, list[KernelTiming]] = {}
    for r in norm.itertuples(index=False):
        per_spec.setdefault(int(r.nw_spec), []).append(_kernel(r))  # type: ignore[arg-type]
    return [
        replace_excluded(_ncu_from_rows(per_spec.get(i, [])), int(excluded[i])) for i in range(len(specs))
    ]


def replace_excluded(stats: NcuStats, excluded: int) -> NcuStats:
    """``stats`` with ``excluded_kernels`` set."""
    from dataclasses import replace

    return replace(stats, excluded_kernels=excluded) if excluded != stats.excluded_kernels else stats


def _kernel(r: Any) -> KernelTiming:
    return KernelTiming(
        iteration=int(r.nw_iter),
        kernel=str(r.kernel),
        kernel_short=str(getattr(r, "kernel_short", r.kernel)),
        duration_ns=float(r.duration_ns),
        sm_clock_hz=number_or_none(r.sm_clock_hz),
        cycles=number_or_none(r.cycles),
        sm_throughput_pct=number_or_none(r.sm_throughput_pct),
        memory_throughput_pct=number_or_none(r.memory_throughput_pct),
        clock_model=ClockModel(r.clock_model),
        normalized_ns=float(r.normalized_ns),
        elasticity=number_or_none(r.elasticity),
        elasticity_source=str(r.elasticity_source),
        base_duration_ns=number_or_none(getattr(r, "base_duration_ns", None)),
        base_sm_clock_hz=number_or_none(getattr(r, "base_sm_clock_hz", None)),
        duration_source=str(getattr(r, "duration_source", None) or DURATION_SOURCES[1]),
        counters_duration_ns=_counters_ns(r),
        dram_bytes=number_or_none(getattr(r, "dram_bytes", None)),
    )


def _counters_ns(r: Any) -> float | None:
    # Only where the duration came from the duration pass: otherwise it is duration_ns itself.
    if getattr(r, "duration_source", None) != DURATION_SOURCES[0]:
        return None
    return number_or_none(getattr(r, "counters_duration_ns", None))


def _ncu_from_rows(rows: list[KernelTiming]) -> NcuStats:
    per_iter: dict[int, list[KernelTiming]] = {}
    for k in rows:
        per_iter.setdefault(k.iteration, []).append(k)
    order = sorted(per_iter)
    it_ns = tuple(sum(k.duration_ns for k in per_iter[i]) for i in order)
    it_cyc = tuple(sum(k.cycles or 0.0 for k in per_iter[i]) for i in order)
    it_norm = tuple(sum(k.normalized_ns for k in per_iter[i]) for i in order)
    timed = [k for k in rows if k.cycles is not None]
    total = sum(k.duration_ns for k in timed)
    clock = sum(k.cycles or 0.0 for k in timed) / total * 1e9 if timed and total > 0 else None
    signatures = Counter(tuple(k.kernel_short for k in per_iter[i]) for i in order)
    return NcuStats(
        iterations_ns=it_ns,
        iterations_cycles=it_cyc,
        normalized_iterations_ns=it_norm,
        median_ns=median_or_none(it_ns),
        normalized_ns=median_or_none(it_norm),
        sm_clock_hz=clock,
        kernels_per_iteration=tuple(len(per_iter[i]) for i in order),
        kernel_names=signatures.most_common(1)[0][0] if signatures else (),
        excluded_kernels=0,
        kernels=tuple(rows),
    )


# ----------------------------------------------------------------------------- nsys


@dataclass(frozen=True, eq=False)
class NsysIterations:
    """Every benchmark's nsys iterations, found once.

    ``iters``: one row per instance of an iteration range, ``range_id``, ``spec`` (index into
    the benchmarks), ``iteration``, ``start_ns``, ``end_ns`` (host times of the range), sorted by
    benchmark, iteration and start. ``ops``: one row per (iteration, op launched inside it),
    the op's columns plus ``range_id`` and ``spec``. ``all_ops`` is the whole op frame.
    """

    iters: pd.DataFrame
    ops: pd.DataFrame
    all_ops: pd.DataFrame
    ranges: pd.DataFrame
    attribution: pd.DataFrame
    #: ``NsysReport.event_calls`` (event records, stream waits), empty where not read.
    event_calls: pd.DataFrame | None = None
    #: (``op_id``, ``spec``) of the ops launched in an iteration instance read only as the lead-in
    #: of a run of analysed ones (``NsysReport.lead_in_ranges``): iteration ops, not analysed.
    lead_in_ops: pd.DataFrame | None = None


_TAIL = re.compile(r"^(.*?)(\d+)$")
_ASCII_DIGITS = "0123456789"


def _split_paths(paths: list[str], heads: dict[str, int]) -> tuple[list[float], list[int]]:
    """Per range path, the benchmark whose ``<nvtx_path>/<iter_prefix>`` it is followed by an index
    (NaN where none) and that index (0 where none): what ``^(.*?)(\\d+)$`` splits, by ``rstrip`` of
    ASCII digits; a path where the regular expression could differ (a newline, or a non-ASCII digit
    before the ASCII ones) goes through it."""
    nan = float("nan")
    spec_of: list[float] = []
    index_of: list[int] = []
    for p in paths:
        head = p.rstrip(_ASCII_DIGITS)
        if "\n" in p or (head and head[-1].isdecimal()):
            m = _TAIL.match(p)
            head, digits = (m.group(1), m.group(2)) if m else (p, "")
        else:
            digits = p[len(head) :]
        i = heads.get(head) if digits else None
        spec_of.append(nan if i is None else float(i))
        index_of.append(int(digits) if i is not None else 0)
    return spec_of, index_of


def nsys_iterations(
    ops: pd.DataFrame,
    ranges: pd.DataFrame,
    attribution: pd.DataFrame,
    specs: Sequence[RangeSpec],
    event_calls: pd.DataFrame | None = None,
    lead_in: Collection[int] = (),
) -> NsysIterations:
    """Find every benchmark's iteration ranges and the ops launched inside each (one pass).
    ``lead_in``: range ids of iteration instances read only as a lead-in (not iterations)."""
    heads = _heads(specs)
    cols = ["range_id", "spec", "iteration", "start_ns", "end_ns", "tid"]
    if ranges.empty or not heads:
        iters = pd.DataFrame({c: pd.Series(dtype=np.int64) for c in cols})
    else:
        spec_of, index_of = _split_paths(ranges["path"].astype(str).tolist(), heads)
        spec = pd.Series(spec_of, index=ranges.index, dtype=float)
        ok = spec.notna().to_numpy()
        end = ranges["end_ns"] if "end_ns" in ranges else pd.Series(np.nan, index=ranges.index)
        tid = ranges["global_tid"] if "global_tid" in ranges else pd.Series(np.nan, index=ranges.index)
        iters = pd.DataFrame(
            {
                "range_id": ranges["range_id"].to_numpy()[ok],
                "spec": spec[ok].astype(np.int64).to_numpy(),
                "iteration": np.asarray(index_of, dtype=np.int64)[ok],
                "start_ns": pd.to_numeric(ranges["start_ns"], errors="coerce").to_numpy(dtype=float)[ok],
                "end_ns": pd.to_numeric(end, errors="coerce").to_numpy(dtype=float)[ok],
                "tid": pd.to_numeric(tid, errors="coerce").to_numpy(dtype=float)[ok],
            }
        ).sort_values(["spec", "iteration", "start_ns"], kind="stable", ignore_index=True)
    lead_ops = None
    if lead_in:
        lead = iters["range_id"].isin(np.fromiter(lead_in, dtype=np.int64)).to_numpy()
        lead_spec = pd.Series(iters["spec"].to_numpy()[lead], index=iters["range_id"].to_numpy()[lead])
        la = attribution[attribution["range_id"].isin(lead_spec.index)]
        lead_ops = pd.DataFrame({"op_id": la["op_id"].to_numpy(), "spec": la["range_id"].map(lead_spec).to_numpy()})
        iters = iters[~lead].reset_index(drop=True)
    att = attribution[attribution["range_id"].isin(iters["range_id"])]
    want = _OP_COLUMNS + [c for c in _OP_EXTRA if c in ops]
    per = att.merge(ops[want], on="op_id", how="inner")
    if "short_name" in per:
        per["name"] = per["short_name"].where(per["short_name"].notna(), per["name"])
    per["spec"] = per["range_id"].map(pd.Series(iters["spec"].to_numpy(), index=iters["range_id"].to_numpy()))
    return NsysIterations(
        iters=iters, ops=per, all_ops=ops, ranges=ranges, attribution=attribution, event_calls=event_calls,
        lead_in_ops=lead_ops,
    )


def _empty_nsys() -> NsysStats:
    return NsysStats((), (), (), (), (), (), (), (), 0, (), None, None, None, None)


def nsys_stats_all(found: NsysIterations, n_specs: int) -> list[NsysStats]:
    """nsys's per-iteration figures for every benchmark: one iteration per range instance."""
    iters, per = found.iters, found.ops
    if iters.empty:
        return [_empty_nsys() for _ in range(n_specs)]
    range_ids = iters["range_id"].to_numpy()
    kind = per["kind"].astype(str).to_numpy()
    dur = per["duration_ns"].to_numpy(dtype=float)
    is_kernel = kind == "kernel"
    sums = (
        pd.DataFrame(
            {
                "range_id": per["range_id"].to_numpy(),
                "k_ns": np.where(is_kernel, dur, 0.0),
                "o_ns": dur,
                "nk_ns": np.where(is_kernel, 0.0, dur),
                "nk": is_kernel.astype(np.int64),
                "nc": (kind == "memcpy").astype(np.int64),
                "nm": (kind == "memset").astype(np.int64),
            }
        )
        .groupby("range_id", sort=False)
        .sum()
        .reindex(range_ids, fill_value=0)
    )
    busy = intervals.union_by_group(per, "range_id").reindex(range_ids, fill_value=0).to_numpy(dtype=float)
    span = intervals.span_by_group(per, "range_id").reindex(range_ids, fill_value=0).to_numpy(dtype=float)
    streams = (
        per.groupby("range_id", sort=False)["stream_id"].nunique().reindex(range_ids, fill_value=0).to_numpy()
        if len(per)
        else np.zeros(len(range_ids), dtype=np.int64)
    )
    names = _signatures(per, range_ids)
    spec_col = iters["spec"].to_numpy()
    bounds = np.searchsorted(spec_col, np.arange(n_specs + 1))
    # The counts as int64: their .tolist() gives Python ints.
    cols = {c: sums[c].to_numpy(dtype=np.int64) if c in ("nk", "nc", "nm") else sums[c].to_numpy() for c in sums.columns}
    out = []
    for i in range(n_specs):
        a, b = int(bounds[i]), int(bounds[i + 1])
        if a == b:
            out.append(_empty_nsys())
            continue
        k_ns, b_ns, s_ns = cols["k_ns"][a:b], busy[a:b], span[a:b]
        signatures = Counter(names[a:b])
        out.append(
            NsysStats(
                iterations_ns=tuple(k_ns.tolist()),
                busy_ns=tuple(b_ns.tolist()),
                span_ns=tuple(s_ns.tolist()),
                op_sum_ns=tuple(cols["o_ns"][a:b].tolist()),
                non_kernel_ns=tuple(cols["nk_ns"][a:b].tolist()),
                kernels_per_iteration=tuple(cols["nk"][a:b].tolist()),
                memcpy_per_iteration=tuple(cols["nc"][a:b].tolist()),
                memset_per_iteration=tuple(cols["nm"][a:b].tolist()),
                streams=int(streams[a:b].max()),
                kernel_names=signatures.most_common(1)[0][0],
                median_ns=float(np.median(k_ns)),
                busy_median_ns=float(np.median(b_ns)),
                span_median_ns=float(np.median(s_ns)),
                gap_median_ns=float(np.median(s_ns - b_ns)),
            )
        )
    return out


def _signatures(per: pd.DataFrame, range_ids: np.ndarray) -> list[tuple[str, ...]]:
    """Per iteration (in ``range_ids`` order), its kernels' names in start order."""
    k = per[per["kind"].astype(str) == "kernel"]
    out: dict[Any, tuple[str, ...]] = {}
    if len(k):
        k = k.sort_values(["range_id", "start_ns"], kind="stable")
        rid = k["range_id"].to_numpy()
        names = k["name"].astype(str).tolist()
        cut = np.flatnonzero(rid[1:] != rid[:-1]) + 1
        # Slices of one list: a range per iteration (np.split made an array per iteration).
        bounds = [0, *cut.tolist(), len(names)]
        for r, a, b in zip(rid[np.r_[0, cut]].tolist(), bounds[:-1], bounds[1:], strict=True):
            out[r] = tuple(names[a:b])
    return [out.get(r, ()) for r in range_ids.tolist()]
