"""nsys iterations as the event window sees them: one ``Timeline`` per benchmark.

Where the window of an iteration opens and closes (event records, the timing stream's previous
op, the host's iteration range), and the additive figures the parts read from it.
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
            # The benchmark of each range before the join: one lookup per range, not per op.
            bench = bench.assign(spec=bench["path"].astype(str).map(paths))[["range_id", "spec"]]
            pairs = att.merge(bench, on="range_id")[["op_id", "spec"]]
            inside = found.ops[["op_id", "spec"]]
            if found.lead_in_ops is not None:  # iteration ops too, read as a lead-in only
                inside = pd.concat([inside, found.lead_in_ops], ignore_index=True)
            inside = inside.drop_duplicates()
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

