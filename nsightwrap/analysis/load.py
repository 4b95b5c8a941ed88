"""Analysis of a run directory: parse every pass, normalize clocks, reconcile each benchmark.

``analyze(run_dir)`` is what ``nsightwrap report`` and ``nsightwrap profile`` call; it reads
files only (the parsers never launch anything) and returns a ``RunResult`` for the exporters.
How a ``.ncu-rep`` is read is the caller's: the CLI passes a reader that runs the native
``ncu_report`` in a child process (``nsightwrap.run.ncu_isolated``), so that its crash costs the
ncu numbers, not the report; the default reads in this process (``parsers.ncu.read_ncu_rep``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from nsightwrap.analysis.autotuned import Provenance, provenance
from nsightwrap.analysis.captured import (
    capture_notes,
    finish_results,
    range_benchmarks,
    with_event_method,
    with_window_clocks,
)
from nsightwrap.analysis.clocks import (
    DURATION_SOURCES,
    MIN_CLOCK_STEP,
    attach_base,
    attach_durations,
    durations_first,
    parse_clock_ref,
    plain_clock_from_samples,
    reference_clock,
    with_coverage,
)
from nsightwrap.analysis.gap import Timeline, nsys_timelines
from nsightwrap.analysis.gap.limits import DeviceLimits, device_limits
from nsightwrap.analysis.gpuclock import MAX_SLOWDOWN, MIN_SAMPLES, kernel_clocks, stamps_clock, with_slowdown
from nsightwrap.analysis.iterations import NsysIterations, nsys_iterations, nsys_stats_all
from nsightwrap.analysis.merged import join_shards, shard_entries, shard_run_dir
from nsightwrap.analysis.model import (
    BenchmarkResult,
    ClockSample,
    Environment,
    MeasuredClock,
    NcuStats,
    NsysStats,
    RunResult,
    Settings,
    TimerStats,
)
from nsightwrap.analysis.ncucount import check_whole, pass_record, shortfall
from nsightwrap.analysis.ncusample import (
    COVER_COLUMN,
    NO_NCU_LEAD,
    OTHER_CONFIG_HEAD,
    Sampled,
    coverage_context,
    kernel_cap,
    ncu_stats_sampled,
)
from nsightwrap.analysis.plainclock import plain_pass_clocks, refused, same_pace
from nsightwrap.analysis.power import attach_power
from nsightwrap.analysis.reconcile import BenchmarkSpec, other_clock, reconcile_all, specs_from_nvtx
from nsightwrap.analysis.roofline import attach_rooflines, find_roofs
from nsightwrap.analysis.whatif import WhatIf
from nsightwrap.analysis.window_facts import WindowFacts, window_facts
from nsightwrap.core.contract import (
    ENV_NSYS_ITERATIONS,
    ITER_PREFIX,
    NVTX_DOMAIN,
    PASS_NCU,
    PASS_NSYS,
    PASS_PLAIN,
    SIDECAR_GLOB,
    uuid_key,
)
from nsightwrap.core.errors import NativeReaderCrashed, NsightwrapError, ReportParseError, UsageError
from nsightwrap.core.jsonfile import finite_number
from nsightwrap.core.rundir import (
    CLOCK_SWEEP_PASS,
    COVER_PASS,
    DURATION_PASS,
    RunLayout,
    is_merged,
    read_manifest,
    read_merged,
)
from nsightwrap.device.store import read_device_file
from nsightwrap.parsers.ncu import read_ncu_rep
from nsightwrap.parsers.sidecar import read_sidecar_doc
from nsightwrap.timer.stats import summarize

#: Reads a ``.ncu-rep`` (or ``.ncu-rep.gz``) into ncu's kernel frame, as ``parsers.ncu.read_ncu_rep``.
NcuRepReader = Callable[[Path], pd.DataFrame]
#: Reads an nsys SQLite export into its report, as ``parsers.nsys.read_nsys``.
NsysReader = Callable[[Path], Any]


def analyze(
    run_dir: Path,
    *,
    tolerance: float = 0.1,
    clock_ref: str = "plain",
    device_file: Path | None = None,
    read_ncu: NcuRepReader = read_ncu_rep,
    manifest: Mapping[str, Any] | None = None,
    what_if: WhatIf | None = None,
    read_nsys: NsysReader | None = None,
    on_sampled: Callable[[Sequence[BenchmarkSpec], Sampled], None] | None = None,
) -> RunResult:
    """Load ``run_dir`` through the parsers, normalize to one SM clock and reconcile; place every
    benchmark on the GPU's roofline (``device_file``, else the run's or the cached one, analysis/roofline.py).
    ``read_ncu`` reads the ncu passes' reports (see the module docs); ``manifest``: the run's manifest
    as it stands, for a run still running (its file comes last); ``what_if``: the same run with ncu's
    durations or guessed elasticities moved (analysis/basepass.py asks it before the clock sweep);
    ``read_nsys``: the nsys SQLite reader (``parsers.nsys.read_nsys``; the checks pass one that reads
    each export once); ``on_sampled``: handed the benchmarks and ncu's coverage of them
    (``ncusample.Sampled``), for ``coverage_gaps``."""
    if not tolerance > 0:
        raise UsageError(f"--tolerance {tolerance} must be above 0", hint="e.g. --tolerance 10 for 10%")
    ref_choice = parse_clock_ref(clock_ref)
    run_dir = Path(run_dir)
    if is_merged(run_dir):  # shards/<i>/, each analysed on its own, then joined (analysis/merged.py)
        doc = read_merged(run_dir) or {}
        analysed: dict[int, RunResult | NsightwrapError] = {}
        for e in shard_entries(doc):
            shard = shard_run_dir(run_dir, e)
            if shard is None:
                continue
            try:
                analysed[int(e["index"])] = analyze(shard, tolerance=tolerance, clock_ref=clock_ref, read_ncu=read_ncu,
                                                    device_file=device_file)
            except NsightwrapError as exc:
                analysed[int(e["index"])] = exc
        return join_shards(run_dir, doc, analysed, tolerance=tolerance, clock_ref=clock_ref)
    manifest = read_manifest(run_dir) if manifest is None else manifest
    layout = RunLayout(run_dir)
    notes: list[str] = []

    crashes: list[str] = []
    ncu = _read_ncu(layout, notes, crashes, read_ncu, manifest)
    if ncu is not None:
        ncu = _with_clock_sweep(ncu, layout, manifest, notes, crashes, read_ncu)
        if what_if is not None:
            ncu = what_if.apply(ncu)
    sidecars = [(p, read_sidecar_doc(p)) for p in sorted(layout.pass_dir("plain").glob(SIDECAR_GLOB))]
    specs = [_spec(b, f"{p}: benchmark {i}") for p, d in sidecars for i, b in enumerate(d["benchmarks"])]
    specs = _merge_specs(specs)
    # The timed benchmarks' iteration loops are known before the export is read: it reads at most
    # the cap's iterations of each (parsers.nsys.IterationCap).
    nsys = _read_nsys(layout, notes, read_nsys, {f"{s.nvtx_path}/{s.iter_prefix}" for s in specs})
    env = environment(
        manifest, layout, next((str(d["torch_version"]) for _, d in sidecars if d.get("torch_version")), None)
    )
    samples = _one_gpu(_read_samples(layout, notes), [d.get("device") for _, d in sidecars], notes)

    timer_found = bool(specs)
    if not specs:
        specs = _specs_from_profiles(ncu, nsys)
        notes.append(
            "no in-process timings were found (no plain/timer-*.json): benchmarks come from the "
            "target's own NVTX ranges and only the profilers' numbers are compared"
        )
    # Unmodified scripts (analysis/captured.py): method facts of captured timings, a benchmark
    # per NVTX range of the script's own, what the capture layer could not capture.
    specs = with_event_method(with_window_clocks(specs, sidecars, samples, _plain_start(manifest)), nsys)
    specs, ncu, nsys = range_benchmarks(specs, ncu, nsys, notes)
    notes += capture_notes(sidecars)

    found = (
        nsys_iterations(nsys.ops, nsys.ranges, nsys.attribution, specs, getattr(nsys, "event_calls", None),
                        getattr(nsys, "lead_in_ranges", ()))  # fmt: skip
        if nsys is not None
        else None
    )
    nsys_timers = _nsys_pass_timings(layout)
    plain_hz = plain_clock_from_samples(samples) if samples is not None else None
    plain_capture = _read_plain_clock(layout, notes, read_nsys)
    # The windows lie in the clock run's sidecars (plain-clock/), which must have run each loop at
    # the plain pass's pace for its clock to count; a run whose plain pass itself was sampled has
    # them in its own sidecars.
    paths = [s.nvtx_path for s in specs]
    pace_notes: list[tuple[str, ...]] = [()] * len(specs)
    # Clocks measured for a loop that its verdict may not use: (Hz, where, why not), by NVTX path.
    others: dict[str, list[tuple[float, str, str]]] = {}
    if layout.clock_windows_dir == layout.pass_dir(PASS_PLAIN):
        in_plain = plain_pass_clocks([(s.nvtx_path, s.iter_prefix) for s in specs], sidecars, plain_capture)
    else:
        clock_docs = _sidecar_docs(layout.clock_windows_dir)
        sampled = plain_pass_clocks([(s.nvtx_path, s.iter_prefix) for s in specs], clock_docs, plain_capture)
        plain_ns = [s.timer.median_ns if s.timer else None for s in specs]
        clock_run_ns = _pass_timings(clock_docs)
        in_plain, pace_notes = same_pace(sampled, paths, plain_ns, clock_run_ns)
        others = {path: [c] for path, c in refused(sampled, in_plain, paths, plain_ns, clock_run_ns).items()}
    clocks, refs = benchmark_clocks(specs, found, nsys, nsys_timers, ref_choice, env, manifest, plain_hz, in_plain)
    for path, c, (ref_hz, _) in zip(paths, clocks, refs, strict=True):
        if c is not None and c.slowdown is not None and ref_hz != c.mean_hz:
            others.setdefault(path, []).append((c.mean_hz, c.source, f"nsys slowed the loop {c.slowdown:.2f}x"))
    setup = nsys.setup_calls if nsys is not None else None
    limits = _device_limits(run_dir, env, sidecars, device_file)
    # Which config of each triton.autotune kernel the ncu and nsys passes ran (analysis/autotuned.py).
    tuned = provenance(run_dir, specs, ncu, found)
    notes += tuned.run_notes if tuned is not None else ()
    results = _reconcile_all(specs, refs, ncu, found, nsys_timers, tolerance=tolerance,
                             ncu_cache_control=env.ncu_cache_control, manifest=manifest, setup_calls=setup,
                             on_sampled=on_sampled, limits=limits, autotune=tuned)  # fmt: skip
    read_notes = _iterations_read_notes(specs, getattr(nsys, "iterations_read", None) or {})
    results = [replace(r, clock=c, notes=(*_clock_note(r, c), *pn, *r.notes, *rn))
               for r, c, pn, rn in zip(results, clocks, pace_notes, read_notes, strict=True)]  # fmt: skip
    results = finish_results(results, specs, sidecars, tolerance, ncu, env.ncu_cache_control)
    results = [_at_other_clocks(r, others.get(r.nvtx_path, ()), tolerance) for r in results]
    return attach_power(attach_rooflines(RunResult(
        run_dir=str(run_dir),
        environment=env,
        settings=Settings(tolerance=tolerance, clock_ref=clock_ref),
        benchmarks=tuple(results),
        timer_found=timer_found,
        clock_trace=_trace(samples),
        notes=tuple(notes),
        reader_crashes=tuple(crashes),
    ), ncu, sidecars, device_file), sidecars, samples)  # fmt: skip


def coverage_gaps(
    run_dir: Path, manifest: Mapping[str, Any], read_ncu: NcuRepReader = read_ncu_rep,
    read_nsys: NsysReader | None = None,
) -> tuple[list[tuple[str, str]], str]:  # fmt: skip
    """The benchmarks (range path, iteration prefix) whose ncu figures the capped passes left
    missing or borrowed from other launches and a coverage pass can give them (``Sampled.coverable``),
    and why, in one line (``nsightwrap profile`` asks once the ncu passes have run)."""
    seen: list[tuple[Sequence[BenchmarkSpec], Sampled]] = []
    analyze(run_dir, manifest=manifest, read_ncu=read_ncu, read_nsys=read_nsys,
            on_sampled=lambda specs, sampled: seen.append((specs, sampled)))  # fmt: skip
    if not seen:
        return [], "no ncu and nsys figures to check the coverage of"
    specs, sampled = seen[-1]
    gaps = [(i, s) for i, (s, c) in enumerate(zip(specs, sampled.coverable, strict=True)) if c]
    if not gaps:
        return [], f"every benchmark nsys saw has ncu instances of its own kernels ({len(specs)} checked)"
    i, first = gaps[0]
    why = sampled.no_ncu[i] or next(
        (n for n in sampled.notes[i] if n.startswith(("no ncu figure for", "ncu profiled"))), "launches without ncu instances of their own"
    )
    return [(s.nvtx_path, s.iter_prefix) for _, s in gaps], (
        f"{len(gaps)} of {len(specs)} benchmark(s) without ncu figures of their own; {first.name}: {why}"
    )


def benchmark_clocks(
    specs: Sequence[BenchmarkSpec],
    found: NsysIterations | None,
    nsys: Any,
    nsys_timers: Mapping[str, float],
    choice: str | float,
    env: Environment,
    manifest: Mapping[str, Any],
    plain_hz: float | None = None,
    in_plain: Sequence[MeasuredClock | None] | None = None,
) -> tuple[list[MeasuredClock | None], list[tuple[float | None, str]]]:
    """Every benchmark's measured SM clock and its reference clock (what ncu is carried to).

    By default (``--clock-ref plain``) the reference is the clock measured on the GPU: nsightwrap.bench's
    own stamps; else the plain pass's own GPC samples inside the timing's windows (``in_plain``,
    analysis/plainclock.py); else the nsys pass's GPC samples inside the benchmark's own kernels,
    where the nsys pass ran the loop at the plain pass's pace. A run whose nsys pass sampled no
    GPU metrics (made before the nsys pass did, or with ``--no-gpu-metrics``) keeps the clock
    the capture layer or nvidia-smi logged (``plain_hz``), named as read from the host; a run
    with GPU metrics never takes a host-read clock: a benchmark without a measured one is
    compared at ncu's own clock, with the reason."""
    host_only = getattr(nsys, "gpu_clock", None) is None or nsys.gpu_clock.empty
    gpu = getattr(nsys, "gpu_clock", None)
    measured = kernel_clocks(found, gpu, len(specs)) if found is not None else [None] * len(specs)
    plain_ns = [s.timer.median_ns if s.timer else None for s in specs]
    measured = with_slowdown(measured, plain_ns, [nsys_timers.get(s.nvtx_path) for s in specs])
    clocks: list[MeasuredClock | None] = []
    refs: list[tuple[float | None, str]] = []
    plain_measured = list(in_plain) if in_plain is not None else [None] * len(specs)
    for spec, m, pm in zip(specs, measured, plain_measured, strict=True):
        timer = spec.timer
        stamps = stamps_clock(timer.sm_clock_hz, timer.sample_clock_hz) if timer and timer.clock_source == "stamps" else None
        slowed = m is not None and m.slowdown is not None and m.slowdown > MAX_SLOWDOWN
        clock = stamps if stamps is not None else (pm if pm is not None else (None if slowed else m))
        if isinstance(choice, float) or choice in ("boost", "base"):
            refs.append(reference_clock(choice, plain_hz=None, boost_hz=env.sm_clock_max_hz, base_hz=env.sm_clock_base_hz))
        elif clock is not None:
            refs.append((clock.mean_hz, clock.source))
        elif host_only and ((timer and timer.sm_clock_hz) or plain_hz):
            hz = (timer.sm_clock_hz if timer else None) or plain_hz
            src = f"plain ({timer.clock_source})" if timer and timer.sm_clock_hz else "plain (nvidia-smi samples)"
            refs.append((hz, src))
        else:
            refs.append((None, "ncu's own clock: " + _no_clock_why(nsys, found, manifest, m)))
        clocks.append(clock if clock is not None else (m if slowed else None))
    return clocks, refs


def _at_other_clocks(r: BenchmarkResult, others: Sequence[tuple[float, str, str]], tolerance: float) -> BenchmarkResult:
    """``r`` marked ``clock unresolved`` where another clock measured for its loop puts the
    timing on the other side of the tolerance (``reconcile.other_clock``)."""
    got = other_clock(r, others, tolerance) if others else None
    if got is None:
        return r
    ratio, note = got
    return replace(r, clock_unresolved_ratio=ratio, notes=(*r.notes, note))


def _clock_note(r: BenchmarkResult, c: MeasuredClock | None) -> tuple[str, ...]:
    """One line: the clock the benchmark's kernels ran at, measured on the GPU, beside ncu's."""
    if c is None or r.ref_clock_hz != c.mean_hz:
        return ()
    ncu = f"; ncu ran them at {r.ncu.sm_clock_hz / 1e9:.3f} GHz" if r.ncu is not None and r.ncu.sm_clock_hz else ""
    return (
        f"SM clock measured on the GPU ({c.source}): {c.mean_hz / 1e9:.3f} GHz, {c.min_hz / 1e9:.3f}-"
        f"{c.max_hz / 1e9:.3f} over {c.windows} window(s), {c.samples} samples{ncu}",
    )


def _no_clock_why(nsys: Any, found: NsysIterations | None, manifest: Mapping[str, Any],
                  m: MeasuredClock | None) -> str:  # fmt: skip
    """One line: why a benchmark has no GPU-measured clock, and what gives it one."""
    if m is not None and m.slowdown is not None:
        return (
            f"nsys slowed this loop {m.slowdown:.2f}x, so the GPU ran idler there than in the plain pass "
            f"and its clock ({m.mean_hz / 1e9:.3f} GHz) is not the plain pass's"
        )
    if nsys is None:
        return "no nsys pass (run it for the GPU-measured clock)"
    gpu = getattr(nsys, "gpu_clock", None)
    if gpu is None or gpu.empty:
        flag = _dig(manifest, "settings", "gpu_metrics")
        if flag is False:
            return "the nsys pass ran with --no-gpu-metrics"
        return (
            "the nsys pass sampled no GPU metrics (an nsys without --gpu-metrics-devices, or no access to the "
            "GPU's counters: see nsightwrap doctor)"
        )
    return f"fewer than {MIN_SAMPLES} GPU-metrics samples overlap the benchmark's kernels"


def _reconcile_all(
    specs: Sequence[BenchmarkSpec],
    refs: Sequence[tuple[float | None, str]],
    ncu: pd.DataFrame | None,
    found: NsysIterations | None,
    nsys_timers: Mapping[str, float],
    *,
    tolerance: float,
    ncu_cache_control: str,
    manifest: Mapping[str, Any] | None = None,
    setup_calls: pd.DataFrame | None = None,
    on_sampled: Callable[[Sequence[BenchmarkSpec], Sampled], None] | None = None,
    limits: DeviceLimits | None = None,
    autotune: Provenance | None = None,
) -> list[BenchmarkResult]:
    """Every benchmark's ncu and nsys figures at once (iterations.py: each path parsed once),
    the nsys timelines of the gap's decomposition, then the reconciliation. A run whose ncu
    passes were capped per launch configuration gets the launches ncu left out carried by the
    median of the same kernel (analysis/ncusample.py), with a note."""
    n_list: list[NcuStats | None] = [None] * len(specs)
    sampled_notes: Sequence[tuple[str, ...]] = [()] * len(specs)
    if ncu is not None:
        m = manifest or {}
        iters = _dig(m, "settings", "ncu_iters")
        sampled = ncu_stats_sampled(ncu, specs, [hz for hz, _ in refs], found, kernel_cap(m, _capped_pass(ncu)),
                                    int(iters) if isinstance(iters, int) and iters > 0 else None,
                                    ncu_cache_control=ncu_cache_control, **coverage_context(m))  # fmt: skip
        n_list, sampled_notes = list(sampled.stats), sampled.notes
        if on_sampled is not None:
            on_sampled(specs, sampled)
        # A benchmark without ncu figures of its own (a graph whose node kernels ncu's cap never
        # reached, a figure borrowed from another size, another config of a kernel, nothing
        # profiled) has none to judge it by: "no ncu", the note says why and what gets one, rather
        # than a verdict that blames the user's timing or a gap against other work.
        n_list = [None if why else st for st, why in zip(n_list, sampled.no_ncu, strict=True)]
        if autotune is not None:
            n_list, sampled_notes = _autotuned_ncu(autotune, sampled, n_list)
    s_list: list[NsysStats | None] = [None] * len(specs)
    timelines: list[Timeline | None] = [None] * len(specs)
    facts: list[WindowFacts | None] = [None] * len(specs)
    if found is not None:
        s_list = list(nsys_stats_all(found, len(specs)))
        timelines = nsys_timelines(found, specs)
        # First uses and graph replays inside each benchmark's windows (the warm_up part, the
        # graph-aware fixes).
        facts = list(window_facts(found, len(specs), setup_calls))
        for b, why in enumerate(autotune.no_nsys if autotune is not None else ()):
            if why is not None:  # the nsys pass ran another config of an autotuned kernel: not its figure
                s_list[b], timelines[b], facts[b] = None, None, None
    results = reconcile_all(
        specs, n_list, s_list, timelines, refs, tolerance=tolerance, ncu_cache_control=ncu_cache_control,
        nsys_timers=nsys_timers, windows=facts, limits=limits,
    )  # fmt: skip
    if autotune is not None:
        sampled_notes = [
            (*mine, *(w for w in (why,) if w is not None), *more)
            for mine, why, more in zip(sampled_notes, autotune.no_nsys, autotune.notes, strict=True)
        ]
    # A benchmark's reason for having no ncu figure comes first: it is what its verdict rests on.
    return [
        replace(r, notes=(*extra, *r.notes) if extra[:1] and extra[0].startswith(NO_NCU_LEAD) else (*r.notes, *extra))
        if extra else r
        for r, extra in zip(results, sampled_notes, strict=True)
    ]  # fmt: skip


def _autotuned_ncu(
    autotune: Provenance, sampled: Sampled, n_list: list[NcuStats | None]
) -> tuple[list[NcuStats | None], list[tuple[str, ...]]]:
    """ncu figures and notes with the autotune files' evidence: a benchmark whose ncu pass ran another
    config of an autotuned kernel than the plain pass timed has none (that reason first); one whose
    launch shapes ncu and nsys disagree on while its ncu pass ran the plain pass's configs keeps its
    ncu figure (nsys ran the other config, and ``autotune.no_nsys`` says so)."""
    stats, notes = list(n_list), [tuple(x) for x in sampled.notes]
    for b, (why, pinned) in enumerate(zip(autotune.no_ncu, autotune.ncu_pinned, strict=True)):
        if why is not None:
            stats[b], notes[b] = None, (why,)
        elif pinned and autotune.no_nsys[b] is not None and (sampled.no_ncu[b] or "").startswith(OTHER_CONFIG_HEAD):
            stats[b], notes[b] = sampled.stats[b], ()
    return stats, notes


def _device_limits(
    run_dir: Path, env: Environment, sidecars: Sequence[tuple[Any, Mapping[str, Any]]], device_file: Path | None
) -> DeviceLimits:
    """The L2 size and DRAM bandwidth the gap's parts are bounded by (analysis/gap/limits.py): the
    device file the roofline uses (``device_file``, the run's, the cached one), else the datasheet."""
    name, uuid = env.gpu_name, None
    for _, doc in sidecars:
        d = doc.get("device")
        if isinstance(d, Mapping):
            name, uuid = name or d.get("name"), uuid or d.get("uuid")
    try:
        roofs = find_roofs(run_dir, str(name) if name else None, str(uuid) if uuid else None, device_file)
    except NsightwrapError:
        return device_limits(None, sidecars)  # the roofline reports the bad device file
    l2 = lat = None
    if roofs.source == "measured":
        try:
            dev = read_device_file(Path(roofs.where))
            l2, hbm = dev.gpu.l2_bytes, dev.get("latency", "hbm")
            lat = hbm.value if hbm is not None and hbm.measured else None
        except NsightwrapError:
            l2 = None
    return device_limits(roofs, sidecars, float(l2) if l2 else None, float(lat) if lat else None)


def _plain_start(manifest: Mapping[str, Any]) -> float | None:
    """Epoch seconds the plain pass's command started (places the clock samples in time)."""
    for p in manifest.get("passes") or ():
        if isinstance(p, Mapping) and p.get("name") == "plain":
            for c in p.get("commands") or ():
                if isinstance(c, Mapping) and isinstance(c.get("start"), (int, float)):
                    return float(c["start"])
    return None


def _nsys_pass_timings(layout: RunLayout) -> dict[str, float]:
    """The nsys pass's own timings (``nsys/timer-*.json``, the sidecar format), median per call by
    benchmark range: the decomposition measures nsys's slow-down of the loop with them (analysis/gap/slowdown.py)."""
    return _pass_timings(_sidecar_docs(layout.pass_dir(PASS_NSYS)))


def _sidecar_docs(folder: Path) -> list[tuple[Path, Mapping[str, Any]]]:
    """The sidecars of a folder other than plain/, each read or left out (a bad one costs only
    what it would have given)."""
    out: list[tuple[Path, Mapping[str, Any]]] = []
    for path in sorted(folder.glob(SIDECAR_GLOB)):
        try:
            out.append((path, read_sidecar_doc(path)))
        except ReportParseError:
            continue
    return out


def _pass_timings(docs: Sequence[tuple[Path, Mapping[str, Any]]]) -> dict[str, float]:
    """A pass's own timings (its sidecars, as ``_sidecar_docs`` read them), median per call by
    benchmark range."""
    out: dict[str, float] = {}
    for path, doc in docs:
        for i, entry in enumerate(doc.get("benchmarks") or ()):
            try:
                spec = _spec(entry, f"{path}: benchmark {i}")
            except ReportParseError:
                continue
            if spec.timer is not None:
                out.setdefault(spec.nvtx_path, spec.timer.median_ns)
    return out


# ----------------------------------------------------------------------------- sidecars


def _spec(entry: Any, where: str) -> BenchmarkSpec:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        raise ReportParseError(f"{where} is missing field 'name'")
    name = entry["name"]
    raw = entry.get("samples_ns") or []
    # Each sample's type checked once per type (a sidecar holds a few types in up to millions of samples).
    if not isinstance(raw, list) or not all(issubclass(t, (int, float)) for t in set(map(type, raw))):
        raise ReportParseError(f"{where} ({name!r}): field 'samples_ns' must be a list of numbers")
    nvtx_path = str(entry.get("nvtx_path") or f"{NVTX_DOMAIN}:{name}")
    iter_prefix = str(entry.get("iter_prefix") or ITER_PREFIX)
    params = dict(entry.get("params") or {})
    source = dict(entry["source"]) if isinstance(entry.get("source"), Mapping) else None
    if not raw or entry.get("timed") is False:
        # Written under a profiler pass: it names the benchmark but timed nothing.
        return BenchmarkSpec(name=name, nvtx_path=nvtx_path, params=params, iter_prefix=iter_prefix, source=source)
    samples = tuple(map(float, raw))
    per_clock = entry.get("sample_clock_hz")
    timer = _timer_stats(
        samples,
        _clocks(per_clock) if isinstance(per_clock, list) else None,
        sm_clock_hz=finite_number(entry.get("sm_clock_hz")),
        clock_source=str(entry.get("clock_source") or "none"),
        method=dict(entry.get("method") or {}),
    )
    timer = replace(timer, **_timer_extras(entry))
    return BenchmarkSpec(
        name=name, nvtx_path=nvtx_path, params=params, iter_prefix=iter_prefix, timer=timer, source=source
    )


def _clocks(per_clock: list[Any]) -> tuple[float, ...]:
    """A sidecar's per-sample clocks, NaN where a sample has none (None)."""
    if None not in per_clock:
        return tuple(map(float, per_clock))
    return tuple(float(v) if v is not None else math.nan for v in per_clock)


def _timer_extras(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The sidecar-2 timer fields (CUPTI kernel time, throttled samples, reason codes); a
    version-1 entry has none of them and gets the defaults."""
    method: Mapping[str, Any] = entry["method"] if isinstance(entry.get("method"), Mapping) else {}
    nums = [v for v in entry.get("kernel_samples_ns") or () if finite_number(v) is not None]
    return {
        "kernel_ns": finite_number(entry.get("kernel_ns")),
        "kernel_samples_ns": tuple(float(v) for v in nums),
        # Version 1 counted NVML-flagged samples there (kept in samples_ns): only version 2, which
        # writes rejected_ns, means samples left out.
        "throttled": int(entry.get("throttled") or 0) if "rejected_ns" in entry else 0,
        "rejected_ns": tuple(float(v) for v in entry.get("rejected_ns") or () if finite_number(v) is not None),
        "rejected_clock_hz": tuple(finite_number(v) for v in entry.get("rejected_clock_hz") or ()),
        "throttle_threshold_hz": finite_number(method.get("throttle_threshold_hz")),
        "settling": int(method.get("settling_samples") or 0),
        "settled_clock_hz": finite_number(method.get("settled_clock_hz")),
        "sample_clock_source": str(method.get("sample_clock_source") or "none"),
        "reasons": tuple(str(r) for r in entry.get("reasons") or ()),
    }


def _timer_stats(
    samples: tuple[float, ...],
    sample_clock_hz: tuple[float, ...] | None,
    *,
    sm_clock_hz: float | None,
    clock_source: str,
    method: dict[str, Any],
) -> TimerStats:
    # The same statistics as the timer's own (nsightwrap.timer.stats), so report and timer agree.
    st = summarize(samples)
    return TimerStats(
        samples_ns=samples, median_ns=st.median, min_ns=st.min, mean_ns=st.mean, stdev_ns=st.stdev,
        iqr_ns=st.iqr, n=st.n, sm_clock_hz=sm_clock_hz, clock_source=clock_source,
        sample_clock_hz=sample_clock_hz, method=method,
    )  # fmt: skip


def _merge_specs(specs: Sequence[BenchmarkSpec]) -> list[BenchmarkSpec]:
    # Several processes may time the same benchmark: their samples are pooled, as compare does;
    # the clock and method are the first process's.
    seen: dict[str, BenchmarkSpec] = {}
    for s in specs:
        have = seen.get(s.nvtx_path)
        if have is None or have.timer is None:
            seen[s.nvtx_path] = s if have is None or s.timer is not None else have
        elif s.timer is not None:
            a, b = have.timer, s.timer
            clocks = a.sample_clock_hz + b.sample_clock_hz if a.sample_clock_hz and b.sample_clock_hz else None
            pooled = _timer_stats(
                a.samples_ns + b.samples_ns, clocks,
                sm_clock_hz=a.sm_clock_hz, clock_source=a.clock_source, method=dict(a.method),
            )  # fmt: skip
            pooled = replace(
                pooled, kernel_ns=a.kernel_ns, kernel_samples_ns=a.kernel_samples_ns + b.kernel_samples_ns,
                throttled=a.throttled + b.throttled, rejected_ns=a.rejected_ns + b.rejected_ns,
                rejected_clock_hz=a.rejected_clock_hz + b.rejected_clock_hz,
                throttle_threshold_hz=a.throttle_threshold_hz, sample_clock_source=a.sample_clock_source,
                settling=a.settling + b.settling, settled_clock_hz=a.settled_clock_hz,
                reasons=tuple(dict.fromkeys(a.reasons + b.reasons)),
            )  # fmt: skip
            seen[s.nvtx_path] = replace(have, timer=pooled)
    return list(seen.values())


# ----------------------------------------------------------------------------- passes


def _read_ncu(
    layout: RunLayout,
    notes: list[str],
    crashes: list[str] | None = None,
    read: NcuRepReader = read_ncu_rep,
    manifest: Mapping[str, Any] | None = None,
) -> pd.DataFrame | None:
    if not layout.ncu_report.is_file():
        notes.append("no ncu report (ncu/report.ncu-rep): the ncu pass did not run or failed")
        return None
    try:
        kernels = read(layout.ncu_report)
    except NativeReaderCrashed as exc:  # the reader ran in a child, which crashed: no ncu numbers
        notes.append(f"ncu numbers missing: {exc}")
        if crashes is not None:
            crashes.append(str(exc))
        return None
    # A report cut at a block boundary reads as a whole one: only the pass's count tells (exit 2).
    check_whole(layout.ncu_report, len(kernels), pass_record(manifest or {}, PASS_NCU), layout.root)
    return kernels


def _capped_pass(ncu: pd.DataFrame) -> str:
    """The pass whose cap counted the ncu frame's instances: the duration pass where its kernels
    lead (``clocks.durations_first`` adds ``counters_source``), else the ncu pass."""
    return DURATION_PASS if "counters_source" in ncu.columns else PASS_NCU


def _sweep_record(manifest: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    return pass_record(manifest, name)


def _sweep_report(
    layout: RunLayout, name: str, what: str, then: str, manifest: Mapping[str, Any], notes: list[str],
    crashes: list[str], read: NcuRepReader, report: Path | None = None,
) -> tuple[pd.DataFrame | None, bool]:
    """``(kernels, told)``: the report of clock-sweep pass ``name``, or None (``told``: a note said
    why and what follows, ``then``). The sweep only refines the ncu pass's figures, so a report that
    is damaged or holds fewer kernels than its pass profiled is left out with a note, never read in part."""
    report = layout.sweep_report(name) if report is None else report
    if not report.is_file():
        return None, False
    try:
        kernels = read(report)
    except NativeReaderCrashed as exc:
        crashes.append(str(exc))
        notes.append(f"{what} report unreadable ({exc})")
        return None, False
    except ReportParseError as exc:
        notes.append(f"{what} report not used: {exc.message}; {then}")
        return None, True
    why = shortfall(report, len(kernels), _sweep_record(manifest, name), layout.root)
    if why is not None:
        notes.append(f"{what} report not used: {why}; {then}")
        return None, True
    return kernels, False


def _missing_pass(rec: Mapping[str, Any] | None, what: str, then: str) -> str:
    if rec is None or rec.get("status") == "skipped":
        return f"no {what} ({(rec or {}).get('message') or 'not run'}): {then}"
    return f"the {what} {rec.get('status')}: {rec.get('message') or 'no report'}; {then}"


def _with_clock_sweep(
    ncu: pd.DataFrame,
    layout: RunLayout,
    manifest: Mapping[str, Any],
    notes: list[str],
    crashes: list[str],
    read: NcuRepReader = read_ncu_rep,
) -> pd.DataFrame:
    """The ncu kernels with the durations of the duration pass (``clocks.attach_durations``), the
    base-clock pass's twins and measured elasticities (``clocks.attach_base``), and notes saying
    where durations come from the ncu pass's replay or elasticities are only a guess."""
    counters = (
        "ncu durations are the ncu pass's, whose counters take 17 replay passes (12 with "
        "--no-roofline-counters) and can read kernels a few % long"
    )
    light, told = _sweep_report(layout, DURATION_PASS, "duration-pass", counters, manifest, notes, crashes, read)
    first = durations_first(ncu, light)
    if first is not None:
        out, carried = first
        taken = len(out)
        if carried:
            notes.append(
                f"ncu counters (throughputs, bytes) of {carried} of {taken} kernels are those of another ncu "
                "instance of the same kernel at the same grid and block (--ncu-counters-cap: the ncu pass "
                "profiled fewer instances than the duration pass); their durations are their own"
            )
        bare = int(out["counters_source"].isna().sum())
        if bare:
            notes.append(
                f"{bare} of {taken} ncu kernels have no counters (throughputs, bytes): the ncu pass profiled no "
                "instance of their kernel at their grid and block; their durations and clocks are the duration "
                "pass's own, their clock sensitivity and roofline place are not measured"
            )
    else:
        out, taken = attach_durations(ncu, light)
    cover, _ = _sweep_report(layout, COVER_PASS, "coverage-pass", "its benchmarks keep what the capped passes gave",
                             manifest, notes, crashes, read, report=layout.ncu_cover_report)
    asked = _dig(manifest, "plan", "coverage", "ranges")
    out, replaced = with_coverage(out, cover, COVER_COLUMN, [str(r) for r in asked] if isinstance(asked, list) else [])
    if replaced:
        notes.append(
            f"ncu figures of {replaced} benchmark(s) from the coverage pass ({COVER_PASS}: their own iteration ranges, "
            "no cap; duration and SM clock, counters from the ncu pass's instance of the same kernel and shape): "
            "the capped passes had left them without ncu figures of their own"
        )
    if light is None:
        if not told:
            notes.append(_missing_pass(_sweep_record(manifest, DURATION_PASS), "duration pass", counters))
    elif taken < len(out):
        notes.append(
            f"ncu durations from the duration pass for {taken} of {len(out)} ncu kernels; the others keep the "
            "ncu pass's (no twin in the duration pass)"
        )
    if taken:
        both = out[out["duration_source"] == DURATION_SOURCES[0]]
        ratio = (both["counters_duration_ns"] / both["duration_ns"]).median()
        if math.isfinite(ratio):
            notes.append(
                f"ncu durations from the duration pass (duration and SM clock only, one replay pass); the ncu "
                f"pass with its counters read them {100 * (ratio - 1):+.1f}% (median over {taken} kernels)"
            )
    guess = "clock elasticities are a guess from ncu's throughput counters (1 if SM-bound, 0 if DRAM-bound)"
    base, told = _sweep_report(layout, CLOCK_SWEEP_PASS, "clock-sweep", guess, manifest, notes, crashes, read)
    out, measured = attach_base(out, base)
    if base is None:
        if not told:
            notes.append(_missing_pass(_sweep_record(manifest, CLOCK_SWEEP_PASS), "clock-sweep pass", guess))
    elif measured == 0:
        clocks = pd.to_numeric(base["sm_clock_hz"], errors="coerce")
        notes.append(
            f"the clock-sweep pass measured no kernel at a clock {MIN_CLOCK_STEP:.0%} or more apart "
            f"(base pass {clocks.min() / 1e9:.2f}-{clocks.max() / 1e9:.2f} GHz): ncu could not lock the clock "
            f"lower; {guess}"
        )
    elif measured < len(out):
        notes.append(
            f"clock elasticity measured for {measured} of {len(out)} ncu kernels; the others keep the "
            "heuristic (no twin in the base-clock pass, or their two clocks were too close)"
        )
    return out


def _read_plain_clock(layout: RunLayout, notes: list[str], read: NsysReader | None = None) -> Any:
    """The plain pass's clock capture (nsys GPU metrics and NVTX, no CUDA trace), or None."""
    path = layout.plain_clock_sqlite
    if not path.is_file():
        if layout.plain_clock_rep.is_file():
            notes.append("plain/clock.nsys-rep has no SQLite export: the plain pass's clocks are not measured "
                         "(run nsys export --type sqlite on it)")  # fmt: skip
        return None
    try:
        if read is not None:
            return read(path)
        from nsightwrap.parsers.nsys import read_nsys

        return read_nsys(path, detail=False)
    except NsightwrapError as exc:
        notes.append(f"the plain pass's clock capture could not be read ({exc.message}): its clocks are not measured")
        return None


#: At most this many iterations of each benchmark's loop are read from the nsys export
#: (``NSIGHTWRAP_NSYS_ITERATIONS`` sets it; 0 reads every one), in evenly spaced runs over the loop
#: (``parsers.nsys.IterationCap``). A do_bench call of a fast kernel runs thousands.
NSYS_ITERATIONS_DEFAULT = 256
NSYS_ITERATIONS_ENV = ENV_NSYS_ITERATIONS


def nsys_iteration_cap() -> int | None:
    """The cap on nsys iterations read per benchmark (None: every one), from the environment."""
    raw = os.environ.get(NSYS_ITERATIONS_ENV, "").strip()
    if not raw:
        return NSYS_ITERATIONS_DEFAULT
    try:
        cap = int(raw)
    except ValueError:
        cap = -1
    if cap == 0:
        return None
    if cap < 2:
        raise UsageError(
            f"{NSYS_ITERATIONS_ENV}={raw} is not a number of iterations",
            hint=f"set it to 2 or more, or 0 to read every iteration (default {NSYS_ITERATIONS_DEFAULT})",
        )
    return cap


def _iterations_read_notes(
    specs: Sequence[BenchmarkSpec], read: Mapping[str, tuple[int, int, int]]
) -> list[tuple[str, ...]]:
    """Per benchmark, the note saying how many of its nsys iterations were analysed, where capped."""
    out: list[tuple[str, ...]] = []
    for s in specs:
        got = read.get(f"{s.nvtx_path}/{s.iter_prefix}")
        if not got:
            out.append(())
            continue
        analysed, total, runs = got
        how = "evenly spaced" if runs == analysed else f"{runs} evenly spaced runs of {analysed // runs}"
        out.append((f"nsys iterations analysed: {analysed:,} of {total:,} ({how} over the loop; "
                    f"{NSYS_ITERATIONS_ENV}=0 analyses every one)",))  # fmt: skip
    return out


def _read_nsys(
    layout: RunLayout, notes: list[str], read: NsysReader | None = None, heads: set[str] | None = None
) -> Any:
    if not layout.nsys_sqlite.is_file():
        if layout.nsys_rep.is_file():
            notes.append("nsys/report.nsys-rep has no SQLite export: run nsys export --type sqlite on it")
        else:
            notes.append("no nsys report (nsys/report.sqlite): the nsys pass did not run or failed")
        return None
    if read is not None:
        return read(layout.nsys_sqlite)
    from nsightwrap.parsers.nsys import IterationCap, read_nsys

    cap = nsys_iteration_cap()
    return read_nsys(
        layout.nsys_sqlite, iterations=IterationCap(frozenset(heads), cap) if heads and cap is not None else None
    )


def _one_gpu(samples: pd.DataFrame | None, devices: Sequence[Any], notes: list[str]) -> pd.DataFrame | None:
    """The sample rows of the GPU the timer ran on (nvidia-smi logs every GPU of the host)."""
    if samples is None or "gpu_uuid" not in samples or samples["gpu_uuid"].nunique() < 2:
        return samples
    uuids = {uuid_key(d["uuid"]) for d in devices if isinstance(d, Mapping) and d.get("uuid")}
    keep = samples["gpu_uuid"].map(uuid_key).isin(uuids)
    if uuids and bool(keep.any()):
        return samples[keep].reset_index(drop=True)
    notes.append(
        f"clock samples cover {samples['gpu_uuid'].nunique()} GPUs and the timer named none of them: not used"
    )
    return None


def _read_samples(layout: RunLayout, notes: list[str]) -> pd.DataFrame | None:
    if not layout.smi_samples.is_file():
        return None
    from nsightwrap.parsers.smi import read_smi_samples

    try:
        return read_smi_samples(layout.smi_samples)
    except ReportParseError as exc:
        notes.append(f"clock samples not used: {exc}")
        return None


def _trace(samples: pd.DataFrame | None) -> tuple[ClockSample, ...]:
    if samples is None or samples.empty or "time" not in samples:
        return ()
    t = pd.to_datetime(samples["time"], errors="coerce")
    if t.isna().all():
        return ()
    secs = (t - t.min()).dt.total_seconds()
    return tuple(
        ClockSample(t_s=float(s), sm_clock_hz=float(f), power_w=finite_number(w), temperature_c=finite_number(c))
        for s, f, w, c in zip(secs, samples["sm_clock_hz"], samples["power_w"], samples["temperature_c"], strict=True)
        if not (math.isnan(s) or math.isnan(f))
    )


def _specs_from_profiles(ncu: pd.DataFrame | None, nsys: Any) -> list[BenchmarkSpec]:
    if nsys is not None and not nsys.ranges.empty:
        r = nsys.ranges[nsys.ranges["kind"] == "pushpop"]
        return specs_from_nvtx(r.loc[r["depth"] == 0, "path"], r["path"])
    if ncu is not None and not ncu.empty:
        ranges = [tuple(x) for x in ncu["nvtx_ranges"] if len(x)]
        return specs_from_nvtx({r[0] for r in ranges}, {p for r in ranges for p in r})
    return []


# ----------------------------------------------------------------------------- environment


def environment(
    manifest: Mapping[str, Any], layout: RunLayout, torch_version: str | None = None
) -> Environment:
    """Fingerprint from the manifest (tools, target, settings) and ``nvidia-smi -q -x``."""
    tools = manifest.get("tools") or {}
    gpu: Mapping[str, Any] = manifest.get("gpu") or {}
    g = None
    if layout.smi_xml.is_file():
        from nsightwrap.parsers.smi import read_smi_xml

        try:
            g = read_smi_xml(layout.smi_xml)
        except ReportParseError:
            g = None
    persistence = (
        None if g is None or g.persistence_mode is None else ("enabled" if g.persistence_mode else "disabled")
    )
    return Environment(
        gpu_name=_s(g.name if g else gpu.get("name")),
        driver=_s(g.driver_version if g else gpu.get("driver")),
        cuda=_s(g.cuda_version if g else gpu.get("cuda")),
        torch=_s(torch_version or gpu.get("torch")),
        ncu_version=_s(_tool_version(tools, "ncu")),
        nsys_version=_s(_tool_version(tools, "nsys")),
        persistence_mode=persistence,
        sm_clock_max_hz=(g.max_clocks.sm_hz or g.max_clocks.graphics_hz) if g else None,
        # nvidia-smi gives the default applications clock for graphics (= SM on data-center GPUs).
        sm_clock_base_hz=(g.default_applications_clocks.sm_hz or g.default_applications_clocks.graphics_hz)
        if g
        else None,
        throttle_reasons=tuple(g.clock_event_reasons) if g else (),
        command=_command(manifest),
        ncu_cache_control=_ncu_cache_control(manifest),
    )


def _s(v: Any) -> str | None:
    return None if v is None or v == "" else str(v)


def _dig(d: Mapping[str, Any], *keys: str) -> Any:
    cur: Any = d
    for k in keys:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(k)
    return cur


def _tool_version(tools: Mapping[str, Any], name: str) -> Any:
    t = tools.get(name)
    return t.get("version") if isinstance(t, Mapping) else t


def _command(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    argv = manifest.get("argv") or _dig(manifest, "settings", "argv")
    if isinstance(argv, list) and argv:
        return tuple(str(a) for a in argv)
    target = _dig(manifest, "target", "argv")
    return ("nsightwrap", "profile", *(str(a) for a in target)) if isinstance(target, list) else ()


def _ncu_cache_control(manifest: Mapping[str, Any]) -> str:
    # ncu flushes every cache before each kernel unless told --cache-control none.
    for p in manifest.get("passes") or []:
        if isinstance(p, Mapping) and p.get("name") == PASS_NCU:
            for c in p.get("commands") or []:
                argv = list(c.get("argv") or []) if isinstance(c, Mapping) else []
                for i, a in enumerate(argv):
                    if a == "--cache-control" and i + 1 < len(argv):
                        return str(argv[i + 1])
                    if a.startswith("--cache-control="):
                        return a.split("=", 1)[1]
    return "all"
