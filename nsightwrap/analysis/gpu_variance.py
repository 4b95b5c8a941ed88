"""GPU-to-GPU variance: the same benchmarks timed on every GPU (``profile --gpus all --replicate``).

Per benchmark: its median on each GPU and their spread, (slowest - fastest) / median. Per GPU:
on each benchmark, its median over the median of the other GPUs; a GPU is called slower when
that ratio is above 1 on more benchmarks than chance allows (one-sided sign test at ``alpha``)
and its median ratio is at least ``1 + threshold``. The same ratio in SM cycles (time x clock)
tells a slow clock (cycles the same: power cap, heat) from a slow chip; the temperature and
power limit seen on each GPU go with it. Pure computation on analysed results.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from nsightwrap.analysis.model import BenchmarkResult, GpuSpread, GpuVariance, ShardSummary, SlowGpu

DEFAULT_THRESHOLD = 0.02
DEFAULT_ALPHA = 0.05


def _key(b: BenchmarkResult) -> str:
    if not b.params or "[" in b.name:
        return b.name
    return f"{b.name}[{','.join(f'{k}={v}' for k, v in b.params.items())}]"


def _time_and_clock(b: BenchmarkResult, metric: str) -> tuple[float | None, float | None]:
    if metric == "timer":
        t = b.timer
        return (t.median_ns, t.sm_clock_hz) if t and math.isfinite(t.median_ns) and t.median_ns > 0 else (None, None)
    n = b.ncu
    return (n.median_ns, n.sm_clock_hz) if n and n.median_ns else (None, None)


def sign_test_p(wins: int, n: int) -> float:
    """P(X >= wins) for X ~ Binomial(n, 1/2): how often chance alone is this lopsided."""
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n if n else 1.0


def gpu_variance(
    benchmarks: Sequence[BenchmarkResult],
    shards: Sequence[ShardSummary],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
) -> GpuVariance | None:
    """Spreads and slower GPUs of a replicated run; None when fewer than two GPUs have numbers."""
    metric = "timer" if any(b.timer is not None for b in benchmarks) else "ncu"
    table: dict[str, dict[str, tuple[float, float | None]]] = {}
    shard_of: dict[str, int] = {}
    for b in benchmarks:
        t, f = _time_and_clock(b, metric)
        if t is None:
            continue
        gpu = b.gpu_uuid or f"shard {b.shard}"
        shard_of.setdefault(gpu, b.shard or 0)
        table.setdefault(_key(b), {})[gpu] = (float(t), f)
    gpus = tuple(sorted(shard_of, key=shard_of.__getitem__))
    if len(gpus) < 2:
        return None
    spreads = []
    for name, per in table.items():
        if len(per) < 2:
            continue
        med = {g: v[0] for g, v in per.items()}
        mid = statistics.median(med.values())
        slowest, fastest = max(med, key=med.__getitem__), min(med, key=med.__getitem__)
        spreads.append(GpuSpread(name, med, (med[slowest] - med[fastest]) / mid if mid > 0 else None, slowest, fastest))
    seen = {s.gpu_uuid or f"shard {s.index}": s for s in shards}
    slow = []
    for g in gpus:
        ratios, cycles = [], []
        clock_g, clock_o = [], []
        for per in table.values():
            if g not in per or len(per) < 2:
                continue
            rest = [v for h, v in per.items() if h != g]
            ratios.append(per[g][0] / statistics.median(o[0] for o in rest))
            fo = [o[1] for o in rest if o[1]]
            fg = per[g][1]
            if fg and fo:
                cycles.append(ratios[-1] * fg / statistics.median(fo))
                clock_g.append(fg)
                clock_o.extend(fo)
        if not ratios:
            continue
        wins = sum(r > 1 for r in ratios)
        p = sign_test_p(wins, len(ratios))
        med_ratio = statistics.median(ratios)
        if p > alpha or med_ratio < 1 + threshold:
            continue
        cyc = statistics.median(cycles) if cycles else None
        s = seen.get(g)
        others = [o for k, o in seen.items() if k != g]
        f_g = statistics.median(clock_g) if clock_g else None
        f_o = statistics.median(clock_o) if clock_o else None
        slow.append(
            SlowGpu(
                gpu_uuid=g, shard=shard_of[g], slower_in=wins, of=len(ratios), median_ratio=med_ratio,
                cycles_ratio=cyc, p_value=p, sm_clock_hz=f_g, others_sm_clock_hz=f_o,
                temperature_c=s.temperature_c if s else None, power_limit_w=s.power_limit_w if s else None,
                message=_message(g, shard_of[g], wins, len(ratios), med_ratio, cyc, threshold, f_g, f_o, s, others),
            )  # fmt: skip
        )
    values = [s.spread for s in spreads if s.spread is not None]
    note = ""
    if table and sign_test_p(len(table), len(table)) > alpha:
        note = (
            f"with {len(table)} benchmark(s) no GPU can be called slower at alpha {alpha:g} "
            "(the sign test needs more benchmarks)"
        )
    return GpuVariance(
        metric=metric, gpus=gpus, spreads=tuple(spreads), slow=tuple(slow), threshold=threshold, alpha=alpha,
        median_spread=statistics.median(values) if values else None, max_spread=max(values) if values else None,
        note=note,
    )  # fmt: skip


def _message(
    gpu: str,
    shard: int,
    wins: int,
    n: int,
    ratio: float,
    cycles: float | None,
    threshold: float,
    f_g: float | None,
    f_o: float | None,
    s: ShardSummary | None,
    others: Sequence[ShardSummary],
) -> str:
    text = f"GPU {gpu} (shard {shard}) is slower than the others on {wins} of {n} benchmarks, by {ratio - 1:+.1%} (median)"
    if cycles is not None and f_g and f_o:
        if abs(cycles - 1) < threshold / 2:
            text += (
                f"; in SM cycles it is the same ({cycles - 1:+.1%}): its SM clock is lower "
                f"({f_g / 1e9:.2f} GHz against {f_o / 1e9:.2f} GHz)"
            )
        else:
            text += f"; in SM cycles too ({cycles - 1:+.1%}), at {f_g / 1e9:.2f} GHz against {f_o / 1e9:.2f} GHz"
    seen = []
    temps = [o.temperature_c for o in others if o.temperature_c is not None]
    if s and s.temperature_c is not None:
        seen.append(f"up to {s.temperature_c:.0f} C" + (f" (others up to {max(temps):.0f} C)" if temps else ""))
    limits = [o.power_limit_w for o in others if o.power_limit_w is not None]
    if s and s.power_limit_w is not None:
        seen.append(f"power limit {s.power_limit_w:.0f} W" + (f" (others {statistics.median(limits):.0f} W)" if limits else ""))
    if seen:
        text += "; seen at " + ", ".join(seen)
    return text + "; check its cooling and power limit (nvidia-smi -q -d POWER,TEMPERATURE,PERFORMANCE)"
