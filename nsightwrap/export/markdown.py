"""Every Markdown view (GitHub-flavoured), one per result kind: the run report, a comparison (a
pull-request comment), a device file, and the report's sections (gap, energy, shards, roofline).

The run report is for a GitHub issue: a count line, the summary (worst first), the flagged and
unexplained benchmarks with evidence, the notes, the sections, the environment, the command to
reproduce, and per-kernel details folded in ``<details>``; cut to fit GitHub's limit by default.
Every name goes through ``escape.md_cell`` so kernel names (``<``, ``>``, ``|``, ``,``) never break
a table.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace

from nsightwrap.analysis.model import BenchmarkResult, RunResult
from nsightwrap.analysis.model import Verdict as Verdict_
from nsightwrap.compare.energy import Energy
from nsightwrap.compare.verdicts import Comparison, Verdict
from nsightwrap.device.result import GROUPS, DeviceFile
from nsightwrap.export import device_text as t
from nsightwrap.export import gap_text as g
from nsightwrap.export import power_fmt as pf
from nsightwrap.export import reportfmt as f
from nsightwrap.export import roofline_text as rt
from nsightwrap.export.compare_text import (
    energy_summary,
    fmt_change,
    fmt_energy,
    fmt_geomean,
    fmt_spread,
    reconcile_pair,
    settings_line,
    summary,
)
from nsightwrap.export.escape import code_block, html, md_cell
from nsightwrap.export.registry import exporter


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: list[str], rows: list[list[str]], left: tuple[str, ...] | None = None) -> list[str]:
    """Columns named in ``left`` (all when None) are left-aligned, the others (numbers) right-aligned."""
    align = ["---" if left is None or h in left else "---:" for h in header]
    return [_row(header), _row(align), *(_row(r) for r in rows)]


def _num(v: float | None, fmt: str) -> str:
    return "-" if v is None or not math.isfinite(v) else format(v, fmt)


def _summary(result: RunResult) -> list[str]:
    rows = []
    gpu = f.has_gpu_column(result)  # a merged run: the GPU (UUID) each benchmark ran on
    for b in f.by_verdict(result.benchmarks):  # worst verdict first
        rows.append(
            [
                md_cell(f.label(b)),
                *([md_cell(f.gpu_tag(b, full=True))] if gpu else []),
                *f.summary_numbers(b),
                (f"**{f.verdict_text(b.verdict)}**" if b.causes else f.verdict_text(b.verdict))
                + (f" ({f.noisy_text(b)})" if f.noisy_text(b) else ""),
            ]
        )
    header = ["benchmark", *(["GPU"] if gpu else []), *f.SUMMARY_NUMBER_HEADERS, "verdict"]
    return _table(header, rows, left=("benchmark", "GPU", "verdict"))


def _flagged(b: BenchmarkResult) -> list[str]:
    out = [f"### {md_cell(f.label(b))}", "", f"**{f.verdict_text(b.verdict)}**: {md_cell(f.ratio_line(b))}; "
           f"reference clock {f.clock_hz(b.ref_clock_hz)} ({md_cell(b.ref_clock_source)})", ""]  # fmt: skip
    for c in b.causes:
        ev = ", ".join(md_cell(f.evidence_item(k, v)) for k, v in c.evidence.items() if v is not None)
        out += [f"- **{c.code.value}**: {md_cell(c.message)}", f"  - evidence: {ev}", f"  - fix: {md_cell(c.fix)}"]
    return [*out, ""]


def _environment(result: RunResult) -> list[str]:
    return _table(["", ""], [[k, md_cell(v)] for k, v in f.environment_items(result)])


def _kernels(b: BenchmarkResult) -> list[str]:
    if b.ncu is None or not b.ncu.kernels:
        return []
    rows = [
        [
            str(k.iteration),
            md_cell(k.kernel),  # the full name: short names of different kernels can be equal
            f.time_ns(k.duration_ns),
            f.counters_run(k.counters_duration_ns),
            f.clock_hz(k.sm_clock_hz),
            _num(k.cycles, ",.0f"),
            _num(k.sm_throughput_pct, ".1f"),
            _num(k.memory_throughput_pct, ".1f"),
            k.clock_model.value,
            f.elasticity(k.elasticity, k.elasticity_source),
            f.base_run(k.base_duration_ns, k.base_sm_clock_hz),
            f.time_ns(k.normalized_ns),
        ]
        for k in b.ncu.kernels
    ]
    head = [
        "iter", "kernel", "duration", "with counters", "SM clock", "cycles", "SM %", "memory %", "clock model",
        "e", "at base clock", "at ref clock",
    ]  # fmt: skip
    return [
        f"<details><summary>{html(f.label(b))}: {len(b.ncu.kernels)} kernels profiled by ncu</summary>",
        "",
        *_table(head, rows, left=("kernel", "clock model")),
        "",
        "</details>",
        "",
    ]


#: GitHub's limit on an issue or comment body, in characters.
GITHUB_LIMIT = 65_536
#: Characters kept free for the line that says what was cut.
_CUT_NOTE_ROOM = 1_000


@dataclass(frozen=True)
class _Section:
    """One part of the report that the cut may shorten: a heading and blocks (one per benchmark,
    note or table), kept whole or left out, the first ones first."""

    what: str  # how the cut line names it whole: "the per-kernel details"
    part: str  # and in part: "the per-kernel details of {left} of {all} benchmarks"
    head: tuple[str, ...]
    blocks: tuple[tuple[str, ...], ...]


def _size(lines: Sequence[str]) -> int:
    return sum(len(x) + 1 for x in lines)


def _sections(result: RunResult) -> dict[str, _Section]:
    """The parts of the report, by name, each with the blocks a cut keeps or drops."""
    look = f.to_look_at(result)
    explained = [b for b in result.benchmarks if b.verdict is Verdict_.EXPLAINED and b.causes]
    notes = [f"- run: {md_cell(n)}" for n in result.notes]
    notes += [f"- **{md_cell(f.label(b))}**: {md_cell(n)}" for b in result.benchmarks for n in b.notes]
    with_gap = f.by_verdict([b for b in result.benchmarks if b.gap is not None])
    roof = roofline_markdown(result)
    power = power_markdown(result)
    kernels = [_kernels(b) for b in f.worst_first(result.benchmarks)]
    return {
        "look": _Section(
            "the causes of the flagged and unexplained benchmarks",
            "the causes of {left} of {all} flagged or unexplained benchmarks", (f"## {f.look_title(look)}", "") if look else (),
            tuple(tuple(_flagged(b)) for b in look),
        ),
        "explained": _Section(
            "the causes of the explained benchmarks", "the causes of {left} of {all} explained benchmarks", ("## Explained benchmarks", "") if explained else (),
            tuple(tuple(_flagged(b)) for b in explained),
        ),
        # Notes come before the long tables: they hold findings that are not flags (overlap, DRAM-bound).
        "notes": _Section("the notes", "{left} of {all} notes", ("## Notes", "") if notes else (), tuple((n,) for n in notes)),
        "gap": _Section("the gap section", "the gap tables of {left} of {all} benchmarks", tuple(_GAP_HEAD) if with_gap else (),
                        tuple(tuple(_gap_table(b, b.verdict in f.TO_LOOK_AT)) for b in with_gap)),
        "roofline": _Section("the roofline section", "the roofline section", (), (tuple(roof),) if roof else ()),
        "power": _Section("the energy and power section", "the energy and power section", (), (tuple(power),) if power else ()),
        "kernels": _Section(
            "the per-kernel details", "the per-kernel details of {left} of {all} benchmarks", ("## Per-kernel details", "") if any(kernels) else (),
            tuple(tuple(k) for k in kernels if k),
        ),
    }  # fmt: skip


#: Sections in the order a cut keeps them (the summary, environment and command always stay).
CUT_PRIORITY = ("look", "explained", "notes", "gap", "roofline", "power", "kernels")
#: Sections in the order the report shows them.
_SHOWN = ("look", "explained", "notes", "gap", "roofline", "power")


def _essentials(result: RunResult) -> tuple[list[str], list[str]]:
    """The report's head (count line, summary, shards) and tail (environment, command), never cut."""
    s = result.settings
    head = [
        "# nsightwrap report",
        "",
        f"{md_cell(f.count_text(result.benchmarks))}; tolerance {s.tolerance:.0%}; {md_cell(f.clock_text(result))}.",
        "",
    ]
    if not result.timer_found:
        head += ["No in-process timings were found: benchmarks come from the target's own NVTX ranges.", ""]
    head += ["## Summary", "", *_summary(result), ""]
    head += shard_sections(result)
    tail = ["## Environment", "", *_environment(result), ""]
    if result.environment.command:
        tail += ["## Reproduce", "", *code_block(shlex.join(result.environment.command), "sh"), ""]
    return head, tail


def _assemble(head: list[str], tail: list[str], secs: dict[str, _Section], kept: dict[str, int], cut: str) -> str:
    """The report: ``head``, the first ``kept[name]`` blocks of each section in the order shown,
    ``tail``, the per-kernel details last; ``cut`` (what was left out) under the count line."""
    out = list(head)
    if cut:
        out[4:4] = [f"> {cut}", ""]

    def add(name: str) -> None:
        sec, n = secs[name], kept.get(name, 0)
        if n:
            out.extend([*sec.head, *(line for blk in sec.blocks[:n] for line in blk)])
            if out[-1]:
                out.append("")  # a list's end, before the next heading

    for name in _SHOWN:
        add(name)
    out += tail
    add("kernels")
    return "\n".join(out)


@exporter("report", "md")
def render_markdown(result: RunResult, limit: int | None = GITHUB_LIMIT) -> str:
    """The report as GitHub-flavoured Markdown, cut to fit ``limit`` characters (None: the whole
    report). The cut keeps by priority (``CUT_PRIORITY``): the summary, then every flagged and
    unexplained benchmark's causes and fixes, the explained ones', the notes, the gap, roofline
    and power sections, then the per-kernel details; a line under the count line says what was
    left out and how to get it."""
    secs = _sections(result)
    head, tail = _essentials(result)
    every = {name: len(sec.blocks) for name, sec in secs.items()}
    full = _assemble(head, tail, secs, every, "")
    if limit is None or len(full) <= limit:
        return full
    budget = limit - _size(head) - _size(tail) - _CUT_NOTE_ROOM
    kept: dict[str, int] = {}
    left: list[str] = []
    for name in CUT_PRIORITY:
        sec = secs[name]
        if not sec.blocks:
            continue
        n = 0
        if not left and budget >= _size(sec.head):
            room = budget - _size(sec.head)
            while n < len(sec.blocks) and _size(sec.blocks[n]) <= room:
                room -= _size(sec.blocks[n])
                n += 1
            if n:
                budget = room
        kept[name] = n
        if n < len(sec.blocks):
            left.append(sec.part.format(left=len(sec.blocks) - n, all=len(sec.blocks)) if n else sec.what)
    if budget < 0 or kept.get("look", 0) < len(secs["look"].blocks):
        return _compact_fit(result, limit)  # not even the causes fit: a run of thousands of benchmarks
    whose = "GitHub's " if limit == GITHUB_LIMIT else "the "
    note = (
        f"Cut to fit {whose}{limit:,}-character limit (the whole report has {len(full):,}): left out "
        f"{'; '.join(left)}. The whole report: `nsightwrap report RUN --format md --full`, or `--format json` / `--format html`."
    )
    return _assemble(head, tail, secs, kept, note)


def _compact_fit(result: RunResult, limit: int) -> str:
    k = min(len(result.benchmarks), 200)
    while True:
        text = _compact(result, k, k // 4)
        if len(text) <= limit or k <= 1:
            return text
        k //= 2


def _compact(result: RunResult, k: int, d: int) -> str:
    n = len(result.benchmarks)
    worst = f.worst_first(result.benchmarks)
    shown = worst[:k]
    detailed = [b for b in worst[:d] if b.causes]
    out = [
        "# nsightwrap report",
        "",
        md_cell(f.count_text(result.benchmarks)) + ".",
        "",
        f"> Cut to fit GitHub's {GITHUB_LIMIT:,}-character limit: the summary shows the worst {len(shown)} of "
        f"{n} benchmarks ({n - len(shown)} left out), the causes of {len(detailed)}; per-kernel details, notes, "
        "and the gap, roofline and power sections are left out. The whole report: "
        "`nsightwrap report RUN --format md --full`, or `--format html` / `--format json`.",
        "",
        "## Summary (worst first)",
        "",
        *_summary(replace(result, benchmarks=tuple(shown))),
        "",
    ]
    if detailed:
        out += ["## Worst benchmarks", ""]
        for b in detailed:
            out += [f"<details><summary>{html(f.label(b))}</summary>", "", *_flagged(b), "</details>", ""]
    out += ["## Environment", "", *_environment(result), ""]
    return "\n".join(out)


def render_full_markdown(result: RunResult) -> str:
    """The whole report as GitHub-flavoured Markdown."""
    return render_markdown(result, limit=None)


# ------------------------------------------------------------------ the report's sections


def _gap_table(b: BenchmarkResult, causes_above: bool = False) -> list[str]:
    """The gap's parts, residual and total, folded; with ``causes_above`` a part already listed
    as one of ``b``'s causes says so instead of repeating its message, evidence and fix."""
    gap = b.gap
    assert gap is not None
    rows = [
        "| part | time | of the timing | measured from | fix |",
        "| --- | ---: | ---: | --- | --- |",
    ]
    listed = {c.message for c in b.causes} if causes_above else set()
    for p in gap.parts:
        name = f"**{md_cell(g.label(p))}**" if p.actionable else md_cell(g.label(p))
        if p.message and p.message in listed:
            rows.append(f"| {name} | {g.signed_us(p.ns)} | {g.share(p.ns, gap)} | {md_cell(p.cause)}: listed with its evidence and fix above | |")
            continue
        ev = ", ".join(md_cell(e) for e in g.evidence_items(p.evidence))
        what = md_cell(p.message) + (f" ({ev})" if ev else "")
        rows.append(f"| {name} | {g.signed_us(p.ns)} | {g.share(p.ns, gap)} | {what} | {md_cell(p.fix)} |")
    rows.append(
        f"| residual | {g.signed_us(gap.residual_ns)} | {g.share(gap.residual_ns, gap)} | "
        f"{md_cell('; '.join(x for x in ('no measurement', g.residual_basis(gap)) if x))} | |"
    )
    rows.append(
        f"| **total** | **{g.signed_us(gap.total_ns)}** | {g.share(gap.total_ns, gap)} | {md_cell(g.headline(gap))} | |"
    )
    state = f.verdict_text(b.verdict)
    return [
        f"<details><summary>{html(f.label(b))} ({state}): {html(g.compact(gap))}</summary>",
        "",
        *rows,
        "",
        "Parts in bold are ones the timing method can change; the verdict weighs them and the residual.",
        "",
        "</details>",
        "",
    ]


_GAP_HEAD = (
    "## Where the gap comes from",
    "",
    "timer - ncu (ncu at its own clocks), split into parts measured in this run; they add up, residual included.",
    "",
)


def gap_markdown(result: RunResult) -> list[str]:
    """``## Where the gap comes from``: a folded table per benchmark with a decomposition."""
    with_gap = [b for b in result.benchmarks if b.gap is not None]
    if not with_gap:
        return []
    ordered = f.by_verdict(with_gap)  # worst verdict first
    out = list(_GAP_HEAD)
    for b in ordered:
        out += _gap_table(b)
    return out


def power_markdown(result: RunResult) -> list[str]:
    """``## Energy and power`` with one row per benchmark that has NVML figures (else nothing)."""
    benches = pf.with_power(result)
    if not benches:
        return []
    head = "| " + " | ".join(pf.HEADERS) + " |"
    align = "| --- | " + " | ".join("---" if h == "throttled by" else "---:" for h in pf.HEADERS[1:]) + " |"
    rows = ["| " + " | ".join(md_cell(c) for c in pf.row(b)) + " |" for b in benches]
    notes = [f"- **{md_cell(who)}**: {md_cell(n)}" for who, n in pf.notes(result)]
    return ["## Energy and power", "", head, align, *rows, "", md_cell(pf.METHOD_NOTE), "", *notes, *([""] if notes else [])]


def _shard_table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |",
            *("| " + " | ".join(r) + " |" for r in rows)]  # fmt: skip


def shard_sections(result: RunResult) -> list[str]:
    """``## Shards`` and ``## GPU-to-GPU variance`` (empty for a run of one shard)."""
    if not result.shards:
        return []
    out = ["## Shards", "", *_shard_table(f.SHARD_HEADERS, [[md_cell(c) for c in f.shard_cells(s)] for s in result.shards]), ""]
    out += [f"- shard {s.index}: {md_cell(s.message)}" for s in result.shards if s.message]
    if any(s.message for s in result.shards):
        out.append("")
    v = result.gpu_variance
    if v is None:
        return out
    out += ["## GPU-to-GPU variance", "", md_cell(f.variance_line(v)), ""]
    out += [f"- {'**' + md_cell(x) + '**' if v.slow else md_cell(x)}" for x in f.slow_lines(v)] + [""]
    head = ["benchmark", *(f.short_uuid(g) for g in v.gpus), "spread"]
    rows = [
        [md_cell(s.benchmark), *(f.time_ns(s.medians_ns.get(g)) for g in v.gpus), f.percent(s.spread)]
        for s in f.spread_rows(v, None)
    ]
    out += ["<details><summary>every benchmark on every GPU (widest spread first)</summary>", "",
            *_shard_table(head, rows), "", "</details>", ""]  # fmt: skip
    return out


# ------------------------------------------------------------------ compare

_ICON = {
    Verdict.SAME: "SAME",
    Verdict.FASTER: "FASTER",
    Verdict.SLOWER: "**SLOWER**",
    Verdict.AMBIGUOUS: "_AMBIGUOUS_",
}


@exporter("compare", "md")
def compare_markdown(c: Comparison) -> str:
    """The comparison as a Markdown document (a summary, a table, added and removed lists)."""
    slower = c.slower
    head = "regression" if len(slower) == 1 else "regressions"
    title = f"{len(slower)} {head}" if slower else "no regression"
    out = [
        f"### nsightwrap compare: {title}",
        "",
        f"Baseline {md_cell(c.baseline)} ({md_cell(c.baseline_gpu or 'GPU unknown')}), "
        f"current {md_cell(c.current)} ({md_cell(c.current_gpu or 'GPU unknown')}).",
        "",
        md_cell(summary(c)),
        "",
        "| benchmark | verdict | baseline median [min, Q3] | current median [min, Q3] | change [CI] | cycles [CI] | reason |"
        + (" reconcile (baseline -> current) |" if c.reconcile else ""),
        "| --- | --- | --- | --- | --- | --- | --- |" + (" --- |" if c.reconcile else ""),
    ]
    for v in c.verdicts:
        cells = [
            md_cell(v.key),
            _ICON[v.verdict],
            md_cell(fmt_spread(v, "baseline")),
            md_cell(fmt_spread(v, "current")),
            md_cell(fmt_change(v.ratio)),
            md_cell(fmt_change(v.cycles_ratio)),
            f"`{v.reason.value}` {md_cell(v.message)}",
        ]
        if c.reconcile:  # each side's own reconcile verdict, in the report's words
            cells.append(" -> ".join(md_cell(w) for w in reconcile_pair(c, v.key)))
        out.append("| " + " | ".join(cells) + " |")
    if c.added:
        out += ["", "Added (only in current): " + ", ".join(md_cell(k) for k in c.added)]
    if c.removed:
        out += ["", "Removed (only in baseline): " + ", ".join(md_cell(k) for k in c.removed)]
    out += [
        "",
        f"Geometric mean of the time ratios: {md_cell(fmt_geomean(c.geomean_ratio))}.",
        "",
        *energy_markdown(c),
        f"<sub>{md_cell(settings_line(c))}</sub>",
        "",
    ]
    return "\n".join(out)


def energy_markdown(c: Comparison) -> list[str]:
    """A Markdown section with the energy verdicts, or []."""
    if not c.energy:
        return []
    out = [
        "#### Energy per call",
        "",
        "| benchmark | energy | baseline median [min, Q3] | current median [min, Q3] | change [CI] | reason |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for v in c.energy:
        word = f"**{v.verdict.value}**" if v.verdict is Energy.MORE else v.verdict.value
        out.append("| " + " | ".join([md_cell(v.key), word, md_cell(fmt_energy(v.baseline)), md_cell(fmt_energy(v.current)),
                                      md_cell(fmt_change(v.ratio)), f"`{v.reason.value}` {md_cell(v.message)}"]) + " |")  # fmt: skip
    return [*out, "", md_cell(energy_summary(c)), ""]


# ------------------------------------------------------------------ device file

def _device_table(headers: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    align = ["---" if i < left or i == len(headers) - 1 else "---:" for i in range(len(headers))]
    out = ["| " + " | ".join(md_cell(h) for h in headers) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    return out


@exporter("device", "md")
def render_device_markdown(dev: DeviceFile) -> str:
    """The device file as GitHub-flavoured Markdown."""
    out = ["# nsightwrap device", "", md_cell(t.heading(dev)), ""]
    if dev.warnings:
        out += [*(f"- **warning**: {md_cell(w)}" for w in dev.warnings), ""]
    for grp in GROUPS:
        rows = t.rows(dev, grp)
        if rows:
            out += [f"## {t.GROUP_TITLES[grp]}", "", *_device_table(t.ROW_HEADERS, rows), ""]
    if dev.bandwidth_curve:
        out += ["## Copy bandwidth against transfer size (L2 flushed)", "", *_device_table(t.CURVE_HEADERS, t.curve_rows(dev)), ""]
    if dev.latency_curve:
        out += ["## Pointer-chase latency against working set", "", *_device_table(t.LATENCY_HEADERS, t.latency_rows(dev)), ""]
    roofs = t.roofs_of(dev)
    if roofs.peaks or roofs.memory_bytes_per_s:
        out += [f"## Roofs: memory {t.rate(roofs.memory_bytes_per_s, 'B/s')} ({md_cell(roofs.memory_name or '-')})", "",
                *_device_table(t.RIDGE_HEADERS, t.ridge_rows(roofs)), ""]  # fmt: skip
    return "\n".join(out)


# ------------------------------------------------------------------ the roofline section


def _roofline_table(headers: list[str], rows: list[list[str]], left: tuple[int, ...]) -> list[str]:
    align = ["---" if i in left else "---:" for i in range(len(headers))]
    return ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |",
            *("| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows)]  # fmt: skip


def roofline_markdown(result: RunResult) -> list[str]:
    """Lines of the ``## Roofline`` section (none when the analysis made no roofline)."""
    if result.roofs is None:
        return []
    out = ["## Roofline", "", md_cell(rt.roofs_line(result.roofs)), ""]
    rows = rt.bench_rows(result)
    if rows:
        out += [*_roofline_table(rt.HEADERS, rows, (0, len(rt.HEADERS) - 1)), "", md_cell(rt.EXPLAIN), ""]
        out += [f"- **{md_cell(who)}**: {md_cell(why)}" for who, why in rt.reasons(result)]
        out.append("")
    for b in result.benchmarks:
        krows = rt.kernel_rows(b)
        if krows:
            out += [f"<details><summary>{html(f.label(b))}: {len(krows)} kernel(s) on the roofline (ncu counters)</summary>",
                    "", *_roofline_table(rt.KERNEL_HEADERS, krows, (1, 6, 7)), "", "</details>", ""]  # fmt: skip
    return out


# ------------------------------------------------------------------ the protocol: sections


@exporter("gap", "md")
def _gap(result: RunResult) -> str:
    return "\n".join(gap_markdown(result))


@exporter("power", "md")
def _power(result: RunResult) -> str:
    return "\n".join(power_markdown(result))


@exporter("shards", "md")
def _shards(result: RunResult) -> str:
    return "\n".join(shard_sections(result))


@exporter("roofline", "md")
def _roofline(result: RunResult) -> str:
    return "\n".join(roofline_markdown(result))
