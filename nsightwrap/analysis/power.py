"""Energy, power and temperature per benchmark: the timer's ``power`` records (sidecar) made into
``PowerStats`` and placed on the plain pass's nvidia-smi timeline (docs/power.md).

Figures come as the timer measured them (J, W, C); this module only picks which one a
benchmark's headline is, derives pJ/FLOP and pJ/byte, and pools several processes' samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from nsightwrap.analysis.model import BenchmarkResult, PowerStats, RunResult
from nsightwrap.core.contract import NVTX_DOMAIN
from nsightwrap.core.jsonfile import finite_number


def _max(*vals: Any) -> float | None:
    got = [v for v in (finite_number(x) for x in vals) if v is not None]
    return max(got) if got else None


def power_stats(entry: Mapping[str, Any]) -> PowerStats | None:
    """``PowerStats`` of one sidecar benchmark, or None when it has no ``power`` record."""
    p = entry.get("power")
    if not isinstance(p, Mapping):
        return None
    timed: Mapping[str, Any] = p.get("timed") or {}
    steady: Mapping[str, Any] = p.get("steady") or {}
    method = entry.get("method") if isinstance(entry.get("method"), Mapping) else {}
    guard = method.get("thermal_guard") if isinstance(method, Mapping) else None
    if steady.get("energy_per_call_j") is not None:
        kind, energy, per_call, mean_w = "steady", steady.get("energy_j"), steady["energy_per_call_j"], steady.get("mean_w")
        calls, window, ns = steady.get("calls"), steady.get("duration_s"), steady.get("gpu_ns_per_call")
        samples = tuple(float(v) for v in steady.get("energy_samples_j") or () if finite_number(v) is not None)
    else:
        # No energy window: energy over the timed loop per call, flushes and holds included.
        n = int(timed.get("samples") or 0) * int((method or {}).get("calls_per_sample") or 1)
        energy, mean_w, window = timed.get("energy_j"), timed.get("mean_w"), timed.get("duration_s")
        e_loop = finite_number(energy)
        per_call = e_loop / n if e_loop is not None and n else None
        kind, calls, ns, samples = "timed_loop", n or None, None, ()
    flops, nbytes = finite_number(entry.get("flops")), finite_number(entry.get("bytes"))
    e = finite_number(per_call)
    return PowerStats(
        energy_j=finite_number(energy),
        energy_per_call_j=e,
        mean_w=finite_number(mean_w),
        peak_w=_max(timed.get("peak_w"), steady.get("peak_w")),
        peak_temp_c=_max(timed.get("peak_temp_c"), steady.get("peak_temp_c")),
        throttle_reasons=tuple(str(r) for r in p.get("throttle_reasons") or ()),
        extra={k: p[k] for k in ("start_local", "end_local", "energy_source") if k in p},
        energy_samples_j=samples,
        pj_per_flop=e / flops * 1e12 if e is not None and flops else None,
        pj_per_byte=e / nbytes * 1e12 if e is not None and nbytes else None,
        method=kind,
        calls=int(c) if (c := finite_number(calls)) is not None else None,
        window_s=finite_number(window),
        ns_per_call=finite_number(ns),
        timed_energy_j=finite_number(timed.get("energy_j")),
        timed_s=finite_number(timed.get("duration_s")),
        timed_mean_w=finite_number(timed.get("mean_w")),
        timed_peak_w=finite_number(timed.get("peak_w")),
        start_temp_c=finite_number(timed.get("start_temp_c")),
        counter_step_j=finite_number(p.get("counter_step_j")),
        counter_update_s=finite_number(p.get("counter_update_s")),
        power_kind=str(p.get("power_kind") or "instant"),
        thermal_wait_s=finite_number(guard.get("waited_s")) if isinstance(guard, Mapping) and not guard.get("skipped") else None,
        thermal_timed_out=bool(guard.get("timed_out")) if isinstance(guard, Mapping) else False,
    )


def _pool(a: PowerStats, b: PowerStats) -> PowerStats:
    # Several processes timed one benchmark: their energy samples pool, as compare pools them.
    return replace(a, energy_samples_j=a.energy_samples_j + b.energy_samples_j,
                   peak_w=_max(a.peak_w, b.peak_w), peak_temp_c=_max(a.peak_temp_c, b.peak_temp_c))  # fmt: skip


def _on_timeline(stats: PowerStats, t0: pd.Timestamp | None) -> PowerStats:
    if t0 is None:
        return stats
    a, b = stats.extra.get("start_local"), stats.extra.get("end_local")
    if not isinstance(a, str) or not isinstance(b, str):
        return stats
    try:  # local wall-clock time, in nvidia-smi's own timestamp form (timer.energy._local)
        start = pd.Timestamp(pd.to_datetime(a, format="%Y/%m/%d %H:%M:%S.%f"))
        end = pd.Timestamp(pd.to_datetime(b, format="%Y/%m/%d %H:%M:%S.%f"))
    except (TypeError, ValueError):
        return stats
    return replace(stats, t_start_s=(start - t0).total_seconds(), t_end_s=(end - t0).total_seconds())


def attach_power(
    result: RunResult,
    sidecars: Sequence[tuple[Path, Mapping[str, Any]]],
    samples: pd.DataFrame | None = None,
) -> RunResult:
    """``result`` with ``power`` set on every benchmark whose sidecar entry has a power record."""
    found: dict[str, PowerStats] = {}
    for _, doc in sidecars:
        for entry in doc.get("benchmarks") or []:
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                continue
            stats = power_stats(entry)
            if stats is None:
                continue
            key = str(entry.get("nvtx_path") or f"{NVTX_DOMAIN}:{entry['name']}")
            found[key] = _pool(found[key], stats) if key in found else stats
    if not found:
        return result
    t0 = None
    if samples is not None and not samples.empty and "time" in samples:
        t = pd.to_datetime(samples["time"], errors="coerce")
        t0 = None if t.isna().all() else t.min()
    benches: list[BenchmarkResult] = [
        replace(b, power=_on_timeline(found[b.nvtx_path], t0)) if b.nvtx_path in found else b
        for b in result.benchmarks
    ]
    return replace(result, benchmarks=tuple(benches))
