"""The ``cache_state`` part: the same kernels in the user's loop (nsys, after the user's flush
or none) against ncu's clean-cache durations, where the two cache states differ by method.

Also ncu's own front-end time beyond CUPTI's kernel duration (``NcuFrontEnd``): measured on
this benchmark where its cache state is ncu's (only the front end differs then), else on the
same kernels in the run's benchmarks that have ncu's cache state, else on the run's shortest
kernels, whose DRAM traffic is too small for any cache state to move them (``front_end_offsets``).
The front-end and gaps parts take it out of what they read, since ncu's durations already hold it.

The part is bounded by physics (``limits.DeviceLimits``): a loop dirtier than ncu's clean L2
costs between 0 and the write-back of the dirty lines the kernels can evict, ``min(L2, ncu's
DRAM bytes) / DRAM bandwidth``; a warmer one saves between 0 and what the kernels' DRAM traffic
costs in ncu's replay, ``ncu's DRAM bytes / DRAM bandwidth + one DRAM latency per kernel that
moved DRAM bytes``. What a measurement puts beyond the bound is
left in the residual, and the part's evidence names the bound.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nsightwrap.analysis.gap.clock import Clock, bounded
from nsightwrap.analysis.gap.common import med, part, q, us
from nsightwrap.analysis.gap.inputs import (
    GapInputs,
    by_iteration,
    cache_states,
    position_medians,
    timing_kind,
)
from nsightwrap.analysis.gap.limits import DeviceLimits
from nsightwrap.analysis.gap.loop import Loop
from nsightwrap.analysis.model import GapPart


@dataclass(frozen=True)
class NcuFrontEnd:
    """ncu's front-end time beyond CUPTI's durations, per call: of the first kernel, of the rest."""

    first_ns: float = 0.0
    rest_ns: float = 0.0
    source: str = "none"  # where it was measured; "none": not measured in this run

    @property
    def measured(self) -> bool:
        """Whether ncu's front-end time was measured in this run."""
        return self.source != "none"


#: The key of ``front_end_offsets`` under which the run's shortest kernels' front end is kept
#: (no kernel is named so): the figure for kernels no benchmark with ncu's cache state ran.
SHORT_KERNELS = "<the run's shortest kernels>"
#: A kernel this short in ncu (at its own clock) is a short kernel, ...
SHORT_KERNEL_NS = 5_000.0
#: ... and where its DRAM traffic takes no longer than this at the DRAM bandwidth, no cache
#: state can move its duration by more: ncu - CUPTI is then its front end.
SHORT_TRAFFIC_NS = 50.0


def front_end_offsets(inputs: Sequence[GapInputs]) -> dict[str, float]:
    """ncu's front-end time beyond CUPTI's kernel duration, per kernel (by full name), measured
    on the benchmarks whose loop left the L2 in ncu's state (so only the front end differs):
    ncu's duration minus the same kernel's nsys duration; and under ``SHORT_KERNELS`` the median
    of the same difference over the run's short kernels whose DRAM traffic no cache state can
    make matter (``SHORT_KERNEL_NS``, ``SHORT_TRAFFIC_NS``), in any benchmark."""
    found: dict[str, list[float]] = {}
    short: list[float] = []
    for inp in inputs:
        if inp.timer is None or inp.ncu is None or inp.timeline is None or not inp.kernels_agree:
            continue
        if inp.nsys is None or inp.nsys.streams != 1:
            continue  # kernels paired by their order need one stream
        loop, ncu_state, _ = cache_states(inp.timer.method, timing_kind(inp), inp.ncu_cache_control)
        # At ncu's own clocks: a property of the launch, not carried through the clock model.
        ncu_pos, names = position_medians(inp.ncu, None)
        nsys_pos = [v / inp.nsys_calls for v in inp.timeline.kernel_position_ns]
        if len(ncu_pos) != len(nsys_pos):
            continue
        traffic = _position_traffic_ns(inp, len(ncu_pos))
        for name, a, b, t in zip(names, ncu_pos, nsys_pos, traffic, strict=True):
            if loop == ncu_state:
                found.setdefault(name, []).append(a - b)
            if a <= SHORT_KERNEL_NS and (loop == ncu_state or (t is not None and t <= SHORT_TRAFFIC_NS)):
                short.append(a - b)
    out = {k: float(statistics.median(v)) for k, v in found.items()}
    if short:
        out[SHORT_KERNELS] = max(0.0, float(statistics.median(short)))
    return out


def _position_traffic_ns(inp: GapInputs, n: int) -> list[float | None]:
    """The DRAM traffic time of the k-th kernel of an iteration in ncu (median over iterations)."""
    assert inp.ncu is not None
    rows = [ks for ks in by_iteration(inp.ncu).values() if len(ks) == n]
    out: list[float | None] = []
    for p in range(n):
        b = med([k.dram_bytes for ks in rows if (k := ks[p]).dram_bytes is not None])
        out.append(inp.limits.traffic_ns(b))
    return out


def dram_bytes(lp: Loop) -> float | None:
    """ncu's DRAM bytes per iteration (median), None where any kernel has no count."""
    per = by_iteration(lp.ncu)
    if not per or any(k.dram_bytes is None for ks in per.values() for k in ks):
        return None
    return med([sum(float(k.dram_bytes or 0.0) for k in ks) for ks in per.values()])


def dram_kernels(lp: Loop) -> int:
    """Kernels per iteration in ncu that moved DRAM bytes (median over iterations): each waited at
    least one DRAM latency in ncu's clean replay."""
    per = by_iteration(lp.ncu)
    counts = [sum(1 for k in ks if (k.dram_bytes or 0.0) > 0) for ks in per.values()]
    return int(statistics.median_low(counts)) if counts else 0


def bounds(lp: Loop, limits: DeviceLimits, n_x: float) -> tuple[float, float, str]:
    """(lowest, highest) the cache-state part can physically be (ns), and the rule in words."""
    traffic_b = dram_bytes(lp)
    n_k = dram_kernels(lp)
    save = limits.warm_saving_ns(traffic_b, n_k)
    wb = limits.write_back_ns(traffic_b)
    bw = f"{limits.dram_bytes_per_s / 1e12:.2f} TB/s" if limits.dram_bytes_per_s else "unknown bandwidth"
    l2 = f"{limits.l2_bytes / 2**20:.0f} MiB" if limits.l2_bytes else "unknown L2"
    mb = f"{traffic_b / 1e6:.1f} MB" if traffic_b is not None else "uncounted DRAM bytes"
    # A warmer L2 can save at most what the kernels' DRAM traffic costs in ncu's clean replay: the
    # bytes at the bandwidth and one DRAM latency per kernel (all of ncu's time, where uncounted).
    lo_save = -(save if save is not None else n_x)
    lat = f"{limits.dram_latency_ns:.0f} ns"
    save_txt = (
        f"ncu's DRAM traffic {mb} at {bw} plus one DRAM latency ({lat}) for each of its {n_k} kernel(s) with DRAM traffic"
        if save is not None else "ncu's whole time (DRAM bytes not counted)"
    )  # fmt: skip
    wb_txt = f"the write-back of min(L2 {l2}, {mb}) at {bw}"
    colder = lp.loop_state == "dirty" or (lp.loop_state in ("clean", "dirty") and lp.ncu_state == "warm")
    if lp.ncu_state == "warm" and lp.loop_state != "warm":
        hi = (save or 0.0) + (wb or 0.0) if (save is not None and (wb is not None or lp.loop_state == "clean")) else math.inf
        return 0.0, hi, f"0 to ncu's warm-L2 saving plus a dirty L2's write-back ({save_txt}; {wb_txt})"
    if colder:
        return 0.0, wb if wb is not None else math.inf, f"0 to {wb_txt}" + ("" if wb is not None else " (not known)")
    if lp.loop_state == "warm":
        return lo_save, 0.0, f"minus {save_txt} to 0"
    return lo_save, wb if wb is not None else math.inf, f"minus {save_txt} to {wb_txt}"


def fix(kind: str, method: Mapping[str, Any], facts: Mapping[str, Any]) -> str:
    """How to time with ncu's cache state, in the terms of the method used."""
    bench = kind == "nsightwrap_bench"
    state = facts.get("loop_state")
    if facts.get("ncu_state") == "warm":
        return "ncu ran with --cache-control none (a warm L2) while the loop flushes: drop that ncu argument"
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
        if bench and method.get("cuda_graph"):
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


def measure(
    lp: Loop, clk: Clock, offsets: Mapping[str, float] | None
) -> tuple[Clock, GapPart | None, NcuFrontEnd, list[str]]:
    """The clock (bounded by the loop's own kernels where the cache state is ncu's), the
    cache-state part, ncu's front-end time, and details kept with the decomposition."""
    inp, nsys, tl, k_loop = lp.inp, lp.nsys, lp.tl, lp.k_loop
    if not (lp.has_kernels and k_loop is not None and not lp.overlapping and inp.kernels_agree and nsys is not None):
        if lp.overlapping and lp.loop_state != lp.ncu_state:
            return clk, None, NcuFrontEnd(), ["ops ran concurrently: the cache state's share cannot be told from the overlap's"]
        return clk, None, NcuFrontEnd(), []
    ncu_pos, names = position_medians(lp.ncu, clk.f_hz)
    nsys_pos = [v / lp.calls for v in (tl.kernel_position_ns if tl else ())]
    paired = len(ncu_pos) == len(nsys_pos) > 0
    if lp.loop_state == lp.ncu_state:
        if clk.part is not None and clk.n_x < k_loop:
            # Same cache state: ncu at the loop's clock cannot be shorter than the same kernels'
            # own (CUPTI) durations in the loop, since ncu also counts its front end. The clock
            # rescale overshot; the nsys kernels bound it.
            clk = bounded(clk, k_loop, lp.n)
        f_total = clk.n_x - k_loop
        # ncu's front-end time of each kernel, in proportion to its excess over CUPTI's duration.
        w = [max(0.0, a - b) for a, b in zip(ncu_pos, nsys_pos, strict=True)] if paired and nsys.streams == 1 else []
        share0 = w[0] / sum(w) if w and sum(w) > 0 else 1.0
        f = NcuFrontEnd(f_total * share0, f_total * (1 - share0), "this benchmark (same cache state as ncu)")
        return clk, None, f, []
    f = NcuFrontEnd()
    offsets = offsets or {}
    look = [offsets.get(nm) for nm in names]
    if look and all(v is not None for v in look):
        vals = [max(0.0, float(v)) for v in look if v is not None]
        f = NcuFrontEnd(vals[0], sum(vals[1:]), "the same kernels in benchmarks of this run with ncu's cache state")
    elif names and (short := offsets.get(SHORT_KERNELS)) is not None:
        f = NcuFrontEnd(
            short, short * (len(names) - 1),
            f"ncu - nsys of this run's shortest kernels ({us(short)} per launch), whose DRAM traffic no cache state moves",
        )  # fmt: skip
    n_x = clk.n_x
    ev = {
        "loop_cache": lp.loop_state,
        "loop_flush": lp.flush or "none",
        "ncu_cache_control": inp.ncu_cache_control,
        "nsys_kernel_ns": k_loop,
        "ncu_at_loop_clock_ns": n_x,
        "ncu_front_end_ns": (f.first_ns + f.rest_ns) if f.measured else None,
        "ncu_front_end_source": f.source,
    }
    what = {
        "dirty": f"after the loop's '{lp.flush}' flush (dirty lines in the L2)",
        "warm": "on a warm L2 (no flush between calls)",
        "unknown": f"after the loop's flush ({lp.flush or 'kind not recorded'})",
        "clean": "after a clean flush",
    }[lp.loop_state]
    sep = (
        f", less ncu's own front-end time {us(f.first_ns + f.rest_ns)}"
        if f.measured
        else " (ncu's front-end time for these kernels was not measured in this run: it is inside this part)"
    )
    msg = (
        f"the same kernels took {us(k_loop)} under nsys {what} against {us(n_x)} in ncu, which runs each "
        f"kernel on a {'clean' if lp.ncu_state == 'clean' else 'warm'} L2{sep}"
    )
    facts = {"loop_state": lp.loop_state, "ncu_state": lp.ncu_state, "flush": lp.flush}
    size = k_loop + f.first_ns + f.rest_ns - n_x
    lo, hi, rule = bounds(lp, inp.limits, n_x)
    kept = min(hi, max(lo, size))
    ev = {**ev, "measured_ns": size, "bound_low_ns": lo if math.isfinite(lo) else None,
          "bound_high_ns": hi if math.isfinite(hi) else None, "bound": rule, "bound_from": inp.limits.source,
          "beyond_bound_ns": size - kept}  # fmt: skip
    if q(kept) != q(size):
        msg += (
            f"; that is {us(size)}, beyond what the L2 can do ({rule}: {us(lo)} to {us(hi)}), so the part stops at "
            f"{us(kept)} and the {us(size - kept)} beyond it is left in the residual"
        )
    return clk, part("cache_state", kept, ev, msg, fix(lp.kind, lp.method, facts)), f, []
