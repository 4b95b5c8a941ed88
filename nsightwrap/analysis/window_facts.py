"""What a benchmark's timed windows hold besides its work: a first use in the process (the cause
``warm_up``) and CUDA-graph replays (whose fixes must never say "use a CUDA graph").

From the nsys pass, per benchmark, over its windows (iteration ranges, ``NsysIterations.iters``):

- **first use**: a window holds the first launch in the process of a kernel (by full name), or
  one-off setup calls (``NsysReport.setup_calls``: module and library loads, kernel lookups and
  attributes, library init, graph instantiation, allocations). A setup API the benchmark calls in
  more than half of its windows is part of every call, not a first use (a library that sets a
  kernel attribute on every launch, an allocator that is not caching). Lazy module loading runs
  inside the first launch of a kernel, and cuBLAS's handle creation shows as its library loads,
  entry-point lookups and workspace allocation, so nsys's CUDA trace sees them all.
- **what a first use costs the window**: the window less the same work warm, where the
  benchmark has windows without a first use (or the first-used kernels ran again later); else
  the idle stretches of the GPU inside the window that the first use made (those holding a
  first-use setup call or ending where a first-launched kernel starts: a library's own
  initialization or a JIT compile is untraced host work, but it stretches the same idle time);
  never less than the setup calls' host time (their union: a library load runs inside the
  launch that needs it) that fell while the GPU had nothing to do. Setup time behind queued GPU
  work costs the timing nothing. Where a kernel is first used and warm windows exist, the two
  measurements agree within 1% on the shipped captures (tests/test_window_facts.py).
- **graph replay**: every op of the window came from a CUDA-graph launch (``cudaGraphLaunch``;
  nsys's node trace gives each kernel its ``graphNodeId``, its graph trace a whole-graph op).

All times are ns on nsys's timeline, where host calls and GPU ops share one clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nsightwrap.analysis.iterations import NsysIterations
from nsightwrap.core import intervals
from nsightwrap.parsers.nsys import SETUP_CALL_COLUMNS

#: The fix of a ``warm_up`` part.
WARM_UP_FIX = (
    "warm up before timing: call it once before the timed loop (do_bench warms up; a hand-written loop "
    "needs a call before the start event)"
)
#: The fixes of the parts of a window that replays a CUDA graph, by part code.
GRAPH_FIXES = {
    "gaps": "the graph's kernels left the GPU idle between nodes: fuse them, or capture fewer, larger kernels",
    "launch_overhead": (
        "replay the graph back to back: one replay per window pays the launch; time N replays per window "
        "and divide"
    ),
    "front_end": (
        "a replay pays the graph's launch before its first node runs, once per window: time N replays per "
        "window and divide"
    ),
}
#: ``launch_overhead`` of a window that already replays the graph several times.
GRAPH_REPLAYS_FIX = (
    "the host did not keep up with {n} replays per window: replay the graph back to back (no host work or "
    "synchronization between replays), or time more replays per window and divide"
)
#: APIs that launch a CUDA graph (ABI version stripped, as ``NsysReport.ops.launch_api``).
GRAPH_LAUNCH_APIS = frozenset({"cudaGraphLaunch", "cuGraphLaunch"})
#: A setup API in more than this share of a benchmark's windows is per-call work, not a first use.
RECURRING_SHARE = 0.5
#: Statistics of ``warm_up_part_ns``: the interquartile mean by window length (what the nsys
#: timeline's parts are) or the median window (what a timer's median is).
STATISTICS = ("iqm", "median")


_PID_SHIFT = 24  # globalTid >> 24: the process (nsightwrap.parsers.nsys)


@dataclass(frozen=True)
class SetupCalls:
    """One setup API's first-use calls inside a benchmark's windows."""

    api: str  # CUDA API name, ABI version stripped ("cuLibraryLoadData")
    family: str  # nsightwrap.parsers.nsys.SETUP_CALL_FAMILIES ("module_load", "allocation", ...)
    calls: int
    host_ns: float  # summed durations of these calls (nested calls are counted in each)


@dataclass(frozen=True)
class WindowFacts:
    """One benchmark's windows in the nsys pass: first uses and CUDA-graph replays.

    Per-window tuples follow the windows in iteration order (``NsysIterations.iters``).
    """

    windows: int
    #: Positions (0-based, in iteration order) of the windows that hold a first use.
    first_use_windows: tuple[int, ...]
    #: Full names of kernels launched for the first time in the process inside a window.
    first_use_kernels: tuple[str, ...]
    #: The first-use setup calls inside the windows, by API (largest host time first).
    first_use_calls: tuple[SetupCalls, ...]
    #: Per window: host time of its first-use setup calls (their union, ns).
    first_use_host_ns: tuple[float, ...]
    #: Per window: of that, the time the GPU had nothing to do inside the window (ns): what the
    #: window paid for the first use.
    first_use_idle_ns: tuple[float, ...]
    #: Per window: the time the GPU sat idle inside the window right before each first-launched
    #: kernel started (ns): the host was getting that kernel ready (its library's initialization,
    #: a JIT compile, the load inside its launch call), traced or not.
    first_use_wait_ns: tuple[float, ...]
    #: Per window: what its first use cost it (ns), 0 for a window without one: the window less
    #: the same work warm (``warm_ns``) where that was measured, else the wait before its
    #: first-launched kernels; never less than ``first_use_idle_ns``.
    first_use_cost_ns: tuple[float, ...]
    #: Per window: from when it could open (the range opened and the GPU finished earlier work) to
    #: its close (the range closed or its last op ended), ns.
    window_ns: tuple[float, ...]
    #: The same work warm (ns): the median window without a first use, else the later launches
    #: of the first-use window's kernels (their busy time); None where neither exists.
    warm_ns: float | None
    warm_source: str  # "other windows", "later launches" or "none"
    #: Windows whose every op came from a CUDA-graph launch.
    graph_windows: int
    #: Per window: the CUDA-graph launches (replays) it holds.
    graph_launches: tuple[int, ...]

    @property
    def has_first_use(self) -> bool:
        """Whether any window holds a first use."""
        return bool(self.first_use_windows)

    @property
    def first_use_share(self) -> float:
        """Share of the windows that hold a first use."""
        return len(self.first_use_windows) / self.windows if self.windows else 0.0

    @property
    def first_use_host_total_ns(self) -> float:
        """Host time of the first-use setup calls over all windows (ns)."""
        return float(sum(self.first_use_host_ns))

    @property
    def is_graph_replay(self) -> bool:
        """Whether the benchmark's timing replays a CUDA graph (at least half its windows)."""
        return self.graph_windows > 0 and 2 * self.graph_windows >= self.windows

    @property
    def replays_per_window(self) -> float | None:
        """Median CUDA-graph launches per graph-replay window; None where none replays a graph."""
        n = [g for g in self.graph_launches if g > 0]
        return float(np.median(n)) if n else None


def _empty_facts() -> WindowFacts:
    return WindowFacts(0, (), (), (), (), (), (), (), (), None, "none", 0, ())


def window_facts(found: NsysIterations, n_specs: int, setup_calls: pd.DataFrame | None) -> list[WindowFacts]:
    """The ``WindowFacts`` of every benchmark (``found``'s spec indices ``0..n_specs-1``).

    ``setup_calls`` is ``NsysReport.setup_calls`` (None or empty: first uses are found from the
    kernels alone and cost nothing measured).
    """
    iters = found.iters
    if iters.empty or n_specs == 0:
        return [_empty_facts() for _ in range(n_specs)]
    all_ops = found.all_ops
    per = found.ops
    w = _windows(found)
    op_cols = _op_columns(all_ops, per["op_id"].to_numpy(dtype=np.int64)) if len(per) else {}
    first_kernel = _first_kernel_ops(all_ops)
    per_first = (
        np.isin(per["op_id"].to_numpy(dtype=np.int64), first_kernel) if len(per) else np.zeros(0, dtype=bool)
    )
    graph = _graph_flags(per, op_cols) if len(per) else np.zeros(0, dtype=bool)
    rid = per["range_id"].to_numpy() if len(per) else np.zeros(0, dtype=np.int64)
    n_graph = pd.Series(graph.astype(np.int64)).groupby(rid).sum() if len(per) else pd.Series(dtype=np.int64)
    n_ops = pd.Series(np.ones(len(per), dtype=np.int64)).groupby(rid).sum() if len(per) else pd.Series(dtype=np.int64)
    launches = (
        pd.Series(op_cols["correlation_id"][graph]).groupby(rid[graph]).nunique()
        if graph.any()
        else pd.Series(dtype=np.int64)
    )
    first_by_range = pd.Series(per_first).groupby(rid).any() if len(per) else pd.Series(dtype=bool)
    calls = _calls_in_windows(w, setup_calls)
    busy_s, busy_e = _busy_by_process(all_ops)
    # Row positions per benchmark, found once (a sweep holds a thousand benchmarks).
    calls_of = pd.Series(np.arange(len(calls))).groupby(calls["spec"].to_numpy()).indices if len(calls) else {}
    first_rows = np.flatnonzero(per_first)
    first_of: dict[Any, np.ndarray] = {
        k: first_rows[v] for k, v in pd.Series(first_rows).groupby(per["spec"].to_numpy()[first_rows]).indices.items()
    }
    # Per window of every benchmark, looked up once and sliced per benchmark below.
    w_ranges = w["range_id"].to_numpy()
    has_kernel_all = first_by_range.reindex(w_ranges, fill_value=False).to_numpy(dtype=bool)
    g_ops_all = n_graph.reindex(w_ranges, fill_value=0).to_numpy()
    all_ops_all = n_ops.reindex(w_ranges, fill_value=0).to_numpy()
    launches_all = launches.reindex(w_ranges, fill_value=0).to_numpy()
    out: list[WindowFacts] = []
    bounds = np.searchsorted(w["spec"].to_numpy(), np.arange(n_specs + 1))
    for i in range(n_specs):
        a, b = int(bounds[i]), int(bounds[i + 1])
        if a == b:
            out.append(_empty_facts())
            continue
        wi = w.iloc[a:b]
        ranges = wi["range_id"].to_numpy()
        ci = calls.iloc[calls_of[i]] if i in calls_of else calls.iloc[:0]
        ci = _first_use_calls(ci, len(wi))
        host, idle = _first_use_costs(wi, ci, busy_s, busy_e)
        has_kernel = has_kernel_all[a:b]
        with_calls = np.isin(ranges, ci["range_id"].to_numpy()) if len(ci) else np.zeros(len(wi), dtype=bool)
        first_pos = tuple(int(k) for k in np.flatnonzero(has_kernel | with_calls))
        kernels = _kernel_names(per, op_cols, first_of.get(i, np.zeros(0, dtype=np.int64)))
        g_ops = g_ops_all[a:b]
        all_ops_n = all_ops_all[a:b]
        warm, source = _warm(wi, first_pos, per, all_ops, op_cols, rid)
        wait = _waits(wi, per, rid, first_of.get(i, np.zeros(0, dtype=np.int64)), ci, busy_s, busy_e)
        cost = [0.0] * len(wi)
        for k in first_pos:
            other = float(wi["window_ns"].iloc[k]) - warm if warm is not None else wait[k]
            cost[k] = float(max(idle[k], other))
        out.append(
            WindowFacts(
                windows=len(wi),
                first_use_windows=first_pos,
                first_use_kernels=kernels,
                first_use_calls=_by_api(ci),
                first_use_host_ns=tuple(host),
                first_use_idle_ns=tuple(idle),
                first_use_wait_ns=tuple(wait),
                first_use_cost_ns=tuple(cost),
                window_ns=tuple(float(v) for v in wi["window_ns"]),
                warm_ns=warm,
                warm_source=source,
                graph_windows=int(((g_ops == all_ops_n) & (all_ops_n > 0)).sum()),
                graph_launches=tuple(int(v) for v in launches_all[a:b]),
            )
        )
    return out


# ----------------------------------------------------------------------------- the parts' side


def warm_up_part_ns(facts: WindowFacts, *, calls: float = 1.0, statistic: str = "iqm") -> float | None:
    """The size of a ``warm_up`` part per call (ns), or None where no window holds a first use.

    Each window pays ``first_use_cost_ns`` (the window less the same work warm where that was
    measured, else the first-use host time that left the GPU idle inside it; 0 without a first
    use), taken over the windows with ``statistic`` (``"iqm"``: the mean over the middle half by
    window length, the statistic of the nsys timeline's parts; ``"median"``: the median window,
    a timer's statistic), then divided by ``calls``. One first use among many windows is then
    0: the statistic does not see it (``first_use_share`` says how many windows held one).
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic {statistic!r} is not one of {', '.join(STATISTICS)}")
    if not facts.has_first_use:
        return None
    if statistic == "median":
        ns = float(np.median(facts.first_use_cost_ns))
    else:
        ns = _iqm(facts.first_use_cost_ns, facts.window_ns)
    return ns / calls if calls > 0 else ns


#: The host-side parts a first use shows in, in the order ``carve_warm_up`` takes from them: a
#: library's own initialization before the first launch (the GPU waits for the host:
#: ``launch_overhead``), a lazy load inside the first launch call (the window's lead-in beyond the
#: host's wait: ``front_end``), a later first launch between ops (``gaps``). The largest first:
#: what the other parts hold in a warm window stays with them.
WARM_UP_FROM = ("launch_overhead", "front_end", "gaps")


def carve_warm_up(parts: dict[str, float], warm_up_ns: float) -> tuple[float, dict[str, float]]:
    """``warm_up_ns`` taken out of the host-side parts that hold it (``WARM_UP_FROM``, each down
    to 0 at most): the ``warm_up`` part's size (never more than those parts held) and every
    part's new size. The sum of the parts and the warm-up is unchanged, so the residual is too;
    with ``warm_up_ns`` and the parts on the decomposition's 1/8 ns grid the sums stay exact."""
    left = max(warm_up_ns, 0.0)
    out = dict(parts)
    for code in WARM_UP_FROM:
        have = out.get(code)
        if have is None or have <= 0 or left <= 0:
            continue
        take = min(have, left)
        out[code] = have - take
        left -= take
    return max(warm_up_ns, 0.0) - left, out


def fix_for(code: str, facts: WindowFacts | None) -> str | None:
    """The fix text ``code``'s part takes from the windows' facts, or None (keep the usual one).

    ``warm_up`` always has its fix; ``gaps``, ``launch_overhead`` and ``front_end`` get a
    graph-aware one where the benchmark replays a CUDA graph (never "use a CUDA graph").
    """
    if code == "warm_up":
        return WARM_UP_FIX
    if facts is None or not facts.is_graph_replay or code not in GRAPH_FIXES:
        return None
    n = facts.replays_per_window
    if code == "launch_overhead" and n is not None and n > 1:
        return GRAPH_REPLAYS_FIX.format(n=f"{n:g}")
    return GRAPH_FIXES[code]


def warm_up_evidence(facts: WindowFacts) -> dict[str, Any]:
    """The measurements behind a ``warm_up`` part, flat (a part's ``evidence``)."""
    loads = [c for c in facts.first_use_calls if c.family == "module_load"]
    return {
        "first_use_windows": len(facts.first_use_windows),
        "windows": facts.windows,
        "first_use_kernels": len(facts.first_use_kernels),
        "first_use_host_ns": facts.first_use_host_total_ns,
        "first_use_idle_ns": float(sum(facts.first_use_idle_ns)),
        "module_loads": sum(c.calls for c in loads),
        "module_load_ns": float(sum(c.host_ns for c in loads)),
        "setup_apis": ", ".join(c.api for c in facts.first_use_calls),
        "first_use_cost_ns": float(sum(facts.first_use_cost_ns)),
        "warm_ns": facts.warm_ns,
        "warm_source": facts.warm_source,
    }


# ----------------------------------------------------------------------------- internals


def _iqm(values: Sequence[float], lengths: Sequence[float]) -> float:
    """Mean of ``values`` over the middle half of the windows ranked by ``lengths`` (ties in
    order), the rule of the nsys timeline's additive figures."""
    n = len(values)
    order = np.argsort(np.asarray(lengths, dtype=float), kind="stable")
    cut = n // 4
    mid = order[cut : n - cut]
    return float(np.mean(np.asarray(values, dtype=float)[mid])) if len(mid) else 0.0


def _op_columns(all_ops: pd.DataFrame, op_ids: np.ndarray) -> dict[str, np.ndarray]:
    """Columns of ``all_ops`` the window ops lack, at ``op_ids`` (by position where op_id is the
    row number, as read_nsys makes it)."""
    wanted = ["name", "kind", "launch_api", "graph_node_id", "correlation_id", "start_ns", "end_ns",
              "duration_ns", "global_pid"]  # fmt: skip
    if np.array_equal(all_ops["op_id"].to_numpy(), np.arange(len(all_ops))):
        rows = op_ids
    else:
        rows = pd.Index(all_ops["op_id"]).get_indexer(op_ids)
    out: dict[str, np.ndarray] = {}
    for c in wanted:
        col = all_ops[c] if c in all_ops else pd.Series(pd.NA, index=all_ops.index, dtype=object)
        out[c] = col.to_numpy(dtype=object)[rows]
    return out


def _first_kernel_ops(all_ops: pd.DataFrame) -> np.ndarray:
    """op_id of the first launch (by GPU start) of every kernel name in every process."""
    k = all_ops[all_ops["kind"].astype(str) == "kernel"]
    if k.empty or k["name"].isna().all():
        return np.zeros(0, dtype=np.int64)
    pid = np.right_shift(pd.to_numeric(k["global_pid"], errors="coerce").fillna(-1).to_numpy(dtype=np.int64), _PID_SHIFT)
    # Names as integer codes: the duplicate check hashes two integers per op, not a string.
    name_code = pd.factorize(k["name"].astype(str).to_numpy())[0]
    frame = pd.DataFrame({"op_id": k["op_id"].to_numpy(), "pid": pid, "name": name_code,
                          "t": k["start_ns"].to_numpy(dtype=np.int64)})  # fmt: skip
    first = frame.sort_values("t", kind="stable").drop_duplicates(["pid", "name"])
    return first["op_id"].to_numpy(dtype=np.int64)


def _graph_flags(per: pd.DataFrame, cols: dict[str, np.ndarray]) -> np.ndarray:
    """Whether each window op came from a CUDA-graph launch."""
    api = pd.Series(cols["launch_api"], dtype=object)
    node = pd.Series(cols["graph_node_id"], dtype=object)
    kind = per["kind"].astype(str).to_numpy()
    return api.isin(GRAPH_LAUNCH_APIS).to_numpy() | node.notna().to_numpy() | (kind == "graph")


def _windows(found: NsysIterations) -> pd.DataFrame:
    """The windows, one row per iteration range (``iters``' order): range id, spec, host times,
    thread, whether push/pop, when it could open and when it closed."""
    it = found.iters.reset_index(drop=True)
    r0 = it["start_ns"].to_numpy(dtype=float)
    r1 = it["end_ns"].to_numpy(dtype=float)
    kinds = found.ranges.set_index("range_id")["kind"].astype(str) if len(found.ranges) else pd.Series(dtype=object)
    pushpop = kinds.reindex(it["range_id"].to_numpy()).fillna("pushpop").to_numpy() == "pushpop"
    per = found.ops
    rows = it["range_id"].to_numpy()
    if len(per):
        g = per.groupby("range_id", sort=False)
        last = g["end_ns"].max().reindex(rows).to_numpy(dtype=float)
        first = g["start_ns"].min().reindex(rows).to_numpy(dtype=float)
    else:
        last = first = np.full(len(it), np.nan)
    # The start event runs once the host recorded it and the GPU finished what came before the
    # window's first op (a queued window opens late).
    prev = _previous_end(found.all_ops, np.where(np.isfinite(first), first, r0))
    opened = np.fmax(r0, prev)
    closed = np.fmax(r1, last)
    return pd.DataFrame(
        {
            "range_id": it["range_id"].to_numpy(),
            "spec": it["spec"].to_numpy(dtype=np.int64),
            "r0": r0,
            "r1": r1,
            "tid": it["tid"].to_numpy(dtype=float),
            "pushpop": pushpop,
            "opened": opened,
            "closed": closed,
            "window_ns": np.nan_to_num(np.maximum(closed - opened, 0.0)),
        }
    )


def _previous_end(all_ops: pd.DataFrame, at: np.ndarray) -> np.ndarray:
    """Per time in ``at``: the latest end of an op that ended by then (NaN: none)."""
    if all_ops.empty:
        return np.full(len(at), np.nan)
    ends = np.sort(all_ops["end_ns"].to_numpy(dtype=np.int64)).astype(float)
    pos = np.searchsorted(ends, np.nan_to_num(at, nan=-np.inf), side="right") - 1
    return np.where(pos >= 0, ends[np.maximum(pos, 0)], np.nan)


def _calls_in_windows(w: pd.DataFrame, setup: pd.DataFrame | None) -> pd.DataFrame:
    """(window, setup call) pairs: calls that began inside a window's host range, on its thread
    (push/pop ranges are per thread) or in its process (start/end ranges)."""
    cols = ["range_id", "spec", *SETUP_CALL_COLUMNS]
    if setup is None or setup.empty or w.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
    calls = setup.reset_index(drop=True)
    tid = calls["tid"].to_numpy(dtype=np.int64)
    pts = pd.DataFrame({"call": np.arange(len(calls)), "t": calls["start_ns"].to_numpy(dtype=np.int64), "tid": tid,
                        "pid": np.right_shift(tid, _PID_SHIFT)})  # fmt: skip
    ok = np.isfinite(w["r0"].to_numpy()) & np.isfinite(w["r1"].to_numpy()) & np.isfinite(w["tid"].to_numpy())
    ww = w[ok]
    wtid = ww["tid"].to_numpy(dtype=np.int64)
    ivs = pd.DataFrame({"win": np.flatnonzero(ok), "start_ns": ww["r0"].to_numpy(dtype=np.int64),
                        "end_ns": ww["r1"].to_numpy(dtype=np.int64) + 1,  # the close instant counts
                        "tid": wtid, "pid": np.right_shift(wtid, _PID_SHIFT)})  # fmt: skip
    pp = ww["pushpop"].to_numpy(dtype=bool)
    parts = [
        intervals.containing(pts, ivs[pp], point_key="call", interval_key="win", group="tid"),
        intervals.containing(pts, ivs[~pp], point_key="call", interval_key="win", group="pid"),
    ]
    pairs = pd.concat([p for p in parts if not p.empty] or [parts[0]], ignore_index=True)
    if pairs.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
    win = pairs["win"].to_numpy(dtype=np.int64)
    picked = calls.iloc[pairs["call"].to_numpy(dtype=np.int64)].reset_index(drop=True)
    picked.insert(0, "spec", w["spec"].to_numpy()[win])
    picked.insert(0, "range_id", w["range_id"].to_numpy()[win])
    return picked[cols]


def _first_use_calls(calls: pd.DataFrame, windows: int) -> pd.DataFrame:
    """The setup calls of one benchmark's windows that are a first use: APIs found in at most
    ``RECURRING_SHARE`` of its windows (all, for a benchmark of one window)."""
    if calls.empty or windows <= 1:
        return calls
    seen = calls.groupby("api")["range_id"].nunique()
    one_off = seen[seen <= RECURRING_SHARE * windows].index
    return calls[calls["api"].isin(one_off)]


def _busy_by_process(all_ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The merged busy intervals of the GPU (every op of the capture)."""
    if all_ops.empty:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return intervals.merge(all_ops["start_ns"].to_numpy(dtype=np.int64), all_ops["end_ns"].to_numpy(dtype=np.int64))


def _first_use_costs(
    wi: pd.DataFrame, ci: pd.DataFrame, busy_s: np.ndarray, busy_e: np.ndarray
) -> tuple[list[float], list[float]]:
    """Per window: the union of its first-use calls (host ns) and, of it, the time inside the
    window when the GPU ran nothing."""
    host = [0.0] * len(wi)
    idle = [0.0] * len(wi)
    if ci.empty:
        return host, idle
    pos = {r: k for k, r in enumerate(wi["range_id"].tolist())}
    for rid, grp in ci.groupby("range_id", sort=False):
        k = pos[rid]
        s, e = intervals.merge(grp["start_ns"].to_numpy(dtype=np.int64), grp["end_ns"].to_numpy(dtype=np.int64))
        host[k] = float((e - s).sum())
        lo, hi = float(wi["opened"].iloc[k]), float(wi["closed"].iloc[k])
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
            continue
        cs, ce = np.clip(s, lo, hi), np.clip(e, lo, hi)
        idle[k] = float((ce - cs).sum()) - _overlap(cs, ce, busy_s, busy_e)
    return host, idle


def _waits(
    wi: pd.DataFrame,
    per: pd.DataFrame,
    rid: np.ndarray,
    rows: np.ndarray,
    ci: pd.DataFrame,
    busy_s: np.ndarray,
    busy_e: np.ndarray,
) -> list[float]:
    """Per window: the idle stretches of the GPU inside it that a first use made: those holding
    a first-use setup call (``ci``) or ending where a first-launched kernel (``rows`` of the window
    ops) starts. A library's own initialization or a JIT compile is untraced host work, but it
    stretches the same idle time as the load that follows it."""
    out = [0.0] * len(wi)
    pos = {r: k for k, r in enumerate(wi["range_id"].tolist())}
    starts = per["start_ns"].to_numpy(dtype=np.int64)
    kernel_at: dict[int, list[int]] = {}
    for r in rows.tolist():
        if (k := pos.get(rid[r])) is not None:
            kernel_at.setdefault(k, []).append(int(starts[r]))
    call_at: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for r, grp in ci.groupby("range_id", sort=False) if len(ci) else ():
        if (k := pos.get(r)) is not None:
            call_at[k] = (grp["start_ns"].to_numpy(dtype=float), grp["end_ns"].to_numpy(dtype=float))
    opened = wi["opened"].to_numpy(dtype=float)
    closed = wi["closed"].to_numpy(dtype=float)
    for k in sorted(set(kernel_at) | set(call_at)):
        lo, hi = opened[k], closed[k]
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
            continue
        # The idle stretches inside [lo, hi]: between the busy blocks that touch it.
        i, j = int(np.searchsorted(busy_e, lo, side="right")), int(np.searchsorted(busy_s, hi, side="left"))
        ends = np.concatenate([np.clip(busy_s[i:j], lo, hi), [hi]])
        begins = np.concatenate([[lo], np.clip(busy_e[i:j], lo, hi)])
        kernels = np.asarray(kernel_at.get(k, []), dtype=float)
        cs, ce = call_at.get(k, (np.zeros(0), np.zeros(0)))
        total = 0.0
        for b0, b1 in zip(begins.tolist(), ends.tolist(), strict=True):
            if b1 <= b0:
                continue
            made = bool(np.any(kernels == b1)) or bool(np.any((cs < b1) & (ce > b0)))
            total += (b1 - b0) if made else 0.0
        out[k] = float(total)
    return out


def _overlap(s: np.ndarray, e: np.ndarray, bs: np.ndarray, be: np.ndarray) -> float:
    """Length of (disjoint intervals s..e) covered by (disjoint sorted intervals bs..be)."""
    total = 0.0
    for a, b in zip(s.tolist(), e.tolist(), strict=True):
        if b <= a:
            continue
        i = int(np.searchsorted(be, a, side="right"))
        j = int(np.searchsorted(bs, b, side="left"))
        if j > i:
            total += float(np.maximum(np.minimum(be[i:j], b) - np.maximum(bs[i:j], a), 0).sum())
    return total


def _kernel_names(per: pd.DataFrame, cols: dict[str, np.ndarray], rows: np.ndarray) -> tuple[str, ...]:
    """Distinct full kernel names of the window ops at positions ``rows``, in GPU start order."""
    if not len(rows):
        return ()
    names = cols["name"][rows]
    order = np.argsort(per["start_ns"].to_numpy(dtype=np.int64)[rows], kind="stable")
    return tuple(dict.fromkeys(str(n) for n in names[order] if isinstance(n, str)))


def _warm(
    wi: pd.DataFrame,
    first_pos: tuple[int, ...],
    per: pd.DataFrame,
    all_ops: pd.DataFrame,
    cols: dict[str, np.ndarray],
    rid: np.ndarray,
) -> tuple[float | None, str]:
    """The same work warm: the median window without a first use, else the later launches of the
    first first-use window's kernels (each kernel's next launch after the window, busy time)."""
    if not first_pos:
        return None, "none"
    rest = np.setdiff1d(np.arange(len(wi)), np.asarray(first_pos, dtype=np.int64))
    if len(rest):
        return float(np.median(wi["window_ns"].to_numpy(dtype=float)[rest])), "other windows"
    k = first_pos[0]
    mine = (rid == wi["range_id"].iloc[k]) & (per["kind"].astype(str).to_numpy() == "kernel")
    if not mine.any():
        return None, "none"
    closed = float(wi["closed"].iloc[k])
    kernels = all_ops[all_ops["kind"].astype(str) == "kernel"]
    later = kernels[kernels["start_ns"].to_numpy(dtype=float) >= closed]
    starts: list[int] = []
    ends: list[int] = []
    taken: set[int] = set()
    for name in cols["name"][mine].tolist():
        hit = later[(later["name"] == name) & ~later["op_id"].isin(taken)].head(1)
        if hit.empty:
            return None, "none"
        taken.add(int(hit["op_id"].iloc[0]))
        starts.append(int(hit["start_ns"].iloc[0]))
        ends.append(int(hit["end_ns"].iloc[0]))
    return float(intervals.union_length(np.asarray(starts), np.asarray(ends))), "later launches"


def _by_api(ci: pd.DataFrame) -> tuple[SetupCalls, ...]:
    if ci.empty:
        return ()
    dur = ci["end_ns"].to_numpy(dtype=float) - ci["start_ns"].to_numpy(dtype=float)
    g = pd.DataFrame({"api": ci["api"].astype(str).to_numpy(), "family": ci["family"].astype(str).to_numpy(),
                      "d": dur}).groupby(["api", "family"], sort=False)["d"].agg(["size", "sum"])  # fmt: skip
    g = g.sort_values("sum", ascending=False, kind="stable").reset_index()
    cols = zip(g["api"].tolist(), g["family"].tolist(), g["size"].tolist(), g["sum"].tolist(), strict=True)
    return tuple(SetupCalls(str(a), str(f), int(n), float(t)) for a, f, n, t in cols)
