"""Self-contained HTML report: tables, a bar chart per benchmark, the plain pass's clock trace and
per-kernel tables. Charts are inline SVG drawn by matplotlib; no script, font or style is
fetched from the network. Every name goes through ``escape.html``."""

from __future__ import annotations

import io
import math
import shlex

from nsightwrap.analysis.model import BenchmarkResult, KernelTiming, RunResult, Verdict
from nsightwrap.export import reportfmt as f
from nsightwrap.export import shards
from nsightwrap.export.escape import html as esc
from nsightwrap.export.gap_html import gap_html
from nsightwrap.export.power_html import has_timeline, power_html
from nsightwrap.export.roofline_html import roofline_html

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
.ok{color:#080} .other{color:#a60} tr.unexplrow td{background:#fbf0fb}
.cause{margin:0.3em 0 0.8em 1em;padding-left:0.8em;border-left:3px solid #d88}
.ev{color:#555;font-size:13px;font-family:ui-monospace,monospace;margin:0.2em 0}
.ev span{white-space:nowrap;margin-right:1.2em;display:inline-block}
table.kv th{background:none;text-align:left;font-weight:normal;color:#555} table.kv td{text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:12px} .chart{display:inline-block;border:1px solid #ddd;padding:4px}
.notes li{margin:0.3em 0} code,pre{background:#f6f6f6;padding:2px 4px}
"""

# One colour per source, the same in every chart even when a source is missing.
_COLORS = {"timer": "#4c72b0", "ncu raw": "#dd8452", "ncu @ref": "#c44e52", "nsys kernels": "#55a868", "nsys busy": "#8172b3"}
#: Bar charts drawn at most: one per benchmark up to this many, else the worst this many (a
#: chart costs ~60 ms and ~17 KB; at 1,000 benchmarks the summary table carries the rest).
MAX_CHARTS = 24


def _svg(fig: object) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")  # type: ignore[attr-defined]
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _plt() -> object:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Names are data, not TeX: never parse "$...$"; keep SVG text as text (small, searchable).
    plt.rcParams.update({"text.parse_math": False, "svg.fonttype": "none", "font.size": 9})
    return plt


def _bar_chart(b: BenchmarkResult) -> str | None:
    pairs = [
        ("timer", b.timer.median_ns if b.timer else None),
        ("ncu raw", b.ncu.median_ns if b.ncu else None),
        ("ncu @ref", b.ncu.normalized_ns if b.ncu else None),
        ("nsys kernels", b.nsys.median_ns if b.nsys else None),
        ("nsys busy", b.nsys.busy_median_ns if b.nsys else None),
    ]
    values = [v if v is not None and math.isfinite(v) else None for _, v in pairs]
    known = [v for v in values if v is not None]
    if not known:
        return None
    top = max(known) / 1e3 or 1.0
    plt = _plt()
    # Horizontal bars, every source on its own row even when missing (labelled, not dropped),
    # with the value written at the bar's end: the numbers are read, not guessed from an axis.
    fig, ax = plt.subplots(figsize=(4.2, 1.9))  # type: ignore[attr-defined]
    rows = range(len(pairs))
    ax.barh(rows, [(v or 0.0) / 1e3 for v in values], color=[_COLORS[k] for k, _ in pairs], height=0.7)
    for y, v in zip(rows, values, strict=True):
        text = "no data" if v is None else f.time_ns(v)
        ax.text((v or 0.0) / 1e3 + top * 0.02, y, text, va="center", fontsize=8, color="#333" if v is not None else "#999")
    ax.set_yticks(list(rows), [k for k, _ in pairs])
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.45)
    ax.set_xlabel("us, median per iteration")
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(
        f"{f.label(b)}: {f.verdict_text(b.verdict)}" + (f", ratio {f.ratio(b.ratio)}" if b.ratio is not None else ""),
        fontsize=9,
        loc="left",
        color=f.verdict_color(b.verdict),
    )
    svg = _svg(fig)
    plt.close(fig)  # type: ignore[attr-defined]
    return svg


_ROW_CLASS = {Verdict.FLAGGED: "flagrow", Verdict.UNEXPLAINED: "unexplrow"}


def _bar_charts(result: RunResult) -> list[str]:
    """``Timings side by side``: a chart per benchmark, or for the worst ``MAX_CHARTS`` when
    there are more, with a line saying how many were left out (the summary table has them all)."""
    n = len(result.benchmarks)
    chosen = list(result.benchmarks) if n <= MAX_CHARTS else f.worst_first(result.benchmarks)[:MAX_CHARTS]
    charts = [c for b in chosen if (c := _bar_chart(b))]
    if not charts:
        return []
    out = ["<h2>Timings side by side</h2>"]
    if n > MAX_CHARTS:
        out.append(
            f"<p>Charts of the worst {len(chosen)} of {n:,} benchmarks (worst verdict first, then the ratio "
            f"farthest from 1); the other {n - len(chosen):,} are in the summary table above.</p>"
        )
    return [*out, "<div class='charts'>", *(f"<div class='chart'>{c}</div>" for c in charts), "</div>"]


def _clock_chart(result: RunResult) -> str | None:
    if not result.clock_trace:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 2.4))  # type: ignore[attr-defined]
    ax.plot([c.t_s for c in result.clock_trace], [c.sm_clock_hz / 1e9 for c in result.clock_trace], lw=1)
    ax.set_xlabel("seconds into the plain pass")
    ax.set_ylabel("SM clock (GHz)")
    ax.set_title("SM clock during the plain pass (nvidia-smi samples)", fontsize=9)
    ax.grid(alpha=0.3)
    svg = _svg(fig)
    plt.close(fig)  # type: ignore[attr-defined]
    return svg


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


def _kv_table(items: list[tuple[str, str]]) -> str:
    rows = "".join(f'<tr><th scope="row">{esc(k)}</th><td>{esc(v)}</td></tr>' for k, v in items)
    return f"<table class='kv'><tbody>{rows}</tbody></table>"


def _verdict(b: BenchmarkResult) -> str:
    cls = f.verdict_class(b.verdict) if b.verdict in f.VERDICT_COLOR else "other"
    return f'<span class="{cls}">{esc(f.verdict_text(b.verdict))}</span>'


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


def render_html(result: RunResult) -> str:
    """The whole report as one HTML document (inline CSS and SVG)."""
    s = result.settings
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>nsightwrap report: {esc(result.run_dir)}</title><style>{_CSS}</style></head><body>",
        "<h1>nsightwrap report</h1>",
        f"<p>{esc(result.run_dir)}: <b>{esc(f.count_text(result.benchmarks))}</b>; tolerance {s.tolerance:.0%}, reference clock "
        f"<code>{esc(s.clock_ref)}</code>; ratio = timer / ncu at the reference clock.</p>",
    ]
    if not result.timer_found:
        parts.append("<p>No in-process timings were found: benchmarks come from the target's own NVTX ranges.</p>")
    gpu = shards.has_gpu_column(result)
    ordered = f.by_verdict(result.benchmarks)  # worst verdict first
    rows = [
        [
            esc(f.label(b)),
            *([esc(shards.gpu_tag(b, full=True))] if gpu else []),
            *f.summary_numbers(b),
            _verdict(b),
            str(len(b.notes)) if b.notes else "",
        ]
        for b in ordered
    ]
    head = ["benchmark", *(["GPU"] if gpu else []), *f.SUMMARY_NUMBER_HEADERS, "verdict", "notes"]
    row_class = [_ROW_CLASS.get(b.verdict, "") for b in ordered]
    parts += ["<h2>Summary</h2>", _table(head, rows, left=2 if gpu else 1, row_class=row_class)]
    if gpu:  # a merged run: shards, the GPU of each, the variance
        parts.append(shards.html_sections(result))
    look = f.to_look_at(result)
    if look:
        parts.append(f"<h2>{esc(f.look_title(look))}</h2>")
        for b in look:
            parts.append(
                f"<h3>{esc(f.label(b))}</h3><p>{_verdict(b)}: ratio {f.ratio(b.ratio)} (at ncu's own clock {f.ratio(b.ratio_raw)}), "
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
    parts += _bar_charts(result)
    # One SM-clock chart: the energy section's timeline draws the clock too, when it is drawn.
    clock = None if has_timeline(result) else _clock_chart(result)
    if clock:
        parts += ["<h2>SM clock, plain pass</h2>", f"<div class='chart'>{clock}</div>"]
    parts += gap_html(result)
    parts += roofline_html(result)
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
    return "\n".join(parts)
