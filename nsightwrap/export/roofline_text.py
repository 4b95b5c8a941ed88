"""Text of the roofline section, shared by the terminal, Markdown and HTML reports (no computing:
every number comes from ``analysis.roofline``)."""

from __future__ import annotations

import math

from nsightwrap.analysis.model import BenchmarkResult, KernelRoofline, Roofline, Roofs, RunResult
from nsightwrap.export import reportfmt as f
from nsightwrap.export.device_text import clock, rate


def _unit(roof: str | None) -> str:
    return "OP/s" if roof == "int8" else "FLOP/s"


def roofs_line(roofs: Roofs) -> str:
    """``measured (PATH): NVIDIA H200, memory 4.3 TB/s (hbm_read); bf16 790 TFLOP/s at 1.60 GHz, ...``."""
    if roofs.source == "none":
        return f"no roof known: {roofs.where}"
    peaks = ", ".join(
        f"{p.name} {rate(p.flops_per_s, _unit(p.name))}" + (f" @ {clock(p.sm_clock_hz)}" if p.sm_clock_hz else "")
        for p in roofs.peaks
    )
    mem = f"memory {rate(roofs.memory_bytes_per_s, 'B/s')} ({roofs.memory_name or '-'})"
    head = f"{roofs.source} ({roofs.where}): {roofs.gpu_name or 'GPU'}, {mem}; {peaks or 'no compute roof'}"
    return head + (f" [{roofs.note}]" if roofs.note else "")


HEADERS = ["benchmark", "time", "FLOP/s", "bytes/s", "FLOP/byte", "roof at clock", "bound", "% of roof", "work from"]
KERNEL_HEADERS = ["iter", "kernel", "duration", "FLOP/s", "bytes/s", "FLOP/byte", "roof at the kernel's clock", "bound", "% of roof"]


def pct(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.0f}%"


def intensity(v: float | None) -> str:
    """FLOP per byte: ``0.167``, ``62.1``, ``1370``."""
    if v is None or not math.isfinite(v):
        return "-"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def pct_cell(r: Roofline | KernelRoofline) -> str:
    """% of roof; never a figure above the roof (``inconsistent``: the cause is in the notes)."""
    if r.status == "inconsistent":
        return "inconsistent"
    if r.status == "uncounted":
        return "not counted"
    return pct(r.roof_pct)


def roof_cell(r: Roofline | KernelRoofline) -> str:
    """The roof this point is held against, at its clock: ``bf16 652 T`` or ``HBM 4.3 TB/s``."""
    if r.status == "uncounted":
        return "-"
    if r.compute_roof and r.roof_flops_per_s:
        return f"{r.compute_roof} {rate(r.roof_flops_per_s, _unit(r.compute_roof))}"
    if r.roof_bytes_per_s:
        return f"HBM {rate(r.roof_bytes_per_s, 'B/s')}"
    return "-"


def bench_row(b: BenchmarkResult) -> list[str] | None:
    r = b.roofline
    if r is None:
        return None
    src = [s for s in (f"FLOPs {r.flops_source}" if r.flops_source else "", f"bytes {r.bytes_source}" if r.bytes_source else "") if s]
    when = f"{r.time_source} {f.time_ns(r.time_ns)}" if r.time_source else "-"
    at = f" @ {clock(r.clock_hz)}" if r.compute_roof and r.roof_flops_per_s and r.clock_hz else ""
    return [
        f.label(b), when, rate(r.flops_per_s, _unit(r.compute_roof)), rate(r.bytes_per_s, "B/s"),
        intensity(r.intensity), roof_cell(r) + at, r.bound or "-", pct_cell(r), ", ".join(src) or "-",
    ]  # fmt: skip


def bench_rows(result: RunResult) -> list[list[str]]:
    return [row for b in result.benchmarks if (row := bench_row(b)) is not None]


def kernel_rows(b: BenchmarkResult) -> list[list[str]]:
    if b.roofline is None:
        return []
    return [
        [str(k.iteration), k.kernel_short, f.time_ns(k.duration_ns), rate(k.flops_per_s, _unit(k.compute_roof)),
         rate(k.bytes_per_s, "B/s"), intensity(k.intensity),
         roof_cell(k) + (f" @ {clock(k.sm_clock_hz)}" if k.compute_roof and k.sm_clock_hz else ""),
         k.bound or "-", pct_cell(k)]
        for k in b.roofline.kernels
    ]  # fmt: skip


def reasons(result: RunResult) -> list[tuple[str, str]]:
    """(benchmarks, why their roof is the one they are held against / what was not counted),
    one line per distinct reason."""
    by_text: dict[str, list[str]] = {}
    for b in result.benchmarks:
        r = b.roofline
        if r is None:
            continue
        # A roof named by the counters needs no explanation; an assumed one or a gap in the work does.
        text = "" if r.roof_reason.endswith("counted by ncu") or r.roof_reason.startswith("params") else r.roof_reason
        note = r.extra.get("note") if isinstance(r.extra, dict) else None
        for more in (note, r.issue if r.issue != text else ""):
            if more:
                text = f"{text}; {more}" if text else str(more)
        if text:
            by_text.setdefault(text, []).append(f.label(b))
        if r.clock_source and r.time_source:
            by_text.setdefault(f"rates at {r.clock_source}", []).append(f.label(b))
        for k in r.kernels:
            if k.status == "inconsistent":
                by_text.setdefault(f"kernel {k.kernel_short}: {k.issue}", []).append(f.label(b))
    return [(", ".join(names), text) for text, names in by_text.items()]


def not_drawn(result: RunResult) -> list[tuple[str, str]]:
    """(benchmarks, why) the chart leaves out, one line per reason (the causes are in ``reasons``)."""
    by_why: dict[str, list[str]] = {}
    for b in result.benchmarks:
        r = b.roofline
        if r is not None and r.status == "uncounted":
            by_why.setdefault(r.issue, []).append(f.label(b))
        elif r is not None and r.status == "inconsistent":
            by_why.setdefault("above its roof: an inconsistency, not a rate (the cause is in the notes below)", []).append(f.label(b))
    return [(", ".join(names), why) for why, names in by_why.items()]


EXPLAIN = (
    "Rates at the benchmark's median time: ncu's, carried to the loop's SM clock from nsys GPU metrics or the "
    "timer's stamps where the ratio is at that clock (else at ncu's own clock; a clock from the timer's probe or "
    "the host is not used here), or the timer's where ncu did not profile it; the compute roof is "
    "scaled from the clock it was measured at to that clock, the memory roof is not; FLOPs and bytes from "
    "nsightwrap.bench(flops=, bytes=) where given, else from ncu (DRAM bytes read + written; FMA = 2 FLOPs, "
    "tensor ops as counted). A point above its roof is an inconsistency (clock, time or work count), shown "
    "with its cause and not drawn."
)
