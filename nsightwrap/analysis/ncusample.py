"""ncu's per-iteration sums when ncu profiled each distinct kernel only a few times.

``nsightwrap profile`` caps the ncu passes (``--ncu-kernel-cap N``: ncu's ``--filter-mode
per-launch-config --launch-count N``): each distinct launch configuration (kernel, grid and block
shape) is profiled at most N times in the whole run, counted among the launches the NVTX filter
lets through. Later iterations of a benchmark, and a second benchmark that runs the very same
kernel at the very same shape, then have fewer profiled kernels than they launched, or none.

Here every benchmark iteration ncu should have covered is rebuilt from the nsys pass's kernels of
the same iteration (same benchmark range, same iteration index): each launch ncu did not profile
is carried by the median ncu instance of the same kernel at the same shape anywhere in the run
(kernel name, grid size and block size as products: nsys's ``gridX*gridY*gridZ``, ncu's
``launch__grid_size``). A launch whose kernel and shape ncu never profiled gets no ncu figure:
the benchmark's ncu sum leaves it out, its kernel count shows fewer kernels than nsys's (the
``extra_or_missing_kernels`` cause), and a note names it. The result has the ``NcuStats`` shape
of ``iterations.ncu_stats_all``, which does the sums: the carried launches are rows added to the
ncu frame, copies of the median instance.

The same kernel at the same shape can do other work (a GEMM's K does not change its grid): where
nsys timed a benchmark's launches of it apart from those in the benchmarks ncu profiled it in
(``SAME_WORK``, at one clock), the carried median is scaled by nsys's ratio, unless the two timing
loops treat the L2 differently (then the difference is the cache state, which ncu's own flush
before every kernel removes). Either way a note says so.

A figure carried from other benchmarks' launches is a hypothesis, checked against this benchmark's
own kernels in nsys (``BORROW_BOUND``): where the borrowed ncu duration, carried to the
benchmark's measured clock, is not within what the clock and ncu's own front end explain of nsys's
duration, or nsys's ratio that would scale it is outside the same bound, the benchmark gets no ncu
figure (``Sampled.no_ncu``: the reason, with the option that fixes it), never a gap decomposed
against another size's work. So does a benchmark whose ncu iterations ran another launch
configuration of a kernel than nsys saw (an autotuner's other choice), and one nsys saw work in
while ncu profiled nothing of it. A benchmark the coverage pass (``ncu-cover``: its own iteration
ranges, no cap) re-profiled has its own launches in the frame (``COVER_COLUMN``), never carried.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nsightwrap.analysis.clocks import clamp_elasticity, classify, heuristic_elasticity, number_or_none
from nsightwrap.analysis.iterations import ITER_PATH, NsysIterations, ncu_stats_all
from nsightwrap.analysis.model import NcuStats
from nsightwrap.core.contract import ncu_default_filter, ncu_iteration_filter
from nsightwrap.core.units import us_text

if TYPE_CHECKING:
    from nsightwrap.analysis.reconcile import BenchmarkSpec

#: (kernel name, grid size, block size): the launch configuration ncu's per-launch-config filter
#: counts. Sizes are the products of the three dimensions (None where a side has no shape).
Key = tuple[str, int | None, int | None]
#: nsys durations of one kernel at one shape within this share of each other are the same work
#: at one clock (run-to-run spread of a kernel is a few %); beyond it, a carried duration is scaled by nsys's ratio.
SAME_WORK = 0.15
#: The same where a side has no measured clock: the SM clock alone moves a kernel by up to ~25%
#: between an idle and a loaded GPU (1.98 against 1.59 GHz on an H200).
SAME_WORK_NO_CLOCK = 0.30
#: A figure borrowed from other benchmarks' launches of the same kernel at the same shape stands
#: for this benchmark's launch only where, carried to this benchmark's measured SM clock, it lies
#: within [0.8, 1.25] x of nsys's duration of the launch here (ncu's lower end against nsys's
#: duration, its upper end against nsys's duration plus ``NCU_FRONT_END_NS``): run-to-run spread
#: and the clock's rounding are a few %, so a figure outside is another problem size (a persistent
#: grid or a library kernel whose launch shape stops following the size). The same bound holds
#: nsys's ratio of the launches here to those where ncu profiled the kernel (``SAME_WORK`` scaling).
BORROW_BOUND = (0.8, 1.25)
#: The bound where a side has no measured clock, widened by what the SM clock alone moves a
#: kernel (1.98 against 1.59 GHz on an H200: x1.25 either way).
BORROW_BOUND_NO_CLOCK = (0.8 / 1.25, 1.25 * 1.25)
#: ncu's own time before and after a kernel that nsys does not see (1-1.5 us where measured, the
#: gap decomposition's ``front_end`` part): the upper end allowed for a borrowed figure.
NCU_FRONT_END_NS = 1500.0
#: A column of the ncu frame: True on the rows of the coverage pass (``ncu-cover``), the launches
#: of the benchmarks it re-profiled without a cap (``clocks.with_coverage``).
COVER_COLUMN = "nw_cover"
#: The first words of the note that says why a benchmark has no ncu figure.
NO_NCU_LEAD = "no ncu: "
#: The head of the reason where ncu and nsys ran a kernel at launch shapes the other never did.
OTHER_CONFIG_HEAD = NO_NCU_LEAD + "the ncu pass ran another config of "


@dataclass(frozen=True)
class Sampled:
    """ncu's figures for every benchmark, with the launches the cap left out carried."""

    stats: tuple[NcuStats, ...]
    #: Per benchmark, the lines that say what was carried and what has no ncu figure.
    notes: tuple[tuple[str, ...], ...]
    #: Per benchmark: launches ncu profiled in its ncu iterations, launches carried, launches without any.
    profiled: tuple[int, ...]
    carried: tuple[int, ...]
    missing: tuple[int, ...]
    #: Per benchmark: launches nsys saw as nodes of a CUDA graph whose kernel and shape ncu
    #: profiled nowhere. ncu's cap counts a graph's node kernels together, so later nodes of a
    #: graph may never be profiled: such a benchmark has no complete ncu figure.
    starved: tuple[int, ...]
    #: Per benchmark: why it has no ncu figure of its own (one line beginning ``NO_NCU_LEAD``,
    #: with the option that fixes it), or None. The analysis gives such a benchmark no ncu figure.
    no_ncu: tuple[str | None, ...] = ()
    #: Per benchmark: whether a coverage pass (its iteration ranges, no cap) can give it ncu
    #: figures of its own: some of its launches have no ncu instance of their own (missing, or
    #: carried from other benchmarks' launches), and not because ncu ran another config or the
    #: user's filter left them out; never for a benchmark the coverage pass already ran for.
    coverable: tuple[bool, ...] = ()


def kernel_cap(manifest: Mapping[str, Any], name: str = "ncu") -> int:
    """The per-launch-config cap the run's pass ``name`` ran with (0: none), read from its argv,
    so that a cap given through ``--ncu-args`` counts too. The analysis asks for the duration
    pass's where that pass's kernels lead the ncu frame (``clocks.durations_first``)."""
    for p in manifest.get("passes") or ():
        if not isinstance(p, Mapping) or p.get("name") != name:
            continue
        for c in p.get("commands") or ():
            argv = [str(a) for a in (c.get("argv") or ())] if isinstance(c, Mapping) else []
            return _cap_of_argv(argv)
    return 0


def coverage_context(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What ``ncu_stats_sampled``'s reasons name, read from the run's manifest: the option that set
    the cap (``cap_option``), whether the ncu pass ran the user's ``--nvtx-include`` filter
    (``user_filter``: else nsightwrap chose the filter, and no reason asks the user to check it),
    and the benchmarks the coverage pass re-profiled (``covered``: the plan's ``coverage``)."""
    settings = manifest.get("settings") if isinstance(manifest.get("settings"), Mapping) else {}
    assert isinstance(settings, Mapping)
    ours = {a for a in (*ncu_default_filter(), *ncu_iteration_filter()) if a not in ("--nvtx", "--nvtx-include")}
    k = settings.get("ncu_kernel_cap")
    plan = manifest.get("plan") if isinstance(manifest.get("plan"), Mapping) else {}
    assert isinstance(plan, Mapping)
    cover = plan.get("coverage") if isinstance(plan.get("coverage"), Mapping) else {}
    assert isinstance(cover, Mapping)
    return {
        "cap_option": f"--ncu-kernel-cap {k}" if isinstance(k, int) else None,
        "user_filter": any(f not in ours for f in _nvtx_includes(manifest)),
        "covered": tuple(str(p) for p in cover.get("benchmarks") or ()),
    }


def _nvtx_includes(manifest: Mapping[str, Any]) -> list[str]:
    """The ``--nvtx-include`` values of the ncu pass's command (``--ncu-args`` ones too)."""
    for p in manifest.get("passes") or ():
        if isinstance(p, Mapping) and p.get("name") == "ncu":
            for c in p.get("commands") or ():
                argv = [str(a) for a in (c.get("argv") or ())] if isinstance(c, Mapping) else []
                return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--nvtx-include"] + [
                    a.split("=", 1)[1] for a in argv if a.startswith("--nvtx-include=")
                ]
    return []


def _cap_of_argv(argv: Sequence[str]) -> int:
    opts: dict[str, str] = {}
    for i, a in enumerate(argv):
        if a.startswith("--") and "=" in a:
            k, v = a.split("=", 1)
            opts.setdefault(k, v)
        elif a in ("--filter-mode", "--launch-count", "-c") and i + 1 < len(argv):
            opts.setdefault("--launch-count" if a == "-c" else a, argv[i + 1])
    if opts.get("--filter-mode") != "per-launch-config":
        return 0
    try:
        return max(0, int(opts.get("--launch-count", "0")))
    except ValueError:
        return 0


def dims_size(dims: object) -> int | None:
    """``"2,66,1"`` -> 132; None when there is no shape."""
    if not isinstance(dims, str) or not dims.strip():
        return None
    try:
        return math.prod(int(x) for x in dims.split(","))
    except ValueError:
        return None


def _ncu_iteration(paths: object, heads: Mapping[str, int]) -> tuple[int, int] | None:
    """(benchmark, iteration) of an ncu kernel, as ``iterations.ncu_stats_all`` assigns it."""
    seq = (paths,) if isinstance(paths, str) else tuple(paths) if isinstance(paths, (list, tuple, np.ndarray)) else ()
    for p in seq:
        m = ITER_PATH.fullmatch(str(p))
        if m and (b := heads.get(m.group(1))) is not None:
            return b, int(m.group(2))
    return None


def ncu_stats_sampled(
    kernels: pd.DataFrame,
    specs: Sequence[BenchmarkSpec],
    ref_clocks_hz: Sequence[float | None],
    found: NsysIterations | None,
    cap: int,
    ncu_iters: int | None = None,
    *,
    cap_option: str | None = None,
    user_filter: bool = False,
    ncu_cache_control: str = "all",
    covered: Sequence[str] = (),
) -> Sampled:
    """Every benchmark's ``NcuStats`` (``iterations.ncu_stats_all``) with the launches a cap of
    ``cap`` per launch configuration left out carried by the median of the same kernel's ncu
    instances (module docstring), and why a benchmark has no ncu figure of its own
    (``Sampled.no_ncu``). Without an nsys pass, ncu's own sums.

    ``ncu_iters``: the iterations per benchmark the ncu pass covered (``--ncu-iters``); None: the
    most any benchmark has in the ncu report. ``cap_option``: the option that set the cap, as the
    reasons name it (``--ncu-kernel-cap 3``); ``user_filter``: the ncu pass ran the user's
    ``--nvtx-include`` filter; ``covered``: the range paths of the benchmarks the coverage pass
    re-profiled."""
    n = len(specs)
    if found is None or kernels.empty or not n:
        stats = ncu_stats_all(kernels, specs, ref_clocks_hz)
        zero = (0,) * n
        return Sampled(tuple(stats), ((),) * n, zero, zero, zero, zero, (None,) * n, (False,) * n)
    heads = {f"{s.nvtx_path}/{s.iter_prefix}": i for i, s in enumerate(specs)}
    place = [_ncu_iteration(p, heads) for p in kernels["nvtx_ranges"]]
    name = kernels["kernel"].astype(str).tolist()
    grid_raw, block_raw = kernels["grid"].astype(str).tolist(), kernels["block"].astype(str).tolist()
    keys: list[Key] = [(k, dims_size(g), dims_size(b)) for k, g, b in zip(name, kernels["grid"], kernels["block"], strict=True)]
    launch = pd.to_numeric(kernels["launch_id"], errors="coerce").to_numpy(dtype=float) if "launch_id" in kernels \
        else np.arange(len(kernels), dtype=float)  # fmt: skip
    from_cover = kernels[COVER_COLUMN].fillna(False).astype(bool).to_numpy() if COVER_COLUMN in kernels \
        else np.zeros(len(kernels), dtype=bool)  # fmt: skip
    # The instances of each launch configuration: every kernel ncu profiled counts towards the cap
    # (the NVTX filter may let through ranges that are no benchmark), and each carries a duration.
    # The coverage pass's rows are not the capped pass's: they count towards no cap.
    inst: dict[Key, list[int]] = {}
    by_name: dict[str, set[Key]] = {}
    own: dict[tuple[int, int], Counter[Key]] = {}
    own_rows: dict[tuple[int, Key], list[int]] = {}
    own_shapes: dict[tuple[int, str], dict[tuple[int | None, int | None], str]] = {}
    last: dict[tuple[int, int, Key], float] = {}  # the last launch of a key in an ncu iteration
    from nsightwrap.analysis.reconcile import base_name

    for row, (key, at) in enumerate(zip(keys, place, strict=True)):
        if not from_cover[row]:
            inst.setdefault(key, []).append(row)
            by_name.setdefault(key[0], set()).add(key)
        if at is None:
            continue
        own.setdefault(at, Counter())[key] += 1
        own_rows.setdefault((at[0], key), []).append(row)
        own_shapes.setdefault((at[0], base_name(key[0])), {})[key[1:]] = _shape_text(grid_raw[row], block_raw[row])
        last[(*at, key)] = max(last.get((*at, key), -np.inf), launch[row])
    if ncu_iters is None:
        ncu_iters = max(Counter(b for b, _ in own).values(), default=0)
    # Where ncu stopped profiling each configuration: its cap-th launch (inf: the cap never ran out).
    # ncu counts the launches of one function at one grid and block together whatever its template
    # arguments: on an H100, at --launch-count 24, 3 launches of a `x + y` elementwise kernel and 21
    # node launches of a graph's in-place `add_` (another functor, so another full name) were
    # profiled, and no more of either. The cap is therefore counted per base name and shape.
    group: dict[tuple[str, int | None, int | None], list[int]] = {}
    for key, rows in inst.items():
        group.setdefault((base_name(key[0]), key[1], key[2]), []).extend(rows)
    group_cut = {
        g: float(np.sort(launch[rows])[cap - 1]) if cap > 0 and len(rows) >= cap else np.inf
        for g, rows in group.items()
    }
    cut = {key: group_cut[(base_name(key[0]), key[1], key[2])] for key in inst}
    # An ncu iteration whose launches of a key all came before the cap ran out is whole: how many
    # launches of that key one iteration of the benchmark makes under ncu.
    whole: dict[tuple[int, Key], int] = {}
    for (b, it), cnt in own.items():
        for key, c in cnt.items():
            if last[(b, it, key)] < cut.get(key, np.inf):
                whole[(b, key)] = max(whole.get((b, key), 0), c)
    med = {key: _median_row(kernels, rows) for key, rows in inst.items()}
    med_own: dict[tuple[int, Key], dict[str, Any]] = {}

    nsys_k, graph_nodes, nsys_shape, work = _nsys_kernels(found)
    # nsys durations brought to one clock (each benchmark's reference clock: the SM clock measured
    # in the nsys pass) with the kernel's elasticity, so a clock that dropped under a long loop is
    # not taken for other work; per benchmark over all its iterations (the same problem in each):
    # ``work``, the finite positive durations of each (benchmark, key) in row order.
    elastic = {key: _elasticity(row) for key, row in med.items()}
    hz = [float(r) if r is not None and r > 0 else None for r in ref_clocks_hz]
    src_benches: dict[Key, set[int]] = {}
    for (b, _it), cnt in own.items():
        for key in cnt:
            src_benches.setdefault(key, set()).add(b)
    flush = [_flush(s) for s in specs]
    streams = _multi_stream(found)
    # The iterations ncu covered: 0 .. ncu_iters-1 of every benchmark nsys saw; one nsys did not
    # record (a sample holding a graph of many calls) repeats the benchmark's first.
    firsts = _firsts(nsys_k)
    # ``recovered``: the benchmarks the coverage pass gave launches of their own, which are whole.
    # ``cover_ran``: those and the ones it was asked for (its reasons say it ran, and no second
    # coverage pass is offered); one it was asked for and profiled nothing of (ncu's NVTX filter
    # let none of its launches through) keeps what the capped passes carried.
    wanted = set(covered)
    recovered = {at[0] for at, c in zip(place, from_cover, strict=True) if c and at is not None}
    cover_ran = recovered | {i for i, s in enumerate(specs) if s.nvtx_path in wanted}
    added: list[dict[str, Any]] = []
    next_id = _next_launch_id(kernels)
    profiled, carried, missing = [0] * n, [0] * n, [0] * n
    node_carried, starved = [0] * n, [0] * n
    absent: list[Counter[str]] = [Counter() for _ in range(n)]
    scaled: list[list[float]] = [[] for _ in range(n)]
    unscaled: list[list[float]] = [[] for _ in range(n)]
    no_ncu: list[str | None] = [None] * n
    coverable = [False] * n
    lent = [False] * n  # carried some launches from other benchmarks' instances
    looked: dict[Key, Key | None] = {}
    for b, first in sorted(firsts.items()):
        spec = specs[b]
        if (spec.source or {}).get("kind") == "nvtx_range":
            continue  # a script's own range: captured.py sums ncu's kernels under its path itself
        other = _other_config(b, nsys_k, nsys_shape, own_shapes, ncu_iters, first)
        if other is not None:
            # ncu ran another launch configuration of a kernel than nsys saw here (an autotuner's
            # other choice): a ratio between two different kernels would mean nothing.
            no_ncu[b] = other
            continue
        calls = max(1, int((spec.timer.method.get("calls_per_sample") or 1) if spec.timer else 1))
        mine_b: list[tuple[int, Counter[Key], list[tuple[Key, float]]]] = []
        for it in range(ncu_iters):
            mine_b.append((it, own.get((b, it), Counter()), nsys_k.get((b, it)) or nsys_k[(b, first)]))
        borrowed: str | None = None
        batch: list[dict[str, Any]] = []
        for it, mine, seq in mine_b:
            profiled[b] += sum(mine.values())
            counts = Counter(key for key, _d in seq)
            for key, count in counts.items():
                if key not in looked:
                    looked[key] = _lookup(key, inst, by_name)
                got = looked[key]
                if got is None and (b, key) in own_rows:
                    got = key  # the coverage pass's own instances at this shape
                node = (b, it if (b, it) in nsys_k else first, key) in graph_nodes
                # Under ncu one iteration may hold fewer calls than under nsys (a graph of k calls,
                # a block of Timer calls: one call each under ncu): nsys's count per call. The nsys
                # pass may have captured fewer calls per sample than the plain pass timed: rounded,
                # at least one (never a whole sample's launches carried into one ncu call).
                per_ncu = count if calls == 1 else max(1, round(count / calls))
                if got is None:
                    missing[b] += per_ncu
                    absent[b][_shown(key)] += per_ncu
                    if node and b not in recovered:
                        starved[b] += per_ncu
                    continue
                if b in recovered:
                    continue  # profiled without a cap: what is missing is not the cap's
                c_own = mine.get(got, 0)
                if node and cap > 0:
                    # ncu's per-launch-config filter counts the node kernels of a graph launch
                    # together, not per kernel: at --launch-count 3, 3 of a window's 80 node
                    # launches of two kernels were profiled, each kernel under the cap by its own
                    # count. Every node launch nsys saw in the iteration and ncu did not is the cap's.
                    extra = per_ncu - c_own
                elif cut.get(got, np.inf) == np.inf or (c_own and last[(b, it, got)] < cut[got]):
                    continue  # ncu profiled every launch of this iteration it saw: what is missing is not the cap's
                else:
                    extra = whole.get((b, got), per_ncu) - c_own
                if extra <= 0:
                    continue
                if (b, got) in own_rows:
                    # This benchmark's own instances of the kernel (other iterations of it): its figure.
                    if (b, got) not in med_own:
                        med_own[(b, got)] = _median_row(kernels, own_rows[(b, got)])
                    carry = dict(med_own[(b, got)])
                else:
                    lent[b] = True
                    carry = dict(med[got])
                    f, clocked = _work_ratio(b, key, got, src_benches, work, hz, elastic)
                    lo, hi = BORROW_BOUND if clocked else BORROW_BOUND_NO_CLOCK
                    same_flush = any(flush[o] == flush[b] for o in src_benches.get(got, ()))
                    if f is not None and abs(f - 1.0) > (SAME_WORK if clocked else SAME_WORK_NO_CLOCK):
                        if same_flush:
                            # The same kernel at the same shape doing other work (a GEMM's K does not
                            # change its grid): the median carried in nsys's proportion, where that
                            # proportion is within the bound (else the check below refuses it).
                            carry["duration_ns"] = float(carry["duration_ns"]) * f
                            scaled[b].append(f)
                        else:
                            # The user's loop flushes the L2 there and not here (or the other way): nsys
                            # sees the cache state, ncu (--cache-control all) flushes before every kernel.
                            unscaled[b].append(f)
                    borrowed = _borrow_check(
                        b, key, med[got], f if same_flush else None, (lo, hi), work, hz[b] if clocked else None,
                        elastic.get(got, 1.0), _l2_like_ncu(flush[b], ncu_cache_control), cap, cap_option,
                        alone=b not in streams,
                    )  # fmt: skip
                    if borrowed is not None:
                        break
                path = f"{spec.nvtx_path}/{spec.iter_prefix}{it}"
                for _ in range(extra):
                    batch.append({**carry, "launch_id": next_id, "nvtx_ranges": (path,), "nvtx_path": path})
                    next_id += 1
                carried[b] += extra
                if node:
                    node_carried[b] += extra
            if borrowed is not None:
                break
        if borrowed is not None:
            no_ncu[b], coverable[b] = borrowed, True
            continue
        added += batch
        if starved[b]:
            no_ncu[b], coverable[b] = NO_NCU_LEAD + _starved_text(starved[b], cap), True
        elif not profiled[b] and not carried[b] and any(nsys_k.get((b, it)) for it in range(ncu_iters)):
            no_ncu[b], coverable[b] = _nothing_text(b, nsys_k, first, ncu_iters, calls, absent[b], user_filter,
                                                    b in cover_ran, cap, cap_option)  # fmt: skip
    for b in range(n):
        # A benchmark without instances of its own of some kernel (carried from others, or none at
        # all) is one a coverage pass can give them to, unless it ran already.
        if no_ncu[b] is None and b not in cover_ran and (lent[b] or missing[b]):
            coverable[b] = True
    frame = kernels
    if added:
        frame = pd.concat([kernels, pd.DataFrame(added, columns=kernels.columns)], ignore_index=True)
    stats = ncu_stats_all(frame, specs, ref_clocks_hz)
    for b in range(n):
        reason = no_ncu[b]
        if reason is not None and reason.startswith(_NOTHING_HEAD) and stats[b].excluded_kernels:
            no_ncu[b] = reason.replace(_NOTHING_HEAD, _excluded_head(stats[b].excluded_kernels), 1)
    notes = tuple(
        (reason,) if (reason := no_ncu[i]) is not None
        else _notes(profiled[i], carried[i], absent[i], scaled[i], unscaled[i], cap, node_carried[i])
        for i in range(n)
    )  # fmt: skip
    return Sampled(tuple(stats), notes, tuple(profiled), tuple(carried), tuple(missing), tuple(starved),
                   tuple(no_ncu), tuple(coverable))  # fmt: skip


#: The head of the reason where ncu profiled nothing of a benchmark nsys saw work in.
_NOTHING_HEAD = "no ncu: ncu profiled none of this benchmark's launches in its iteration ranges"


def _excluded_head(excluded: int) -> str:
    return (
        f"no ncu: ncu profiled {excluded} kernel(s) in this benchmark's range but none inside its iteration ranges "
        "(the ncu pass's shortened loop left no profiled iteration)"
    )


def _shape_text(grid: object, block: object) -> str:
    """``grid 132x1x1 block 128``: a launch shape as the reasons print it (a block's trailing
    1s left out, as it is usually spoken of)."""

    def dims(v: object, trim: bool) -> str:
        parts = [p.strip() for p in str(v).split(",") if p.strip()] if isinstance(v, str) else []
        while trim and len(parts) > 1 and parts[-1] == "1":
            parts.pop()
        return "x".join(parts) or "?"

    return f"grid {dims(grid, False)} block {dims(block, True)}"


def _other_config(
    b: int,
    nsys_k: Mapping[tuple[int, int], list[tuple[Key, float]]],
    nsys_shape: Mapping[Key, str],
    own_shapes: Mapping[tuple[int, str], Mapping[tuple[int | None, int | None], str]],
    ncu_iters: int,
    first: int,
) -> str | None:
    """The reason, where benchmark ``b``'s ncu iterations ran a kernel only at launch shapes nsys
    never saw it at in this benchmark (and nsys none of ncu's): another config of the kernel."""
    from nsightwrap.analysis.reconcile import base_name

    seen: dict[str, dict[tuple[int | None, int | None], str]] = {}
    for it in range(max(1, ncu_iters)):
        for key, _d in nsys_k.get((b, it)) or nsys_k.get((b, first)) or ():
            if key[1] is not None and key[2] is not None:
                seen.setdefault(base_name(key[0]), {})[key[1:]] = nsys_shape.get(key, "")
    for short, shapes in seen.items():
        ran = own_shapes.get((b, short))
        if not ran or set(ran) & set(shapes):
            continue
        theirs = ", ".join(sorted(set(ran.values())))
        mine = ", ".join(sorted(set(shapes.values())))
        return (
            f"{OTHER_CONFIG_HEAD}{short} ({theirs} against {mine} under nsys): a ratio between two different "
            "kernels would mean nothing; a library that picks its algorithm per process (not a triton.autotune "
            "kernel, whose choices nsightwrap pins) needs its choice fixed in the script, e.g. "
            "torch.backends.cudnn.benchmark = False"
        )
    return None


def _multi_stream(found: NsysIterations) -> set[int]:
    """The benchmarks whose iterations ran kernels on more than one stream in the nsys pass."""
    per = found.ops
    if per.empty or "stream_id" not in per:
        return set()
    k = per[per["kind"].astype(str) == "kernel"]
    n = k.groupby("spec")["stream_id"].nunique()
    return {int(str(b)) for b, c in n.items() if c > 1}


def _l2_like_ncu(flush: str, cache_control: str) -> bool:
    """Whether the benchmark's loop leaves the L2 as ncu does before each kernel: flushed (ncu's
    ``--cache-control all``), or warm where ncu leaves it (``none``)."""
    return (flush != "none") == (str(cache_control).lower() != "none")


def _borrow_check(
    b: int, key: Key, carry: Mapping[str, Any], f: float | None, bound: tuple[float, float],
    work: Mapping[tuple[int, Key], list[float]], ref_hz: float | None, e: float, l2_like: bool, cap: int,
    cap_option: str | None, alone: bool = True,
) -> str | None:  # fmt: skip
    """None where a figure borrowed from other benchmarks' launches can stand for benchmark
    ``b``'s launches of ``key`` (``BORROW_BOUND``); else the reason it gets no ncu figure.

    The borrowed duration is carried to ``b``'s measured clock (``ref_hz``; as measured without
    one) and set against nsys's median duration of the launch here: at least ``bound[0]`` of it
    (a warm L2 only makes nsys faster), at most ``bound[1]`` of it plus ncu's front end where the
    loop treats the L2 as ncu does; where it does not (a warm loop against ncu's flush), the upper
    side is nsys's own ratio ``f`` of these launches to those ncu profiled (same flush). Where the
    benchmark's kernels ran on several streams (not ``alone``), nsys's durations of kernels that
    overlap are not their work alone (they share the GPU): ``f`` alone, lower quartiles both, decides."""
    here = work.get((b, key))
    d = number_or_none(carry.get("duration_ns"))
    if not here or d is None or d <= 0:
        return None
    nsys_ns = _low(here)
    clk = number_or_none(carry.get("sm_clock_hz"))
    at_ref = d * (clk / ref_hz) ** e if ref_hz and clk else d
    lo, hi = bound
    fails = f is not None and not lo <= f <= hi
    if alone:
        fails = fails or at_ref < lo * nsys_ns
    if l2_like and alone:
        fails = fails or at_ref > hi * (nsys_ns + NCU_FRONT_END_NS)
    if not fails:
        return None
    opt = cap_option or f"--ncu-kernel-cap {cap}"
    return (
        f"{NO_NCU_LEAD}the only ncu figure of {_shown(key)} is from another size ({us_text(at_ref)} against "
        f"{us_text(nsys_ns)} under nsys): ncu's per-launch-config cap ({opt}) was spent on its other launches "
        "at this grid and block; --ncu-kernel-cap 0 profiles every launch"
    )


def _nothing_text(
    b: int, nsys_k: Mapping[tuple[int, int], list[tuple[Key, float]]], first: int, ncu_iters: int, calls: int,
    absent: Counter[str], user_filter: bool, recovered: bool, cap: int, cap_option: str | None,
) -> tuple[str, bool]:  # fmt: skip
    """Why ncu has nothing of a benchmark nsys saw launches in, and whether a coverage pass can help."""
    seq = nsys_k.get((b, first)) or []
    per = max(1, round(len(seq) / calls))
    names = ", ".join(k for k, _ in absent.most_common(3)) or ", ".join(sorted({_shown(k) for k, _ in seq})[:3])
    saw = f" (nsys saw {per} per iteration: {names})"
    if user_filter:
        return (
            f"{_NOTHING_HEAD}{saw}: the --nvtx-include filter of the ncu pass matched none of them; check it "
            "against the range names nsys shows", False,
        )  # fmt: skip
    if recovered:
        return f"{_NOTHING_HEAD}{saw}, and the coverage pass (ncu-cover, no cap) profiled none of them either", False
    fix = f"; --ncu-kernel-cap 0 profiles every launch ({cap_option or f'--ncu-kernel-cap {cap}'} now)" if cap > 0 else ""
    return f"{_NOTHING_HEAD}{saw}{fix}", True


def _starved_text(starved: int, cap: int) -> str:
    return (
        f"{starved} launch(es) in this benchmark's ncu iterations are nodes of a CUDA graph: ncu's cap "
        f"(--ncu-kernel-cap {cap}) counts a graph's node kernels together, so it never reached these; without "
        "them ncu's sum is not the window's work, so this benchmark is not checked against ncu. Profile again "
        "with --ncu-kernel-cap 0 to check it"
    )


def _flush(spec: BenchmarkSpec) -> str:
    """How the benchmark's timing loop leaves the L2 between calls (the method's flush, if any)."""
    m = spec.timer.method if spec.timer else {}
    return str(m.get("flush") or m.get("flush_l2") or "none").lower()


def _work_ratio(
    b: int, key: Key, got: Key, src_benches: Mapping[Key, set[int]], work: Mapping[tuple[int, Key], list[float]],
    hz: Sequence[float | None], elastic: Mapping[Key, float],
) -> tuple[float | None, bool]:  # fmt: skip
    """nsys's time of ``key`` in benchmark ``b`` over its time in the benchmarks where ncu profiled
    it, both at 1 GHz (``_clock_factor``), and whether the clocks were known; None where either
    time is unknown or ``b`` is one of those benchmarks."""
    others = src_benches.get(got, set())
    if b in others:
        return None, False
    e = elastic.get(got, 1.0)
    clocked = hz[b] is not None and all(hz[o] is not None for o in others)
    if not clocked:
        hz = [None] * len(hz)  # a clock known on one side only would skew the ratio: compare raw
    # Both sides in nsys's own spelling of the kernel (``key``); ``got`` is ncu's.
    ref = [d * _clock_factor(hz[o], e) for o in sorted(others) for d in work.get((o, key), ())]
    here = [d * _clock_factor(hz[b], e) for d in work.get((b, key), ())]
    if not ref or not here or _low(ref) <= 0:
        return None, clocked
    f = _low(here) / _low(ref)
    return (f if math.isfinite(f) else None), clocked


def _low(values: Sequence[float]) -> float:
    """The lower quartile: the work of a kernel, where kernels on two streams that overlap read
    longer in nsys than they take alone (as ncu runs them)."""
    return float(np.percentile(np.asarray(values, dtype=float), 25))


def _clock_factor(hz: float | None, e: float) -> float:
    """``(f / 1 GHz) ** e``: a duration at clock ``f`` carried to 1 GHz is ``t * factor``."""
    return 1.0 if hz is None else (hz / 1e9) ** e


def _elasticity(row: Mapping[str, Any]) -> float:
    """The kernel's measured elasticity (the base pass), else the counters' guess (1 or 0)."""
    e = number_or_none(row.get("elasticity"))
    if e is not None:
        return clamp_elasticity(e)
    model = classify(number_or_none(row.get("sm_throughput_pct")), number_or_none(row.get("memory_throughput_pct")),
                     number_or_none(row.get("dram_throughput_pct")))  # fmt: skip
    return heuristic_elasticity(model)


def _lookup(key: Key, inst: Mapping[Key, list[int]], by_name: Mapping[str, set[Key]]) -> Key | None:
    """The ncu launch configuration of an nsys launch: the same name and shape; else the only one
    of the same function name (``reconcile.base_name``: ncu and nsys can spell a kernel's full
    name apart, as the reconciliation's kernel check knows) at that shape; where the nsys export
    has no shape, the kernel's only configuration in ncu."""
    if key in inst:
        return key
    name, g, b = key
    if g is None or b is None:
        shapes = by_name.get(name, set())
        return next(iter(shapes)) if len(shapes) == 1 else None
    from nsightwrap.analysis.reconcile import base_name

    short = base_name(name)
    alike = {k for k in inst if k[1] == g and k[2] == b and base_name(k[0]) == short}
    return next(iter(alike)) if len(alike) == 1 else None


def _median_row(kernels: pd.DataFrame, rows: list[int]) -> dict[str, Any]:
    """The instance whose duration is the median of ``rows`` (the lower middle one for an even
    count), with the median duration itself: its clock, counters and elasticity come along."""
    dur = pd.to_numeric(kernels["duration_ns"].iloc[rows], errors="coerce").to_numpy(dtype=float)
    order = np.argsort(dur, kind="stable")
    pick = rows[int(order[(len(rows) - 1) // 2])]
    row: dict[str, Any] = {str(k): v for k, v in kernels.iloc[pick].items()}
    ok = dur[np.isfinite(dur)]
    if len(ok):
        row["duration_ns"] = float(np.median(ok))
    return row


def _next_launch_id(kernels: pd.DataFrame) -> int:
    ids = pd.to_numeric(kernels["launch_id"], errors="coerce") if "launch_id" in kernels else pd.Series(dtype=float)
    top = ids.max() if len(ids) else np.nan
    return int(top) + 1 if isinstance(top, (int, float, np.number)) and np.isfinite(top) else len(kernels)


class _IterKernels(Mapping[tuple[int, int], list[tuple[Key, float]]]):
    """``(benchmark, iteration) -> [(key, duration), ...]`` over rows sorted by benchmark,
    iteration and start: one slice of rows per iteration, ``heads``' benchmark and iteration at
    its first row; its list is made when first asked for (the analysis reads a few iterations of
    each benchmark, of up to hundreds kept)."""

    def __init__(self, spec: np.ndarray, it: np.ndarray, starts: np.ndarray, ends: np.ndarray, keys: np.ndarray,
                 combo: np.ndarray, dur: np.ndarray) -> None:  # fmt: skip
        self.spec, self.it = spec, it
        self._starts, self._ends = starts, ends
        self._keys, self._combo, self._dur = keys, combo, dur
        self._made: dict[tuple[int, int], list[tuple[Key, float]]] = {}

    def _find(self, at: object) -> int:
        """The slice of ``at``, found by binary search (slices ascend by benchmark, then
        iteration); -1 where there is none."""
        if not (isinstance(at, tuple) and len(at) == 2):
            return -1
        b, i = at
        if not (isinstance(b, (int, np.integer)) and isinstance(i, (int, np.integer))):
            return -1
        lo, hi = np.searchsorted(self.spec, b, side="left"), np.searchsorted(self.spec, b, side="right")
        pos = int(lo + np.searchsorted(self.it[lo:hi], i, side="left"))
        return pos if pos < hi and self.it[pos] == i else -1

    def __getitem__(self, at: tuple[int, int]) -> list[tuple[Key, float]]:
        made = self._made.get(at)
        if made is None:
            pos = self._find(at)
            if pos < 0:
                raise KeyError(at)
            a, e = int(self._starts[pos]), int(self._ends[pos])
            made = self._made[at] = list(zip(self._keys[self._combo[a:e]].tolist(), self._dur[a:e].tolist(), strict=True))
        return made

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.spec.tolist(), self.it.tolist(), strict=True)

    def __len__(self) -> int:
        return len(self.spec)

    def __contains__(self, at: object) -> bool:
        return self._find(at) >= 0


def _firsts(nsys_k: Mapping[tuple[int, int], Any]) -> dict[int, int]:
    """Each benchmark's first iteration nsys saw kernels in, by benchmark."""
    if isinstance(nsys_k, _IterKernels):
        spec = nsys_k.spec
        head = np.flatnonzero(np.r_[True, spec[1:] != spec[:-1]]) if len(spec) else np.zeros(0, dtype=np.int64)
        return dict(zip(spec[head].tolist(), nsys_k.it[head].tolist(), strict=True))
    firsts: dict[int, int] = {}
    for b, it in sorted(nsys_k):
        firsts.setdefault(b, it)
    return firsts


def _nsys_kernels(
    found: NsysIterations,
) -> tuple[
    Mapping[tuple[int, int], list[tuple[Key, float]]], set[tuple[int, int, Key]], dict[Key, str],
    dict[tuple[int, Key], list[float]],
]:  # fmt: skip
    """Per (benchmark, iteration index), the kernels nsys saw launched in it (every instance of
    that iteration range, as ncu's sums take every kernel under the range's path), keyed by full
    name and shape from the nsys export; the (benchmark, iteration, key) whose launches were
    nodes of a CUDA graph (nsys's ``graphNodeId``); each key's shape as the reasons print it; and
    per (benchmark, key) the finite positive durations over all its iterations, in row order."""
    per = found.ops
    if per.empty or found.iters.empty:
        return {}, set(), {}, {}
    k = per[per["kind"].astype(str) == "kernel"]
    if k.empty:
        return {}, set(), {}, {}
    ops = found.all_ops
    # Full names and shapes from the export (the iteration frame holds short names only).
    cols = ("op_id", "name", "grid", "block", "graph_node_id")
    full = ops[[c for c in cols if c in ops]].drop_duplicates("op_id")
    full = full.rename(columns={"name": "nw_name", "grid": "nw_grid", "block": "nw_block"})
    it_of = pd.Series(found.iters["iteration"].to_numpy(), index=found.iters["range_id"].to_numpy())
    it_of = it_of[~it_of.index.duplicated()]
    # A kernel inside nested benchmark ranges belongs to the outermost one, as ncu's sums have it
    # (iterations.ncu_stats_all takes a kernel's first iteration path, the outer range's).
    paths = found.ranges.drop_duplicates("range_id").set_index("range_id")["path"].astype(str) if "path" in found.ranges \
        else pd.Series(dtype=str)  # fmt: skip
    depth = k["range_id"].map(paths.str.count("/")).fillna(0)
    k = k.assign(nw_iter=k["range_id"].map(it_of), nw_depth=depth)
    k = k.sort_values(["op_id", "nw_depth"], kind="stable").drop_duplicates("op_id")
    k = k[k["spec"].notna() & k["nw_iter"].notna()].merge(full, on="op_id", how="inner")
    k = k.sort_values(["spec", "nw_iter", "start_ns"], kind="stable")
    if k.empty:
        return {}, set(), {}, {}
    grids = k["nw_grid"] if "nw_grid" in k else pd.Series(None, index=k.index)
    blocks = k["nw_block"] if "nw_block" in k else pd.Series(None, index=k.index)
    names = k["nw_name"].astype(str).to_numpy(dtype=object)
    g_arr, b_arr = grids.to_numpy(dtype=object), blocks.to_numpy(dtype=object)
    dur = pd.to_numeric(k["duration_ns"], errors="coerce").to_numpy(dtype=float)
    node = k["graph_node_id"].notna().to_numpy() if "graph_node_id" in k else np.zeros(len(k), dtype=bool)
    # A few distinct launches (name, grid, block) among up to millions of rows: each one's key and
    # shape made once, in the order the rows first show it (``shapes`` keeps the first row's text).
    code = np.zeros(len(k), dtype=np.int64)
    for col in (names, g_arr, b_arr):
        c, u = pd.factorize(pd.Series(col, dtype=object), use_na_sentinel=True)
        code = code * (len(u) + 1) + (c + 1)
    combo, _ = pd.factorize(code)
    first = np.unique(combo, return_index=True)[1]
    shapes: dict[Key, str] = {}
    keys = np.empty(len(first), dtype=object)
    for j, i in enumerate(first):
        key: Key = (str(names[i]), dims_size(g_arr[i]), dims_size(b_arr[i]))
        keys[j] = key
        shapes.setdefault(key, _shape_text(g_arr[i], b_arr[i]))
    # Rows are sorted by (spec, iteration): one slice of (key, duration) pairs per iteration.
    spec, it = k["spec"].to_numpy(), k["nw_iter"].to_numpy()
    cut = np.flatnonzero((spec[1:] != spec[:-1]) | (it[1:] != it[:-1])) + 1
    starts = np.concatenate([[0], cut]).astype(np.int64)
    ends = np.concatenate([cut, [len(k)]]).astype(np.int64)
    graph = {(int(spec[i]), int(it[i]), keys[combo[i]]) for i in np.flatnonzero(node)}
    # The durations of each (benchmark, key) over all its iterations, in row order: the rows kept
    # grouped by benchmark, then key (two launch texts of one key, e.g. grid "1" and "(1, 1, 1)",
    # are one group), by a stable sort; one slice each.
    key_id: dict[Key, int] = {}
    kid = np.array([key_id.setdefault(key, len(key_id)) for key in keys.tolist()], dtype=np.int64)[combo]
    keep = np.flatnonzero(np.isfinite(dur) & (dur > 0))
    spec_i = np.asarray(spec[keep], dtype=np.int64)
    group = spec_i * len(key_id) + kid[keep]
    order = np.argsort(group, kind="stable")
    rows, group = keep[order], group[order]
    w_cut = np.flatnonzero(group[1:] != group[:-1]) + 1
    by_id, heads = list(key_id), np.concatenate([[0], w_cut]).astype(np.int64)
    work = {
        (g // len(key_id), by_id[g % len(key_id)]): d.tolist()
        for g, d in zip(group[heads].tolist(), np.split(dur[rows], w_cut), strict=True)
    } if len(rows) else {}  # fmt: skip
    return _IterKernels(np.asarray(spec[starts], dtype=np.int64), np.asarray(it[starts], dtype=np.int64), starts, ends,
                        keys, combo, dur), graph, shapes, work  # fmt: skip


def _shown(key: Key) -> str:
    name, g, b = key
    short = name if len(name) <= 60 else name[:57] + "..."
    return f"{short} (grid {g}, block {b})" if g is not None else short


def _span(ratios: Sequence[float]) -> str:
    lo, hi = min(ratios), max(ratios)
    return f"x{lo:.2f}" if hi - lo < 0.005 else f"x{lo:.2f}-{hi:.2f}"


def _notes(
    profiled: int, carried: int, absent: Counter[str], scaled: list[float], unscaled: list[float], cap: int,
    nodes: int = 0,
) -> tuple[str, ...]:
    out: list[str] = []
    total = profiled + carried + sum(absent.values())
    if carried:
        out.append(
            f"ncu profiled {profiled} of {total} launches of this benchmark's kernels in its ncu iterations "
            f"(--ncu-kernel-cap {cap}: each kernel at each grid/block shape at most {cap} times in the run); "
            f"the other {carried} are carried by the median ncu instance of the same kernel at the same shape"
            + (f" ({nodes} of them nodes of a CUDA graph, whose kernels ncu's cap counts together)" if nodes else "")
        )
    if scaled:
        out.append(
            f"nsys timed the carried kernel(s) here {_span(scaled)} their instances in the benchmarks ncu profiled "
            "them in (the same kernel and launch shape doing other work, e.g. another K of a GEMM): the carried "
            "durations are scaled by that ratio; --ncu-kernel-cap 0 profiles them here"
        )
    if unscaled:
        out.append(
            f"nsys timed the carried kernel(s) here {_span(unscaled)} their instances in the benchmarks ncu profiled "
            "them in, whose timing loop treats the L2 otherwise: carried unscaled (ncu flushes the caches before "
            "each kernel); --ncu-kernel-cap 0 profiles them here"
        )
    if absent:
        names = ", ".join(f"{k} x{v}" if v > 1 else k for k, v in absent.most_common(4))
        more = f" and {len(absent) - 4} more" if len(absent) > 4 else ""
        out.append(
            f"no ncu figure for {sum(absent.values())} launch(es) nsys saw in this benchmark's ncu iterations: "
            f"ncu profiled no instance of {names}{more} at that shape; the ncu sum leaves them out"
        )
    return tuple(out)
