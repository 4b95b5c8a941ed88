"""How close is each way of timing a kernel from Python to Nsight Compute?

    python -m benchmarks.timer_accuracy [--out timer-accuracy.md] [--json raw.json] [--only K,...]
                                        [--rounds 3] [--ncu-iters 3] [--ref-iters N] [--no-ncu] [--quick]

For nine kernels from ~2 us to ~200 us (bf16 GEMMs large square and skinny, softmax, layer
norm, flash attention through torch SDPA, a Triton kernel, elementwise add and relu, small and
large) it measures, in one run and in ``--rounds`` rounds (run-to-run spread):

  (a) ``nsightwrap.bench`` (also its CUPTI kernel time and its per-sample SM clock);
  (b) the reference loop (``.ref/reference_loop.py``: clean flush, 1 ms GPU sleep, one sample per
      synchronize, empty window subtracted), a yardstick;
  (c) nvbench cold (``cuda.bench`` 0.3.0: memset flush, blocking kernel; its mean GPU time);
  (d) the do_bench_cuda recipe (zeroing flush + a dummy 4096^3 fp32 matmul before each sample);
  (e) ``triton.testing.do_bench`` (median);
  (f) naive CUDA events (back to back, no flush);

then re-runs itself four times under ncu, through the timer's iteration filter: at
``--clock-control none`` with ``gpu__time_duration.sum`` alone (the reference: its median per
kernel, ``--ref-iters`` iterations, ``--ncu-iters`` by default); at ``none`` and at ``base`` (a
lower, locked clock) with the duration and ``sm__cycles_elapsed.avg.per_second`` (one replay pass
each), which give ncu's SM clock and each kernel's clock elasticity ``e`` (duration ~ f**-e); and
at ``none`` with the metrics of ``nsightwrap profile``'s ncu pass (12 replay passes; shown beside
the reference, not judged). Every method's error is given against the reference as measured and against it carried
to the timer's measured clock, ``t * (f_ncu / f_timer) ** e``.
A short study of what queued work does to an event window comes with it (``queue_study``).

Markdown to stdout and ``--out``; every sample and ncu row to ``--json``. Needs an NVIDIA GPU,
torch, triton and ncu; nvbench and the reference loop are optional columns. ``--help`` imports
none of them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    KERNELS,
    NcuRef,
    _finite_median,
    _num,
    _wmean,
    child_env,
    do_bench_cuda,
    make_kernel,
    module_argv,
    ncu_refs,
    ncu_rows,
    reference_loop,
    triton,
)
from nsightwrap.core import contract
from nsightwrap.run.launch import DEFAULT_NCU_METRICS

#: The duration and the SM clock, at both clock settings (one replay pass): ncu's clock and e.
REF_METRICS = "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"
#: The reference: the duration alone, ncu's lightest reading (no SM counters, one pass, nothing
#: backed up). With more metrics ncu reads some kernels longer: on an H200 the SM clock beside
#: it a 2 us add by ~6%, the profile's 12-pass replay a memory-bound GEMV by 3-6%
#: (docs/timer-accuracy.md, "What ncu's reading depends on").
DURATION_METRICS = "gpu__time_duration.sum"
#: What ``nsightwrap profile``'s ncu pass collects (12 passes on an H200).
PROFILE_METRICS = ",".join(DEFAULT_NCU_METRICS)
#: Methods measured in every round, and the derived column (timer without the subtraction).
METHODS = ("timer", "timer_raw", "ref", "nvbench", "do_bench_cuda", "triton", "naive")
PEERS = ("nvbench", "do_bench_cuda", "triton")  # the timer must be closer than each of these
METHOD_TITLES = {
    "timer": "nsightwrap",
    "timer_raw": "nsightwrap, nothing subtracted",
    "ref": "reference loop",
    "nvbench": "nvbench cold",
    "do_bench_cuda": "do_bench_cuda recipe",
    "triton": "triton do_bench",
    "naive": "naive events",
}


# ---------------------------------------------------------------------------------------------
# Kernels and methods (torch imported only here)


def naive_events(fn: Callable[[], Any], n: int = 50) -> list[float]:
    """(f) CUDA events around each call, back to back, no flush, no queue holding (ns)."""
    import torch

    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in ev:
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e6 for s, e in ev]


def triton_do_bench(fn: Callable[[], Any], quick: bool) -> float:
    """(e) ``triton.testing.do_bench`` median, in ns."""
    if triton is None:
        return math.nan
    warm, rep = (5, 20) if quick else (10, 40)
    return float(triton.testing.do_bench(fn, warmup=warm, rep=rep, return_mode="median")) * 1e6


def nvbench_cold(
    places: Sequence[dict[str, Callable[[], Any]]], rounds: int, quick: bool, workdir: Path
) -> dict[str, Any]:
    """(c) nvbench's cold measurement of every kernel, ``rounds`` times (a ``round`` axis; round
    ``r`` on place ``r % len(places)``, as in ``measure_plain``): per kernel the mean GPU time of
    each round (ns) and nvbench's own SM clock; or an ``error``."""
    try:
        import cuda.bench as bench
        import torch
    except Exception as exc:  # not installed: the column stays empty
        return {"error": f"cuda.bench unavailable ({type(exc).__name__}: {exc})"}
    names = list(places[0])

    def run(state: Any) -> None:
        fn = places[int(state.get_int64("round")) % len(places)][state.get_string("kernel")]

        def launch(launch_: Any) -> None:
            # Torch kernels run on nvbench's stream through a torch ExternalStream of it.
            with torch.cuda.stream(torch.cuda.ExternalStream(launch_.get_stream().__cuda_stream__()[1])):
                fn()

        state.exec(launch, batched=False)

    out_json = workdir / "nvbench.json"
    notes = []
    try:
        b = bench.register(run)
        b.add_string_axis("kernel", names)
        b.add_int64_axis("round", list(range(rounds)))
        # Shorter than nvbench's defaults (0.5 s minimum, 15 s timeout per state) to fit the run.
        for setter, value in (
            (b.set_timeout, 0.25 if quick else 0.4), (b.set_min_samples, 20),
            (lambda v: b.set_criterion_param_float64("min-time", v), 0.05 if quick else 0.1),
        ):  # fmt: skip
            try:
                setter(value)
            except Exception as exc:  # keep nvbench's default for this one
                notes.append(f"{type(exc).__name__}: {exc}")
        bench.run_all_benchmarks(["nvbench", "--quiet", "--json", str(out_json)])
        doc = json.loads(out_json.read_text())
    except Exception as exc:
        return {"error": f"nvbench failed ({type(exc).__name__}: {exc})", "notes": notes}
    out = parse_nvbench_json(doc)
    out["_settings_notes"] = notes
    return out


def _nv_value(summary: dict[str, Any]) -> float | None:
    for d in summary.get("data") or []:
        if d.get("name") == "value":
            try:
                return float(d.get("value"))
            except (TypeError, ValueError):
                return None
    return None


def parse_nvbench_json(doc: dict[str, Any]) -> dict[str, Any]:
    """Per kernel: ``rounds_ns`` (nvbench's cold mean GPU time of each round, ns), ``min_ns``,
    ``samples``, ``clock_hz`` (nvbench's mean SM clock), from its ``--json`` output."""
    out: dict[str, Any] = {}
    for bench in doc.get("benchmarks") or []:
        for st in bench.get("states") or []:
            if st.get("is_skipped"):
                continue
            axes = {a.get("name"): a.get("value") for a in st.get("axis_values") or []}
            name = str(axes.get("kernel"))
            summ = {s.get("tag"): _nv_value(s) for s in st.get("summaries") or []}
            mean_s = summ.get("nv/cold/time/gpu/mean")
            if mean_s is None:
                continue
            k = out.setdefault(name, {"rounds_ns": [], "min_ns": [], "samples": [], "clock_hz": []})
            k["rounds_ns"].append(mean_s * 1e9)
            k["min_ns"].append((summ.get("nv/cold/time/gpu/min") or math.nan) * 1e9)
            k["samples"].append(summ.get("nv/cold/sample_size"))
            k["clock_hz"].append(summ.get("nv/cold/sm_clock_rate/mean"))
    return out


def make_places(
    names: Sequence[str], places: int
) -> list[dict[str, tuple[Callable[[], Any], float | None, float | None]]]:
    """``places`` sets of every kernel, each on buffers of its own (all kept alive, so that no set
    reuses another's memory): a 2 us kernel's duration depends on where its buffers lie
    (studies/placement_study.py), so every reading is taken over several places."""
    return [{n: make_kernel(n) for n in names} for _ in range(max(1, places))]


#: The in-process methods of a round, in their order when the order is fixed.
PLAIN_METHODS = ("timer", "ref", "do_bench_cuda", "triton", "naive")


def method_order(r: int, order: str) -> tuple[str, ...]:
    """The in-process methods in the order round ``r`` runs them: always ``PLAIN_METHODS``
    (``fixed``), or rotated by one per round (``rotate``), so that over as many rounds as
    methods each runs once first, after the previous kernel's last method
    (studies/order_study.py)."""
    if order == "fixed":
        return PLAIN_METHODS
    k = r % len(PLAIN_METHODS)
    return PLAIN_METHODS[k:] + PLAIN_METHODS[:k]


def measure_plain(
    names: Sequence[str], rounds: int, quick: bool, workdir: Path, places: int = 1, order: str = "rotate"
) -> dict[str, Any]:
    """Every method for every kernel, ``rounds`` times, in this process; round ``r`` reads the
    kernels on place ``r % places``, its methods in ``method_order(r, order)``."""
    import nsightwrap as nw

    ref = reference_loop()
    sets = make_places(names, places)
    per: dict[str, dict[str, Any]] = {n: {"rounds": []} for n in names}
    opts: dict[str, Any] = {"budget_s": 0.15 if quick else 0.25, "min_samples": 20, "energy_s": 0.0}
    for r in range(rounds):
        fns = sets[r % len(sets)]
        for name in names:
            fn, flops, nbytes = fns[name]
            t0 = time.perf_counter()
            rec: dict[str, Any] = {"place": r % len(sets), "order": list(method_order(r, order))}
            for m in rec["order"]:
                if m == "timer":
                    res = nw.bench(fn, name=name, flops=flops, bytes=nbytes, **opts)
                    rec["timer"] = res.to_dict()
                elif m == "ref":
                    rec["ref_ns"] = ref.ref_us(fn, n=60 if quick else 100) * 1e3 if ref else None
                elif m == "do_bench_cuda":
                    rec["do_bench_cuda_ns"] = do_bench_cuda(fn, n=20 if quick else 30)
                elif m == "triton":
                    rec["triton_ns"] = triton_do_bench(fn, quick)
                else:
                    rec["naive_ns"] = naive_events(fn)
            rec["wall_s"] = time.perf_counter() - t0
            per[name]["rounds"].append(rec)
            print(f"  round {r} {res}", file=sys.stderr)
    return {"kernels": per, "reference_loop": ref is not None, "places": len(sets), "order": order}


def run_nvbench_child(
    names: Sequence[str], rounds: int, quick: bool, workdir: Path, places: int = 1
) -> dict[str, Any]:
    """nvbench in a child process of its own: a crash or a hang there costs its column only."""
    out = workdir / "nvbench_results.json"
    argv = module_argv("benchmarks.timer_accuracy", "--child-nvbench", str(out), "--only", ",".join(names),
                       "--rounds", str(rounds), "--places", str(places), *(["--quick"] if quick else []))  # fmt: skip
    t0 = time.perf_counter()
    try:
        done = subprocess.run(argv, env=child_env(dict(os.environ)), capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        return {"error": "nvbench child ran past 90 s"}
    print(f"nvbench child run: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    if done.returncode != 0 or not out.is_file():
        return {"error": f"nvbench child failed ({done.returncode}): {(done.stderr or done.stdout)[-1500:]}"}
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def child_nvbench(names: Sequence[str], rounds: int, quick: bool, out: Path, places: int = 1) -> None:
    sets = [{n: k[0] for n, k in fns.items()} for fns in make_places(names, places)]
    with tempfile.TemporaryDirectory() as tmp:
        res = nvbench_cold(sets, rounds, quick, Path(tmp))
    out.write_text(json.dumps(res, default=str))


# ---------------------------------------------------------------------------------------------
# What queued work does to an event window, and whether %clock64 counts through idle time


def queue_study(reps: int = 100) -> dict[str, Any]:
    """Median event window (ns) of a 4096-element add held behind a GPU sleep, with different
    work queued behind its end event before the host synchronizes; and SM clocks read by the
    stamp kernel across host-side gaps of the GPU (clock64 over globaltimer)."""
    import torch

    from nsightwrap.timer.gpu import gpu_state
    from nsightwrap.timer.stamps import Stamps

    gpu = gpu_state()
    a, b = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    fn = lambda: a + b  # noqa: E731
    stamps, why = Stamps.load(torch, gpu.device["sm_count"], "cuda", 64)
    side = torch.cuda.Stream()
    hold = int(200e-6 * gpu.max_sm_hz)
    for _ in range(10):
        fn()
    torch.cuda.synchronize()

    a2, b2 = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")

    def windows(
        behind: Callable[[Any], None] | None, batch: int = 1, *, flush: bool = True,
        before: Callable[[], Any] | None = None, call: Callable[[], Any] | None = fn,
    ) -> float:  # fmt: skip
        out = []
        for _ in range(max(1, reps // batch)):
            pairs = [(gpu.event(), gpu.event()) for _ in range(batch)]
            for s, e in pairs:
                torch.cuda._sleep(hold)
                if flush:
                    gpu.flush()
                if before is not None:
                    before()
                s.record()
                if call is not None:
                    call()
                e.record()
                if behind is not None:
                    behind(e)
            pairs[-1][1].synchronize()
            torch.cuda.synchronize()
            out += [s.elapsed_time(e) * 1e6 for s, e in pairs]
        return float(statistics.median(out))

    def event_behind(e: Any) -> None:
        gpu.event().record()

    def kernel_behind(e: Any) -> None:
        fn()

    def sleep_behind(e: Any) -> None:
        torch.cuda._sleep(hold)

    def stamp_behind(e: Any) -> None:
        if stamps is not None:
            stamps.stamp(0)

    def side_stamp(e: Any) -> None:
        side.wait_event(e)
        with torch.cuda.stream(side):
            if stamps is not None:
                stamps.stamp(0)
            else:
                fn()

    res: dict[str, Any] = {
        "nothing_behind_ns": windows(None),
        "event_behind_ns": windows(event_behind),
        "kernel_behind_ns": windows(kernel_behind),
        "sleep_behind_ns": windows(sleep_behind),
        "stamp_behind_ns": windows(stamp_behind),
        "side_stream_stamp_ns": windows(side_stamp),
        "batch_4_ns": windows(None, batch=4),
        "batch_16_ns": windows(None, batch=16),
        "batch_64_ns": windows(None, batch=64),
        "empty_window_ns": windows(None, call=None),
        "no_flush_ns": windows(None, flush=False),
        "same_kernel_other_data_before_ns": windows(None, before=lambda: a2 + b2),
        "stamps": why or "ok",
    }
    res["host_us_per_launch"] = host_costs(gpu, stamps, fn)
    if stamps is not None:
        gaps: dict[str, list[float]] = {}
        # (label, host synchronize between the stamps, extra host wait s, GPU spin between s)
        for label, sync, gap_s, spin_s in (
            ("queued together", False, 0.0, 0.0), ("a synchronize between", True, 0.0, 0.0),
            ("a synchronize + 200 us idle", True, 200e-6, 0.0), ("a synchronize + 2 ms idle", True, 2e-3, 0.0),
            ("a 200 us GPU spin", False, 0.0, 200e-6), ("a 200 us GPU spin + synchronize + 2 ms idle", True, 2e-3, 200e-6),
        ):  # fmt: skip
            for i in range(8):
                torch.cuda.synchronize()
                stamps.before(i)
                if spin_s:
                    torch.cuda._sleep(int(spin_s * gpu.max_sm_hz))
                if sync:
                    torch.cuda.synchronize()
                    t_end = time.perf_counter() + gap_s
                    while time.perf_counter() < t_end:
                        pass
                stamps.after(i)
            c, _ = stamps.read(8)
            clocks = [float(v) for v in c if v is not None]
            gaps[label] = clocks
        res["stamp_clock_hz"] = {k: (statistics.median(v) if v else None) for k, v in gaps.items()}
    return res


def host_costs(gpu: Any, stamps: Any, fn: Callable[[], Any], n: int = 200) -> dict[str, float]:
    """Host microseconds per call of each thing a sample queues, with the GPU held busy (and
    with NVML's sampler thread running, as in the timed loop)."""
    import torch

    from nsightwrap.timer.nvml import NvmlSampler

    ev = gpu.event()
    ops: dict[str, Callable[[], Any]] = {
        "event_record": ev.record, "flush (fill + sum)": gpu.flush, "fn (4096 add)": fn,
        "torch.cuda._sleep": lambda: torch.cuda._sleep(10), "new event": gpu.event,
    }  # fmt: skip
    if stamps is not None:
        ops["stamp kernel (Triton)"] = lambda: stamps.stamp(0)
    out: dict[str, float] = {}
    for sampler_on in (False, True):
        with NvmlSampler(gpu.nvml if sampler_on else None):
            for name, op in ops.items():
                gpu.sleep_s(0.05)  # the GPU busy: launches only queue
                t0 = time.perf_counter()
                for _ in range(n):
                    op()
                out[name + (" with NVML thread" if sampler_on else "")] = (time.perf_counter() - t0) / n * 1e6
                torch.cuda.synchronize()
    return out


# ---------------------------------------------------------------------------------------------
# ncu passes


#: A kernel read at several places is benchmark ``<kernel>.p<place>`` under ncu (``pool_places``).
PLACE_TAG = ".p"


def child_ncu(names: Sequence[str], places: int = 1) -> None:
    """Under ncu: only the timer's profiled iterations (NSIGHTWRAP_PASS=ncu and the iterations
    are set by the parent), spread over ``places`` places of each kernel (``make_places``)."""
    import nsightwrap as nw

    iters = int(os.environ.get(contract.ENV_NCU_ITERS, "3"))
    if places > 1:
        os.environ[contract.ENV_NCU_ITERS] = str(max(1, math.ceil(iters / places)))
    for name in names:
        kept = []  # every place of the kernel alive until its last: each has memory of its own
        for p in range(max(1, places)):
            fn, flops, nbytes = make_kernel(name)
            kept.append(fn)
            nw.bench(fn, name=f"{name}{PLACE_TAG}{p}" if places > 1 else name, flops=flops, bytes=nbytes)


def run_ncu(
    names: Sequence[str],
    workdir: Path,
    iters: int,
    clock: str,
    metrics: str = REF_METRICS,
    tag: str = "",
    places: int = 1,
) -> list[dict[str, Any]]:
    """Re-run this script under ncu (``--clock-control clock``, ``metrics``) in child mode; the
    kernel rows."""
    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu is not on PATH; pass --no-ncu to skip the reference")
    rep = workdir / f"timer_accuracy_{clock}{tag}"
    argv = [
        ncu, "--clock-control", clock, *contract.ncu_iteration_filter(),
        "--metrics", metrics,
        "-o", str(rep), "-f", *module_argv("benchmarks.timer_accuracy", "--child-ncu"),
        "--only", ",".join(names), "--places", str(places),
    ]  # fmt: skip
    env = child_env(dict(os.environ))
    env.update({contract.ENV_PASS: contract.PASS_NCU, contract.ENV_NCU_ITERS: str(iters)})
    env.pop(contract.ENV_RUN_DIR, None)
    return ncu_rows(argv, env, rep, f"--clock-control {clock}{tag}", timeout=300)


def pool_places(refs: dict[str, NcuRef]) -> dict[str, NcuRef]:
    """Benchmarks ``<kernel>.p<place>`` pooled into ``<kernel>``: every place's iterations in one
    ``NcuRef`` (so its median is over them all); other benchmarks as they are."""
    groups: dict[str, list[NcuRef]] = {}
    for bench, ref in refs.items():
        head, tag, place = bench.rpartition(PLACE_TAG)
        groups.setdefault(head if tag and head and place.isdigit() else bench, []).append(ref)
    out = {}
    for bench, refs_ in groups.items():
        if len(refs_) == 1:
            out[bench] = refs_[0]
            continue
        out[bench] = NcuRef(
            tuple(v for r in refs_ for v in r.iterations_ns),
            tuple(v for r in refs_ for v in r.iterations_cycles),
            _wmean([(1.0, r.sm_pct) for r in refs_]),
            _wmean([(1.0, r.dram_pct) for r in refs_]),
            _finite_median([r.passes for r in refs_]),
            _finite_median([r.backed_up_bytes for r in refs_]),
        )
    return out


def pooled_refs(rows: Sequence[dict[str, Any]]) -> dict[str, NcuRef]:
    """``ncu_refs`` of a run's rows, places pooled (``pool_places``)."""
    return pool_places(ncu_refs(rows))


def elasticity(none: NcuRef, base: NcuRef | None) -> float | None:
    """The kernel's clock elasticity from the two ncu passes (median durations, overall clocks);
    the same formula as ``nsightwrap.analysis.clocks.measured_elasticity``."""
    from nsightwrap.analysis.clocks import measured_elasticity

    if base is None:
        return None
    return measured_elasticity(none.duration_ns, none.clock_hz, base.duration_ns, base.clock_hz)


def round_values(rec: dict[str, Any], nv_ns: float | None) -> dict[str, float]:
    """Median ns per call of each method in one round of one kernel."""
    t = rec["timer"]
    meth = t["method"]
    k = meth.get("calls_per_sample", 1) or 1
    timer = _num(t["median_ns"])

    def med(key: str) -> float:
        v = rec.get(key)
        if isinstance(v, list):
            return float(statistics.median(v)) if v else math.nan
        return _num(v)

    return {
        "timer": timer,
        "timer_raw": timer + _num(meth.get("overhead_ns", 0.0)) / k,
        "ref": med("ref_ns"),
        "nvbench": math.nan if nv_ns is None else nv_ns,
        "do_bench_cuda": med("do_bench_cuda_ns"),
        "triton": med("triton_ns"),
        "naive": med("naive_ns"),
    }


def target_pct(ref_ns: float) -> float:
    """The timer's accuracy target: 3 % from 10 us, 5 % from 2 to 10 us."""
    return 3.0 if ref_ns >= 10_000 else 5.0


def _median(vals: Sequence[float]) -> float:
    good = [v for v in vals if math.isfinite(v)]
    return float(statistics.median(good)) if good else math.nan


def _call_copies(timers: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The memcpy/memset the timer's CUPTI reading found in each call (``method.kernel_time``):
    how many per call and their duration (ns, median over the rounds). ``non_kernel_ns`` is None
    where the calls made none, and also where a run predates the duration (only the count)."""
    counts, durs = [], []
    for t in timers:
        got = contract.kernel_time_copies(t.get("method") or {})
        counts.append(got[0] if got else 0.0)
        if got and got[1] is not None:
            durs.append(got[1])
    per_call = _median(counts) if counts else math.nan
    return {
        "copies_per_call": per_call if math.isfinite(per_call) else 0.0,
        "non_kernel_ns": _median(durs) if durs and per_call > 0 else None,
    }


def _judge(row: dict[str, Any], tag: str) -> None:
    """The three targets for the errors ``<method>_<tag>err_pct`` of one row."""
    err = abs(row[f"timer_{tag}err_pct"])
    row[f"{tag}meets_target"] = err <= row["target_pct"]
    ref_err = row[f"ref_{tag}err_pct"]
    row[f"{tag}near_reference"] = (not math.isfinite(ref_err)) or err <= abs(ref_err) + 1.0
    row[f"{tag}beats_peers"] = all(
        err < abs(row[f"{p}_{tag}err_pct"]) for p in PEERS if math.isfinite(row[f"{p}_{tag}err_pct"])
    )


def build_rows(
    plain: dict[str, Any],
    refs: dict[str, NcuRef],
    base_refs: dict[str, NcuRef] | None = None,
    profile_refs: dict[str, NcuRef] | None = None,
    duration_refs: dict[str, NcuRef] | None = None,
) -> list[dict[str, Any]]:
    """One row per kernel: ncu at both clock settings, elasticity, each method's median over the
    rounds, its error against ncu (raw, clock-matched, and against ncu's kernels alone without the
    calls' memcpy/memset, which the reference ``ncu_ns`` adds) and its spread over the rounds; with
    ``profile_refs``, ncu's reading with the profile's metrics (many passes) beside them; with
    ``duration_refs`` (ncu with the duration alone), the reference duration is theirs, and the
    clock and the elasticity still come from ``refs`` and ``base_refs``."""
    from nsightwrap.analysis.clocks import clamp_elasticity

    nv = plain.get("nvbench") or {}
    rows = []
    for name, k in plain["kernels"].items():
        rounds = k["rounds"]
        nv_rounds = (nv.get(name) or {}).get("rounds_ns") or []
        per_round = [
            round_values(r, nv_rounds[i] if i < len(nv_rounds) else None) for i, r in enumerate(rounds)
        ]
        timers = [r["timer"] for r in rounds]
        f_timer = _median([_num(t.get("sm_clock_hz")) for t in timers])
        row: dict[str, Any] = {
            "kernel": name,
            "rounds": len(rounds),
            "f_timer_hz": f_timer if math.isfinite(f_timer) else None,
            "timer_clock_source": timers[0].get("clock_source") if timers else None,
            "stamp_clock_hz": _median([_num(t["method"].get("stamp_clock_hz")) for t in timers]),
            "kernel_ns": _median([_num(t.get("kernel_ns")) for t in timers]),
            "throttled": sum(int(t.get("throttled") or 0) for t in timers),
            # the first samples left out while the clock came back from earlier work (none before
            # the timer had the rule)
            "settling": sum(int(t["method"].get("settling_samples") or 0) for t in timers),
            "samples": sum(int(t.get("n") or 0) for t in timers),
            "nvbench_clock_hz": _median([_num(c) for c in (nv.get(name) or {}).get("clock_hz") or []]),
            "samples_per_s": _median([_num(t["method"].get("samples_per_s")) for t in timers]),
        }
        for m in METHODS:
            row[f"{m}_ns"] = _median([pr[m] for pr in per_round])
        copies = _call_copies(timers)
        row.update(copies)
        ref = refs.get(name)
        if ref is not None:
            base = (base_refs or {}).get(name)
            e = elasticity(ref, base)
            prof = (profile_refs or {}).get(name)
            dur = (duration_refs or {}).get(name)
            kernels_ns = dur.duration_ns if dur is not None else ref.duration_ns
            # ncu profiles kernels only: a memcpy/memset of the call (cuBLAS's 4-byte memset before
            # its cooperative GEMM kernels) is in every event window and in none of ncu's rows, so
            # the reference adds CUPTI's duration of it, as the profile's decomposition does.
            nk = copies["non_kernel_ns"] or 0.0
            ref_ns = kernels_ns + nk
            shape = prof if prof is not None and math.isnan(ref.sm_pct) else ref  # who has the throughputs
            e_used = clamp_elasticity(e) if e is not None else (0.0 if shape.bound == "memory" else 1.0)
            # The kernels follow the SM clock by e; a copy does not.
            matched = (
                kernels_ns * (ref.clock_hz / f_timer) ** e_used + nk if math.isfinite(f_timer) else math.nan
            )
            row.update(
                ncu_ns=ref_ns,
                ncu_kernels_ns=kernels_ns,
                ncu_source="duration alone" if dur is not None else "duration and SM clock",
                ncu_clock_run_ns=ref.duration_ns,
                f_ncu_hz=ref.clock_hz,
                ncu_base_ns=base.duration_ns if base else None,
                f_base_hz=base.clock_hz if base else None,
                elasticity=e,
                elasticity_source="measured" if e is not None else "heuristic",
                matched_ns=matched,
                target_pct=target_pct(ref_ns),
                ncu_passes=ref.passes,
                ncu_profile_ns=prof.duration_ns if prof else None,
                ncu_profile_passes=prof.passes if prof else None,
                ncu_profile_backed_up_bytes=prof.backed_up_bytes if prof else None,
            )
            judged = {"": ref_ns, "matched_": matched, "kernels_": kernels_ns}
            for m in METHODS:
                errs = [(pr[m] / ref_ns - 1) * 100 for pr in per_round if math.isfinite(pr[m])]
                for tag, against in judged.items():
                    row[f"{m}_{tag}err_pct"] = (
                        (row[f"{m}_ns"] / against - 1) * 100 if math.isfinite(against) else math.nan
                    )
                row[f"{m}_spread_pct"] = (max(errs) - min(errs)) if len(errs) > 1 else math.nan
            for tag in judged:
                _judge(row, tag)
        rows.append(row)
    return rows


def _cell(v: Any, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)


def _us(v: Any) -> str:
    return _cell(None if v is None else _num(v) / 1e3, ".2f")


def _ghz(v: Any) -> str:
    return _cell(None if v is None else _num(v) / 1e9, ".3f")


def markdown_table(rows: Sequence[dict[str, Any]], *, matched: bool = False) -> str:
    """Each method's median (us) and error (%) against ncu: as measured (``--clock-control
    none``), or with ``matched`` against ncu carried to the timer's clock with the kernel's e.
    Where the calls made a memcpy/memset, the reference cell shows ncu's kernels + its time."""
    tag = "matched_" if matched else ""
    head = [
        "kernel", "ncu us" if not matched else "ncu at f_timer us",
        *(f"{METHOD_TITLES[m]} us (err %)" for m in METHODS), "target", "ok",
    ]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        meth = [f"{_us(r[f'{m}_ns'])} ({_cell(r.get(f'{m}_{tag}err_pct'), '+.1f')})" for m in METHODS]
        ok = "-"
        if f"{tag}meets_target" in r:
            ok = "yes" if r[f"{tag}meets_target"] else "NO"
            if not r[f"{tag}near_reference"]:
                ok += ", >1 pt behind the reference loop"
            if not r[f"{tag}beats_peers"]:
                ok += ", not closer than every peer"
        ref_cell = _us(r.get("matched_ns") if matched else r.get("ncu_ns"))
        nk = r.get("non_kernel_ns")
        if nk and "ncu_ns" in r:
            kernels = r["matched_ns"] - nk if matched else r["ncu_kernels_ns"]
            ref_cell += f" ({_us(kernels)} + {_us(nk)} memcpy/memset)"
        cells = [
            r["kernel"].replace("|", "\\|"), ref_cell, *meth,
            f"{r['target_pct']:.0f} %" if "target_pct" in r else "-", ok,
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def clock_table(rows: Sequence[dict[str, Any]]) -> str:
    """ncu at both clock settings, the measured elasticity, and the clocks each method saw."""
    head = [
        "kernel", "ncu none us", "f none GHz", "ncu base us", "f base GHz", "e", "f_timer GHz (source)",
        "nvbench GHz", "CUPTI kernel us", "throttled / settling samples", "samples/s",
    ]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        e = r.get("elasticity")
        cells = [
            r["kernel"], _us(r.get("ncu_ns")), _ghz(r.get("f_ncu_hz")), _us(r.get("ncu_base_ns")),
            _ghz(r.get("f_base_hz")), _cell(e, "+.2f") if e is not None else "- (heuristic)",
            f"{_ghz(r.get('f_timer_hz'))} ({r.get('timer_clock_source')})",
            _ghz(r.get("nvbench_clock_hz")), _us(r.get("kernel_ns")), f"{r.get('throttled', 0)} / {r.get('settling', 0)} of {r.get('samples', 0)}",
            _cell(r.get("samples_per_s"), ".0f"),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def kernel_time_table(rows: Sequence[dict[str, Any]]) -> str:
    """Each reading over CUPTI's kernel time of the same calls (taken the way the timer takes a
    sample: flush, hold, stamp, fn): what the event window less the empty window, the window as
    it is, and ncu's ``gpu__time_duration`` add to the time the kernels themselves ran (us)."""
    head = ["kernel", "CUPTI kernel us", "nsightwrap - CUPTI us", "nothing subtracted - CUPTI us",
            "reference loop - CUPTI us", "ncu - CUPTI us", "ncu - nsightwrap us"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        k = r.get("kernel_ns")
        if k is None:
            continue
        # A call's memcpy/memset counts on both sides: CUPTI's time of the call is its kernels and
        # its copies, as the reference ncu_ns is ncu's kernels and the same copies.
        nk = r.get("non_kernel_ns") or 0.0
        cupti = _us(k) + (f" + {_us(nk)} memcpy/memset" if nk else "")
        k += nk

        def over(v: Any, k: float = k) -> str:
            return _cell((v - k) / 1e3, "+.2f") if v is not None and math.isfinite(v) else "-"

        ncu, timer = r.get("ncu_ns"), r.get("timer_ns")
        gap = _cell((ncu - timer) / 1e3, "+.2f") if ncu is not None and timer is not None else "-"
        cells = [
            r["kernel"],
            cupti,
            *(over(r.get(c)) for c in ("timer_ns", "timer_raw_ns", "ref_ns", "ncu_ns")),
            gap,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def replay_table(rows: Sequence[dict[str, Any]]) -> str:
    """ncu's reading of each kernel by what else it collects: the duration alone, the duration
    with the SM clock (both one replay pass), and the profile's metrics (many passes, device
    memory saved and restored around them); the timer beside them (us)."""
    head = ["kernel", "duration alone us", "duration + SM clock us", "profile metrics us (passes, GB backed up)",
            "nsightwrap us", "nsightwrap vs each %"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        timer, multi = r.get("timer_ns"), r.get("ncu_profile_ns")
        alone = r.get("ncu_ns") if r.get("ncu_source") == "duration alone" else None
        readings = [alone, r.get("ncu_clock_run_ns", r.get("ncu_ns")), multi]
        if multi is None and alone is None:
            continue
        gb = r.get("ncu_profile_backed_up_bytes")
        prof = "-" if multi is None else (
            f"{_us(multi)} ({_cell(r.get('ncu_profile_passes'), '.0f')}, {_cell(gb / 1e9 if gb is not None else None, '.1f')})"
        )  # fmt: skip
        errs = " / ".join(
            _cell((timer / v - 1) * 100, "+.1f") if timer is not None and v is not None else "-"
            for v in readings
        )
        lines.append(
            "| " + " | ".join([r["kernel"], _us(alone), _us(readings[1]), prof, _us(timer), errs]) + " |"
        )
    return "\n".join(lines)


def spread_table(rows: Sequence[dict[str, Any]]) -> str:
    """Run-to-run spread: max - min over the rounds of each method's error against ncu (points)."""
    head = ["kernel", *(METHOD_TITLES[m] for m in METHODS if m != "timer_raw")]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        cells = [r["kernel"], *(_cell(r.get(f"{m}_spread_pct"), ".1f") for m in METHODS if m != "timer_raw")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_lines(
    rows: Sequence[dict[str, Any]], *, matched: bool = False, tag: str | None = None
) -> list[str]:
    """One line per target: met on how many kernels, and which missed (``matched``: judged
    against ncu carried to the timer's clock; ``tag="kernels_"``: against ncu's kernels alone,
    without the calls' memcpy/memset)."""
    tag = ("matched_" if matched else "") if tag is None else tag
    judged = [r for r in rows if f"{tag}meets_target" in r]
    out = []
    for key, what in (
        ("meets_target", "within 3% (>= 10 us) / 5% (2-10 us) of ncu"),
        ("near_reference", "no more than 1 point further from ncu than the reference loop"),
        ("beats_peers", "closer to ncu than nvbench cold, the do_bench_cuda recipe and triton do_bench"),
    ):
        miss = [r["kernel"] for r in judged if not r[tag + key]]
        out.append(
            f"- {what}: {len(judged) - len(miss)} of {len(judged)}"
            + (f" (missed: {', '.join(miss)})" if miss else "")
        )
    return out


def queue_table(q: dict[str, Any]) -> str:
    """The queue study as a small table."""
    labels = {
        "nothing_behind_ns": "nothing queued behind the end event (one sample per synchronize)",
        "event_behind_ns": "an event record queued behind",
        "kernel_behind_ns": "the same add queued behind",
        "sleep_behind_ns": "a GPU sleep queued behind (the next sample's hold)",
        "stamp_behind_ns": "the stamp kernel queued behind",
        "side_stream_stamp_ns": "the stamp kernel on a side stream, waiting on the end event",
        "batch_4_ns": "4 samples queued before one synchronize",
        "batch_16_ns": "16 samples queued before one synchronize",
        "batch_64_ns": "64 samples queued before one synchronize",
        "empty_window_ns": "(an empty window: no kernel between the events)",
        "no_flush_ns": "(no L2 flush before the window: warm data)",
        "same_kernel_other_data_before_ns": "(the same add on other data right before: warm code, cold data)",
    }
    lines = ["| what is queued | event window us |", "| --- | --- |"]
    for k, label in labels.items():
        if k in q:
            lines.append(f"| {label} | {_us(q[k])} |")
    costs = q.get("host_us_per_launch") or {}
    if costs:
        lines += ["", "| host cost of one call (GPU busy) | us |", "| --- | --- |"]
        lines += [f"| {k} | {_cell(v, '.1f')} |" for k, v in costs.items()]
    clocks = q.get("stamp_clock_hz") or {}
    if clocks:
        lines += ["", "| between the two stamps | SM clock read (GHz) |", "| --- | --- |"]
        lines += [f"| {k} | {_ghz(v)} |" for k, v in clocks.items()]
    return "\n".join(lines)


def _kernels_only(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The verdicts against ncu's kernels alone, where some calls made a memcpy/memset (which the
    reference above adds): what a reader who takes ncu's rows as they are would find."""
    with_copies = [r for r in rows if r.get("non_kernel_ns") and "kernels_meets_target" in r]
    if not with_copies:
        return []
    names = ", ".join(
        f"{r['kernel']} ({r['copies_per_call']:g} per call, {_us(r['non_kernel_ns'])} us)"
        for r in with_copies
    )
    return [
        f"The calls of {names} made a memcpy/memset, which ncu does not profile and every event "
        "window holds; the references above add its CUPTI duration. Against ncu's kernels alone, "
        "as measured:\n",
        *summary_lines(rows, tag="kernels_"),
        "",
    ]


def render(header: str, plain: dict[str, Any], queue: dict[str, Any], rows: Sequence[dict[str, Any]]) -> str:
    """Every table of the run as Markdown."""
    nv_err = (plain.get("nvbench") or {}).get("error")
    parts = [
        header + "\n",
        "Errors in % against ncu --clock-control none, as measured (medians over the rounds):\n",
        markdown_table(rows),
        "",
        *summary_lines(rows),
        "",
        "Errors in % against ncu carried to the timer's measured SM clock with each kernel's e:\n",
        markdown_table(rows, matched=True),
        "",
        *summary_lines(rows, matched=True),
        "",
        *_kernels_only(rows),
        "Clocks and clock elasticity:\n",
        clock_table(rows),
        "",
        "Run-to-run spread (max - min of the error over the rounds, points):\n",
        spread_table(rows),
    ]
    if any(r.get("ncu_profile_ns") is not None or r.get("ncu_source") == "duration alone" for r in rows):
        parts += ["", "ncu's reading by what else it collects (the reference above is the first given):\n",
                  replay_table(rows)]  # fmt: skip
    if any(r.get("kernel_ns") is not None for r in rows):
        parts += [
            "",
            "Each reading over CUPTI's kernel time of the same calls (us):\n",
            kernel_time_table(rows),
        ]
    if nv_err:
        parts += ["", f"nvbench column empty: {nv_err}"]
    if not plain.get("reference_loop"):
        parts += ["", "reference loop column empty: .ref/reference_loop.py not found"]
    if queue:
        parts += [
            "",
            "What queued work does to the event window of a 4096-element add:\n",
            queue_table(queue),
        ]
    return "\n".join(parts) + "\n"


def _saved_rows(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A saved ``--json`` file (or its ``.gz``) and its rows, made again from its raw records."""
    import gzip

    doc = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())
    rows = build_rows(
        doc["plain"],
        pooled_refs(doc.get("ncu_none") or []),
        pooled_refs(doc.get("ncu_base") or []) or None,
        pooled_refs(doc.get("ncu_none_profile") or []) or None,
        pooled_refs(doc.get("ncu_none_duration") or []) or None,
    )
    return doc, rows


def tables_from(path: Path) -> str:
    """The tables of a saved ``--json`` file (or its ``.gz``), made again (no GPU needed)."""
    doc, rows = _saved_rows(path)
    header = doc.get("header") or f"Timer accuracy (tables made from {path.name})."
    return render(header, doc["plain"], doc.get("queue_study") or {}, rows)


#: Target keys of a row, in the order of ``summary_lines``.
TARGETS = ("meets_target", "near_reference", "beats_peers")


def runs_table(paths: Sequence[Path], kernels: Sequence[str] = ("add_4k", "attention", "mm_square")) -> str:
    """Several saved runs side by side (no GPU needed): the places of each kernel's buffers, ncu's
    iterations in the reference run, each
    target met on how many kernels (as measured), and for ``kernels`` the timer's error beside the
    reference loop's and the nearest peer's, so that a verdict that flips from run to run shows."""
    head = [
        "run",
        "rounds",
        "places",
        "ncu iterations (reference)",
        "targets 1 / 2 / 3 met",
        *(f"{k}: nsightwrap / loop / nearest peer %" for k in kernels),
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for path in paths:
        doc, rows = _saved_rows(path)
        judged = [r for r in rows if "meets_target" in r]
        ref = pooled_refs(doc.get("ncu_none_duration") or doc.get("ncu_none") or [])
        iters = max((len(v.iterations_ns) for v in ref.values()), default=0)
        met = " / ".join(
            f"{sum(bool(r[t]) for r in judged)} of {len(judged)}"
            + (
                f" ({', '.join(r['kernel'] for r in judged if not r[t])})"
                if not all(r[t] for r in judged)
                else ""
            )
            for t in TARGETS
        )
        by = {r["kernel"]: r for r in judged}
        cells = []
        for k in kernels:
            r = by.get(k)
            if r is None:
                cells.append("-")
                continue
            peer = min(
                (p for p in PEERS if math.isfinite(r[f"{p}_err_pct"])), key=lambda p: abs(r[f"{p}_err_pct"])
            )
            cells.append(
                f"{r['timer_err_pct']:+.1f} / {_cell(r.get('ref_err_pct'), '+.1f')} / "
                f"{r[f'{peer}_err_pct']:+.1f} ({METHOD_TITLES[peer]})"
            )
        rounds = max((int(r.get("rounds") or 0) for r in rows), default=0)
        places = int(doc["plain"].get("places") or 1)  # runs before --places read one place
        lines.append("| " + " | ".join([path.name, str(rounds), str(places), str(iters), met, *cells]) + " |")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Accuracy of nsightwrap's timer against ncu and other Python timing recipes.",
        epilog="Runs on a machine with an NVIDIA GPU, torch, triton and ncu (about 1.5 minutes); "
        "nvbench (cuda-bench) and .ref/reference_loop.py add their columns when present.",
    )
    ap.add_argument("--out", type=Path, help="write the Markdown tables here too")
    ap.add_argument(
        "--json", type=Path, help="raw results (every sample, every ncu kernel); default: --out with .json"
    )
    ap.add_argument("--only", default="", help=f"comma-separated kernels (default all: {', '.join(KERNELS)})")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every method (run-to-run spread)")
    ap.add_argument("--ncu-iters", type=int, default=3, help="profiled iterations per kernel under ncu")
    ap.add_argument("--places", type=int, default=None,
                    help="sets of buffers each kernel is read on (default --rounds): round r reads place r mod "
                    "--places, and ncu's iterations are spread over as many places; a 2 us kernel's duration "
                    "depends on where its buffers lie (studies/placement_study.py)")  # fmt: skip
    ap.add_argument("--order", choices=("rotate", "fixed"), default="rotate",
                    help="the order of the in-process methods in a round: rotated by one method per round "
                    "(rotate, the default), so that each runs first once in as many rounds, right after the "
                    "previous kernel's heavy peers; or always the timer first (fixed, as until 2026-12-02 "
                    "07:12): what ran just before moves a reading by up to 0.4%% (studies/order_study.py)")  # fmt: skip
    ap.add_argument("--ref-iters", type=int, default=None,
                    help="iterations of the reference run (the duration alone; default --ncu-iters): its median "
                    "is what every error is taken against, and 30 iterations of a 2 us kernel spread over a third "
                    "of their median")  # fmt: skip
    ap.add_argument("--profile-iters", type=int, default=5,
                    help="at most this many in the run with the profile's metrics (each costs 12 replay passes)")  # fmt: skip
    ap.add_argument("--no-ncu", action="store_true", help="skip the ncu reference (no errors then)")
    ap.add_argument("--no-base", action="store_true", help="skip the ncu --clock-control base pass")
    ap.add_argument("--no-profile-metrics", action="store_true",
                    help="skip the third ncu run (the profile's metrics, many replay passes)")  # fmt: skip
    ap.add_argument("--no-queue-study", action="store_true", help="skip the queued-work study")
    ap.add_argument("--quick", action="store_true", help="shorter budgets everywhere")
    ap.add_argument(
        "--tables-from", type=Path, metavar="JSON", help="print the tables of a saved --json file (no GPU)"
    )
    ap.add_argument(
        "--runs", type=Path, nargs="+", metavar="JSON",
        help="print several saved --json files side by side: the targets met in each (no GPU)",
    )  # fmt: skip
    ap.add_argument("--child-ncu", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-nvbench", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.names = [n.strip() for n in args.only.split(",") if n.strip()] or list(KERNELS)
    unknown = [n for n in args.names if n not in KERNELS]
    if unknown:
        ap.error(f"unknown kernel(s) {', '.join(unknown)}; choose from {', '.join(KERNELS)}")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    if args.ref_iters is None:
        args.ref_iters = args.ncu_iters
    if args.places is None:
        args.places = args.rounds
    if args.places < 1:
        ap.error("--places must be at least 1")
    if args.ncu_iters < 1 or args.ref_iters < 1:
        ap.error("--ncu-iters and --ref-iters must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.tables_from:
        print(tables_from(args.tables_from), end="")
        return
    if args.runs:
        print(runs_table(args.runs))
        return
    if args.child_ncu:
        child_ncu(args.names, args.places)
        return
    if args.child_nvbench:
        child_nvbench(args.names, args.rounds, args.quick, args.child_nvbench, args.places)
        return
    for key in (contract.ENV_PASS, contract.ENV_RUN_DIR):
        os.environ.pop(key, None)  # the plain measurements run as a standalone script
    t0 = time.perf_counter()
    json_path = args.json or (args.out.with_suffix(".json") if args.out else None)

    def keep(**doc: Any) -> None:  # what is measured so far, in case a later stage dies
        if json_path:
            json_path.write_text(json.dumps({"kernels": KERNELS, **doc}, indent=1, default=str))

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plain = measure_plain(args.names, args.rounds, args.quick, work, args.places, args.order)
        print(f"plain measurements: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        queue = {} if args.no_queue_study else queue_study()
        keep(plain=plain, queue_study=queue, partial=True)
        plain["nvbench"] = run_nvbench_child(args.names, args.rounds, args.quick, work, args.places)
        keep(plain=plain, queue_study=queue, partial=True)
        none_rows: list[dict[str, Any]] = []
        base_rows: list[dict[str, Any]] = []
        profile_rows: list[dict[str, Any]] = []
        duration_rows: list[dict[str, Any]] = []
        if not args.no_ncu:
            none_rows = run_ncu(args.names, work, args.ncu_iters, "none", places=args.places)
            keep(plain=plain, queue_study=queue, ncu_none=none_rows, partial=True)
            if not args.no_base:
                try:
                    base_rows = run_ncu(args.names, work, args.ncu_iters, "base", places=args.places)
                except SystemExit as exc:  # the base pass is optional: say so, keep the rest
                    print(f"ncu --clock-control base failed: {exc}", file=sys.stderr)
            keep(plain=plain, queue_study=queue, ncu_none=none_rows, ncu_base=base_rows, partial=True)
            try:
                duration_rows = run_ncu(
                    args.names, work, args.ref_iters, "none", DURATION_METRICS, "_duration", args.places
                )
            except SystemExit as exc:  # the two-metric run stands in as the reference: say so
                print(f"ncu with the duration alone failed: {exc}", file=sys.stderr)
            keep(plain=plain, queue_study=queue, ncu_none=none_rows, ncu_base=base_rows,
                 ncu_none_duration=duration_rows, partial=True)  # fmt: skip
            if not args.no_profile_metrics:
                try:
                    profile_rows = run_ncu(
                        args.names,
                        work,
                        min(args.ncu_iters, args.profile_iters),
                        "none",
                        PROFILE_METRICS,
                        "_profile",
                        args.places,
                    )
                except SystemExit as exc:  # a column beside the reference: say so, keep the rest
                    print(f"ncu with the profile's metrics failed: {exc}", file=sys.stderr)
    rows = build_rows(
        plain, pooled_refs(none_rows), pooled_refs(base_rows) if base_rows else None,
        pooled_refs(profile_rows) if profile_rows else None, pooled_refs(duration_rows) if duration_rows else None,
    )  # fmt: skip
    import torch

    header = (
        f"Timer accuracy on {torch.cuda.get_device_name()} (torch {torch.__version__}, "
        f"triton {getattr(triton, '__version__', 'absent')}), {time.strftime('%Y-%m-%d')}, "
        f"{args.rounds} rounds, ncu {args.ncu_iters} iterations per kernel "
        f"({args.ref_iters} in the reference run, {min(args.ncu_iters, args.profile_iters)} with the profile's metrics), "
        f"each kernel on {args.places} place(s) of its buffers."
    )
    text = render(header, plain, queue, rows)
    print(text)
    if args.out:
        args.out.write_text(text)
    keep(header=header, plain=plain, queue_study=queue, ncu_none=none_rows, ncu_base=base_rows,
         ncu_none_profile=profile_rows, ncu_none_duration=duration_rows, rows=rows)  # fmt: skip
    print(f"total {time.perf_counter() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
