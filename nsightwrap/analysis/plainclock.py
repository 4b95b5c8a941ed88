"""Each timing's SM clock, measured in the plain pass itself.

The plain pass runs under nsys sampling the GPU's counters with no CUDA trace (docs/profile.md,
"The plain pass's own clock"), so the loops run at their own pace and the GPC clock samples are
the plain pass's. The capture layer places each timing's windows on the GPU's timeline against an
anchor (capture/gpuwindows.py): an NVTX range ``nsightwrap-anchor <pid>.<k>`` inside which an event
ran on an idle device. A timing's clock is the mean of the samples taken inside its windows. Where
the script's own NVTX ranges are the benchmark (``nvtx_range``), their iteration ranges in the
plain pass's capture are the windows (host times: such a range ends when its host code does).

The anchor's time on nsys's timeline is the end of its range less ``ANCHOR_LEAD_NS``: the range
holds the record, then a synchronize that returns just after the event has run (on an H100, a
window placed at the range's middle fell 11-20 us before its kernels' CUPTI intervals;
studies/results/plain-clock-2026-12-07/).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from nsightwrap.analysis.gpuclock import one_gpu
from nsightwrap.analysis.model import MeasuredClock

#: Largest move of a timing's median between the clock run and the plain pass (a factor off 1)
#: for the clock run's clock to stand for the plain pass's loop. A GPU-bound loop's time follows
#: its clock, so a loop that kept its pace within 5% ran at a clock within about that of the one
#: measured; host-bound loops that sampling slowed (docs/profile.md) fail it and say so.
MAX_MOVE = 0.05
#: Fewest GPC samples inside a timing's windows for their mean to stand for its clock.
MIN_SAMPLES = 3
#: The anchor event ran this long before its range ended (the synchronize's return and the pop).
ANCHOR_LEAD_NS = 2_000.0
SOURCE_PLAIN = "plain pass GPU metrics (GPC clock inside the timed windows)"
ANCHOR_PREFIX = "nsightwrap-anchor "


def anchor_times(ranges: pd.DataFrame) -> dict[str, float]:
    """Each anchor's time on the capture's timeline (ns), by its id (``<pid>.<k>``)."""
    if ranges is None or ranges.empty or "name" not in ranges:
        return {}
    names = ranges["name"].astype(str)
    sel = ranges[names.str.startswith(ANCHOR_PREFIX)]
    out: dict[str, float] = {}
    for name, end in zip(sel["name"].astype(str), pd.to_numeric(sel["end_ns"], errors="coerce"), strict=True):
        if end == end:  # not NaN
            out[name[len(ANCHOR_PREFIX) :].strip()] = float(end) - ANCHOR_LEAD_NS
    return out


def _samples(clock: pd.DataFrame | None) -> tuple[np.ndarray, np.ndarray] | None:
    if clock is None or clock.empty:
        return None
    t, hz = one_gpu(clock)
    ok = np.isfinite(t) & np.isfinite(hz)
    return t[ok], hz[ok]


def _clock_in(t: np.ndarray, hz: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> MeasuredClock | None:
    a = np.searchsorted(t, lo, side="left")
    b = np.searchsorted(t, hi, side="right")
    n = b - a
    has = n > 0
    if int(n.sum()) < MIN_SAMPLES:
        return None
    csum = np.concatenate([[0.0], np.cumsum(hz)])
    sums = csum[b[has]] - csum[a[has]]
    means = sums / n[has]
    return MeasuredClock(
        mean_hz=float(sums.sum() / n.sum()), min_hz=float(means.min()), max_hz=float(means.max()),
        windows=int(has.sum()), samples=int(n.sum()), source=SOURCE_PLAIN,
    )  # fmt: skip


def timing_windows(sidecars: Sequence[tuple[Any, Mapping[str, Any]]]) -> dict[str, Mapping[str, Any]]:
    """Each captured timing's ``clock_windows`` (sidecar), by its NVTX path."""
    out: dict[str, Mapping[str, Any]] = {}
    for _, doc in sidecars:
        for e in doc.get("benchmarks") or ():
            if not isinstance(e, Mapping):
                continue
            cw = e.get("clock_windows")
            if isinstance(cw, Mapping) and isinstance(cw.get("rel_ns"), list):
                out.setdefault(str(e.get("nvtx_path") or ""), cw)
    return out


def _rel_array(cw: Mapping[str, Any]) -> np.ndarray | None:
    try:
        arr = np.asarray(cw.get("rel_ns"), dtype=float)
    except (TypeError, ValueError):
        return None
    if arr.ndim != 2 or arr.shape[1] != 2 or not len(arr):
        return None
    arr = arr[np.isfinite(arr).all(axis=1) & (arr[:, 1] >= arr[:, 0])]
    return arr if len(arr) else None


def plain_pass_clocks(
    paths: Sequence[tuple[str, str]],
    sidecars: Sequence[tuple[Any, Mapping[str, Any]]],
    capture: Any,
) -> list[MeasuredClock | None]:
    """The plain pass's measured clock of each benchmark, given as (NVTX path, iteration prefix),
    from the plain pass's clock capture (an ``NsysReport`` of ``plain/clock.sqlite``); None where
    it has none (no windows placed, fewer than ``MIN_SAMPLES`` samples inside them)."""
    out: list[MeasuredClock | None] = [None] * len(paths)
    got = _samples(getattr(capture, "gpu_clock", None)) if capture is not None else None
    if got is None:
        return out
    t, hz = got
    ranges = capture.ranges
    anchors = anchor_times(ranges)
    windows = timing_windows(sidecars)
    rpaths = ranges["path"].astype(str) if not ranges.empty else pd.Series([], dtype=str)
    for i, (path, prefix) in enumerate(paths):
        cw = windows.get(path)
        if cw is not None:
            at = anchors.get(str(cw.get("anchor")))
            rel = _rel_array(cw)
            if at is not None and rel is not None:
                out[i] = _clock_in(t, hz, at + rel[:, 0], at + rel[:, 1])
            continue
        # The script's own NVTX ranges: their iteration ranges, as the plain pass's capture has them.
        head = f"{path}/{prefix}"
        sel = ranges[rpaths.str.startswith(head) & rpaths.str[len(head) :].str.isdigit()] if len(rpaths) else ranges
        if len(sel):
            lo = pd.to_numeric(sel["start_ns"], errors="coerce").to_numpy(dtype=float)
            hi = pd.to_numeric(sel["end_ns"], errors="coerce").to_numpy(dtype=float)
            ok = np.isfinite(lo) & np.isfinite(hi)
            out[i] = _clock_in(t, hz, lo[ok], hi[ok])
    return out


def same_pace(
    clocks: Sequence[MeasuredClock | None],
    paths: Sequence[str],
    plain_ns: Sequence[float | None],
    clock_run_ns: Mapping[str, float],
) -> tuple[list[MeasuredClock | None], list[tuple[str, ...]]]:
    """Keep a clock measured in the clock run only for loops that ran there at the plain pass's
    pace (medians within ``MAX_MOVE``); the others lose it, with a note saying by how much the
    clock run moved them. Loops without a plain-pass median (the script's own NVTX ranges) keep
    theirs: there is no timing to compare."""
    out: list[MeasuredClock | None] = []
    notes: list[tuple[str, ...]] = []
    for c, path, pn in zip(clocks, paths, plain_ns, strict=True):
        cn = clock_run_ns.get(path)
        if c is None or not pn or pn <= 0:
            out.append(c)
            notes.append(())
        elif cn is None or cn <= 0:
            out.append(None)
            notes.append(("plain pass's clock not measured: the clock run has no timing of this loop to check its pace against",))
        elif abs(cn / pn - 1.0) > MAX_MOVE:
            out.append(None)
            notes.append((
                f"plain pass's clock not measured: under nsys sampling the clock, the loop took {cn / 1e3:.2f} us "
                f"against {pn / 1e3:.2f} us in the plain pass ({cn / pn:.2f}x, more than {MAX_MOVE:.0%}), so the "
                f"clock sampled there ({c.mean_hz / 1e9:.3f} GHz) is not this loop's",
            ))
        else:
            out.append(c)
            notes.append(())
    return out, notes


def refused(
    clocks: Sequence[MeasuredClock | None],
    kept: Sequence[MeasuredClock | None],
    paths: Sequence[str],
    plain_ns: Sequence[float | None],
    clock_run_ns: Mapping[str, float],
) -> dict[str, tuple[float, str, str]]:
    """The clocks measured in the clock run that ``same_pace`` did not keep (``kept``) because the
    loop changed pace there, by NVTX path, as (Hz, where measured, why not kept): another clock
    the loop may have run at (``reconcile.other_clock``)."""
    out: dict[str, tuple[float, str, str]] = {}
    for c, k, path, pn in zip(clocks, kept, paths, plain_ns, strict=True):
        cn = clock_run_ns.get(path)
        if c is not None and k is None and pn and cn:
            why = f"the clock run, which measured a clock for it, timed the loop {cn / pn:.2f}x the plain pass"
            out[path] = (c.mean_hz, c.source, why)
    return out

