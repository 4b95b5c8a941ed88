"""The parts of a report that only a merged run has: the GPU of every benchmark, the shards
(where each ran, how it ended) and, for a replicated run, the GPU-to-GPU variance. Terminal
(rich), Markdown and HTML renderings, and the report JSON's read-back of these blocks."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nsightwrap.analysis.model import (
    BenchmarkResult,
    GpuSpread,
    GpuVariance,
    RunResult,
    ShardSummary,
    SlowGpu,
)
from nsightwrap.export import reportfmt as f
from nsightwrap.export.escape import html, md_cell

#: Rows of the spread table shown in the terminal and in Markdown (the widest spreads first);
#: the report JSON has every benchmark.
TOP_SPREADS = 15


def has_gpu_column(result: RunResult) -> bool:
    """Whether the summary names the GPU of each benchmark (a merged run)."""
    return any(b.gpu_uuid or b.shard is not None for b in result.benchmarks)


def gpu_tag(b: BenchmarkResult, *, full: bool = False) -> str:
    """The GPU a benchmark ran on: its UUID (short: ``GPU-…8e23aaed``, its last 8 digits, which
    tell the GPUs of one box apart), else its shard."""
    if b.gpu_uuid:
        return b.gpu_uuid if full else short_uuid(b.gpu_uuid)
    return f"shard {b.shard}" if b.shard is not None else "-"


def short_uuid(uuid: str) -> str:
    """``GPU-5c1c2662-50ec-2ab1-aa09-64c88e23aaed`` -> ``GPU-…8e23aaed``."""
    return f"{uuid[:4]}…{uuid[-8:]}" if len(uuid) > 16 else uuid


def _pct(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.1%}"


def _num(v: float | None, fmt: str, unit: str) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:{fmt}} {unit}"


def _shard_cells(s: ShardSummary) -> list[str]:
    return [
        str(s.index), s.status, s.gpu_uuid or "-", s.host or "-", str(s.benchmarks), f.clock_hz(s.sm_clock_hz),
        _num(s.temperature_c, ".0f", "C"), _num(s.power_limit_w, ".0f", "W"), _num(s.wall_s, ".1f", "s"),
    ]  # fmt: skip


_SHARD_HEAD = ["shard", "status", "GPU", "host", "benchmarks", "SM clock", "max temp", "power limit", "wall"]


def _spread_rows(v: GpuVariance, limit: int | None) -> list[GpuSpread]:
    rows = sorted(v.spreads, key=lambda s: -(s.spread or 0.0))
    return rows if limit is None else rows[:limit]


def _summary_line(v: GpuVariance) -> str:
    return (
        f"{len(v.spreads)} benchmark(s) on {len(v.gpus)} GPUs ({v.metric} medians): spread median "
        f"{_pct(v.median_spread)}, largest {_pct(v.max_spread)}; spread = (slowest - fastest) / median"
    )


def _slow_lines(v: GpuVariance) -> list[str]:
    if v.slow:
        return [s.message for s in v.slow]
    tail = f" ({v.note})" if v.note else ""
    return [f"no GPU is consistently slower (sign test at alpha {v.alpha:g}, at least {v.threshold:.0%} slower){tail}"]


# ------------------------------------------------------------------------------ terminal


def print_shards(result: RunResult, console: Console) -> None:
    """The shards table and, for a replicated run, the GPU-to-GPU variance."""
    if not result.shards:
        return
    t = Table(title=Text(f"shards ({len(result.shards)})"), title_justify="left")
    for h in _SHARD_HEAD:
        t.add_column(h, no_wrap=h not in ("GPU", "host"), overflow="fold")
    for s in result.shards:
        style = "green" if s.status == "complete" else "bold red"
        cells = _shard_cells(s)
        t.add_row(cells[0], Text(cells[1], style=style), *(Text(c) for c in cells[2:]))
    console.print()
    console.print(t)
    for s in result.shards:
        if s.message:
            console.print(Text.assemble((f"shard {s.index}: ", "bold red"), s.message))
    v = result.gpu_variance
    if v is None:
        return
    console.print()
    vt = Table(title=Text("GPU-to-GPU variance"), caption=_summary_line(v), title_justify="left", caption_justify="left")
    for h in ("benchmark", "fastest", "slowest", "spread", "slowest GPU"):
        vt.add_column(h, justify="left" if h in ("benchmark", "slowest GPU") else "right", no_wrap=h != "benchmark")
    for sp in _spread_rows(v, TOP_SPREADS):
        med = sp.medians_ns
        vt.add_row(
            Text(sp.benchmark), f.time_ns(med.get(sp.fastest or "")), f.time_ns(med.get(sp.slowest or "")),
            _pct(sp.spread), Text(short_uuid(sp.slowest or "-")),
        )  # fmt: skip
    console.print(vt)
    for line in _slow_lines(v):
        console.print(Text(line, style="bold red" if v.slow else "green"))


# ------------------------------------------------------------------------------ Markdown


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |",
            *("| " + " | ".join(r) + " |" for r in rows)]  # fmt: skip


def markdown_sections(result: RunResult) -> list[str]:
    """``## Shards`` and ``## GPU-to-GPU variance`` (empty for a run of one shard)."""
    if not result.shards:
        return []
    out = ["## Shards", "", *_md_table(_SHARD_HEAD, [[md_cell(c) for c in _shard_cells(s)] for s in result.shards]), ""]
    out += [f"- shard {s.index}: {md_cell(s.message)}" for s in result.shards if s.message]
    if any(s.message for s in result.shards):
        out.append("")
    v = result.gpu_variance
    if v is None:
        return out
    out += ["## GPU-to-GPU variance", "", md_cell(_summary_line(v)), ""]
    out += [f"- {'**' + md_cell(x) + '**' if v.slow else md_cell(x)}" for x in _slow_lines(v)] + [""]
    head = ["benchmark", *(short_uuid(g) for g in v.gpus), "spread"]
    rows = [
        [md_cell(s.benchmark), *(f.time_ns(s.medians_ns.get(g)) for g in v.gpus), _pct(s.spread)]
        for s in _spread_rows(v, None)
    ]
    out += ["<details><summary>every benchmark on every GPU (widest spread first)</summary>", "",
            *_md_table(head, rows), "", "</details>", ""]  # fmt: skip
    return out


# ------------------------------------------------------------------------------ HTML


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{html(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<div class='scroll'><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>"


def html_sections(result: RunResult) -> str:
    """The shards and the variance as HTML (empty for a run of one shard)."""
    if not result.shards:
        return ""
    parts = ["<h2>Shards</h2>", _html_table(_SHARD_HEAD, [_shard_cells(s) for s in result.shards])]
    parts += [f"<p><b>shard {s.index}</b>: {html(s.message)}</p>" for s in result.shards if s.message]
    v = result.gpu_variance
    if v is not None:
        parts += ["<h2>GPU-to-GPU variance</h2>", f"<p>{html(_summary_line(v))}</p>"]
        parts += [f"<p class='{'flagged' if v.slow else 'ok'}'>{html(x)}</p>" for x in _slow_lines(v)]
        head = ["benchmark", *(short_uuid(g) for g in v.gpus), "spread"]
        rows = [[s.benchmark, *(f.time_ns(s.medians_ns.get(g)) for g in v.gpus), _pct(s.spread)] for s in _spread_rows(v, None)]
        parts.append(_html_table(head, rows))
    return "\n".join(parts)


# ------------------------------------------------------------------------------ JSON read-back


def shards_from_dict(doc: Mapping[str, Any]) -> tuple[ShardSummary, ...]:
    """The report JSON's ``shards`` list back as ShardSummary (empty when absent)."""
    return tuple(ShardSummary(**_known(ShardSummary, s)) for s in doc.get("shards") or ())


def variance_from_dict(doc: Mapping[str, Any]) -> GpuVariance | None:
    """The report JSON's ``gpu_variance`` back as GpuVariance (None when absent)."""
    v = doc.get("gpu_variance")
    if not isinstance(v, Mapping):
        return None
    kw = _known(GpuVariance, v)
    kw["gpus"] = tuple(kw.get("gpus") or ())
    kw["spreads"] = tuple(GpuSpread(**_known(GpuSpread, s)) for s in v.get("spreads") or ())
    kw["slow"] = tuple(SlowGpu(**_known(SlowGpu, s)) for s in v.get("slow") or ())
    return GpuVariance(**kw)


def _known(cls: Any, d: Mapping[str, Any]) -> dict[str, Any]:
    from dataclasses import fields

    names = {x.name for x in fields(cls)}
    return {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in d.items() if k in names}
