"""Every HTML view, one self-contained document per result kind (inline CSS and SVG; no script,
font or style fetched): the run report, a device file, and the report's sections (gap, energy,
shards, roofline). Charts are ``charts``'s (SVG written by ``svgplot``; the device curves by
matplotlib); every name goes through ``escape.html``.

At scale the report stays small and fast: one chart per benchmark up to ``MAX_CHARTS``, else the
worst that many (the roofline section too), and waterfalls for the worst flagged and unexplained
ones (``MAX_WATERFALLS``); the summary table holds every benchmark and the text says what was
left out.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import replace

from nsightwrap.analysis.model import (
    BenchmarkResult,
    KernelRoofline,
    KernelTiming,
    Roofline,
    RunResult,
    Verdict,
)
from nsightwrap.device.result import GROUPS, DeviceFile
from nsightwrap.export import charts
from nsightwrap.export import device_text as t
from nsightwrap.export import gap_text as g
from nsightwrap.export import power_fmt as pf
from nsightwrap.export import reportfmt as f
from nsightwrap.export import roofline_text as rt
from nsightwrap.export.charts import ChartPoint, ChartRoof, curve_svg, roofline_svg
from nsightwrap.export.escape import html as esc
from nsightwrap.export.registry import exporter

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222;max-width:1300px}
table{border-collapse:collapse;margin:0.5em 0 1.5em 0;font-size:14px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right;vertical-align:top}
thead th{background:#f3f3f3} th.l,td.l{text-align:left}
td{white-space:nowrap} .scroll{overflow-x:auto}
td.name{text-align:left;font-family:ui-monospace,Menlo,monospace}
td.kernel{text-align:left;max-width:560px;white-space:normal}
td.kernel .full{display:block;font-family:ui-monospace,Menlo,monospace;font-size:12px;color:#555;overflow-wrap:anywhere}
tr.flagrow td{background:#fdf0f0} tr.newiter td{border-top:2px solid #888}
.flagged{color:#b00;font-weight:bold} .unexplained{color:#a0a;font-weight:bold} .explained{color:#077}
.ok{color:#080} .other{color:#a60} .noisy{color:#a60} tr.unexplrow td{background:#fbf0fb}
.cause{margin:0.3em 0 0.8em 1em;padding-left:0.8em;border-left:3px solid #d88}
.ev{color:#555;font-size:13px;font-family:ui-monospace,monospace;margin:0.2em 0}
.ev span{white-space:nowrap;margin-right:1.2em;display:inline-block}
table.kv th{background:none;text-align:left;font-weight:normal;color:#555} table.kv td{text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:12px} .chart{display:inline-block;border:1px solid #ddd;padding:4px}
.notes li{margin:0.3em 0} code,pre{background:#f6f6f6;padding:2px 4px}
figure.timeline{margin:0.5em 0 1.5em 0} figcaption{color:#555;font-size:13px;max-width:900px;margin-top:0.3em}
"""


#: Bar charts drawn at most: one per benchmark up to this many, else the worst this many (a
#: chart is about 4 KB; at 1,000 benchmarks the summary table carries the rest).

MAX_CHARTS = 24


#: Waterfalls drawn at most (the worst flagged and unexplained benchmarks).

MAX_WATERFALLS = 8


_ROW_CLASS = {Verdict.FLAGGED: "flagrow", Verdict.UNEXPLAINED: "unexplrow"}


def _bar_charts(result: RunResult, max_charts: int) -> list[str]:
    """``Timings side by side``: a chart per benchmark, or for the worst ``MAX_CHARTS`` when
    there are more, with a line saying how many were left out (the summary table has them all)."""
    n = len(result.benchmarks)
    chosen = list(result.benchmarks) if n <= max_charts else f.worst_first(result.benchmarks)[:max_charts]
    svgs = [c for b in chosen if (c := charts.bar_chart(b))]
    if not svgs:
        return []
    out = ["<h2>Timings side by side</h2>"]
    if n > max_charts:
        out.append(
            f"<p>Charts of the worst {len(chosen)} of {n:,} benchmarks (worst verdict first, then the ratio "
            f"farthest from 1); the other {n - len(chosen):,} are in the summary table above.</p>"
        )
    return [*out, "<div class='charts'>", *(f"<div class='chart'>{c}</div>" for c in svgs), "</div>"]


def _roofline(result: RunResult, max_charts: int) -> list[str]:
    """The roofline section; beyond ``max_charts`` benchmarks, of the worst that many only (the
    chart draws a point and a legend entry per benchmark and kernel), saying so."""
    n = len(result.benchmarks)
    if result.roofs is None or n <= max_charts:
        return roofline_html(result)
    worst = f.worst_first(result.benchmarks)[:max_charts]
    parts = roofline_html(replace(result, benchmarks=tuple(worst)))
    note = (
        f"<p>The roofline of the worst {len(worst)} of {n:,} benchmarks (chart and table); every benchmark's "
        "is in <code>nsightwrap report RUN -f md --full</code> and <code>-f json</code>.</p>"
    )
    return parts[:1] + [note] + parts[1:]


def _table(head: list[str], rows: list[list[str]], left: int = 1, row_class: list[str] | None = None) -> str:
    """A table whose first ``left`` columns hold names (left-aligned); cells are already escaped."""
    th = "".join(f'<th class="l">{h}</th>' if i < left else f"<th>{h}</th>" for i, h in enumerate(head))
    classes = row_class or [""] * len(rows)
    body = "".join(
        (f'<tr class="{cls}">' if cls else "<tr>")
        + "".join(f'<td class="name">{c}</td>' if i < left else f"<td>{c}</td>" for i, c in enumerate(r))
        + "</tr>"
        for r, cls in zip(rows, classes, strict=True)
    )
    # Numbers never wrap inside a cell; a table wider than the page scrolls instead.
    return f"<div class='scroll'><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>"


def _figure(svg: str, caption: str) -> str:
    """A chart with its caption under it (what is drawn, where the samples come from)."""
    return f"<figure class='timeline'><div class='chart'>{svg}</div><figcaption>{esc(caption)}</figcaption></figure>"


def _kv_table(items: list[tuple[str, str]]) -> str:
    rows = "".join(f'<tr><th scope="row">{esc(k)}</th><td>{esc(v)}</td></tr>' for k, v in items)
    return f"<table class='kv'><tbody>{rows}</tbody></table>"


def _verdict(b: BenchmarkResult, mark: bool = False) -> str:
    """The verdict's word in its colour; with ``mark``, the noise mark beside it."""
    cls = f.verdict_class(b.verdict) if b.verdict in f.VERDICT_COLOR else "other"
    noisy = f.noisy_text(b) if mark else ""
    return f'<span class="{cls}">{esc(f.verdict_text(b.verdict))}</span>' + (
        f' <span class="noisy">({esc(noisy)})</span>' if noisy else ""
    )


def _kernel_cell(k: KernelTiming) -> str:
    # The short name to scan by, then the full signature (template arguments tell kernels with
    # one short name apart); "::" is where a long signature may break, never inside a word.
    full = esc(k.kernel).replace("::", "::<wbr>")
    if k.kernel == k.kernel_short:
        return f"<b>{esc(k.kernel_short)}</b>"
    return f"<b>{esc(k.kernel_short)}</b><span class='full'>{full}</span>"


def _num(v: float | None, fmt: str) -> str:
    return "-" if v is None or not math.isfinite(v) else format(v, fmt)


def _kernel_table(b: BenchmarkResult) -> str:
    assert b.ncu is not None
    head = [
        "iter", "kernel", "duration", "with counters", "SM clock", "cycles", "SM %", "memory %", "clock model",
        "e", "at base clock", "at ref clock",
    ]  # fmt: skip
    th = "".join(f'<th class="l">{h}</th>' if h in ("kernel", "clock model") else f"<th>{h}</th>" for h in head)
    body = []
    prev = None
    for k in b.ncu.kernels:
        cls = ' class="newiter"' if prev is not None and k.iteration != prev else ""
        prev = k.iteration
        body.append(
            f"<tr{cls}><td>{k.iteration}</td><td class='kernel'>{_kernel_cell(k)}</td><td>{f.time_ns(k.duration_ns)}</td>"
            f"<td>{esc(f.counters_run(k.counters_duration_ns))}</td><td>{f.clock_hz(k.sm_clock_hz)}</td><td>{_num(k.cycles, ',.0f')}</td><td>{_num(k.sm_throughput_pct, '.1f')}</td>"
            f"<td>{_num(k.memory_throughput_pct, '.1f')}</td><td class='l'>{esc(k.clock_model.value)}</td>"
            f"<td>{esc(f.elasticity(k.elasticity, k.elasticity_source))}</td>"
            f"<td>{esc(f.base_run(k.base_duration_ns, k.base_sm_clock_hz))}</td>"
            f"<td>{f.time_ns(k.normalized_ns)}</td></tr>"
        )
    return f"<div class='scroll'><table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"


@exporter("report", "html")
def render_html(result: RunResult, *, max_charts: int = MAX_CHARTS, max_waterfalls: int = MAX_WATERFALLS) -> str:
    """The whole report as one HTML document (inline CSS and SVG); at most ``max_charts`` bar
    charts and ``max_waterfalls`` waterfalls, for the worst benchmarks."""
    s = result.settings
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>nsightwrap report: {esc(result.run_dir)}</title><style>{_CSS}</style></head><body>",
        "<h1>nsightwrap report</h1>",
        f"<p>{esc(result.run_dir)}: <b>{esc(f.count_text(result.benchmarks))}</b>; tolerance {s.tolerance:.0%}; "
        f"{esc(f.clock_text(result))}.</p>",
    ]
    if not result.timer_found:
        parts.append("<p>No in-process timings were found: benchmarks come from the target's own NVTX ranges.</p>")
    gpu = f.has_gpu_column(result)
    ordered = f.by_verdict(result.benchmarks)  # worst verdict first
    rows = [
        [
            esc(f.label(b)),
            *([esc(f.gpu_tag(b, full=True))] if gpu else []),
            *f.summary_numbers(b),
            _verdict(b, mark=True),
            str(len(b.notes)) if b.notes else "",
        ]
        for b in ordered
    ]
    head = ["benchmark", *(["GPU"] if gpu else []), *f.SUMMARY_NUMBER_HEADERS, "verdict", "notes"]
    row_class = [_ROW_CLASS.get(b.verdict, "") for b in ordered]
    parts += ["<h2>Summary</h2>", _table(head, rows, left=2 if gpu else 1, row_class=row_class)]
    if gpu:  # a merged run: shards, the GPU of each, the variance
        parts.append(shard_html(result))
    look = f.to_look_at(result)
    if look:
        parts.append(f"<h2>{esc(f.look_title(look))}</h2>")
        for i, b in enumerate(look):
            parts.append(
                f"<h3 id='{_look_id(i)}'>{esc(f.label(b))}</h3><p>{_verdict(b)}: {esc(f.ratio_line(b))}; "
                f"reference clock {f.clock_hz(b.ref_clock_hz)} ({esc(b.ref_clock_source)})</p>"
            )
            for cause in b.causes:
                ev = "".join(f"<span>{esc(f.evidence_item(k, v))}</span>" for k, v in cause.evidence.items() if v is not None)
                parts.append(
                    f"<div class='cause'><b>{esc(cause.code.value)}</b>: {esc(cause.message)}"
                    f"<div class='ev'>{ev}</div><div>fix: {esc(cause.fix)}</div></div>"
                )
    notes = [("run", n) for n in result.notes] + [(f.label(b), n) for b in result.benchmarks for n in b.notes]
    if notes:
        parts += ["<h2>Notes</h2><ul class='notes'>", *(f"<li><b>{esc(who)}</b>: {esc(n)}</li>" for who, n in notes), "</ul>"]
    parts += _bar_charts(result, max_charts)
    # One SM-clock chart: the energy section's timeline draws the clock too, when it is drawn.
    clock = None if charts.has_timeline(result) else charts.clock_chart(result)
    if clock:
        parts += ["<h2>SM clock, plain pass</h2>", _figure(clock, charts.timeline_caption(result, power=False))]
    parts += gap_html(result, max_waterfalls, causes_above=True)
    parts += _roofline(result, max_charts)
    parts += power_html(result)
    parts += ["<h2>Environment</h2>", _kv_table(f.environment_items(result))]
    if result.environment.command:
        parts += ["<h2>Reproduce</h2>", f"<pre>{esc(shlex.join(result.environment.command))}</pre>"]
    if any(b.ncu and b.ncu.kernels for b in result.benchmarks):
        parts.append("<h2>Per-kernel details (ncu)</h2>")
    for b in result.benchmarks:
        if b.ncu and b.ncu.kernels:
            parts += [
                f"<details><summary>{esc(f.label(b))}: {len(b.ncu.kernels)} kernels profiled by ncu</summary>",
                _kernel_table(b),
                "</details>",
            ]
    parts.append("</body></html>")
    return charts.unique_ids("\n".join(parts))


# ------------------------------------------------------------------ the report's sections


def _look_id(i: int) -> str:
    """The anchor of the ``i``-th flagged or unexplained benchmark's causes."""
    return f"causes-{i}"


def _gap_table(b: BenchmarkResult, above: str | None = None) -> str:
    """The gap's parts, residual and total; a part already listed as a cause under the anchor
    ``above`` links there instead of repeating its message, evidence and fix."""
    gap = b.gap
    assert gap is not None
    body = []
    listed = {c.message for c in b.causes} if above else set()
    for p in gap.parts:
        if p.message and p.message in listed:
            name = f"<b>{esc(g.label(p))}</b>" if p.actionable else esc(g.label(p))
            body.append(
                f"<tr><td class='l'>{name}</td><td>{esc(g.signed_us(p.ns))}</td><td>{esc(g.share(p.ns, gap))}</td>"
                f"<td class='kernel'><a href='#{above}'>{esc(p.cause)}: listed with its evidence and fix above</a></td><td></td></tr>"
            )
            continue
        ev = "".join(f"<span>{esc(e)}</span>" for e in g.evidence_items(p.evidence))
        kern = g.kernel_rows(p)
        if kern:
            ev += (
                "<span>"
                + esc(
                    "; ".join(
                        f"{r.get('kernel')}: e={r.get('elasticity')} ({r.get('elasticity_source')})"
                        for r in kern
                    )
                )
                + "</span>"
            )
        name = f"<b>{esc(g.label(p))}</b>" if p.actionable else esc(g.label(p))
        body.append(
            f"<tr><td class='l'>{name}</td><td>{esc(g.signed_us(p.ns))}</td><td>{esc(g.share(p.ns, gap))}</td>"
            f"<td class='kernel'>{esc(p.message)}<div class='ev'>{ev}</div></td><td class='kernel'>{esc(p.fix)}</td></tr>"
        )
    body.append(
        f"<tr><td class='l'>residual</td><td>{esc(g.signed_us(gap.residual_ns))}</td>"
        f"<td>{esc(g.share(gap.residual_ns, gap))}</td><td class='kernel'>what no measurement explains"
        f"<div class='ev'>{esc(g.residual_basis(gap))}</div></td><td></td></tr>"
    )
    body.append(
        f"<tr><td class='l'><b>total</b></td><td><b>{esc(g.signed_us(gap.total_ns))}</b></td>"
        f"<td>{esc(g.share(gap.total_ns, gap))}</td><td class='kernel'>{esc(g.headline(gap))}</td><td></td></tr>"
    )
    head = "<tr><th class='l'>part</th><th>time</th><th>of the timing</th><th class='l'>measured from</th><th class='l'>fix</th></tr>"
    return f"<div class='scroll'><table><thead>{head}</thead><tbody>{''.join(body)}</tbody></table></div>"


def gap_html(result: RunResult, max_waterfalls: int = MAX_WATERFALLS, *, causes_above: bool = False) -> list[str]:
    """``Where the gap comes from``: per flagged or unexplained benchmark (the worst
    ``max_waterfalls``) a waterfall and its table; the other benchmarks' tables folded. With
    ``causes_above`` (the whole report, which lists the flagged and unexplained benchmarks'
    causes first), a part listed there links to it rather than repeating it."""
    anchors = {id(b): _look_id(i) for i, b in enumerate(f.to_look_at(result))} if causes_above else {}
    with_gap = [b for b in result.benchmarks if b.gap is not None]
    if not with_gap:
        return []
    out = [
        "<h2>Where the gap comes from</h2>",
        "<p>timer - ncu (ncu at its own clocks), split into parts measured in this run; they add up, "
        "residual included. Parts in bold are ones the timing method can change.</p>",
    ]
    # A waterfall for the worst flagged and unexplained benchmarks (at most MAX_WATERFALLS), their
    # tables open; every other benchmark's table folded.
    look = [b for b in f.worst_first(with_gap) if b.verdict in f.TO_LOOK_AT]
    drawn = look[:max_waterfalls]
    if len(look) > len(drawn):
        out.append(
            f"<p>Waterfalls of the worst {len(drawn)} of {len(look):,} flagged or unexplained benchmarks; "
            "the others' tables are folded below.</p>"
        )
    for b in drawn:
        svg = charts.waterfall_svg(b)
        out.append(f"<h3>{esc(f.label(b))} ({esc(f.verdict_text(b.verdict))})</h3>")
        if svg:
            out.append(f"<div class='chart waterfall'>{svg}</div>")
        out.append(_gap_table(b, anchors.get(id(b))))
    shown = {id(b) for b in drawn}
    rest = [b for b in f.by_verdict(with_gap) if id(b) not in shown]
    for b in rest:
        assert b.gap is not None
        out += [
            f"<details><summary>{esc(f.label(b))} ({esc(f.verdict_text(b.verdict))}): {esc(g.compact(b.gap))}</summary>",
            _gap_table(b, anchors.get(id(b))),
            "</details>",
        ]
    return out


def power_html(result: RunResult) -> list[str]:
    """``<h2>Energy and power</h2>``: the table, the method note and the timeline (else nothing)."""
    benches = pf.with_power(result)
    chart = charts.timeline_svg(result)
    if not benches and chart is None:
        return []
    parts = ["<h2>Energy and power</h2>"]
    if benches:
        th = "".join(f'<th class="l">{h}</th>' if h in ("benchmark", "throttled by") else f"<th>{h}</th>" for h in pf.HEADERS)
        body = "".join(
            "<tr>" + "".join(
                f'<td class="name">{esc(c)}</td>' if i == 0 else (f"<td class='l'>{esc(c)}</td>" if i == 8 else f"<td>{esc(c)}</td>")
                for i, c in enumerate(pf.row(b))
            ) + "</tr>"
            for b in benches
        )  # fmt: skip
        parts += [f"<div class='scroll'><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>",
                  f"<p class='ev'>{esc(pf.METHOD_NOTE)}</p>"]  # fmt: skip
        notes = pf.notes(result)
        if notes:
            parts += ["<ul class='notes'>", *(f"<li><b>{esc(w)}</b>: {esc(n)}</li>" for w, n in notes), "</ul>"]
    if chart is not None:
        parts += ["<h3>Plain pass: SM clock, power and temperature</h3>", _figure(chart, charts.timeline_caption(result, power=True))]
    return parts


def _shard_table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<div class='scroll'><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>"


def shard_html(result: RunResult) -> str:
    """The shards and the variance as HTML (empty for a run of one shard)."""
    if not result.shards:
        return ""
    parts = ["<h2>Shards</h2>", _shard_table(f.SHARD_HEADERS, [f.shard_cells(s) for s in result.shards])]
    parts += [f"<p><b>shard {s.index}</b>: {esc(s.message)}</p>" for s in result.shards if s.message]
    v = result.gpu_variance
    if v is not None:
        parts += ["<h2>GPU-to-GPU variance</h2>", f"<p>{esc(f.variance_line(v))}</p>"]
        parts += [f"<p class='{'flagged' if v.slow else 'ok'}'>{esc(x)}</p>" for x in f.slow_lines(v)]
        head = ["benchmark", *(f.short_uuid(g) for g in v.gpus), "spread"]
        rows = [[s.benchmark, *(f.time_ns(s.medians_ns.get(g)) for g in v.gpus), f.percent(s.spread)] for s in f.spread_rows(v, None)]
        parts.append(_shard_table(head, rows))
    return "\n".join(parts)


# ------------------------------------------------------------------ device file


_DEVICE_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:0.5em 0 1.5em 0;font-size:14px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right;vertical-align:top}
thead th{background:#f3f3f3} th.l,td.l{text-align:left} .warn{color:#a60}
.charts{display:flex;flex-wrap:wrap;gap:12px} .chart{display:inline-block;border:1px solid #ddd;padding:4px}
"""


def _device_table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    def cls(i: int) -> str:
        return ' class="l"' if i < left or i == len(headers) - 1 else ""

    head = "".join(f"<th{cls(i)}>{esc(h)}</th>" for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f"<td{cls(i)}>{esc(c)}</td>" for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


@exporter("device", "html")
def render_device_html(dev: DeviceFile) -> str:
    """The device file as one HTML document."""
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>nsightwrap device: {esc(dev.gpu.name)}</title><style>{_DEVICE_CSS}</style></head><body>",
        "<h1>nsightwrap device</h1>",
        f"<p>{esc(t.heading(dev))}</p>",
        *(f"<p class='warn'>warning: {esc(w)}</p>" for w in dev.warnings),
    ]
    for grp in GROUPS:
        rows = t.rows(dev, grp)
        if rows:
            parts += [f"<h2>{esc(t.GROUP_TITLES[grp])}</h2>", _device_table(t.ROW_HEADERS, rows)]
    svgs: list[str | None] = []
    if dev.bandwidth_curve:
        parts += ["<h2>Copy bandwidth against transfer size</h2>", _device_table(t.CURVE_HEADERS, t.curve_rows(dev))]
        svgs.append(curve_svg([p.bytes for p in dev.bandwidth_curve],
                                [p.bytes_per_s / 1e9 if p.bytes_per_s else 0.0 for p in dev.bandwidth_curve],
                                xlabel="bytes copied", ylabel="GB/s (read + write)",
                                title="copy bandwidth, L2 flushed before each sample"))  # fmt: skip
    if dev.latency_curve:
        parts += ["<h2>Pointer-chase latency against working set</h2>", _device_table(t.LATENCY_HEADERS, t.latency_rows(dev))]
        svgs.append(curve_svg([p.working_set_bytes for p in dev.latency_curve],
                                [p.ns or 0.0 for p in dev.latency_curve], xlabel="working set",
                                ylabel="ns per dependent load", title="pointer-chase latency (one thread, random cycle)"))  # fmt: skip
    roofs = t.roofs_of(dev)
    if roofs.peaks or roofs.memory_bytes_per_s:
        parts += [f"<h2>Roofs: memory {esc(t.rate(roofs.memory_bytes_per_s, 'B/s'))} ({esc(roofs.memory_name or '-')})</h2>",
                  _device_table(t.RIDGE_HEADERS, t.ridge_rows(roofs))]  # fmt: skip
        svgs.append(roofline_svg(roofs.memory_bytes_per_s, [ChartRoof(p.name, p.flops_per_s) for p in roofs.peaks], [],
                                   f"measured roofs of {dev.gpu.name} (each at the SM clock measured with it)",
                                   l2_bytes_per_s=roofs.l2_bytes_per_s))  # fmt: skip
    drawn = [c for c in svgs if c]
    if drawn:
        parts += ["<h2>Charts</h2><div class='charts'>", *(f"<div class='chart'>{c}</div>" for c in drawn), "</div>"]
    parts.append("</body></html>")
    return charts.unique_ids("\n".join(parts))


# ------------------------------------------------------------------ the roofline section


def _positive(v: float | None) -> bool:
    return v is not None and math.isfinite(v) and v > 0


def _roofline_table(headers: list[str], rows: list[list[str]], left: tuple[int, ...]) -> str:
    def cell(tag: str, i: int, v: str) -> str:
        return f'<{tag} class="l">{esc(v)}</{tag}>' if i in left else f"<{tag}>{esc(v)}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def _roofline_hover(name: str, r: Roofline | KernelRoofline) -> str:
    """A point's hover text: its name, then where it sits."""
    hz = r.clock_hz if isinstance(r, Roofline) else r.sm_clock_hz
    if r.bound == "memory":
        where = f"{rt.pct_cell(r)} of the memory roof at this intensity (HBM {t.rate(r.roof_bytes_per_s, 'B/s')})"
    else:
        where = f"{rt.pct_cell(r)} of {rt.roof_cell(r)}" + (f" @ {t.clock(hz)}" if hz else "")
    unit = "OP/s" if r.compute_roof == "int8" else "FLOP/s"
    return f"{name}\n{t.rate(r.flops_per_s, unit)}, {rt.intensity(r.intensity)} FLOP/byte, {where}"


def roofline_chart(result: RunResult) -> str | None:
    """The chart: roofs as measured (each compute roof at its own clock), benchmarks as circles,
    their ncu kernels as small squares, each naming itself on hover. A point above its roof or
    with uncounted FLOPs is not drawn (``roofline_text.not_drawn`` says why)."""
    roofs = result.roofs
    if roofs is None or roofs.source == "none":
        return None
    points = []
    for b in result.benchmarks:
        r = b.roofline
        if r is None:
            continue
        if r.status == "placed" and _positive(r.intensity) and _positive(r.flops_per_s):
            points.append(ChartPoint(f.label(b), float(r.intensity or 0), float(r.flops_per_s or 0), "o", _roofline_hover(f.label(b), r)))
        for k in r.kernels:
            if k.status == "placed" and _positive(k.intensity) and _positive(k.flops_per_s) and len(r.kernels) > 1:
                name = f"{f.label(b)}: {k.kernel_short}"
                points.append(ChartPoint(name, float(k.intensity or 0), float(k.flops_per_s or 0), "s", _roofline_hover(name, k)))
    title = f"{roofs.gpu_name or 'GPU'}: {roofs.source} roofs ({roofs.where})"
    return roofline_svg(roofs.memory_bytes_per_s, [ChartRoof(p.name, p.flops_per_s) for p in roofs.peaks], points,
                        title, l2_bytes_per_s=roofs.l2_bytes_per_s)  # fmt: skip


def roofline_html(result: RunResult) -> list[str]:
    """HTML parts of the roofline section (none when the analysis made no roofline)."""
    if result.roofs is None:
        return []
    parts = ["<h2>Roofline</h2>", f"<p>{esc(rt.roofs_line(result.roofs))}</p>"]
    chart = roofline_chart(result)
    if chart:
        parts.append(f"<div class='chart'>{chart}</div>")
        left = rt.not_drawn(result)
        if left:
            parts += ["<p>Not drawn:</p><ul class='notes'>", *(f"<li><b>{esc(w)}</b>: {esc(y)}</li>" for w, y in left), "</ul>"]
    rows = rt.bench_rows(result)
    if rows:
        parts += [_roofline_table(rt.HEADERS, rows, (0, len(rt.HEADERS) - 1)), f"<p>{esc(rt.EXPLAIN)}</p>"]
        reasons = rt.reasons(result)
        if reasons:
            parts += ["<ul class='notes'>", *(f"<li><b>{esc(w)}</b>: {esc(y)}</li>" for w, y in reasons), "</ul>"]
    for b in result.benchmarks:
        krows = rt.kernel_rows(b)
        if krows:
            parts += [f"<details><summary>{esc(f.label(b))}: {len(krows)} kernel(s) on the roofline (ncu counters)</summary>",
                      _roofline_table(rt.KERNEL_HEADERS, krows, (1, 6, 7)), "</details>"]  # fmt: skip
    return parts


# ------------------------------------------------------------------ the protocol: sections


@exporter("gap", "html")
def _gap(result: RunResult) -> str:
    return charts.unique_ids("\n".join(gap_html(result)))


@exporter("power", "html")
def _power(result: RunResult) -> str:
    return charts.unique_ids("\n".join(power_html(result)))


@exporter("shards", "html")
def _shards(result: RunResult) -> str:
    return shard_html(result)


@exporter("roofline", "html")
def _roofline_section(result: RunResult) -> str:
    return charts.unique_ids("\n".join(roofline_html(result)))
