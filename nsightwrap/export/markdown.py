"""Markdown report for a GitHub issue: summary, flagged benchmarks with evidence, environment,
the command to reproduce, and per-kernel details folded in ``<details>``. Every name goes
through ``escape.md_cell`` so kernel names (``<``, ``>``, ``|``, ``,``) never break a table."""

from __future__ import annotations

import math
import shlex

from nsightwrap.analysis.model import BenchmarkResult, RunResult
from nsightwrap.export import reportfmt as f
from nsightwrap.export import shards
from nsightwrap.export.escape import html, md_cell
from nsightwrap.export.gap_markdown import gap_markdown
from nsightwrap.export.power_markdown import power_markdown
from nsightwrap.export.roofline_markdown import roofline_markdown


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
    gpu = shards.has_gpu_column(result)  # a merged run: the GPU (UUID) each benchmark ran on
    for b in f.by_verdict(result.benchmarks):  # worst verdict first
        rows.append(
            [
                md_cell(f.label(b)),
                *([md_cell(shards.gpu_tag(b, full=True))] if gpu else []),
                *f.summary_numbers(b),
                f"**{f.verdict_text(b.verdict)}**" if b.causes else f.verdict_text(b.verdict),
            ]
        )
    header = ["benchmark", *(["GPU"] if gpu else []), *f.SUMMARY_NUMBER_HEADERS, "verdict"]
    return _table(header, rows, left=("benchmark", "GPU", "verdict"))


def _flagged(b: BenchmarkResult) -> list[str]:
    out = [f"### {md_cell(f.label(b))}", "", f"**{f.verdict_text(b.verdict)}**: ratio {f.ratio(b.ratio)} (at ncu's own clock {f.ratio(b.ratio_raw)}), "
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


def render_markdown(result: RunResult, limit: int | None = GITHUB_LIMIT) -> str:
    """The report as GitHub-flavoured Markdown, cut to fit ``limit`` characters (None: the whole
    report): then the worst benchmarks come first and the text says what it left out."""
    full = render_full_markdown(result)
    if limit is None or len(full) <= limit:
        return full
    k = min(len(result.benchmarks), 200)
    while True:
        text = _compact(result, k, k // 4)
        if len(text) <= limit or k <= 1:
            return text
        k //= 2


def _compact(result: RunResult, k: int, d: int) -> str:
    from dataclasses import replace

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
        "`nsightwrap report RUN -f md --full`, or `-f html` / `-f json`.",
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
    s = result.settings
    look = f.to_look_at(result)
    out = [
        "# nsightwrap report",
        "",
        f"{md_cell(f.count_text(result.benchmarks))}; tolerance {s.tolerance:.0%}, "
        f"reference clock `{md_cell(s.clock_ref)}`; ratio = timer / ncu at the reference clock.",
        "",
    ]
    if not result.timer_found:
        out += ["No in-process timings were found: benchmarks come from the target's own NVTX ranges.", ""]
    out += ["## Summary", "", *_summary(result), ""]
    out += shards.markdown_sections(result)
    if look:
        out += [f"## {f.look_title(look)}", ""]
        for b in look:
            out += _flagged(b)
    # Notes come before the long tables: they hold findings that are not flags (overlap, DRAM-bound).
    notes = [f"run: {md_cell(n)}" for n in result.notes]
    notes += [f"**{md_cell(f.label(b))}**: {md_cell(n)}" for b in result.benchmarks for n in b.notes]
    if notes:
        out += ["## Notes", "", *(f"- {n}" for n in notes), ""]
    out += gap_markdown(result)
    out += roofline_markdown(result)
    out += power_markdown(result)
    out += ["## Environment", "", *_environment(result), ""]
    if result.environment.command:
        out += ["## Reproduce", "", "```sh", shlex.join(result.environment.command), "```", ""]
    details = [line for b in result.benchmarks for line in _kernels(b)]
    if details:
        out += ["## Per-kernel details", "", *details]
    return "\n".join(out)
