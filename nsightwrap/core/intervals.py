"""Interval arithmetic on many intervals at once: union length (busy time), span, containment.

Everything here is vectorized with numpy/pandas: GPU traces hold millions of intervals, so no
Python loop runs per interval. Intervals are half-open, ``[start, end)``, in integer ns.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd

#: Interval lengths summing to more than their union (busy time) by this share ran concurrently
#: (ops on several streams); less is the rounding of the trace's timestamps.
OVERLAP_SHARE = 0.02


def concurrent(length_sum: float, busy: float) -> bool:
    """Whether intervals whose lengths sum to ``length_sum`` and whose union is ``busy`` long
    overlapped by more than ``OVERLAP_SHARE``."""
    return length_sum > busy * (1 + OVERLAP_SHARE)


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge overlapping or touching intervals; returns the sorted, disjoint (starts, ends)."""
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    if s.size == 0:
        return s.copy(), e.copy()
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    # A new block starts where an interval begins after everything before it has ended.
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, s.size - 1]
    return s[first], reach[last]


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length covered by at least one interval (the busy time of a set of GPU ops)."""
    ms, me = merge(starts, ends)
    return int((me - ms).sum())


def union_by_group(frame: pd.DataFrame, by: str, start: str = "start_ns", end: str = "end_ns") -> pd.Series:
    """Union length of the intervals of each group (``by`` column), as an int64 Series."""
    if frame.empty:
        return pd.Series(dtype=np.int64, name="busy_ns")
    df = frame[[by, start, end]].sort_values([by, start], kind="stable")
    g = df[by].to_numpy()
    s = df[start].to_numpy(dtype=np.int64)
    # Running max of the ends within each group: how far the group's busy time reaches so far.
    reach = df.groupby(by, sort=False)[end].cummax().to_numpy(dtype=np.int64)
    new = np.ones(len(df), dtype=bool)
    same_group = g[1:] == g[:-1]
    new[1:] = ~same_group | (s[1:] > reach[:-1])
    block = np.cumsum(new)
    blocks = pd.DataFrame({"g": g, "block": block, "s": s, "reach": reach})
    per_block = blocks.groupby("block", sort=False).agg(g=("g", "first"), s=("s", "min"), e=("reach", "max"))
    out = (per_block["e"] - per_block["s"]).groupby(per_block["g"], sort=False).sum()
    out.index.name = by
    return out.astype(np.int64).rename("busy_ns")


def span_by_group(frame: pd.DataFrame, by: str, start: str = "start_ns", end: str = "end_ns") -> pd.Series:
    """Last end minus first start of each group's intervals, as an int64 Series."""
    if frame.empty:
        return pd.Series(dtype=np.int64, name="span_ns")
    grouped = frame.groupby(by, sort=False)
    return (grouped[end].max() - grouped[start].min()).astype(np.int64).rename("span_ns")


def containing(
    points: pd.DataFrame,
    intervals: pd.DataFrame,
    *,
    point_key: str,
    interval_key: str,
    group: str | None = None,
    at: str = "t",
    start: str = "start_ns",
    end: str = "end_ns",
) -> pd.DataFrame:
    """Every (point, interval) pair where ``start <= point < end``, within the same ``group``.

    ``points`` has columns ``point_key``, ``at`` (and ``group``); ``intervals`` has
    ``interval_key``, ``start``, ``end`` (and ``group``). Intervals may nest or overlap. The
    time axis of each group is cut at every interval boundary into elementary segments; each
    interval expands to the segments it covers and each point finds its segment by binary
    search, so the cost is O((points + covered segments) log n), with one loop per group only.
    Returns a frame with columns ``point_key`` and ``interval_key``.
    """
    empty = pd.DataFrame(
        {
            point_key: pd.Series(dtype=points[point_key].dtype if point_key in points else np.int64),
            interval_key: pd.Series(dtype=np.int64),
        }
    )
    if points.empty or intervals.empty:
        return empty
    if group is None:
        groups: list[tuple[Hashable, pd.DataFrame, pd.DataFrame]] = [(None, points, intervals)]
    else:
        pts_by = dict(tuple(points.groupby(group, sort=False)))
        groups = [(k, pts_by[k], iv) for k, iv in intervals.groupby(group, sort=False) if k in pts_by]
    parts = []
    for _, pts, ivs in groups:
        s = ivs[start].to_numpy(dtype=np.int64)
        e = ivs[end].to_numpy(dtype=np.int64)
        keep = e > s
        s, e = s[keep], e[keep]
        ids = ivs[interval_key].to_numpy()[keep]
        if s.size == 0:
            continue
        bounds = np.unique(np.concatenate([s, e]))
        first = np.searchsorted(bounds, s)  # segment k is [bounds[k], bounds[k + 1])
        count = np.searchsorted(bounds, e) - first
        seg_of_iv = np.repeat(first, count) + _ranges_within(count)
        iv_of_seg = np.repeat(ids, count)
        t = pts[at].to_numpy(dtype=np.int64)
        seg = np.searchsorted(bounds, t, side="right") - 1
        ok = (seg >= 0) & (seg < bounds.size - 1)
        # Intervals grouped by segment (CSR): each point takes its segment's slice.
        order = np.argsort(seg_of_iv, kind="stable")
        iv_sorted = iv_of_seg[order]
        first_of_seg = np.searchsorted(seg_of_iv[order], np.arange(bounds.size))
        seg_ok = seg[ok]
        n_in = first_of_seg[seg_ok + 1] - first_of_seg[seg_ok]
        take = np.repeat(first_of_seg[seg_ok], n_in) + _ranges_within(n_in)
        point_ids = np.repeat(pts[point_key].to_numpy()[ok], n_in)
        parts.append(pd.DataFrame({point_key: point_ids, interval_key: iv_sorted[take]}))
    if not parts:
        return empty
    return pd.concat(parts, ignore_index=True)


def _ranges_within(count: np.ndarray) -> np.ndarray:
    """``[0..c0-1, 0..c1-1, ...]`` for counts ``c``: offsets inside each repeated block."""
    total = int(count.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    block_start = np.repeat(np.cumsum(count) - count, count)
    return np.arange(total, dtype=np.int64) - block_start
