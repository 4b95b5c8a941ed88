"""Every benchmark and every profiled kernel placed on the roofline of its GPU.

Roofs come from a device file measured by ``nsightwrap device`` (the run directory's
``env/device.json`` first, else the user's cache by GPU uuid), else from NVIDIA's datasheet for
the GPUs nsightwrap knows (marked ``datasheet``), else none (the report says so). Work comes from
``bench(flops=, bytes=)`` where given, else from ncu's counters:

- bytes: ``dram__bytes_read.sum + dram__bytes_write.sum`` (DRAM traffic, not L2 or L1);
- FLOPs: per thread instruction, FFMA/HFMA/DFMA count 2, FADD/FMUL/HADD/HMUL/DADD/DMUL 1
  (``sm__sass_thread_inst_executed_op_*_pred_on.sum``; a packed HFMA2 counts as one instruction,
  so half-precision SIMT math may be undercounted by up to 2x), plus the tensor pipe's operation
  counts ``sm__ops_path_tensor_src_*.sum``, one FLOP per counted op (docs/device.md shows a bf16
  GEMM's count equal to 2*M*N*K). ``sm__inst_executed_pipe_tensor.sum`` (instructions) is not
  turned into FLOPs: on Hopper the FLOPs per tensor instruction change with the tile shape.

The time is ncu's, carried to the loop's SM clock measured on the GPU where there is one (the
clock the benchmark's ratio is at), else at ncu's own clock; the timer's where ncu did not
profile the benchmark. The compute roof is the one of the kernel's dtype, scaled from the clock
it was measured at to that clock (``peak * f / f_peak``: tensor and FMA throughput follow the SM
clock); the memory roof is not scaled.

A kernel with tensor instructions and no tensor-op counters has unknown FLOPs: it is not placed
(``uncounted``), since against the memory roof alone a compute-bound GEMM reads as a slow
memory-bound kernel. A point above 100% of its roof is no rate but an inconsistency of the
clock, the time or the work count (``inconsistent``, with the causes found). Pure functions of
parsed data; results are ``model.Roofline`` / ``model.Roofs``.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from nsightwrap.analysis.iterations import ITER_PATH
from nsightwrap.analysis.model import (
    BenchmarkResult,
    KernelRoofline,
    Roofline,
    RoofPeak,
    Roofs,
    RunResult,
)
from nsightwrap.core.contract import uuid_key
from nsightwrap.core.errors import NsightwrapError, UsageError
from nsightwrap.device.roofs import DeviceRoofs, datasheet_roofs, measured_roofs
from nsightwrap.device.store import RUN_DEVICE_FILE, find_cached, read_device_file
from nsightwrap.timer.stats import median_or_none

#: SIMT instruction counters -> (kind, FLOPs per thread instruction).
SASS_FLOPS: Mapping[str, tuple[str, float]] = {
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": ("fp32", 2.0),
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": ("fp32", 1.0),
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": ("fp32", 1.0),
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum": ("fp16", 2.0),
    "sm__sass_thread_inst_executed_op_hadd_pred_on.sum": ("fp16", 1.0),
    "sm__sass_thread_inst_executed_op_hmul_pred_on.sum": ("fp16", 1.0),
    "sm__sass_thread_inst_executed_op_dfma_pred_on.sum": ("fp64", 2.0),
    "sm__sass_thread_inst_executed_op_dadd_pred_on.sum": ("fp64", 1.0),
    "sm__sass_thread_inst_executed_op_dmul_pred_on.sum": ("fp64", 1.0),
}
#: Tensor-pipe operation counters -> (kind, FLOPs per counted op). Where ncu reports both an
#: aggregate and its ``_sparsity_off`` part, only the aggregate is read (no double count).
TENSOR_OPS: Mapping[str, tuple[str, float]] = {
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum": ("tensor_bf16", 1.0),
    "sm__ops_path_tensor_src_fp16.sum": ("tensor_fp16", 1.0),  # Hopper's name (ncu 2025.3, gh100)
    "sm__ops_path_tensor_src_fp16_dst_fp32.sum": ("tensor_fp16", 1.0),
    "sm__ops_path_tensor_src_fp16_dst_fp16.sum": ("tensor_fp16", 1.0),
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum": ("tensor_tf32", 1.0),
    "sm__ops_path_tensor_src_fp8.sum": ("tensor_fp8", 1.0),
    "sm__ops_path_tensor_src_int8.sum": ("tensor_int8", 1.0),
    "sm__ops_path_tensor_src_fp64.sum": ("tensor_fp64", 1.0),
}
#: Said of tensor work whose FLOPs the run's ncu pass did not count (it is not placed: against the
#: memory roof alone a compute-bound GEMM would read as a slow memory-bound kernel).
UNCOUNTED = "tensor FLOPs not counted in this run (profile again without --no-roofline-counters)"
#: Above this % of its roof a point is an inconsistency of the clock, the time or the work count:
#: it is reported with its cause, never drawn or shown as a rate above the roof.
MAX_ROOF_PCT = 100.0
#: Clocks closer than this (relative) are one clock in the messages.
SAME_CLOCK = 0.02
#: A FLOP or byte count given to ``bench`` this much above ncu's count is "larger than the counters say".
WORK_SLACK = 0.01
#: Tensor instructions (counted, never turned into FLOPs: see the module docstring).
TENSOR_INST = "sm__inst_executed_pipe_tensor.sum"
#: The compute roof a kind of FLOP is held against, and why when it is not its own.
KIND_ROOF: Mapping[str, tuple[str, str]] = {
    "tensor_bf16": ("bf16", "bf16 tensor ops counted by ncu"),
    "tensor_fp16": ("fp16", "fp16 tensor ops counted by ncu"),
    "tensor_tf32": ("tf32", "tf32 tensor ops counted by ncu"),
    "tensor_fp8": ("fp8", "fp8 tensor ops counted by ncu"),
    "tensor_int8": ("int8", "int8 tensor ops counted by ncu"),
    "fp32": ("fp32", "fp32 FMA/ADD/MUL instructions counted by ncu"),
    "fp16": ("fp32", "half-precision SIMT instructions: held against the fp32 FMA roof (no fp16 SIMT roof is measured)"),
    "fp64": ("fp32", "fp64 instructions: held against the fp32 FMA roof (no fp64 roof is measured)"),
    "tensor_fp64": ("fp32", "fp64 tensor ops: held against the fp32 FMA roof (no fp64 roof is measured)"),
}
#: ``params["dtype"]`` spellings -> roof.
DTYPE_ROOF: Mapping[str, str] = {
    "bf16": "bf16", "bfloat16": "bf16", "torch.bfloat16": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16", "torch.float16": "fp16",
    "tf32": "tf32",
    "fp8": "fp8", "e4m3": "fp8", "float8_e4m3fn": "fp8", "torch.float8_e4m3fn": "fp8", "e5m2": "fp8",
    "float8_e5m2": "fp8", "torch.float8_e5m2": "fp8",
    "int8": "int8", "torch.int8": "int8",
    "fp32": "fp32", "float32": "fp32", "float": "fp32", "torch.float32": "fp32",
}  # fmt: skip


# ----------------------------------------------------------------------------- counters


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def kernel_flops(row: Mapping[str, Any]) -> tuple[float | None, dict[str, float], str]:
    """FLOPs of one ncu kernel row from its counters: (total or None, by kind, note).

    None when no FLOP counter was collected, or when tensor instructions ran but no tensor-op
    counter was collected (their FLOPs are then unknown)."""
    by_kind: dict[str, float] = {}
    seen = False
    for metric, (kind, per) in (*SASS_FLOPS.items(), *TENSOR_OPS.items()):
        v = _num(row.get(metric))
        if v is None:
            continue
        seen = True
        if v > 0:
            by_kind[kind] = by_kind.get(kind, 0.0) + v * per
    tensor_ops_known = any(_num(row.get(m)) is not None for m in TENSOR_OPS)
    tensor_inst = _num(row.get(TENSOR_INST)) or 0.0
    if not seen:
        return None, by_kind, "no FLOP counters in the ncu report"
    if tensor_inst > 0 and not tensor_ops_known:
        return None, by_kind, f"{tensor_inst:.0f} tensor instructions but no tensor-op counters: {UNCOUNTED}"
    return sum(by_kind.values()), by_kind, ""


def kernel_bytes(row: Mapping[str, Any]) -> float | None:
    """DRAM bytes read + written by one kernel (None when not collected)."""
    r, w = _num(row.get("dram_bytes_read")), _num(row.get("dram_bytes_write"))
    if r is None or w is None:
        return _num(row.get("dram_bytes"))
    return r + w


def dominant_roof(by_kind: Mapping[str, float]) -> tuple[str | None, str]:
    """The compute roof of the kind with the most FLOPs, and why."""
    if not by_kind:
        return None, ""
    kind = max(by_kind, key=lambda k: by_kind[k])
    return KIND_ROOF.get(kind, ("fp32", kind))


# ----------------------------------------------------------------------------- the roofs


def report_roofs(roofs: DeviceRoofs, note: str = "") -> Roofs:
    """The report's copy of a GPU's roofs."""
    return Roofs(
        source=roofs.source, where=roofs.where, gpu_name=roofs.gpu_name, gpu_uuid=roofs.gpu_uuid,
        memory_bytes_per_s=roofs.memory_bytes_per_s, memory_name=roofs.memory_name,
        peaks=tuple(RoofPeak(p.name, p.flops_per_s, p.sm_clock_hz) for p in roofs.peaks),
        l2_bytes_per_s=roofs.l2_bytes_per_s, mode=roofs.mode, created=roofs.created, note=note,
    )  # fmt: skip


def _same_model(a: str | None, b: str | None) -> bool:
    return bool(a and b and a.strip().lower() == b.strip().lower())


def find_roofs(
    run_dir: Path, gpu_name: str | None, gpu_uuid: str | None, device_file: Path | None = None
) -> Roofs:
    """The roofs for a run: ``device_file`` when given, else ``RUN_DIR/env/device.json``, else the
    user's cache by ``gpu_uuid``, else the datasheet by ``gpu_name``, else ``source="none"``."""
    notes: list[str] = []
    candidates: list[tuple[Path, str]] = []
    if device_file is not None:
        candidates.append((Path(device_file), "given"))
    candidates.append((Path(run_dir) / "env" / RUN_DEVICE_FILE, "run"))
    cached = find_cached(gpu_uuid)
    if cached is not None:
        candidates.append((cached, "cache"))
    for path, kind in candidates:
        if kind != "given" and not path.is_file():
            continue
        try:
            dev = read_device_file(path)
        except NsightwrapError as exc:
            if kind == "given":
                raise
            notes.append(f"{path} not used: {exc}")
            continue
        if gpu_name and not _same_model(dev.gpu.name, gpu_name):
            msg = f"{path} was measured on {dev.gpu.name}, this run ran on {gpu_name}"
            if kind == "given":
                raise UsageError(msg, hint="give the device file of this GPU model, or none")
            notes.append(msg + ": not used")
            continue
        if uuid_key(gpu_uuid) and uuid_key(dev.gpu.uuid) and uuid_key(gpu_uuid) != uuid_key(dev.gpu.uuid):
            notes.append(f"measured on another {dev.gpu.name} ({dev.gpu.uuid}) than this run's ({gpu_uuid})")
        if dev.mode == "quick":
            notes.append("measured with --quick")
        return report_roofs(measured_roofs(dev, where=str(path)), "; ".join(notes))
    sheet = datasheet_roofs(gpu_name, gpu_uuid)
    if sheet is not None:
        notes.append("no device file for this GPU: datasheet peaks at the boost clock; measure with nsightwrap device")
        return report_roofs(sheet, "; ".join(notes))
    why = f"no device file for {gpu_name or 'this GPU'} and no datasheet figures: run nsightwrap device on it"
    return Roofs(source="none", where=why, gpu_name=gpu_name, gpu_uuid=gpu_uuid, note="; ".join(notes))


def _peak_at(roofs: Roofs, name: str | None, clock_hz: float | None) -> float | None:
    peak = next((p for p in roofs.peaks if p.name == name), None)
    if peak is None:
        return None
    if clock_hz and peak.sm_clock_hz:
        return peak.flops_per_s * clock_hz / peak.sm_clock_hz
    return peak.flops_per_s


def place(
    roofs: Roofs, flops: float | None, nbytes: float | None, time_ns: float | None, clock_hz: float | None,
    roof: str | None,
) -> dict[str, Any]:  # fmt: skip
    """Achieved rates, intensity, the roofs at ``clock_hz``, the ridge, the bound and % of roof."""
    t = time_ns if time_ns and time_ns > 0 else None
    fps = flops / (t * 1e-9) if flops is not None and t else None
    bps = nbytes / (t * 1e-9) if nbytes is not None and t else None
    intensity = flops / nbytes if flops is not None and nbytes else None
    comp = _peak_at(roofs, roof, clock_hz)
    mem = roofs.memory_bytes_per_s
    ridge = comp / mem if comp and mem else None
    bound = pct = None
    if fps is not None and intensity and comp and mem:  # intensity 0: no FLOP counted, no roof
        bound = "compute" if intensity >= (ridge or math.inf) else "memory"
        pct = 100.0 * fps / min(comp, intensity * mem)
    elif bps is not None and mem and fps is None:
        pct = 100.0 * bps / mem  # no FLOP count: against the memory roof alone
    elif fps is not None and comp and intensity is None:
        pct = 100.0 * fps / comp  # no byte count: against the compute roof alone
    return {
        "flops_per_s": fps, "bytes_per_s": bps, "intensity": intensity, "bound": bound, "roof_pct": pct,
        "roof_flops_per_s": comp, "roof_bytes_per_s": mem, "ridge_intensity": ridge,
    }  # fmt: skip


# ----------------------------------------------------------------------------- per benchmark


def _rows_by_benchmark(
    kernels: pd.DataFrame | None, benchmarks: Sequence[BenchmarkResult]
) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """ncu rows of each measured iteration of every benchmark, in launch order, found in one pass
    over the ncu rows (a sweep has a thousand benchmarks: one scan each dominated the analysis)."""
    out: dict[str, dict[int, list[dict[str, Any]]]] = {b.nvtx_path: {} for b in benchmarks}
    if kernels is None or kernels.empty or "nvtx_ranges" not in kernels:
        return out
    heads = {f"{b.nvtx_path}/{b.iter_prefix}": b.nvtx_path for b in benchmarks}
    owner: list[str | None] = []
    its: list[float] = []
    for ranges in kernels["nvtx_ranges"]:
        paths = (ranges,) if isinstance(ranges, str) else tuple(ranges or ())
        found = next(
            ((heads[m.group(1)], int(m.group(2))) for p in paths if (m := ITER_PATH.fullmatch(str(p))) and m.group(1) in heads),
            None,
        )
        owner.append(found[0] if found else None)
        its.append(float(found[1]) if found else float("nan"))
    mine = kernels.assign(_nw_bench=pd.Series(owner, index=kernels.index, dtype=object), _nw_iter=its)
    mine = mine[mine["_nw_iter"].notna()].sort_values("launch_id", kind="stable")
    for row in mine.to_dict("records"):
        bench = str(row.pop("_nw_bench"))
        out[bench].setdefault(int(row["_nw_iter"]), []).append({str(k): v for k, v in row.items()})
    return out


def benchmark_roofline(
    b: BenchmarkResult, roofs: Roofs, kernels: pd.DataFrame | None, flops: float | None, nbytes: float | None,
    iters: dict[int, list[dict[str, Any]]] | None = None,
) -> Roofline:
    """The roofline of one benchmark: ``flops``/``nbytes`` are what ``bench`` was given (or None);
    ``iters``: its ncu rows per iteration, where already found (``_rows_by_benchmark``)."""
    if iters is None:
        iters = _rows_by_benchmark(kernels, [b])[b.nvtx_path]
    notes: list[str] = []
    # Counted work per iteration (median over iterations); FLOPs only where every kernel's are known.
    it_flops: list[float] = []
    it_bytes: list[float] = []
    by_kind: dict[str, float] = {}
    tensor_unknown = False
    for i, rows in sorted(iters.items()):
        got = [kernel_flops(r) for r in rows]
        if all(f is not None for f, _, _ in got):
            it_flops.append(sum(f or 0.0 for f, _, _ in got))
        else:
            notes += [n for _, _, n in got if n]
            tensor_unknown = tensor_unknown or any("tensor instructions" in n for _, _, n in got)
        bs = [kernel_bytes(r) for r in rows]
        if all(v is not None for v in bs):
            it_bytes.append(sum(v or 0.0 for v in bs))
        if i == min(iters):
            for _, kinds, _ in got:
                for k, v in kinds.items():
                    by_kind[k] = by_kind.get(k, 0.0) + v
    ncu_flops, ncu_bytes = median_or_none(it_flops), median_or_none(it_bytes)
    work_flops, flops_src = (flops, "bench") if flops else (ncu_flops, "ncu" if ncu_flops is not None else "")
    work_bytes, bytes_src = (nbytes, "bench") if nbytes else (ncu_bytes, "ncu dram" if ncu_bytes is not None else "")
    time_ns, time_src, clock, clock_src = _time_and_clock(b, bool(iters))
    timer_ns = b.timer.median_ns if b.timer is not None and math.isfinite(b.timer.median_ns) else None
    uncounted = tensor_unknown and work_flops is None
    roof, reason = _benchmark_roof(b, {} if tensor_unknown else by_kind, roofs, tensor_unknown)
    if uncounted:
        roof, reason = None, UNCOUNTED
    elif work_flops is None:
        roof, reason = None, "no FLOP count: against the memory roof"
    elif work_flops == 0:  # counted, and none: a copy or a fill, held against the memory roof
        roof, reason = None, "ncu counted no FLOPs: against the memory roof"
    placed = place(roofs, work_flops or None, work_bytes, time_ns, clock, roof)
    if work_flops == 0:
        placed.update(flops_per_s=0.0, intensity=0.0, bound="memory")
    first = min(iters) if iters else None
    ks = tuple(kernel_roofline(r, first, roofs) for r in iters.get(first, [])) if first is not None else ()
    extra: dict[str, Any] = {"ncu_flops": ncu_flops, "ncu_dram_bytes": ncu_bytes, "flops_by_kind": by_kind}
    if time_src == "ncu" and b.ncu is not None and b.ncu.median_ns != time_ns:
        extra["ncu_raw_ns"], extra["ncu_clock_hz"] = b.ncu.median_ns, b.ncu.sm_clock_hz
    if time_src == "ncu" and timer_ns:
        extra["timer_ns"] = timer_ns
        extra["timer_flops_per_s"] = work_flops / (timer_ns * 1e-9) if work_flops is not None else None
        extra["timer_bytes_per_s"] = work_bytes / (timer_ns * 1e-9) if work_bytes is not None else None
    if notes and not tensor_unknown:  # (an unknown tensor dtype is said by roof_reason already)
        extra["note"] = sorted(set(notes))[0]
    status, over = _status(placed, uncounted)
    issue = UNCOUNTED if status == "uncounted" else ""
    if over is not None:
        issue = _over_roof(b, over, roof if placed["bound"] != "memory" else None, roofs, clock, clock_src,
                           work_flops, flops_src, ncu_flops, work_bytes, bytes_src, ncu_bytes, time_ns, time_src)  # fmt: skip
    return Roofline(
        flops=work_flops, bytes=work_bytes, flops_per_s=placed["flops_per_s"], bytes_per_s=placed["bytes_per_s"],
        intensity=placed["intensity"], bound=placed["bound"], roof_pct=placed["roof_pct"],
        peak_source=roofs.source, extra=extra, time_ns=time_ns, time_source=time_src, clock_hz=clock,
        flops_source=flops_src, bytes_source=bytes_src, compute_roof=roof, roof_reason=reason,
        roof_flops_per_s=placed["roof_flops_per_s"], roof_bytes_per_s=placed["roof_bytes_per_s"],
        ridge_intensity=placed["ridge_intensity"], kernels=ks, clock_source=clock_src,
        roof_clock_hz=_peak_clock(roofs, roof), status=status, issue=issue, over_roof_pct=over,
    )  # fmt: skip


def _measured_clock(b: BenchmarkResult) -> float | None:
    """The benchmark's SM clock measured on the GPU, where its ratio is at that clock."""
    c = b.clock
    return c.mean_hz if c is not None and b.ref_clock_hz and c.mean_hz == b.ref_clock_hz else None


def _time_and_clock(b: BenchmarkResult, profiled: bool) -> tuple[float | None, str, float | None, str]:
    """(time per call, whose, the SM clock it is at, what that clock is) for the rates.

    ncu's time where ncu profiled the benchmark's kernels: carried to the loop's clock measured on
    the GPU (``ncu.normalized_ns``, the time the ratio is taken against), else at ncu's own clock.
    Else the timer's median, at the measured clock or else at the timer's own clock reading. The
    compute roof is scaled to the same clock, so a compute-bound kernel's % of roof does not
    depend on which clock it is: its rate and its roof both follow the clock."""
    hz = _measured_clock(b)
    gpu = f"the SM clock measured on the GPU: {b.clock.source}" if hz and b.clock is not None else ""
    if profiled and b.ncu is not None and b.ncu.median_ns:
        if hz and b.ncu.normalized_ns:
            return b.ncu.normalized_ns, "ncu", hz, gpu
        # The ratio's own words where it is at ncu's clock too ("ncu's own clock: nsys slowed ...").
        src = b.ref_clock_source if b.ref_clock_source.startswith("ncu's own clock") else "ncu's own clock"
        return b.ncu.median_ns, "ncu", b.ncu.sm_clock_hz, src
    if b.timer is not None and math.isfinite(b.timer.median_ns):
        if hz:
            return b.timer.median_ns, "timer", hz, gpu
        return b.timer.median_ns, "timer", b.timer.sm_clock_hz, f"the timer's clock {b.timer.clock_source or 'reading'}"
    return None, "", None, ""


def _peak_clock(roofs: Roofs, name: str | None) -> float | None:
    return next((p.sm_clock_hz for p in roofs.peaks if p.name == name), None)


def _ghz(hz: float) -> str:
    return f"{hz / 1e9:.2f} GHz"


def _other_clocks(b: BenchmarkResult) -> list[tuple[str, float]]:
    """Every reading of the benchmark's SM clock there is: (whose, Hz)."""
    out: list[tuple[str, float]] = []
    if b.clock is not None:
        out.append((f"the clock measured on the GPU ({b.clock.source})", b.clock.mean_hz))
    if b.ncu is not None and b.ncu.sm_clock_hz:
        out.append(("ncu's clock", b.ncu.sm_clock_hz))
    if b.timer is not None:
        stamp = _num((b.timer.method or {}).get("stamp_clock_hz"))
        if stamp:
            out.append(("the timer's stamps around its samples", stamp))
        if b.timer.sm_clock_hz:
            out.append((f"the timer's clock {b.timer.clock_source or 'reading'}", b.timer.sm_clock_hz))
    return [(w, f) for w, f in out if f and f > 0]


def _status(placed: dict[str, Any], uncounted: bool) -> tuple[str, float | None]:
    """A placed point's status (``placed``, ``uncounted``, ``unplaced``, ``inconsistent``) and, when
    inconsistent, its % of the roof; ``placed`` loses what must not be shown (the % above the roof,
    the bound of tensor work whose FLOPs were not counted)."""
    pct = placed["roof_pct"]
    if uncounted:
        placed.update(roof_pct=None, bound=None)
        return "uncounted", None
    if pct is None:
        return "unplaced", None
    if pct > MAX_ROOF_PCT:
        placed.update(roof_pct=None)
        return "inconsistent", float(pct)
    return "placed", None


def _over_roof(
    b: BenchmarkResult, pct: float, compute: str | None, roofs: Roofs, clock: float | None, clock_src: str,
    flops: float | None, flops_src: str, ncu_flops: float | None, nbytes: float | None, bytes_src: str,
    ncu_bytes: float | None, time_ns: float | None, time_src: str,
) -> str:  # fmt: skip
    """Why a point is above its roof, from what was measured: the clock the roof was scaled to, the
    clock it was measured at, other readings of the benchmark's clock, the work given to ``bench``
    against ncu's counters, the timing against its kernels' own time."""
    causes: list[str] = []
    what = f"the {compute} roof" if compute else "the memory roof"
    peak = _peak_clock(roofs, compute) if compute else None
    if compute and clock:
        if peak and abs(clock / peak - 1) > SAME_CLOCK:
            causes.append(f"the roof was measured at {_ghz(peak)}, the kernel ran at {_ghz(clock)} ({clock_src}) and "
                          "the roof is scaled to it")  # fmt: skip
        # The rate is fixed, the roof follows the clock: at clock f the point is at pct * clock / f.
        fits = [(w, f, pct * clock / f) for w, f in _other_clocks(b) if abs(f / clock - 1) > SAME_CLOCK]
        fits = [x for x in fits if x[2] <= MAX_ROOF_PCT]
        if fits:
            w, f, at = max(fits, key=lambda x: x[2])
            causes.append(f"that clock may read low: {w} read {_ghz(f)}, at which it is {at:.0f}% of the roof")
    if compute and flops_src == "bench" and flops:
        if ncu_flops:
            if flops > ncu_flops * (1 + WORK_SLACK):
                causes.append(f"the FLOP count (flops={flops:.4g} given to bench) is {100 * (flops / ncu_flops - 1):.0f}% "
                              f"larger than ncu's counters say ({ncu_flops:.4g})")  # fmt: skip
        else:
            causes.append(f"the FLOP count (flops={flops:.4g} given to bench) is not checked: ncu counted none for it")
    if not compute and bytes_src == "bench" and nbytes and ncu_bytes and nbytes > ncu_bytes * (1 + WORK_SLACK):
        causes.append(f"the byte count (bytes={nbytes:.4g} given to bench) is {100 * (nbytes / ncu_bytes - 1):.0f}% "
                      f"larger than ncu's DRAM counters say ({ncu_bytes:.4g}): the rest was served from L2, or "
                      "counted more than once")  # fmt: skip
    if time_src == "timer" and time_ns and b.timer is not None:
        k = _num(b.timer.kernel_ns)
        if k and k > time_ns * (1 + SAME_CLOCK):
            causes.append(f"the timing ({time_ns / 1e3:.2f} us) is shorter than its own kernels ({k / 1e3:.2f} us, CUPTI)")
    if roofs.source == "datasheet":
        causes.append("the roof is the datasheet's, not measured on this GPU (nsightwrap device measures it)")
    elif roofs.mode == "quick":
        causes.append("the roof was measured with nsightwrap device --quick")
    if not causes:
        causes.append("no clock or work count explains it: the roof may have been measured on another problem")
    return f"at {pct:.0f}% of {what}: an inconsistency, not a rate; " + "; ".join(causes)


def _benchmark_roof(
    b: BenchmarkResult, by_kind: Mapping[str, float], roofs: Roofs, tensor_unknown: bool = False
) -> tuple[str | None, str]:
    """The compute roof of a benchmark: its ``dtype`` parameter, else the kind of FLOP ncu counted
    most of, else (tensor work of unknown dtype, or nothing counted) the 16-bit tensor roof."""
    dtype = b.params.get("dtype") if b.params else None
    if dtype is not None and str(dtype).lower() in DTYPE_ROOF:
        return DTYPE_ROOF[str(dtype).lower()], f"params dtype={dtype}"
    roof, why = dominant_roof(by_kind)
    if roof is not None:
        return roof, why
    fallback = "bf16" if any(p.name == "bf16" for p in roofs.peaks) or not roofs.peaks else roofs.peaks[0].name
    if tensor_unknown:
        return fallback, (f"tensor instructions ran, their FLOPs and dtype uncounted: {fallback} assumed; "
                          "a profile without --no-roofline-counters counts them, params={'dtype': ...} names the dtype")  # fmt: skip
    return fallback, f"{fallback} assumed: no dtype parameter, and ncu counted no FLOPs of a known kind"


def kernel_roofline(row: Mapping[str, Any], iteration: int | None, roofs: Roofs) -> KernelRoofline:
    """One ncu kernel against the roofs, at its own clock."""
    flops, by_kind, _ = kernel_flops(row)
    nbytes = kernel_bytes(row)
    roof, _ = dominant_roof(by_kind)
    dur = _num(row.get("duration_ns"))
    clock = _num(row.get("sm_clock_hz"))
    placed = place(roofs, flops if flops else None, nbytes, dur, clock, roof)
    status, over = _status(placed, flops is None and (_num(row.get(TENSOR_INST)) or 0.0) > 0)
    issue = UNCOUNTED if status == "uncounted" else ""
    if over is not None:
        pct = over
        peak = _peak_clock(roofs, roof) if placed["bound"] == "compute" else None
        at = f" at the kernel's clock under ncu ({_ghz(clock)})" if clock and placed["bound"] == "compute" else ""
        was = f"; the roof was measured at {_ghz(peak)}" if peak and clock and abs(clock / peak - 1) > SAME_CLOCK else ""
        what = f"the {roof} roof" if placed["bound"] == "compute" else "the memory roof"
        issue = f"at {pct:.0f}% of {what}{at}: an inconsistency, not a rate{was}"
    return KernelRoofline(
        iteration=int(iteration or 0), kernel=str(row.get("kernel") or ""),
        kernel_short=str(row.get("kernel_short") or row.get("kernel") or ""), duration_ns=float(dur or 0.0),
        sm_clock_hz=clock, flops=flops if flops else None, bytes=nbytes, flops_per_s=placed["flops_per_s"],
        bytes_per_s=placed["bytes_per_s"], intensity=placed["intensity"], bound=placed["bound"],
        roof_pct=placed["roof_pct"], compute_roof=roof if flops else None,
        roof_flops_per_s=placed["roof_flops_per_s"], roof_bytes_per_s=placed["roof_bytes_per_s"],
        flops_by_kind=dict(by_kind), status=status, issue=issue, over_roof_pct=over,
    )  # fmt: skip


# ----------------------------------------------------------------------------- the run


def _work(sidecars: Sequence[tuple[Any, Mapping[str, Any]]]) -> dict[str, tuple[float | None, float | None]]:
    """(flops, bytes) per benchmark NVTX path, as given to ``bench`` (first non-null wins)."""
    out: dict[str, tuple[float | None, float | None]] = {}
    for _, doc in sidecars:
        for e in doc.get("benchmarks") or ():
            if not isinstance(e, Mapping) or not isinstance(e.get("name"), str):
                continue
            path = str(e.get("nvtx_path") or f"nsightwrap:{e['name']}")
            f0, b0 = out.get(path, (None, None))
            out[path] = (f0 if f0 else _num(e.get("flops")), b0 if b0 else _num(e.get("bytes")))
    return out


def run_gpu(result: RunResult, sidecars: Sequence[tuple[Any, Mapping[str, Any]]]) -> tuple[str | None, str | None]:
    """(name, uuid) of the run's GPU: the timer's device, else nvidia-smi's first GPU."""
    name, uuid = result.environment.gpu_name, None
    for _, doc in sidecars:
        d = doc.get("device")
        if isinstance(d, Mapping):
            name = name or d.get("name")
            uuid = uuid or d.get("uuid")
    if uuid is None:
        xml = Path(result.run_dir) / "env" / "nvidia-smi-q-x.xml"
        if xml.is_file():
            from nsightwrap.parsers.smi import read_smi_xml

            try:
                uuid = read_smi_xml(xml).uuid
            except NsightwrapError:
                uuid = None
    return (str(name) if name else None), (str(uuid) if uuid else None)


def attach_rooflines(
    result: RunResult,
    kernels: pd.DataFrame | None,
    sidecars: Sequence[tuple[Any, Mapping[str, Any]]],
    device_file: Path | None = None,
) -> RunResult:
    """``result`` with the roofs of its GPU and every benchmark's ``roofline``."""
    name, uuid = run_gpu(result, sidecars)
    roofs = find_roofs(Path(result.run_dir), name, uuid, device_file)
    work = _work(sidecars)
    rows = _rows_by_benchmark(kernels, result.benchmarks)
    benches = tuple(
        replace(
            b, roofline=benchmark_roofline(b, roofs, kernels, *work.get(b.nvtx_path, (None, None)), rows.get(b.nvtx_path))
        )
        for b in result.benchmarks
    )
    return replace(result, benchmarks=benches, roofs=roofs)


def copy_device_file(run_dir: Path, uuids: Sequence[str | None], explicit: Path | None = None) -> Path | None:
    """Put the device file of the run's GPU into ``RUN_DIR/env/device.json``: ``explicit`` when
    given (checked first), else the cached one of the first GPU in ``uuids`` that has one."""
    src = explicit
    if src is not None:
        read_device_file(src)  # refuses a foreign or unknown-version file with one line
    else:
        src = next((p for u in uuids if (p := find_cached(u)) is not None), None)
    if src is None:
        return None
    dst = Path(run_dir) / "env" / RUN_DEVICE_FILE
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst
