"""Interval union, span and containment, checked against brute force on a nanosecond grid."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsightwrap.core.intervals import (
    concurrent,
    containing,
    merge,
    span_by_group,
    union_by_group,
    union_length,
)


def _covered(starts: np.ndarray, ends: np.ndarray, horizon: int) -> int:
    grid = np.zeros(horizon, dtype=bool)
    for s, e in zip(starts, ends, strict=True):
        grid[s:e] = True
    return int(grid.sum())


def test_merge_overlapping_touching_nested() -> None:
    s, e = merge(np.array([10, 0, 5, 30, 40, 41]), np.array([20, 5, 8, 35, 50, 45]))
    # [0,5) and [5,8) touch -> one block; [10,20) alone; [40,50) swallows [41,45).
    assert s.tolist() == [0, 10, 30, 40]
    assert e.tolist() == [8, 20, 35, 50]
    assert union_length(np.array([10, 0, 5, 30, 40, 41]), np.array([20, 5, 8, 35, 50, 45])) == 8 + 10 + 5 + 10


def test_union_empty() -> None:
    assert union_length(np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == 0
    assert union_by_group(pd.DataFrame({"g": [], "start_ns": [], "end_ns": []}), "g").empty


def test_union_and_span_by_group_match_brute_force() -> None:
    rng = np.random.default_rng(7)
    n = 3000
    g = rng.integers(0, 40, n)
    s = rng.integers(0, 5000, n)
    e = s + rng.integers(0, 300, n)
    df = pd.DataFrame({"g": g, "start_ns": s, "end_ns": e})
    busy = union_by_group(df, "g")
    span = span_by_group(df, "g")
    for key in range(40):
        m = g == key
        assert busy[key] == _covered(s[m], e[m], 6000)
        assert span[key] == e[m].max() - s[m].min()
    assert busy.dtype == np.int64


def test_containing_matches_brute_force_with_groups() -> None:
    rng = np.random.default_rng(3)
    ivs = pd.DataFrame(
        {
            "rid": np.arange(200),
            "start_ns": rng.integers(0, 1000, 200),
            "grp": rng.integers(0, 3, 200),
        }
    )
    ivs["end_ns"] = ivs["start_ns"] + rng.integers(0, 200, 200)
    pts = pd.DataFrame(
        {"pid": np.arange(500), "t": rng.integers(-10, 1300, 500), "grp": rng.integers(0, 3, 500)}
    )
    got = containing(pts, ivs, point_key="pid", interval_key="rid", group="grp")
    got_pairs = set(zip(got["pid"], got["rid"], strict=True))
    want = {
        (p.pid, i.rid)
        for p in pts.itertuples()
        for i in ivs.itertuples()
        if p.grp == i.grp and i.start_ns <= p.t < i.end_ns
    }
    assert got_pairs == want
    assert len(got) == len(want)  # no duplicate pairs


def test_containing_half_open_and_ungrouped() -> None:
    ivs = pd.DataFrame({"rid": [1, 2, 3], "start_ns": [0, 10, 5], "end_ns": [10, 20, 15]})
    pts = pd.DataFrame({"pid": [100, 101, 102, 103], "t": [0, 10, 20, 7]})
    got = containing(pts, ivs, point_key="pid", interval_key="rid")
    pairs = sorted(zip(got["pid"].tolist(), got["rid"].tolist(), strict=True))
    # t=10 is in [10,20) and [5,15) but not in [0,10); t=20 is in nothing.
    assert pairs == [(100, 1), (101, 2), (101, 3), (103, 1), (103, 3)]


def test_concurrent_means_lengths_past_their_union_by_more_than_the_share() -> None:
    # two streams: [0, 10) and [5, 15) sum to 20 ns over a union of 15 ns
    s, e = np.array([0, 5]), np.array([10, 15])
    assert concurrent(float((e - s).sum()), float(union_length(s, e)))
    # back to back on one stream, or within the timestamps' rounding: not concurrent
    assert not concurrent(100.0, 100.0) and not concurrent(101.0, 100.0)
